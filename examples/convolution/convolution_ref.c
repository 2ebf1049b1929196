/* Reference 2-D convolution (correlation form, as in Kernel Tuner's convolution example) of a
 * w x h output from a padded input: the caller pads, so the input is iw x ih with
 * iw = w + FW - 1 and ih = h + FH - 1 (row-major, x fastest) and no border needs special care.
 * FW and FH (the filter's width and height) are compile-time sizes (-DFW=.. -DFH=..).
 *   out[y * w + x] = sum over j = 0 .. FH-1 (outer), i = 0 .. FW-1 (inner) of
 *                    in[(y + j) * iw + (x + i)] * filt[j * FW + i]
 * summed in float from 0.0f in exactly that order (j outer, i inner), one multiply and one add
 * per term. Kernels keep this order per output but may contract to fused multiply-adds, so the
 * spec compares with a small tolerance. */
void convolution_ref(float *out, const float *in, const float *filt, int w, int h)
{
  const long iw = w + FW - 1;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      float s = 0.0f;
      for (int j = 0; j < FH; j++)
        for (int i = 0; i < FW; i++) s += in[(y + j) * iw + (x + i)] * filt[j * FW + i];
      out[(long)y * w + x] = s;
    }
}
