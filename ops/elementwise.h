// Shared machinery for elementwise built-ins: ONNX (NumPy) broadcasting and type dispatch.
// Uses only the public SDK.
#ifndef WEFT_OPS_ELEMENTWISE_H_
#define WEFT_OPS_ELEMENTWISE_H_

#include <algorithm>
#include <string>
#include <type_traits>

#include "weft/custom_op.h"

namespace weft::ops {

// Broadcast shape of a and b, or false when they are incompatible.
inline bool BroadcastShape(const Shape& a, const Shape& b, Shape* out) {
  size_t n = std::max(a.GetDimNum(), b.GetDimNum());
  out->SetDimNum(n);
  for (size_t k = 0; k < n; ++k) {
    int64_t da = k < n - a.GetDimNum() ? 1 : a.GetDim(k - (n - a.GetDimNum()));
    int64_t db = k < n - b.GetDimNum() ? 1 : b.GetDim(k - (n - b.GetDimNum()));
    if (da != db && da != 1 && db != 1) return false;
    out->SetDim(k, da == 1 ? db : da);
  }
  return true;
}

// Strides of `in` when read as `out`'s shape (0 along broadcast dims).
inline void BroadcastStrides(const Shape& in, const Shape& out, int64_t* strides) {
  size_t n = out.GetDimNum(), off = n - in.GetDimNum();
  int64_t s = 1;
  for (size_t k = n; k-- > 0;) {
    if (k < off || in.GetDim(k - off) == 1) {
      strides[k] = 0;
    } else {
      strides[k] = s;
      s *= in.GetDim(k - off);
    }
  }
}

// Calls f(out_index, a_index, b_index) for every output element.
template <typename F>
inline void ForEachBroadcast(const Shape& a, const Shape& b, const Shape& out, F&& f) {
  int64_t total = out.GetShapeSize();
  if (a == out && b == out) {
    for (int64_t i = 0; i < total; ++i) f(i, i, i);
    return;
  }
  int64_t sa[WEFT_MAX_DIMS], sb[WEFT_MAX_DIMS], idx[WEFT_MAX_DIMS] = {0};
  BroadcastStrides(a, out, sa);
  BroadcastStrides(b, out, sb);
  int n = static_cast<int>(out.GetDimNum());
  if (total == 0) return;
  // Rows of the innermost dim, with an odometer over the outer dims.
  int64_t inner = out.GetDim(static_cast<size_t>(n - 1)), ia_step = sa[n - 1], ib_step = sb[n - 1];
  int64_t ia = 0, ib = 0;
  for (int64_t row = 0; row < total; row += inner) {
    if (ia_step == 1 && ib_step == 0) {
      for (int64_t j = 0; j < inner; ++j) f(row + j, ia + j, ib);
    } else if (ia_step == 0 && ib_step == 1) {
      for (int64_t j = 0; j < inner; ++j) f(row + j, ia, ib + j);
    } else {
      for (int64_t j = 0; j < inner; ++j) f(row + j, ia + j * ia_step, ib + j * ib_step);
    }
    for (int k = n - 2; k >= 0; --k) {
      ia += sa[k];
      ib += sb[k];
      if (++idx[k] < out.GetDim(static_cast<size_t>(k))) break;
      ia -= sa[k] * idx[k];
      ib -= sb[k] * idx[k];
      idx[k] = 0;
    }
  }
}

// Invokes f(T{}) with T the C++ type of dt; returns false for types it does not cover.
template <typename F>
inline bool DispatchNumeric(DataType dt, F&& f) {
  switch (dt) {
    case DT_FLOAT: f(float{}); return true;
    case DT_DOUBLE: f(double{}); return true;
    case DT_FLOAT16: f(float16{}); return true;
    case DT_BF16: f(bfloat16{}); return true;
    case DT_INT8: f(int8_t{}); return true;
    case DT_UINT8: f(uint8_t{}); return true;
    case DT_INT16: f(int16_t{}); return true;
    case DT_INT32: f(int32_t{}); return true;
    case DT_INT64: f(int64_t{}); return true;
    case DT_UINT16: f(uint16_t{}); return true;
    case DT_UINT32: f(uint32_t{}); return true;
    case DT_UINT64: f(uint64_t{}); return true;
    default: return false;
  }
}

// Arithmetic type used to compute on T (16-bit floats compute in float).
template <typename T> struct Compute { using type = T; };
template <> struct Compute<float16> { using type = float; };
template <> struct Compute<bfloat16> { using type = float; };

// Integer arithmetic that wraps around (two's complement), as NumPy and ONNX Runtime give it,
// instead of signed overflow, which is undefined behaviour (unsigned types narrower than int
// promote to int, so they go through unsigned too). Floats are left alone.
template <typename C>
using WrapUnsigned = std::make_unsigned_t<std::common_type_t<C, int>>;  // no promotion back to int
template <typename C> inline C WrapAdd(C a, C b) {
  if constexpr (std::is_integral_v<C> && (std::is_signed_v<C> || sizeof(C) < sizeof(int))) return static_cast<C>(WrapUnsigned<C>(a) + WrapUnsigned<C>(b));
  else return a + b;
}
template <typename C> inline C WrapSub(C a, C b) {
  if constexpr (std::is_integral_v<C> && (std::is_signed_v<C> || sizeof(C) < sizeof(int))) return static_cast<C>(WrapUnsigned<C>(a) - WrapUnsigned<C>(b));
  else return a - b;
}
template <typename C> inline C WrapMul(C a, C b) {
  if constexpr (std::is_integral_v<C> && (std::is_signed_v<C> || sizeof(C) < sizeof(int))) return static_cast<C>(WrapUnsigned<C>(a) * WrapUnsigned<C>(b));
  else return a * b;
}
template <typename C> inline C WrapNeg(C a) {
  if constexpr (std::is_integral_v<C> && std::is_signed_v<C>) return static_cast<C>(WrapUnsigned<C>(0) - WrapUnsigned<C>(a));
  else return -a;
}
// a / b for b != 0; the one overflowing quotient (INT_MIN / -1) wraps to INT_MIN.
template <typename C> inline C WrapDiv(C a, C b) {
  if constexpr (std::is_integral_v<C> && std::is_signed_v<C>) return b == C(-1) ? WrapNeg(a) : static_cast<C>(a / b);
  else return a / b;
}

template <typename T> inline typename Compute<T>::type Load(T v) { return v; }
inline float Load(float16 v) { return static_cast<float>(v); }
inline float Load(bfloat16 v) { return static_cast<float>(v); }
template <typename T, typename C> inline T Store(C v) { return static_cast<T>(v); }

inline std::string ShapeMismatch(const char* op, const Shape& a, const Shape& b) {
  return std::string(op) + ": shapes " + a.ToString() + " and " + b.ToString() + " do not broadcast";
}

}  // namespace weft::ops

#endif  // WEFT_OPS_ELEMENTWISE_H_
