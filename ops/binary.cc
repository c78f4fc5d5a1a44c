// Add, Sub, Mul, Div with ONNX broadcasting.
#include "aot_emit.h"
#include "elementwise.h"
#include "op_util.h"

namespace weft::ops {
namespace {

constexpr int64_t kParallelGrain = 1 << 15;  // elements per intra-op task

struct AddFn { static constexpr const char* kName = "Add"; template <typename C> static C Apply(C a, C b) { return WrapAdd(a, b); } };
struct SubFn { static constexpr const char* kName = "Sub"; template <typename C> static C Apply(C a, C b) { return WrapSub(a, b); } };
struct MulFn { static constexpr const char* kName = "Mul"; template <typename C> static C Apply(C a, C b) { return WrapMul(a, b); } };
struct DivFn { static constexpr const char* kName = "Div"; template <typename C> static C Apply(C a, C b) { return WrapDiv(a, b); } };

// Add, Sub and Mul keep zero padding zero, so they may work on channel-blocked tensors.
template <typename Fn>
constexpr bool kBlockable = std::is_same_v<Fn, AddFn> || std::is_same_v<Fn, SubFn> || std::is_same_v<Fn, MulFn>;

// One value per channel of a 4-D [N, C, H, W] tensor: [C, 1, 1], [1, C, 1, 1] or [N, C, 1, 1].
bool PerChannel(const Shape& s, const Shape& full) {
  size_t r = s.GetDimNum();
  if (r < 3 || r > 4 || s.GetDim(r - 1) != 1 || s.GetDim(r - 2) != 1 || s.GetDim(r - 3) != full.GetDim(1)) return false;
  return r == 3 || s.GetDim(0) == 1 || s.GetDim(0) == full.GetDim(0);
}

template <typename Fn>
class BinaryOp : public EagerExecuteOp, public ShapeInferOp, public FusibleOp, public LayoutAwareOp, public CompilableOp,
                 public RebuildOnLoad, public EmittableOp {
 public:
  // float32, broadcasting as ONNX does (weft_binary_f32).
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* a = ctx->GetInputTensor(0);
    const Tensor* b = ctx->GetInputTensor(1);
    const Tensor* y = ctx->GetOutputTensor(0);
    const std::string name = Fn::kName;
    const DataType dt = a->GetDataType();
    const bool is_int = dt == DT_INT8 || dt == DT_INT16 || dt == DT_INT32 || dt == DT_INT64 || dt == DT_UINT8 || dt == DT_UINT16 ||
                        dt == DT_UINT32 || dt == DT_UINT64;
    if (is_int && b->GetDataType() == dt) {  // wrapping as Execute; a division by zero fails the run
      const std::string t = aot::CType(dt);
      const bool is_signed = dt == DT_INT8 || dt == DT_INT16 || dt == DT_INT32 || dt == DT_INT64;
      std::string expr = name == "Add" ? "(" + t + ")((uint64_t)a + (uint64_t)b)" : name == "Sub" ? "(" + t + ")((uint64_t)a - (uint64_t)b)"
                       : name == "Mul" ? "(" + t + ")((uint64_t)a * (uint64_t)b)"
                       : is_signed ? "(b == -1 ? (" + t + ")(0u - (uint64_t)a) : (" + t + ")(a / b))" : "(" + t + ")(a / b)";
      std::string check;
      if (name == "Div")
        check = "{\n  const " + t + "* pb = " + ctx->Input(1, t.c_str()) + ";\n  int64_t k;\n  for (k = 0; k < " + aot::IntLit(b->GetShapeSize()) +
                "; ++k)\n    if (pb[k] == 0) return 1; /* integer division by zero */\n}\n";
      ctx->Run(check);
      return aot::EmitMap2(ctx, expr, t);
    }
    if (dt != DT_FLOAT || b->GetDataType() != DT_FLOAT) return Fail(ctx, "the generated C takes float32 and integer types here");
    const int op = name == "Add" ? 0 : name == "Sub" ? 1 : name == "Mul" ? 2 : 3;
    const std::string g = aot::Broadcast(a->GetShape(), b->GetShape(), y->GetShape());
    aot::EmitHelper(ctx, aot::Kernels(), "weft_binary_f32");
    ctx->Run(g + "weft_binary_f32(" + std::to_string(op) + ", " + aot::IntLit(y->GetShapeSize()) + ", " + (g.empty() ? "0" : "&g") + ", " +
             ctx->Input(0, "float") + ", " + ctx->Input(1, "float") + ", -HUGE_VALF, HUGE_VALF, " + ctx->Output(0, "float") + ");\n");
    return GRAPH_SUCCESS;
  }
  // float32 4-D Add/Sub/Mul between convolutions: both operands of the output's shape, in any
  // layout the values around settle on (the same for all three), or one of them with one value per
  // channel (a squeeze-and-excitation gate), which stays plain, with the other channel-blocked.
  graphStatus QueryLayout(OpQueryContext* ctx, LayoutSupport& s) override {
    if constexpr (kBlockable<Fn>) {
      const Tensor* a = ctx->GetInputTensor(0);
      const Tensor* b = ctx->GetInputTensor(1);
      const Tensor* c = ctx->GetOutputTensor(0);
      const Shape& cs = c->GetShape();
      if (a->GetDataType() != DT_FLOAT || cs.GetDimNum() != 4 || cs.IsUnknown()) return GRAPH_SUCCESS;
      if (a->GetShape() == cs && b->GetShape() == cs) s.Input(0).Input(1).Output(0).AnyFormat();  // whatever its neighbours use
      else if (a->GetShape() == cs && PerChannel(b->GetShape(), cs)) s.Format(FORMAT_NC1HWC0).Input(0).Output(0).Together();
      else if (b->GetShape() == cs && PerChannel(a->GetShape(), cs)) s.Format(FORMAT_NC1HWC0).Input(1).Output(0).Together();
    }
    return GRAPH_SUCCESS;
  }
  // A blocked output needs its storage size (channels padded to 16).
  graphStatus Compile(OpCompileContext* ctx) override { return SetPlannedOutputStorage(ctx, sizeof(float)); }
  // [N][C/16][H*W][16] with padded channels zero.
  graphStatus ExecuteBlocked(EagerOpExecutionContext* ctx, const Tensor* a, const Tensor* b, Tensor* c) {
    const Shape& cs = c->GetShape();
    const int64_t n = cs.GetDim(0), ch = cs.GetDim(1), cb = (ch + 15) / 16, hw = cs.GetDim(2) * cs.GetDim(3);
    const WeftEpilogue act = ctx->GetEpilogue();  // zero-preserving (QueryFusion): the padding stays zero
    const float* pa = a->GetData<float>();
    const float* pb = b->GetData<float>();
    float* pc = c->GetData<float>();
    if (a->GetFormat() == FORMAT_NC1HWC0 && b->GetFormat() == FORMAT_NC1HWC0) {
      int64_t total = n * cb * hw * 16;
      auto body = [&](int64_t lo, int64_t hi) {
#pragma omp simd
        for (int64_t i = lo; i < hi; ++i) pc[i] = Fn::template Apply<float>(pa[i], pb[i]);
        ActivateInPlace(act, pc + lo, hi - lo);
      };
      if (total < kParallelGrain) body(0, total);
      else return ctx->ParallelFor(total, kParallelGrain, body);
      return GRAPH_SUCCESS;
    }
    const bool a_big = a->GetFormat() == FORMAT_NC1HWC0;
    const float* big = a_big ? pa : pb;
    const Tensor* small = a_big ? b : a;
    const float* ps = small->GetData<float>();
    const bool per_batch = small->GetShape().GetDimNum() == 4 && small->GetShape().GetDim(0) == n && n > 1;
    auto body = [&](int64_t lo, int64_t hi) {  // over (n, block) pairs
      for (int64_t blk = lo; blk < hi; ++blk) {
        const int64_t i = blk / cb, bc = blk % cb;
        float v[16];
        for (int k = 0; k < 16; ++k) {
          int64_t chan = bc * 16 + k;
          v[k] = chan < ch ? ps[(per_batch ? i * ch : 0) + chan] : 0.f;
        }
        const float* src = big + blk * hw * 16;
        float* dst = pc + blk * hw * 16;
        for (int64_t p = 0; p < hw; ++p)
#pragma omp simd
          for (int k = 0; k < 16; ++k)
            dst[p * 16 + k] = a_big ? Fn::template Apply<float>(src[p * 16 + k], v[k]) : Fn::template Apply<float>(v[k], src[p * 16 + k]);
        ActivateInPlace(act, dst, hw * 16);
      }
    };
    return ctx->ParallelFor(n * cb, 1, body);
  }
  // Add declares itself so that epilogue fusion can fold it into its producer. A float32 Add, Sub
  // or Mul that no producer absorbs takes the activation after it instead (a residual Add + Relu
  // whose producer keeps its own activation): only activations that keep zero zero, since the
  // output may be channel-blocked with zero padding.
  graphStatus QueryFusion(OpQueryContext* ctx, FusionSupport& s) override {
    if constexpr (std::is_same<Fn, AddFn>::value) s.IsAdd();
    if constexpr (std::is_same<Fn, MulFn>::value) s.IsMul();
    if constexpr (kBlockable<Fn>) {
      if (ctx->GetInputTensor(0)->GetDataType() == DT_FLOAT && ctx->GetInputTensor(1)->GetDataType() == DT_FLOAT)
        for (WeftActivation a : {WEFT_ACT_RELU, WEFT_ACT_LEAKY_RELU, WEFT_ACT_TANH, WEFT_ACT_ELU, WEFT_ACT_SWISH, WEFT_ACT_HARD_SWISH,
                                 WEFT_ACT_GELU, WEFT_ACT_GELU_TANH})
          s.Absorb(a);
    }
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
    if constexpr (kBlockable<Fn>) {
      if (ctx->GetOutputTensor(0)->GetFormat() == FORMAT_NC1HWC0) {
        Tensor* c = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), DT_FLOAT);  // the planned layout stays
        if (!c) return GRAPH_FAILED;
        return ExecuteBlocked(ctx, a, b, c);
      }
    }
    Tensor* c = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), a->GetDataType());
    if (!c) return GRAPH_FAILED;
    const WeftEpilogue act = ctx->GetEpilogue();  // float32 only (QueryFusion)
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
          if constexpr (std::is_same<T, float>::value) ActivateInPlace(act, pc + lo, hi - lo);
        };
        if (n < kParallelGrain) body(0, n);
        else ctx->ParallelFor(n, kParallelGrain, body);
        return;
      }
      ForEachBroadcast(a->GetShape(), b->GetShape(), c->GetShape(), [&](int64_t i, int64_t ia, int64_t ib) {
        pc[i] = Store<T>(Fn::template Apply<C>(Load(pa[ia]), Load(pb[ib])));
      });
      if constexpr (std::is_same<T, float>::value) ActivateInPlace(act, pc, c->GetShapeSize());
    });
    return status;
  }
};

std::unique_ptr<OpDef> BinaryDef(const char* type) {
  return OpDefBuilder(type)
      .INPUT(A, "T")
      .INPUT(B, "T")
      .OUTPUT(C, "T")
      .DATATYPE(T, NumericTypes())
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
