// Elementwise unary operators (ONNX semantics). Floating ops compute 16-bit types in float.
#include "aot_emit.h"
#include "op_util.h"
#include "vector_math.h"

namespace weft::ops {
namespace {

#define WEFT_UNARY(NAME, EXPR)                                  \
  struct NAME##Fn {                                             \
    static constexpr const char* kName = #NAME;                 \
    static void Def(OpDefBuilder&) {}                           \
    void Load(const RuntimeAttrs*) {}                           \
    template <typename C> C operator()(C x) const { return EXPR; } \
  };

WEFT_UNARY(Sqrt, std::sqrt(x))
WEFT_UNARY(Exp, std::exp(x))
WEFT_UNARY(Log, std::log(x))
WEFT_UNARY(Reciprocal, C(1) / x)
WEFT_UNARY(Erf, std::erf(x))
WEFT_UNARY(Tanh, std::tanh(x))
WEFT_UNARY(Sin, std::sin(x))
WEFT_UNARY(Cos, std::cos(x))
WEFT_UNARY(Tan, std::tan(x))
WEFT_UNARY(Asin, std::asin(x))
WEFT_UNARY(Acos, std::acos(x))
WEFT_UNARY(Atan, std::atan(x))
WEFT_UNARY(Sinh, std::sinh(x))
WEFT_UNARY(Cosh, std::cosh(x))
WEFT_UNARY(Asinh, std::asinh(x))
WEFT_UNARY(Acosh, std::acosh(x))
WEFT_UNARY(Atanh, std::atanh(x))
WEFT_UNARY(Ceil, std::ceil(x))
WEFT_UNARY(Floor, std::floor(x))
WEFT_UNARY(Round, std::nearbyint(x))
WEFT_UNARY(Softsign, x / (C(1) + std::fabs(x)))
WEFT_UNARY(Softplus, x > C(20) ? x : std::log1p(std::exp(x)))
WEFT_UNARY(Sigmoid, x >= C(0) ? C(1) / (C(1) + std::exp(-x)) : std::exp(x) / (C(1) + std::exp(x)))
WEFT_UNARY(HardSwish, x * std::max(C(0), std::min(C(1), x / C(6) + C(0.5))))
WEFT_UNARY(Mish, x * std::tanh(x > C(20) ? x : std::log1p(std::exp(x))))
// Sign-preserving ops that also take integers.
WEFT_UNARY(Neg, WrapNeg(x))
WEFT_UNARY(Abs, x < C(0) ? WrapNeg(x) : x)  // Abs(INT_MIN) wraps to INT_MIN, as in NumPy
WEFT_UNARY(Sign, C(x > C(0) ? 1 : x < C(0) ? -1 : 0))
#undef WEFT_UNARY

#define WEFT_UNARY_ATTR1(NAME, A, DEFAULT, EXPR)                         \
  struct NAME##Fn {                                                      \
    static constexpr const char* kName = #NAME;                          \
    float A = DEFAULT;                                                   \
    static void Def(OpDefBuilder& b) { b.AttrFloat(#A, DEFAULT); }       \
    void Load(const RuntimeAttrs* a) { A = *a->GetFloat(#A); }           \
    template <typename C> C operator()(C x) const { return EXPR; }       \
  };
WEFT_UNARY_ATTR1(LeakyRelu, alpha, 0.01f, x >= C(0) ? x : C(alpha) * x)
WEFT_UNARY_ATTR1(Elu, alpha, 1.0f, x >= C(0) ? x : C(alpha) * (std::exp(x) - C(1)))
WEFT_UNARY_ATTR1(ThresholdedRelu, alpha, 1.0f, x > C(alpha) ? x : C(0))
WEFT_UNARY_ATTR1(Celu, alpha, 1.0f, std::max(C(0), x) + std::min(C(0), C(alpha) * (std::exp(x / C(alpha)) - C(1))))
WEFT_UNARY_ATTR1(Swish, alpha, 1.0f, x / (C(1) + std::exp(-C(alpha) * x)))  // ONNX 24: x * sigmoid(alpha * x)
#undef WEFT_UNARY_ATTR1

struct HardSigmoidFn {
  static constexpr const char* kName = "HardSigmoid";
  float alpha = 0.2f, beta = 0.5f;
  static void Def(OpDefBuilder& b) { b.AttrFloat("alpha", 0.2).AttrFloat("beta", 0.5); }
  void Load(const RuntimeAttrs* a) { alpha = *a->GetFloat("alpha"); beta = *a->GetFloat("beta"); }
  template <typename C> C operator()(C x) const { return std::max(C(0), std::min(C(1), C(alpha) * x + C(beta))); }
};

struct SeluFn {
  static constexpr const char* kName = "Selu";
  float alpha = 1.67326319217681884765625f, gamma = 1.05070102519989013671875f;
  static void Def(OpDefBuilder& b) {
    b.AttrFloat("alpha", 1.67326319217681884765625).AttrFloat("gamma", 1.05070102519989013671875);
  }
  void Load(const RuntimeAttrs* a) { alpha = *a->GetFloat("alpha"); gamma = *a->GetFloat("gamma"); }
  template <typename C> C operator()(C x) const { return x > C(0) ? C(gamma) * x : C(gamma) * (C(alpha) * std::exp(x) - C(alpha)); }
};

struct GeluFn {
  static constexpr const char* kName = "Gelu";
  bool tanh_approx = false;
  static void Def(OpDefBuilder& b) { b.AttrString("approximate", "none"); }
  static graphStatus Check(const KernelContextBase* ctx) { return CheckOneOf(ctx, "approximate", {"none", "tanh"}); }
  void Load(const RuntimeAttrs* a) { tanh_approx = std::string(a->GetStr("approximate")) == "tanh"; }
  template <typename C> C operator()(C x) const {
    if (tanh_approx) return C(0.5) * x * (C(1) + std::tanh(C(0.7978845608028654) * (x + C(0.044715) * x * x * x)));
    return C(0.5) * x * (C(1) + std::erf(x * C(0.7071067811865476)));
  }
};

// ONNX Runtime's QuickGelu (com.microsoft; its optimizer writes it for x * Sigmoid(alpha * x),
// SiLU/Swish being alpha 1): x * sigmoid(alpha * x).
struct QuickGeluFn {
  static constexpr const char* kName = "QuickGelu";
  float alpha = 1.702f;
  static void Def(OpDefBuilder& b) { b.AttrFloat("alpha", 1.702f); }
  void Load(const RuntimeAttrs* a) { alpha = *a->GetFloat("alpha"); }
  template <typename C> C operator()(C x) const {
    const C t = C(alpha) * x;
    return x * (t >= C(0) ? C(1) / (C(1) + std::exp(-t)) : std::exp(t) / (C(1) + std::exp(t)));
  }
};

// Activations epilogue fusion can fold into their producer (FusibleOp): what each unary op
// declares itself as.
template <typename Fn>
void DeclareActivation(const Fn&, FusionSupport&) {}
inline void DeclareActivation(const SigmoidFn&, FusionSupport& s) { s.IsActivation(WEFT_ACT_SIGMOID); }
inline void DeclareActivation(const TanhFn&, FusionSupport& s) { s.IsActivation(WEFT_ACT_TANH); }
inline void DeclareActivation(const HardSwishFn&, FusionSupport& s) { s.IsActivation(WEFT_ACT_HARD_SWISH); }
inline void DeclareActivation(const LeakyReluFn& f, FusionSupport& s) { s.IsActivation(WEFT_ACT_LEAKY_RELU, f.alpha); }
inline void DeclareActivation(const EluFn& f, FusionSupport& s) { s.IsActivation(WEFT_ACT_ELU, f.alpha); }
inline void DeclareActivation(const HardSigmoidFn& f, FusionSupport& s) { s.IsActivation(WEFT_ACT_HARD_SIGMOID, f.alpha, f.beta); }
inline void DeclareActivation(const GeluFn& f, FusionSupport& s) { s.IsActivation(f.tanh_approx ? WEFT_ACT_GELU_TANH : WEFT_ACT_GELU); }
inline void DeclareActivation(const QuickGeluFn& f, FusionSupport& s) {
  if (f.alpha == 1.f) s.IsActivation(WEFT_ACT_SWISH);
}

// float32 loops that vectorize, for the functions where the scalar library call dominates.
WEFT_VMATH_CLONES void ExpSpan(const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = vmath::Exp(x[i]);
}
WEFT_VMATH_CLONES void SigmoidSpan(const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = vmath::Sigmoid(x[i]);
}
WEFT_VMATH_CLONES void TanhSpan(const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = vmath::Tanh(x[i]);
}
WEFT_VMATH_CLONES void ErfSpan(const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = vmath::Erf(x[i]);
}
WEFT_VMATH_CLONES void GeluErfSpan(const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.f + vmath::Erf(x[i] * 0.70710678118654752f));
}
WEFT_VMATH_CLONES void GeluTanhSpan(const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = 0.5f * x[i] * (1.f + vmath::Tanh(0.79788456080286536f * (x[i] + 0.044715f * x[i] * x[i] * x[i])));
}
WEFT_VMATH_CLONES void QuickGeluSpan(const float* x, float* y, int64_t n, float alpha) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * vmath::Sigmoid(alpha * x[i]);
}
template <typename Fn> constexpr void (*kFloatSpan)(const float*, float*, int64_t) = nullptr;
template <> constexpr void (*kFloatSpan<ErfFn>)(const float*, float*, int64_t) = ErfSpan;
template <> constexpr void (*kFloatSpan<ExpFn>)(const float*, float*, int64_t) = ExpSpan;
template <> constexpr void (*kFloatSpan<SigmoidFn>)(const float*, float*, int64_t) = SigmoidSpan;
template <> constexpr void (*kFloatSpan<TanhFn>)(const float*, float*, int64_t) = TanhSpan;

// The float32 C expression of a unary op over `x` for generated modules (weft aot), its attributes
// as literals; "" for ops the generated C does not have.
std::string UnaryC(const std::string& op, const RuntimeAttrs* a) {
  auto f = [&](const char* name) { return aot::FloatLit(*a->GetFloat(name)); };
  if (op == "Sqrt") return "sqrtf(x)";
  if (op == "Exp") return "expf(x)";
  if (op == "Log") return "logf(x)";
  if (op == "Reciprocal") return "1.f / x";
  if (op == "Erf") return "erff(x)";
  if (op == "Tanh") return "tanhf(x)";
  if (op == "Sin") return "sinf(x)";
  if (op == "Cos") return "cosf(x)";
  if (op == "Ceil") return "ceilf(x)";
  if (op == "Floor") return "floorf(x)";
  if (op == "Round") return "nearbyintf(x)";
  if (op == "Sign") return "x > 0.f ? 1.f : x < 0.f ? -1.f : 0.f";
  if (op == "Tan") return "tanf(x)";
  if (op == "Asin") return "asinf(x)";
  if (op == "Acos") return "acosf(x)";
  if (op == "Atan") return "atanf(x)";
  if (op == "Sinh") return "sinhf(x)";
  if (op == "Cosh") return "coshf(x)";
  if (op == "Asinh") return "asinhf(x)";
  if (op == "Acosh") return "acoshf(x)";
  if (op == "Atanh") return "atanhf(x)";
  if (op == "Mish") return "x * tanhf(x > 20.f ? x : log1pf(expf(x)))";
  if (op == "ThresholdedRelu") return "x > " + f("alpha") + " ? x : 0.f";
  if (op == "Swish") return "x / (1.f + expf(-" + f("alpha") + " * x))";
  if (op == "Celu")
    return "fmaxf(0.f, x) + fminf(0.f, " + f("alpha") + " * (expf(x / " + f("alpha") + ") - 1.f))";
  if (op == "Softsign") return "x / (1.f + fabsf(x))";
  if (op == "Softplus") return "x > 20.f ? x : log1pf(expf(x))";
  if (op == "Sigmoid") return "x >= 0.f ? 1.f / (1.f + expf(-x)) : expf(x) / (1.f + expf(x))";
  if (op == "HardSwish") return "x * fmaxf(0.f, fminf(1.f, x / 6.f + 0.5f))";
  if (op == "Neg") return "-x";
  if (op == "Abs") return "fabsf(x)";
  if (op == "LeakyRelu") return "x >= 0.f ? x : " + f("alpha") + " * x";
  if (op == "Elu") return "x >= 0.f ? x : " + f("alpha") + " * (expf(x) - 1.f)";
  if (op == "HardSigmoid") return "fmaxf(0.f, fminf(1.f, " + f("alpha") + " * x + " + f("beta") + "))";
  if (op == "Selu") return "x > 0.f ? " + f("gamma") + " * x : " + f("gamma") + " * (" + f("alpha") + " * expf(x) - " + f("alpha") + ")";
  if (op == "QuickGelu") return "x * (" + f("alpha") + " * x >= 0.f ? 1.f / (1.f + expf(-(" + f("alpha") + " * x))) : expf(" + f("alpha") +
                                 " * x) / (1.f + expf(" + f("alpha") + " * x)))";
  if (op == "Gelu")
    return std::string(a->GetStr("approximate")) == "tanh" ? "0.5f * x * (1.f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)))"
                                                           : "0.5f * x * (1.f + erff(x * 0.7071067811865476f))";
  return "";
}

template <typename Fn, bool kIntegers>
class UnaryOp : public EagerExecuteOp, public ShapeInferOp, public FusibleOp, public EmittableOp, public LayoutAwareOp, public CompilableOp,
                public RebuildOnLoad {
 public:
  // Elementwise: a float32 4-D value in pixel rows stays so (between the DequantizeLinear and the
  // QuantizeLinear of a QDQ network's float activations). Not channel-blocked: f(0) is not 0 for
  // every function, and the blocked layout's padding must stay 0.
  graphStatus QueryLayout(OpQueryContext* ctx, LayoutSupport& s) override {
    const Tensor* x = ctx->GetInputTensor(0);
    if (x && x->GetDataType() == DT_FLOAT && x->GetShape().GetDimNum() == 4 && !x->GetShape().IsUnknown())
      s.Format(FORMAT_NHWC).Input(0).Output(0).AnyFormat();
    return GRAPH_SUCCESS;
  }
  graphStatus Compile(OpCompileContext* ctx) override { return SetPlannedOutputStorage(ctx, sizeof(float)); }
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const std::string expr = UnaryC(Fn::kName, ctx->GetAttrs());
    if (expr.empty() || x->GetDataType() != DT_FLOAT)
      return Fail(ctx, std::string("the generated C has no ") + DataTypeName(x->GetDataType()) + " " + Fn::kName);
    ctx->Include("<math.h>");
    ctx->Run("{\n  const float* in = " + ctx->Input(0, "float") + ";\n  float* out = " + ctx->Output(0, "float") + ";\n  int64_t i;\n  for (i = 0; i < " +
             std::to_string(x->GetShapeSize()) + "; ++i) {\n    const float x = in[i];\n    out[i] = " + expr + ";\n  }\n}\n");
    return GRAPH_SUCCESS;
  }
  // The shape is the input's; what this checks is the attributes (Fn::Check, where there is one).
  graphStatus InferShape(InferShapeContext* ctx) override {
    if constexpr (requires { Fn::Check(ctx); })
      if (Fn::Check(ctx) != GRAPH_SUCCESS) return GRAPH_FAILED;
    *ctx->GetOutputShape(0) = *ctx->GetInputShape(0);
    return GRAPH_SUCCESS;
  }
  graphStatus QueryFusion(OpQueryContext* ctx, FusionSupport& s) override {
    Fn fn;
    fn.Load(ctx->GetAttrs());
    DeclareActivation(fn, s);
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    Fn fn;
    fn.Load(ctx->GetAttrs());
    int64_t n = x->GetShapeSize();
    auto body = [&](auto tag) {
      using T = decltype(tag);
      using C = typename Compute<T>::type;
      const T* px = x->GetData<T>();
      T* py = y->GetData<T>();
      auto run = [&](int64_t lo, int64_t hi) {
        if constexpr (std::is_same_v<T, float> && kFloatSpan<Fn> != nullptr) {
          kFloatSpan<Fn>(px + lo, py + lo, hi - lo);
        } else if constexpr (std::is_same_v<T, float> && std::is_same_v<Fn, GeluFn>) {
          (fn.tanh_approx ? GeluTanhSpan : GeluErfSpan)(px + lo, py + lo, hi - lo);
        } else if constexpr (std::is_same_v<T, float> && std::is_same_v<Fn, QuickGeluFn>) {
          QuickGeluSpan(px + lo, py + lo, hi - lo, fn.alpha);
        } else {
          for (int64_t i = lo; i < hi; ++i) py[i] = Store<T>(fn(static_cast<C>(Load(px[i]))));
        }
      };
      if (n < (1 << 15)) run(0, n);
      else ctx->ParallelFor(n, 1 << 15, run);
    };
    if constexpr (kIntegers) DispatchNumeric(x->GetDataType(), body);
    else DispatchFloat(x->GetDataType(), body);
    return GRAPH_SUCCESS;
  }
};

template <typename Fn, bool kIntegers = false>
OpEntry Entry() {
  const TensorType& t = kIntegers ? TensorType({DT_FLOAT, DT_FLOAT16, DT_BF16, DT_DOUBLE, DT_INT8, DT_INT16, DT_INT32, DT_INT64})
                                  : FloatTypes();
  OpDefBuilder b(Fn::kName);
  b.INPUT(X, t).OUTPUT(Y, t).SAME_AS_INPUT(X);
  Fn::Def(b);
  return {b.Build(), MakeOpImpl<UnaryOp<Fn, kIntegers>>(Fn::kName)};
}

// IsNaN / IsInf: float in, bool out.
// No emitter: weft aot's examples of registering one (docs/aot.md, "Registry") use these.
class IsNaN : public EagerExecuteOp, public ShapeInferOp {
 public:
  graphStatus InferShape(InferShapeContext* ctx) override { *ctx->GetOutputShape(0) = *ctx->GetInputShape(0); return GRAPH_SUCCESS; }
  graphStatus InferDataType(InferDataTypeContext* ctx) override { return ctx->SetOutputDataType(0, DT_BOOL); }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), DT_BOOL);
    if (!y) return GRAPH_FAILED;
    const bool is_inf = std::string(ctx->GetNodeType()) == "IsInf";
    const int64_t* pos = is_inf ? ctx->GetAttrs()->GetInt("detect_positive") : nullptr;
    const int64_t* neg = is_inf ? ctx->GetAttrs()->GetInt("detect_negative") : nullptr;
    DispatchFloat(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      for (int64_t i = 0; i < x->GetShapeSize(); ++i) {
        double v = Load(x->GetData<T>()[i]);
        bool r = is_inf ? (std::isinf(v) && ((v > 0 && *pos) || (v < 0 && *neg))) : std::isnan(v);
        y->GetData<uint8_t>()[i] = r;
      }
    });
    return GRAPH_SUCCESS;
  }
};

class IsInf : public IsNaN {};

class Not : public EagerExecuteOp, public EmittableOp {
 public:
  graphStatus Emit(EmitContext* ctx) override {
    ctx->Run("{\n  const uint8_t* px = " + ctx->Input(0, "uint8_t") + ";\n  uint8_t* py = " + ctx->Output(0, "uint8_t") +
             ";\n  int64_t i;\n  for (i = 0; i < " + aot::IntLit(ctx->GetInputTensor(0)->GetShapeSize()) + "; ++i) py[i] = (uint8_t)!px[i];\n}\n");
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), DT_BOOL);
    if (!y) return GRAPH_FAILED;
    for (int64_t i = 0; i < x->GetShapeSize(); ++i) y->GetData<uint8_t>()[i] = !x->GetData<uint8_t>()[i];
    return GRAPH_SUCCESS;
  }
};

// Clip(input, min?, max?): bounds from optional scalar inputs (the importer turns opset < 11
// attributes into those inputs).
class Clip : public EagerExecuteOp, public ShapeInferOp, public FusibleOp, public EmittableOp {
 public:
  // min(max(x, lo), hi) with each bound read at run time (a constant or a tensor), or absent.
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    if (x->GetDataType() != DT_FLOAT) return Fail(ctx, "the generated C clips float32 only");
    auto bound = [&](size_t ir, const char* none) {
      if (!ctx->GetOptionalInputTensor(ir) || ctx->GetOptionalInputTensor(ir)->GetShapeSize() == 0) return std::string(none);
      size_t at = 0;
      for (size_t i = 0; i < ir; ++i) at += ctx->GetIrInputInstanceNum(i);
      return ctx->Input(at, "float") + "[0]";
    };
    ctx->Include("<math.h>");
    ctx->Run("{\n  const float* in = " + ctx->Input(0, "float") + ";\n  float* out = " + ctx->Output(0, "float") + ";\n  const float lo = " +
             bound(1, "-HUGE_VALF") + ", hi = " + bound(2, "HUGE_VALF") + ";\n  int64_t i;\n  for (i = 0; i < " + std::to_string(x->GetShapeSize()) +
             "; ++i) {\n    const float m = in[i] < lo ? lo : in[i];\n    out[i] = m > hi ? hi : m;\n  }\n}\n");
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    for (size_t ir = 1; ir < 3; ++ir) {
      const Shape* s = ctx->GetOptionalInputShape(ir);
      if (s && !s->IsUnknown() && (s->GetDimNum() > 1 || s->GetShapeSize() != 1))
        return Fail(ctx, std::string(ir == 1 ? "min" : "max") + " must be a scalar, got shape " + s->ToString());
    }
    *ctx->GetOutputShape(0) = *ctx->GetInputShape(0);
    return GRAPH_SUCCESS;
  }
  // An activation when its bounds are float constants (known at compile time) with min <= max.
  graphStatus QueryFusion(OpQueryContext* ctx, FusionSupport& s) override {
    if (ctx->GetInputDataType(0) != DT_FLOAT) return GRAPH_SUCCESS;
    float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
    for (size_t ir = 1; ir < 3; ++ir) {
      const Tensor* t = ctx->GetOptionalInputTensor(ir);
      if (!t) continue;
      if (!t->GetAddr() || t->GetShapeSize() != 1) return GRAPH_SUCCESS;  // not known now
      (ir == 1 ? lo : hi) = t->GetData<float>()[0];
    }
    if (!(lo <= hi)) return GRAPH_SUCCESS;
    s.IsActivation(WEFT_ACT_CLIP, lo, hi);
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* lo = ctx->GetOptionalInputTensor(1);
    const Tensor* hi = ctx->GetOptionalInputTensor(2);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    DispatchAll(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      using C = typename Compute<T>::type;
      C l = lo && lo->GetShapeSize() ? Load(lo->GetData<T>()[0]) : std::numeric_limits<C>::lowest();
      C h = hi && hi->GetShapeSize() ? Load(hi->GetData<T>()[0]) : std::numeric_limits<C>::max();
      for (int64_t i = 0; i < x->GetShapeSize(); ++i) {
        C v = Load(x->GetData<T>()[i]);
        // min(max(x, lo), hi), as ONNX defines it: with lo > hi every element is hi.
        C m = v < l ? l : v;
        y->GetData<T>()[i] = Store<T>(m > h ? h : m);
      }
    });
    return GRAPH_SUCCESS;
  }
};

}  // namespace

void WeftRegister_unary(std::vector<OpEntry>& out) {
  out.push_back(Entry<SqrtFn>());
  out.push_back(Entry<ExpFn>());
  out.push_back(Entry<LogFn>());
  out.push_back(Entry<ReciprocalFn>());
  out.push_back(Entry<ErfFn>());
  out.push_back(Entry<TanhFn>());
  out.push_back(Entry<SinFn>());
  out.push_back(Entry<CosFn>());
  out.push_back(Entry<TanFn>());
  out.push_back(Entry<AsinFn>());
  out.push_back(Entry<AcosFn>());
  out.push_back(Entry<AtanFn>());
  out.push_back(Entry<SinhFn>());
  out.push_back(Entry<CoshFn>());
  out.push_back(Entry<AsinhFn>());
  out.push_back(Entry<AcoshFn>());
  out.push_back(Entry<AtanhFn>());
  out.push_back(Entry<CeilFn>());
  out.push_back(Entry<FloorFn>());
  out.push_back(Entry<RoundFn>());
  out.push_back(Entry<SoftsignFn>());
  out.push_back(Entry<SoftplusFn>());
  out.push_back(Entry<SigmoidFn>());
  out.push_back(Entry<HardSwishFn>());
  out.push_back(Entry<MishFn>());
  out.push_back(Entry<NegFn, true>());
  out.push_back(Entry<AbsFn, true>());
  out.push_back(Entry<SignFn, true>());
  out.push_back(Entry<LeakyReluFn>());
  out.push_back(Entry<EluFn>());
  out.push_back(Entry<ThresholdedReluFn>());
  out.push_back(Entry<CeluFn>());
  out.push_back(Entry<SwishFn>());
  out.push_back(Entry<HardSigmoidFn>());
  out.push_back(Entry<SeluFn>());
  out.push_back(Entry<GeluFn>());
  out.push_back(Entry<QuickGeluFn>());
  out.push_back({OpDefBuilder("IsNaN").INPUT(X, FloatTypes()).OUTPUT(Y, TensorType({DT_BOOL})).Build(), MakeOpImpl<IsNaN>("IsNaN")});
  out.push_back({OpDefBuilder("IsInf").INPUT(X, FloatTypes()).OUTPUT(Y, TensorType({DT_BOOL}))
                     .ATTR(detect_positive, Int, 1).ATTR(detect_negative, Int, 1).Build(), MakeOpImpl<IsInf>("IsInf")});
  out.push_back({OpDefBuilder("Not").INPUT(X, TensorType({DT_BOOL})).OUTPUT(Y, TensorType({DT_BOOL})).SAME_AS_INPUT(X).Build(),
                 MakeOpImpl<Not>("Not")});
  out.push_back({OpDefBuilder("Clip").INPUT(input, "T").OPTIONAL_INPUT(min, "T").OPTIONAL_INPUT(max, "T")
                     .OUTPUT(output, "T").SAME_AS_INPUT(input).DATATYPE(T, NumericTypes()).Build(), MakeOpImpl<Clip>("Clip")});
}

}  // namespace weft::ops
