// ONNX frontend: ModelProto → weft::Graph.
//
//   auto graph = weft::ImportOnnx("model.onnx").value();
//   auto model = session->Compile(graph).value();
//
// Standard-domain nodes become built-in ops of the same name; older opset forms (attributes that
// later became inputs) are rewritten to the current form. Nodes of any other domain map to the
// op type of the same name, or through `op_map` ("domain:OpType" → op type), which operator
// packages can also ship (framework/onnx/op_map.json). Initializers become constants, including
// external-data files next to the model.
#ifndef WEFT_ONNX_H_
#define WEFT_ONNX_H_

#include <map>
#include <memory>
#include <string>

#include "weft/weft.h"

namespace weft {

class RegistryContext;

struct OnnxImportOptions {
  // Concrete shapes for inputs, overriding the model's (dynamic dims are -1 otherwise).
  std::map<std::string, Shape> input_shapes;
  // The conversion's parts (weft/registry_context.h): its onnx_model_hooks rewrite the file's
  // bytes before they are parsed. Null: none.
  std::shared_ptr<const RegistryContext> registry;
  // Statically quantized convolutions in the QDQ format (DequantizeLinear -> Conv -> QuantizeLinear,
  // as onnxruntime.quantization writes them) become QLinearConv where they fit it exactly: integer
  // sums and one rounding, as ONNX Runtime runs them (README, "Running ONNX models"). Add, Mul,
  // Sigmoid, LeakyRelu, GlobalAveragePool, AveragePool and Concat between such pairs (per tensor)
  // become QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu, QLinearGlobalAveragePool,
  // QLinearAveragePool and QLinearConcat, a Gemm with a constant 8-bit B becomes QGemm, and a
  // MaxPool between a pair of equal parameters runs on the 8-bit values, as ONNX Runtime rewrites
  // them too. False keeps the float operators between the quantization nodes (`weft ...
  // --no-fuse-qdq`).
  bool fuse_qdq = true;
  // With fuse_qdq: false fuses the convolutions only, keeping the other float operators between
  // the pairs.
  bool fuse_qdq_ops = true;
};

WEFT_API Expected<Graph> ImportOnnx(const std::string& path, const OnnxImportOptions& options = {});
WEFT_API Expected<Graph> ImportOnnxBytes(const std::string& bytes, const std::string& base_dir,
                                         const OnnxImportOptions& options = {});
// Reads a serialized TensorProto (the ONNX test-data format).
WEFT_API Expected<HostTensor> ReadOnnxTensor(const std::string& path);
// Reads a serialized value of type `type`: a TensorProto for a tensor type, a SequenceProto for
// SequenceOf(...), an OptionalProto for OptionalOf(...) (weft/sequence.h).
WEFT_API Expected<HostTensor> ReadOnnxValue(const std::string& path, DataType type);

}  // namespace weft

#endif  // WEFT_ONNX_H_
