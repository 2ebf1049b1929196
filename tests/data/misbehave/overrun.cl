/* MODE 1 has no edge guard: work-items past n (the global size is rounded up to a multiple of the
 * work-group size) write past the end of out. */
__kernel void overrun(__global float *out, __global const float *in, int n) {
  int i = get_global_id(0);
#if MODE == 1
  out[i] = 2.0f * (i < n ? in[i] : 1.0f);
#else
  if (i < n) out[i] = 2.0f * in[i];
#endif
}
