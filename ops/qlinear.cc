// The quantized operators of ONNX Runtime's com.microsoft domain that its quantizer writes in the
// QOperator format (onnxruntime.quantization, QuantFormat.QOperator) and that the ONNX model zoo's
// int8 models use: QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu,
// QLinearGlobalAveragePool, QLinearConcat and QLinearSoftmax (QGemm is in quantize.cc beside the other 8-bit
// GEMMs, QLinearAveragePool in conv_pool.cc beside the pooling windows). The arithmetic is ONNX Runtime's on x86-64, operation for operation, so that a model
// gives the same bytes in both:
//   QLinearAdd:  rA = sA / sC, rB = sB / sC, F = zC - fma(rA, zA, rB * zB);
//                y = fma(a, rA, fma(b, rB, F)); where one operand is broadcast along the innermost
//                dimension it is folded into F first (F + v * r, unfused), and the other is fused.
//   QLinearMul:  r = sA * sB / sC; y = float((a - zA) * (b - zB)) * r + zC (unfused).
//   Sigmoid, LeakyRelu, Concat's requantization: a 256-entry table; each entry dequantized
//                (sx * (x - zx)), transformed, and quantized as QuantizeLinear does.
//   QLinearGlobalAveragePool: s = sx / (sy * pixels); y = float(sum(x) - zx * pixels) * s.
// Results are rounded half to even and saturated. Scales are per tensor, positive and finite.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "aot_emit.h"
#include "elementwise.h"
#include "op_util.h"

namespace weft::ops {
namespace {

bool Is8BitType(DataType t) { return t == DT_INT8 || t == DT_UINT8; }

struct QParam {
  float scale = 1.f;
  int32_t zp = 0;
};

// A per-tensor scale (float32, one element, positive and finite) and its optional zero point (one
// element of the data's type `t`; absent means 0). `what` names the pair in messages.
bool ReadQParam(const KernelContextBase* ctx, const Tensor* scale, const Tensor* zp, DataType t, const std::string& what, QParam* q) {
  if (!scale || scale->GetDataType() != DT_FLOAT || scale->GetShapeSize() != 1)
    return Fail(ctx, what + "_scale must be one float32 value (per-tensor quantization), not " +
                         (scale ? std::string(DataTypeName(scale->GetDataType())) + " " + scale->GetShape().ToString() : std::string("absent"))),
           false;
  q->scale = *scale->GetData<float>();
  if (!(q->scale > 0.f) || !std::isfinite(q->scale))
    return Fail(ctx, what + "_scale is " + std::to_string(q->scale) + "; it must be positive and finite"), false;
  q->zp = 0;
  if (!zp) return true;
  if (zp->GetShapeSize() != 1)
    return Fail(ctx, what + "_zero_point must be one value (per-tensor quantization), not " + zp->GetShape().ToString()), false;
  if (zp->GetDataType() != t)
    return Fail(ctx, what + "_zero_point is " + DataTypeName(zp->GetDataType()) + " but the data is " + DataTypeName(t)), false;
  q->zp = t == DT_INT8 ? *zp->GetData<int8_t>() : *zp->GetData<uint8_t>();
  return true;
}

// The type's range as floats.
void Range(DataType t, float* lo, float* hi) {
  *lo = t == DT_INT8 ? -128.f : 0.f;
  *hi = t == DT_INT8 ? 127.f : 255.f;
}

// QuantizeLinear's arithmetic: x / scale (a division), clamped to the range less the zero point (NaN
// to the bottom), rounded half to even, plus the zero point.
int32_t QuantizeOne(float x, const QParam& q, float lo, float hi) {
  float v = x / q.scale;
  const float zl = lo - static_cast<float>(q.zp), zh = hi - static_cast<float>(q.zp);
  v = v > zl ? v : zl;
  v = v < zh ? v : zh;
  return static_cast<int32_t>(std::nearbyint(v)) + q.zp;
}

// The value of byte b (the storage of an int8 or uint8 element).
int32_t ByteValue(DataType t, uint8_t b) { return t == DT_INT8 ? static_cast<int8_t>(b) : b; }

using Table = std::array<uint8_t, 256>;

// table[b] = quantize(f(dequantize(b))) for every input byte b.
template <typename F>
void BuildTable(DataType xt, const QParam& x, DataType yt, const QParam& y, F&& f, Table* table) {
  float lo, hi;
  Range(yt, &lo, &hi);
  for (int b = 0; b < 256; ++b) {
    const float d = x.scale * static_cast<float>(ByteValue(xt, static_cast<uint8_t>(b)) - x.zp);
    (*table)[static_cast<size_t>(b)] = static_cast<uint8_t>(QuantizeOne(f(d), y, lo, hi));
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
// 64 bytes at a time through AVX-512 VBMI: two 128-entry byte permutations (vpermi2b), the input's
// top bit choosing between them.
__attribute__((target("avx512f,avx512bw,avx512vbmi"))) void MapBytesVbmi(const uint8_t* t, const uint8_t* in, uint8_t* out, int64_t n) {
  const __m512i t0 = _mm512_loadu_si512(t), t1 = _mm512_loadu_si512(t + 64), t2 = _mm512_loadu_si512(t + 128), t3 = _mm512_loadu_si512(t + 192);
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512i x = _mm512_loadu_si512(in + i);
    const __m512i lo = _mm512_permutex2var_epi8(t0, x, t1), hi = _mm512_permutex2var_epi8(t2, x, t3);
    _mm512_storeu_si512(out + i, _mm512_mask_blend_epi8(_mm512_movepi8_mask(x), lo, hi));
  }
  if (i < n) {
    const __mmask64 k = (~0ull) >> (64 - (n - i));
    const __m512i x = _mm512_maskz_loadu_epi8(k, in + i);
    const __m512i lo = _mm512_permutex2var_epi8(t0, x, t1), hi = _mm512_permutex2var_epi8(t2, x, t3);
    _mm512_mask_storeu_epi8(out + i, k, _mm512_mask_blend_epi8(_mm512_movepi8_mask(x), lo, hi));
  }
}
bool HasVbmi() {
  static const bool yes = __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512bw");
  return yes;
}
#endif

void MapBytes(const EagerOpExecutionContext* ctx, const Table& t, const uint8_t* in, uint8_t* out, int64_t n) {
  auto body = [&](int64_t lo, int64_t hi) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (HasVbmi()) return MapBytesVbmi(t.data(), in + lo, out + lo, hi - lo);
#endif
    for (int64_t i = lo; i < hi; ++i) out[i] = t[in[i]];
  };
  if (n < (1 << 16)) body(0, n);
  else ctx->ParallelFor(n, 1 << 15, body);
}

// One value per channel of a 4-D [N, C, H, W] shape `full`: [C, 1, 1], [1, C, 1, 1] or [N, C, 1, 1].
bool PerChannel(const Shape& s, const Shape& full) {
  const size_t r = s.GetDimNum();
  if (r < 3 || r > 4 || s.GetDim(r - 1) != 1 || s.GetDim(r - 2) != 1 || s.GetDim(r - 3) != full.GetDim(1) || full.GetDim(1) <= 1) return false;
  return r == 3 || s.GetDim(0) == 1 || s.GetDim(0) == full.GetDim(0);
}

// X (input 0) int8 or uint8, the output zero point (input 4, optional) and the output of X's type.
graphStatus EightBitLikeX(InferDataTypeContext* ctx, const char* zero_point) {
  const DataType t = ctx->GetInputDataType(0);
  if (!Is8BitType(t)) return Fail(ctx, std::string("X must be int8 or uint8, not ") + DataTypeName(t));
  const Tensor* yz = ctx->GetOptionalInputTensor(4);
  if (yz && yz->GetDataType() != t) return Fail(ctx, std::string(zero_point) + " must have X's type " + DataTypeName(t));
  return ctx->SetOutputDataType(0, t);
}

// Whether every listed optional input that is present (and every required one) is a constant:
// `weft aot` bakes the quantization parameters into the generated C.
bool ConstInputs(const KernelContextBase* ctx, std::initializer_list<size_t> required, std::initializer_list<size_t> optional) {
  for (size_t i : required) {
    const Tensor* t = ctx->GetOptionalInputTensor(i);
    if (!t || !t->GetAddr()) return false;
  }
  for (size_t i : optional) {
    const Tensor* t = ctx->GetOptionalInputTensor(i);
    if (t && !t->GetAddr()) return false;
  }
  return true;
}
const char kConstParams[] = "the generated C takes constant scales and zero points (as quantizers write them)";

// Output 0 = table[input byte] over `count` bytes, the table a constant of the module.
graphStatus EmitLookup(EmitContext* ctx, const Table& table, size_t input, int64_t count) {
  const std::string t = ctx->Const("table", DT_UINT8, table.data(), table.size());
  ctx->Run("{\n  const uint8_t* t = " + t + ";\n  const uint8_t* x = " + ctx->Input(input, "uint8_t") + ";\n  uint8_t* y = " +
           ctx->Output(0, "uint8_t") + ";\n  int64_t i;\n  for (i = 0; i < " + aot::IntLit(count) + "; ++i) y[i] = t[x[i]];\n}\n");
  return GRAPH_SUCCESS;
}

// A 4-D tensor of known shape (the only kind the layout pass plans).
bool Known4D(const Tensor* t) { return t && t->GetShape().GetDimNum() == 4 && !t->GetShape().IsUnknown(); }

// ---- elementwise by lookup: QLinearSigmoid, QLinearLeakyRelu --------------------------------
// X, X_scale, X_zero_point?, Y_scale, Y_zero_point?
class QLinearLookup : public EagerExecuteOp, public ShapeInferOp, public LayoutAwareOp, public CompilableOp, public RebuildOnLoad,
                      public EmittableOp {
 public:
  // The runtime's table, as a constant of the module.
  graphStatus Emit(EmitContext* ctx) override {
    if (!Constants(ctx)) return Fail(ctx, kConstParams);
    Table table;
    if (!MakeTable(ctx, &table)) return GRAPH_FAILED;
    return EmitLookup(ctx, table, 0, ctx->GetInputTensor(0)->GetShapeSize());
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    *ctx->GetOutputShape(0) = *ctx->GetInputShape(0);
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override { return EightBitLikeX(ctx, "Y_zero_point"); }
  // Elementwise: plain or the pixel rows of the 8-bit convolutions around, as its neighbours settle
  // (no 8-bit op reads channel blocks, and a table maps their zero padding to a non-zero value).
  graphStatus QueryLayout(OpQueryContext* ctx, LayoutSupport& s) override {
    if (Known4D(ctx->GetInputTensor(0))) s.Format(FORMAT_NHWC).Input(0).Output(0).AnyFormat();
    return GRAPH_SUCCESS;
  }
  // The table, when the scales and zero points are constants (as the quantizer writes them).
  graphStatus Compile(OpCompileContext* ctx) override {
    ready_ = false;
    if (SetPlannedOutputStorage(ctx, 1) != GRAPH_SUCCESS) return GRAPH_FAILED;
    if (!Constants(ctx)) return GRAPH_SUCCESS;
    if (!MakeTable(ctx, &table_)) return GRAPH_FAILED;
    ready_ = true;
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Table local;
    if (!ready_ && !MakeTable(ctx, &local)) return GRAPH_FAILED;
    Tensor* y = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    MapBytes(ctx, ready_ ? table_ : local, static_cast<const uint8_t*>(x->GetAddr()), static_cast<uint8_t*>(y->GetAddr()), PlannedElements(x));
    return GRAPH_SUCCESS;
  }

 protected:
  virtual float Apply(const KernelContextBase* ctx, float v) const = 0;

 private:
  static bool Constants(const KernelContextBase* ctx) {
    for (size_t ir : {1, 2, 3, 4}) {
      const Tensor* t = ctx->GetOptionalInputTensor(ir);
      if ((ir == 1 || ir == 3 || t) && (!t || !t->GetAddr())) return false;
    }
    return true;
  }
  bool MakeTable(const KernelContextBase* ctx, Table* table) const {
    const DataType t = ctx->GetInputDataType(0);
    QParam xq, yq;
    if (!ReadQParam(ctx, ctx->GetOptionalInputTensor(1), ctx->GetOptionalInputTensor(2), t, "X", &xq) ||
        !ReadQParam(ctx, ctx->GetOptionalInputTensor(3), ctx->GetOptionalInputTensor(4), t, "Y", &yq))
      return false;
    BuildTable(t, xq, t, yq, [&](float v) { return Apply(ctx, v); }, table);
    return true;
  }
  Table table_{};
  bool ready_ = false;
};

// The logistic function as ONNX Runtime's x86 kernel computes it: a rational approximation on
// [-18, 18] (odd numerator of degree 9, even denominator of degree 10, Horner steps fused), 0.5
// added, and negative results raised to 0.
float Logistic(float x) {
  x = std::min(std::max(x, -18.f), 18.f);
  const float x2 = x * x;
  float p = std::fma(4.37031012579801e-11f, x2, 1.15627324459942e-07f);
  p = std::fma(p, x2, 6.08574864600143e-05f);
  p = std::fma(p, x2, 8.51377133304701e-03f);
  p = std::fma(p, x2, 2.48287947061529e-01f);
  p = p * x;
  float q = std::fma(6.10247389755681e-13f, x2, 5.76102136993427e-09f);
  q = std::fma(q, x2, 6.29106785017040e-06f);
  q = std::fma(q, x2, 1.70198817374094e-03f);
  q = std::fma(q, x2, 1.16817656904453e-01f);
  q = std::fma(q, x2, 9.93151921023180e-01f);
  const float y = p / q + 0.5f;
  return y > 0.f ? y : 0.f;
}

class QLinearSigmoid : public QLinearLookup {
 protected:
  float Apply(const KernelContextBase*, float v) const override { return Logistic(v); }
};

class QLinearLeakyRelu : public QLinearLookup {
 protected:
  float Apply(const KernelContextBase* ctx, float v) const override {
    const float* a = ctx->GetAttrs()->GetFloat("alpha");
    return v >= 0.f ? v : (a ? *a : 0.01f) * v;
  }
};

// ---- QLinearAdd, QLinearMul ------------------------------------------------------------------
// A, A_scale, A_zero_point?, B, B_scale, B_zero_point?, C_scale, C_zero_point?; ONNX broadcasting.

// How an output span reads its operands: both along it, or one of them fixed for the span (ONNX
// Runtime's arithmetic differs between the two; a fixed operand is read with stride 0, or with
// stride 1 from a vector of the values it takes along pixel rows).
enum class Span { kBoth, kAFixed, kBFixed };

struct AddMath {
  static constexpr const char* kName = "QLinearAdd";
  float ra, rb, f;
  AddMath(const QParam& a, const QParam& b, const QParam& c)
      : ra(a.scale / c.scale), rb(b.scale / c.scale),
        f(static_cast<float>(c.zp) - std::fma(ra, static_cast<float>(a.zp), rb * static_cast<float>(b.zp))) {}
  // Both operands along the span: b's term fused first, then a's.
  [[gnu::always_inline]] float Both(int32_t a, int32_t b) const { return std::fma(static_cast<float>(a), ra, std::fma(static_cast<float>(b), rb, f)); }
  // One operand fixed: its term folded into the constant (unfused), the other's fused.
  [[gnu::always_inline]] float FixedB(int32_t a, int32_t b) const { return std::fma(static_cast<float>(a), ra, f + static_cast<float>(b) * rb); }
  [[gnu::always_inline]] float FixedA(int32_t a, int32_t b) const { return std::fma(static_cast<float>(b), rb, f + static_cast<float>(a) * ra); }
};

struct MulMath {
  static constexpr const char* kName = "QLinearMul";
  int32_t za, zb;
  float r, zc;
  MulMath(const QParam& a, const QParam& b, const QParam& c) : za(a.zp), zb(b.zp), r(a.scale * b.scale / c.scale), zc(static_cast<float>(c.zp)) {}
  [[gnu::always_inline]] float Both(int32_t a, int32_t b) const {
    const float p = static_cast<float>((a - za) * (b - zb)) * r;
    return p + zc;
  }
  [[gnu::always_inline]] float FixedB(int32_t a, int32_t b) const { return Both(a, b); }
  [[gnu::always_inline]] float FixedA(int32_t a, int32_t b) const { return Both(a, b); }
};

template <typename TA, typename TB, typename TC, typename M>
[[gnu::always_inline]] inline void CombineLoop(const M& params, Span mode, const TA* __restrict a, int64_t sa, const TB* __restrict b, int64_t sb,
                                                TC* __restrict c, int64_t n, float lo, float hi) {
  const M m = params;  // a local copy: the byte stores below cannot change it, so the loops vectorize
  switch (mode) {
    case Span::kBoth:
      for (int64_t i = 0; i < n; ++i) {
        float v = m.Both(a[i * sa], b[i * sb]);
        v = v > lo ? v : lo;
        v = v < hi ? v : hi;
        c[i] = static_cast<TC>(static_cast<int32_t>(RoundHalfEvenSmall(v)));
      }
      break;
    case Span::kBFixed:
      for (int64_t i = 0; i < n; ++i) {
        float v = m.FixedB(a[i * sa], b[i * sb]);
        v = v > lo ? v : lo;
        v = v < hi ? v : hi;
        c[i] = static_cast<TC>(static_cast<int32_t>(RoundHalfEvenSmall(v)));
      }
      break;
    case Span::kAFixed:
      for (int64_t i = 0; i < n; ++i) {
        float v = m.FixedA(a[i * sa], b[i * sb]);
        v = v > lo ? v : lo;
        v = v < hi ? v : hi;
        c[i] = static_cast<TC>(static_cast<int32_t>(RoundHalfEvenSmall(v)));
      }
      break;
  }
}

// The strides the vectorizer needs to see as constants: both operands along the span, or one fixed.
// `rows` rows of n outputs (c advancing by n a row, a by a_row and b by b_row).
template <typename TA, typename TB, typename TC, typename M>
[[gnu::always_inline]] inline void CombineStrides(const M& m, Span mode, const TA* a, int64_t sa, const TB* b, int64_t sb, TC* c, int64_t n,
                                                  float lo, float hi, int64_t rows, int64_t a_row, int64_t b_row) {
  for (int64_t r = 0; r < rows; ++r, a += a_row, b += b_row, c += n) {
    if (sa == 1 && sb == 1) CombineLoop(m, mode, a, 1, b, 1, c, n, lo, hi);
    else if (sa == 1 && sb == 0) CombineLoop(m, mode, a, 1, b, 0, c, n, lo, hi);
    else if (sa == 0 && sb == 1) CombineLoop(m, mode, a, 0, b, 1, c, n, lo, hi);
    else CombineLoop(m, mode, a, sa, b, sb, c, n, lo, hi);
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
// The same loops where the CPU has FMA (and AVX-512: one instruction narrows to bytes), vectorized,
// the fused steps one instruction each.
template <typename TA, typename TB, typename TC, typename M>
__attribute__((target("avx2,fma"))) void CombineFma(const M& m, Span mode, const TA* a, int64_t sa, const TB* b, int64_t sb, TC* c, int64_t n,
                                                     float lo, float hi, int64_t rows, int64_t a_row, int64_t b_row) {
  CombineStrides(m, mode, a, sa, b, sb, c, n, lo, hi, rows, a_row, b_row);
}
template <typename TA, typename TB, typename TC, typename M>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma"))) void CombineAvx512(const M& m, Span mode, const TA* a, int64_t sa,
                                                                                          const TB* b, int64_t sb, TC* c, int64_t n, float lo,
                                                                                          float hi, int64_t rows, int64_t a_row, int64_t b_row) {
  CombineStrides(m, mode, a, sa, b, sb, c, n, lo, hi, rows, a_row, b_row);
}
int SimdLevel() {  // 2: AVX-512 and FMA, 1: AVX2 and FMA, 0: neither
  static const int level = !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) ? 0
                           : __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                                   __builtin_cpu_supports("avx512dq")
                               ? 2
                               : 1;
  return level;
}
#endif

template <typename TA, typename TB, typename TC, typename M>
void Combine(const M& m, Span mode, const TA* a, int64_t sa, const TB* b, int64_t sb, TC* c, int64_t n, float lo, float hi, int64_t rows = 1,
             int64_t a_row = 0, int64_t b_row = 0) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (SimdLevel() == 2) return CombineAvx512(m, mode, a, sa, b, sb, c, n, lo, hi, rows, a_row, b_row);
  if (SimdLevel() == 1) return CombineFma(m, mode, a, sa, b, sb, c, n, lo, hi, rows, a_row, b_row);
#endif
  CombineStrides(m, mode, a, sa, b, sb, c, n, lo, hi, rows, a_row, b_row);
}

// The C of one output value v from int32 operands a and b (separate statements, so that no C
// compiler contracts the unfused steps).
std::string CombineC(const AddMath& m, Span mode) {
  const std::string ra = aot::FloatLit(m.ra), rb = aot::FloatLit(m.rb), f = aot::FloatLit(m.f);
  if (mode == Span::kBoth) return "v = fmaf((float)a, " + ra + ", fmaf((float)b, " + rb + ", " + f + "));";
  if (mode == Span::kBFixed) return "{\n      const float t = (float)b * " + rb + ";\n      const float u = " + f + " + t;\n      v = fmaf((float)a, " + ra + ", u);\n    }";
  return "{\n      const float t = (float)a * " + ra + ";\n      const float u = " + f + " + t;\n      v = fmaf((float)b, " + rb + ", u);\n    }";
}
std::string CombineC(const MulMath& m, Span) {
  return "{\n      const float p = (float)((a - " + aot::IntLit(m.za) + ") * (b - " + aot::IntLit(m.zb) + ")) * " + aot::FloatLit(m.r) +
         ";\n      v = p + " + aot::FloatLit(m.zc) + ";\n    }";
}

template <typename M>
class QLinearBinary : public EagerExecuteOp, public ShapeInferOp, public LayoutAwareOp, public CompilableOp, public RebuildOnLoad,
                      public EmittableOp {
 public:
  // Execute's arithmetic for the plain layout in C99: the same formula for each output span (as
  // Run picks it from the merged broadcast strides), the parameters folded into float literals.
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* a = ctx->GetOptionalInputTensor(0);
    const Tensor* b = ctx->GetOptionalInputTensor(3);
    const Tensor* c = ctx->GetOutputTensor(0);
    if (!ConstInputs(ctx, {1, 4, 6}, {2, 5, 7})) return Fail(ctx, kConstParams);
    const DataType t = a->GetDataType();
    QParam qa, qb, qc;
    if (!ReadParams(ctx, t, &qa, &qb, &qc)) return GRAPH_FAILED;
    const M m(qa, qb, qc);
    float lo, hi;
    Range(t, &lo, &hi);
    const Shape& cs = c->GetShape();
    const Span mode = PlainMode(a->GetShape(), b->GetShape(), cs);
    std::string g;
    try {
      g = aot::Broadcast(a->GetShape(), b->GetShape(), cs);
    } catch (const std::exception& e) {
      return Fail(ctx, e.what());
    }
    const std::string ct = aot::CType(t);
    ctx->Include("<math.h>");
    if (!g.empty()) aot::EmitHelper(ctx, aot::Kernels(), "weft_broadcast");
    ctx->Run("{\n  " + g + "  const " + ct + "* pa = " + ctx->Input(0, ct.c_str()) + ";\n  const " + ct + "* pb = " + ctx->Input(InputInstance(ctx, 3), ct.c_str()) +
             ";\n  " + ct + "* pc = " + ctx->Output(0, ct.c_str()) + ";\n  int64_t o, i = 0, j = 0;\n  for (o = 0; o < " +
             aot::IntLit(cs.GetShapeSize()) + "; ++o) {\n    int32_t a, b;\n    float v;\n    " +
             (g.empty() ? std::string("i = j = o;") : std::string("weft_bcast_index(&g, o, &i, &j);")) +
             "\n    a = pa[i];\n    b = pb[j];\n    " + CombineC(m, mode) + "\n    v = v > " + aot::FloatLit(lo) + " ? v : " + aot::FloatLit(lo) +
             ";\n    v = v < " + aot::FloatLit(hi) + " ? v : " + aot::FloatLit(hi) + ";\n    pc[o] = (" + ct + ")(int32_t)nearbyintf(v);\n  }\n}\n");
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape* a = ctx->GetInputShape(0);
    const Shape* b = ctx->GetOptionalInputShape(3);
    if (!b) return Fail(ctx, "B is missing");
    if (!BroadcastShape(*a, *b, ctx->GetOutputShape(0))) {
      ctx->SetError(ShapeMismatch(M::kName, *a, *b));
      return GRAPH_FAILED;
    }
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    const Tensor* a = ctx->GetOptionalInputTensor(0);
    const Tensor* b = ctx->GetOptionalInputTensor(3);
    const Tensor* cz = ctx->GetOptionalInputTensor(7);
    if (!a || !b || !Is8BitType(a->GetDataType()) || b->GetDataType() != a->GetDataType())
      return Fail(ctx, "A and B must both be int8 or both uint8");
    if (cz && cz->GetDataType() != a->GetDataType()) return Fail(ctx, "C_zero_point must have A's type");
    return ctx->SetOutputDataType(0, a->GetDataType());
  }
  // Operands of the output's shape: plain or pixel rows, as the neighbours settle. One of them with one
  // value per channel (a squeeze-and-excitation gate): the other and the output as pixel rows
  // together, the small one plain.
  graphStatus QueryLayout(OpQueryContext* ctx, LayoutSupport& s) override {
    const Tensor* a = ctx->GetOptionalInputTensor(0);
    const Tensor* b = ctx->GetOptionalInputTensor(3);
    const Tensor* c = ctx->GetOutputTensor(0);
    if (!Known4D(c) || !a || !b) return GRAPH_SUCCESS;
    const Shape& cs = c->GetShape();
    if (a->GetShape() == cs && b->GetShape() == cs) s.Format(FORMAT_NHWC).Input(0).Input(3).Output(0).AnyFormat();
    else if (cs.GetDim(2) * cs.GetDim(3) == 1) return GRAPH_SUCCESS;  // plain: its spans run along the channels (kBoth)
    else if (a->GetShape() == cs && PerChannel(b->GetShape(), cs)) s.Format(FORMAT_NHWC).Input(0).Output(0).Together();
    else if (b->GetShape() == cs && PerChannel(a->GetShape(), cs)) s.Format(FORMAT_NHWC).Input(3).Output(0).Together();
    return GRAPH_SUCCESS;
  }
  graphStatus Compile(OpCompileContext* ctx) override { return SetPlannedOutputStorage(ctx, 1); }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* a = ctx->GetOptionalInputTensor(0);
    const Tensor* b = ctx->GetOptionalInputTensor(3);
    const DataType t = a->GetDataType();
    QParam qa, qb, qc;
    if (!ReadParams(ctx, t, &qa, &qb, &qc)) return GRAPH_FAILED;
    const Shape& cs = ctx->GetOutputTensor(0)->GetShape();
    Tensor* c = ctx->MallocOutputTensor(0, cs, t);
    if (!c) return GRAPH_FAILED;
    const M m(qa, qb, qc);
    float lo, hi;
    Range(t, &lo, &hi);
    if (t == DT_INT8) return Run(ctx, m, a->GetData<int8_t>(), b->GetData<int8_t>(), c->GetData<int8_t>(), a, b, c, lo, hi);
    return Run(ctx, m, a->GetData<uint8_t>(), b->GetData<uint8_t>(), c->GetData<uint8_t>(), a, b, c, lo, hi);
  }

 private:
  // The output in spans along its innermost dimension (after dropping dimensions of size 1 and
  // merging those that both operands read alike), each with the operands' strides along it. An
  // operand of one element, or broadcast along the span, is fixed for the span.
  template <typename T>
  graphStatus Run(EagerOpExecutionContext* ctx, const M& m, const T* pa, const T* pb, T* pc, const Tensor* a, const Tensor* b,
                  const Tensor* c, float lo, float hi) const {
    const Shape& cs = c->GetShape();
    if (a->GetShape() == cs && b->GetShape() == cs) {
      const int64_t n = PlannedElements(c);
      auto body = [&](int64_t i0, int64_t i1) { Combine(m, Span::kBoth, pa + i0, 1, pb + i0, 1, pc + i0, i1 - i0, lo, hi); };
      if (n < (1 << 15)) body(0, n);
      else return ctx->ParallelFor(n, 1 << 14, body);
      return GRAPH_SUCCESS;
    }
    const int64_t total = cs.GetShapeSize();
    if (total == 0) return GRAPH_SUCCESS;
    if (a->GetShapeSize() == 1 || b->GetShapeSize() == 1) {
      const bool a_fixed = a->GetShapeSize() == 1;
      Combine(m, a_fixed ? Span::kAFixed : Span::kBFixed, pa, a_fixed ? 0 : 1, pb, a_fixed ? 1 : 0, pc, total, lo, hi);
      return GRAPH_SUCCESS;
    }
    if (c->GetFormat() == FORMAT_NHWC) {  // one operand per channel (QueryLayout), the other and the output pixel rows
      const bool a_small = a->GetShape() != cs;
      const int64_t n = cs.GetDim(0), ch = cs.GetDim(1), pixels = cs.GetDim(2) * cs.GetDim(3);
      const bool per_batch = (a_small ? a : b)->GetShapeSize() == n * ch && n > 1;
      return ctx->ParallelFor(n * pixels, std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(ch, 1)), [&](int64_t p0, int64_t p1) {
        for (int64_t q = p0; q < p1;) {  // the pixel rows of one image at a time
          const int64_t end = std::min(p1, (q / pixels + 1) * pixels), at = q * ch, vec = per_batch ? q / pixels * ch : 0;
          if (a_small) Combine(m, Span::kAFixed, pa + vec, 1, pb + at, 1, pc + at, ch, lo, hi, end - q, 0, ch);
          else Combine(m, Span::kBFixed, pa + at, 1, pb + vec, 1, pc + at, ch, lo, hi, end - q, ch, 0);
          q = end;
        }
      });
    }
    std::vector<int64_t> dims, as, bs;
    Merge(a->GetShape(), b->GetShape(), cs, &dims, &as, &bs);
    const int64_t span = dims.back(), spans = total / span;
    const Span mode = as.back() == 0 ? Span::kAFixed : bs.back() == 0 ? Span::kBFixed : Span::kBoth;
    const size_t outer = dims.size() - 1;
    auto body = [&](int64_t s0, int64_t s1) {
      for (int64_t s = s0; s < s1; ++s) {
        int64_t ia = 0, ib = 0, rest = s;
        for (size_t d = outer; d-- > 0;) {
          const int64_t at = rest % dims[d];
          rest /= dims[d];
          ia += at * as[d];
          ib += at * bs[d];
        }
        Combine(m, mode, pa + ia, as.back(), pb + ib, bs.back(), pc + s * span, span, lo, hi);
      }
    };
    return ctx->ParallelFor(spans, std::max<int64_t>(1, (1 << 14) / span), body);
  }
  // A's, B's and C's scale and zero point (false after Fail).
  static bool ReadParams(const KernelContextBase* ctx, DataType t, QParam* qa, QParam* qb, QParam* qc) {
    return ReadQParam(ctx, ctx->GetOptionalInputTensor(1), ctx->GetOptionalInputTensor(2), t, "A", qa) &&
           ReadQParam(ctx, ctx->GetOptionalInputTensor(4), ctx->GetOptionalInputTensor(5), t, "B", qb) &&
           ReadQParam(ctx, ctx->GetOptionalInputTensor(6), ctx->GetOptionalInputTensor(7), t, "C", qc);
  }
  // Strides of both operands over the output's dimensions (of size > 1), dimensions that both
  // operands read alike merged. At least one dimension (of size 1 when the output has one element).
  static void Merge(const Shape& a, const Shape& b, const Shape& cs, std::vector<int64_t>* dims, std::vector<int64_t>* as,
                    std::vector<int64_t>* bs) {
    const size_t rank = cs.GetDimNum();
    int64_t sa[WEFT_MAX_DIMS], sb[WEFT_MAX_DIMS];
    BroadcastStrides(a, cs, sa);
    BroadcastStrides(b, cs, sb);
    for (size_t d = 0; d < rank; ++d) {
      if (cs.GetDim(d) == 1) continue;
      if (!dims->empty() && (as->back() == 0) == (sa[d] == 0) && (bs->back() == 0) == (sb[d] == 0) &&
          (as->back() == 0 || as->back() == sa[d] * cs.GetDim(d)) && (bs->back() == 0 || bs->back() == sb[d] * cs.GetDim(d))) {
        dims->back() *= cs.GetDim(d);
        as->back() = sa[d];
        bs->back() = sb[d];
        continue;
      }
      dims->push_back(cs.GetDim(d));
      as->push_back(sa[d]);
      bs->push_back(sb[d]);
    }
    if (dims->empty()) dims->push_back(1), as->push_back(0), bs->push_back(0);
  }
  // The formula Run uses on the plain layout: both along the span where both shapes are the
  // output's; one fixed where it has one element or is broadcast along the innermost span.
  static Span PlainMode(const Shape& a, const Shape& b, const Shape& cs) {
    if (a == cs && b == cs) return Span::kBoth;
    if (a.GetShapeSize() == 1) return Span::kAFixed;
    if (b.GetShapeSize() == 1) return Span::kBFixed;
    std::vector<int64_t> dims, as, bs;
    Merge(a, b, cs, &dims, &as, &bs);
    return as.back() == 0 ? Span::kAFixed : bs.back() == 0 ? Span::kBFixed : Span::kBoth;
  }
};

// ---- QLinearGlobalAveragePool ------------------------------------------------------------------
// X, x_scale, x_zero_point, y_scale, y_zero_point; attribute channels_last. Each channel's sum
// over the pixels, less zx * pixels, times sx / (sy * pixels), rounded half to even, plus zy.
class QLinearGlobalAveragePool : public EagerExecuteOp, public ShapeInferOp, public LayoutAwareOp, public EmittableOp {
 public:
  // Execute's sums and rescaling for the plain layout (channels innermost with channels_last).
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    if (!ConstInputs(ctx, {1, 2, 3, 4}, {})) return Fail(ctx, kConstParams);
    const DataType t = x->GetDataType();
    QParam qx, qy;
    size_t cd;
    int64_t n, ch, pixels;
    if (!Read(ctx, x, &qx, &qy, &cd, &n, &ch, &pixels)) return GRAPH_FAILED;
    const Shape& xs = x->GetShape();
    if (n * ch == 0) return GRAPH_SUCCESS;
    if (pixels == 0 || pixels >= (int64_t{1} << 24)) return Fail(ctx, "X " + xs.ToString() + " must have 1 to 2^24 - 1 pixels a channel");
    const float scale = qx.scale / (qy.scale * static_cast<float>(pixels));
    float lo, hi;
    Range(t, &lo, &hi);
    const std::string zl = aot::FloatLit(lo - static_cast<float>(qy.zp)), zh = aot::FloatLit(hi - static_cast<float>(qy.zp));
    const bool last = cd != 1;
    const std::string ct = aot::CType(t), L_ch = aot::IntLit(ch), L_px = aot::IntLit(pixels);
    ctx->Include("<math.h>");
    ctx->Run("{\n  const " + ct + "* x = " + ctx->Input(0, ct.c_str()) + ";\n  " + ct + "* y = " + ctx->Output(0, ct.c_str()) +
             ";\n  int64_t i, k, p;\n  for (i = 0; i < " + aot::IntLit(n) + "; ++i)\n    for (k = 0; k < " + L_ch +
             "; ++k) {\n      int64_t sum = " + aot::IntLit(-int64_t{qx.zp} * pixels) + ";\n      float v;\n      for (p = 0; p < " + L_px +
             "; ++p) sum += x[" + (last ? "(i * " + L_px + " + p) * " + L_ch + " + k" : "(i * " + L_ch + " + k) * " + L_px + " + p") +
             "];\n      v = (float)sum * " + aot::FloatLit(scale) + ";\n      v = v > " + zl + " ? v : " + zl + ";\n      v = v < " + zh +
             " ? v : " + zh + ";\n      y[i * " + L_ch + " + k] = (" + ct + ")((int32_t)nearbyintf(v) + " + aot::IntLit(qy.zp) + ");\n    }\n}\n");
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& x = *ctx->GetInputShape(0);
    if (x.GetDimNum() < 3) return Fail(ctx, "X must have a batch, a channel and at least one spatial dimension, not " + x.ToString());
    Shape y;
    for (size_t d = 0; d < x.GetDimNum(); ++d) y.AppendDim(d == 0 || d == ChannelDim(ctx, x) ? x.GetDim(d) : 1);
    *ctx->GetOutputShape(0) = y;
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    const DataType t = ctx->GetInputDataType(0);
    if (!Is8BitType(t)) return Fail(ctx, std::string("X must be int8 or uint8, not ") + DataTypeName(t));
    const Tensor* yz = ctx->GetOptionalInputTensor(4);
    if (yz && yz->GetDataType() != t) return Fail(ctx, "y_zero_point must have X's type");
    return ctx->SetOutputDataType(0, t);
  }
  // A channels-first 4-D input may come as pixel rows (the 8-bit convolutions' layout): its sums
  // then run along contiguous channels. The [N, C, 1, 1] output is the same bytes either way.
  graphStatus QueryLayout(OpQueryContext* ctx, LayoutSupport& s) override {
    const int64_t* cl = ctx->GetAttrs()->GetInt("channels_last");
    if (Known4D(ctx->GetInputTensor(0)) && !(cl && *cl)) s.Format(FORMAT_NHWC).Input(0);
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const DataType t = x->GetDataType();
    QParam qx, qy;
    size_t cd;
    int64_t n, ch, pixels;
    if (!Read(ctx, x, &qx, &qy, &cd, &n, &ch, &pixels)) return GRAPH_FAILED;
    const Shape& xs = x->GetShape();
    Tensor* y = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), t);
    if (!y) return GRAPH_FAILED;
    if (n * ch == 0) return GRAPH_SUCCESS;
    if (pixels == 0) return Fail(ctx, "X " + xs.ToString() + " has no pixels to average");
    if (pixels >= (int64_t{1} << 24)) return Fail(ctx, "X " + xs.ToString() + " has " + std::to_string(pixels) + " pixels a channel; at most 2^24 - 1 are supported");
    const float scale = qx.scale / (qy.scale * static_cast<float>(pixels));
    float lo, hi;
    Range(t, &lo, &hi);
    const int64_t bias = -int64_t{qx.zp} * pixels;  // exact in int64 (int32 would wrap beyond 2^31 / 255 pixels)
    const bool rows = cd != 1 || x->GetFormat() == FORMAT_NHWC;  // channels innermost
    const auto* px = static_cast<const uint8_t*>(x->GetAddr());
    auto* py = static_cast<uint8_t*>(y->GetAddr());
    const bool s8 = t == DT_INT8;
    auto finish = [&](int64_t sum) {
      float v = static_cast<float>(sum + bias) * scale;
      const float zl = lo - static_cast<float>(qy.zp), zh = hi - static_cast<float>(qy.zp);
      v = v > zl ? v : zl;
      v = v < zh ? v : zh;
      return static_cast<uint8_t>(static_cast<int32_t>(RoundHalfEvenSmall(v)) + qy.zp);
    };
    return ctx->ParallelFor(n, 1, [&](int64_t i0, int64_t i1) {
      std::vector<int64_t> acc(static_cast<size_t>(ch));
      for (int64_t i = i0; i < i1; ++i) {
        const uint8_t* img = px + i * ch * pixels;
        if (rows) {
          std::fill(acc.begin(), acc.end(), 0);
          for (int64_t p = 0; p < pixels; ++p) {
            const uint8_t* row = img + p * ch;
            if (s8)
              for (int64_t k = 0; k < ch; ++k) acc[static_cast<size_t>(k)] += static_cast<int8_t>(row[k]);
            else
              for (int64_t k = 0; k < ch; ++k) acc[static_cast<size_t>(k)] += row[k];
          }
        } else {
          for (int64_t k = 0; k < ch; ++k) {
            const uint8_t* plane = img + k * pixels;
            int64_t sum = 0;
            if (s8)
              for (int64_t p = 0; p < pixels; ++p) sum += static_cast<int8_t>(plane[p]);
            else
              for (int64_t p = 0; p < pixels; ++p) sum += plane[p];
            acc[static_cast<size_t>(k)] = sum;
          }
        }
        for (int64_t k = 0; k < ch; ++k) py[i * ch + k] = finish(acc[static_cast<size_t>(k)]);
      }
    });
  }

 private:
  static size_t ChannelDim(const KernelContextBase* ctx, const Shape& x) {
    const int64_t* cl = ctx->GetAttrs()->GetInt("channels_last");
    return cl && *cl ? x.GetDimNum() - 1 : 1;
  }
  // The parameters, the channel dim, the images, channels and pixels a channel (false after Fail).
  static bool Read(const KernelContextBase* ctx, const Tensor* x, QParam* qx, QParam* qy, size_t* cd, int64_t* n, int64_t* ch, int64_t* pixels) {
    const DataType t = x->GetDataType();
    if (!ReadQParam(ctx, ctx->GetOptionalInputTensor(1), ctx->GetOptionalInputTensor(2), t, "x", qx) ||
        !ReadQParam(ctx, ctx->GetOptionalInputTensor(3), ctx->GetOptionalInputTensor(4), t, "y", qy))
      return false;
    const Shape& xs = x->GetShape();
    *cd = ChannelDim(ctx, xs);
    *n = xs.GetDim(0), *ch = xs.GetDim(*cd);
    *pixels = *n * *ch == 0 ? 0 : xs.GetShapeSize() / (*n * *ch);
    return true;
  }
};

// ---- QLinearConcat ---------------------------------------------------------------------------
// Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) for each input; attribute axis. An input
// quantized as the output is copied; another goes through its requantization table.
class QLinearConcat : public EagerExecuteOp, public ShapeInferOp, public LayoutAwareOp, public CompilableOp, public RebuildOnLoad,
                      public EmittableOp {
 public:
  // Execute's copies and requantization tables for the plain layout.
  graphStatus Emit(EmitContext* ctx) override {
    const size_t n = ctx->GetComputeNodeInputNum();
    const DataType t = ctx->GetInputDataType(1);
    for (size_t i = 0; i < n; ++i)
      if ((i < 2 || (i - 2) % 3 != 0) && (!ctx->GetInputTensor(i) || !ctx->GetInputTensor(i)->GetAddr())) return Fail(ctx, kConstParams);
    QParam qy;
    if (!ReadQParam(ctx, ctx->GetInputTensor(0), ctx->GetInputTensor(1), t, "Y", &qy)) return GRAPH_FAILED;
    const Shape& ys = ctx->GetOutputTensor(0)->GetShape();
    int64_t axis = 0;
    const int64_t* a = ctx->GetAttrs()->GetInt("axis");
    if (!a || !NormalizeAxis(*a, static_cast<int64_t>(ys.GetDimNum()), &axis)) return Fail(ctx, "the axis attribute is missing or out of range");
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= ys.GetDim(static_cast<size_t>(d));
    for (size_t d = static_cast<size_t>(axis) + 1; d < ys.GetDimNum(); ++d) inner *= ys.GetDim(d);
    const int64_t row = ys.GetDim(static_cast<size_t>(axis)) * inner;
    std::string r = "{\n  uint8_t* y = " + ctx->Output(0, "uint8_t") + ";\n  (void)y;\n";
    int64_t at = 0;
    for (size_t i = 2; i < n; i += 3) {
      QParam qx;
      if (!ReadQParam(ctx, ctx->GetInputTensor(i + 1), ctx->GetInputTensor(i + 2), t, "X" + std::to_string((i - 2) / 3), &qx)) return GRAPH_FAILED;
      const int64_t len = ctx->GetInputTensor(i)->GetShape().GetDim(static_cast<size_t>(axis)) * inner;
      if (len == 0) continue;
      r += "  {\n    const uint8_t* x = " + ctx->Input(i, "uint8_t") + ";\n    int64_t o, i;\n";
      std::string value = "x[o * " + aot::IntLit(len) + " + i]";
      if (!(qx.scale == qy.scale && qx.zp == qy.zp)) {
        Table table;
        BuildTable(t, qx, t, qy, [](float v) { return v; }, &table);
        r += "    const uint8_t* t = " + ctx->Const("table", DT_UINT8, table.data(), table.size()) + ";\n";
        value = "t[" + value + "]";
      }
      r += "    for (o = 0; o < " + aot::IntLit(outer) + "; ++o)\n      for (i = 0; i < " + aot::IntLit(len) + "; ++i) y[o * " + aot::IntLit(row) +
           " + " + aot::IntLit(at) + " + i] = " + value + ";\n  }\n";
      at += len;
    }
    ctx->Run(r + "}\n");
    return GRAPH_SUCCESS;
  }
  // 4-D inputs and output as pixel rows together, so that a concatenation between 8-bit
  // convolutions keeps their layout (the scales and zero points among the inputs stay plain).
  graphStatus QueryLayout(OpQueryContext* ctx, LayoutSupport& s) override {
    if (!Known4D(ctx->GetOutputTensor(0))) return GRAPH_SUCCESS;
    for (size_t i = 2; i < ctx->GetComputeNodeInputNum(); i += 3)
      if (!Known4D(ctx->GetInputTensor(i))) return GRAPH_SUCCESS;
    s.Format(FORMAT_NHWC).Input(0).Output(0).Together();
    return GRAPH_SUCCESS;
  }
  graphStatus Compile(OpCompileContext* ctx) override { return SetPlannedOutputStorage(ctx, 1); }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const size_t n = ctx->GetComputeNodeInputNum();
    if (n < 5 || (n - 2) % 3) return Fail(ctx, "expects Y_scale, Y_zero_point and then (X, X_scale, X_zero_point) for each input; got " + std::to_string(n) + " inputs");
    const Shape& first = *ctx->GetInputShape(2);
    const int64_t rank = static_cast<int64_t>(first.GetDimNum());
    int64_t axis;
    const int64_t* a = ctx->GetAttrs()->GetInt("axis");
    if (!a) return Fail(ctx, "the axis attribute is required");
    if (!NormalizeAxis(*a, rank, &axis)) return Fail(ctx, AxisError(*a, rank));
    Shape out = first;
    int64_t along = 0;
    for (size_t i = 2; i < n; i += 3) {
      const Shape& s = *ctx->GetInputShape(i);
      if (s.GetDimNum() != first.GetDimNum()) return Fail(ctx, "input " + std::to_string((i - 2) / 3) + " " + s.ToString() + " has another rank than input 0 " + first.ToString());
      for (int64_t d = 0; d < rank; ++d) {
        const int64_t v = s.GetDim(static_cast<size_t>(d));
        if (d == axis) {
          along = along < 0 || v < 0 ? -1 : along + v;
        } else if (v >= 0 && out.GetDim(static_cast<size_t>(d)) >= 0 && v != out.GetDim(static_cast<size_t>(d))) {
          return Fail(ctx, "input " + std::to_string((i - 2) / 3) + " " + s.ToString() + " differs from input 0 " + first.ToString() + " outside axis " + std::to_string(axis));
        }
      }
    }
    out.SetDim(static_cast<size_t>(axis), along);
    *ctx->GetOutputShape(0) = out;
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    const DataType t = ctx->GetInputDataType(1);
    if (!Is8BitType(t)) return Fail(ctx, std::string("Y_zero_point must be int8 or uint8, not ") + DataTypeName(t));
    for (size_t i = 2; i < ctx->GetComputeNodeInputNum(); i += 3)
      if (ctx->GetInputDataType(i) != t)
        return Fail(ctx, "input " + std::to_string((i - 2) / 3) + " is " + DataTypeName(ctx->GetInputDataType(i)) + " but Y_zero_point is " + DataTypeName(t));
    return ctx->SetOutputDataType(0, t);
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const size_t n = ctx->GetComputeNodeInputNum();
    const DataType t = ctx->GetInputDataType(1);
    QParam qy;
    if (!ReadQParam(ctx, ctx->GetInputTensor(0), ctx->GetInputTensor(1), t, "Y", &qy)) return GRAPH_FAILED;
    const Shape& ys = ctx->GetOutputTensor(0)->GetShape();
    Tensor* y = ctx->MallocOutputTensor(0, ys, t);
    if (!y) return GRAPH_FAILED;
    int64_t axis = 0;
    const int64_t* a = ctx->GetAttrs()->GetInt("axis");
    if (!a || !NormalizeAxis(*a, static_cast<int64_t>(ys.GetDimNum()), &axis)) return Fail(ctx, "the axis attribute is missing or out of range");
    // Pixel rows store [N, C, H, W] as [N, H, W, C]: the axis where it lies in storage.
    const bool rows = y->GetFormat() == FORMAT_NHWC;
    auto stored = [&](const Shape& s) { return rows ? Shape({s.GetDim(0), s.GetDim(2), s.GetDim(3), s.GetDim(1)}) : s; };
    if (rows) axis = axis == 1 ? 3 : axis == 0 ? 0 : axis - 1;
    const Shape ps = stored(ys);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= ps.GetDim(static_cast<size_t>(d));
    for (size_t d = static_cast<size_t>(axis) + 1; d < ps.GetDimNum(); ++d) inner *= ps.GetDim(d);
    const int64_t row = ps.GetDim(static_cast<size_t>(axis)) * inner;
    auto* py = static_cast<uint8_t*>(y->GetAddr());
    int64_t at = 0;
    for (size_t i = 2; i < n; i += 3) {
      const Tensor* x = ctx->GetInputTensor(i);
      QParam qx;
      if (!ReadQParam(ctx, ctx->GetInputTensor(i + 1), ctx->GetInputTensor(i + 2), t, "X" + std::to_string((i - 2) / 3), &qx)) return GRAPH_FAILED;
      const int64_t len = stored(x->GetShape()).GetDim(static_cast<size_t>(axis)) * inner;
      const auto* px = static_cast<const uint8_t*>(x->GetAddr());
      if (qx.scale == qy.scale && qx.zp == qy.zp) {
        for (int64_t o = 0; o < outer; ++o) std::memcpy(py + o * row + at, px + o * len, static_cast<size_t>(len));
      } else {
        Table table;
        BuildTable(t, qx, t, qy, [](float v) { return v; }, &table);
        for (int64_t o = 0; o < outer; ++o) MapBytes(ctx, table, px + o * len, py + o * row + at, len);
      }
      at += len;
    }
    return GRAPH_SUCCESS;
  }
};

// ---- QLinearSoftmax -----------------------------------------------------------------------------
// X, X_scale, x_zero_point?, y_scale, y_zero_point?; `axis` and `opset` (that of the Softmax it
// replaces: below 13 the input is taken as 2-D, split before `axis`; from 13 the softmax runs along
// `axis` alone; axis defaults to -1 for both, as in ONNX Runtime's schema). ONNX Runtime's arithmetic: with D the length
// softmaxed over and s = X_scale, a table of 256 floats E[i] = exp((i - 255 + c) * s), computed in
// double, where c = max(0, ln(FLT_MAX / D) - 5) / s keeps the sums finite; per row, with m the
// largest byte value, sum = the floats E[x - m + 255] added in order; then
// y = nearbyint(E[x - m + 255] * floor(1 / y_scale) / sum) + y_zero_point, in float, saturated. The
// zero point of X cancels out. (Where ONNX Runtime's int8 kernel lets a value above 127 wrap, as a
// probability that rounds to 1 does when y_zero_point is -128, this one saturates.)
#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12 reads the intrinsics' undefined pass-through operands as maybe-uninitialized.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
bool HasAvx512Bw() {
  static const bool yes = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
  return yes;
}
// Byte k of each of 16 rows (`rows`: their offsets from x) as int32 values. Each lane reads 4 bytes
// inside its row (rows of 8 bytes or more): the word ending at byte k, or for the first three bytes
// the row's first word.
__attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) inline __m512i LaneBytes(const uint8_t* x, __m512i rows, int64_t k, bool s8) {
  const int64_t from = k >= 3 ? k - 3 : 0;
  __m512i v = _mm512_i32gather_epi32(_mm512_add_epi32(rows, _mm512_set1_epi32(static_cast<int32_t>(from))), reinterpret_cast<const int*>(x), 1);
  if (k < 3) v = _mm512_slli_epi32(v, static_cast<unsigned>(24 - 8 * k));
  return s8 ? _mm512_srai_epi32(v, 24) : _mm512_srli_epi32(v, 24);
}

// QLinearSoftmax's arithmetic (below) on 16 consecutive rows of `len` bytes at once: lane i holds
// row i's maximum and sum, the sum built in the row's own order, so every value is the scalar one.
__attribute__((target("avx512f,avx512bw,avx512vl"))) void SoftmaxRows16(const uint8_t* x, int64_t len, bool s8, const float* table, float ys, float zp,
                                                                float lo, float hi, uint8_t* y) {
  alignas(64) int32_t mx[16];
  for (int i = 0; i < 16; ++i) {
    const uint8_t* row = x + i * len;
    int32_t m = s8 ? static_cast<int8_t>(row[0]) : row[0];
    for (int64_t k = 1; k < len; ++k) m = std::max(m, s8 ? static_cast<int32_t>(static_cast<int8_t>(row[k])) : static_cast<int32_t>(row[k]));
    mx[i] = m;
  }
  // offsets of the rows' bytes; the index of value v in row i's table is v - max_i + 255
  const __m512i shift = _mm512_sub_epi32(_mm512_set1_epi32(255), _mm512_load_si512(mx));
  const __m512i rows = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi32(static_cast<int32_t>(len)));
  __m512 sum = _mm512_setzero_ps();
  for (int64_t k = 0; k < len; ++k) sum = _mm512_add_ps(sum, _mm512_i32gather_ps(_mm512_add_epi32(LaneBytes(x, rows, k, s8), shift), table, 4));
  alignas(64) float sums[16];
  _mm512_store_ps(sums, sum);
  const __m512 vys = _mm512_set1_ps(ys), vz = _mm512_set1_ps(zp), vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
  for (int i = 0; i < 16; ++i) {
    const uint8_t* row = x + i * len;
    uint8_t* out = y + i * len;
    const __m512 vs = _mm512_set1_ps(sums[i]);
    const __m512i sh = _mm512_set1_epi32(255 - mx[i]);
    for (int64_t k = 0; k < len; k += 16) {
      const __mmask16 keep = len - k >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << (len - k)) - 1);
      const __m128i b = _mm_maskz_loadu_epi8(keep, row + k);
      const __m512i v = s8 ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
      const __m512 t = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), keep, _mm512_add_epi32(v, sh), table, 4);
      __m512 q = _mm512_roundscale_ps(_mm512_div_ps(_mm512_mul_ps(t, vys), vs), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      q = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(q, vz), vlo), vhi);
      _mm512_mask_cvtepi32_storeu_epi8(out + k, keep, _mm512_cvtps_epi32(q));
    }
  }
}
#pragma GCC diagnostic pop
#endif

class QLinearSoftmax : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  graphStatus InferShape(InferShapeContext* ctx) override {
    *ctx->GetOutputShape(0) = *ctx->GetInputShape(0);
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override { return EightBitLikeX(ctx, "y_zero_point"); }
  // Execute's row loop in C: the same table (a constant of the module) and float operations in
  // the same order, so the bytes are the runtime's.
  graphStatus Emit(EmitContext* ctx) override {
    if (!ConstInputs(ctx, {1, 3}, {2, 4})) return Fail(ctx, kConstParams);
    Plan p;
    if (!p.Make(ctx)) return GRAPH_FAILED;
    if (ctx->GetInputTensor(0)->GetShape().GetShapeSize() == 0) return GRAPH_SUCCESS;
    const std::string ct = aot::CType(p.t), table = ctx->Const("table", DT_FLOAT, p.table, 256);
    const std::string L_len = aot::IntLit(p.len), L_in = aot::IntLit(p.inner), at = "base + k * " + L_in;
    const std::string value = "(int32_t)x[" + at + "]";
    ctx->Include("<math.h>");
    ctx->Run("{\n  const " + ct + "* x = " + ctx->Input(0, ct.c_str()) + ";\n  " + ct + "* y = " + ctx->Output(0, ct.c_str()) +
             ";\n  int64_t r, k;\n  for (r = 0; r < " + aot::IntLit(p.outer * p.inner) + "; ++r) {\n    const int64_t base = (r / " + L_in +
             ") * " + aot::IntLit(p.len * p.inner) + " + r % " + L_in + ";\n    int32_t m = (int32_t)x[base];\n    float sum = 0.0f;\n" +
             "    for (k = 1; k < " + L_len + "; ++k)\n      if (" + value + " > m) m = " + value + ";\n    for (k = 0; k < " + L_len +
             "; ++k) sum += " + table + "[" + value + " - m + 255];\n    for (k = 0; k < " + L_len + "; ++k) {\n      float q = nearbyintf(" +
             table + "[" + value + " - m + 255] * " + aot::FloatLit(p.ys) + " / sum) + " + aot::FloatLit(p.fz) + ";\n      q = q < " +
             aot::FloatLit(p.lo) + " ? " + aot::FloatLit(p.lo) + " : q;\n      q = " + aot::FloatLit(p.hi) + " < q ? " + aot::FloatLit(p.hi) +
             " : q;\n      y[" + at + "] = (" + ct + ")(int32_t)q;\n    }\n  }\n}\n");
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Plan p;
    if (!p.Make(ctx)) return GRAPH_FAILED;
    const DataType t = p.t;
    const int64_t outer = p.outer, len = p.len, inner = p.inner;
    const float* table = p.table;
    const float ys = p.ys, lo = p.lo, hi = p.hi;
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), t);
    if (!y) return GRAPH_FAILED;
    if (x->GetShape().GetShapeSize() == 0) return GRAPH_SUCCESS;
    const auto* px = static_cast<const uint8_t*>(x->GetAddr());
    auto* py = static_cast<uint8_t*>(y->GetAddr());
    const bool s8 = t == DT_INT8;
    const float fz = p.fz;
    ctx->ParallelFor(outer * inner, std::max<int64_t>(16, 4096 / std::max<int64_t>(len, 1)), [&](int64_t r0, int64_t r1) {
#if defined(__x86_64__) && defined(__GNUC__)
      if (inner == 1 && len >= 8 && len < (1 << 24) && HasAvx512Bw())  // rows side by side, each lane one row's sum in its own order
        for (; r0 + 16 <= r1; r0 += 16) SoftmaxRows16(px + r0 * len, len, s8, table, ys, fz, lo, hi, py + r0 * len);
#endif
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t base = (r / inner) * len * inner + r % inner;
        auto value = [&](int64_t k) { return s8 ? static_cast<int32_t>(static_cast<int8_t>(px[base + k * inner])) : static_cast<int32_t>(px[base + k * inner]); };
        int32_t m = value(0);
        for (int64_t k = 1; k < len; ++k) m = std::max(m, value(k));
        float sum = 0.f;
        for (int64_t k = 0; k < len; ++k) sum += table[value(k) - m + 255];
        for (int64_t k = 0; k < len; ++k) {
          float q = std::nearbyint(table[value(k) - m + 255] * ys / sum) + fz;
          q = std::min(std::max(q, lo), hi);
          py[base + k * inner] = static_cast<uint8_t>(static_cast<int32_t>(q));
        }
      }
    });
    return GRAPH_SUCCESS;
  }

 private:
  // What the arithmetic needs: rows of `len` values `inner` apart, outer x inner of them; the
  // exponentials of the 256 differences from a row's maximum (ONNX Runtime's table, offset so
  // that `len` of them cannot overflow); the output's scale and range.
  struct Plan {
    DataType t = DT_UINT8;
    int64_t outer = 1, len = 1, inner = 1;
    float table[256];
    float ys = 0.f, fz = 0.f, lo = 0.f, hi = 0.f;
    bool Make(const KernelContextBase* ctx) {
      const Tensor* x = ctx->GetInputTensor(0);
      t = x->GetDataType();
      const Shape& shape = x->GetShape();
      const int64_t rank = static_cast<int64_t>(shape.GetDimNum());
      const int64_t opset = *ctx->GetAttrs()->GetInt("opset");
      int64_t axis = *ctx->GetAttrs()->GetInt("axis");
      if (!NormalizeAxis(axis, std::max<int64_t>(rank, 1), &axis)) return Fail(ctx, AxisError(axis, rank)), false;
      QParam xq, yq;
      if (!ReadQParam(ctx, ctx->GetOptionalInputTensor(1), ctx->GetOptionalInputTensor(2), t, "X", &xq) ||
          !ReadQParam(ctx, ctx->GetOptionalInputTensor(3), ctx->GetOptionalInputTensor(4), t, "y", &yq))
        return false;
      for (int64_t d = 0; d < rank; ++d) {
        const int64_t n = shape.GetDim(static_cast<size_t>(d));
        if (d < axis) outer *= n;
        else if (d == axis || opset < 13) len *= n;
        else inner *= n;
      }
      double c = std::log(static_cast<double>(std::numeric_limits<float>::max() / static_cast<float>(std::max<int64_t>(len, 1))));
      c = std::max(0.0, c - 5.0) / static_cast<double>(xq.scale);
      for (int i = 0; i < 256; ++i) table[i] = static_cast<float>(std::exp((static_cast<double>(i) - 255.0 + c) * static_cast<double>(xq.scale)));
      ys = std::floor(1.0f / yq.scale);
      fz = static_cast<float>(yq.zp);
      Range(t, &lo, &hi);
      return true;
    }
  };
};

}  // namespace

void WeftRegister_qlinear(std::vector<OpEntry>& out) {
  const TensorType q8({DT_INT8, DT_UINT8});
  const TensorType f32({DT_FLOAT});
  auto binary = [&](const char* name) {
    return OpDefBuilder(name)
        .INPUT(A, q8)
        .INPUT(A_scale, f32)
        .OPTIONAL_INPUT(A_zero_point, q8)
        .INPUT(B, q8)
        .INPUT(B_scale, f32)
        .OPTIONAL_INPUT(B_zero_point, q8)
        .INPUT(C_scale, f32)
        .OPTIONAL_INPUT(C_zero_point, q8)
        .OUTPUT(C, q8)
        .Build();
  };
  out.push_back({binary("QLinearAdd"), MakeOpImpl<QLinearBinary<AddMath>>("QLinearAdd")});
  out.push_back({binary("QLinearMul"), MakeOpImpl<QLinearBinary<MulMath>>("QLinearMul")});
  auto lookup = [&](const char* name, bool alpha) {
    OpDefBuilder b(name);
    b.INPUT(X, q8).INPUT(X_scale, f32).OPTIONAL_INPUT(X_zero_point, q8).INPUT(Y_scale, f32).OPTIONAL_INPUT(Y_zero_point, q8).OUTPUT(Y, q8);
    if (alpha) b.ATTR(alpha, Float, 0.01f);
    return b.Build();
  };
  out.push_back({lookup("QLinearSigmoid", false), MakeOpImpl<QLinearSigmoid>("QLinearSigmoid")});
  out.push_back({lookup("QLinearLeakyRelu", true), MakeOpImpl<QLinearLeakyRelu>("QLinearLeakyRelu")});
  out.push_back({OpDefBuilder("QLinearGlobalAveragePool")
                     .INPUT(X, q8)
                     .INPUT(x_scale, f32)
                     .INPUT(x_zero_point, q8)
                     .INPUT(y_scale, f32)
                     .INPUT(y_zero_point, q8)
                     .OUTPUT(Y, q8)
                     .ATTR(channels_last, Int, 0)
                     .Build(),
                 MakeOpImpl<QLinearGlobalAveragePool>("QLinearGlobalAveragePool")});
  out.push_back({OpDefBuilder("QLinearSoftmax")
                     .INPUT(X, q8)
                     .INPUT(X_scale, f32)
                     .OPTIONAL_INPUT(x_zero_point, q8)
                     .INPUT(y_scale, f32)
                     .OPTIONAL_INPUT(y_zero_point, q8)
                     .OUTPUT(Y, q8)
                     .ATTR(axis, Int, -1)
                     .REQUIRED_ATTR(opset, Int)
                     .Build(),
                 MakeOpImpl<QLinearSoftmax>("QLinearSoftmax")});
  out.push_back({OpDefBuilder("QLinearConcat")
                     .DYNAMIC_INPUT(inputs, TensorType({DT_FLOAT, DT_INT8, DT_UINT8}))
                     .OUTPUT(Y, q8)
                     .REQUIRED_ATTR(axis, Int)
                     .Build(),
                 MakeOpImpl<QLinearConcat>("QLinearConcat")});
}

}  // namespace weft::ops
