// TFLite's fixed-point rescaling in the one-floor form the vector kernels use, against the
// reference composition (SaturatingRoundingDoublingHighMul, then RoundingDivideByPOT) over edge
// values and random ones, for every exponent QuantizeMultiplier produces.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "litert_quant.h"
#include "litert_rescale_avx512.h"

namespace tfl = weft::ops::tfl;

TEST(LiteRtQuant, OneFloorRescaleEqualsTheReferenceComposition) {
  std::mt19937_64 rng(7);
  std::vector<int32_t> xs = {0, 1, -1, 2, -2, 3, -3, 127, -128, 255, -256, (1 << 15), -(1 << 15), (1 << 23) + 1, -(1 << 23) - 1,
                             std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min(),
                             std::numeric_limits<int32_t>::max() - 1, std::numeric_limits<int32_t>::min() + 1};
  std::uniform_int_distribution<int32_t> any(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
  std::uniform_int_distribution<int32_t> small(-70000, 70000);
  for (int i = 0; i < 400; ++i) xs.push_back(i % 2 ? any(rng) : small(rng));
  // Multipliers at the ends of [2^30, 2^31) and in between; 2^30 exactly makes ties common.
  std::vector<int32_t> qs = {1 << 30, (1 << 30) + 1, std::numeric_limits<int32_t>::max(), 1518500250, 1073741825 + 12345};
  std::uniform_int_distribution<int32_t> q_any(1 << 30, std::numeric_limits<int32_t>::max());
  for (int i = 0; i < 20; ++i) qs.push_back(q_any(rng));
  int64_t checked = 0;
  for (int exponent = -31; exponent <= 30; ++exponent) {
    const tfl::OneFloorRescale f(exponent);
    for (int32_t q : qs)
      for (int32_t x : xs) {
        // Ties: x * q exactly halfway between two results after the shift.
        ASSERT_EQ(f(x, q), tfl::MultiplyByQuantizedMultiplier(x, q, exponent)) << "x " << x << " q " << q << " exponent " << exponent;
        ++checked;
      }
  }
  EXPECT_GT(checked, 500000);
  // Exact ties of the final shift: x * 2^30 / 2^31 = x / 2 with the shift by one more.
  for (int exponent = -8; exponent <= 0; ++exponent) {
    const tfl::OneFloorRescale f(exponent);
    for (int32_t x = -4096; x <= 4096; ++x) ASSERT_EQ(f(x, 1 << 30), tfl::MultiplyByQuantizedMultiplier(x, 1 << 30, exponent)) << x;
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
// The single-precision form (tfl::RescaleFloat) against the exact one, saturated to int8 as the
// kernels store it: wherever it does not report a lane as unsure, it must be equal. The sums are
// aimed at the places where float error could show: just either side of every output step of
// [-300, 300] (the saturation edges included), around the sign threshold of the final rounding,
// plus random ones over all of int32 and random ones with |T| < 2^10. Exponents -2 to -31 (every one QuantizeMultiplier gives
// with r >= 2), multipliers at the ends of their range, every kind of offset.
__attribute__((target("avx512f,avx512dq"))) void RescaleFloatLanes(const float* scale, const int32_t* q, const int32_t* x, int32_t z,
                                                                  int32_t* y, uint16_t* unsure) {
  const tfl::FloatRescaler k = tfl::LoadFloatRescaler(scale, q, 0xFFFF, z);
  __mmask16 u = 0;
  _mm512_storeu_si512(y, tfl::RescaleFloat(k, _mm512_loadu_si512(x), u));
  *unsure = u;
}

TEST(LiteRtQuant, FloatRescaleIsExactWhereItIsSure) {
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512dq")) GTEST_SKIP() << "no AVX-512";
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int32_t> any(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
  std::uniform_int_distribution<int32_t> q_any(1 << 30, std::numeric_limits<int32_t>::max());
  const std::vector<int32_t> zs = {-128, -127, -1, 0, 1, 17, 126, 127};
  auto sat8 = [](int64_t v) { return static_cast<int32_t>(std::min<int64_t>(127, std::max<int64_t>(-128, v))); };
  int64_t checked = 0, unsure_random = 0, random = 0;
  for (int exponent = -2; exponent >= -31; --exponent) {
    const int32_t r = -exponent;
    std::vector<int32_t> qs = {1 << 30, (1 << 30) + 1, std::numeric_limits<int32_t>::max(), 1518500250};
    for (int i = 0; i < 6; ++i) qs.push_back(q_any(rng));
    const tfl::OneFloorRescale f(exponent);
    float scale[16];
    const int32_t shifts[16] = {exponent, exponent, exponent, exponent, exponent, exponent, exponent, exponent,
                                exponent, exponent, exponent, exponent, exponent, exponent, exponent, exponent};
    ASSERT_TRUE(tfl::FillFloatScales(shifts, 16, 16, scale));
    for (int32_t q : qs) {
      // The sums where T + 1/2 + 2^-(r + 1) crosses an integer, and where T = -2^-(r + 1).
      std::vector<int64_t> xs;
      const long double unit = std::ldexp(1.0L, 31 + r) / q;  // sums per step of T
      for (int k = -300; k <= 300; ++k) {
        const int64_t at = static_cast<int64_t>(std::floor((k - 0.5L - std::ldexp(1.0L, -(r + 1))) * unit));
        for (int64_t d = -3; d <= 3; ++d) xs.push_back(at + d);
      }
      const int64_t thr = static_cast<int64_t>(std::floor(-std::ldexp(1.0L, 30) / q));
      for (int64_t d = -3; d <= 3; ++d) xs.push_back(thr + d);
      for (int i = 0; i < 256; ++i) xs.push_back(any(rng));
      const size_t aimed = xs.size();  // then sums whose T is below 2^10, as a calibrated layer's are
      std::uniform_real_distribution<double> t_any(-1024.0, 1024.0);
      for (int i = 0; i < 512; ++i) xs.push_back(static_cast<int64_t>(t_any(rng) * static_cast<double>(unit)));
      while (xs.size() % 16) xs.push_back(0);
      for (int32_t z : zs)
        for (size_t i = 0; i < xs.size(); i += 16) {
          int32_t x[16], qv[16], y[16];
          for (int j = 0; j < 16; ++j) {
            const int64_t v = xs[i + j];
            x[j] = static_cast<int32_t>(std::min<int64_t>(std::numeric_limits<int32_t>::max(),
                                                          std::max<int64_t>(std::numeric_limits<int32_t>::min(), v)));
            qv[j] = q;
          }
          uint16_t unsure = 0;
          RescaleFloatLanes(scale, qv, x, z, y, &unsure);
          for (int j = 0; j < 16; ++j) {
            if (i + j >= aimed) {
              ++random;
              unsure_random += (unsure >> j) & 1;
            }
            if ((unsure >> j) & 1) continue;
            ASSERT_EQ(sat8(y[j]), sat8(int64_t{f(x[j], q)} + z))
                << "x " << x[j] << " q " << q << " exponent " << exponent << " offset " << z << " float " << y[j];
            ++checked;
          }
        }
    }
  }
  EXPECT_GT(checked, 1000000);
  // Unsure lanes (each costs an exact redo) are rare where outputs are not far past saturation.
  EXPECT_LT(unsure_random * 100, random) << unsure_random << " of " << random;
}
#endif
