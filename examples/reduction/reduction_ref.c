/* Reference segmented sum reduction (every reduction example).
 * The input in[0 .. n-1] is cut into ng segments of seg elements each (seg = ceil(n / ng); the
 * last segments may be shorter or empty):
 *   out[g] = sum of in[i] for g*seg <= i < min((g+1)*seg, n),   g = 0 .. ng-1
 * The reference sums each segment in ascending order in double and rounds once to float (the
 * "exact" value); the kernels sum in float in an order that depends on their parameters, so the
 * spec compares with a tolerance (see reduction_opencl.json). */
void reduction_ref(float *out, const float *in, int n, int ng, int seg)
{
  for (int g = 0; g < ng; g++) {
    long begin = (long)g * seg, end = begin + seg;
    if (end > n) end = n;
    double s = 0.0;
    for (long i = begin; i < end; i++) s += in[i];
    out[g] = (float)s;
  }
}
