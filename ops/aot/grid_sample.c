/* GridSample's sampling (ops/grid_sample.cc states the semantics): per image plane of X, each
 * output position read from the grid, denormalized in the element type, and interpolated
 * (linear, nearest, cubic) with the padding mode applied to every pixel index read. Portable C99
 * that is also valid C++: the runtime's op compiles this very text for float32 and double, and
 * weft aot writes it into modules, so both give the same values. */

/* @helper weft_grid_sample_def */
/* mode: 0 linear, 1 nearest (half to even), 2 cubic (2 spatial dims). pad: 0 zeros, 1 border,
 * 2 reflection. sp: 2 or 3 spatial dims; in and outd hold (D,) H, W with D = 1 for 2-D. Planes
 * [p0, p1) of the N * C planes; plane bc reads grid batch bc / c. */
static double weft_gs_cubic_w(double t, int32_t k) {
  const double a = -0.75;
  t = t < 0 ? -t : t;
  switch (k) {
    case 0: return ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a;
    case 1: return ((a + 2) * t - (a + 3)) * t * t + 1;
    case 2: return ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1;
    default: return ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a;
  }
}

#define WEFT_GRID_SAMPLE_DEF(NAME, T)                                                                                        \
  static T NAME##_reflect(T x, T lo, T hi) {                                                                                 \
    const T range = hi - lo;                                                                                                 \
    if (!(range > 0)) return lo;                                                                                             \
    if (x < lo) {                                                                                                            \
      const T d = lo - x;                                                                                                    \
      const int64_t n = (int64_t)(d / range);                                                                                \
      const T r = d - (T)n * range;                                                                                          \
      return n % 2 == 0 ? lo + r : hi - r;                                                                                   \
    }                                                                                                                        \
    if (x > hi) {                                                                                                            \
      const T d = x - hi;                                                                                                    \
      const int64_t n = (int64_t)(d / range);                                                                                \
      const T r = d - (T)n * range;                                                                                          \
      return n % 2 == 0 ? hi - r : lo + r;                                                                                   \
    }                                                                                                                        \
    return x;                                                                                                                \
  }                                                                                                                          \
  /* the pixel index along axis a (x, y, z) after padding, or -1 for a zero */                                              \
  static int64_t NAME##_index(int64_t i, int32_t a, int32_t pad, const int64_t* len, const T* lo, const T* hi) {             \
    int64_t r;                                                                                                               \
    if (pad == 0) return i >= 0 && i < len[a] ? i : -1;                                                                      \
    if (pad == 1) return i < 0 ? 0 : i >= len[a] ? len[a] - 1 : i;                                                           \
    r = (int64_t)NAME##_reflect((T)i, lo[a], hi[a]);                                                                         \
    return r < 0 ? 0 : r >= len[a] ? len[a] - 1 : r;                                                                        \
  }                                                                                                                          \
  static T NAME##_pixel(const T* img, const int64_t* in, int32_t sp, int32_t pad, const int64_t* len, const T* lo,          \
                        const T* hi, int64_t zi, int64_t yi, int64_t xi) {                                                   \
    const int64_t X = NAME##_index(xi, 0, pad, len, lo, hi), Y = NAME##_index(yi, 1, pad, len, lo, hi);                     \
    const int64_t Z = sp == 3 ? NAME##_index(zi, 2, pad, len, lo, hi) : 0;                                                   \
    if (X < 0 || Y < 0 || Z < 0) return (T)0;                                                                                \
    return img[(Z * in[1] + Y) * in[2] + X];                                                                                 \
  }                                                                                                                          \
  static T NAME##_pos(T g, int64_t len, int32_t align) {                                                                     \
    const T v = align ? (T)((g + 1) / 2 * (T)(len - 1)) : (T)(((g + 1) * (T)len - 1) / 2);                                  \
    return v < (T)-1099511627776.0 ? (T)-1099511627776.0 : v > (T)1099511627776.0 ? (T)1099511627776.0 : v;                \
  }                                                                                                                          \
  static void NAME(const T* x, const T* grid, T* y, int64_t c, int32_t sp, const int64_t* in, const int64_t* outd,          \
                   int32_t mode, int32_t pad, int32_t align, int64_t p0, int64_t p1) {                                       \
    const int64_t plane_in = in[0] * in[1] * in[2], plane_out = outd[0] * outd[1] * outd[2];                                \
    const int64_t len[3] = {in[2], in[1], in[0]};                                                                            \
    T lo[3], hi[3];                                                                                                          \
    int64_t bc, p;                                                                                                           \
    int32_t a, h, w;                                                                                                         \
    for (a = 0; a < 3; ++a) {                                                                                                \
      lo[a] = align ? (T)0 : (T)-0.5;                                                                                        \
      hi[a] = align ? (T)(len[a] - 1) : (T)((double)len[a] - 0.5);                                                           \
    }                                                                                                                        \
    for (bc = p0; bc < p1; ++bc) {                                                                                           \
      const T* img = x + bc * plane_in;                                                                                      \
      T* o = y + bc * plane_out;                                                                                             \
      const T* gb = grid + (bc / c) * plane_out * sp;                                                                        \
      for (p = 0; p < plane_out; ++p) {                                                                                      \
        const T* gp = gb + p * sp;                                                                                           \
        const T fx = NAME##_pos(gp[0], in[2], align), fy = NAME##_pos(gp[1], in[1], align);                                 \
        const T fz = sp == 3 ? NAME##_pos(gp[2], in[0], align) : (T)0;                                                       \
        T v = 0;                                                                                                             \
        if (fx != fx || fy != fy || fz != fz) { /* a NaN position samples nothing: NaN */                                    \
          o[p] = (T)NAN;                                                                                                     \
          continue;                                                                                                          \
        }                                                                                                                    \
        if (mode == 1) {                                                                                                     \
          v = NAME##_pixel(img, in, sp, pad, len, lo, hi, (int64_t)nearbyint((double)fz), (int64_t)nearbyint((double)fy),    \
                           (int64_t)nearbyint((double)fx));                                                                  \
        } else if (mode == 0) {                                                                                              \
          const int64_t x1 = (int64_t)floor((double)fx), y1 = (int64_t)floor((double)fy);                                   \
          const T dx1 = fx - (T)x1, dx2 = (T)(x1 + 1) - fx, dy1 = fy - (T)y1, dy2 = (T)(y1 + 1) - fy;                       \
          int64_t z, z1 = 0, nz = 1;                                                                                         \
          T dz1 = 0, dz2 = 1;                                                                                                \
          if (sp == 3) {                                                                                                     \
            z1 = (int64_t)floor((double)fz);                                                                                 \
            dz1 = fz - (T)z1;                                                                                                \
            dz2 = (T)(z1 + 1) - fz;                                                                                          \
            nz = 2;                                                                                                          \
          }                                                                                                                  \
          for (z = 0; z < nz; ++z) {                                                                                         \
            const T pl = dy2 * (dx2 * NAME##_pixel(img, in, sp, pad, len, lo, hi, z1 + z, y1, x1) +                          \
                                dx1 * NAME##_pixel(img, in, sp, pad, len, lo, hi, z1 + z, y1, x1 + 1)) +                     \
                         dy1 * (dx2 * NAME##_pixel(img, in, sp, pad, len, lo, hi, z1 + z, y1 + 1, x1) +                      \
                                dx1 * NAME##_pixel(img, in, sp, pad, len, lo, hi, z1 + z, y1 + 1, x1 + 1));                  \
            if (sp == 2) v = pl;                                                                                             \
            else v = z == 0 ? dz2 * pl : v + dz1 * pl;                                                                       \
          }                                                                                                                  \
        } else { /* cubic, 2-D */                                                                                            \
          const int64_t x0 = (int64_t)floor((double)fx) - 1, y0 = (int64_t)floor((double)fy) - 1;                           \
          const double tx = (double)(fx - (T)x0 - 1), ty = (double)(fy - (T)y0 - 1);                                        \
          T rows[4];                                                                                                         \
          for (h = 0; h < 4; ++h) {                                                                                          \
            rows[h] = 0;                                                                                                     \
            for (w = 0; w < 4; ++w)                                                                                          \
              rows[h] += (T)weft_gs_cubic_w(tx, w) * NAME##_pixel(img, in, sp, pad, len, lo, hi, 0, y0 + h, x0 + w);         \
          }                                                                                                                  \
          v = (T)weft_gs_cubic_w(ty, 0) * rows[0] + (T)weft_gs_cubic_w(ty, 1) * rows[1] +                                    \
              (T)weft_gs_cubic_w(ty, 2) * rows[2] + (T)weft_gs_cubic_w(ty, 3) * rows[3];                                     \
        }                                                                                                                    \
        o[p] = v;                                                                                                            \
      }                                                                                                                      \
    }                                                                                                                        \
  }

/* @helper weft_grid_sample_f32 needs: weft_grid_sample_def */
WEFT_GRID_SAMPLE_DEF(weft_grid_sample_f32, float)

/* @helper weft_grid_sample_f64 needs: weft_grid_sample_def */
WEFT_GRID_SAMPLE_DEF(weft_grid_sample_f64, double)
