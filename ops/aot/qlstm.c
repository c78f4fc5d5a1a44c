/* @helper weft_dq_lstm needs: weft_rnn_act */
/* ONNX Runtime's DynamicQuantizeLSTM as ops/qlstm.cc computes it: W [dirs, in, 4H] and R [dirs, H, 4H]
 * 8-bit (gates i o f c along the last axis) with a scale and zero point per direction or per gate row;
 * the input projection of all steps and rows quantized at once, H(t-1) of all rows per step, each as
 * DynamicQuantizeLinear does; exact integer sums, each times (scale of the operand * scale of the
 * row). Time major (layout 0) only. */
typedef struct weft_dq_lstm_args {
  int32_t seq, batch, in, hidden, dirs;
  int32_t reverse; /* direction "reverse": the only direction runs backwards */
  int32_t input_forget;
  float clip;             /* > 0: gate pre-activations clamped to [-clip, clip] */
  weft_rnn_act act[2][3]; /* per direction: f, g, h */
  const float* x;         /* [seq, batch, in] */
  const uint8_t* w;       /* the bytes of W and R; int8 where *_signed */
  const uint8_t* r;
  int32_t w_signed, r_signed;
  const float* w_scale; /* [dirs] or [dirs, 4H] (w_per_row) */
  const uint8_t* w_zero;
  int32_t w_per_row;
  const float* r_scale;
  const uint8_t* r_zero;
  int32_t r_per_row;
  const float* b;      /* [dirs, 8H] (Wb then Rb) or NULL */
  const float* p;      /* [dirs, 3H] or NULL */
  const float* h0;     /* [dirs, batch, H] or NULL: zeros */
  const float* c0;     /* or NULL: zeros */
  const int64_t* lens; /* [batch] in [0, seq], or NULL: all seq */
  float* y;            /* [seq, dirs, batch, H] or NULL */
  float* y_h;          /* [dirs, batch, H] or NULL */
  float* y_c;
} weft_dq_lstm_args;

/* DynamicQuantizeLinear of n floats into q: 1 for a value that is not finite. */
static int weft_dq_quantize(const float* v, int64_t n, uint8_t* q, float* scale, int32_t* zero) {
  float mn = 0.f, mx = 0.f, s, zpf, t;
  int64_t i;
  for (i = 0; i < n; ++i) {
    if (!(v[i] == v[i]) || v[i] > 3.402823466e38f || v[i] < -3.402823466e38f) return 1;
    mn = v[i] < mn ? v[i] : mn;
    mx = v[i] > mx ? v[i] : mx;
  }
  s = mx == mn ? 1.f : (mx - mn) / 255.f;
  zpf = 0.f - mn / s;
  zpf = nearbyintf(zpf < 0.f ? 0.f : zpf > 255.f ? 255.f : zpf);
  for (i = 0; i < n; ++i) {
    t = nearbyintf(v[i] / s) + zpf;
    q[i] = (uint8_t)(t < 0.f ? 0.f : t > 255.f ? 255.f : t);
  }
  *scale = s;
  *zero = (int32_t)zpf;
  return 0;
}

/* out[i][j] (+)= float(sum_p (q[i][p] - zq)(w[p][j] - wz[j])) * (sq * ws[j]) for m rows of k values,
 * G = 4H columns of direction d's weights. */
static void weft_dq_product(const uint8_t* q, int32_t zq, float sq, int64_t m, int64_t k, int64_t G, const uint8_t* w, int32_t w_signed,
                            const float* ws, const uint8_t* wz, int32_t per_row, int32_t d, float* out, int32_t add) {
  int64_t i, j, p;
  for (i = 0; i < m; ++i)
    for (j = 0; j < G; ++j) {
      const int64_t at = per_row ? (int64_t)d * G + j : d;
      const int32_t z = w_signed ? (int32_t)(int8_t)wz[at] : (int32_t)wz[at];
      const float mult = sq * ws[at];
      int64_t sum = 0;
      float v;
      for (p = 0; p < k; ++p) {
        const uint8_t b = w[((int64_t)d * k + p) * G + j];
        sum += ((int64_t)q[i * k + p] - zq) * ((w_signed ? (int64_t)(int8_t)b : (int64_t)b) - z);
      }
      v = (float)(int32_t)(uint32_t)(uint64_t)sum * mult;
      out[i * G + j] = add ? out[i * G + j] + v : v;
    }
}

/* scratch: floats for (seq * batch + batch) * 4H + 3 * batch * H, then max(seq * batch * in, batch * H)
 * bytes. 0, or 1 for a value to quantize that is not finite. */
static int weft_dq_lstm(const weft_dq_lstm_args* a, float* scratch) {
  const int64_t T = a->seq, Bn = a->batch, I = a->in, H = a->hidden, G = 4 * H;
  float* gx = scratch;
  float* zs = gx + T * Bn * G;
  float* h = zs + Bn * G;
  float* c = h + Bn * H;
  float* hz = c + Bn * H;
  uint8_t* q = (uint8_t*)(void*)(hz + Bn * H);
  int64_t d, step, bt, j;
  if (a->y) memset(a->y, 0, (size_t)(T * a->dirs * Bn * H) * sizeof(float));
  for (d = 0; d < a->dirs; ++d) {
    const int32_t reverse = a->reverse || d == 1;
    const weft_rnn_act* fa = &a->act[d][0];
    const weft_rnn_act* ga = &a->act[d][1];
    const weft_rnn_act* ha = &a->act[d][2];
    const float* bias = a->b ? a->b + d * 2 * G : 0;
    const float* peep = a->p ? a->p + d * 3 * H : 0;
    float sq;
    int32_t zq;
    if (T * Bn > 0) {
      if (weft_dq_quantize(a->x, T * Bn * I, q, &sq, &zq)) return 1;
      weft_dq_product(q, zq, sq, T * Bn, I, G, a->w, a->w_signed, a->w_scale, a->w_zero, a->w_per_row, (int32_t)d, gx, 0);
    }
    for (j = 0; j < Bn * H; ++j) {
      h[j] = a->h0 ? a->h0[d * Bn * H + j] : 0.f;
      c[j] = a->c0 ? a->c0[d * Bn * H + j] : 0.f;
    }
    for (step = 0; step < T; ++step) {
      const float* hq = h;
      memset(zs, 0, (size_t)(Bn * G) * sizeof(float));
      for (bt = 0; bt < Bn; ++bt) {
        const int64_t len = a->lens ? a->lens[bt] : T;
        if (step >= len) continue;
        memcpy(zs + bt * G, gx + ((reverse ? len - 1 - step : step) * Bn + bt) * G, (size_t)G * sizeof(float));
      }
      if (a->lens) { /* rows whose sequence ended before the previous step enter as zeros */
        memcpy(hz, h, (size_t)(Bn * H) * sizeof(float));
        for (bt = 0; bt < Bn; ++bt)
          if (step > a->lens[bt]) memset(hz + bt * H, 0, (size_t)H * sizeof(float));
        hq = hz;
      }
      if (Bn > 0) {
        if (weft_dq_quantize(hq, Bn * H, q, &sq, &zq)) return 1;
        weft_dq_product(q, zq, sq, Bn, H, G, a->r, a->r_signed, a->r_scale, a->r_zero, a->r_per_row, (int32_t)d, zs, 1);
      }
      for (bt = 0; bt < Bn; ++bt) {
        const int64_t len = a->lens ? a->lens[bt] : T;
        float* zi = zs + bt * G;
        float* zo = zi + H;
        float* zf = zi + 2 * H;
        float* zc = zi + 3 * H;
        float* cb = c + bt * H;
        float* hb = h + bt * H;
        if (step >= len) continue;
        for (j = 0; j < H; ++j) {
          float i_, f_, g_, o_;
          if (peep) {
            zi[j] = zi[j] + peep[j] * cb[j];
            zf[j] = zf[j] + peep[2 * H + j] * cb[j];
          }
          if (bias) zi[j] = zi[j] + (bias[j] + bias[G + j]);
          i_ = weft_rnn_apply(fa, a->clip, zi[j]);
          if (a->input_forget) {
            f_ = 1.f - i_;
          } else {
            if (bias) zf[j] = zf[j] + (bias[2 * H + j] + bias[G + 2 * H + j]);
            f_ = weft_rnn_apply(fa, a->clip, zf[j]);
          }
          if (bias) zc[j] = zc[j] + (bias[3 * H + j] + bias[G + 3 * H + j]);
          g_ = weft_rnn_apply(ga, a->clip, zc[j]);
          cb[j] = cb[j] * f_ + i_ * g_;
          if (peep) zo[j] = zo[j] + peep[H + j] * cb[j];
          if (bias) zo[j] = zo[j] + (bias[H + j] + bias[G + H + j]);
          o_ = weft_rnn_apply(fa, a->clip, zo[j]);
          hb[j] = weft_rnn_apply(ha, 0.f, cb[j]) * o_;
        }
        if (a->y) memcpy(a->y + (((reverse ? len - 1 - step : step) * a->dirs + d) * Bn + bt) * H, hb, (size_t)H * sizeof(float));
      }
    }
    if (a->y_h) memcpy(a->y_h + d * Bn * H, h, (size_t)(Bn * H) * sizeof(float));
    if (a->y_c) memcpy(a->y_c + d * Bn * H, c, (size_t)(Bn * H) * sizeof(float));
  }
  return 0;
}
