// float32 exp, sigmoid, tanh and erf written without branches or library calls, so that loops over
// them vectorize (SSE2, AVX2 or AVX-512, chosen at load time through target clones). Accuracy:
// within a few ulp of the float64 functions over the whole float range (tests/test_builtin_ops.cc
// checks it); exp's results below FLT_MIN are flushed toward zero (absolute error < 1.2e-38).
#ifndef WEFT_OPS_VECTOR_MATH_H_
#define WEFT_OPS_VECTOR_MATH_H_

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace weft::ops::vmath {

// On a loop over them: one copy per instruction set, picked when the library loads.
// Not under the sanitizers: an ifunc resolver runs before their runtimes are set up.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(WEFT_SANITIZED) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define WEFT_VMATH_CLONES __attribute__((target_clones("avx512f", "avx2", "default"), optimize("no-trapping-math")))
#else
#define WEFT_VMATH_CLONES
#endif

[[gnu::always_inline]] inline float FromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}
[[gnu::always_inline]] inline uint32_t ToBits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// e^x: x = n ln2 + r with |r| <= ln2/2 (ln2 split in two for an exact product), e^r by its
// Taylor series to degree 7 (truncation below 1e-8 relative), 2^n put straight into the exponent
// bits. n comes from adding 1.5 * 2^23, which rounds x log2(e) to an integer in the low mantissa
// bits without a float-to-int conversion (undefined for NaN).
[[gnu::always_inline]] inline float Exp(float x) {
  const float kLog2e = 1.44269504088896341f, kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f, kRound = 12582912.0f;
  // Below -87.5 the result is 0 (selected at the end); computing on 0 there instead of on the
  // clamped -87.5 keeps every intermediate normal: a subnormal product costs a microcode assist
  // per element, and softmax over masked scores (-10000) is made of such inputs.
  float xc = x < -87.5f ? 0.0f : x;  // comparisons, not fmin/fmax: those branch on NaN
  xc = xc > 88.75f ? 88.75f : xc;
  float n = (xc * kLog2e + kRound) - kRound;
  float r = (xc - n * kLn2Hi) - n * kLn2Lo;
  float p = 1.0f / 5040;
  p = p * r + 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  // 2^n for n in [-126, 128]: 2^min(n, 127) from the bits, times 2 when n is 128.
  float nh = n > 127.0f ? 127.0f : n;
  float scale = FromBits((ToBits(nh + kRound) + 127u) << 23);
  float y = p * scale * (n - nh + 1.0f);
  y = x > 88.7228394f ? std::numeric_limits<float>::infinity() : y;
  y = x < -87.5f ? 0.0f : y;
  return x != x ? x : y;
}

[[gnu::always_inline]] inline float Sigmoid(float x) { return 1.0f / (1.0f + Exp(-x)); }

// tanh: an odd Taylor polynomial to x^13 below |x| = 0.4 (where 1 - 2/(e^2x + 1) would cancel),
// that form above it.
[[gnu::always_inline]] inline float Tanh(float x) {
  uint32_t sign = ToBits(x) & 0x80000000u;
  float a = FromBits(ToBits(x) & 0x7fffffffu);
  float s = x * x;
  float p = 21844.0f / 6081075;
  p = p * s - 1382.0f / 155925;
  p = p * s + 62.0f / 2835;
  p = p * s - 17.0f / 315;
  p = p * s + 2.0f / 15;
  p = p * s - 1.0f / 3;
  p = p * s + 1.0f;
  float small = x * p;
  float large = FromBits(ToBits(1.0f - 2.0f / (Exp(2.0f * a) + 1.0f)) | sign);
  // A bitwise blend: with a select here the compiler keeps a branch around the division.
  uint32_t keep_small = 0u - static_cast<uint32_t>(a < 0.4f);
  return FromBits((ToBits(small) & keep_small) | (ToBits(large) & ~keep_small));
}

// erf: below |x| = 0.9 its Taylor series (odd, 12 terms: truncation below 1e-9); above, the
// classic form 1 - t (a1 + a2 t + ... + a5 t^4) e^(-x^2) with t = 1 / (1 + p x) (Abramowitz and
// Stegun 7.1.26, absolute error 1.5e-7, where erf >= 0.79). Within 2.4 ulp overall.
[[gnu::always_inline]] inline float Erf(float x) {
  uint32_t sign = ToBits(x) & 0x80000000u;
  float a = FromBits(ToBits(x) & 0x7fffffffu);
  float s = x * x;
  // 2/sqrt(pi) * sum_n (-1)^n x^(2n+1) / (n! (2n+1)), coefficients without the 2/sqrt(pi).
  float p = -1.0f / 474467328;     // n = 11: 39916800 * 23, sign (-1)^11
  p = p * s + 1.0f / 76204800;     // n = 10: 3628800 * 21
  p = p * s - 1.0f / 6894720;      // n = 9: 362880 * 19
  p = p * s + 1.0f / 685440;       // n = 8: 40320 * 17
  p = p * s - 1.0f / 75600;        // n = 7: 5040 * 15
  p = p * s + 1.0f / 9360;         // n = 6: 720 * 13
  p = p * s - 1.0f / 1320;         // n = 5: 120 * 11
  p = p * s + 1.0f / 216;          // n = 4: 24 * 9
  p = p * s - 1.0f / 42;           // n = 3: 6 * 7
  p = p * s + 1.0f / 10;           // n = 2: 2 * 5
  p = p * s - 1.0f / 3;            // n = 1
  p = p * s + 1.0f;                // n = 0
  float small = 1.12837916709551257f * x * p;
  float t = 1.0f / (1.0f + 0.3275911f * a);
  float q = 1.061405429f;
  q = q * t - 1.453152027f;
  q = q * t + 1.421413741f;
  q = q * t - 0.284496736f;
  q = q * t + 0.254829592f;
  float large = FromBits(ToBits(1.0f - q * t * Exp(-s)) | sign);
  uint32_t keep_small = 0u - static_cast<uint32_t>(a < 0.9f);
  return FromBits((ToBits(small) & keep_small) | (ToBits(large) & ~keep_small));
}

}  // namespace weft::ops::vmath

#endif  // WEFT_OPS_VECTOR_MATH_H_
