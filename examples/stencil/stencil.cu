/* 2-D 5-point Jacobi step (hetune example, language "cuda"); see stencil_ref.c for the exact
 * definition (interior: 0.2f * (c + n + s + w + e); border copied).
 * Tunables: TX, TY (block shape), WPTY (rows per thread, sliding down with the rows above and
 * below kept in registers). Launch: grid = (ceil_div(W, TX), ceil_div(H, TY*WPTY)),
 * block = (TX, TY). */
extern "C" __global__ void stencil(float *__restrict__ out, const float *__restrict__ in,
                                   const int w, const int h)
{
  const int x = blockIdx.x * TX + threadIdx.x;
  const int y0 = (blockIdx.y * TY + threadIdx.y) * WPTY;
  if (x >= w) return;
  const bool border_x = (x == 0 || x == w - 1);
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
