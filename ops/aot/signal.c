/* The audio front end of TFLM's signal library (its custom operators SignalWindow, SignalFftAutoScale,
 * SignalRfft, SignalEnergy, SignalFilterBank, SignalFilterBankSquareRoot,
 * SignalFilterBankSpectralSubtraction, SignalPCAN, SignalFilterBankLog) in fixed point, with the
 * library's integer semantics: wrapping int16 stores, arithmetic right shifts, uint32/uint64
 * wraparound. Portable C99 that is also valid C++: the runtime's ops (ops/signal.cc) compile this
 * very text, and weft aot writes it into modules, so both give the same bits. */

/* @helper weft_sig_msb */
/* 1-based index of the highest set bit; 32 for 0 (what the library's builds give). */
static int32_t weft_sig_msb32(uint32_t x) {
  int32_t n = 0;
  if (x == 0) return 32;
  while (x) {
    ++n;
    x >>= 1;
  }
  return n;
}

/* @helper weft_sig_window */
/* y = clamp((x * w[i % n]) >> shift) over rows of n; no rounding. */
static void weft_sig_window(int64_t total, int32_t n, const int16_t* x, const int16_t* w, int32_t shift, int16_t* y) {
  int64_t i;
  for (i = 0; i < total; ++i) {
    int32_t p = (int32_t)x[i] * (int32_t)w[i % n];
    int32_t r = p >> shift;
    y[i] = (int16_t)(r < -32768 ? -32768 : r > 32767 ? 32767 : r);
  }
}

/* @helper weft_sig_fft_auto_scale needs: weft_sig_msb */
/* The left shift that brings the largest magnitude into [16384, 32767], applied with a wrapping
 * store; the running "largest" follows the library's comparison literally (so a -32768 followed
 * by a larger sample is replaced by that sample). */
static void weft_sig_fft_auto_scale(int64_t n, const int16_t* x, int16_t* y, int32_t* scale_bits) {
  int16_t mx = 0;
  int64_t i;
  int32_t bits;
  for (i = 0; i < n; ++i) {
    int32_t v = x[i];
    if (v > (int32_t)mx) mx = (int16_t)v;
    else if (-v > (int32_t)mx) mx = (int16_t)(uint16_t)(uint32_t)(-v);
  }
  bits = 15 - weft_sig_msb32((uint32_t)(int32_t)mx);
  if (bits <= 0) bits = 0;
  for (i = 0; i < n; ++i) y[i] = (int16_t)(uint16_t)((uint32_t)(int32_t)x[i] << bits);
  *scale_bits = bits;
}

/* @helper weft_sig_rfft */
/* Fixed-point real FFT of int16 rows (mixed radix 4, 2, 3, 5, generic; each stage divides by its
 * radix with a rounded multiply; a final stage splits the half-length complex transform into the
 * real transform's n + 1 bins, halving once more): output ~ DFT / fft_length, interleaved re, im.
 * tw: n complex twiddles, stw: n/2 super twiddles, factors: (radix, remaining length) pairs ending
 * at remaining length 1; all from the op (Q15, floor(0.5 + 32767 x)). scratch: n complex int16
 * values, plus max_radix more when a radix is above 5 (the generic butterfly's). */
typedef struct weft_sig_c16 {
  int16_t r, i;
} weft_sig_c16;

static int16_t weft_sig_r15(int32_t p) { return (int16_t)(uint16_t)(uint32_t)((p + 16384) >> 15); }
static int16_t weft_sig_w16(int32_t v) { return (int16_t)(uint16_t)(uint32_t)v; }
static weft_sig_c16 weft_sig_cmul(weft_sig_c16 a, weft_sig_c16 b) {
  weft_sig_c16 c;
  c.r = weft_sig_r15((int32_t)a.r * b.r - (int32_t)a.i * b.i);
  c.i = weft_sig_r15((int32_t)a.r * b.i + (int32_t)a.i * b.r);
  return c;
}
static weft_sig_c16 weft_sig_div(weft_sig_c16 a, int32_t p) {
  const int32_t d = 32767 / p;
  weft_sig_c16 c;
  c.r = weft_sig_r15((int32_t)a.r * d);
  c.i = weft_sig_r15((int32_t)a.i * d);
  return c;
}
static weft_sig_c16 weft_sig_add(weft_sig_c16 a, weft_sig_c16 b) {
  weft_sig_c16 c;
  c.r = weft_sig_w16((int32_t)a.r + b.r);
  c.i = weft_sig_w16((int32_t)a.i + b.i);
  return c;
}
static weft_sig_c16 weft_sig_sub(weft_sig_c16 a, weft_sig_c16 b) {
  weft_sig_c16 c;
  c.r = weft_sig_w16((int32_t)a.r - b.r);
  c.i = weft_sig_w16((int32_t)a.i - b.i);
  return c;
}
static int16_t weft_sig_smul(int16_t a, int16_t b) { return weft_sig_r15((int32_t)a * b); }

/* Combines the p sub-transforms of length m at b (decimation in time). tmp: p complex values. */
static void weft_sig_butterfly(weft_sig_c16* b, int32_t p, int32_t m, int32_t fstride, int32_t n, const weft_sig_c16* tw, weft_sig_c16* tmp) {
  int32_t u, q;
  if (p == 2) {
    for (u = 0; u < m; ++u) {
      weft_sig_c16 a = weft_sig_div(b[u], 2), c = weft_sig_div(b[u + m], 2);
      weft_sig_c16 t = weft_sig_cmul(c, tw[u * fstride]);
      b[u + m] = weft_sig_sub(a, t);
      b[u] = weft_sig_add(a, t);
    }
  } else if (p == 4) {
    for (u = 0; u < m; ++u) {
      weft_sig_c16 a0 = weft_sig_div(b[u], 4), a1 = weft_sig_div(b[u + m], 4), a2 = weft_sig_div(b[u + 2 * m], 4),
                   a3 = weft_sig_div(b[u + 3 * m], 4);
      weft_sig_c16 s0 = weft_sig_cmul(a1, tw[u * fstride]), s1 = weft_sig_cmul(a2, tw[2 * u * fstride]), s2 = weft_sig_cmul(a3, tw[3 * u * fstride]);
      weft_sig_c16 s5 = weft_sig_sub(a0, s1), t0 = weft_sig_add(a0, s1), s3 = weft_sig_add(s0, s2), s4 = weft_sig_sub(s0, s2);
      b[u + 2 * m] = weft_sig_sub(t0, s3);
      b[u] = weft_sig_add(t0, s3);
      b[u + m].r = weft_sig_w16((int32_t)s5.r + s4.i);
      b[u + m].i = weft_sig_w16((int32_t)s5.i - s4.r);
      b[u + 3 * m].r = weft_sig_w16((int32_t)s5.r - s4.i);
      b[u + 3 * m].i = weft_sig_w16((int32_t)s5.i + s4.r);
    }
  } else if (p == 3) {
    const weft_sig_c16 e = tw[fstride * m];
    for (u = 0; u < m; ++u) {
      weft_sig_c16 a0 = weft_sig_div(b[u], 3), a1 = weft_sig_div(b[u + m], 3), a2 = weft_sig_div(b[u + 2 * m], 3);
      weft_sig_c16 s1 = weft_sig_cmul(a1, tw[u * fstride]), s2 = weft_sig_cmul(a2, tw[2 * u * fstride]);
      weft_sig_c16 s3 = weft_sig_add(s1, s2), s0 = weft_sig_sub(s1, s2), f1;
      f1.r = weft_sig_w16((int32_t)a0.r - (((int32_t)s3.r) >> 1));
      f1.i = weft_sig_w16((int32_t)a0.i - (((int32_t)s3.i) >> 1));
      s0.r = weft_sig_smul(s0.r, e.i);
      s0.i = weft_sig_smul(s0.i, e.i);
      b[u] = weft_sig_add(a0, s3);
      b[u + 2 * m].r = weft_sig_w16((int32_t)f1.r + s0.i);
      b[u + 2 * m].i = weft_sig_w16((int32_t)f1.i - s0.r);
      b[u + m].r = weft_sig_w16((int32_t)f1.r - s0.i);
      b[u + m].i = weft_sig_w16((int32_t)f1.i + s0.r);
    }
  } else if (p == 5) {
    const weft_sig_c16 ya = tw[fstride * m], yb = tw[2 * fstride * m];
    for (u = 0; u < m; ++u) {
      weft_sig_c16 a0 = weft_sig_div(b[u], 5), a1 = weft_sig_div(b[u + m], 5), a2 = weft_sig_div(b[u + 2 * m], 5),
                   a3 = weft_sig_div(b[u + 3 * m], 5), a4 = weft_sig_div(b[u + 4 * m], 5);
      weft_sig_c16 s1 = weft_sig_cmul(a1, tw[u * fstride]), s2 = weft_sig_cmul(a2, tw[2 * u * fstride]),
                   s3 = weft_sig_cmul(a3, tw[3 * u * fstride]), s4 = weft_sig_cmul(a4, tw[4 * u * fstride]);
      weft_sig_c16 s7 = weft_sig_add(s1, s4), s10 = weft_sig_sub(s1, s4), s8 = weft_sig_add(s2, s3), s9 = weft_sig_sub(s2, s3);
      weft_sig_c16 s5, s6, s11, s12;
      b[u].r = weft_sig_w16((int32_t)a0.r + s7.r + s8.r);
      b[u].i = weft_sig_w16((int32_t)a0.i + s7.i + s8.i);
      s5.r = weft_sig_w16((int32_t)a0.r + weft_sig_smul(s7.r, ya.r) + weft_sig_smul(s8.r, yb.r));
      s5.i = weft_sig_w16((int32_t)a0.i + weft_sig_smul(s7.i, ya.r) + weft_sig_smul(s8.i, yb.r));
      s6.r = weft_sig_w16((int32_t)weft_sig_smul(s10.i, ya.i) + weft_sig_smul(s9.i, yb.i));
      s6.i = weft_sig_w16(-(int32_t)weft_sig_smul(s10.r, ya.i) - weft_sig_smul(s9.r, yb.i));
      b[u + m] = weft_sig_sub(s5, s6);
      b[u + 4 * m] = weft_sig_add(s5, s6);
      s11.r = weft_sig_w16((int32_t)a0.r + weft_sig_smul(s7.r, yb.r) + weft_sig_smul(s8.r, ya.r));
      s11.i = weft_sig_w16((int32_t)a0.i + weft_sig_smul(s7.i, yb.r) + weft_sig_smul(s8.i, ya.r));
      s12.r = weft_sig_w16(-(int32_t)weft_sig_smul(s10.i, yb.i) + weft_sig_smul(s9.i, ya.i));
      s12.i = weft_sig_w16((int32_t)weft_sig_smul(s10.r, yb.i) - weft_sig_smul(s9.r, ya.i));
      b[u + 2 * m] = weft_sig_add(s11, s12);
      b[u + 3 * m] = weft_sig_sub(s11, s12);
    }
  } else {
    for (u = 0; u < m; ++u) {
      int32_t q1, k;
      for (q1 = 0, k = u; q1 < p; ++q1, k += m) tmp[q1] = weft_sig_div(b[k], p);
      for (q1 = 0, k = u; q1 < p; ++q1, k += m) {
        int32_t idx = 0;
        weft_sig_c16 acc = tmp[0];
        for (q = 1; q < p; ++q) {
          idx += fstride * k;
          if (idx >= n) idx -= n;
          acc = weft_sig_add(acc, weft_sig_cmul(tmp[q], tw[idx]));
        }
        b[k] = acc;
      }
    }
  }
}

/* The transform of the row's complex values z[s0 + k * fstride] (z[j] = (x[2j], x[2j + 1]), zero
 * past the row's in_len samples) into b. */
static void weft_sig_fft_work(weft_sig_c16* b, const int16_t* x, int32_t in_len, int32_t s0, int32_t fstride, const int32_t* factors, int32_t n,
                              const weft_sig_c16* tw, weft_sig_c16* tmp) {
  const int32_t p = factors[0], m = factors[1];
  int32_t q;
  if (m == 1) {
    for (q = 0; q < p; ++q) {
      const int32_t j = s0 + q * fstride;
      b[q].r = 2 * j < in_len ? x[2 * j] : 0;
      b[q].i = 2 * j + 1 < in_len ? x[2 * j + 1] : 0;
    }
  } else {
    for (q = 0; q < p; ++q) weft_sig_fft_work(b + q * m, x, in_len, s0 + q * fstride, fstride * p, factors + 2, n, tw, tmp);
  }
  weft_sig_butterfly(b, p, m, fstride, n, tw, tmp);
}

static void weft_sig_rfft(int64_t rows, int32_t in_len, int32_t fft_length, const int16_t* x, int16_t* y, const int16_t* tw_data,
                          const int16_t* stw_data, const int32_t* factors, int32_t max_radix, uint8_t* scratch) {
  const int32_t n = fft_length / 2;
  const weft_sig_c16* tw = (const weft_sig_c16*)(const void*)tw_data;
  const weft_sig_c16* stw = (const weft_sig_c16*)(const void*)stw_data;
  weft_sig_c16* b = (weft_sig_c16*)(void*)scratch;  /* the half-length complex transform */
  weft_sig_c16* tmp = b + n;                          /* max_radix values for the generic butterfly */
  int64_t r;
  int32_t k;
  for (r = 0; r < rows; ++r) {
    weft_sig_c16* out = (weft_sig_c16*)(void*)(y + r * 2 * (n + 1));
    weft_sig_c16 tdc;
    weft_sig_fft_work(b, x + r * in_len, in_len, 0, 1, factors, n, tw, tmp);
    tdc = weft_sig_div(b[0], 2);
    out[0].r = weft_sig_w16((int32_t)tdc.r + tdc.i);
    out[0].i = 0;
    out[n].r = weft_sig_w16((int32_t)tdc.r - tdc.i);
    out[n].i = 0;
    for (k = 1; k <= n / 2; ++k) {
      weft_sig_c16 fpk = weft_sig_div(b[k], 2), conj, fpnk, f1, f2, t;
      conj.r = b[n - k].r;
      conj.i = weft_sig_w16(-(int32_t)b[n - k].i);
      fpnk = weft_sig_div(conj, 2);
      f1 = weft_sig_add(fpk, fpnk);
      f2 = weft_sig_sub(fpk, fpnk);
      t = weft_sig_cmul(f2, stw[k - 1]);
      out[k].r = weft_sig_w16(((int32_t)f1.r + t.r) >> 1);
      out[k].i = weft_sig_w16(((int32_t)f1.i + t.i) >> 1);
      out[n - k].r = weft_sig_w16(((int32_t)f1.r - t.r) >> 1);
      out[n - k].i = weft_sig_w16(((int32_t)t.i - f1.i) >> 1);
    }
  }
  (void)max_radix;
}

/* @helper weft_sig_energy */
/* Power of bins [start, end) of interleaved int16 complex values; the other bins are 0. */
static void weft_sig_energy(int32_t bins, int32_t start, int32_t end, const int16_t* x, uint32_t* y) {
  int32_t i;
  for (i = 0; i < bins; ++i) {
    if (i >= start && i < end) {
      const int32_t re = x[2 * i], im = x[2 * i + 1];
      y[i] = (uint32_t)re * (uint32_t)re + (uint32_t)im * (uint32_t)im;
    } else {
      y[i] = 0;
    }
  }
}

/* @helper weft_sig_filter_bank */
/* Triangular mel bands: channel c sums weight * energy over its band and unweight * energy over
 * channel c - 1's band (channel 0 of the tables is a scratch band), in uint64. */
static void weft_sig_filter_bank(int32_t channels, const uint32_t* e, const int16_t* weights, const int16_t* unweights, const int16_t* freq_starts,
                                 const int16_t* weight_starts, const int16_t* widths, uint64_t* y) {
  uint64_t wacc = 0, uacc = 0;
  int32_t ch, j;
  for (ch = 0; ch <= channels; ++ch) {
    const int32_t f0 = freq_starts[ch], w0 = weight_starts[ch];
    for (j = 0; j < widths[ch]; ++j) {
      const uint64_t v = e[f0 + j];
      wacc += (uint64_t)(int64_t)weights[w0 + j] * v;
      uacc += (uint64_t)(int64_t)unweights[w0 + j] * v;
    }
    if (ch > 0) y[ch - 1] = wacc;
    wacc = uacc;
    uacc = 0;
  }
}

/* @helper weft_sig_sqrt */
/* Square roots rounded to nearest (never above the type's largest root): exact integer root r,
 * plus one when n - r*r > r. */
static uint32_t weft_sig_isqrt64(uint64_t n) {
  const uint64_t cap = n < ((uint64_t)1 << 32) ? 0xFFFFu : 0xFFFFFFFFu;
  uint64_t res = 0, bit = (uint64_t)1 << 62;
  while (bit > n) bit >>= 2;
  while (bit) {  /* n ends as the remainder n - res * res */
    if (n >= res + bit) {
      n -= res + bit;
      res = (res >> 1) + bit;
    } else {
      res >>= 1;
    }
    bit >>= 2;
  }
  if (n > res && res != cap) ++res;
  return (uint32_t)res;
}
static void weft_sig_fb_sqrt(int32_t channels, const uint64_t* x, int32_t shift, uint32_t* y) {
  int32_t i;
  for (i = 0; i < channels; ++i) y[i] = weft_sig_isqrt64(x[i]) >> shift;
}

/* @helper weft_sig_spectral_subtraction */
/* Noise estimate per channel (odd channels with the alternate smoothing), kept in `noise` between
 * runs scaled up by 2^smoothing_bits; the output is what remains above it, at least
 * min_signal_remaining of the input. */
static void weft_sig_spectral_subtraction(int32_t channels, const uint32_t* x, uint32_t smoothing, uint32_t one_minus, uint32_t alt_smoothing,
                                          uint32_t alt_one_minus, uint32_t smoothing_bits, uint32_t min_remaining, uint32_t bits,
                                          int32_t clamping, uint32_t* noise, uint32_t* y, uint32_t* noise_out) {
  int32_t i;
  for (i = 0; i < channels; ++i) {
    const uint32_t sm = (i & 1) ? alt_smoothing : smoothing, oms = (i & 1) ? alt_one_minus : one_minus;
    const uint32_t sig = x[i] << smoothing_bits;
    uint32_t est, floor_v, sub;
    noise[i] = (uint32_t)(((uint64_t)sig * sm + (uint64_t)noise[i] * oms) >> bits);
    est = noise[i];
    if (est > sig) {
      est = sig;
      if (clamping) noise[i] = sig;
    }
    floor_v = (uint32_t)(((uint64_t)x[i] * min_remaining) >> bits);
    sub = (sig - est) >> smoothing_bits;
    y[i] = sub > floor_v ? sub : floor_v;
  }
  for (i = 0; i < channels; ++i) noise_out[i] = noise[i];
}

/* @helper weft_sig_pcan needs: weft_sig_msb */
/* Per-channel energy normalization: gain from a piecewise-quadratic lookup over log2 segments of
 * the noise estimate, then a soft compression of the normalized value (12 fractional bits in,
 * 6 out). */
static int16_t weft_sig_wdf(uint32_t x, const int16_t* lut) {
  int32_t iv, base, frac, r;
  uint32_t t;
  if (x <= 2) return lut[x];
  iv = weft_sig_msb32(x);
  base = 4 * iv - 6;
  t = iv < 11 ? x << (11 - iv) : x >> (iv - 11);
  frac = (int32_t)(t & 0x3FF);
  r = ((int32_t)lut[base + 2] * frac) >> 5;
  r = (int32_t)((uint32_t)r + ((uint32_t)(int32_t)lut[base + 1] << 5));
  r = (int32_t)((uint32_t)r * (uint32_t)frac);
  r = (r + 16384) >> 15;
  r = r + lut[base];
  return (int16_t)(uint16_t)(uint32_t)r;
}
static void weft_sig_pcan(int32_t channels, const uint32_t* x, const uint32_t* noise, const int16_t* lut, int32_t snr_shift, uint32_t* y) {
  int32_t i;
  for (i = 0; i < channels; ++i) {
    const uint32_t gain = (uint32_t)(int32_t)weft_sig_wdf(noise[i], lut);
    const uint32_t snr = (uint32_t)(((uint64_t)x[i] * gain) >> snr_shift);
    y[i] = snr < 8192u ? (snr * snr) >> 20 : (snr >> 6) - 64u;
  }
}

/* @helper weft_sig_fb_log needs: weft_sig_msb */
/* output_scale * ln(x << correction) in Q16 (the multiply wraps at 32 bits, as the library's
 * does), saturated to int16; 0 for inputs of 0 and 1. The log2 fraction is interpolated from a
 * table of log2(1 + t) - t at t = k / 128 (Q16). */
static const uint16_t weft_sig_log_lut[130] = {
    0,    224,  442,  654,  861,  1063, 1259, 1450, 1636, 1817, 1992, 2163, 2329, 2490, 2646, 2797, 2944, 3087, 3224, 3358, 3487, 3611,
    3732, 3848, 3960, 4068, 4172, 4272, 4368, 4460, 4549, 4633, 4714, 4791, 4864, 4934, 5001, 5063, 5123, 5178, 5231, 5280, 5326, 5368,
    5408, 5444, 5477, 5507, 5533, 5557, 5578, 5595, 5610, 5622, 5631, 5637, 5640, 5641, 5638, 5633, 5626, 5615, 5602, 5586, 5568, 5547,
    5524, 5498, 5470, 5439, 5406, 5370, 5332, 5291, 5249, 5203, 5156, 5106, 5054, 5000, 4944, 4885, 4825, 4762, 4697, 4630, 4561, 4490,
    4416, 4341, 4264, 4184, 4103, 4020, 3935, 3848, 3759, 3668, 3575, 3481, 3384, 3286, 3186, 3084, 2981, 2875, 2768, 2659, 2549, 2437,
    2323, 2207, 2090, 1971, 1851, 1729, 1605, 1480, 1353, 1224, 1094, 963,  830,  695,  559,  421,  282,  142,  0,    0};
static void weft_sig_fb_log(int32_t channels, const uint32_t* x, uint32_t correction_bits, uint32_t scale, int16_t* y) {
  int32_t i;
  for (i = 0; i < channels; ++i) {
    const uint32_t s = x[i] << correction_bits;
    if (s > 1) {
      const int32_t e = weft_sig_msb32(s) - 1;
      int32_t f = (int32_t)((int64_t)s - ((int64_t)1 << e)), seg, c0, c1, rel;
      uint32_t log2v, loge, v;
      f = e < 16 ? f << (16 - e) : f >> (e - 16);
      seg = f >> 9;
      c0 = weft_sig_log_lut[seg];
      c1 = weft_sig_log_lut[seg + 1];
      rel = ((c1 - c0) * (f - 512 * seg)) >> 16;
      log2v = ((uint32_t)e << 16) + (uint32_t)(f + c0 + rel);
      loge = (uint32_t)(((uint64_t)45426u * log2v + 32768u) >> 16);
      v = (scale * loge + 32768u) >> 16;
      y[i] = (int16_t)(v < 32767u ? v : 32767u);
    } else {
      y[i] = 0;
    }
  }
}
