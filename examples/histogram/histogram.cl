/* Histogram of values in [0, 1) into B equal bins (hetune example, language "opencl"):
 * hist[min((int)(x * B), B - 1)] += 1 for every x of in. Atomic-bound: every element is one
 * increment, and the bins collide.
 * Tunables (-D):
 *   WG       work-group size
 *   IPT      elements per work-item
 *   LOCAL    0: each increment is an atomic on the global histogram;
 *            1: a work-group first counts into a local-memory histogram (local atomics), then
 *               adds its non-zero bins to the global one
 *   STRIDED  0: work-item i reads the IPT consecutive elements i*IPT ..;
 *            1: it reads i, i + G, i + 2G, .. (G = the number of work-items) */

inline int bin_of(float x, int nbins)
{
  int b = (int)(x * (float)nbins);
  return b < nbins - 1 ? (b > 0 ? b : 0) : nbins - 1;
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void histogram(__global uint *restrict hist, __global const float *restrict in, const int n, const int nbins)
{
  const int gid = (int)get_global_id(0);
#if STRIDED
  const int step = (int)get_global_size(0);
  const int first = gid;
#else
  const int step = 1;
  const int first = gid * IPT;
#endif

#if LOCAL
  __local uint part[B];
  for (int b = (int)get_local_id(0); b < nbins; b += WG) part[b] = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
#define COUNT(b) atomic_inc(&part[b])
#else
#define COUNT(b) atomic_inc(&hist[b])
#endif

  for (int k = 0; k < IPT; k++) {
    const long i = first + (long)k * step;
    if (i < n) COUNT(bin_of(in[i], nbins));
  }

#if LOCAL
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int b = (int)get_local_id(0); b < nbins; b += WG)
    if (part[b]) atomic_add(&hist[b], part[b]);
#endif
}
