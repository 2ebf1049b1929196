/* out = in * 2 in blocks of BS, unrolled U times; F only names a float parameter for the export. */
void scale(float *out, const float *in, int n) {
  for (int b = 0; b < n; b += BS * U)
    for (int u = 0; u < U; u++)
      for (int i = b + u * BS; i < b + (u + 1) * BS && i < n; i++) out[i] = 2.0f * in[i];
}
