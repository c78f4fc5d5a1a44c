// float32 exp, sigmoid and tanh written without branches or library calls, so that loops over
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
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
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
  float xc = x < -87.5f ? -87.5f : x;  // comparisons, not fmin/fmax: those branch on NaN
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

}  // namespace weft::ops::vmath

#endif  // WEFT_OPS_VECTOR_MATH_H_
