/* Reference matrix transpose (every transpose example): in is h rows x w columns, row-major;
 * out is w rows x h columns, row-major:
 *   out[x * h + y] = in[y * w + x]   for 0 <= y < h, 0 <= x < w
 * (a copy: the outputs must match exactly). */
void transpose_ref(float *out, const float *in, int w, int h)
{
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) out[(long)x * h + y] = in[(long)y * w + x];
}
