/* @helper weft_resize_f32 */
/* ONNX Resize on float32, any rank from 1 to 8, as a separable weighted sum. Output coordinate o
 * of axis d takes the taps start[base_d + o] to start[base_d + o + 1] - 1, where base_d is the sum
 * of out_dims[e] + 1 over the axes e before d; a tap is an input offset along its axis (index
 * times stride, off[]) and a weight (w[]). An output element is the sum, over the tensor product
 * of its axes' taps, of the product of their weights times the input element, in double (the
 * runtime's general loop, ops/resize.cc), or `extrap` when an axis has no taps for it
 * (tf_crop_and_resize outside the input). The emitter computes the taps with the runtime's code. */
static void weft_resize_f32(int32_t rank, const int64_t* out_dims, const int32_t* start, const int64_t* off, const double* w,
                            float extrap, const float* x, float* y) {
  int32_t base[8] = {0}, pos[8] = {0}, lo[8] = {0}, hi[8] = {0};
  int64_t coord[8] = {0}, total = 1, i;
  int32_t d;
  for (d = 0; d < rank; ++d) {
    if (d > 0) base[d] = base[d - 1] + (int32_t)out_dims[d - 1] + 1;
    total *= out_dims[d];
  }
  for (i = 0; i < total; ++i) {
    int outside = 0;
    for (d = 0; d < rank; ++d) {
      lo[d] = start[base[d] + coord[d]];
      hi[d] = start[base[d] + coord[d] + 1];
      if (lo[d] == hi[d]) outside = 1;
      pos[d] = lo[d];
    }
    if (outside) {
      y[i] = extrap;
    } else {
      double v = 0.0;
      for (;;) {
        double ww = 1.0;
        int64_t o = 0;
        for (d = 0; d < rank; ++d) {
          ww *= w[pos[d]];
          o += off[pos[d]];
        }
        v += ww * (double)x[o];
        for (d = rank - 1; d >= 0; --d) {
          if (++pos[d] < hi[d]) break;
          pos[d] = lo[d];
        }
        if (d < 0) break;
      }
      y[i] = (float)v;
    }
    for (d = rank - 1; d >= 0; --d) {
      if (++coord[d] < out_dims[d]) break;
      coord[d] = 0;
    }
  }
}
