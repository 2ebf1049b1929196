/* y += alpha * x. MODE 1 skips the last element: an off-by-one whose skipped element is within
 * the default tolerance of the reference (alpha is small), so only the check for outputs left
 * unchanged finds it. */
void axpy(float *y, const float *x, float alpha, int n) {
  for (int i = 0; i < n - (MODE == 1); i++) y[i] += alpha * x[i];
}
