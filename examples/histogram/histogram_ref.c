/* Reference for the histogram example: hist[min((int)(x * nbins), nbins - 1)] += 1 for every x
 * of in (values in [0, 1)); hist starts at zero. The bin is computed in float, as the kernel does,
 * so both put every value in the same bin. */
void histogram_ref(unsigned *hist, const float *in, int n, int nbins)
{
  for (int b = 0; b < nbins; b++) hist[b] = 0;
  for (int i = 0; i < n; i++) {
    int b = (int)(in[i] * (float)nbins);
    if (b > nbins - 1) b = nbins - 1;
    if (b < 0) b = 0;
    hist[b]++;
  }
}
