/* Cache-blocked SGEMM C = A * B on the host, row-major (A: M x K, B: K x N, C: M x N)
 * (hetune example, language "c"; compiled with -O3 -march=native -fopenmp).
 * Tunables (passed as -D by hetune):
 *   NTHREADS    OpenMP threads; the (MB x NB) blocks of C are shared among them
 *   MB, NB, KB  cache block sizes: a block of C (MB x NB, kept in a local tile) is computed
 *               from KB-deep panels of A and B
 *   RM          rows of the C tile updated together in the inner kernel (1, 2, 4): every row of
 *               B loaded is reused RM times; the innermost loop runs along j (contiguous) so gcc
 *               vectorizes it
 * Any M, N, K work: edge blocks are clipped. */
#ifndef NTHREADS
#define NTHREADS 1
#endif
#ifndef MB
#define MB 64
#endif
#ifndef NB
#define NB 256
#endif
#ifndef KB
#define KB 128
#endif
#ifndef RM
#define RM 4
#endif

#define MIN(a, b) ((a) < (b) ? (a) : (b))

void gemm(float *restrict C, const float *restrict A, const float *restrict B, int m, int n, int k)
{
  const int mblocks = (m + MB - 1) / MB, nblocks = (n + NB - 1) / NB;
#pragma omp parallel for collapse(2) schedule(static) num_threads(NTHREADS)
  for (int ib = 0; ib < mblocks; ib++) {
    for (int jb = 0; jb < nblocks; jb++) {
      float acc[MB][NB] __attribute__((aligned(64)));
      const int i0 = ib * MB, j0 = jb * NB;
      const int mi = MIN(MB, m - i0), nj = MIN(NB, n - j0);
      for (int i = 0; i < mi; i++)
        for (int j = 0; j < NB; j++) acc[i][j] = 0.0f;
      for (int p0 = 0; p0 < k; p0 += KB) {
        const int pk = MIN(KB, k - p0);
        int i = 0;
        for (; i + RM <= mi; i += RM) {
          for (int p = 0; p < pk; p++) {
            const float *restrict b = B + (long)(p0 + p) * n + j0;
            float a[RM];
            for (int r = 0; r < RM; r++) a[r] = A[(long)(i0 + i + r) * k + p0 + p];
            for (int r = 0; r < RM; r++) {
              float *restrict c = acc[i + r];
#pragma omp simd
              for (int j = 0; j < nj; j++) c[j] += a[r] * b[j];
            }
          }
        }
        for (; i < mi; i++) {
          for (int p = 0; p < pk; p++) {
            const float *restrict b = B + (long)(p0 + p) * n + j0;
            const float a = A[(long)(i0 + i) * k + p0 + p];
            float *restrict c = acc[i];
#pragma omp simd
            for (int j = 0; j < nj; j++) c[j] += a * b[j];
          }
        }
      }
      for (int i = 0; i < mi; i++)
        for (int j = 0; j < nj; j++) C[(long)(i0 + i) * n + j0 + j] = acc[i][j];
    }
  }
}
