/* Reference 2-D 5-point Jacobi step on a w x h row-major grid (x fastest):
 *   interior (1 <= x < w-1, 1 <= y < h-1):
 *     out[y][x] = 0.2f * (in[y][x] + in[y-1][x] + in[y+1][x] + in[y][x-1] + in[y][x+1])
 *   border (x == 0, x == w-1, y == 0 or y == h-1): out[y][x] = in[y][x]  (copied)
 * summed in exactly that order, in float, by every version of this example. */
void stencil_ref(float *out, const float *in, int w, int h)
{
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      const long i = (long)y * w + x;
      if (x == 0 || y == 0 || x == w - 1 || y == h - 1)
        out[i] = in[i];
      else
        out[i] = 0.2f * (in[i] + in[i - w] + in[i + w] + in[i - 1] + in[i + 1]);
    }
}
