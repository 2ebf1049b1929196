/* Reference for the matvec example: y = A x, A M x N row-major, summed in double. */
void matvec_ref(float *y, const float *a, const float *x, int m, int n)
{
  for (int i = 0; i < m; i++) {
    double s = 0.0;
    for (int j = 0; j < n; j++) s += (double)a[(long)i * n + j] * x[j];
    y[i] = (float)s;
  }
}
