/* Declared loosely but callable as the spec says: no const on the input, a typedef, long long
 * for int64, and a return value nobody reads. */
typedef float real;
int loose(real *y, real *x, float alpha, long long n) {
  for (long long i = 0; i < n; i++) y[i] += alpha * x[i];
  return 0;
}
