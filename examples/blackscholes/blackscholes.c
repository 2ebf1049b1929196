/* Black-Scholes European option prices on the host (hetune example, language "c"); the
 * definition is in blackscholes_ref.c, computed here in float.
 * Tunables (-D):
 *   NTHREADS  OpenMP threads
 *   CHUNK     options per OpenMP chunk (0 = one contiguous block per thread, static)
 *   BLOCK     options priced per pass: the d1/d2 pass, the CND pass and the price pass each run
 *             over BLOCK options, so each loop holds one kind of math and can vectorise; 1 = one
 *             option start to end */
#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#ifndef NTHREADS
#define NTHREADS 1
#endif
#ifndef CHUNK
#define CHUNK 0
#endif
#ifndef BLOCK
#define BLOCK 1
#endif

#define R 0.02f
#define V 0.30f

static inline float cnd(float d)
{
  const float kk = 1.0f / (1.0f + 0.2316419f * fabsf(d));
  const float poly = kk * (0.31938153f + kk * (-0.356563782f + kk * (1.781477937f + kk * (-1.821255978f + kk * 1.330274429f))));
  const float c = 1.0f - 0.3989422804f * expf(-0.5f * d * d) * poly;
  return d < 0.0f ? 1.0f - c : c;
}

/* options lo .. hi-1, in passes of at most BLOCK options */
static void price_range(float *restrict call, float *restrict put, const float *restrict s, const float *restrict k,
                        const float *restrict t, int lo, int hi)
{
  float d1[BLOCK], d2[BLOCK], disc[BLOCK];
  for (int b = lo; b < hi; b += BLOCK) {
    const int len = hi - b < BLOCK ? hi - b : BLOCK;
    for (int i = 0; i < len; i++) {
      const float sq = V * sqrtf(t[b + i]);
      d1[i] = (logf(s[b + i] / k[b + i]) + (R + 0.5f * V * V) * t[b + i]) / sq;
      d2[i] = d1[i] - sq;
      disc[i] = k[b + i] * expf(-R * t[b + i]);
    }
    for (int i = 0; i < len; i++) {
      d1[i] = cnd(d1[i]);
      d2[i] = cnd(d2[i]);
    }
    for (int i = 0; i < len; i++) {
      call[b + i] = s[b + i] * d1[i] - disc[i] * d2[i];
      put[b + i] = disc[i] * (1.0f - d2[i]) - s[b + i] * (1.0f - d1[i]);
    }
  }
}

void blackscholes(float *restrict call, float *restrict put, const float *restrict s, const float *restrict k,
                  const float *restrict t, int n)
{
#if CHUNK > 0
  const int nchunks = (n + CHUNK - 1) / CHUNK;
#pragma omp parallel for num_threads(NTHREADS) schedule(static)
  for (int ch = 0; ch < nchunks; ch++) {
    const int lo = ch * CHUNK;
    price_range(call, put, s, k, t, lo, lo + CHUNK < n ? lo + CHUNK : n);
  }
#else
#pragma omp parallel num_threads(NTHREADS)
  {
#ifdef _OPENMP
    const int id = omp_get_thread_num(), nt = omp_get_num_threads();
#else
    const int id = 0, nt = 1;
#endif
    const int per = (n + nt - 1) / nt;
    const int lo = id * per < n ? id * per : n;
    price_range(call, put, s, k, t, lo, lo + per < n ? lo + per : n);
  }
#endif
}
