/* c = a + b over n floats: a call of a few elements, whose time is what launching costs. */
void add(float *restrict c, const float *restrict a, const float *restrict b, int n) {
  for (int i = 0; i < n; i++) c[i] = a[i] + b[i];
}
