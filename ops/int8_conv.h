// The 8-bit convolution and GEMM sums of the LiteRT kernels (ops/litert.cc: VNNI GEMM, oneDNN's s8 GEMM or
// the AVX2 kernel, whichever the CPU has), for other built-ins whose quantized convolutions share
// the arithmetic but not the rescaling (ONNX's ConvInteger and QLinearConv, ops/conv_pool.cc;
// MatMulInteger and QLinearMatMul, ops/quantize.cc).
#ifndef WEFT_OPS_INT8_CONV_H_
#define WEFT_OPS_INT8_CONV_H_

#include <cstdint>
#include <memory>

#include "weft/custom_op.h"

namespace weft::ops {

// A 2-D convolution over an NHWC input: n images of ih x iw x ic, oc filters of kh x kw x ic,
// strides, dilations and the leading padding (ph, pw) of an oh x ow output.
struct Int8ConvDims {
  int64_t n, ih, iw, ic, oh, ow, oc, kh, kw, sh, sw, dh, dw, ph, pw;
};

// acc[(b * oh + oy) * ow + ox][f] = sum over the taps inside the input and the channels of
// (x - x_zp) * w[f][ky][kx][c], in int32 arithmetic that wraps (as sums of at most 2^31 products
// computed in int64 and then wrapped would). x: int8 NHWC; w: int8 [oc][kh][kw][ic]; x_zp in
// [-128, 127]. False when no vectorized kernel applies (the caller computes it itself) or a
// workspace cannot be had. Declared weak: ops/litert.cc defines it, and a library built from a
// file that calls it without ops/litert.cc (an operator package made of ops/conv_pool.cc alone)
// sees a null address and computes the sums itself.
// `pre`: the filters from Int8PackB (as B [oc][kh * kw * ic]), or null.
struct Int8PackedB;
bool Int8ConvSums(EagerOpExecutionContext* ctx, const Int8ConvDims& g, const int8_t* x, int32_t x_zp, const int8_t* w, int32_t* acc,
                  const Int8PackedB* pre = nullptr) __attribute__((weak));

// QLinearConv's rescaling of the same sums, fused into the kernel: y[pixel * ldy + f] = the sum
// plus bias[f] (wrapped to int32; bias may be null), times scale[f] in float, rounded half to
// even, plus y_zero, clamped to [lo, hi] (within [-128, 255]), stored as its low byte.
struct Int8FloatRescale {
  const int32_t* bias = nullptr;
  const float* scale = nullptr;
  float y_zero = 0.f, lo = 0.f, hi = 0.f;
  uint8_t* y = nullptr;
  int64_t ldy = 0;
};
// Int8ConvSums with the rescaling fused. False where the fused kernel does not apply (it needs
// AVX-512 VNNI) or a workspace cannot be had: the caller then takes the sums. Weak.
bool Int8ConvRescaled(EagerOpExecutionContext* ctx, const Int8ConvDims& g, const int8_t* x, int32_t x_zp, const int8_t* w, const Int8FloatRescale& r,
                      const Int8PackedB* pre = nullptr) __attribute__((weak));

// A constant B laid out for the kernel ahead of the run (Int8PackB), so that a run neither packs it
// nor checks that it changed. Opaque.
// B [n][k] int8 packed for Int8GemmSums, or null where the kernel takes B as it is. Weak.
std::shared_ptr<const Int8PackedB> Int8PackB(const int8_t* b, int64_t n, int64_t k) __attribute__((weak));

// acc[i][j] = sum over c of (a[i][c] - a_zp) * b[j][c], int32 arithmetic that wraps; a [m][k] and
// b [n][k] int8 (B as rows of its columns, the layout of a filter); a_zp in [-128, 127]; `pre`:
// the same B from Int8PackB, or null. False when a workspace cannot be had or the kernel fails.
// Weak, as Int8ConvSums.
bool Int8GemmSums(EagerOpExecutionContext* ctx, int64_t m, int64_t n, int64_t k, const int8_t* a, int32_t a_zp, const int8_t* b, int32_t* acc,
                  const Int8PackedB* pre = nullptr) __attribute__((weak));

// Int8GemmSums with Int8ConvRescaled's rescaling fused (pixel = row of A, f = column): y[i * ldy + j]
// = round_half_even(float(sum + bias[j]) * scale[j]) + y_zero, clamped, stored as its low byte.
// False where the fused kernel does not apply (it needs AVX-512 VNNI). Weak.
bool Int8GemmRescaled(EagerOpExecutionContext* ctx, int64_t m, int64_t n, int64_t k, const int8_t* a, int32_t a_zp, const int8_t* b,
                      const Int8FloatRescale& r, const Int8PackedB* pre = nullptr) __attribute__((weak));

// Int8GemmSums turned into floats in the same pass: y[i * ldy + j] = float(sum) * scale[j] (+ bias[j]
// where bias is given). False where the kernel does not apply (it needs AVX-512 VNNI). Weak.
bool Int8GemmFloat(EagerOpExecutionContext* ctx, int64_t m, int64_t n, int64_t k, const int8_t* a, int32_t a_zp, const int8_t* b, const float* scale,
                   const float* bias, float* y, int64_t ldy, const Int8PackedB* pre = nullptr) __attribute__((weak));

// ONNX's DynamicQuantizeLinear on n floats, as ONNX Runtime computes it (the range widened to hold
// 0; scale (max - min) / 255, or 1 for an all-zero input; zero point and values rounded half to
// even and saturated): q [n], *scale, *zero_point. -1, or the index of the first value that is
// not finite (nothing written then). Weak: ops/quantize.cc defines it.
int64_t DynamicQuantizeUint8(const float* x, int64_t n, uint8_t* q, float* scale, uint8_t* zero_point) __attribute__((weak));

}  // namespace weft::ops

#endif  // WEFT_OPS_INT8_CONV_H_
