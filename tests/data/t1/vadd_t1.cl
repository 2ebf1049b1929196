/* c = a + b, WPT elements per work-item: the kernel tests/data/t1/vadd_t1.json names. */
__kernel void vadd_t1(__global float *c, __global const float *a, __global const float *b, int n) {
  int first = get_global_id(0) * WPT;
  for (int k = 0; k < WPT; k++)
    if (first + k < n) c[first + k] = a[first + k] + b[first + k];
}
