// LiteRT (TensorFlow Lite) frontend: a .tflite flatbuffer → weft::Graph.
//
//   auto graph = weft::ImportLiteRt("model.tflite").value();
//   auto model = session->Compile(graph).value();
//
// The file is checked with the flatbuffers verifier before anything is read (a corrupt file is an
// error, never a crash). Subgraph 0 becomes the graph: its input tensors the graph inputs (dims
// that shape_signature marks dynamic become -1), tensors with buffer data constants (also data
// stored after the flatbuffer through a buffer's offset and size), its outputs the graph outputs.
// Each builtin operator becomes one node of op type "Tfl" + the builtin's name in CamelCase
// (CONV_2D → TflConv2D, FULLY_CONNECTED → TflFullyConnected; the opcode is the larger of
// builtin_code and deprecated_builtin_code), in domain "litert", with its builtin options as
// attributes named as the format names the fields, "version" for the op version, and the
// quantization of its tensors (see docs/litert.md). A custom operator becomes a node whose op type
// is its customCode's canonical key (LiteRtCustomOpKey), or what an operator package's
// framework/litert/op_map.json maps the code to; its custom_options reach the op as typed
// attributes when they are a flexbuffer map, as the uint8 tensor attribute "custom_options"
// otherwise.
#ifndef WEFT_LITERT_H_
#define WEFT_LITERT_H_

#include <map>
#include <memory>
#include <string>

#include "weft/weft.h"

namespace weft {

class RegistryContext;

struct LiteRtImportOptions {
  // Concrete shapes for inputs, overriding the model's (dynamic dims are -1 otherwise).
  std::map<std::string, Shape> input_shapes;
  // customCode (or its canonical key) → op type, on top of the packages' op_map.json files.
  std::map<std::string, std::string> op_map;
  // The conversion's parts (weft/registry_context.h): its litert_model_hooks rewrite the file's
  // bytes first, its litert_parsers and options shape each operator's node. Null: the built-ins.
  std::shared_ptr<const RegistryContext> registry;
};

WEFT_API Expected<Graph> ImportLiteRt(const std::string& path, const LiteRtImportOptions& options = {});
WEFT_API Expected<Graph> ImportLiteRtBytes(const std::string& bytes, const LiteRtImportOptions& options = {});

// The canonical key of a customCode: hyphens and spaces become underscores, then surrounding
// whitespace is trimmed and the result upper-cased ("custom-noop" → "CUSTOM_NOOP",
// " custom-noop " → "_CUSTOM_NOOP_").
WEFT_API std::string LiteRtCustomOpKey(const std::string& custom_code);

// The op type a builtin operator code imports as ("TflConv2D"), or "" for an unknown code.
WEFT_API std::string LiteRtBuiltinOpType(int32_t builtin_code);

}  // namespace weft

#endif  // WEFT_LITERT_H_
