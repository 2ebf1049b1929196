/* 2-D 5-point Jacobi step on the host (hetune example, language "c"); see stencil_ref.c for the
 * exact definition (interior: 0.2f * (c + n + s + w + e); border copied).
 * Tunables (passed as -D by hetune):
 *   NTHREADS  OpenMP threads; the BY x BX blocks are shared among them
 *   BX, BY    block width (columns) and height (rows); the x loop inside a block is contiguous
 *             and vectorized by gcc -O3 -march=native
 * Any w, h work (edge blocks are clipped). */
#ifndef NTHREADS
#define NTHREADS 1
#endif
#ifndef BX
#define BX 512
#endif
#ifndef BY
#define BY 16
#endif

void stencil(float *restrict out, const float *restrict in, int w, int h)
{
  const int nbx = (w + BX - 1) / BX, nby = (h + BY - 1) / BY;
#pragma omp parallel for collapse(2) schedule(static) num_threads(NTHREADS)
  for (int by = 0; by < nby; by++) {
    for (int bx = 0; bx < nbx; bx++) {
      const int y0 = by * BY, y1 = y0 + BY < h ? y0 + BY : h;
      const int x0 = bx * BX, x1 = x0 + BX < w ? x0 + BX : w;
      for (int y = y0; y < y1; y++) {
        const float *restrict c = in + (long)y * w;
        float *restrict o = out + (long)y * w;
        if (y == 0 || y == h - 1) {
          for (int x = x0; x < x1; x++) o[x] = c[x];
          continue;
        }
        const float *restrict nrow = c - w, *restrict srow = c + w;
        const int xa = x0 > 1 ? x0 : 1, xb = x1 < w - 1 ? x1 : w - 1;
        if (x0 == 0) o[0] = c[0];
#pragma omp simd
        for (int x = xa; x < xb; x++) o[x] = 0.2f * (c[x] + nrow[x] + srow[x] + c[x - 1] + c[x + 1]);
        if (x1 == w && w > 1) o[w - 1] = c[w - 1];
      }
    }
  }
}
