/* Reference SGEMM C = A * B, row-major (A: M x K, B: K x N, C: M x N), accumulating in double.
 * i-k-j loop order so that the inner loop streams rows of B and C (about 1 s at 1024). */
#include <stdlib.h>

void gemm_ref(float *C, const float *A, const float *B, int m, int n, int k)
{
  double *row = (double *)malloc((size_t)n * sizeof(double));
  if (!row) return;
  for (int i = 0; i < m; i++) {
    for (int j = 0; j < n; j++) row[j] = 0.0;
    for (int p = 0; p < k; p++) {
      const double a = A[(size_t)i * k + p];
      const float *b = B + (size_t)p * n;
      for (int j = 0; j < n; j++) row[j] += a * b[j];
    }
    for (int j = 0; j < n; j++) C[(size_t)i * n + j] = (float)row[j];
  }
  free(row);
}
