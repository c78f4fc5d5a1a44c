// Block-quantized weights as ONNX Runtime writes them (MatMulNBits; GatherBlockQuantized below).
// MatMulNBits (its com.microsoft operator for weight-only block quantization, what its
// MatMulNBitsQuantizer and model builder write for language models): Y = A x W (+ bias), A
// [..., K] float32, W [K, N] held as `bits`-bit codes. B [N, k_blocks, blob] packs column n's
// codes along K low bit first, block_size codes a block; each block has a scale and a zero point
// (packed codes of the same width, or one float per block, or 2^(bits - 1) when absent), and
//   W[k, n] = (code - zero_point) * scale  of k's block.
// The codes stay packed: a product with few rows (a language model's decoding step) reads each
// code once and multiplies straight from it; a product with more rows decodes 32 columns at a
// time into a per-thread buffer and multiplies tiles of rows with it. Widths that divide a byte
// (1, 2, 4 and 8 bits) run here; the importer dequantizes the other widths once at load.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "aot_emit.h"
#include "dnnl_runner.h"
#include "op_util.h"

namespace weft::ops {
namespace {

struct NBits {
  int64_t k = 0, n = 0, bits = 0, block = 0, blocks = 0, blob = 0, zp_row = 0;
};

bool Layout(const KernelContextBase* ctx, NBits* l) {
  const RuntimeAttrs* a = ctx->GetAttrs();
  l->k = *a->GetInt("K"), l->n = *a->GetInt("N"), l->bits = *a->GetInt("bits"), l->block = *a->GetInt("block_size");
  if (l->k <= 0 || l->n <= 0) return Fail(ctx, "attributes K and N must be positive"), false;
  if (l->bits != 1 && l->bits != 2 && l->bits != 4 && l->bits != 8)
    return Fail(ctx, "bits is " + std::to_string(l->bits) + "; this kernel takes 1, 2, 4 or 8"), false;
  if (l->block < 16 || (l->block & (l->block - 1)) != 0 || l->block > (int64_t{1} << 20))
    return Fail(ctx, "block_size is " + std::to_string(l->block) + "; it must be a power of 2 from 16 to 2^20"), false;
  if (l->k > (int64_t{1} << 40) / l->n) return Fail(ctx, "K x N is too large"), false;
  l->blocks = (l->k + l->block - 1) / l->block;
  l->blob = l->block * l->bits / 8;
  l->zp_row = (l->blocks * l->bits + 7) / 8;
  return true;
}

// Every input against the layout; `a` is A's shape.
bool CheckInputs(const KernelContextBase* ctx, const NBits& l, const Shape& a, const Tensor* b, const Tensor* sc, const Tensor* zp,
                 const Tensor* g_idx, const Tensor* bias) {
  if (a.GetDimNum() < 1 || (a.GetDim(a.GetDimNum() - 1) != l.k && a.GetDim(a.GetDimNum() - 1) >= 0))
    return Fail(ctx, "A " + a.ToString() + " must end in K = " + std::to_string(l.k)), false;
  if (b->GetShapeSize() != l.n * l.blocks * l.blob)
    return Fail(ctx, "B " + b->GetShape().ToString() + " must hold N x k_blocks x blob = " + std::to_string(l.n) + " x " + std::to_string(l.blocks) +
                         " x " + std::to_string(l.blob) + " bytes"),
           false;
  if (sc->GetShapeSize() != l.n * l.blocks)
    return Fail(ctx, "scales " + sc->GetShape().ToString() + " must hold N x k_blocks = " + std::to_string(l.n * l.blocks) + " values"), false;
  if (zp) {
    const bool packed = zp->GetDataType() == DT_UINT8 && zp->GetShapeSize() == l.n * l.zp_row;
    const bool per_block = zp->GetDataType() == DT_FLOAT && zp->GetShapeSize() == l.n * l.blocks;
    if (!packed && !per_block)
      return Fail(ctx, "zero_points " + zp->GetShape().ToString() + " must be uint8 with N x ceil(k_blocks x bits / 8) = " + std::to_string(l.n * l.zp_row) +
                           " bytes, or float32 with N x k_blocks = " + std::to_string(l.n * l.blocks) + " values"),
             false;
  }
  if (g_idx) return Fail(ctx, "g_idx (act-order block indices, deprecated) is not supported; quantize without act-order"), false;
  if (bias && bias->GetShapeSize() != l.n) return Fail(ctx, "bias " + bias->GetShape().ToString() + " must hold N = " + std::to_string(l.n) + " values"), false;
  return true;
}

// Each block's zero point as a byte when they are codes (packed, or the default), [n][block]
// like the scales; false for float zero points.
bool ZeroPointBytes(const NBits& l, const Tensor* zp, uint8_t* out) {
  if (zp && zp->GetDataType() == DT_FLOAT) return false;
  const int per = static_cast<int>(8 / l.bits), mask = (1 << l.bits) - 1;
  for (int64_t n = 0; n < l.n; ++n)
    for (int64_t b = 0; b < l.blocks; ++b)
      out[n * l.blocks + b] = zp ? static_cast<uint8_t>((zp->GetData<uint8_t>()[n * l.zp_row + b / per] >> ((b % per) * l.bits)) & mask)
                                 : static_cast<uint8_t>(1 << (l.bits - 1));
  return true;
}

// Each block's zero point as a float, [n][block] like the scales.
void ZeroPoints(const NBits& l, const Tensor* zp, float* out) {
  const int64_t count = l.n * l.blocks;
  if (!zp) {
    std::fill(out, out + count, static_cast<float>(1 << (l.bits - 1)));
  } else if (zp->GetDataType() == DT_FLOAT) {
    std::memcpy(out, zp->GetData<float>(), static_cast<size_t>(count) * sizeof(float));
  } else {
    const uint8_t* z = zp->GetData<uint8_t>();
    const int per = static_cast<int>(8 / l.bits), mask = (1 << l.bits) - 1;
    for (int64_t n = 0; n < l.n; ++n)
      for (int64_t b = 0; b < l.blocks; ++b)
        out[n * l.blocks + b] = static_cast<float>((z[n * l.zp_row + b / per] >> ((b % per) * l.bits)) & mask);
  }
}

// A's rows with each block's values reordered to match the codes' packing: a byte of B holds
// codes j*per + p (p = 0 .. per-1) of its block, so the reordered block holds, for each p, the
// values at j*per + p in j's order. Positions past K are zero, so the last block's padding codes
// add nothing.
void ReorderRows(const NBits& l, const float* a, int64_t rows, float* out) {
  const int64_t per = 8 / l.bits, padded = l.blocks * l.block;
  for (int64_t r = 0; r < rows; ++r) {
    const float* src = a + r * l.k;
    float* dst = out + r * padded;
    for (int64_t b = 0; b < l.blocks; ++b)
      for (int64_t p = 0; p < per; ++p)
        for (int64_t j = 0; j < l.blob; ++j) {
          const int64_t k = b * l.block + j * per + p;
          dst[(b * per + p) * l.blob + j] = k < l.k ? src[k] : 0.f;
        }
  }
}

constexpr int64_t kGemvRows = 12;  // products with up to this many rows read the codes in B's own order
constexpr int kRowGroup = 4;      // rows sharing one decode of a block there

struct Gemv {
  NBits l;
  const uint8_t* codes;
  const float* scales;
  const uint8_t* zq;  // zero points as bytes, or
  const float* zf;    // as floats
  const float* a;  // reordered rows, blocks * block floats each
  int64_t rows;
  const float* bias;
  float* y;  // [rows, n]
};

// Columns [n0, n1) for up to kRowGroup rows from `r0`: each code dequantized as the weights are,
// (code - zero point) * scale, times the reordered A, summed in L lanes.
template <int BITS, int L>
WEFT_ISA_CLONES void GemvColumns(const Gemv& g, int64_t r0, int64_t n0, int64_t n1) {
  constexpr int kPer = 8 / BITS;
  constexpr int kMask = (1 << BITS) - 1;
  const NBits& l = g.l;
  const int rows = static_cast<int>(std::min<int64_t>(kRowGroup, g.rows - r0));
  const int64_t padded = l.blocks * l.block;
  for (int64_t n = n0; n < n1; ++n) {
    float acc[kRowGroup][L] = {};
    const uint8_t* col = g.codes + n * l.blocks * l.blob;
    for (int64_t b = 0; b < l.blocks; ++b) {
      const int64_t at = n * l.blocks + b;
      const float z = g.zq ? static_cast<float>(g.zq[at]) : g.zf[at], s = g.scales[at];
      for (int64_t j0 = 0; j0 < l.blob; j0 += L) {
        const uint8_t* c = col + b * l.blob + j0;
        float d[kPer][L];
        for (int p = 0; p < kPer; ++p)
          for (int j = 0; j < L; ++j) d[p][j] = (static_cast<float>((c[j] >> (p * BITS)) & kMask) - z) * s;
        for (int r = 0; r < rows; ++r) {
          const float* ar = g.a + (r0 + r) * padded + b * l.block + j0;
          for (int p = 0; p < kPer; ++p)
            for (int j = 0; j < L; ++j) acc[r][j] += d[p][j] * ar[p * l.blob + j];
        }
      }
    }
    for (int r = 0; r < rows; ++r) {
      float sum = 0.f;
      for (int j = 0; j < L; ++j) sum += acc[r][j];
      g.y[(r0 + r) * l.n + n] = sum + (g.bias ? g.bias[n] : 0.f);
    }
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 on its own AVX-512 headers
#pragma GCC diagnostic ignored "-Wuninitialized"
// GemvColumns on AVX-512 for blocks of whole 16-byte chunks: 16 lanes a register; NC columns at
// a time share each load of A, and R rows each decoded chunk. 4-bit codes take their weight from
// a 16-entry table of the block, (code - z) * s, by one permute, which reads only an index's low 4
// bits. The codes stream from memory faster when prefetched well ahead.
template <int BITS, int R, int NC>
__attribute__((target("avx512f"))) void GemvColumns512(const Gemv& g, int64_t r0, int64_t n) {
  constexpr int kPer = 8 / BITS;
  constexpr int64_t kAhead = 8192;
  const NBits& l = g.l;
  const int64_t padded = l.blocks * l.block, blob = l.blob, stride = l.blocks * blob;
  const __m512i mask = _mm512_set1_epi32((1 << BITS) - 1);
  const __m512 iota = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  __m512 acc[R][NC];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < NC; ++c) acc[r][c] = _mm512_setzero_ps();
  const uint8_t* col = g.codes + n * stride;
  for (int64_t b = 0; b < l.blocks; ++b) {
    __m512 z[NC], s[NC], table[NC];
    for (int c = 0; c < NC; ++c) {
      const int64_t at = (n + c) * l.blocks + b;
      z[c] = _mm512_set1_ps(g.zq ? static_cast<float>(g.zq[at]) : g.zf[at]);
      s[c] = _mm512_set1_ps(g.scales[at]);
      table[c] = BITS == 4 ? _mm512_mul_ps(_mm512_sub_ps(iota, z[c]), s[c]) : iota;
    }
    for (int64_t j0 = 0; j0 < blob; j0 += 16) {
      const int64_t off = b * blob + j0;
      if ((off & 63) == 0)
        for (int c = 0; c < NC; ++c) _mm_prefetch(reinterpret_cast<const char*>(col + c * stride + off + kAhead), _MM_HINT_T0);
      __m512i q[NC];
      for (int c = 0; c < NC; ++c) q[c] = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(col + c * stride + off)));
      for (int p = 0; p < kPer; ++p) {
        __m512 d[NC];
        for (int c = 0; c < NC; ++c) {
          if constexpr (BITS == 4) {
            d[c] = _mm512_permutexvar_ps(p ? _mm512_srli_epi32(q[c], 4) : q[c], table[c]);
          } else {
            __m512i v = p ? _mm512_srli_epi32(q[c], p * BITS) : q[c];
            if (p + 1 < kPer) v = _mm512_and_si512(v, mask);
            d[c] = _mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(v), z[c]), s[c]);
          }
        }
        for (int r = 0; r < R; ++r) {
          const __m512 av = _mm512_loadu_ps(g.a + (r0 + r) * padded + b * l.block + p * blob + j0);
          for (int c = 0; c < NC; ++c) acc[r][c] = _mm512_fmadd_ps(d[c], av, acc[r][c]);
        }
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < NC; ++c) g.y[(r0 + r) * l.n + n + c] = _mm512_reduce_add_ps(acc[r][c]) + (g.bias ? g.bias[n + c] : 0.f);
}

template <int BITS, int R>
__attribute__((target("avx512f"))) void GemvRange512(const Gemv& g, int64_t r0, int64_t n0, int64_t n1) {
  int64_t n = n0;
  for (; n + 4 <= n1; n += 4) GemvColumns512<BITS, R, 4>(g, r0, n);
  for (; n < n1; ++n) GemvColumns512<BITS, R, 1>(g, r0, n);
}
#pragma GCC diagnostic pop

// WEFT_DISABLE_AVX512=1 in the environment runs the portable loops (what other CPUs run).
bool HasAvx512() {
  static const bool avx512 = [] {
    const char* off = std::getenv("WEFT_DISABLE_AVX512");
    return __builtin_cpu_supports("avx512f") && !(off && *off && *off != '0');
  }();
  return avx512;
}

template <int BITS>
bool Gemv512(const Gemv& g, int64_t r0, int64_t n0, int64_t n1) {
  if (!HasAvx512() || g.l.blob % 16) return false;
  switch (std::min<int64_t>(kRowGroup, g.rows - r0)) {
    case 1: GemvRange512<BITS, 1>(g, r0, n0, n1); break;
    case 2: GemvRange512<BITS, 2>(g, r0, n0, n1); break;
    case 3: GemvRange512<BITS, 3>(g, r0, n0, n1); break;
    default: GemvRange512<BITS, 4>(g, r0, n0, n1); break;
  }
  return true;
}
#else
bool HasAvx512() { return false; }
template <int BITS>
bool Gemv512(const Gemv&, int64_t, int64_t, int64_t) {
  return false;
}
#endif

template <int BITS>
void GemvRange(const Gemv& g, int64_t r0, int64_t n0, int64_t n1) {
  if (Gemv512<BITS>(g, r0, n0, n1)) return;
  if (g.l.blob % 16 == 0) return GemvColumns<BITS, 16>(g, r0, n0, n1);
  if (g.l.blob % 8 == 0) return GemvColumns<BITS, 8>(g, r0, n0, n1);
  if (g.l.blob % 4 == 0) return GemvColumns<BITS, 4>(g, r0, n0, n1);
  return GemvColumns<BITS, 2>(g, r0, n0, n1);  // 1-bit codes in blocks of 16
}

void GemvDispatch(const Gemv& g, int64_t r0, int64_t n0, int64_t n1) {
  switch (g.l.bits) {
    case 1: return GemvRange<1>(g, r0, n0, n1);
    case 2: return GemvRange<2>(g, r0, n0, n1);
    case 4: return GemvRange<4>(g, r0, n0, n1);
    default: return GemvRange<8>(g, r0, n0, n1);
  }
}

// Products with more rows: B's codes repacked once (Compile) into strips of 16 columns, byte j of
// each block for the 16 columns side by side, with the strips' zero points and scales ([block][16];
// columns past N have scale 0). A thread decodes a panel of two strips into W [k][32] floats,
// (code - zero point) * scale as the dequantized weights are, and multiplies it with tiles of 6
// rows: 12 accumulators, two loads of W and 6 broadcasts of A per k.
constexpr int64_t kStrip = 16;
constexpr int64_t kPanel = 2 * kStrip;
constexpr int kTileRows = 6;

struct Strips {
  std::vector<uint8_t> codes;  // [strip][block][j][16]
  std::vector<float> zps, scales;  // [strip][block][16]
  int64_t count = 0;
};

void PackStrips(const NBits& l, const uint8_t* codes, const float* scales, const float* zps, Strips* st) {
  st->count = (l.n + kStrip - 1) / kStrip;
  st->codes.assign(static_cast<size_t>(st->count * l.blocks * l.blob * kStrip), 0);
  st->zps.assign(static_cast<size_t>(st->count * l.blocks * kStrip), 0.f);
  st->scales.assign(st->zps.size(), 0.f);
  for (int64_t n = 0; n < l.n; ++n) {
    const int64_t s = n / kStrip, lane = n % kStrip;
    for (int64_t b = 0; b < l.blocks; ++b) {
      st->zps[(s * l.blocks + b) * kStrip + lane] = zps[n * l.blocks + b];
      st->scales[(s * l.blocks + b) * kStrip + lane] = scales[n * l.blocks + b];
      for (int64_t j = 0; j < l.blob; ++j)
        st->codes[((s * l.blocks + b) * l.blob + j) * kStrip + lane] = codes[(n * l.blocks + b) * l.blob + j];
    }
  }
}

// Rows of K a decoded panel holds: K rounded up to 8 (a byte's codes are whole), at most the blocks'.
int64_t PanelRows(const NBits& l) { return std::min(l.blocks * l.block, (l.k + 7) / 8 * 8); }

// Strips s0 and s0 + 1 (when there is one) decoded into w [PanelRows][kPanel].
template <int BITS>
WEFT_ISA_CLONES void DecodePanel(const NBits& l, const Strips& st, int64_t s0, float* w) {
  constexpr int kPer = 8 / BITS;
  constexpr int kMask = (1 << BITS) - 1;
  const int64_t rows = PanelRows(l);
  for (int64_t h = 0; h < 2; ++h) {
    const int64_t s = s0 + h;
    if (s >= st.count) {
      for (int64_t k = 0; k < rows; ++k)
        for (int64_t c = 0; c < kStrip; ++c) w[k * kPanel + h * kStrip + c] = 0.f;
      continue;
    }
    for (int64_t b = 0; b < l.blocks && b * l.block < rows; ++b) {
      const float* z = &st.zps[(s * l.blocks + b) * kStrip];
      const float* sc = &st.scales[(s * l.blocks + b) * kStrip];
      const int64_t bytes = std::min(l.blob, (rows - b * l.block) / kPer);
      for (int64_t j = 0; j < bytes; ++j) {
        const uint8_t* c = &st.codes[((s * l.blocks + b) * l.blob + j) * kStrip];
        for (int p = 0; p < kPer; ++p) {
          float* o = w + (b * l.block + j * kPer + p) * kPanel + h * kStrip;
          for (int64_t i = 0; i < kStrip; ++i) o[i] = (static_cast<float>((c[i] >> (p * BITS)) & kMask) - z[i]) * sc[i];
        }
      }
    }
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
template <int BITS>
__attribute__((target("avx512f"))) void DecodePanel512(const NBits& l, const Strips& st, int64_t s0, float* w) {
  constexpr int kPer = 8 / BITS;
  const __m512i mask = _mm512_set1_epi32((1 << BITS) - 1);
  const int64_t rows = PanelRows(l);
  for (int64_t h = 0; h < 2; ++h) {
    const int64_t s = s0 + h;
    if (s >= st.count) {
      for (int64_t k = 0; k < rows; ++k) _mm512_storeu_ps(w + k * kPanel + h * kStrip, _mm512_setzero_ps());
      continue;
    }
    for (int64_t b = 0; b < l.blocks && b * l.block < rows; ++b) {
      const __m512 z = _mm512_loadu_ps(&st.zps[(s * l.blocks + b) * kStrip]);
      const __m512 sc = _mm512_loadu_ps(&st.scales[(s * l.blocks + b) * kStrip]);
      const uint8_t* c = &st.codes[(s * l.blocks + b) * l.blob * kStrip];
      float* o = w + b * l.block * kPanel + h * kStrip;
      const int64_t bytes = std::min(l.blob, (rows - b * l.block) / kPer);
      for (int64_t j = 0; j < bytes; ++j) {
        const __m512i q = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(c + j * kStrip)));
        for (int p = 0; p < kPer; ++p) {
          __m512i v = p ? _mm512_srli_epi32(q, p * BITS) : q;
          if (p + 1 < kPer) v = _mm512_and_si512(v, mask);
          _mm512_storeu_ps(o + (j * kPer + p) * kPanel, _mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(v), z), sc));
        }
      }
    }
  }
}
#pragma GCC diagnostic pop
#endif

void DecodeDispatch(const NBits& l, const Strips& st, int64_t s0, float* w) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (HasAvx512()) switch (l.bits) {
      case 1: return DecodePanel512<1>(l, st, s0, w);
      case 2: return DecodePanel512<2>(l, st, s0, w);
      case 4: return DecodePanel512<4>(l, st, s0, w);
      default: return DecodePanel512<8>(l, st, s0, w);
    }
#endif
  switch (l.bits) {
    case 1: return DecodePanel<1>(l, st, s0, w);
    case 2: return DecodePanel<2>(l, st, s0, w);
    case 4: return DecodePanel<4>(l, st, s0, w);
    default: return DecodePanel<8>(l, st, s0, w);
  }
}

// y[r0 .. r0+R) [c0 .. c0+cols) = a rows x w (+ bias): k over K only (w's padding rows unread).
template <int R>
WEFT_ISA_CLONES void PanelTile(const float* a, int64_t lda, const float* w, int64_t k, const float* bias, float* y, int64_t ldy, int64_t cols) {
  float acc[R][kPanel] = {};
  for (int64_t i = 0; i < k; ++i) {
    const float* wr = w + i * kPanel;
    for (int r = 0; r < R; ++r) {
      const float av = a[r * lda + i];
      for (int64_t c = 0; c < kPanel; ++c) acc[r][c] += av * wr[c];
    }
  }
  for (int r = 0; r < R; ++r)
    for (int64_t c = 0; c < cols; ++c) y[r * ldy + c] = acc[r][c] + (bias ? bias[c] : 0.f);
}

#if defined(__x86_64__) && defined(__GNUC__)
template <int R>
__attribute__((target("avx512f"))) void PanelTile512(const float* a, int64_t lda, const float* w, int64_t k, const float* bias, float* y, int64_t ldy,
                                                      int64_t cols) {
  __m512 lo[R], hi[R];
  for (int r = 0; r < R; ++r) lo[r] = _mm512_setzero_ps(), hi[r] = _mm512_setzero_ps();
  for (int64_t i = 0; i < k; ++i) {
    const __m512 w0 = _mm512_loadu_ps(w + i * kPanel), w1 = _mm512_loadu_ps(w + i * kPanel + kStrip);
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(a[r * lda + i]);
      lo[r] = _mm512_fmadd_ps(av, w0, lo[r]);
      hi[r] = _mm512_fmadd_ps(av, w1, hi[r]);
    }
  }
  const __mmask16 m0 = static_cast<__mmask16>(cols >= kStrip ? 0xffff : (1u << cols) - 1);
  const __mmask16 m1 = static_cast<__mmask16>(cols >= kPanel ? 0xffff : cols > kStrip ? (1u << (cols - kStrip)) - 1 : 0);
  const __m512 b0 = bias ? _mm512_maskz_loadu_ps(m0, bias) : _mm512_setzero_ps();
  const __m512 b1 = bias ? _mm512_maskz_loadu_ps(m1, bias + kStrip) : _mm512_setzero_ps();
  for (int r = 0; r < R; ++r) {
    _mm512_mask_storeu_ps(y + r * ldy, m0, _mm512_add_ps(lo[r], b0));
    _mm512_mask_storeu_ps(y + r * ldy + kStrip, m1, _mm512_add_ps(hi[r], b1));
  }
}
#endif

void Tile(int rows, const float* a, int64_t lda, const float* w, int64_t k, const float* bias, float* y, int64_t ldy, int64_t cols) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (HasAvx512()) {
    switch (rows) {
      case 1: return PanelTile512<1>(a, lda, w, k, bias, y, ldy, cols);
      case 2: return PanelTile512<2>(a, lda, w, k, bias, y, ldy, cols);
      case 3: return PanelTile512<3>(a, lda, w, k, bias, y, ldy, cols);
      case 4: return PanelTile512<4>(a, lda, w, k, bias, y, ldy, cols);
      case 5: return PanelTile512<5>(a, lda, w, k, bias, y, ldy, cols);
      default: return PanelTile512<6>(a, lda, w, k, bias, y, ldy, cols);
    }
  }
#endif
  switch (rows) {
    case 1: return PanelTile<1>(a, lda, w, k, bias, y, ldy, cols);
    case 2: return PanelTile<2>(a, lda, w, k, bias, y, ldy, cols);
    case 3: return PanelTile<3>(a, lda, w, k, bias, y, ldy, cols);
    case 4: return PanelTile<4>(a, lda, w, k, bias, y, ldy, cols);
    case 5: return PanelTile<5>(a, lda, w, k, bias, y, ldy, cols);
    default: return PanelTile<6>(a, lda, w, k, bias, y, ldy, cols);
  }
}

class MatMulNBits : public EagerExecuteOp, public ShapeInferOp, public CompilableOp, public RebuildOnLoad, public EmittableOp {
 public:
  // C99 from the packed codes: each weight (code - zero point) * scale as the runtime forms it,
  // summed along K in order (the runtime sums in lanes, so the two agree within rounding).
  graphStatus Emit(EmitContext* ctx) override {
    NBits l;
    if (!Layout(ctx, &l)) return GRAPH_FAILED;
    const Tensor *a = ctx->GetInputTensor(0), *zp = ctx->GetOptionalInputTensor(3), *bias = ctx->GetOptionalInputTensor(5);
    if (!CheckInputs(ctx, l, a->GetShape(), ctx->GetInputTensor(1), ctx->GetInputTensor(2), zp, ctx->GetOptionalInputTensor(4), bias))
      return GRAPH_FAILED;
    const std::string K = aot::IntLit(l.k), N = aot::IntLit(l.n), blocks = aot::IntLit(l.blocks), block = aot::IntLit(l.block);
    const std::string bits = aot::IntLit(l.bits), blob = aot::IntLit(l.blob);
    std::string z = aot::FloatLit(static_cast<float>(1 << (l.bits - 1)));
    std::string r = "{\n  const float* A = " + ctx->Input(0, "float") + ";\n  const uint8_t* B = " + ctx->Input(1, "uint8_t") +
                    ";\n  const float* S = " + ctx->Input(2, "float") + ";\n  float* Y = " + ctx->Output(0, "float") + ";\n";
    if (zp && zp->GetDataType() == DT_FLOAT) {
      r += "  const float* Z = " + ctx->Input(aot::InputAt(ctx, 3), "float") + ";\n";
      z = "Z[n * " + blocks + " + k / " + block + "]";
    } else if (zp) {
      r += "  const uint8_t* Z = " + ctx->Input(aot::InputAt(ctx, 3), "uint8_t") + ";\n";
      const std::string zb = "(k / " + block + ") * " + bits;
      z = "(float)((Z[n * " + aot::IntLit(l.zp_row) + " + " + zb + " / 8] >> (" + zb + " % 8)) & " + aot::IntLit((1 << l.bits) - 1) + ")";
    }
    if (bias) r += "  const float* bias = " + ctx->Input(aot::InputAt(ctx, 5), "float") + ";\n";
    r += "  int64_t row, n, k;\n  for (row = 0; row < " + aot::IntLit(a->GetShapeSize() / l.k) + "; ++row)\n    for (n = 0; n < " + N +
         "; ++n) {\n      float acc = 0.f;\n      for (k = 0; k < " + K + "; ++k) {\n";
    r += "        const int64_t at = (k % " + block + ") * " + bits + ";\n";
    r += "        const int q = (B[(n * " + blocks + " + k / " + block + ") * " + blob + " + at / 8] >> (at % 8)) & " + aot::IntLit((1 << l.bits) - 1) +
         ";\n";
    r += "        acc += A[row * " + K + " + k] * (((float)q - " + z + ") * S[n * " + blocks + " + k / " + block + "]);\n      }\n";
    r += "      Y[row * " + N + " + n] = acc" + (bias ? std::string(" + bias[n]") : std::string()) + ";\n    }\n}\n";
    ctx->Run(r);
    return GRAPH_SUCCESS;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    NBits l;
    if (!Layout(ctx, &l)) return GRAPH_FAILED;
    const Shape& a = *ctx->GetInputShape(0);
    if (!CheckInputs(ctx, l, a, ctx->GetInputTensor(1), ctx->GetInputTensor(2), ctx->GetOptionalInputTensor(3), ctx->GetOptionalInputTensor(4),
                     ctx->GetOptionalInputTensor(5)))
      return GRAPH_FAILED;
    Shape y = a;
    y.SetDim(a.GetDimNum() - 1, l.n);
    *ctx->GetOutputShape(0) = y;
    return GRAPH_SUCCESS;
  }
  // Constant zero points are read once into per-block floats; constant codes, scales and zero
  // points are also repacked into strips for products with more rows.
  graphStatus Compile(OpCompileContext* ctx) override {
    zq_.clear(), zf_.clear();
    strips_ = Strips();
    NBits l;
    const Tensor *b = ctx->GetInputTensor(1), *sc = ctx->GetInputTensor(2), *zp = ctx->GetOptionalInputTensor(3);
    if (!Layout(ctx, &l) || (zp && (!zp->GetAddr() || (zp->GetDataType() == DT_UINT8 ? zp->GetShapeSize() != l.n * l.zp_row : zp->GetShapeSize() != l.n * l.blocks))))
      return GRAPH_SUCCESS;
    std::vector<float> zf(static_cast<size_t>(l.n * l.blocks));
    ZeroPoints(l, zp, zf.data());
    zq_.resize(zf.size());
    if (!ZeroPointBytes(l, zp, zq_.data())) zq_.clear(), zf_ = zf;
    if (b->GetAddr() && sc->GetAddr() && b->GetShapeSize() == l.n * l.blocks * l.blob && sc->GetShapeSize() == l.n * l.blocks)
      PackStrips(l, b->GetData<uint8_t>(), sc->GetData<float>(), zf.data(), &strips_);
    return GRAPH_SUCCESS;
  }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    NBits l;
    if (!Layout(ctx, &l)) return GRAPH_FAILED;
    const Tensor *a = ctx->GetInputTensor(0), *b = ctx->GetInputTensor(1), *sc = ctx->GetInputTensor(2);
    const Tensor *zp = ctx->GetOptionalInputTensor(3), *bias = ctx->GetOptionalInputTensor(5);
    if (!CheckInputs(ctx, l, a->GetShape(), b, sc, zp, ctx->GetOptionalInputTensor(4), bias)) return GRAPH_FAILED;
    Shape ys = a->GetShape();
    ys.SetDim(ys.GetDimNum() - 1, l.n);
    Tensor* y = ctx->MallocOutputTensor(0, ys, DT_FLOAT);
    if (!y) return GRAPH_FAILED;
    const int64_t rows = a->GetShapeSize() / l.k;
    if (rows == 0) return GRAPH_SUCCESS;
    const float* pbias = bias ? bias->GetData<float>() : nullptr;
    float* py = y->GetData<float>();
    const int threads = ApplyIntraOpThreads(ctx);
    if (rows > kGemvRows && strips_.count) {
      // Per thread, a run of panels, each decoded into that thread's buffer once for all rows.
      const int64_t kp = PanelRows(l), panels = (strips_.count + 1) / 2;
      const int64_t parts = std::min<int64_t>(threads, panels);
      auto* buf = static_cast<float*>(ctx->MallocWorkSpace(static_cast<size_t>(parts * kp * kPanel) * sizeof(float)));
      if (!buf) return GRAPH_FAILED;
      const float* pa = a->GetData<float>();
      return ctx->ParallelFor(parts, 1, [&](int64_t p0, int64_t p1) {
        for (int64_t part = p0; part < p1; ++part) {
          float* w = buf + part * kp * kPanel;
          for (int64_t pn = panels * part / parts; pn < panels * (part + 1) / parts; ++pn) {
            DecodeDispatch(l, strips_, 2 * pn, w);
            const int64_t c0 = pn * kPanel, cols = std::min(kPanel, l.n - c0);
            for (int64_t r0 = 0; r0 < rows; r0 += kTileRows)
              Tile(static_cast<int>(std::min<int64_t>(kTileRows, rows - r0)), pa + r0 * l.k, l.k, w, l.k, pbias ? pbias + c0 : nullptr,
                   py + r0 * l.n + c0, l.n, cols);
          }
        }
      });
    }
    const uint8_t* zq = zq_.empty() ? nullptr : zq_.data();
    const float* zf = zf_.empty() ? nullptr : zf_.data();
    if (!zq && !zf) {  // zero points computed at run time
      auto* z = static_cast<float*>(ctx->MallocWorkSpace(static_cast<size_t>(l.n * l.blocks) * sizeof(float)));
      if (!z) return GRAPH_FAILED;
      ZeroPoints(l, zp, z);
      zf = z;
    }
    auto* ra = static_cast<float*>(ctx->MallocWorkSpace(static_cast<size_t>(rows * l.blocks * l.block) * sizeof(float)));
    if (!ra) return GRAPH_FAILED;
    ReorderRows(l, a->GetData<float>(), rows, ra);
    const Gemv g{l, b->GetData<uint8_t>(), sc->GetData<float>(), zq, zf, ra, rows, pbias, py};
    // Column chunks of at least ~64 KiB of codes each.
    const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, l.blocks * l.blob));
    return ctx->ParallelFor(l.n, grain, [&](int64_t n0, int64_t n1) {
      for (int64_t r0 = 0; r0 < rows; r0 += kRowGroup) GemvDispatch(g, r0, n0, n1);
    });
  }

 private:
  std::vector<uint8_t> zq_;  // constant zero points that are codes, a byte a block
  std::vector<float> zf_;    // constant float zero points
  Strips strips_;
};

// GatherBlockQuantized (ONNX Runtime's com.microsoft operator; what its model builder writes for
// embeddings quantized to 4 bits, tied to the output projection): rows of a block-quantized table,
// dequantized as they are gathered. data uint8 [V, ..., C] holds `bits`-bit codes (4: two a byte,
// the lower nibble first; 8: one), quantized along the last axis in blocks of block_size with
// scales [V, ..., ceil(C x 8 / bits / block_size)] and zero points packed as the codes (default
// 2^(bits - 1)); indices (negative ones count from the end) pick along axis 0. The output,
// float32, is indices' shape followed by data's middle dims and C x 8 / bits values.
class GatherBlockQuantized : public EagerExecuteOp, public ShapeInferOp {
 public:
  struct Plan {
    int64_t bits = 0, block = 0, rows = 0, inner = 0, width = 0, blocks = 0, zp_row = 0;  // inner: dims between 0 and last
    Shape out;
  };
  static bool Make(const KernelContextBase* ctx, const Shape& data, const Shape& idx, const Tensor* sc, const Tensor* zp, Plan* p) {
    const RuntimeAttrs* a = ctx->GetAttrs();
    p->bits = *a->GetInt("bits"), p->block = *a->GetInt("block_size");
    const int64_t r = static_cast<int64_t>(data.GetDimNum());
    int64_t gather = *a->GetInt("gather_axis"), quant = *a->GetInt("quantize_axis");
    if (gather < 0) gather += r;
    if (quant < 0) quant += r;
    if (p->bits != 4 && p->bits != 8) return Fail(ctx, "bits is " + std::to_string(p->bits) + "; 4 and 8 are supported"), false;
    if (p->block < 16 || (p->block & (p->block - 1)) || p->block > (int64_t{1} << 20))
      return Fail(ctx, "block_size is " + std::to_string(p->block) + "; it must be a power of 2 from 16 to 2^20"), false;
    if (r < 2 || gather != 0 || quant != r - 1)
      return Fail(ctx, "data " + data.ToString() + " must have rank 2 or more, gathered along axis 0 and quantized along the last"), false;
    p->rows = data.GetDim(0);
    p->inner = 1;
    for (int64_t d = 1; d + 1 < r; ++d) p->inner *= data.GetDim(d);
    p->width = data.GetDim(r - 1) * 8 / p->bits;
    p->blocks = (p->width + p->block - 1) / p->block;
    p->zp_row = p->bits == 4 ? (p->blocks + 1) / 2 : p->blocks;
    if (sc->GetShapeSize() != p->rows * p->inner * p->blocks)
      return Fail(ctx, "scales " + sc->GetShape().ToString() + " must hold " + std::to_string(p->blocks) + " values per row of " + std::to_string(p->width)), false;
    if (zp && (zp->GetDataType() != DT_UINT8 || zp->GetShapeSize() != p->rows * p->inner * p->zp_row))
      return Fail(ctx, "zero_points " + zp->GetShape().ToString() + " must be uint8 codes packed as data's, " + std::to_string(p->zp_row) + " bytes a row"), false;
    if (idx.GetDimNum() + static_cast<size_t>(r) - 1 > WEFT_MAX_DIMS)
      return Fail(ctx, "the result would have rank " + std::to_string(idx.GetDimNum() + static_cast<size_t>(r) - 1) + " (indices " +
                           idx.ToString() + ", data " + data.ToString() + "); tensors have at most " + std::to_string(WEFT_MAX_DIMS) + " dims"),
             false;
    p->out = idx;
    for (int64_t d = 1; d + 1 < r; ++d) p->out.AppendDim(data.GetDim(d));
    p->out.AppendDim(p->width);
    return true;
  }
  graphStatus InferShape(InferShapeContext* ctx) override {
    Plan p;
    if (!Make(ctx, *ctx->GetInputShape(0), *ctx->GetInputShape(1), ctx->GetInputTensor(2), ctx->GetOptionalInputTensor(3), &p)) return GRAPH_FAILED;
    *ctx->GetOutputShape(0) = p.out;
    return GRAPH_SUCCESS;
  }
  graphStatus InferDataType(InferDataTypeContext* ctx) override { return ctx->SetOutputDataType(0, DT_FLOAT); }
  graphStatus Execute(EagerOpExecutionContext* ctx) override {
    const Tensor *data = ctx->GetInputTensor(0), *idx = ctx->GetInputTensor(1), *sc = ctx->GetInputTensor(2), *zp = ctx->GetOptionalInputTensor(3);
    Plan p;
    if (!Make(ctx, data->GetShape(), idx->GetShape(), sc, zp, &p)) return GRAPH_FAILED;
    Tensor* y = ctx->MallocOutputTensor(0, p.out, DT_FLOAT);
    if (!y) return GRAPH_FAILED;
    const int64_t n = idx->GetShapeSize(), bytes = p.width * p.bits / 8;
    const uint8_t* codes = data->GetData<uint8_t>();
    const uint8_t* zb = zp ? zp->GetData<uint8_t>() : nullptr;
    const float* scales = sc->GetData<float>();
    float* out = y->GetData<float>();
    for (int64_t i = 0; i < n; ++i) {
      int64_t row = idx->GetDataType() == DT_INT32 ? idx->GetData<int32_t>()[i] : idx->GetData<int64_t>()[i];
      if (row < -p.rows || row >= p.rows)
        return Fail(ctx, "index " + std::to_string(row) + " is outside the table's " + std::to_string(p.rows) + " rows");
      if (row < 0) row += p.rows;
      for (int64_t m = 0; m < p.inner; ++m) {
        const int64_t r = row * p.inner + m;
        const uint8_t* c = codes + r * bytes;
        float* o = out + (i * p.inner + m) * p.width;
        for (int64_t b = 0; b < p.blocks; ++b) {
          float z = static_cast<float>(1 << (p.bits - 1));
          if (zb) z = static_cast<float>(p.bits == 8 ? zb[r * p.zp_row + b] : (zb[r * p.zp_row + b / 2] >> ((b % 2) * 4)) & 15);
          const float s = scales[r * p.blocks + b];
          for (int64_t k = b * p.block; k < std::min(p.width, (b + 1) * p.block); ++k) {
            const int q = p.bits == 8 ? c[k] : (c[k / 2] >> ((k % 2) * 4)) & 15;
            o[k] = (static_cast<float>(q) - z) * s;
          }
        }
      }
    }
    return GRAPH_SUCCESS;
  }
};

}  // namespace

void WeftRegister_matmul_nbits(std::vector<OpEntry>& out) {
  out.push_back({OpDefBuilder("MatMulNBits")
                     .INPUT(A, TensorType({DT_FLOAT}))
                     .INPUT(B, TensorType({DT_UINT8}))
                     .INPUT(scales, TensorType({DT_FLOAT}))
                     .OPTIONAL_INPUT(zero_points, TensorType({DT_UINT8, DT_FLOAT}))
                     .OPTIONAL_INPUT(g_idx, TensorType({DT_INT32}))
                     .OPTIONAL_INPUT(bias, TensorType({DT_FLOAT}))
                     .OUTPUT(Y, TensorType({DT_FLOAT}))
                     .REQUIRED_ATTR(K, Int)
                     .REQUIRED_ATTR(N, Int)
                     .ATTR(bits, Int, 4)
                     .REQUIRED_ATTR(block_size, Int)
                     .ATTR(accuracy_level, Int, 0)
                     .Build(),
                 MakeOpImpl<MatMulNBits>("MatMulNBits")});
  out.push_back({OpDefBuilder("GatherBlockQuantized")
                     .INPUT(data, TensorType({DT_UINT8}))
                     .INPUT(indices, TensorType({DT_INT32, DT_INT64}))
                     .INPUT(scales, TensorType({DT_FLOAT}))
                     .OPTIONAL_INPUT(zero_points, TensorType({DT_UINT8}))
                     .OUTPUT(output, TensorType({DT_FLOAT}))
                     .ATTR(gather_axis, Int, 0)
                     .ATTR(quantize_axis, Int, 1)
                     .ATTR(block_size, Int, 128)
                     .ATTR(bits, Int, 4)
                     .Build(),
                 MakeOpImpl<GatherBlockQuantized>("GatherBlockQuantized")});
}

}  // namespace weft::ops
