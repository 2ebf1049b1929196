/* OpenCL kernel written to misbehave per MODE: 0 correct, 3 wrong answer, 4 compile error,
 * 5 NaN, 7 misses the last elements (needs the edge guard). */
#if MODE == 4
this is not OpenCL;
#endif
__kernel void scale(__global float *out, __global const float *in, int n) {
  int i = get_global_id(0);
#if MODE == 7
  if (i >= n - 3) return;
#endif
  if (i < n) out[i] = 2.0f * in[i];
#if MODE == 3
  if (i == n / 2) out[i] += 1.0f;
#elif MODE == 5
  if (i == 0) out[i] = NAN;
#endif
}
