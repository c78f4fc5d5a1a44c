// weft aot: a compiled model as a C99 module. Each node's op writes its own C through the emit
// host functions (EmitSink below); this file plans the arena, names tensors and constants, and
// writes the module around what the ops wrote:
//   includes-api/<P>.h     the public API: context, tensor indices, status codes, init and run
//   src/<P>.c              helpers, one init and one run function per node, <P>_init, <P>_run
//   src/<P>_constants.c    the constant arrays (a file of their own, so code size is measurable)
//   CMakeLists.txt         a static library <P> (and <P>_test with --test)
//   test/                  with --test: golden inputs and outputs and a test program
// docs/aot.md describes the module; nothing in it allocates or keeps mutable globals.
#include "weft/aot.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "aot/arena_plan.h"
#include "runtime/engine.h"
#include "weft/custom_op.h"
#include "weft/registry_context.h"

namespace weft {
namespace internal {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kAlign = 16;

bool IsIdentifier(const std::string& p) {
  if (p.empty() || !(std::isalpha(static_cast<unsigned char>(p[0])) || p[0] == '_')) return false;
  for (char c : p)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

bool ValidPrefix(const std::string& p) { return p.size() <= 32 && IsIdentifier(p) && std::isalpha(static_cast<unsigned char>(p[0])); }

// The macro <prefix>_CONST_ATTR that places a module's constant arrays: in `section`, or where the
// compiler puts them ("").
std::string ConstAttr(const std::string& prefix, const std::string& section) {
  if (section.empty()) return "#define " + prefix + "_CONST_ATTR\n";
  return "#if defined(__GNUC__)\n#define " + prefix + "_CONST_ATTR __attribute__((section(\"" + section + "\")))\n#else\n#define " + prefix +
         "_CONST_ATTR\n#endif\n";
}

// A name as part of a C identifier: [A-Za-z0-9_], at most `max` characters.
std::string IdentPart(const std::string& s, size_t max) {
  std::string out;
  for (char c : s) {
    if (out.size() >= max) break;
    out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  }
  if (out.empty()) out = "t";
  return out;
}

// A string literal's contents: quotes, backslashes, non-printable bytes and '?' (trigraphs)
// escaped, so any name from a model file is safe inside "...".
std::string CString(const std::string& s) {
  std::string out;
  char buf[8];
  for (unsigned char c : s) {
    if (c == '"' || c == '\\' || c == '?') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 32 || c > 126) {
      std::snprintf(buf, sizeof(buf), "\\%03o", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

// Text safe inside a /* */ comment.
std::string CComment(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size() && out.size() < 200; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 32 || c > 126) out += '?';
    else if (c == '*' && i + 1 < s.size() && s[i + 1] == '/') out += "*_";
    else if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') out += "/_";
    else out += static_cast<char>(c);
  }
  return out;
}

const char* CType(DataType dt) {
  switch (dt) {
    case DT_FLOAT: return "float";
    case DT_DOUBLE: return "double";
    case DT_INT8: return "int8_t";
    case DT_UINT8: return "uint8_t";
    case DT_INT16: return "int16_t";
    case DT_UINT16: return "uint16_t";
    case DT_INT32: return "int32_t";
    case DT_UINT32: return "uint32_t";
    case DT_INT64: return "int64_t";
    case DT_UINT64: return "uint64_t";
    case DT_BOOL: return "uint8_t";
    default: return nullptr;
  }
}

// One element of `data` as a C literal.
std::string Element(DataType dt, const void* data, size_t i) {
  char buf[48];
  switch (dt) {
    case DT_FLOAT: {
      float v;
      std::memcpy(&v, static_cast<const uint8_t*>(data) + i * 4, 4);
      if (std::isnan(v)) return "NAN";
      if (std::isinf(v)) return v > 0 ? "HUGE_VALF" : "(-HUGE_VALF)";
      std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(v));
      std::string s = buf;
      if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
      return s + "f";
    }
    case DT_DOUBLE: {
      double v;
      std::memcpy(&v, static_cast<const uint8_t*>(data) + i * 8, 8);
      if (std::isnan(v)) return "NAN";
      if (std::isinf(v)) return v > 0 ? "HUGE_VAL" : "(-HUGE_VAL)";
      std::snprintf(buf, sizeof(buf), "%.17g", v);
      std::string s = buf;
      if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
      return s;
    }
    case DT_INT8: return std::to_string(static_cast<const int8_t*>(data)[i]);
    case DT_UINT8: case DT_BOOL: return std::to_string(static_cast<const uint8_t*>(data)[i]);
    case DT_INT16: return std::to_string(static_cast<const int16_t*>(data)[i]);
    case DT_UINT16: return std::to_string(static_cast<const uint16_t*>(data)[i]);
    case DT_INT32: {
      int32_t v;
      std::memcpy(&v, static_cast<const uint8_t*>(data) + i * 4, 4);
      return v == INT32_MIN ? "INT32_MIN" : std::to_string(v);
    }
    case DT_UINT32: {
      uint32_t v;
      std::memcpy(&v, static_cast<const uint8_t*>(data) + i * 4, 4);
      return std::to_string(v) + "u";
    }
    case DT_INT64: {
      int64_t v;
      std::memcpy(&v, static_cast<const uint8_t*>(data) + i * 8, 8);
      return v == INT64_MIN ? "INT64_MIN" : "INT64_C(" + std::to_string(v) + ")";
    }
    case DT_UINT64: {
      uint64_t v;
      std::memcpy(&v, static_cast<const uint8_t*>(data) + i * 8, 8);
      return "UINT64_C(" + std::to_string(v) + ")";
    }
    default: return "0";
  }
}

// `count` elements as an initializer list, 16 to a line.
void WriteElements(std::ostream& o, DataType dt, const void* data, uint64_t count) {
  o << "{";
  if (count == 0) o << "0";
  for (uint64_t i = 0; i < count; ++i) {
    if (i % 16 == 0) o << "\n  ";
    o << Element(dt, data, static_cast<size_t>(i)) << (i + 1 < count ? ", " : "");
  }
  o << "}";
}

struct NodeCode {
  std::string id, op_type, name;
  std::string state, init, run;
  std::string shared;  // the member of the shared state it declared (WEFT_EMIT_STATE with a key), if any
  std::vector<uint64_t> scratch;  // bytes of each scratch block
};

class Generator : public EmitSink {
 public:
  Generator(const ModelImpl& m, const AotOptions& o) : m_(m), o_(o), p_(o.prefix) {}

  Expected<AotReport> Generate();

  // ---- EmitSink: calls from the node being emitted ----
  Status Code(int32_t part, const char* key, const char* text) override {
    NodeCode& n = nodes_.back();
    std::string t = text ? text : "";
    switch (part) {
      case WEFT_EMIT_INCLUDE: {
        std::string h = key && *key ? key : t;
        if (h.size() < 3 || !((h.front() == '<' && h.back() == '>') || (h.front() == '"' && h.back() == '"')) ||
            h.find_first_of("\n\r") != std::string::npos)
          return InvalidArgument("emit_code: an include must be <header> or \"header\", not '" + h + "'");
        if (include_set_.insert(h).second) includes_.push_back(h);
        return Status::Ok();
      }
      case WEFT_EMIT_HELPER: {
        if (!key || !*key) return InvalidArgument("emit_code: a helper needs a key");
        auto it = helper_text_.find(key);
        if (it == helper_text_.end()) {
          helper_text_[key] = t;
          helpers_.push_back({key, t});
        } else if (it->second != t) {
          return InvalidArgument(std::string("emit_code: helper '") + key + "' was already emitted with different text");
        }
        return Status::Ok();
      }
      case WEFT_EMIT_STATE: {
        if (!key || !*key) {
          if (!n.shared.empty()) return InvalidArgument("emit_code: the node declared shared state; its state cannot also be its own");
          n.state += t + (t.empty() || t.back() == '\n' ? "" : "\n");
          return Status::Ok();
        }
        // State shared by every node that declares it under `key` (a variable's value, read by
        // some nodes and written by others): one member of the context, declared once.
        if (!n.state.empty()) return InvalidArgument("emit_code: the node declared state of its own; it cannot also share state");
        auto it = shared_text_.find(key);
        if (it == shared_text_.end()) {
          const std::string member = "shared" + std::to_string(shared_.size());
          shared_text_[key] = {member, t};
          shared_.push_back({member, t});
          it = shared_text_.find(key);
        } else if (it->second.second != t) {
          return InvalidArgument(std::string("emit_code: shared state '") + key + "' was already declared with different members");
        }
        if (!n.shared.empty() && n.shared != it->second.first) return InvalidArgument("emit_code: a node shares one state at most");
        n.shared = it->second.first;
        return Status::Ok();
      }
      case WEFT_EMIT_INIT: n.init += t + (t.empty() || t.back() == '\n' ? "" : "\n"); return Status::Ok();
      case WEFT_EMIT_RUN: n.run += t + (t.empty() || t.back() == '\n' ? "" : "\n"); return Status::Ok();
      default: return InvalidArgument("emit_code: unknown part " + std::to_string(part));
    }
  }
  Status Name(int32_t what, uint32_t index, std::string* out) override {
    const CompiledNode& cn = *node_;
    switch (what) {
      case WEFT_EMIT_NAME_INPUT:
      case WEFT_EMIT_NAME_OUTPUT: {
        const std::vector<int>& ids = what == WEFT_EMIT_NAME_INPUT ? cn.in_values : cn.out_values;
        if (index >= ids.size())
          return InvalidArgument(std::string("emit_name: the node has no ") + (what == WEFT_EMIT_NAME_INPUT ? "input " : "output ") +
                                 std::to_string(index));
        const int id = ids[index];
        if (m_.values[id].kind == ValueKind::kConstant) {
          auto sym = ConstantSymbol(id);
          if (!sym.ok()) return sym.status();
          *out = "((const void*)" + sym.value() + ")";
        } else {
          *out = "(ctx->tensor_ptrs[" + tensor_enum_[id] + "])";
        }
        return Status::Ok();
      }
      case WEFT_EMIT_NAME_STATE:
        if (!nodes_.back().shared.empty()) {
          *out = "(&ctx->state." + nodes_.back().shared + ")";
          return Status::Ok();
        }
        if (nodes_.back().state.empty()) return InvalidArgument("emit_name: the node declared no state (WEFT_EMIT_STATE) before asking for it");
        *out = "(&ctx->state." + nodes_.back().id + ")";
        return Status::Ok();
      case WEFT_EMIT_NAME_PREFIX: *out = p_; return Status::Ok();
      case WEFT_EMIT_NAME_NODE: *out = nodes_.back().id; return Status::Ok();
      default: return InvalidArgument("emit_name: unknown name kind " + std::to_string(what));
    }
  }
  Status Const(const char* hint, int32_t dtype, const void* data, uint64_t count, std::string* out) override {
    const DataType dt = static_cast<DataType>(dtype);
    const char* ct = CType(dt);
    if (!ct) return InvalidArgument("emit_const: data type " + std::to_string(dtype) + " has no C type here");
    if (count > (uint64_t(1) << 32) || (count && !data)) return InvalidArgument("emit_const: no data, or more than 2^32 elements");
    std::string name = nodes_.back().id + "_" + IdentPart(hint ? hint : "c", 24);
    for (int k = 2; const_names_.count(name); ++k) name = nodes_.back().id + "_" + IdentPart(hint ? hint : "c", 24) + std::to_string(k);
    DefineConst(name, dt, data, count);
    *out = name;
    return Status::Ok();
  }
  Status EmbedModel(const CompiledModel& model, const std::string& prefix, uint64_t* arena_bytes) override {
    const auto* m = dynamic_cast<const ModelImpl*>(&model);
    if (!m) return InvalidArgument("emit: the subgraph was not compiled by this library");
    if (!IsIdentifier(prefix)) return InvalidArgument("emit: '" + prefix + "' is not a C identifier");
    AotOptions o;
    o.prefix = prefix;
    o.output_dir = o_.output_dir;
    o.const_section = o_.const_section;
    o.external_arena = true;
    o.registry = registry_;
    Generator g(*m, o);
    g.embedded_ = true;
    AotReport r;
    WEFT_RETURN_IF_ERROR(g.Check());
    WEFT_RETURN_IF_ERROR(g.NameTensors());
    WEFT_RETURN_IF_ERROR(g.EmitNodes());
    WEFT_RETURN_IF_ERROR(g.Plan(&r));
    for (auto& inc : g.includes_) WEFT_RETURN_IF_ERROR(Code(WEFT_EMIT_INCLUDE, inc.c_str(), inc.c_str()));
    for (auto& [key, text] : g.helpers_) WEFT_RETURN_IF_ERROR(Code(WEFT_EMIT_HELPER, key.c_str(), text.c_str()));
    const std::string text = g.Header() + "\n" + ConstAttr(prefix, o.const_section) + g.constants_h_.str() + g.constants_c_.str() + "\n" + g.Source();
    WEFT_RETURN_IF_ERROR(Code(WEFT_EMIT_HELPER, prefix.c_str(), text.c_str()));
    *arena_bytes = g.plan_.arena_bytes;
    return Status::Ok();
  }
  Status Scratch(uint64_t bytes, std::string* out) override {
    if (bytes > (uint64_t(1) << 40)) return InvalidArgument("emit_scratch: " + std::to_string(bytes) + " bytes is not a plausible scratch size");
    NodeCode& n = nodes_.back();
    *out = n.id + "_scratch" + std::to_string(n.scratch.size());
    n.scratch.push_back(bytes);
    return Status::Ok();
  }

 private:
  const void* ConstData(int id) const {
    const Value& v = m_.values[id];
    return static_cast<size_t>(v.index) < m_.constants.size() ? m_.constants[v.index].data() : m_.const_data[v.index];
  }
  Expected<std::string> ConstantSymbol(int id) {
    auto it = const_of_value_.find(id);
    if (it != const_of_value_.end()) return it->second;
    const Value& v = m_.values[id];
    if (!CType(v.dtype)) return InvalidArgument("constant '" + v.name + "' has type " + DataTypeName(v.dtype) + ", which the generated C does not hold");
    std::string name = p_ + "_w" + std::to_string(const_of_value_.size()) + "_" + IdentPart(v.name, 24);
    DefineConst(name, v.dtype, ConstData(id), static_cast<uint64_t>(v.shape.GetShapeSize()));
    const_of_value_[id] = name;
    return name;
  }
  void DefineConst(const std::string& name, DataType dt, const void* data, uint64_t count) {
    const_names_.insert(name);
    const uint64_t n = std::max<uint64_t>(count, 1);
    constants_h_ << "extern const " << CType(dt) << " " << name << "[" << n << "];\n";
    constants_c_ << "const " << CType(dt) << " " << name << "[" << n << "] " << p_ << "_CONST_ATTR = ";
    WriteElements(constants_c_, dt, data, count);
    constants_c_ << ";\n";
    constant_bytes_ += count * DataTypeSize(dt);
  }

  Status Check();
  Status NameTensors();
  Status EmitNodes();
  // A node's fused work (graph passes): its addend and bias values (-1: none), its activation,
  // and the view of the node the op emits from (null when nothing was fused).
  struct ViewDeleter {
    void operator()(CompiledNode* n) const {
      n->instance = nullptr;  // the model's node owns the op object
      delete n;
    }
  };
  struct Fused {
    int sum = -1, bias = -1;
    WeftEpilogue activation{sizeof(WeftEpilogue), WEFT_ACT_NONE, 0.f, 0.f};
    std::unique_ptr<CompiledNode, ViewDeleter> view;
  };
  Status FusedParts(const CompiledNode& cn, std::vector<Tensor>& meta, Fused* f);
  Status EmitFused(const CompiledNode& cn, const Fused& f);
  Status Plan(AotReport* r);
  Status WriteFiles(AotReport* r);
  std::string Header() const;
  std::string Source() const;
  std::string CMakeText() const;
  Status WriteTest(AotReport* r);

  const AotEmitter* Emitter(const std::string& op_type) const { return registry_->emitters.Get(op_type); }
  // An operator output the test compares after the operator: one in the arena whose runtime
  // layout is the plain one (a blocked value's recorded bytes are in the runtime's layout).
  bool Comparable(int id) const { return !tensor_enum_[id].empty() && m_.values[id].format == WEFT_FORMAT_ND; }

  const ModelImpl& m_;
  const AotOptions& o_;
  bool embedded_ = false;  // a subgraph written inside another module (EmbedModel)
  std::shared_ptr<const RegistryContext> registry_ = o_.registry ? o_.registry : DefaultRegistryContext();
  std::string p_;
  std::vector<std::string> tensor_enum_;  // by value id; "" for constants and unused values
  std::vector<int> tensor_ids_;           // value ids in enum order
  std::map<int, std::string> const_of_value_;
  std::set<std::string> const_names_;
  std::ostringstream constants_c_, constants_h_;
  uint64_t constant_bytes_ = 0;
  std::vector<std::string> includes_;
  std::set<std::string> include_set_;
  std::vector<std::pair<std::string, std::string>> helpers_;
  std::map<std::string, std::string> helper_text_;
  std::map<std::string, std::pair<std::string, std::string>> shared_text_;  // key -> (member, text)
  std::vector<std::pair<std::string, std::string>> shared_;                 // (member, text), in order
  bool AnyState() const {
    for (auto& n : nodes_)
      if (!n.state.empty()) return true;
    return !shared_.empty();
  }
  std::vector<NodeCode> nodes_;
  const CompiledNode* node_ = nullptr;
  std::vector<uint64_t> tensor_offset_;                 // by enum position
  std::vector<std::vector<uint64_t>> scratch_offset_;   // by node, block
  ArenaPlan plan_;
  std::vector<int> constant_outputs_;  // graph outputs that are constants: copied into the arena by P_run
};

Status Generator::Check() {
  if (!embedded_ && !ValidPrefix(p_))
    return InvalidArgument("--prefix '" + p_ + "' must be a C identifier of at most 32 characters that starts with a letter");
  if (!embedded_ && o_.output_dir.empty()) return InvalidArgument("no output directory given");
  if (m_.dynamic)
    return InvalidArgument("the model has shapes known only at run time" +
                           (m_.dynamic_reason.empty() ? std::string() : " (first: " + m_.dynamic_reason + ")") +
                           "; a C module needs every shape known ahead of time: give each input a concrete shape "
                           "(weft aot --shape NAME=D0,D1,..., or input_shapes in Python); where an input's values decide a "
                           "shape (a Loop's trip count, an Expand or Reshape target, a DFT length), make those values constants "
                           "(weft aot --freeze NAME=FILE.npy); and make conditionals whose branches differ in shape select "
                           "their branch from constants or shapes");
  if (m_.nodes.empty()) return InvalidArgument("the model has no operators to emit");
  std::string missing;
  size_t count = 0;
  for (auto& cn : m_.nodes) {
    const WeftOpImpl* impl = cn->op->impl;
    for (auto& [id, want] : cn->guards)
      if (m_.values[id].dtype != DT_BOOL || m_.values[id].shape.GetShapeSize() != 1)
        return FailedPrecondition("[" + cn->op_type + " '" + cn->name + "'] runs under condition '" + m_.values[id].name +
                                  "', which is not a one-element bool tensor");
    if (Emitter(cn->op_type) || ((impl->capabilities & WEFT_CAP_EMITTABLE) && impl->emit)) continue;
    if (count++ < 12) missing += std::string(missing.empty() ? "" : ", ") + "[" + cn->op_type + " '" + cn->name + "'] (from " + cn->op->origin + ")";
  }
  if (count)
    return FailedPrecondition(std::to_string(count) + " node(s) have ops that cannot emit C: " + missing + (count > 12 ? ", ..." : "") +
                              ". An op takes part in weft aot by implementing EmittableOp, or through an emitter registered for its type "
                              "(docs/aot.md)");
  // Values the runtime keeps in a blocked or channels-last layout (a model file compiled with graph
  // passes) are plain in the module: a layout changes where elements lie, not what they are, and
  // every emitter reads and writes the plain layout of the logical shape.
  return Status::Ok();
}

Status Generator::NameTensors() {
  tensor_enum_.assign(m_.values.size(), "");
  std::vector<bool> used(m_.values.size(), false);
  for (int id : m_.input_ids) used[id] = true;
  for (int id : m_.output_ids) used[id] = true;
  for (auto& cn : m_.nodes) {
    for (int id : cn->in_values) used[id] = true;
    for (int id : cn->out_values) used[id] = true;
    for (auto& [id, want] : cn->guards) used[id] = true;
  }
  static const char* const kReserved[] = {"init", "run", "context", "tensor_info", "op_callback", "op_name", "inputs", "outputs",
                                          "num_tensors", "status_ok", "test_case_init", "test_case_run"};
  std::set<std::string> taken;
  for (const char* r : kReserved) taken.insert(p_ + "_" + r);
  std::vector<bool> is_output(m_.values.size(), false);
  for (int id : m_.output_ids) is_output[id] = true;
  for (size_t id = 0; id < m_.values.size(); ++id) {
    const Value& v = m_.values[id];
    // A constant has a place in the arena only as a graph output: P_run copies it there.
    if (!used[id] || (v.kind == ValueKind::kConstant && !is_output[id])) continue;
    if (!CType(v.dtype)) return InvalidArgument("tensor '" + v.name + "' has type " + DataTypeName(v.dtype) + ", which the generated C does not hold");
    // Names the module gives other things: P_status_*, P_n<k>... (nodes), P_w<k>... (constants).
    auto clashes = [&](const std::string& n) {
      if (taken.count(n) || n.rfind(p_ + "_status_", 0) == 0) return true;
      const size_t at = p_.size() + 1;
      return n.size() > at + 1 && (n[at] == 'n' || n[at] == 'w') && std::isdigit(static_cast<unsigned char>(n[at + 1]));
    };
    std::string base = p_ + "_" + IdentPart(v.name, 40), name = base;
    if (clashes(name)) base = p_ + "_t_" + IdentPart(v.name, 40), name = base;
    for (int k = 2; clashes(name); ++k) name = base + "_" + std::to_string(k);
    taken.insert(name);
    tensor_enum_[id] = name;
    tensor_ids_.push_back(static_cast<int>(id));
    if (v.kind == ValueKind::kConstant) {
      auto sym = ConstantSymbol(static_cast<int>(id));
      if (!sym.ok()) return sym.status();
      if (std::find(constant_outputs_.begin(), constant_outputs_.end(), static_cast<int>(id)) == constant_outputs_.end())
        constant_outputs_.push_back(static_cast<int>(id));
    }
  }
  return Status::Ok();
}

Status Generator::EmitNodes() {
  std::vector<Tensor> meta(m_.values.size());
  for (size_t k = 0; k < m_.values.size(); ++k) {
    const Value& v = m_.values[k];
    meta[k].dtype = v.dtype;
    *Shape::View(&meta[k].shape) = v.shape;
    meta[k].placement = WEFT_PLACEMENT_HOST;
    meta[k].data = v.kind == ValueKind::kConstant ? const_cast<void*>(ConstData(static_cast<int>(k))) : nullptr;
  }
  for (size_t s = 0; s < m_.nodes.size(); ++s) {
    const CompiledNode& cn = *m_.nodes[s];
    node_ = &cn;
    for (auto& [id, want] : cn.guards)
      if (m_.values[id].kind == ValueKind::kConstant) {  // a condition the module holds as a constant
        auto sym = ConstantSymbol(id);
        if (!sym.ok()) return sym.status();
      }
    NodeCode nc;
    nc.id = p_ + "_n" + std::to_string(s);
    nc.op_type = cn.op_type;
    nc.name = cn.name;
    nodes_.push_back(std::move(nc));
    // Work fused into the node by graph passes (a model file compiled with them) is left out of what
    // the op emits and written after it: the residual or bias addend, then the activation.
    Fused fused;
    WEFT_RETURN_IF_ERROR(FusedParts(cn, meta, &fused));
    const CompiledNode& en = fused.view ? *fused.view : cn;
    node_ = &en;
    std::vector<WeftTensor*> ins, outs;
    for (int id : en.in_values) ins.push_back(&meta[id]);
    for (int id : en.out_values) outs.push_back(&meta[id]);
    std::string error;
    CallState st;
    st.node = &en;
    st.error = &error;
    st.env = m_.env.get();
    st.emit = this;
    WeftKernelContext c;
    BindContext(c, en, WEFT_STAGE_EMIT, ins.data(), outs.data(), &st);
    const bool has_own = (cn.op->impl->capabilities & WEFT_CAP_EMITTABLE) && cn.op->impl->emit;
    auto emit_own = [&]() -> Status {
      if (!has_own) return FailedPrecondition("the op " + cn.op_type + " (from " + cn.op->origin + ") emits no C of its own");
      if (cn.op->impl->emit(cn.instance, &c) != WEFT_STATUS_OK) {
        Status st = InvalidArgument(NodeError(cn, "Emit", error.empty() ? "failed without a message" : error));
        error.clear();
        return st;
      }
      return Status::Ok();
    };
    const AotEmitter* emitter = Emitter(cn.op_type);
    if (!emitter || registry_->emitters.IsBuiltin(cn.op_type)) {
      WEFT_RETURN_IF_ERROR(emit_own());
      WEFT_RETURN_IF_ERROR(EmitFused(cn, fused));
      continue;
    }
    // A registered emitter: it writes the node's C, through the same context, and may call the
    // op's own emitter.
    struct Call : AotEmitCall {
      EmitContext ec;
      const CompiledNode& node;
      bool own;
      std::function<Status()> own_fn;
      Call(WeftKernelContext* c, const CompiledNode& n, bool o, std::function<Status()> f) : ec(c), node(n), own(o), own_fn(std::move(f)) {}
      EmitContext& ctx() override { return ec; }
      const std::string& op_type() const override { return node.op_type; }
      const std::string& node_name() const override { return node.name; }
      const std::map<std::string, AttrValue>& attrs() const override {
        if (attr_map.empty())
          for (size_t a = 0; a < node.attrs.size() && a < node.attr_names.size(); ++a) attr_map[node.attr_names[a]] = node.attrs[a];
        return attr_map;
      }
      mutable std::map<std::string, AttrValue> attr_map;
      bool HasOwn() const override { return own; }
      Status EmitOwn() override { return own_fn(); }
    } call(&c, en, has_own, emit_own);
    Status est;
    try {
      est = (*emitter)(call);
    } catch (const std::exception& e) {
      est = Internal(std::string("threw: ") + e.what() + (error.empty() ? "" : " (" + error + ")"));
    } catch (...) {
      est = Internal("threw an exception that is not a std::exception");
    }
    if (!est.ok())
      return Status(est.code(), "[" + cn.op_type + " '" + cn.name + "'] emitters['" + cn.op_type + "']: " + est.message());
    WEFT_RETURN_IF_ERROR(EmitFused(cn, fused));
  }
  node_ = nullptr;
  return Status::Ok();
}

Status Generator::FusedParts(const CompiledNode& cn, std::vector<Tensor>& meta, Fused* f) {
  WeftFusionSupport s{sizeof(WeftFusionSupport), 0, -1, -1, WEFT_ACT_NONE, 0.f, 0.f, 0, 0};
  const WeftOpImpl* impl = cn.op->impl;
  if ((impl->capabilities & WEFT_CAP_FUSIBLE) && WEFT_HAS_FIELD(impl, WeftOpImpl, query_fusion) && impl->query_fusion) {
    std::vector<WeftTensor*> ins, outs;
    for (int id : cn.in_values) ins.push_back(&meta[id]);
    for (int id : cn.out_values) outs.push_back(&meta[id]);
    std::string error;
    CallState st;
    st.node = &cn;
    st.error = &error;
    st.env = m_.env.get();
    WeftKernelContext c;
    BindContext(c, cn, WEFT_STAGE_QUERY, ins.data(), outs.data(), &st);
    if (impl->query_fusion(cn.instance, &c, &s) != WEFT_STATUS_OK) return Internal(NodeError(cn, "QueryFusion", error));
  }
  auto connected = [&](int32_t ir) { return ir >= 0 && static_cast<size_t>(ir) < cn.ir_in_count.size() && cn.ir_in_count[ir] == 1; };
  const bool sum = connected(s.sum_input), bias = connected(s.bias_input) && s.bias_input != s.sum_input;
  f->activation = cn.epilogue;
  if (!sum && !bias && cn.epilogue.activation == WEFT_ACT_NONE) return Status::Ok();
  if (cn.out_values.empty() || m_.values[cn.out_values[0]].dtype != DT_FLOAT)
    return FailedPrecondition("[" + cn.op_type + " '" + cn.name + "'] carries fused operations on a " +
                              (cn.out_values.empty() ? std::string("missing") : DataTypeName(m_.values[cn.out_values[0]].dtype)) +
                              " output; the generated C applies them to float32 outputs only (compile the model with the option "
                              "weft.graph_passes=none, or convert the source model)");
  if (cn.epilogue.activation < 0 || cn.epilogue.activation >= WEFT_ACT_COUNT)
    return InvalidArgument("[" + cn.op_type + " '" + cn.name + "'] carries unknown activation " + std::to_string(cn.epilogue.activation));
  // The view: the same op object, attributes and outputs, without the fused inputs or activation.
  auto v = std::make_unique<CompiledNode>();
  v->name = cn.name;
  v->op_type = cn.op_type;
  v->op = cn.op;
  v->instance = cn.instance;  // borrowed: released before the view is destroyed (Fused's deleter)
  v->out_values = cn.out_values;
  v->ir_out_start = cn.ir_out_start;
  v->ir_out_count = cn.ir_out_count;
  v->attr_ptrs = cn.attr_ptrs;
  v->attr_names = cn.attr_names;
  v->guards = cn.guards;
  v->kernels = cn.kernels;
  v->ir_in_count = cn.ir_in_count;
  v->ir_in_start.assign(cn.ir_in_start.size(), 0);
  uint32_t at = 0;
  for (size_t ir = 0; ir < cn.ir_in_count.size(); ++ir) {
    const bool drop = (sum && ir == static_cast<size_t>(s.sum_input)) || (bias && ir == static_cast<size_t>(s.bias_input));
    v->ir_in_start[ir] = at;
    if (drop) {
      const int id = cn.in_values[cn.ir_in_start[ir]];
      (ir == static_cast<size_t>(s.sum_input) ? f->sum : f->bias) = id;
      v->ir_in_count[ir] = 0;
      continue;
    }
    for (uint32_t r = 0; r < cn.ir_in_count[ir]; ++r) v->in_values.push_back(cn.in_values[cn.ir_in_start[ir] + r]);
    at += cn.ir_in_count[ir];
  }
  const int64_t n = m_.values[cn.out_values[0]].shape.GetShapeSize();
  if (f->sum >= 0 && m_.values[f->sum].shape.GetShapeSize() != n)
    return InvalidArgument("[" + cn.op_type + " '" + cn.name + "'] fused addend '" + m_.values[f->sum].name + "' " +
                           m_.values[f->sum].shape.ToString() + " does not match its output " + m_.values[cn.out_values[0]].shape.ToString());
  if (f->bias >= 0) {
    const Shape& os = m_.values[cn.out_values[0]].shape;
    const int64_t bn = m_.values[f->bias].shape.GetShapeSize();
    if (os.GetDimNum() == 0 || bn != os.GetDim(os.GetDimNum() - 1) || bn <= 0)
      return InvalidArgument("[" + cn.op_type + " '" + cn.name + "'] fused bias '" + m_.values[f->bias].name + "' " +
                             m_.values[f->bias].shape.ToString() + " is not one value per element of the last dim of " + os.ToString());
  }
  if ((f->sum >= 0 && m_.values[f->sum].dtype != DT_FLOAT) || (f->bias >= 0 && m_.values[f->bias].dtype != DT_FLOAT))
    return FailedPrecondition("[" + cn.op_type + " '" + cn.name + "'] carries a fused addend that is not float32");
  f->view.reset(v.release());
  return Status::Ok();
}

// The fused work after the op's own code, in the runtime's order: output + addend (+ bias), then
// the activation, in place on output 0.
Status Generator::EmitFused(const CompiledNode& cn, const Fused& f) {
  if (!f.view) return Status::Ok();
  const Value& out = m_.values[cn.out_values[0]];
  const int64_t n = out.shape.GetShapeSize();
  if (n == 0) return Status::Ok();
  auto operand = [&](int id) -> Expected<std::string> {
    if (m_.values[id].kind != ValueKind::kConstant) return "(const float*)ctx->tensor_ptrs[" + tensor_enum_[id] + "]";
    auto sym = ConstantSymbol(id);
    if (!sym.ok()) return sym.status();
    return sym.value();
  };
  std::string v = "y[i]";
  std::string decl = "  float* y = (float*)ctx->tensor_ptrs[" + tensor_enum_[cn.out_values[0]] + "];\n";
  if (f.sum >= 0) {
    auto e = operand(f.sum);
    if (!e.ok()) return e.status();
    decl += "  const float* s = " + e.value() + ";\n";
    v = "(" + v + " + s[i])";
  }
  if (f.bias >= 0) {
    auto e = operand(f.bias);
    if (!e.ok()) return e.status();
    const Shape& os = out.shape;
    decl += "  const float* b = " + e.value() + ";\n";
    v = "(" + v + " + b[i % " + std::to_string(os.GetDim(os.GetDimNum() - 1)) + "])";
  }
  const float a = f.activation.alpha, be = f.activation.beta;
  const std::string A = Element(DT_FLOAT, &a, 0), B = Element(DT_FLOAT, &be, 0);
  std::string act;
  switch (f.activation.activation) {
    case WEFT_ACT_NONE: act = "x"; break;
    case WEFT_ACT_RELU: act = "x < 0.f ? 0.f : x"; break;
    case WEFT_ACT_CLIP: act = "x < " + A + " ? " + A + " : (x > " + B + " ? " + B + " : x)"; break;
    case WEFT_ACT_LEAKY_RELU: act = "x >= 0.f ? x : " + A + " * x"; break;
    case WEFT_ACT_SIGMOID: act = "x >= 0.f ? 1.f / (1.f + expf(-x)) : expf(x) / (1.f + expf(x))"; break;
    case WEFT_ACT_TANH: act = "tanhf(x)"; break;
    case WEFT_ACT_HARD_SIGMOID: act = "fmaxf(0.f, fminf(1.f, " + A + " * x + " + B + "))"; break;
    case WEFT_ACT_ELU: act = "x >= 0.f ? x : " + A + " * (expf(x) - 1.f)"; break;
    case WEFT_ACT_HARD_SWISH: act = "x * fmaxf(0.f, fminf(1.f, x / 6.f + 0.5f))"; break;
    case WEFT_ACT_SWISH: {
      const std::string ax = "(" + A + " * x)";
      act = "x * (" + ax + " >= 0.f ? 1.f / (1.f + expf(-" + ax + ")) : expf(" + ax + ") / (1.f + expf(" + ax + ")))";
      break;
    }
    case WEFT_ACT_GELU: act = "0.5f * x * (1.f + erff(x * 0.7071067811865476f))"; break;
    case WEFT_ACT_GELU_TANH: act = "0.5f * x * (1.f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)))"; break;
    default: return InvalidArgument("[" + cn.op_type + " '" + cn.name + "'] carries unknown activation " + std::to_string(f.activation.activation));
  }
  WEFT_RETURN_IF_ERROR(Code(WEFT_EMIT_INCLUDE, "<math.h>", nullptr));
  const std::string code = "{ /* fused: " + std::string(f.sum >= 0 ? "+ addend, " : "") + (f.bias >= 0 ? "+ bias, " : "") +
                           kActivationNames[f.activation.activation] + " */\n" + decl + "  int64_t i;\n  for (i = 0; i < " +
                           std::to_string(n) + "; ++i) {\n    const float x = " + v + ";\n    y[i] = " + act + ";\n  }\n}\n";
  return Code(WEFT_EMIT_RUN, nullptr, code.c_str());
}

Status Generator::Plan(AotReport* r) {
  const int steps = static_cast<int>(m_.nodes.size());
  std::vector<int> first(m_.values.size(), -1), last(m_.values.size(), -1);
  for (int id : m_.input_ids) first[id] = 0, last[id] = 0;
  for (int s = 0; s < steps; ++s) {
    for (int id : m_.nodes[s]->out_values)
      if (first[id] < 0) first[id] = s, last[id] = s;
    for (int id : m_.nodes[s]->in_values) last[id] = std::max(last[id], s);
    for (auto& [id, want] : m_.nodes[s]->guards) last[id] = std::max(last[id], s);  // read to decide whether it runs
  }
  for (int id : m_.output_ids) last[id] = steps;  // read by the caller after the run
  if (embedded_)  // a body's inputs hold across runs: the Loop or Scan rewrites only what changes
    for (int id : m_.input_ids) last[id] = steps;
  std::vector<ArenaBuffer> bufs;
  for (int id : tensor_ids_) {
    ArenaBuffer b;
    const Value& v = m_.values[id];
    // A value the runtime keeps blocked (padded channels) takes its plain size here.
    b.bytes = v.format == WEFT_FORMAT_ND ? v.bytes : static_cast<uint64_t>(v.shape.GetShapeSize()) * DataTypeSize(v.dtype);
    b.first = std::max(0, first[id]);
    b.last = std::max(b.first, last[id]);
    bufs.push_back(b);
  }
  for (size_t s = 0; s < nodes_.size(); ++s)
    for (uint64_t bytes : nodes_[s].scratch) {
      ArenaBuffer b;
      b.bytes = bytes;
      b.first = b.last = static_cast<int>(s);
      bufs.push_back(b);
    }
  plan_ = PlanArenaBuffers(bufs, kAlign);
  if (!ArenaPlanValid(bufs, plan_.arena_bytes)) return Internal("the arena plan overlaps live buffers (a planner bug)");
  if (plan_.arena_bytes > UINT32_MAX) return InvalidArgument("the arena needs " + std::to_string(plan_.arena_bytes) + " bytes, more than 4 GiB");
  size_t k = 0;
  for (; k < tensor_ids_.size(); ++k) tensor_offset_.push_back(bufs[k].offset);
  scratch_offset_.resize(nodes_.size());
  for (size_t s = 0; s < nodes_.size(); ++s)
    for (size_t j = 0; j < nodes_[s].scratch.size(); ++j) scratch_offset_[s].push_back(bufs[k++].offset);
  r->arena_bytes = plan_.arena_bytes;
  r->lower_bound_bytes = plan_.lower_bound_bytes;
  r->algorithm = plan_.algorithm;
  for (auto& t : plan_.trials) r->trials.push_back({t.algorithm, t.bytes});
  return Status::Ok();
}

std::string Generator::Header() const {
  std::string P = p_, U = p_;
  std::transform(U.begin(), U.end(), U.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  std::ostringstream h;
  h << "/* " << P << ": a C99 module generated by weft aot from graph '" << CComment(m_.graph_name) << "' (" << nodes_.size()
    << " operators). Regenerate rather than edit. */\n"
    << "#ifndef " << U << "_H_\n#define " << U << "_H_\n\n#include <stddef.h>\n#include <stdint.h>\n\n"
    << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
  h << "/* Bytes of working memory the module needs (tensors and operator scratch), planned ahead of time;\n"
    << " * the largest amount live at one time is " << plan_.lower_bound_bytes << " bytes. */\n"
    << "#define " << P << "_ARENA_BYTES " << plan_.arena_bytes << "u\n"
    << "/* An external arena must be aligned to this many bytes. */\n#define " << P << "_ARENA_ALIGN " << kAlign << "u\n"
    << "#define " << P << "_NUM_OPS " << nodes_.size() << "\n#define " << P << "_NUM_INPUTS " << m_.input_ids.size() << "\n#define " << P
    << "_NUM_OUTPUTS " << m_.output_ids.size() << "\n\n";
  h << "/* What " << P << "_init and " << P << "_run return. An operator's own failure comes back unchanged, in\n"
    << " * [" << P << "_status_custom_first, " << P << "_status_custom_last]; the module never uses that range. */\n"
    << "enum {\n  " << P << "_status_ok = 0,\n  " << P << "_status_null_context = 1,\n  " << P << "_status_not_initialized = 2,\n  " << P
    << "_status_arena_too_small = 3,\n  " << P << "_status_arena_misaligned = 4,\n  " << P
    << "_status_op_failed = 5, /* an operator returned a code outside its range; failed_op says which */\n  " << P
    << "_status_custom_first = 1000,\n  " << P << "_status_custom_last = 1999\n};\n\n";
  h << "/* Indices into " << P << "_context.tensor_ptrs, one per tensor in the arena. */\nenum {\n";
  for (size_t k = 0; k < tensor_ids_.size(); ++k) {
    const Value& v = m_.values[tensor_ids_[k]];
    h << "  " << tensor_enum_[tensor_ids_[k]] << " = " << k << ", /* " << CComment(v.name) << ": " << DataTypeName(v.dtype)
      << v.shape.ToString() << " */\n";
  }
  h << "  " << P << "_num_tensors = " << tensor_ids_.size() << "\n};\n\n";
  h << "/* A graph input or output. dtype is Weft's data type code (0 float32, 2 int8, 3 int32, 4 uint8,\n"
    << " * 6 int16, 9 int64, 12 bool); type_name spells it. */\n"
    << "typedef struct " << P << "_tensor_info {\n  const char* name;\n  int32_t index; /* into tensor_ptrs */\n  int32_t dtype;\n"
    << "  const char* type_name;\n  int32_t rank;\n  int32_t dims[8];\n  uint32_t bytes;\n} " << P << "_tensor_info;\n"
    << "extern const " << P << "_tensor_info " << P << "_inputs[" << P << "_NUM_INPUTS];\n"
    << "extern const " << P << "_tensor_info " << P << "_outputs[" << P << "_NUM_OUTPUTS];\n\n";
  h << "/* Called before (phase 0) and after (phase 1) every operator while set, e.g. for profiling. */\n"
    << "typedef void (*" << P << "_op_callback)(void* user, int32_t op_index, const char* op_name, int32_t phase);\n\n";
  const bool any_state = AnyState();
  h << "/* Everything one instance of the model owns; several instances may run side by side. */\n"
    << "typedef struct " << P << "_context {\n  void* tensor_ptrs[" << P << "_num_tensors];\n  uint8_t* arena;\n  " << P
    << "_op_callback op_callback;\n  void* op_callback_user;\n  int32_t initialized;\n  int32_t failed_op; /* the operator behind the "
    << "last failure, or -1 */\n";
  if (any_state) {
    h << "  struct {\n";
    for (auto& n : nodes_)
      if (!n.state.empty()) h << "    struct {\n" << n.state << "    } " << n.id << ";\n";
    for (auto& [member, text] : shared_) h << "    struct {\n" << text << "    } " << member << ";\n";
    h << "  } state; /* operators' state, kept between runs */\n";
  }
  if (!o_.external_arena) h << "  uint8_t arena_storage[" << P << "_ARENA_BYTES + " << P << "_ARENA_ALIGN];\n";
  h << "} " << P << "_context;\n\n";
  if (o_.external_arena)
    h << "/* Binds `arena` (" << P << "_ARENA_BYTES bytes, aligned to " << P << "_ARENA_ALIGN) and runs every operator's init.\n"
      << " * Call it again after moving the context. */\n";
  else
    h << "/* Prepares the context: the arena inside it, or `arena` (" << P << "_ARENA_BYTES bytes, aligned to\n * " << P
      << "_ARENA_ALIGN) when not NULL; then every operator's init. Call it again after moving the context. */\n";
  h << "int32_t " << P << "_init(" << P << "_context* ctx, void* arena, size_t arena_bytes);\n\n"
    << "/* Runs the model once: write every input (tensor_ptrs[" << P << "_inputs[i].index]) before each call;\n"
    << " * the outputs stay valid until the next call. */\nint32_t " << P << "_run(" << P << "_context* ctx);\n\n"
    << "/* The name of operator `op_index` (its node in the source model), or NULL. */\nconst char* " << P << "_op_name(int32_t op_index);\n\n"
    << "#ifdef __cplusplus\n}\n#endif\n\n#endif\n";
  return h.str();
}

std::string Generator::Source() const {
  const std::string& P = p_;
  std::ostringstream c;
  if (embedded_) {  // inside another module's source: its includes and helpers are that module's
    c << "/* " << P << ": a subgraph's module. */\n";
  } else {
    c << "/* " << P << ": generated by weft aot. Regenerate rather than edit. */\n#include \"" << P << ".h\"\n\n#include <math.h>\n#include <string.h>\n";
    for (auto& inc : includes_)
      if (inc != "<string.h>" && inc != "<math.h>") c << "#include " << inc << "\n";
    c << "\n#include \"" << P << "_constants.h\"\n\n"
      << "#if defined(__GNUC__)\n#define WEFT_AOT_UNUSED __attribute__((unused))\n#else\n#define WEFT_AOT_UNUSED\n#endif\n\n";
  }
  bool any_scratch = false;
  for (size_t s = 0; s < nodes_.size(); ++s)
    for (size_t j = 0; j < nodes_[s].scratch.size(); ++j) {
      if (!any_scratch) c << "/* Operator scratch inside the arena. */\n";
      any_scratch = true;
      c << "#define " << nodes_[s].id << "_scratch" << j << " (ctx->arena + " << scratch_offset_[s][j] << "u)\n";
    }
  if (any_scratch) c << "\n";
  if (!embedded_)
    for (auto& [key, text] : helpers_) c << "/* ---- " << CComment(key) << " ---- */\n" << text << (text.empty() || text.back() == '\n' ? "" : "\n") << "\n";
  // Operators placed in linker sections (config file: code_section), one macro per section.
  std::map<std::string, std::string> section_macro;
  for (auto& [node, section] : o_.code_sections)
    if (!section_macro.count(section)) {
      const std::string m = P + "_CODE_SECTION_" + std::to_string(section_macro.size());
      section_macro[section] = m;
      c << "#if defined(__GNUC__)\n#define " << m << " __attribute__((section(\"" << section << "\")))\n#else\n#define " << m << "\n#endif\n";
    }
  if (!section_macro.empty()) c << "\n";
  for (auto& n : nodes_) {
    auto sec = o_.code_sections.find(n.name);
    const std::string place = sec == o_.code_sections.end() ? "" : section_macro[sec->second] + " ";
    c << "/* " << CComment(n.op_type) << " '" << CComment(n.name) << "' */\n";
    c << "static " << place << "int32_t " << n.id << "_init(" << P << "_context* ctx) {\n  (void)ctx;\n" << n.init << "  return 0;\n}\n\n";
    c << "static " << place << "int32_t " << n.id << "_run(" << P << "_context* ctx) {\n  (void)ctx;\n" << n.run << "  return 0;\n}\n\n";
  }
  // Operators in a branch (ONNX If): each runs only when its conditions hold, as in the runtime.
  bool any_guard = false;
  for (size_t s = 0; s < m_.nodes.size(); ++s) {
    const CompiledNode& cn = *m_.nodes[s];
    if (cn.guards.empty()) continue;
    any_guard = true;
    c << "static int " << nodes_[s].id << "_taken(const " << P << "_context* ctx) {\n  return ";
    for (size_t g = 0; g < cn.guards.size(); ++g) {
      const auto& [id, want] = cn.guards[g];
      std::string at = m_.values[id].kind == ValueKind::kConstant ? "(const void*)" + const_of_value_.at(id)
                                                                       : "(const void*)ctx->tensor_ptrs[" + tensor_enum_[id] + "]";
      c << (g ? " && " : "") << "(*(const uint8_t*)" << at << (want ? " != 0)" : " == 0)");
    }
    c << ";\n}\n\n";
  }
  if (any_guard) {
    c << "typedef int (*" << P << "_taken_fn)(const " << P << "_context* ctx);\n";
    c << "static const " << P << "_taken_fn " << P << "_step_taken[" << P << "_NUM_OPS] = {";
    for (size_t s = 0; s < nodes_.size(); ++s)
      c << (s ? ", " : "") << (s % 4 == 0 ? "\n  " : "") << (m_.nodes[s]->guards.empty() ? std::string("0") : nodes_[s].id + "_taken");
    c << "};\n";
  }
  c << "typedef int32_t (*" << P << "_step_fn)(" << P << "_context* ctx);\n";
  c << "static const " << P << "_step_fn " << P << "_step_init[" << P << "_NUM_OPS] = {";
  for (size_t s = 0; s < nodes_.size(); ++s) c << (s ? ", " : "") << (s % 4 == 0 ? "\n  " : "") << nodes_[s].id << "_init";
  c << "};\nstatic const " << P << "_step_fn " << P << "_step_run[" << P << "_NUM_OPS] = {";
  for (size_t s = 0; s < nodes_.size(); ++s) c << (s ? ", " : "") << (s % 4 == 0 ? "\n  " : "") << nodes_[s].id << "_run";
  c << "};\nstatic const char* const " << P << "_op_names[" << P << "_NUM_OPS] = {";
  for (size_t s = 0; s < nodes_.size(); ++s) c << (s ? "," : "") << "\n  \"" << CString(nodes_[s].name) << "\"";
  c << "};\nstatic const uint32_t " << P << "_tensor_offsets[" << P << "_num_tensors] = {";
  for (size_t k = 0; k < tensor_offset_.size(); ++k) c << (k ? ", " : "") << (k % 8 == 0 ? "\n  " : "") << tensor_offset_[k] << "u";
  c << "};\n\n";
  auto info = [&](const char* what, const std::vector<int>& ids) {
    c << "const " << P << "_tensor_info " << P << "_" << what << "[" << P << "_NUM_" << (std::string(what) == "inputs" ? "INPUTS" : "OUTPUTS")
      << "] = {";
    for (size_t k = 0; k < ids.size(); ++k) {
      const Value& v = m_.values[ids[k]];
      c << (k ? "," : "") << "\n  {\"" << CString(v.name) << "\", " << tensor_enum_[ids[k]] << ", " << static_cast<int>(v.dtype) << ", \""
        << DataTypeName(v.dtype) << "\", " << v.shape.GetDimNum() << ", {";
      for (size_t d = 0; d < 8; ++d) c << (d ? ", " : "") << (d < v.shape.GetDimNum() ? v.shape.GetDim(d) : 0);
      c << "}, " << v.bytes << "u}";
    }
    c << "};\n";
  };
  info("inputs", m_.input_ids);
  info("outputs", m_.output_ids);
  c << "\nstatic int32_t " << P << "_status_of(int32_t s) {\n  return s >= " << P << "_status_custom_first && s <= " << P
    << "_status_custom_last ? s : " << P << "_status_op_failed;\n}\n\n";
  c << "const char* " << P << "_op_name(int32_t op_index) {\n  return op_index >= 0 && op_index < " << P << "_NUM_OPS ? " << P
    << "_op_names[op_index] : 0;\n}\n\n";
  c << "int32_t " << P << "_init(" << P << "_context* ctx, void* arena, size_t arena_bytes) {\n  int32_t i;\n  uint8_t* base;\n"
    << "  if (!ctx) return " << P << "_status_null_context;\n  ctx->initialized = 0;\n  ctx->failed_op = -1;\n";
  if (o_.external_arena) {
    c << "  if (!arena" << (plan_.arena_bytes ? " || arena_bytes < " + P + "_ARENA_BYTES" : std::string()) << ") return " << P
      << "_status_arena_too_small;\n";
  } else {
    if (plan_.arena_bytes) c << "  if (arena && arena_bytes < " << P << "_ARENA_BYTES) return " << P << "_status_arena_too_small;\n";
    else c << "  (void)arena_bytes;\n";
  }
  c << "  if (arena && (uintptr_t)arena % " << P << "_ARENA_ALIGN) return " << P << "_status_arena_misaligned;\n";
  if (o_.external_arena) {
    c << "  base = (uint8_t*)arena;\n";
  } else {
    c << "  if (arena) {\n    base = (uint8_t*)arena;\n  } else {\n    size_t misalign = (size_t)((uintptr_t)ctx->arena_storage % "
      << P << "_ARENA_ALIGN);\n    base = ctx->arena_storage + (misalign ? " << P << "_ARENA_ALIGN - misalign : 0);\n  }\n";
  }
  c << "  ctx->arena = base;\n  for (i = 0; i < " << P << "_num_tensors; ++i) ctx->tensor_ptrs[i] = base + " << P << "_tensor_offsets[i];\n";
  if (AnyState()) c << "  memset(&ctx->state, 0, sizeof ctx->state);\n";
  c << "  for (i = 0; i < " << P << "_NUM_OPS; ++i) {\n    int32_t s = " << P << "_step_init[i](ctx);\n    if (s) {\n      ctx->failed_op = i;\n"
    << "      return " << P << "_status_of(s);\n    }\n  }\n  ctx->initialized = 1;\n  return " << P << "_status_ok;\n}\n\n";
  c << "int32_t " << P << "_run(" << P << "_context* ctx) {\n  int32_t i;\n  if (!ctx) return " << P << "_status_null_context;\n"
    << "  if (!ctx->initialized) return " << P << "_status_not_initialized;\n  ctx->failed_op = -1;\n"
    << "  for (i = 0; i < " << P << "_NUM_OPS; ++i) {\n    int32_t s;\n"
    << (any_guard ? "    if (" + P + "_step_taken[i] && !" + P + "_step_taken[i](ctx)) continue; /* a branch not taken */\n" : std::string())
    << "    if (ctx->op_callback) ctx->op_callback(ctx->op_callback_user, i, " << P << "_op_names[i], 0);\n"
    << "    s = " << P << "_step_run[i](ctx);\n"
    << "    if (ctx->op_callback) ctx->op_callback(ctx->op_callback_user, i, " << P << "_op_names[i], 1);\n"
    << "    if (s) {\n      ctx->failed_op = i;\n      return " << P << "_status_of(s);\n    }\n  }\n";
  for (int id : constant_outputs_)  // a graph output that is a constant: its value, where the caller reads outputs
    c << "  memcpy(ctx->tensor_ptrs[" << tensor_enum_[id] << "], " << const_of_value_.at(id) << ", " << m_.values[id].bytes << "u);\n";
  c << "  return " << P << "_status_ok;\n}\n";
  return c.str();
}

std::string Generator::CMakeText() const {
  const std::string& P = p_;
  std::ostringstream t;
  t << "# " << P << ": generated by weft aot. A static library; link it and include includes-api/" << P << ".h.\n"
    << "cmake_minimum_required(VERSION 3.10)\nproject(" << P << " C)\n\n"
    << "add_library(" << P << " STATIC src/" << P << ".c src/" << P << "_constants.c)\n"
    << "target_include_directories(" << P << " PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/includes-api)\n"
    << "set_target_properties(" << P << " PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)\n"
    << "if(NOT MSVC)\n  target_link_libraries(" << P << " PUBLIC m)\nendif()\n";
  if (o_.test)
    t << "\n# The test program: golden inputs through " << P << "_run, outputs compared; exit status 0 when they match.\n"
      << "add_executable(" << P << "_test test/" << P << "_test_case.c test/" << P << "_test_main.c)\n"
      << "target_include_directories(" << P << "_test PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/test)\n"
      << "target_link_libraries(" << P << "_test PRIVATE " << P << ")\n"
      << "set_target_properties(" << P << "_test PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)\n";
  return t.str();
}

// Random test inputs: floats in [-1, 1), integers over their type's range (index-like int32/int64
// inputs over [0, 2), valid for any axis they index that has two entries or more), booleans 0/1.
HostTensor RandomInput(const ValueInfo& in, std::mt19937_64& rng) {
  HostTensor t(in.dtype, in.shape);
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t r = rng();
    switch (in.dtype) {
      case DT_FLOAT: t.data_as<float>()[i] = static_cast<float>(static_cast<double>(r >> 11) / 9007199254740992.0 * 2.0 - 1.0); break;
      case DT_DOUBLE: t.data_as<double>()[i] = static_cast<double>(r >> 11) / 9007199254740992.0 * 2.0 - 1.0; break;
      case DT_INT8: t.data_as<int8_t>()[i] = static_cast<int8_t>(r); break;
      case DT_UINT8: t.data_as<uint8_t>()[i] = static_cast<uint8_t>(r); break;
      case DT_INT16: t.data_as<int16_t>()[i] = static_cast<int16_t>(r); break;
      case DT_UINT16: t.data_as<uint16_t>()[i] = static_cast<uint16_t>(r); break;
      case DT_INT32: t.data_as<int32_t>()[i] = static_cast<int32_t>(r % 2); break;
      case DT_INT64: t.data_as<int64_t>()[i] = static_cast<int64_t>(r % 2); break;
      case DT_BOOL: t.data_as<uint8_t>()[i] = static_cast<uint8_t>(r & 1); break;
      default: break;
    }
  }
  return t;
}

// The test case: `steps` runs in a row on one context (a model with state gets several, so that
// the state's carry from run to run is compared too), each with its inputs and golden outputs.
Status Generator::WriteTest(AotReport* r) {
  const std::string& P = p_;
  const int steps = AnyState() ? std::max(8, o_.test_steps) : std::max(1, o_.test_steps);
  std::mt19937_64 rng(o_.seed);
  std::set<std::string> names;
  for (auto& in : m_.inputs()) names.insert(in.name);
  for (auto& [name, t] : o_.test_inputs)
    if (!names.count(name)) return InvalidArgument("test input '" + name + "': the model has no input of that name");
  std::vector<std::vector<HostTensor>> inputs(static_cast<size_t>(steps)), outputs(static_cast<size_t>(steps));
  // Every operator's outputs in the arena, per run, when the test checks layers: the module's
  // per-operator callback compares them right after each operator, so a difference is found where
  // it starts, not only where it reaches an output.
  uint64_t layer_bytes = 0;
  for (auto& cn : m_.nodes)
    for (int id : cn->out_values) layer_bytes += tensor_enum_[id].empty() ? 0 : m_.values[id].bytes;
  const bool layers = o_.test_layers > 0 || (o_.test_layers < 0 && layer_bytes * static_cast<uint64_t>(steps) <= (uint64_t(1) << 20));
  struct LayerRecorder : StepObserver {
    std::vector<std::vector<HostTensor>> outs;  // by op: its outputs
    bool failed = false;
    void OnStep(const StepEvent& e) override {
      if (outs.size() <= e.index) outs.resize(e.index + 1);
      for (size_t k = 0; k < e.num_outputs; ++k) {
        const Tensor& t = e.output(k);
        auto h = HostTensor::FromBytes(t.GetDataType(), t.GetShape(), t.GetAddr(), t.GetShapeSize() * DataTypeSize(t.GetDataType()));
        if (!h.ok()) failed = true;
        else outs[e.index].push_back(std::move(h).value());
      }
    }
  };
  std::vector<LayerRecorder> recorded(static_cast<size_t>(steps));
  auto rc = m_.CreateRunContext();
  for (int step = 0; step < steps; ++step) {
    auto& ins = inputs[static_cast<size_t>(step)];
    for (auto& in : m_.inputs()) {
      auto it = o_.test_inputs.find(in.name);
      if (it == o_.test_inputs.end()) {
        ins.push_back(RandomInput(in, rng));
        continue;
      }
      if (it->second.dtype() != in.dtype || !(it->second.shape() == in.shape))
        return InvalidArgument("test input '" + in.name + "' is " + DataTypeName(it->second.dtype()) + it->second.shape().ToString() +
                               "; the model takes " + DataTypeName(in.dtype) + in.shape.ToString());
      ins.push_back(it->second);
    }
    std::vector<TensorRef> refs;
    for (auto& t : ins) refs.push_back(TensorRef::Of(t));
    if (layers) rc->SetStepObserver(&recorded[static_cast<size_t>(step)]);
    auto views = m_.RunViews(*rc, refs.data(), refs.size());
    rc->SetStepObserver(nullptr);
    if (recorded[static_cast<size_t>(step)].failed) return Internal("could not record the operators' outputs for the test case");
    if (!views.ok()) return Status(views.status().code(), "running the model for the golden outputs: " + views.status().message());
    for (const TensorRef& v : views.value()) {
      auto t = HostTensor::FromBytes(v.dtype, v.shape, v.data, v.bytes);
      if (!t.ok()) return t.status();
      outputs[static_cast<size_t>(step)].push_back(std::move(t).value());
    }
  }
  std::set<std::string> out_names;
  for (size_t k = 0; k < m_.outputs().size(); ++k) {
    const ValueInfo& info = m_.outputs()[k];
    out_names.insert(info.name);
    auto it = o_.test_outputs.find(info.name);
    if (it == o_.test_outputs.end()) continue;
    const HostTensor& mine = outputs[0][k];
    // The same shape, or the values in row-major order as one flat list (golden files often are).
    const bool flat = it->second.shape().GetDimNum() == 1 && it->second.numel() == mine.numel();
    if (it->second.dtype() != mine.dtype() || !(it->second.shape() == mine.shape() || flat))
      return InvalidArgument("test output '" + info.name + "' is " + DataTypeName(it->second.dtype()) + it->second.shape().ToString() +
                             "; the model gives " + DataTypeName(mine.dtype()) + mine.shape().ToString());
    auto same = HostTensor::FromBytes(mine.dtype(), mine.shape(), it->second.data(), it->second.bytes());
    if (!same.ok()) return same.status();
    outputs[0][k] = std::move(same).value();
  }
  for (auto& [name, t] : o_.test_outputs)
    if (!out_names.count(name)) return InvalidArgument("test output '" + name + "': the model has no output of that name");

  std::ostringstream h, c, mainf;
  h << "/* " << P << "'s test case: golden inputs and the outputs expected for them";
  if (steps > 1) h << ", " << steps << " runs in a row\n * on one context (the model keeps state between runs)";
  h << ". */\n#ifndef " << P << "_TEST_CASE_H_\n#define " << P << "_TEST_CASE_H_\n\n#include \"" << P << ".h\"\n\n"
    << "#define " << P << "_TEST_STEPS " << steps << "\n\n"
    << "/* What one run of the test case found. Layers: every operator's outputs, compared right after it ran\n"
    << " * (when the test case holds them: " << (layers ? "it does" : "it does not") << "). */\n"
    << "typedef struct " << P << "_test_result {\n  uint32_t mismatches, compared;             /* model outputs */\n"
    << "  uint32_t layer_mismatches, layers_compared; /* operator outputs */\n"
    << "  int32_t first_bad_op;                      /* the first operator whose output differs, or -1 */\n} " << P << "_test_result;\n\n"
    << "/* Writes run `step`'s golden inputs into the context's input tensors. */\nint32_t " << P << "_test_case_init(" << P
    << "_context* ctx, int32_t step);\n"
    << "/* Runs the model and compares with run `step`'s golden values (floats within the tolerance,\n"
    << " * integers exactly); returns " << P << "_run's status. Uses, then restores, ctx->op_callback. */\n"
    << "int32_t " << P << "_test_case_run(" << P << "_context* ctx, int32_t step, " << P << "_test_result* result);\n\n#endif\n";
  c << "/* " << P << "'s test case, generated by weft aot. */\n#include \"" << P << "_test_case.h\"\n\n#include <math.h>\n#include <string.h>\n\n";
  const std::vector<ValueInfo>& ins = m_.inputs();
  const std::vector<ValueInfo>& os = m_.outputs();
  for (int step = 0; step < steps; ++step) {
    for (size_t k = 0; k < ins.size(); ++k) {
      const HostTensor& t = inputs[static_cast<size_t>(step)][k];
      c << "static const " << CType(ins[k].dtype) << " " << P << "_golden_in" << step << "_" << k << "[" << std::max<int64_t>(1, t.numel()) << "] = ";
      WriteElements(c, ins[k].dtype, t.data(), static_cast<uint64_t>(t.numel()));
      c << ";\n";
    }
    for (size_t k = 0; k < os.size(); ++k) {
      const HostTensor& t = outputs[static_cast<size_t>(step)][k];
      if (!CType(t.dtype())) return InvalidArgument("output '" + os[k].name + "' has a type the generated C does not hold");
      if (t.numel() == 0) continue;  // nothing to compare
      c << "static const " << CType(t.dtype()) << " " << P << "_golden_out" << step << "_" << k << "[" << std::max<int64_t>(1, t.numel()) << "] = ";
      WriteElements(c, t.dtype(), t.data(), static_cast<uint64_t>(t.numel()));
      c << ";\n";
    }
  }
  // Comparison of `n` elements of type T at `got` with `want`, counted into *bad.
  auto compare = [&](std::ostream& o, DataType dt, const std::string& got, const std::string& want, int64_t n, const std::string& bad,
                     const std::string& count) {
    const char* ct = CType(dt);
    if (n == 0) return;  // nothing to compare (and no always-false loop for -Wextra)
    o << "  {\n    const " << ct << "* g = (const " << ct << "*)" << got << ";\n    uint32_t i;\n    for (i = 0; i < " << n << "u; ++i) {\n";
    if (dt == DT_FLOAT || dt == DT_DOUBLE) {
      o << "      const double w = " << want << "[i], h = g[i];\n"
        << "      if (w != w || h != h) {\n        " << bad << " += (w == w) != (h == h);\n        continue;\n      }\n"
        << "      if (h != w && !(fabs(h - w) <= " << o_.atol << " + " << o_.rtol << " * fabs(w))) ++" << bad << ";  /* an infinity only equals itself */\n";
    } else {
      o << "      if (g[i] != " << want << "[i]) ++" << bad << ";\n";
    }
    o << "    }\n    " << count << " += " << n << "u;\n  }\n";
  };
  if (layers) {
    for (int step = 0; step < steps; ++step)
      for (size_t op = 0; op < m_.nodes.size(); ++op) {
        const auto& outs = recorded[static_cast<size_t>(step)].outs;
        for (size_t k = 0; op < outs.size() && k < outs[op].size() && k < m_.nodes[op]->out_values.size(); ++k) {
          if (!Comparable(m_.nodes[op]->out_values[k]) || !CType(outs[op][k].dtype()) || outs[op][k].numel() == 0) continue;
          c << "static const " << CType(outs[op][k].dtype()) << " " << P << "_layer" << step << "_" << op << "_" << k << "["
            << std::max<int64_t>(1, outs[op][k].numel()) << "] = ";
          WriteElements(c, outs[op][k].dtype(), outs[op][k].data(), static_cast<uint64_t>(outs[op][k].numel()));
          c << ";\n";
        }
      }
    c << "\ntypedef struct " << P << "_layer_watch {\n  " << P << "_context* ctx;\n  int32_t step;\n  " << P << "_test_result* result;\n} "
      << P << "_layer_watch;\n\n";
    c << "/* After each operator: its outputs against the golden ones of this run. */\nstatic void " << P
      << "_check_layer(void* user, int32_t op, const char* name, int32_t phase) {\n  " << P << "_layer_watch* w = (" << P
      << "_layer_watch*)user;\n  " << P << "_context* ctx = w->ctx;\n  uint32_t bad = 0, n = 0;\n  (void)name;\n  (void)ctx;\n  if (phase != 1) return;\n"
      << "  switch (w->step * " << m_.nodes.size() << " + op) {\n";
    for (int step = 0; step < steps; ++step)
      for (size_t op = 0; op < m_.nodes.size(); ++op) {
        const auto& outs = recorded[static_cast<size_t>(step)].outs;
        std::ostringstream body;
        for (size_t k = 0; op < outs.size() && k < outs[op].size() && k < m_.nodes[op]->out_values.size(); ++k) {
          const int id = m_.nodes[op]->out_values[k];
          if (!Comparable(id) || !CType(outs[op][k].dtype()) || outs[op][k].numel() == 0) continue;
          compare(body, outs[op][k].dtype(), "ctx->tensor_ptrs[" + tensor_enum_[id] + "]",
                  P + "_layer" + std::to_string(step) + "_" + std::to_string(op) + "_" + std::to_string(k), outs[op][k].numel(), "bad", "n");
        }
        if (body.str().empty()) continue;
        c << "    case " << step * static_cast<int>(m_.nodes.size()) + static_cast<int>(op) << ":\n" << body.str() << "      break;\n";
      }
    c << "    default:\n      break;\n  }\n  w->result->layer_mismatches += bad;\n  w->result->layers_compared += n;\n"
      << "  if (bad && w->result->first_bad_op < 0) w->result->first_bad_op = op;\n}\n";
  }
  c << "\nint32_t " << P << "_test_case_init(" << P << "_context* ctx, int32_t step) {\n  switch (step) {\n";
  for (int step = 0; step < steps; ++step) {
    c << "    case " << step << ":\n";
    for (size_t k = 0; k < ins.size(); ++k)
      c << "      memcpy(ctx->tensor_ptrs[" << P << "_inputs[" << k << "].index], " << P << "_golden_in" << step << "_" << k << ", "
        << inputs[static_cast<size_t>(step)][k].bytes() << "u);\n";
    c << "      return 0;\n";
  }
  c << "    default:\n      return -1;\n  }\n}\n\n";
  c << "int32_t " << P << "_test_case_run(" << P << "_context* ctx, int32_t step, " << P << "_test_result* result) {\n"
    << "  int32_t s;\n  uint32_t bad = 0, n = 0;\n";
  if (layers)
    c << "  " << P << "_layer_watch watch;\n  " << P << "_op_callback saved = ctx->op_callback;\n  void* saved_user = ctx->op_callback_user;\n";
  c << "  if (step < 0 || step >= " << P << "_TEST_STEPS || !result) return -1;\n  memset(result, 0, sizeof *result);\n"
    << "  result->first_bad_op = -1;\n";
  if (layers)
    c << "  watch.ctx = ctx;\n  watch.step = step;\n  watch.result = result;\n  ctx->op_callback = " << P
      << "_check_layer;\n  ctx->op_callback_user = &watch;\n  s = " << P << "_run(ctx);\n  ctx->op_callback = saved;\n"
      << "  ctx->op_callback_user = saved_user;\n";
  else
    c << "  s = " << P << "_run(ctx);\n";
  c << "  if (s) return s;\n  switch (step) {\n";
  for (int step = 0; step < steps; ++step) {
    c << "    case " << step << ":\n";
    for (size_t k = 0; k < os.size(); ++k) {
      std::ostringstream body;
      compare(body, outputs[static_cast<size_t>(step)][k].dtype(), "ctx->tensor_ptrs[" + P + "_outputs[" + std::to_string(k) + "].index]",
              P + "_golden_out" + std::to_string(step) + "_" + std::to_string(k), outputs[static_cast<size_t>(step)][k].numel(), "bad", "n");
      c << body.str();
    }
    c << "      break;\n";
  }
  c << "    default:\n      break;\n  }\n  result->mismatches = bad;\n  result->compared = n;\n  return 0;\n}\n";
  mainf << "/* Runs " << P << "'s test case twice from " << P << "_init (the second pass checks that a context\n"
        << " * starts over cleanly). Exit status: 0 all outputs match, 1 some differ, 2 the module failed. */\n"
        << "#include <stdio.h>\n\n#include \"" << P << "_test_case.h\"\n\nstatic " << P << "_context ctx;\n";
  if (o_.external_arena) mainf << "static union { uint8_t bytes[" << P << "_ARENA_BYTES]; double align[2]; } arena;\n";
  mainf << "\nint main(void) {\n  uint32_t total_bad = 0, total = 0, layer_bad = 0, layers = 0;\n  int pass;\n  int32_t step, s;\n"
        << "  " << P << "_test_result r;\n"
        << "  for (pass = 0; pass < 2; ++pass) {\n    s = " << P << "_init(&ctx, " << (o_.external_arena ? "arena.bytes, sizeof arena.bytes" : "0, 0")
        << ");\n    if (s) {\n      printf(\"" << P << ": init failed with status %d\\n\", (int)s);\n      return 2;\n    }\n"
        << "    for (step = 0; step < " << P << "_TEST_STEPS; ++step) {\n      " << P << "_test_case_init(&ctx, step);\n      s = " << P
        << "_test_case_run(&ctx, step, &r);\n"
        << "      if (s) {\n        printf(\"" << P << ": run failed with status %d at operator %d\\n\", (int)s, (int)ctx.failed_op);\n        return 2;\n      }\n"
        << "      if (r.first_bad_op >= 0 && layer_bad == 0)\n        printf(\"" << P
        << ": run %d: operator %d ('%s') is the first whose output differs\\n\", (int)step + 1, (int)r.first_bad_op, " << P
        << "_op_name(r.first_bad_op));\n"
        << "      total_bad += r.mismatches;\n      total += r.compared;\n      layer_bad += r.layer_mismatches;\n      layers += r.layers_compared;\n"
        << "    }\n  }\n"
        << "  printf(\"" << P << ": %u of %u output values and %u of %u operator output values differ from the golden ones (%d runs, twice)\\n\", "
        << "(unsigned)total_bad, (unsigned)total, (unsigned)layer_bad, (unsigned)layers, " << P << "_TEST_STEPS);\n"
        << "  return total_bad || layer_bad ? 1 : 0;\n}\n";
  fs::create_directories(fs::path(o_.output_dir) / "test");
  struct F { std::string rel, text; };
  for (const F& f : {F{"test/" + P + "_test_case.h", h.str()}, F{"test/" + P + "_test_case.c", c.str()}, F{"test/" + P + "_test_main.c", mainf.str()}}) {
    std::ofstream out(fs::path(o_.output_dir) / f.rel, std::ios::binary);
    out << f.text;
    if (!out.flush()) return Internal("cannot write '" + (fs::path(o_.output_dir) / f.rel).string() + "'");
    r->files.push_back(f.rel);
  }
  return Status::Ok();
}

Status Generator::WriteFiles(AotReport* r) {
  const std::string& P = p_;
  // Section names go into the C source: letters, digits, '.' and '_' only. Checked before
  // anything is written.
  auto section_ok = [](const std::string& s) {
    for (char ch : s)
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '_') return false;
    return true;
  };
  if (!section_ok(o_.const_section))
    return InvalidArgument("--const-section '" + o_.const_section + "' may hold only letters, digits, '.' and '_'");
  for (auto& [node, section] : o_.code_sections) {
    bool found = false;
    for (auto& n : nodes_) found = found || n.name == node;
    if (!found) return InvalidArgument("code_section for node '" + node + "': the model has no node of that name");
    if (section.empty() || !section_ok(section))
      return InvalidArgument("code_section '" + section + "' of node '" + node + "' may hold only letters, digits, '.' and '_'");
  }
  std::error_code ec;
  for (const char* sub : {"includes-api", "src"}) {
    fs::create_directories(fs::path(o_.output_dir) / sub, ec);
    if (ec) return InvalidArgument("cannot create '" + (fs::path(o_.output_dir) / sub).string() + "': " + ec.message());
  }
  const std::string attr = ConstAttr(P, o_.const_section);
  std::string consts_h = "/* " + P + "'s constant arrays (src/" + P + "_constants.c). */\n#ifndef " + P + "_CONSTANTS_H_\n#define " + P +
                         "_CONSTANTS_H_\n\n#include <stdint.h>\n\n" + attr + "\n" + constants_h_.str() + "\n#endif\n";
  std::string consts_c = "/* " + P + "'s constants, generated by weft aot. */\n#include <math.h>\n#include <stdint.h>\n\n#include \"" + P +
                         "_constants.h\"\n\n" + constants_c_.str();
  struct F { std::string rel, text; };
  for (const F& f : {F{"includes-api/" + P + ".h", Header()}, F{"src/" + P + ".c", Source()}, F{"src/" + P + "_constants.h", consts_h},
                     F{"src/" + P + "_constants.c", consts_c}, F{"CMakeLists.txt", CMakeText()}}) {
    std::ofstream out(fs::path(o_.output_dir) / f.rel, std::ios::binary);
    out << f.text;
    if (!out.flush()) return Internal("cannot write '" + (fs::path(o_.output_dir) / f.rel).string() + "'");
    r->files.push_back(f.rel);
  }
  if (o_.test) WEFT_RETURN_IF_ERROR(WriteTest(r));
  return Status::Ok();
}

Expected<AotReport> Generator::Generate() {
  AotReport r;
  WEFT_RETURN_IF_ERROR(Check());
  WEFT_RETURN_IF_ERROR(NameTensors());
  WEFT_RETURN_IF_ERROR(EmitNodes());
  WEFT_RETURN_IF_ERROR(Plan(&r));
  WEFT_RETURN_IF_ERROR(WriteFiles(&r));
  r.constant_bytes = constant_bytes_;
  r.num_ops = nodes_.size();
  r.num_tensors = tensor_ids_.size();
  return r;
}

}  // namespace
}  // namespace internal

Expected<Graph> FreezeInput(const Graph& g, const std::string& name, HostTensor value) {
  Graph out(g.name());
  bool found = false;
  for (const ValueInfo& in : g.inputs()) {
    if (in.name != name) {
      out.AddInput(in.name, in.dtype, in.shape);
      continue;
    }
    found = true;
    bool fits = value.dtype() == in.dtype && value.shape().GetDimNum() == in.shape.GetDimNum();
    for (size_t d = 0; fits && d < in.shape.GetDimNum(); ++d) fits = in.shape.GetDim(d) < 0 || in.shape.GetDim(d) == value.shape().GetDim(d);
    if (!fits)
      return InvalidArgument("input '" + name + "' cannot be frozen to a value of " + DataTypeName(value.dtype()) + value.shape().ToString() +
                             "; the input is " + DataTypeName(in.dtype) + in.shape.ToString());
  }
  if (!found) return InvalidArgument("the model has no input '" + name + "' to freeze");
  for (auto& [n, t] : g.constants()) out.AddConstant(n, t);
  out.AddConstant(name, std::move(value));
  for (const Node& n : g.nodes()) out.AddNode(n);
  for (const std::string& o : g.outputs()) out.AddOutput(o);
  return out;
}

Expected<AotReport> GenerateC(const CompiledModel& model, const AotOptions& options) {
  const auto* m = dynamic_cast<const internal::ModelImpl*>(&model);
  if (!m) return Status(Status::Code::kInvalidArgument, "GenerateC: the model was not compiled by this library");
  internal::Generator g(*m, options);
  return g.Generate();
}

}  // namespace weft
