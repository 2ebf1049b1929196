/* 2-D 5-point Jacobi step (hetune example, language "opencl"); see stencil_ref.c for the exact
 * definition (interior: 0.2f * (c + n + s + w + e); border copied).
 * Tunables: TX, TY (work-group shape), WPTY (rows per work-item).
 * Work-item (x, gy) computes column x of rows gy*WPTY .. gy*WPTY + WPTY-1, keeping the rows
 * above and below in registers as it slides down (one new row load per output row).
 * Launch: global = (W, ceil_div(H, WPTY)), local = (TX, TY); the global size is rounded up to a
 * multiple of the work-group, hence the bounds checks. */
__kernel void stencil(__global float *restrict out, __global const float *restrict in,
                      const int w, const int h)
{
  const int x = (int)get_global_id(0);
  const int y0 = (int)get_global_id(1) * WPTY;
  if (x >= w) return;
  const int border_x = (x == 0 || x == w - 1);
  float up = y0 > 0 ? in[(y0 - 1) * w + x] : 0.0f;
  float mid = y0 < h ? in[y0 * w + x] : 0.0f;
#pragma unroll
  for (int r = 0; r < WPTY; r++) {
    const int y = y0 + r;
    if (y >= h) break;
    const int i = y * w + x;
    const float down = y + 1 < h ? in[i + w] : 0.0f;
    if (border_x || y == 0 || y == h - 1)
      out[i] = mid;
    else
      out[i] = 0.2f * (mid + up + down + in[i - 1] + in[i + 1]);
    up = mid;
    mid = down;
  }
}
