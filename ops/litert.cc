// The Tfl* operators: LiteRT (TFLite) builtin operators as the LiteRT importer writes them, with
// TFLite's layouts (NHWC activations; OHWI convolution and 1HWO depthwise filters) and arithmetic.
// Integer kernels follow TFLite's reference kernels exactly (int32 or int64 accumulators, the
// fixed-point multipliers of litert_quant.h), so quantized models give the same bits; float
// kernels compute the same maths in float.
//
// Every Tfl* op takes the attributes the importer writes (docs/litert.md): "version", the output's
// element type "output_type", the quantization of its tensors (input_scale/input_zero_point and
// output_scale/output_zero_point, one entry per tensor; channel_scales/channel_zero_points/
// quantized_dimension for weights quantized per channel), and its builtin options by their names
// in the format.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>
#define XXH_INLINE_ALL
#include <xxhash.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#define WEFT_LITERT_AVX2 1
#endif

#include "aot_emit.h"
#include "dnnl_runner.h"
#include "litert_quant.h"
#include "litert_rescale_avx512.h"
#include "int8_conv.h"
#include "op_util.h"
#include "vector_math.h"

namespace weft::ops {
namespace {

using tfl::Activation;

// The portable C kernels the emitters below call in generated modules (ops/aot/kernels.c).
const char* const kTflKernels = aot::Kernels();

// The generated C's code for an 8/16-bit quantized type (weft_qload/weft_qstore), or 0.
int QTypeCode(DataType t) { return t == DT_INT8 ? 8 : t == DT_UINT8 ? 9 : t == DT_INT16 ? 16 : t == DT_INT32 ? 32 : 0; }

// ---- attributes ---------------------------------------------------------------------------------

struct Quant {
  float scale = 0.f;
  int32_t zp = 0;
  bool quantized() const { return scale > 0.f; }
};

Quant InputQuant(const KernelContextBase* ctx, size_t k) {
  ListView<float> s = ctx->GetAttrs()->GetListFloat("input_scale");
  ListView<int64_t> z = ctx->GetAttrs()->GetListInt("input_zero_point");
  Quant q;
  if (k < s.size()) q.scale = s[k];
  if (k < z.size()) q.zp = static_cast<int32_t>(z[k]);
  return q;
}

Quant OutputQuant(const KernelContextBase* ctx, size_t k = 0) {
  ListView<float> s = ctx->GetAttrs()->GetListFloat("output_scale");
  ListView<int64_t> z = ctx->GetAttrs()->GetListInt("output_zero_point");
  Quant q;
  if (k < s.size()) q.scale = s[k];
  if (k < z.size()) q.zp = static_cast<int32_t>(z[k]);
  return q;
}

bool ParseActivation(const KernelContextBase* ctx, Activation* a) {
  const char* s = ctx->GetAttrs()->GetStr("fused_activation_function");
  std::string v = s ? s : "NONE";
  if (v == "NONE") *a = Activation::kNone;
  else if (v == "RELU") *a = Activation::kRelu;
  else if (v == "RELU6") *a = Activation::kRelu6;
  else if (v == "RELU_N1_TO_1") *a = Activation::kReluN1To1;
  else return Fail(ctx, "fused activation " + v + " is not supported"), false;
  return true;
}

bool HasAttr(const KernelContextBase* ctx, const char* name) {
  return ctx->GetAttrs()->IndexOf(name) < ctx->GetAttrs()->GetAttrNum();
}

int64_t IntAttr(const KernelContextBase* ctx, const char* name) {
  const int64_t* v = ctx->GetAttrs()->GetInt(name);
  return v ? *v : 0;
}

DataType OutputType(const KernelContextBase* ctx) {
  const DataType* t = ctx->GetAttrs()->GetAttrPointer<DataType>("output_type");
  return t ? *t : DT_UNDEFINED;
}

// Output 0 takes the type the model records for it, or input `fallback`'s type when it records none.
graphStatus SetRecordedOutputType(InferDataTypeContext* ctx, size_t fallback) {
  DataType t = OutputType(ctx);
  return ctx->SetOutputDataType(0, t == DT_UNDEFINED ? ctx->GetInputDataType(fallback) : t);
}

// The common attributes of every Tfl* op.
OpDefBuilder TflDef(const char* type) {
  OpDefBuilder b(type);
  b.AttrInt("version", 1)
      .AttrType("output_type", DT_UNDEFINED)
      .AttrListFloat("input_scale", {})
      .AttrListInt("input_zero_point", {})
      .AttrListFloat("output_scale", {})
      .AttrListInt("output_zero_point", {})
      .AttrListFloat("channel_scales", {})
      .AttrListInt("channel_zero_points", {})
      .AttrInt("channel_input", -1)
      .AttrInt("quantized_dimension", 0)
      .AttrListFloat("intermediate_scale", {})
      .AttrListInt("intermediate_zero_point", {});
  return b;
}

const TensorType& AnyType() {
  static TensorType t = TensorType::ALL();
  return t;
}

// Per-output-channel multipliers of a convolution: input_scale * filter_scale[c] / output_scale.
struct ChannelScales {
  std::vector<int32_t> mult;
  std::vector<int32_t> shift;
};

bool ConvMultipliers(const KernelContextBase* ctx, int64_t channels, size_t input, size_t filter_input, ChannelScales* out) {
  Quant in = InputQuant(ctx, input);
  Quant filter = InputQuant(ctx, filter_input);
  Quant o = OutputQuant(ctx);
  ListView<float> cs = ctx->GetAttrs()->GetListFloat("channel_scales");
  if (!in.quantized() || !o.quantized() || (!filter.quantized() && cs.size() == 0))
    return Fail(ctx, "a quantized input, filter and output need scales"), false;
  if (cs.size() > 1 && static_cast<int64_t>(cs.size()) != channels)
    return Fail(ctx, "the filter has " + std::to_string(cs.size()) + " channel scales for " + std::to_string(channels) + " output channels"), false;
  out->mult.resize(static_cast<size_t>(channels));
  out->shift.resize(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) {
    float fs = cs.size() > 1 ? cs[static_cast<size_t>(c)] : (cs.size() == 1 ? cs[0] : filter.scale);
    double eff = static_cast<double>(in.scale) * static_cast<double>(fs) / static_cast<double>(o.scale);
    tfl::QuantizeMultiplier(eff, &out->mult[static_cast<size_t>(c)], &out->shift[static_cast<size_t>(c)]);
  }
  return true;
}


// CONV_2D's filter must be symmetric (zero point 0), as LiteRT checks; its DEPTHWISE_CONV_2D and
// TRANSPOSE_CONV run with the zero point ignored, and so do Weft's.
bool SymmetricFilter(const KernelContextBase* ctx) {
  ListView<int64_t> cz = ctx->GetAttrs()->GetListInt("channel_zero_points");
  int64_t zp = ListView<float>(ctx->GetAttrs()->GetListFloat("channel_scales")).size() > 0 ? 0 : InputQuant(ctx, 1).zp;
  for (size_t c = 0; c < cz.size() && zp == 0; ++c) zp = cz[c];
  if (zp == 0) return true;
  return Fail(ctx, "the filter's zero point must be 0, not " + std::to_string(zp)), false;
}

// A bias must hold one value per output channel (the kernels read `channels` of them); its shape
// may be unknown at compile time (then Execute checks it).
bool BiasFits(const KernelContextBase* ctx, const Shape* bias, int64_t channels) {
  if (!bias || channels < 0) return true;
  const int64_t n = bias->GetShapeSize();
  if (n < 0 || n == channels) return true;
  return Fail(ctx, "the bias " + bias->ToString() + " has " + std::to_string(n) + " values for " + std::to_string(channels) +
                       " output channels"),
         false;
}

// The bias types the integer kernels take: int32 with 8-bit activations, int32 or int64 with int16
// ones. (LiteRT reads an int64 bias of an 8-bit layer as int32 words, i.e. garbage: refused here.)
bool BiasTypeFits(const KernelContextBase* ctx, DataType x, const Tensor* b) {
  if (!b || x == DT_FLOAT) return true;
  const DataType bt = b->GetDataType();
  if (bt == DT_INT32 || (bt == DT_INT64 && x == DT_INT16)) return true;
  return Fail(ctx, std::string("a ") + DataTypeName(x) + " input takes an int32 bias" + (x == DT_INT16 ? " or an int64 one" : "") + ", not " +
                       DataTypeName(bt)),
         false;
}

// The hot loops of the 8-bit paths, one copy per instruction set, picked when the library loads
// (x86-64-v4 brings AVX-512's 64-bit lane multiplies, which the rescaling needs).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(WEFT_SANITIZED) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define WEFT_INT_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define WEFT_INT_CLONES
#endif
// `rows` consecutive rows of n channels each.
WEFT_INT_CLONES void RequantizeRowsPortable(const int32_t* acc, const int32_t* bias, const int32_t* mult, const int32_t* shift,
                                            int32_t out_off, int32_t lo, int32_t hi, int8_t* out, int64_t n, int64_t rows) {
  for (int64_t r = 0; r < rows; ++r) tfl::RequantizeRow(acc + r * n, bias, mult, shift, out_off, lo, hi, out + r * n, n);
}

// What an 8-bit GEMM does with its int32 results: requantize them into int8 (a convolution's
// output), or store them (the caller rescales).
struct GemmOut {
  int32_t* acc = nullptr;   // [m][n] int32, or
  int8_t* q = nullptr;      // [m][n] int8 through RequantizeRow's arithmetic with:
  const int32_t* bias = nullptr;
  const int32_t* mult = nullptr;
  const int32_t* shift = nullptr;
  int32_t out_off = 0, lo = 0, hi = 0;
  // or bytes rescaled in float as ONNX's QLinearConv does (VNNI kernel only): the sum plus
  // bias[col] (wrapped), times fscale[col] in float, rounded half to even, plus fz, clamped to
  // [flo, fhi], its low byte at fq[row * ldq + col].
  uint8_t* fq = nullptr;
  int64_t ldq = 0;
  const float* fscale = nullptr;
  float fz = 0.f, flo = 0.f, fhi = 0.f;
  // or floats (VNNI kernel only): the sum plus bias[col] (wrapped), times fscale[col], plus fbias[col]
  // where given, at ff[row * ldf + col].
  float* ff = nullptr;
  int64_t ldf = 0;
  const float* fbias = nullptr;
};

// The taps [k0, k1) of a window whose input coordinate o * s - p + k * d lies in [0, n).
inline void InsideTaps(int64_t o, int64_t s, int64_t p, int64_t d, int64_t n, int64_t k, int64_t* k0, int64_t* k1) {
  *k0 = 0;
  *k1 = k;
  while (*k0 < k && o * s - p + *k0 * d < 0) ++*k0;
  while (*k1 > *k0 && o * s - p + (*k1 - 1) * d >= n) --*k1;
}

// WEFT_DISABLE_VNNI=1 turns the VNNI kernels off: the AVX2 paths run instead (for comparison
// and tests).
bool VnniTurnedOff() {
  static const bool off = [] {
    const char* v = std::getenv("WEFT_DISABLE_VNNI");
    return v && std::string(v) == "1";
  }();
  return off;
}

// Whether the CPU has AVX-512 with VNNI (the kernels below), unless turned off.
bool HasVnni512() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool ok = [] {
    if (VnniTurnedOff()) return false;
    return __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512dq");
  }();
  return ok;
#else
  return false;
#endif
}

// What the epilogue needs per output column, laid out at compile time (constant weights, bias
// and scales) or once per GEMM call: the sums' correction
// (the zero points' column term less the bias), and TFLite's rescaling in the one-floor form of
// tfl::OneFloorRescale, its 64-bit constants per block of 16 columns as the even columns' eight
// lanes then the odd columns'.
struct VnniEpi {
  const int32_t* base = nullptr;     // [blocks * 16]
  const int64_t* add = nullptr;      // [blocks][16], even then odd columns
  const int64_t* add_neg = nullptr;
  const int64_t* shift = nullptr;
  const int32_t* left = nullptr;     // [blocks * 16], nullptr when every left shift is 0
  // [blocks * 16] in column order: 2^-(31 + r) for each column's right shift r, when every column
  // has r >= 2 and no left shift (tfl::RescaleFloat's condition); nullptr otherwise.
  const float* fscale = nullptr;
};


// W [n][k] int8 packed per block of 16 columns and group of 4 consecutive k: 64 bytes holding
// column j's four values at 4j .. 4j + 3 (what vpdpbusd multiplies with one broadcast A word).
// Columns and k past the end are zeros. colsum: sum over k of each column (zeros past n).
struct VnniB {
  const int8_t* data = nullptr;
  const int32_t* colsum = nullptr;
  int64_t n = 0, k = 0;
  VnniEpi epi;           // the epilogue's tables for inputs with zero point epi_a_zp (Compile), if epi.base
  int32_t epi_a_zp = 0;
  int64_t groups() const { return (k + 3) / 4; }
  int64_t blocks() const { return (n + 15) / 16; }
};
// With 1024 bytes to spare past the last block: the AMX kernel loads 16 groups at a time, and
// the groups past a block's last multiply zeros.
inline size_t VnniDataBytes(int64_t n, int64_t k) { return static_cast<size_t>(((n + 15) / 16) * ((k + 3) / 4) * 64 + 1024); }
inline size_t VnniColsumBytes(int64_t n) { return static_cast<size_t>(((n + 15) / 16) * 16) * sizeof(int32_t); }

// Packs columns [c0, c1) of W (c0 a multiple of 16).
void PackVnniB(const int8_t* w, int64_t n, int64_t k, int8_t* data, int32_t* colsum, int64_t c0, int64_t c1) {
  const int64_t groups = (k + 3) / 4;
  for (int64_t col = c0; col < c1; ++col) {
    const int64_t blk = col / 16, j = col % 16;
    int8_t* dst = data + blk * groups * 64 + j * 4;
    uint32_t sum = 0;  // modulo 2^32, as the products are summed
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t t = 0; t < 4; ++t) {
        const int64_t kk = g * 4 + t;
        const int8_t v = col < n && kk < k ? w[col * k + kk] : int8_t{0};
        dst[g * 64 + t] = v;
        sum += static_cast<uint32_t>(static_cast<int32_t>(v));
      }
    colsum[col] = static_cast<int32_t>(sum);
  }
}

// A convolution's input read as the GEMM's rows (im2col) while they are packed, so no
// [pixels][KH * KW * IC] copy is made: row r is output pixel r's taps in (ky, kx, c) order, taps in
// the padding holding the input zero point (they add nothing, as TFLite skips them).
struct VnniConv {
  const int8_t* x = nullptr;  // NHWC
  const int8_t* end = nullptr;  // x's end
  int64_t ih, iw, ic, oh, ow, kh, kw, sh, sw, dh, dw, ph, pw;
  int8_t zp;
};

// Output pixel (image bn, row oy, column ox) of GEMM row r, stepped row by row.
struct OutputPixel {
  int64_t bn, oy, ox, oh, ow;
  OutputPixel(const VnniConv& cv, int64_t r) : bn(r / (cv.oh * cv.ow)), oy((r / cv.ow) % cv.oh), ox(r % cv.ow), oh(cv.oh), ow(cv.ow) {}
  void Next() {
    if (++ox == ow) {
      ox = 0;
      if (++oy == oh) oy = 0, ++bn;
    }
  }
};

// VnniEpi's tables for W's columns (blocks * 16 of each): base[c] = colsum * (128 + a_zp) - bias,
// and, when `shift` is given, OneFloorRescale's constants (the left shifts only if any is not 0).
VnniEpi FillVnniEpi(const VnniB& w, int32_t a_zp, const int32_t* bias, const int32_t* shift, int32_t* base, int64_t* add, int64_t* add_neg,
                    int64_t* sh, int32_t* left, float* fscale) {
  const int64_t n = w.n, cols = w.blocks() * 16;
  const uint32_t a_corr = static_cast<uint32_t>(128 + a_zp);
  for (int64_t c = 0; c < cols; ++c)
    base[c] = static_cast<int32_t>(static_cast<uint32_t>(w.colsum[c]) * a_corr - static_cast<uint32_t>(bias && c < n ? bias[c] : 0));
  VnniEpi e;
  e.base = base;
  if (!shift) return e;
  bool any_left = false;
  for (int64_t c = 0; c < cols; ++c) {
    const tfl::OneFloorRescale f(c < n ? shift[c] : 0);
    const int64_t lane = (c / 16) * 16 + (c % 2) * 8 + (c % 16) / 2;  // even columns' lanes, then odd ones'
    add[lane] = f.add;
    add_neg[lane] = f.add_neg;
    sh[lane] = f.shift;
    left[c] = f.left;
    any_left = any_left || f.left != 0;
  }
  e.add = add;
  e.add_neg = add_neg;
  e.shift = sh;
  e.left = any_left ? left : nullptr;
  if (tfl::FillFloatScales(shift, n, cols, fscale)) e.fscale = fscale;
  return e;
}

// Weights packed for the VNNI kernel when the graph is compiled (constant weights only).
struct VnniPacked {
  std::vector<int8_t> data;
  std::vector<int32_t> colsum;
  VnniB view;
  void Pack(const int8_t* w, int64_t n, int64_t k) {
    data.assign(VnniDataBytes(n, k), 0);
    colsum.assign(VnniColsumBytes(n) / sizeof(int32_t), 0);
    PackVnniB(w, n, k, data.data(), colsum.data(), 0, ((n + 15) / 16) * 16);
    view = VnniB{data.data(), colsum.data(), n, k};
  }
  // The epilogue's tables for a layer whose bias and scales are constants (the bias may be null).
  void PackEpilogue(int32_t a_zp, const int32_t* bias, const int32_t* shift) {
    const size_t cols = colsum.size();
    epi32.assign(2 * cols, 0);
    epi64.assign(3 * cols, 0);
    fscale.assign(cols, 0.0f);
    view.epi = FillVnniEpi(view, a_zp, bias, shift, epi32.data(), epi64.data(), epi64.data() + cols, epi64.data() + 2 * cols,
                           epi32.data() + cols, fscale.data());
    view.epi_a_zp = a_zp;
  }
  void Clear() { *this = VnniPacked(); }
  const VnniB* get() const { return view.data ? &view : nullptr; }
  std::vector<int32_t> epi32;
  std::vector<int64_t> epi64;
  std::vector<float> fscale;
};

#ifdef WEFT_LITERT_AVX2
// RequantizeRow on eight lanes (columns c .. c + 7). With a positive multiplier, TFLite's rounding
// doubling high multiply is floor((x * m + 2^30) / 2^31), whose low 32 bits a logical 64-bit shift
// gives. The result is clamped to [lo, hi], inside int8.
__attribute__((target("avx2"))) inline __m256i RequantLanes(__m256i x, const int32_t* bias, const int32_t* mult, const int32_t* shift,
                                                            __m256i voff, __m256i vlo, __m256i vhi) {
  const __m256i nudge = _mm256_set1_epi64x(int64_t(1) << 30), zero = _mm256_setzero_si256(), one = _mm256_set1_epi32(1);
  if (bias) x = _mm256_add_epi32(x, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bias)));
  const __m256i s = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(shift));
  const __m256i right = _mm256_max_epi32(_mm256_sub_epi32(zero, s), zero);
  x = _mm256_sllv_epi32(x, _mm256_max_epi32(s, zero));
  const __m256i m = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(mult));
  const __m256i even = _mm256_srli_epi64(_mm256_add_epi64(_mm256_mul_epi32(x, m), nudge), 31);
  const __m256i odd = _mm256_srli_epi64(_mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(x, 32), _mm256_srli_epi64(m, 32)), nudge), 31);
  const __m256i high = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
  const __m256i mask = _mm256_sub_epi32(_mm256_sllv_epi32(one, right), one);
  const __m256i rem = _mm256_and_si256(high, mask);
  const __m256i threshold = _mm256_add_epi32(_mm256_srai_epi32(mask, 1), _mm256_and_si256(_mm256_cmpgt_epi32(zero, high), one));
  const __m256i v = _mm256_add_epi32(_mm256_srav_epi32(high, right), _mm256_and_si256(_mm256_cmpgt_epi32(rem, threshold), one));
  // Clamped in int32, then wrapped to int8 as the reference's cast does (the identity when [lo, hi]
  // lies inside int8), so that the saturating packs after this keep the value.
  const __m256i clamped = _mm256_min_epi32(_mm256_max_epi32(_mm256_add_epi32(v, voff), vlo), vhi);
  return _mm256_srai_epi32(_mm256_slli_epi32(clamped, 24), 24);
}

__attribute__((target("avx2"))) void RequantizeRowsAvx2(const int32_t* acc, const int32_t* bias, const int32_t* mult, const int32_t* shift,
                                                        int32_t out_off, int32_t lo, int32_t hi, int8_t* out, int64_t n, int64_t rows) {
  const __m256i vlo = _mm256_set1_epi32(lo), vhi = _mm256_set1_epi32(hi), voff = _mm256_set1_epi32(out_off);
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t* a = acc + r * n;
    int8_t* o = out + r * n;
    int64_t c = 0;
    for (; c + 8 <= n; c += 8) {
      const __m256i v = RequantLanes(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + c)), bias ? bias + c : nullptr, mult + c,
                                     shift + c, voff, vlo, vhi);
      const __m128i p16 = _mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(o + c), _mm_packs_epi16(p16, p16));
    }
    if (c < n) tfl::RequantizeRow(a + c, bias ? bias + c : nullptr, mult + c, shift + c, out_off, lo, hi, o + c, n - c);
  }
}


// (A[m][k] - a_zp) * B^T over B packed by PackGemmB, rows [r0, r1) (r0 a multiple of 4), products
// of 16-bit values summed in pairs into int32 lanes (exact: |a - a_zp| and |b - b_zp| are at most
// 255). 4 rows x 16 columns of int32 accumulators live in registers across K. `apack`: 4 * kp * 2
// int16 of scratch.
__attribute__((target("avx2"))) void GemmInt8Avx2Rows(int64_t m, int64_t n, int64_t k, const int8_t* a, int32_t a_zp, const int16_t* bp,
                                                      int64_t kp, const GemmOut& out, int64_t r0, int64_t r1, int16_t* apack,
                                                      int64_t n0 = 0, int64_t n1 = -1) {
  if (n1 < 0) n1 = n;  // columns [n0, n1), n0 a multiple of 16
  const __m256i vzp = _mm256_set1_epi16(static_cast<int16_t>(a_zp));
  const __m256i vlo = _mm256_set1_epi32(out.lo), vhi = _mm256_set1_epi32(out.hi), voff = _mm256_set1_epi32(out.out_off);
  for (int64_t row = r0; row < r1; row += 4) {
    const int64_t rows = std::min<int64_t>(4, m - row);
    for (int64_t i = 0; i < 4; ++i) {  // (a - a_zp) as int16, K padded with zeros to 2 * kp
      int16_t* dst = apack + i * kp * 2;
      int64_t j = 0;
      if (i < rows) {
        const int8_t* src = a + (row + i) * k;
        for (; j + 16 <= k; j += 16)
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + j),
                              _mm256_sub_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + j))), vzp));
        for (; j < k; ++j) dst[j] = static_cast<int16_t>(int32_t(src[j]) - a_zp);
      }
      for (; j < kp * 2; ++j) dst[j] = 0;
    }
    const int16_t* ap[4];
    for (int i = 0; i < 4; ++i) ap[i] = apack + i * kp * 2;
    auto pair = [](const int16_t* p) {  // two int16 as one int32 lane value (memcpy: no aliasing)
      int32_t v;
      std::memcpy(&v, p, sizeof v);
      return v;
    };
    for (int64_t nb = n0; nb < n1; nb += 16) {
      const int16_t* b = bp + (nb / 16) * kp * 32;
      __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
      for (int64_t p = 0; p < kp; ++p) {
        const __m256i b0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + p * 32));
        const __m256i b1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + p * 32 + 16));
        __m256i av = _mm256_set1_epi32(pair(ap[0] + 2 * p));
        c00 = _mm256_add_epi32(c00, _mm256_madd_epi16(av, b0));
        c01 = _mm256_add_epi32(c01, _mm256_madd_epi16(av, b1));
        av = _mm256_set1_epi32(pair(ap[1] + 2 * p));
        c10 = _mm256_add_epi32(c10, _mm256_madd_epi16(av, b0));
        c11 = _mm256_add_epi32(c11, _mm256_madd_epi16(av, b1));
        av = _mm256_set1_epi32(pair(ap[2] + 2 * p));
        c20 = _mm256_add_epi32(c20, _mm256_madd_epi16(av, b0));
        c21 = _mm256_add_epi32(c21, _mm256_madd_epi16(av, b1));
        av = _mm256_set1_epi32(pair(ap[3] + 2 * p));
        c30 = _mm256_add_epi32(c30, _mm256_madd_epi16(av, b0));
        c31 = _mm256_add_epi32(c31, _mm256_madd_epi16(av, b1));
      }
      const __m256i acc[4][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}};
      const int64_t cols = std::min<int64_t>(16, n - nb);
      for (int64_t i = 0; i < rows; ++i) {
        if (!out.q) {
          alignas(32) int32_t tmp[16];
          _mm256_store_si256(reinterpret_cast<__m256i*>(tmp), acc[i][0]);
          _mm256_store_si256(reinterpret_cast<__m256i*>(tmp + 8), acc[i][1]);
          std::memcpy(out.acc + (row + i) * n + nb, tmp, static_cast<size_t>(cols) * sizeof(int32_t));
        } else if (cols == 16) {
          const int32_t* bias = out.bias ? out.bias + nb : nullptr;
          const __m256i v0 = RequantLanes(acc[i][0], bias, out.mult + nb, out.shift + nb, voff, vlo, vhi);
          const __m256i v1 = RequantLanes(acc[i][1], bias ? bias + 8 : nullptr, out.mult + nb + 8, out.shift + nb + 8, voff, vlo, vhi);
          const __m256i p16 = _mm256_permute4x64_epi64(_mm256_packs_epi32(v0, v1), 0xD8);
          _mm_storeu_si128(reinterpret_cast<__m128i*>(out.q + (row + i) * n + nb),
                           _mm_packs_epi16(_mm256_castsi256_si128(p16), _mm256_extracti128_si256(p16, 1)));
        } else {
          alignas(32) int32_t tmp[16];
          _mm256_store_si256(reinterpret_cast<__m256i*>(tmp), acc[i][0]);
          _mm256_store_si256(reinterpret_cast<__m256i*>(tmp + 8), acc[i][1]);
          tfl::RequantizeRow(tmp, out.bias ? out.bias + nb : nullptr, out.mult + nb, out.shift + nb, out.out_off, out.lo, out.hi,
                             out.q + (row + i) * n + nb, cols);
        }
      }
    }
  }
}

// ---- AVX-512 VNNI: u8 x s8 products summed in fours into int32 lanes (vpdpbusd, exact) ---------
// (A - a_zp) * W^T with W = B - 0 as int8: A is shifted to unsigned bytes (a + 128), so
//   sum (a - a_zp) * w = sum (a + 128) * w - (128 + a_zp) * sum w,
// the column sums of W computed once when W is packed. Every step is exact int32 arithmetic, so
// the result has TFLite's bits.
// GCC 12's AVX-512 intrinsics headers start some results from _mm512_undefined_*, which its
// -Wmaybe-uninitialized reports at every use; the values are fully written.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define WEFT_VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")))


// VnniEpi's constants for the 16 lanes at `col`, in registers.
struct VnniRescaler {
  __m512i base, m, m_odd, add_e, add_o, neg_e, neg_o, sh_e, sh_o, left;
  bool has_left;
};
WEFT_VNNI_TARGET inline VnniRescaler LoadRescaler(const VnniEpi& e, const int32_t* mult, int64_t col, __mmask16 keep) {
  VnniRescaler k;
  k.base = _mm512_loadu_si512(e.base + col);
  k.m = _mm512_maskz_loadu_epi32(keep, mult + col);
  k.m_odd = _mm512_srli_epi64(k.m, 32);
  k.add_e = _mm512_loadu_si512(e.add + col);
  k.add_o = _mm512_loadu_si512(e.add + col + 8);
  k.neg_e = _mm512_loadu_si512(e.add_neg + col);
  k.neg_o = _mm512_loadu_si512(e.add_neg + col + 8);
  k.sh_e = _mm512_loadu_si512(e.shift + col);
  k.sh_o = _mm512_loadu_si512(e.shift + col + 8);
  k.has_left = e.left != nullptr;
  k.left = k.has_left ? _mm512_loadu_si512(e.left + col) : _mm512_setzero_si512();
  return k;
}
// (sums - base) rescaled, per lane (tfl::OneFloorRescale; no output offset or clamp yet).
WEFT_VNNI_TARGET inline __m512i Rescale(const VnniRescaler& k, __m512i sums) {
  __m512i x = _mm512_sub_epi32(sums, k.base);
  if (k.has_left) x = _mm512_sllv_epi32(x, k.left);
  const __m512i below = _mm512_set1_epi64(-(int64_t(1) << 30));
  const __m512i pe = _mm512_mul_epi32(x, k.m), po = _mm512_mul_epi32(_mm512_srli_epi64(x, 32), k.m_odd);
  const __m512i te = _mm512_mask_add_epi64(_mm512_add_epi64(pe, k.add_e), _mm512_cmplt_epi64_mask(pe, below), pe, k.neg_e);
  const __m512i to = _mm512_mask_add_epi64(_mm512_add_epi64(po, k.add_o), _mm512_cmplt_epi64_mask(po, below), po, k.neg_o);
  return _mm512_mask_blend_epi32(0xAAAA, _mm512_srav_epi64(te, k.sh_e), _mm512_slli_epi64(_mm512_srav_epi64(to, k.sh_o), 32));
}

// tfl::FloatRescaler's constants for the 16 columns at `col`.
WEFT_VNNI_TARGET inline tfl::FloatRescaler LoadFloatRescaler(const VnniEpi& e, const int32_t* mult, int64_t col, __mmask16 keep,
                                                             int32_t out_off) {
  return tfl::LoadFloatRescaler(e.fscale + col, mult + col, keep, out_off);
}
// Whether RescaleFloat applies: its scales exist and the output is int8 with an offset in range.
inline bool FloatRescaleFits(const VnniEpi& e, int32_t out_off, int32_t lo, int32_t hi) {
  return e.fscale && out_off >= -128 && out_off <= 127 && lo >= -128 && hi <= 127 && lo <= hi;
}

// `count` vectors of 16 depthwise sums (position `pos` of the constants, `step` int32 apart)
// rescaled in place by RescaleFloat (exactly where it is unsure), plus the offset, clamped.
WEFT_VNNI_TARGET inline void DwRescaleFloat(const VnniEpi& e, const int32_t* mult, int64_t pos, int32_t* v, int64_t step, int64_t count,
                                            int32_t out_off, __m512i lo32, __m512i hi32) {
  const tfl::FloatRescaler f = LoadFloatRescaler(e, mult, pos, 0xFFFF, out_off);
  const __m512i base = _mm512_loadu_si512(e.base + pos);
  for (int64_t i = 0; i < count; ++i, v += step) {
    __mmask16 unsure = 0;
    const __m512i sums = _mm512_loadu_si512(v);
    __m512i r = tfl::RescaleFloat(f, _mm512_sub_epi32(sums, base), unsure);
    if (unsure) r = _mm512_add_epi32(Rescale(LoadRescaler(e, mult, pos, 0xFFFF), sums), _mm512_set1_epi32(out_off));
    _mm512_storeu_si512(v, _mm512_min_epi32(_mm512_max_epi32(r, lo32), hi32));
  }
}

// Rows of 16 int32 sums (`ld` apart) at column `col` of the output: corrected, then stored, or
// rescaled and stored as int8.
WEFT_VNNI_TARGET inline void VnniEpilogue(const int32_t* tile, int64_t ld, int64_t rows, int64_t n, int64_t col, const VnniEpi& e,
                                          const GemmOut& out, int64_t row0) {
  const bool full = n - col >= 16;
  const __mmask16 keep = full ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << (n - col)) - 1);
  if (out.ff) {  // base holds the bias too
    const __m512i base = _mm512_loadu_si512(e.base + col);
    const __m512 vs = _mm512_maskz_loadu_ps(keep, out.fscale + col);
    const __m512 vb = out.fbias ? _mm512_maskz_loadu_ps(keep, out.fbias + col) : _mm512_setzero_ps();
    float* dst = out.ff + row0 * out.ldf + col;
    for (int64_t i = 0; i < rows; ++i) {
      __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_load_si512(tile + i * ld), base)), vs);
      if (out.fbias) f = _mm512_add_ps(f, vb);
      _mm512_mask_storeu_ps(dst + i * out.ldf, keep, f);
    }
    return;
  }
  if (out.fq) {  // base holds the bias too
    const __m512i base = _mm512_loadu_si512(e.base + col);
    const __m512 vs = _mm512_maskz_loadu_ps(keep, out.fscale + col);
    const __m512 vz = _mm512_set1_ps(out.fz), vlo = _mm512_set1_ps(out.flo), vhi = _mm512_set1_ps(out.fhi);
    uint8_t* dst = out.fq + row0 * out.ldq + col;
    for (int64_t i = 0; i < rows; ++i) {
      __m512 f = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_load_si512(tile + i * ld), base));
      f = _mm512_roundscale_ps(_mm512_mul_ps(f, vs), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      f = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(f, vz), vlo), vhi);
      _mm512_mask_cvtepi32_storeu_epi8(dst + i * out.ldq, keep, _mm512_cvtps_epi32(f));
    }
    return;
  }
  if (!out.q) {
    const __m512i base = _mm512_loadu_si512(e.base + col);
    int32_t* dst = out.acc + row0 * n + col;
    for (int64_t i = 0; i < rows; ++i) _mm512_mask_storeu_epi32(dst + i * n, keep, _mm512_sub_epi32(_mm512_load_si512(tile + i * ld), base));
    return;
  }
  int8_t* dst = out.q + row0 * n + col;
  if (FloatRescaleFits(e, out.out_off, out.lo, out.hi)) {
    const tfl::FloatRescaler f = LoadFloatRescaler(e, out.mult, col, keep, out.out_off);
    const __m512i base = _mm512_loadu_si512(e.base + col);
    const bool clamp = out.lo > -128 || out.hi < 127;
    const __m128i lo8 = _mm_set1_epi8(static_cast<char>(out.lo)), hi8 = _mm_set1_epi8(static_cast<char>(out.hi));
    for (int64_t i = 0; i < rows; ++i) {
      __mmask16 unsure = 0;
      const __m512i sums = _mm512_load_si512(tile + i * ld);
      __m512i v = tfl::RescaleFloat(f, _mm512_sub_epi32(sums, base), unsure);
      if (unsure & keep) v = _mm512_add_epi32(Rescale(LoadRescaler(e, out.mult, col, keep), sums), _mm512_set1_epi32(out.out_off));
      __m128i q = _mm512_cvtsepi32_epi8(v);
      if (clamp) q = _mm_min_epi8(_mm_max_epi8(q, lo8), hi8);
      if (full) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i * n), q);
      } else {
        _mm_mask_storeu_epi8(dst + i * n, keep, q);
      }
    }
    return;
  }
  const VnniRescaler k = LoadRescaler(e, out.mult, col, keep);
  const __m512i voff = _mm512_set1_epi32(out.out_off);
  // The reference clamps to [lo, hi] in int32, then casts to int8. With [lo, hi] inside int8 (every
  // sensible output zero point) that is a saturating narrowing, then a byte clamp if narrower;
  // otherwise the int32 clamp and a truncating narrowing.
  const bool in_int8 = out.lo >= -128 && out.lo <= 127 && out.hi >= -128 && out.hi <= 127;
  const bool clamp = out.lo > -128 || out.hi < 127;
  const __m128i lo8 = _mm_set1_epi8(static_cast<char>(std::max(out.lo, -128))), hi8 = _mm_set1_epi8(static_cast<char>(std::min(out.hi, 127)));
  const __m512i lo32 = _mm512_set1_epi32(out.lo), hi32 = _mm512_set1_epi32(out.hi);
  for (int64_t i = 0; i < rows; ++i) {
    const __m512i v = _mm512_add_epi32(Rescale(k, _mm512_load_si512(tile + i * ld)), voff);
    __m128i q;
    if (in_int8) {
      q = _mm512_cvtsepi32_epi8(v);
      if (clamp) q = _mm_min_epi8(_mm_max_epi8(q, lo8), hi8);
    } else {
      q = _mm512_cvtepi32_epi8(_mm512_min_epi32(_mm512_max_epi32(v, lo32), hi32));
    }
    if (full) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i * n), q);
    } else {
      _mm_mask_storeu_epi8(dst + i * n, keep, q);
    }
  }
}

// MR rows (packed unsigned, `stride` bytes apart) x NB blocks of 16 columns from column nb.
// `rows` <= MR of them are kept.
template <int MR, int NB>  // MR <= 8, NB <= 2
WEFT_VNNI_TARGET void VnniTile(const uint8_t* ap, int64_t stride, const VnniB& w, int64_t nb, const VnniEpi& e, const GemmOut& out,
                               int64_t row0, int64_t rows) {
  const int64_t groups = w.groups();
  const int8_t* b = w.data + (nb / 16) * groups * 64;
  // The accumulators as named registers (an array of them made GCC copy registers every step).
#define WEFT_VNNI_ROW(i)                                                                                \
  __m512i c##i##0 = _mm512_setzero_si512(), c##i##1 = _mm512_setzero_si512();
  WEFT_VNNI_ROW(0) WEFT_VNNI_ROW(1) WEFT_VNNI_ROW(2) WEFT_VNNI_ROW(3) WEFT_VNNI_ROW(4) WEFT_VNNI_ROW(5) WEFT_VNNI_ROW(6) WEFT_VNNI_ROW(7)
#undef WEFT_VNNI_ROW
  const int8_t* b1 = b + (NB > 1 ? groups * 64 : 0);
  for (int64_t g = 0; g < groups; ++g) {
    const __m512i bv0 = _mm512_loadu_si512(b + g * 64);
    const __m512i bv1 = NB > 1 ? _mm512_loadu_si512(b1 + g * 64) : _mm512_setzero_si512();
#define WEFT_VNNI_ROW(i)                                                                                \
  if (i < MR) {                                                                                         \
    int32_t word;                                                                                       \
    std::memcpy(&word, ap + i * stride + g * 4, sizeof word);                                           \
    const __m512i av = _mm512_set1_epi32(word);                                                         \
    c##i##0 = _mm512_dpbusd_epi32(c##i##0, av, bv0);                                                    \
    if (NB > 1) c##i##1 = _mm512_dpbusd_epi32(c##i##1, av, bv1);                                        \
  }
    WEFT_VNNI_ROW(0) WEFT_VNNI_ROW(1) WEFT_VNNI_ROW(2) WEFT_VNNI_ROW(3) WEFT_VNNI_ROW(4) WEFT_VNNI_ROW(5) WEFT_VNNI_ROW(6) WEFT_VNNI_ROW(7)
#undef WEFT_VNNI_ROW
  }
  alignas(64) int32_t tile[MR][NB * 16];
#define WEFT_VNNI_ROW(i)                                                                                \
  if (i < MR) {                                                                                         \
    _mm512_store_si512(&tile[i][0], c##i##0);                                                           \
    if (NB > 1) _mm512_store_si512(&tile[i][16], c##i##1);                                              \
  }
  WEFT_VNNI_ROW(0) WEFT_VNNI_ROW(1) WEFT_VNNI_ROW(2) WEFT_VNNI_ROW(3) WEFT_VNNI_ROW(4) WEFT_VNNI_ROW(5) WEFT_VNNI_ROW(6) WEFT_VNNI_ROW(7)
#undef WEFT_VNNI_ROW
  for (int j = 0; j < NB && nb + j * 16 < w.n; ++j) VnniEpilogue(&tile[0][j * 16], NB * 16, rows, w.n, nb + j * 16, e, out, row0);
}

// Rows [r0, r1) of A as unsigned bytes (a + 128), k padded with zeros to a multiple of 4.
WEFT_VNNI_TARGET void PackVnniA(const int8_t* a, int64_t k, int64_t r0, int64_t r1, uint8_t* dst, int64_t stride) {
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  for (int64_t r = r0; r < r1; ++r) {
    const int8_t* src = a + r * k;
    uint8_t* d = dst + (r - r0) * stride;
    int64_t j = 0;
    for (; j + 64 <= k; j += 64) _mm512_storeu_si512(d + j, _mm512_xor_si512(_mm512_loadu_si512(src + j), flip));
    if (j < stride) {  // the last k % 64 values, then zeros (past the stride too: the scratch has room)
      const __mmask64 in = (__mmask64(1) << (k - j)) - 1;
      _mm512_storeu_si512(d + j, _mm512_maskz_mov_epi8(in, _mm512_xor_si512(_mm512_maskz_loadu_epi8(in, src + j), flip)));
    }
  }
}

// The packers below write whole 64-byte vectors: up to 63 bytes past what they fill, which the
// next segment or row overwrites (the scratch has 64 bytes to spare past its last row). Reads
// stay inside the source (masked at its end).
// `len` bytes of src + 128 into dst; `end`: the end of src's buffer.
WEFT_VNNI_TARGET inline void FlipCopy(uint8_t* dst, const int8_t* src, int64_t len, const int8_t* end) {
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  for (int64_t j = 0; j < len; j += 64) {
    const int64_t avail = end - (src + j);
    const __m512i v = avail >= 64 ? _mm512_loadu_si512(src + j) : _mm512_maskz_loadu_epi8((__mmask64(1) << avail) - 1, src + j);
    _mm512_storeu_si512(dst + j, _mm512_xor_si512(v, flip));
  }
}
WEFT_VNNI_TARGET inline void FillBytes(uint8_t* dst, uint8_t v, int64_t len) {
  const __m512i vv = _mm512_set1_epi8(static_cast<char>(v));
  for (int64_t j = 0; j < len; j += 64) _mm512_storeu_si512(dst + j, vv);
}

// PackVnniConvRows for k <= 64 * V without dilation along the width (a first layer's few
// channels, small kernels): a whole row in V vectors kept in registers, each kernel row's inside
// taps by masked loads placed at their offsets (masked-off bytes are never read), the zero point
// elsewhere, zeros past k; whole-vector stores.
template <int V>
WEFT_VNNI_TARGET void PackConvRowsInRegisters(const VnniConv& cv, int64_t r0, int64_t r1, uint8_t* dst, int64_t stride) {
  const int64_t k = cv.kh * cv.kw * cv.ic, seg_len = cv.kw * cv.ic;
  auto low_bits = [](int64_t count) { return count >= 64 ? ~__mmask64(0) : count <= 0 ? __mmask64(0) : (__mmask64(1) << count) - 1; };
  OutputPixel px(cv, r0);
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  __m512i init[V];
  for (int w = 0; w < V; ++w)
    init[w] = _mm512_mask_blend_epi8(low_bits(k - 64 * w), _mm512_set1_epi8(static_cast<char>(0x80)), _mm512_set1_epi8(cv.zp));
  for (int64_t r = r0; r < r1; ++r, px.Next()) {
    const int64_t ix0 = px.ox * cv.sw - cv.pw;
    const int64_t kx0 = std::min(cv.kw, std::max<int64_t>(0, -ix0)), kx1 = std::max(kx0, std::min(cv.kw, cv.iw - ix0));
    __m512i v[V];
    for (int w = 0; w < V; ++w) v[w] = init[w];
    if (kx1 > kx0)
      for (int64_t ky = 0; ky < cv.kh; ++ky) {
        const int64_t iy = px.oy * cv.sh - cv.ph + ky * cv.dh;
        if (iy < 0 || iy >= cv.ih) continue;
        const int64_t lane0 = ky * seg_len + kx0 * cv.ic, lane1 = lane0 + (kx1 - kx0) * cv.ic;
        // byte j of the row reads input byte (line + (ix0 + kx0) * ic) + (j - lane0)
        const uintptr_t at = reinterpret_cast<uintptr_t>(cv.x + ((px.bn * cv.ih + iy) * cv.iw + ix0 + kx0) * cv.ic) - static_cast<uintptr_t>(lane0);
        if (V == 1) {  // lane1 <= k <= 64
          v[0] = _mm512_mask_loadu_epi8(v[0], low_bits(lane1 - lane0) << lane0, reinterpret_cast<const void*>(at));
          continue;
        }
        for (int w = 0; w < V; ++w) {
          const __mmask64 mk = low_bits(lane1 - 64 * w) & ~low_bits(lane0 - 64 * w);
          if (mk) v[w] = _mm512_mask_loadu_epi8(v[w], mk, reinterpret_cast<const void*>(at + static_cast<uintptr_t>(64 * w)));
        }
      }
    uint8_t* row = dst + (r - r0) * stride;
    for (int w = 0; w < V; ++w) _mm512_storeu_si512(row + 64 * w, _mm512_xor_si512(v[w], flip));
  }
}

WEFT_VNNI_TARGET void PackVnniConvRows(const VnniConv& cv, int64_t r0, int64_t r1, uint8_t* dst, int64_t stride) {
  const int64_t k = cv.kh * cv.kw * cv.ic, seg_len = cv.kw * cv.ic;
  const uint8_t zpu = static_cast<uint8_t>(cv.zp) ^ 0x80;
  if (cv.dw == 1 && k <= 256) {
    switch ((k + 63) / 64) {
      case 1: return PackConvRowsInRegisters<1>(cv, r0, r1, dst, stride);
      case 2: return PackConvRowsInRegisters<2>(cv, r0, r1, dst, stride);
      case 3: return PackConvRowsInRegisters<3>(cv, r0, r1, dst, stride);
      default: return PackConvRowsInRegisters<4>(cv, r0, r1, dst, stride);
    }
  }
  OutputPixel px(cv, r0);
  for (int64_t r = r0; r < r1; ++r, px.Next()) {
    uint8_t* row = dst + (r - r0) * stride;
    const int64_t ix0 = px.ox * cv.sw - cv.pw;
    const int64_t kx0 = std::min(cv.kw, std::max<int64_t>(0, -ix0)), kx1 = std::max(kx0, std::min(cv.kw, cv.iw - ix0));
    for (int64_t ky = 0; ky < cv.kh; ++ky) {
      uint8_t* seg = row + ky * seg_len;
      const int64_t iy = px.oy * cv.sh - cv.ph + ky * cv.dh;
      if (iy < 0 || iy >= cv.ih) {
        FillBytes(seg, zpu, seg_len);
        continue;
      }
      const int8_t* line = cv.x + (px.bn * cv.ih + iy) * cv.iw * cv.ic;
      if (cv.dw == 1) {  // the taps inside are contiguous: one copy, zero points around it
        if (kx0 > 0) FillBytes(seg, zpu, kx0 * cv.ic);
        if (kx1 > kx0) FlipCopy(seg + kx0 * cv.ic, line + (ix0 + kx0) * cv.ic, (kx1 - kx0) * cv.ic, cv.end);
        if (kx1 < cv.kw) FillBytes(seg + kx1 * cv.ic, zpu, (cv.kw - kx1) * cv.ic);
        continue;
      }
      for (int64_t kx = 0; kx < cv.kw; ++kx) {
        const int64_t ix = ix0 + kx * cv.dw;
        if (ix < 0 || ix >= cv.iw) {
          FillBytes(seg + kx * cv.ic, zpu, cv.ic);
        } else {
          FlipCopy(seg + kx * cv.ic, line + ix * cv.ic, cv.ic, cv.end);
        }
      }
    }
    for (int64_t j = k; j < stride; ++j) row[j] = 0;  // k up to a multiple of 4: zeros (the packed weights are zero there)
  }
}

// Rows [r0, r1) x column blocks [b0, b1) of 16. `ap`: (8 rows x stride) bytes of scratch. The
// rows come from A, or from a convolution's input when `cv` is given.
template <int MR>
WEFT_VNNI_TARGET void VnniRowsOf(const int8_t* a, const VnniConv* cv, int64_t k, int64_t row, int64_t rows, const VnniB& w, int64_t b0,
                                 int64_t b1, const VnniEpi& e, const GemmOut& out, uint8_t* ap, int64_t stride) {
  if (cv) {
    PackVnniConvRows(*cv, row, row + rows, ap, stride);
  } else {
    PackVnniA(a, k, row, row + rows, ap, stride);
  }
  int64_t blk = b0;
  for (; blk + 2 <= b1; blk += 2) VnniTile<MR, 2>(ap, stride, w, blk * 16, e, out, row, rows);
  if (blk < b1) VnniTile<MR, 1>(ap, stride, w, blk * 16, e, out, row, rows);
}

// ---- AMX (the tile unit of Sapphire Rapids and later): tdpbusd on 16 x 64-byte tiles ------------
// The same u8 x s8 sums as VnniTile: A rows as unsigned bytes with a row stride of k rounded up to
// 64 (zeros past k), B as packed for VNNI (one tile row is one group of 4 k for the 16 columns of a
// block, so 16 consecutive groups of a block are one tile; groups past the block's last multiply
// A's zeros, and the packed data has room past its end for them). Four accumulator tiles: 32 rows
// x 32 columns. The sums go through VnniEpilogue like VnniTile's.

// Whether the CPU has AMX-TILE and AMX-INT8, the kernel grants this process the tile state
// (Linux: arch_prctl ARCH_REQ_XCOMP_PERM for XTILEDATA), and neither WEFT_DISABLE_VNNI=1 nor
// WEFT_DISABLE_AMX=1 turns it off.
bool HasAmx() {
#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
  static const bool ok = [] {
    const char* off = std::getenv("WEFT_DISABLE_AMX");
    if ((off && std::string(off) == "1") || !HasVnni512()) return false;
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d >> 24 & 1) || !(d >> 25 & 1)) return false;
    constexpr long kReqXcompPerm = 0x1023, kXtiledata = 18;
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXtiledata) == 0;
  }();
  return ok;
#else
  return false;
#endif
}

#define WEFT_AMX_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,amx-tile,amx-int8")))
struct alignas(64) AmxConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Rows [r0, r1) (at least 16) of the GEMM on the tile unit, in blocks of 32 or 16 rows; returns
// the first row it left (fewer than 16 left), for VnniTile.
// Whole tiles of 16 rows of [r0, r1), the column blocks [b0, b1). The rows are packed a chunk at a
// time (up to 256 KiB of them), and for each chunk every pair of column blocks runs over all its
// rows: the pair's weights stay in the near caches while the chunk's rows pass, so the weights are
// read from memory once per chunk, not once per row tile.
WEFT_AMX_TARGET int64_t GemmAmxRows(int64_t k, const int8_t* a, const VnniConv* cv, const VnniB& w, const VnniEpi& e, const GemmOut& out,
                                    int64_t r0, int64_t r1, int64_t b0, int64_t b1) {
  const int64_t groups = w.groups(), s64 = (groups * 4 + 63) / 64 * 64;
  const int64_t end = r0 + (r1 - r0) / 16 * 16;
  if (end <= r0) return r0;
  const int64_t chunk = std::max<int64_t>(32, (256 * 1024 / s64) / 32 * 32);
  thread_local std::vector<uint8_t> scratch;  // a chunk of rows of A, and 64 bytes to spare for the packers
  const size_t need = static_cast<size_t>(std::min(chunk, end - r0) * s64 + 128);
  if (scratch.size() < need) scratch.resize(need);
  uint8_t* ap = scratch.data() + (64 - reinterpret_cast<uintptr_t>(scratch.data()) % 64) % 64;
  AmxConfig cfg;
  for (int t = 0; t < 8; ++t) cfg.colsb[t] = 64, cfg.rows[t] = 16;
  _tile_loadconfig(&cfg);
  alignas(64) int32_t c[4][16 * 16];
  for (int64_t c0 = r0; c0 < end; c0 += chunk) {
    const int64_t c1 = std::min(end, c0 + chunk);
    if (cv) {
      PackVnniConvRows(*cv, c0, c1, ap, s64);
    } else {
      PackVnniA(a, k, c0, c1, ap, s64);
    }
    for (int64_t blk = b0; blk < b1; blk += 2) {
      const bool two = blk + 1 < b1;
      const int8_t* bb0 = w.data + blk * groups * 64;
      const int8_t* bb1 = bb0 + groups * 64;
      for (int64_t row = c0; row < c1;) {
        const int64_t mt = row + 32 <= c1 ? 2 : 1;
        const uint8_t* at = ap + (row - c0) * s64;
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
        for (int64_t kk = 0; kk < s64; kk += 64) {
          _tile_loadd(4, at + kk, s64);
          _tile_loadd(6, bb0 + kk / 4 * 64, 64);
          _tile_dpbusd(0, 4, 6);
          if (two) {
            _tile_loadd(7, bb1 + kk / 4 * 64, 64);
            _tile_dpbusd(1, 4, 7);
          }
          if (mt == 2) {
            _tile_loadd(5, at + 16 * s64 + kk, s64);
            _tile_dpbusd(2, 5, 6);
            if (two) _tile_dpbusd(3, 5, 7);
          }
        }
        _tile_stored(0, c[0], 64);
        if (two) _tile_stored(1, c[1], 64);
        if (mt == 2) {
          _tile_stored(2, c[2], 64);
          if (two) _tile_stored(3, c[3], 64);
        }
        for (int64_t rt = 0; rt < mt; ++rt)
          for (int64_t j = 0; j < (two ? 2 : 1); ++j) {
            const int64_t col = (blk + j) * 16;
            if (col < w.n) VnniEpilogue(c[rt * 2 + j], 16, 16, w.n, col, e, out, row + rt * 16);
          }
        row += 16 * mt;
      }
    }
  }
  _tile_release();
  return end;
}

WEFT_VNNI_TARGET void GemmVnniRows(int64_t k, const int8_t* a, const VnniConv* cv, const VnniB& w, const VnniEpi& e, const GemmOut& out,
                                   int64_t r0, int64_t r1, int64_t b0, int64_t b1, uint8_t* ap) {
  const int64_t stride = w.groups() * 4;
  int64_t row = r0;
  if (r1 - r0 >= 16 && HasAmx()) row = GemmAmxRows(k, a, cv, w, e, out, r0, r1, b0, b1);
  for (; row + 8 <= r1; row += 8) VnniRowsOf<8>(a, cv, k, row, 8, w, b0, b1, e, out, ap, stride);
  if (r1 - row >= 4) VnniRowsOf<4>(a, cv, k, row, 4, w, b0, b1, e, out, ap, stride), row += 4;
  if (r1 - row >= 2) VnniRowsOf<2>(a, cv, k, row, 2, w, b0, b1, e, out, ap, stride), row += 2;
  if (r1 - row >= 1) VnniRowsOf<1>(a, cv, k, row, 1, w, b0, b1, e, out, ap, stride);
}

// ---- depthwise convolution on VNNI ---------------------------------------------------------------
// Four taps of 64 channels per step: the four taps' bytes interleaved so that each 32-bit lane
// holds one channel's four taps (byte, then word unpacks), then one vpdpbusd per 16 channels with
// the filter packed in the same order. The unpacks stay within 128-bit lanes, so sums vector q's
// element 4L + j is channel 16L + 4q + j of the block ("position" 16q + 4L + j, which the
// per-channel constants follow); packing the four rescaled vectors back to bytes, within lanes
// too, puts the channels back in order. The input as unsigned bytes (x + 128) is corrected per
// channel by (in_off - 128) * sum of its taps; a tap outside the input reads zero points, which
// the correction turns into nothing, as TFLite skips it.
// Channels past the last full block of 64 run in one block of 32 (256-bit vectors, two lanes) if
// 32 or more are left, then in blocks of 16 (128-bit vectors, one lane: there the positions are
// the channels' own order).
struct DwVnni {
  const int8_t* zp_line = nullptr;  // c bytes of the input zero point
  const int8_t* fpack = nullptr;    // [blocks][groups][4 vectors][64], then [blocks16][groups][4][16]
  VnniEpi e;                        // by position; base = -(bias + (in_off - 128) * sum of taps)
  const int32_t* mult = nullptr;    // by position
  int64_t ih, iw, c, ow, kh, kw, sh, sw, dh, dw, ph, pw, groups, blocks, blocks32, blocks16;
  int32_t out_off, lo, hi;
};
constexpr int64_t kDwVnniMaxTaps = 64;

// The channel at position `pos` (positions past c64, the channels in full blocks of 64, are the
// channels themselves).
inline int64_t DwVnniChannel(int64_t pos, int64_t c64, int64_t blocks32) {
  if (pos < c64) {
    const int64_t p = pos % 64;  // 16q + 4L + j
    return pos - p + 16 * ((p % 16) / 4) + 4 * (p / 16) + p % 4;
  }
  if (pos < c64 + 32 * blocks32) {
    const int64_t p = pos - c64;  // 8q + 4L + j
    return c64 + 16 * ((p % 8) / 4) + 4 * (p / 8) + p % 4;
  }
  return pos;
}

// How DepthwiseVnniRow's blocks cover c channels; or, for DepthwiseFlatRow (Flat), how blocks of
// 64 positions cover one period of a flattened row: lcm(channels, 64) positions, position p being
// channel p % channels.
struct DwVnniLayout {
  int64_t c, taps, groups, blocks, c64, blocks32, c32, blocks16, cp, channels;
  size_t fpack_bytes;
  DwVnniLayout(int64_t channels_, int64_t kh, int64_t kw) {
    c = channels_, channels = channels_, taps = kh * kw, groups = (taps + 3) / 4, blocks = c / 64, c64 = blocks * 64;
    blocks32 = c - c64 >= 32 ? 1 : 0, c32 = c64 + 32 * blocks32, blocks16 = (c - c32 + 15) / 16, cp = c32 + blocks16 * 16;
    fpack_bytes = static_cast<size_t>(blocks * groups * 256 + blocks32 * groups * 128 + blocks16 * groups * 64);
  }
  static DwVnniLayout Flat(int64_t channels_, int64_t kh, int64_t kw) {
    DwVnniLayout L(FlatPeriod(channels_), kh, kw);
    L.channels = channels_;
    return L;
  }
  // lcm(channels, 64)
  static int64_t FlatPeriod(int64_t channels_) { return channels_ / std::gcd(channels_, int64_t{64}) * 64; }
};

// The filter packed for DepthwiseVnniRow and the per-position constants: i32 = base, mult, left
// ([cp] each), i64 = add, add_neg, shift ([cp] each, even then odd lanes per 16). Returns whether
// any left shift is non-zero.
// What FillDwVnni found: some position has a left shift; RescaleFloat's scales were written.
struct DwFilled {
  bool any_left = false, fast = false;
};
// i32: base, mult and left per position, then RescaleFloat's scales (float bits); i64: add,
// add_neg and shift (cp each).
DwFilled FillDwVnni(const DwVnniLayout& L, const int8_t* pw, const int32_t* bias, const ChannelScales& cs, int32_t in_off, int8_t* fpack,
                    int32_t* i32, int64_t* i64) {
  const int64_t c = L.c, taps = L.taps, groups = L.groups, blocks = L.blocks, c64 = L.c64, blocks32 = L.blocks32, c32 = L.c32;
  const int64_t blocks16 = L.blocks16, cp = L.cp, nc = L.channels;
  // the filter's value for position `pos` (channel pos % nc) and tap t; positions past c are padding
  auto at = [&](int64_t pos, int64_t t) { return pos < c && t < taps ? pw[t * nc + pos % nc] : int8_t{0}; };
  for (int64_t blk = 0; blk < blocks; ++blk)
    for (int64_t gr = 0; gr < groups; ++gr)
      for (int64_t q = 0; q < 4; ++q)
        for (int64_t byte = 0; byte < 64; ++byte) {
          const int64_t lane = byte / 16, j = (byte % 16) / 4, t = byte % 4;
          fpack[((blk * groups + gr) * 4 + q) * 64 + byte] = at(blk * 64 + 16 * lane + 4 * q + j, 4 * gr + t);
        }
  for (int64_t gr = 0; gr < groups * blocks32; ++gr)  // two 128-bit lanes
    for (int64_t q = 0; q < 4; ++q)
      for (int64_t byte = 0; byte < 32; ++byte) {
        const int64_t lane = byte / 16, j = (byte % 16) / 4, t = byte % 4;
        fpack[blocks * groups * 256 + (gr * 4 + q) * 32 + byte] = at(c64 + 16 * lane + 4 * q + j, 4 * gr + t);
      }
  for (int64_t b16 = 0; b16 < blocks16; ++b16)  // one 128-bit lane: vector q's bytes 4j + t hold channel 4q + j
    for (int64_t gr = 0; gr < groups; ++gr)
      for (int64_t q = 0; q < 4; ++q)
        for (int64_t byte = 0; byte < 16; ++byte)
          fpack[blocks * groups * 256 + blocks32 * groups * 128 + ((b16 * groups + gr) * 4 + q) * 16 + byte] =
              at(c32 + b16 * 16 + 4 * q + byte / 4, 4 * gr + byte % 4);
  int32_t *base = i32, *mult = i32 + cp, *left = i32 + 2 * cp;
  int64_t *add = i64, *add_neg = i64 + cp, *shift = i64 + 2 * cp;
  bool any_left = false;
  for (int64_t pos = 0; pos < cp; ++pos) {
    const int64_t p = DwVnniChannel(pos, c64, blocks32);
    const bool real = p < c;
    const int64_t ch = p % nc;
    uint32_t sum = 0;
    for (int64_t t = 0; real && t < taps; ++t) sum += static_cast<uint32_t>(static_cast<int32_t>(pw[t * nc + ch]));
    // base = -(bias + (in_off - 128) * sum), modulo 2^32 as the sums are
    const uint32_t corr = static_cast<uint32_t>(real && bias ? bias[ch] : 0) + static_cast<uint32_t>(in_off - 128) * sum;
    base[pos] = static_cast<int32_t>(0u - corr);
    mult[pos] = real ? cs.mult[static_cast<size_t>(ch)] : 0;
    const tfl::OneFloorRescale f(real ? cs.shift[static_cast<size_t>(ch)] : 0);
    const int64_t lane = (pos / 16) * 16 + (pos % 2) * 8 + (pos % 16) / 2;
    add[lane] = f.add;
    add_neg[lane] = f.add_neg;
    shift[lane] = f.shift;
    left[pos] = f.left;
    any_left = any_left || f.left != 0;
  }
  DwFilled filled;
  filled.any_left = any_left;
  std::vector<int32_t> shifts(static_cast<size_t>(cp));  // by position; padding takes a placeholder
  for (int64_t pos = 0; pos < cp; ++pos) {
    const int64_t p = DwVnniChannel(pos, c64, blocks32);
    shifts[static_cast<size_t>(pos)] = p < c ? cs.shift[static_cast<size_t>(p % nc)] : -2;
  }
  filled.fast = tfl::FillFloatScales(shifts.data(), cp, cp, reinterpret_cast<float*>(i32 + 3 * cp));
  return filled;
}

// Output row oy: the sums of every pixel into `sums` ([ow][positions]), rescaled there one 16-lane
// position at a time (its constants loaded once per row), then packed to bytes.
WEFT_VNNI_TARGET void DepthwiseVnniRow(const DwVnni& d, const int8_t* image, int64_t oy, int8_t* out, int32_t* sums) {
  int64_t ky0, ky1;
  InsideTaps(oy, d.sh, d.ph, d.dh, d.ih, d.kh, &ky0, &ky1);
  const int64_t taps = d.kh * d.kw, slots = d.groups * 4, cp = d.blocks * 64 + d.blocks32 * 32 + d.blocks16 * 16;
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  int64_t tap_ky[kDwVnniMaxTaps], tap_kx[kDwVnniMaxTaps], tap_off[kDwVnniMaxTaps];
  for (int64_t t = 0; t < slots; ++t) {
    tap_ky[t] = t / d.kw;
    tap_kx[t] = t % d.kw;
    tap_off[t] = (tap_ky[t] * d.dh * d.iw + tap_kx[t] * d.dw) * d.c;
  }
  const int8_t* ptr[kDwVnniMaxTaps];
  bool was_inside = false;  // the previous pixel's window lay wholly inside: its pointers move by one stride
  const int64_t step = d.sw * d.c;
  for (int64_t ox = 0; ox < d.ow; ++ox) {
    int64_t kx0, kx1;
    InsideTaps(ox, d.sw, d.pw, d.dw, d.iw, d.kw, &kx0, &kx1);
    const bool all_inside = ky0 == 0 && ky1 == d.kh && kx0 == 0 && kx1 == d.kw;
    if (all_inside && was_inside) {
      for (int64_t t = 0; t < taps; ++t) ptr[t] += step;
    } else {
      const int8_t* window = image + ((oy * d.sh - d.ph) * d.iw + ox * d.sw - d.pw) * d.c;
      for (int64_t t = 0; t < slots; ++t) {
        const bool inside = t < taps && (all_inside || (tap_ky[t] >= ky0 && tap_ky[t] < ky1 && tap_kx[t] >= kx0 && tap_kx[t] < kx1));
        ptr[t] = inside ? window + tap_off[t] : d.zp_line;
      }
    }
    was_inside = all_inside;
    int32_t* srow = sums + ox * cp;
    for (int64_t blk = 0; blk < d.blocks; ++blk) {
      const int64_t c0 = blk * 64, count = std::min<int64_t>(64, d.c - c0);
      const __mmask64 in = count >= 64 ? ~__mmask64(0) : (__mmask64(1) << count) - 1;
      __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0, s3 = s0;
      const int8_t* f = d.fpack + blk * d.groups * 256;
      for (int64_t g = 0; g < d.groups; ++g, f += 256) {
        __m512i a, b, c, e;
        if (count == 64) {
          a = _mm512_loadu_si512(ptr[4 * g] + c0);
          b = _mm512_loadu_si512(ptr[4 * g + 1] + c0);
          c = _mm512_loadu_si512(ptr[4 * g + 2] + c0);
          e = _mm512_loadu_si512(ptr[4 * g + 3] + c0);
        } else {
          a = _mm512_maskz_loadu_epi8(in, ptr[4 * g] + c0);
          b = _mm512_maskz_loadu_epi8(in, ptr[4 * g + 1] + c0);
          c = _mm512_maskz_loadu_epi8(in, ptr[4 * g + 2] + c0);
          e = _mm512_maskz_loadu_epi8(in, ptr[4 * g + 3] + c0);
        }
        a = _mm512_xor_si512(a, flip);
        b = _mm512_xor_si512(b, flip);
        c = _mm512_xor_si512(c, flip);
        e = _mm512_xor_si512(e, flip);
        const __m512i ab_lo = _mm512_unpacklo_epi8(a, b), ab_hi = _mm512_unpackhi_epi8(a, b);
        const __m512i ce_lo = _mm512_unpacklo_epi8(c, e), ce_hi = _mm512_unpackhi_epi8(c, e);
        s0 = _mm512_dpbusd_epi32(s0, _mm512_unpacklo_epi16(ab_lo, ce_lo), _mm512_loadu_si512(f));
        s1 = _mm512_dpbusd_epi32(s1, _mm512_unpackhi_epi16(ab_lo, ce_lo), _mm512_loadu_si512(f + 64));
        s2 = _mm512_dpbusd_epi32(s2, _mm512_unpacklo_epi16(ab_hi, ce_hi), _mm512_loadu_si512(f + 128));
        s3 = _mm512_dpbusd_epi32(s3, _mm512_unpackhi_epi16(ab_hi, ce_hi), _mm512_loadu_si512(f + 192));
      }
      _mm512_storeu_si512(srow + c0, s0);
      _mm512_storeu_si512(srow + c0 + 16, s1);
      _mm512_storeu_si512(srow + c0 + 32, s2);
      _mm512_storeu_si512(srow + c0 + 48, s3);
    }
    if (d.blocks32) {
      const int64_t c0 = d.blocks * 64;
      const __m256i flip32 = _mm256_set1_epi8(static_cast<char>(0x80));
      __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
      const int8_t* f = d.fpack + d.blocks * d.groups * 256;
      for (int64_t g = 0; g < d.groups; ++g, f += 128) {
        const __m256i a = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(ptr[4 * g] + c0)), flip32);
        const __m256i b = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(ptr[4 * g + 1] + c0)), flip32);
        const __m256i c = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(ptr[4 * g + 2] + c0)), flip32);
        const __m256i e = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(ptr[4 * g + 3] + c0)), flip32);
        const __m256i ab_lo = _mm256_unpacklo_epi8(a, b), ab_hi = _mm256_unpackhi_epi8(a, b);
        const __m256i ce_lo = _mm256_unpacklo_epi8(c, e), ce_hi = _mm256_unpackhi_epi8(c, e);
        s0 = _mm256_dpbusd_epi32(s0, _mm256_unpacklo_epi16(ab_lo, ce_lo), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(f)));
        s1 = _mm256_dpbusd_epi32(s1, _mm256_unpackhi_epi16(ab_lo, ce_lo), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(f + 32)));
        s2 = _mm256_dpbusd_epi32(s2, _mm256_unpacklo_epi16(ab_hi, ce_hi), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(f + 64)));
        s3 = _mm256_dpbusd_epi32(s3, _mm256_unpackhi_epi16(ab_hi, ce_hi), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(f + 96)));
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(srow + c0), s0);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(srow + c0 + 8), s1);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(srow + c0 + 16), s2);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(srow + c0 + 24), s3);
    }
    const __m128i flip16 = _mm_set1_epi8(static_cast<char>(0x80));
    for (int64_t b16 = 0; b16 < d.blocks16; ++b16) {
      const int64_t c0 = d.blocks * 64 + d.blocks32 * 32 + b16 * 16, count = std::min<int64_t>(16, d.c - c0);
      const __mmask16 in = static_cast<__mmask16>(count >= 16 ? 0xFFFF : (1u << count) - 1);
      __m128i s0 = _mm_setzero_si128(), s1 = s0, s2 = s0, s3 = s0;
      const int8_t* f = d.fpack + d.blocks * d.groups * 256 + d.blocks32 * d.groups * 128 + b16 * d.groups * 64;
      for (int64_t g = 0; g < d.groups; ++g, f += 64) {
        const __m128i a = _mm_xor_si128(_mm_maskz_loadu_epi8(in, ptr[4 * g] + c0), flip16);
        const __m128i b = _mm_xor_si128(_mm_maskz_loadu_epi8(in, ptr[4 * g + 1] + c0), flip16);
        const __m128i c = _mm_xor_si128(_mm_maskz_loadu_epi8(in, ptr[4 * g + 2] + c0), flip16);
        const __m128i e = _mm_xor_si128(_mm_maskz_loadu_epi8(in, ptr[4 * g + 3] + c0), flip16);
        const __m128i ab_lo = _mm_unpacklo_epi8(a, b), ab_hi = _mm_unpackhi_epi8(a, b);
        const __m128i ce_lo = _mm_unpacklo_epi8(c, e), ce_hi = _mm_unpackhi_epi8(c, e);
        s0 = _mm_dpbusd_epi32(s0, _mm_unpacklo_epi16(ab_lo, ce_lo), _mm_loadu_si128(reinterpret_cast<const __m128i*>(f)));
        s1 = _mm_dpbusd_epi32(s1, _mm_unpackhi_epi16(ab_lo, ce_lo), _mm_loadu_si128(reinterpret_cast<const __m128i*>(f + 16)));
        s2 = _mm_dpbusd_epi32(s2, _mm_unpacklo_epi16(ab_hi, ce_hi), _mm_loadu_si128(reinterpret_cast<const __m128i*>(f + 32)));
        s3 = _mm_dpbusd_epi32(s3, _mm_unpackhi_epi16(ab_hi, ce_hi), _mm_loadu_si128(reinterpret_cast<const __m128i*>(f + 48)));
      }
      _mm_storeu_si128(reinterpret_cast<__m128i*>(srow + c0), s0);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(srow + c0 + 4), s1);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(srow + c0 + 8), s2);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(srow + c0 + 12), s3);
    }
  }
  // Rescaled, plus the offset, clamped to [lo, hi] in int32 as the reference does; where that range
  // leaves int8 (an output zero point outside it), wrapped to int8 as the reference's cast does,
  // so that the saturating packs below keep every value.
  const __m512i voff = _mm512_set1_epi32(d.out_off), lo32 = _mm512_set1_epi32(d.lo), hi32 = _mm512_set1_epi32(d.hi);
  const bool wrap = !(d.lo >= -128 && d.lo <= 127 && d.hi >= -128 && d.hi <= 127);
  const bool fast = FloatRescaleFits(d.e, d.out_off, d.lo, d.hi);
  for (int64_t pos = 0; pos < cp; pos += 16) {
    if (fast) {
      DwRescaleFloat(d.e, d.mult, pos, sums + pos, cp, d.ow, d.out_off, lo32, hi32);
      continue;
    }
    const VnniRescaler k = LoadRescaler(d.e, d.mult, pos, 0xFFFF);
    for (int64_t ox = 0; ox < d.ow; ++ox) {
      int32_t* v = sums + ox * cp + pos;
      __m512i r = _mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(Rescale(k, _mm512_loadu_si512(v)), voff), lo32), hi32);
      if (wrap) r = _mm512_srai_epi32(_mm512_slli_epi32(r, 24), 24);
      _mm512_storeu_si512(v, r);
    }
  }
  for (int64_t ox = 0; ox < d.ow; ++ox) {
    const int32_t* srow = sums + ox * cp;
    int8_t* o = out + ox * d.c;
    int64_t c0 = 0;
    for (; c0 < d.blocks * 64; c0 += 64) {
      const __m512i p01 = _mm512_packs_epi32(_mm512_loadu_si512(srow + c0), _mm512_loadu_si512(srow + c0 + 16));
      const __m512i p23 = _mm512_packs_epi32(_mm512_loadu_si512(srow + c0 + 32), _mm512_loadu_si512(srow + c0 + 48));
      _mm512_storeu_si512(o + c0, _mm512_packs_epi16(p01, p23));  // channel order again
    }
    if (d.blocks32) {
      const __m256i p01 = _mm256_packs_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(srow + c0)),
                                             _mm256_loadu_si256(reinterpret_cast<const __m256i*>(srow + c0 + 8)));
      const __m256i p23 = _mm256_packs_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(srow + c0 + 16)),
                                             _mm256_loadu_si256(reinterpret_cast<const __m256i*>(srow + c0 + 24)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + c0), _mm256_packs_epi16(p01, p23));
      c0 += 32;
    }
    for (; c0 < d.c; c0 += 16) {  // in order already
      const __m512i v = _mm512_loadu_si512(srow + c0);
      const __m128i q = _mm512_cvtepi32_epi8(v);
      if (d.c - c0 >= 16) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(o + c0), q);
      } else {
        _mm_mask_storeu_epi8(o + c0, static_cast<__mmask16>((1u << (d.c - c0)) - 1), q);
      }
    }
  }
}
// A depthwise convolution over flattened rows, for any channel count, multiplier, stride and
// dilation. An output row's ow * C bytes (C output channels) are one run of positions, position
// j being channel j % C; with the input row padded by the zero point and split into its sw
// phases (padded pixel xp in phase xp % sw at index xp / sw), tap (ky, kx) reads for every
// position one contiguous run of a padded row: phase (kx * dw) % sw from pixel (kx * dw) / sw. So
// each block of 64 positions is four taps' 64 bytes interleaved as in DepthwiseVnniRow, and every
// lane is busy whatever C is (DepthwiseVnniRow leaves most of a vector idle for small C and runs
// what is left past the blocks of 64 in narrower vectors). The filter and rescaling constants
// repeat every lcm(C, 64) positions (DwVnniLayout::Flat). Padded rows hold x + 128 (unsigned, as
// vpdpbusd takes them), each channel repeated M times for a multiplier M; each thread keeps the
// (kh - 1) * dh + 1 rows it may need in a ring, so each input row is padded once per thread.
struct DwFlat {
  const int8_t* fpack = nullptr;  // [period blocks][groups][4 vectors][64]
  VnniEpi e;
  const int32_t* mult = nullptr;
  int64_t n, ih, iw, ic, m, c, oh, ow, kh, kw, sh, sw, dh, dw, ph, pw, groups, nb, lp, row_bytes;
  int32_t out_off, lo, hi;
  uint8_t zp;  // the input zero point + 128
};
constexpr int64_t kDwFlatMaxPeriod = 2048;

// Input row `src` (iw pixels of ic channels) padded, repeated and split into phases at dst.
WEFT_VNNI_TARGET void DwFlatFill(const DwFlat& d, const int8_t* src, uint8_t* dst) {
  const int64_t c = d.c, used = d.sw * d.lp;
  if (d.sw == 1 && d.m == 1) {
    std::memset(dst, d.zp, static_cast<size_t>(d.pw * c));
    FlipCopy(dst + d.pw * c, src, d.iw * c, src + d.iw * c);  // writes up to 63 bytes past: overwritten below
    const int64_t end = std::min(d.pw + d.iw, used);
    std::memset(dst + end * c, d.zp, static_cast<size_t>(d.row_bytes - end * c));
    return;
  }
  // Phase by phase, pixels in increasing address order: a whole-vector (or word) store's bytes
  // past its pixel are overwritten by the next one (the last by the slack past the phases).
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  const int8_t* src_end = src + d.iw * d.ic;
  for (int64_t q = 0; q < d.sw; ++q) {
    uint8_t* row = dst + q * d.lp * c;
    // phase pixel i is input pixel q + sw * i - pw: inside for i in [i0, i1)
    const int64_t i0 = std::min(d.lp, std::max<int64_t>(0, (d.pw - q + d.sw - 1) / d.sw));
    const int64_t i1 = std::max(i0, std::min(d.lp, (d.pw + d.iw - q + d.sw - 1) / d.sw));
    FillBytes(row, d.zp, i0 * c);
    const int8_t* s = src + (q + d.sw * i0 - d.pw) * d.ic;
    const int64_t step = d.sw * d.ic;
    uint8_t* px = row + i0 * c;
    if (d.m == 1) {
      for (int64_t i = i0; i < i1; ++i, px += c, s += step) FlipCopy(px, s, c, src_end);
    } else if (d.ic == 1 && c <= 8) {
      for (int64_t i = i0; i < i1; ++i, px += c, s += step) {
        const uint64_t word = uint64_t(static_cast<uint8_t>(*s ^ 0x80)) * 0x0101010101010101ull;
        std::memcpy(px, &word, 8);
      }
    } else if (d.ic == 1 && c <= 64) {
      for (int64_t i = i0; i < i1; ++i, px += c, s += step) _mm512_storeu_si512(px, _mm512_xor_si512(_mm512_set1_epi8(*s), flip));
    } else {
      for (int64_t i = i0; i < i1; ++i, px += c, s += step)
        for (int64_t k = 0; k < d.ic; ++k) std::memset(px + k * d.m, static_cast<uint8_t>(s[k] ^ 0x80), static_cast<size_t>(d.m));
    }
    FillBytes(px, d.zp, (d.lp - i1) * c);
  }
  std::memset(dst + used * c, d.zp, static_cast<size_t>(d.row_bytes - used * c));
}

// DwFlatRow's sums, block by block.
WEFT_VNNI_TARGET inline void DwFlatSums(const DwFlat& d, const uint8_t* const* ptr, int64_t len, int32_t* sums) {
  int64_t b = 0;  // the block within the period
  for (int64_t j = 0; j < len; j += 64) {
    __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0, s3 = s0;
    const int8_t* f = d.fpack + b * d.groups * 256;
    for (int64_t g = 0; g < d.groups; ++g, f += 256) {
      const __m512i a = _mm512_loadu_si512(ptr[4 * g] + j), bb = _mm512_loadu_si512(ptr[4 * g + 1] + j);
      const __m512i c = _mm512_loadu_si512(ptr[4 * g + 2] + j), e = _mm512_loadu_si512(ptr[4 * g + 3] + j);
      const __m512i ab_lo = _mm512_unpacklo_epi8(a, bb), ab_hi = _mm512_unpackhi_epi8(a, bb);
      const __m512i ce_lo = _mm512_unpacklo_epi8(c, e), ce_hi = _mm512_unpackhi_epi8(c, e);
      s0 = _mm512_dpbusd_epi32(s0, _mm512_unpacklo_epi16(ab_lo, ce_lo), _mm512_loadu_si512(f));
      s1 = _mm512_dpbusd_epi32(s1, _mm512_unpackhi_epi16(ab_lo, ce_lo), _mm512_loadu_si512(f + 64));
      s2 = _mm512_dpbusd_epi32(s2, _mm512_unpacklo_epi16(ab_hi, ce_hi), _mm512_loadu_si512(f + 128));
      s3 = _mm512_dpbusd_epi32(s3, _mm512_unpackhi_epi16(ab_hi, ce_hi), _mm512_loadu_si512(f + 192));
    }
    _mm512_storeu_si512(sums + j, s0);
    _mm512_storeu_si512(sums + j + 16, s1);
    _mm512_storeu_si512(sums + j + 32, s2);
    _mm512_storeu_si512(sums + j + 48, s3);
    b = b + 1 == d.nb ? 0 : b + 1;
  }
}

// The same with one period of 64 positions and at most three groups of four taps: the filter's
// twelve vectors loaded once per row.
WEFT_VNNI_TARGET inline void DwFlatRowHeld(const DwFlat& d, const uint8_t* const* ptr, int64_t len, int32_t* sums) {
  __m512i f[12];
  for (int64_t v = 0; v < 12; ++v) f[v] = v < d.groups * 4 ? _mm512_loadu_si512(d.fpack + v * 64) : _mm512_setzero_si512();
  for (int64_t j = 0; j < len; j += 64) {
    __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0, s3 = s0;
    for (int64_t g = 0; g < d.groups; ++g) {
      const __m512i a = _mm512_loadu_si512(ptr[4 * g] + j), bb = _mm512_loadu_si512(ptr[4 * g + 1] + j);
      const __m512i c = _mm512_loadu_si512(ptr[4 * g + 2] + j), e = _mm512_loadu_si512(ptr[4 * g + 3] + j);
      const __m512i ab_lo = _mm512_unpacklo_epi8(a, bb), ab_hi = _mm512_unpackhi_epi8(a, bb);
      const __m512i ce_lo = _mm512_unpacklo_epi8(c, e), ce_hi = _mm512_unpackhi_epi8(c, e);
      s0 = _mm512_dpbusd_epi32(s0, _mm512_unpacklo_epi16(ab_lo, ce_lo), f[4 * g]);
      s1 = _mm512_dpbusd_epi32(s1, _mm512_unpackhi_epi16(ab_lo, ce_lo), f[4 * g + 1]);
      s2 = _mm512_dpbusd_epi32(s2, _mm512_unpacklo_epi16(ab_hi, ce_hi), f[4 * g + 2]);
      s3 = _mm512_dpbusd_epi32(s3, _mm512_unpackhi_epi16(ab_hi, ce_hi), f[4 * g + 3]);
    }
    _mm512_storeu_si512(sums + j, s0);
    _mm512_storeu_si512(sums + j + 16, s1);
    _mm512_storeu_si512(sums + j + 32, s2);
    _mm512_storeu_si512(sums + j + 48, s3);
  }
}

// DwFlatRow's sums rescaled in place, one 16-lane position of the period at a time (its constants
// loaded once per row), then packed to bytes.
WEFT_VNNI_TARGET inline void DwFlatFinish(const DwFlat& d, int64_t len, int32_t* sums, int8_t* out) {
  const int64_t period = d.nb * 64;
  const __m512i voff = _mm512_set1_epi32(d.out_off), lo32 = _mm512_set1_epi32(d.lo), hi32 = _mm512_set1_epi32(d.hi);
  const bool wrap = !(d.lo >= -128 && d.lo <= 127 && d.hi >= -128 && d.hi <= 127);
  const int64_t whole = (len + 63) / 64 * 64;
  const bool fast = FloatRescaleFits(d.e, d.out_off, d.lo, d.hi);
  for (int64_t pos = 0; pos < period; pos += 16) {
    if (fast) {
      DwRescaleFloat(d.e, d.mult, pos, sums + pos, period, (whole - pos + period - 1) / period, d.out_off, lo32, hi32);
      continue;
    }
    const VnniRescaler k = LoadRescaler(d.e, d.mult, pos, 0xFFFF);
    for (int64_t j = pos; j < whole; j += period) {  // a block's positions are spread over its four vectors
      __m512i r = _mm512_min_epi32(_mm512_max_epi32(_mm512_add_epi32(Rescale(k, _mm512_loadu_si512(sums + j)), voff), lo32), hi32);
      if (wrap) r = _mm512_srai_epi32(_mm512_slli_epi32(r, 24), 24);
      _mm512_storeu_si512(sums + j, r);
    }
  }
  for (int64_t j = 0; j < len; j += 64) {
    const __m512i p01 = _mm512_packs_epi32(_mm512_loadu_si512(sums + j), _mm512_loadu_si512(sums + j + 16));
    const __m512i p23 = _mm512_packs_epi32(_mm512_loadu_si512(sums + j + 32), _mm512_loadu_si512(sums + j + 48));
    const __m512i bytes = _mm512_packs_epi16(p01, p23);  // position order again
    if (len - j >= 64) {
      _mm512_storeu_si512(out + j, bytes);
    } else {
      _mm512_mask_storeu_epi8(out + j, (__mmask64(1) << (len - j)) - 1, bytes);
    }
  }
}

// One output row from its kh padded rows (`rows`, the zero point's row for those outside), its
// sums in `sums` ([blocks][64] int32).
WEFT_VNNI_TARGET void DwFlatRow(const DwFlat& d, const uint8_t* const* rows, int32_t* sums, int8_t* out) {
  const int64_t slots = d.groups * 4, taps = d.kh * d.kw, len = d.ow * d.c;
  const uint8_t* ptr[kDwVnniMaxTaps];
  for (int64_t t = 0; t < slots; ++t) {
    const int64_t kx = t % d.kw, off = kx * d.dw;
    ptr[t] = t < taps ? rows[t / d.kw] + ((off % d.sw) * d.lp + off / d.sw) * d.c : rows[0];  // past the taps: zero weights
  }
  if (d.nb == 1 && d.groups <= 3) {  // C divides 64 and at most 12 taps: the filter stays in registers
    DwFlatRowHeld(d, ptr, len, sums);
  } else {
    DwFlatSums(d, ptr, len, sums);
  }
  DwFlatFinish(d, len, sums, out);
}

#pragma GCC diagnostic pop
#endif

// acc[rows][n] + bias, rescaled per column (TFLite's multipliers), + out_off, clamped to [lo, hi].
void RequantizeRows(const int32_t* acc, const int32_t* bias, const int32_t* mult, const int32_t* shift, int32_t out_off, int32_t lo,
                    int32_t hi, int8_t* out, int64_t n, int64_t rows) {
#ifdef WEFT_LITERT_AVX2
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) {
    bool positive = true;  // the fast form assumes multipliers > 0, as QuantizeMultiplier makes them
    for (int64_t c = 0; c < n && positive; ++c) positive = mult[c] > 0;
    if (positive) return RequantizeRowsAvx2(acc, bias, mult, shift, out_off, lo, hi, out, n, rows);
  }
#endif
  RequantizeRowsPortable(acc, bias, mult, shift, out_off, lo, hi, out, n, rows);
}

// One output row of a depthwise convolution with depth multiplier 1 into acc[ow][c]: per output
// pixel and block of 16 channels, every tap summed in registers (no accumulator traffic). Each
// product (in + in_off) * f fits in 16 bits (|in + in_off| <= 255, |f| <= 128), so the blocks
// multiply 16-bit lanes and widen the products to 32 bits to sum them.
struct DepthwiseRow {
  const int8_t* in_image;
  const int8_t* pw;
  int32_t in_off;
  int64_t ih, iw, c, ow, kh, kw, sh, sw, dh, dw, ph, pwd;
  // For pixels whose every tap lies inside (AVX2): the filter of each pair of taps interleaved
  // per block of 16 channels as the 16-bit unpacks order them (PackDepthwisePairs), and per
  // channel in_off * the sum of its taps, which stands for the offset added to every input.
  const int16_t* pairs = nullptr;
  const int32_t* offset_sum = nullptr;
  const int8_t* zp_line = nullptr;  // c bytes of the input zero point
};

// The filter [kh * kw][c] as pairs of taps (2q, 2q + 1; a lone last tap paired with zeros), per
// block of 16 channels: the 16 int16 of unpacklo(f[2q], f[2q + 1]) then of unpackhi, that is
// channels 0-3 and 8-11, then 4-7 and 12-15, each next to its partner tap.
void PackDepthwisePairs(const int8_t* pw, int64_t taps, int64_t c, int16_t* out) {
  const int64_t blocks = c / 16, pairs = (taps + 1) / 2;
  static const int kOrder[2][8] = {{0, 1, 2, 3, 8, 9, 10, 11}, {4, 5, 6, 7, 12, 13, 14, 15}};
  for (int64_t q = 0; q < pairs; ++q)
    for (int64_t b = 0; b < blocks; ++b) {
      int16_t* dst = out + (q * blocks + b) * 32;
      for (int half = 0; half < 2; ++half)
        for (int j = 0; j < 8; ++j) {
          const int64_t ch = b * 16 + kOrder[half][j];
          dst[half * 16 + 2 * j] = pw[2 * q * c + ch];
          dst[half * 16 + 2 * j + 1] = 2 * q + 1 < taps ? pw[(2 * q + 1) * c + ch] : int16_t{0};
        }
    }
}

// Channels [c0, c) of pixel ox, one tap sum per channel.
inline void DepthwiseTail(const DepthwiseRow& r, int64_t oy, int64_t ox, int64_t ky0, int64_t ky1, int64_t kx0, int64_t kx1, int64_t c0,
                          int32_t* out) {
  for (int64_t ch = c0; ch < r.c; ++ch) {
    int32_t a = 0;
    for (int64_t ky = ky0; ky < ky1; ++ky)
      for (int64_t kx = kx0; kx < kx1; ++kx)
        a += int32_t(r.pw[(ky * r.kw + kx) * r.c + ch]) *
             (int32_t(r.in_image[((oy * r.sh - r.ph + ky * r.dh) * r.iw + ox * r.sw - r.pwd + kx * r.dw) * r.c + ch]) + r.in_off);
    out[ch] = a;
  }
}

#ifdef WEFT_LITERT_AVX2
__attribute__((target("avx2"))) void DepthwiseRowAvx2(const DepthwiseRow& r, int64_t oy, int32_t* acc) {
  int64_t ky0, ky1;
  InsideTaps(oy, r.sh, r.ph, r.dh, r.ih, r.kh, &ky0, &ky1);
  // The paired form's tap offsets from a window's first input element.
  constexpr int64_t kMaxPairedTaps = 64;
  const int64_t taps = r.kh * r.kw, pairs = (taps + 1) / 2, blocks = r.c / 16;
  const bool paired = r.pairs && taps <= kMaxPairedTaps;
  int64_t tap_off[kMaxPairedTaps], tap_ky[kMaxPairedTaps], tap_kx[kMaxPairedTaps];
  for (int64_t t = 0; paired && t < taps; ++t) {
    tap_ky[t] = t / r.kw;
    tap_kx[t] = t % r.kw;
    tap_off[t] = (tap_ky[t] * r.dh * r.iw + tap_kx[t] * r.dw) * r.c;
  }
  const __m256i off = _mm256_set1_epi16(static_cast<int16_t>(r.in_off));
  for (int64_t ox = 0; ox < r.ow; ++ox) {
    int64_t kx0, kx1;
    InsideTaps(ox, r.sw, r.pwd, r.dw, r.iw, r.kw, &kx0, &kx1);
    int32_t* out = acc + ox * r.c;
    int64_t c0 = 0;
    if (paired) {
      // Two taps per 16-bit multiply-add, the offset folded into offset_sum; a tap outside the
      // input reads a line of zero points, whose value plus the offset is 0, as a skipped tap.
      const int8_t* tap_ptr[kMaxPairedTaps];
      const int8_t* base = r.in_image + ((oy * r.sh - r.ph) * r.iw + ox * r.sw - r.pwd) * r.c;
      const bool all_inside = ky0 == 0 && ky1 == r.kh && kx0 == 0 && kx1 == r.kw;
      for (int64_t t = 0; t < taps; ++t) {
        const bool inside = all_inside || (tap_ky[t] >= ky0 && tap_ky[t] < ky1 && tap_kx[t] >= kx0 && tap_kx[t] < kx1);
        tap_ptr[t] = inside ? base + tap_off[t] : r.zp_line;
      }
      for (int64_t b = 0; b < blocks; ++b, c0 += 16) {
        __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
        const int16_t* f = r.pairs + b * 32;
        for (int64_t q = 0; q < pairs; ++q, f += blocks * 32) {
          const __m256i xa = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(tap_ptr[2 * q] + c0)));
          const __m256i xb = 2 * q + 1 < taps
                                 ? _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(tap_ptr[2 * q + 1] + c0)))
                                 : _mm256_setzero_si256();
          lo = _mm256_add_epi32(lo, _mm256_madd_epi16(_mm256_unpacklo_epi16(xa, xb), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(f))));
          hi = _mm256_add_epi32(hi, _mm256_madd_epi16(_mm256_unpackhi_epi16(xa, xb), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(f + 16))));
        }
        const __m256i first = _mm256_permute2x128_si256(lo, hi, 0x20), second = _mm256_permute2x128_si256(lo, hi, 0x31);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + c0),
                            _mm256_add_epi32(first, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r.offset_sum + c0))));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + c0 + 8),
                            _mm256_add_epi32(second, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r.offset_sum + c0 + 8))));
      }
      for (; c0 + 8 <= r.c; c0 += 8) {  // a block of 8 channels: 32-bit lanes, every tap (outside ones read zero points)
        __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r.offset_sum + c0));
        for (int64_t t = 0; t < taps; ++t) {
          const __m256i x = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(tap_ptr[t] + c0)));
          const __m256i f = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(r.pw + t * r.c + c0)));
          a = _mm256_add_epi32(a, _mm256_mullo_epi32(x, f));
        }
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + c0), a);
      }
      DepthwiseTail(r, oy, ox, ky0, ky1, kx0, kx1, c0, out);
      continue;
    }
    for (; c0 + 16 <= r.c; c0 += 16) {
      __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
      for (int64_t ky = ky0; ky < ky1; ++ky) {
        const int8_t* row = r.in_image + (oy * r.sh - r.ph + ky * r.dh) * r.iw * r.c + c0;
        const int8_t* frow = r.pw + ky * r.kw * r.c + c0;
        for (int64_t kx = kx0; kx < kx1; ++kx) {
          const __m128i x8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + (ox * r.sw - r.pwd + kx * r.dw) * r.c));
          const __m128i f8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(frow + kx * r.c));
          const __m256i p = _mm256_mullo_epi16(_mm256_add_epi16(_mm256_cvtepi8_epi16(x8), off), _mm256_cvtepi8_epi16(f8));
          lo = _mm256_add_epi32(lo, _mm256_cvtepi16_epi32(_mm256_castsi256_si128(p)));
          hi = _mm256_add_epi32(hi, _mm256_cvtepi16_epi32(_mm256_extracti128_si256(p, 1)));
        }
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + c0), lo);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + c0 + 8), hi);
    }
    if (c0 + 8 <= r.c) {  // a block of 8 channels in 32-bit lanes
      const __m256i off32 = _mm256_set1_epi32(r.in_off);
      for (; c0 + 8 <= r.c; c0 += 8) {
        __m256i a = _mm256_setzero_si256();
        for (int64_t ky = ky0; ky < ky1; ++ky) {
          const int8_t* row = r.in_image + (oy * r.sh - r.ph + ky * r.dh) * r.iw * r.c + c0;
          const int8_t* frow = r.pw + ky * r.kw * r.c + c0;
          for (int64_t kx = kx0; kx < kx1; ++kx) {
            const __m256i x = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + (ox * r.sw - r.pwd + kx * r.dw) * r.c)));
            const __m256i f = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(frow + kx * r.c)));
            a = _mm256_add_epi32(a, _mm256_mullo_epi32(_mm256_add_epi32(x, off32), f));
          }
        }
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + c0), a);
      }
    }
    DepthwiseTail(r, oy, ox, ky0, ky1, kx0, kx1, c0, out);
  }
}
#endif

void DepthwiseRowInt8(const DepthwiseRow& r, int64_t oy, int32_t* acc) {
#ifdef WEFT_LITERT_AVX2
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) return DepthwiseRowAvx2(r, oy, acc);
#endif
  int64_t ky0, ky1;
  InsideTaps(oy, r.sh, r.ph, r.dh, r.ih, r.kh, &ky0, &ky1);
  for (int64_t ox = 0; ox < r.ow; ++ox) {
    int64_t kx0, kx1;
    InsideTaps(ox, r.sw, r.pwd, r.dw, r.iw, r.kw, &kx0, &kx1);
    DepthwiseTail(r, oy, ox, ky0, ky1, kx0, kx1, 0, acc + ox * r.c);
  }
}

WEFT_INT_CLONES void AddRowInt8(const int8_t* a, const int8_t* b, int8_t* out, int64_t n, int32_t a_zp, int32_t b_zp, int left_shift,
                                int32_t m1, int32_t r1, int32_t m2, int32_t r2, int32_t sign, int32_t mo, int32_t ro, int32_t out_zp,
                                int32_t lo, int32_t hi) {
  tfl::AddRow(a, b, out, n, a_zp, b_zp, left_shift, m1, r1, m2, r2, sign, mo, ro, out_zp, lo, hi);
}
WEFT_INT_CLONES void AddRowInt16(const int16_t* a, const int16_t* b, int16_t* out, int64_t n, int32_t a_zp, int32_t b_zp, int left_shift,
                                 int32_t m1, int32_t r1, int32_t m2, int32_t r2, int32_t sign, int32_t mo, int32_t ro, int32_t out_zp,
                                 int32_t lo, int32_t hi) {
  tfl::AddRow(a, b, out, n, a_zp, b_zp, left_shift, m1, r1, m2, r2, sign, mo, ro, out_zp, lo, hi);
}

// What a fast path returns when it does not apply (GRAPH_SUCCESS or GRAPH_FAILED otherwise).
constexpr int kNotApplicable = 1;  // neither GRAPH_SUCCESS (0) nor GRAPH_FAILED (-1 as an int)

// ---- fast 8-bit paths ---------------------------------------------------------------------------
// Integer products summed in int32 give the same bits however they are ordered, so these paths
// reorder TFLite's loops freely: a GEMM, then TFLite's exact rescaling per element. The GEMM is
// oneDNN's s8 x s8 -> s32 kernel where the CPU has VNNI instructions (older ISAs sum pairs of
// products in saturating 16-bit lanes, which is not exact); elsewhere oneDNN's float GEMM over
// the integer values, in slices of K short enough that every partial sum is an integer below
// 2^24, which float holds exactly, summed across slices in int32.
bool HasExactInt8Gemm() {
  static const bool ok = [] {
    if (VnniTurnedOff()) return false;  // as for HasVnni512: the AVX2 kernel instead
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    return isa == dnnl_cpu_isa_avx512_core_vnni || isa == dnnl_cpu_isa_avx512_core_bf16 || isa == dnnl_cpu_isa_avx512_core_amx ||
           isa == dnnl_cpu_isa_avx2_vnni;
  }();
  return ok;
}

// Whether every multiplier of a requantizing GEMM is positive, as the vector rescaling assumes.
bool PositiveMultipliers(int64_t n, const GemmOut& out) {
  for (int64_t c = 0; out.q && c < n; ++c)
    if (out.mult[c] <= 0) return false;
  return true;
}

// Whether GemmS8 takes the VNNI kernel (which can read a convolution's input directly).
bool VnniGemmApplies(int64_t n, int32_t b_zp, const GemmOut& out) { return HasVnni512() && b_zp == 0 && PositiveMultipliers(n, out); }

// (A[M, K] - a_zp) * (B[N, K] - b_zp)^T, all row-major, into `out` (int32, or requantized to
// int8); false if a workspace cannot be had or the backend fails. `pre`: B packed for the VNNI kernel ahead of the run (constant weights), or nullptr. `cv`: the
// rows of A are a convolution's taps (only where VnniGemmApplies; `a` is then unused).
bool GemmS8(EagerOpExecutionContext* ctx, int64_t m, int64_t n, int64_t k, const int8_t* a, int32_t a_zp, const int8_t* b, int32_t b_zp,
            const GemmOut& out, const VnniB* pre = nullptr, const VnniConv* cv = nullptr) {
  if (a_zp < -128 || a_zp > 127 || b_zp < -128 || b_zp > 127 || m <= 0 || n <= 0 || k <= 0) return false;
  if ((out.fq || out.ff) && !(HasVnni512() && b_zp == 0)) return false;  // the float rescaling is the VNNI epilogue's alone
  const bool positive = PositiveMultipliers(n, out);
  const bool vnni = HasVnni512() && b_zp == 0 && positive;  // VnniGemmApplies
  if (cv && !vnni) return false;
#ifdef WEFT_LITERT_AVX2
  if (vnni) {
    VnniB w;
    if (pre && pre->data && pre->n == n && pre->k == k) {
      w = *pre;
    } else {
      // Packed once per run context and again only when the weights change (a hash of their
      // bytes, checked every run: weights may be run-time inputs).
      struct Header {
        uint64_t hash, n, k, valid;
        uint8_t pad[32];
      };
      static_assert(sizeof(Header) == 64, "the packed weights stay 64-byte aligned after the header");
      const size_t data_bytes = VnniDataBytes(n, k), sum_bytes = VnniColsumBytes(n);
      const uint64_t hash = XXH3_64bits(b, static_cast<size_t>(n * k));
      auto* cache = static_cast<uint8_t*>(ctx->GetHostArgs(sizeof(Header) + data_bytes + sum_bytes));
      bool fresh = true;
      uint8_t* body = nullptr;
      if (cache) {
        auto* h = reinterpret_cast<Header*>(cache);
        body = cache + sizeof(Header);
        fresh = !(h->valid == 1 && h->hash == hash && h->n == static_cast<uint64_t>(n) && h->k == static_cast<uint64_t>(k));
        *h = Header{hash, static_cast<uint64_t>(n), static_cast<uint64_t>(k), 1, {}};
      } else {  // outside a run (constant folding): scratch memory
        ctx->SetError("");
        body = static_cast<uint8_t*>(ctx->MallocWorkSpace(data_bytes + sum_bytes));
        if (!body) return false;
      }
      auto* data = reinterpret_cast<int8_t*>(body);
      auto* colsum = reinterpret_cast<int32_t*>(body + data_bytes);
      if (fresh)
        ctx->ParallelFor((n + 15) / 16, 1, [&](int64_t b0, int64_t b1) { PackVnniB(b, n, k, data, colsum, b0 * 16, b1 * 16); });
      w.data = data;
      w.colsum = colsum;
      w.n = n;
      w.k = k;
    }
    const int64_t stride = w.groups() * 4, blocks = w.blocks(), tiles = (m + 7) / 8, cols = blocks * 16;
    VnniEpi e;
    if (pre && pre->epi.base && pre->epi_a_zp == a_zp && out.q) {  // laid out by Compile (constant bias and scales)
      e = pre->epi;
    } else {
      auto* base = static_cast<int32_t*>(
          ctx->MallocWorkSpace(static_cast<size_t>(cols) * (2 * sizeof(int32_t) + 3 * sizeof(int64_t) + sizeof(float))));
      if (!base) return false;
      auto* add = reinterpret_cast<int64_t*>(base + cols);
      int64_t *add_neg = add + cols, *shift = add_neg + cols;
      auto* left = reinterpret_cast<int32_t*>(shift + cols);
      e = FillVnniEpi(w, a_zp, out.bias, out.q ? out.shift : nullptr, base, add, add_neg, shift, left, reinterpret_cast<float*>(left + cols));
    }
    auto run = [&](int64_t r0, int64_t r1, int64_t b0, int64_t b1) {
      thread_local std::vector<uint8_t> scratch;  // 8 rows of A as unsigned bytes, and 64 to spare for the packers
      if (scratch.size() < static_cast<size_t>(8 * stride + 64)) scratch.resize(static_cast<size_t>(8 * stride + 64));
      GemmVnniRows(k, a, cv, w, e, out, r0, r1, b0, b1, scratch.data());
    };
    if (tiles >= 8 || blocks < 4) {
      ctx->ParallelFor(tiles, 1, [&](int64_t t0, int64_t t1) { run(t0 * 8, std::min(m, t1 * 8), 0, blocks); });
    } else {  // few rows (a fully-connected layer): the column blocks are the work to share
      ctx->ParallelFor((blocks + 1) / 2, 1, [&](int64_t p0, int64_t p1) { run(0, m, p0 * 2, std::min(blocks, p1 * 2)); });
    }
    return true;
  }
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2 && positive && !HasExactInt8Gemm()) {
    // B packed once: per block of 16 columns, per pair of K, 16 columns x 2 int16 (b - b_zp);
    // columns and K past the end are zeros.
    const int64_t kp = (k + 1) / 2, blocks = (n + 15) / 16;
    const size_t packed = static_cast<size_t>(blocks * kp * 32) * sizeof(int16_t);
    // The packed weights are kept in the node's per-context memory and packed again only when
    // they change (a hash of their bytes, checked every run: weights may be run-time inputs).
    struct Header {
      uint64_t hash, n, k;
      int64_t b_zp;
      uint64_t valid;
      uint8_t pad[24];
    };
    static_assert(sizeof(Header) == 64, "the packed weights stay 64-byte aligned after the header");
    const uint64_t hash = XXH3_64bits(b, static_cast<size_t>(n * k));
    auto* cache = static_cast<uint8_t*>(ctx->GetHostArgs(sizeof(Header) + packed));
    int16_t* bp = nullptr;
    bool fresh = true;
    if (cache) {
      auto* h = reinterpret_cast<Header*>(cache);
      bp = reinterpret_cast<int16_t*>(cache + sizeof(Header));
      fresh = !(h->valid == 1 && h->hash == hash && h->n == static_cast<uint64_t>(n) && h->k == static_cast<uint64_t>(k) && h->b_zp == b_zp);
      *h = Header{hash, static_cast<uint64_t>(n), static_cast<uint64_t>(k), b_zp, 1, {}};
    } else {  // outside a run (constant folding): scratch memory
      ctx->SetError("");
      bp = static_cast<int16_t*>(ctx->MallocWorkSpace(packed));
    }
    const int64_t row_blocks = (m + 3) / 4;
    auto* apack = static_cast<int16_t*>(ctx->MallocWorkSpace(static_cast<size_t>(row_blocks * 4 * kp * 2) * sizeof(int16_t)));
    if (!bp || !apack) return false;
    if (fresh) ctx->ParallelFor(blocks, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t blk = b0; blk < b1; ++blk) {
        int16_t* dst = bp + blk * kp * 32;
        for (int64_t p = 0; p < kp; ++p)
          for (int64_t j = 0; j < 16; ++j)
            for (int64_t h = 0; h < 2; ++h) {
              const int64_t col = blk * 16 + j, kk = 2 * p + h;
              dst[p * 32 + j * 2 + h] = col < n && kk < k ? static_cast<int16_t>(int32_t(b[col * k + kk]) - b_zp) : int16_t{0};
            }
      }
    });
    if (row_blocks >= 8 || blocks < 4) {
      ctx->ParallelFor(row_blocks, 4, [&](int64_t rb0, int64_t rb1) {
        GemmInt8Avx2Rows(m, n, k, a, a_zp, bp, kp, out, rb0 * 4, std::min(m, rb1 * 4), apack + rb0 * 4 * kp * 2);
      });
    } else {  // few rows (a fully-connected layer): the column blocks are the work to share
      auto* apacks = static_cast<int16_t*>(ctx->MallocWorkSpace(static_cast<size_t>(blocks * 4 * kp * 2) * sizeof(int16_t)));
      if (!apacks) return false;
      ctx->ParallelFor(blocks, 1, [&](int64_t b0, int64_t b1) {
        GemmInt8Avx2Rows(m, n, k, a, a_zp, bp, kp, out, 0, m, apacks + b0 * 4 * kp * 2, b0 * 16, std::min(n, b1 * 16));
      });
    }
    return true;
  }
#endif
  int32_t* c = out.acc;
  if (!c && !(c = static_cast<int32_t*>(ctx->MallocWorkSpace(static_cast<size_t>(m * n) * sizeof(int32_t))))) return false;
  ApplyIntraOpThreads(ctx);
  if (HasExactInt8Gemm()) {
    const int32_t co = 0;
    if (dnnl_gemm_s8s8s32('N', 'T', 'F', m, n, k, 1.f, a, k, static_cast<int8_t>(a_zp), b, k, static_cast<int8_t>(b_zp), 0.f, c, n, &co) !=
        dnnl_success)
      return false;
  } else {
    const int64_t amax = std::max(std::abs(-128 - a_zp), std::abs(127 - a_zp)), bmax = std::max(std::abs(-128 - b_zp), std::abs(127 - b_zp));
    const int64_t slice = std::max<int64_t>(1, std::min<int64_t>(k, (int64_t(1) << 24) / std::max<int64_t>(1, amax * bmax)));
    auto* fa = static_cast<float*>(ctx->MallocWorkSpace(static_cast<size_t>(m * slice) * sizeof(float)));
    auto* fb = static_cast<float*>(ctx->MallocWorkSpace(static_cast<size_t>(n * slice) * sizeof(float)));
    auto* fc = static_cast<float*>(ctx->MallocWorkSpace(static_cast<size_t>(m * n) * sizeof(float)));
    if (!fa || !fb || !fc) return false;
    for (int64_t k0 = 0; k0 < k; k0 += slice) {
      const int64_t kk = std::min(slice, k - k0);
      ctx->ParallelFor(m, 64, [&](int64_t r0, int64_t r1) {
        if (kk == k) {  // one slice: the rows are contiguous
          for (int64_t i = r0 * k; i < r1 * k; ++i) fa[i] = static_cast<float>(int32_t(a[i]) - a_zp);
          return;
        }
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t j = 0; j < kk; ++j) fa[r * kk + j] = static_cast<float>(int32_t(a[r * k + k0 + j]) - a_zp);
      });
      for (int64_t r = 0; r < n; ++r)
        for (int64_t j = 0; j < kk; ++j) fb[r * kk + j] = static_cast<float>(int32_t(b[r * k + k0 + j]) - b_zp);
      if (!ParallelSgemm(ctx, 'T', m, n, kk, fa, kk, fb, kk, 0.f, fc, n)) return false;
      const bool first = k0 == 0;
      ctx->ParallelFor(m, 64, [&](int64_t r0, int64_t r1) {
        if (first) {
          for (int64_t i = r0 * n; i < r1 * n; ++i) c[i] = static_cast<int32_t>(fc[i]);
        } else {
          for (int64_t i = r0 * n; i < r1 * n; ++i)
            c[i] = static_cast<int32_t>(static_cast<uint32_t>(c[i]) + static_cast<uint32_t>(static_cast<int32_t>(fc[i])));
        }
      });
    }
  }
  if (out.q)
    ctx->ParallelFor(m, 16, [&](int64_t r0, int64_t r1) {
      RequantizeRows(c + r0 * n, out.bias, out.mult, out.shift, out.out_off, out.lo, out.hi, out.q + r0 * n, n, r1 - r0);
    });
  return true;
}

template <typename F>
bool DispatchQuantType(DataType dt, F&& f) {
  switch (dt) {
    case DT_INT8: f(int8_t{}); return true;
    case DT_UINT8: f(uint8_t{}); return true;
    case DT_INT16: f(int16_t{}); return true;
    default: return false;
  }
}

// The output's clamp for a quantized output of type T.
template <typename T>
void QuantClamp(const KernelContextBase* ctx, Activation a, int32_t* lo, int32_t* hi) {
  Quant o = OutputQuant(ctx);
  tfl::ActivationRange(a, o.scale, o.zp, tfl::QMin<T>(), tfl::QMax<T>(), lo, hi);
}

// ---- convolutions ---------------------------------------------------------------------------

struct ConvGeometry {
  int64_t n, ih, iw, ic, oh, ow, oc, kh, kw, sh, sw, dh, dw, ph, pw;
};

// ---- hybrid layers: float activations, int8 weights (dynamic-range quantized models) ----------

// LiteRT's quantization of a hybrid layer's float input, one row (FULLY_CONNECTED) or one image
// (CONV_2D, DEPTHWISE_CONV_2D) at a time, in float arithmetic as LiteRT does it. Symmetric: scale
// max|x| / 127, values rounded half away from zero into [-127, 127]. Asymmetric: the range
// [min(0, min x), max(0, max x)] in 255 steps, the zero point taken from the end that gives the
// smaller error, rounded and clamped to [-128, 127], added to each rounded x / scale. All zeros:
// zeros, scale 1, zero point 0.
struct HybridScale {
  float scale = 1.f;
  int32_t offset = 0;
};

// The loops below, vectorized per instruction set; products and sums stay separate roundings (no
// multiply-add contraction), as in the reference.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(WEFT_SANITIZED) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define WEFT_HYBRID_CLONES __attribute__((target_clones("avx512f", "avx2", "default"), optimize("no-trapping-math", "fp-contract=off")))
#else
#define WEFT_HYBRID_CLONES
#endif

// The smallest and largest of x[0, n), as LiteRT's scalar scan finds them: a NaN after the first
// element is skipped; a NaN first element is the answer. The vector forms keep that: the lanes
// start from x[0], and min/max instructions return their second operand (the running value) when
// the first is NaN.
#ifdef WEFT_LITERT_AVX2
__attribute__((target("avx512f"))) void HybridMinMaxAvx512(const float* x, int64_t n, float* mn, float* mx) {
  __m512 lo = _mm512_set1_ps(x[0]), hi = lo;
  int64_t c = 0;
  for (; c + 16 <= n; c += 16) {
    const __m512 v = _mm512_loadu_ps(x + c);
    lo = _mm512_mask_min_ps(lo, 0xFFFF, v, lo);  // (the masked forms: GCC 12 warns about the plain ones' undefined source)
    hi = _mm512_mask_max_ps(hi, 0xFFFF, v, hi);
  }
  alignas(64) float l[16], h[16];
  _mm512_store_ps(l, lo);
  _mm512_store_ps(h, hi);
  float a = l[0], b = h[0];
  for (int k = 1; k < 16; ++k) {
    a = l[k] < a ? l[k] : a;
    b = h[k] > b ? h[k] : b;
  }
  for (; c < n; ++c) {
    a = x[c] < a ? x[c] : a;
    b = x[c] > b ? x[c] : b;
  }
  *mn = a;
  *mx = b;
}
#endif

void HybridMinMax(const float* x, int64_t n, float* mn, float* mx) {
#ifdef WEFT_LITERT_AVX2
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  if (avx512 && n >= 64) return HybridMinMaxAvx512(x, n, mn, mx);
#endif
  float lo = x[0], hi = x[0];
  for (int64_t c = 1; c < n; ++c) {
    lo = x[c] < lo ? x[c] : lo;
    hi = x[c] > hi ? x[c] : hi;
  }
  *mn = lo;
  *mx = hi;
}

// q[c] = clamp(round(x[c] * inv) + off, lo, 127): the product rounded half away from zero, then
// the zero point added, as LiteRT does it (rounding off + x * inv instead moves ties between
// codes). The rounding is the truncation, then one more where the dropped fraction is at least a
// half (exact: the value is clamped to +-512 first, where float holds every fraction). NaN
// becomes lo. Written as selects so that the loop vectorizes.
WEFT_HYBRID_CLONES void HybridQuantizeRun(const float* x, int64_t n, float inv, int32_t off, int32_t lo, int8_t* q) {
  for (int64_t c = 0; c < n; ++c) {
    float v = x[c] * inv;
    v = v > -512.f ? v : -512.f;
    v = v < 512.f ? v : 512.f;
    int32_t i = static_cast<int32_t>(v);
    const float frac = v - static_cast<float>(i);
    i = i + (frac >= 0.5f ? 1 : 0) - (frac <= -0.5f ? 1 : 0) + off;
    i = i < lo ? lo : i;
    i = i > 127 ? 127 : i;
    q[c] = static_cast<int8_t>(i);
  }
}

// One pixel's channels of a hybrid convolution from their int32 sums (TflConv::PlanHybrid's modes):
// 0: sum * (s * scales[c]); 1: (sum * scales[c]) * s; 2: sum * (scales[c] * s); plus the bias,
// clamped to [lo, hi].
WEFT_HYBRID_CLONES void HybridRescale(const int32_t* a, int64_t n, int mode, const float* scales, float s, const float* bias, float lo, float hi,
                                      float* out) {
  for (int64_t c = 0; c < n; ++c) {
    float v = static_cast<float>(a[c]);
    if (mode == 1) {
      v = v * scales[c];
      v = v * s;
    } else {
      const float m = mode == 0 ? s * scales[c] : scales[c] * s;
      v = v * m;
    }
    v = bias ? v + bias[c] : v;
    v = v < lo ? lo : v;  // std::min(std::max(v, lo), hi), as the reference clamps (-0 stays -0)
    out[c] = hi < v ? hi : v;
  }
}

// Quantizes x[0, n) (split over the threads when ctx is given and n is large).
HybridScale QuantizeHybridInput(EagerOpExecutionContext* ctx, const float* x, int64_t n, bool asym, int8_t* q) {
  HybridScale h;
  float mn = 0.f, mx = 0.f;
  constexpr int64_t kChunk = 1 << 15;
  const int64_t chunks = ctx && n > 2 * kChunk ? (n + kChunk - 1) / kChunk : 1;
  if (n > 0 && chunks == 1) {
    HybridMinMax(x, n, &mn, &mx);
  } else if (n > 0) {
    std::vector<float> lows(static_cast<size_t>(chunks)), highs(static_cast<size_t>(chunks));
    ctx->ParallelFor(chunks, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c)
        HybridMinMax(x + c * kChunk, std::min(kChunk, n - c * kChunk), &lows[static_cast<size_t>(c)], &highs[static_cast<size_t>(c)]);
    });
    mn = *std::min_element(lows.begin(), lows.end());
    mx = *std::max_element(highs.begin(), highs.end());
  }
  auto run = [&](auto&& f) {
    if (chunks == 1) return f(int64_t(0), n);
    ctx->ParallelFor(chunks, 1, [&](int64_t c0, int64_t c1) { f(c0 * kChunk, std::min(n, c1 * kChunk)); });
  };
  if (!asym) {
    const float range = std::max(std::abs(mn), std::abs(mx));
    if (range == 0.f) {
      std::memset(q, 0, static_cast<size_t>(n));
      return h;
    }
    h.scale = range / 127.f;
    const float inv = 127.f / range;
    run([&](int64_t i0, int64_t i1) { HybridQuantizeRun(x + i0, i1 - i0, inv, 0, -127, q + i0); });
    return h;
  }
  const float rmin = std::min(0.f, mn), rmax = std::max(0.f, mx);
  if (rmin == rmax) {
    std::memset(q, 0, static_cast<size_t>(n));
    return h;
  }
  const float scale = (rmax - rmin) / 255.f;
  const float from_min = -128.f - rmin / scale, from_max = 127.f - rmax / scale;
  const float zp = 128.f + std::abs(rmin / scale) < 127.f + std::abs(rmax / scale) ? from_min : from_max;
  // A row whose scale is not a positive finite float (a range below 255 times the least float, or
  // an infinite value) has no zero point (NaN): it takes 0, what LiteRT's own conversion of NaN
  // gives on x86, where the conversion itself is undefined.
  h.offset = zp != zp ? 0 : zp <= -128.f ? -128 : zp >= 127.f ? 127 : static_cast<int32_t>(std::round(zp));
  h.scale = scale;
  const float inv = 1.f / scale;
  run([&](int64_t i0, int64_t i1) { HybridQuantizeRun(x + i0, i1 - i0, inv, h.offset, -128, q + i0); });
  return h;
}

// The reference loops of a convolution: for every output element (rows split over the threads),
// tap(acc, pixel, oc, ky, kx) for each filter tap inside the input (pixel: the element offset of
// the input pixel it reads), then store(output index, oc, acc).
template <typename Acc, typename Tap, typename Store>
void ForEachConvOutput(EagerOpExecutionContext* ctx, const ConvGeometry& g, Tap&& tap, Store&& store) {
  ctx->ParallelFor(g.n * g.oh, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t bn = r / g.oh, oy = r % g.oh;
      for (int64_t ox = 0; ox < g.ow; ++ox)
        for (int64_t oc = 0; oc < g.oc; ++oc) {
          Acc acc = 0;
          for (int64_t ky = 0; ky < g.kh; ++ky) {
            int64_t iy = oy * g.sh - g.ph + ky * g.dh;
            if (iy < 0 || iy >= g.ih) continue;
            for (int64_t kx = 0; kx < g.kw; ++kx) {
              int64_t ix = ox * g.sw - g.pw + kx * g.dw;
              if (ix >= 0 && ix < g.iw) tap(acc, ((bn * g.ih + iy) * g.iw + ix) * g.ic, oc, ky, kx);
            }
          }
          store(((bn * g.oh + oy) * g.ow + ox) * g.oc + oc, oc, acc);
        }
    }
  });
}

bool ConvAttrs(const KernelContextBase* ctx, bool* same, int64_t* sh, int64_t* sw, int64_t* dh, int64_t* dw) {
  const char* p = ctx->GetAttrs()->GetStr("padding");
  *same = p && std::string(p) == "SAME";
  *sh = IntAttr(ctx, "stride_h");
  *sw = IntAttr(ctx, "stride_w");
  *dh = HasAttr(ctx, "dilation_h_factor") ? IntAttr(ctx, "dilation_h_factor") : 1;
  *dw = HasAttr(ctx, "dilation_w_factor") ? IntAttr(ctx, "dilation_w_factor") : 1;
  if (*sh <= 0 || *sw <= 0 || *dh <= 0 || *dw <= 0 || *sh > 4096 || *sw > 4096 || *dh > 4096 || *dw > 4096)
    return Fail(ctx, "strides and dilations must be in [1, 4096]"), false;
  return true;
}

// Conv2D (filter [OC, KH, KW, IC/groups]) and DepthwiseConv2D (filter [1, KH, KW, IC*M]).
class TflConv : public EagerExecuteOp, public ShapeInferOp, public EmittableOp, public CompilableOp, public RebuildOnLoad {
 public:
  // Constant int8 filters of a convolution without groups: packed once for the VNNI GEMM (without
  // this, the GEMM packs them per run context and checks a hash of them every run).
  graphStatus Compile(OpCompileContext* ctx) override {
    packed_.Clear();
    dw_ = DwTables();
    scales_ready_ = false;
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* w = ctx->GetInputTensor(1);
    // The rescaling multipliers come from attributes alone: computed once here.
    if (x && w && x->GetDataType() != DT_FLOAT && w->GetShape().GetDimNum() == 4) {
      scales_ready_ = ConvMultipliers(ctx, w->GetShape().GetDim(depthwise(ctx) ? 3 : 0), 0, 1, &scales_);
      if (!scales_ready_) ctx->SetError("");  // Execute reports it
    }
    const bool hybrid = x && w && x->GetDataType() == DT_FLOAT && w->GetDataType() == DT_INT8;  // packed for Hybrid's GEMM
    if (!HasVnni512() || !x || !w || (x->GetDataType() != DT_INT8 && !hybrid) || w->GetDataType() != DT_INT8 || !w->GetAddr())
      return GRAPH_SUCCESS;
    if (depthwise(ctx)) return hybrid ? GRAPH_SUCCESS : CompileDepthwise(ctx, w, ctx->GetOptionalInputTensor(2));
    const Shape& ws = w->GetShape();
    if (ws.GetDimNum() != 4 || ws.GetDim(0) <= 0 || ws.GetDim(1) <= 0 || ws.GetDim(2) <= 0 || ws.GetDim(3) <= 0) return GRAPH_SUCCESS;
    packed_.Pack(w->GetData<int8_t>(), ws.GetDim(0), ws.GetDim(1) * ws.GetDim(2) * ws.GetDim(3));
    // With a constant bias (or none) and the scales known, the epilogue's tables too.
    const Tensor* b = ctx->GetOptionalInputTensor(2);
    if (!scales_ready_ || (b && (b->GetDataType() != DT_INT32 || !b->GetAddr() || b->GetShapeSize() != ws.GetDim(0)))) return GRAPH_SUCCESS;
    packed_.PackEpilogue(InputQuant(ctx, 0).zp, b ? b->GetData<int32_t>() : nullptr, scales_.shift.data());
    return GRAPH_SUCCESS;
  }

  bool depthwise(const KernelContextBase* ctx) const { return std::string(ctx->GetNodeType()) == "TflDepthwiseConv2D"; }

  bool Geometry(const KernelContextBase* ctx, const Shape& x, const Shape& w, ConvGeometry* g) const {
    bool same;
    if (!ConvAttrs(ctx, &same, &g->sh, &g->sw, &g->dh, &g->dw)) return false;
    if (x.GetDimNum() != 4 || w.GetDimNum() != 4) return Fail(ctx, "input and filter must be 4-D (NHWC, OHWI)"), false;
    g->n = x.GetDim(0), g->ih = x.GetDim(1), g->iw = x.GetDim(2), g->ic = x.GetDim(3);
    g->kh = w.GetDim(1), g->kw = w.GetDim(2);
    if (depthwise(ctx)) {
      g->oc = w.GetDim(3);
      if (w.GetDim(0) != 1 || g->ic <= 0 || g->oc % g->ic)
        return Fail(ctx, "the depthwise filter " + w.ToString() + " does not fit " + std::to_string(g->ic) + " input channels"), false;
    } else {
      g->oc = w.GetDim(0);
      if (w.GetDim(3) <= 0 || g->ic % w.GetDim(3) || g->oc % (g->ic / w.GetDim(3)))
        return Fail(ctx, "the filter " + w.ToString() + " does not fit " + std::to_string(g->ic) + " input channels"), false;
    }
    ListView<int64_t> ep = ctx->GetAttrs()->GetListInt("explicit_padding");
    if (ep.size() == 4) {  // a PAD folded in by the importer: VALID over the padded input
      if (same) return Fail(ctx, "explicit_padding goes with padding VALID"), false;
      for (int64_t v : ep)
        if (v < 0 || v > (int64_t(1) << 20)) return Fail(ctx, "explicit_padding must be in [0, 2^20]"), false;
      g->oh = tfl::ConvOutSize(false, g->ih + ep[0] + ep[1], g->kh, g->sh, g->dh);
      g->ow = tfl::ConvOutSize(false, g->iw + ep[2] + ep[3], g->kw, g->sw, g->dw);
      g->ph = ep[0];
      g->pw = ep[2];
      if (g->oh <= 0 || g->ow <= 0) return Fail(ctx, "the padded input is smaller than the filter"), false;
      return true;
    }
    if (ep.size() != 0) return Fail(ctx, "explicit_padding has " + std::to_string(ep.size()) + " entries, not 4 (top, bottom, left, right)"), false;
    g->oh = tfl::ConvOutSize(same, g->ih, g->kh, g->sh, g->dh);
    g->ow = tfl::ConvOutSize(same, g->iw, g->kw, g->sw, g->dw);
    g->ph = tfl::ConvPadding(g->sh, g->dh, g->ih, g->kh, g->oh);
    g->pw = tfl::ConvPadding(g->sw, g->dw, g->iw, g->kw, g->ow);
    return true;
  }

  // int8 Conv2D without groups as one GEMM: the input as rows of [KH * KW * IC] (im2col; taps in
  // the padding hold the input zero point, so they add nothing, as TFLite skips them), times the
  // OHWI filter. kNotApplicable when this path does not apply.
  int ConvInt8Gemm(EagerOpExecutionContext* ctx, const ConvGeometry& g, int64_t wic, const int8_t* px, const int8_t* pw,
                           const int32_t* bias, const ChannelScales& cs, int32_t in_off, int32_t out_off, int32_t lo, int32_t hi,
                           int8_t* py, const VnniB* pre = nullptr) const {
    if (wic != g.ic || -in_off < -128 || -in_off > 127) return kNotApplicable;
    ListView<int64_t> fz = ctx->GetAttrs()->GetListInt("channel_zero_points");
    for (int64_t z : fz)
      if (z != 0) return kNotApplicable;
    GemmOut out;
    out.q = py;
    out.bias = bias;
    out.mult = cs.mult.data();
    out.shift = cs.shift.data();
    out.out_off = out_off;
    out.lo = lo;
    out.hi = hi;
    return ConvGemmS8(ctx, g, px, static_cast<int8_t>(-in_off), pw, out, pre);
  }

  // A convolution without groups as GemmS8 over the taps: sums of (x - zp) * w into `out`; taps
  // in the padding hold zp, so they add nothing. kNotApplicable where GemmS8 cannot run it.
  int ConvGemmS8(EagerOpExecutionContext* ctx, const ConvGeometry& g, const int8_t* px, int8_t zp, const int8_t* pw, const GemmOut& out,
                 const VnniB* pre) const {
    const int64_t m = g.n * g.oh * g.ow, k = g.kh * g.kw * g.ic;
    const bool direct = g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0 && g.oh == g.ih && g.ow == g.iw;
    if (!direct && VnniGemmApplies(g.oc, 0, out)) {  // the GEMM packs its rows from the input itself
      VnniConv cv{px, px + g.n * g.ih * g.iw * g.ic, g.ih, g.iw, g.ic, g.oh, g.ow, g.kh, g.kw, g.sh, g.sw, g.dh, g.dw, g.ph, g.pw, zp};
      return GemmS8(ctx, m, g.oc, k, px, zp, pw, 0, out, pre, &cv) ? GRAPH_SUCCESS : kNotApplicable;
    }
    const int8_t* a = px;
    if (!direct) {
      auto* col = static_cast<int8_t*>(ctx->MallocWorkSpace(static_cast<size_t>(m * k)));
      if (!col) return GRAPH_FAILED;
      ctx->ParallelFor(g.n * g.oh, 1, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          int64_t bn = r / g.oh, oy = r % g.oh;
          for (int64_t ox = 0; ox < g.ow; ++ox) {
            int8_t* row = col + ((bn * g.oh + oy) * g.ow + ox) * k;
            for (int64_t ky = 0; ky < g.kh; ++ky) {
              int64_t iy = oy * g.sh - g.ph + ky * g.dh;
              if (g.dw == 1) {  // the kernel row's taps inside the input are contiguous: one copy, zero points around it
                int8_t* dst = row + ky * g.kw * g.ic;
                const int64_t ix0 = ox * g.sw - g.pw;
                const int64_t kx0 = std::min(g.kw, std::max<int64_t>(0, -ix0));
                const int64_t kx1 = std::max(kx0, std::min(g.kw, g.iw - ix0));
                const bool row_inside = iy >= 0 && iy < g.ih;
                const int64_t c0 = row_inside ? kx0 * g.ic : g.kw * g.ic, c1 = row_inside ? kx1 * g.ic : g.kw * g.ic;
                for (int64_t j = 0; j < c0; ++j) dst[j] = zp;
                if (c1 > c0) {
                  const int8_t* src = px + ((bn * g.ih + iy) * g.iw + ix0 + kx0) * g.ic;
                  if (c1 - c0 <= 16) {
                    for (int64_t j = 0; j < c1 - c0; ++j) dst[c0 + j] = src[j];
                  } else {
                    std::memcpy(dst + c0, src, static_cast<size_t>(c1 - c0));
                  }
                }
                for (int64_t j = c1; j < g.kw * g.ic; ++j) dst[j] = zp;
                continue;
              }
              for (int64_t kx = 0; kx < g.kw; ++kx) {
                int64_t ix = ox * g.sw - g.pw + kx * g.dw;
                int8_t* dst = row + (ky * g.kw + kx) * g.ic;
                const bool inside = iy >= 0 && iy < g.ih && ix >= 0 && ix < g.iw;
                const int8_t* src = inside ? px + ((bn * g.ih + iy) * g.iw + ix) * g.ic : nullptr;
                if (g.ic < 16) {  // a few bytes: a call per tap would cost more than the copy
                  for (int64_t c = 0; c < g.ic; ++c) dst[c] = inside ? src[c] : zp;
                } else if (inside) {
                  std::memcpy(dst, src, static_cast<size_t>(g.ic));
                } else {
                  std::memset(dst, zp, static_cast<size_t>(g.ic));
                }
              }
            }
          }
        }
      });
      a = col;
    }
    return GemmS8(ctx, m, g.oc, k, a, zp, pw, 0, out, pre) ? GRAPH_SUCCESS : kNotApplicable;
  }

  // A depthwise filter, bias and quantization known at compile time: DepthwiseVnni's tables laid
  // out once (the input's channels repeated for a multiplier above 1 make oc channels).
  graphStatus CompileDepthwise(OpCompileContext* ctx, const Tensor* w, const Tensor* b) {
#ifdef WEFT_LITERT_AVX2
    const Shape& ws = w->GetShape();
    if (ws.GetDimNum() != 4 || ws.GetDim(0) != 1 || ws.GetDim(3) <= 0 || ws.GetDim(1) * ws.GetDim(2) > kDwVnniMaxTaps ||
        ws.GetDim(1) <= 0 || ws.GetDim(2) <= 0)
      return GRAPH_SUCCESS;
    if (!scales_ready_ || (b && (b->GetDataType() != DT_INT32 || !b->GetAddr() || b->GetShapeSize() != ws.GetDim(3)))) return GRAPH_SUCCESS;
    const int64_t c = ws.GetDim(3);
    const ChannelScales& cs = scales_;
    for (int64_t ch = 0; ch < c; ++ch)
      if (cs.mult[static_cast<size_t>(ch)] < 0) return GRAPH_SUCCESS;
    const int32_t in_off = -InputQuant(ctx, 0).zp;
    const bool flat = DwFlatFits(c, ws.GetDim(1), ws.GetDim(2), cs);
    if (!flat && c < 16) return GRAPH_SUCCESS;  // the AVX2 blocks run it
    const DwVnniLayout L = flat ? DwVnniLayout::Flat(c, ws.GetDim(1), ws.GetDim(2)) : DwVnniLayout(c, ws.GetDim(1), ws.GetDim(2));
    dw_.fpack.resize(L.fpack_bytes);
    dw_.i32.resize(static_cast<size_t>(4 * L.cp));
    dw_.i64.resize(static_cast<size_t>(3 * L.cp));
    dw_.filled = FillDwVnni(L, w->GetData<int8_t>(), b ? b->GetData<int32_t>() : nullptr, cs, in_off, dw_.fpack.data(), dw_.i32.data(),
                            dw_.i64.data());
    dw_.c = c, dw_.kh = ws.GetDim(1), dw_.kw = ws.GetDim(2), dw_.in_off = in_off, dw_.ready = true, dw_.flat = flat;
#else
    (void)ctx, (void)w, (void)b;
#endif
    return GRAPH_SUCCESS;
  }

#ifdef WEFT_LITERT_AVX2
  // Depthwise with multiplier 1 on VNNI (DepthwiseVnniRow): the filter and per-channel constants
  // laid out by Compile, or once per run, then the output rows split over the threads.
  int DepthwiseVnni(EagerOpExecutionContext* ctx, const ConvGeometry& g, const int8_t* px, const int8_t* pw, const int32_t* bias,
                    const ChannelScales& cs, int32_t in_off, int32_t out_off, int32_t lo, int32_t hi, int8_t* py) const {
    const DwVnniLayout L(g.ic, g.kh, g.kw);
    const int64_t c = L.c, cp = L.cp;
    DwTableRefs t;
    if (!Tables(ctx, L, false, g, pw, bias, cs, in_off, &t)) return GRAPH_FAILED;
    auto* zp_line = static_cast<int8_t*>(ctx->MallocWorkSpace(static_cast<size_t>(c)));
    if (!zp_line) return GRAPH_FAILED;
    std::memset(zp_line, static_cast<int8_t>(-in_off), static_cast<size_t>(c));
    const int64_t groups = L.groups, blocks = L.blocks, blocks32 = L.blocks32, blocks16 = L.blocks16;
    DwVnni d;
    d.zp_line = zp_line;
    d.fpack = t.fpack;
    d.e = t.Epi(cp);
    d.mult = t.Mult(cp);
    d.ih = g.ih, d.iw = g.iw, d.c = c, d.ow = g.ow, d.kh = g.kh, d.kw = g.kw, d.sh = g.sh, d.sw = g.sw, d.dh = g.dh, d.dw = g.dw;
    d.ph = g.ph, d.pw = g.pw, d.groups = groups, d.blocks = blocks, d.blocks32 = blocks32, d.blocks16 = blocks16;
    d.out_off = out_off, d.lo = lo, d.hi = hi;
    ctx->ParallelFor(g.n * g.oh, 1, [&](int64_t r0, int64_t r1) {
      thread_local std::vector<int32_t> sums;  // one output row's sums
      if (sums.size() < static_cast<size_t>(g.ow * cp)) sums.resize(static_cast<size_t>(g.ow * cp));
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t bn = r / g.oh, oy = r % g.oh;
        DepthwiseVnniRow(d, px + bn * g.ih * g.iw * c, oy, py + r * g.ow * c, sums.data());
      }
    });
    return GRAPH_SUCCESS;
  }
#endif

#ifdef WEFT_LITERT_AVX2
  // FillDwVnni's tables for layout L: those Compile laid out when they match (the same layout
  // kind, channels, kernel and input zero point), else filled into the run's workspace.
  struct DwTableRefs {
    const int8_t* fpack = nullptr;
    const int32_t* i32 = nullptr;
    const int64_t* i64 = nullptr;
    DwFilled filled;
    // The epilogue's view of the tables (FillDwVnni's layout, cp positions each) and the multipliers.
    VnniEpi Epi(int64_t cp) const {
      VnniEpi e;
      e.base = i32;
      e.left = filled.any_left ? i32 + 2 * cp : nullptr;
      e.fscale = filled.fast ? reinterpret_cast<const float*>(i32 + 3 * cp) : nullptr;
      e.add = i64;
      e.add_neg = i64 + cp;
      e.shift = i64 + 2 * cp;
      return e;
    }
    const int32_t* Mult(int64_t cp) const { return i32 + cp; }
  };
  bool Tables(EagerOpExecutionContext* ctx, const DwVnniLayout& L, bool flat, const ConvGeometry& g, const int8_t* pw, const int32_t* bias,
              const ChannelScales& cs, int32_t in_off, DwTableRefs* t) const {
    if (dw_.ready && dw_.flat == flat && dw_.c == L.channels && dw_.kh == g.kh && dw_.kw == g.kw && dw_.in_off == in_off) {
      *t = {dw_.fpack.data(), dw_.i32.data(), dw_.i64.data(), dw_.filled};
      return true;
    }
    auto* f = static_cast<int8_t*>(ctx->MallocWorkSpace(L.fpack_bytes));
    auto* w32 = static_cast<int32_t*>(ctx->MallocWorkSpace(static_cast<size_t>(L.cp) * 4 * sizeof(int32_t)));
    auto* w64 = static_cast<int64_t*>(ctx->MallocWorkSpace(static_cast<size_t>(L.cp) * 3 * sizeof(int64_t)));
    if (!f || !w32 || !w64) return false;
    *t = {f, w32, w64, FillDwVnni(L, pw, bias, cs, in_off, f, w32, w64)};
    return true;
  }
#endif

  // Whether DepthwiseFlat runs this convolution (VNNI; the rescaling's multipliers >= 0).
  static bool DwFlatFits(int64_t c, int64_t kh, int64_t kw, const ChannelScales& cs) {
#ifdef WEFT_LITERT_AVX2
    if (!HasVnni512() || c <= 0 || kh <= 0 || kw <= 0 || kh * kw > kDwVnniMaxTaps || DwVnniLayout::FlatPeriod(c) > kDwFlatMaxPeriod ||
        cs.mult.size() < static_cast<size_t>(c))
      return false;
    for (int64_t ch = 0; ch < c; ++ch)
      if (cs.mult[static_cast<size_t>(ch)] < 0) return false;
    return true;
#else
    (void)c, (void)kh, (void)kw, (void)cs;
    return false;
#endif
  }
  static bool DwFlatApplies(const ConvGeometry& g, const ChannelScales& cs) {
    return g.ic > 0 && g.oc % g.ic == 0 && DwFlatFits(g.oc, g.kh, g.kw, cs);
  }

#ifdef WEFT_LITERT_AVX2
  // The flattened-row depthwise kernel (DwFlatRow): the tables laid out by Compile, or once per
  // run, then the output rows split over the threads, each with its own ring of padded rows.
  int DepthwiseFlat(EagerOpExecutionContext* ctx, const ConvGeometry& g, const int8_t* px, const int8_t* pw, const int32_t* bias,
                    const ChannelScales& cs, int32_t in_off, int32_t out_off, int32_t lo, int32_t hi, int8_t* py) const {
    const DwVnniLayout L = DwVnniLayout::Flat(g.oc, g.kh, g.kw);
    const int64_t cp = L.cp;
    DwTableRefs t;
    if (!Tables(ctx, L, true, g, pw, bias, cs, in_off, &t)) return GRAPH_FAILED;
    DwFlat d;
    d.fpack = t.fpack;
    d.e = t.Epi(cp);
    d.mult = t.Mult(cp);
    d.n = g.n, d.ih = g.ih, d.iw = g.iw, d.ic = g.ic, d.m = g.oc / g.ic, d.c = g.oc, d.oh = g.oh, d.ow = g.ow, d.kh = g.kh, d.kw = g.kw;
    d.sh = g.sh, d.sw = g.sw, d.dh = g.dh, d.dw = g.dw, d.ph = g.ph, d.pw = g.pw, d.groups = L.groups, d.nb = cp / 64;
    const int64_t span = g.sw * (g.ow - 1) + (g.kw - 1) * g.dw + 1;  // padded pixels the taps reach
    d.lp = (std::max(span, g.pw + g.iw) + g.sw - 1) / g.sw;
    d.row_bytes = (g.sw * d.lp * g.oc + 127) / 64 * 64;  // 64 bytes to spare, rows 64-byte aligned
    d.out_off = out_off, d.lo = lo, d.hi = hi;
    d.zp = static_cast<uint8_t>(128 - in_off);
    auto* zp_row = static_cast<uint8_t*>(ctx->MallocWorkSpace(static_cast<size_t>(d.row_bytes)));
    if (!zp_row) return GRAPH_FAILED;
    std::memset(zp_row, d.zp, static_cast<size_t>(d.row_bytes));
    const int64_t ring = (g.kh - 1) * g.dh + 1;
    return ctx->ParallelFor(g.n * g.oh, 1, [&](int64_t r0, int64_t r1) {
      thread_local std::vector<uint8_t> rows_buf;
      thread_local std::vector<int64_t> held;  // the input row (batch * ih + y) each ring slot holds
      thread_local std::vector<int32_t> sums;  // one output row's sums, whole blocks
      rows_buf.resize(static_cast<size_t>(ring * d.row_bytes + 64));
      uint8_t* ring_base = rows_buf.data() + (64 - reinterpret_cast<uintptr_t>(rows_buf.data()) % 64) % 64;
      sums.resize(static_cast<size_t>((g.ow * g.oc + 63) / 64 * 64));
      held.assign(static_cast<size_t>(ring), -1);
      const uint8_t* rows[kDwVnniMaxTaps];
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t bn = r / g.oh, oy = r % g.oh;
        for (int64_t ky = 0; ky < g.kh; ++ky) {
          const int64_t y = oy * g.sh - g.ph + ky * g.dh;
          if (y < 0 || y >= g.ih) {
            rows[ky] = zp_row;
            continue;
          }
          const int64_t slot = y % ring, key = bn * g.ih + y;
          uint8_t* dst = ring_base + slot * d.row_bytes;
          if (held[static_cast<size_t>(slot)] != key) {
            DwFlatFill(d, px + key * g.iw * g.ic, dst);
            held[static_cast<size_t>(slot)] = key;
          }
          rows[ky] = dst;
        }
        DwFlatRow(d, rows, sums.data(), py + r * g.ow * g.oc);
      }
    });
  }
#endif

  // int8 DepthwiseConv2D with the channels innermost: one int32 accumulator per output channel of
  // a pixel, each tap a contiguous run over the channels.
  int DepthwiseInt8(EagerOpExecutionContext* ctx, const ConvGeometry& g, const int8_t* px, const int8_t* pw, const int32_t* bias,
                            const ChannelScales& cs, int32_t in_off, int32_t out_off, int32_t lo, int32_t hi, int8_t* py) const {
    if (in_off < -127 || in_off > 128) return kNotApplicable;  // a zero point outside int8: products leave 16 bits
#ifdef WEFT_LITERT_AVX2
    if (DwFlatApplies(g, cs)) return DepthwiseFlat(ctx, g, px, pw, bias, cs, in_off, out_off, lo, hi, py);
#endif
    const int64_t mult = g.oc / g.ic;
    if (mult > 1) {
      // A depthwise convolution with multiplier M is one with multiplier 1 over the input with
      // each channel repeated M times (output channel ic * M + m reads input channel ic).
      auto* wide = static_cast<int8_t*>(ctx->MallocWorkSpace(static_cast<size_t>(g.n * g.ih * g.iw * g.oc)));
      if (!wide) return GRAPH_FAILED;
      ctx->ParallelFor(g.n * g.ih, 1, [&](int64_t r0, int64_t r1) {
        const int8_t* src = px + r0 * g.iw * g.ic;
        int8_t* dst = wide + r0 * g.iw * g.oc;
        for (int64_t i = 0; i < (r1 - r0) * g.iw * g.ic; ++i, dst += mult) {  // a few bytes each: stores, not calls
          const uint64_t word = uint64_t(static_cast<uint8_t>(src[i])) * 0x0101010101010101ull;  // the byte 8 times
          int64_t m = 0;
          for (; m + 8 <= mult; m += 8) std::memcpy(dst + m, &word, 8);
          for (; m < mult; ++m) dst[m] = src[i];
        }
      });
      ConvGeometry wg = g;
      wg.ic = g.oc;
      return DepthwiseInt8(ctx, wg, wide, pw, bias, cs, in_off, out_off, lo, hi, py);
    }
    if (mult == 1) {
#ifdef WEFT_LITERT_AVX2
      bool nonnegative = true;  // OneFloorRescale's multipliers
      for (int64_t ch = 0; ch < g.ic && nonnegative; ++ch) nonnegative = cs.mult[static_cast<size_t>(ch)] >= 0;
      // Fewer than 16 channels leave most of a 128-bit block idle: the 8-channel blocks below are faster there.
      if (HasVnni512() && nonnegative && g.ic >= 16 && g.kh * g.kw <= kDwVnniMaxTaps) return DepthwiseVnni(ctx, g, px, pw, bias, cs, in_off, out_off, lo, hi, py);
#endif
      const int16_t* pairs = nullptr;
      const int32_t* offset_sum = nullptr;
      const int8_t* zp_line = nullptr;
      if (g.ic >= 16) {  // the paired form for interior pixels (see DepthwiseRow)
        const int64_t taps = g.kh * g.kw;
        auto* pk = static_cast<int16_t*>(ctx->MallocWorkSpace(static_cast<size_t>((taps + 1) / 2 * (g.ic / 16) * 32) * sizeof(int16_t)));
        auto* os = static_cast<int32_t*>(ctx->MallocWorkSpace(static_cast<size_t>(g.ic) * sizeof(int32_t)));
        if (!pk || !os) return GRAPH_FAILED;
        PackDepthwisePairs(pw, taps, g.ic, pk);
        for (int64_t ch = 0; ch < g.ic; ++ch) {
          int32_t sum = 0;
          for (int64_t t = 0; t < taps; ++t) sum += pw[t * g.ic + ch];
          os[ch] = sum * in_off;
        }
        auto* zl = static_cast<int8_t*>(ctx->MallocWorkSpace(static_cast<size_t>(g.ic)));
        if (!zl) return GRAPH_FAILED;
        std::memset(zl, static_cast<int8_t>(-in_off), static_cast<size_t>(g.ic));
        pairs = pk;
        offset_sum = os;
        zp_line = zl;
      }
      ctx->ParallelFor(g.n * g.oh, 1, [&](int64_t r0, int64_t r1) {
        std::vector<int32_t> acc_row(static_cast<size_t>(g.ow * g.oc));
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t bn = r / g.oh, oy = r % g.oh;
          DepthwiseRow row{px + bn * g.ih * g.iw * g.ic, pw, in_off, g.ih, g.iw, g.ic, g.ow, g.kh, g.kw, g.sh, g.sw, g.dh, g.dw, g.ph, g.pw};
          row.pairs = pairs;
          row.offset_sum = offset_sum;
          row.zp_line = zp_line;
          DepthwiseRowInt8(row, oy, acc_row.data());
          RequantizeRows(acc_row.data(), bias, cs.mult.data(), cs.shift.data(), out_off, lo, hi, py + (bn * g.oh + oy) * g.ow * g.oc, g.oc,
                         g.ow);
        }
      });
      return GRAPH_SUCCESS;
    }
    return GRAPH_SUCCESS;  // no output channels
  }

  // The reference loops in C (weft_conv_f32 / weft_conv_q), with this node's geometry, multipliers
  // and clamp as constants: the arithmetic of Execute's generic path.
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* w = ctx->GetInputTensor(1);
    const Tensor* b = ctx->GetOptionalInputTensor(2);
    ConvGeometry g;
    if (!Geometry(ctx, x->GetShape(), w->GetShape(), &g)) return GRAPH_FAILED;
    Activation act;
    if (!ParseActivation(ctx, &act)) return GRAPH_FAILED;
    const bool dw = depthwise(ctx);
    const int64_t wic = dw ? 1 : w->GetShape().GetDim(3);
    const int64_t per_group = dw ? g.oc / g.ic : g.oc / (g.ic / wic);
    for (int64_t v : {g.n, g.ih, g.iw, g.ic, g.oh, g.ow, g.oc, g.kh, g.kw})
      if (v > INT32_MAX / 4) return Fail(ctx, "a dimension is too large for the generated C (32-bit indices)");
    std::string geom = "static const weft_conv g = {";
    for (int64_t v : {g.n, g.ih, g.iw, g.ic, g.oh, g.ow, g.oc, g.kh, g.kw, g.sh, g.sw, g.dh, g.dw, g.ph, g.pw, wic, per_group, int64_t(dw)})
      geom += std::to_string(v) + ", ";
    geom.resize(geom.size() - 2);
    geom += "};\n";
    const DataType xt = x->GetDataType();
    if (xt == DT_FLOAT && w->GetDataType() == DT_INT8) {  // Hybrid's arithmetic (weft_conv_hybrid)
      HybridPlan plan;
      if (!PlanHybrid(ctx, b, ctx->GetOutputTensor(0), g.oc, &plan)) return GRAPH_FAILED;
      float lo, hi;
      tfl::ActivationRange(act, &lo, &hi);
      aot::EmitHelper(ctx, kTflKernels, "weft_conv_hybrid");
      ctx->Include("<math.h>");
      const std::string sc = ctx->Const("channel_scales", DT_FLOAT, plan.scales);
      const std::string q = ctx->Scratch(static_cast<size_t>(std::max<int64_t>(1, g.ih * g.iw * g.ic)));
      ctx->Run(geom + "weft_conv_hybrid(&g, " + std::to_string(static_cast<int>(plan.mode)) + ", " + ctx->Input(0, "float") + ", " +
               ctx->Input(1, "int8_t") + ", " + (b ? ctx->Input(2, "float") : std::string("0")) + ", " + sc + ", " + aot::FloatLit(lo) +
               ", " + aot::FloatLit(hi) + ", (int8_t*)(void*)" + q + ", " + ctx->Output(0, "float") + ");\n");
      return GRAPH_SUCCESS;
    }
    if (xt == DT_FLOAT) {
      if (w->GetDataType() != DT_FLOAT || (b && b->GetDataType() != DT_FLOAT)) return Fail(ctx, "a float input needs a float filter and bias");
      float lo, hi;
      tfl::ActivationRange(act, &lo, &hi);
      aot::EmitHelper(ctx, kTflKernels, "weft_conv_f32");
      ctx->Include("<math.h>");
      ctx->Run(geom + "weft_conv_f32(&g, " + ctx->Input(0, "float") + ", " + ctx->Input(1, "float") + ", " +
               (b ? ctx->Input(2, "float") : std::string("0")) + ", " + aot::FloatLit(lo) + ", " + aot::FloatLit(hi) + ", " +
               ctx->Output(0, "float") + ");\n");
      return GRAPH_SUCCESS;
    }
    if (w->GetDataType() != DT_INT8 || (xt != DT_INT8 && xt != DT_INT16))
      return Fail(ctx, "the generated C takes int8 or int16 input with int8 filters (" + std::string(DataTypeName(xt)) + " input here)");
    ChannelScales cs;
    if ((!dw && !SymmetricFilter(ctx)) || !ConvMultipliers(ctx, g.oc, 0, 1, &cs)) return GRAPH_FAILED;
    int32_t lo, hi;
    if (xt == DT_INT8) QuantClamp<int8_t>(ctx, act, &lo, &hi);
    else QuantClamp<int16_t>(ctx, act, &lo, &hi);
    if (!BiasTypeFits(ctx, xt, b)) return GRAPH_FAILED;
    const bool b32 = b && b->GetDataType() == DT_INT32, b64 = b && b->GetDataType() == DT_INT64;
    aot::EmitHelper(ctx, kTflKernels, "weft_conv_q");
    std::string mult = ctx->Const("mult", DT_INT32, cs.mult), shift = ctx->Const("shift", DT_INT32, cs.shift);
    const char* ct = xt == DT_INT8 ? "int8_t" : "int16_t";
    ctx->Run(geom + "weft_conv_q(&g, " + (xt == DT_INT8 ? "8, " : "16, ") + ctx->Input(0, ct) + ", " + ctx->Input(1, "int8_t") + ", " +
             (b32 ? ctx->Input(2, "int32_t") : std::string("0")) + ", " + (b64 ? ctx->Input(2, "int64_t") : std::string("0")) + ", " +
             mult + ", " + shift + ", " + aot::IntLit(-InputQuant(ctx, 0).zp) + ", " + aot::IntLit(OutputQuant(ctx).zp) + ", " +
             aot::IntLit(lo) + ", " + aot::IntLit(hi) + ", " + ctx->Output(0, ct) + ");\n");
    return GRAPH_SUCCESS;
  }

  graphStatus InferShape(InferShapeContext* ctx) override {
    ConvGeometry g;
    if (!Geometry(ctx, *ctx->GetInputShape(0), *ctx->GetInputShape(1), &g)) return GRAPH_FAILED;
    if (!BiasFits(ctx, ctx->GetOptionalInputShape(2), g.oc)) return GRAPH_FAILED;
    *ctx->GetOutputShape(0) = Shape({g.n, g.oh, g.ow, g.oc});
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override { return SetRecordedOutputType(ctx, 0); }

  // How a hybrid convolution (float input, int8 filter) quantizes and rescales, as LiteRT decides:
  // CONV_2D whose channel scales differ quantizes each image asymmetrically and computes
  // (sum * channel scale) * image scale; CONV_2D with one filter scale (or all equal) quantizes
  // symmetrically, sum * (image scale * filter scale); DEPTHWISE_CONV_2D quantizes asymmetrically,
  // sum * (channel scale * image scale). Then the bias is added and the activation clamps.
  enum HybridMode { kHybridTensor = 0, kHybridChannel = 1, kHybridDepthwise = 2 };
  struct HybridPlan {
    HybridMode mode = kHybridTensor;
    std::vector<float> scales;  // per output channel
  };
  bool PlanHybrid(const KernelContextBase* ctx, const Tensor* b, const Tensor* y, int64_t oc, HybridPlan* p) const {
    if (y->GetDataType() != DT_FLOAT || (b && b->GetDataType() != DT_FLOAT))
      return Fail(ctx, std::string("a float input with int8 filters takes a float bias and gives a float output, not ") +
                           (b && b->GetDataType() != DT_FLOAT ? std::string(DataTypeName(b->GetDataType())) + " bias" :
                                                                std::string(DataTypeName(y->GetDataType())) + " output")),
             false;
    const bool dw = depthwise(ctx);
    if (!dw && !SymmetricFilter(ctx)) return false;
    ListView<float> chs = ctx->GetAttrs()->GetListFloat("channel_scales");
    const Quant fq = InputQuant(ctx, 1);
    if (chs.size() > 1 && static_cast<int64_t>(chs.size()) != oc)
      return Fail(ctx, "the filter has " + std::to_string(chs.size()) + " channel scales for " + std::to_string(oc) + " output channels"), false;
    if (chs.size() == 0 && !fq.quantized()) return Fail(ctx, "the int8 filter has no scale"), false;
    p->scales.assign(static_cast<size_t>(oc), chs.size() == 1 ? chs[0] : fq.scale);
    bool differ = false;
    if (chs.size() > 1)
      for (int64_t c = 0; c < oc; ++c) {
        p->scales[static_cast<size_t>(c)] = chs[static_cast<size_t>(c)];
        differ = differ || chs[static_cast<size_t>(c)] != chs[0];
      }
    for (float v : p->scales)
      if (!(v > 0.f) || !std::isfinite(v)) return Fail(ctx, "the filter's scales must be positive and finite"), false;
    p->mode = dw ? kHybridDepthwise : differ ? kHybridChannel : kHybridTensor;
    return true;
  }

  // Float input with int8 filters (dynamic-range quantized models), as LiteRT's hybrid kernels
  // compute it (PlanHybrid): each image quantized on the fly (QuantizeHybridInput), int32 sums
  // over the taps inside the input, rescaled in float. Convolutions without groups run as an
  // 8-bit GEMM per image; depthwise and grouped ones as direct loops.
  graphStatus Hybrid(EagerOpExecutionContext* ctx, const ConvGeometry& g, const Tensor* x, const Tensor* w, const Tensor* b, Tensor* y,
                     Activation act) const {
    HybridPlan plan;
    if (!PlanHybrid(ctx, b, y, g.oc, &plan)) return GRAPH_FAILED;
    if (g.n * g.oh * g.ow * g.oc == 0) return GRAPH_SUCCESS;  // an empty output
    float lo, hi;
    tfl::ActivationRange(act, &lo, &hi);
    const bool dw = plan.mode == kHybridDepthwise;
    const int64_t wic = dw ? 1 : w->GetShape().GetDim(3), per_group = dw ? g.oc / g.ic : g.oc / (g.ic / wic);
    const int64_t image = g.ih * g.iw * g.ic, pixels = g.oh * g.ow;
    auto* q = static_cast<int8_t*>(ctx->MallocWorkSpace(static_cast<size_t>(std::max<int64_t>(1, g.n * image))));
    auto* img = static_cast<HybridScale*>(ctx->MallocWorkSpace(static_cast<size_t>(g.n) * sizeof(HybridScale)));
    auto* acc = static_cast<int32_t*>(ctx->MallocWorkSpace(static_cast<size_t>(std::max<int64_t>(1, g.n * pixels * g.oc)) * sizeof(int32_t)));
    if (!q || !img || !acc) return GRAPH_FAILED;
    const float* px = x->GetData<float>();
    const int8_t* pw = w->GetData<int8_t>();
    for (int64_t bn = 0; bn < g.n; ++bn) img[bn] = QuantizeHybridInput(ctx, px + bn * image, image, plan.mode != kHybridTensor, q + bn * image);
    bool gemm = false;
    if (!dw && wic == g.ic && g.oc > 0 && g.kh * g.kw * g.ic > 0) {
      ConvGeometry one = g;
      one.n = 1;
      gemm = true;
      for (int64_t bn = 0; bn < g.n && gemm; ++bn) {
        GemmOut out;
        out.acc = acc + bn * pixels * g.oc;
        const int st = ConvGemmS8(ctx, one, q + bn * image, static_cast<int8_t>(img[bn].offset), pw, out, packed_.get());
        if (st != kNotApplicable && st != static_cast<int>(GRAPH_SUCCESS)) return GRAPH_FAILED;
        gemm = st != kNotApplicable;
      }
    }
    if (!gemm && dw && per_group == 1) {  // the 8-bit depthwise rows, the image's zero point as the input's
      const int64_t taps = g.kh * g.kw;
      int16_t* pairs = nullptr;
      auto* offset_sum = static_cast<int32_t*>(ctx->MallocWorkSpace(static_cast<size_t>(g.n * g.ic) * sizeof(int32_t)));
      auto* zp_lines = static_cast<int8_t*>(ctx->MallocWorkSpace(static_cast<size_t>(g.n * g.ic)));
      if (!offset_sum || !zp_lines) return GRAPH_FAILED;
      if (g.ic >= 16) {  // DepthwiseRow's paired form for interior pixels
        pairs = static_cast<int16_t*>(ctx->MallocWorkSpace(static_cast<size_t>((taps + 1) / 2 * (g.ic / 16) * 32) * sizeof(int16_t)));
        if (!pairs) return GRAPH_FAILED;
        PackDepthwisePairs(pw, taps, g.ic, pairs);
      }
      for (int64_t bn = 0; bn < g.n; ++bn) {
        std::memset(zp_lines + bn * g.ic, static_cast<int8_t>(img[bn].offset), static_cast<size_t>(g.ic));
        for (int64_t ch = 0; ch < g.ic; ++ch) {
          int32_t sum = 0;
          for (int64_t t = 0; t < taps; ++t) sum += pw[t * g.ic + ch];
          offset_sum[bn * g.ic + ch] = sum * -img[bn].offset;
        }
      }
      ctx->ParallelFor(g.n * g.oh, 1, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t bn = r / g.oh, oy = r % g.oh;
          DepthwiseRow row{q + bn * image, pw, -img[bn].offset, g.ih, g.iw, g.ic, g.ow, g.kh, g.kw, g.sh, g.sw, g.dh, g.dw, g.ph, g.pw};
          row.pairs = pairs;
          row.offset_sum = pairs ? offset_sum + bn * g.ic : nullptr;
          row.zp_line = pairs ? zp_lines + bn * g.ic : nullptr;
          DepthwiseRowInt8(row, oy, acc + r * g.ow * g.oc);
        }
      });
    } else if (!gemm && dw) {  // a depth multiplier: each output pixel's channels at once
      ctx->ParallelFor(g.n * g.oh, 1, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t bn = r / g.oh, oy = r % g.oh;
          const int32_t off = img[bn].offset;
          for (int64_t ox = 0; ox < g.ow; ++ox) {
            int32_t* a = acc + (r * g.ow + ox) * g.oc;
            std::fill(a, a + g.oc, 0);
            for (int64_t ky = 0; ky < g.kh; ++ky) {
              const int64_t iy = oy * g.sh - g.ph + ky * g.dh;
              if (iy < 0 || iy >= g.ih) continue;
              for (int64_t kx = 0; kx < g.kw; ++kx) {
                const int64_t ix = ox * g.sw - g.pw + kx * g.dw;
                if (ix < 0 || ix >= g.iw) continue;
                const int8_t* xr = q + ((bn * g.ih + iy) * g.iw + ix) * g.ic;
                const int8_t* wr = pw + (ky * g.kw + kx) * g.oc;
                if (per_group == 1) {
                  for (int64_t c = 0; c < g.oc; ++c) a[c] += static_cast<int32_t>(wr[c]) * (static_cast<int32_t>(xr[c]) - off);
                } else {
                  for (int64_t c = 0; c < g.oc; ++c) a[c] += static_cast<int32_t>(wr[c]) * (static_cast<int32_t>(xr[c / per_group]) - off);
                }
              }
            }
          }
        }
      });
    } else if (!gemm) {  // groups: the reference loops
      ForEachConvOutput<int32_t>(
          ctx, g,
          [&](int32_t& sum, int64_t pixel, int64_t oc, int64_t ky, int64_t kx) {
            const int32_t off = img[pixel / image].offset;
            const int8_t* row = q + pixel + (oc / per_group) * wic;
            const int8_t* f = pw + ((oc * g.kh + ky) * g.kw + kx) * wic;
            for (int64_t c = 0; c < wic; ++c) sum += static_cast<int32_t>(f[c]) * (static_cast<int32_t>(row[c]) - off);
          },
          [&](int64_t i, int64_t, int32_t sum) { acc[i] = sum; });
    }
    const float* pb = b ? b->GetData<float>() : nullptr;
    const float* sc = plan.scales.data();
    float* py = y->GetData<float>();
    ctx->ParallelFor(g.n * pixels, 16, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) {
        HybridRescale(acc + p * g.oc, g.oc, plan.mode, sc, img[p / pixels].scale, pb, lo, hi, py + p * g.oc);
      }
    });
    return GRAPH_SUCCESS;
  }

  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* w = ctx->GetInputTensor(1);
    const Tensor* b = ctx->GetOptionalInputTensor(2);
    ConvGeometry g;
    if (!Geometry(ctx, x->GetShape(), w->GetShape(), &g)) return GRAPH_FAILED;
    if (!BiasFits(ctx, b ? &b->GetShape() : nullptr, g.oc)) return GRAPH_FAILED;
    Activation act;
    if (!ParseActivation(ctx, &act)) return GRAPH_FAILED;
    Tensor* y = ctx->MallocOutputTensor(0, Shape({g.n, g.oh, g.ow, g.oc}), ctx->GetOutputTensor(0)->GetDataType());
    if (!y) return GRAPH_FAILED;
    if (x->GetDataType() == DT_FLOAT && w->GetDataType() == DT_INT8) return Hybrid(ctx, g, x, w, b, y, act);
    const bool dw = depthwise(ctx);
    const int64_t wic = dw ? 1 : w->GetShape().GetDim(3);  // input channels per filter
    const int64_t per_group = dw ? g.oc / g.ic : g.oc / (g.ic / wic);  // output channels per group
    // The input channel window of output channel oc: depthwise reads channel oc / M.
    auto in_base = [&](int64_t oc) { return dw ? oc / per_group : (oc / per_group) * wic; };
    auto filter_at = [&](int64_t oc, int64_t ky, int64_t kx, int64_t c) {
      return dw ? (ky * g.kw + kx) * g.oc + oc : ((oc * g.kh + ky) * g.kw + kx) * wic + c;
    };
    DataType xt = x->GetDataType();
    if (xt == DT_FLOAT) {
      if (w->GetDataType() != DT_FLOAT || (b && b->GetDataType() != DT_FLOAT)) return Fail(ctx, "a float input needs a float filter and bias");
      float lo, hi;
      tfl::ActivationRange(act, &lo, &hi);
      const float* px = x->GetData<float>();
      const float* pw = w->GetData<float>();
      const float* pb = b ? b->GetData<float>() : nullptr;
      float* py = y->GetData<float>();
      ForEachConvOutput<float>(
          ctx, g,
          [&](float& acc, int64_t pixel, int64_t oc, int64_t ky, int64_t kx) {
            const float* row = px + pixel + in_base(oc);
            for (int64_t c = 0; c < wic; ++c) acc += row[c] * pw[filter_at(oc, ky, kx, c)];
          },
          [&](int64_t i, int64_t oc, float acc) { py[i] = std::min(std::max(acc + (pb ? pb[oc] : 0.f), lo), hi); });
      return GRAPH_SUCCESS;
    }
    if (w->GetDataType() != DT_INT8 || (xt != DT_INT8 && xt != DT_INT16 && xt != DT_UINT8))
      return Fail(ctx, "quantized convolution takes int8 or int16 input with int8 filters");
    if (!BiasTypeFits(ctx, xt, b)) return GRAPH_FAILED;
    ChannelScales computed;
    const bool have = scales_ready_ && scales_.mult.size() == static_cast<size_t>(g.oc);  // from Compile: attributes only
    if (!dw && !SymmetricFilter(ctx)) return GRAPH_FAILED;
    if (!have && !ConvMultipliers(ctx, g.oc, 0, 1, &computed)) return GRAPH_FAILED;
    const ChannelScales& cs = have ? scales_ : computed;
    const int32_t in_off = -InputQuant(ctx, 0).zp;
    const int32_t out_off = OutputQuant(ctx).zp;
    const int8_t* pw = w->GetData<int8_t>();
    if (xt == DT_INT8) {
      int32_t lo, hi;
      QuantClamp<int8_t>(ctx, act, &lo, &hi);
      const int32_t* b32 = b && b->GetDataType() == DT_INT32 ? b->GetData<int32_t>() : nullptr;
      if (!(b && !b32)) {
        int st = kNotApplicable;
        // One input channel: a plain convolution, its filter [1, KH, KW, OC] read as [OC, KH, KW, 1];
        // with a multiple of 8 output channels the depthwise kernel's vector blocks are faster,
        // unless the VNNI GEMM runs it.
        if (dw && g.ic == 1 && (g.oc % 8 != 0 || HasVnni512()) && !DwFlatApplies(g, cs)) {
          auto* f = static_cast<int8_t*>(ctx->MallocWorkSpace(static_cast<size_t>(g.oc * g.kh * g.kw)));
          if (!f) return GRAPH_FAILED;
          for (int64_t t = 0; t < g.kh * g.kw; ++t)
            for (int64_t oc = 0; oc < g.oc; ++oc) f[oc * g.kh * g.kw + t] = pw[t * g.oc + oc];
          st = ConvInt8Gemm(ctx, g, 1, x->GetData<int8_t>(), f, b32, cs, in_off, out_off, lo, hi, y->GetData<int8_t>());
        }
        if (st == kNotApplicable)
          st = dw ? DepthwiseInt8(ctx, g, x->GetData<int8_t>(), pw, b32, cs, in_off, out_off, lo, hi, y->GetData<int8_t>())
                  : ConvInt8Gemm(ctx, g, wic, x->GetData<int8_t>(), pw, b32, cs, in_off, out_off, lo, hi, y->GetData<int8_t>(),
                                 packed_.get());
        if (st != kNotApplicable) return st;
      }
    }
    bool ok = DispatchQuantType(xt, [&](auto tag) {
      using T = decltype(tag);
      int32_t lo, hi;
      QuantClamp<T>(ctx, act, &lo, &hi);
      const T* px = x->GetData<T>();
      T* py = y->GetData<T>();
      const bool wide = sizeof(T) == 2;  // 16-bit activations: 64-bit accumulators and bias
      const int64_t* b64 = b && b->GetDataType() == DT_INT64 ? b->GetData<int64_t>() : nullptr;
      const int32_t* b32 = b && b->GetDataType() == DT_INT32 ? b->GetData<int32_t>() : nullptr;
      ForEachConvOutput<int64_t>(
          ctx, g,
          [&](int64_t& acc, int64_t pixel, int64_t oc, int64_t ky, int64_t kx) {
            const T* row = px + pixel + in_base(oc);
            for (int64_t c = 0; c < wic; ++c)
              acc += static_cast<int64_t>(pw[filter_at(oc, ky, kx, c)]) * (static_cast<int32_t>(row[c]) + in_off);
          },
          [&](int64_t i, int64_t oc, int64_t acc) {
            int32_t v;
            if (wide && !b32) {
              if (b64) acc += b64[oc];
              v = tfl::MultiplyByQuantizedMultiplier(acc, cs.mult[static_cast<size_t>(oc)], cs.shift[static_cast<size_t>(oc)]);
            } else {
              int32_t a32 = static_cast<int32_t>(acc);
              if (b32) a32 += b32[oc];
              v = tfl::MultiplyByQuantizedMultiplier(a32, cs.mult[static_cast<size_t>(oc)], cs.shift[static_cast<size_t>(oc)]);
            }
            py[i] = static_cast<T>(std::min(std::max(v + out_off, lo), hi));
          });
    });
    return ok ? GRAPH_SUCCESS : Fail(ctx, "unsupported input type");
  }

 private:
  ChannelScales scales_;
  bool scales_ready_ = false;
  VnniPacked packed_;
  struct DwTables {  // FillDwVnni's output for constant depthwise filters
    std::vector<int8_t> fpack;
    std::vector<int32_t> i32;
    std::vector<int64_t> i64;
    DwFilled filled;
    bool ready = false, flat = false;  // flat: DwVnniLayout::Flat's tables
    int64_t c = 0, kh = 0, kw = 0;
    int32_t in_off = 0;
  } dw_;
};

// TransposeConv: inputs output_shape (int32 [4]), weights [OC, KH, KW, IC], input NHWC, bias.
class TflTransposeConv : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* w = ctx->GetInputTensor(1);
    const Tensor* x = ctx->GetInputTensor(2);
    const Tensor* b = ctx->GetOptionalInputTensor(3);
    const Shape& ys = ctx->GetOutputTensor(0)->GetShape();
    bool same;
    int64_t sh, sw, dh, dw;
    if (!ConvAttrs(ctx, &same, &sh, &sw, &dh, &dw)) return GRAPH_FAILED;
    Activation act = Activation::kNone;
    if (HasAttr(ctx, "fused_activation_function") && !ParseActivation(ctx, &act)) return GRAPH_FAILED;
    const Shape& ws = w->GetShape();
    const Shape& xs = x->GetShape();
    const int64_t oh = ys.GetDim(1), ow = ys.GetDim(2), kh = ws.GetDim(1), kw = ws.GetDim(2), oc = ws.GetDim(0);
    const int64_t ph = tfl::ConvPadding(sh, 1, oh, kh, tfl::ConvOutSize(same, oh, kh, sh, 1));
    const int64_t pw = tfl::ConvPadding(sw, 1, ow, kw, tfl::ConvOutSize(same, ow, kw, sw, 1));
    std::string geom = "static const weft_tconv g = {";
    for (int64_t v : {xs.GetDim(0), xs.GetDim(1), xs.GetDim(2), xs.GetDim(3), oh, ow, oc, kh, kw, sh, sw, ph, pw}) {
      if (v > INT32_MAX / 4) return Fail(ctx, "a dimension is too large for the generated C (32-bit indices)");
      geom += std::to_string(v) + ", ";
    }
    geom.resize(geom.size() - 2);
    geom += "};\n";
    const DataType xt = x->GetDataType();
    if (xt == DT_FLOAT) {
      if (w->GetDataType() != DT_FLOAT || (b && b->GetDataType() != DT_FLOAT)) return Fail(ctx, "a float input takes float weights and bias");
      float lo, hi;
      tfl::ActivationRange(act, &lo, &hi);
      aot::EmitHelper(ctx, kTflKernels, "weft_transpose_conv_f32");
      ctx->Run(geom + "weft_transpose_conv_f32(&g, " + ctx->Input(2, "float") + ", " + ctx->Input(1, "float") + ", " +
               (b ? ctx->Input(3, "float") : std::string("0")) + ", " + aot::FloatLit(lo) + ", " + aot::FloatLit(hi) + ", " +
               ctx->Output(0, "float") + ");\n");
      return GRAPH_SUCCESS;
    }
    if (w->GetDataType() != DT_INT8 || (xt != DT_INT8 && xt != DT_INT16))
      return Fail(ctx, "the generated C takes int8 or int16 input with int8 weights");
    ChannelScales cs;
    if (!ConvMultipliers(ctx, oc, 2, 1, &cs)) return GRAPH_FAILED;
    int32_t lo, hi;
    if (xt == DT_INT8) QuantClamp<int8_t>(ctx, act, &lo, &hi);
    else QuantClamp<int16_t>(ctx, act, &lo, &hi);
    if (!BiasTypeFits(ctx, xt, b)) return GRAPH_FAILED;
    const bool b32 = b && b->GetDataType() == DT_INT32, b64 = b && b->GetDataType() == DT_INT64;
    aot::EmitHelper(ctx, kTflKernels, "weft_transpose_conv_q");
    std::string mult = ctx->Const("mult", DT_INT32, cs.mult), shift = ctx->Const("shift", DT_INT32, cs.shift);
    ctx->Run(geom + "weft_transpose_conv_q(&g, " + (xt == DT_INT8 ? "8, " : "16, ") + ctx->Input(2, "void") + ", " + ctx->Input(1, "int8_t") +
             ", " + (b32 ? ctx->Input(3, "int32_t") : std::string("0")) + ", " + (b64 ? ctx->Input(3, "int64_t") : std::string("0")) + ", " +
             mult + ", " + shift + ", " + aot::IntLit(-InputQuant(ctx, 2).zp) + ", " + aot::IntLit(OutputQuant(ctx).zp) + ", " +
             aot::IntLit(lo) + ", " + aot::IntLit(hi) + ", " + ctx->Output(0, "void") + ");\n");
    return GRAPH_SUCCESS;
  }
  // The largest output H and W an input of `x` can come from: a convolution over H rows with
  // this stride and kernel gives x rows only when H < (x + 1) * stride + kernel.
  static Shape Bound(const Shape& w, const Shape& x, int64_t sh, int64_t sw) {
    return Shape({x.GetDim(0), (x.GetDim(1) + 1) * sh + w.GetDim(1), (x.GetDim(2) + 1) * sw + w.GetDim(2), w.GetDim(0)});
  }
  // output_shape checked against the weights, the input and the bound.
  bool OutShape(const KernelContextBase* ctx, const std::vector<int64_t>& shape, const Shape& w, const Shape& x, Shape* out) const {
    bool same;
    int64_t sh, sw, dh, dw;
    if (!ConvAttrs(ctx, &same, &sh, &sw, &dh, &dw)) return false;
    Shape b = Bound(w, x, sh, sw);
    if (shape.size() != 4 || shape[0] != x.GetDim(0) || shape[3] != w.GetDim(0) || shape[1] < 0 || shape[2] < 0 ||
        shape[1] > b.GetDim(1) || shape[2] > b.GetDim(2))
      return Fail(ctx, "output_shape " + Shape(shape).ToString() + " does not fit weights " + w.ToString() + " and input " + x.ToString()), false;
    *out = Shape(shape);
    return true;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& w = *ctx->GetInputShape(1);
    const Shape& x = *ctx->GetInputShape(2);
    if (w.GetDimNum() != 4 || x.GetDimNum() != 4) return Fail(ctx, "weights and input must be 4-D");
    if (w.GetDim(3) != x.GetDim(3)) return Fail(ctx, "weights " + w.ToString() + " do not fit input " + x.ToString());
    if (!BiasFits(ctx, ctx->GetOptionalInputShape(3), w.GetDim(0))) return GRAPH_FAILED;
    std::vector<int64_t> shape;
    if (ReadInts(ctx->GetInputTensor(0), &shape)) {
      Shape out;
      if (!OutShape(ctx, shape, w, x, &out)) return GRAPH_FAILED;
      *ctx->GetOutputShape(0) = out;
      return GRAPH_SUCCESS;
    }
    // output_shape known only at run time: H and W are data-dependent.
    bool same;
    int64_t sh, sw, dh, dw;
    if (!ConvAttrs(ctx, &same, &sh, &sw, &dh, &dw)) return GRAPH_FAILED;
    *ctx->GetOutputShape(0) = Shape({x.GetDim(0), -1, -1, w.GetDim(0)});
    return ctx->SetOutputShapeBound(0, Bound(w, x, sh, sw));
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override { return SetRecordedOutputType(ctx, 2); }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* w = ctx->GetInputTensor(1);
    const Tensor* x = ctx->GetInputTensor(2);
    const Tensor* b = ctx->GetOptionalInputTensor(3);
    std::vector<int64_t> want;
    Shape ys0;
    if (!ReadInts(ctx->GetInputTensor(0), &want)) return Fail(ctx, "output_shape must be int32 or int64");
    if (!OutShape(ctx, want, w->GetShape(), x->GetShape(), &ys0)) return GRAPH_FAILED;
    Tensor* y = ctx->MallocOutputTensor(0, ys0, ctx->GetOutputTensor(0)->GetDataType());
    if (!y) return GRAPH_FAILED;
    bool same;
    int64_t sh, sw, dh, dw;
    if (!ConvAttrs(ctx, &same, &sh, &sw, &dh, &dw)) return GRAPH_FAILED;
    Activation act = Activation::kNone;
    if (HasAttr(ctx, "fused_activation_function") && !ParseActivation(ctx, &act)) return GRAPH_FAILED;
    const Shape& ws = w->GetShape();
    const Shape& xs = x->GetShape();
    const Shape& ys = y->GetShape();
    int64_t n = xs.GetDim(0), ih = xs.GetDim(1), iw = xs.GetDim(2), ic = xs.GetDim(3);
    int64_t oc = ws.GetDim(0), kh = ws.GetDim(1), kw = ws.GetDim(2), oh = ys.GetDim(1), ow = ys.GetDim(2);
    if (!BiasFits(ctx, b ? &b->GetShape() : nullptr, oc)) return GRAPH_FAILED;
    // Padding as for the convolution this op transposes (its input is this op's output).
    int64_t ph = tfl::ConvPadding(sh, 1, oh, kh, tfl::ConvOutSize(same, oh, kh, sh, 1));
    int64_t pw = tfl::ConvPadding(sw, 1, ow, kw, tfl::ConvOutSize(same, ow, kw, sw, 1));
    int64_t total = y->GetShapeSize();
    DataType xt = x->GetDataType();
    // Scatter each input pixel through the filter into an accumulator per output element.
    auto scatter = [&](auto* acc, auto in_at, auto w_at) {
      for (int64_t bn = 0; bn < n; ++bn)
        for (int64_t iy = 0; iy < ih; ++iy)
          for (int64_t ix = 0; ix < iw; ++ix)
            for (int64_t ky = 0; ky < kh; ++ky) {
              int64_t oy = iy * sh - ph + ky;
              if (oy < 0 || oy >= oh) continue;
              for (int64_t kx = 0; kx < kw; ++kx) {
                int64_t ox = ix * sw - pw + kx;
                if (ox < 0 || ox >= ow) continue;
                auto* out = acc + ((bn * oh + oy) * ow + ox) * oc;
                for (int64_t o = 0; o < oc; ++o) {
                  auto s = out[o];
                  for (int64_t c = 0; c < ic; ++c) s += in_at(((bn * ih + iy) * iw + ix) * ic + c) * w_at(((o * kh + ky) * kw + kx) * ic + c);
                  out[o] = s;
                }
              }
            }
    };
    if (xt == DT_FLOAT) {
      if (w->GetDataType() != DT_FLOAT || (b && b->GetDataType() != DT_FLOAT))
        return Fail(ctx, std::string("a float input takes float weights and bias, not ") + DataTypeName(w->GetDataType()) + " weights" +
                             (b ? std::string(" and a ") + DataTypeName(b->GetDataType()) + " bias" : std::string()));
      float lo, hi;
      tfl::ActivationRange(act, &lo, &hi);
      float* py = y->GetData<float>();
      std::fill(py, py + total, 0.f);
      const float* px = x->GetData<float>();
      const float* pwt = w->GetData<float>();
      scatter(py, [&](int64_t i) { return px[i]; }, [&](int64_t i) { return pwt[i]; });
      const float* pb = b ? b->GetData<float>() : nullptr;
      for (int64_t i = 0; i < total; ++i) py[i] = std::min(std::max(py[i] + (pb ? pb[i % oc] : 0.f), lo), hi);
      return GRAPH_SUCCESS;
    }
    if (w->GetDataType() != DT_INT8) return Fail(ctx, "quantized transposed convolution takes int8 weights");
    if (!BiasTypeFits(ctx, xt, b)) return GRAPH_FAILED;
    ChannelScales cs;
    if (!ConvMultipliers(ctx, oc, 2, 1, &cs)) return GRAPH_FAILED;
    const int32_t in_off = -InputQuant(ctx, 2).zp;
    const int32_t out_off = OutputQuant(ctx).zp;
    const int8_t* pwt = w->GetData<int8_t>();
    int64_t* acc = static_cast<int64_t*>(ctx->MallocWorkSpace(static_cast<size_t>(total) * sizeof(int64_t)));
    if (!acc && total) return GRAPH_FAILED;
    std::fill(acc, acc + total, int64_t(0));
    bool ok = DispatchQuantType(xt, [&](auto tag) {
      using T = decltype(tag);
      const T* px = x->GetData<T>();
      scatter(acc, [&](int64_t i) { return static_cast<int64_t>(static_cast<int32_t>(px[i]) + in_off); },
              [&](int64_t i) { return static_cast<int64_t>(pwt[i]); });
      int32_t lo, hi;
      QuantClamp<T>(ctx, act, &lo, &hi);
      const int64_t* b64 = b && b->GetDataType() == DT_INT64 ? b->GetData<int64_t>() : nullptr;
      const int32_t* b32 = b && b->GetDataType() == DT_INT32 ? b->GetData<int32_t>() : nullptr;
      T* py = y->GetData<T>();
      for (int64_t i = 0; i < total; ++i) {
        size_t c = static_cast<size_t>(i % oc);
        int32_t v;
        if (sizeof(T) == 2 && !b32) {
          v = tfl::MultiplyByQuantizedMultiplier(acc[i] + (b64 ? b64[c] : 0), cs.mult[c], cs.shift[c]);
        } else {
          v = tfl::MultiplyByQuantizedMultiplier(static_cast<int32_t>(acc[i]) + (b32 ? b32[c] : 0), cs.mult[c], cs.shift[c]);
        }
        py[i] = static_cast<T>(std::min(std::max(v + out_off, lo), hi));
      }
    });
    return ok ? GRAPH_SUCCESS : Fail(ctx, "unsupported input type");
  }
};

// The output range of a hybrid FULLY_CONNECTED: LiteRT applies its activation to the float
// results without clamping them to the finite floats first, so with no activation an overflowing
// sum stays infinite.
inline void HybridOutputRange(Activation act, float* lo, float* hi) {
  tfl::ActivationRange(act, lo, hi);
  if (act == Activation::kNone) *lo = -std::numeric_limits<float>::infinity(), *hi = std::numeric_limits<float>::infinity();
}

// FullyConnected: input [..., IC] as rows of IC, weights [OC, IC], optional bias [OC].
class TflFullyConnected : public EagerExecuteOp, public ShapeInferOp, public EmittableOp, public CompilableOp, public RebuildOnLoad {
 public:
  // The weights' zero point the sums subtract: a per-tensor one; per channel, none (LiteRT's
  // per-channel kernel ignores them).
  static bool ChannelCountFits(const KernelContextBase* ctx, ListView<float> chs, int64_t oc) {
    if (chs.size() <= 1 || static_cast<int64_t>(chs.size()) == oc) return true;
    return Fail(ctx, "the weights have " + std::to_string(chs.size()) + " channel scales for " + std::to_string(oc) + " output channels"), false;
  }
  static int32_t WeightZeroPoint(const KernelContextBase* ctx, Quant fq) {
    return ListView<float>(ctx->GetAttrs()->GetListFloat("channel_scales")).size() > 1 ? 0 : fq.zp;
  }
  // Constant int8 weights: packed once for the VNNI GEMM (as TflConv does); with a float input,
  // their row sums too (the hybrid kernel's asymmetric zero-point correction).
  graphStatus Compile(OpCompileContext* ctx) override {
    packed_.Clear();
    row_sums_.clear();
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* w = ctx->GetInputTensor(1);
    if (x && w && x->GetDataType() == DT_FLOAT && w->GetDataType() == DT_INT8 && w->GetAddr() && w->GetShape().GetDimNum() == 2) {
      const int64_t oc = w->GetShape().GetDim(0), ic = w->GetShape().GetDim(1);
      row_sums_ = RowSums(w->GetData<int8_t>(), oc, ic);
    }
    const bool in_ok = x && (x->GetDataType() == DT_INT8 || x->GetDataType() == DT_FLOAT);  // float: the hybrid kernel's GEMM
    if (!HasVnni512() || !in_ok || !w || w->GetDataType() != DT_INT8 || !w->GetAddr()) return GRAPH_SUCCESS;
    const Shape& ws = w->GetShape();
    if (ws.GetDimNum() != 2 || ws.GetDim(0) <= 0 || ws.GetDim(1) <= 0) return GRAPH_SUCCESS;
    packed_.Pack(w->GetData<int8_t>(), ws.GetDim(0), ws.GetDim(1));
    return GRAPH_SUCCESS;
  }

  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* w = ctx->GetInputTensor(1);
    const Tensor* b = ctx->GetOptionalInputTensor(2);
    Activation act;
    if (!ParseActivation(ctx, &act)) return GRAPH_FAILED;
    const int64_t oc = w->GetShape().GetDim(0), ic = w->GetShape().GetDim(1), rows = ic ? x->GetShapeSize() / ic : 0;
    if (oc > INT32_MAX / 4 || ic > INT32_MAX / 4 || rows > INT32_MAX / 4) return Fail(ctx, "too large for the generated C (32-bit indices)");
    const std::string dims = std::to_string(rows) + ", " + std::to_string(oc) + ", " + std::to_string(ic) + ", ";
    if (x->GetDataType() == DT_FLOAT && w->GetDataType() == DT_INT8) return EmitHybrid(ctx, act, rows, oc, ic);
    if (x->GetDataType() == DT_FLOAT) {
      if (w->GetDataType() != DT_FLOAT || (b && b->GetDataType() != DT_FLOAT)) return Fail(ctx, "a float input needs float weights and bias");
      float lo, hi;
      tfl::ActivationRange(act, &lo, &hi);
      aot::EmitHelper(ctx, kTflKernels, "weft_fully_connected_f32");
      ctx->Run("weft_fully_connected_f32(" + dims + ctx->Input(0, "float") + ", " + ctx->Input(1, "float") + ", " +
               (b ? ctx->Input(2, "float") : std::string("0")) + ", " + aot::FloatLit(lo) + ", " + aot::FloatLit(hi) + ", " +
               ctx->Output(0, "float") + ");\n");
      return GRAPH_SUCCESS;
    }
    const DataType xt = x->GetDataType();
    if (w->GetDataType() != DT_INT8 || (xt != DT_INT8 && xt != DT_INT16))
      return Fail(ctx, "the generated C takes int8 or int16 input with int8 weights (" + std::string(DataTypeName(xt)) + " input here)");
    Quant in = InputQuant(ctx, 0), fq = InputQuant(ctx, 1), o = OutputQuant(ctx);
    ListView<float> chs = ctx->GetAttrs()->GetListFloat("channel_scales");
    if (!in.quantized() || !o.quantized() || (!fq.quantized() && chs.size() == 0))
      return Fail(ctx, "a quantized input, weights and output need scales (the " +
                           std::string(!in.quantized() ? "input" : !o.quantized() ? "output" : "weights") + " has none)");
    if (!ChannelCountFits(ctx, chs, oc)) return GRAPH_FAILED;
    std::vector<int32_t> mult(static_cast<size_t>(oc)), shift(static_cast<size_t>(oc));
    for (int64_t k = 0; k < oc; ++k) {  // as Execute computes them
      double m = chs.size() > 1 ? static_cast<double>(in.scale) * static_cast<double>(chs[static_cast<size_t>(k)]) / static_cast<double>(o.scale)
                                : static_cast<double>(in.scale) * static_cast<double>(fq.scale) / static_cast<double>(o.scale);
      int sh;
      tfl::QuantizeMultiplier(m, &mult[static_cast<size_t>(k)], &sh);
      shift[static_cast<size_t>(k)] = sh;
    }
    int32_t lo, hi;
    if (xt == DT_INT8) QuantClamp<int8_t>(ctx, act, &lo, &hi);
    else QuantClamp<int16_t>(ctx, act, &lo, &hi);
    if (!BiasTypeFits(ctx, xt, b)) return GRAPH_FAILED;
    const bool b32 = b && b->GetDataType() == DT_INT32, b64 = b && b->GetDataType() == DT_INT64;
    aot::EmitHelper(ctx, kTflKernels, "weft_fully_connected_q");
    std::string cm = ctx->Const("mult", DT_INT32, mult), cs = ctx->Const("shift", DT_INT32, shift);
    const char* ct = xt == DT_INT8 ? "int8_t" : "int16_t";
    ctx->Run(std::string("weft_fully_connected_q(") + (xt == DT_INT8 ? "8, " : "16, ") + dims + ctx->Input(0, ct) + ", " +
             ctx->Input(1, "int8_t") + ", " + (b32 ? ctx->Input(2, "int32_t") : std::string("0")) + ", " +
             (b64 ? ctx->Input(2, "int64_t") : std::string("0")) + ", " + cm + ", " + cs + ", " + aot::IntLit(-in.zp) + ", " +
             aot::IntLit(-WeightZeroPoint(ctx, fq)) + ", " + aot::IntLit(o.zp) + ", " + aot::IntLit(lo) + ", " + aot::IntLit(hi) + ", " + ctx->Output(0, ct) +
             ");\n");
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& x = *ctx->GetInputShape(0);
    const Shape& w = *ctx->GetInputShape(1);
    if (w.GetDimNum() != 2) return Fail(ctx, "weights must be 2-D [OC, IC], not " + w.ToString());
    if (w.GetDim(1) <= 0)
      return Fail(ctx, "weights " + w.ToString() + " have no input channels (IC " + std::to_string(w.GetDim(1)) +
                           "): the input's rows cannot be counted");
    if (!BiasFits(ctx, ctx->GetOptionalInputShape(2), w.GetDim(0))) return GRAPH_FAILED;
    int64_t ic = w.GetDim(1), total = x.GetShapeSize();
    if (total % ic) return Fail(ctx, "input " + x.ToString() + " is not a whole number of rows of " + std::to_string(ic));
    const bool* keep = ctx->GetAttrs()->GetBool("keep_num_dims");
    if (keep && *keep) {
      if (x.GetDimNum() == 0 || x.GetDim(x.GetDimNum() - 1) != ic) return Fail(ctx, "keep_num_dims needs the last input dim to equal IC");
      Shape o = x;
      o.SetDim(o.GetDimNum() - 1, w.GetDim(0));
      *ctx->GetOutputShape(0) = o;
    } else {
      *ctx->GetOutputShape(0) = Shape({total / ic, w.GetDim(0)});
    }
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override { return SetRecordedOutputType(ctx, 0); }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* w = ctx->GetInputTensor(1);
    const Tensor* b = ctx->GetOptionalInputTensor(2);
    Tensor* y = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), ctx->GetOutputTensor(0)->GetDataType());
    if (!y) return GRAPH_FAILED;
    Activation act;
    if (!ParseActivation(ctx, &act)) return GRAPH_FAILED;
    int64_t oc = w->GetShape().GetDim(0), ic = w->GetShape().GetDim(1), rows = x->GetShapeSize() / ic;
    if (!BiasFits(ctx, b ? &b->GetShape() : nullptr, oc)) return GRAPH_FAILED;
    if (x->GetDataType() == DT_FLOAT && w->GetDataType() == DT_INT8) return Hybrid(ctx, x, w, b, y, act, rows, oc, ic);
    if (x->GetDataType() == DT_FLOAT) {
      if (w->GetDataType() != DT_FLOAT || (b && b->GetDataType() != DT_FLOAT))
        return Fail(ctx, std::string("a float input takes float or int8 weights and a float bias, not ") + DataTypeName(w->GetDataType()) +
                             (b ? std::string(" weights and a ") + DataTypeName(b->GetDataType()) + " bias" : std::string(" weights")));
      float lo, hi;
      tfl::ActivationRange(act, &lo, &hi);
      const float* px = x->GetData<float>();
      const float* pw = w->GetData<float>();
      const float* pb = b ? b->GetData<float>() : nullptr;
      float* py = y->GetData<float>();
      ctx->ParallelFor(rows * oc, 64, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; ++i) {
          int64_t r = i / oc, o = i % oc;
          float acc = 0.f;
          for (int64_t c = 0; c < ic; ++c) acc += px[r * ic + c] * pw[o * ic + c];
          if (pb) acc += pb[o];
          py[i] = std::min(std::max(acc, lo), hi);
        }
      });
      return GRAPH_SUCCESS;
    }
    if (w->GetDataType() != DT_INT8) return Fail(ctx, "quantized fully-connected takes int8 weights");
    if (!BiasTypeFits(ctx, x->GetDataType(), b)) return GRAPH_FAILED;
    Quant in = InputQuant(ctx, 0), fq = InputQuant(ctx, 1), o = OutputQuant(ctx);
    ListView<float> chs = ctx->GetAttrs()->GetListFloat("channel_scales");
    if (!in.quantized() || !o.quantized() || (!fq.quantized() && chs.size() == 0))
      return Fail(ctx, "a quantized input, weights and output need scales (the " +
                           std::string(!in.quantized() ? "input" : !o.quantized() ? "output" : "weights") + " has none)");
    if (!ChannelCountFits(ctx, chs, oc)) return GRAPH_FAILED;
    std::vector<int32_t> mult(static_cast<size_t>(oc));
    std::vector<int> shift(static_cast<size_t>(oc));
    for (int64_t k = 0; k < oc; ++k) {
      // Per tensor: the scale product in float, as TFLite's fully-connected computes it.
      double m = chs.size() > 1 ? static_cast<double>(in.scale) * static_cast<double>(chs[static_cast<size_t>(k)]) / static_cast<double>(o.scale)
                                : static_cast<double>(in.scale) * static_cast<double>(fq.scale) / static_cast<double>(o.scale);
      tfl::QuantizeMultiplier(m, &mult[static_cast<size_t>(k)], &shift[static_cast<size_t>(k)]);
    }
    const int32_t w_zp = WeightZeroPoint(ctx, fq);
    const int32_t in_off = -in.zp, w_off = -w_zp, out_off = o.zp;
    const int8_t* pw = w->GetData<int8_t>();
    if (x->GetDataType() == DT_INT8 && !(b && b->GetDataType() != DT_INT32)) {  // one int8 GEMM
      auto* acc = static_cast<int32_t*>(ctx->MallocWorkSpace(static_cast<size_t>(rows * oc) * sizeof(int32_t)));
      if (!acc) return GRAPH_FAILED;
      GemmOut out;
      out.acc = acc;
      if (GemmS8(ctx, rows, oc, ic, x->GetData<int8_t>(), in.zp, pw, w_zp, out, packed_.get())) {
        int32_t lo, hi;
        QuantClamp<int8_t>(ctx, act, &lo, &hi);
        const int32_t* b32 = b ? b->GetData<int32_t>() : nullptr;
        int8_t* py = y->GetData<int8_t>();
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t k = 0; k < oc; ++k) {
            int32_t v = tfl::MultiplyByQuantizedMultiplierSingleRounding(acc[r * oc + k] + (b32 ? b32[k] : 0), mult[static_cast<size_t>(k)],
                                                                         shift[static_cast<size_t>(k)]);
            py[r * oc + k] = static_cast<int8_t>(std::min(std::max(v + out_off, lo), hi));
          }
        return GRAPH_SUCCESS;
      }
    }
    bool ok = DispatchQuantType(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      int32_t lo, hi;
      QuantClamp<T>(ctx, act, &lo, &hi);
      const T* px = x->GetData<T>();
      T* py = y->GetData<T>();
      const int64_t* b64 = b && b->GetDataType() == DT_INT64 ? b->GetData<int64_t>() : nullptr;
      const int32_t* b32 = b && b->GetDataType() == DT_INT32 ? b->GetData<int32_t>() : nullptr;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t k = 0; k < oc; ++k) {
          int64_t acc = 0;
          for (int64_t c = 0; c < ic; ++c)
            acc += static_cast<int64_t>(static_cast<int32_t>(pw[k * ic + c]) + w_off) * (static_cast<int32_t>(px[r * ic + c]) + in_off);
          int32_t v;
          if (sizeof(T) == 2 && !b32) {
            v = tfl::MultiplyByQuantizedMultiplier(acc + (b64 ? b64[k] : 0), mult[static_cast<size_t>(k)], shift[static_cast<size_t>(k)]);
          } else {
            v = tfl::MultiplyByQuantizedMultiplierSingleRounding(static_cast<int32_t>(acc) + (b32 ? b32[k] : 0), mult[static_cast<size_t>(k)],
                                                               shift[static_cast<size_t>(k)]);
          }
          py[r * oc + k] = static_cast<T>(std::min(std::max(v + out_off, lo), hi));
        }
    });
    return ok ? GRAPH_SUCCESS : Fail(ctx, "unsupported input type");
  }

 private:
  // Hybrid's arithmetic in C (weft_fully_connected_hybrid): per-channel weight scales as a
  // constant, the quantized row in the arena's scratch.
  graphStatus EmitHybrid(EmitContext* ctx, Activation act, int64_t rows, int64_t oc, int64_t ic) {
    const Tensor* b = ctx->GetOptionalInputTensor(2);
    if (ctx->GetOutputTensor(0)->GetDataType() != DT_FLOAT || (b && b->GetDataType() != DT_FLOAT))
      return Fail(ctx, "a float input with int8 weights takes a float bias and gives a float output");
    Quant fq = InputQuant(ctx, 1);
    ListView<float> chs = ctx->GetAttrs()->GetListFloat("channel_scales");
    if (!fq.quantized() && chs.size() == 0) return Fail(ctx, "the int8 weights need a scale");
    if (!ChannelCountFits(ctx, chs, oc)) return GRAPH_FAILED;
    const bool* asym_p = ctx->GetAttrs()->GetBool("asymmetric_quantize_inputs");
    const bool asym = asym_p && *asym_p;
    std::string ch = "0";
    float w_scale = chs.size() == 1 ? chs[0] : fq.scale;
    if (chs.size() > 1) ch = ctx->Const("channel_scales", DT_FLOAT, std::vector<float>(chs.begin(), chs.end()));
    float lo, hi;
    HybridOutputRange(act, &lo, &hi);
    aot::EmitHelper(ctx, kTflKernels, "weft_fully_connected_hybrid");
    ctx->Include("<math.h>");
    const std::string q = ctx->Scratch(static_cast<size_t>(std::max<int64_t>(ic, 1)));
    ctx->Run("weft_fully_connected_hybrid(" + std::to_string(rows) + ", " + std::to_string(oc) + ", " + std::to_string(ic) + ", " +
             ctx->Input(0, "float") + ", " + ctx->Input(1, "int8_t") + ", " + (b ? ctx->Input(2, "float") : std::string("0")) + ", " + ch +
             ", " + aot::FloatLit(w_scale) + ", " + (asym ? "1" : "0") + ", " + aot::FloatLit(lo) + ", " + aot::FloatLit(hi) +
             ", (int8_t*)(void*)" + q + ", " + ctx->Output(0, "float") + ");\n");
    return GRAPH_SUCCESS;
  }

  // Float input with int8 weights (dynamic-range quantized models), as LiteRT's hybrid kernel:
  // each input row quantized on the fly (QuantizeHybridInput: symmetric, or asymmetric with
  // asymmetric_quantize_inputs), the int32 dot products of all rows as one 8-bit GEMM (a row's
  // zero point taken out through the weights' row sums), then bias + dot * (row scale * weight
  // scale), the weight scale per tensor or per channel, and the activation.
  graphStatus Hybrid(EagerOpExecutionContext* ctx, const Tensor* x, const Tensor* w, const Tensor* b, Tensor* y, Activation act,
                     int64_t rows, int64_t oc, int64_t ic) {
    if (y->GetDataType() != DT_FLOAT || (b && b->GetDataType() != DT_FLOAT))
      return Fail(ctx, "a float input with int8 weights takes a float bias and gives a float output");
    Quant fq = InputQuant(ctx, 1);
    ListView<float> chs = ctx->GetAttrs()->GetListFloat("channel_scales");
    if (!fq.quantized() && chs.size() == 0) return Fail(ctx, "the int8 weights need a scale");
    if (!ChannelCountFits(ctx, chs, oc)) return GRAPH_FAILED;
    const bool* asym_p = ctx->GetAttrs()->GetBool("asymmetric_quantize_inputs");
    const bool asym = asym_p && *asym_p;
    float lo, hi;
    HybridOutputRange(act, &lo, &hi);
    if (rows <= 0 || oc <= 0) return GRAPH_SUCCESS;
    const float* px = x->GetData<float>();
    const int8_t* pw = w->GetData<int8_t>();
    const float* pb = b ? b->GetData<float>() : nullptr;
    float* py = y->GetData<float>();
    auto* q = static_cast<int8_t*>(ctx->MallocWorkSpace(static_cast<size_t>(std::max<int64_t>(1, rows * ic))));
    auto* row = static_cast<HybridScale*>(ctx->MallocWorkSpace(static_cast<size_t>(rows) * sizeof(HybridScale)));
    auto* acc = static_cast<int32_t*>(ctx->MallocWorkSpace(static_cast<size_t>(rows * oc) * sizeof(int32_t)));
    if (!q || !row || !acc) return GRAPH_FAILED;
    for (int64_t r = 0; r < rows; ++r) row[r] = QuantizeHybridInput(rows == 1 ? ctx : nullptr, px + r * ic, ic, asym, q + r * ic);
    GemmOut out;
    out.acc = acc;
    if (ic == 0) {
      std::fill(acc, acc + rows * oc, 0);
    } else if (!GemmS8(ctx, rows, oc, ic, q, 0, pw, 0, out, packed_.get())) {
      return Fail(ctx, "the 8-bit product could not run (out of memory)");
    }
    std::vector<int32_t> computed;  // weights that were not constant at compile time
    if (asym && row_sums_.size() != static_cast<size_t>(oc)) computed = RowSums(pw, oc, ic);
    const int32_t* sums = asym ? (computed.empty() ? row_sums_.data() : computed.data()) : nullptr;
    const float w_scale = chs.size() == 1 ? chs[0] : fq.scale;
    ctx->ParallelFor(rows * oc, 256, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const int64_t r = i / oc, k = i % oc;
        int32_t dot = acc[i];
        if (asym) dot = static_cast<int32_t>(static_cast<uint32_t>(dot) - static_cast<uint32_t>(sums[k]) * static_cast<uint32_t>(row[r].offset));
        const float scale = row[r].scale * (chs.size() > 1 ? chs[static_cast<size_t>(k)] : w_scale);
        const float v = (pb ? pb[k] : 0.f) + static_cast<float>(dot) * scale;
        py[i] = std::min(std::max(v, lo), hi);
      }
    });
    return GRAPH_SUCCESS;
  }

  static std::vector<int32_t> RowSums(const int8_t* w, int64_t oc, int64_t ic) {
    std::vector<int32_t> sums(static_cast<size_t>(std::max<int64_t>(0, oc)), 0);
    for (int64_t k = 0; k < oc; ++k)
      for (int64_t c = 0; c < ic; ++c) sums[static_cast<size_t>(k)] += w[k * ic + c];
    return sums;
  }

  VnniPacked packed_;
  std::vector<int32_t> row_sums_;  // of constant int8 weights under a float input (Compile)
};

// BATCH_MATMUL (float32 lowers to MatMul on import; this op runs when the model is quantized):
// lhs [..., M, K] (adj_x: [..., K, M]) times rhs [..., K, N] (adj_y:
// [..., N, K]), batch dims broadcast. int8 x int8 with int32 sums; int16 lhs with int16 or int8
// rhs with int64 sums. The rescaling is per tensor, or per output column when the rhs is quantized
// per channel along N (weights quantized by channel).
class TflBatchMatmul : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  struct Dims {
    int64_t m = 0, k = 0, n = 0;
    Shape batch;  // broadcast batch dims
  };
  static bool Flag(const KernelContextBase* ctx, const char* name) {
    const bool* b = ctx->GetAttrs()->GetBool(name);
    return b && *b;
  }
  static bool Geometry(const KernelContextBase* ctx, const Shape& x, const Shape& y, Dims* d) {
    if (x.GetDimNum() < 2 || y.GetDimNum() < 2) return Fail(ctx, "both operands need at least 2 dims, got " + x.ToString() + " and " + y.ToString()), false;
    const size_t rx = x.GetDimNum(), ry = y.GetDimNum();
    const bool ax = Flag(ctx, "adj_x"), ay = Flag(ctx, "adj_y");
    d->m = ax ? x.GetDim(rx - 1) : x.GetDim(rx - 2);
    d->k = ax ? x.GetDim(rx - 2) : x.GetDim(rx - 1);
    const int64_t ky = ay ? y.GetDim(ry - 1) : y.GetDim(ry - 2);
    d->n = ay ? y.GetDim(ry - 2) : y.GetDim(ry - 1);
    if (d->k != ky) return Fail(ctx, "the operands " + x.ToString() + " and " + y.ToString() + " do not agree on the summed dim"), false;
    Shape bx, by;
    for (size_t i = 0; i + 2 < rx; ++i) bx.AppendDim(x.GetDim(i));
    for (size_t i = 0; i + 2 < ry; ++i) by.AppendDim(y.GetDim(i));
    if (!BroadcastShape(bx, by, &d->batch)) return Fail(ctx, "batch dims " + bx.ToString() + " and " + by.ToString() + " do not broadcast"), false;
    return true;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    Dims d;
    if (!Geometry(ctx, *ctx->GetInputShape(0), *ctx->GetInputShape(1), &d)) return GRAPH_FAILED;
    Shape out = d.batch;
    out.AppendDim(d.m);
    out.AppendDim(d.n);
    *ctx->GetOutputShape(0) = out;
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override { return SetRecordedOutputType(ctx, 0); }

  // The element offset of batch b (an index into the broadcast batch) in an operand with batch dims `own`.
  static int64_t BatchOffset(const Shape& batch, const Shape& own, int64_t b, int64_t matrix) {
    int64_t off = 0, stride = matrix;
    const size_t r = batch.GetDimNum(), ro = own.GetDimNum();
    for (size_t i = r; i-- > 0;) {
      const int64_t idx = b % batch.GetDim(i);
      b /= batch.GetDim(i);
      if (i + ro < r) continue;  // a dim this operand lacks
      const int64_t dim = own.GetDim(i + ro - r);
      if (dim != 1) off += idx * stride;
      stride *= dim;
    }
    return off;
  }

  // What a quantized batch matmul needs: TFLite's multiplier and shift per output column (one
  // scale, or per channel along the rhs's N dim) and the operands' offsets.
  struct Quantized {
    std::vector<int32_t> mult;
    std::vector<int> shift;
    int32_t x_off = 0, w_off = 0, out_off = 0;
  };
  static graphStatus Prepare(const KernelContextBase* ctx, DataType xt, DataType wt, DataType yt, const Shape& ws, const Dims& d, Quantized* q) {
    const bool ay = Flag(ctx, "adj_y");
    const bool int8 = xt == DT_INT8 && wt == DT_INT8 && yt == DT_INT8;
    const bool int16 = xt == DT_INT16 && (wt == DT_INT16 || wt == DT_INT8) && yt == DT_INT16;
    if (!int8 && !int16)
      return Fail(ctx, std::string("batch matmul takes float32, int8 x int8 -> int8 or int16 x int16/int8 -> int16, got ") + DataTypeName(xt) + " x " +
                           DataTypeName(wt) + " -> " + DataTypeName(yt));
    Quant in = InputQuant(ctx, 0), fq = InputQuant(ctx, 1), o = OutputQuant(ctx);
    ListView<float> chs = ctx->GetAttrs()->GetListFloat("channel_scales");
    if (!in.quantized() || !o.quantized() || (!fq.quantized() && chs.size() == 0))
      return Fail(ctx, "a quantized batch matmul needs the scales of both operands and the output");
    if (chs.size() > 1) {  // per channel: only along the rhs's N dim
      const int64_t* qd = ctx->GetAttrs()->GetInt("quantized_dimension");
      const int64_t n_dim = static_cast<int64_t>(ws.GetDimNum()) - (ay ? 2 : 1);
      if (static_cast<int64_t>(chs.size()) != d.n || !qd || *qd != n_dim)
        return Fail(ctx, "the rhs is quantized per channel along a dim other than its output columns");
    }
    if (int16 && (in.zp != 0 || o.zp != 0 || (wt == DT_INT16 && fq.zp != 0)))
      return Fail(ctx, "16-bit batch matmul needs zero points of 0");
    q->mult.resize(static_cast<size_t>(d.n));
    q->shift.resize(static_cast<size_t>(d.n));
    for (int64_t c = 0; c < d.n; ++c) {
      const double fs = chs.size() > 1 ? chs[static_cast<size_t>(c)] : (chs.size() == 1 ? chs[0] : fq.scale);
      tfl::QuantizeMultiplier(static_cast<double>(in.scale) * fs / static_cast<double>(o.scale), &q->mult[static_cast<size_t>(c)],
                              &q->shift[static_cast<size_t>(c)]);
    }
    q->x_off = -in.zp;
    q->w_off = -fq.zp;
    q->out_off = o.zp;
    return GRAPH_SUCCESS;
  }

  // Plain loops as Execute's: the batch offsets and the per-column multipliers as constants;
  // integer results bit-exact (TFLite's 32-bit or, for 16-bit activations, 64-bit accumulator
  // rescale).
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* w = ctx->GetInputTensor(1);
    const Tensor* y = ctx->GetOutputTensor(0);
    Dims d;
    if (!Geometry(ctx, x->GetShape(), w->GetShape(), &d)) return GRAPH_FAILED;
    const DataType xt = x->GetDataType(), wt = w->GetDataType(), yt = y->GetDataType();
    float hybrid_scale = 0.f;
    if (xt == DT_FLOAT && wt == DT_INT8 && !RhsScale(ctx, &hybrid_scale)) return GRAPH_FAILED;
    Shape xb, wb;
    for (size_t i = 0; i + 2 < x->GetShape().GetDimNum(); ++i) xb.AppendDim(x->GetShape().GetDim(i));
    for (size_t i = 0; i + 2 < w->GetShape().GetDimNum(); ++i) wb.AppendDim(w->GetShape().GetDim(i));
    const int64_t batches = d.batch.GetShapeSize();
    if (batches == 0 || d.m == 0 || d.n == 0) return GRAPH_SUCCESS;
    std::vector<int64_t> xo, wo;
    for (int64_t b = 0; b < batches; ++b) {
      xo.push_back(BatchOffset(d.batch, xb, b, d.m * d.k));
      wo.push_back(BatchOffset(d.batch, wb, b, d.k * d.n));
    }
    const bool ax = Flag(ctx, "adj_x"), ay = Flag(ctx, "adj_y");
    const std::string M = aot::IntLit(d.m), K = aot::IntLit(d.k), N = aot::IntLit(d.n);
    const std::string xi = ax ? "t * " + M + " + i" : "i * " + K + " + t", wi = ay ? "j * " + K + " + t" : "t * " + N + " + j";
    const bool is_float = xt == DT_FLOAT && wt == DT_FLOAT && yt == DT_FLOAT;
    const std::string X = is_float ? "float" : aot::CType(xt), W = is_float ? "float" : aot::CType(wt);
    std::string code = "{\n  const " + X + "* px = " + ctx->Input(0, X.c_str()) + ";\n  const " + W + "* pw = " + ctx->Input(1, W.c_str()) +
                       ";\n  " + X + "* py = " + ctx->Output(0, X.c_str()) + ";\n  const int64_t* xo = " + ctx->Const("x_offset", DT_INT64, xo) +
                       ";\n  const int64_t* wo = " + ctx->Const("w_offset", DT_INT64, wo) + ";\n";
    if (xt == DT_FLOAT && wt == DT_INT8) {  // Hybrid's arithmetic: each lhs row gathered, quantized (weft_hybrid_quantize), summed
      aot::EmitHelper(ctx, kTflKernels, "weft_hybrid_quantize");
      ctx->Include("<math.h>");
      const std::string S = ctx->Scratch(static_cast<size_t>(std::max<int64_t>(1, d.k)) * (sizeof(float) + 1));
      code = "{\n  const float* px = " + ctx->Input(0, "float") + ";\n  const int8_t* pw = " + ctx->Input(1, "int8_t") + ";\n  float* py = " +
             ctx->Output(0, "float") + ";\n  const int64_t* xo = " + ctx->Const("x_offset", DT_INT64, xo) + ";\n  const int64_t* wo = " +
             ctx->Const("w_offset", DT_INT64, wo) + ";\n  float* row = (float*)(void*)" + S + ";\n  int8_t* q = (int8_t*)(void*)((unsigned char*)(void*)" + S +
             " + " + std::to_string(std::max<int64_t>(1, d.k) * 4) + ");\n  int64_t b, i, j, t;\n  for (b = 0; b < " + aot::IntLit(batches) +
             "; ++b)\n    for (i = 0; i < " + M + "; ++i) {\n      const float* xm = px + xo[b];\n      const int8_t* wm = pw + wo[b];\n      float* out = py + (b * " +
             M + " + i) * " + N + ";\n      float scale, sf;\n      int32_t offset;\n      for (t = 0; t < " + K + "; ++t) row[t] = xm[" + xi +
             "];\n      weft_hybrid_quantize(row, " + K + ", " + (Flag(ctx, "asymmetric_quantize_inputs") ? "1" : "0") +
             ", q, &scale, &offset);\n      sf = scale * " + aot::FloatLit(hybrid_scale) + ";\n      for (j = 0; j < " + N +
             "; ++j) {\n        int32_t total = 0, col = 0;\n        for (t = 0; t < " + K + "; ++t) {\n          const int32_t v = wm[" + wi +
             "];\n          total += (int32_t)q[t] * v;\n          col += v;\n        }\n        total = (int32_t)((float)total - (float)col * (float)offset);\n"
             "        out[j] = 0.f + sf * (float)total;\n      }\n    }\n}\n";
      ctx->Run(code);
      return GRAPH_SUCCESS;
    }
    std::string inner;
    if (is_float) {
      inner = "        float acc = 0.f;\n        for (t = 0; t < " + K + "; ++t) acc += xm[" + xi + "] * wm[" + wi + "];\n        out[j] = acc;\n";
    } else {
      Quantized q;
      if (Prepare(ctx, xt, wt, yt, w->GetShape(), d, &q) != GRAPH_SUCCESS) return GRAPH_FAILED;
      std::vector<int32_t> shift(q.shift.begin(), q.shift.end());
      const bool wide = xt == DT_INT16;
      const std::string acc = wide ? "int64_t" : "int32_t";
      aot::EmitHelper(ctx, aot::Kernels(), "weft_fixed_point");
      code += "  const int32_t* mult = " + ctx->Const("multiplier", DT_INT32, q.mult) + ";\n  const int32_t* shift = " +
              ctx->Const("shift", DT_INT32, shift) + ";\n";
      inner = "        " + acc + " acc = 0;\n        int32_t v;\n        for (t = 0; t < " + K + "; ++t)\n          acc += ((" + acc + ")xm[" + xi +
              "] + " + std::to_string(q.x_off) + ") * ((" + acc + ")wm[" + wi + "] + " + std::to_string(q.w_off) + ");\n        v = " +
              (wide ? "weft_mbqm64" : "weft_mbqm") + "(acc, mult[j], (int)shift[j]) + " + std::to_string(q.out_off) +
              ";\n        out[j] = (" + X + ")weft_clamp32(v, " + (wide ? "-32768, 32767" : "-128, 127") + ");\n";
    }
    code += "  int64_t b, i, j, t;\n  for (b = 0; b < " + aot::IntLit(batches) + "; ++b)\n    for (i = 0; i < " + M + "; ++i) {\n      const " + X +
            "* xm = px + xo[b];\n      const " + W + "* wm = pw + wo[b];\n      " + X + "* out = py + (b * " + M + " + i) * " + N +
            ";\n      for (j = 0; j < " + N + "; ++j) {\n" + inner + "      }\n    }\n}\n";
    ctx->Run(code);
    return GRAPH_SUCCESS;
  }

  // The one scale of a hybrid batch matmul's int8 rhs.
  static bool RhsScale(const KernelContextBase* ctx, float* scale) {
    ListView<float> chs = ctx->GetAttrs()->GetListFloat("channel_scales");
    if (chs.size() > 1) return Fail(ctx, "a hybrid batch matmul (float lhs, int8 rhs) takes an rhs with one scale, not one per channel"), false;
    *scale = chs.size() == 1 ? chs[0] : InputQuant(ctx, 1).scale;
    if (!(*scale > 0.f) || !std::isfinite(*scale)) return Fail(ctx, "the int8 rhs of a hybrid batch matmul needs a positive, finite scale"), false;
    return true;
  }

  // Float lhs with int8 rhs (dynamic-range quantized), as LiteRT's hybrid kernel: each lhs row
  // quantized (QuantizeHybridInput; asymmetric with asymmetric_quantize_inputs), the int32 sums,
  // the row's zero point taken out in float as LiteRT does (sum - rhs column sum * offset,
  // truncated back to int32), then 0 + (row scale * rhs scale) * sum. The rhs has one scale.
  graphStatus Hybrid(EagerOpExecutionContext* ctx, const Tensor* x, const Tensor* w, Tensor* y, const Dims& d, const Shape& xb, const Shape& wb,
                     bool ax, bool ay) const {
    float w_scale = 0.f;
    if (!RhsScale(ctx, &w_scale)) return GRAPH_FAILED;
    const bool asym = Flag(ctx, "asymmetric_quantize_inputs");
    const int64_t batches = d.batch.GetShapeSize(), mk = d.m * d.k, kn = d.k * d.n;
    const float* px = x->GetData<float>();
    const int8_t* pw = w->GetData<int8_t>();
    float* py = y->GetData<float>();
    ctx->ParallelFor(batches * d.m, 1, [&](int64_t r0, int64_t r1) {
      std::vector<float> row(static_cast<size_t>(d.k));
      std::vector<int8_t> q(static_cast<size_t>(std::max<int64_t>(1, d.k)));
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t b = r / d.m, i = r % d.m;
        const float* xm = px + BatchOffset(d.batch, xb, b, mk);
        const int8_t* wm = pw + BatchOffset(d.batch, wb, b, kn);
        for (int64_t t = 0; t < d.k; ++t) row[static_cast<size_t>(t)] = xm[ax ? t * d.m + i : i * d.k + t];
        const HybridScale h = QuantizeHybridInput(nullptr, row.data(), d.k, asym, q.data());
        const float sf = h.scale * w_scale, off = static_cast<float>(h.offset);
        for (int64_t j = 0; j < d.n; ++j) {
          int32_t total = 0, col_sum = 0;
          for (int64_t t = 0; t < d.k; ++t) {
            const int32_t v = wm[ay ? j * d.k + t : t * d.n + j];
            total += static_cast<int32_t>(q[static_cast<size_t>(t)]) * v;
            col_sum += v;
          }
          total = static_cast<int32_t>(static_cast<float>(total) - static_cast<float>(col_sum) * off);
          py[r * d.n + j] = 0.f + sf * static_cast<float>(total);
        }
      }
    });
    return GRAPH_SUCCESS;
  }

  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* w = ctx->GetInputTensor(1);
    Dims d;
    if (!Geometry(ctx, x->GetShape(), w->GetShape(), &d)) return GRAPH_FAILED;
    Tensor* y = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), ctx->GetOutputTensor(0)->GetDataType());
    if (!y) return GRAPH_FAILED;
    const DataType xt = x->GetDataType(), wt = w->GetDataType(), yt = y->GetDataType();
    Shape xb, wb;
    for (size_t i = 0; i + 2 < x->GetShape().GetDimNum(); ++i) xb.AppendDim(x->GetShape().GetDim(i));
    for (size_t i = 0; i + 2 < w->GetShape().GetDimNum(); ++i) wb.AppendDim(w->GetShape().GetDim(i));
    const int64_t batches = d.batch.GetShapeSize(), mk = d.m * d.k, kn = d.k * d.n;
    const bool ay = Flag(ctx, "adj_y"), ax = Flag(ctx, "adj_x");
    if (xt == DT_FLOAT && wt == DT_INT8 && yt == DT_FLOAT) return Hybrid(ctx, x, w, y, d, xb, wb, ax, ay);
    if (xt == DT_FLOAT && wt == DT_FLOAT && yt == DT_FLOAT) {
      const float* px = x->GetData<float>();
      const float* pw = w->GetData<float>();
      float* py = y->GetData<float>();
      ctx->ParallelFor(batches * d.m, 1, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t b = r / d.m, i = r % d.m;
          const float* xm = px + BatchOffset(d.batch, xb, b, mk);
          const float* wm = pw + BatchOffset(d.batch, wb, b, kn);
          for (int64_t j = 0; j < d.n; ++j) {
            float acc = 0.f;
            for (int64_t t = 0; t < d.k; ++t) acc += xm[ax ? t * d.m + i : i * d.k + t] * wm[ay ? j * d.k + t : t * d.n + j];
            py[r * d.n + j] = acc;
          }
        }
      });
      return GRAPH_SUCCESS;
    }
    Quantized q;
    if (Prepare(ctx, xt, wt, yt, w->GetShape(), d, &q) != GRAPH_SUCCESS) return GRAPH_FAILED;
    const bool int8 = xt == DT_INT8;
    const std::vector<int32_t>& mult = q.mult;
    const std::vector<int>& shift = q.shift;
    const int32_t x_off = q.x_off, w_off = q.w_off, out_off = q.out_off;
    auto run = [&](auto xtag, auto wtag) {
      using X = decltype(xtag);
      using W = decltype(wtag);
      using Acc = std::conditional_t<sizeof(X) == 2, int64_t, int32_t>;
      const X* px = x->GetData<X>();
      const W* pw = w->GetData<W>();
      X* py = y->GetData<X>();
      const int32_t lo = std::numeric_limits<X>::min(), hi = std::numeric_limits<X>::max();
      ctx->ParallelFor(batches * d.m, 1, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t b = r / d.m, i = r % d.m;
          const X* xm = px + BatchOffset(d.batch, xb, b, mk);
          const W* wm = pw + BatchOffset(d.batch, wb, b, kn);
          X* out = py + r * d.n;
          for (int64_t j = 0; j < d.n; ++j) {
            Acc acc = 0;
            for (int64_t t = 0; t < d.k; ++t) {
              const Acc a = static_cast<Acc>(xm[ax ? t * d.m + i : i * d.k + t]) + x_off;
              const Acc v = static_cast<Acc>(wm[ay ? j * d.k + t : t * d.n + j]) + w_off;
              acc += a * v;
            }
            const int32_t q = tfl::MultiplyByQuantizedMultiplier(acc, mult[static_cast<size_t>(j)], shift[static_cast<size_t>(j)]);
            out[j] = static_cast<X>(std::min(std::max(q + out_off, lo), hi));
          }
        }
      });
    };
    if (int8) run(int8_t{}, int8_t{});
    else if (wt == DT_INT16) run(int16_t{}, int16_t{});
    else run(int16_t{}, int8_t{});
    return GRAPH_SUCCESS;
  }
};

// The output shape of a binary op: its two inputs' shapes broadcast.
graphStatus BroadcastOutputShape(InferShapeContext* ctx) {
    Shape out;
    if (!BroadcastShape(*ctx->GetInputShape(0), *ctx->GetInputShape(1), &out))
      return Fail(ctx, "shapes " + ctx->GetInputShape(0)->ToString() + " and " + ctx->GetInputShape(1)->ToString() + " do not broadcast");
    *ctx->GetOutputShape(0) = out;
    return GRAPH_SUCCESS;
}

// ATAN2(y, x): float32, broadcast; the angle of (x, y) in [-pi, pi].
class TflAtan2 : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  graphStatus Emit(EmitContext* ctx) override {
    if (ctx->GetInputTensor(0)->GetDataType() != DT_FLOAT || ctx->GetInputTensor(1)->GetDataType() != DT_FLOAT)
      return Fail(ctx, "ATAN2 takes float32 inputs");
    return aot::EmitMap2(ctx, "atan2f(a, b)", "float");
  }
  graphStatus InferShape(InferShapeContext* ctx) override { return BroadcastOutputShape(ctx); }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    ctx->SetOutputDataType(0, ctx->GetInputDataType(0));
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* a = ctx->GetInputTensor(0);
    const Tensor* b = ctx->GetInputTensor(1);
    if (a->GetDataType() != DT_FLOAT || b->GetDataType() != DT_FLOAT) return Fail(ctx, "ATAN2 takes float32 inputs");
    Tensor* y = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), DT_FLOAT);
    if (!y) return GRAPH_FAILED;
    const float* pa = a->GetData<float>();
    const float* pb = b->GetData<float>();
    float* py = y->GetData<float>();
    ForEachBroadcast(a->GetShape(), b->GetShape(), y->GetShape(), [&](int64_t o, int64_t i, int64_t j) { py[o] = std::atan2(pa[i], pb[j]); });
    return GRAPH_SUCCESS;
  }
};

// EMBEDDING_LOOKUP: rows of `value` picked by the int32 ids of `lookup` (1-D): output
// [len(lookup), value dims 1...]. A value of any type is copied as it is; int8 values with a float
// output are dequantized as LiteRT's hybrid kernel does (value * scale in double, the scale per
// tensor or, per channel, the picked row's). An id outside [0, rows) is an error naming it.
class TflEmbeddingLookup : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& ids = *ctx->GetInputShape(0);
    const Shape& v = *ctx->GetInputShape(1);
    if (ids.GetDimNum() != 1) return Fail(ctx, "lookup must be 1-D, not " + ids.ToString());
    if (v.GetDimNum() < 1) return Fail(ctx, "value must have at least one dimension");
    Shape o = v;
    o.SetDim(0, ids.GetDim(0));
    *ctx->GetOutputShape(0) = o;
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override { return SetRecordedOutputType(ctx, 1); }

  // How a row is produced: copied, or dequantized (scales: one per row, or one for all).
  struct Plan {
    bool dequantize = false;
    std::vector<float> scales;
    int64_t rows = 0, row = 0;
  };
  bool MakePlan(const KernelContextBase* ctx, const Tensor* ids, const Tensor* v, const Tensor* y, Plan* p) const {
    if (ids->GetDataType() != DT_INT32) return Fail(ctx, std::string("lookup must be int32, not ") + DataTypeName(ids->GetDataType())), false;
    p->rows = v->GetShape().GetDim(0);
    p->row = p->rows > 0 ? v->GetShapeSize() / p->rows : 0;
    if (y->GetDataType() == v->GetDataType()) return true;
    if (y->GetDataType() != DT_FLOAT || v->GetDataType() != DT_INT8)
      return Fail(ctx, std::string("a lookup of ") + DataTypeName(v->GetDataType()) + " values gives them as they are, or float32 from int8 values, not " +
                           DataTypeName(y->GetDataType())),
             false;
    ListView<float> chs = ctx->GetAttrs()->GetListFloat("channel_scales");
    ListView<int64_t> czs = ctx->GetAttrs()->GetListInt("channel_zero_points");
    const Quant q = InputQuant(ctx, 1);
    if (chs.size() > 1 && static_cast<int64_t>(chs.size()) != p->rows)
      return Fail(ctx, "the value has " + std::to_string(chs.size()) + " scales for " + std::to_string(p->rows) + " rows"), false;
    if (chs.size() > 1 && IntAttr(ctx, "quantized_dimension") != 0)
      return Fail(ctx, "int8 values take their scales per row (quantized_dimension 0), not along dimension " +
                           std::to_string(IntAttr(ctx, "quantized_dimension"))),
             false;
    for (int64_t z : czs)
      if (z != 0) return Fail(ctx, "int8 values must be symmetric (zero point 0), not " + std::to_string(z)), false;
    if (chs.size() == 0 && q.zp != 0) return Fail(ctx, "int8 values must be symmetric (zero point 0), not " + std::to_string(q.zp)), false;
    if (chs.size() == 0 && !q.quantized()) return Fail(ctx, "int8 values need a scale to give float32"), false;
    p->dequantize = true;
    if (chs.size() > 1) p->scales.assign(chs.begin(), chs.end());
    else p->scales.assign(1, chs.size() == 1 ? chs[0] : q.scale);
    for (float v : p->scales)
      if (!(v > 0.f) || !std::isfinite(v)) return Fail(ctx, "the int8 values' scales must be positive and finite"), false;
    return true;
  }

  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* ids = ctx->GetInputTensor(0);
    const Tensor* v = ctx->GetInputTensor(1);
    const int64_t n = ids->GetShapeSize();
    Shape os = v->GetShape();
    os.SetDim(0, n);
    Tensor* y = ctx->MallocOutputTensor(0, os, ctx->GetOutputTensor(0)->GetDataType());
    if (!y) return GRAPH_FAILED;
    Plan p;
    if (!MakePlan(ctx, ids, v, y, &p)) return GRAPH_FAILED;
    const int32_t* pid = ids->GetData<int32_t>();
    for (int64_t i = 0; i < n; ++i)
      if (pid[i] < 0 || pid[i] >= p.rows)
        return Fail(ctx, "lookup id " + std::to_string(pid[i]) + " (entry " + std::to_string(i) + ") is outside [0, " + std::to_string(p.rows) + ")");
    if (!p.dequantize) {
      const size_t bytes = static_cast<size_t>(p.row) * DataTypeSize(v->GetDataType());
      auto* dst = static_cast<uint8_t*>(y->GetAddr());
      const auto* src = static_cast<const uint8_t*>(v->GetAddr());
      for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * bytes, src + pid[i] * bytes, bytes);
      return GRAPH_SUCCESS;
    }
    const int8_t* pv = v->GetData<int8_t>();
    float* py = y->GetData<float>();
    for (int64_t i = 0; i < n; ++i) {
      const double sc = p.scales[p.scales.size() > 1 ? static_cast<size_t>(pid[i]) : 0];
      for (int64_t j = 0; j < p.row; ++j) py[i * p.row + j] = static_cast<float>(static_cast<double>(pv[pid[i] * p.row + j]) * sc);
    }
    return GRAPH_SUCCESS;
  }

  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* ids = ctx->GetInputTensor(0);
    const Tensor* v = ctx->GetInputTensor(1);
    const Tensor* y = ctx->GetOutputTensor(0);
    Plan p;
    if (!MakePlan(ctx, ids, v, y, &p)) return GRAPH_FAILED;
    const int64_t n = ids->GetShapeSize();
    if (n > INT32_MAX / 4 || p.rows > INT32_MAX / 4 || p.row > INT32_MAX / 4) return Fail(ctx, "too large for the generated C (32-bit indices)");
    const std::string N = std::to_string(n), R = std::to_string(p.rows), W = std::to_string(p.row);
    std::string body = "{\n  int32_t i;\n  const int32_t* ids = " + ctx->Input(0, "int32_t") + ";\n  for (i = 0; i < " + N +
                       "; ++i)\n    if (ids[i] < 0 || ids[i] >= " + R + ") return 1; /* a lookup id out of range */\n";
    if (!p.dequantize) {
      ctx->Include("<string.h>");
      const std::string bytes = std::to_string(p.row * static_cast<int64_t>(DataTypeSize(v->GetDataType())));
      body += "  for (i = 0; i < " + N + "; ++i)\n    memcpy((unsigned char*)" + ctx->Output(0, "void") + " + (size_t)i * " + bytes +
              ", (const unsigned char*)" + ctx->Input(1, "void") + " + (size_t)ids[i] * " + bytes + ", " + bytes + ");\n";
    } else {
      const std::string sc = ctx->Const("scales", DT_FLOAT, p.scales);
      body += "  for (i = 0; i < " + N + "; ++i) {\n    const double sc = " + sc + "[" + (p.scales.size() > 1 ? "ids[i]" : "0") +
              "];\n    int32_t j;\n    for (j = 0; j < " + W + "; ++j) " + ctx->Output(0, "float") + "[(int64_t)i * " + W + " + j] = (float)((double)" +
              ctx->Input(1, "int8_t") + "[(int64_t)ids[i] * " + W + " + j] * sc);\n  }\n";
    }
    ctx->Run(body + "}\n");
    return GRAPH_SUCCESS;
  }

};

// RSQRT: float32; int8 with TFLite's integer kernel (each value's offset from the zero point
// through the fixed-point inverse square root, then rescaled by 1 / (sqrt(input scale) * output
// scale)), computed once per distinct input value; int16 through TFLite's 513-entry table. Values
// below the zero point are an error, as in TFLite; the value 0 gives the largest output.
class TflRsqrt : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  graphStatus InferShape(InferShapeContext* ctx) override {
    *ctx->GetOutputShape(0) = *ctx->GetInputShape(0);
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    ctx->SetOutputDataType(0, ctx->GetInputDataType(0));
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    const int64_t n = x->GetShapeSize();
    if (x->GetDataType() == DT_FLOAT) {
      const float* px = x->GetData<float>();
      float* py = y->GetData<float>();
      for (int64_t i = 0; i < n; ++i) py[i] = 1.f / std::sqrt(px[i]);
      return GRAPH_SUCCESS;
    }
    Quant in, o;
    if (Quantized(ctx, &in, &o) != GRAPH_SUCCESS) return GRAPH_FAILED;
    if (x->GetDataType() == DT_INT16) {
      int16_t lut[513];
      Int16Lut(in, o, lut);
      const int16_t* px = x->GetData<int16_t>();
      int16_t* py = y->GetData<int16_t>();
      for (int64_t i = 0; i < n; ++i) {
        if (px[i] < 0)
          return Fail(ctx, "RSQRT is defined for values at or above the zero point (0); element " + std::to_string(i) + " is " +
                               std::to_string(px[i]));
        py[i] = tfl::LutLookupInt16(px[i], lut);
      }
      return GRAPH_SUCCESS;
    }
    int8_t table[256];
    Int8Table(in, o, table);
    const int8_t* px = x->GetData<int8_t>();
    int8_t* py = y->GetData<int8_t>();
    for (int64_t i = 0; i < n; ++i) {
      if (px[i] < in.zp)
        return Fail(ctx, "RSQRT is defined for values at or above the zero point (" + std::to_string(in.zp) + "); element " +
                             std::to_string(i) + " is " + std::to_string(px[i]));
      py[i] = table[px[i] + 128];
    }
    return GRAPH_SUCCESS;
  }
  // The runtime's tables as constants: a value below the zero point fails the run (status 1).
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const std::string n = aot::IntLit(x->GetShapeSize());
    ctx->Include("<math.h>");
    if (x->GetDataType() == DT_FLOAT) {
      ctx->Run("{\n  const float* px = " + ctx->Input(0, "float") + ";\n  float* py = " + ctx->Output(0, "float") +
               ";\n  int64_t i;\n  for (i = 0; i < " + n + "; ++i) py[i] = 1.f / sqrtf(px[i]);\n}\n");
      return GRAPH_SUCCESS;
    }
    Quant in, o;
    if (Quantized(ctx, &in, &o) != GRAPH_SUCCESS) return GRAPH_FAILED;
    if (x->GetDataType() == DT_INT16) {
      std::vector<int16_t> lut(513);
      Int16Lut(in, o, lut.data());
      ctx->Run("{\n  const int16_t* px = " + ctx->Input(0, "int16_t") + ";\n  int16_t* py = " + ctx->Output(0, "int16_t") +
               ";\n  const int16_t* lut = " + ctx->Const("rsqrt_lut", DT_INT16, lut) + ";\n  int64_t i;\n  for (i = 0; i < " + n +
               "; ++i) if (px[i] < 0) return 1; /* below the zero point */\n  for (i = 0; i < " + n +
               "; ++i) {\n    const int index = 256 + (px[i] >> 7);\n    const int16_t offset = (int16_t)(px[i] & 0x7f);\n" +
               "    const int16_t slope = (int16_t)(lut[index + 1] - lut[index]);\n    py[i] = (int16_t)(lut[index] + ((slope * offset + 64) >> 7));\n" +
               "  }\n}\n");
      return GRAPH_SUCCESS;
    }
    std::vector<int8_t> table(256);
    Int8Table(in, o, table.data());
    ctx->Run("{\n  const int8_t* px = " + ctx->Input(0, "int8_t") + ";\n  int8_t* py = " + ctx->Output(0, "int8_t") +
             ";\n  const int8_t* table = " + ctx->Const("rsqrt_table", DT_INT8, table) + ";\n  int64_t i;\n" +
             (in.zp > -128 ? "  for (i = 0; i < " + n + "; ++i) if (px[i] < " + std::to_string(in.zp) + ") return 1; /* below the zero point */\n"
                           : std::string()) +
             "  for (i = 0; i < " + n + "; ++i) py[i] = table[px[i] + 128];\n}\n");
    return GRAPH_SUCCESS;
  }

 private:
  template <typename Ctx>
  static graphStatus Quantized(const Ctx* ctx, Quant* in, Quant* o) {
    const DataType dt = ctx->GetInputTensor(0)->GetDataType();
    if (dt != DT_INT8 && dt != DT_INT16) return Fail(ctx, "RSQRT takes float32, int8 or int16");
    *in = InputQuant(ctx, 0);
    *o = OutputQuant(ctx);
    if (!in->quantized() || !o->quantized()) return Fail(ctx, "quantized RSQRT needs input and output scales");
    if (dt == DT_INT16 && (in->zp != 0 || o->zp != 0)) return Fail(ctx, "int16 RSQRT needs zero points of 0");
    return GRAPH_SUCCESS;
  }
  // int16: TFLite's 513-entry table of 1 / sqrt.
  static void Int16Lut(const Quant& in, const Quant& o, int16_t* lut) {
    const float out_scale = o.scale;
    tfl::PopulateLutInt16(in.scale, in.zp, o.scale, o.zp, [out_scale](float v) { return v <= 0.f ? 32767.f * out_scale : 1.f / std::sqrt(v); },
                          lut);
  }
  // int8: TFLite's integer kernel (each value's offset from the zero point through the
  // fixed-point inverse square root, then rescaled by 1 / (sqrt(input scale) * output scale)),
  // once per input value: table[v + 128].
  static void Int8Table(const Quant& in, const Quant& o, int8_t* table) {
    // The multiplier as TFLite computes it: sqrt and the product in float, the quotient in double.
    const float root = std::sqrt(in.scale);
    int32_t mult;
    int shift;
    tfl::QuantizeMultiplier(1.0 / static_cast<double>(root * o.scale), &mult, &shift);
    constexpr int kShift = 20;  // keeps the intermediate an integer
    for (int v = -128; v < 128; ++v) {
      const int32_t value = v + (-in.zp);
      int32_t out;
      if (value <= 0) {
        out = 127;  // 0 maps to the largest value; negatives are refused
      } else {
        int32_t inv;
        int inv_shift;
        tfl::InvSqrtMultiplier(value, &inv, &inv_shift);
        const int32_t data = tfl::MultiplyByQuantizedMultiplier(1, inv, inv_shift + kShift);
        out = std::min(std::max(tfl::MultiplyByQuantizedMultiplier(data, mult, shift - kShift) + o.zp, -128), 127);
      }
      table[v + 128] = static_cast<int8_t>(out);
    }
  }
};

// ---- elementwise -------------------------------------------------------------------------------

// TFLite's quantized Add, Sub and Mul of one pair of elements (its reference kernels' arithmetic).
struct QuantBinary {
  int op = 0;  // 0 Add, 1 Sub, 2 Mul
  int left = 0;
  int32_t a_zp = 0, b_zp = 0, out_zp = 0, lo = 0, hi = 0, m = 0, m1 = 0, m2 = 0, mo = 0;
  int s = 0, s1 = 0, s2 = 0, so = 0;
  int32_t operator()(int32_t a, int32_t b) const {
    int32_t v;
    if (op == 2) {  // one multiplier for the product of the scales
      v = tfl::MultiplyByQuantizedMultiplier((a - a_zp) * (b - b_zp), m, s) + out_zp;
    } else {  // both inputs rescaled to twice the larger input scale, left-shifted for headroom
      const int32_t v1 = tfl::MultiplyByQuantizedMultiplierSmallerThanOneExp((a - a_zp) * (1 << left), m1, s1);
      const int32_t v2 = tfl::MultiplyByQuantizedMultiplierSmallerThanOneExp((b - b_zp) * (1 << left), m2, s2);
      v = tfl::MultiplyByQuantizedMultiplierSmallerThanOneExp(op == 0 ? v1 + v2 : v1 - v2, mo, so) + out_zp;
    }
    return std::min(std::max(v, lo), hi);
  }
};
// QuantBinary for this node, whose inputs have quantized type T (int8, uint8 or int16).
template <typename T>
bool MakeQuantBinary(const KernelContextBase* ctx, int op, Activation act, QuantBinary* q) {
  const Quant qa = InputQuant(ctx, 0), qb = InputQuant(ctx, 1), qo = OutputQuant(ctx);
  if (!qa.quantized() || !qb.quantized() || !qo.quantized()) return false;
  q->op = op;
  q->a_zp = qa.zp, q->b_zp = qb.zp, q->out_zp = qo.zp;
  QuantClamp<T>(ctx, act, &q->lo, &q->hi);
  if (op == 2) {  // computed in float as TFLite does
    tfl::QuantizeMultiplier(static_cast<double>(qa.scale * qb.scale / qo.scale), &q->m, &q->s);
    return true;
  }
  q->left = sizeof(T) == 2 ? 15 : 20;
  const double twice_max = 2 * static_cast<double>(std::max(qa.scale, qb.scale));
  tfl::QuantizeMultiplier(static_cast<double>(qa.scale) / twice_max, &q->m1, &q->s1);
  tfl::QuantizeMultiplier(static_cast<double>(qb.scale) / twice_max, &q->m2, &q->s2);
  tfl::QuantizeMultiplier(twice_max / (static_cast<double>(1 << q->left) * static_cast<double>(qo.scale)), &q->mo, &q->so);
  return true;
}

#ifdef WEFT_LITERT_AVX2
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's AVX-512 headers, as above
// out[i] = table[a[i] * 256 + b[i]] (bytes read as unsigned) by 16-lane gathers; the table has
// 3 bytes of slack past its 65536 entries (each gather reads a 32-bit word).
__attribute__((target("avx512f,avx512bw"))) void PairTableRow(const uint8_t* a, const uint8_t* b, uint8_t* out, int64_t n,
                                                              const uint8_t* table) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i va = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
    const __m512i vb = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
    const __m512i idx = _mm512_or_si512(_mm512_slli_epi32(va, 8), vb);
    const __m512i v = _mm512_i32gather_epi32(idx, table, 1);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm512_cvtepi32_epi8(v));
  }
  for (; i < n; ++i) out[i] = table[a[i] * 256 + b[i]];
}
#pragma GCC diagnostic pop
#endif

// Add, Sub, Mul with NumPy broadcasting.
class TflBinary : public EagerExecuteOp, public ShapeInferOp, public EmittableOp, public CompilableOp, public RebuildOnLoad {
 public:
  graphStatus InferShape(InferShapeContext* ctx) override { return BroadcastOutputShape(ctx); }
  // 8-bit inputs: the result of every pair of input values in a table (64 KiB), for outputs large
  // enough to repay it, so that a run is one lookup per element.
  graphStatus Compile(OpCompileContext* ctx) override {
    table_.clear();
    const Tensor* a = ctx->GetInputTensor(0);
    const Tensor* b = ctx->GetInputTensor(1);
    const Tensor* y = ctx->GetOutputTensor(0);
    if (!a || !b || !y || a->GetDataType() != b->GetDataType() || y->GetShapeSize() < kPairTableMinElements) return GRAPH_SUCCESS;
    const DataType dt = a->GetDataType();
    if (dt != DT_INT8 && dt != DT_UINT8) return GRAPH_SUCCESS;
    Activation act;
    if (!ParseActivation(ctx, &act)) {
      ctx->SetError("");  // Execute reports it
      return GRAPH_SUCCESS;
    }
    std::string type = ctx->GetNodeType();
    const int op = type == "TflAdd" ? 0 : type == "TflSub" ? 1 : 2;
    QuantBinary q;
    if (!(dt == DT_INT8 ? MakeQuantBinary<int8_t>(ctx, op, act, &q) : MakeQuantBinary<uint8_t>(ctx, op, act, &q))) return GRAPH_SUCCESS;
    table_.assign(65536 + 3, 0);
    for (int32_t i = 0; i < 256; ++i)
      for (int32_t j = 0; j < 256; ++j) {
        const int32_t x = dt == DT_INT8 ? static_cast<int8_t>(i) : i, z = dt == DT_INT8 ? static_cast<int8_t>(j) : j;
        table_[static_cast<size_t>(i * 256 + j)] = static_cast<uint8_t>(q(x, z));
      }
    return GRAPH_SUCCESS;
  }
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* a = ctx->GetInputTensor(0);
    const Tensor* b = ctx->GetInputTensor(1);
    const Tensor* y = ctx->GetOutputTensor(0);
    Activation act;
    if (!ParseActivation(ctx, &act)) return GRAPH_FAILED;
    std::string type = ctx->GetNodeType();
    const int op = type == "TflAdd" ? 0 : type == "TflSub" ? 1 : 2;
    const DataType dt = a->GetDataType();
    if (b->GetDataType() != dt) return Fail(ctx, "both inputs must have the same type");
    const std::string g = aot::Broadcast(a->GetShape(), b->GetShape(), y->GetShape());
    const std::string gp = g.empty() ? "0" : "&g";
    const std::string n = aot::IntLit(y->GetShapeSize());
    if (dt == DT_FLOAT) {
      float lo, hi;
      tfl::ActivationRange(act, &lo, &hi);
      aot::EmitHelper(ctx, kTflKernels, "weft_binary_f32");
      ctx->Run(g + "weft_binary_f32(" + std::to_string(op) + ", " + n + ", " + gp + ", " + ctx->Input(0, "float") + ", " + ctx->Input(1, "float") +
               ", " + aot::FloatLit(lo) + ", " + aot::FloatLit(hi) + ", " + ctx->Output(0, "float") + ");\n");
      return GRAPH_SUCCESS;
    }
    if (dt == DT_INT32 || dt == DT_INT64) {  // plain integer arithmetic, wrapping as Execute
      const std::string t = dt == DT_INT32 ? "int32_t" : "int64_t";
      int64_t lo = dt == DT_INT32 ? INT32_MIN : INT64_MIN, hi = dt == DT_INT32 ? INT32_MAX : INT64_MAX;
      if (act == Activation::kRelu) lo = 0;
      if (act == Activation::kRelu6) lo = 0, hi = 6;
      if (act == Activation::kReluN1To1) lo = -1, hi = 1;
      const char* expr = op == 0 ? "(uint64_t)pa[i] + (uint64_t)pb[j]" : op == 1 ? "(uint64_t)pa[i] - (uint64_t)pb[j]" : "(uint64_t)pa[i] * (uint64_t)pb[j]";
      if (!g.empty()) aot::EmitHelper(ctx, aot::Kernels(), "weft_broadcast");
      ctx->Run("{\n  " + g + "  const " + t + "* pa = " + ctx->Input(0, t.c_str()) + ";\n  const " + t + "* pb = " + ctx->Input(1, t.c_str()) + ";\n  " + t +
               "* py = " + ctx->Output(0, t.c_str()) + ";\n  int64_t o, i = 0, j = 0;\n  for (o = 0; o < " + n + "; ++o) {\n    " +
               (g.empty() ? std::string("i = j = o;") : std::string("weft_bcast_index(&g, o, &i, &j);")) + "\n    {\n      const " + t + " v = (" + t +
               ")(" + expr + ");\n      py[o] = v < " + aot::IntLit(lo) + " ? " + aot::IntLit(lo) + " : v > " + aot::IntLit(hi) + " ? " + aot::IntLit(hi) +
               " : v;\n    }\n  }\n}\n");
      return GRAPH_SUCCESS;
    }
    const int qt = QTypeCode(dt);
    if (qt == 0 || qt == 32) return Fail(ctx, "the generated C takes float32, int8, uint8, int16, int32 or int64 here, not " + std::string(DataTypeName(dt)));
    Quant qa = InputQuant(ctx, 0), qb = InputQuant(ctx, 1), qo = OutputQuant(ctx);
    if (!qa.quantized() || !qb.quantized() || !qo.quantized()) return Fail(ctx, "quantized inputs and output need scales");
    int32_t lo, hi;
    if (dt == DT_INT8) QuantClamp<int8_t>(ctx, act, &lo, &hi);
    else if (dt == DT_UINT8) QuantClamp<uint8_t>(ctx, act, &lo, &hi);
    else QuantClamp<int16_t>(ctx, act, &lo, &hi);
    const std::string tail = aot::IntLit(qo.zp) + ", " + aot::IntLit(lo) + ", " + aot::IntLit(hi) + ", " + ctx->Output(0, "void") + ");\n";
    const std::string ins = ctx->Input(0, "void") + ", " + ctx->Input(1, "void") + ", " + aot::IntLit(qa.zp) + ", " + aot::IntLit(qb.zp) + ", ";
    if (op == 2) {  // as Execute: the scale product in float
      int32_t m;
      int sh;
      tfl::QuantizeMultiplier(static_cast<double>(qa.scale * qb.scale / qo.scale), &m, &sh);
      aot::EmitHelper(ctx, kTflKernels, "weft_mul_q");
      ctx->Run(g + "weft_mul_q(" + std::to_string(qt) + ", " + n + ", " + gp + ", " + ins + aot::IntLit(m) + ", " + std::to_string(sh) + ", " + tail);
      return GRAPH_SUCCESS;
    }
    const int left = dt == DT_INT16 ? 15 : 20;
    const double twice_max = 2 * static_cast<double>(std::max(qa.scale, qb.scale));
    int32_t m1, m2, mo;
    int s1, s2, so;
    tfl::QuantizeMultiplier(static_cast<double>(qa.scale) / twice_max, &m1, &s1);
    tfl::QuantizeMultiplier(static_cast<double>(qb.scale) / twice_max, &m2, &s2);
    tfl::QuantizeMultiplier(twice_max / (static_cast<double>(1 << left) * static_cast<double>(qo.scale)), &mo, &so);
    if (s1 > 0 || s2 > 0 || so > 0) return Fail(ctx, "the output scale is too small for TFLite's quantized add");
    aot::EmitHelper(ctx, kTflKernels, "weft_add_q");
    ctx->Run(g + "weft_add_q(" + std::to_string(qt) + ", " + (op == 0 ? "1" : "-1") + ", " + n + ", " + gp + ", " + ins + std::to_string(left) +
             ", " + aot::IntLit(m1) + ", " + std::to_string(s1) + ", " + aot::IntLit(m2) + ", " + std::to_string(s2) + ", " + aot::IntLit(mo) +
             ", " + std::to_string(so) + ", " + tail);
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* a = ctx->GetInputTensor(0);
    const Tensor* b = ctx->GetInputTensor(1);
    Tensor* y = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), ctx->GetOutputTensor(0)->GetDataType());
    if (!y) return GRAPH_FAILED;
    Activation act;
    if (!ParseActivation(ctx, &act)) return GRAPH_FAILED;
    std::string type = ctx->GetNodeType();
    const int op = type == "TflAdd" ? 0 : type == "TflSub" ? 1 : 2;
    DataType dt = a->GetDataType();
    if (b->GetDataType() != dt) return Fail(ctx, "both inputs must have the same type");
    const Shape& as = a->GetShape();
    const Shape& bs = b->GetShape();
    const Shape& ys = y->GetShape();
    if (dt == DT_FLOAT) {
      float lo, hi;
      tfl::ActivationRange(act, &lo, &hi);
      const float* pa = a->GetData<float>();
      const float* pb = b->GetData<float>();
      float* py = y->GetData<float>();
      ForEachBroadcast(as, bs, ys, [&](int64_t o, int64_t i, int64_t j) {
        float v = op == 0 ? pa[i] + pb[j] : op == 1 ? pa[i] - pb[j] : pa[i] * pb[j];
        py[o] = std::min(std::max(v, lo), hi);
      });
      return GRAPH_SUCCESS;
    }
    if (dt == DT_INT32 || dt == DT_INT64) {  // plain integer arithmetic (no quantization)
      auto run = [&](auto tag) {
        using T = decltype(tag);
        const T* pa = a->GetData<T>();
        const T* pb = b->GetData<T>();
        T* py = y->GetData<T>();
        T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
        if (act == Activation::kRelu) lo = 0;
        if (act == Activation::kRelu6) lo = 0, hi = 6;
        if (act == Activation::kReluN1To1) lo = -1, hi = 1;
        ForEachBroadcast(as, bs, ys, [&](int64_t o, int64_t i, int64_t j) {
          T v = static_cast<T>(op == 0 ? static_cast<uint64_t>(pa[i]) + static_cast<uint64_t>(pb[j])
                               : op == 1 ? static_cast<uint64_t>(pa[i]) - static_cast<uint64_t>(pb[j])
                                         : static_cast<uint64_t>(pa[i]) * static_cast<uint64_t>(pb[j]));
          py[o] = std::min(std::max(v, lo), hi);
        });
      };
      if (dt == DT_INT32) run(int32_t{});
      else run(int64_t{});
      return GRAPH_SUCCESS;
    }
    if ((dt == DT_INT8 || dt == DT_UINT8) && table_.size() == 65536 + 3) {  // Compile's table of every pair
      const auto* pa = static_cast<const uint8_t*>(a->GetAddr());
      const auto* pb = static_cast<const uint8_t*>(b->GetAddr());
      auto* py = static_cast<uint8_t*>(y->GetAddr());
      const uint8_t* t = table_.data();
#ifdef WEFT_LITERT_AVX2
      static const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
      if (avx512 && as == ys && bs == ys) {
        ctx->ParallelFor(y->GetShapeSize(), 16384, [&](int64_t i0, int64_t i1) { PairTableRow(pa + i0, pb + i0, py + i0, i1 - i0, t); });
        return GRAPH_SUCCESS;
      }
#endif
      ForEachBroadcast(as, bs, ys, [&](int64_t o, int64_t i, int64_t j) { py[o] = t[pa[i] * 256 + pb[j]]; });
      return GRAPH_SUCCESS;
    }
    bool ok_quant = true;
    bool ok = DispatchQuantType(dt, [&](auto tag) {
      using T = decltype(tag);
      QuantBinary q;
      if (!MakeQuantBinary<T>(ctx, op, act, &q)) {
        ok_quant = false;
        return;
      }
      const T* pa = a->GetData<T>();
      const T* pb = b->GetData<T>();
      T* py = y->GetData<T>();
      const int32_t lo = q.lo, hi = q.hi, left = q.left, m1 = q.m1, m2 = q.m2, mo = q.mo, s1 = q.s1, s2 = q.s2, so = q.so;
      if (op != 2 && as == ys && bs == ys && s1 <= 0 && s2 <= 0 && so <= 0) {  // same shapes: the vectorized row
        const int64_t n = y->GetShapeSize();
        if constexpr (!std::is_same_v<T, uint8_t>) {
          ctx->ParallelFor(n, 16384, [&](int64_t i0, int64_t i1) {
            if constexpr (std::is_same_v<T, int8_t>)
              AddRowInt8(pa + i0, pb + i0, py + i0, i1 - i0, q.a_zp, q.b_zp, left, m1, -s1, m2, -s2, op == 0 ? 1 : -1, mo, -so, q.out_zp, lo, hi);
            else
              AddRowInt16(pa + i0, pb + i0, py + i0, i1 - i0, q.a_zp, q.b_zp, left, m1, -s1, m2, -s2, op == 0 ? 1 : -1, mo, -so, q.out_zp, lo, hi);
          });
          return;
        }
      }
      ForEachBroadcast(as, bs, ys, [&](int64_t o, int64_t i, int64_t j) { py[o] = static_cast<T>(q(pa[i], pb[j])); });
    });
    if (!ok_quant) return Fail(ctx, "quantized inputs and output need scales");
    return ok ? GRAPH_SUCCESS : Fail(ctx, "unsupported type");
  }

 private:
  static constexpr int64_t kPairTableMinElements = 4096;
  std::vector<uint8_t> table_;  // Compile's: the 8-bit result of inputs (i, j) at i * 256 + j, as bytes
};

// Element-wise Tfl ops: the output has input 0's shape.
class TflSameShape : public EagerExecuteOp, public ShapeInferOp {
 public:
  graphStatus InferShape(InferShapeContext* ctx) override {
    *ctx->GetOutputShape(0) = *ctx->GetInputShape(0);
    return GRAPH_SUCCESS;
  }
};

class TflLeakyRelu : public TflSameShape, public EmittableOp {
 public:
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const float* alpha = ctx->GetAttrs()->GetFloat("alpha");
    if (!alpha) return GRAPH_FAILED;
    const std::string n = aot::IntLit(x->GetShapeSize());
    if (x->GetDataType() == DT_FLOAT) {
      aot::EmitHelper(ctx, kTflKernels, "weft_leaky_relu_f32");
      ctx->Run("weft_leaky_relu_f32(" + n + ", " + aot::FloatLit(*alpha) + ", " + ctx->Input(0, "float") + ", " + ctx->Output(0, "float") + ");\n");
      return GRAPH_SUCCESS;
    }
    const int qt = QTypeCode(x->GetDataType());
    if (!qt || qt == 32) return Fail(ctx, "unsupported type");
    Quant qi = InputQuant(ctx, 0), qo = OutputQuant(ctx);
    if (!qi.quantized() || !qo.quantized()) return Fail(ctx, "quantized input and output need scales");
    int32_t ma, mi;
    int sa, si;
    tfl::QuantizeMultiplier(static_cast<double>(qi.scale * *alpha / qo.scale), &ma, &sa);
    tfl::QuantizeMultiplier(static_cast<double>(qi.scale / qo.scale), &mi, &si);
    aot::EmitHelper(ctx, kTflKernels, "weft_leaky_relu_q");
    ctx->Run("weft_leaky_relu_q(" + std::to_string(qt) + ", " + n + ", " + aot::IntLit(qi.zp) + ", " + aot::IntLit(qo.zp) + ", " + aot::IntLit(mi) +
             ", " + std::to_string(si) + ", " + aot::IntLit(ma) + ", " + std::to_string(sa) + ", " + ctx->Input(0, "void") + ", " +
             ctx->Output(0, "void") + ");\n");
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    const float* alpha = ctx->GetAttrs()->GetFloat("alpha");
    if (!alpha) return GRAPH_FAILED;
    int64_t n = x->GetShapeSize();
    if (x->GetDataType() == DT_FLOAT) {
      const float* px = x->GetData<float>();
      float* py = y->GetData<float>();
      for (int64_t i = 0; i < n; ++i) py[i] = px[i] > 0.f ? px[i] : px[i] * *alpha;
      return GRAPH_SUCCESS;
    }
    Quant qi = InputQuant(ctx, 0), qo = OutputQuant(ctx);
    if (!qi.quantized() || !qo.quantized()) return Fail(ctx, "quantized input and output need scales");
    int32_t ma, mi;
    int sa, si;
    // The products in float, then widened, as TFLite prepares them.
    tfl::QuantizeMultiplier(static_cast<double>(qi.scale * *alpha / qo.scale), &ma, &sa);
    tfl::QuantizeMultiplier(static_cast<double>(qi.scale / qo.scale), &mi, &si);
    bool ok = DispatchQuantType(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      const T* px = x->GetData<T>();
      T* py = y->GetData<T>();
      for (int64_t i = 0; i < n; ++i) {
        int32_t v = static_cast<int32_t>(px[i]) - qi.zp;
        int32_t o = qo.zp + (v >= 0 ? tfl::MultiplyByQuantizedMultiplier(v, mi, si) : tfl::MultiplyByQuantizedMultiplier(v, ma, sa));
        py[i] = tfl::Saturate<T>(o);
      }
    });
    return ok ? GRAPH_SUCCESS : Fail(ctx, "unsupported type");
  }
};

// LOGISTIC, TANH and HARD_SWISH. On 8-bit tensors the output byte depends on the input byte
// alone, so each op builds a 256-entry table from its quantization when it runs and looks every
// element up; `weft aot` emits the same table as a constant. int16 LOGISTIC and TANH use the
// reference kernels' interpolated table (tfl::s16act).
class TflByteTableOp : public TflSameShape, public EmittableOp {
 public:
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    const int64_t n = x->GetShapeSize();
    const DataType t = x->GetDataType();
    if (t == DT_FLOAT) {
      const float* px = x->GetData<float>();
      float* py = y->GetData<float>();
      for (int64_t i = 0; i < n; ++i) py[i] = Float(px[i]);
      return GRAPH_SUCCESS;
    }
    if (t == DT_INT16) {
      int32_t multiplier;
      int shift;
      if (graphStatus s = Int16Params(ctx, &multiplier, &shift); s != GRAPH_SUCCESS) return s;
      const int16_t* px = x->GetData<int16_t>();
      int16_t* py = y->GetData<int16_t>();
      for (int64_t i = 0; i < n; ++i) py[i] = Int16(px[i], multiplier, shift);
      return GRAPH_SUCCESS;
    }
    uint8_t table[256];
    if (graphStatus s = Table(ctx, t, table); s != GRAPH_SUCCESS) return s;
    const uint8_t* px = t == DT_INT8 ? reinterpret_cast<const uint8_t*>(x->GetData<int8_t>()) : x->GetData<uint8_t>();
    uint8_t* py = t == DT_INT8 ? reinterpret_cast<uint8_t*>(y->GetData<int8_t>()) : y->GetData<uint8_t>();
    for (int64_t i = 0; i < n; ++i) py[i] = table[px[i]];
    return GRAPH_SUCCESS;
  }
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const DataType t = x->GetDataType();
    const std::string n = aot::IntLit(x->GetShapeSize());
    if (t == DT_FLOAT) {
      aot::EmitHelper(ctx, kTflKernels, FloatHelper());
      ctx->Run(std::string(FloatHelper()) + "(" + n + ", " + ctx->Input(0, "float") + ", " + ctx->Output(0, "float") + ");\n");
      return GRAPH_SUCCESS;
    }
    if (t == DT_INT16) {
      int32_t multiplier;
      int shift;
      if (graphStatus s = Int16Params(ctx, &multiplier, &shift); s != GRAPH_SUCCESS) return s;
      aot::EmitHelper(ctx, kTflKernels, "weft_sigmoid_tanh_s16");
      ctx->Run(std::string("weft_sigmoid_tanh_s16(") + (IsTanh() ? "1" : "0") + ", " + n + ", " + aot::IntLit(multiplier) + ", " +
               std::to_string(shift) + ", " + ctx->Input(0, "int16_t") + ", " + ctx->Output(0, "int16_t") + ");\n");
      return GRAPH_SUCCESS;
    }
    uint8_t table[256];
    if (graphStatus s = Table(ctx, t, table); s != GRAPH_SUCCESS) return s;
    const std::string lut = ctx->Const("table", DT_UINT8, table, 256);
    aot::EmitHelper(ctx, kTflKernels, "weft_byte_table");
    ctx->Run("weft_byte_table(" + n + ", " + lut + ", " + ctx->Input(0, "uint8_t") + ", " + ctx->Output(0, "uint8_t") + ");\n");
    return GRAPH_SUCCESS;
  }

 protected:
  virtual float Float(float v) const = 0;
  virtual const char* FloatHelper() const = 0;
  // The output byte for each input byte (index: the input's bits as uint8_t).
  virtual graphStatus Table8(const KernelContextBase* ctx, DataType t, Quant qi, Quant qo, uint8_t* table) const = 0;
  virtual bool IsTanh() const { return false; }
  virtual bool HasInt16() const { return false; }
  virtual int16_t Int16(int16_t, int32_t, int) const { return 0; }

 private:
  graphStatus Table(const KernelContextBase* ctx, DataType t, uint8_t* table) const {
    if (t != DT_INT8 && t != DT_UINT8)
      return Fail(ctx, std::string("only float32, int8, uint8") + (HasInt16() ? " and int16" : "") + " are supported, not " + DataTypeName(t));
    Quant qi = InputQuant(ctx, 0), qo = OutputQuant(ctx);
    if (!qi.quantized() || !qo.quantized()) return Fail(ctx, "quantized input and output need scales");
    return Table8(ctx, t, qi, qo, table);
  }
  // int16: zero points 0 and an output scale of 2^-15, as the reference kernels require.
  graphStatus Int16Params(const KernelContextBase* ctx, int32_t* multiplier, int* shift) const {
    if (!HasInt16()) return Fail(ctx, "only float32, int8 and uint8 are supported, not int16");
    Quant qi = InputQuant(ctx, 0), qo = OutputQuant(ctx);
    if (!qi.quantized() || !qo.quantized()) return Fail(ctx, "quantized input and output need scales");
    if (qi.zp != 0 || qo.zp != 0)
      return Fail(ctx, "int16 input and output need zero point 0 (input " + std::to_string(qi.zp) + ", output " + std::to_string(qo.zp) + ")");
    const double log2 = std::log2(static_cast<double>(qo.scale));
    if (std::abs(log2 + 15.0) >= 1e-3)
      return Fail(ctx, "an int16 output needs scale 2^-15 (1/32768), not " + std::to_string(qo.scale));
    tfl::s16act::Prepare(IsTanh(), qi.scale, multiplier, shift);
    return GRAPH_SUCCESS;
  }
};

// LOGISTIC and TANH on 8 bits: the table built as TFLite's reference kernels build theirs, the
// float function of each dequantized input value, rounded at the output's scale (all in float),
// plus its zero point, saturated.
enum class TflFn { kLogistic, kTanh };
template <TflFn F>
class TflSigmoidTanh : public TflByteTableOp {
 protected:
  float Float(float v) const override {
    if constexpr (F == TflFn::kLogistic) return 1.0f / (1.0f + std::exp(-v));
    return std::tanh(v);
  }
  const char* FloatHelper() const override { return F == TflFn::kLogistic ? "weft_logistic_f32" : "weft_tanh_f32"; }
  bool IsTanh() const override { return F == TflFn::kTanh; }
  bool HasInt16() const override { return true; }
  int16_t Int16(int16_t v, int32_t multiplier, int shift) const override {
    return F == TflFn::kLogistic ? tfl::s16act::Logistic(v, multiplier, shift) : tfl::s16act::Tanh(v, multiplier, shift);
  }
  graphStatus Table8(const KernelContextBase*, DataType t, Quant qi, Quant qo, uint8_t* table) const override {
    const float inverse_scale = 1.0f / qo.scale;
    DispatchQuantType(t, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (sizeof(T) == 1) {
        for (int32_t v = tfl::QMin<T>(); v <= tfl::QMax<T>(); ++v) {
          const float dequantized = qi.scale * static_cast<float>(v - qi.zp);
          const float rescaled = std::round(Float(dequantized) * inverse_scale);
          const int32_t q = static_cast<int32_t>(rescaled + static_cast<float>(qo.zp));
          table[static_cast<uint8_t>(static_cast<T>(v))] = static_cast<uint8_t>(tfl::Saturate<T>(q));
        }
      }
    });
    return GRAPH_SUCCESS;
  }
};

// HARD_SWISH, x * relu6(x + 3) / 6. On 8-bit tensors TFLite's reference kernel works in 16-bit
// fixed point: the input on a finer scale (x 128), a "relu-ish" factor in [0, 1] from rescaling
// [-3, 3], and the two multiplied with a truncating high multiply before the output shift.
namespace hswish {
inline int16_t RoundingHighMul(int16_t a, int16_t b) {  // rounds to nearest, saturates -1 * -1
  if (a == b && a == std::numeric_limits<int16_t>::min()) return std::numeric_limits<int16_t>::max();
  int32_t ab = static_cast<int32_t>(a) * static_cast<int32_t>(b);
  int32_t nudge = ab >= 0 ? (1 << 14) : (1 - (1 << 14));
  return static_cast<int16_t>((ab + nudge) / (1 << 15));
}
inline int16_t TruncatingHighMul(int16_t a, int16_t b) {  // rounds toward zero
  if (a == b && a == std::numeric_limits<int16_t>::min()) return std::numeric_limits<int16_t>::max();
  return static_cast<int16_t>((static_cast<int32_t>(a) * static_cast<int32_t>(b)) / (1 << 15));
}
// x / 2^e rounded to nearest, ties away from zero, in the reference's 16-bit arithmetic: its mask
// (2^e - 1) is an int16, so from e = 16 on it is -1 and the result is 1 for x >= 0 (with the
// threshold -1) and -1 below; reproduced here, as LiteRT's results depend on it.
inline int16_t RoundingShiftRight(int16_t x, int e) {
  const int32_t mask = static_cast<int16_t>(static_cast<uint16_t>((uint64_t{1} << std::min(e, 62)) - 1u));
  const int32_t rem = x & mask, threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  const int32_t shifted = e >= 31 ? (x < 0 ? -1 : 0) : (static_cast<int32_t>(x) >> e);
  return static_cast<int16_t>(shifted + (rem > threshold ? 1 : 0));
}
inline int16_t SaturatingShiftLeft(int16_t x, int e) {
  int64_t r = static_cast<int64_t>(x) * (int64_t{1} << e);
  return static_cast<int16_t>(std::min<int64_t>(std::max<int64_t>(r, std::numeric_limits<int16_t>::min()),
                                                std::numeric_limits<int16_t>::max()));
}
// A Q31 multiplier narrowed to Q15, rounding, saturating at the top.
inline int16_t ToQ15(int32_t m) {
  if (m >= std::numeric_limits<int32_t>::max() - (1 << 15)) return std::numeric_limits<int16_t>::max();
  return static_cast<int16_t>((m + (1 << 15)) >> 16);
}
}  // namespace hswish

class TflHardSwish : public TflByteTableOp {
 protected:
  float Float(float v) const override { return v * std::min(6.0f, std::max(0.0f, v + 3.0f)) / 6.0f; }
  const char* FloatHelper() const override { return "weft_hard_swish_f32"; }
  graphStatus Table8(const KernelContextBase* ctx, DataType t, Quant qi, Quant qo, uint8_t* table) const override {
    const float hires_scale = (1.0f / 128.0f) * qi.scale;
    int32_t m32;
    int out_exp, relu_exp;
    tfl::QuantizeMultiplier(static_cast<double>(hires_scale / qo.scale), &m32, &out_exp);
    const int16_t out_mult = hswish::ToQ15(m32);
    if (out_exp > 0) return Fail(ctx, "the output scale must be at least the input scale / 128");
    tfl::QuantizeMultiplier(static_cast<double>(hires_scale / (3.0f / 32768.0f)), &m32, &relu_exp);
    const int16_t relu_mult = hswish::ToQ15(m32);
    DispatchQuantType(t, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (sizeof(T) == 1) {
        for (int32_t x = tfl::QMin<T>(); x <= tfl::QMax<T>(); ++x) {
          const int16_t v = static_cast<int16_t>(x - qi.zp);
          const int16_t hires = static_cast<int16_t>(v * (1 << 7));
          const int16_t on_out_scale = hswish::RoundingHighMul(hires, out_mult);
          int16_t relu = hires;
          if (relu_exp > 0) relu = hswish::SaturatingShiftLeft(relu, relu_exp - 1);
          relu = hswish::RoundingHighMul(relu, relu_mult);
          if (relu_exp > 0) relu = hswish::SaturatingShiftLeft(relu, 1);
          if (relu_exp < 0) relu = hswish::RoundingShiftRight(relu, -relu_exp);
          relu = static_cast<int16_t>((relu + (1 << 15)) >> 1);  // [-1, 1] to [0, 1]
          int32_t o = hswish::RoundingShiftRight(hswish::TruncatingHighMul(relu, on_out_scale), -out_exp);
          o += qo.zp;
          table[static_cast<uint8_t>(static_cast<T>(x))] = static_cast<uint8_t>(tfl::Saturate<T>(o));
        }
      }
    });
    return GRAPH_SUCCESS;
  }
};

// PRELU: x for x >= 0, alpha * x below, alpha broadcast against x (right-aligned). 8-bit: the
// positive branch rescales by s_in / s_out, the negative one multiplies the offset-corrected
// input and alpha and rescales by s_in * s_alpha / s_out (multipliers from float products, as
// TFLite prepares them).
class TflPrelu : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* alpha = ctx->GetInputTensor(1);
    const DataType t = x->GetDataType();
    if (alpha->GetDataType() != t) return Fail(ctx, "alpha must have the input's type");
    const Shape& xs = x->GetShape();
    const Shape& as = alpha->GetShape();
    if (as.GetDimNum() > xs.GetDimNum()) return Fail(ctx, "alpha has more dims than the input");
    for (size_t k = 0, off = xs.GetDimNum() - as.GetDimNum(); k < as.GetDimNum(); ++k)
      if (as.GetDim(k) != 1 && as.GetDim(k) != xs.GetDim(off + k))
        return Fail(ctx, "alpha " + as.ToString() + " does not broadcast to the input " + xs.ToString());
    const std::string g = aot::Broadcast(xs, as, xs);
    const std::string gp = g.empty() ? "0" : "&g";
    const std::string n = aot::IntLit(xs.GetShapeSize());
    if (t == DT_FLOAT) {
      aot::EmitHelper(ctx, kTflKernels, "weft_prelu_f32");
      ctx->Run(g + "weft_prelu_f32(" + n + ", " + gp + ", " + ctx->Input(0, "float") + ", " + ctx->Input(1, "float") + ", " +
               ctx->Output(0, "float") + ");\n");
      return GRAPH_SUCCESS;
    }
    if (t != DT_INT8 && t != DT_UINT8) return Fail(ctx, std::string("only float32, int8 and uint8 are supported, not ") + DataTypeName(t));
    Quant qi = InputQuant(ctx, 0), qa = InputQuant(ctx, 1), qo = OutputQuant(ctx);
    if (!qi.quantized() || !qa.quantized() || !qo.quantized()) return Fail(ctx, "quantized input, alpha and output need scales");
    int32_t m1, m2;
    int s1, s2;
    Multipliers(qi, qa, qo, &m1, &s1, &m2, &s2);
    aot::EmitHelper(ctx, kTflKernels, "weft_prelu_q");
    ctx->Run(g + "weft_prelu_q(" + std::to_string(QTypeCode(t)) + ", " + n + ", " + gp + ", " + ctx->Input(0, "void") + ", " +
             ctx->Input(1, "void") + ", " + aot::IntLit(qi.zp) + ", " + aot::IntLit(qa.zp) + ", " + aot::IntLit(qo.zp) + ", " +
             aot::IntLit(m1) + ", " + std::to_string(s1) + ", " + aot::IntLit(m2) + ", " + std::to_string(s2) + ", " +
             ctx->Output(0, "void") + ");\n");
    return GRAPH_SUCCESS;
  }
  // The positive branch's multiplier (s_in / s_out) and the negative one's (s_in * s_alpha / s_out),
  // from float products as TFLite prepares them.
  static void Multipliers(Quant qi, Quant qa, Quant qo, int32_t* m1, int* s1, int32_t* m2, int* s2) {
    tfl::QuantizeMultiplier(static_cast<double>(qi.scale / qo.scale), m1, s1);
    tfl::QuantizeMultiplier(static_cast<double>(qi.scale * qa.scale / qo.scale), m2, s2);
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& x = *ctx->GetInputShape(0);
    const Shape& a = *ctx->GetInputShape(1);
    if (a.GetDimNum() > x.GetDimNum()) return Fail(ctx, "alpha has more dims than the input");
    size_t off = x.GetDimNum() - a.GetDimNum();
    for (size_t k = 0; k < a.GetDimNum(); ++k)
      if (a.GetDim(k) != 1 && a.GetDim(k) != x.GetDim(off + k) && x.GetDim(off + k) >= 0)
        return Fail(ctx, "alpha " + a.ToString() + " does not broadcast to the input " + x.ToString());
    *ctx->GetOutputShape(0) = x;
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* alpha = ctx->GetInputTensor(1);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    if (alpha->GetDataType() != x->GetDataType()) return Fail(ctx, "alpha must have the input's type");
    const Shape& xs = x->GetShape();
    const Shape& as = alpha->GetShape();
    if (as.GetDimNum() > xs.GetDimNum()) return Fail(ctx, "alpha has more dims than the input");
    const size_t r = xs.GetDimNum(), off = r - as.GetDimNum();
    for (size_t k = 0; k < as.GetDimNum(); ++k)  // checked again here: shapes may be known only now
      if (as.GetDim(k) != 1 && as.GetDim(k) != xs.GetDim(off + k))
        return Fail(ctx, "alpha " + as.ToString() + " does not broadcast to the input " + xs.ToString());
    // Element i of x reads alpha at the index of its trailing coordinates (0 where alpha's dim is 1).
    std::vector<int64_t> astride(r, 0);
    for (int64_t k = static_cast<int64_t>(as.GetDimNum()) - 1, acc = 1; k >= 0; --k) {
      astride[off + static_cast<size_t>(k)] = as.GetDim(static_cast<size_t>(k)) == 1 ? 0 : acc;
      acc *= as.GetDim(static_cast<size_t>(k));
    }
    const int64_t n = xs.GetShapeSize();
    auto alpha_index = [&](int64_t i) {
      int64_t a = 0;
      for (size_t k = r; k-- > 0;) {
        int64_t d = xs.GetDim(k);
        a += (i % d) * astride[k];
        i /= d;
      }
      return a;
    };
    if (x->GetDataType() == DT_FLOAT) {
      const float* px = x->GetData<float>();
      const float* pa = alpha->GetData<float>();
      float* py = y->GetData<float>();
      for (int64_t i = 0; i < n; ++i) py[i] = px[i] >= 0.f ? px[i] : px[i] * pa[alpha_index(i)];
      return GRAPH_SUCCESS;
    }
    if (x->GetDataType() != DT_INT8 && x->GetDataType() != DT_UINT8)
      return Fail(ctx, std::string("only float32, int8 and uint8 are supported, not ") + DataTypeName(x->GetDataType()));
    Quant qi = InputQuant(ctx, 0), qa = InputQuant(ctx, 1), qo = OutputQuant(ctx);
    if (!qi.quantized() || !qa.quantized() || !qo.quantized()) return Fail(ctx, "quantized input, alpha and output need scales");
    int32_t m1, m2;
    int s1, s2;
    Multipliers(qi, qa, qo, &m1, &s1, &m2, &s2);
    DispatchQuantType(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (sizeof(T) == 1) {
        const T* px = x->GetData<T>();
        const T* pa = alpha->GetData<T>();
        T* py = y->GetData<T>();
        for (int64_t i = 0; i < n; ++i) {
          const int32_t v = static_cast<int32_t>(px[i]) - qi.zp;
          int32_t o = v >= 0 ? tfl::MultiplyByQuantizedMultiplier(v, m1, s1)
                             : tfl::MultiplyByQuantizedMultiplier(v * (static_cast<int32_t>(pa[alpha_index(i)]) - qa.zp), m2, s2);
          o += qo.zp;
          py[i] = tfl::Saturate<T>(o);
        }
      }
    });
    return GRAPH_SUCCESS;
  }
};

// RESIZE_BILINEAR on integer tensors (float ones import as Resize): TFLite's integer kernel, with
// source coordinates in 10-bit fixed point and the four-tap sum rounded from 20 fractional bits.
// Input and output share a scale, so no rescaling.
class TflResizeBilinear : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& x = *ctx->GetInputShape(0);
    if (x.GetDimNum() != 4) return Fail(ctx, "the input must be 4-D NHWC");
    std::vector<int64_t> size;
    if (!ReadInts(ctx->GetInputTensor(1), &size)) {
      *ctx->GetOutputShape(0) = Shape({x.GetDim(0), -1, -1, x.GetDim(3)});
      return GRAPH_SUCCESS;
    }
    if (size.size() != 2 || size[0] <= 0 || size[1] <= 0) return Fail(ctx, "size must hold two positive values");
    *ctx->GetOutputShape(0) = Shape({x.GetDim(0), size[0], size[1], x.GetDim(3)});
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Geometry g;
    if (graphStatus s = Prepare(ctx, x, &g); s != GRAPH_SUCCESS) return s;
    Tensor* y = ctx->MallocOutputTensor(0, Shape({g.n, g.oh, g.ow, g.c}), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    if (x->GetDataType() == DT_UINT8) return FloatPath(x->GetData<uint8_t>(), y->GetData<uint8_t>(), g);
    bool ok = DispatchQuantType(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      const T* px = x->GetData<T>();
      T* py = y->GetData<T>();
      for (int64_t b = 0; b < g.n; ++b)
        for (int64_t yy = 0; yy < g.oh; ++yy) {
          const int64_t y0 = g.ytaps[3 * yy], y1 = g.ytaps[3 * yy + 1], fy = g.ytaps[3 * yy + 2];
          for (int64_t xx = 0; xx < g.ow; ++xx) {
            const int64_t x0 = g.xtaps[3 * xx], x1 = g.xtaps[3 * xx + 1], fx = g.xtaps[3 * xx + 2];
            const T* p00 = px + ((b * g.ih + y0) * g.iw + x0) * g.c;
            const T* p10 = px + ((b * g.ih + y1) * g.iw + x0) * g.c;
            const T* p01 = px + ((b * g.ih + y0) * g.iw + x1) * g.c;
            const T* p11 = px + ((b * g.ih + y1) * g.iw + x1) * g.c;
            T* out = py + ((b * g.oh + yy) * g.ow + xx) * g.c;
            for (int64_t k = 0; k < g.c; ++k) {
              const int64_t sum = static_cast<int64_t>(p00[k]) * ((1 << 10) - fy) * ((1 << 10) - fx) +
                                  static_cast<int64_t>(p10[k]) * fy * ((1 << 10) - fx) +
                                  static_cast<int64_t>(p01[k]) * ((1 << 10) - fy) * fx +
                                  static_cast<int64_t>(p11[k]) * fy * fx;
              const int64_t round = sum > 0 ? (int64_t{1} << 19) : -(int64_t{1} << 19);
              out[k] = static_cast<T>((sum + round) / (int64_t{1} << 20));
            }
          }
        }
    });
    return ok ? GRAPH_SUCCESS : Fail(ctx, std::string("unsupported type ") + DataTypeName(x->GetDataType()));
  }
  // The C module gets the same taps as constants and runs the same sums.
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Geometry g;
    if (graphStatus s = Prepare(ctx, x, &g); s != GRAPH_SUCCESS) return s;
    const DataType t = x->GetDataType();
    if (t != DT_INT8 && t != DT_UINT8 && t != DT_INT16) return Fail(ctx, std::string("unsupported type ") + DataTypeName(t));
    std::string dims;
    for (int64_t v : {g.n, g.ih, g.iw, g.c, g.oh, g.ow}) dims += aot::IntLit(v) + ", ";
    if (t == DT_UINT8) {
      const std::string yt = ctx->Const("ytaps", DT_INT32, g.ytaps_f), xt = ctx->Const("xtaps", DT_INT32, g.xtaps_f);
      const std::string yf = ctx->Const("yfrac", DT_FLOAT, g.yfrac), xf = ctx->Const("xfrac", DT_FLOAT, g.xfrac);
      aot::EmitHelper(ctx, kTflKernels, "weft_resize_bilinear_u8");
      ctx->Run("weft_resize_bilinear_u8(" + dims + yt + ", " + yf + ", " + xt + ", " + xf + ", " + ctx->Input(0, "uint8_t") + ", " +
               ctx->Output(0, "uint8_t") + ");\n");
      return GRAPH_SUCCESS;
    }
    const std::string yt = ctx->Const("ytaps", DT_INT32, g.ytaps), xt = ctx->Const("xtaps", DT_INT32, g.xtaps);
    aot::EmitHelper(ctx, kTflKernels, "weft_resize_bilinear_q");
    ctx->Run("weft_resize_bilinear_q(" + std::to_string(QTypeCode(t)) + ", " + dims + yt + ", " + xt + ", " + ctx->Input(0, "void") + ", " +
             ctx->Output(0, "void") + ");\n");
    return GRAPH_SUCCESS;
  }

 private:
  // Sizes, and per output row (ytaps) and column (xtaps) the two source taps and the second one's
  // weight: in 1/1024ths for the integer kernel (lo, hi, weight), in float for uint8, which
  // LiteRT runs through its float kernel (lo, hi in *taps_f, weight in *frac).
  struct Geometry {
    int64_t n = 0, ih = 0, iw = 0, c = 0, oh = 0, ow = 0;
    std::vector<int32_t> ytaps, xtaps, ytaps_f, xtaps_f;
    std::vector<float> yfrac, xfrac;
  };
  static graphStatus Prepare(const KernelContextBase* ctx, const Tensor* x, Geometry* g) {
    std::vector<int64_t> size;
    if (!ReadInts(ctx->GetInputTensor(1), &size) || size.size() != 2 || size[0] <= 0 || size[1] <= 0 ||
        size[0] > (1 << 20) || size[1] > (1 << 20))
      return Fail(ctx, "size must hold two positive values below 2^20");
    const Shape& xs = x->GetShape();
    if (xs.GetDimNum() != 4) return Fail(ctx, "the input must be 4-D NHWC");
    g->n = xs.GetDim(0), g->ih = xs.GetDim(1), g->iw = xs.GetDim(2), g->c = xs.GetDim(3), g->oh = size[0], g->ow = size[1];
    if (g->ih > (1 << 20) || g->iw > (1 << 20)) return Fail(ctx, "the input is too large for 10-bit fixed-point coordinates");
    const bool* align_p = ctx->GetAttrs()->GetBool("align_corners");
    const bool* half_p = ctx->GetAttrs()->GetBool("half_pixel_centers");
    const bool align = align_p && *align_p, half = half_p && *half_p;
    auto fixed = [&](int64_t in, int64_t out, std::vector<int32_t>* taps) {
      const int64_t scale = align && out > 1 ? ((int64_t{1} << 10) * (in - 1) + (out - 1) / 2) / (out - 1)
                                             : ((int64_t{1} << 10) * in + out / 2) / out;
      for (int64_t v = 0; v < out; ++v) {
        const int64_t pos = half ? v * scale + scale / 2 - (1 << 9) : v * scale;
        const int64_t lo = std::max<int64_t>(pos / (1 << 10), 0);
        const int64_t hi = std::min<int64_t>((pos + (1 << 10) - 1) / (1 << 10), in - 1);
        taps->insert(taps->end(), {static_cast<int32_t>(lo), static_cast<int32_t>(hi), static_cast<int32_t>(pos - (int64_t{1} << 10) * lo)});
      }
    };
    auto real = [&](int64_t in, int64_t out, std::vector<int32_t>* taps, std::vector<float>* frac) {
      const float scale = align && out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1)
                                           : static_cast<float>(in) / static_cast<float>(out);
      for (int64_t v = 0; v < out; ++v) {
        const float pos = half ? (static_cast<float>(v) + 0.5f) * scale - 0.5f : static_cast<float>(v) * scale;
        const int64_t lo = std::max<int64_t>(static_cast<int32_t>(std::floor(pos)), 0);
        const int64_t hi = std::min<int64_t>(static_cast<int32_t>(std::ceil(pos)), in - 1);
        taps->insert(taps->end(), {static_cast<int32_t>(lo), static_cast<int32_t>(hi)});
        frac->push_back(pos - static_cast<float>(lo));
      }
    };
    if (x->GetDataType() == DT_UINT8) {
      real(g->ih, g->oh, &g->ytaps_f, &g->yfrac);
      real(g->iw, g->ow, &g->xtaps_f, &g->xfrac);
    } else {
      fixed(g->ih, g->oh, &g->ytaps);
      fixed(g->iw, g->ow, &g->xtaps);
    }
    return GRAPH_SUCCESS;
  }
  // uint8 goes through TFLite's float kernel: source coordinates and weights in float, the sum
  // plus one half truncated.
  static graphStatus FloatPath(const uint8_t* px, uint8_t* py, const Geometry& g) {
    for (int64_t b = 0; b < g.n; ++b)
      for (int64_t yy = 0; yy < g.oh; ++yy) {
        const int64_t y0 = g.ytaps_f[2 * yy], y1 = g.ytaps_f[2 * yy + 1];
        const float fy = g.yfrac[yy];
        for (int64_t xx = 0; xx < g.ow; ++xx) {
          const int64_t x0 = g.xtaps_f[2 * xx], x1 = g.xtaps_f[2 * xx + 1];
          const float fx = g.xfrac[xx];
          const uint8_t* p00 = px + ((b * g.ih + y0) * g.iw + x0) * g.c;
          const uint8_t* p10 = px + ((b * g.ih + y1) * g.iw + x0) * g.c;
          const uint8_t* p01 = px + ((b * g.ih + y0) * g.iw + x1) * g.c;
          const uint8_t* p11 = px + ((b * g.ih + y1) * g.iw + x1) * g.c;
          uint8_t* out = py + ((b * g.oh + yy) * g.ow + xx) * g.c;
          for (int64_t k = 0; k < g.c; ++k) {
            const float v = static_cast<float>(p00[k]) * (1 - fy) * (1 - fx) + static_cast<float>(p10[k]) * fy * (1 - fx) +
                            static_cast<float>(p01[k]) * (1 - fy) * fx + static_cast<float>(p11[k]) * fy * fx + 0.5f;
            out[k] = static_cast<uint8_t>(v);
          }
        }
      }
    return GRAPH_SUCCESS;
  }
};

// Quantize: float → integer (round(x / scale) + zero point) or integer → integer (requantize).
class TflQuantize : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const DataType yt = ctx->GetOutputTensor(0)->GetDataType();
    Quant qi = InputQuant(ctx, 0), qo = OutputQuant(ctx);
    if (!qo.quantized()) return Fail(ctx, "the output needs a scale");
    if (ListView<float>(ctx->GetAttrs()->GetListFloat("channel_scales")).size() > 1) return Fail(ctx, "per-channel quantization of the output is not supported");
    const int ot = QTypeCode(yt), it = QTypeCode(x->GetDataType());
    if (!ot) return Fail(ctx, "the output must be int8, uint8, int16 or int32");
    aot::EmitHelper(ctx, kTflKernels, "weft_quantize");
    const std::string n = aot::IntLit(x->GetShapeSize());
    if (x->GetDataType() == DT_FLOAT) {
      ctx->Include("<math.h>");
      ctx->Run("weft_quantize_f32(" + std::to_string(ot) + ", " + n + ", " + aot::FloatLit(qo.scale) + ", " + aot::IntLit(qo.zp) + ", " +
               ctx->Input(0, "float") + ", " + ctx->Output(0, "void") + ");\n");
      return GRAPH_SUCCESS;
    }
    if (!it) return Fail(ctx, "the input must be float32, int8, uint8, int16 or int32");
    if (!qi.quantized()) return Fail(ctx, "the input needs a scale");
    int32_t m;
    int sh;
    tfl::QuantizeMultiplier(static_cast<double>(qi.scale) / static_cast<double>(qo.scale), &m, &sh);
    ctx->Run("weft_requantize(" + std::to_string(it) + ", " + std::to_string(ot) + ", " + n + ", " + aot::IntLit(qi.zp) + ", " + aot::IntLit(m) + ", " +
             std::to_string(sh) + ", " + aot::IntLit(qo.zp) + ", " + ctx->Input(0, "void") + ", " + ctx->Output(0, "void") + ");\n");
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    *ctx->GetOutputShape(0) = *ctx->GetInputShape(0);
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    DataType t = OutputType(ctx);
    if (t != DT_INT8 && t != DT_UINT8 && t != DT_INT16 && t != DT_INT32) return Fail(ctx, "the output must be int8, uint8, int16 or int32");
    return ctx->SetOutputDataType(0, t);
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), ctx->GetOutputTensor(0)->GetDataType());
    if (!y) return GRAPH_FAILED;
    Quant qi = InputQuant(ctx, 0), qo = OutputQuant(ctx);
    if (!qo.quantized()) return Fail(ctx, "the output needs a scale");
    if (ListView<float>(ctx->GetAttrs()->GetListFloat("channel_scales")).size() > 1) return Fail(ctx, "per-channel quantization of the output is not supported");
    int64_t n = x->GetShapeSize();
    auto store = [&](int64_t i, int32_t v) {
      switch (y->GetDataType()) {
        case DT_INT8: y->GetData<int8_t>()[i] = static_cast<int8_t>(std::min(std::max(v, tfl::QMin<int8_t>()), tfl::QMax<int8_t>())); break;
        case DT_UINT8: y->GetData<uint8_t>()[i] = static_cast<uint8_t>(std::min(std::max(v, tfl::QMin<uint8_t>()), tfl::QMax<uint8_t>())); break;
        case DT_INT16: y->GetData<int16_t>()[i] = static_cast<int16_t>(std::min(std::max(v, tfl::QMin<int16_t>()), tfl::QMax<int16_t>())); break;
        default: y->GetData<int32_t>()[i] = v; break;
      }
    };
    DataType xt = x->GetDataType();
    if (xt == DT_FLOAT) {
      const float* px = x->GetData<float>();
      for (int64_t i = 0; i < n; ++i) {
        float r = std::round(px[i] / qo.scale);
        int32_t q = r >= 2147483520.f ? tfl::QMax<int32_t>() : r <= -2147483648.f ? tfl::QMin<int32_t>() : static_cast<int32_t>(r);
        store(i, static_cast<int32_t>(std::min<int64_t>(std::max<int64_t>(int64_t(q) + qo.zp, tfl::QMin<int32_t>()), tfl::QMax<int32_t>())));
      }
      return GRAPH_SUCCESS;
    }
    if (!qi.quantized()) return Fail(ctx, "the input needs a scale");
    int32_t m;
    int s;
    tfl::QuantizeMultiplier(static_cast<double>(qi.scale) / static_cast<double>(qo.scale), &m, &s);
    auto requant = [&](int64_t i, int32_t v) {
      int32_t d = static_cast<int32_t>(static_cast<uint32_t>(v) - static_cast<uint32_t>(qi.zp));
      int64_t o = int64_t(tfl::MultiplyByQuantizedMultiplier(d, m, s)) + qo.zp;
      store(i, static_cast<int32_t>(std::min<int64_t>(std::max<int64_t>(o, tfl::QMin<int32_t>()), tfl::QMax<int32_t>())));
    };
    switch (xt) {
      case DT_INT8: for (int64_t i = 0; i < n; ++i) requant(i, x->GetData<int8_t>()[i]); break;
      case DT_UINT8: for (int64_t i = 0; i < n; ++i) requant(i, x->GetData<uint8_t>()[i]); break;
      case DT_INT16: for (int64_t i = 0; i < n; ++i) requant(i, x->GetData<int16_t>()[i]); break;
      case DT_INT32: for (int64_t i = 0; i < n; ++i) requant(i, x->GetData<int32_t>()[i]); break;
      default: return Fail(ctx, "the input must be float32, int8, uint8, int16 or int32");
    }
    return GRAPH_SUCCESS;
  }
};

// Dequantize: (q - zero point) * scale; per channel (weights stored as int8 for a float layer),
// each index along quantized_dimension with its own scale and zero point.
class TflDequantize : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Quant q = InputQuant(ctx, 0);
    const int it = QTypeCode(x->GetDataType());
    if (!it || it == 32) return Fail(ctx, "the input must be int8, uint8 or int16");
    PerChannel pc;
    if (!Channels(ctx, x->GetShape(), &pc)) return GRAPH_FAILED;
    if (!pc.scales.empty()) {
      aot::EmitHelper(ctx, kTflKernels, "weft_dequantize_channels");
      ctx->Run("weft_dequantize_channels(" + std::to_string(it) + ", " + aot::IntLit(pc.outer) + ", " + aot::IntLit(pc.channels) + ", " +
               aot::IntLit(pc.inner) + ", " + ctx->Const("scales", DT_FLOAT, pc.scales) + ", " + ctx->Const("zero_points", DT_INT32, pc.zps) +
               ", " + ctx->Input(0, "void") + ", " + ctx->Output(0, "float") + ");\n");
      return GRAPH_SUCCESS;
    }
    aot::EmitHelper(ctx, kTflKernels, "weft_dequantize");
    ctx->Run("weft_dequantize(" + std::to_string(it) + ", " + aot::IntLit(x->GetShapeSize()) + ", " + aot::FloatLit(q.scale) + ", " +
             aot::IntLit(q.zp) + ", " + ctx->Input(0, "void") + ", " + ctx->Output(0, "float") + ");\n");
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    *ctx->GetOutputShape(0) = *ctx->GetInputShape(0);
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override { return ctx->SetOutputDataType(0, DT_FLOAT); }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), DT_FLOAT);
    if (!y) return GRAPH_FAILED;
    Quant q = InputQuant(ctx, 0);
    PerChannel pc;
    if (!Channels(ctx, x->GetShape(), &pc)) return GRAPH_FAILED;
    const int64_t n = x->GetShapeSize();
    float* py = y->GetData<float>();
    // Element i's scale and zero point: the tensor's, or those of its index along the channel dim.
    auto run = [&](auto* px) {
      if (pc.scales.empty()) {
        for (int64_t i = 0; i < n; ++i) py[i] = q.scale * static_cast<float>(px[i] - q.zp);
        return;
      }
      for (int64_t o = 0, i = 0; o < pc.outer; ++o)
        for (int64_t c = 0; c < pc.channels; ++c) {
          const float s = pc.scales[static_cast<size_t>(c)];
          const int32_t z = pc.zps[static_cast<size_t>(c)];
          for (int64_t k = 0; k < pc.inner; ++k, ++i) py[i] = s * static_cast<float>(px[i] - z);
        }
    };
    switch (x->GetDataType()) {
      case DT_INT8: run(x->GetData<int8_t>()); break;
      case DT_UINT8: run(x->GetData<uint8_t>()); break;
      case DT_INT16: run(x->GetData<int16_t>()); break;
      default: return Fail(ctx, "the input must be int8, uint8 or int16");
    }
    return GRAPH_SUCCESS;
  }

 private:
  struct PerChannel {
    int64_t outer = 1, channels = 1, inner = 1;
    std::vector<float> scales;  // empty: per tensor
    std::vector<int32_t> zps;
  };
  static bool Channels(const KernelContextBase* ctx, const Shape& xs, PerChannel* pc) {
    ListView<float> cs = ctx->GetAttrs()->GetListFloat("channel_scales");
    if (cs.size() <= 1) return true;
    ListView<int64_t> cz = ctx->GetAttrs()->GetListInt("channel_zero_points");
    const int64_t* qd = ctx->GetAttrs()->GetInt("quantized_dimension");
    const int64_t d = qd ? *qd : 0;
    if (d < 0 || static_cast<size_t>(d) >= xs.GetDimNum() || xs.GetDim(static_cast<size_t>(d)) != static_cast<int64_t>(cs.size()) ||
        (cz.size() != 0 && cz.size() != cs.size()))
      return Fail(ctx, std::to_string(cs.size()) + " channel scales do not fit dim " + std::to_string(d) + " of the input " + xs.ToString()), false;
    for (size_t k = 0; k < xs.GetDimNum(); ++k) {
      if (k < static_cast<size_t>(d)) pc->outer *= xs.GetDim(k);
      if (k > static_cast<size_t>(d)) pc->inner *= xs.GetDim(k);
    }
    pc->channels = static_cast<int64_t>(cs.size());
    pc->scales.assign(cs.begin(), cs.end());
    for (size_t c = 0; c < cs.size(); ++c) pc->zps.push_back(cz.size() ? static_cast<int32_t>(cz[c]) : 0);
    return true;
  }
};

// ---- data movement ---------------------------------------------------------------------------

// Pad / PadV2: paddings int32/int64 [rank, 2]; PadV2's third input is the pad value. Quantized
// tensors pad with the output zero point.
class TflPad : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Shape& xs = x->GetShape();
    const size_t rank = xs.GetDimNum();
    std::vector<int64_t> pads;
    if (!Pads(ctx, ctx->GetInputTensor(1), rank, &pads)) return GRAPH_FAILED;
    const char* mode = HasAttr(ctx, "mode") ? ctx->GetAttrs()->GetStr("mode") : nullptr;
    if (mode && std::string(mode) != "constant") return Fail(ctx, "the generated C pads with a constant only, not mode " + std::string(mode));
    if (rank > 8) return Fail(ctx, "the generated C pads at most 8 dims");
    const size_t elem = DataTypeSize(x->GetDataType());
    if (elem > 8) return Fail(ctx, "the generated C pads elements of at most 8 bytes");
    uint8_t value[16] = {0};
    const Tensor* v = ctx->GetComputeNodeInputNum() > 2 ? ctx->GetOptionalInputTensor(2) : nullptr;
    std::string value_expr;
    if (v && v->GetShapeSize() >= 1 && v->GetDataType() == x->GetDataType()) {
      value_expr = ctx->Input(2, "void");  // a constant or a tensor: its first element
    } else {
      if (OutputQuant(ctx).quantized()) {
        int32_t zp = OutputQuant(ctx).zp;
        if (elem == 1) value[0] = static_cast<uint8_t>(zp);
        if (elem == 2) { int16_t z = static_cast<int16_t>(zp); std::memcpy(value, &z, 2); }
      }
      value_expr = ctx->Const("value", DT_UINT8, value, elem);
    }
    const Shape& ys = ctx->GetOutputTensor(0)->GetShape();
    std::vector<int64_t> out_stride(rank, 1), dims;
    for (size_t k = rank; k-- > 1;) out_stride[k - 1] = out_stride[k] * ys.GetDim(k);
    int64_t base = 0;
    for (size_t k = 0; k < rank; ++k) base += pads[2 * k] * out_stride[k], dims.push_back(xs.GetDim(k));
    if (rank == 0) dims.push_back(1), out_stride.push_back(0);
    ctx->Include("<string.h>");
    aot::EmitHelper(ctx, kTflKernels, "weft_pad");
    std::string d = ctx->Const("dims", DT_INT64, dims), st = ctx->Const("out_stride", DT_INT64, out_stride);
    ctx->Run("weft_pad(" + std::to_string(elem) + ", " + std::to_string(dims.size()) + ", " + d + ", " + st + ", " + aot::IntLit(base) + ", " +
             aot::IntLit(x->GetShapeSize()) + ", " + aot::IntLit(ys.GetShapeSize()) + ", " + value_expr + ", " + ctx->Input(0, "void") + ", " +
             ctx->Output(0, "void") + ");\n");
    return GRAPH_SUCCESS;
  }
  bool Pads(const KernelContextBase* ctx, const Tensor* p, size_t rank, std::vector<int64_t>* pads) const {
    if (!ReadInts(p, pads)) return Fail(ctx, "paddings must be a constant"), false;
    if (pads->size() != 2 * rank) return Fail(ctx, "paddings has " + std::to_string(pads->size()) + " entries for rank " + std::to_string(rank)), false;
    for (int64_t v : *pads)
      if (v < 0 || v > (int64_t(1) << 31)) return Fail(ctx, "paddings must be in [0, 2^31]"), false;
    return true;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    Shape s = *ctx->GetInputShape(0);
    std::vector<int64_t> pads;
    if (!Pads(ctx, ctx->GetInputTensor(1), s.GetDimNum(), &pads)) return GRAPH_FAILED;
    for (size_t k = 0; k < s.GetDimNum(); ++k) s.SetDim(k, s.GetDim(k) + pads[2 * k] + pads[2 * k + 1]);
    *ctx->GetOutputShape(0) = s;
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    const Shape& xs = x->GetShape();
    size_t rank = xs.GetDimNum();
    std::vector<int64_t> pads;
    if (!Pads(ctx, ctx->GetInputTensor(1), rank, &pads)) return GRAPH_FAILED;
    size_t elem = DataTypeSize(x->GetDataType());
    // The pad value's bytes.
    uint8_t value[16] = {0};
    const Tensor* v = ctx->GetComputeNodeInputNum() > 2 ? ctx->GetOptionalInputTensor(2) : nullptr;
    if (v && v->GetShapeSize() >= 1 && v->GetDataType() == x->GetDataType()) {
      std::memcpy(value, v->GetAddr(), elem);
    } else if (OutputQuant(ctx).quantized()) {
      int32_t zp = OutputQuant(ctx).zp;
      if (elem == 1) value[0] = static_cast<uint8_t>(zp);
      if (elem == 2) { int16_t z = static_cast<int16_t>(zp); std::memcpy(value, &z, 2); }
    }
    int64_t total = y->GetShapeSize();
    uint8_t* py = y->GetData<uint8_t>();
    const uint8_t* px = x->GetData<uint8_t>();
    const Shape& ys = y->GetShape();
    // The pad value everywhere, then each innermost row of the input copied into place.
    bool uniform = true;
    for (size_t k = 1; k < elem; ++k) uniform = uniform && value[k] == value[0];
    if (uniform) std::memset(py, value[0], static_cast<size_t>(total) * elem);
    else
      for (int64_t o = 0; o < total; ++o) std::memcpy(py + o * elem, value, elem);
    if (rank == 0 || x->GetShapeSize() == 0) {
      if (rank == 0 && total) std::memcpy(py, px, elem);
      return GRAPH_SUCCESS;
    }
    std::vector<int64_t> out_stride(rank, 1), idx(rank, 0);
    for (size_t k = rank - 1; k-- > 0;) out_stride[k] = out_stride[k + 1] * ys.GetDim(k + 1);
    // Copies of whole blocks: the dims after the last padded one are contiguous in both tensors.
    size_t last = rank - 1;
    while (last > 0 && pads[2 * last] == 0 && pads[2 * last + 1] == 0) --last;
    int64_t inner = 1;
    for (size_t k = last; k < rank; ++k) inner *= xs.GetDim(k);
    const int64_t rows = x->GetShapeSize() / inner;
    for (int64_t r = 0; r < rows; ++r) {
      int64_t dst = pads[2 * last] * out_stride[last];
      for (size_t k = 0; k < last; ++k) dst += (idx[k] + pads[2 * k]) * out_stride[k];
      std::memcpy(py + dst * elem, px + r * inner * elem, static_cast<size_t>(inner) * elem);
      for (size_t k = last; k-- > 0;) {
        if (++idx[k] < xs.GetDim(k)) break;
        idx[k] = 0;
      }
    }
    return GRAPH_SUCCESS;
  }
};

// StridedSlice with begin/end/strides int32 inputs and TFLite's masks (begin, end, shrink_axis,
// offset; ellipsis and new_axis masks are not supported).
class TflStridedSlice : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Plan p;
    if (!Build(ctx, x->GetShape(), ctx->GetInputTensor(1), ctx->GetInputTensor(2), ctx->GetInputTensor(3), &p)) return GRAPH_FAILED;
    std::vector<int64_t> dims, axis;
    for (size_t k = 0; k < p.full.GetDimNum(); ++k) dims.push_back(p.full.GetDim(k)), axis.push_back(static_cast<int64_t>(k));
    return aot::EmitStridedCopy(ctx, dims, axis, p.stride, p.start);
  }
  struct Plan {
    std::vector<int64_t> start, stop, stride;
    Shape full, out;  // full: one dim per input axis; out: without the shrunk axes
  };
  bool Build(const KernelContextBase* ctx, const Shape& in, const Tensor* tb, const Tensor* te, const Tensor* ts, Plan* p) const {
    std::vector<int64_t> b, e, s;
    if (!ReadInts(tb, &b) || !ReadInts(te, &e) || !ReadInts(ts, &s)) return Fail(ctx, "begin, end and strides must be constants"), false;
    size_t rank = in.GetDimNum();
    if (b.size() != e.size() || b.size() != s.size() || b.size() > rank)
      return Fail(ctx, "begin, end and strides must have one entry per sliced axis (at most the input rank " + std::to_string(rank) + ")"), false;
    if (IntAttr(ctx, "ellipsis_mask") || IntAttr(ctx, "new_axis_mask")) return Fail(ctx, "ellipsis_mask and new_axis_mask are not supported"), false;
    int64_t bm = IntAttr(ctx, "begin_mask"), em = IntAttr(ctx, "end_mask"), sm = IntAttr(ctx, "shrink_axis_mask");
    const bool* off = ctx->GetAttrs()->GetBool("offset");
    for (size_t k = 0; k < rank; ++k) {
      int64_t size = in.GetDim(k);
      if (k >= b.size()) {  // axes past the given entries are taken whole
        p->start.push_back(0), p->stop.push_back(size), p->stride.push_back(1);
        p->full.AppendDim(size), p->out.AppendDim(size);
        continue;
      }
      int64_t st = s[k];
      if (st == 0) return Fail(ctx, "stride " + std::to_string(k) + " is 0"), false;
      int64_t start = b[k], stop = e[k];
      if (off && *off) stop += start;
      bool shrink = (sm >> k) & 1;
      if (size == 0) {
        start = stop = 0;
      } else {
        if ((bm >> k) & 1) start = st > 0 ? std::numeric_limits<int32_t>::lowest() : std::numeric_limits<int32_t>::max();
        if (start < 0) start += size;
        start = st > 0 ? std::min(std::max<int64_t>(start, 0), size) : std::min(std::max<int64_t>(start, -1), size - 1);
        if (shrink) {
          stop = start + 1;
        } else {
          if ((em >> k) & 1) stop = st > 0 ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int32_t>::lowest();
          if (stop < 0) stop += size;
          stop = st > 0 ? std::min(std::max<int64_t>(stop, 0), size) : std::min(std::max<int64_t>(stop, -1), size - 1);
        }
      }
      int64_t len = st > 0 ? (stop > start ? (stop - start + st - 1) / st : 0) : (start > stop ? (start - stop - st - 1) / -st : 0);
      if (shrink && len != 1) return Fail(ctx, "axis " + std::to_string(k) + " is shrunk but its slice is empty"), false;
      p->start.push_back(start), p->stop.push_back(stop), p->stride.push_back(st);
      p->full.AppendDim(len);
      if (!shrink) p->out.AppendDim(len);
    }
    return true;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    Plan p;
    if (!Build(ctx, *ctx->GetInputShape(0), ctx->GetInputTensor(1), ctx->GetInputTensor(2), ctx->GetInputTensor(3), &p)) return GRAPH_FAILED;
    *ctx->GetOutputShape(0) = p.out;
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Plan p;
    if (!Build(ctx, x->GetShape(), ctx->GetInputTensor(1), ctx->GetInputTensor(2), ctx->GetInputTensor(3), &p)) return GRAPH_FAILED;
    Tensor* y = ctx->MallocOutputTensor(0, p.out, x->GetDataType());
    if (!y) return GRAPH_FAILED;
    size_t elem = DataTypeSize(x->GetDataType()), rank = p.full.GetDimNum();
    int64_t total = p.full.GetShapeSize();
    const Shape& xs = x->GetShape();
    std::vector<int64_t> idx(rank, 0);
    const uint8_t* px = x->GetData<uint8_t>();
    uint8_t* py = y->GetData<uint8_t>();
    for (int64_t o = 0; o < total; ++o) {
      int64_t src = 0;
      for (size_t k = 0; k < rank; ++k) src = src * xs.GetDim(k) + p.start[k] + idx[k] * p.stride[k];
      std::memcpy(py + o * elem, px + src * elem, elem);
      for (size_t k = rank; k-- > 0;) {
        if (++idx[k] < p.full.GetDim(k)) break;
        idx[k] = 0;
      }
    }
    return GRAPH_SUCCESS;
  }
};

// Reshape: the shape input (or the new_shape option); one -1 dim is inferred.
class TflReshape : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  graphStatus Emit(EmitContext* ctx) override { return aot::EmitCopy(ctx); }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& in = *ctx->GetInputShape(0);
    std::vector<int64_t> want;
    const Tensor* s = ctx->GetComputeNodeInputNum() > 1 ? ctx->GetOptionalInputTensor(1) : nullptr;
    if (!s || !ReadInts(s, &want)) {
      ListView<int64_t> ns = ctx->GetAttrs()->GetListInt("new_shape");
      want.assign(ns.begin(), ns.end());
      if (want.empty() && s) return Fail(ctx, "the shape input must be a constant");
    }
    if (want.size() > WEFT_MAX_DIMS) return Fail(ctx, "the target rank exceeds " + std::to_string(WEFT_MAX_DIMS));
    int64_t known = 1, infer = -1;
    for (size_t k = 0; k < want.size(); ++k) {
      if (want[k] == -1) {
        if (infer >= 0) return Fail(ctx, "more than one -1 in the target shape");
        infer = static_cast<int64_t>(k);
      } else if (want[k] < 0 || __builtin_mul_overflow(known, want[k], &known)) {
        return Fail(ctx, "invalid target shape " + Shape(want).ToString());
      }
    }
    if (infer >= 0) want[static_cast<size_t>(infer)] = known ? in.GetShapeSize() / known : 0;
    Shape out(want);
    if (out.GetShapeSize() != in.GetShapeSize()) return Fail(ctx, "cannot reshape " + in.ToString() + " to " + Shape(want).ToString());
    *ctx->GetOutputShape(0) = out;
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    if (y->GetAddr() != x->GetAddr()) std::memcpy(y->GetAddr(), x->GetAddr(), x->GetShapeSize() * DataTypeSize(x->GetDataType()));
    return GRAPH_SUCCESS;
  }
};


// Softmax over the last axis; int8/uint8 inputs use TFLite's fixed-point exp (Q5.26 differences,
// Q12.19 sums) and give an 8-bit output with scale 1/256.
class TflSoftmax : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const float* beta_p = ctx->GetAttrs()->GetFloat("beta");
    const float beta = beta_p ? *beta_p : 1.f;
    const Shape& xs = x->GetShape();
    const int64_t depth = xs.GetDim(xs.GetDimNum() - 1), rows = depth ? x->GetShapeSize() / depth : 0;
    if (depth > INT32_MAX / 4 || rows > INT32_MAX / 4) return Fail(ctx, "too large for the generated C (32-bit indices)");
    if (depth == 0 || rows == 0) return GRAPH_SUCCESS;
    const std::string dims = std::to_string(rows) + ", " + std::to_string(depth) + ", ";
    if (x->GetDataType() == DT_FLOAT) {
      ctx->Include("<math.h>");
      aot::EmitHelper(ctx, kTflKernels, "weft_softmax_f32");
      ctx->Run("weft_softmax_f32(" + dims + aot::FloatLit(beta) + ", " + ctx->Input(0, "float") + ", " + ctx->Output(0, "float") + ");\n");
      return GRAPH_SUCCESS;
    }
    const DataType yt = ctx->GetOutputTensor(0)->GetDataType();
    if ((x->GetDataType() != DT_INT8 && x->GetDataType() != DT_UINT8) || (yt != DT_INT8 && yt != DT_UINT8 && yt != DT_INT16))
      return Fail(ctx, "quantized softmax takes int8 or uint8 input and gives int8, uint8 or int16");
    int32_t mult, diff_min;
    int left;
    if (!QuantParams(ctx, beta, &mult, &left, &diff_min)) return GRAPH_FAILED;
    aot::EmitHelper(ctx, kTflKernels, "weft_softmax_q");
    ctx->Run("weft_softmax_q(" + dims + (x->GetDataType() == DT_INT8 ? "8, " : "9, ") +
             (yt == DT_INT8 ? "8, " : yt == DT_UINT8 ? "9, " : "16, ") + aot::IntLit(mult) + ", " + std::to_string(left) + ", " +
             aot::IntLit(diff_min) + ", " + ctx->Input(0, "void") + ", " + ctx->Output(0, "void") + ");\n");
    return GRAPH_SUCCESS;
  }
  // The fixed-point softmax's input multiplier, its left shift and the smallest difference from
  // the row's maximum that still counts.
  static bool QuantParams(const KernelContextBase* ctx, float beta, int32_t* mult, int* left, int32_t* diff_min) {
    Quant qi = InputQuant(ctx, 0);
    if (!qi.quantized()) return Fail(ctx, "the input needs a scale"), false;
    const int kScaledDiffIntegerBits = 5;
    double real = std::min<double>(static_cast<double>(beta) * static_cast<double>(qi.scale) * static_cast<double>(1 << (31 - kScaledDiffIntegerBits)),
                                   static_cast<double>((int64_t(1) << 31) - 1));
    tfl::QuantizeMultiplier(real, mult, left);
    if (*left < 0) return Fail(ctx, "beta * input scale is too small for the fixed-point softmax"), false;
    double radius = ((1 << kScaledDiffIntegerBits) - 1) * static_cast<double>(int64_t(1) << (31 - kScaledDiffIntegerBits)) /
                    static_cast<double>(int64_t(1) << *left);
    *diff_min = -static_cast<int32_t>(std::floor(radius));
    return true;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    if (ctx->GetInputShape(0)->GetDimNum() == 0) return Fail(ctx, "the input must have at least one dim");
    *ctx->GetOutputShape(0) = *ctx->GetInputShape(0);
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override { return SetRecordedOutputType(ctx, 0); }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    Tensor* y = ctx->MallocOutputTensor(0, x->GetShape(), ctx->GetOutputTensor(0)->GetDataType());
    if (!y) return GRAPH_FAILED;
    const float* beta_p = ctx->GetAttrs()->GetFloat("beta");
    float beta = beta_p ? *beta_p : 1.f;
    const Shape& xs = x->GetShape();
    int64_t depth = xs.GetDim(xs.GetDimNum() - 1), rows = depth ? x->GetShapeSize() / depth : 0;
    if (x->GetDataType() == DT_FLOAT) {
      const float* px = x->GetData<float>();
      float* py = y->GetData<float>();
      for (int64_t r = 0; r < rows; ++r) {
        const float* in = px + r * depth;
        float* out = py + r * depth;
        float m = *std::max_element(in, in + depth);
        float sum = 0.f;
        for (int64_t c = 0; c < depth; ++c) sum += out[c] = std::exp((in[c] - m) * beta);
        for (int64_t c = 0; c < depth; ++c) out[c] /= sum;
      }
      return GRAPH_SUCCESS;
    }
    DataType yt = y->GetDataType();
    if ((x->GetDataType() != DT_INT8 && x->GetDataType() != DT_UINT8) || (yt != DT_INT8 && yt != DT_UINT8 && yt != DT_INT16))
      return Fail(ctx, "quantized softmax takes int8 or uint8 input and gives int8, uint8 or int16");
    const int kAccumulationIntegerBits = 12;
    int32_t mult, diff_min;
    int left;
    if (!QuantParams(ctx, beta, &mult, &left, &diff_min)) return GRAPH_FAILED;
    const int out_bits = yt == DT_INT16 ? 16 : 8;
    const int32_t out_min = yt == DT_INT8 ? -128 : yt == DT_UINT8 ? 0 : -32768;
    const int32_t out_max = yt == DT_INT8 ? 127 : yt == DT_UINT8 ? 255 : 32767;
    auto rescaled = [&](int32_t diff) {
      return tfl::SaturatingRoundingDoublingHighMul(static_cast<int32_t>(static_cast<uint32_t>(diff) << left), mult);
    };
    auto load = [&](int64_t i) -> int32_t {
      return x->GetDataType() == DT_INT8 ? x->GetData<int8_t>()[i] : x->GetData<uint8_t>()[i];
    };
    auto store = [&](int64_t i, int32_t v) {
      v = std::min(std::max(v, out_min), out_max);
      if (yt == DT_INT8) y->GetData<int8_t>()[i] = static_cast<int8_t>(v);
      else if (yt == DT_UINT8) y->GetData<uint8_t>()[i] = static_cast<uint8_t>(v);
      else y->GetData<int16_t>()[i] = static_cast<int16_t>(v);
    };
    for (int64_t r = 0; r < rows; ++r) {
      int32_t m = std::numeric_limits<int32_t>::min();
      for (int64_t c = 0; c < depth; ++c) m = std::max(m, load(r * depth + c));
      int32_t sum = 0;  // Q12.19
      for (int64_t c = 0; c < depth; ++c) {
        int32_t diff = load(r * depth + c) - m;
        if (diff >= diff_min) sum += tfl::RoundingDivideByPOT(tfl::ExpOnNegativeValuesQ5(rescaled(diff)), kAccumulationIntegerBits);
      }
      int bits_over_unit;
      int32_t scale = tfl::Reciprocal(sum, kAccumulationIntegerBits, &bits_over_unit);
      for (int64_t c = 0; c < depth; ++c) {
        int32_t diff = load(r * depth + c) - m;
        if (diff < diff_min) {
          store(r * depth + c, out_min);
          continue;
        }
        int32_t e = tfl::ExpOnNegativeValuesQ5(rescaled(diff));
        int32_t v = tfl::RoundingDivideByPOT(tfl::SaturatingRoundingDoublingHighMul(scale, e), bits_over_unit + 31 - out_bits);
        store(r * depth + c, v + out_min);
      }
    }
    return GRAPH_SUCCESS;
  }
};

// AveragePool2D / MaxPool2D on NHWC; windows clipped at the borders (the average divides by the
// elements inside), 8-bit averages rounded half away from zero.
class TflPool : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Shape& xs = x->GetShape();
    int64_t oh, ow, ph, pw;
    if (!Geometry(ctx, xs, &oh, &ow, &ph, &pw)) return GRAPH_FAILED;
    Activation act;
    if (!ParseActivation(ctx, &act)) return GRAPH_FAILED;
    for (int64_t v : {xs.GetDim(0), xs.GetDim(1), xs.GetDim(2), xs.GetDim(3), oh, ow})
      if (v > INT32_MAX / 4) return Fail(ctx, "too large for the generated C (32-bit indices)");
    const DataType xt = x->GetDataType();
    float flo = 0.f, fhi = 0.f;
    int32_t lo = 0, hi = 0;
    if (xt == DT_FLOAT) tfl::ActivationRange(act, &flo, &fhi);
    else if (xt == DT_INT8) QuantClamp<int8_t>(ctx, act, &lo, &hi);
    else if (xt == DT_INT16) QuantClamp<int16_t>(ctx, act, &lo, &hi);
    else return Fail(ctx, "the generated C pools float32, int8 or int16, not " + std::string(DataTypeName(xt)));
    aot::EmitHelper(ctx, kTflKernels, "weft_pool");
    std::string args = std::string(xt == DT_FLOAT ? "0" : xt == DT_INT8 ? "8" : "16") + ", " +
                       (std::string(ctx->GetNodeType()) == "TflAveragePool2D" ? "1" : "0");
    for (int64_t v : {xs.GetDim(0), xs.GetDim(1), xs.GetDim(2), xs.GetDim(3), oh, ow, IntAttr(ctx, "filter_height"), IntAttr(ctx, "filter_width"),
                      IntAttr(ctx, "stride_h"), IntAttr(ctx, "stride_w"), ph, pw})
      args += ", " + std::to_string(v);
    if (xt == DT_FLOAT) ctx->Include("<math.h>");
    ctx->Run("weft_pool(" + args + ", " + aot::FloatLit(flo) + ", " + aot::FloatLit(fhi) + ", " + aot::IntLit(lo) + ", " + aot::IntLit(hi) +
             ", " + ctx->Input(0, "void") + ", " + ctx->Output(0, "void") + ");\n");
    return GRAPH_SUCCESS;
  }
  bool Geometry(const KernelContextBase* ctx, const Shape& x, int64_t* oh, int64_t* ow, int64_t* ph, int64_t* pw) const {
    if (x.GetDimNum() != 4) return Fail(ctx, "the input must be 4-D NHWC"), false;
    const char* p = ctx->GetAttrs()->GetStr("padding");
    bool same = p && std::string(p) == "SAME";
    int64_t sh = IntAttr(ctx, "stride_h"), sw = IntAttr(ctx, "stride_w"), fh = IntAttr(ctx, "filter_height"), fw = IntAttr(ctx, "filter_width");
    if (sh <= 0 || sw <= 0 || fh <= 0 || fw <= 0 || sh > 4096 || sw > 4096 || fh > 4096 || fw > 4096)
      return Fail(ctx, "strides and filter sizes must be in [1, 4096]"), false;
    *oh = tfl::ConvOutSize(same, x.GetDim(1), fh, sh, 1);
    *ow = tfl::ConvOutSize(same, x.GetDim(2), fw, sw, 1);
    *ph = tfl::ConvPadding(sh, 1, x.GetDim(1), fh, *oh);
    *pw = tfl::ConvPadding(sw, 1, x.GetDim(2), fw, *ow);
    return true;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& x = *ctx->GetInputShape(0);
    int64_t oh, ow, ph, pw;
    if (!Geometry(ctx, x, &oh, &ow, &ph, &pw)) return GRAPH_FAILED;
    *ctx->GetOutputShape(0) = Shape({x.GetDim(0), oh, ow, x.GetDim(3)});
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Shape& xs = x->GetShape();
    int64_t oh, ow, ph, pw;
    if (!Geometry(ctx, xs, &oh, &ow, &ph, &pw)) return GRAPH_FAILED;
    Activation act;
    if (!ParseActivation(ctx, &act)) return GRAPH_FAILED;
    Tensor* y = ctx->MallocOutputTensor(0, Shape({xs.GetDim(0), oh, ow, xs.GetDim(3)}), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    const bool avg = std::string(ctx->GetNodeType()) == "TflAveragePool2D";
    int64_t n = xs.GetDim(0), ih = xs.GetDim(1), iw = xs.GetDim(2), ch = xs.GetDim(3);
    int64_t sh = IntAttr(ctx, "stride_h"), sw = IntAttr(ctx, "stride_w"), fh = IntAttr(ctx, "filter_height"), fw = IntAttr(ctx, "filter_width");
    auto run = [&](auto tag, auto finish) {
      using T = decltype(tag);
      const T* px = x->GetData<T>();
      T* py = y->GetData<T>();
      for (int64_t b = 0; b < n; ++b)
        for (int64_t oy = 0; oy < oh; ++oy)
          for (int64_t ox = 0; ox < ow; ++ox) {
            int64_t y0 = oy * sh - ph, x0 = ox * sw - pw;
            int64_t fy0 = std::max<int64_t>(0, -y0), fy1 = std::min(fh, ih - y0);
            int64_t fx0 = std::max<int64_t>(0, -x0), fx1 = std::min(fw, iw - x0);
            for (int64_t c = 0; c < ch; ++c) {
              float acc = 0.f;
              int64_t iacc = 0, count = 0;
              T m = std::numeric_limits<T>::lowest();
              for (int64_t fy = fy0; fy < fy1; ++fy)
                for (int64_t fx = fx0; fx < fx1; ++fx) {
                  T v = px[((b * ih + y0 + fy) * iw + x0 + fx) * ch + c];
                  if constexpr (std::is_same_v<T, float>) acc += v;
                  else iacc += v;
                  m = std::max(m, v);
                  ++count;
                }
              py[((b * oh + oy) * ow + ox) * ch + c] = finish(acc, iacc, count, m);
            }
          }
    };
    if (x->GetDataType() == DT_FLOAT) {
      float lo, hi;
      tfl::ActivationRange(act, &lo, &hi);
      // The average: the window's float sum (in the window's order) divided by its count.
      run(float{}, [&](float sum, int64_t, int64_t count, float m) {
        float v = avg ? (count ? sum / static_cast<float>(count) : 0.f) : m;
        return std::min(std::max(v, lo), hi);
      });
      return GRAPH_SUCCESS;
    }
    bool ok = DispatchQuantType(x->GetDataType(), [&](auto tag) {
      using T = decltype(tag);
      int32_t lo, hi;
      QuantClamp<T>(ctx, act, &lo, &hi);
      run(T{}, [&](float, int64_t sum, int64_t count, T m) {
        int64_t v = m;
        if (avg) v = count == 0 ? 0 : sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count;
        return static_cast<T>(std::min<int64_t>(std::max<int64_t>(v, lo), hi));
      });
    });
    return ok ? GRAPH_SUCCESS : Fail(ctx, "unsupported type");
  }
};

// Transpose by a constant permutation.
class TflTranspose : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
  // dst[i * planes + p] = src[p * plane_step + i]: the planes' counts 1 to 4 unrolled.
  template <typename T>
  static void Interleave(const T* src, int64_t plane_step, int64_t planes, int64_t n, T* dst) {
    auto fixed = [&](auto count) {
      constexpr int64_t P = decltype(count)::value;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t p = 0; p < P; ++p) dst[i * P + p] = src[p * plane_step + i];
    };
    switch (planes) {
      case 1: std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(T)); return;
      case 2: return fixed(std::integral_constant<int64_t, 2>());
      case 3: return fixed(std::integral_constant<int64_t, 3>());
      case 4: return fixed(std::integral_constant<int64_t, 4>());
      default:
        for (int64_t i = 0; i < n; ++i)
          for (int64_t p = 0; p < planes; ++p) dst[i * planes + p] = src[p * plane_step + i];
    }
  }

 public:
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Shape& xs = x->GetShape();
    const size_t rank = xs.GetDimNum();
    std::vector<int64_t> perm;
    if (!Perm(ctx, ctx->GetInputTensor(1), rank, &perm)) return GRAPH_FAILED;
    std::vector<int64_t> dims;
    for (int64_t k : perm) dims.push_back(xs.GetDim(static_cast<size_t>(k)));
    return aot::EmitStridedCopy(ctx, dims, perm, std::vector<int64_t>(rank, 1), {});
  }
  bool Perm(const KernelContextBase* ctx, const Tensor* p, size_t rank, std::vector<int64_t>* perm) const {
    if (!ReadInts(p, perm)) return Fail(ctx, "perm must be a constant"), false;
    if (perm->size() != rank) return Fail(ctx, "perm has " + std::to_string(perm->size()) + " entries for rank " + std::to_string(rank)), false;
    std::vector<char> seen(rank, 0);
    for (int64_t& v : *perm) {
      if (v < 0) v += static_cast<int64_t>(rank);
      if (v < 0 || v >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(v)]) return Fail(ctx, "perm is not a permutation"), false;
      seen[static_cast<size_t>(v)] = 1;
    }
    return true;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& x = *ctx->GetInputShape(0);
    std::vector<int64_t> perm;
    if (!Perm(ctx, ctx->GetInputTensor(1), x.GetDimNum(), &perm)) return GRAPH_FAILED;
    Shape o;
    for (int64_t p : perm) o.AppendDim(x.GetDim(static_cast<size_t>(p)));
    *ctx->GetOutputShape(0) = o;
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Shape& xs = x->GetShape();
    size_t rank = xs.GetDimNum();
    std::vector<int64_t> perm;
    if (!Perm(ctx, ctx->GetInputTensor(1), rank, &perm)) return GRAPH_FAILED;
    Tensor* y = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    std::vector<int64_t> in_stride(rank, 1);
    for (size_t k = rank; k-- > 1;) in_stride[k - 1] = in_stride[k] * xs.GetDim(k);
    const Shape& ys = y->GetShape();
    size_t elem = DataTypeSize(x->GetDataType());
    const uint8_t* px = x->GetData<uint8_t>();
    uint8_t* py = y->GetData<uint8_t>();
    int64_t total = y->GetShapeSize();
    if (total == 0) return GRAPH_SUCCESS;
    if (rank == 0) {
      std::memcpy(py, px, elem);
      return GRAPH_SUCCESS;
    }
    // One line of the output at a time along axis `a`: the innermost output axis, or, when that is
    // short (NCHW -> NHWC with 3 channels), the output axis holding the input's innermost one,
    // so that the inner loop reads (or writes) a long contiguous run.
    std::vector<int64_t> out_stride(rank, 1);
    for (size_t k = rank; k-- > 1;) out_stride[k - 1] = out_stride[k] * ys.GetDim(k);
    size_t a = rank - 1;
    if (ys.GetDim(rank - 1) < 16)
      for (size_t k = 0; k < rank; ++k)
        if (perm[k] == static_cast<int64_t>(rank) - 1 && ys.GetDim(k) > ys.GetDim(rank - 1)) a = k;
    const int64_t inner = ys.GetDim(a), src_step = in_stride[static_cast<size_t>(perm[a])], dst_step = out_stride[a];
    if (a + 2 == rank && src_step == 1 && (elem == 1 || elem == 2 || elem == 4)) {
      // The output's short last axis (channels) interleaves `ys[rank-1]` contiguous input lines
      // (planes): each output run written in order, reading one element of every plane per step.
      const int64_t planes = ys.GetDim(rank - 1), plane_step = in_stride[static_cast<size_t>(perm[rank - 1])];
      const int64_t groups = total / (inner * planes);
      ctx->ParallelFor(groups, std::max<int64_t>(1, 4096 / (inner * planes)), [&](int64_t n0, int64_t n1) {
        for (int64_t n = n0; n < n1; ++n) {
          int64_t src = 0, rest = n;
          for (size_t k = rank - 2; k-- > 0;) {
            src += rest % ys.GetDim(k) * in_stride[static_cast<size_t>(perm[k])];
            rest /= ys.GetDim(k);
          }
          const int64_t dst = n * inner * planes;
          switch (elem) {
            case 1: Interleave(reinterpret_cast<const uint8_t*>(px) + src, plane_step, planes, inner, reinterpret_cast<uint8_t*>(py) + dst); break;
            case 2: Interleave(reinterpret_cast<const uint16_t*>(px) + src, plane_step, planes, inner, reinterpret_cast<uint16_t*>(py) + dst); break;
            default: Interleave(reinterpret_cast<const uint32_t*>(px) + src, plane_step, planes, inner, reinterpret_cast<uint32_t*>(py) + dst);
          }
        }
      });
      return GRAPH_SUCCESS;
    }
    auto line = [&](auto tag, int64_t dst0, int64_t src0) {
      using T = decltype(tag);
      T* dst = reinterpret_cast<T*>(py) + dst0;
      const T* from = reinterpret_cast<const T*>(px) + src0;
      for (int64_t i = 0; i < inner; ++i) dst[i * dst_step] = from[i * src_step];
    };
    // Lines split over the threads: each range starts from its first line's index.
    ctx->ParallelFor(total / inner, std::max<int64_t>(1, 4096 / inner), [&](int64_t n0, int64_t n1) {
      std::vector<int64_t> at(rank, 0);
      for (size_t k = rank, rest = static_cast<size_t>(n0); k-- > 0;) {
        if (k == a) continue;
        at[k] = static_cast<int64_t>(rest % static_cast<size_t>(ys.GetDim(k)));
        rest /= static_cast<size_t>(ys.GetDim(k));
      }
      for (int64_t n = n0; n < n1; ++n) {
        int64_t src = 0, dst = 0;
        for (size_t k = 0; k < rank; ++k)
          if (k != a) {
            src += at[k] * in_stride[static_cast<size_t>(perm[k])];
            dst += at[k] * out_stride[k];
          }
        switch (elem) {
          case 1: line(uint8_t(), dst, src); break;
          case 2: line(uint16_t(), dst, src); break;
          case 4: line(uint32_t(), dst, src); break;
          case 8: line(uint64_t(), dst, src); break;
          default:
            for (int64_t i = 0; i < inner; ++i) std::memcpy(py + (dst + i * dst_step) * elem, px + (src + i * src_step) * elem, elem);
        }
        for (size_t k = rank; k-- > 0;) {  // the next line: every axis but `a`
          if (k == a) continue;
          if (++at[k] < ys.GetDim(k)) break;
          at[k] = 0;
        }
      }
    });
    return GRAPH_SUCCESS;
  }
};


// Mean over constant axes. Float: any axes. 8-bit: the 4-D mean over H and W with keep_dims,
// rescaled and rounded as TFLite's reference kernel does.
class TflMean : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Shape& xs = x->GetShape();
    std::vector<char> reduce;
    if (!Axes(ctx, ctx->GetInputTensor(1), xs.GetDimNum(), &reduce)) return GRAPH_FAILED;
    const bool* keep = ctx->GetAttrs()->GetBool("keep_dims");
    const size_t rank = xs.GetDimNum();
    const int64_t total = x->GetShapeSize(), outs = ctx->GetOutputTensor(0)->GetShapeSize();
    if (x->GetDataType() == DT_FLOAT) {
      if (rank > 8) return Fail(ctx, "the generated C reduces at most 8 dims");
      std::vector<int64_t> dims, ostride(rank, 0);
      int64_t acc = 1;
      for (size_t k = rank; k-- > 0;)
        if (!reduce[k]) ostride[k] = acc, acc *= xs.GetDim(k);
      for (size_t k = 0; k < rank; ++k) dims.push_back(xs.GetDim(k));
      if (rank == 0) dims.push_back(1), ostride.push_back(0);
      aot::EmitHelper(ctx, kTflKernels, "weft_mean_f32");
      std::string d = ctx->Const("dims", DT_INT64, dims), st = ctx->Const("out_stride", DT_INT64, ostride);
      const float count = outs ? static_cast<float>(total / outs) : 1.f;
      ctx->Run("weft_mean_f32(" + std::to_string(dims.size()) + ", " + d + ", " + st + ", " + aot::IntLit(total) + ", " + aot::IntLit(outs) + ", " +
               aot::FloatLit(count) + ", " + ctx->Input(0, "float") + ", " + ctx->Output(0, "float") + ");\n");
      return GRAPH_SUCCESS;
    }
    if (x->GetDataType() != DT_INT8 || rank != 4 || !(keep && *keep) || reduce != std::vector<char>{0, 1, 1, 0})
      return Fail(ctx, "quantized MEAN is supported for int8 4-D inputs over axes 1 and 2 with keep_dims");
    Quant qi = InputQuant(ctx, 0), qo = OutputQuant(ctx);
    if (!qi.quantized() || !qo.quantized()) return Fail(ctx, "quantized input and output need scales");
    int32_t m, mc;
    int sh, shc;
    tfl::QuantizeMultiplier(static_cast<double>(qi.scale) / static_cast<double>(qo.scale), &m, &sh);
    const int64_t count = xs.GetDim(1) * xs.GetDim(2);
    if (count > INT32_MAX / 256) return Fail(ctx, "too large for the generated C");
    MeanMultiplier(m, sh, static_cast<int32_t>(count), &mc, &shc);
    aot::EmitHelper(ctx, kTflKernels, "weft_mean_s8");
    ctx->Run("weft_mean_s8(" + std::to_string(xs.GetDim(0)) + ", " + std::to_string(count) + ", " + std::to_string(xs.GetDim(3)) + ", " +
             aot::IntLit(qi.zp) + ", " + aot::IntLit(mc) + ", " + std::to_string(shc) + ", " + aot::IntLit(qo.zp) + ", " + ctx->Input(0, "int8_t") +
             ", " + ctx->Output(0, "int8_t") + ");\n");
    return GRAPH_SUCCESS;
  }
  // The division by the count folded into the multiplier, with as many extra bits as it allows.
  static void MeanMultiplier(int32_t m, int sh, int32_t count, int32_t* mc, int* shc) {
    *mc = m;
    *shc = sh;
    if (count > 0) {
      int extra = std::min({63 - __builtin_clzll(static_cast<uint64_t>(count)), 32, 31 + sh});
      *mc = static_cast<int32_t>((static_cast<int64_t>(m) << extra) / count);
      *shc = sh - extra;
    }
  }
  bool Axes(const KernelContextBase* ctx, const Tensor* t, size_t rank, std::vector<char>* reduce) const {
    std::vector<int64_t> axes;
    if (!ReadInts(t, &axes)) return Fail(ctx, "axis must be a constant"), false;
    reduce->assign(rank, 0);
    for (int64_t a : axes) {
      int64_t k;
      if (!NormalizeAxis(a, static_cast<int64_t>(rank), &k)) return Fail(ctx, AxisError(a, static_cast<int64_t>(rank))), false;
      (*reduce)[static_cast<size_t>(k)] = 1;
    }
    return true;
  }
  Shape OutShape(const Shape& x, const std::vector<char>& reduce, bool keep) const {
    Shape o;
    for (size_t k = 0; k < x.GetDimNum(); ++k)
      if (!reduce[k]) o.AppendDim(x.GetDim(k));
      else if (keep) o.AppendDim(1);
    return o;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& x = *ctx->GetInputShape(0);
    std::vector<char> reduce;
    if (!Axes(ctx, ctx->GetInputTensor(1), x.GetDimNum(), &reduce)) return GRAPH_FAILED;
    const bool* keep = ctx->GetAttrs()->GetBool("keep_dims");
    *ctx->GetOutputShape(0) = OutShape(x, reduce, keep && *keep);
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Shape& xs = x->GetShape();
    std::vector<char> reduce;
    if (!Axes(ctx, ctx->GetInputTensor(1), xs.GetDimNum(), &reduce)) return GRAPH_FAILED;
    const bool* keep = ctx->GetAttrs()->GetBool("keep_dims");
    Tensor* y = ctx->MallocOutputTensor(0, OutShape(xs, reduce, keep && *keep), x->GetDataType());
    if (!y) return GRAPH_FAILED;
    size_t rank = xs.GetDimNum();
    int64_t total = x->GetShapeSize(), outs = y->GetShapeSize();
    if (x->GetDataType() == DT_FLOAT) {
      std::vector<float> sum(static_cast<size_t>(outs), 0.f);
      std::vector<int64_t> idx(rank, 0);
      for (int64_t i = 0; i < total; ++i) {
        int64_t o = 0;
        for (size_t k = 0; k < rank; ++k)
          if (!reduce[k]) o = o * xs.GetDim(k) + idx[k];
        sum[static_cast<size_t>(o)] += x->GetData<float>()[i];
        for (size_t k = rank; k-- > 0;) {
          if (++idx[k] < xs.GetDim(k)) break;
          idx[k] = 0;
        }
      }
      float count = outs ? static_cast<float>(total / outs) : 1.f;
      for (int64_t o = 0; o < outs; ++o) y->GetData<float>()[o] = sum[static_cast<size_t>(o)] / count;
      return GRAPH_SUCCESS;
    }
    if (x->GetDataType() != DT_INT8 || rank != 4 || !(keep && *keep) || reduce != std::vector<char>{0, 1, 1, 0})
      return Fail(ctx, "quantized MEAN is supported for int8 4-D inputs over axes 1 and 2 with keep_dims (got " +
                           std::string(x->GetDataType() == DT_INT8 ? "int8" : "another type") + " of rank " + std::to_string(rank) + ")");
    Quant qi = InputQuant(ctx, 0), qo = OutputQuant(ctx);
    if (!qi.quantized() || !qo.quantized()) return Fail(ctx, "quantized input and output need scales");
    int32_t m;
    int sh;
    tfl::QuantizeMultiplier(static_cast<double>(qi.scale) / static_cast<double>(qo.scale), &m, &sh);
    int64_t n = xs.GetDim(0), h = xs.GetDim(1), w = xs.GetDim(2), c = xs.GetDim(3);
    const int32_t count = static_cast<int32_t>(h * w);
    int32_t mc;
    int shc;
    MeanMultiplier(m, sh, count, &mc, &shc);
    const int8_t* px = x->GetData<int8_t>();
    int8_t* py = y->GetData<int8_t>();
    for (int64_t b = 0; b < n; ++b)
      for (int64_t d = 0; d < c; ++d) {
        int32_t acc = 0;
        for (int64_t i = 0; i < h * w; ++i) acc += px[(b * h * w + i) * c + d] - qi.zp;
        acc = count == 0 ? 0 : tfl::MultiplyByQuantizedMultiplier(acc, mc, shc);
        py[b * c + d] = static_cast<int8_t>(std::min(std::max(acc + qo.zp, int32_t(-128)), int32_t(127)));
      }
    return GRAPH_SUCCESS;
  }
};

// ---- stateful ------------------------------------------------------------------------------------

// SVDF: a rank-factorised filter over time. Each of num_filters filters keeps its last `memory`
// feature activations (the LiteRT variable tensor, [batch, num_filters * memory]); a run shifts
// them one step left, appends weights_feature · input, dots each filter's memory with its row of
// weights_time, sums `rank` consecutive filters per unit and adds the bias. The state lives in
// the node's per-run-context memory (GetHostArgs): it starts at the variable tensor's reset value
// (zero; an 8-bit state's zero point) and is carried between runs.
// Inputs: input [batch, input_size], weights_feature [num_filters, input_size], weights_time
// [num_filters, memory], optional bias [num_units]; input 4 of the LiteRT operator (the state) is
// not an input here, but its quantization stays at index 4 of input_scale.
// Float: all float32. Integer (TFLite's integer SVDF): int8 input and weights_feature, int16
// weights_time and state, int32 bias, int8 output; or, as TFLM also runs it, int8 weights_time
// and an int8 state with a zero point.
class TflSvdf : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  // The state becomes a member of the node's state struct in the module's context: zero after
  // <prefix>_init, or the zero point for an 8-bit state (filled by the node's init).
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* wf = ctx->GetInputTensor(1);
    const Tensor* wt = ctx->GetInputTensor(2);
    const Tensor* b = ctx->GetOptionalInputTensor(3);
    const int64_t batch = x->GetShape().GetDim(0), input_size = x->GetShape().GetDim(1);
    const int64_t filters = wf->GetShape().GetDim(0), memory = wt->GetShape().GetDim(1);
    const int64_t rank = IntAttr(ctx, "rank");
    const int64_t cells = batch * filters * memory;
    if (ctx->GetOutputTensor(0)->GetShapeSize() == 0) return GRAPH_SUCCESS;  // no batch rows or units: no code, no state
    if (cells > INT32_MAX / 4 || input_size > INT32_MAX / 4 || rank <= 0) return Fail(ctx, "too large for the generated C");
    Activation act;
    if (!ParseActivation(ctx, &act)) return GRAPH_FAILED;
    ctx->Include("<string.h>");
    const std::string dims = std::to_string(batch) + ", " + std::to_string(input_size) + ", " + std::to_string(filters) + ", " +
                             std::to_string(memory) + ", " + std::to_string(rank) + ", ";
    if (x->GetDataType() == DT_FLOAT && wf->GetDataType() == DT_INT8) {  // Execute's hybrid arithmetic (weft_svdf_hybrid)
      const Quant fq = InputQuant(ctx, 1), tq = InputQuant(ctx, 2);
      if (ListView<float>(ctx->GetAttrs()->GetListFloat("channel_scales")).size() > 0)
        return Fail(ctx, "a hybrid SVDF takes weights with one scale each, not per-channel scales");
      if (wt->GetDataType() != DT_INT8 || !fq.quantized() || !tq.quantized() || (b && b->GetDataType() != DT_FLOAT))
        return Fail(ctx, "a hybrid SVDF takes int8 weights_feature and weights_time with a scale each and a float32 bias");
      float lo, hi;
      tfl::ActivationRange(act, &lo, &hi);
      std::vector<float> time(static_cast<size_t>(filters * memory));
      const int8_t* pti = wt->GetData<int8_t>();
      if (!pti) return Fail(ctx, "a hybrid SVDF's weights_time must be a constant for the generated C");
      for (size_t k = 0; k < time.size(); ++k) time[k] = static_cast<float>(pti[k]) * tq.scale;
      const bool* asym = ctx->GetAttrs()->GetBool("asymmetric_quantize_inputs");
      ctx->DeclareState("float svdf_state[" + std::to_string(cells) + "];\n");
      aot::EmitHelper(ctx, kTflKernels, "weft_svdf_hybrid");
      ctx->Include("<math.h>");
      const std::string q = ctx->Scratch(static_cast<size_t>(std::max<int64_t>(1, input_size)));
      ctx->Run("weft_svdf_hybrid(" + dims + ctx->Input(0, "float") + ", " + ctx->Input(1, "int8_t") + ", " + aot::FloatLit(fq.scale) + ", " +
               ctx->Const("weights_time", DT_FLOAT, time) + ", " + (b ? ctx->Input(3, "float") : std::string("0")) + ", " +
               (asym && *asym ? "1" : "0") + ", " + aot::FloatLit(lo) + ", " + aot::FloatLit(hi) + ", (int8_t*)(void*)" + q + ", " + ctx->State() +
               "->svdf_state, " + ctx->Output(0, "float") + ");\n");
      return GRAPH_SUCCESS;
    }
    if (x->GetDataType() == DT_FLOAT) {
      if (wf->GetDataType() != DT_FLOAT || wt->GetDataType() != DT_FLOAT || (b && b->GetDataType() != DT_FLOAT))
        return Fail(ctx, "float SVDF takes float32 weights and bias");
      float lo, hi;
      tfl::ActivationRange(act, &lo, &hi);
      ctx->DeclareState("float svdf_state[" + std::to_string(cells) + "];\n");
      aot::EmitHelper(ctx, kTflKernels, "weft_svdf_f32");
      ctx->Run("weft_svdf_f32(" + dims + ctx->Input(0, "float") + ", " + ctx->Input(1, "float") + ", " + ctx->Input(2, "float") + ", " +
               (b ? ctx->Input(3, "float") : std::string("0")) + ", " + aot::FloatLit(lo) + ", " + aot::FloatLit(hi) + ", " + ctx->State() +
               "->svdf_state, " + ctx->Output(0, "float") + ");\n");
      return GRAPH_SUCCESS;
    }
    const DataType st = wt->GetDataType();
    if (x->GetDataType() != DT_INT8 || wf->GetDataType() != DT_INT8 || (st != DT_INT16 && st != DT_INT8) ||
        (b && b->GetDataType() != DT_INT32) || ctx->GetOutputTensor(0)->GetDataType() != DT_INT8)
      return Fail(ctx, "integer SVDF takes an int8 input and weights_feature, int16 or int8 weights_time, an int32 bias and gives int8");
    Quant in = InputQuant(ctx, 0), fq = InputQuant(ctx, 1), tq = InputQuant(ctx, 2), sq = InputQuant(ctx, 4), o = OutputQuant(ctx);
    if (!in.quantized() || !fq.quantized() || !tq.quantized() || !sq.quantized() || !o.quantized())
      return Fail(ctx, "integer SVDF needs the scales of its input, weights, state (input 4) and output");
    if (st == DT_INT16 && sq.zp != 0) return Fail(ctx, "an int16 state must be symmetric (zero point 0)");
    int32_t m1, m2;
    int s1, s2;
    tfl::QuantizeMultiplier(static_cast<double>(in.scale * fq.scale / sq.scale), &m1, &s1);
    tfl::QuantizeMultiplier(static_cast<double>(sq.scale * tq.scale / o.scale), &m2, &s2);
    const char* ct = st == DT_INT16 ? "int16_t" : "int8_t";
    ctx->DeclareState(std::string(ct) + " svdf_state[" + std::to_string(cells) + "];\n");
    if (sq.zp != 0)
      ctx->Init("{\n  int32_t i;\n  for (i = 0; i < " + std::to_string(cells) + "; ++i) " + ctx->State() + "->svdf_state[i] = (" + ct + ")" +
                aot::IntLit(sq.zp) + ";\n}\n");
    aot::EmitHelper(ctx, kTflKernels, "weft_svdf_q");
    ctx->Run(std::string("weft_svdf_q(") + (st == DT_INT16 ? "16, " : "8, ") + dims + ctx->Input(0, "int8_t") + ", " + ctx->Input(1, "int8_t") +
             ", " + ctx->Input(2, "void") + ", " + (b ? ctx->Input(3, "int32_t") : std::string("0")) + ", " + aot::IntLit(in.zp) + ", " +
             aot::IntLit(sq.zp) + ", " + aot::IntLit(o.zp) + ", " + aot::IntLit(m1) + ", " + std::to_string(s1) + ", " + aot::IntLit(m2) +
             ", " + std::to_string(s2) + ", " + ctx->State() + "->svdf_state, " + ctx->Output(0, "int8_t") + ");\n");
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& x = *ctx->GetInputShape(0);
    const Shape& wf = *ctx->GetInputShape(1);
    const Shape& wt = *ctx->GetInputShape(2);
    int64_t rank = IntAttr(ctx, "rank");
    if (x.GetDimNum() != 2 || wf.GetDimNum() != 2 || wt.GetDimNum() != 2)
      return Fail(ctx, "input, weights_feature and weights_time must be 2-D (got " + x.ToString() + ", " + wf.ToString() + ", " + wt.ToString() + ")");
    if (wf.GetDim(1) != x.GetDim(1) && x.GetDim(1) >= 0)
      return Fail(ctx, "weights_feature " + wf.ToString() + " does not match the input " + x.ToString());
    if (wt.GetDim(0) != wf.GetDim(0) || wt.GetDim(1) <= 0)
      return Fail(ctx, "weights_time " + wt.ToString() + " must be [num_filters, memory] for weights_feature " + wf.ToString());
    if (rank <= 0 || wf.GetDim(0) % rank)
      return Fail(ctx, "rank " + std::to_string(rank) + " must divide num_filters " + std::to_string(wf.GetDim(0)));
    const Shape* b = ctx->GetOptionalInputShape(3);
    if (b && (b->GetDimNum() != 1 || b->GetDim(0) != wf.GetDim(0) / rank))
      return Fail(ctx, "bias " + b->ToString() + " must be [num_units] = [" + std::to_string(wf.GetDim(0) / rank) + "]");
    *ctx->GetOutputShape(0) = Shape({x.GetDim(0), wf.GetDim(0) / rank});
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override { return SetRecordedOutputType(ctx, 0); }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetInputTensor(0);
    const Tensor* wf = ctx->GetInputTensor(1);
    const Tensor* wt = ctx->GetInputTensor(2);
    const Tensor* b = ctx->GetOptionalInputTensor(3);
    Tensor* y = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), ctx->GetOutputTensor(0)->GetDataType());
    if (!y) return GRAPH_FAILED;
    if (y->GetShapeSize() == 0) return GRAPH_SUCCESS;  // no batch rows or no units: no state to keep
    const int64_t batch = x->GetShape().GetDim(0), input_size = x->GetShape().GetDim(1);
    const int64_t filters = wf->GetShape().GetDim(0), memory = wt->GetShape().GetDim(1);
    const int64_t rank = IntAttr(ctx, "rank"), units = filters / rank;
    const int64_t cells = batch * filters * memory;
    Activation act;
    if (!ParseActivation(ctx, &act)) return GRAPH_FAILED;
    if (x->GetDataType() == DT_FLOAT) {
      // Hybrid (dynamic-range quantized): int8 weights_feature and weights_time, each with a scale.
      const bool hybrid = wf->GetDataType() == DT_INT8;
      if (hybrid && ListView<float>(ctx->GetAttrs()->GetListFloat("channel_scales")).size() > 0)
        return Fail(ctx, "a hybrid SVDF takes weights with one scale each, not per-channel scales");
      if (hybrid && wt->GetDataType() == DT_INT8)
        for (int k : {1, 2})
          if (!InputQuant(ctx, static_cast<size_t>(k)).quantized())
            return Fail(ctx, std::string("a hybrid SVDF's int8 ") + (k == 1 ? "weights_feature" : "weights_time") + " needs a positive scale, not " +
                                 std::to_string(InputQuant(ctx, static_cast<size_t>(k)).scale));
      if (hybrid ? wt->GetDataType() != DT_INT8 : (wf->GetDataType() != DT_FLOAT || wt->GetDataType() != DT_FLOAT))
        return Fail(ctx, std::string("float SVDF takes float32 weights, or int8 weights_feature and weights_time with a scale each (hybrid), not ") +
                             DataTypeName(wf->GetDataType()) + " and " + DataTypeName(wt->GetDataType()) + " weights");
      if (b && b->GetDataType() != DT_FLOAT) return Fail(ctx, std::string("float SVDF takes a float32 bias, not ") + DataTypeName(b->GetDataType()));
      auto* state = static_cast<float*>(ctx->GetHostArgs(static_cast<size_t>(cells) * sizeof(float)));
      if (!state) return GRAPH_FAILED;
      // Shift each filter's memory left; the newest activation goes last.
      std::memmove(state, state + 1, static_cast<size_t>(cells - 1) * sizeof(float));
      const float* px = x->GetData<float>();
      const float* pt = hybrid ? nullptr : wt->GetData<float>();
      if (!hybrid) {
        const float* pf = wf->GetData<float>();
        for (int64_t n = 0; n < batch; ++n)
          for (int64_t f = 0; f < filters; ++f) {
            float acc = 0.f;
            for (int64_t c = 0; c < input_size; ++c) acc += pf[f * input_size + c] * px[n * input_size + c];
            state[(n * filters + f) * memory + memory - 1] = acc;
          }
      } else {
        // As LiteRT's hybrid SVDF: each input row quantized (QuantizeHybridInput; asymmetric with
        // asymmetric_quantize_inputs), the newest activation 0 + dot * (row scale * feature scale);
        // weights_time as floats (int8 * its scale).
        const bool* asym_p = ctx->GetAttrs()->GetBool("asymmetric_quantize_inputs");
        const bool asym = asym_p && *asym_p;
        const float fs = InputQuant(ctx, 1).scale, ts = InputQuant(ctx, 2).scale;
        auto* q = static_cast<int8_t*>(ctx->MallocWorkSpace(static_cast<size_t>(std::max<int64_t>(1, input_size))));
        auto* ptf = static_cast<float*>(ctx->MallocWorkSpace(static_cast<size_t>(std::max<int64_t>(1, filters * memory)) * sizeof(float)));
        if (!q || !ptf) return GRAPH_FAILED;
        const int8_t* pf = wf->GetData<int8_t>();
        const int8_t* pti = wt->GetData<int8_t>();
        for (int64_t k = 0; k < filters * memory; ++k) ptf[k] = static_cast<float>(pti[k]) * ts;
        pt = ptf;
        for (int64_t n = 0; n < batch; ++n) {
          const HybridScale h = QuantizeHybridInput(nullptr, px + n * input_size, input_size, asym, q);
          const float sf = h.scale * fs;
          for (int64_t f = 0; f < filters; ++f) {
            int32_t dot = 0;
            for (int64_t c = 0; c < input_size; ++c) dot += static_cast<int32_t>(pf[f * input_size + c]) * (static_cast<int32_t>(q[c]) - h.offset);
            state[(n * filters + f) * memory + memory - 1] = 0.f + static_cast<float>(dot) * sf;
          }
        }
      }
      float lo, hi;
      tfl::ActivationRange(act, &lo, &hi);
      float* py = y->GetData<float>();
      for (int64_t n = 0; n < batch; ++n)
        for (int64_t u = 0; u < units; ++u) {
          // As LiteRT: the rank filters' dots summed, then added to the bias.
          float sum = 0.f;
          for (int64_t r = 0; r < rank; ++r) {
            const int64_t f = u * rank + r;
            const float* m = state + (n * filters + f) * memory;
            float dot = 0.f;
            for (int64_t t = 0; t < memory; ++t) dot += pt[f * memory + t] * m[t];
            sum += dot;
          }
          const float out = (b ? b->GetData<float>()[u] : 0.f) + sum;
          py[n * units + u] = std::min(std::max(out, lo), hi);
        }
      return GRAPH_SUCCESS;
    }
    const DataType st = wt->GetDataType();
    if (x->GetDataType() != DT_INT8 || wf->GetDataType() != DT_INT8 || (st != DT_INT16 && st != DT_INT8) ||
        (b && b->GetDataType() != DT_INT32) || y->GetDataType() != DT_INT8)
      return Fail(ctx, "integer SVDF takes an int8 input and weights_feature, int16 or int8 weights_time (the state's type), "
                       "an int32 bias and gives int8");
    Quant in = InputQuant(ctx, 0), fq = InputQuant(ctx, 1), tq = InputQuant(ctx, 2), sq = InputQuant(ctx, 4), o = OutputQuant(ctx);
    if (!in.quantized() || !fq.quantized() || !tq.quantized() || !sq.quantized() || !o.quantized())
      return Fail(ctx, "integer SVDF needs the scales of its input, weights, state (input 4) and output");
    if (st == DT_INT16 && sq.zp != 0) return Fail(ctx, "an int16 state must be symmetric (zero point 0), not " + std::to_string(sq.zp));
    int32_t m1, m2;
    int s1, s2;
    // The scale products in float, as TFLite's Prepare computes them.
    tfl::QuantizeMultiplier(static_cast<double>(in.scale * fq.scale / sq.scale), &m1, &s1);
    tfl::QuantizeMultiplier(static_cast<double>(sq.scale * tq.scale / o.scale), &m2, &s2);
    auto run = [&](auto tag) -> graphStatus {
      using T = decltype(tag);  // weights_time and state: int16, or int8 (TFLM's 8-bit SVDF)
      // The state, then one byte that says it holds a value: the initial state is the zero point
      // (what LiteRT and TFLM reset an 8-bit variable tensor to).
      auto* raw = static_cast<uint8_t*>(ctx->GetHostArgs(static_cast<size_t>(cells) * sizeof(T) + 1));
      if (!raw) return GRAPH_FAILED;
      T* state = reinterpret_cast<T*>(raw);
      if (!raw[static_cast<size_t>(cells) * sizeof(T)]) {
        std::fill(state, state + cells, static_cast<T>(sq.zp));
        raw[static_cast<size_t>(cells) * sizeof(T)] = 1;
      }
      std::memmove(state, state + 1, static_cast<size_t>(cells - 1) * sizeof(T));
      const int8_t* px = x->GetData<int8_t>();
      const int8_t* pf = wf->GetData<int8_t>();
      const T* pt = wt->GetData<T>();
      for (int64_t n = 0; n < batch; ++n)
        for (int64_t f = 0; f < filters; ++f) {
          int32_t acc = 0;
          for (int64_t c = 0; c < input_size; ++c) acc += int32_t(pf[f * input_size + c]) * (int32_t(px[n * input_size + c]) - in.zp);
          int32_t v = std::min(std::max(tfl::MultiplyByQuantizedMultiplier(acc, m1, s1), tfl::QMin<T>()), tfl::QMax<T>());
          // Clamped before the zero point is added, and stored modulo 2^bits, as the reference does.
          state[(n * filters + f) * memory + memory - 1] = static_cast<T>(static_cast<uint32_t>(v + sq.zp));
        }
      int8_t* py = y->GetData<int8_t>();
      for (int64_t n = 0; n < batch; ++n)
        for (int64_t u = 0; u < units; ++u) {
          // int32 arithmetic that wraps as TFLite's does (computed unsigned: no undefined overflow).
          uint32_t out = b ? static_cast<uint32_t>(b->GetData<int32_t>()[u]) : 0u;
          for (int64_t r = 0; r < rank; ++r) {
            const int64_t f = u * rank + r;
            const T* mem = state + (n * filters + f) * memory;
            uint32_t dot = 0;
            for (int64_t t = 0; t < memory; ++t) dot += static_cast<uint32_t>(int32_t(pt[f * memory + t]) * (int32_t(mem[t]) - sq.zp));
            out += dot;
          }
          int32_t v = tfl::MultiplyByQuantizedMultiplier(static_cast<int32_t>(out), m2, s2) + o.zp;
          py[n * units + u] = tfl::Saturate<int8_t>(v);
        }
      return GRAPH_SUCCESS;
    };
    return st == DT_INT16 ? run(int16_t()) : run(int8_t());
  }
};

// y[0, n) += s * w[0, n): the row-times-vector step of the float LSTM's gate products, written so
// that it vectorizes (no reduction).
WEFT_VMATH_CLONES void AxpyRow(float* __restrict y, const float* __restrict w, float s, int64_t n) {
  for (int64_t j = 0; j < n; ++j) y[j] += s * w[j];
}

// One float LSTM cell update with tanh activations over n cells: gates (pre-activation) in g
// as [input | forget | cell | output], peepholes as arrays (zeros when absent), c updated in
// place, m = o * tanh(c).
WEFT_VMATH_CLONES void LstmTanhCell(const float* __restrict g, const float* __restrict pi, const float* __restrict pf,
                                    const float* __restrict po, float* __restrict c, float* __restrict m, int64_t n, int cifg, float clip) {
  // Branch-free so that it vectorizes: CIFG as a 0/1 blend (exact: one term is 0 * a finite
  // number), no clip as an infinite one; no std::min/max (they would not inline into the clones).
  const float k = cifg ? 1.f : 0.f;
  const float bound = clip > 0.f ? clip : std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < n; ++j) {
    const float f = vmath::Sigmoid(g[n + j] + pf[j] * c[j]);
    const float i = k * (1.f - f) + (1.f - k) * vmath::Sigmoid(g[j] + pi[j] * c[j]);
    float cn = c[j] * f + i * vmath::Tanh(g[2 * n + j]);
    cn = cn < -bound ? -bound : cn;
    cn = cn > bound ? bound : cn;
    c[j] = cn;
    const float o = vmath::Sigmoid(g[3 * n + j] + po[j] * cn);
    m[j] = o * vmath::Tanh(cn);
  }
}

// UNIDIRECTIONAL_SEQUENCE_LSTM, float: an LSTM over a sequence ([batch, time, input], or [time,
// batch, input] with time_major), with optional CIFG (no input gate: i = 1 - f), peepholes,
// projection, cell and projection clipping. The output state h and the cell state c (LiteRT's
// variable tensors, inputs 18 and 19 of the operator) live in the node's per-run-context memory:
// zero at first, carried from one run to the next. Inputs here, in the operator's order without
// the two states: input; input_to_{input,forget,cell,output}_weights [cell, input];
// recurrent_to_{...}_weights [cell, output]; cell_to_{input,forget,output}_weights [cell];
// {input,forget,cell,output}_gate_bias [cell]; projection_weights [output, cell];
// projection_bias [output]; four layer-norm coefficient vectors (not supported).
class TflUnidirectionalSequenceLstm : public EagerExecuteOp, public ShapeInferOp, public EmittableOp {
 public:
  enum { kX, kWxi, kWxf, kWxc, kWxo, kWhi, kWhf, kWhc, kWho, kPi, kPf, kPo, kBi, kBf, kBc, kBo, kProj, kProjBias, kLn0 };
  // Float: weft_lstm_f32 with the states (h, c) in the node's state struct, zero after
  // <prefix>_init as in a new run context; arena scratch only for a projection's input.
  // The float LSTM's inputs: all float32, no layer norm.
  static bool FloatInputsSupported(const KernelContextBase* ctx) {
    for (size_t k = kWxi; k < kLn0 + 4; ++k) {
      const Tensor* t = ctx->GetOptionalInputTensor(k);
      if (t && t->GetDataType() != DT_FLOAT)
        return Fail(ctx, "input " + std::to_string(k) + " must be float32 (" + DataTypeName(t->GetDataType()) + " here; a hybrid LSTM has a float input and int8 weights)"), false;
    }
    // Layer norm: a coefficient vector for every gate there is (CIFG: none for the input gate).
    const bool cifg = !ctx->GetOptionalInputTensor(kWxi);
    int present = 0;
    for (size_t k = kLn0; k < kLn0 + 4; ++k) present += ctx->GetOptionalInputTensor(k) ? 1 : 0;
    if (present && (present != (cifg ? 3 : 4) || (cifg && ctx->GetOptionalInputTensor(kLn0))))
      return Fail(ctx, "a layer-normalized LSTM needs one layer-norm coefficient vector per gate (" + std::string(cifg ? "forget, cell and output with CIFG" : "input, forget, cell and output") +
                           "); " + std::to_string(present) + " given"),
             false;
    return true;
  }
  static bool LayerNorm(const KernelContextBase* ctx) { return ctx->GetOptionalInputTensor(kLn0 + 1) != nullptr; }
  // The cell activation (fused_activation_function) as a function, or nullptr when unsupported.
  static float (*CellActivation(const std::string& act))(float) {
    if (act == "TANH") return [](float v) { return std::tanh(v); };
    if (act == "RELU") return [](float v) { return std::max(v, 0.f); };
    if (act == "RELU6") return [](float v) { return std::min(std::max(v, 0.f), 6.f); };
    if (act == "RELU_N1_TO_1") return [](float v) { return std::min(std::max(v, -1.f), 1.f); };
    if (act == "NONE") return [](float v) { return v; };
    return nullptr;
  }

  // The per-cell vectors (peepholes, biases, layer-norm coefficients) hold one value per cell, and
  // a layer-normalized LSTM has coefficients for every gate it has.
  static bool GateVectorsFit(const KernelContextBase* ctx, int64_t cell) {
    const bool cifg = !ctx->GetOptionalInputTensor(kWxi);
    int present = 0;
    for (size_t k = kLn0; k < kLn0 + 4; ++k) present += ctx->GetOptionalInputTensor(k) ? 1 : 0;
    if (present && (present != (cifg ? 3 : 4) || (cifg && ctx->GetOptionalInputTensor(kLn0))))
      return Fail(ctx, "a layer-normalized LSTM needs one layer-norm coefficient vector per gate (" +
                           std::string(cifg ? "forget, cell and output with CIFG" : "input, forget, cell and output") + "); " + std::to_string(present) +
                           " given"),
             false;
    for (size_t k : {size_t(kPi), size_t(kPf), size_t(kPo), size_t(kBi), size_t(kBf), size_t(kBc), size_t(kBo), size_t(kLn0), size_t(kLn0 + 1),
                     size_t(kLn0 + 2), size_t(kLn0 + 3)}) {
      const Tensor* t = ctx->GetOptionalInputTensor(k);
      if (t && t->GetShapeSize() != cell)
        return Fail(ctx, "input " + std::to_string(k) + " holds " + std::to_string(t->GetShapeSize()) + " values, not one per cell (" +
                             std::to_string(cell) + ")"),
               false;
    }
    return true;
  }
  // TFLite's mean/stddev normalization of one gate's cells, then its coefficients and bias.
  static void NormalizeGate(float* v, int64_t n, const float* coef, const float* bias) {
    float sum = 0.f;
    for (int64_t j = 0; j < n; ++j) sum += v[j];
    const float mean = sum / static_cast<float>(n);
    float sq = 0.f;
    for (int64_t j = 0; j < n; ++j) {
      const float d = v[j] - mean;
      sq += d * d;
    }
    const float inv = 1.f / std::sqrt(sq / static_cast<float>(n) + 1e-8f);
    for (int64_t j = 0; j < n; ++j) v[j] = (v[j] - mean) * inv * coef[j] + (bias ? bias[j] : 0.f);
  }
  graphStatus Emit(EmitContext* ctx) override {
    const Tensor* x = ctx->GetRequiredInputTensor(kX);
    if (ctx->GetOutputTensor(0)->GetShapeSize() == 0) return GRAPH_SUCCESS;  // as Execute: nothing to run, no state
    if (x->GetDataType() == DT_INT8) return EmitInteger(ctx, x);
    if (Hybrid(ctx)) return EmitHybrid(ctx, x);
    if (!FloatInputsSupported(ctx)) return GRAPH_FAILED;
    const bool time_major = [&] { const bool* b = ctx->GetAttrs()->GetBool("time_major"); return b && *b; }();
    const char* act_s = ctx->GetAttrs()->GetStr("fused_activation_function");
    const std::string act = act_s ? act_s : "TANH";
    const int act_code = act == "NONE" ? 0 : act == "RELU" ? 1 : act == "RELU6" ? 2 : act == "RELU_N1_TO_1" ? 3 : act == "TANH" ? 4 : -1;
    if (act_code < 0) return Fail(ctx, "activation " + act + " is not supported");
    const float* cell_clip = ctx->GetAttrs()->GetFloat("cell_clip");
    const float* proj_clip = ctx->GetAttrs()->GetFloat("proj_clip");
    const Shape& xs = x->GetShape();
    const int64_t batch = time_major ? xs.GetDim(1) : xs.GetDim(0), steps = time_major ? xs.GetDim(0) : xs.GetDim(1);
    const int64_t in = xs.GetDim(2);
    const int64_t cell = ctx->GetRequiredInputTensor(kWxo)->GetShape().GetDim(0), out = ctx->GetRequiredInputTensor(kWho)->GetShape().GetDim(1);
    for (int64_t v : {batch, steps, in, cell, out})
      if (v > INT32_MAX / 8) return Fail(ctx, "too large for the generated C");
    const bool cifg = !ctx->GetOptionalInputTensor(kWxi);
    if (cifg != !ctx->GetOptionalInputTensor(kWhi)) return Fail(ctx, "input_to_input_weights and recurrent_to_input_weights must be both present or both absent (CIFG)");
    auto ptr = [&](int k) { return ctx->GetOptionalInputTensor(static_cast<size_t>(k)) ? ctx->Input(aot::InputAt(ctx, static_cast<size_t>(k)), "float") : std::string("0"); };
    ctx->Include("<string.h>");
    ctx->DeclareState("float h[" + std::to_string(batch * out) + "];\nfloat c[" + std::to_string(batch * cell) + "];\n");
    const bool ln = LayerNorm(ctx);
    aot::EmitHelper(ctx, kTflKernels, "weft_lstm_f32");
    const bool proj = ctx->GetOptionalInputTensor(kProj) != nullptr;
    // scratch: the gated output before a projection; with layer norm, the four gates' sums first
    const int64_t scratch = (ln ? 4 * cell : 0) + (proj ? cell : 0);
    std::string gate = scratch ? "(float*)(void*)" + ctx->Scratch(static_cast<size_t>(scratch) * sizeof(float)) : std::string("0");
    std::ostringstream r;
    r << "{\n  weft_lstm_f32_args a;\n  a.batch = " << batch << ";\n  a.steps = " << steps << ";\n  a.in = " << in << ";\n  a.cell = " << cell
      << ";\n  a.out = " << out << ";\n  a.time_major = " << (time_major ? 1 : 0) << ";\n  a.cifg = " << (cifg ? 1 : 0) << ";\n  a.act = " << act_code
      << ";\n  a.cell_clip = " << aot::FloatLit(cell_clip ? *cell_clip : 0.f) << ";\n  a.proj_clip = " << aot::FloatLit(proj_clip ? *proj_clip : 0.f)
      << ";\n";
    const int wx[4] = {kWxi, kWxf, kWxc, kWxo}, wh[4] = {kWhi, kWhf, kWhc, kWho}, bias[4] = {kBi, kBf, kBc, kBo}, peep[4] = {kPi, kPf, -1, kPo};
    for (int g = 0; g < 4; ++g) {
      r << "  a.wx[" << g << "] = " << ptr(wx[g]) << ";\n  a.wh[" << g << "] = " << ptr(wh[g]) << ";\n  a.bias[" << g << "] = " << ptr(bias[g])
        << ";\n  a.peep[" << g << "] = " << (peep[g] < 0 ? std::string("0") : ptr(peep[g])) << ";\n";
    }
    for (int g = 0; g < 4; ++g) r << "  a.ln[" << g << "] = " << (ln ? ptr(kLn0 + g) : std::string("0")) << ";\n";
    r << "  a.proj = " << ptr(kProj) << ";\n  a.proj_bias = " << ptr(kProjBias) << ";\n  weft_lstm_f32(&a, " << ctx->Input(0, "float") << ", "
      << ctx->Output(0, "float") << ", " << ctx->State() << "->h, " << ctx->State() << "->c, " << gate << ");\n}\n";
    ctx->Run(r.str());
    return GRAPH_SUCCESS;
  }
  // Hybrid: weft_lstm_hybrid, ExecuteHybrid's arithmetic; the peepholes' weights as float
  // constants (int8 * scale, as ExecuteHybrid forms them), the states in the node's state struct.
  graphStatus EmitHybrid(EmitContext* ctx, const Tensor* x) {
    const bool time_major = [&] { const bool* b = ctx->GetAttrs()->GetBool("time_major"); return b && *b; }();
    const bool asym = [&] { const bool* b = ctx->GetAttrs()->GetBool("asymmetric_quantize_inputs"); return b && *b; }();
    const char* act_s = ctx->GetAttrs()->GetStr("fused_activation_function");
    const std::string act = act_s ? act_s : "TANH";
    const int act_code = act == "NONE" ? 0 : act == "RELU" ? 1 : act == "RELU6" ? 2 : act == "RELU_N1_TO_1" ? 3 : act == "TANH" ? 4 : -1;
    if (act_code < 0) return Fail(ctx, "activation " + act + " is not supported");
    if (ListView<float>(ctx->GetAttrs()->GetListFloat("channel_scales")).size() > 0)
      return Fail(ctx, "a hybrid LSTM's weights take one scale each, not channel scales");
    const Shape& xs = x->GetShape();
    const int64_t batch = time_major ? xs.GetDim(1) : xs.GetDim(0), steps = time_major ? xs.GetDim(0) : xs.GetDim(1), in = xs.GetDim(2);
    const int64_t cell = ctx->GetRequiredInputTensor(kWxo)->GetShape().GetDim(0), out = ctx->GetRequiredInputTensor(kWho)->GetShape().GetDim(1);
    for (int64_t v : {batch, steps, in, cell, out})
      if (v > INT32_MAX / 8) return Fail(ctx, "too large for the generated C");
    if (!GateVectorsFit(ctx, cell)) return GRAPH_FAILED;
    const bool cifg = !ctx->GetOptionalInputTensor(kWxi);
    if (cifg != !ctx->GetOptionalInputTensor(kWhi)) return Fail(ctx, "input_to_input_weights and recurrent_to_input_weights must be both present or both absent (CIFG)");
    auto present = [&](int k) { return ctx->GetOptionalInputTensor(static_cast<size_t>(k)) != nullptr; };
    for (int k : {int(kWxi), int(kWxf), int(kWxc), int(kWxo), int(kWhi), int(kWhf), int(kWhc), int(kWho), int(kPi), int(kPf), int(kPo), int(kProj)})
      if (present(k) && (ctx->GetOptionalInputTensor(static_cast<size_t>(k))->GetDataType() != DT_INT8 || !InputQuant(ctx, static_cast<size_t>(k)).quantized()))
        return Fail(ctx, "input " + std::to_string(k) + " of a hybrid LSTM must be int8 with a scale");
    for (int k : {int(kBi), int(kBf), int(kBc), int(kBo), int(kProjBias), int(kLn0), kLn0 + 1, kLn0 + 2, kLn0 + 3})
      if (present(k) && ctx->GetOptionalInputTensor(static_cast<size_t>(k))->GetDataType() != DT_FLOAT)
        return Fail(ctx, "input " + std::to_string(k) + " of a hybrid LSTM must be float32");
    for (int g = cifg ? 1 : 0; g < 4; ++g)
      if (!present(kBi + g)) return Fail(ctx, "a hybrid LSTM needs a bias for every gate it has");
    auto f32 = [&](int k) { return present(k) ? ctx->Input(aot::InputAt(ctx, static_cast<size_t>(k)), "float") : std::string("0"); };
    auto i8 = [&](int k) { return present(k) ? ctx->Input(aot::InputAt(ctx, static_cast<size_t>(k)), "int8_t") : std::string("0"); };
    auto sc = [&](int k) { return aot::FloatLit(present(k) ? InputQuant(ctx, static_cast<size_t>(k)).scale : 0.f); };
    const bool ln = LayerNorm(ctx);
    ctx->Include("<string.h>");
    ctx->Include("<math.h>");
    ctx->DeclareState("float h[" + std::to_string(batch * out) + "];\nfloat c[" + std::to_string(batch * cell) + "];\n");
    aot::EmitHelper(ctx, kTflKernels, "weft_lstm_hybrid");
    const std::string gate = ctx->Scratch(static_cast<size_t>(5 * cell) * sizeof(float));
    const std::string q = ctx->Scratch(static_cast<size_t>(in + out + cell + 1));
    std::ostringstream r;
    r << "{\n  weft_lstm_hybrid_args a;\n  a.batch = " << batch << ";\n  a.steps = " << steps << ";\n  a.in = " << in << ";\n  a.cell = " << cell
      << ";\n  a.out = " << out << ";\n  a.time_major = " << (time_major ? 1 : 0) << ";\n  a.cifg = " << (cifg ? 1 : 0) << ";\n  a.asym = " << (asym ? 1 : 0)
      << ";\n  a.act = " << act_code << ";\n  a.cell_clip = "
      << aot::FloatLit(ctx->GetAttrs()->GetFloat("cell_clip") ? *ctx->GetAttrs()->GetFloat("cell_clip") : 0.f) << ";\n  a.proj_clip = "
      << aot::FloatLit(ctx->GetAttrs()->GetFloat("proj_clip") ? *ctx->GetAttrs()->GetFloat("proj_clip") : 0.f) << ";\n";
    const int wx[4] = {kWxi, kWxf, kWxc, kWxo}, wh[4] = {kWhi, kWhf, kWhc, kWho}, bias[4] = {kBi, kBf, kBc, kBo}, peep[4] = {kPi, kPf, -1, kPo};
    for (int g = 0; g < 4; ++g) {
      std::string pp = "0";
      if (peep[g] >= 0 && present(peep[g])) {
        const Tensor* t = ctx->GetOptionalInputTensor(static_cast<size_t>(peep[g]));
        if (!t->GetData<int8_t>()) return Fail(ctx, "a hybrid LSTM's peephole weights must be constants for the generated C");
        std::vector<float> w(static_cast<size_t>(cell));
        const float s = InputQuant(ctx, static_cast<size_t>(peep[g])).scale;
        for (int64_t j = 0; j < cell; ++j) w[static_cast<size_t>(j)] = static_cast<float>(t->GetData<int8_t>()[j]) * s;
        pp = ctx->Const("peephole", DT_FLOAT, w);
      }
      r << "  a.wx[" << g << "] = " << i8(wx[g]) << ";\n  a.wh[" << g << "] = " << i8(wh[g]) << ";\n  a.sx[" << g << "] = " << sc(wx[g])
        << ";\n  a.sh[" << g << "] = " << sc(wh[g]) << ";\n  a.bias[" << g << "] = " << f32(bias[g]) << ";\n  a.peep[" << g << "] = " << pp
        << ";\n  a.ln[" << g << "] = " << (ln ? f32(kLn0 + g) : std::string("0")) << ";\n";
    }
    r << "  a.proj = " << i8(kProj) << ";\n  a.s_proj = " << sc(kProj) << ";\n  a.proj_bias = " << f32(kProjBias) << ";\n  weft_lstm_hybrid(&a, "
      << ctx->Input(0, "float") << ", " << ctx->Output(0, "float") << ", " << ctx->State() << "->h, " << ctx->State() << "->c, (float*)(void*)" << gate
      << ", (int8_t*)(void*)" << q << ");\n}\n";
    ctx->Run(r.str());
    return GRAPH_SUCCESS;
  }

  // Integer: weft_lstm_q with the constants of PlanInteger/FoldInteger (the folded biases as
  // arrays), the states in the node's state struct, set to their zero points by the node's init.
  graphStatus EmitInteger(EmitContext* ctx, const Tensor* x) {
    IntPlan p;
    if (!PlanInteger(ctx, x, &p)) return GRAPH_FAILED;
    for (int64_t v : {p.batch, p.steps, p.n_in, p.n_cell, p.n_out})
      if (v > INT32_MAX / 8) return Fail(ctx, "too large for the generated C");
    std::vector<int32_t> folded(p.FoldedInts());
    FoldInteger(ctx, folded.data(), &p);
    auto ptr = [&](int k, const char* ct) {
      return ctx->GetOptionalInputTensor(static_cast<size_t>(k)) ? ctx->Input(aot::InputAt(ctx, static_cast<size_t>(k)), ct) : std::string("0");
    };
    auto folded_const = [&](const int32_t* v, int64_t n, const char* hint) {
      return v ? ctx->Const(hint, DT_INT32, v, static_cast<size_t>(n)) : std::string("0");
    };
    const int64_t cells = p.batch * p.n_cell, outs = p.batch * p.n_out, nb_max = p.time_major ? p.batch : 1;
    ctx->Include("<string.h>");
    ctx->DeclareState("int8_t h[" + std::to_string(outs) + "];\nint16_t c[" + std::to_string(cells) + "];\n");
    ctx->Init("{\n  int32_t i;\n  for (i = 0; i < " + std::to_string(outs) + "; ++i) " + ctx->State() + "->h[i] = (int8_t)" + aot::IntLit(p.hq.zp) +
              ";\n  for (i = 0; i < " + std::to_string(cells) + "; ++i) " + ctx->State() + "->c[i] = (int16_t)" + aot::IntLit(p.cq.zp) + ";\n}\n");
    aot::EmitHelper(ctx, kTflKernels, "weft_lstm_q");
    std::string gate = ctx->Scratch(static_cast<size_t>((p.proj ? 5 : 4) * nb_max * p.n_cell) * sizeof(int16_t));
    std::ostringstream r;
    r << "{\n  weft_lstm_q_args a;\n  a.batch = " << p.batch << ";\n  a.steps = " << p.steps << ";\n  a.n_in = " << p.n_in << ";\n  a.n_cell = "
      << p.n_cell << ";\n  a.n_out = " << p.n_out << ";\n  a.time_major = " << (p.time_major ? 1 : 0) << ";\n  a.cifg = " << (p.cifg ? 1 : 0)
      << ";\n  a.cell_scale = " << p.cell_scale << ";\n  a.hidden_zp = " << aot::IntLit(p.hidden_zp) << ";\n  a.h_zp = " << aot::IntLit(p.hq.zp)
      << ";\n  a.cell_clip = " << p.cell_clip << ";\n  a.proj_clip = " << static_cast<int>(p.proj_clip) << ";\n";
    const int wx[4] = {kWxi, kWxf, kWxc, kWxo}, wh[4] = {kWhi, kWhf, kWhc, kWho}, peep[4] = {kPi, kPf, -1, kPo};
    for (int g = 0; g < 4; ++g) {
      const IntGate& G = p.gates[g];
      const bool on = !(g == 0 && p.cifg);
      r << "  a.gates[" << g << "].wx = " << (on ? ptr(wx[g], "int8_t") : "0") << ";\n  a.gates[" << g << "].wh = " << (on ? ptr(wh[g], "int8_t") : "0")
        << ";\n  a.gates[" << g << "].peep = " << (on && peep[g] >= 0 && G.peep ? ptr(peep[g], "int16_t") : "0") << ";\n  a.gates[" << g
        << "].bx = " << (on ? folded_const(G.bx, p.n_cell, "bx") : "0") << ";\n  a.gates[" << g << "].bh = "
        << (on ? folded_const(G.bh, p.n_cell, "bh") : "0") << ";\n  a.gates[" << g << "].mx = " << aot::IntLit(G.mx.m) << ";\n  a.gates[" << g
        << "].sx = " << G.mx.s << ";\n  a.gates[" << g << "].mh = " << aot::IntLit(G.mh.m) << ";\n  a.gates[" << g << "].sh = " << G.mh.s
        << ";\n  a.gates[" << g << "].mc = " << aot::IntLit(G.mc.m) << ";\n  a.gates[" << g << "].sc = " << G.mc.s << ";\n";
    }
    r << "  a.proj = " << (p.proj ? ptr(kProj, "int8_t") : "0") << ";\n  a.proj_bias = " << folded_const(p.proj_bias, p.n_out, "proj_bias")
      << ";\n  a.m_proj = " << aot::IntLit(p.m_proj.m) << ";\n  a.s_proj = " << p.m_proj.s << ";\n  a.m_hidden = " << aot::IntLit(p.m_hidden.m)
      << ";\n  a.s_hidden = " << p.m_hidden.s << ";\n  weft_lstm_q(&a, " << ctx->Input(0, "int8_t") << ", " << ctx->Output(0, "int8_t") << ", "
      << ctx->State() << "->h, " << ctx->State() << "->c, (int16_t*)(void*)" << gate << ");\n}\n";
    ctx->Run(r.str());
    return GRAPH_SUCCESS;
  }

  graphStatus InferShape(InferShapeContext* ctx) override {
    const Shape& x = *ctx->GetOptionalInputShape(kX);
    const Shape& wxo = *ctx->GetOptionalInputShape(kWxo);
    const Shape& who = *ctx->GetOptionalInputShape(kWho);
    // LiteRT's clips: 0 is none; a negative or NaN one is not a bound (LiteRT refuses negatives).
    for (const char* clip : {"cell_clip", "proj_clip"}) {
      const float* v = ctx->GetAttrs()->GetFloat(clip);
      if (v && !(*v >= 0.f)) return Fail(ctx, std::string(clip) + " is " + std::to_string(*v) + "; it must be 0 (no clipping) or positive");
    }
    if (x.GetDimNum() != 3) return Fail(ctx, "the input must be 3-D, not " + x.ToString());
    if (wxo.GetDimNum() != 2 || who.GetDimNum() != 2 || who.GetDim(0) != wxo.GetDim(0))
      return Fail(ctx, "input_to_output_weights " + wxo.ToString() + " and recurrent_to_output_weights " + who.ToString() +
                           " must be [cell, input] and [cell, output]");
    if (x.GetDim(2) >= 0 && wxo.GetDim(1) != x.GetDim(2))
      return Fail(ctx, "input_to_output_weights " + wxo.ToString() + " does not match the input " + x.ToString());
    const int64_t cell = wxo.GetDim(0), in = wxo.GetDim(1), out = who.GetDim(1);
    auto check = [&](int k, const char* name, Shape want, bool optional) -> bool {
      const Shape* s = ctx->GetOptionalInputShape(static_cast<size_t>(k));
      if (!s) return optional || (Fail(ctx, std::string(name) + " is missing"), false);
      if (*s != want)
        return Fail(ctx, std::string(name) + " is " + s->ToString() + ", not " + want.ToString() + " (the cell, input and output sizes " +
                             "come from input_to_output_weights " + wxo.ToString() + " and recurrent_to_output_weights " + who.ToString() + ")"),
               false;
      return true;
    };
    bool ok = check(kWxi, "input_to_input_weights", Shape({cell, in}), true) && check(kWxf, "input_to_forget_weights", Shape({cell, in}), false) &&
              check(kWxc, "input_to_cell_weights", Shape({cell, in}), false) && check(kWhi, "recurrent_to_input_weights", Shape({cell, out}), true) &&
              check(kWhf, "recurrent_to_forget_weights", Shape({cell, out}), false) && check(kWhc, "recurrent_to_cell_weights", Shape({cell, out}), false) &&
              check(kPi, "cell_to_input_weights", Shape({cell}), true) && check(kPf, "cell_to_forget_weights", Shape({cell}), true) &&
              check(kPo, "cell_to_output_weights", Shape({cell}), true) && check(kBi, "input_gate_bias", Shape({cell}), true) &&
              check(kBf, "forget_gate_bias", Shape({cell}), false) && check(kBc, "cell_gate_bias", Shape({cell}), false) &&
              check(kBo, "output_gate_bias", Shape({cell}), false) && check(kProj, "projection_weights", Shape({out, cell}), true) &&
              check(kProjBias, "projection_bias", Shape({out}), true);
    if (!ok) return GRAPH_FAILED;
    if (!ctx->GetOptionalInputShape(kProj) && out != cell)
      return Fail(ctx, "without projection_weights the output size (" + std::to_string(out) + ") must equal the cell size (" + std::to_string(cell) + ")");
    *ctx->GetOutputShape(0) = Shape({x.GetDim(0), x.GetDim(1), out});
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override {
    DataType t = ctx->GetInputDataType(0);
    if (t != DT_FLOAT && t != DT_INT8)
      return Fail(ctx, "the input must be float32, or int8 (the integer 8x8->16 LSTM), not " + std::string(DataTypeName(t)));
    if (t == DT_INT8 && ListView<float>(ctx->GetAttrs()->GetListFloat("intermediate_scale")).size() != 5)
      return Fail(ctx, "the integer LSTM needs its 5 intermediate tensors (gate and hidden scales); the 8x8->8 form is not supported");
    return SetRecordedOutputType(ctx, 0);
  }
  // Whether the node is a hybrid LSTM: float activations, int8 weights (dynamic-range quantized).
  static bool Hybrid(const KernelContextBase* ctx) {
    const Tensor* x = ctx->GetOptionalInputTensor(kX);
    const Tensor* w = ctx->GetOptionalInputTensor(kWxo);
    return x && w && x->GetDataType() == DT_FLOAT && w->GetDataType() == DT_INT8;
  }

  // LiteRT's hybrid LSTM step, for each batch row and step in turn: the input row and the
  // previous output are quantized to int8 (QuantizeHybridInput; asymmetric with
  // asymmetric_quantize_inputs), each skipped when it is all zeros. Per gate: the bias (0 with layer
  // norm), plus each int32 product times (row scale * weight scale), plus the peephole (int8
  // weight * its scale, times the cell state), then layer norm, coefficients and bias, and the
  // activation (sigmoid; the cell gate: fused_activation_function). The cell state is
  // f * c + g * i (CIFG: g * (1 - f)), clipped; the output gate's peephole reads the new cell
  // state. The output o * act(c) is quantized again for an int8 projection (projection bias first,
  // then clip). Weights are int8 with one scale each; biases and layer-norm coefficients float.
  graphStatus ExecuteHybrid(EagerOpExecutionContext* ctx, const Tensor* x) {
    const bool time_major = [&] { const bool* b = ctx->GetAttrs()->GetBool("time_major"); return b && *b; }();
    const bool asym = [&] { const bool* b = ctx->GetAttrs()->GetBool("asymmetric_quantize_inputs"); return b && *b; }();
    const char* act_s = ctx->GetAttrs()->GetStr("fused_activation_function");
    const std::string act = act_s ? act_s : "TANH";
    float (*activate)(float) = CellActivation(act);
    if (!activate) return Fail(ctx, "activation " + act + " is not supported");
    if (ListView<float>(ctx->GetAttrs()->GetListFloat("channel_scales")).size() > 0)
      return Fail(ctx, "a hybrid LSTM's weights take one scale each, not channel scales");
    const int weights[] = {kWxi, kWxf, kWxc, kWxo, kWhi, kWhf, kWhc, kWho, kPi, kPf, kPo, kProj};
    for (int k : weights) {
      const Tensor* t = ctx->GetOptionalInputTensor(static_cast<size_t>(k));
      if (t && (t->GetDataType() != DT_INT8 || !InputQuant(ctx, static_cast<size_t>(k)).quantized()))
        return Fail(ctx, "input " + std::to_string(k) + " of a hybrid LSTM (float input, int8 weights) must be int8 with a scale, not " +
                             DataTypeName(t->GetDataType()) + (t->GetDataType() == DT_INT8 ? " without one" : ""));
    }
    for (int k : {int(kBi), int(kBf), int(kBc), int(kBo), int(kProjBias), int(kLn0), kLn0 + 1, kLn0 + 2, kLn0 + 3}) {
      const Tensor* t = ctx->GetOptionalInputTensor(static_cast<size_t>(k));
      if (t && t->GetDataType() != DT_FLOAT)
        return Fail(ctx, "input " + std::to_string(k) + " of a hybrid LSTM (a bias or layer-norm coefficients) must be float32, not " +
                             DataTypeName(t->GetDataType()));
    }
    const float* cell_clip = ctx->GetAttrs()->GetFloat("cell_clip");
    const float* proj_clip = ctx->GetAttrs()->GetFloat("proj_clip");
    const float cclip = cell_clip ? *cell_clip : 0.f, pclip = proj_clip ? *proj_clip : 0.f;
    const Shape& xs = x->GetShape();
    const int64_t batch = time_major ? xs.GetDim(1) : xs.GetDim(0), steps = time_major ? xs.GetDim(0) : xs.GetDim(1), in = xs.GetDim(2);
    const int64_t cell = ctx->GetRequiredInputTensor(kWxo)->GetShape().GetDim(0), out = ctx->GetRequiredInputTensor(kWho)->GetShape().GetDim(1);
    if (!GateVectorsFit(ctx, cell)) return GRAPH_FAILED;
    Tensor* y = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), DT_FLOAT);
    if (!y) return GRAPH_FAILED;
    if (y->GetShapeSize() == 0) return GRAPH_SUCCESS;  // no steps, batch rows or outputs: nothing to run or keep
    auto i8 = [&](int k) -> const int8_t* {
      const Tensor* t = ctx->GetOptionalInputTensor(static_cast<size_t>(k));
      return t ? t->GetData<int8_t>() : nullptr;
    };
    auto f32 = [&](int k) -> const float* {
      const Tensor* t = ctx->GetOptionalInputTensor(static_cast<size_t>(k));
      return t ? t->GetData<float>() : nullptr;
    };
    auto scale = [&](int k) { return InputQuant(ctx, static_cast<size_t>(k)).scale; };
    const int wxk[4] = {kWxi, kWxf, kWxc, kWxo}, whk[4] = {kWhi, kWhf, kWhc, kWho}, bk[4] = {kBi, kBf, kBc, kBo}, pk[4] = {kPi, kPf, -1, kPo};
    const int8_t *wx[4], *wh[4], *peep[4];
    const float *bias[4], *lnc[4];
    float sx[4], sh[4], sp[4];
    for (int g = 0; g < 4; ++g) {
      wx[g] = i8(wxk[g]), wh[g] = i8(whk[g]), bias[g] = f32(bk[g]), lnc[g] = f32(kLn0 + g);
      peep[g] = pk[g] < 0 ? nullptr : i8(pk[g]);
      sx[g] = wx[g] ? scale(wxk[g]) : 0.f, sh[g] = wh[g] ? scale(whk[g]) : 0.f, sp[g] = peep[g] ? scale(pk[g]) : 0.f;
    }
    const int8_t* proj = i8(kProj);
    const float* proj_bias = f32(kProjBias);
    const float s_proj = proj ? scale(kProj) : 0.f;
    const bool cifg = !wx[0];
    if (cifg != !wh[0]) return Fail(ctx, "input_to_input_weights and recurrent_to_input_weights must be both present or both absent (CIFG)");
    if (!wh[1] || !wh[2] || !wx[1] || !wx[2]) return Fail(ctx, "the forget and cell gates need their input and recurrent weights");
    const bool ln = LayerNorm(ctx);
    for (int g = cifg ? 1 : 0; g < 4; ++g)
      if (!bias[g]) return Fail(ctx, "a hybrid LSTM needs a bias for every gate it has");
    auto* state = static_cast<float*>(ctx->GetHostArgs(static_cast<size_t>(batch * (out + cell)) * sizeof(float)));
    auto* gate = static_cast<float*>(ctx->MallocWorkSpace(static_cast<size_t>(5 * cell + 3 * cell) * sizeof(float)));
    auto* q = static_cast<int8_t*>(ctx->MallocWorkSpace(static_cast<size_t>(in + out + cell + 3)));
    if (!state || !gate || !q) return GRAPH_FAILED;
    float* m = gate + 4 * cell;  // o * act(c), before the projection
    float* rp = m + cell;        // the peepholes' weights as floats (int8 * scale)
    for (int g = 0; g < 4; ++g)
      if (peep[g])
        for (int64_t j = 0; j < cell; ++j) rp[(g == 3 ? 2 : g) * cell + j] = static_cast<float>(peep[g][j]) * sp[g];
    int8_t *qx = q, *qh = q + in, *qm = qh + out;
    const float* px = x->GetData<float>();
    float* py = y->GetData<float>();
    auto all_zero = [](const float* v, int64_t n) {
      for (int64_t k = 0; k < n; ++k)
        if (v[k] != 0.f) return false;
      return true;
    };
    // gate[j] += (sum_k w[j][k] * (q[k] - off)) * (row scale * weight scale)
    auto accumulate = [](float* g, const int8_t* w, const int8_t* qv, int64_t rows, int64_t n, HybridScale hs, float ws) {
      const float f = hs.scale * ws;
      for (int64_t j = 0; j < rows; ++j) {
        int32_t dot = 0;
        const int8_t* r = w + j * n;
        for (int64_t k = 0; k < n; ++k) dot += static_cast<int32_t>(r[k]) * (static_cast<int32_t>(qv[k]) - hs.offset);
        g[j] += static_cast<float>(dot) * f;
      }
    };
    auto sigmoid = [](float v) { return 1.f / (1.f + std::exp(-v)); };
    for (int64_t b = 0; b < batch; ++b) {
      float* h = state + b * out;
      float* c = state + batch * out + b * cell;
      for (int64_t t = 0; t < steps; ++t) {
        const int64_t row = time_major ? t * batch + b : b * steps + t;
        const float* xt = px + row * in;
        const bool xz = all_zero(xt, in), hz = all_zero(h, out);
        HybridScale hx, hh;
        if (!xz) hx = QuantizeHybridInput(nullptr, xt, in, asym, qx);
        if (!hz) hh = QuantizeHybridInput(nullptr, h, out, asym, qh);
        // One gate up to its activation; peep_c: the cell state its peephole reads.
        auto compute = [&](int g, const float* peep_c, bool tanh_like) {
          float* a = gate + g * cell;
          for (int64_t j = 0; j < cell; ++j) a[j] = ln ? 0.f : bias[g][j];
          if (!xz) accumulate(a, wx[g], qx, cell, in, hx, sx[g]);
          if (!hz) accumulate(a, wh[g], qh, cell, out, hh, sh[g]);
          if (peep[g]) {
            const float* w = rp + (g == 3 ? 2 : g) * cell;
            for (int64_t j = 0; j < cell; ++j) a[j] += w[j] * peep_c[j];
          }
          if (ln) NormalizeGate(a, cell, lnc[g], bias[g]);
          for (int64_t j = 0; j < cell; ++j) a[j] = tanh_like ? activate(a[j]) : sigmoid(a[j]);
        };
        if (!cifg) compute(0, c, false);
        compute(1, c, false);
        compute(2, c, true);
        float *ig = gate, *fg = gate + cell, *cg = gate + 2 * cell, *og = gate + 3 * cell;
        for (int64_t j = 0; j < cell; ++j) {
          float cn = fg[j] * c[j];
          cn += cg[j] * (cifg ? 1.f - fg[j] : ig[j]);
          if (cclip > 0.f) cn = std::min(std::max(cn, -cclip), cclip);
          c[j] = cn;
        }
        compute(3, c, false);
        for (int64_t j = 0; j < cell; ++j) m[j] = og[j] * activate(c[j]);
        if (proj) {
          for (int64_t k = 0; k < out; ++k) h[k] = proj_bias ? proj_bias[k] : 0.f;
          if (!all_zero(m, cell)) accumulate(h, proj, qm, out, cell, QuantizeHybridInput(nullptr, m, cell, asym, qm), s_proj);
          if (pclip > 0.f)
            for (int64_t k = 0; k < out; ++k) h[k] = std::min(std::max(h[k], -pclip), pclip);
        } else {
          std::memcpy(h, m, static_cast<size_t>(out) * sizeof(float));
        }
        std::memcpy(py + row * out, h, static_cast<size_t>(out) * sizeof(float));
      }
    }
    return GRAPH_SUCCESS;
  }

  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor* x = ctx->GetRequiredInputTensor(kX);
    if (x->GetDataType() == DT_INT8) return ExecuteInteger(ctx, x);
    if (Hybrid(ctx)) return ExecuteHybrid(ctx, x);
    if (!FloatInputsSupported(ctx)) return GRAPH_FAILED;
    Tensor* y = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), DT_FLOAT);
    if (!y) return GRAPH_FAILED;
    if (y->GetShapeSize() == 0) return GRAPH_SUCCESS;  // no steps, batch rows or outputs: nothing to run or keep
    const bool time_major = [&] { const bool* b = ctx->GetAttrs()->GetBool("time_major"); return b && *b; }();
    const char* act_s = ctx->GetAttrs()->GetStr("fused_activation_function");
    const std::string act = act_s ? act_s : "TANH";
    float (*activate)(float) = CellActivation(act);
    if (!activate) return Fail(ctx, "activation " + act + " is not supported");
    const float* cell_clip = ctx->GetAttrs()->GetFloat("cell_clip");
    const float* proj_clip = ctx->GetAttrs()->GetFloat("proj_clip");
    const float cclip = cell_clip ? *cell_clip : 0.f, pclip = proj_clip ? *proj_clip : 0.f;
    const Shape& xs = x->GetShape();
    const int64_t batch = time_major ? xs.GetDim(1) : xs.GetDim(0), steps = time_major ? xs.GetDim(0) : xs.GetDim(1);
    const int64_t in = xs.GetDim(2);
    const int64_t cell = ctx->GetRequiredInputTensor(kWxo)->GetShape().GetDim(0), out = ctx->GetRequiredInputTensor(kWho)->GetShape().GetDim(1);
    if (!GateVectorsFit(ctx, cell)) return GRAPH_FAILED;
    auto data = [&](int k) -> const float* {
      const Tensor* t = ctx->GetOptionalInputTensor(static_cast<size_t>(k));
      return t ? t->GetData<float>() : nullptr;
    };
    const float *wx[4] = {data(kWxi), data(kWxf), data(kWxc), data(kWxo)}, *wh[4] = {data(kWhi), data(kWhf), data(kWhc), data(kWho)};
    const float *bias[4] = {data(kBi), data(kBf), data(kBc), data(kBo)}, *peep[4] = {data(kPi), data(kPf), nullptr, data(kPo)};
    const float *proj = data(kProj), *proj_bias = data(kProjBias);
    const bool cifg = !wx[0];
    if (cifg != !wh[0]) return Fail(ctx, "input_to_input_weights and recurrent_to_input_weights must be both present or both absent (CIFG)");
    auto* state = static_cast<float*>(ctx->GetHostArgs(static_cast<size_t>(batch * (out + cell)) * sizeof(float)));
    if (!state) return GRAPH_FAILED;
    const bool ln = LayerNorm(ctx);
    const float* lnc[4] = {data(kLn0), data(kLn0 + 1), data(kLn0 + 2), data(kLn0 + 3)};
    if (act == "TANH" && !ln)
      return FloatTanh(ctx, x, y, state, batch, steps, time_major, in, cell, out, wx, wh, bias, peep, proj, proj_bias, cifg, cclip, pclip);
    auto* gate = static_cast<float*>(ctx->MallocWorkSpace(static_cast<size_t>(4 * cell + cell) * sizeof(float)));
    if (!gate) return GRAPH_FAILED;
    float* m = gate + 4 * cell;  // the gated cell output before projection
    const float* px = x->GetData<float>();
    float* py = y->GetData<float>();
    auto sigmoid = [](float v) { return 1.f / (1.f + std::exp(-v)); };
    for (int64_t b = 0; b < batch; ++b) {
      float* h = state + b * out;
      float* c = state + batch * out + b * cell;
      for (int64_t t = 0; t < steps; ++t) {
        const int64_t row = time_major ? t * batch + b : b * steps + t;
        const float* xt = px + row * in;
        for (int g = 0; g < 4; ++g) {
          if (g == 0 && cifg) continue;
          float* acc = gate + g * cell;
          for (int64_t j = 0; j < cell; ++j) {
            float v = bias[g] && !ln ? bias[g][j] : 0.f;  // layer norm: the bias comes after it
            const float* rx = wx[g] + j * in;
            for (int64_t k = 0; k < in; ++k) v += rx[k] * xt[k];
            const float* rh = wh[g] + j * out;
            for (int64_t k = 0; k < out; ++k) v += rh[k] * h[k];
            acc[j] = v;
          }
        }
        float *ig = gate, *fg = gate + cell, *cg = gate + 2 * cell, *og = gate + 3 * cell;
        if (ln) {  // as TFLite orders it: peepholes (the old cell state), normalization, coefficients, bias
          for (int64_t j = 0; j < cell; ++j) {
            if (peep[1]) fg[j] += peep[1][j] * c[j];
            if (!cifg && peep[0]) ig[j] += peep[0][j] * c[j];
          }
          if (!cifg) NormalizeGate(ig, cell, lnc[0], bias[0]);
          NormalizeGate(fg, cell, lnc[1], bias[1]);
          NormalizeGate(cg, cell, lnc[2], bias[2]);
          for (int64_t j = 0; j < cell; ++j) {
            const float f = sigmoid(fg[j]);
            const float i = cifg ? 1.f - f : sigmoid(ig[j]);
            float cn = c[j] * f + i * activate(cg[j]);
            if (cclip > 0.f) cn = std::min(std::max(cn, -cclip), cclip);
            c[j] = cn;
            if (peep[3]) og[j] += peep[3][j] * cn;
          }
          NormalizeGate(og, cell, lnc[3], bias[3]);
          for (int64_t j = 0; j < cell; ++j) m[j] = sigmoid(og[j]) * activate(c[j]);
        }
        for (int64_t j = 0; j < cell && !ln; ++j) {
          float f = sigmoid(fg[j] + (peep[1] ? peep[1][j] * c[j] : 0.f));
          float i = cifg ? 1.f - f : sigmoid(ig[j] + (peep[0] ? peep[0][j] * c[j] : 0.f));
          float cn = c[j] * f + i * activate(cg[j]);
          if (cclip > 0.f) cn = std::min(std::max(cn, -cclip), cclip);
          c[j] = cn;
          float o = sigmoid(og[j] + (peep[3] ? peep[3][j] * cn : 0.f));
          m[j] = o * activate(cn);
        }
        if (proj) {
          for (int64_t k = 0; k < out; ++k) {
            float v = proj_bias ? proj_bias[k] : 0.f;
            for (int64_t j = 0; j < cell; ++j) v += proj[k * cell + j] * m[j];
            if (pclip > 0.f) v = std::min(std::max(v, -pclip), pclip);
            h[k] = v;
          }
        } else {
          std::memcpy(h, m, static_cast<size_t>(out) * sizeof(float));
        }
        std::memcpy(py + row * out, h, static_cast<size_t>(out) * sizeof(float));
      }
    }
    return GRAPH_SUCCESS;
  }

 private:
  // The float LSTM with tanh activations, batched: every step's input products in one pass of
  // GEMM-like row updates, the recurrent products per step, both vectorized over the four gates'
  // 4 * cell outputs (transposed weights); sigmoid and tanh vectorized.
  graphStatus FloatTanh(EagerOpExecutionContext* ctx, const Tensor* x, Tensor* y, float* state, int64_t batch, int64_t steps, bool time_major,
                        int64_t in, int64_t cell, int64_t out, const float* const* wx, const float* const* wh, const float* const* bias,
                        const float* const* peep, const float* proj, const float* proj_bias, bool cifg, float cclip, float pclip) {
    const int64_t g4 = 4 * cell;
    const size_t floats = static_cast<size_t>(in * g4 + out * g4 + g4 + 3 * cell + (proj ? cell * out : 0) + steps * g4 + g4 + cell);
    auto* ws = static_cast<float*>(ctx->MallocWorkSpace(floats * sizeof(float)));
    if (!ws) return GRAPH_FAILED;
    float *wxt = ws, *wht = wxt + in * g4, *b4 = wht + out * g4, *peeps = b4 + g4, *projt = peeps + 3 * cell;
    float *xg = projt + (proj ? cell * out : 0), *g = xg + steps * g4, *m = g + g4;
    for (int q = 0; q < 4; ++q)
      for (int64_t j = 0; j < cell; ++j) {
        const bool on = !(q == 0 && cifg);
        for (int64_t k = 0; k < in; ++k) wxt[k * g4 + q * cell + j] = on ? wx[q][j * in + k] : 0.f;
        for (int64_t k = 0; k < out; ++k) wht[k * g4 + q * cell + j] = on ? wh[q][j * out + k] : 0.f;
        b4[q * cell + j] = on && bias[q] ? bias[q][j] : 0.f;
      }
    const int pk[3] = {0, 1, 3};
    for (int q = 0; q < 3; ++q)
      for (int64_t j = 0; j < cell; ++j) peeps[q * cell + j] = peep[pk[q]] ? peep[pk[q]][j] : 0.f;
    if (proj)
      for (int64_t k = 0; k < out; ++k)
        for (int64_t j = 0; j < cell; ++j) projt[j * out + k] = proj[k * cell + j];
    const float* px = x->GetData<float>();
    float* py = y->GetData<float>();
    for (int64_t b = 0; b < batch; ++b) {
      float* h = state + b * out;
      float* c = state + batch * out + b * cell;
      auto row = [&](int64_t t) { return time_major ? t * batch + b : b * steps + t; };
      for (int64_t t = 0; t < steps; ++t) {  // the input's share of every step's gates
        float* dst = xg + t * g4;
        std::memcpy(dst, b4, static_cast<size_t>(g4) * sizeof(float));
        const float* xt = px + row(t) * in;
        for (int64_t k = 0; k < in; ++k) AxpyRow(dst, wxt + k * g4, xt[k], g4);
      }
      for (int64_t t = 0; t < steps; ++t) {
        std::memcpy(g, xg + t * g4, static_cast<size_t>(g4) * sizeof(float));
        for (int64_t k = 0; k < out; ++k) AxpyRow(g, wht + k * g4, h[k], g4);
        LstmTanhCell(g, peeps, peeps + cell, peeps + 2 * cell, c, m, cell, cifg ? 1 : 0, cclip);
        if (proj) {
          for (int64_t k = 0; k < out; ++k) h[k] = proj_bias ? proj_bias[k] : 0.f;
          for (int64_t j = 0; j < cell; ++j) AxpyRow(h, projt + j * out, m[j], out);
          if (pclip > 0.f)
            for (int64_t k = 0; k < out; ++k) h[k] = std::min(std::max(h[k], -pclip), pclip);
        } else {
          std::memcpy(h, m, static_cast<size_t>(out) * sizeof(float));
        }
        std::memcpy(py + row(t) * out, h, static_cast<size_t>(out) * sizeof(float));
      }
    }
    return GRAPH_SUCCESS;
  }

  // TFLite's integer LSTM (8x8->16): int8 input, weights and output state, int16 cell state with
  // a power-of-two scale, gates in Q3.12 (the intermediates' default without layer norm), the
  // 16-bit fixed-point sigmoid and tanh, int32 biases with the zero points folded in. Matches
  // the reference bit for bit, including how it walks the peephole weights (over n_output
  // entries per batch row).
  // The integer LSTM's constants, as TFLite's Prepare computes them (the scale products in float);
  // Execute and Emit share them.
  struct IntMultiplier {
    int32_t m = 0;
    int s = 0;
  };
  // Per gate (input, forget, cell, output): weights, effective scales and biases with the zero
  // points folded in.
  struct IntGate {
    const int8_t *wx = nullptr, *wh = nullptr;
    const int16_t* peep = nullptr;
    IntMultiplier mx, mh, mc;
    const int32_t *bx = nullptr, *bh = nullptr;
  };
  struct IntPlan {
    bool time_major = false, cifg = false;
    int64_t batch = 0, steps = 0, n_in = 0, n_cell = 0, n_out = 0;
    Quant in, hq, cq, oq;
    int cell_scale = 0;
    int16_t cell_clip = 0;
    int8_t proj_clip = 0;
    int32_t hidden_zp = 0;
    float hidden_scale = 0.f;
    IntGate gates[4];
    const int8_t* proj = nullptr;
    IntMultiplier m_proj, m_hidden;
    const int32_t* proj_bias = nullptr;
    size_t FoldedInts() const { return static_cast<size_t>(8 * n_cell + n_out); }
  };
  static IntMultiplier Quantized(double v) {
    IntMultiplier r;
    tfl::QuantizeMultiplier(v, &r.m, &r.s);
    return r;
  }

  // Types, dims, scales and clips of the integer LSTM, checked.
  bool PlanInteger(const KernelContextBase* ctx, const Tensor* x, IntPlan* p) const {
    for (size_t k = kLn0; k < kLn0 + 4; ++k)
      if (ctx->GetOptionalInputTensor(k)) return Fail(ctx, "layer-normalized LSTMs are not supported"), false;
    auto tensor = [&](int k) { return ctx->GetOptionalInputTensor(static_cast<size_t>(k)); };
    auto typed = [&](int k, DataType want) -> bool {
      const Tensor* t = tensor(k);
      return !t || t->GetDataType() == want;
    };
    for (int k = kWxi; k <= kWho; ++k)
      if (!typed(k, DT_INT8)) return Fail(ctx, "input " + std::to_string(k) + " of the integer LSTM must be int8"), false;
    for (int k : {kPi, kPf, kPo})
      if (!typed(k, DT_INT16)) return Fail(ctx, "the integer LSTM's peephole weights must be int16"), false;
    for (int k : {kBi, kBf, kBc, kBo, kProjBias})
      if (!typed(k, DT_INT32)) return Fail(ctx, "the integer LSTM's biases must be int32"), false;
    if (!typed(kProj, DT_INT8)) return Fail(ctx, "the integer LSTM's projection weights must be int8"), false;
    p->time_major = [&] { const bool* b = ctx->GetAttrs()->GetBool("time_major"); return b && *b; }();
    const Shape& xs = x->GetShape();
    p->batch = p->time_major ? xs.GetDim(1) : xs.GetDim(0);
    p->steps = p->time_major ? xs.GetDim(0) : xs.GetDim(1);
    p->n_in = xs.GetDim(2);
    p->n_cell = tensor(kWxo)->GetShape().GetDim(0);
    p->n_out = tensor(kWho)->GetShape().GetDim(1);
    // Scales: the operator's inputs by their LiteRT index (18: output state, 19: cell state).
    p->in = InputQuant(ctx, 0), p->hq = InputQuant(ctx, 18), p->cq = InputQuant(ctx, 19), p->oq = OutputQuant(ctx);
    ListView<float> ims = ctx->GetAttrs()->GetListFloat("intermediate_scale");
    ListView<int64_t> imz = ctx->GetAttrs()->GetListInt("intermediate_zero_point");
    if (!p->in.quantized() || !p->hq.quantized() || !p->cq.quantized() || !p->oq.quantized() || ims.size() != 5)
      return Fail(ctx, "the integer LSTM needs the scales of its input, output and cell states, output and intermediates"), false;
    const float cell_log2 = std::log(p->cq.scale) * (1.0f / std::log(2.0f));
    p->cell_scale = static_cast<int>(std::round(cell_log2));
    if (std::abs(cell_log2 - std::round(cell_log2)) >= 1e-3f || p->cell_scale > -9)
      return Fail(ctx, "the cell state's scale must be a power of two no larger than 2^-9, not " + std::to_string(p->cq.scale)), false;
    p->hidden_scale = ims[4];
    if (!(p->hidden_scale > 0.f) || std::isinf(p->hidden_scale))
      return Fail(ctx, "the integer LSTM's fifth intermediate tensor (the hidden state) needs a positive scale"), false;
    p->hidden_zp = imz.size() > 4 ? static_cast<int32_t>(imz[4]) : 0;
    const float* cc = ctx->GetAttrs()->GetFloat("cell_clip");
    const float* pc = ctx->GetAttrs()->GetFloat("proj_clip");
    p->cell_clip = cc && *cc > 0.f ? static_cast<int16_t>(std::min(std::max(*cc / p->cq.scale, -32768.0f), 32767.0f)) : 0;
    p->proj_clip = pc && *pc > 0.f ? static_cast<int8_t>(std::min(std::max(*pc / p->oq.scale, -128.0f), 127.0f)) : 0;
    p->cifg = tensor(kWxi) == nullptr;
    if (p->cifg != (tensor(kWhi) == nullptr))
      return Fail(ctx, "input_to_input_weights and recurrent_to_input_weights must be both present or both absent (CIFG)"), false;
    if (!tensor(kProj) && p->n_out != p->n_cell) return Fail(ctx, "without projection the output size must equal the cell size"), false;
    return true;
  }

  // The gates' multipliers and weights, and the biases with the zero points folded in (bias +
  // scalar * row sum) written to `folded` (FoldedInts() of them).
  void FoldInteger(const KernelContextBase* ctx, int32_t* folded, IntPlan* p) const {
    auto tensor = [&](int k) { return ctx->GetOptionalInputTensor(static_cast<size_t>(k)); };
    const float gate_scale = 1.0f / 4096.0f;  // Q3.12
    auto row_sums = [&](const int8_t* w, int64_t rows, int64_t cols, int32_t scalar, const int32_t* bias) {
      int32_t* out = folded;
      folded += rows;
      for (int64_t r = 0; r < rows; ++r) {
        uint32_t sum = 0;
        for (int64_t c = 0; c < cols; ++c) sum += static_cast<uint32_t>(int32_t(w[r * cols + c]));
        out[r] = static_cast<int32_t>((bias ? static_cast<uint32_t>(bias[r]) : 0u) + sum * static_cast<uint32_t>(scalar));
      }
      return static_cast<const int32_t*>(out);
    };
    const int wx_k[4] = {kWxi, kWxf, kWxc, kWxo}, wh_k[4] = {kWhi, kWhf, kWhc, kWho}, p_k[4] = {kPi, kPf, -1, kPo}, b_k[4] = {kBi, kBf, kBc, kBo};
    for (int g = 0; g < 4; ++g) {
      if (g == 0 && p->cifg) continue;
      IntGate& G = p->gates[g];
      G.wx = tensor(wx_k[g])->GetData<int8_t>();
      G.wh = tensor(wh_k[g])->GetData<int8_t>();
      const float sx = InputQuant(ctx, static_cast<size_t>(wx_k[g])).scale, sh = InputQuant(ctx, static_cast<size_t>(wh_k[g])).scale;
      G.mx = Quantized(static_cast<float>(sx * p->in.scale / gate_scale));
      G.mh = Quantized(static_cast<float>(sh * p->hq.scale / gate_scale));
      if (p_k[g] >= 0 && tensor(p_k[g])) {
        G.peep = tensor(p_k[g])->GetData<int16_t>();
        const float sp = InputQuant(ctx, static_cast<size_t>(p_k[g])).scale;
        G.mc = Quantized(static_cast<float>(std::pow(2.0, p->cell_scale) * sp / gate_scale));
      }
      const Tensor* b = tensor(b_k[g]);
      G.bx = row_sums(G.wx, p->n_cell, p->n_in, -p->in.zp, b ? b->GetData<int32_t>() : nullptr);
      G.bh = row_sums(G.wh, p->n_cell, p->n_out, -p->hq.zp, nullptr);
    }
    p->proj = tensor(kProj) ? tensor(kProj)->GetData<int8_t>() : nullptr;
    p->m_hidden = Quantized(static_cast<float>(std::pow(2.0, -15) / p->hidden_scale * std::pow(2.0, -15)));
    if (p->proj) {
      p->m_proj = Quantized(static_cast<float>(InputQuant(ctx, kProj).scale * p->hidden_scale / p->hq.scale));
      p->proj_bias = row_sums(p->proj, p->n_out, p->n_cell, p->hidden_zp, tensor(kProjBias) ? tensor(kProjBias)->GetData<int32_t>() : nullptr);
    }
  }

  // TFLite's integer LSTM (8x8->16): int8 input, weights and output state, int16 cell state with
  // a power-of-two scale, gates in Q3.12 (the intermediates' default without layer norm), the
  // 16-bit fixed-point sigmoid and tanh, int32 biases with the zero points folded in. Matches
  // the reference bit for bit, including how it walks the peephole weights (over n_output
  // entries per batch row).
  graphStatus ExecuteInteger(EagerOpExecutionContext* ctx, const Tensor* x) {
    using tfl::q16::Wrap;
    IntPlan plan;
    if (!PlanInteger(ctx, x, &plan)) return GRAPH_FAILED;
    Tensor* y = ctx->MallocOutputTensor(0, ctx->GetOutputTensor(0)->GetShape(), DT_INT8);
    if (!y) return GRAPH_FAILED;
    if (y->GetShapeSize() == 0) return GRAPH_SUCCESS;  // no steps, batch rows or outputs: nothing to run or keep
    auto* folded = static_cast<int32_t*>(ctx->MallocWorkSpace(plan.FoldedInts() * sizeof(int32_t)));
    if (!folded) return GRAPH_FAILED;
    FoldInteger(ctx, folded, &plan);
    const bool time_major = plan.time_major, cifg = plan.cifg;
    const int64_t batch = plan.batch, steps = plan.steps, n_in = plan.n_in, n_cell = plan.n_cell, n_out = plan.n_out;
    const Quant hq = plan.hq, cq = plan.cq;
    const int cell_scale = plan.cell_scale;
    const int16_t cell_clip = plan.cell_clip;
    const int8_t proj_clip = plan.proj_clip;
    const int32_t hidden_zp = plan.hidden_zp;
    const IntGate* gates = plan.gates;
    const int8_t* proj = plan.proj;
    const IntMultiplier m_proj = plan.m_proj, m_hidden = plan.m_hidden;
    const int32_t* proj_bias = plan.proj_bias;
    // State: the cell state (int16), the output state (int8), a byte that says both hold values
    // (initially the zero points).
    const size_t cell_bytes = static_cast<size_t>(batch * n_cell) * sizeof(int16_t), out_bytes = static_cast<size_t>(batch * n_out);
    auto* raw = static_cast<uint8_t*>(ctx->GetHostArgs(cell_bytes + out_bytes + 1));
    if (!raw) return GRAPH_FAILED;
    auto* cell = reinterpret_cast<int16_t*>(raw);
    auto* hstate = reinterpret_cast<int8_t*>(raw + cell_bytes);
    if (!raw[cell_bytes + out_bytes]) {
      std::fill(cell, cell + batch * n_cell, static_cast<int16_t>(cq.zp));
      std::fill(hstate, hstate + batch * n_out, static_cast<int8_t>(hq.zp));
      raw[cell_bytes + out_bytes] = 1;
    }
    const size_t nb_max = static_cast<size_t>(time_major ? batch : 1);
    auto* scratch = static_cast<int16_t*>(ctx->MallocWorkSpace(5 * nb_max * static_cast<size_t>(n_cell) * sizeof(int16_t)));
    if (!scratch) return GRAPH_FAILED;
    int16_t* gate_buf[4];
    for (int g = 0; g < 4; ++g) gate_buf[g] = scratch + static_cast<size_t>(g) * nb_max * static_cast<size_t>(n_cell);
    auto* hidden = reinterpret_cast<int8_t*>(scratch + 4 * nb_max * static_cast<size_t>(n_cell));
    // acc = bias + w·v, rescaled, + zp, + what the output holds, saturated to T.
    auto matvec = [&](const int8_t* v, const int32_t* bias, const int8_t* w, IntMultiplier m, int64_t nb, int64_t cols,
                      int64_t rows, int32_t zp, auto* out) {
      using T = std::remove_pointer_t<decltype(out)>;
      for (int64_t b = 0; b < nb; ++b)
        for (int64_t r = 0; r < rows; ++r) {
          uint32_t acc = static_cast<uint32_t>(bias[static_cast<size_t>(r)]);
          for (int64_t c = 0; c < cols; ++c) acc += static_cast<uint32_t>(int32_t(v[b * cols + c]) * int32_t(w[r * cols + c]));
          int32_t a = tfl::MultiplyByQuantizedMultiplier(static_cast<int32_t>(acc), m.m, m.s) + zp + out[b * rows + r];
          out[b * rows + r] = static_cast<T>(std::min<int32_t>(std::max<int32_t>(a, tfl::QMin<T>()), tfl::QMax<T>()));
        }
    };
    auto step = [&](int64_t nb, const int8_t* xt, int8_t* h, int16_t* c, int8_t* yt) {
      const int64_t n = nb * n_cell;
      for (int g = 0; g < 4; ++g) {
        if (g == 0 && cifg) continue;
        const IntGate& G = gates[g];
        int16_t* gb = gate_buf[g];
        std::fill(gb, gb + n, int16_t{0});
        matvec(xt, G.bx, G.wx, G.mx, nb, n_in, n_cell, 0, gb);
        matvec(h, G.bh, G.wh, G.mh, nb, n_out, n_cell, 0, gb);
        if (G.peep)  // the reference walks n_output weights per batch row over the flat state
          for (int64_t b = 0, k = 0; b < nb; ++b)
            for (int64_t v = 0; v < n_out; ++v, ++k) {
              int32_t prod = tfl::MultiplyByQuantizedMultiplier(int32_t(G.peep[v]) * int32_t(c[k]), G.mc.m, G.mc.s);
              gb[k] = static_cast<int16_t>(std::max(std::min(32767, prod + gb[k]), -32768));
            }
        for (int64_t k = 0; k < n; ++k) gb[k] = g == 2 ? tfl::q16::Tanh(gb[k], 3) : tfl::q16::Logistic(gb[k], 3);
        if (g == 2) {  // the cell update comes before the output gate, which reads the new cell
          int16_t *ig = gate_buf[0], *fg = gate_buf[1], *cg = gate_buf[2];
          for (int64_t k = 0; k < n; ++k) {
            c[k] = Wrap(tfl::RoundingDivideByPOT(int32_t(fg[k]) * int32_t(c[k]), 15));
            const int16_t i_k = cifg ? Wrap(32767 - fg[k]) : ig[k];
            const int16_t upd = Wrap(tfl::RoundingDivideByPOT(int32_t(i_k) * int32_t(cg[k]), 30 + cell_scale));
            int32_t sum = std::min(32767, std::max(-32768, int32_t(c[k]) + int32_t(upd)));
            if (cell_clip > 0) sum = std::min<int32_t>(std::max<int32_t>(sum, -cell_clip), cell_clip);
            c[k] = static_cast<int16_t>(sum);
          }
        }
      }
      int16_t* og = gate_buf[3];
      for (int64_t k = 0; k < n; ++k) {
        const int16_t t = tfl::q16::Tanh(c[k], 15 + cell_scale);
        int32_t v = tfl::MultiplyByQuantizedMultiplier(int32_t(og[k]) * int32_t(t), m_hidden.m, m_hidden.s) - hidden_zp;
        hidden[k] = static_cast<int8_t>(std::min(std::max(v, -128), 127));
      }
      if (proj) {
        std::fill(h, h + nb * n_out, int8_t{0});
        matvec(hidden, proj_bias, proj, m_proj, nb, n_cell, n_out, hq.zp, h);
        if (proj_clip > 0)
          for (int64_t k = 0; k < nb * n_out; ++k) h[k] = static_cast<int8_t>(std::min<int>(std::max<int>(h[k], -proj_clip), proj_clip));
      } else {
        std::memcpy(h, hidden, static_cast<size_t>(nb * n_out));
      }
      std::memcpy(yt, h, static_cast<size_t>(nb * n_out));
    };
    const int8_t* px = x->GetData<int8_t>();
    int8_t* py = y->GetData<int8_t>();
    if (time_major) {
      for (int64_t t = 0; t < steps; ++t) step(batch, px + t * batch * n_in, hstate, cell, py + t * batch * n_out);
    } else {
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t t = 0; t < steps; ++t)
          step(1, px + (b * steps + t) * n_in, hstate + b * n_out, cell + b * n_cell, py + (b * steps + t) * n_out);
    }
    return GRAPH_SUCCESS;
  }
};

// One class per op type (an implementation table binds one class to one name).
class TflConv2D : public TflConv {};
class TflDepthwiseConv2D : public TflConv {};
class TflAdd : public TflBinary {};
class TflSub : public TflBinary {};
class TflMul : public TflBinary {};
class TflPadv2 : public TflPad {};
class TflAveragePool2D : public TflPool {};
class TflMaxPool2D : public TflPool {};

}  // namespace

struct Int8PackedB {
  VnniPacked vnni;
};

std::shared_ptr<const Int8PackedB> Int8PackB(const int8_t* b, int64_t n, int64_t k) {
  if (!HasVnni512() || n <= 0 || k <= 0) return nullptr;
  auto p = std::make_shared<Int8PackedB>();
  p->vnni.Pack(b, n, k);
  return p;
}

bool Int8GemmSums(EagerOpExecutionContext* ctx, int64_t m, int64_t n, int64_t k, const int8_t* a, int32_t a_zp, const int8_t* b, int32_t* acc,
                  const Int8PackedB* pre) {
  GemmOut out;
  out.acc = acc;
  return GemmS8(ctx, m, n, k, a, a_zp, b, 0, out, pre ? pre->vnni.get() : nullptr);
}

namespace {
bool ConvS8(EagerOpExecutionContext* ctx, const Int8ConvDims& g, const int8_t* x, int32_t x_zp, const int8_t* w, const GemmOut& out,
            const Int8PackedB* pre);
}  // namespace

bool Int8ConvSums(EagerOpExecutionContext* ctx, const Int8ConvDims& g, const int8_t* x, int32_t x_zp, const int8_t* w, int32_t* acc,
                  const Int8PackedB* pre) {
  GemmOut out;
  out.acc = acc;
  return ConvS8(ctx, g, x, x_zp, w, out, pre);
}

bool Int8GemmRescaled(EagerOpExecutionContext* ctx, int64_t m, int64_t n, int64_t k, const int8_t* a, int32_t a_zp, const int8_t* b,
                      const Int8FloatRescale& r, const Int8PackedB* pre) {
  if (!HasVnni512() || !r.y || !r.scale || r.ldy < n) return false;
  GemmOut out;
  out.bias = r.bias;
  out.fq = r.y;
  out.ldq = r.ldy;
  out.fscale = r.scale;
  out.fz = r.y_zero, out.flo = r.lo, out.fhi = r.hi;
  return GemmS8(ctx, m, n, k, a, a_zp, b, 0, out, pre ? pre->vnni.get() : nullptr);
}

bool Int8GemmFloat(EagerOpExecutionContext* ctx, int64_t m, int64_t n, int64_t k, const int8_t* a, int32_t a_zp, const int8_t* b, const float* scale,
                   const float* bias, float* y, int64_t ldy, const Int8PackedB* pre) {
  if (!HasVnni512() || !y || !scale || ldy < n) return false;
  GemmOut out;
  out.ff = y;
  out.ldf = ldy;
  out.fscale = scale;
  out.fbias = bias;
  return GemmS8(ctx, m, n, k, a, a_zp, b, 0, out, pre ? pre->vnni.get() : nullptr);
}

bool Int8ConvRescaled(EagerOpExecutionContext* ctx, const Int8ConvDims& g, const int8_t* x, int32_t x_zp, const int8_t* w, const Int8FloatRescale& r,
                      const Int8PackedB* pre) {
  if (!HasVnni512() || !r.y || !r.scale || r.ldy < g.oc) return false;
  GemmOut out;
  out.bias = r.bias;
  out.fq = r.y;
  out.ldq = r.ldy;
  out.fscale = r.scale;
  out.fz = r.y_zero, out.flo = r.lo, out.fhi = r.hi;
  return ConvS8(ctx, g, x, x_zp, w, out, pre);
}

namespace {
bool ConvS8(EagerOpExecutionContext* ctx, const Int8ConvDims& g, const int8_t* x, int32_t x_zp, const int8_t* w, const GemmOut& out,
            const Int8PackedB* pre) {
  if (x_zp < -128 || x_zp > 127 || g.n <= 0 || g.oh <= 0 || g.ow <= 0 || g.oc <= 0 || g.ic <= 0 || g.kh <= 0 || g.kw <= 0) return false;
  const int64_t m = g.n * g.oh * g.ow, k = g.kh * g.kw * g.ic;
  const VnniB* vb = pre && pre->vnni.get() && pre->vnni.get()->n == g.oc && pre->vnni.get()->k == k ? pre->vnni.get() : nullptr;
  const bool direct = g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0 && g.oh == g.ih && g.ow == g.iw;
#ifdef WEFT_LITERT_AVX2
  if (!direct && VnniGemmApplies(g.oc, 0, out)) {  // the GEMM packs its rows from the input itself
    VnniConv cv{x, x + g.n * g.ih * g.iw * g.ic, g.ih, g.iw, g.ic, g.oh, g.ow, g.kh, g.kw, g.sh, g.sw, g.dh, g.dw, g.ph, g.pw,
                static_cast<int8_t>(x_zp)};
    return GemmS8(ctx, m, g.oc, k, x, x_zp, w, 0, out, vb, &cv);
  }
#endif
  const int8_t* a = x;
  if (!direct) {  // the rows as [taps * ic] bytes, the padding's taps holding the zero point
    auto* col = static_cast<int8_t*>(ctx->MallocWorkSpace(static_cast<size_t>(m * k)));
    if (!col) return false;
    ctx->ParallelFor(g.n * g.oh, 1, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t bn = r / g.oh, oy = r % g.oh;
        for (int64_t ox = 0; ox < g.ow; ++ox) {
          int8_t* row = col + (r * g.ow + ox) * k;
          for (int64_t ky = 0; ky < g.kh; ++ky)
            for (int64_t kx = 0; kx < g.kw; ++kx) {
              const int64_t iy = oy * g.sh - g.ph + ky * g.dh, ix = ox * g.sw - g.pw + kx * g.dw;
              int8_t* dst = row + (ky * g.kw + kx) * g.ic;
              if (iy < 0 || iy >= g.ih || ix < 0 || ix >= g.iw) {
                std::memset(dst, x_zp, static_cast<size_t>(g.ic));
              } else {
                std::memcpy(dst, x + ((bn * g.ih + iy) * g.iw + ix) * g.ic, static_cast<size_t>(g.ic));
              }
            }
        }
      }
    });
    a = col;
  }
  return GemmS8(ctx, m, g.oc, k, a, x_zp, w, 0, out, vb);
}
}  // namespace


void WeftRegister_litert(std::vector<OpEntry>& out) {
  const TensorType& all = AnyType();
  TensorType conv_in({DT_FLOAT, DT_INT8, DT_UINT8, DT_INT16});
  TensorType bias({DT_FLOAT, DT_INT32, DT_INT64});
  for (int k = 0; k < 2; ++k) {
    const char* type = k == 0 ? "TflConv2D" : "TflDepthwiseConv2D";
    out.push_back({TflDef(type).Input("input", conv_in).Input("filter", conv_in).OptionalInput("bias", bias).Output("output", conv_in)
                       .AttrString("padding", "VALID").AttrInt("stride_w", 1).AttrInt("stride_h", 1)
                       .AttrString("fused_activation_function", "NONE").AttrInt("dilation_w_factor", 1).AttrInt("dilation_h_factor", 1)
                       .AttrString("quantized_bias_type", "FLOAT32").AttrInt("depth_multiplier", 0).AttrListInt("explicit_padding", {}).Build(),
                   k == 0 ? MakeOpImpl<TflConv2D>(type) : MakeOpImpl<TflDepthwiseConv2D>(type)});
  }
  out.push_back({TflDef("TflTransposeConv").Input("output_shape", TensorType({DT_INT32, DT_INT64})).Input("weights", conv_in)
                     .Input("input", conv_in).OptionalInput("bias", bias).Output("output", conv_in)
                     .AttrString("padding", "VALID").AttrInt("stride_w", 1).AttrInt("stride_h", 1)
                     .AttrString("fused_activation_function", "NONE").AttrString("quantized_bias_type", "FLOAT32").Build(),
                 MakeOpImpl<TflTransposeConv>("TflTransposeConv")});
  out.push_back({TflDef("TflFullyConnected").Input("input", conv_in).Input("weights", conv_in).OptionalInput("bias", bias)
                     .Output("output", conv_in).AttrString("fused_activation_function", "NONE").AttrInt("weights_format", 0)
                     .AttrBool("keep_num_dims", false).AttrBool("asymmetric_quantize_inputs", false)
                     .AttrString("quantized_bias_type", "FLOAT32").Build(),
                 MakeOpImpl<TflFullyConnected>("TflFullyConnected")});
  out.push_back({TflDef("TflEmbeddingLookup").Input("lookup", TensorType({DT_INT32})).Input("value", AnyType()).Output("output", AnyType())
                     .Build(),
                 MakeOpImpl<TflEmbeddingLookup>("TflEmbeddingLookup")});
  out.push_back({TflDef("TflAtan2").Input("y", TensorType({DT_FLOAT})).Input("x", TensorType({DT_FLOAT})).Output("z", TensorType({DT_FLOAT}))
                     .Build(),
                 MakeOpImpl<TflAtan2>("TflAtan2")});
  out.push_back({TflDef("TflRsqrt").Input("x", TensorType({DT_FLOAT, DT_INT8, DT_INT16})).Output("y", TensorType({DT_FLOAT, DT_INT8, DT_INT16}))
                     .Build(),
                 MakeOpImpl<TflRsqrt>("TflRsqrt")});
  out.push_back({TflDef("TflBatchMatmul").Input("x", conv_in).Input("y", conv_in).Output("output", conv_in)
                     .AttrBool("adj_x", false).AttrBool("adj_y", false).AttrBool("asymmetric_quantize_inputs", false).Build(),
                 MakeOpImpl<TflBatchMatmul>("TflBatchMatmul")});
  TensorType arith({DT_FLOAT, DT_INT8, DT_UINT8, DT_INT16, DT_INT32, DT_INT64});
  for (const char* type : {"TflAdd", "TflSub", "TflMul"}) {
    OpDefBuilder b = std::move(TflDef(type).Input("x", "T").Input("y", "T").Output("output", "T").DataTypeSym("T", arith)
                 .AttrString("fused_activation_function", "NONE"));
    if (std::string(type) != "TflMul") b.AttrBool("pot_scale_int16", true);
    std::string t = type;
    out.push_back({b.Build(), t == "TflAdd" ? MakeOpImpl<TflAdd>(type) : t == "TflSub" ? MakeOpImpl<TflSub>(type) : MakeOpImpl<TflMul>(type)});
  }
  TensorType q({DT_FLOAT, DT_INT8, DT_UINT8, DT_INT16});
  out.push_back({TflDef("TflLeakyRelu").Input("input", "T").Output("output", "T").DataTypeSym("T", q).AttrFloat("alpha", 0.2).Build(),
                 MakeOpImpl<TflLeakyRelu>("TflLeakyRelu")});
  out.push_back({TflDef("TflLogistic").Input("input", "T").Output("output", "T").DataTypeSym("T", q).Build(),
                 MakeOpImpl<TflSigmoidTanh<TflFn::kLogistic>>("TflLogistic")});
  out.push_back({TflDef("TflTanh").Input("input", "T").Output("output", "T").DataTypeSym("T", q).Build(),
                 MakeOpImpl<TflSigmoidTanh<TflFn::kTanh>>("TflTanh")});
  out.push_back({TflDef("TflHardSwish").Input("input", "T").Output("output", "T").DataTypeSym("T", q).Build(),
                 MakeOpImpl<TflHardSwish>("TflHardSwish")});
  out.push_back({TflDef("TflPrelu").Input("input", "T").Input("alpha", "T").Output("output", "T").DataTypeSym("T", q).Build(),
                 MakeOpImpl<TflPrelu>("TflPrelu")});
  out.push_back({TflDef("TflResizeBilinear").Input("input", "T").Input("size", TensorType({DT_INT32, DT_INT64}))
                     .Output("output", "T").DataTypeSym("T", TensorType({DT_INT8, DT_UINT8, DT_INT16}))
                     .AttrBool("align_corners", false).AttrBool("half_pixel_centers", false).Build(),
                 MakeOpImpl<TflResizeBilinear>("TflResizeBilinear")});
  out.push_back({TflDef("TflQuantize").Input("input", TensorType({DT_FLOAT, DT_INT8, DT_UINT8, DT_INT16, DT_INT32}))
                     .Output("output", TensorType({DT_INT8, DT_UINT8, DT_INT16, DT_INT32})).Build(),
                 MakeOpImpl<TflQuantize>("TflQuantize")});
  out.push_back({TflDef("TflDequantize").Input("input", TensorType({DT_INT8, DT_UINT8, DT_INT16})).Output("output", TensorType({DT_FLOAT})).Build(),
                 MakeOpImpl<TflDequantize>("TflDequantize")});
  for (const char* type : {"TflPad", "TflPadv2"}) {
    OpDefBuilder b = std::move(TflDef(type).Input("input", "T").Input("paddings", TensorType({DT_INT32, DT_INT64})));
    if (std::string(type) == "TflPadv2") b.Input("constant_values", "T");
    out.push_back({b.Output("output", "T").DataTypeSym("T", all).Build(),
                   std::string(type) == "TflPad" ? MakeOpImpl<TflPad>(type) : MakeOpImpl<TflPadv2>(type)});
  }
  out.push_back({TflDef("TflStridedSlice").Input("input", "T").Input("begin", TensorType({DT_INT32, DT_INT64}))
                     .Input("end", TensorType({DT_INT32, DT_INT64})).Input("strides", TensorType({DT_INT32, DT_INT64}))
                     .Output("output", "T").DataTypeSym("T", all).AttrInt("begin_mask", 0).AttrInt("end_mask", 0)
                     .AttrInt("ellipsis_mask", 0).AttrInt("new_axis_mask", 0).AttrInt("shrink_axis_mask", 0).AttrBool("offset", false).Build(),
                 MakeOpImpl<TflStridedSlice>("TflStridedSlice")});
  out.push_back({TflDef("TflReshape").Input("input", "T").OptionalInput("shape", TensorType({DT_INT32, DT_INT64})).Output("output", "T")
                     .DataTypeSym("T", all).AttrListInt("new_shape", {}).Build(),
                 MakeOpImpl<TflReshape>("TflReshape")});
  out.push_back({TflDef("TflSoftmax").Input("input", q).Output("output", q).AttrFloat("beta", 1.0).Build(),
                 MakeOpImpl<TflSoftmax>("TflSoftmax")});
  for (int k = 0; k < 2; ++k) {
    const char* type = k == 0 ? "TflAveragePool2D" : "TflMaxPool2D";
    out.push_back({TflDef(type).Input("input", "T").Output("output", "T").DataTypeSym("T", q).AttrString("padding", "VALID")
                       .AttrInt("stride_w", 1).AttrInt("stride_h", 1).AttrInt("filter_width", 1).AttrInt("filter_height", 1)
                       .AttrString("fused_activation_function", "NONE").Build(),
                   k == 0 ? MakeOpImpl<TflAveragePool2D>(type) : MakeOpImpl<TflMaxPool2D>(type)});
  }
  out.push_back({TflDef("TflMean").Input("input", "T").Input("axis", TensorType({DT_INT32, DT_INT64})).Output("output", "T")
                     .DataTypeSym("T", q).AttrBool("keep_dims", false).Build(),
                 MakeOpImpl<TflMean>("TflMean")});
  out.push_back({TflDef("TflSvdf").Input("input", TensorType({DT_FLOAT, DT_INT8})).Input("weights_feature", TensorType({DT_FLOAT, DT_INT8}))
                     .Input("weights_time", TensorType({DT_FLOAT, DT_INT16, DT_INT8})).OptionalInput("bias", TensorType({DT_FLOAT, DT_INT32}))
                     .Output("output", TensorType({DT_FLOAT, DT_INT8})).AttrInt("rank", 1)
                     .AttrString("fused_activation_function", "NONE").AttrBool("asymmetric_quantize_inputs", false).Build(),
                 MakeOpImpl<TflSvdf>("TflSvdf")});
  {
    TensorType lf({DT_FLOAT, DT_INT8, DT_INT16, DT_INT32});
    OpDefBuilder b = TflDef("TflUnidirectionalSequenceLstm");
    b.Input("input", lf);
    // The input gate is absent in CIFG LSTMs.
    auto gates = [&](const char* prefix, const char* suffix, bool with_cell) {
      for (const char* gate : {"input", "forget", "cell", "output"}) {
        if (!with_cell && std::string(gate) == "cell") continue;
        std::string name = std::string(prefix) + gate + suffix;
        if (std::string(gate) == "input" || !with_cell) b.OptionalInput(name.c_str(), lf);
        else b.Input(name.c_str(), lf);
      }
    };
    gates("input_to_", "_weights", true);
    gates("recurrent_to_", "_weights", true);
    gates("cell_to_", "_weights", false);
    gates("", "_gate_bias", true);
    b.OptionalInput("projection_weights", lf).OptionalInput("projection_bias", lf);
    for (const char* gate : {"input", "forget", "cell", "output"}) b.OptionalInput((std::string(gate) + "_layer_norm_coefficients").c_str(), lf);
    out.push_back({b.Output("output", lf).AttrString("fused_activation_function", "TANH").AttrFloat("cell_clip", 0.f)
                       .AttrFloat("proj_clip", 0.f).AttrBool("time_major", false).AttrBool("asymmetric_quantize_inputs", false)
                       .AttrBool("diagonal_recurrent_tensors", false).Build(),
                   MakeOpImpl<TflUnidirectionalSequenceLstm>("TflUnidirectionalSequenceLstm")});
  }
  out.push_back({TflDef("TflTranspose").Input("input", "T").Input("perm", TensorType({DT_INT32, DT_INT64})).Output("output", "T")
                     .DataTypeSym("T", all).Build(),
                 MakeOpImpl<TflTranspose>("TflTranspose")});
}

}  // namespace weft::ops
