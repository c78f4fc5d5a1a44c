/* @helper weft_rnn_act */
/* A recurrent layer's activation (ONNX's names) and how a gate applies it. */
typedef struct weft_rnn_act {
  /* 0 Sigmoid, 1 Tanh, 2 Relu, 3 HardSigmoid, 4 LeakyRelu, 5 ThresholdedRelu, 6 ScaledTanh, 7 Affine,
   * 8 Elu, 9 Softsign, 10 Softplus */
  int32_t kind;
  float alpha, beta;
} weft_rnn_act;

/* Clips (clip > 0), then applies the activation: Sigmoid, Tanh and Relu in float, the others
 * through double as the runtime computes them. */
static float weft_rnn_apply(const weft_rnn_act* a, float clip, float v) {
  double x;
  if (clip > 0.f) v = v < -clip ? -clip : v > clip ? clip : v;
  x = v;
  switch (a->kind) {
    case 0: return 1.f / (1.f + expf(-v));
    case 1: return tanhf(v);
    case 2: return v > 0.f ? v : 0.f;
    case 3: x = a->alpha * x + a->beta; return (float)(x < 0.0 ? 0.0 : x > 1.0 ? 1.0 : x);
    case 4: return (float)(x >= 0.0 ? x : a->alpha * x);
    case 5: return (float)(x > a->alpha ? x : 0.0);
    case 6: return (float)(a->alpha * tanh(a->beta * x));
    case 7: return (float)(a->alpha * x + a->beta);
    case 8: return (float)(x >= 0.0 ? x : a->alpha * (exp(x) - 1.0));
    case 9: return (float)(x / (1.0 + fabs(x)));
    default: return (float)log1p(exp(x));
  }
}

/* @helper weft_rnn_f32 needs: weft_rnn_act */
/* ONNX RNN, GRU and LSTM in float32, as ops/rnn.cc computes them: W [dirs, G, in], R [dirs, G, hidden]
 * and B [dirs, 2G] with the gates in ONNX's order (GRU z r h, LSTM i o f c), P [dirs, 3 hidden] (i o f),
 * every direction, sequence_lens, initial states, clip and layout 0 (time major) or 1 (batch major). */
typedef struct weft_rnn_f32_args {
  int32_t kind; /* 0 RNN, 1 GRU, 2 LSTM */
  int32_t seq, batch, in, hidden, dirs, batch_first;
  int32_t reverse; /* direction "reverse": the only direction runs backwards */
  int32_t linear_before_reset, input_forget;
  float clip;             /* > 0: gate pre-activations clamped to [-clip, clip] */
  weft_rnn_act act[2][3]; /* per direction: f, g, h */
  const float* x;         /* [seq, batch, in] (layout 1: [batch, seq, in]) */
  const float* w;
  const float* r;
  const float* b;      /* or NULL */
  const float* p;      /* or NULL */
  const float* h0;     /* or NULL: zeros */
  const float* c0;     /* or NULL: zeros */
  const int64_t* lens; /* [batch] in [0, seq], or NULL: all seq */
  float* y;            /* [seq, dirs, batch, hidden] (layout 1: [batch, seq, dirs, hidden]), or NULL */
  float* y_h;          /* [dirs, batch, hidden] (layout 1: [batch, dirs, hidden]), or NULL */
  float* y_c;          /* like y_h (LSTM), or NULL */
} weft_rnn_f32_args;

static float weft_rnn_dot(const float* a, const float* b, int32_t n) {
  float acc = 0.f;
  int32_t k;
  for (k = 0; k < n; ++k) acc += a[k] * b[k];
  return acc;
}

/* Gate row k's input and recurrent sums with their biases: W_k x + Wb_k + R_k h + Rb_k. */
static float weft_rnn_gate(const float* w, const float* r, const float* wb, int32_t in, int32_t H, int32_t G, int32_t k,
                           const float* x, const float* h) {
  const float bias = wb ? wb[k] + wb[G + k] : 0.f;
  return bias + weft_rnn_dot(w + (int64_t)k * in, x, in) + weft_rnn_dot(r + (int64_t)k * H, h, H);
}

/* One batch row of direction d over its steps: h, c (hidden floats each) carry the state; g
 * (gates * hidden floats) and hn (hidden floats) are scratch. */
static void weft_rnn_row(const weft_rnn_f32_args* a, int32_t d, int32_t bt, float* h, float* c, float* g, float* hn) {
  const int32_t H = a->hidden, G = (a->kind == 2 ? 4 : a->kind == 1 ? 3 : 1) * H, in = a->in;
  const int32_t reverse = a->reverse || d == 1;
  const int32_t len = a->lens ? (int32_t)a->lens[bt] : a->seq;
  const float* w = a->w + (int64_t)d * G * in;
  const float* r = a->r + (int64_t)d * G * H;
  const float* wb = a->b ? a->b + (int64_t)d * 2 * G : 0;
  const float* p = a->p ? a->p + (int64_t)d * 3 * H : 0;
  const weft_rnn_act* fa = &a->act[d][0];
  const weft_rnn_act* ga = &a->act[d][1];
  const weft_rnn_act* ha = &a->act[d][2];
  int32_t step, j;
  for (step = 0; step < len; ++step) {
    const int32_t t = reverse ? len - 1 - step : step;
    const float* x = a->x + (a->batch_first ? (int64_t)bt * a->seq + t : (int64_t)t * a->batch + bt) * in;
    if (a->kind == 0) {
      for (j = 0; j < H; ++j) hn[j] = weft_rnn_apply(fa, a->clip, weft_rnn_gate(w, r, wb, in, H, G, j, x, h));
    } else if (a->kind == 1) {
      const float* wh = w + (int64_t)2 * H * in;
      const float* rh = r + (int64_t)2 * H * H;
      for (j = 0; j < 2 * H; ++j) g[j] = weft_rnn_apply(fa, a->clip, weft_rnn_gate(w, r, wb, in, H, G, j, x, h)); /* z, r */
      if (!a->linear_before_reset)
        for (j = 0; j < H; ++j) hn[j] = g[H + j] * h[j]; /* r (.) h, staged in hn */
      for (j = 0; j < H; ++j) {
        const float xb = wb ? wb[2 * H + j] : 0.f, hb = wb ? wb[G + 2 * H + j] : 0.f;
        const float xs = weft_rnn_dot(wh + (int64_t)j * in, x, in) + xb;
        g[2 * H + j] = a->linear_before_reset ? xs + g[H + j] * (weft_rnn_dot(rh + (int64_t)j * H, h, H) + hb)
                                              : xs + weft_rnn_dot(rh + (int64_t)j * H, hn, H) + hb;
      }
      for (j = 0; j < H; ++j) {
        const float cand = weft_rnn_apply(ga, a->clip, g[2 * H + j]);
        hn[j] = (1.f - g[j]) * cand + g[j] * h[j];
      }
    } else {
      for (j = 0; j < G; ++j) g[j] = weft_rnn_gate(w, r, wb, in, H, G, j, x, h);
      for (j = 0; j < H; ++j) {
        const float i = weft_rnn_apply(fa, a->clip, g[j] + (p ? p[j] * c[j] : 0.f));
        const float f = a->input_forget ? 1.f - i : weft_rnn_apply(fa, a->clip, g[2 * H + j] + (p ? p[2 * H + j] * c[j] : 0.f));
        const float cn = f * c[j] + i * weft_rnn_apply(ga, a->clip, g[3 * H + j]);
        const float o = weft_rnn_apply(fa, a->clip, g[H + j] + (p ? p[H + j] * cn : 0.f));
        c[j] = cn;
        hn[j] = o * weft_rnn_apply(ha, 0.f, cn);
      }
    }
    memcpy(h, hn, (size_t)H * sizeof(float));
    if (a->y)
      memcpy(a->y + (a->batch_first ? ((int64_t)bt * a->seq + t) * a->dirs + d : ((int64_t)t * a->dirs + d) * a->batch + bt) * H, h,
             (size_t)H * sizeof(float));
  }
}

/* The whole layer; scratch holds (gates + 3) * hidden floats. Steps past a row's sequence length
 * leave zeros in y. */
static void weft_rnn_f32(const weft_rnn_f32_args* a, float* scratch) {
  const int32_t H = a->hidden;
  float* h = scratch;
  float* c = h + H;
  float* hn = c + H;
  float* g = hn + H;
  int32_t d, bt, j;
  if (a->y && a->lens) memset(a->y, 0, (size_t)a->seq * (size_t)a->dirs * (size_t)a->batch * (size_t)H * sizeof(float));
  for (d = 0; d < a->dirs; ++d)
    for (bt = 0; bt < a->batch; ++bt) {
      const int64_t s = (a->batch_first ? (int64_t)bt * a->dirs + d : (int64_t)d * a->batch + bt) * H;
      for (j = 0; j < H; ++j) {
        h[j] = a->h0 ? a->h0[s + j] : 0.f;
        c[j] = a->c0 ? a->c0[s + j] : 0.f;
      }
      weft_rnn_row(a, d, bt, h, c, g, hn);
      if (a->y_h) memcpy(a->y_h + s, h, (size_t)H * sizeof(float));
      if (a->y_c) memcpy(a->y_c + s, c, (size_t)H * sizeof(float));
    }
}
