// TFLite's fixed-point rescaling in the one-floor form the vector kernels use, against the
// reference composition (SaturatingRoundingDoublingHighMul, then RoundingDivideByPOT) over edge
// values and random ones, for every exponent QuantizeMultiplier produces.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "litert_quant.h"

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
