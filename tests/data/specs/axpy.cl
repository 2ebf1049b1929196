__kernel void axpy(__global float *y, __global const float *x, float alpha, int n) {
  int i = get_global_id(0);
  if (i < n) y[i] += alpha * x[i];
}
