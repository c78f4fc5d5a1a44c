/* The discrete Fourier transform of the spectral operators (DFT, STFT) in double: a radix-2 FFT
 * for power-of-two lengths, Bluestein's chirp transform over a radix-2 FFT for the others. Complex
 * values are pairs of doubles (real, imaginary). The tables (twiddle factors, chirp, the chirp's
 * transform) are prepared by the runtime (ops/spectral.cc) and written by weft aot as constants.
 * Portable C99 that is also valid C++: the runtime's ops compile this very text, and weft aot
 * writes it into modules, so both run the same arithmetic. */

/* @helper weft_fft_radix2 */
/* In place over n (a power of two) complex values: sum_j a[j] e^(-+2 pi i jk / n), - forward, +
 * backward. tw holds e^(-2 pi i k / n) for k < n / 2; the stage of length len reads every
 * (n / len)-th. */
static void weft_fft_radix2(double* a, int64_t n, const double* tw, int32_t backward) {
  int64_t i, j = 0, len, k;
  for (i = 1; i < n; ++i) {
    int64_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      const double r = a[2 * i], m = a[2 * i + 1];
      a[2 * i] = a[2 * j];
      a[2 * i + 1] = a[2 * j + 1];
      a[2 * j] = r;
      a[2 * j + 1] = m;
    }
  }
  for (len = 2; len <= n; len <<= 1) {
    const int64_t stride = n / len, half = len / 2;
    for (i = 0; i < n; i += len)
      for (k = 0; k < half; ++k) {
        const double wr = tw[2 * (k * stride)], wi = backward ? -tw[2 * (k * stride) + 1] : tw[2 * (k * stride) + 1];
        double* u = a + 2 * (i + k);
        double* v = a + 2 * (i + k + half);
        const double vr = v[0] * wr - v[1] * wi, vi = v[0] * wi + v[1] * wr;
        const double ur = u[0], ui = u[1];
        u[0] = ur + vr;
        u[1] = ui + vi;
        v[0] = ur - vr;
        v[1] = ui - vi;
      }
  }
}

/* @helper weft_dft needs: weft_fft_radix2 */
/* out[k] = sum_j in[j] e^(-2 pi i jk / n) for k < n. m = 0: n is a power of two (or 1), tw its
 * table. Otherwise m is Bluestein's FFT size (a power of two >= 2n - 1), tw the table for m, chirp
 * e^(i pi k^2 / n) for k < n and b the FFT of the chirp wrapped around m. work: 2 * max(n, m)
 * doubles. */
static void weft_dft(int64_t n, int64_t m, const double* tw, const double* chirp, const double* b, const double* in, double* out,
                     double* work) {
  int64_t j, t;
  double scale;
  if (n <= 1) {
    if (n == 1) out[0] = in[0], out[1] = in[1];
    return;
  }
  if (!m) {
    for (j = 0; j < 2 * n; ++j) work[j] = in[j];
    weft_fft_radix2(work, n, tw, 0);
    for (j = 0; j < 2 * n; ++j) out[j] = work[j];
    return;
  }
  for (t = 0; t < 2 * m; ++t) work[t] = 0;
  for (j = 0; j < n; ++j) { /* in[j] * conj(chirp[j]) */
    const double xr = in[2 * j], xi = in[2 * j + 1], cr = chirp[2 * j], ci = -chirp[2 * j + 1];
    work[2 * j] = xr * cr - xi * ci;
    work[2 * j + 1] = xr * ci + xi * cr;
  }
  weft_fft_radix2(work, m, tw, 0);
  for (t = 0; t < m; ++t) {
    const double xr = work[2 * t], xi = work[2 * t + 1], br = b[2 * t], bi = b[2 * t + 1];
    work[2 * t] = xr * br - xi * bi;
    work[2 * t + 1] = xr * bi + xi * br;
  }
  weft_fft_radix2(work, m, tw, 1);
  scale = 1.0 / (double)m;
  for (j = 0; j < n; ++j) { /* work[j] * scale * conj(chirp[j]) */
    const double xr = work[2 * j] * scale, xi = work[2 * j + 1] * scale, cr = chirp[2 * j], ci = -chirp[2 * j + 1];
    out[2 * j] = xr * cr - xi * ci;
    out[2 * j + 1] = xr * ci + xi * cr;
  }
}
