/* Dense matrix-vector product y = A x on the host (hetune example, language "c"); A is M x N,
 * row-major. Memory-bound: every element of A is read once.
 * Tunables (-D):
 *   NTHREADS  OpenMP threads
 *   RB        rows computed together (RB dot products share each load of x)
 *   UNROLL    independent partial sums per row along the columns (breaks the add chain)
 *   SCHED     0: static schedule of the row blocks; > 0: dynamic schedule, SCHED blocks per chunk */
#ifndef NTHREADS
#define NTHREADS 1
#endif
#ifndef RB
#define RB 1
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#ifndef SCHED
#define SCHED 0
#endif

/* y[r0 .. r0+rows-1], rows <= RB */
static void rows_dot(float *restrict y, const float *restrict a, const float *restrict x, int n, int r0, int rows)
{
  float acc[RB][UNROLL];
  for (int r = 0; r < RB; r++)
    for (int u = 0; u < UNROLL; u++) acc[r][u] = 0.0f;
  int j = 0;
  for (; j + UNROLL <= n; j += UNROLL)
    for (int r = 0; r < rows; r++)
      for (int u = 0; u < UNROLL; u++) acc[r][u] += a[(long)(r0 + r) * n + j + u] * x[j + u];
  for (int r = 0; r < rows; r++) {
    float s = 0.0f;
    for (int u = 0; u < UNROLL; u++) s += acc[r][u];
    for (int jj = j; jj < n; jj++) s += a[(long)(r0 + r) * n + jj] * x[jj];
    y[r0 + r] = s;
  }
}

void matvec(float *restrict y, const float *restrict a, const float *restrict x, int m, int n)
{
  const int blocks = (m + RB - 1) / RB;
#if SCHED > 0
#pragma omp parallel for num_threads(NTHREADS) schedule(dynamic, SCHED)
#else
#pragma omp parallel for num_threads(NTHREADS) schedule(static)
#endif
  for (int b = 0; b < blocks; b++) {
    const int r0 = b * RB;
    rows_dot(y, a, x, n, r0, m - r0 < RB ? m - r0 : RB);
  }
}
