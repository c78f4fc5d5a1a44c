// CheckedSqrt: one operator class for Weft's runtime (Execute) and for generated C (Emit).
//
// In the runtime a negative input fails the run with a message naming the element. In a module
// made by `weft aot`, the emitted C returns this op's status 1 (EmitContext::CustomStatus(1),
// i.e. 1001, inside the 1000-1999 range the module reserves for operators), which <prefix>_run
// hands to its caller unchanged, with ctx->failed_op naming the node.
#include <cmath>
#include <string>

#include "checked_sqrt_proto.h"

namespace {

// The emitted kernel: module-wide (emitted once however many CheckedSqrt nodes a model has),
// plain C99. Its status for a bad input is the op's own code.
std::string KernelC() {
  return "/* Square roots of n floats; " + std::to_string(ge::EmitContext::CustomStatus(1)) +
         " (CheckedSqrt's status 1) at the first input that is\n"
         " * negative or NaN, which is left unwritten, as are the ones after it. */\n"
         "static int32_t checked_sqrt_f32(int64_t n, const float* x, float* y) {\n"
         "  int64_t i;\n"
         "  for (i = 0; i < n; ++i) {\n"
         "    if (!(x[i] >= 0.f)) return " +
         std::to_string(ge::EmitContext::CustomStatus(1)) +
         ";\n"
         "    y[i] = sqrtf(x[i]);\n"
         "  }\n"
         "  return 0;\n"
         "}\n";
}

}  // namespace

class CheckedSqrt : public ge::EagerExecuteOp, public ge::ShapeInferOp, public ge::EmittableOp {
 public:
  ge::graphStatus InferShape(gert::InferShapeContext* ctx) override {
    *ctx->GetOutputShape(0) = *ctx->GetInputShape(0);
    return ge::GRAPH_SUCCESS;
  }

  ge::graphStatus Execute(gert::EagerOpExecutionContext* ctx) override {
    const gert::Tensor* x = ctx->GetInputTensor(0);
    gert::Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), ge::DT_FLOAT);
    if (y == nullptr) return ge::GRAPH_FAILED;
    const float* px = x->GetData<float>();
    float* py = y->GetData<float>();
    for (int64_t i = 0; i < x->GetShapeSize(); ++i) {
      if (!(px[i] >= 0.f)) {
        ctx->SetError("input element " + std::to_string(i) + " is " + std::to_string(px[i]) + "; CheckedSqrt takes values >= 0");
        return ge::GRAPH_FAILED;
      }
      py[i] = std::sqrt(px[i]);
    }
    return ge::GRAPH_SUCCESS;
  }

  // The node's C: the shared kernel, and a run body that calls it on this node's tensors and
  // returns its status. Input() and Output() are expressions through ctx->tensor_ptrs, so the
  // arena planner may put the tensors anywhere.
  ge::graphStatus Emit(gert::EmitContext* ctx) override {
    const gert::Tensor* x = ctx->GetInputTensor(0);
    if (x->GetDataType() != ge::DT_FLOAT) return ctx->SetError("CheckedSqrt emits C for float32 only"), ge::GRAPH_FAILED;
    ctx->Include("<math.h>");
    ctx->Helper("checked_sqrt_f32", KernelC());
    ctx->Run("{\n  const int32_t status = checked_sqrt_f32(" + std::to_string(x->GetShapeSize()) + ", " + ctx->Input(0, "float") + ", " +
             ctx->Output(0, "float") + ");\n  if (status) return status;\n}\n");
    return ge::GRAPH_SUCCESS;
  }
};

REG_AUTO_MAPPING_OP(CheckedSqrt);
