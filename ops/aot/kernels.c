/* Portable C99 kernels that the built-in operators' emitters call from generated modules (weft aot).
 *
 * This file is text to the op library: it is split at the "@helper NAME [needs: A B]" markers
 * and each section is emitted, once per module, into the modules whose operators ask for it (the
 * sections a helper needs first). Everything is static: a program may link several modules.
 * The Tfl* kernels use TFLite's reference arithmetic, the same as the runtime kernels in
 * ops/litert.cc and ops/litert_quant.h, so integer results are identical bit for bit; the others
 * compute ONNX's semantics in float.
 * WEFT_AOT_UNUSED is defined by the module before any helper. */

/* @helper weft_fixed_point */
/* (a * b * 2) >> 32 rounded to nearest, saturating the one overflow case. */
static WEFT_AOT_UNUSED int32_t weft_srdhm(int32_t a, int32_t b) {
  int64_t ab, nudge;
  if (a == b && a == INT32_MIN) return INT32_MAX;
  ab = (int64_t)a * (int64_t)b;
  nudge = ab >= 0 ? ((int64_t)1 << 30) : (1 - ((int64_t)1 << 30));
  return (int32_t)((ab + nudge) / ((int64_t)1 << 31));
}

/* x / 2^exponent rounded to nearest, ties away from zero. */
static WEFT_AOT_UNUSED int32_t weft_rdpot(int32_t x, int exponent) {
  const int32_t mask = (int32_t)(((int64_t)1 << exponent) - 1);
  const int32_t remainder = x & mask;
  const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

/* x * q * 2^(shift - 31): the doubling high multiply, then a rounding right shift. */
static WEFT_AOT_UNUSED int32_t weft_mbqm(int32_t x, int32_t q, int shift) {
  const int left = shift > 0 ? shift : 0;
  const int right = shift > 0 ? 0 : -shift;
  const int32_t shifted = (int32_t)((uint32_t)x << left);
  return weft_rdpot(weft_srdhm(shifted, q), right);
}

/* The same product rounded once, ties upward (TFLite's 8-bit fully-connected). */
static WEFT_AOT_UNUSED int32_t weft_mbqm_single(int32_t x, int32_t q, int shift) {
  const int total = 31 - shift;
  return (int32_t)(((int64_t)x * q + ((int64_t)1 << (total - 1))) >> total);
}

/* The 64-bit accumulator form (16-bit activations): the multiplier reduced to 16 bits. */
static WEFT_AOT_UNUSED int32_t weft_mbqm64(int64_t x, int32_t q, int shift) {
  const int32_t reduced = q < 0x7FFF0000 ? ((q + (1 << 15)) >> 16) : 0x7FFF;
  const int total_shift = 15 - shift;
  const int64_t r = x * (int64_t)reduced + ((int64_t)1 << (total_shift - 1));
  return (int32_t)(r >> total_shift);
}

static WEFT_AOT_UNUSED int32_t weft_clamp32(int32_t v, int32_t lo, int32_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* x * 2^exponent, saturating (exponent > 0) or rounding (exponent < 0). */
static WEFT_AOT_UNUSED int32_t weft_srmpot(int32_t x, int exponent) {
  int32_t threshold;
  if (exponent < 0) return weft_rdpot(x, -exponent);
  if (exponent == 0) return x;
  threshold = (int32_t)(((int64_t)1 << (31 - exponent)) - 1);
  if (x > threshold) return INT32_MAX;
  if (x < -threshold) return INT32_MIN;
  return (int32_t)((uint32_t)x << exponent);
}

/* @helper weft_conv_geometry */
/* A convolution's geometry: NHWC input and output; OHWI filters (depthwise: 1HWO, wic 1). */
typedef struct weft_conv {
  int32_t n, ih, iw, ic, oh, ow, oc, kh, kw, sh, sw, dh, dw, ph, pw;
  int32_t wic;       /* input channels each filter reads */
  int32_t per_group; /* output channels per group */
  int32_t depthwise;
} weft_conv;

static WEFT_AOT_UNUSED int32_t weft_conv_in_base(const weft_conv* g, int32_t oc) {
  return g->depthwise ? oc / g->per_group : (oc / g->per_group) * g->wic;
}

static WEFT_AOT_UNUSED int32_t weft_conv_filter_at(const weft_conv* g, int32_t oc, int32_t ky, int32_t kx, int32_t c) {
  return g->depthwise ? (ky * g->kw + kx) * g->oc + oc : ((oc * g->kh + ky) * g->kw + kx) * g->wic + c;
}

/* @helper weft_conv_f32 needs: weft_conv_geometry */
static void weft_conv_f32(const weft_conv* g, const float* x, const float* w, const float* bias, float lo, float hi, float* y) {
  int32_t b, oy, ox, oc, ky, kx, c;
  for (b = 0; b < g->n; ++b)
    for (oy = 0; oy < g->oh; ++oy)
      for (ox = 0; ox < g->ow; ++ox)
        for (oc = 0; oc < g->oc; ++oc) {
          float acc = 0.f;
          const int32_t base = weft_conv_in_base(g, oc);
          for (ky = 0; ky < g->kh; ++ky) {
            const int32_t iy = oy * g->sh - g->ph + ky * g->dh;
            if (iy < 0 || iy >= g->ih) continue;
            for (kx = 0; kx < g->kw; ++kx) {
              const int32_t ix = ox * g->sw - g->pw + kx * g->dw;
              const float* row;
              if (ix < 0 || ix >= g->iw) continue;
              row = x + ((int64_t)(b * g->ih + iy) * g->iw + ix) * g->ic + base;
              for (c = 0; c < g->wic; ++c) acc += row[c] * w[weft_conv_filter_at(g, oc, ky, kx, c)];
            }
          }
          acc = acc + (bias ? bias[oc] : 0.f);
          acc = acc < lo ? lo : acc;
          acc = acc > hi ? hi : acc;
          y[((int64_t)(b * g->oh + oy) * g->ow + ox) * g->oc + oc] = acc;
        }
}

/* @helper weft_conv_q needs: weft_fixed_point weft_conv_geometry */
/* 8-bit (type 8) or 16-bit (type 16) activations with int8 filters. 8-bit: int32 sums and bias,
 * double-rounding rescale; 16-bit: int64 sums and bias (or int32 bias, then as 8-bit). */
static void weft_conv_q(const weft_conv* g, int type, const void* xv, const int8_t* w, const int32_t* b32, const int64_t* b64,
                        const int32_t* mult, const int32_t* shift, int32_t in_off, int32_t out_off, int32_t lo, int32_t hi,
                        void* yv) {
  int32_t b, oy, ox, oc, ky, kx, c;
  const int8_t* x8 = (const int8_t*)xv;
  const int16_t* x16 = (const int16_t*)xv;
  for (b = 0; b < g->n; ++b)
    for (oy = 0; oy < g->oh; ++oy)
      for (ox = 0; ox < g->ow; ++ox)
        for (oc = 0; oc < g->oc; ++oc) {
          int64_t acc = 0;
          int32_t v;
          const int64_t out_index = ((int64_t)(b * g->oh + oy) * g->ow + ox) * g->oc + oc;
          const int32_t base = weft_conv_in_base(g, oc);
          for (ky = 0; ky < g->kh; ++ky) {
            const int32_t iy = oy * g->sh - g->ph + ky * g->dh;
            if (iy < 0 || iy >= g->ih) continue;
            for (kx = 0; kx < g->kw; ++kx) {
              const int32_t ix = ox * g->sw - g->pw + kx * g->dw;
              int64_t pixel;
              if (ix < 0 || ix >= g->iw) continue;
              pixel = ((int64_t)(b * g->ih + iy) * g->iw + ix) * g->ic + base;
              if (type == 16) {
                for (c = 0; c < g->wic; ++c)
                  acc += (int64_t)w[weft_conv_filter_at(g, oc, ky, kx, c)] * ((int32_t)x16[pixel + c] + in_off);
              } else {
                for (c = 0; c < g->wic; ++c)
                  acc += (int64_t)w[weft_conv_filter_at(g, oc, ky, kx, c)] * ((int32_t)x8[pixel + c] + in_off);
              }
            }
          }
          if (type == 16 && !b32) {
            if (b64) acc += b64[oc];
            v = weft_mbqm64(acc, mult[oc], shift[oc]);
          } else {
            int32_t a32 = (int32_t)acc;
            if (b32) a32 += b32[oc];
            v = weft_mbqm(a32, mult[oc], shift[oc]);
          }
          v = weft_clamp32(v + out_off, lo, hi);
          if (type == 16) ((int16_t*)yv)[out_index] = (int16_t)v;
          else ((int8_t*)yv)[out_index] = (int8_t)v;
        }
}

/* @helper weft_fully_connected_f32 */
static void weft_fully_connected_f32(int32_t rows, int32_t oc, int32_t ic, const float* x, const float* w, const float* bias,
                                     float lo, float hi, float* y) {
  int32_t r, o, c;
  for (r = 0; r < rows; ++r)
    for (o = 0; o < oc; ++o) {
      float acc = 0.f;
      for (c = 0; c < ic; ++c) acc += x[(int64_t)r * ic + c] * w[(int64_t)o * ic + c];
      if (bias) acc += bias[o];
      acc = acc < lo ? lo : acc;
      acc = acc > hi ? hi : acc;
      y[(int64_t)r * oc + o] = acc;
    }
}

/* @helper weft_hybrid_quantize */
/* A hybrid layer's float input (one row or one image) quantized to int8 as the runtime does it, in
 * float arithmetic: symmetric (scale max|x| / 127, values in [-127, 127]) or asymmetric (the
 * [min, max] range holding 0 in 255 steps, the zero point from the end with the smaller error,
 * added to each rounded x / scale);
 * all zeros: zeros, scale 1, zero point 0. */
static void weft_hybrid_quantize(const float* x, int64_t n, int asym, int8_t* q, float* scale, int32_t* offset) {
  int64_t c;
  float mn = 0.f, mx = 0.f;
  *scale = 1.f;
  *offset = 0;
  if (n > 0) {
    mn = x[0];
    mx = x[0];
    for (c = 1; c < n; ++c) {
      mn = x[c] < mn ? x[c] : mn;
      mx = x[c] > mx ? x[c] : mx;
    }
  }
  if (!asym) {
    const float range = fabsf(mn) > fabsf(mx) ? fabsf(mn) : fabsf(mx);
    float inv;
    if (range == 0.f) {
      for (c = 0; c < n; ++c) q[c] = 0;
      return;
    }
    inv = 127.f / range;
    *scale = range / 127.f;
    for (c = 0; c < n; ++c) {
      float f = x[c] * inv;
      int32_t v;
      f = f > -512.f ? f : -512.f; /* NaN too: the lowest code, as the runtime */
      f = f < 512.f ? f : 512.f;
      v = (int32_t)roundf(f);
      q[c] = (int8_t)(v < -127 ? -127 : v > 127 ? 127 : v);
    }
  } else {
    const float rmin = mn < 0.f ? mn : 0.f, rmax = mx > 0.f ? mx : 0.f;
    float s, from_min, from_max, zp, inv;
    if (rmin == rmax) {
      for (c = 0; c < n; ++c) q[c] = 0;
      return;
    }
    s = (rmax - rmin) / 255.f;
    from_min = -128.f - rmin / s;
    from_max = 127.f - rmax / s;
    zp = 128.f + fabsf(rmin / s) < 127.f + fabsf(rmax / s) ? from_min : from_max;
    *offset = zp != zp ? 0 : zp <= -128.f ? -128 : zp >= 127.f ? 127 : (int32_t)roundf(zp); /* no zero point (NaN): 0, as the runtime */
    *scale = s;
    inv = 1.f / s;
    for (c = 0; c < n; ++c) {
      float f = x[c] * inv;
      int32_t v;
      f = f > -512.f ? f : -512.f; /* NaN too: the lowest code, as the runtime */
      f = f < 512.f ? f : 512.f;
      v = (int32_t)roundf(f) + *offset; /* the product rounded, then the zero point */
      q[c] = (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
    }
  }
}

/* @helper weft_fully_connected_hybrid needs: weft_hybrid_quantize */
/* A float input with int8 weights (dynamic-range quantized models): each input row quantized on
 * the fly (weft_hybrid_quantize, asymmetric when asym), the int32 dot products scaled back by the
 * row's scale times the weights' (per tensor: ch_scales 0, w_scale; per channel: ch_scales[oc]),
 * added to the bias, clamped. q: ic bytes of scratch. */
static void weft_fully_connected_hybrid(int32_t rows, int32_t oc, int32_t ic, const float* x, const int8_t* w, const float* bias,
                                        const float* ch_scales, float w_scale, int asym, float lo, float hi, int8_t* q, float* y) {
  int32_t r, o, c;
  for (r = 0; r < rows; ++r) {
    float scale;
    int32_t offset;
    weft_hybrid_quantize(x + (int64_t)r * ic, ic, asym, q, &scale, &offset);
    for (o = 0; o < oc; ++o) {
      int32_t dot = 0;
      float v, prod;
      for (c = 0; c < ic; ++c) dot += (int32_t)w[(int64_t)o * ic + c] * ((int32_t)q[c] - offset);
      prod = scale * (ch_scales ? ch_scales[o] : w_scale);
      prod = (float)dot * prod;
      v = (bias ? bias[o] : 0.f) + prod;
      v = v < lo ? lo : v;
      v = v > hi ? hi : v;
      y[(int64_t)r * oc + o] = v;
    }
  }
}

/* @helper weft_conv_hybrid needs: weft_conv_geometry weft_hybrid_quantize */
/* A convolution of a float input with int8 filters, as the runtime computes it: each image
 * quantized on the fly into q (one image's bytes of scratch), int32 sums over the taps inside the
 * input, rescaled in float by mode: 0 (CONV_2D, one filter scale w_scale) symmetric input,
 * sum * (scale * w_scale); 1 (CONV_2D, channel scales) asymmetric, (sum * ch_scales[oc]) * scale;
 * 2 (DEPTHWISE_CONV_2D) asymmetric, sum * (ch_scales[oc] * scale). Then bias and clamp. */
static void weft_conv_hybrid(const weft_conv* g, int mode, const float* x, const int8_t* w, const float* bias, const float* ch_scales,
                             float lo, float hi, int8_t* q, float* y) {
  int32_t b, oy, ox, oc, ky, kx, c;
  const int64_t image = (int64_t)g->ih * g->iw * g->ic;
  for (b = 0; b < g->n; ++b) {
    float scale;
    int32_t offset;
    weft_hybrid_quantize(x + b * image, image, mode != 0, q, &scale, &offset);
    for (oy = 0; oy < g->oh; ++oy)
      for (ox = 0; ox < g->ow; ++ox)
        for (oc = 0; oc < g->oc; ++oc) {
          int32_t acc = 0;
          float v;
          const int32_t base = weft_conv_in_base(g, oc);
          for (ky = 0; ky < g->kh; ++ky) {
            const int32_t iy = oy * g->sh - g->ph + ky * g->dh;
            if (iy < 0 || iy >= g->ih) continue;
            for (kx = 0; kx < g->kw; ++kx) {
              const int32_t ix = ox * g->sw - g->pw + kx * g->dw;
              const int8_t* row;
              if (ix < 0 || ix >= g->iw) continue;
              row = q + ((int64_t)iy * g->iw + ix) * g->ic + base;
              for (c = 0; c < g->wic; ++c) acc += (int32_t)w[weft_conv_filter_at(g, oc, ky, kx, c)] * ((int32_t)row[c] - offset);
            }
          }
          v = (float)acc;
          if (mode == 1) {
            v = v * ch_scales[oc];
            v = v * scale;
          } else {
            const float s = mode == 0 ? scale * ch_scales[oc] : ch_scales[oc] * scale;
            v = v * s;
          }
          if (bias) v = v + bias[oc];
          v = v < lo ? lo : v;
          v = v > hi ? hi : v;
          y[((int64_t)(b * g->oh + oy) * g->ow + ox) * g->oc + oc] = v;
        }
  }
}

/* @helper weft_fully_connected_q needs: weft_fixed_point */
/* 8-bit activations (type 8): int32 sums, single-rounding rescale. 16-bit (type 16): int64 sums
 * with an int64 bias and the 64-bit rescale, or an int32 bias and the 8-bit arithmetic. */
static void weft_fully_connected_q(int type, int32_t rows, int32_t oc, int32_t ic, const void* xv, const int8_t* w,
                                   const int32_t* b32, const int64_t* b64, const int32_t* mult, const int32_t* shift,
                                   int32_t in_off, int32_t w_off, int32_t out_off, int32_t lo, int32_t hi, void* yv) {
  int32_t r, o, c;
  for (r = 0; r < rows; ++r)
    for (o = 0; o < oc; ++o) {
      int64_t acc = 0;
      int32_t v;
      const int8_t* wr = w + (int64_t)o * ic;
      if (type == 16) {
        const int16_t* xr = (const int16_t*)xv + (int64_t)r * ic;
        for (c = 0; c < ic; ++c) acc += (int64_t)((int32_t)wr[c] + w_off) * ((int32_t)xr[c] + in_off);
      } else {
        const int8_t* xr = (const int8_t*)xv + (int64_t)r * ic;
        for (c = 0; c < ic; ++c) acc += (int64_t)((int32_t)wr[c] + w_off) * ((int32_t)xr[c] + in_off);
      }
      if (type == 16 && !b32) v = weft_mbqm64(acc + (b64 ? b64[o] : 0), mult[o], shift[o]);
      else v = weft_mbqm_single((int32_t)acc + (b32 ? b32[o] : 0), mult[o], shift[o]);
      v = weft_clamp32(v + out_off, lo, hi);
      if (type == 16) ((int16_t*)yv)[(int64_t)r * oc + o] = (int16_t)v;
      else ((int8_t*)yv)[(int64_t)r * oc + o] = (int8_t)v;
    }
}

/* @helper weft_pool */
/* Average (avg != 0) or max pooling over NHWC, windows clipped at the borders; 8- and 16-bit
 * averages round half away from zero. type: 0 float, 8 int8, 16 int16. */
static void weft_pool(int type, int avg, int32_t n, int32_t ih, int32_t iw, int32_t ch, int32_t oh, int32_t ow, int32_t fh,
                      int32_t fw, int32_t sh, int32_t sw, int32_t ph, int32_t pw, float flo, float fhi, int32_t lo, int32_t hi,
                      const void* xv, void* yv) {
  int32_t b, oy, ox, c, fy, fx;
  for (b = 0; b < n; ++b)
    for (oy = 0; oy < oh; ++oy)
      for (ox = 0; ox < ow; ++ox) {
        const int32_t y0 = oy * sh - ph, x0 = ox * sw - pw;
        const int32_t fy0 = y0 < 0 ? -y0 : 0, fy1 = fh < ih - y0 ? fh : ih - y0;
        const int32_t fx0 = x0 < 0 ? -x0 : 0, fx1 = fw < iw - x0 ? fw : iw - x0;
        for (c = 0; c < ch; ++c) {
          const int64_t out_index = ((int64_t)(b * oh + oy) * ow + ox) * ch + c;
          float facc = 0.f, fmax = -3.402823466e+38f;
          int64_t iacc = 0, count = 0, imax = type == 16 ? -32768 : -128;
          for (fy = fy0; fy < fy1; ++fy)
            for (fx = fx0; fx < fx1; ++fx) {
              const int64_t i = ((int64_t)(b * ih + y0 + fy) * iw + x0 + fx) * ch + c;
              if (type == 0) {
                const float v = ((const float*)xv)[i];
                facc += v;
                fmax = v > fmax ? v : fmax;
              } else {
                const int64_t v = type == 16 ? ((const int16_t*)xv)[i] : ((const int8_t*)xv)[i];
                iacc += v;
                imax = v > imax ? v : imax;
              }
              ++count;
            }
          if (type == 0) {
            float v = avg ? (count ? facc / (float)count : 0.f) : fmax;
            v = v < flo ? flo : v;
            v = v > fhi ? fhi : v;
            ((float*)yv)[out_index] = v;
          } else {
            int64_t v = imax;
            if (avg) v = count == 0 ? 0 : iacc > 0 ? (iacc + count / 2) / count : (iacc - count / 2) / count;
            v = v < lo ? lo : v;
            v = v > hi ? hi : v;
            if (type == 16) ((int16_t*)yv)[out_index] = (int16_t)v;
            else ((int8_t*)yv)[out_index] = (int8_t)v;
          }
        }
      }
}

/* @helper weft_softmax_f32 */
static void weft_softmax_f32(int32_t rows, int32_t depth, float beta, const float* x, float* y) {
  int32_t r, c;
  for (r = 0; r < rows; ++r) {
    const float* in = x + (int64_t)r * depth;
    float* out = y + (int64_t)r * depth;
    float m = in[0], sum = 0.f;
    for (c = 1; c < depth; ++c) m = in[c] > m ? in[c] : m;
    for (c = 0; c < depth; ++c) sum += out[c] = expf((in[c] - m) * beta);
    for (c = 0; c < depth; ++c) out[c] /= sum;
  }
}

/* @helper weft_softmax_q needs: weft_fixed_point */
/* exp(a) for a in [-1/4, 0) in Q0.31: a Taylor expansion around -1/8. */
static int32_t weft_exp_neg_quarter(int32_t a) {
  const int32_t exp_minus_one_eighth = 1895147668;
  const int32_t one_third = 715827883;
  const int32_t x = a + (1 << 28);
  const int32_t x2 = weft_srdhm(x, x);
  const int32_t x3 = weft_srdhm(x2, x);
  const int32_t x4 = weft_srdhm(x2, x2);
  const int32_t x4_over_4 = weft_srmpot(x4, -2);
  const int32_t poly = weft_srmpot(weft_srdhm(x4_over_4 + x3, one_third) + x2, -1);
  return exp_minus_one_eighth + weft_srdhm(exp_minus_one_eighth, x + poly);
}

/* exp(a) for a <= 0 in Q5.26, result in Q0.31. */
static int32_t weft_exp_negative_q5(int32_t a) {
  static const int32_t exp_neg_pow2[7] = {1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242};
  const int32_t one_quarter = 1 << 24;
  const int32_t mod_minus_quarter = (a & (one_quarter - 1)) - one_quarter;
  int32_t result = weft_exp_neg_quarter(weft_srmpot(mod_minus_quarter, 5));
  const int32_t remainder = mod_minus_quarter - a;
  int k;
  for (k = -2; k <= 4; ++k)
    if (remainder & (1 << (26 + k))) result = weft_srdhm(result, exp_neg_pow2[k + 2]);
  if (a == 0) result = INT32_MAX;
  return result;
}

/* 1 / (1 + x) for x in [0, 1) in Q0.31. */
static int32_t weft_one_over_one_plus_x(int32_t x) {
  const int64_t sum = (int64_t)x + INT32_MAX;
  const int32_t half_denominator = (int32_t)((sum + (sum >= 0 ? 1 : -1)) / 2);
  const int32_t c48_17 = 1515870810, cneg32_17 = -1010580540;
  int32_t r = c48_17 + weft_srdhm(half_denominator, cneg32_17);
  int i;
  for (i = 0; i < 3; ++i) {
    const int32_t hd_r = weft_srdhm(half_denominator, r);
    const int32_t one_minus = (1 << 29) - hd_r;
    r = r + weft_srmpot(weft_srdhm(r, one_minus), 2);
  }
  return weft_srmpot(r, 1);
}

static int weft_clz32(uint32_t x) {
  int n = 0;
  if (x == 0) return 32;
  while (!(x & 0x80000000u)) {
    x <<= 1;
    ++n;
  }
  return n;
}

/* Quantized softmax over the last axis: 8-bit input (in_type 8 int8, 9 uint8), output int8 (8),
 * uint8 (9) or int16 (16). */
static void weft_softmax_q(int32_t rows, int32_t depth, int in_type, int out_type, int32_t mult, int left, int32_t diff_min,
                           const void* xv, void* yv) {
  const int out_bits = out_type == 16 ? 16 : 8;
  const int32_t out_min = out_type == 8 ? -128 : out_type == 9 ? 0 : -32768;
  const int32_t out_max = out_type == 8 ? 127 : out_type == 9 ? 255 : 32767;
  int32_t r, c;
  for (r = 0; r < rows; ++r) {
    int32_t m = INT32_MIN, sum = 0, scale, headroom;
    int bits_over_unit;
    for (c = 0; c < depth; ++c) {
      const int64_t i = (int64_t)r * depth + c;
      const int32_t v = in_type == 8 ? ((const int8_t*)xv)[i] : ((const uint8_t*)xv)[i];
      m = v > m ? v : m;
    }
    for (c = 0; c < depth; ++c) {
      const int64_t i = (int64_t)r * depth + c;
      const int32_t diff = (in_type == 8 ? ((const int8_t*)xv)[i] : ((const uint8_t*)xv)[i]) - m;
      if (diff >= diff_min) sum += weft_rdpot(weft_exp_negative_q5(weft_srdhm((int32_t)((uint32_t)diff << left), mult)), 12);
    }
    headroom = weft_clz32((uint32_t)sum);
    bits_over_unit = 12 - headroom;
    scale = weft_one_over_one_plus_x((int32_t)(((uint32_t)sum << headroom) - ((uint32_t)1 << 31)));
    for (c = 0; c < depth; ++c) {
      const int64_t i = (int64_t)r * depth + c;
      const int32_t diff = (in_type == 8 ? ((const int8_t*)xv)[i] : ((const uint8_t*)xv)[i]) - m;
      int32_t v = out_min;
      if (diff >= diff_min) {
        const int32_t e = weft_exp_negative_q5(weft_srdhm((int32_t)((uint32_t)diff << left), mult));
        v = weft_rdpot(weft_srdhm(scale, e), bits_over_unit + 31 - out_bits) + out_min;
      }
      v = weft_clamp32(v, out_min, out_max);
      if (out_type == 8) ((int8_t*)yv)[i] = (int8_t)v;
      else if (out_type == 9) ((uint8_t*)yv)[i] = (uint8_t)v;
      else ((int16_t*)yv)[i] = (int16_t)v;
    }
  }
}

/* @helper weft_broadcast */
/* Where output element o reads its two inputs: dims of the output (rank at most 8) and each
 * input's strides along them (0 where it broadcasts). */
typedef struct weft_bcast {
  int32_t rank;
  int64_t dims[8], sa[8], sb[8];
} weft_bcast;

static void weft_bcast_index(const weft_bcast* g, int64_t o, int64_t* i, int64_t* j) {
  int64_t ii = 0, jj = 0;
  int32_t d;
  for (d = g->rank - 1; d >= 0; --d) {
    const int64_t c = o % g->dims[d];
    o /= g->dims[d];
    ii += c * g->sa[d];
    jj += c * g->sb[d];
  }
  *i = ii;
  *j = jj;
}

/* @helper weft_binary_f32 needs: weft_broadcast */
/* op 0 add, 1 sub, 2 mul, 3 div; g NULL when both inputs have the output's shape. */
static void weft_binary_f32(int op, int64_t n, const weft_bcast* g, const float* a, const float* b, float lo, float hi, float* y) {
  int64_t o, i = 0, j = 0;
  for (o = 0; o < n; ++o) {
    float v;
    if (g) weft_bcast_index(g, o, &i, &j);
    else i = j = o;
    v = op == 0 ? a[i] + b[j] : op == 1 ? a[i] - b[j] : op == 2 ? a[i] * b[j] : a[i] / b[j];
    v = v < lo ? lo : v;
    y[o] = v > hi ? hi : v;
  }
}

/* @helper weft_qio */
/* Loads and stores of 8- and 16-bit quantized elements: type 8 int8, 9 uint8, 16 int16. */
static WEFT_AOT_UNUSED int32_t weft_qload(int type, const void* p, int64_t i) {
  return type == 8 ? ((const int8_t*)p)[i] : type == 9 ? ((const uint8_t*)p)[i] : ((const int16_t*)p)[i];
}

static WEFT_AOT_UNUSED void weft_qstore(int type, void* p, int64_t i, int32_t v) {
  if (type == 8) ((int8_t*)p)[i] = (int8_t)v;
  else if (type == 9) ((uint8_t*)p)[i] = (uint8_t)v;
  else ((int16_t*)p)[i] = (int16_t)v;
}

/* @helper weft_add_q needs: weft_fixed_point weft_broadcast weft_qio */
/* Quantized add (sign 1) or sub (sign -1): both inputs shifted left by `left`, rescaled by
 * multipliers below one, combined, rescaled to the output. */
static void weft_add_q(int type, int32_t sign, int64_t n, const weft_bcast* g, const void* a, const void* b, int32_t a_zp, int32_t b_zp,
                       int left, int32_t m1, int s1, int32_t m2, int s2, int32_t mo, int so, int32_t out_zp, int32_t lo, int32_t hi,
                       void* y) {
  int64_t o, i = 0, j = 0;
  for (o = 0; o < n; ++o) {
    int32_t x1, x2, v1, v2, v;
    if (g) weft_bcast_index(g, o, &i, &j);
    else i = j = o;
    x1 = (weft_qload(type, a, i) - a_zp) * (1 << left);
    x2 = (weft_qload(type, b, j) - b_zp) * (1 << left);
    v1 = weft_rdpot(weft_srdhm(x1, m1), -s1);
    v2 = weft_rdpot(weft_srdhm(x2, m2), -s2);
    v = weft_rdpot(weft_srdhm(sign > 0 ? v1 + v2 : v1 - v2, mo), -so) + out_zp;
    weft_qstore(type, y, o, weft_clamp32(v, lo, hi));
  }
}

/* @helper weft_mul_q needs: weft_fixed_point weft_broadcast weft_qio */
static void weft_mul_q(int type, int64_t n, const weft_bcast* g, const void* a, const void* b, int32_t a_zp, int32_t b_zp, int32_t m, int s,
                       int32_t out_zp, int32_t lo, int32_t hi, void* y) {
  int64_t o, i = 0, j = 0;
  for (o = 0; o < n; ++o) {
    int32_t prod;
    if (g) weft_bcast_index(g, o, &i, &j);
    else i = j = o;
    prod = (weft_qload(type, a, i) - a_zp) * (weft_qload(type, b, j) - b_zp);
    weft_qstore(type, y, o, weft_clamp32(weft_mbqm(prod, m, s) + out_zp, lo, hi));
  }
}

/* @helper weft_strided_copy */
/* Output element o (rank at most 8, dims `dims`) is input element base + sum(c_d * src_stride[d]),
 * c the coordinates of o: transposes, slices with any strides. */
static void weft_strided_copy(int32_t elem, int32_t rank, const int64_t* dims, const int64_t* src_stride, int64_t base, int64_t n,
                              const void* x, void* y) {
  int64_t o;
  for (o = 0; o < n; ++o) {
    int64_t rest = o, src = base;
    int32_t d;
    for (d = rank - 1; d >= 0; --d) {
      src += (rest % dims[d]) * src_stride[d];
      rest /= dims[d];
    }
    if (elem == 1) ((uint8_t*)y)[o] = ((const uint8_t*)x)[src];
    else if (elem == 2) ((uint16_t*)y)[o] = ((const uint16_t*)x)[src];
    else if (elem == 4) ((uint32_t*)y)[o] = ((const uint32_t*)x)[src];
    else ((uint64_t*)y)[o] = ((const uint64_t*)x)[src];
  }
}

/* @helper weft_pad */
/* Every output element set to `value` (elem bytes), then input element i stored at output element
 * base + sum(c_d * out_stride[d]), c the coordinates of i in the input (dims `dims`). */
static void weft_pad(int32_t elem, int32_t rank, const int64_t* dims, const int64_t* out_stride, int64_t base, int64_t n_in, int64_t n_out,
                     const void* value, const void* x, void* y) {
  int64_t i;
  for (i = 0; i < n_out; ++i) memcpy((uint8_t*)y + i * elem, value, (size_t)elem);
  for (i = 0; i < n_in; ++i) {
    int64_t rest = i, dst = base;
    int32_t d;
    for (d = rank - 1; d >= 0; --d) {
      dst += (rest % dims[d]) * out_stride[d];
      rest /= dims[d];
    }
    memcpy((uint8_t*)y + dst * elem, (const uint8_t*)x + i * elem, (size_t)elem);
  }
}

/* @helper weft_leaky_relu_q needs: weft_fixed_point weft_qio */
/* Quantized leaky ReLU: non-negative inputs rescaled by (mi, si), negative ones by (ma, sa). */
static void weft_leaky_relu_q(int type, int64_t n, int32_t in_zp, int32_t out_zp, int32_t mi, int si, int32_t ma, int sa, const void* x, void* y) {
  const int32_t lo = type == 8 ? -128 : type == 9 ? 0 : -32768, hi = type == 8 ? 127 : type == 9 ? 255 : 32767;
  int64_t i;
  for (i = 0; i < n; ++i) {
    const int32_t v = weft_qload(type, x, i) - in_zp;
    weft_qstore(type, y, i, weft_clamp32(out_zp + (v >= 0 ? weft_mbqm(v, mi, si) : weft_mbqm(v, ma, sa)), lo, hi));
  }
}

/* @helper weft_leaky_relu_f32 */
static void weft_leaky_relu_f32(int64_t n, float alpha, const float* x, float* y) {
  int64_t i;
  for (i = 0; i < n; ++i) y[i] = x[i] > 0.f ? x[i] : x[i] * alpha;
}

/* @helper weft_byte_table */
/* An 8-bit elementwise op as a table: the output byte for each input byte. */
static void weft_byte_table(int64_t n, const uint8_t* table, const uint8_t* x, uint8_t* y) {
  int64_t i;
  for (i = 0; i < n; ++i) y[i] = table[x[i]];
}

/* @helper weft_sigmoid_tanh_s16 */
/* int16 LOGISTIC (tanh 0) and TANH (tanh 1) with zero points 0 and output scale 2^-15, as the
 * runtime's tfl::s16act: the input rescaled by (multiplier, shift) in 32 bits (wrapping), its
 * magnitude looked up in sigmoid(i / 24) at 0.16 fixed point, interpolated on the low 9 (tanh: 8)
 * bits, mirrored for negative inputs. */
static void weft_sigmoid_tanh_s16(int tanh, int64_t n, int32_t multiplier, int shift, const int16_t* x, int16_t* y) {
  static const uint16_t table[256] = {
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149,
    40794, 41432, 42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369,
    47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409, 51865, 52311, 52745, 53169,
    53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
    57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370,
    60565, 60753, 60935, 61110, 61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302,
    62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186, 63279, 63368, 63454, 63536,
    63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
    64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786,
    64816, 64845, 64873, 64900, 64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079,
    65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208, 65221, 65234, 65246, 65258,
    65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
    65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433,
    65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474,
    65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498,
    65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
    65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522,
    65523, 65523, 65524, 65524, 65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528,
    65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530, 65530, 65530, 65531, 65531,
    65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534,
    65534, 65534, 65534, 65535};
  const uint32_t rounding = shift > 0 ? ((uint32_t)1 << (shift - 1)) : 0u;
  const int frac = tanh ? 8 : 9;
  int64_t i;
  for (i = 0; i < n; ++i) {
    const int32_t v = (int32_t)((uint32_t)(int32_t)x[i] * (uint32_t)multiplier + rounding) >> shift;
    const uint32_t a = v < 0 ? 0u - (uint32_t)v : (uint32_t)v, index = a >> frac;
    uint32_t r = tanh ? (uint32_t)0xFFFF << 8 : (uint32_t)0x7FFF << 10;
    if (index < 255) r = ((uint32_t)table[index] << frac) + (a & ((1u << frac) - 1u)) * (uint32_t)(table[index + 1] - table[index]);
    if (tanh) {
      const int32_t s = v >= 0 ? (int32_t)r - (1 << 23) + (1 << 7) : -(int32_t)r + (1 << 23) + (1 << 7) - 1;
      y[i] = (int16_t)(s >> 8);
    } else {
      r = v >= 0 ? r + (1u << 9) : (1u << 25) - r + (1u << 9) - 1u;
      y[i] = (int16_t)(r >> 10);
    }
  }
}

/* @helper weft_logistic_f32 */
static void weft_logistic_f32(int64_t n, const float* x, float* y) {
  int64_t i;
  for (i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + expf(-x[i]));
}

/* @helper weft_tanh_f32 */
static void weft_tanh_f32(int64_t n, const float* x, float* y) {
  int64_t i;
  for (i = 0; i < n; ++i) y[i] = tanhf(x[i]);
}

/* @helper weft_hard_swish_f32 */
static void weft_hard_swish_f32(int64_t n, const float* x, float* y) {
  int64_t i;
  for (i = 0; i < n; ++i) {
    const float r = x[i] + 3.0f;
    y[i] = x[i] * (r < 0.0f ? 0.0f : r > 6.0f ? 6.0f : r) / 6.0f;
  }
}

/* @helper weft_prelu_f32 needs: weft_broadcast */
/* PRELU on float: x, or alpha * x below zero; alpha broadcast through g (NULL: the input's shape). */
static void weft_prelu_f32(int64_t n, const weft_bcast* g, const float* x, const float* alpha, float* y) {
  int64_t o, i = 0, j = 0;
  for (o = 0; o < n; ++o) {
    if (g) weft_bcast_index(g, o, &i, &j);
    else i = j = o;
    y[o] = x[i] >= 0.f ? x[i] : x[i] * alpha[j];
  }
}

/* @helper weft_prelu_q needs: weft_fixed_point weft_broadcast weft_qio */
/* Quantized PRELU: non-negative inputs rescaled by (m1, s1); negative ones times the offset alpha,
 * rescaled by (m2, s2). */
static void weft_prelu_q(int type, int64_t n, const weft_bcast* g, const void* x, const void* alpha, int32_t in_zp, int32_t alpha_zp,
                         int32_t out_zp, int32_t m1, int s1, int32_t m2, int s2, void* y) {
  const int32_t lo = type == 8 ? -128 : 0, hi = type == 8 ? 127 : 255;
  int64_t o, i = 0, j = 0;
  for (o = 0; o < n; ++o) {
    int32_t v;
    if (g) weft_bcast_index(g, o, &i, &j);
    else i = j = o;
    v = weft_qload(type, x, i) - in_zp;
    v = v >= 0 ? weft_mbqm(v, m1, s1) : weft_mbqm(v * (weft_qload(type, alpha, j) - alpha_zp), m2, s2);
    weft_qstore(type, y, o, weft_clamp32(v + out_zp, lo, hi));
  }
}

/* @helper weft_resize_bilinear_q needs: weft_qio */
/* Integer RESIZE_BILINEAR (NHWC): per output row and column the two source taps and the second's
 * weight in 1/1024ths (lo, hi, w); the four-tap sum rounded from 20 fractional bits. */
static void weft_resize_bilinear_q(int type, int64_t n, int64_t ih, int64_t iw, int64_t c, int64_t oh, int64_t ow, const int32_t* ytaps,
                                   const int32_t* xtaps, const void* x, void* y) {
  int64_t b, yy, xx, k;
  for (b = 0; b < n; ++b)
    for (yy = 0; yy < oh; ++yy) {
      const int64_t y0 = ytaps[3 * yy], y1 = ytaps[3 * yy + 1], fy = ytaps[3 * yy + 2];
      for (xx = 0; xx < ow; ++xx) {
        const int64_t x0 = xtaps[3 * xx], x1 = xtaps[3 * xx + 1], fx = xtaps[3 * xx + 2];
        const int64_t i00 = ((b * ih + y0) * iw + x0) * c, i10 = ((b * ih + y1) * iw + x0) * c;
        const int64_t i01 = ((b * ih + y0) * iw + x1) * c, i11 = ((b * ih + y1) * iw + x1) * c;
        const int64_t o = ((b * oh + yy) * ow + xx) * c;
        for (k = 0; k < c; ++k) {
          const int64_t sum = (int64_t)weft_qload(type, x, i00 + k) * (1024 - fy) * (1024 - fx) +
                              (int64_t)weft_qload(type, x, i10 + k) * fy * (1024 - fx) +
                              (int64_t)weft_qload(type, x, i01 + k) * (1024 - fy) * fx + (int64_t)weft_qload(type, x, i11 + k) * fy * fx;
          const int64_t round = sum > 0 ? ((int64_t)1 << 19) : -((int64_t)1 << 19);
          weft_qstore(type, y, o + k, (int32_t)((sum + round) / ((int64_t)1 << 20)));
        }
      }
    }
}

/* @helper weft_resize_bilinear_u8 */
/* uint8 RESIZE_BILINEAR through the float kernel: taps (lo, hi) and the second's weight in float;
 * the sum plus one half truncated. */
static void weft_resize_bilinear_u8(int64_t n, int64_t ih, int64_t iw, int64_t c, int64_t oh, int64_t ow, const int32_t* ytaps,
                                    const float* yfrac, const int32_t* xtaps, const float* xfrac, const uint8_t* x, uint8_t* y) {
  int64_t b, yy, xx, k;
  for (b = 0; b < n; ++b)
    for (yy = 0; yy < oh; ++yy) {
      const int64_t y0 = ytaps[2 * yy], y1 = ytaps[2 * yy + 1];
      const float fy = yfrac[yy];
      for (xx = 0; xx < ow; ++xx) {
        const int64_t x0 = xtaps[2 * xx], x1 = xtaps[2 * xx + 1];
        const float fx = xfrac[xx];
        const uint8_t* p00 = x + ((b * ih + y0) * iw + x0) * c;
        const uint8_t* p10 = x + ((b * ih + y1) * iw + x0) * c;
        const uint8_t* p01 = x + ((b * ih + y0) * iw + x1) * c;
        const uint8_t* p11 = x + ((b * ih + y1) * iw + x1) * c;
        uint8_t* out = y + ((b * oh + yy) * ow + xx) * c;
        for (k = 0; k < c; ++k) {
          const float v = (float)p00[k] * (1 - fy) * (1 - fx) + (float)p10[k] * fy * (1 - fx) + (float)p01[k] * (1 - fy) * fx +
                          (float)p11[k] * fy * fx + 0.5f;
          out[k] = (uint8_t)v;
        }
      }
    }
}

/* @helper weft_mean_f32 */
/* Float mean: input element i adds into output out_index(i) (dims and the output's strides along
 * the input's axes, 0 on reduced axes), in input order; then each sum divided by `count`. */
static void weft_mean_f32(int32_t rank, const int64_t* dims, const int64_t* out_stride, int64_t total, int64_t outs, float count,
                          const float* x, float* y) {
  int64_t i, o;
  for (o = 0; o < outs; ++o) y[o] = 0.f;
  for (i = 0; i < total; ++i) {
    int64_t rest = i, at = 0;
    int32_t d;
    for (d = rank - 1; d >= 0; --d) {
      at += (rest % dims[d]) * out_stride[d];
      rest /= dims[d];
    }
    y[at] += x[i];
  }
  for (o = 0; o < outs; ++o) y[o] = y[o] / count;
}

/* @helper weft_reduce_f32 */
/* Float reductions in double, as the runtime accumulates: input element i goes to output
 * out_index(i) (dims and the output's strides along the input's axes, 0 on reduced axes), in
 * input order. kind: 0 sum, 1 mean, 2 max, 3 min, 4 prod, 5 L1, 6 L2, 7 log-sum, 8 log-sum-exp,
 * 9 sum of squares. acc and mx hold `outs` doubles each (scratch). */
static void weft_reduce_f32(int32_t kind, int32_t rank, const int64_t* dims, const int64_t* out_stride, int64_t total, int64_t outs,
                            double count, const float* x, float* y, double* acc, double* mx) {
  int64_t i, o;
  int pass;
  double init = kind == 2 ? -HUGE_VAL : kind == 3 ? HUGE_VAL : kind == 4 ? 1.0 : 0.0;
  for (o = 0; o < outs; ++o) acc[o] = init, mx[o] = -HUGE_VAL;
  for (pass = kind == 8 ? 0 : 1; pass < 2; ++pass)
    for (i = 0; i < total; ++i) {
      int64_t rest = i, at = 0;
      int32_t d;
      double v = (double)x[i];
      for (d = rank - 1; d >= 0; --d) {
        at += (rest % dims[d]) * out_stride[d];
        rest /= dims[d];
      }
      if (pass == 0) {
        if (v > mx[at]) mx[at] = v;
        continue;
      }
      switch (kind) {
        case 2: if (v > acc[at] || v != v) acc[at] = v; break;
        case 3: if (v < acc[at] || v != v) acc[at] = v; break;
        case 4: acc[at] *= v; break;
        case 5: acc[at] += v < 0.0 ? -v : v; break;
        case 6: case 9: acc[at] += v * v; break;
        case 8: acc[at] += exp(v - mx[at]); break;
        default: acc[at] += v; break;
      }
    }
  for (o = 0; o < outs; ++o) {
    double v = acc[o];
    if (kind == 1) v = count != 0.0 ? v / count : v;
    else if (kind == 6) v = sqrt(v);
    else if (kind == 7) v = log(v);
    else if (kind == 8) v = log(v) + mx[o];
    y[o] = (float)v;
  }
}

/* @helper weft_mean_s8 needs: weft_fixed_point */
/* int8 NHWC mean over H and W (keep_dims), the division folded into the multiplier. */
static void weft_mean_s8(int32_t n, int32_t hw, int32_t c, int32_t in_zp, int32_t m, int s, int32_t out_zp, const int8_t* x, int8_t* y) {
  int32_t b, d, i;
  for (b = 0; b < n; ++b)
    for (d = 0; d < c; ++d) {
      int32_t acc = 0;
      for (i = 0; i < hw; ++i) acc += x[((int64_t)b * hw + i) * c + d] - in_zp;
      acc = hw == 0 ? 0 : weft_mbqm(acc, m, s);
      y[(int64_t)b * c + d] = (int8_t)weft_clamp32(acc + out_zp, -128, 127);
    }
}

/* @helper weft_quantize needs: weft_fixed_point weft_qio */
/* Float to 8/16/32-bit (out_type 8, 9, 16, 32). */
static WEFT_AOT_UNUSED void weft_quantize_f32(int out_type, int64_t n, float scale, int32_t zp, const float* x, void* y) {
  int64_t i;
  for (i = 0; i < n; ++i) {
    const float r = roundf(x[i] / scale);
    const int32_t q = r >= 2147483520.f ? INT32_MAX : r <= -2147483648.f ? INT32_MIN : (int32_t)r;
    int64_t v = (int64_t)q + zp;
    v = v < INT32_MIN ? INT32_MIN : v > INT32_MAX ? INT32_MAX : v;
    if (out_type == 32) ((int32_t*)y)[i] = (int32_t)v;
    else weft_qstore(out_type, y, i, weft_clamp32((int32_t)v, out_type == 8 ? -128 : out_type == 9 ? 0 : -32768, out_type == 8 ? 127 : out_type == 9 ? 255 : 32767));
  }
}

/* Requantization between integer types (in_type 8, 9, 16 or 32). */
static WEFT_AOT_UNUSED void weft_requantize(int in_type, int out_type, int64_t n, int32_t in_zp, int32_t m, int s, int32_t out_zp, const void* x, void* y) {
  int64_t i;
  for (i = 0; i < n; ++i) {
    const int32_t v = in_type == 32 ? ((const int32_t*)x)[i] : weft_qload(in_type, x, i);
    const int32_t d = (int32_t)((uint32_t)v - (uint32_t)in_zp);
    int64_t o = (int64_t)weft_mbqm(d, m, s) + out_zp;
    o = o < INT32_MIN ? INT32_MIN : o > INT32_MAX ? INT32_MAX : o;
    if (out_type == 32) ((int32_t*)y)[i] = (int32_t)o;
    else weft_qstore(out_type, y, i, weft_clamp32((int32_t)o, out_type == 8 ? -128 : out_type == 9 ? 0 : -32768, out_type == 8 ? 127 : out_type == 9 ? 255 : 32767));
  }
}

/* @helper weft_dequantize needs: weft_qio */
static void weft_dequantize(int in_type, int64_t n, float scale, int32_t zp, const void* x, float* y) {
  int64_t i;
  for (i = 0; i < n; ++i) y[i] = scale * (float)(weft_qload(in_type, x, i) - zp);
}

/* @helper weft_dequantize_channels needs: weft_qio */
/* Per-channel dequantization: the input as [outer, channels, inner], channel c with its own scale
 * and zero point. */
static void weft_dequantize_channels(int in_type, int64_t outer, int64_t channels, int64_t inner, const float* scales,
                                     const int32_t* zero_points, const void* x, float* y) {
  int64_t o, c, k, i = 0;
  for (o = 0; o < outer; ++o)
    for (c = 0; c < channels; ++c)
      for (k = 0; k < inner; ++k, ++i) y[i] = scales[c] * (float)(weft_qload(in_type, x, i) - zero_points[c]);
}

/* @helper weft_transpose_conv */
/* A transposed convolution's geometry: input [n, ih, iw, ic], weights [oc, kh, kw, ic], output
 * [n, oh, ow, oc]; each input pixel scattered through the filter (TFLite's reference order). */
typedef struct weft_tconv {
  int32_t n, ih, iw, ic, oh, ow, oc, kh, kw, sh, sw, ph, pw;
} weft_tconv;

/* @helper weft_transpose_conv_f32 needs: weft_transpose_conv */
static void weft_transpose_conv_f32(const weft_tconv* g, const float* x, const float* w, const float* bias, float lo, float hi, float* y) {
  const int64_t total = (int64_t)g->n * g->oh * g->ow * g->oc;
  int32_t b, iy, ix, ky, kx, o, c;
  int64_t i;
  for (i = 0; i < total; ++i) y[i] = 0.f;
  for (b = 0; b < g->n; ++b)
    for (iy = 0; iy < g->ih; ++iy)
      for (ix = 0; ix < g->iw; ++ix)
        for (ky = 0; ky < g->kh; ++ky) {
          const int32_t oy = iy * g->sh - g->ph + ky;
          if (oy < 0 || oy >= g->oh) continue;
          for (kx = 0; kx < g->kw; ++kx) {
            const int32_t ox = ix * g->sw - g->pw + kx;
            float* out;
            const float* in;
            if (ox < 0 || ox >= g->ow) continue;
            out = y + ((int64_t)(b * g->oh + oy) * g->ow + ox) * g->oc;
            in = x + ((int64_t)(b * g->ih + iy) * g->iw + ix) * g->ic;
            for (o = 0; o < g->oc; ++o) {
              float s = out[o];
              for (c = 0; c < g->ic; ++c) s += in[c] * w[(((int64_t)o * g->kh + ky) * g->kw + kx) * g->ic + c];
              out[o] = s;
            }
          }
        }
  for (i = 0; i < total; ++i) {
    float v = y[i] + (bias ? bias[i % g->oc] : 0.f);
    v = v < lo ? lo : v;
    y[i] = v > hi ? hi : v;
  }
}

/* @helper weft_transpose_conv_q needs: weft_fixed_point weft_transpose_conv weft_qio */
/* 8-bit (type 8) or 16-bit (type 16) input, int8 weights. Each output element gathers the input
 * pixels the scatter would send it (iy * sh - ph + ky == oy) into an int64 sum: integer sums do
 * not depend on the order, so this gives the reference's bits with no accumulator buffer. */
static void weft_transpose_conv_q(const weft_tconv* g, int type, const void* x, const int8_t* w, const int32_t* b32, const int64_t* b64,
                                  const int32_t* mult, const int32_t* shift, int32_t in_off, int32_t out_off, int32_t lo, int32_t hi,
                                  void* y) {
  int32_t b, oy, ox, o, ky, kx, c;
  for (b = 0; b < g->n; ++b)
    for (oy = 0; oy < g->oh; ++oy)
      for (ox = 0; ox < g->ow; ++ox)
        for (o = 0; o < g->oc; ++o) {
          int64_t acc = 0;
          int32_t v;
          for (ky = 0; ky < g->kh; ++ky) {
            const int32_t ty = oy + g->ph - ky;
            int32_t iy;
            if (ty < 0 || ty % g->sh) continue;
            iy = ty / g->sh;
            if (iy >= g->ih) continue;
            for (kx = 0; kx < g->kw; ++kx) {
              const int32_t tx = ox + g->pw - kx;
              int32_t ix;
              int64_t in;
              const int8_t* wr;
              if (tx < 0 || tx % g->sw) continue;
              ix = tx / g->sw;
              if (ix >= g->iw) continue;
              in = ((int64_t)(b * g->ih + iy) * g->iw + ix) * g->ic;
              wr = w + (((int64_t)o * g->kh + ky) * g->kw + kx) * g->ic;
              for (c = 0; c < g->ic; ++c) acc += (int64_t)(weft_qload(type, x, in + c) + in_off) * wr[c];
            }
          }
          if (type == 16 && !b32) v = weft_mbqm64(acc + (b64 ? b64[o] : 0), mult[o], shift[o]);
          else v = weft_mbqm((int32_t)acc + (b32 ? b32[o] : 0), mult[o], shift[o]);
          weft_qstore(type, y, ((int64_t)(b * g->oh + oy) * g->ow + ox) * g->oc + o, weft_clamp32(v + out_off, lo, hi));
        }
}

/* @helper weft_svdf_time */
/* A float SVDF's output from its state [batch, filters, memory]: each unit sums `rank` filters'
 * dots with weights_time, after the bias; clamped. */
static void weft_svdf_time(int32_t batch, int32_t filters, int32_t memory, int32_t rank, const float* wt, const float* bias, float lo,
                           float hi, const float* state, float* y) {
  const int32_t units = filters / rank;
  int32_t n, u, r, t;
  for (n = 0; n < batch; ++n)
    for (u = 0; u < units; ++u) {
      float out, sum = 0.f; /* the rank filters' dots summed, then added to the bias */
      for (r = 0; r < rank; ++r) {
        const int32_t fi = u * rank + r;
        const float* m = state + ((int64_t)n * filters + fi) * memory;
        float dot = 0.f;
        for (t = 0; t < memory; ++t) dot += wt[(int64_t)fi * memory + t] * m[t];
        sum += dot;
      }
      out = (bias ? bias[u] : 0.f) + sum;
      out = out < lo ? lo : out;
      y[(int64_t)n * units + u] = out > hi ? hi : out;
    }
}

/* @helper weft_svdf_f32 needs: weft_svdf_time */
/* Float SVDF over its state [batch, filters, memory]: shifted left one step, the newest feature
 * activation appended, then each unit sums `rank` filters' dots with weights_time. */
static void weft_svdf_f32(int32_t batch, int32_t input_size, int32_t filters, int32_t memory, int32_t rank, const float* x,
                          const float* wf, const float* wt, const float* bias, float lo, float hi, float* state, float* y) {
  const int64_t cells = (int64_t)batch * filters * memory;
  int32_t n, f, c;
  memmove(state, state + 1, (size_t)(cells - 1) * sizeof(float));
  for (n = 0; n < batch; ++n)
    for (f = 0; f < filters; ++f) {
      float acc = 0.f;
      for (c = 0; c < input_size; ++c) acc += wf[(int64_t)f * input_size + c] * x[(int64_t)n * input_size + c];
      state[((int64_t)n * filters + f) * memory + memory - 1] = acc;
    }
  weft_svdf_time(batch, filters, memory, rank, wt, bias, lo, hi, state, y);
}

/* @helper weft_svdf_hybrid needs: weft_svdf_time weft_hybrid_quantize */
/* A hybrid SVDF (float input and state, int8 weights_feature with scale wf_scale; wt: weights_time
 * as floats): each input row quantized (q: input_size bytes of scratch), the newest activation
 * 0 + dot * (row scale * wf_scale), then as the float SVDF. */
static void weft_svdf_hybrid(int32_t batch, int32_t input_size, int32_t filters, int32_t memory, int32_t rank, const float* x,
                             const int8_t* wf, float wf_scale, const float* wt, const float* bias, int asym, float lo, float hi, int8_t* q,
                             float* state, float* y) {
  const int64_t cells = (int64_t)batch * filters * memory;
  int32_t n, f, c;
  memmove(state, state + 1, (size_t)(cells - 1) * sizeof(float));
  for (n = 0; n < batch; ++n) {
    float scale, sf;
    int32_t offset;
    weft_hybrid_quantize(x + (int64_t)n * input_size, input_size, asym, q, &scale, &offset);
    sf = scale * wf_scale;
    for (f = 0; f < filters; ++f) {
      int32_t dot = 0;
      for (c = 0; c < input_size; ++c) dot += (int32_t)wf[(int64_t)f * input_size + c] * ((int32_t)q[c] - offset);
      state[((int64_t)n * filters + f) * memory + memory - 1] = 0.f + (float)dot * sf;
    }
  }
  weft_svdf_time(batch, filters, memory, rank, wt, bias, lo, hi, state, y);
}

/* @helper weft_svdf_q needs: weft_fixed_point weft_qio */
/* Integer SVDF: int8 input and weights_feature; weights_time and state int16 (type 16) or int8
 * (type 8); int32 bias; int8 output. Sums wrap as TFLite's int32 arithmetic does. */
static void weft_svdf_q(int type, int32_t batch, int32_t input_size, int32_t filters, int32_t memory, int32_t rank, const int8_t* x,
                        const int8_t* wf, const void* wt, const int32_t* bias, int32_t in_zp, int32_t state_zp, int32_t out_zp,
                        int32_t m1, int s1, int32_t m2, int s2, void* state, int8_t* y) {
  const int64_t cells = (int64_t)batch * filters * memory;
  const int32_t units = filters / rank;
  const int32_t smin = type == 16 ? -32768 : -128, smax = type == 16 ? 32767 : 127;
  const size_t elem = type == 16 ? 2u : 1u;
  int32_t n, f, c, u, r, t;
  memmove(state, (uint8_t*)state + elem, (size_t)(cells - 1) * elem);
  for (n = 0; n < batch; ++n)
    for (f = 0; f < filters; ++f) {
      int32_t acc = 0, v;
      for (c = 0; c < input_size; ++c) acc += (int32_t)wf[(int64_t)f * input_size + c] * ((int32_t)x[(int64_t)n * input_size + c] - in_zp);
      v = weft_clamp32(weft_mbqm(acc, m1, s1), smin, smax);
      /* clamped before the zero point is added and stored modulo 2^bits, as the reference does */
      if (type == 16) ((int16_t*)state)[((int64_t)n * filters + f) * memory + memory - 1] = (int16_t)(uint16_t)(uint32_t)(v + state_zp);
      else ((int8_t*)state)[((int64_t)n * filters + f) * memory + memory - 1] = (int8_t)(uint8_t)(uint32_t)(v + state_zp);
    }
  for (n = 0; n < batch; ++n)
    for (u = 0; u < units; ++u) {
      uint32_t out = bias ? (uint32_t)bias[u] : 0u;
      for (r = 0; r < rank; ++r) {
        const int32_t fi = u * rank + r;
        const int64_t base = ((int64_t)n * filters + fi) * memory;
        uint32_t dot = 0;
        for (t = 0; t < memory; ++t) {
          const int32_t w = type == 16 ? ((const int16_t*)wt)[(int64_t)fi * memory + t] : ((const int8_t*)wt)[(int64_t)fi * memory + t];
          const int32_t s = type == 16 ? ((const int16_t*)state)[base + t] : ((const int8_t*)state)[base + t];
          dot += (uint32_t)(w * (s - state_zp));
        }
        out += dot;
      }
      y[(int64_t)n * units + u] = (int8_t)weft_clamp32(weft_mbqm((int32_t)out, m2, s2) + out_zp, -128, 127);
    }
}

/* @helper weft_lstm_f32 */
/* A float LSTM over a sequence (UNIDIRECTIONAL_SEQUENCE_LSTM): gates [input, forget, cell,
 * output], optional CIFG (input gate absent: i = 1 - f), peepholes, projection and clips. The
 * output state h [batch, out] and cell state c [batch, cell] are carried between runs. */
typedef struct weft_lstm_f32_args {
  int32_t batch, steps, in, cell, out, time_major, cifg;
  int32_t act; /* the cell activation: 0 none, 1 relu, 2 relu6, 3 relu_n1_to_1, 4 tanh */
  float cell_clip, proj_clip;
  const float* wx[4];
  const float* wh[4];
  const float* bias[4];
  const float* peep[4];
  const float* ln[4]; /* layer-norm coefficients per gate, or all 0 */
  const float* proj;
  const float* proj_bias;
} weft_lstm_f32_args;

static float weft_lstm_act(int32_t act, float v) {
  switch (act) {
    case 1: return v > 0.f ? v : 0.f;
    case 2: return v < 0.f ? 0.f : v > 6.f ? 6.f : v;
    case 3: return v < -1.f ? -1.f : v > 1.f ? 1.f : v;
    case 4: return tanhf(v);
    default: return v;
  }
}

static float weft_sigmoidf(float v) { return 1.f / (1.f + expf(-v)); }

/* TFLite's mean/stddev normalization of one gate's n cells, then its coefficients and bias. */
static void weft_lstm_norm(float* v, int32_t n, const float* coef, const float* bias) {
  float sum = 0.f, mean, sq = 0.f, inv;
  int32_t j;
  for (j = 0; j < n; ++j) sum += v[j];
  mean = sum / (float)n;
  for (j = 0; j < n; ++j) {
    const float d = v[j] - mean;
    sq += d * d;
  }
  inv = 1.f / sqrtf(sq / (float)n + 1e-8f);
  for (j = 0; j < n; ++j) v[j] = (v[j] - mean) * inv * coef[j] + (bias ? bias[j] : 0.f);
}

/* With layer norm: each gate's sums for every cell first (input, recurrent, the peephole on the
 * old cell state), normalized, scaled and biased; the output gate after the new cell state.
 * scratch: 4 * cell floats, then the gated output when a projection follows. */
static void weft_lstm_ln_step(const weft_lstm_f32_args* a, const float* xt, float* h, float* c, float* m, float* gs) {
  int32_t g, j, k;
  for (g = 0; g < 4; ++g) {
    float* acc = gs + (int64_t)g * a->cell;
    if (g == 0 && a->cifg) continue;
    for (j = 0; j < a->cell; ++j) {
      float v = 0.f;
      const float* rx = a->wx[g] + (int64_t)j * a->in;
      const float* rh = a->wh[g] + (int64_t)j * a->out;
      for (k = 0; k < a->in; ++k) v += rx[k] * xt[k];
      for (k = 0; k < a->out; ++k) v += rh[k] * h[k];
      if (g != 2 && g != 3 && a->peep[g]) v += a->peep[g][j] * c[j];
      acc[j] = v;
    }
    if (g != 3) weft_lstm_norm(acc, a->cell, a->ln[g], a->bias[g]);
  }
  for (j = 0; j < a->cell; ++j) {
    const float f = weft_sigmoidf(gs[a->cell + j]);
    const float i = a->cifg ? 1.f - f : weft_sigmoidf(gs[j]);
    float cn = c[j] * f + i * weft_lstm_act(a->act, gs[2 * (int64_t)a->cell + j]);
    if (a->cell_clip > 0.f) cn = cn < -a->cell_clip ? -a->cell_clip : cn > a->cell_clip ? a->cell_clip : cn;
    c[j] = cn;
    if (a->peep[3]) gs[3 * (int64_t)a->cell + j] += a->peep[3][j] * cn;
  }
  weft_lstm_norm(gs + 3 * (int64_t)a->cell, a->cell, a->ln[3], a->bias[3]);
  for (j = 0; j < a->cell; ++j) m[j] = weft_sigmoidf(gs[3 * (int64_t)a->cell + j]) * weft_lstm_act(a->act, c[j]);
}

/* Cell by cell: the four gate sums of cell j (each in the order bias, input, recurrent), then its
 * state; the gated output m goes straight into the output row, or into `m` (cell floats of
 * scratch) when a projection follows. h is read for every cell before it changes. With layer
 * norm (a->ln), weft_lstm_ln_step instead, its gates in the scratch before m. */
static WEFT_AOT_UNUSED void weft_lstm_f32(const weft_lstm_f32_args* a, const float* x, float* y, float* h_state, float* c_state, float* m_scratch) {
  int32_t b, t, g, j, k;
  for (b = 0; b < a->batch; ++b) {
    float* h = h_state + (int64_t)b * a->out;
    float* c = c_state + (int64_t)b * a->cell;
    for (t = 0; t < a->steps; ++t) {
      const int64_t row = a->time_major ? (int64_t)t * a->batch + b : (int64_t)b * a->steps + t;
      const float* xt = x + row * a->in;
      float* yt = y + row * a->out;
      float* m = a->proj ? (a->ln[1] ? m_scratch + 4 * (int64_t)a->cell : m_scratch) : yt;
      if (a->ln[1]) weft_lstm_ln_step(a, xt, h, c, m, m_scratch);
      for (j = 0; j < a->cell && !a->ln[1]; ++j) {
        float acc[4] = {0.f, 0.f, 0.f, 0.f}, f, i, cn, o;
        for (g = 0; g < 4; ++g) {
          float v;
          const float* rx;
          const float* rh;
          if (g == 0 && a->cifg) continue;
          v = a->bias[g] ? a->bias[g][j] : 0.f;
          rx = a->wx[g] + (int64_t)j * a->in;
          rh = a->wh[g] + (int64_t)j * a->out;
          for (k = 0; k < a->in; ++k) v += rx[k] * xt[k];
          for (k = 0; k < a->out; ++k) v += rh[k] * h[k];
          acc[g] = v;
        }
        f = weft_sigmoidf(acc[1] + (a->peep[1] ? a->peep[1][j] * c[j] : 0.f));
        i = a->cifg ? 1.f - f : weft_sigmoidf(acc[0] + (a->peep[0] ? a->peep[0][j] * c[j] : 0.f));
        cn = c[j] * f + i * weft_lstm_act(a->act, acc[2]);
        if (a->cell_clip > 0.f) cn = cn < -a->cell_clip ? -a->cell_clip : cn > a->cell_clip ? a->cell_clip : cn;
        c[j] = cn;
        o = weft_sigmoidf(acc[3] + (a->peep[3] ? a->peep[3][j] * cn : 0.f));
        m[j] = o * weft_lstm_act(a->act, cn);
      }
      if (a->proj) {
        for (k = 0; k < a->out; ++k) {
          float v = a->proj_bias ? a->proj_bias[k] : 0.f;
          for (j = 0; j < a->cell; ++j) v += a->proj[(int64_t)k * a->cell + j] * m[j];
          if (a->proj_clip > 0.f) v = v < -a->proj_clip ? -a->proj_clip : v > a->proj_clip ? a->proj_clip : v;
          yt[k] = v;
        }
      }
      memcpy(h, yt, (size_t)a->out * sizeof(float));
    }
  }
}

/* @helper weft_lstm_hybrid needs: weft_lstm_f32 weft_hybrid_quantize */
/* A hybrid LSTM (float input and states, int8 weights with one scale each), as the runtime runs
 * it: every step the input row and the previous output quantized (skipped when all zeros); each
 * gate its bias (0 with layer norm) plus each int32 product times (row scale * weight scale), plus
 * the peephole (peep: the int8 weights times their scale, as floats) on the cell state, then layer
 * norm and the activation; the output gate after the new cell state; o * act(c) quantized again
 * for an int8 projection. */
typedef struct weft_lstm_hybrid_args {
  int32_t batch, steps, in, cell, out, time_major, cifg, asym;
  int32_t act; /* as weft_lstm_f32_args */
  float cell_clip, proj_clip;
  const int8_t* wx[4];
  const int8_t* wh[4];
  float sx[4], sh[4];
  const float* bias[4];
  const float* peep[4];
  const float* ln[4];
  const int8_t* proj;
  float s_proj;
  const float* proj_bias;
} weft_lstm_hybrid_args;

typedef struct weft_hybrid_row {
  const int8_t* q;
  float scale;
  int32_t offset, zero; /* zero: the row was all zeros (its product skipped) */
} weft_hybrid_row;

static void weft_hybrid_row_quantize(const float* v, int32_t n, int asym, int8_t* q, weft_hybrid_row* r) {
  int32_t k;
  r->q = q;
  r->zero = 1;
  for (k = 0; k < n && r->zero; ++k) r->zero = v[k] == 0.f;
  r->scale = 1.f;
  r->offset = 0;
  if (!r->zero) weft_hybrid_quantize(v, n, asym, q, &r->scale, &r->offset);
}

/* g[j] += (sum_k w[j][k] * (q[k] - offset)) * (row scale * ws) */
static void weft_hybrid_accumulate(float* g, const int8_t* w, const weft_hybrid_row* r, int32_t rows, int32_t n, float ws) {
  const float f = r->scale * ws;
  int32_t j, k;
  if (r->zero) return;
  for (j = 0; j < rows; ++j) {
    int32_t dot = 0;
    for (k = 0; k < n; ++k) dot += (int32_t)w[(int64_t)j * n + k] * ((int32_t)r->q[k] - r->offset);
    g[j] += (float)dot * f;
  }
}

static void weft_lstm_hybrid_gate(const weft_lstm_hybrid_args* a, int32_t g, float* v, const weft_hybrid_row* rx, const weft_hybrid_row* rh,
                                  const float* c, int tanh_like) {
  int32_t j;
  for (j = 0; j < a->cell; ++j) v[j] = a->ln[1] ? 0.f : a->bias[g][j];
  weft_hybrid_accumulate(v, a->wx[g], rx, a->cell, a->in, a->sx[g]);
  weft_hybrid_accumulate(v, a->wh[g], rh, a->cell, a->out, a->sh[g]);
  if (a->peep[g])
    for (j = 0; j < a->cell; ++j) v[j] += a->peep[g][j] * c[j];
  if (a->ln[1]) weft_lstm_norm(v, a->cell, a->ln[g], a->bias[g]);
  for (j = 0; j < a->cell; ++j) v[j] = tanh_like ? weft_lstm_act(a->act, v[j]) : weft_sigmoidf(v[j]);
}

/* gate: 5 * cell floats of scratch; q: in + out + cell bytes. */
static void weft_lstm_hybrid(const weft_lstm_hybrid_args* a, const float* x, float* y, float* h_state, float* c_state, float* gate, int8_t* q) {
  int32_t b, t, j, k;
  float* m = gate + 4 * (int64_t)a->cell;
  for (b = 0; b < a->batch; ++b) {
    float* h = h_state + (int64_t)b * a->out;
    float* c = c_state + (int64_t)b * a->cell;
    for (t = 0; t < a->steps; ++t) {
      const int64_t row = a->time_major ? (int64_t)t * a->batch + b : (int64_t)b * a->steps + t;
      float *ig = gate, *fg = gate + a->cell, *cg = gate + 2 * (int64_t)a->cell, *og = gate + 3 * (int64_t)a->cell;
      weft_hybrid_row rx, rh;
      weft_hybrid_row_quantize(x + row * a->in, a->in, a->asym, q, &rx);
      weft_hybrid_row_quantize(h, a->out, a->asym, q + a->in, &rh);
      if (!a->cifg) weft_lstm_hybrid_gate(a, 0, ig, &rx, &rh, c, 0);
      weft_lstm_hybrid_gate(a, 1, fg, &rx, &rh, c, 0);
      weft_lstm_hybrid_gate(a, 2, cg, &rx, &rh, c, 1);
      for (j = 0; j < a->cell; ++j) {
        float cn = fg[j] * c[j];
        cn += cg[j] * (a->cifg ? 1.f - fg[j] : ig[j]);
        if (a->cell_clip > 0.f) cn = cn < -a->cell_clip ? -a->cell_clip : cn > a->cell_clip ? a->cell_clip : cn;
        c[j] = cn;
      }
      weft_lstm_hybrid_gate(a, 3, og, &rx, &rh, c, 0);
      for (j = 0; j < a->cell; ++j) m[j] = og[j] * weft_lstm_act(a->act, c[j]);
      if (a->proj) {
        weft_hybrid_row rm;
        for (k = 0; k < a->out; ++k) h[k] = a->proj_bias ? a->proj_bias[k] : 0.f;
        weft_hybrid_row_quantize(m, a->cell, a->asym, q + a->in + a->out, &rm);
        weft_hybrid_accumulate(h, a->proj, &rm, a->out, a->cell, a->s_proj);
        if (a->proj_clip > 0.f)
          for (k = 0; k < a->out; ++k) h[k] = h[k] < -a->proj_clip ? -a->proj_clip : h[k] > a->proj_clip ? a->proj_clip : h[k];
      } else {
        memcpy(h, m, (size_t)a->out * sizeof(float));
      }
      memcpy(y + row * a->out, h, (size_t)a->out * sizeof(float));
    }
  }
}

/* @helper weft_q16 needs: weft_fixed_point */
/* 16-bit fixed point (Qm.(15-m)) for the integer LSTM's gates: additions wrap modulo 2^16 unless
 * said otherwise, products round to nearest and saturate only (-1) * (-1). */
static WEFT_AOT_UNUSED int16_t weft_q16_wrap(int32_t v) { return (int16_t)(uint16_t)(uint32_t)v; }

static int16_t weft_q16_mul(int16_t a, int16_t b) {
  int32_t ab, nudge;
  if (a == b && a == INT16_MIN) return INT16_MAX;
  ab = (int32_t)a * (int32_t)b;
  nudge = ab >= 0 ? (1 << 14) : (1 - (1 << 14));
  return (int16_t)((ab + nudge) / (1 << 15));
}

static int16_t weft_q16_round_shift(int16_t x, int exponent) {
  const int32_t mask = (1 << exponent) - 1;
  const int32_t remainder = x & mask;
  const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return weft_q16_wrap((x >> exponent) + (remainder > threshold ? 1 : 0));
}

static int16_t weft_q16_mul_pot(int16_t x, int exponent) {
  int32_t threshold;
  if (exponent < 0) return weft_q16_round_shift(x, -exponent);
  if (exponent == 0) return x;
  threshold = (1 << (15 - exponent)) - 1;
  if (x > threshold) return INT16_MAX;
  if (x < -threshold) return INT16_MIN;
  return weft_q16_wrap((int32_t)x * (1 << exponent));
}

static int16_t weft_q16_const(int32_t raw32) { return weft_q16_wrap(weft_rdpot(raw32, 16)); }

static int16_t weft_q16_sat_add(int16_t a, int16_t b) {
  const int32_t s = (int32_t)a + (int32_t)b;
  return (int16_t)(s > 32767 ? 32767 : s < -32768 ? -32768 : s);
}

static int16_t weft_q16_half_sum(int16_t a, int16_t b) {
  const int32_t sum = (int32_t)a + (int32_t)b;
  return (int16_t)((sum + (sum >= 0 ? 1 : -1)) / 2);
}

static int16_t weft_q16_exp_quarter(int16_t a) {
  const int16_t c = weft_q16_const(1895147668), third = weft_q16_const(715827883);
  const int16_t x = weft_q16_wrap(a + (1 << 12));
  const int16_t x2 = weft_q16_mul(x, x), x3 = weft_q16_mul(x2, x), x4 = weft_q16_mul(x2, x2);
  const int16_t x4_over_4 = weft_q16_mul_pot(x4, -2);
  const int16_t poly = weft_q16_mul_pot(weft_q16_wrap(weft_q16_mul(weft_q16_wrap(x4_over_4 + x3), third) + x2), -1);
  return weft_q16_sat_add(c, weft_q16_mul(c, weft_q16_wrap(x + poly)));
}

static int16_t weft_q16_exp_negative(int16_t a, int bits) {
  static const int32_t exp_neg_pow2[7] = {1672461947, 1302514674, 790015084, 290630308, 39332535, 720401, 242};
  const int frac = 15 - bits;
  const int16_t quarter = (int16_t)(1 << (frac - 2));
  const int16_t a_mod_quarter_minus_quarter = weft_q16_wrap((a & (quarter - 1)) - quarter);
  int16_t result = weft_q16_exp_quarter(weft_q16_mul_pot(a_mod_quarter_minus_quarter, bits));
  const int16_t remainder = weft_q16_wrap(a_mod_quarter_minus_quarter - a);
  int k;
  for (k = -2; k <= 4; ++k)
    if (bits > k && (remainder & (1 << (frac + k)))) result = weft_q16_mul(result, weft_q16_const(exp_neg_pow2[k + 2]));
  if (bits > 5 && a < weft_q16_const(-(1 << (36 - bits)))) result = 0;
  if (a == 0) result = INT16_MAX;
  return result;
}

static int16_t weft_q16_two_over_one_plus_x(int16_t a) {
  const int16_t half_denominator = weft_q16_half_sum(a, INT16_MAX);
  const int16_t c48_17 = weft_q16_const(1515870810), cneg32_17 = weft_q16_const(-1010580540);
  int16_t x = weft_q16_wrap(c48_17 + weft_q16_mul(half_denominator, cneg32_17));
  int i;
  for (i = 0; i < 3; ++i) {
    const int16_t one_minus = weft_q16_wrap((1 << 13) - weft_q16_mul(half_denominator, x));
    x = weft_q16_wrap(x + weft_q16_mul_pot(weft_q16_mul(x, one_minus), 2));
  }
  return x;
}

static int16_t weft_q16_logistic(int16_t a, int bits) {
  int16_t abs_a, positive;
  if (a == 0) return weft_q16_const(1 << 30);
  abs_a = a > 0 ? a : weft_q16_wrap(-a);
  positive = weft_q16_mul_pot(weft_q16_two_over_one_plus_x(weft_q16_exp_negative(weft_q16_wrap(-abs_a), bits)), 1);
  return a > 0 ? positive : weft_q16_wrap(INT16_MAX - positive);
}

static int16_t weft_q16_tanh(int16_t a, int bits) {
  int16_t negative_abs, t;
  if (a == 0) return 0;
  negative_abs = a < 0 ? a : weft_q16_wrap(-a);
  t = weft_q16_mul_pot(weft_q16_wrap(weft_q16_two_over_one_plus_x(weft_q16_exp_negative(negative_abs, bits + 1)) - (1 << 13)), 2);
  return a < 0 ? weft_q16_wrap(-t) : t;
}

/* @helper weft_lstm_q needs: weft_fixed_point weft_q16 */
/* TFLite's integer LSTM (8x8->16): int8 input, weights and output state h, int16 cell state c
 * with scale 2^cell_scale, gates in Q3.12; biases with the zero points folded in. */
typedef struct weft_lstm_q_gate {
  const int8_t* wx;
  const int8_t* wh;
  const int16_t* peep;
  const int32_t* bx;
  const int32_t* bh;
  int32_t mx, sx, mh, sh, mc, sc;
} weft_lstm_q_gate;

typedef struct weft_lstm_q_args {
  int32_t batch, steps, n_in, n_cell, n_out, time_major, cifg, cell_scale, hidden_zp, h_zp, cell_clip, proj_clip;
  weft_lstm_q_gate gates[4];
  const int8_t* proj;
  const int32_t* proj_bias;
  int32_t m_proj, s_proj, m_hidden, s_hidden;
} weft_lstm_q_args;

/* out[b][r] = saturate(rescale(bias[r] + w[r] . v[b]) + zp + out[b][r]) into int16 (wide) or int8. */
static void weft_lstm_q_matvec(const int8_t* v, const int32_t* bias, const int8_t* w, int32_t m, int32_t s, int32_t nb, int32_t cols,
                               int32_t rows, int32_t zp, int wide, void* out) {
  int32_t b, r, c;
  for (b = 0; b < nb; ++b)
    for (r = 0; r < rows; ++r) {
      const int64_t o = (int64_t)b * rows + r;
      uint32_t acc = (uint32_t)bias[r];
      int32_t a;
      for (c = 0; c < cols; ++c) acc += (uint32_t)((int32_t)v[(int64_t)b * cols + c] * (int32_t)w[(int64_t)r * cols + c]);
      a = weft_mbqm((int32_t)acc, m, s) + zp + (wide ? ((int16_t*)out)[o] : ((int8_t*)out)[o]);
      if (wide) ((int16_t*)out)[o] = (int16_t)weft_clamp32(a, -32768, 32767);
      else ((int8_t*)out)[o] = (int8_t)weft_clamp32(a, -128, 127);
    }
}

/* One time step for nb batch rows. gate: 4 blocks of nb * n_cell int16, then (with a projection)
 * nb * n_cell int8 for the hidden state; without one it goes straight into the output rows. */
static void weft_lstm_q_step(const weft_lstm_q_args* a, int32_t nb, const int8_t* xt, int8_t* h, int16_t* c, int8_t* yt, int16_t* gate) {
  const int64_t n = (int64_t)nb * a->n_cell;
  int8_t* hidden = a->proj ? (int8_t*)(gate + 4 * n) : yt;
  int16_t* og = gate + 3 * n;
  int64_t k;
  int g;
  for (g = 0; g < 4; ++g) {
    const weft_lstm_q_gate* G = &a->gates[g];
    int16_t* gb = gate + g * n;
    if (g == 0 && a->cifg) continue;
    for (k = 0; k < n; ++k) gb[k] = 0;
    weft_lstm_q_matvec(xt, G->bx, G->wx, G->mx, G->sx, nb, a->n_in, a->n_cell, 0, 1, gb);
    weft_lstm_q_matvec(h, G->bh, G->wh, G->mh, G->sh, nb, a->n_out, a->n_cell, 0, 1, gb);
    if (G->peep) { /* the reference walks n_output weights per batch row over the flat state */
      int32_t b, v;
      for (b = 0, k = 0; b < nb; ++b)
        for (v = 0; v < a->n_out; ++v, ++k) {
          const int32_t prod = weft_mbqm((int32_t)G->peep[v] * (int32_t)c[k], G->mc, G->sc);
          gb[k] = (int16_t)weft_clamp32(prod + gb[k], -32768, 32767);
        }
    }
    for (k = 0; k < n; ++k) gb[k] = g == 2 ? weft_q16_tanh(gb[k], 3) : weft_q16_logistic(gb[k], 3);
    if (g == 2) { /* the cell update comes before the output gate, which reads the new cell */
      const int16_t *ig = gate, *fg = gate + n, *cg = gate + 2 * n;
      for (k = 0; k < n; ++k) {
        int16_t i_k, upd;
        int32_t sum;
        c[k] = weft_q16_wrap(weft_rdpot((int32_t)fg[k] * (int32_t)c[k], 15));
        i_k = a->cifg ? weft_q16_wrap(32767 - fg[k]) : ig[k];
        upd = weft_q16_wrap(weft_rdpot((int32_t)i_k * (int32_t)cg[k], 30 + a->cell_scale));
        sum = weft_clamp32((int32_t)c[k] + (int32_t)upd, -32768, 32767);
        if (a->cell_clip > 0) sum = weft_clamp32(sum, -a->cell_clip, a->cell_clip);
        c[k] = (int16_t)sum;
      }
    }
  }
  for (k = 0; k < n; ++k) {
    const int16_t t = weft_q16_tanh(c[k], 15 + a->cell_scale);
    const int32_t v = weft_mbqm((int32_t)og[k] * (int32_t)t, a->m_hidden, a->s_hidden) - a->hidden_zp;
    hidden[k] = (int8_t)weft_clamp32(v, -128, 127);
  }
  if (a->proj) {
    for (k = 0; k < (int64_t)nb * a->n_out; ++k) h[k] = 0;
    weft_lstm_q_matvec(hidden, a->proj_bias, a->proj, a->m_proj, a->s_proj, nb, a->n_cell, a->n_out, a->h_zp, 0, h);
    if (a->proj_clip > 0)
      for (k = 0; k < (int64_t)nb * a->n_out; ++k) h[k] = (int8_t)weft_clamp32(h[k], -a->proj_clip, a->proj_clip);
    memcpy(yt, h, (size_t)(nb * a->n_out));
  } else {
    memcpy(h, yt, (size_t)(nb * a->n_out));
  }
}

static void weft_lstm_q(const weft_lstm_q_args* a, const int8_t* x, int8_t* y, int8_t* h_state, int16_t* c_state, int16_t* gate) {
  int32_t b, t;
  if (a->time_major) {
    for (t = 0; t < a->steps; ++t)
      weft_lstm_q_step(a, a->batch, x + (int64_t)t * a->batch * a->n_in, h_state, c_state, y + (int64_t)t * a->batch * a->n_out, gate);
  } else {
    for (b = 0; b < a->batch; ++b)
      for (t = 0; t < a->steps; ++t)
        weft_lstm_q_step(a, 1, x + ((int64_t)b * a->steps + t) * a->n_in, h_state + (int64_t)b * a->n_out, c_state + (int64_t)b * a->n_cell,
                         y + ((int64_t)b * a->steps + t) * a->n_out, gate);
  }
}

/* @helper weft_gemm_f32 */
/* ONNX Gemm: y[m][n] = alpha * sum_k A'[m][k] * B'[k][n] + beta * C[m % c_rows][n % c_cols], A' and
 * B' transposed when trans_a / trans_b; c may be NULL. Also MatMul (alpha 1, no C). */
static void weft_gemm_f32(int32_t m, int32_t n, int32_t k, int trans_a, int trans_b, float alpha, float beta, const float* a,
                          const float* b, const float* c, int32_t c_rows, int32_t c_cols, float* y) {
  int32_t i, j, p;
  for (i = 0; i < m; ++i)
    for (j = 0; j < n; ++j) {
      float acc = 0.f;
      for (p = 0; p < k; ++p)
        acc += (trans_a ? a[(int64_t)p * m + i] : a[(int64_t)i * k + p]) * (trans_b ? b[(int64_t)j * k + p] : b[(int64_t)p * n + j]);
      acc *= alpha;
      if (c) acc += beta * c[(int64_t)(i % c_rows) * c_cols + (j % c_cols)];
      y[(int64_t)i * n + j] = acc;
    }
}

/* @helper weft_softmax_axis_f32 */
/* Softmax over the middle dim of [outer, n, inner] (log_softmax when log != 0). */
static void weft_softmax_axis_f32(int64_t outer, int64_t n, int64_t inner, int log, const float* x, float* y) {
  int64_t o, i, j;
  for (o = 0; o < outer; ++o)
    for (i = 0; i < inner; ++i) {
      float mx = -HUGE_VALF, sum = 0.f;
      for (j = 0; j < n; ++j) mx = x[(o * n + j) * inner + i] > mx ? x[(o * n + j) * inner + i] : mx;
      for (j = 0; j < n; ++j) sum += expf(x[(o * n + j) * inner + i] - mx);
      for (j = 0; j < n; ++j) {
        const float v = x[(o * n + j) * inner + i] - mx;
        y[(o * n + j) * inner + i] = log ? v - logf(sum) : expf(v) / sum;
      }
    }
}

/* @helper weft_conv_nchw */
/* Convolution and pooling windows on NCHW (1-D as H = 1): input [n, c, ih, iw], output
 * [n, m, oh, ow], kernel kh x kw with strides, dilations and leading pads. */
typedef struct weft_nchw {
  int32_t n, c, ih, iw, m, oh, ow, kh, kw, sh, sw, dh, dw, ph, pw, group;
  int32_t pe_h, pe_w; /* trailing pads (pooling counts them with count_include_pad) */
} weft_nchw;

/* @helper weft_conv_nchw_f32 needs: weft_conv_nchw */
static void weft_conv_nchw_f32(const weft_nchw* g, const float* x, const float* w, const float* bias, float* y) {
  const int32_t cg = g->c / g->group, mg = g->m / g->group;
  int32_t b, mm, oy, ox, ic, ky, kx;
  for (b = 0; b < g->n; ++b)
    for (mm = 0; mm < g->m; ++mm) {
      const int32_t grp = mm / mg;
      for (oy = 0; oy < g->oh; ++oy)
        for (ox = 0; ox < g->ow; ++ox) {
          float acc = bias ? bias[mm] : 0.f;
          for (ic = 0; ic < cg; ++ic) {
            const float* xc = x + ((int64_t)b * g->c + grp * cg + ic) * g->ih * g->iw;
            const float* wc = w + ((int64_t)mm * cg + ic) * g->kh * g->kw;
            for (ky = 0; ky < g->kh; ++ky) {
              const int32_t iy = oy * g->sh - g->ph + ky * g->dh;
              if (iy < 0 || iy >= g->ih) continue;
              for (kx = 0; kx < g->kw; ++kx) {
                const int32_t ix = ox * g->sw - g->pw + kx * g->dw;
                if (ix < 0 || ix >= g->iw) continue;
                acc += xc[(int64_t)iy * g->iw + ix] * wc[ky * g->kw + kx];
              }
            }
          }
          y[(((int64_t)b * g->m + mm) * g->oh + oy) * g->ow + ox] = acc;
        }
    }
}

/* @helper weft_pool_nchw_f32 needs: weft_conv_nchw */
/* Max (max != 0) or average pooling; the average divides by the taps inside the input, or with
 * include_pad by those inside the padded extent [-ph, ih + pe_h). */
static void weft_pool_nchw_f32(const weft_nchw* g, int max, int include_pad, const float* x, float* y) {
  int32_t b, ch, oy, ox, ky, kx;
  for (b = 0; b < g->n; ++b)
    for (ch = 0; ch < g->c; ++ch) {
      const float* xc = x + ((int64_t)b * g->c + ch) * g->ih * g->iw;
      for (oy = 0; oy < g->oh; ++oy)
        for (ox = 0; ox < g->ow; ++ox) {
          float acc = max ? -HUGE_VALF : 0.f;
          int32_t count = 0;
          for (ky = 0; ky < g->kh; ++ky) {
            const int32_t iy = oy * g->sh - g->ph + ky * g->dh;
            const int in_y = iy >= 0 && iy < g->ih, pad_y = iy >= -g->ph && iy < g->ih + g->pe_h;
            for (kx = 0; kx < g->kw; ++kx) {
              const int32_t ix = ox * g->sw - g->pw + kx * g->dw;
              const int in_x = ix >= 0 && ix < g->iw, pad_x = ix >= -g->pw && ix < g->iw + g->pe_w;
              if (in_y && in_x) {
                const float v = xc[(int64_t)iy * g->iw + ix];
                if (max) acc = v > acc || v != v ? v : acc;
                else acc += v;
                ++count;
              } else if (include_pad && pad_y && pad_x) {
                ++count;
              }
            }
          }
          y[(((int64_t)b * g->c + ch) * g->oh + oy) * g->ow + ox] = max ? acc : (count ? acc / (float)count : 0.f);
        }
    }
}

/* @helper weft_maxpool_nchw_q8 needs: weft_conv_nchw */
/* Max pooling of int8 (is_signed) or uint8 values over the taps inside the input (the type's
 * lowest value where a window has none). */
static void weft_maxpool_nchw_q8(const weft_nchw* g, int is_signed, const void* x, void* y) {
  int32_t b, ch, oy, ox, ky, kx;
  for (b = 0; b < g->n; ++b)
    for (ch = 0; ch < g->c; ++ch) {
      const int64_t base = ((int64_t)b * g->c + ch) * g->ih * g->iw;
      for (oy = 0; oy < g->oh; ++oy)
        for (ox = 0; ox < g->ow; ++ox) {
          int32_t acc = is_signed ? -128 : 0;
          const int64_t at = (((int64_t)b * g->c + ch) * g->oh + oy) * g->ow + ox;
          for (ky = 0; ky < g->kh; ++ky) {
            const int32_t iy = oy * g->sh - g->ph + ky * g->dh;
            if (iy < 0 || iy >= g->ih) continue;
            for (kx = 0; kx < g->kw; ++kx) {
              const int32_t ix = ox * g->sw - g->pw + kx * g->dw;
              int32_t v;
              if (ix < 0 || ix >= g->iw) continue;
              v = is_signed ? ((const int8_t*)x)[base + (int64_t)iy * g->iw + ix] : ((const uint8_t*)x)[base + (int64_t)iy * g->iw + ix];
              acc = v > acc ? v : acc;
            }
          }
          if (is_signed) ((int8_t*)y)[at] = (int8_t)acc;
          else ((uint8_t*)y)[at] = (uint8_t)acc;
        }
    }
}

/* @helper weft_concat */
/* Concatenation along an axis: each input is [outer, len_k * inner] bytes-wise (len in bytes of
 * one outer row), copied into its column range of the output rows. */
static WEFT_AOT_UNUSED void weft_concat_part(int64_t outer, int64_t part_row, int64_t out_row, int64_t offset, const void* x, void* y) {
  int64_t o;
  for (o = 0; o < outer; ++o) memcpy((uint8_t*)y + o * out_row + offset, (const uint8_t*)x + o * part_row, (size_t)part_row);
}

/* The reverse (Split): each output row is part_row bytes at `offset` in the input's in_row-byte rows. */
static WEFT_AOT_UNUSED void weft_split_part(int64_t outer, int64_t part_row, int64_t in_row, int64_t offset, const void* x, void* y) {
  int64_t o;
  for (o = 0; o < outer; ++o) memcpy((uint8_t*)y + o * part_row, (const uint8_t*)x + o * in_row + offset, (size_t)part_row);
}

/* @helper weft_pad_map */
/* Output element o (rank at most 8, dims `dims`) is input element sum(map[off[d] + c_d] * in_stride[d]),
 * c the coordinates of o, or `fill` (elem bytes) when any map entry is -1 (every ONNX Pad mode:
 * the per-dim maps say which input coordinate each output coordinate reads). */
static void weft_pad_map(int32_t elem, int32_t rank, const int64_t* dims, const int64_t* in_stride, const int64_t* off, const int64_t* map,
                         int64_t n_out, const void* fill, const void* x, void* y) {
  int64_t o;
  for (o = 0; o < n_out; ++o) {
    int64_t rest = o, src = 0;
    int32_t d, outside = 0;
    for (d = rank - 1; d >= 0; --d) {
      const int64_t c = map[off[d] + rest % dims[d]];
      rest /= dims[d];
      if (c < 0) outside = 1;
      src += c * in_stride[d];
    }
    memcpy((uint8_t*)y + o * elem, outside ? fill : (const void*)((const uint8_t*)x + src * elem), (size_t)elem);
  }
}

/* @helper weft_gather */
/* Gather along an axis: data is [outer, dim, row bytes]; index j (int32 when idx32, else int64)
 * picks a row, negative from the end. Returns 1 (and writes nothing) when an index is out of range. */
static int32_t weft_gather(int64_t outer, int64_t dim, int64_t row, int64_t n, int idx32, const void* indices, const void* x, void* y) {
  int64_t o, j;
  for (j = 0; j < n; ++j) {
    const int64_t v = idx32 ? (int64_t)((const int32_t*)indices)[j] : ((const int64_t*)indices)[j];
    if (v < -dim || v >= dim) return 1;
  }
  for (o = 0; o < outer; ++o)
    for (j = 0; j < n; ++j) {
      int64_t v = idx32 ? (int64_t)((const int32_t*)indices)[j] : ((const int64_t*)indices)[j];
      if (v < 0) v += dim;
      memcpy((uint8_t*)y + (o * n + j) * row, (const uint8_t*)x + (o * dim + v) * row, (size_t)row);
    }
  return 0;
}

/* @helper weft_layer_norm_f32 */
/* Each of `outer` rows of `inner` floats: mean and variance in double, then
 * (x - mean) * inv_std * scale[i] + bias[i] in float; mean and inv_std per row when asked for. */
static void weft_layer_norm_f32(int64_t outer, int64_t inner, double eps, const float* x, const float* scale, const float* bias, float* y,
                                float* mean_out, float* inv_out) {
  int64_t g, i;
  for (g = 0; g < outer; ++g) {
    const float* row = x + g * inner;
    float* out = y + g * inner;
    double sum = 0, sq = 0, mu, iv;
    float fm, fi;
    for (i = 0; i < inner; ++i) sum += row[i];
    mu = sum / (double)inner;
    for (i = 0; i < inner; ++i) sq += (row[i] - mu) * (row[i] - mu);
    iv = 1.0 / sqrt(sq / (double)inner + eps);
    fm = (float)mu;
    fi = (float)iv;
    for (i = 0; i < inner; ++i) out[i] = (row[i] - fm) * fi * scale[i] + (bias ? bias[i] : 0.f);
    if (mean_out) mean_out[g] = (float)mu;
    if (inv_out) inv_out[g] = (float)iv;
  }
}

/* @helper weft_rms_norm_f32 */
/* Each of `outer` rows of `inner` floats: the mean square in double, then x * inv_rms * scale[i]
 * in float; inv_rms per row when asked for (RMS normalization). */
static void weft_rms_norm_f32(int64_t outer, int64_t inner, double eps, const float* x, const float* scale, float* y, float* inv_out) {
  int64_t g, i;
  for (g = 0; g < outer; ++g) {
    const float* row = x + g * inner;
    float* out = y + g * inner;
    double sq = 0, iv;
    float fi;
    for (i = 0; i < inner; ++i) sq += (double)row[i] * (double)row[i];
    iv = 1.0 / sqrt(sq / (double)inner + eps);
    fi = (float)iv;
    for (i = 0; i < inner; ++i) out[i] = row[i] * fi * scale[i];
    if (inv_out) inv_out[g] = (float)iv;
  }
}

/* @helper weft_instance_norm_f32 */
/* [N, C, spatial]: each (n, c) group of `count` floats normalized in double with scale[c], bias[c]. */
static void weft_instance_norm_f32(int64_t groups, int64_t channels, int64_t count, double eps, const float* x, const float* scale,
                                   const float* bias, float* y) {
  int64_t g, i;
  for (g = 0; g < groups; ++g) {
    const float* gx = x + g * count;
    const double s = scale[g % channels], b = bias[g % channels];
    double mean = 0, var = 0, inv;
    const double n = (double)(count > 1 ? count : 1);
    for (i = 0; i < count; ++i) mean += (double)gx[i];
    mean /= n;
    for (i = 0; i < count; ++i) var += ((double)gx[i] - mean) * ((double)gx[i] - mean);
    var /= n;
    inv = 1.0 / sqrt(var + eps);
    for (i = 0; i < count; ++i) y[g * count + i] = (float)(((double)gx[i] - mean) * inv * s + b);
  }
}
