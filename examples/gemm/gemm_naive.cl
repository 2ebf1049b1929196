/* Naive SGEMM C = A * B, row-major (A: M x K, B: K x N, C: M x N): the baseline.
 * One work-item per element of C: dimension 0 runs along the columns (j), dimension 1 along the
 * rows (i). The only tunable is the work-group shape TX x TY. The global size is rounded up to a
 * multiple of the work-group, hence the bounds check. */
__kernel void gemm_naive(__global float *C, __global const float *A, __global const float *B,
                         const int m, const int n, const int k)
{
  const int j = (int)get_global_id(0);
  const int i = (int)get_global_id(1);
  if (i >= m || j >= n) return;
  float acc = 0.0f;
  for (int p = 0; p < k; p++) acc += A[i * k + p] * B[p * n + j];
  C[i * n + j] = acc;
}
