// ONNX's linear quantization operators: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
// MatMulInteger and QLinearMatMul (the QDQ and QOperator forms of quantized ONNX models).
//   QuantizeLinear:   y = saturate(round_half_even(x / scale) + zero_point)
//   DequantizeLinear: y = (x - zero_point) * scale
// with one scale (and zero point) for the tensor, or one per index along `axis` (1-D scales).
#include <cmath>
#include <cstring>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif
#include <limits>
#include <memory>

#include "aot_emit.h"
#include "elementwise.h"
#include "int8_conv.h"
#include "op_util.h"

namespace weft::ops {
namespace {

bool IsQuantType(DataType t) { return t == DT_INT8 || t == DT_UINT8 || t == DT_INT16 || t == DT_UINT16 || t == DT_INT32; }

// The value at element i of an integer tensor of type t, widened.
int64_t IntAt(const Tensor* t, int64_t i) {
  switch (t->GetDataType()) {
    case DT_INT8: return t->GetData<int8_t>()[i];
    case DT_UINT8: return t->GetData<uint8_t>()[i];
    case DT_INT16: return t->GetData<int16_t>()[i];
    case DT_UINT16: return t->GetData<uint16_t>()[i];
    case DT_INT32: return t->GetData<int32_t>()[i];
    default: return 0;
  }
}

void IntRange(DataType t, int64_t* lo, int64_t* hi) {
  switch (t) {
    case DT_INT8: *lo = -128, *hi = 127; return;
    case DT_UINT8: *lo = 0, *hi = 255; return;
    case DT_INT16: *lo = -32768, *hi = 32767; return;
    case DT_UINT16: *lo = 0, *hi = 65535; return;
    default: *lo = std::numeric_limits<int32_t>::min(), *hi = std::numeric_limits<int32_t>::max(); return;
  }
}

void StoreInt(Tensor* t, int64_t i, int64_t v) {
  switch (t->GetDataType()) {
    case DT_INT8: t->GetData<int8_t>()[i] = static_cast<int8_t>(v); return;
    case DT_UINT8: t->GetData<uint8_t>()[i] = static_cast<uint8_t>(v); return;
    case DT_INT16: t->GetData<int16_t>()[i] = static_cast<int16_t>(v); return;
    case DT_UINT16: t->GetData<uint16_t>()[i] = static_cast<uint16_t>(v); return;
    default: t->GetData<int32_t>()[i] = static_cast<int32_t>(v); return;
  }
}

float FloatAt(const Tensor* t, int64_t i) {
  switch (t->GetDataType()) {
    case DT_FLOAT: return t->GetData<float>()[i];
    case DT_FLOAT16: return float16::ToFloat(t->GetData<uint16_t>()[i]);
    case DT_DOUBLE: return static_cast<float>(t->GetData<double>()[i]);
    default: return static_cast<float>(IntAt(t, i));
  }
}

// How scale and zero point apply to x: per tensor (count 1), per index along `axis` (`inner`
// elements share an index, `count` indices), or per block of `block` indices along the axis
// (opset 21: the scale has x's shape but ceil(len / block) along the axis). Checks the scale and
// zero point shapes.
struct Grouping {
  int64_t count = 1, inner = 1;
  int64_t block = 0, len = 0;  // block-wise: the block size and x's length along the axis
  // Element i's scale (and zero point) index.
  int64_t Index(int64_t i) const {
    if (block) return ((i / (inner * len)) * count + ((i / inner) % len) / block) * inner + i % inner;
    return count == 1 ? 0 : (i / inner) % count;
  }
};
bool Group(const KernelContextBase* ctx, const Shape& x, const Shape& scale, const Shape* zp, Grouping* g) {
  const int64_t* bs = ctx->GetAttrs()->GetInt("block_size");
  if (bs && *bs != 0) {
    if (*bs < 0) return Fail(ctx, "block_size " + std::to_string(*bs) + " must be positive"), false;
    const int64_t* a = ctx->GetAttrs()->GetInt("axis");
    const int64_t rank = static_cast<int64_t>(x.GetDimNum());
    int64_t axis;
    if (!NormalizeAxis(a ? *a : 1, rank, &axis)) return Fail(ctx, AxisError(a ? *a : 1, rank)), false;
    if (zp && *zp != scale) return Fail(ctx, "the zero point " + zp->ToString() + " must have the scale's shape " + scale.ToString()), false;
    bool fits = static_cast<int64_t>(scale.GetDimNum()) == rank;
    for (int64_t d = 0; fits && d < rank; ++d) {
      const int64_t n = x.GetDim(static_cast<size_t>(d)), m = scale.GetDim(static_cast<size_t>(d));
      if (n < 0 || m < 0) continue;
      fits = d == axis ? m == (n + *bs - 1) / *bs : m == n;
    }
    if (!fits)
      return Fail(ctx, "with block_size " + std::to_string(*bs) + " the scale " + scale.ToString() + " must have the shape of " + x.ToString() +
                           " but ceil(length / block_size) along axis " + std::to_string(axis)),
             false;
    g->block = *bs;
    g->len = x.GetDim(static_cast<size_t>(axis));
    g->count = scale.GetDim(static_cast<size_t>(axis));
    g->inner = 1;
    for (int64_t d = axis + 1; d < rank; ++d) g->inner *= x.GetDim(static_cast<size_t>(d));
    return true;
  }
  // One value each in any of the per-tensor forms (a scalar zero point beside a [1] scale, as
  // quantizers write for biases) is per-tensor too.
  const bool one = scale.GetDimNum() <= 1 && scale.GetShapeSize() == 1 && (!zp || (zp->GetDimNum() <= 1 && zp->GetShapeSize() == 1));
  if (zp && *zp != scale && !one) return Fail(ctx, "the zero point " + zp->ToString() + " must have the scale's shape " + scale.ToString()), false;
  if (scale.GetDimNum() == 0 || (scale.GetDimNum() == 1 && scale.GetDim(0) == 1)) return true;
  if (scale.GetDimNum() != 1) return Fail(ctx, "the scale must be a scalar or 1-D, not " + scale.ToString()), false;
  const int64_t* a = ctx->GetAttrs()->GetInt("axis");
  int64_t axis;
  if (!NormalizeAxis(a ? *a : 1, static_cast<int64_t>(x.GetDimNum()), &axis))
    return Fail(ctx, AxisError(a ? *a : 1, static_cast<int64_t>(x.GetDimNum()))), false;
  if (x.GetDim(static_cast<size_t>(axis)) >= 0 && x.GetDim(static_cast<size_t>(axis)) != scale.GetDim(0))
    return Fail(ctx, "the scale has " + std::to_string(scale.GetDim(0)) + " values for axis " + std::to_string(axis) + " of " + x.ToString()),
           false;
  g->count = scale.GetDim(0);
  for (size_t k = static_cast<size_t>(axis) + 1; k < x.GetDimNum(); ++k) g->inner *= x.GetDim(k);
  return true;
}
bool Group(const KernelContextBase* ctx, const Tensor* x, const Tensor* scale, const Tensor* zp, Grouping* g) {
  return Group(ctx, x->GetShape(), scale->GetShape(), zp ? &zp->GetShape() : nullptr, g);
}

// Emitted C's index of element i's scale (and zero point).
std::string GroupIndex(const Grouping& g) {
  if (g.block) {
    const std::string I = aot::IntLit(g.inner), L = aot::IntLit(g.len);
    return "((i / (" + I + " * " + L + ")) * " + aot::IntLit(g.count) + " + ((i / " + I + ") % " + L + ") / " + aot::IntLit(g.block) + ") * " + I +
           " + i % " + I;
  }
  return g.count == 1 ? std::string("0") : "(i / " + aot::IntLit(g.inner) + ") % " + aot::IntLit(g.count);
}

// QuantizeLinear's output type: the zero point's, else output_dtype (opset 21), else uint8.
bool QuantizedType(const KernelContextBase* ctx, DataType* out) {
  const Tensor* zp = ctx->GetOptionalInputTensor(2);
  const DataType* od = ctx->GetAttrs()->GetDataType("output_dtype");
  const DataType want = od ? *od : DT_UNDEFINED;
  if (zp && want != DT_UNDEFINED && zp->GetDataType() != want)
    return Fail(ctx, std::string("output_dtype ") + DataTypeName(want) + " differs from the zero point's type " + DataTypeName(zp->GetDataType())), false;
  *out = zp ? zp->GetDataType() : want != DT_UNDEFINED ? want : DT_UINT8;
  if (!IsQuantType(*out) || *out == DT_INT32)
    return Fail(ctx, std::string("the output type ") + DataTypeName(*out) + " is not int8, uint8, int16 or uint16"), false;
  return true;
}


// Execute's arithmetic for float32 to 8 bits over one run of one scale: x / scale rounded half to
// even without a library call (adding and taking off 1.5 * 2^23 rounds |v| < 2^22; larger values
// clamp whatever their fraction), plus the zero point, clamped; NaN gives the zero point. Written
// without branches so that it vectorizes.
WEFT_ISA_CLONES void QuantizeRunS8(const float* x, int64_t n, float scale, float z, int8_t* y) {
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i] / scale;
    v = RoundHalfEvenSmall(v);
    v = std::min(std::max(v + z, -128.f), 127.f);
    y[i] = static_cast<int8_t>(static_cast<int32_t>(v == v ? v : z));
  }
}
WEFT_ISA_CLONES void QuantizeRunU8(const float* x, int64_t n, float scale, float z, uint8_t* y) {
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i] / scale;
    v = RoundHalfEvenSmall(v);
    v = std::min(std::max(v + z, 0.f), 255.f);
    y[i] = static_cast<uint8_t>(static_cast<int32_t>(v == v ? v : z));
  }
}
template <typename T>
void QuantizeRuns(EagerOpExecutionContext* ctx, const float* x, const float* s, const Tensor* zp, const Grouping& g, int64_t n, T* y) {
  const int64_t inner = g.count == 1 ? n : g.inner, runs = inner ? (n + inner - 1) / inner : 0;
  constexpr int64_t kChunk = 16384;  // long runs are split so that the threads share them
  const int64_t pieces = inner ? (inner + kChunk - 1) / kChunk : 0;
  ctx->ParallelFor(runs * pieces, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t run = r / pieces, q = g.count == 1 ? 0 : run % g.count;
      const int64_t i0 = run * inner + (r % pieces) * kChunk, i1 = std::min({n, run * inner + inner, i0 + kChunk});
      if (i1 <= i0) continue;
      const float z = static_cast<float>(zp ? IntAt(zp, q) : 0);
      if constexpr (std::is_same_v<T, int8_t>) QuantizeRunS8(x + i0, i1 - i0, s[q], z, y + i0);
      else QuantizeRunU8(x + i0, i1 - i0, s[q], z, y + i0);
    }
  });
}

// QuantizeLinear's and DequantizeLinear's layouts: with a per-tensor scale and zero point over a
// 4-D tensor they are elementwise maps, so the same in any layout the values around settle on (the
// pixel rows of 8-bit convolutions on both sides, for one). Channel-blocked padding is mapped like
// the rest.
class AnyLayoutPerTensor : public LayoutAwareOp, public CompilableOp, public RebuildOnLoad {
 public:
  graphStatus QueryLayout(OpQueryContext* ctx, LayoutSupport& s) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* sc = ctx->GetInputTensor(1);
    const Tensor* zp = ctx->GetOptionalInputTensor(2);
    if (x && sc && x->GetShape().GetDimNum() == 4 && !x->GetShape().IsUnknown() && sc->GetShapeSize() == 1 && (!zp || zp->GetShapeSize() == 1))
      s.Input(0).Output(0).AnyFormat();
    return GRAPH_SUCCESS;
  }
  graphStatus Compile(OpCompileContext* ctx) override {
    const DataType t = ctx->GetOutputTensor(0)->GetDataType();
    return SetPlannedOutputStorage(ctx, t == DT_FLOAT ? sizeof(float) : t == DT_INT16 || t == DT_UINT16 ? 2 : 1);
  }
};

class QuantizeLinear : public EagerExecuteOp, public ShapeInferOp, public EmittableOp, public AnyLayoutPerTensor {
 public:
  // The runtime's arithmetic in C99: float division, nearbyintf (the default rounding: half to
  // even), the zero point added in double, clamped; a scale that is not positive fails the run.
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* s = ctx->GetInputTensor(1);
    const Tensor* zp = ctx->GetOptionalInputTensor(2);
    Grouping g;
    if (!Group(ctx, x, s, zp, &g)) return GRAPH_FAILED;
    if (x->GetDataType() != DT_FLOAT || s->GetDataType() != DT_FLOAT) return Fail(ctx, "the generated C takes a float32 input and scale");
    DataType yt;
    if (!QuantizedType(ctx, &yt)) return GRAPH_FAILED;
    const std::string ct = aot::CType(yt);
    int64_t lo, hi;
    IntRange(yt, &lo, &hi);
    ctx->Include("<math.h>");
    std::string r = "{\n  const float* in = " + ctx->Input(0, "float") + ";\n  const float* sc = " + ctx->Input(1, "float") + ";\n  " + ct +
                    "* out = " + ctx->Output(0, ct.c_str()) + ";\n  int64_t i;\n";
    r += "  for (i = 0; i < " + aot::IntLit(s->GetShapeSize()) + "; ++i)\n    if (!(sc[i] > 0.f)) return 1;\n";
    r += "  for (i = 0; i < " + aot::IntLit(x->GetShapeSize()) + "; ++i) {\n    const int64_t q = " + GroupIndex(g) + ";\n";
    r += "    const double z = " + (zp ? "(double)" + ctx->Input(2, ct.c_str()) + "[q]" : std::string("0.0")) + ";\n";
    r += "    const float v = nearbyintf(in[i] / sc[q]);\n    double d = (double)v + z;\n";
    const std::string dlo = "(double)" + aot::IntLit(lo), dhi = "(double)" + aot::IntLit(hi);
    r += "    if (v != v) d = z;\n    out[i] = (" + ct + ")(d < " + dlo + " ? " + dlo + " : d > " + dhi + " ? " + dhi + " : d);\n  }\n}\n";
    ctx->Run(r);
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    Grouping g;
    if (!Group(ctx, *ctx->GetInputShape(0), *ctx->GetInputShape(1), ctx->GetOptionalInputShape(2), &g)) return GRAPH_FAILED;
    *ctx->GetOutputShape(0) = *ctx->GetInputShape(0);
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    DataType t;
    if (!QuantizedType(ctx, &t)) return GRAPH_FAILED;
    return ctx->SetOutputDataType(0, t);
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* s = ctx->GetInputTensor(1);
    const Tensor* zp = ctx->GetOptionalInputTensor(2);
    Grouping g;
    if (!Group(ctx, x, s, zp, &g)) return GRAPH_FAILED;
    DataType yt;
    if (!QuantizedType(ctx, &yt)) return GRAPH_FAILED;
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), yt);
    if (!y) return GRAPH_FAILED;
    int64_t lo, hi;
    IntRange(y->GetDataType(), &lo, &hi);
    const int64_t n = PlannedElements(x);
    for (int64_t q = 0; q < s->GetShapeSize(); ++q) {
      const float scale = FloatAt(s, q);
      // An infinite scale (calibration over values that overflow writes one) maps every finite value
      // to the zero point, as x / inf = 0 does.
      if (!(scale > 0.f)) return Fail(ctx, "scale " + std::to_string(q) + " is " + std::to_string(scale) + "; it must be positive");
    }
    if (!g.block && x->GetDataType() == DT_FLOAT && s->GetDataType() == DT_FLOAT && (y->GetDataType() == DT_INT8 || y->GetDataType() == DT_UINT8)) {
      if (y->GetDataType() == DT_INT8) QuantizeRuns(ctx, x->GetData<float>(), s->GetData<float>(), zp, g, n, y->GetData<int8_t>());
      else QuantizeRuns(ctx, x->GetData<float>(), s->GetData<float>(), zp, g, n, y->GetData<uint8_t>());
      return GRAPH_SUCCESS;
    }
    for (int64_t i = 0; i < n; ++i) {
      const int64_t q = g.Index(i);
      const float v = std::nearbyint(FloatAt(x, i) / FloatAt(s, q));  // the default rounding: half to even
      const double r = static_cast<double>(v) + static_cast<double>(zp ? IntAt(zp, q) : 0);
      StoreInt(y, i, std::isnan(v) ? (zp ? IntAt(zp, q) : 0) : static_cast<int64_t>(std::min<double>(std::max<double>(r, lo), hi)));
    }
    return GRAPH_SUCCESS;
  }
};

class DequantizeLinear : public EagerExecuteOp, public ShapeInferOp, public EmittableOp, public AnyLayoutPerTensor {
 public:
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* s = ctx->GetInputTensor(1);
    const Tensor* zp = ctx->GetOptionalInputTensor(2);
    Grouping g;
    if (!Group(ctx, x, s, zp, &g)) return GRAPH_FAILED;
    if (s->GetDataType() != DT_FLOAT) return Fail(ctx, "the generated C takes a float32 scale");
    const std::string ct = aot::CType(x->GetDataType());
    if (ct.empty()) return Fail(ctx, std::string("the generated C has no ") + DataTypeName(x->GetDataType()) + " input");
    std::string r = "{\n  const " + ct + "* in = " + ctx->Input(0, ct.c_str()) + ";\n  const float* sc = " + ctx->Input(1, "float") +
                    ";\n  float* out = " + ctx->Output(0, "float") + ";\n  int64_t i;\n";
    r += "  for (i = 0; i < " + aot::IntLit(x->GetShapeSize()) + "; ++i) {\n    const int64_t q = " + GroupIndex(g) + ";\n";
    r += "    out[i] = (float)((int64_t)in[i] - " + (zp ? "(int64_t)" + ctx->Input(2, ct.c_str()) + "[q]" : std::string("0")) + ") * sc[q];\n  }\n}\n";
    ctx->Run(r);
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    Grouping g;
    if (!Group(ctx, *ctx->GetInputShape(0), *ctx->GetInputShape(1), ctx->GetOptionalInputShape(2), &g)) return GRAPH_FAILED;
    *ctx->GetOutputShape(0) = *ctx->GetInputShape(0);
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    const DataType x = ctx->GetInputDataType(0), s = ctx->GetInputDataType(1);
    if (!IsQuantType(x)) return Fail(ctx, std::string("the input's type ") + DataTypeName(x) + " is not an integer type it dequantizes");
    const Tensor* zp = ctx->GetOptionalInputTensor(2);
    if (zp && zp->GetDataType() != x) return Fail(ctx, "the zero point's type must be the input's");
    return ctx->SetOutputDataType(0, s);
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* s = ctx->GetInputTensor(1);
    const Tensor* zp = ctx->GetOptionalInputTensor(2);
    Grouping g;
    if (!Group(ctx, x, s, zp, &g)) return GRAPH_FAILED;
    if (s->GetDataType() != DT_FLOAT) return Fail(ctx, std::string("a ") + DataTypeName(s->GetDataType()) + " scale is not supported (float32 is)");
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), DT_FLOAT);
    if (!y) return GRAPH_FAILED;
    const int64_t n = PlannedElements(x);
    float* py = y->GetData<float>();
    if (!g.block && (x->GetDataType() == DT_INT8 || x->GetDataType() == DT_UINT8)) {  // the same, run by run of one scale
      const int64_t inner = g.count == 1 ? n : g.inner, runs = inner ? (n + inner - 1) / inner : 0;
      ctx->ParallelFor(runs, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, inner)), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t q = g.count == 1 ? 0 : r % g.count, i0 = r * inner, i1 = std::min(n, i0 + inner);
          const int32_t z = static_cast<int32_t>(zp ? IntAt(zp, q) : 0);
          const float scale = s->GetData<float>()[q];
          if (x->GetDataType() == DT_INT8) {
            const int8_t* px = x->GetData<int8_t>();
            for (int64_t i = i0; i < i1; ++i) py[i] = static_cast<float>(px[i] - z) * scale;
          } else {
            const uint8_t* px = x->GetData<uint8_t>();
            for (int64_t i = i0; i < i1; ++i) py[i] = static_cast<float>(px[i] - z) * scale;
          }
        }
      });
      return GRAPH_SUCCESS;
    }
    for (int64_t i = 0; i < n; ++i) {
      const int64_t q = g.Index(i);
      py[i] = static_cast<float>(IntAt(x, i) - (zp ? IntAt(zp, q) : 0)) * s->GetData<float>()[q];
    }
    return GRAPH_SUCCESS;
  }
};

// y (uint8), y_scale and y_zero_point from x's range widened to hold 0, over 255 steps.
// min(0, x), max(0, x) and whether every x is finite, in 16 lanes so that it vectorizes (any order
// gives the same min and max of finite values; a lane replaces its value only with a smaller or
// larger one, as std::min/max do).
#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's AVX-512 headers start results undefined
// The same on AVX-512: vminps/vmaxps keep their second operand unless the first is smaller (larger).
__attribute__((target("avx512f"))) void RangeWithZero512(const float* px, int64_t n, float* mn, float* mx, bool* finite) {
  __m512 lo = _mm512_setzero_ps(), hi = lo;
  const __m512 big = _mm512_set1_ps(std::numeric_limits<float>::max());
  __mmask16 bad = 0;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(px + i);
    bad |= _mm512_cmp_ps_mask(_mm512_abs_ps(v), big, _CMP_NLE_UQ);  // infinite or NaN
    lo = _mm512_min_ps(v, lo);
    hi = _mm512_max_ps(v, hi);
  }
  alignas(64) float l[16], h[16];
  _mm512_store_ps(l, lo);
  _mm512_store_ps(h, hi);
  for (int k = 0; k < 16; ++k) *mn = std::min(*mn, l[k]), *mx = std::max(*mx, h[k]);
  for (; i < n; ++i) {
    *finite = *finite && std::fabs(px[i]) <= std::numeric_limits<float>::max();
    *mn = std::min(*mn, px[i]);
    *mx = std::max(*mx, px[i]);
  }
  *finite = *finite && bad == 0;
}
#pragma GCC diagnostic pop
#endif
WEFT_ISA_CLONES void RangeWithZero(const float* px, int64_t n, float* mn, float* mx, bool* finite) {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  if (avx512) return RangeWithZero512(px, n, mn, mx, finite);
#endif
  float lo[16] = {}, hi[16] = {};
  int ok[16];
  std::fill(ok, ok + 16, 1);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int l = 0; l < 16; ++l) {
      const float v = px[i + l];
      ok[l] &= std::fabs(v) <= std::numeric_limits<float>::max();
      lo[l] = v < lo[l] ? v : lo[l];
      hi[l] = v > hi[l] ? v : hi[l];
    }
  for (; i < n; ++i) {
    ok[0] &= std::fabs(px[i]) <= std::numeric_limits<float>::max();
    lo[0] = std::min(lo[0], px[i]);
    hi[0] = std::max(hi[0], px[i]);
  }
  for (int l = 0; l < 16; ++l) *mn = std::min(*mn, lo[l]), *mx = std::max(*mx, hi[l]), *finite = *finite && ok[l];
}
// x / scale rounded half to even (as QuantizeRuns: |v| >= 2^22 clamps whatever its fraction),
// plus the zero point, clamped to uint8.
WEFT_ISA_CLONES void QuantizeToUint8(const float* px, int64_t n, float scale, float zpf, uint8_t* py) {
  for (int64_t i = 0; i < n; ++i) {
    float v = px[i] / scale;
    v = RoundHalfEvenSmall(v);
    py[i] = static_cast<uint8_t>(static_cast<int32_t>(std::min(std::max(v + zpf, 0.f), 255.f)));
  }
}

class DynamicQuantizeLinear : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    ctx->Include("<math.h>");
    std::string r = "{\n  const float* in = " + ctx->Input(0, "float") + ";\n  uint8_t* y = " + ctx->Output(0, "uint8_t") +
                    ";\n  float* ys = " + ctx->Output(1, "float") + ";\n  uint8_t* yz = " + ctx->Output(2, "uint8_t") +
                    ";\n  float mn = 0.f, mx = 0.f, scale, zpf, v;\n  int64_t i;\n";
    r += "  for (i = 0; i < " + aot::IntLit(x->GetShapeSize()) + "; ++i) {\n    if (!(in[i] == in[i]) || in[i] > 3.402823466e38f || in[i] < -3.402823466e38f) return 1;\n";
    r += "    mn = in[i] < mn ? in[i] : mn;\n    mx = in[i] > mx ? in[i] : mx;\n  }\n";
    r += "  scale = mx == mn ? 1.f : (mx - mn) / 255.f;\n  zpf = 0.f - mn / scale;\n  zpf = nearbyintf(zpf < 0.f ? 0.f : zpf > 255.f ? 255.f : zpf);\n";
    r += "  ys[0] = scale;\n  yz[0] = (uint8_t)zpf;\n";
    r += "  for (i = 0; i < " + aot::IntLit(x->GetShapeSize()) + "; ++i) {\n    v = nearbyintf(in[i] / scale) + zpf;\n";
    r += "    y[i] = (uint8_t)(v < 0.f ? 0.f : v > 255.f ? 255.f : v);\n  }\n}\n";
    ctx->Run(r);
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    *ctx->GetOutputShape(0) = *ctx->GetInputShape(0);
    *ctx->GetOutputShape(1) = Shape();
    *ctx->GetOutputShape(2) = Shape();
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    if (ctx->GetInputDataType(0) != DT_FLOAT) return Fail(ctx, "the input must be float32");
    ctx->SetOutputDataType(0, DT_UINT8);
    ctx->SetOutputDataType(1, DT_FLOAT);
    return ctx->SetOutputDataType(2, DT_UINT8);
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), DT_UINT8);
    Tensor* ys = ctx->MallocOutputTensor(1, Shape(), DT_FLOAT);
    Tensor* yz = ctx->MallocOutputTensor(2, Shape(), DT_UINT8);
    if (!y || !ys || !yz) return GRAPH_FAILED;
    const int64_t n = x->GetShapeSize();
    const float* px = x->GetData<float>();
    if (int64_t bad = DynamicQuantizeUint8(px, n, y->GetData<uint8_t>(), ys->GetData<float>(), yz->GetData<uint8_t>()); bad >= 0)
      return Fail(ctx, "the input holds " + std::to_string(px[bad]) + " at element " + std::to_string(bad) + "; it must be finite");
    return GRAPH_SUCCESS;
  }
};

// (A - a_zero_point) x (B - b_zero_point) with int32 sums, NumPy's matmul shapes. Zero points:
// scalars, or a_zero_point per row of A ([M]) and b_zero_point per column of B ([N]).
struct IntMatMul {
  static constexpr int64_t kFastMacs = 4096;
  int64_t m = 0, k = 0, n = 0;
  Shape out, batch, a_batch, b_batch;
  bool Plan(const KernelContextBase* ctx, const Shape& a, const Shape& b) {
    if (a.GetDimNum() == 0 || b.GetDimNum() == 0) return Fail(ctx, "operands must have rank >= 1, got " + a.ToString() + " and " + b.ToString()), false;
    const size_t ra = a.GetDimNum(), rb = b.GetDimNum();
    m = ra == 1 ? 1 : a.GetDim(ra - 2);
    k = a.GetDim(ra - 1);
    const int64_t kb = rb == 1 ? b.GetDim(0) : b.GetDim(rb - 2);
    n = rb == 1 ? 1 : b.GetDim(rb - 1);
    if (k >= 0 && kb >= 0 && k != kb) return Fail(ctx, "inner dimensions differ: A " + a.ToString() + ", B " + b.ToString()), false;
    a_batch = Shape(), b_batch = Shape();
    for (size_t d = 0; d + 2 < ra; ++d) a_batch.AppendDim(a.GetDim(d));
    for (size_t d = 0; d + 2 < rb; ++d) b_batch.AppendDim(b.GetDim(d));
    if (!BroadcastShape(a_batch, b_batch, &batch)) return Fail(ctx, "batch dims of " + a.ToString() + " and " + b.ToString() + " do not broadcast"), false;
    out = batch;
    if (ra != 1) out.AppendDim(m);
    if (rb != 1) out.AppendDim(n);
    return true;
  }
  // B laid out for RunFast ahead of the run (a constant B without batch dims): its columns as rows
  // of int8 values (uint8 ones less 128) and their sums.
  struct PackedB {
    std::vector<int8_t> rows;  // [n][k]
    std::vector<int32_t> sums;
    std::shared_ptr<const Int8PackedB> kernel;  // the rows as the kernel takes them, where it packs them
    bool ready = false;
  };
  static void PackB(const Tensor* b, int64_t k, int64_t n, int64_t ib, int8_t* rows, int32_t* sums) {
    const auto* pb = static_cast<const uint8_t*>(b->GetAddr()) + ib * k * n;
    const uint8_t flip = b->GetDataType() == DT_UINT8 ? 0x80 : 0;
    for (int64_t j = 0; j < n; ++j) sums[j] = 0;
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j) {
        const auto v = static_cast<int8_t>(pb[p * n + j] ^ flip);
        rows[j * k + p] = v;
        sums[j] += v;
      }
  }
  // One batch's sums through Int8GemmSums on int8 operands (uint8 values and zero points less 128):
  // with per-row zero points za and per-column ones zb, sum (a - za)(b - zb) = sum ab - za * colsum(b)
  // - zb * rowsum(a) + k * za * zb, all modulo 2^32 as the wrapped int64 sums are.
  bool RunFast(EagerOpExecutionContext* ctx, const Tensor* a, const Tensor* b, const Tensor* azp, const Tensor* bzp, int64_t ia, int64_t ib,
               const PackedB* pre, int32_t* c) const {
    const int64_t sa = a->GetDataType() == DT_UINT8 ? 128 : 0, sb = b->GetDataType() == DT_UINT8 ? 128 : 0;
    auto* a8 = static_cast<int8_t*>(ctx->MallocWorkSpace(static_cast<size_t>(m * k)));
    auto* rs = static_cast<int32_t*>(ctx->MallocWorkSpace(static_cast<size_t>(m) * sizeof(int32_t)));
    int8_t* b8 = pre ? nullptr : static_cast<int8_t*>(ctx->MallocWorkSpace(static_cast<size_t>(n * k)));
    int32_t* cs = pre ? nullptr : static_cast<int32_t*>(ctx->MallocWorkSpace(static_cast<size_t>(n) * sizeof(int32_t)));
    if (!a8 || !rs || (!pre && (!b8 || !cs))) return false;
    const auto* pa = static_cast<const uint8_t*>(a->GetAddr()) + ia * m * k;
    const uint8_t flip = sa ? 0x80 : 0;
    ctx->ParallelFor(m, 16, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        int32_t sum = 0;
        for (int64_t p = 0; p < k; ++p) sum += (a8[i * k + p] = static_cast<int8_t>(pa[i * k + p] ^ flip));
        rs[i] = sum;
      }
    });
    if (!pre) PackB(b, k, n, ib, b8, cs);
    const int8_t* rows = pre ? pre->rows.data() : b8;
    const int32_t* colsum = pre ? pre->sums.data() : cs;
    if (!Int8GemmSums(ctx, m, n, k, a8, 0, rows, c, pre ? pre->kernel.get() : nullptr)) return false;
    const bool za_row = azp && azp->GetShapeSize() != 1, zb_col = bzp && bzp->GetShapeSize() != 1;
    auto za = [&](int64_t i) { return static_cast<uint32_t>((azp ? IntAt(azp, za_row ? i : 0) : 0) - sa); };
    auto zb = [&](int64_t j) { return static_cast<uint32_t>((bzp ? IntAt(bzp, zb_col ? j : 0) : 0) - sb); };
    std::vector<uint32_t> zbs(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) zbs[static_cast<size_t>(j)] = zb(j);
    const uint32_t ku = static_cast<uint32_t>(k);
    ctx->ParallelFor(m, 16, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const uint32_t zai = za(i), r = static_cast<uint32_t>(rs[i]);
        auto* row = reinterpret_cast<uint32_t*>(c + i * n);
        for (int64_t j = 0; j < n; ++j) {
          const uint32_t zbj = zbs[static_cast<size_t>(j)];
          row[j] = row[j] - zai * static_cast<uint32_t>(colsum[j]) - zbj * r + ku * zai * zbj;
        }
      }
    });
    return true;
  }
  // Sums into acc ([batch][m][n] int32); zp tensors may be null. `fast`: the context to run
  // Int8GemmSums in, when it is there (and the matrices are large enough to repay the layout).
  bool Run(const KernelContextBase* ctx, const Tensor* a, const Tensor* b, const Tensor* azp, const Tensor* bzp, int32_t* acc,
           EagerOpExecutionContext* fast = nullptr, const PackedB* pre = nullptr) const {
    if (!Int8GemmSums || m * n * k < kFastMacs) fast = nullptr;
    if (pre && (!pre->ready || b_batch.GetShapeSize() != 1 ||
                pre->rows.size() != static_cast<size_t>(n * k)))
      pre = nullptr;
    auto zp_count = [&](const Tensor* z, int64_t per, const char* what) -> bool {
      if (!z) return true;
      const int64_t c = z->GetShapeSize();
      if (c == 1 || (z->GetShape().GetDimNum() == 1 && c == per)) return true;
      return Fail(ctx, std::string(what) + " " + z->GetShape().ToString() + " must be a scalar or hold one value per " +
                           (what[0] == 'a' ? "row of A (" : "column of B (") + std::to_string(per) + ")"),
             false;
    };
    if (!zp_count(azp, m, "a_zero_point") || !zp_count(bzp, n, "b_zero_point")) return false;
    const int64_t batches = batch.GetShapeSize();
    int64_t as[WEFT_MAX_DIMS], bs[WEFT_MAX_DIMS];
    const size_t rank = batch.GetDimNum();
    {  // each operand's batch strides in units of whole matrices, 0 where it broadcasts
      int64_t sa = 1, sb = 1;
      for (size_t d = rank; d-- > 0;) {
        const size_t oa = d + a_batch.GetDimNum() - rank, ob = d + b_batch.GetDimNum() - rank;
        const int64_t da = d + a_batch.GetDimNum() >= rank ? a_batch.GetDim(oa) : 1, db = d + b_batch.GetDimNum() >= rank ? b_batch.GetDim(ob) : 1;
        as[d] = da == 1 ? 0 : sa;
        bs[d] = db == 1 ? 0 : sb;
        sa *= da;
        sb *= db;
      }
    }
    for (int64_t bi = 0; bi < batches; ++bi) {
      int64_t ia = 0, ib = 0, rest = bi;
      for (size_t d = rank; d-- > 0;) {
        const int64_t at = rest % batch.GetDim(d);
        rest /= batch.GetDim(d);
        ia += at * as[d];
        ib += at * bs[d];
      }
      int32_t* c = acc + bi * m * n;
      if (fast) {
        if (!RunFast(fast, a, b, azp, bzp, ia, ib, pre, c)) return false;
        continue;
      }
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          const int64_t za = azp ? IntAt(azp, azp->GetShapeSize() == 1 ? 0 : i) : 0, zb = bzp ? IntAt(bzp, bzp->GetShapeSize() == 1 ? 0 : j) : 0;
          int64_t sum = 0;
          for (int64_t p = 0; p < k; ++p) sum += (IntAt(a, ia * m * k + i * k + p) - za) * (IntAt(b, ib * k * n + p * n + j) - zb);
          c[i * n + j] = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(sum)));
        }
    }
    return true;
  }
};

bool Is8Bit(DataType t) { return t == DT_INT8 || t == DT_UINT8; }

// C for IntMatMul::Run's sums, in the same order, each product's int32 value as `sum32`, followed
// by `store` (C statements using sum32, the output index `at` and the column j). Offsets of each
// batch's matrices are constants.
std::string EmitIntMatMul(EmitContext* ctx, const IntMatMul& p, size_t ia, size_t ib, size_t iaz, size_t ibz, const Tensor* a,
                          const Tensor* b, const Tensor* azp, const Tensor* bzp, const std::string& store) {
  const std::string ta = aot::CType(a->GetDataType()), tb = aot::CType(b->GetDataType());
  const int64_t batches = p.batch.GetShapeSize(), rank = static_cast<int64_t>(p.batch.GetDimNum());
  std::vector<int64_t> ao(static_cast<size_t>(std::max<int64_t>(batches, 1))), bo(ao.size());
  int64_t as[WEFT_MAX_DIMS], bs[WEFT_MAX_DIMS];
  {
    int64_t sa = 1, sb = 1;
    for (int64_t d = rank; d-- > 0;) {
      const int64_t ra = static_cast<int64_t>(p.a_batch.GetDimNum()), rb = static_cast<int64_t>(p.b_batch.GetDimNum());
      const int64_t da = d + ra >= rank ? p.a_batch.GetDim(static_cast<size_t>(d + ra - rank)) : 1;
      const int64_t db = d + rb >= rank ? p.b_batch.GetDim(static_cast<size_t>(d + rb - rank)) : 1;
      as[d] = da == 1 ? 0 : sa, bs[d] = db == 1 ? 0 : sb;
      sa *= da, sb *= db;
    }
  }
  for (int64_t bi = 0; bi < batches; ++bi) {
    int64_t ia_ = 0, ib_ = 0, rest = bi;
    for (int64_t d = rank; d-- > 0;) {
      const int64_t at = rest % p.batch.GetDim(static_cast<size_t>(d));
      rest /= p.batch.GetDim(static_cast<size_t>(d));
      ia_ += at * as[d], ib_ += at * bs[d];
    }
    ao[static_cast<size_t>(bi)] = ia_ * p.m * p.k, bo[static_cast<size_t>(bi)] = ib_ * p.k * p.n;
  }
  const std::string cao = ctx->Const("a_offsets", DT_INT64, ao), cbo = ctx->Const("b_offsets", DT_INT64, bo);
  std::string za = "0", zb = "0";
  if (azp) za = "(int64_t)" + ctx->Input(iaz, aot::CType(azp->GetDataType()).c_str()) + (azp->GetShapeSize() == 1 ? "[0]" : "[i]");
  if (bzp) zb = "(int64_t)" + ctx->Input(ibz, aot::CType(bzp->GetDataType()).c_str()) + (bzp->GetShapeSize() == 1 ? "[0]" : "[j]");
  std::string r = "  const " + ta + "* A = " + ctx->Input(ia, ta.c_str()) + ";\n  const " + tb + "* B = " + ctx->Input(ib, tb.c_str()) +
                  ";\n  int64_t bi, i, j, q;\n";
  r += "  for (bi = 0; bi < " + aot::IntLit(batches) + "; ++bi)\n    for (i = 0; i < " + aot::IntLit(p.m) + "; ++i)\n      for (j = 0; j < " +
       aot::IntLit(p.n) + "; ++j) {\n";
  r += "        const int64_t za = " + za + ", zb = " + zb + ", at = (bi * " + aot::IntLit(p.m) + " + i) * " + aot::IntLit(p.n) + " + j;\n";
  r += "        int64_t sum = 0;\n        int32_t sum32;\n";
  r += "        for (q = 0; q < " + aot::IntLit(p.k) + "; ++q)\n          sum += ((int64_t)A[" + cao + "[bi] + i * " + aot::IntLit(p.k) +
       " + q] - za) * ((int64_t)B[" + cbo + "[bi] + q * " + aot::IntLit(p.n) + " + j] - zb);\n";
  r += "        sum32 = (int32_t)(uint32_t)(uint64_t)sum;\n" + store + "      }\n";
  return r;
}

// A constant 2-D B laid out for IntMatMul::RunFast at compile time (again when a model file loads).
graphStatus PackConstantB(OpCompileContext* ctx, size_t ib, IntMatMul::PackedB* packed) {
  *packed = IntMatMul::PackedB();
  const Tensor* b = ctx->GetInputTensor(ib);
  if (!Int8GemmSums || !b || !b->GetAddr() || b->GetShape().GetDimNum() != 2 || !Is8Bit(b->GetDataType())) return GRAPH_SUCCESS;
  const int64_t k = b->GetShape().GetDim(0), n = b->GetShape().GetDim(1);
  if (k <= 0 || n <= 0) return GRAPH_SUCCESS;
  packed->rows.resize(static_cast<size_t>(k * n));
  packed->sums.resize(static_cast<size_t>(n));
  IntMatMul::PackB(b, k, n, 0, packed->rows.data(), packed->sums.data());
  if (Int8PackB) packed->kernel = Int8PackB(packed->rows.data(), n, k);
  packed->ready = true;
  return GRAPH_SUCCESS;
}

class MatMulInteger : public EagerExecuteOp, public ShapeInferOp, public EmittableOp, public CompilableOp, public RebuildOnLoad {
 public:
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* a = ctx->GetInputTensor(0);
    const Tensor* b = ctx->GetInputTensor(1);
    const Tensor* azp = ctx->GetOptionalInputTensor(2);
    const Tensor* bzp = ctx->GetOptionalInputTensor(3);
    IntMatMul p;
    if (!p.Plan(ctx, a->GetShape(), b->GetShape())) return GRAPH_FAILED;
    if ((azp && azp->GetShapeSize() != 1 && azp->GetShapeSize() != p.m) || (bzp && bzp->GetShapeSize() != 1 && bzp->GetShapeSize() != p.n))
      return Fail(ctx, "a zero point must be a scalar or hold one value per row of A / column of B");
    const size_t iaz = azp ? 2 : 0, ibz = bzp ? (azp ? 3 : 2) : 0;
    ctx->Run("{\n  int32_t* Y = " + ctx->Output(0, "int32_t") + ";\n" +
             EmitIntMatMul(ctx, p, 0, 1, iaz, ibz, a, b, azp, bzp, "        Y[at] = sum32;\n") + "}\n");
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    IntMatMul p;
    if (!p.Plan(ctx, *ctx->GetInputShape(0), *ctx->GetInputShape(1))) return GRAPH_FAILED;
    *ctx->GetOutputShape(0) = p.out;
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    if (!Is8Bit(ctx->GetInputDataType(0)) || !Is8Bit(ctx->GetInputDataType(1))) return Fail(ctx, "A and B must be int8 or uint8");
    return ctx->SetOutputDataType(0, DT_INT32);
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* a = ctx->GetInputTensor(0);
    const Tensor* b = ctx->GetInputTensor(1);
    IntMatMul p;
    if (!p.Plan(ctx, a->GetShape(), b->GetShape())) return GRAPH_FAILED;
    Tensor* y = ctx->MallocOutputTensor(0, p.out, DT_INT32);
    if (!y) return GRAPH_FAILED;
    return p.Run(ctx, a, b, ctx->GetOptionalInputTensor(2), ctx->GetOptionalInputTensor(3), y->GetData<int32_t>(), ctx, &packed_) ? GRAPH_SUCCESS
                                                                                                                                : GRAPH_FAILED;
  }
  graphStatus Compile(OpCompileContext* ctx) override { return PackConstantB(ctx, 1, &packed_); }

 private:
  IntMatMul::PackedB packed_;
};

// rows x cols int32 sums to 8 bits: sum * scale[col] rounded half to even (as QuantizeRuns: |v| >=
// 2^22 clamps whatever its fraction), plus zp, clamped to [lo, hi].
template <typename T>
WEFT_ISA_CLONES void RequantizeRows(const int32_t* acc, int64_t rows, int64_t cols, const float* scale, float zp, float lo, float hi, T* out) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      float v = static_cast<float>(acc[r * cols + j]) * scale[j];
      v = RoundHalfEvenSmall(v);
      out[r * cols + j] = static_cast<T>(static_cast<int32_t>(std::min(std::max(v + zp, lo), hi)));
    }
}

// The operands of the one-pass int8 GEMM (Int8GemmRescaled, Int8GemmFloat), where it applies: B the
// constant int8 matrix PackConstantB laid out, its zero points 0; a_zero_point one value or none;
// every row of A (its batch dims too) one row of the product; enough work to repay it. *a8 and
// *a_zp: A as int8 (uint8 values and zero point less 128, in workspace). False where it does not
// apply, or when the workspace cannot be had.
bool FusedGemmOperands(EagerOpExecutionContext* ctx, const IntMatMul& p, const IntMatMul::PackedB& packed, const Tensor* a, const Tensor* b,
                       const Tensor* azp, const Tensor* bzp, const int8_t** a8, int32_t* a_zp, int64_t* rows) {
  if (!packed.ready || !packed.kernel || b->GetDataType() != DT_INT8 || p.b_batch.GetShapeSize() != 1 ||
      packed.rows.size() != static_cast<size_t>(p.n * p.k) || (azp && azp->GetShapeSize() != 1) || a->GetShape().GetDimNum() < 2 ||
      p.m * p.n * p.k < IntMatMul::kFastMacs)
    return false;
  for (int64_t j = 0; bzp && j < bzp->GetShapeSize(); ++j)
    if (IntAt(bzp, j) != 0) return false;
  *rows = a->GetShapeSize() / p.k;
  *a8 = a->GetData<int8_t>();
  *a_zp = azp ? static_cast<int32_t>(IntAt(azp, 0)) : 0;
  if (a->GetDataType() == DT_UINT8) {  // the kernels take int8: values and zero point less 128
    const int64_t total = *rows * p.k;
    auto* t = static_cast<int8_t*>(ctx->MallocWorkSpace(static_cast<size_t>(total)));
    if (!t) return false;
    const uint8_t* pa = a->GetData<uint8_t>();
    ctx->ParallelFor(total, 1 << 16, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) t[i] = static_cast<int8_t>(pa[i] ^ 0x80);
    });
    *a8 = t;
    *a_zp -= 128;
  }
  return true;
}

// a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point: the int32 product of
// the zero-point-free operands, times a_scale * b_scale / y_scale (float), rounded half to even,
// plus y_zero_point, saturated to y's type.
class QLinearMatMul : public EagerExecuteOp, public ShapeInferOp, public EmittableOp, public CompilableOp, public RebuildOnLoad {
 public:
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* a = ctx->GetInputTensor(0);
    const Tensor* b = ctx->GetInputTensor(3);
    const Tensor *as = ctx->GetInputTensor(1), *bs = ctx->GetInputTensor(4), *ys = ctx->GetInputTensor(6), *yz = ctx->GetInputTensor(7);
    (void)as, (void)ys;
    const Tensor *azp = ctx->GetInputTensor(2), *bzp = ctx->GetInputTensor(5);
    IntMatMul p;
    if (!p.Plan(ctx, a->GetShape(), b->GetShape())) return GRAPH_FAILED;
    if (!CheckScales(ctx, p)) return GRAPH_FAILED;
    for (const Tensor* t : {as, bs, ys})
      if (t->GetDataType() != DT_FLOAT) return Fail(ctx, "the generated C needs float32 scales");
    const bool per_column = bs->GetShapeSize() > 1;
    if ((azp->GetShapeSize() != 1 && azp->GetShapeSize() != p.m) || (bzp->GetShapeSize() != 1 && bzp->GetShapeSize() != p.n))
      return Fail(ctx, "a zero point must be a scalar or hold one value per row of a / column of b");
    const std::string ct = aot::CType(yz->GetDataType());
    int64_t lo, hi;
    IntRange(yz->GetDataType(), &lo, &hi);
    ctx->Include("<math.h>");
    // per column of b: the scale of the output's column (at % n)
    const std::string sc = per_column ? ctx->Input(1, "float") + "[0] * " + ctx->Input(4, "float") + "[at % " + aot::IntLit(p.n) + "] / " +
                                            ctx->Input(6, "float") + "[0]"
                                      : std::string("scale");
    std::string r = "{\n  " + ct + "* Y = " + ctx->Output(0, ct.c_str()) + ";\n  const float scale = " + ctx->Input(1, "float") + "[0] * " +
                    ctx->Input(4, "float") + "[0] / " + ctx->Input(6, "float") + "[0];\n  const float yz = (float)" + ctx->Input(7, ct.c_str()) +
                    "[0];\n  if (!(scale >= 0.f) || scale > 3.402823466e38f) return 1;\n";
    const std::string store = "        {\n          const float s = " + sc + ";\n          float v = nearbyintf((float)sum32 * s) + yz;\n          if (!(s >= 0.f) || s > 3.402823466e38f) return 1;\n          v = v < " + aot::IntLit(lo) + ".f ? " +
                              aot::IntLit(lo) + ".f : v > " + aot::IntLit(hi) + ".f ? " + aot::IntLit(hi) + ".f : v;\n          Y[at] = (" + ct +
                              ")v;\n        }\n";
    r += EmitIntMatMul(ctx, p, 0, 3, 2, 5, a, b, azp, bzp, store) + "}\n";
    ctx->Run(r);
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    IntMatMul p;
    if (!p.Plan(ctx, *ctx->GetInputShape(0), *ctx->GetInputShape(3))) return GRAPH_FAILED;
    *ctx->GetOutputShape(0) = p.out;
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    if (!Is8Bit(ctx->GetInputDataType(0)) || !Is8Bit(ctx->GetInputDataType(3))) return Fail(ctx, "a and b must be int8 or uint8");
    const DataType t = ctx->GetInputDataType(7);
    if (!Is8Bit(t)) return Fail(ctx, "y_zero_point must be int8 or uint8");
    return ctx->SetOutputDataType(0, t);
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* a = ctx->GetInputTensor(0);
    const Tensor* b = ctx->GetInputTensor(3);
    const Tensor *as = ctx->GetInputTensor(1), *bs = ctx->GetInputTensor(4), *ys = ctx->GetInputTensor(6), *yz = ctx->GetInputTensor(7);
    IntMatMul p;
    if (!p.Plan(ctx, a->GetShape(), b->GetShape())) return GRAPH_FAILED;
    if (!CheckScales(ctx, p)) return GRAPH_FAILED;
    Tensor* y = ctx->MallocOutputTensor(0, p.out, yz->GetDataType());
    if (!y) return GRAPH_FAILED;
    const int64_t n = p.out.GetShapeSize();
    // One multiplier per column of the output: a_scale * b_scale[j] / y_scale (the same for all
    // with a per-tensor b_scale).
    const int64_t ns = bs->GetShapeSize(), cols = std::max<int64_t>(p.n, 1);
    auto* scales = static_cast<float*>(ctx->MallocWorkSpace(static_cast<size_t>(cols) * sizeof(float)));
    if (!scales) return GRAPH_FAILED;
    for (int64_t j = 0; j < ns; ++j) {
      scales[j] = ScaleAt(as, 0) * ScaleAt(bs, j) / ScaleAt(ys, 0);
      if (!std::isfinite(scales[j]) || scales[j] < 0.f)
        return Fail(ctx, "a_scale * b_scale" + std::string(ns > 1 ? "[" + std::to_string(j) + "]" : "") + " / y_scale is " + std::to_string(scales[j]) +
                             "; the scales must be positive and finite");
    }
    for (int64_t j = ns; j < cols; ++j) scales[j] = scales[0];
    int64_t lo, hi;
    IntRange(yz->GetDataType(), &lo, &hi);
    const float zp = static_cast<float>(IntAt(yz, 0));
    if (n == 0) return GRAPH_SUCCESS;
    if (Fused(ctx, p, scales, zp, static_cast<float>(lo), static_cast<float>(hi), y)) return GRAPH_SUCCESS;
    auto* acc = static_cast<int32_t*>(ctx->MallocWorkSpace(static_cast<size_t>(n) * sizeof(int32_t)));
    if (!acc) return GRAPH_FAILED;
    if (!p.Run(ctx, a, b, ctx->GetInputTensor(2), ctx->GetInputTensor(5), acc, ctx, &packed_)) return GRAPH_FAILED;
    const int64_t rows = n / cols;
    ctx->ParallelFor(rows, std::max<int64_t>(1, 16384 / cols), [&](int64_t r0, int64_t r1) {
      if (y->GetDataType() == DT_INT8)
        RequantizeRows(acc + r0 * cols, r1 - r0, cols, scales, zp, static_cast<float>(lo), static_cast<float>(hi), y->GetData<int8_t>() + r0 * cols);
      else
        RequantizeRows(acc + r0 * cols, r1 - r0, cols, scales, zp, static_cast<float>(lo), static_cast<float>(hi), y->GetData<uint8_t>() + r0 * cols);
    });
    return GRAPH_SUCCESS;
  }
  graphStatus Compile(OpCompileContext* ctx) override { return PackConstantB(ctx, 3, &packed_); }

 private:
  // Scales (float32, float16 or bfloat16): a_scale and y_scale one value each, b_scale one or one
  // per column of b (per-channel weights); y_zero_point one value.
  static float ScaleAt(const Tensor* t, int64_t i) {
    return t->GetDataType() == DT_FLOAT16 ? static_cast<float>(t->GetData<float16>()[i])
           : t->GetDataType() == DT_BF16  ? static_cast<float>(t->GetData<bfloat16>()[i])
                                          : t->GetData<float>()[i];
  }
  static bool CheckScales(const KernelContextBase* ctx, const IntMatMul& p) {
    const Tensor *as = ctx->GetInputTensor(1), *bs = ctx->GetInputTensor(4), *ys = ctx->GetInputTensor(6), *yz = ctx->GetInputTensor(7);
    for (const Tensor* t : {as, bs, ys})
      if (t->GetDataType() != DT_FLOAT && t->GetDataType() != DT_FLOAT16 && t->GetDataType() != DT_BF16)
        return Fail(ctx, "the scales must be float32, float16 or bfloat16"), false;
    if (as->GetShapeSize() != 1 || ys->GetShapeSize() != 1)
      return Fail(ctx, "a_scale and y_scale must be one value each (per-tensor), not " + as->GetShape().ToString() + " and " + ys->GetShape().ToString()), false;
    if (bs->GetShapeSize() != 1 && (bs->GetShapeSize() != p.n || b_rank(ctx) < 2))
      return Fail(ctx, "b_scale " + bs->GetShape().ToString() + " must be one value or one per column of b (" + std::to_string(p.n) + ")"), false;
    if (yz->GetShapeSize() != 1) return Fail(ctx, "y_zero_point must be a scalar"), false;
    return true;
  }
  static size_t b_rank(const KernelContextBase* ctx) { return ctx->GetInputTensor(3)->GetShape().GetDimNum(); }
  // The product and the rescaling in one pass (Int8GemmRescaled), where it applies: B the constant
  // int8 matrix Compile laid out, zero points 0; a_zero_point one value; every row of A (its batch
  // dims too) one row of the product.
  bool Fused(EagerOpExecutionContext* ctx, const IntMatMul& p, const float* scales, float zp, float lo, float hi, Tensor* y) const {
    const int8_t* a8 = nullptr;
    int32_t a_zp = 0;
    int64_t rows = 0;
    if (!Int8GemmRescaled ||
        !FusedGemmOperands(ctx, p, packed_, ctx->GetInputTensor(0), ctx->GetInputTensor(3), ctx->GetInputTensor(2), ctx->GetInputTensor(5), &a8, &a_zp, &rows))
      return false;
    Int8FloatRescale r;
    r.scale = scales;
    r.y_zero = zp, r.lo = lo, r.hi = hi;
    r.y = static_cast<uint8_t*>(y->GetAddr());
    r.ldy = p.n;
    return Int8GemmRescaled(ctx, rows, p.n, p.k, a8, a_zp, packed_.rows.data(), r, packed_.kernel.get());
  }
  IntMatMul::PackedB packed_;
};

// com.microsoft's MatMulIntegerToFloat (what ONNX Runtime fuses a dynamically quantized MatMul
// into, and what Weft's importer makes of MatMulInteger -> Cast -> Mul by the scales' product [->
// Add bias]): A, B, a_scale, b_scale, a_zero_point?, b_zero_point?, bias? -> float32
// y = float((A - a_zero_point)(B - b_zero_point)) * (a_scale * b_scale[j]) + bias[j]; a_scale one
// value, b_scale and b_zero_point one value or one per column of B, bias one per column.
class MatMulIntegerToFloat : public EagerExecuteOp, public ShapeInferOp, public CompilableOp, public RebuildOnLoad, public EmittableOp {
 public:
  // Execute's arithmetic: the exact int32 sums, times a_scale * b_scale[j] (the float product
  // Execute forms), plus bias[j].
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor *a = ctx->GetInputTensor(0), *b = ctx->GetRequiredInputTensor(1);
    const Tensor *azp = ctx->GetOptionalInputTensor(4), *bzp = ctx->GetOptionalInputTensor(5), *bias = ctx->GetOptionalInputTensor(6);
    IntMatMul p;
    if (!p.Plan(ctx, a->GetShape(), b->GetShape()) || !Check(ctx, p)) return GRAPH_FAILED;
    if ((azp && azp->GetShapeSize() != 1 && azp->GetShapeSize() != p.m) || (bzp && bzp->GetShapeSize() != 1 && bzp->GetShapeSize() != p.n))
      return Fail(ctx, "a zero point must be a scalar or hold one value per row of A / column of B");
    const size_t iaz = aot::InputAt(ctx, 4), ibz = aot::InputAt(ctx, 5), ibias = aot::InputAt(ctx, 6);
    const bool per_column = ctx->GetRequiredInputTensor(3)->GetShapeSize() > 1;
    const std::string n = aot::IntLit(std::max<int64_t>(p.n, 1));
    const std::string scale = ctx->Input(2, "float") + "[0] * " + ctx->Input(3, "float") + (per_column ? "[at % " + n + "]" : std::string("[0]"));
    const std::string store = "        {\n          const float s = " + scale + ";\n          const float v = (float)sum32 * s;\n          Y[at] = " +
                              (bias ? "v + " + ctx->Input(ibias, "float") + "[at % " + n + "]" : std::string("v")) + ";\n        }\n";
    ctx->Run("{\n  float* Y = " + ctx->Output(0, "float") + ";\n" + EmitIntMatMul(ctx, p, 0, 1, iaz, ibz, a, b, azp, bzp, store) + "}\n");
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    IntMatMul p;
    if (!p.Plan(ctx, *ctx->GetInputShape(0), *ctx->GetInputShape(1))) return GRAPH_FAILED;
    *ctx->GetOutputShape(0) = p.out;
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    if (!Is8Bit(ctx->GetInputDataType(0)) || !Is8Bit(ctx->GetInputDataType(1))) return Fail(ctx, "A and B must be int8 or uint8");
    return ctx->SetOutputDataType(0, DT_FLOAT);
  }
  graphStatus Compile(OpCompileContext* ctx) override { return PackConstantB(ctx, 1, &packed_); }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor *a = ctx->GetInputTensor(0), *b = ctx->GetRequiredInputTensor(1);
    const Tensor *as = ctx->GetRequiredInputTensor(2), *bs = ctx->GetRequiredInputTensor(3);
    const Tensor *azp = ctx->GetOptionalInputTensor(4), *bzp = ctx->GetOptionalInputTensor(5), *bias = ctx->GetOptionalInputTensor(6);
    IntMatMul p;
    if (!p.Plan(ctx, a->GetShape(), b->GetShape())) return GRAPH_FAILED;
    const int64_t cols = std::max<int64_t>(p.n, 1), n = p.out.GetShapeSize();
    if (!Check(ctx, p)) return GRAPH_FAILED;
    Tensor* y = ctx->MallocOutputTensor(0, p.out, DT_FLOAT);
    auto* scales = static_cast<float*>(ctx->MallocWorkSpace(static_cast<size_t>(cols) * sizeof(float)));
    if (!y || !scales) return GRAPH_FAILED;
    for (int64_t j = 0; j < cols; ++j) scales[j] = *as->GetData<float>() * bs->GetData<float>()[bs->GetShapeSize() == 1 ? 0 : j];
    if (n == 0) return GRAPH_SUCCESS;
    const float* pb = bias ? bias->GetData<float>() : nullptr;
    float* py = y->GetData<float>();
    // One pass where it applies (FusedGemmOperands).
    const int8_t* a8 = nullptr;
    int32_t a_zp = 0;
    int64_t rows8 = 0;
    if (Int8GemmFloat && FusedGemmOperands(ctx, p, packed_, a, b, azp, bzp, &a8, &a_zp, &rows8) &&
        Int8GemmFloat(ctx, rows8, p.n, p.k, a8, a_zp, packed_.rows.data(), scales, pb, py, p.n, packed_.kernel.get()))
      return GRAPH_SUCCESS;
    auto* acc = static_cast<int32_t*>(ctx->MallocWorkSpace(static_cast<size_t>(n) * sizeof(int32_t)));
    if (!acc) return GRAPH_FAILED;
    if (!p.Run(ctx, a, b, azp, bzp, acc, ctx, &packed_)) return GRAPH_FAILED;
    const int64_t rows = n / cols;
    ctx->ParallelFor(rows, std::max<int64_t>(1, 16384 / cols), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t j = 0; j < cols; ++j) {
          const float v = static_cast<float>(acc[r * cols + j]) * scales[j];
          py[r * cols + j] = pb ? v + pb[j] : v;
        }
    });
    return GRAPH_SUCCESS;
  }

 private:
  // a_scale one float32, b_scale one or one per column of B, bias one per column.
  static bool Check(const KernelContextBase* ctx, const IntMatMul& p) {
    const Tensor *as = ctx->GetRequiredInputTensor(2), *bs = ctx->GetRequiredInputTensor(3), *bias = ctx->GetOptionalInputTensor(6);
    if (as->GetDataType() != DT_FLOAT || as->GetShapeSize() != 1) return Fail(ctx, "a_scale must be one float32 value (per tensor)"), false;
    if (bs->GetDataType() != DT_FLOAT || (bs->GetShapeSize() != 1 && bs->GetShapeSize() != p.n))
      return Fail(ctx, "b_scale " + bs->GetShape().ToString() + " must be one float32 value or one per column of B (" + std::to_string(p.n) + ")"), false;
    if (bias && (bias->GetDataType() != DT_FLOAT || bias->GetShapeSize() != p.n))
      return Fail(ctx, "bias " + bias->GetShape().ToString() + " must hold one float32 value per column of B (" + std::to_string(p.n) + ")"), false;
    return true;
  }
  IntMatMul::PackedB packed_;
};

// com.microsoft's QGemm (ONNX Runtime's QOperator form of Gemm): A, a_scale, a_zero_point, B,
// b_scale, b_zero_point, C?, y_scale?, y_zero_point?; attributes alpha, transA, transB. The int32
// sums of the zero-point-free operands plus C (int32, broadcast to [M, N]) times
// (alpha * a_scale) * b_scale[j] (per tensor or per column of B) in float; with y_scale that is
// divided by y_scale and the product rounded half to even, plus y_zero_point, saturated; without,
// the float product is the output.
class QGemm : public EagerExecuteOp, public ShapeInferOp, public CompilableOp, public RebuildOnLoad, public EmittableOp {
 public:
  // Execute's arithmetic in C99: int64 sums wrapped to int32 (as the runtime's int32 sums wrap),
  // C added, then the per-column float scale (computed here as Execute computes it) applied.
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* a = ctx->GetOptionalInputTensor(0);
    const Tensor* b = ctx->GetOptionalInputTensor(3);
    const Tensor *as = ctx->GetOptionalInputTensor(1), *az = ctx->GetOptionalInputTensor(2);
    const Tensor *bs = ctx->GetOptionalInputTensor(4), *bz = ctx->GetOptionalInputTensor(5);
    const Tensor *c = ctx->GetOptionalInputTensor(6), *ys = ctx->GetOptionalInputTensor(7), *yz = ctx->GetOptionalInputTensor(8);
    for (const Tensor* t : {as, az, bs, bz, ys, yz})
      if (t && !t->GetAddr()) return Fail(ctx, "the generated C takes constant scales and zero points (as quantizers write them)");
    Dims d;
    if (!Plan(ctx, a->GetShape(), b->GetShape(), &d)) return GRAPH_FAILED;
    const int64_t m = d.m, n = d.n, k = d.k;
    const int64_t nb = bs->GetShapeSize();
    if (as->GetShapeSize() != 1 || az->GetShapeSize() != 1 || (ys && ys->GetShapeSize() != 1) || (yz && yz->GetShapeSize() != 1) ||
        bs->GetShape().GetDimNum() > 1 || (nb != 1 && nb != n) || bz->GetShape() != bs->GetShape())
      return Fail(ctx, "a_scale, a_zero_point, y_scale and y_zero_point must be one value, b_scale and b_zero_point one or one per column");
    if (c && c->GetShape().GetDimNum() > 2) return Fail(ctx, "C must have at most 2 dims");
    const float* alpha = ctx->GetAttrs()->GetFloat("alpha");
    std::vector<float> scale(static_cast<size_t>(n));
    std::vector<int32_t> zb(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
      const float bsj = bs->GetData<float>()[nb == 1 ? 0 : j];
      if (!(bsj > 0.f) || !std::isfinite(bsj) || !(*as->GetData<float>() > 0.f) || !std::isfinite(*as->GetData<float>()) ||
          (ys && (!(*ys->GetData<float>() > 0.f) || !std::isfinite(*ys->GetData<float>()))))
        return Fail(ctx, "the scales must be positive and finite");
      float sc = (alpha ? *alpha : 1.f) * *as->GetData<float>();
      sc = sc * bsj;
      if (ys) sc = sc / *ys->GetData<float>();
      scale[static_cast<size_t>(j)] = sc;
      zb[static_cast<size_t>(j)] = static_cast<int32_t>(IntAt(bz, nb == 1 ? 0 : j));
    }
    const std::string ta = aot::CType(a->GetDataType()), tb = aot::CType(b->GetDataType());
    const DataType yt = ys ? yz->GetDataType() : DT_FLOAT;
    const std::string ty = aot::CType(yt);
    auto L = [](int64_t v) { return aot::IntLit(v); };
    std::string cst0 = "0", cst1 = "0";
    if (c) {
      int64_t cst[WEFT_MAX_DIMS];
      BroadcastStrides(c->GetShape(), Shape({m, n}), cst);
      cst0 = L(cst[0]), cst1 = L(cst[1]);
    }
    std::string r = "{\n  const " + ta + "* A = " + ctx->Input(0, ta.c_str()) + ";\n  const " + tb + "* B = " + ctx->Input(InputInstance(ctx, 3), tb.c_str()) +
                    ";\n  const float* sc = " + ctx->Const("scale", DT_FLOAT, scale) + ";\n  const int32_t* zb = " + ctx->Const("zb", DT_INT32, zb) +
                    ";\n  " + ty + "* Y = " + ctx->Output(0, ty.c_str()) + ";\n  int64_t i, j, p;\n";
    if (c) r += "  const int32_t* C = " + ctx->Input(InputInstance(ctx, 6), "int32_t") + ";\n";
    r += "  for (i = 0; i < " + L(m) + "; ++i)\n    for (j = 0; j < " + L(n) + "; ++j) {\n      int64_t sum = 0;\n      int32_t acc;\n      float v;\n";
    r += "      for (p = 0; p < " + L(k) + "; ++p)\n        sum += ((int64_t)A[" + (d.ta ? "p * " + L(m) + " + i" : "i * " + L(k) + " + p") + "] - " +
         L(IntAt(az, 0)) + ") * ((int64_t)B[" + (d.tb ? "j * " + L(k) + " + p" : "p * " + L(n) + " + j") + "] - zb[j]);\n";
    r += "      acc = (int32_t)(uint32_t)(uint64_t)sum;\n";
    if (c) r += "      acc = (int32_t)((uint32_t)acc + (uint32_t)C[i * " + cst0 + " + j * " + cst1 + "]);\n";
    r += "      v = (float)acc * sc[j];\n";
    if (!ys) {
      r += "      Y[i * " + L(n) + " + j] = v;\n";
    } else {
      int64_t lo, hi;
      IntRange(yt, &lo, &hi);
      const int64_t zp = IntAt(yz, 0);
      const std::string zl = aot::FloatLit(static_cast<float>(lo) - static_cast<float>(zp)), zh = aot::FloatLit(static_cast<float>(hi) - static_cast<float>(zp));
      ctx->Include("<math.h>");
      r += "      v = v > " + zl + " ? v : " + zl + ";\n      v = v < " + zh + " ? v : " + zh + ";\n      Y[i * " + L(n) + " + j] = (" + ty +
           ")((int32_t)nearbyintf(v) + " + L(zp) + ");\n";
    }
    ctx->Run(r + "    }\n}\n");
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    Dims d;
    if (!Plan(ctx, *ctx->GetInputShape(0), *ctx->GetOptionalInputShape(3), &d)) return GRAPH_FAILED;
    const Shape out({d.m, d.n});
    if (const Shape* c = ctx->GetOptionalInputShape(6)) {
      Shape b;
      if (c->GetDimNum() > 2 || !BroadcastShape(*c, out, &b) || (!b.IsUnknown() && b != out))
        return Fail(ctx, "C " + c->ToString() + " does not broadcast to the output " + out.ToString());
    }
    *ctx->GetOutputShape(0) = out;
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    const DataType a = ctx->GetInputDataType(0);
    const Tensor* b = ctx->GetOptionalInputTensor(3);
    if (!Is8Bit(a) || !b || !Is8Bit(b->GetDataType())) return Fail(ctx, "A and B must be int8 or uint8");
    const Tensor* c = ctx->GetOptionalInputTensor(6);
    if (c && c->GetDataType() != DT_INT32) return Fail(ctx, std::string("C must be int32, not ") + DataTypeName(c->GetDataType()));
    const Tensor* ys = ctx->GetOptionalInputTensor(7);
    const Tensor* yz = ctx->GetOptionalInputTensor(8);
    if (!ys) {
      if (yz) return Fail(ctx, "y_zero_point is given without y_scale");
      return ctx->SetOutputDataType(0, DT_FLOAT);
    }
    if (!yz || !Is8Bit(yz->GetDataType())) return Fail(ctx, "a quantized output (y_scale given) needs an int8 or uint8 y_zero_point");
    return ctx->SetOutputDataType(0, yz->GetDataType());
  }
  // A constant B as rows of int8 values [N][K] with their sums, as IntMatMul's fast path takes it.
  graphStatus Compile(OpCompileContext* ctx) override {
    packed_ = IntMatMul::PackedB();
    const Tensor* b = ctx->GetOptionalInputTensor(3);
    if (!Int8GemmSums || !b || !b->GetAddr() || b->GetShape().GetDimNum() != 2 || !Is8Bit(b->GetDataType())) return GRAPH_SUCCESS;
    const int64_t* tb = ctx->GetAttrs()->GetInt("transB");
    const bool trans = tb && *tb;
    const int64_t k = b->GetShape().GetDim(trans ? 1 : 0), n = b->GetShape().GetDim(trans ? 0 : 1);
    if (k <= 0 || n <= 0) return GRAPH_SUCCESS;
    packed_.rows.resize(static_cast<size_t>(k * n));
    packed_.sums.assign(static_cast<size_t>(n), 0);
    const auto* pb = static_cast<const uint8_t*>(b->GetAddr());
    const uint8_t flip = b->GetDataType() == DT_UINT8 ? 0x80 : 0;
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p) {
        const auto v = static_cast<int8_t>(pb[trans ? j * k + p : p * n + j] ^ flip);
        packed_.rows[static_cast<size_t>(j * k + p)] = v;
        packed_.sums[static_cast<size_t>(j)] += v;
      }
    if (Int8PackB) packed_.kernel = Int8PackB(packed_.rows.data(), n, k);
    packed_.ready = true;
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* a = ctx->GetOptionalInputTensor(0);
    const Tensor* b = ctx->GetOptionalInputTensor(3);
    const Tensor *as = ctx->GetOptionalInputTensor(1), *az = ctx->GetOptionalInputTensor(2);
    const Tensor *bs = ctx->GetOptionalInputTensor(4), *bz = ctx->GetOptionalInputTensor(5);
    const Tensor *c = ctx->GetOptionalInputTensor(6), *ys = ctx->GetOptionalInputTensor(7), *yz = ctx->GetOptionalInputTensor(8);
    Dims d;
    if (!Plan(ctx, a->GetShape(), b->GetShape(), &d)) return GRAPH_FAILED;
    const int64_t m = d.m, n = d.n, k = d.k;
    // The quantization parameters.
    auto scalar = [&](const Tensor* t, const char* what) -> bool {
      if (t && t->GetShapeSize() == 1 && (t->GetDataType() != DT_FLOAT || (*t->GetData<float>() > 0.f && std::isfinite(*t->GetData<float>())))) return true;
      return Fail(ctx, std::string(what) + (t && t->GetShapeSize() == 1 ? " must be positive and finite" : " must be one value (per-tensor quantization)")), false;
    };
    if (!scalar(as, "a_scale") || !scalar(az, "a_zero_point") || (ys && !scalar(ys, "y_scale")) || (yz && !scalar(yz, "y_zero_point"))) return GRAPH_FAILED;
    if (az->GetDataType() != a->GetDataType() || bz->GetDataType() != b->GetDataType()) return Fail(ctx, "a zero point's type differs from its operand's");
    const int64_t nb = bs->GetShapeSize();
    if (bs->GetShape().GetDimNum() > 1 || (nb != 1 && nb != n) || bz->GetShape() != bs->GetShape())
      return Fail(ctx, "b_scale " + bs->GetShape().ToString() + " and b_zero_point " + bz->GetShape().ToString() +
                           " must both be one value or one per column of B (" + std::to_string(n) + ")");
    for (int64_t j = 0; j < nb; ++j)
      if (!(bs->GetData<float>()[j] > 0.f) || !std::isfinite(bs->GetData<float>()[j])) return Fail(ctx, "b_scale must be positive and finite");
    const DataType yt = ys ? yz->GetDataType() : DT_FLOAT;
    Tensor* y = ctx->MallocOutputTensor(0, Shape({m, n}), yt);
    if (!y) return GRAPH_FAILED;
    if (m * n == 0) return GRAPH_SUCCESS;
    auto* acc = static_cast<int32_t*>(ctx->MallocWorkSpace(static_cast<size_t>(m * n) * sizeof(int32_t)));
    if (!acc) return GRAPH_FAILED;
    // The sums: IntMatMul's fast path where A is not transposed and B is [K, N] or packed.
    if (Int8GemmSums && !d.ta && (!d.tb || packed_.ready) && m * n * k >= IntMatMul::kFastMacs) {
      IntMatMul p;
      if (!p.Plan(ctx, Shape({m, k}), Shape({k, n}))) return GRAPH_FAILED;
      if (!p.Run(ctx, a, b, az, bz, acc, ctx, packed_.ready ? &packed_ : nullptr)) return GRAPH_FAILED;
    } else {
      const int64_t za = IntAt(az, 0);
      ctx->ParallelFor(m, 1, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i)
          for (int64_t j = 0; j < n; ++j) {
            const int64_t zb = IntAt(bz, nb == 1 ? 0 : j);
            int64_t sum = 0;
            for (int64_t p = 0; p < k; ++p)
              sum += (IntAt(a, d.ta ? p * m + i : i * k + p) - za) * (IntAt(b, d.tb ? j * k + p : p * n + j) - zb);
            acc[i * n + j] = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(sum)));
          }
      });
    }
    if (c) {  // int32, wrapping as the sums do
      int64_t cst[WEFT_MAX_DIMS];
      const Shape out({m, n});
      BroadcastStrides(c->GetShape(), out, cst);
      const int32_t* pc = c->GetData<int32_t>();
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          auto& v = acc[i * n + j];
          v = static_cast<int32_t>(static_cast<uint32_t>(v) + static_cast<uint32_t>(pc[i * cst[0] + j * cst[1]]));
        }
    }
    const float* alpha = ctx->GetAttrs()->GetFloat("alpha");
    std::vector<float> scale(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
      float s = (alpha ? *alpha : 1.f) * *as->GetData<float>();
      s = s * bs->GetData<float>()[nb == 1 ? 0 : j];
      if (ys) s = s / *ys->GetData<float>();
      scale[static_cast<size_t>(j)] = s;
    }
    if (!ys) {
      float* out = y->GetData<float>();
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) out[i * n + j] = static_cast<float>(acc[i * n + j]) * scale[static_cast<size_t>(j)];
      return GRAPH_SUCCESS;
    }
    int64_t lo, hi;
    IntRange(yt, &lo, &hi);
    const float zp = static_cast<float>(IntAt(yz, 0));
    const float zl = static_cast<float>(lo) - zp, zh = static_cast<float>(hi) - zp;
    auto* out = static_cast<uint8_t*>(y->GetAddr());
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        float v = static_cast<float>(acc[i * n + j]) * scale[static_cast<size_t>(j)];
        v = v > zl ? v : zl;
        v = v < zh ? v : zh;
        out[i * n + j] = static_cast<uint8_t>(static_cast<int32_t>(RoundHalfEvenSmall(v)) + static_cast<int32_t>(zp));
      }
    return GRAPH_SUCCESS;
  }

 private:
  struct Dims {
    int64_t m = 0, n = 0, k = 0;
    bool ta = false, tb = false;
  };
  static bool Plan(const KernelContextBase* ctx, const Shape& a, const Shape& b, Dims* d) {
    if (a.GetDimNum() != 2 || b.GetDimNum() != 2) return Fail(ctx, "A and B must be matrices, not " + a.ToString() + " and " + b.ToString()), false;
    const int64_t* ta = ctx->GetAttrs()->GetInt("transA");
    const int64_t* tb = ctx->GetAttrs()->GetInt("transB");
    d->ta = ta && *ta, d->tb = tb && *tb;
    d->m = a.GetDim(d->ta ? 1 : 0), d->k = a.GetDim(d->ta ? 0 : 1);
    const int64_t kb = b.GetDim(d->tb ? 1 : 0);
    d->n = b.GetDim(d->tb ? 0 : 1);
    if (d->k >= 0 && kb >= 0 && d->k != kb)
      return Fail(ctx, "inner dimensions differ: A " + a.ToString() + (d->ta ? " (transposed)" : "") + ", B " + b.ToString() + (d->tb ? " (transposed)" : "")), false;
    return true;
  }
  IntMatMul::PackedB packed_;
};

}  // namespace

int64_t DynamicQuantizeUint8(const float* x, int64_t n, uint8_t* q, float* scale, uint8_t* zero_point) {
  float mn = 0.f, mx = 0.f;
  bool finite = true;
  RangeWithZero(x, n, &mn, &mx, &finite);
  if (!finite)
    for (int64_t i = 0; i < n; ++i)
      if (!std::isfinite(x[i])) return i;
  // An all-zero input has no range: scale 1 (any scale gives zeros), rather than 0 and NaNs.
  const float s = mx == mn ? 1.f : (mx - mn) / 255.f;
  const float zpf = std::nearbyint(std::min(std::max(0.f - mn / s, 0.f), 255.f));
  *scale = s;
  *zero_point = static_cast<uint8_t>(zpf);
  QuantizeToUint8(x, n, s, zpf, q);
  return -1;
}

void WeftRegister_quantize(std::vector<OpEntry>& out) {
  const TensorType q({DT_INT8, DT_UINT8, DT_INT16, DT_UINT16, DT_INT32});
  const TensorType f({DT_FLOAT, DT_FLOAT16, DT_DOUBLE, DT_INT32});
  const TensorType q8({DT_INT8, DT_UINT8});
  out.push_back({OpDefBuilder("QuantizeLinear")
                     .INPUT(x, f)
                     .INPUT(y_scale, TensorType({DT_FLOAT, DT_FLOAT16, DT_DOUBLE}))
                     .OPTIONAL_INPUT(y_zero_point, q)
                     .OUTPUT(y, q)
                     .ATTR(axis, Int, 1)
                     .ATTR(saturate, Int, 1)
                     .ATTR(block_size, Int, 0)
                     .ATTR(output_dtype, Type, DT_UNDEFINED)
                     .Build(),
                 MakeOpImpl<QuantizeLinear>("QuantizeLinear")});
  out.push_back({OpDefBuilder("DequantizeLinear")
                     .INPUT(x, q)
                     .INPUT(x_scale, TensorType({DT_FLOAT, DT_FLOAT16, DT_DOUBLE}))
                     .OPTIONAL_INPUT(x_zero_point, q)
                     .OUTPUT(y, TensorType({DT_FLOAT, DT_FLOAT16, DT_DOUBLE}))
                     .ATTR(axis, Int, 1)
                     .ATTR(block_size, Int, 0)
                     .Build(),
                 MakeOpImpl<DequantizeLinear>("DequantizeLinear")});
  out.push_back({OpDefBuilder("DynamicQuantizeLinear")
                     .INPUT(x, TensorType({DT_FLOAT}))
                     .OUTPUT(y, TensorType({DT_UINT8}))
                     .OUTPUT(y_scale, TensorType({DT_FLOAT}))
                     .OUTPUT(y_zero_point, TensorType({DT_UINT8}))
                     .Build(),
                 MakeOpImpl<DynamicQuantizeLinear>("DynamicQuantizeLinear")});
  out.push_back({OpDefBuilder("MatMulInteger")
                     .INPUT(A, q8)
                     .INPUT(B, q8)
                     .OPTIONAL_INPUT(a_zero_point, q8)
                     .OPTIONAL_INPUT(b_zero_point, q8)
                     .OUTPUT(Y, TensorType({DT_INT32}))
                     .Build(),
                 MakeOpImpl<MatMulInteger>("MatMulInteger")});
  const TensorType scale_types({DT_FLOAT, DT_FLOAT16, DT_BF16});
  out.push_back({OpDefBuilder("QLinearMatMul")
                     .INPUT(a, q8)
                     .INPUT(a_scale, scale_types)
                     .INPUT(a_zero_point, q8)
                     .INPUT(b, q8)
                     .INPUT(b_scale, scale_types)
                     .INPUT(b_zero_point, q8)
                     .INPUT(y_scale, scale_types)
                     .INPUT(y_zero_point, q8)
                     .OUTPUT(y, q8)
                     .Build(),
                 MakeOpImpl<QLinearMatMul>("QLinearMatMul")});
  out.push_back({OpDefBuilder("MatMulIntegerToFloat")
                     .INPUT(A, q8)
                     .INPUT(B, q8)
                     .INPUT(a_scale, TensorType({DT_FLOAT}))
                     .INPUT(b_scale, TensorType({DT_FLOAT}))
                     .OPTIONAL_INPUT(a_zero_point, q8)
                     .OPTIONAL_INPUT(b_zero_point, q8)
                     .OPTIONAL_INPUT(bias, TensorType({DT_FLOAT}))
                     .OUTPUT(Y, TensorType({DT_FLOAT}))
                     .Build(),
                 MakeOpImpl<MatMulIntegerToFloat>("MatMulIntegerToFloat")});
  out.push_back({OpDefBuilder("QGemm")
                     .INPUT(A, q8)
                     .INPUT(a_scale, TensorType({DT_FLOAT}))
                     .INPUT(a_zero_point, q8)
                     .INPUT(B, q8)
                     .INPUT(b_scale, TensorType({DT_FLOAT}))
                     .INPUT(b_zero_point, q8)
                     .OPTIONAL_INPUT(C, TensorType({DT_INT32}))
                     .OPTIONAL_INPUT(y_scale, TensorType({DT_FLOAT}))
                     .OPTIONAL_INPUT(y_zero_point, q8)
                     .OUTPUT(Y, TensorType({DT_FLOAT, DT_INT8, DT_UINT8}))
                     .ATTR(alpha, Float, 1.0f)
                     .ATTR(transA, Int, 0)
                     .ATTR(transB, Int, 0)
                     .Build(),
                 MakeOpImpl<QGemm>("QGemm")});
}

}  // namespace weft::ops
