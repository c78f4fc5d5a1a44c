// Identity: copies its input.
#include <cstring>

#include "aot_emit.h"
#include "weft/custom_op.h"

namespace weft::ops {
namespace {

class Identity : public EagerExecuteOp, public EmittableOp {
 public:
  graphStatus Emit(EmitContext* ctx) override { return aot::EmitCopy(ctx); }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    // The planner may place the output over an input that dies here: nothing to copy.
    if (x->GetByteCount() && y->GetAddr() != x->GetAddr()) std::memcpy(y->GetAddr(), x->GetAddr(), x->GetByteCount());
    return GRAPH_SUCCESS;
  }
};

}  // namespace

void WeftRegister_identity(std::vector<OpEntry>& out) {
  out.push_back({OpDefBuilder("Identity").INPUT(input, TensorType::AnyValue()).OUTPUT(output, TensorType::AnyValue()).SAME_AS_INPUT(input).Build(),
                 MakeOpImpl<Identity>("Identity")});
}

}  // namespace weft::ops
