/* Vector add c = a + b on the host (hetune example, language "c").
 * Tunables (passed as -D by hetune):
 *   NTHREADS  OpenMP threads
 *   CHUNK     elements per OpenMP static chunk (0 = one contiguous block per thread)
 *   UNROLL    manual unroll of the inner loop (1, 2, 4, 8)
 * Compile flags come from the spec ("-O3 -march=native -fopenmp"). */
#ifdef _OPENMP
#include <omp.h>
#endif

#ifndef NTHREADS
#define NTHREADS 1
#endif
#ifndef CHUNK
#define CHUNK 0
#endif
#ifndef UNROLL
#define UNROLL 1
#endif

void vadd(float *restrict c, const float *restrict a, const float *restrict b, int n)
{
#if CHUNK > 0
  const int nchunks = (n + CHUNK - 1) / CHUNK;
#pragma omp parallel for num_threads(NTHREADS) schedule(static)
  for (int ch = 0; ch < nchunks; ch++) {
    const int lo = ch * CHUNK;
    const int hi = lo + CHUNK < n ? lo + CHUNK : n;
#else
#pragma omp parallel num_threads(NTHREADS)
  {
#ifdef _OPENMP
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
#else
    const int t = 0, nt = 1;
#endif
    const int per = (n + nt - 1) / nt;
    const int lo = t * per < n ? t * per : n;
    const int hi = lo + per < n ? lo + per : n;
#endif
    int i = lo;
#if UNROLL > 1
    for (; i + UNROLL <= hi; i += UNROLL) {
      for (int u = 0; u < UNROLL; u++) c[i + u] = a[i + u] + b[i + u];
    }
#endif
    for (; i < hi; i++) c[i] = a[i] + b[i];
  }
}
