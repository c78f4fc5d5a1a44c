// Add, Sub, Mul, Div with ONNX broadcasting.
#include "elementwise.h"

namespace weft::ops {
namespace {

constexpr int64_t kParallelGrain = 1 << 15;  // elements per intra-op task

struct AddFn { static constexpr const char* kName = "Add"; template <typename C> static C Apply(C a, C b) { return WrapAdd(a, b); } };
struct SubFn { static constexpr const char* kName = "Sub"; template <typename C> static C Apply(C a, C b) { return WrapSub(a, b); } };
struct MulFn { static constexpr const char* kName = "Mul"; template <typename C> static C Apply(C a, C b) { return WrapMul(a, b); } };
struct DivFn { static constexpr const char* kName = "Div"; template <typename C> static C Apply(C a, C b) { return WrapDiv(a, b); } };

template <typename Fn>
class BinaryOp : public EagerExecuteOp, public ShapeInferOp, public FusibleOp {
 public:
  // Add declares itself so that epilogue fusion can fold it into its producer.
  graphStatus QueryFusion(OpQueryContext*, FusionSupport& s) override {
    if constexpr (std::is_same<Fn, AddFn>::value) s.IsAdd();
    return GRAPH_SUCCESS;
  }

 public:
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape* a = ctx->GetInputShape(0);
    const Shape* b = ctx->GetInputShape(1);
    if (!BroadcastShape(*a, *b, ctx->GetOutputShape(0))) {
      ctx->SetError(ShapeMismatch(Fn::kName, *a, *b));
      return GRAPH_FAILED;
    }
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* a = ctx->GetInputTensor(0);
    const Tensor* b = ctx->GetInputTensor(1);
    Tensor* c = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), a->GetDataType());
    if (!c) return GRAPH_FAILED;
    graphStatus status = GRAPH_SUCCESS;
    DispatchNumeric(a->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      using C = typename Compute<T>::type;
      const T* pa = a->GetData<T>();
      const T* pb = b->GetData<T>();
      T* pc = c->GetData<T>();
      if constexpr (std::is_integral<C>::value && std::is_same<Fn, DivFn>::value) {
        int64_t nb = b->GetShapeSize();
        for (int64_t i = 0; i < nb; ++i)
          if (pb[i] == 0) {
            ctx->SetError("Div: integer division by zero (input B, element " + std::to_string(i) + ")");
            status = GRAPH_FAILED;
            return;
          }
      }
      if (a->GetShape() == c->GetShape() && b->GetShape() == c->GetShape()) {  // no broadcasting: a tight loop
        int64_t n = c->GetShapeSize();
        auto body = [&](int64_t lo, int64_t hi) {
          for (int64_t i = lo; i < hi; ++i) pc[i] = Store<T>(Fn::template Apply<C>(Load(pa[i]), Load(pb[i])));
        };
        if (n < kParallelGrain) body(0, n);
        else ctx->ParallelFor(n, kParallelGrain, body);
        return;
      }
      ForEachBroadcast(a->GetShape(), b->GetShape(), c->GetShape(), [&](int64_t i, int64_t ia, int64_t ib) {
        pc[i] = Store<T>(Fn::template Apply<C>(Load(pa[ia]), Load(pb[ib])));
      });
    });
    return status;
  }
};

std::unique_ptr<OpDef> BinaryDef(const char* type) {
  return OpDefBuilder(type)
      .INPUT(A, "T")
      .INPUT(B, "T")
      .OUTPUT(C, "T")
      .DATATYPE(T, TensorType({DT_FLOAT, DT_FLOAT16, DT_BF16, DT_DOUBLE, DT_INT8, DT_UINT8, DT_INT16, DT_INT32, DT_INT64}))
      .Build();
}

template <typename Fn>
OpEntry Entry() {
  return {BinaryDef(Fn::kName), MakeOpImpl<BinaryOp<Fn>>(Fn::kName)};
}

}  // namespace

void WeftRegister_binary(std::vector<OpEntry>& out) {
  out.push_back(Entry<AddFn>());
  out.push_back(Entry<SubFn>());
  out.push_back(Entry<MulFn>());
  out.push_back(Entry<DivFn>());
}

}  // namespace weft::ops
