/* One n-body acceleration step on the host (hetune example, language "c"; compiled with
 * -O3 -march=native -fopenmp -fno-math-errno); see nbody_ref.c for the definition
 * (a_i = sum_j m_j d_ij / (|d_ij|^2 + eps2)^1.5, body = n x {x, y, z, m}).
 * Every term uses an exact sqrtf and a division (no rsqrt approximation).
 * Tunables (passed as -D by hetune):
 *   NTHREADS  OpenMP threads; the i-blocks are shared among them
 *   SCHED     0: schedule(static); 1: schedule(dynamic) (one i-block at a time)
 *   IB        i-block: bodies whose accelerations one task computes
 *   JB        j-block (cache tile): each i-block sweeps the j bodies JB at a time, so a j-tile
 *             is reused by all IB bodies while it is in cache
 *   RI        i-bodies updated together in the inner j loop (register blocking: every j body
 *             loaded is used RI times)
 *   UNROLL    unroll-and-jam of the inner j loop: a j-tile is cut into UNROLL equal parts that
 *             one loop walks side by side (more independent work per iteration, unit-stride
 *             loads in each part; the leftover bodies come last)
 *   SIMD      1: the inner j loop is '#pragma omp simd' with a reduction (vectorized across j,
 *             sums reassociated); 0: scalar code (the function is compiled with
 *             -fno-tree-vectorize, so the sums stay in order)
 *   LAYOUT    0: read the array-of-structures input directly (stride-4 loads);
 *             1: first copy x, y, z, m into four contiguous arrays (structure of arrays)
 * Any n works: edge blocks are clipped, and leftover bodies of an i-block are done one by one. */
#include <math.h>
#include <stdlib.h>

#ifndef NTHREADS
#define NTHREADS 1
#endif
#ifndef SCHED
#define SCHED 0
#endif
#ifndef IB
#define IB 64
#endif
#ifndef JB
#define JB 512
#endif
#ifndef RI
#define RI 1
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#ifndef SIMD
#define SIMD 1
#endif
#ifndef LAYOUT
#define LAYOUT 1
#endif

#define PRAGMA_(x) _Pragma(#x)
#define PRAGMA(x) PRAGMA_(x)

#if SCHED
#define SCHEDULE dynamic
#else
#define SCHEDULE static
#endif

#if SIMD
#define SIMD_LOOP(R) PRAGMA(omp simd reduction(+ : sx[:R], sy[:R], sz[:R]))
#define NBODY_ATTR
#else
#define SIMD_LOOP(R)
#define NBODY_ATTR __attribute__((optimize("no-tree-vectorize")))
#endif

#if LAYOUT
#define X(j) px[j]
#define Y(j) py[j]
#define Z(j) pz[j]
#define M(j) pm[j]
#else
#define X(j) body[4 * (j)]
#define Y(j) body[4 * (j) + 1]
#define Z(j) body[4 * (j) + 2]
#define M(j) body[4 * (j) + 3]
#endif

#define MIN(a, b) ((a) < (b) ? (a) : (b))

/* Adds the pull of body j on bodies i .. i+R-1 to sx/sy/sz[0 .. R-1]. */
#define INTERACT(j, R)                                                                  \
  do {                                                                                  \
    const float xj = X(j), yj = Y(j), zj = Z(j), mj = M(j);                             \
    PRAGMA(GCC unroll 4)                                                                \
    for (int r = 0; r < (R); r++) {                                                     \
      const float dx = xj - xi[r], dy = yj - yi[r], dz = zj - zi[r];                    \
      const float r2 = dx * dx + dy * dy + dz * dz + eps2;                              \
      const float s = mj / (r2 * sqrtf(r2));                                            \
      sx[r] += dx * s;                                                                  \
      sy[r] += dy * s;                                                                  \
      sz[r] += dz * s;                                                                  \
    }                                                                                   \
  } while (0)

/* Adds to fx/fy/fz[i - i0 .. i - i0 + R-1] the accelerations of bodies i .. i+R-1 from bodies
 * j0 .. j1-1. The j range is cut into UNROLL equal parts walked side by side (iteration jj
 * handles jj, jj + q, jj + 2q, ...: unit-stride loads in every part), then the leftover
 * len % UNROLL bodies. */
#define TILE(R)                                                                         \
  do {                                                                                  \
    float xi[R], yi[R], zi[R], sx[R], sy[R], sz[R];                                     \
    for (int r = 0; r < (R); r++) {                                                     \
      xi[r] = X(i + r);                                                                 \
      yi[r] = Y(i + r);                                                                 \
      zi[r] = Z(i + r);                                                                 \
      sx[r] = sy[r] = sz[r] = 0.0f;                                                     \
    }                                                                                   \
    const int q = (j1 - j0) / UNROLL;                                                   \
    SIMD_LOOP(R)                                                                        \
    for (int jj = j0; jj < j0 + q; jj++) {                                              \
      PRAGMA(GCC unroll UNROLL)                                                         \
      for (int u = 0; u < UNROLL; u++) INTERACT(jj + u * q, R);                         \
    }                                                                                   \
    for (int j = j0 + q * UNROLL; j < j1; j++) INTERACT(j, R);                          \
    for (int r = 0; r < (R); r++) {                                                     \
      fx[i - i0 + r] += sx[r];                                                          \
      fy[i - i0 + r] += sy[r];                                                          \
      fz[i - i0 + r] += sz[r];                                                          \
    }                                                                                   \
  } while (0)

NBODY_ATTR void nbody(float *restrict ax, float *restrict ay, float *restrict az, const float *restrict body,
           int n, float eps2)
{
#if LAYOUT
  /* four arrays of pitch floats, 64-byte aligned: aligned_alloc wants a size that is a multiple of
   * the alignment, which 4 * pitch * 4 bytes is */
  const size_t pitch = ((size_t)n + 15) / 16 * 16;
  float *soa = aligned_alloc(64, 4 * pitch * sizeof(float));
  if (!soa) return;
  float *restrict px = soa, *restrict py = soa + pitch, *restrict pz = soa + 2 * pitch,
        *restrict pm = soa + 3 * pitch;
  for (int j = 0; j < n; j++) {
    px[j] = body[4 * j];
    py[j] = body[4 * j + 1];
    pz[j] = body[4 * j + 2];
    pm[j] = body[4 * j + 3];
  }
#endif
  const int nib = (n + IB - 1) / IB;
#pragma omp parallel for schedule(SCHEDULE) num_threads(NTHREADS)
  for (int ib = 0; ib < nib; ib++) {
    const int i0 = ib * IB, i1 = MIN(i0 + IB, n);
    float fx[IB], fy[IB], fz[IB];
    for (int i = i0; i < i1; i++) fx[i - i0] = fy[i - i0] = fz[i - i0] = 0.0f;
    for (int j0 = 0; j0 < n; j0 += JB) {
      const int j1 = MIN(j0 + JB, n);
      int i = i0;
      for (; i + RI <= i1; i += RI) TILE(RI);
      for (; i < i1; i++) TILE(1);
    }
    for (int i = i0; i < i1; i++) {
      ax[i] = fx[i - i0];
      ay[i] = fy[i - i0];
      az[i] = fz[i - i0];
    }
  }
#if LAYOUT
  free(soa);
#endif
}
