/* c = a + b, one element per work-item by its global id, so a launch at a global work offset
 * computes only its part of the arrays. */
__kernel void vadd(__global float *c, __global const float *a, __global const float *b, int n) {
  const int i = (int)get_global_id(0);
  if (i < n) c[i] = a[i] + b[i];
}
