/* An older reference that took the length first. */
void axpy_ref(int n, float *y, const float *x, float alpha) {
  for (int i = 0; i < n; i++) y[i] += alpha * x[i];
}
