// Relu: max(x, 0); NaN propagates.
#include "aot_emit.h"
#include "elementwise.h"

namespace weft::ops {
namespace {

class Relu : public EagerExecuteOp, public FusibleOp, public EmittableOp {
 public:
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    if (x->GetDataType() != DT_FLOAT) return ctx->SetError("the generated C takes float32 Relu only"), GRAPH_FAILED;
    ctx->Run("{\n  const float* x = " + ctx->Input(0, "float") + ";\n  float* y = " + ctx->Output(0, "float") + ";\n  int64_t i;\n  for (i = 0; i < " +
             std::to_string(x->GetShapeSize()) + "; ++i) y[i] = x[i] < 0.f ? 0.f : x[i];\n}\n");
    return GRAPH_SUCCESS;
  }
  graphStatus QueryFusion(OpQueryContext*, FusionSupport& s) override {
    s.IsActivation(WEFT_ACT_RELU);
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    int64_t n = x->GetShapeSize();
    DispatchNumeric(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      const T* px = x->GetData<T>();
      T* py = y->GetData<T>();
      for (int64_t i = 0; i < n; ++i) {
        auto v = Load(px[i]);
        py[i] = v < 0 ? Store<T>(decltype(v)(0)) : px[i];  // NaN stays NaN, as max(x, 0) in PyTorch and NumPy
      }
    });
    return GRAPH_SUCCESS;
  }
};

}  // namespace

void WeftRegister_relu(std::vector<OpEntry>& out) {
  out.push_back({OpDefBuilder("Relu")
                     .INPUT(X, TensorType({DT_FLOAT, DT_FLOAT16, DT_BF16, DT_DOUBLE, DT_INT8, DT_INT16, DT_INT32, DT_INT64}))
                     .OUTPUT(Y, TensorType({DT_FLOAT, DT_FLOAT16, DT_BF16, DT_DOUBLE, DT_INT8, DT_INT16, DT_INT32, DT_INT64}))
                     .SAME_AS_INPUT(X)
                     .Build(),
                 MakeOpImpl<Relu>("Relu")});
}

}  // namespace weft::ops
