/* @helper weft_conv_transpose_nchw */
/* ONNX ConvTranspose's geometry on NC + 3 spatial dims (1-D and 2-D as leading spatial dims of
 * 1): input [n, c, in...], weights [c, m / group, k...], output [n, m, out...]; strides s,
 * dilations d and begin pads p (negative when output_shape asks for more than the full output). */
typedef struct weft_convt {
  int32_t n, c, m, group;
  int32_t in[3], out[3], k[3], s[3], d[3], p[3];
} weft_convt;

/* @helper weft_conv_transpose_f32 needs: weft_conv_transpose_nchw */
/* Gather form: output position o of a spatial dim takes kernel tap t from input position
 * (o + p - t * d) / s when that divides exactly and lies inside the input; every output element
 * is the bias plus its contributing products, summed in float, so no accumulator is needed. */
static void weft_conv_transpose_f32(const weft_convt* g, const float* x, const float* w, const float* bias, float* y) {
  const int32_t cg = g->c / g->group, mg = g->m / g->group;
  const int64_t in_sp = (int64_t)g->in[0] * g->in[1] * g->in[2], k_sp = (int64_t)g->k[0] * g->k[1] * g->k[2];
  int32_t b, mm, o0, o1, o2, ic, t0, t1, t2;
  float* out = y;
  for (b = 0; b < g->n; ++b)
    for (mm = 0; mm < g->m; ++mm) {
      const int32_t grp = mm / mg, om = mm % mg;
      for (o0 = 0; o0 < g->out[0]; ++o0)
        for (o1 = 0; o1 < g->out[1]; ++o1)
          for (o2 = 0; o2 < g->out[2]; ++o2) {
            float acc = bias ? bias[mm] : 0.f;
            for (ic = 0; ic < cg; ++ic) {
              const int32_t ch = grp * cg + ic;
              const float* xc = x + ((int64_t)b * g->c + ch) * in_sp;
              const float* wc = w + ((int64_t)ch * mg + om) * k_sp;
              for (t0 = 0; t0 < g->k[0]; ++t0) {
                const int32_t n0 = o0 + g->p[0] - t0 * g->d[0];
                int32_t i0;
                if (n0 < 0 || n0 % g->s[0]) continue;
                i0 = n0 / g->s[0];
                if (i0 >= g->in[0]) continue;
                for (t1 = 0; t1 < g->k[1]; ++t1) {
                  const int32_t n1 = o1 + g->p[1] - t1 * g->d[1];
                  int32_t i1;
                  if (n1 < 0 || n1 % g->s[1]) continue;
                  i1 = n1 / g->s[1];
                  if (i1 >= g->in[1]) continue;
                  for (t2 = 0; t2 < g->k[2]; ++t2) {
                    const int32_t n2 = o2 + g->p[2] - t2 * g->d[2];
                    int32_t i2;
                    if (n2 < 0 || n2 % g->s[2]) continue;
                    i2 = n2 / g->s[2];
                    if (i2 >= g->in[2]) continue;
                    acc += xc[((int64_t)i0 * g->in[1] + i1) * g->in[2] + i2] * wc[((int64_t)t0 * g->k[1] + t1) * g->k[2] + t2];
                  }
                }
              }
            }
            *out++ = acc;
          }
    }
}
