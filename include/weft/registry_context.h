// The parts a conversion is made of, in one place you can extend or replace (docs/aot.md,
// "Registry"):
//
//   litert_model_hooks  rewrites of a .tflite file's bytes before it is parsed      by name
//   onnx_model_hooks    the same for an .onnx file                                  by name
//   litert_parsers      what one LiteRT operator becomes (a Weft node)              by operator key
//   options             the typed options of an operator (checked, defaults filled,  by operator key
//                       before its parser runs; and what config rules may set)
//   emitters            the C an op type emits in `weft aot`                        by op type
//   transforms          graph rewrites a config file or a caller names              by name
//
// An operator key is a builtin's name ("CONV_2D") or a customCode's canonical key
// (LiteRtCustomOpKey: "my-op" → "MY_OP"); a custom op imports as an op of that type, so the same
// string keys its parser, its options and (as the op type) its emitter.
//
//   auto ctx = weft::BuildDefaultRegistryContext({[](weft::RegistryContext* c) {
//     return c->litert_parsers.Register("MY_OP", [](const weft::LiteRtOperator& op, weft::Node* n) {
//       n->attrs["stride"] = weft::AttrValue::Int(2);
//       return weft::Status::Ok();
//     });
//   }}).value();
//   weft::LiteRtImportOptions io;
//   io.registry = ctx;
//
// The default context holds the built-ins: a parser for every LiteRT builtin operator (the
// importer's own conversion), an emitter for every built-in op that emits C, and the built-in
// transforms. Registering over a key needs `overwrite`; replacing or removing a built-in also needs
// the context's allow_override, so a customizer cannot change a built-in by accident.
#ifndef WEFT_REGISTRY_CONTEXT_H_
#define WEFT_REGISTRY_CONTEXT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "weft/weft.h"

namespace weft {

class EmitContext;

// A typed options model: the attributes an operator (or transform) takes, their types and
// defaults. Attributes it does not declare are an error naming the nearest declared one, unless
// allow_extra.
struct OptionField {
  std::string name;
  WeftAttrType type = WEFT_ATTR_INT;
  bool required = false;
  AttrValue default_value;  // filled in when the attribute is absent (unless required)
  std::string doc;
};
struct OptionSchema {
  std::vector<OptionField> fields;
  bool allow_extra = false;
};

// Checks `attrs` against `schema` and fills defaults: an int where a float is declared becomes the
// float, 0/1 where a bool is; an attribute whose name is in `exempt` is not checked unless the
// schema declares it. `what` starts each message ("LiteRT model: operator #3 (custom 'my-op')").
WEFT_API Status CheckOptions(const OptionSchema& schema, const std::string& what, std::map<std::string, AttrValue>* attrs,
                             const std::vector<std::string>& exempt = {});

// What a LiteRT parser is given about one operator, beside the node the importer made of it.
struct LiteRtOperator {
  size_t subgraph = 0, index = 0;  // where it is in the model
  int32_t builtin_code = 0;        // 32 = CUSTOM
  std::string key;                 // the builtin's name or the customCode's canonical key
  std::string custom_code;         // "" for a builtin
  int32_t version = 1;
  std::string custom_options;      // the raw bytes (custom operators)
  int32_t custom_options_format = 0;  // 0 = FLEXBUFFERS
  std::vector<DataType> input_types, output_types;  // per node input/output (DT_UNDEFINED for an absent optional)
  std::vector<Shape> input_shapes, output_shapes;
};

// A parser edits `node`, which arrives as the importer made it: op type (the builtin's Tfl* type,
// or the key/op_map's type for a custom op), inputs, outputs, name, and attributes (builtin
// options, flexbuffer-map custom options decoded, quantization, "version", "custom_code").
// A parser that takes a builtin makes the node an op of its own: Weft's lowering of the builtin
// (to a float op, PAD folding) is skipped for it. IF, WHILE and STABLEHLO_COMPOSITE reference
// subgraphs and are imported before any parser runs.
using LiteRtParser = std::function<Status(const LiteRtOperator& op, Node* node)>;
// Rewrites a model file's bytes before it is parsed; what it returns is verified as any file is.
using ModelHook = std::function<Status(std::string* bytes)>;

// One node being emitted by a registered emitter.
class WEFT_API AotEmitCall {
 public:
  virtual ~AotEmitCall() = default;
  // The node's emit context: its tensors, attributes (GetAttrs), and where its C goes.
  virtual EmitContext& ctx() = 0;
  virtual const std::string& op_type() const = 0;
  virtual const std::string& node_name() const = 0;
  // The node's attributes, defaults filled in (as its op reads them).
  virtual const std::map<std::string, AttrValue>& attrs() const = 0;
  // Whether the node's op class emits C itself, and emitting that C (a registered emitter that
  // wraps the op's own, as a subclass would).
  virtual bool HasOwn() const = 0;
  virtual Status EmitOwn() = 0;
};
using AotEmitter = std::function<Status(AotEmitCall& call)>;

struct GraphTransform {
  std::function<Status(Graph* graph, const std::map<std::string, AttrValue>& options)> run;
  OptionSchema options;  // no fields and !allow_extra: it takes no options
  std::string doc;
};

// One registry of a context: parts by key, in registration order.
template <typename T>
class PartRegistry {
 public:
  PartRegistry(std::string name, const bool* allow_override) : name_(std::move(name)), allow_override_(allow_override) {}
  // Adds `part` under `key`. A key already present needs `overwrite`; a built-in one also needs
  // the context's allow_override.
  Status Register(const std::string& key, T part, bool overwrite = false) {
    if (key.empty()) return InvalidArgument(name_ + ": an empty key");
    for (Entry& e : entries_)
      if (e.key == key) {
        if (!overwrite)
          return AlreadyExists(name_ + ": '" + key + "' is already registered" + (e.builtin ? " (a built-in)" : "") +
                               "; pass overwrite=true to replace it");
        if (e.builtin && !*allow_override_)
          return FailedPrecondition(name_ + ": '" + key + "' is a built-in; replacing it needs allow_override=true on the registry context");
        e.part = std::move(part);
        e.builtin = false;
        return Status::Ok();
      }
    entries_.push_back({key, std::move(part), false});
    return Status::Ok();
  }
  Status Remove(const std::string& key) {
    for (size_t k = 0; k < entries_.size(); ++k)
      if (entries_[k].key == key) {
        if (entries_[k].builtin && !*allow_override_)
          return FailedPrecondition(name_ + ": '" + key + "' is a built-in; removing it needs allow_override=true on the registry context");
        entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(k));
        return Status::Ok();
      }
    return NotFound(name_ + ": nothing is registered as '" + key + "'");
  }
  const T* Get(const std::string& key) const {
    for (const Entry& e : entries_)
      if (e.key == key) return &e.part;
    return nullptr;
  }
  bool Has(const std::string& key) const { return Get(key) != nullptr; }
  bool IsBuiltin(const std::string& key) const {
    for (const Entry& e : entries_)
      if (e.key == key) return e.builtin;
    return false;
  }
  std::vector<std::string> Keys() const {
    std::vector<std::string> k;
    for (const Entry& e : entries_) k.push_back(e.key);
    return k;
  }
  const std::string& name() const { return name_; }
  // For the default context's construction.
  void AddBuiltin(const std::string& key, T part) { entries_.push_back({key, std::move(part), true}); }

 private:
  struct Entry {
    std::string key;
    T part;
    bool builtin;
  };
  std::string name_;
  const bool* allow_override_;
  std::vector<Entry> entries_;
};

class WEFT_API RegistryContext {
 public:
  explicit RegistryContext(bool allow_override = false) : allow_override_(allow_override) {}
  RegistryContext(const RegistryContext&) = delete;
  RegistryContext& operator=(const RegistryContext&) = delete;

  bool allow_override() const { return allow_override_; }

  PartRegistry<ModelHook> litert_model_hooks{"litert_model_hooks", &allow_override_};
  PartRegistry<ModelHook> onnx_model_hooks{"onnx_model_hooks", &allow_override_};
  PartRegistry<LiteRtParser> litert_parsers{"litert_parsers", &allow_override_};
  PartRegistry<OptionSchema> options{"options", &allow_override_};
  PartRegistry<AotEmitter> emitters{"emitters", &allow_override_};
  PartRegistry<GraphTransform> transforms{"transforms", &allow_override_};

  // Runs transform `name` on `graph` with `options` (checked against its schema, defaults filled).
  Status ApplyTransform(const std::string& name, const std::map<std::string, AttrValue>& options, Graph* graph) const;

 private:
  bool allow_override_;
};

using RegistryCustomizer = std::function<Status(RegistryContext* context)>;

// The built-ins, then each customizer in order. A customizer's error (or one that replaces or
// removes a built-in without allow_override) fails the construction, naming the customizer.
WEFT_API Expected<std::shared_ptr<RegistryContext>> BuildDefaultRegistryContext(const std::vector<RegistryCustomizer>& customizers = {},
                                                                                bool allow_override = false);
// The context used when none is given: the built-ins only (built once).
WEFT_API std::shared_ptr<const RegistryContext> DefaultRegistryContext();

}  // namespace weft

#endif  // WEFT_REGISTRY_CONTEXT_H_
