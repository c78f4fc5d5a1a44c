// Replaces the built-in Relu when the session allows override.
#include "weft/custom_op.h"

using namespace weft;  // NOLINT

// A package replacing the built-in Relu (only with override allowed): y = x clamped at 0, plus 1000
// so tests can tell which implementation ran.
REG_OP(Relu)
    .INPUT(X, TensorType({DT_FLOAT}))
    .OUTPUT(Y, TensorType({DT_FLOAT})).SAME_AS_INPUT(X)
    .OP_END_FACTORY_REG(Relu);
class Relu : public EagerExecuteOp {
 public:
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), DT_FLOAT);
    if (!y) return GRAPH_FAILED;
    for (int64_t i = 0; i < x->GetShapeSize(); ++i) {
      float v = x->GetData<float>()[i];
      y->GetData<float>()[i] = (v > 0 ? v : 0) + 1000.f;
    }
    return GRAPH_SUCCESS;
  }
};
REG_AUTO_MAPPING_OP(Relu);
