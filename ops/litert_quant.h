// TFLite's integer arithmetic, for the Tfl* operators that must match TFLite's reference kernels
// bit for bit: real multipliers as a 32-bit fixed-point significand and a power-of-two shift,
// rounding doubling high multiplies, rounding right shifts, quantized activation ranges and the
// SAME/VALID padding rules.
#ifndef WEFT_OPS_LITERT_QUANT_H_
#define WEFT_OPS_LITERT_QUANT_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace weft::ops::tfl {

// m ≈ q * 2^(shift - 31) with q in [2^30, 2^31): frexp's significand rounded to 31 bits.
inline void QuantizeMultiplier(double m, int32_t* q, int* shift) {
  if (!std::isfinite(m)) {  // +inf (a division by a zero scale): the largest; -inf, NaN: zero
    *q = m > 0 ? std::numeric_limits<int32_t>::max() : 0;
    *shift = m > 0 ? 30 : 0;
    return;
  }
  if (m == 0.0) {
    *q = 0;
    *shift = 0;
    return;
  }
  const double f = std::frexp(m, shift);
  int64_t fixed = static_cast<int64_t>(std::round(f * static_cast<double>(int64_t(1) << 31)));
  if (fixed == (int64_t(1) << 31)) {
    fixed /= 2;
    ++*shift;
  }
  if (*shift < -31) {  // everything would shift out: flush to zero
    *shift = 0;
    fixed = 0;
  }
  if (*shift > 30) {  // saturate what a 31-bit left shift could not represent
    *shift = 30;
    fixed = (int64_t(1) << 31) - 1;
  }
  *q = static_cast<int32_t>(fixed);
}

// (a * b * 2) >> 32 rounded to nearest, saturating the single overflow case.
inline int32_t SaturatingRoundingDoublingHighMul(int32_t a, int32_t b) {
  if (a == b && a == std::numeric_limits<int32_t>::min()) return std::numeric_limits<int32_t>::max();
  const int64_t ab = static_cast<int64_t>(a) * static_cast<int64_t>(b);
  const int64_t nudge = ab >= 0 ? (int64_t(1) << 30) : (1 - (int64_t(1) << 30));
  return static_cast<int32_t>((ab + nudge) / (int64_t(1) << 31));
}

// x / 2^exponent rounded to nearest, ties away from zero.
inline int32_t RoundingDivideByPOT(int32_t x, int exponent) {
  const int32_t mask = static_cast<int32_t>((int64_t(1) << exponent) - 1);
  const int32_t remainder = x & mask;
  const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

inline int32_t MultiplyByQuantizedMultiplier(int32_t x, int32_t q, int shift) {
  const int left = shift > 0 ? shift : 0;
  const int right = shift > 0 ? 0 : -shift;
  const int32_t shifted = static_cast<int32_t>(static_cast<uint32_t>(x) << left);
  return RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(shifted, q), right);
}

// The same product rounded once: (x * q) >> (31 - shift) to nearest, ties upward. LiteRT's 8-bit
// fully-connected kernel rounds this way.
inline int32_t MultiplyByQuantizedMultiplierSingleRounding(int32_t x, int32_t q, int shift) {
  const int total = 31 - shift;
  return static_cast<int32_t>((static_cast<int64_t>(x) * q + (int64_t(1) << (total - 1))) >> total);
}

// The 64-bit accumulator form (16-bit activations): the significand reduced to 16 bits, one
// rounding shift.
inline int32_t MultiplyByQuantizedMultiplier(int64_t x, int32_t q, int shift) {
  const int32_t reduced = q < 0x7FFF0000 ? ((q + (1 << 15)) >> 16) : 0x7FFF;
  const int total_shift = 15 - shift;
  const int64_t r = x * static_cast<int64_t>(reduced) + (int64_t(1) << (total_shift - 1));
  return static_cast<int32_t>(r >> total_shift);
}

// For multipliers below one (shift <= 0).
inline int32_t MultiplyByQuantizedMultiplierSmallerThanOneExp(int32_t x, int32_t q, int left_shift) {
  return RoundingDivideByPOT(SaturatingRoundingDoublingHighMul(x, q), -left_shift);
}

template <typename T>
constexpr int32_t QMin() { return static_cast<int32_t>(std::numeric_limits<T>::min()); }
template <typename T>
constexpr int32_t QMax() { return static_cast<int32_t>(std::numeric_limits<T>::max()); }

// f quantized with (scale, zero_point), computed in float as TFLite does.
inline int32_t QuantizeValue(float scale, int32_t zero_point, float f) {
  const float t = std::round(f / scale);
  return static_cast<int32_t>(t) + zero_point;
}

// v saturated to T's range.
template <typename T>
inline T Saturate(int32_t v) {
  return static_cast<T>(std::min(std::max(v, QMin<T>()), QMax<T>()));
}

enum class Activation { kNone, kRelu, kReluN1To1, kRelu6, kTanh, kSignBit };

// The clamp a fused activation applies to a quantized output in [qmin, qmax].
inline void ActivationRange(Activation a, float scale, int32_t zp, int32_t qmin, int32_t qmax, int32_t* lo, int32_t* hi) {
  *lo = qmin;
  *hi = qmax;
  if (a == Activation::kRelu) {
    *lo = std::max(qmin, QuantizeValue(scale, zp, 0.f));
  } else if (a == Activation::kRelu6) {
    *lo = std::max(qmin, QuantizeValue(scale, zp, 0.f));
    *hi = std::min(qmax, QuantizeValue(scale, zp, 6.f));
  } else if (a == Activation::kReluN1To1) {
    *lo = std::max(qmin, QuantizeValue(scale, zp, -1.f));
    *hi = std::min(qmax, QuantizeValue(scale, zp, 1.f));
  }
}

inline void ActivationRange(Activation a, float* lo, float* hi) {
  *lo = std::numeric_limits<float>::lowest();
  *hi = std::numeric_limits<float>::max();
  if (a == Activation::kRelu) *lo = 0.f;
  if (a == Activation::kRelu6) *lo = 0.f, *hi = 6.f;
  if (a == Activation::kReluN1To1) *lo = -1.f, *hi = 1.f;
}

// Output size of a convolution-like window (SAME: ceil(in / stride)).
inline int64_t ConvOutSize(bool same, int64_t in, int64_t filter, int64_t stride, int64_t dilation) {
  const int64_t eff = (filter - 1) * dilation + 1;
  if (same) return (in + stride - 1) / stride;
  return in + stride - eff < 0 ? 0 : (in + stride - eff) / stride;
}

// Leading (top/left) padding; the odd remainder of SAME padding goes after.
inline int64_t ConvPadding(int64_t stride, int64_t dilation, int64_t in, int64_t filter, int64_t out) {
  const int64_t eff = (filter - 1) * dilation + 1;
  const int64_t total = std::max<int64_t>((out - 1) * stride + eff - in, 0);
  return total / 2;
}


// MultiplyByQuantizedMultiplier for q > 0 as one floor division of a 64-bit sum, the form the
// vector kernels use. With P = (x << left) * q and right = r, the doubling high multiply is
// h = floor((P + 2^30) / 2^31) (its nudge for negative products gives the same value), and the
// rounding shift is floor((h + 2^(r-1) - [h < 0]) / 2^r) for r >= 1 (ties away from zero).
// Nested floor divisions by integers compose, so the result is
//   floor((P + 2^30 + (2^(r-1) - [P < -2^30]) * 2^31) / 2^(31 + r))      (r >= 1),
//   floor((P + 2^30) / 2^31)                                              (r = 0).
// |P| < 2^62 and the added term is below 2^61, so the sum fits in 64 bits.
struct OneFloorRescale {
  int64_t add = 0;       // 2^30 + 2^(r-1) * 2^31 (2^30 for r = 0)
  int64_t add_neg = 0;   // the same for P < -2^30: 2^31 less when r >= 1
  int64_t shift = 31;    // 31 + r
  int32_t left = 0;
  explicit OneFloorRescale(int exponent) {
    left = exponent > 0 ? exponent : 0;
    const int r = exponent > 0 ? 0 : -exponent;
    shift = 31 + r;
    add = (int64_t(1) << 30) + (r >= 1 ? (int64_t(1) << (r - 1 + 31)) : 0);
    add_neg = add - (r >= 1 ? (int64_t(1) << 31) : 0);
  }
  int32_t operator()(int32_t x, int32_t q) const {
    const int64_t p = static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(x) << left)) * q;
    return static_cast<int32_t>((p + (p < -(int64_t(1) << 30) ? add_neg : add)) >> shift);
  }
};

// One output row of an 8-bit convolution: (acc[c] + bias[c]) rescaled by channel c's multiplier
// and shift, plus the output zero point, clamped to [lo, hi]. The same arithmetic as
// MultiplyByQuantizedMultiplier (multipliers are positive, so its saturating case cannot occur),
// written without branches so that the compiler vectorizes it.
inline void RequantizeRow(const int32_t* __restrict acc, const int32_t* __restrict bias, const int32_t* __restrict mult,
                          const int32_t* __restrict shift, int32_t out_off, int32_t lo, int32_t hi, int8_t* __restrict out,
                          int64_t n) {
#pragma omp simd
  for (int64_t c = 0; c < n; ++c) {
    const int32_t x = acc[c] + (bias ? bias[c] : 0);
    const int32_t s = shift[c];
    const int32_t left = s > 0 ? s : 0, right = s > 0 ? 0 : -s;
    const int64_t ab = static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(x) << left)) * mult[c];
    const int64_t v = ab + (ab >= 0 ? (int64_t(1) << 30) : (1 - (int64_t(1) << 30)));
    const int32_t high = static_cast<int32_t>((v + (v < 0 ? (int64_t(1) << 31) - 1 : 0)) >> 31);  // v / 2^31, toward zero
    const int32_t mask = static_cast<int32_t>((uint32_t(1) << right) - 1u);
    const int32_t rem = high & mask, threshold = (mask >> 1) + (high < 0 ? 1 : 0);
    int32_t r = (high >> right) + (rem > threshold ? 1 : 0) + out_off;
    r = r < lo ? lo : r;
    r = r > hi ? hi : r;
    out[c] = static_cast<int8_t>(r);
  }
}

// SaturatingRoundingDoublingHighMul then RoundingDivideByPOT by `right`, without branches (the
// saturating case needs both operands INT32_MIN; multipliers are positive).
[[gnu::always_inline]] inline int32_t RescaleNoBranch(int32_t x, int32_t mult, int32_t right) {
  const int64_t ab = static_cast<int64_t>(x) * mult;
  const int64_t v = ab + (ab >= 0 ? (int64_t(1) << 30) : (1 - (int64_t(1) << 30)));
  const int32_t high = static_cast<int32_t>((v + (v < 0 ? (int64_t(1) << 31) - 1 : 0)) >> 31);
  const int32_t mask = static_cast<int32_t>((uint32_t(1) << right) - 1u);
  const int32_t rem = high & mask, threshold = (mask >> 1) + (high < 0 ? 1 : 0);
  return (high >> right) + (rem > threshold ? 1 : 0);
}

// Quantized Add/Sub of two same-shape 8-bit rows (sign -1 for Sub), TFLite's formula: both inputs
// shifted left by `left_shift` and rescaled (multipliers below one), summed, rescaled again.
template <typename T>
inline void AddRow(const T* __restrict a, const T* __restrict b, T* __restrict out, int64_t n, int32_t a_zp, int32_t b_zp, int left_shift,
                   int32_t m1, int32_t r1, int32_t m2, int32_t r2, int32_t sign, int32_t mo, int32_t ro, int32_t out_zp, int32_t lo,
                   int32_t hi) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const int32_t x1 = (static_cast<int32_t>(a[i]) - a_zp) * (1 << left_shift);
    const int32_t x2 = (static_cast<int32_t>(b[i]) - b_zp) * (1 << left_shift);
    const int32_t raw = RescaleNoBranch(x1, m1, r1) + sign * RescaleNoBranch(x2, m2, r2);
    int32_t v = RescaleNoBranch(raw, mo, ro) + out_zp;
    v = v < lo ? lo : v;
    v = v > hi ? hi : v;
    out[i] = static_cast<T>(v);
  }
}

// ---- fixed-point exp and reciprocal (the quantized softmax) --------------------------------
// Values are Q(m).(31-m) int32 numbers with m integer bits.

// x * 2^exponent with saturation (exponent > 0) or rounding (exponent < 0).
inline int32_t SaturatingRoundingMultiplyByPOT(int32_t x, int exponent) {
  if (exponent < 0) return RoundingDivideByPOT(x, -exponent);
  if (exponent == 0) return x;
  const int32_t threshold = static_cast<int32_t>((int64_t(1) << (31 - exponent)) - 1);
  if (x > threshold) return std::numeric_limits<int32_t>::max();
  if (x < -threshold) return std::numeric_limits<int32_t>::min();
  return static_cast<int32_t>(static_cast<uint32_t>(x) << exponent);
}

// TFLite's 16-bit lookup tables: f sampled at 513 points over the input's range (all in float),
// each of the first 512 corrected by half the error of linear interpolation at its midpoint; the
// output in units of 65536 / (output range), i.e. with zero point 0.
template <typename F>
inline void PopulateLutInt16(float in_scale, int32_t in_zp, float out_scale, int32_t out_zp, F f, int16_t* lut) {
  const float in_min = in_scale * static_cast<float>(-32768 - in_zp), in_max = in_scale * static_cast<float>(32767 - in_zp);
  const float out_min = out_scale * static_cast<float>(-32768 - out_zp), out_max = out_scale * static_cast<float>(32767 - out_zp);
  const int steps = 512;
  const float step = (in_max - in_min) / steps, half_step = step / 2;
  const float scale_inv = 65536.f / (out_max - out_min);
  auto clamp16 = [](float v) { return static_cast<int16_t>(std::min(std::max(v, -32768.f), 32767.f)); };
  for (int i = 0; i < steps; ++i) {
    const float val = f(in_min + static_cast<float>(i) * step);
    const float val_mid = f(in_min + static_cast<float>(i) * step + half_step);
    const float val_next = f(in_min + static_cast<float>(i + 1) * step);
    const float sample = std::round(val * scale_inv);
    const float mid_interp = std::round((val_next * scale_inv + std::round(val * scale_inv)) / 2);
    const float mid = std::round(val_mid * scale_inv);
    const float bias = std::round((mid_interp - mid) / 2);
    lut[i] = clamp16(sample - bias);
  }
  lut[steps] = clamp16(std::round(f(in_max) * scale_inv));
}

// A value through such a table: entry 256 + (v >> 7), interpolated by the low 7 bits.
inline int16_t LutLookupInt16(int16_t v, const int16_t* lut) {
  const int index = 256 + (v >> 7);
  const int16_t offset = static_cast<int16_t>(v & 0x7f);
  const int16_t base = lut[index];
  const int16_t slope = static_cast<int16_t>(lut[index + 1] - lut[index]);
  return static_cast<int16_t>(base + ((slope * offset + 64) >> 7));
}

// 1 / sqrt(input) as a Q0.31 multiplier and a right shift (TFLite's
// GetInvSqrtQuantizedMultiplierExp with reverse_shift -1, returned here as a left shift): the
// input scaled by powers of 4 into [2^27, 2^29), five Newton-Raphson steps from 1 in Q3.28,
// times sqrt(2)/2. Inputs 0 and 1 give INT32_MAX and shift 0.
inline void InvSqrtMultiplier(int32_t input, int32_t* multiplier, int* left_shift) {
  if (input <= 1) {
    *multiplier = std::numeric_limits<int32_t>::max();
    *left_shift = 0;
    return;
  }
  int right = 11;
  while (input >= (1 << 29)) {
    input /= 4;
    ++right;
  }
  const int pairs = (__builtin_clz(static_cast<uint32_t>(input)) - 1) / 2 - 1;
  right -= pairs;
  input <<= 2 * pairs;
  // Q3.28 arithmetic: a product of two Q3.28 values is Q6.25 (the doubling high multiply), of
  // three Q9.22; Rescale back to Q3.28 multiplies by 2^(integer bits dropped) with saturation.
  const int32_t half_input = RoundingDivideByPOT(input >> 1, 1);
  const int32_t half_three = (1 << 28) + (1 << 27);  // 1.5
  int32_t x = 1 << 28;                                // 1.0
  for (int i = 0; i < 5; ++i) {
    const int32_t x3 = SaturatingRoundingMultiplyByPOT(SaturatingRoundingDoublingHighMul(SaturatingRoundingDoublingHighMul(x, x), x), 6);
    const int32_t diff = static_cast<int32_t>(static_cast<uint32_t>(SaturatingRoundingDoublingHighMul(half_three, x)) -
                                              static_cast<uint32_t>(SaturatingRoundingDoublingHighMul(half_input, x3)));
    x = SaturatingRoundingMultiplyByPOT(diff, 3);
  }
  x = SaturatingRoundingDoublingHighMul(x, 1518500250);  // sqrt(2) / 2 in Q0.31
  if (right < 0) {
    x = static_cast<int32_t>(static_cast<uint32_t>(x) << -right);
    right = 0;
  }
  *multiplier = x;
  *left_shift = -right;
}

// exp(a) for a in [-1/4, 0), a in Q0.31; a Taylor expansion around -1/8.
inline int32_t ExpOnIntervalNegQuarterTo0(int32_t a) {
  const int32_t exp_minus_one_eighth = 1895147668;  // exp(-1/8) in Q0.31
  const int32_t one_third = 715827883;              // 1/3 in Q0.31
  const int32_t x = a + (1 << 28);                  // a + 1/8
  const int32_t x2 = SaturatingRoundingDoublingHighMul(x, x);
  const int32_t x3 = SaturatingRoundingDoublingHighMul(x2, x);
  const int32_t x4 = SaturatingRoundingDoublingHighMul(x2, x2);
  const int32_t x4_over_4 = SaturatingRoundingMultiplyByPOT(x4, -2);
  const int32_t poly = SaturatingRoundingMultiplyByPOT(SaturatingRoundingDoublingHighMul(x4_over_4 + x3, one_third) + x2, -1);
  return exp_minus_one_eighth + SaturatingRoundingDoublingHighMul(exp_minus_one_eighth, x + poly);
}

// exp(a) for a <= 0 given in Q5.26, result in Q0.31: exp of a mod 1/4, times exp(-2^k) for each
// bit k of the rest.
inline int32_t ExpOnNegativeValuesQ5(int32_t a) {
  const int kFractionalBits = 26;
  const int32_t one_quarter = 1 << 24;
  const int32_t mod_minus_quarter = (a & (one_quarter - 1)) - one_quarter;
  int32_t result = ExpOnIntervalNegQuarterTo0(SaturatingRoundingMultiplyByPOT(mod_minus_quarter, 5));
  const int32_t remainder = mod_minus_quarter - a;
  // round(exp(-2^k) * 2^31) for k = -2 .. 4
  static const int32_t kExpNegPow2[] = {1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242};
  for (int k = -2; k <= 4; ++k)
    if (remainder & (1 << (kFractionalBits + k))) result = SaturatingRoundingDoublingHighMul(result, kExpNegPow2[k + 2]);
  if (a == 0) result = std::numeric_limits<int32_t>::max();
  return result;
}

// 1 / (1 + x) for x in [0, 1) in Q0.31: Newton-Raphson in Q2.29, three steps.
inline int32_t OneOverOnePlusX(int32_t x) {
  const int64_t sum = int64_t(x) + std::numeric_limits<int32_t>::max();
  const int32_t half_denominator = static_cast<int32_t>((sum + (sum >= 0 ? 1 : -1)) / 2);
  const int32_t c48_17 = 1515870810, cneg32_17 = -1010580540;  // 48/17 and -32/17 in Q2.29
  int32_t r = c48_17 + SaturatingRoundingDoublingHighMul(half_denominator, cneg32_17);
  for (int i = 0; i < 3; ++i) {
    const int32_t hd_r = SaturatingRoundingDoublingHighMul(half_denominator, r);
    const int32_t one_minus = (1 << 29) - hd_r;
    r = r + SaturatingRoundingMultiplyByPOT(SaturatingRoundingDoublingHighMul(r, one_minus), 2);
  }
  return SaturatingRoundingMultiplyByPOT(r, 1);  // r / 2 in Q1.30, as Q0.31
}

// 1 / x for x in Q(integer_bits): a Q0.31 value times 2^-num_bits_over_unit.
inline int32_t Reciprocal(int32_t x, int integer_bits, int* num_bits_over_unit) {
  const int headroom_plus_one = x == 0 ? 32 : __builtin_clz(static_cast<uint32_t>(x));
  *num_bits_over_unit = integer_bits - headroom_plus_one;
  const int32_t shifted_minus_one = static_cast<int32_t>((static_cast<uint32_t>(x) << headroom_plus_one) - (uint32_t(1) << 31));
  return OneOverOnePlusX(shifted_minus_one);
}

// ---- 16-bit fixed point (the integer LSTM's gates) ----------------------------------------------
// Values are int16 Qm.(15-m) numbers. Additions wrap modulo 2^16 unless said otherwise, as the
// reference's 16-bit fixed-point arithmetic does; products round to nearest and saturate only
// the (-1) * (-1) case.
namespace q16 {

inline int16_t Wrap(int32_t v) { return static_cast<int16_t>(static_cast<uint16_t>(static_cast<uint32_t>(v))); }

inline int16_t Mul(int16_t a, int16_t b) {
  if (a == b && a == std::numeric_limits<int16_t>::min()) return std::numeric_limits<int16_t>::max();
  const int32_t ab = int32_t(a) * int32_t(b);
  const int32_t nudge = ab >= 0 ? (1 << 14) : (1 - (1 << 14));
  return static_cast<int16_t>((ab + nudge) / (1 << 15));
}

inline int16_t RoundShift(int16_t x, int exponent) {  // x / 2^exponent, ties away from zero
  const int32_t mask = (1 << exponent) - 1;
  const int32_t remainder = x & mask;
  const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return Wrap((x >> exponent) + (remainder > threshold ? 1 : 0));
}

// x * 2^exponent: saturating for exponent > 0, rounding for exponent < 0.
inline int16_t MulPOT(int16_t x, int exponent) {
  if (exponent < 0) return RoundShift(x, -exponent);
  if (exponent == 0) return x;
  const int32_t threshold = (1 << (15 - exponent)) - 1;
  if (x > threshold) return std::numeric_limits<int16_t>::max();
  if (x < -threshold) return std::numeric_limits<int16_t>::min();
  return Wrap(int32_t(x) * (1 << exponent));
}

// A Q0.31 (or Qm.(31-m)) constant as its 16-bit counterpart: rounded by 2^16.
inline int16_t Const(int32_t raw32) { return Wrap(RoundingDivideByPOT(raw32, 16)); }

inline int16_t SatAdd(int16_t a, int16_t b) {
  return static_cast<int16_t>(std::min<int32_t>(32767, std::max<int32_t>(-32768, int32_t(a) + int32_t(b))));
}

inline int16_t HalfSum(int16_t a, int16_t b) {
  const int32_t sum = int32_t(a) + int32_t(b);
  return static_cast<int16_t>((sum + (sum >= 0 ? 1 : -1)) / 2);
}

// exp(a) for a in [-1/4, 0) in Q0.15: a Taylor expansion around -1/8.
inline int16_t ExpQuarter(int16_t a) {
  const int16_t c = Const(1895147668), third = Const(715827883);  // exp(-1/8), 1/3
  const int16_t x = Wrap(a + (1 << 12));
  const int16_t x2 = Mul(x, x), x3 = Mul(x2, x), x4 = Mul(x2, x2);
  const int16_t x4_over_4 = MulPOT(x4, -2);
  const int16_t poly = MulPOT(Wrap(Mul(Wrap(x4_over_4 + x3), third) + x2), -1);
  return SatAdd(c, Mul(c, Wrap(x + poly)));
}

// exp(a) for a <= 0 given in Q(bits).(15-bits), bits in [0, 7]; result in Q0.15.
inline int16_t ExpNegative(int16_t a, int bits) {
  const int frac = 15 - bits;
  const int16_t quarter = static_cast<int16_t>(1 << (frac - 2));
  const int16_t a_mod_quarter_minus_quarter = Wrap((a & (quarter - 1)) - quarter);
  int16_t result = ExpQuarter(MulPOT(a_mod_quarter_minus_quarter, bits));
  const int16_t remainder = Wrap(a_mod_quarter_minus_quarter - a);
  // exp(-2^k) for k = -2 .. 4, as Q0.31 constants.
  static constexpr int32_t kExpNegPow2[7] = {1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242};
  for (int k = -2; k <= 4; ++k)
    if (bits > k && (remainder & (1 << (frac + k)))) result = Mul(result, Const(kExpNegPow2[k + 2]));
  if (bits > 5 && a < Const(-(1 << (36 - bits)))) result = 0;  // below -32
  if (a == 0) result = std::numeric_limits<int16_t>::max();
  return result;
}

// Newton-Raphson for 2 / (1 + a), a in [0, 1) in Q0.15; the estimate in Q2.13.
inline int16_t TwoOverOnePlusX(int16_t a) {
  const int16_t half_denominator = HalfSum(a, std::numeric_limits<int16_t>::max());
  const int16_t c48_17 = Const(1515870810), cneg32_17 = Const(-1010580540);  // Q2.13
  int16_t x = Wrap(c48_17 + Mul(half_denominator, cneg32_17));
  for (int i = 0; i < 3; ++i) {
    const int16_t one_minus = Wrap((1 << 13) - Mul(half_denominator, x));
    x = Wrap(x + MulPOT(Mul(x, one_minus), 2));
  }
  return x;
}

// logistic(a) for a in Q(bits).(15-bits); result in Q0.15.
inline int16_t Logistic(int16_t a, int bits) {
  if (a == 0) return Const(1 << 30);
  const int16_t abs = a > 0 ? a : Wrap(-a);
  // 1 / (1 + exp(-|a|)): half of 2 / (1 + x), from Q1.14 to Q0.15.
  const int16_t positive = MulPOT(TwoOverOnePlusX(ExpNegative(Wrap(-abs), bits)), 1);
  return a > 0 ? positive : Wrap(std::numeric_limits<int16_t>::max() - positive);
}

// tanh(a) for a in Q(bits).(15-bits), bits in [0, 6]; result in Q0.15.
inline int16_t Tanh(int16_t a, int bits) {
  if (a == 0) return 0;
  const int16_t negative_abs = a < 0 ? a : Wrap(-a);
  // (1 - e) / (1 + e) with e = exp(-2|a|): 2 / (1 + e) - 1, from Q2.13 to Q0.15.
  const int16_t t = MulPOT(Wrap(TwoOverOnePlusX(ExpNegative(negative_abs, bits + 1)) - (1 << 13)), 2);
  return a < 0 ? Wrap(-t) : t;
}

}  // namespace q16

// LOGISTIC and TANH on int16 tensors (zero points 0, output scale 2^-15), as TFLite's and TFLM's
// reference kernels compute them: the input moves to a scale of 1 / (3 * 4096) (for tanh, half
// that), where 2^17 stands for 10.67; its magnitude indexes a 256-entry table of the logistic
// function on steps of 1/24 (0.16 fixed point), interpolated linearly on the low 9 (tanh: 8) bits;
// tanh(x) = 2 * logistic(2x) - 1 and both are odd around their centre, so only |x| is looked up.
namespace s16act {
// The table those kernels interpolate: sigmoid(i / 24) in 0.16 fixed point. It is not a plain
// rounding of the function (some entries are one above), so it is data, not computed here.
inline constexpr uint16_t kSigmoidTable[256] = {
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794, 41432, 42064, 42688,
    43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409,
    51865, 52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
    57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110,
    61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186,
    63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
    64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900,
    64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208,
    65221, 65234, 65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
    65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433, 65438, 65442, 65445, 65449,
    65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474, 65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491,
    65493, 65495, 65497, 65498, 65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
    65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524,
    65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530,
    65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65535,
};

// The input multiplier and right shift the reference kernels prepare from the input scale. A
// power-of-two scale of 2^-12 (tanh: also 2^-11) gives multiplier 3 << shift and shift 0; any
// other scale a multiplier in [16384, 32767] (larger only for scales above about 2.67) and a shift.
inline void Prepare(bool tanh, double input_scale, int32_t* multiplier, int* shift) {
  const double log2 = std::log(input_scale) * (1.0 / std::log(2.0));
  const double rounded = std::round(log2);
  const int left_shift = 12 + static_cast<int>(rounded);
  if (std::abs(log2 - rounded) < 1e-3 && (left_shift == 0 || (tanh && left_shift == 1))) {
    *multiplier = 3 << left_shift;
    *shift = 0;
    return;
  }
  double m = input_scale * 4096.0 * 3.0;
  int s = 0;
  while (m <= 32767.0 / 2.0 && s <= 30) {
    ++s;
    m *= 2.0;
  }
  *multiplier = static_cast<int32_t>(m);
  *shift = s;
}

// The rescaled input. The product is in 32 bits; for scales above about 2.67 it leaves them, and it
// wraps as the reference kernels' products do on every machine they run on.
inline int32_t Rescale(int16_t x, int32_t multiplier, int shift) {
  const uint32_t rounding = shift > 0 ? (uint32_t{1} << (shift - 1)) : 0u;
  const int32_t product = static_cast<int32_t>(static_cast<uint32_t>(x) * static_cast<uint32_t>(multiplier) + rounding);
  return product >> shift;
}
inline uint32_t Magnitude(int32_t v) { return v < 0 ? 0u - static_cast<uint32_t>(v) : static_cast<uint32_t>(v); }

inline int16_t Logistic(int16_t x, int32_t multiplier, int shift) {
  const int32_t v = Rescale(x, multiplier, shift);
  const uint32_t a = Magnitude(v), index = a >> 9;
  uint32_t r = 0x7FFFu << 10;
  if (index < 255) {
    const uint32_t lo = kSigmoidTable[index], hi = kSigmoidTable[index + 1];
    r = (lo << 9) + (a & 0x1FFu) * (hi - lo);
  }
  r = v >= 0 ? r + (1u << 9) : (1u << 25) - r + (1u << 9) - 1u;
  return static_cast<int16_t>(r >> 10);
}

inline int16_t Tanh(int16_t x, int32_t multiplier, int shift) {
  const int32_t v = Rescale(x, multiplier, shift);
  const uint32_t a = Magnitude(v), index = a >> 8;
  int32_t r = 0xFFFF << 8;
  if (index < 255) {
    const uint32_t lo = kSigmoidTable[index], hi = kSigmoidTable[index + 1];
    r = static_cast<int32_t>((lo << 8) + (a & 0xFFu) * (hi - lo));
  }
  r = v >= 0 ? r - (1 << 23) + (1 << 7) : -r + (1 << 23) + (1 << 7) - 1;
  return static_cast<int16_t>(r >> 8);
}
}  // namespace s16act

}  // namespace weft::ops::tfl

#endif  // WEFT_OPS_LITERT_QUANT_H_
