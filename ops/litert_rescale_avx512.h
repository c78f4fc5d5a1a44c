// TFLite's rescaling (tfl::OneFloorRescale) in single precision on AVX-512, exact where it can
// tell and telling where it cannot, for the 8-bit kernels' epilogues. Shared by ops/litert.cc and
// its unit test.
//
// With T = x * q / 2^(31 + r) (q > 0 the multiplier, r >= 2 the right shift, no left shift), the
// rescaled value plus the output offset z is floor(u) for u = T + 1/2 + 2^-(r + 1) + z, less
// 2^-r where T < -2^-(r + 1), i.e. u < z + 1/2 (litert_quant.h derives the one-floor form). In
// float (x and q rounded to 24 bits, one fused multiply-add, one subtraction) u is off by at most
// |T| * 2^-22 + 389 * 2^-24 < 2^-13.4 while |T| < 257 (adding 2^-12 below adds at most 2^-24 * 2^-12
// more), so floor(u) is exact unless u lies within 2^-12 of an integer: those lanes are reported
// (`unsure`, about one in 2^11) for the caller to compute exactly. Taking the 2^-r wrongly needs u within that error of z + 1/2, where both
// candidates floor to z as r >= 2. Where |T| >= 257 an int8 output saturates whatever z in
// [-128, 127] is, and the float result does too; |u| < 2^30, so converting it cannot overflow.
#ifndef WEFT_OPS_LITERT_RESCALE_AVX512_H_
#define WEFT_OPS_LITERT_RESCALE_AVX512_H_

#include <cmath>
#include <cstdint>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace weft::ops::tfl {

// The scale 2^-(31 + r) of each of columns [0, cols) (the first n real, with TFLite exponents
// `shift`), when every real column has r >= 2 and no left shift; false otherwise. Padding columns
// get a valid placeholder.
inline bool FillFloatScales(const int32_t* shift, int64_t n, int64_t cols, float* fscale) {
  for (int64_t c = 0; c < cols; ++c) {
    const int32_t e = c < n ? shift[c] : -2;
    if (e > -2 || e < -90) return false;
    fscale[c] = std::ldexp(1.0f, -31 + e);
  }
  return true;
}

#if defined(__x86_64__) && defined(__GNUC__)
#define WEFT_RESCALE_AVX512_TARGET __attribute__((target("avx512f,avx512dq")))

// u is computed 2^-12 high (v = u + 2^-12): floor(v) is floor(u) where v's fraction is at least
// 2^-11, and the lanes whose fraction is smaller are the unsure ones.
struct FloatRescaler {
  __m512 m, c, sub, thr;
};
// The constants of 16 columns: their scales (FillFloatScales) and multipliers, lanes outside
// `keep` zero; z the output offset, in [-128, 127].
WEFT_RESCALE_AVX512_TARGET inline FloatRescaler LoadFloatRescaler(const float* fscale, const int32_t* mult, __mmask16 keep, int32_t z) {
  FloatRescaler k;
  const __m512 s = _mm512_maskz_loadu_ps(keep, fscale);  // 2^-(31 + r)
  k.m = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(keep, mult)), s);
  k.thr = _mm512_set1_ps(0.5f + static_cast<float>(z) + 0x1p-12f);
  k.c = _mm512_fmadd_ps(s, _mm512_set1_ps(0x1p30f), k.thr);  // 1/2 + 2^-(r + 1) + z, + 2^-12
  k.sub = _mm512_mul_ps(s, _mm512_set1_ps(0x1p31f));         // 2^-r
  return k;
}
// x rescaled plus the offset, per lane, as int32 (for saturation to int8); lanes it cannot vouch
// for are added to `unsure`.
WEFT_RESCALE_AVX512_TARGET inline __m512i RescaleFloat(const FloatRescaler& k, __m512i x, __mmask16& unsure) {
  const __m512 v0 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(x), k.m, k.c);
  const __m512 v = _mm512_mask_sub_ps(v0, _mm512_cmp_ps_mask(v0, k.thr, _CMP_LT_OQ), v0, k.sub);
  const __m512 frac = _mm512_reduce_ps(v, 1);  // v less its floor, exactly
  unsure |= _mm512_cmp_ps_mask(frac, _mm512_set1_ps(0x1p-11f), _CMP_LT_OQ);
  return _mm512_cvt_roundps_epi32(v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
}
#endif

}  // namespace weft::ops::tfl

#endif  // WEFT_OPS_LITERT_RESCALE_AVX512_H_
