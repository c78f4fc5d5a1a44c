/* @helper weft_resize */
/* ONNX Resize on float32, uint8 or int8 (type 0, 1, 2), any rank from 1 to 8, as a separable weighted sum. Output coordinate o
 * of axis d takes the taps start[base_d + o] to start[base_d + o + 1] - 1, where base_d is the sum
 * of out_dims[e] + 1 over the axes e before d; a tap is an input offset along its axis (index
 * times stride, off[]) and a weight (w[]). An output element is the sum, over the tensor product
 * of its axes' taps, of the product of their weights times the input element, in double (the
 * runtime's general loop, ops/resize.cc), or `extrap` when an axis has no taps for it
 * (tf_crop_and_resize outside the input). 8-bit outputs are rounded half away from zero and
 * saturated. The emitter computes the taps with the runtime's code. */
static void weft_resize(int32_t rank, const int64_t* out_dims, const int32_t* start, const int64_t* off, const double* w, float extrap,
                        int32_t type, const void* xv, void* yv) {
  const float* xf = (const float*)xv;
  const uint8_t* xu = (const uint8_t*)xv;
  const int8_t* xs = (const int8_t*)xv;
  int32_t base[8] = {0}, pos[8] = {0}, lo[8] = {0}, hi[8] = {0};
  int64_t coord[8] = {0}, total = 1, i;
  int32_t d;
  for (d = 0; d < rank; ++d) {
    if (d > 0) base[d] = base[d - 1] + (int32_t)out_dims[d - 1] + 1;
    total *= out_dims[d];
  }
  for (i = 0; i < total; ++i) {
    int outside = 0;
    double v = extrap;
    for (d = 0; d < rank; ++d) {
      lo[d] = start[base[d] + coord[d]];
      hi[d] = start[base[d] + coord[d] + 1];
      if (lo[d] == hi[d]) outside = 1;
      pos[d] = lo[d];
    }
    if (!outside) {
      v = 0.0;
      for (;;) {
        double ww = 1.0;
        int64_t o = 0;
        for (d = 0; d < rank; ++d) {
          ww *= w[pos[d]];
          o += off[pos[d]];
        }
        v += ww * (type == 0 ? (double)xf[o] : type == 1 ? (double)xu[o] : (double)xs[o]);
        for (d = rank - 1; d >= 0; --d) {
          if (++pos[d] < hi[d]) break;
          pos[d] = lo[d];
        }
        if (d < 0) break;
      }
    }
    if (type == 0) {
      ((float*)yv)[i] = (float)v;
    } else {
      const double qlo = type == 1 ? 0.0 : -128.0, qhi = type == 1 ? 255.0 : 127.0;
      v = round(v);
      v = v < qlo ? qlo : v > qhi ? qhi : v;
      if (type == 1) ((uint8_t*)yv)[i] = (uint8_t)v;
      else ((int8_t*)yv)[i] = (int8_t)v;
    }
    for (d = rank - 1; d >= 0; --d) {
      if (++coord[d] < out_dims[d]) break;
      coord[d] = 0;
    }
  }
}

/* @helper weft_resize_planes_q8 */
/* An 8-bit Resize of the last two dims only, as the runtime's separable path computes it: per plane
 * of hi x wi, a horizontal pass over every input row into tmp (hi x wo floats), then a vertical one
 * into a row of wo floats (tmp's last), each output coordinate through up to 4 taps (ix/wx, iy/wy: 4
 * per coordinate, nx and ny used); each output rounded half away from zero and saturated. nearest:
 * a copy by index. tmp holds (hi + 1) * wo floats. */
static void weft_resize_planes_q8(int64_t planes, int64_t hi, int64_t wi, int64_t ho, int64_t wo, const int64_t* ix, const float* wx,
                                  int32_t nx, const int64_t* iy, const float* wy, int32_t ny, int32_t nearest, int32_t is_signed,
                                  const uint8_t* x, uint8_t* y, float* tmp) {
  const float lo = is_signed ? -128.f : 0.f, top = is_signed ? 127.f : 255.f;
  int64_t pl, yy, ox, oy;
  int32_t k;
  for (pl = 0; pl < planes; ++pl) {
    const uint8_t* src = x + pl * hi * wi;
    uint8_t* dst = y + pl * ho * wo;
    float* o = tmp + hi * wo;
    if (nearest) {
      for (oy = 0; oy < ho; ++oy)
        for (ox = 0; ox < wo; ++ox) dst[oy * wo + ox] = src[iy[oy * 4] * wi + ix[ox * 4]];
      continue;
    }
    for (yy = 0; yy < hi; ++yy)
      for (ox = 0; ox < wo; ++ox) {
        const uint8_t* row = src + yy * wi;
        const int64_t* id = ix + ox * 4;
        const float* w = wx + ox * 4;
        float v = w[0] * (is_signed ? (float)(int8_t)row[id[0]] : (float)row[id[0]]);
        for (k = 1; k < nx; ++k) v += w[k] * (is_signed ? (float)(int8_t)row[id[k]] : (float)row[id[k]]);
        tmp[yy * wo + ox] = v;
      }
    for (oy = 0; oy < ho; ++oy) {
      const int64_t* id = iy + oy * 4;
      const float* w = wy + oy * 4;
      for (ox = 0; ox < wo; ++ox) o[ox] = w[0] * tmp[id[0] * wo + ox];
      for (k = 1; k < ny; ++k)
        for (ox = 0; ox < wo; ++ox) o[ox] += w[k] * tmp[id[k] * wo + ox];
      for (ox = 0; ox < wo; ++ox) {
        float v = roundf(o[ox]);
        v = v > lo ? v : lo;
        v = v < top ? v : top;
        if (is_signed) {
          const int8_t q = (int8_t)v;
          dst[oy * wo + ox] = (uint8_t)q;
        } else {
          dst[oy * wo + ox] = (uint8_t)v;
        }
      }
    }
  }
}
