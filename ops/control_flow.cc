// If, in Weft's flat form: If(cond, then_1..then_k, else_1..else_k) -> out_1..out_k, where out_i
// is then_i when cond holds and else_i otherwise. The branches themselves are the graph's nodes
// guarded by cond (Node::when, as the ONNX importer writes an ONNX If): only the taken branch
// runs, and this op reads only its outputs. A cond known at compile time drops the other branch.
#include <cstring>

#include "aot_emit.h"
#include "op_util.h"

namespace weft::ops {
namespace {

class If : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // -1 when cond is not known now (compile time with a cond computed at run time), else 0 or 1.
  static int Cond(const Tensor* c) {
    if (!c->GetAddr()) return -1;
    return c->GetData<uint8_t>()[0] != 0;
  }
  static graphStatus Check(const KernelContextBase* ctx, size_t* k) {
    size_t n = ctx->GetComputeNodeInputNum(), outs = ctx->GetComputeNodeOutputNum();
    if (n < 1 || (n - 1) != 2 * outs)
      return Fail(ctx, "takes the condition, then one value per output from each branch (" + std::to_string(2 * outs + 1) +
                           " inputs for " + std::to_string(outs) + " outputs), got " + std::to_string(n));
    const Tensor* c = ctx->GetInputTensor(0);
    if (c->GetShape().GetShapeSize() != 1) return Fail(ctx, "the condition must hold one element, got shape " + c->GetShape().ToString());
    *k = outs;
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    size_t k = ctx->GetComputeNodeOutputNum();
    if (ctx->GetComputeNodeInputNum() != 2 * k + 1) return Fail(ctx, "needs 2 * outputs + 1 inputs");
    for (size_t i = 0; i < k; ++i) {
      DataType t = ctx->GetInputDataType(1 + i), e = ctx->GetInputDataType(1 + k + i);
      if (t != e)
        return Fail(ctx, "output " + std::to_string(i) + " is " + DataTypeName(t) + " in the then branch and " + DataTypeName(e) +
                             " in the else branch");
      ctx->SetOutputDataType(i, t);
    }
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    size_t k = 0;
    if (Check(ctx, &k) != GRAPH_SUCCESS) return GRAPH_FAILED;
    int c = Cond(ctx->GetInputTensor(0));
    for (size_t i = 0; i < k; ++i) {
      const Shape& t = *ctx->GetInputShape(1 + i);
      const Shape& e = *ctx->GetInputShape(1 + k + i);
      if (c >= 0) *ctx->GetOutputShape(i) = c ? t : e;
      else if (t == e) *ctx->GetOutputShape(i) = t;
      else MarkUnknown(ctx->GetOutputShape(i), t.GetDimNum() == e.GetDimNum() ? t.GetDimNum() : 1);  // known when it runs
    }
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    size_t k = 0;
    if (Check(ctx, &k) != GRAPH_SUCCESS) return GRAPH_FAILED;
    bool c = Cond(ctx->GetInputTensor(0)) == 1;
    for (size_t i = 0; i < k; ++i) {
      const Tensor* x = ctx->GetInputTensor(1 + (c ? 0 : k) + i);
      Tensor* y = ctx->MallocOutputTensor(i, x->GetShape(), x->GetDataType());
      if (!y) return GRAPH_FAILED;
      if (x->GetByteCount()) std::memcpy(y->GetAddr(), x->GetAddr(), x->GetByteCount());
    }
    return GRAPH_SUCCESS;
  }
  // In C: each output copies the taken branch's value (the branches' own operators run only when
  // the module's step guard says so).
  graphStatus Emit(EmitContext* ctx) override {
    size_t k = 0;
    if (Check(ctx, &k) != GRAPH_SUCCESS) return GRAPH_FAILED;
    ctx->Include("<string.h>");
    std::string code = "{\n  const int taken = *" + ctx->Input(0, "uint8_t") + " != 0;\n";
    for (size_t i = 0; i < k; ++i) {
      const Tensor* y = ctx->GetOutputTensor(i);
      const int64_t bytes = y->GetShapeSize() * static_cast<int64_t>(DataTypeSize(y->GetDataType()));
      if (bytes == 0) continue;
      code += "  memcpy(" + ctx->Output(i, "uint8_t") + ", taken ? (const void*)" + ctx->Input(1 + i, "uint8_t") + " : (const void*)" +
              ctx->Input(1 + k + i, "uint8_t") + ", " + std::to_string(bytes) + "u);\n";
    }
    ctx->Run(code + "}\n");
    return GRAPH_SUCCESS;
  }
};

}  // namespace

void WeftRegister_control_flow(std::vector<OpEntry>& out) {
  out.push_back({OpDefBuilder("If").INPUT(cond, TensorType({DT_BOOL})).DYNAMIC_INPUT(branch_outputs, TensorType::AnyValue())
                     .DYNAMIC_OUTPUT(outputs, TensorType::AnyValue()).Build(),
                 MakeOpImpl<If>("If")});
}

}  // namespace weft::ops
