/* Vector add c = a + b (hetune example, language "opencl").
 * Tunables: WG (work-group size), WPT (elements per work-item).
 * Work-item l of group g handles elements g*WG*WPT + w*WG + l, w = 0..WPT-1, so that
 * consecutive work-items touch consecutive elements (coalesced on GPUs, vectorizable by PoCL).
 * The global size is rounded up to a multiple of WG, hence the bounds check. */
__kernel void vadd(__global float *c, __global const float *a, __global const float *b, int n)
{
  const int base = (int)get_group_id(0) * (WG * WPT) + (int)get_local_id(0);
#pragma unroll
  for (int w = 0; w < WPT; w++) {
    const int i = base + w * WG;
    if (i < n) c[i] = a[i] + b[i];
  }
}
