/* Tiled SGEMM C = A * B, row-major: A is M x K, B is K x N, C is M x N (hetune example).
 *
 * One source, many schedules, chosen by compile-time defines (hetune passes every tunable
 * parameter as -DNAME=VALUE):
 *   MWG, NWG    rows / columns of C computed by one work-group
 *   KWG         k-step: the k loop advances KWG at a time (the local-memory tile depth)
 *   WPTM, WPTN  rows / columns of C computed by one work-item (register tile)
 *   VW          vector width of the B loads, the accumulators and the C stores (1, 2, 4, 8, 16)
 *   STRN        0: a work-item owns WPTN adjacent columns; 1: its VW-wide column vectors are
 *               strided by the work-group width, so that adjacent work-items touch adjacent
 *               memory (coalescing on GPUs, vectorization across work-items on PoCL)
 *   USE_LOCAL   1: stage KWG-deep tiles of A and B in local memory (with barriers);
 *               0: read A and B straight from global memory (caches do the reuse)
 *   UNROLL      the inner k loop (KWG iterations) is unrolled UNROLL times
 *
 * Launch: local = (NWG/WPTN, MWG/WPTM), global = (N/WPTN, M/WPTM): dimension 0 runs along the
 * columns of C. Requires M % MWG == 0, N % NWG == 0, K % KWG == 0, MWG % WPTM == 0,
 * NWG % WPTN == 0, WPTN % VW == 0, KWG % UNROLL == 0 (the spec's constraints). */

#ifndef VW
#define VW 1
#endif
#ifndef STRN
#define STRN 0
#endif
#ifndef USE_LOCAL
#define USE_LOCAL 0
#endif
#ifndef UNROLL
#define UNROLL 1
#endif

#define TN (NWG / WPTN)  /* work-items per group along columns (dimension 0) */
#define TM (MWG / WPTM)  /* work-items per group along rows (dimension 1) */
#define NVEC (WPTN / VW) /* column vectors per work-item */

#if VW == 1
typedef float floatv;
#define LOADV(p) (*(p))
#define STOREV(v, p) (*(p) = (v))
#elif VW == 2
typedef float2 floatv;
#define LOADV(p) vload2(0, (p))
#define STOREV(v, p) vstore2((v), 0, (p))
#elif VW == 4
typedef float4 floatv;
#define LOADV(p) vload4(0, (p))
#define STOREV(v, p) vstore4((v), 0, (p))
#elif VW == 8
typedef float8 floatv;
#define LOADV(p) vload8(0, (p))
#define STOREV(v, p) vstore8((v), 0, (p))
#elif VW == 16
typedef float16 floatv;
#define LOADV(p) vload16(0, (p))
#define STOREV(v, p) vstore16((v), 0, (p))
#else
#error "VW must be 1, 2, 4, 8 or 16"
#endif

/* Column (within the work-group tile) of this work-item's v-th vector. */
#if STRN
#define COLV(tn, v) (((v) * TN + (tn)) * VW)
#else
#define COLV(tn, v) (((tn) * NVEC + (v)) * VW)
#endif

__kernel __attribute__((reqd_work_group_size(TN, TM, 1)))
void gemm(__global float *restrict C, __global const float *restrict A,
          __global const float *restrict B, const int m, const int n, const int k)
{
  const int tn = (int)get_local_id(0);
  const int tm = (int)get_local_id(1);
  const int col0 = (int)get_group_id(0) * NWG;
  const int row0 = (int)get_group_id(1) * MWG;

  floatv acc[WPTM][NVEC];
#pragma unroll
  for (int wm = 0; wm < WPTM; wm++)
#pragma unroll
    for (int v = 0; v < NVEC; v++) acc[wm][v] = (floatv)(0.0f);

#if USE_LOCAL
  __local float Als[KWG][MWG]; /* A tile, transposed: Als[kk][row] */
  __local float Bls[KWG][NWG];
  const int tid = tm * TN + tn;

  for (int kb = 0; kb < k; kb += KWG) {
    for (int i = tid; i < MWG * KWG; i += TN * TM) {
      const int r = i / KWG, kk = i % KWG;
      Als[kk][r] = A[(row0 + r) * k + kb + kk];
    }
    for (int i = tid; i < KWG * NWG; i += TN * TM) {
      const int kk = i / NWG, c = i % NWG;
      Bls[kk][c] = B[(kb + kk) * n + col0 + c];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
#pragma unroll 1
    for (int ku = 0; ku < KWG; ku += UNROLL) {
#pragma unroll
      for (int u = 0; u < UNROLL; u++) {
        const int kk = ku + u;
        floatv b[NVEC];
#pragma unroll
        for (int v = 0; v < NVEC; v++) b[v] = LOADV(&Bls[kk][COLV(tn, v)]);
#pragma unroll
        for (int wm = 0; wm < WPTM; wm++) {
          const float a = Als[kk][tm * WPTM + wm];
#pragma unroll
          for (int v = 0; v < NVEC; v++) acc[wm][v] = mad((floatv)(a), b[v], acc[wm][v]);
        }
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
#else
  __global const float *Ap = A + (row0 + tm * WPTM) * k;
  __global const float *Bp = B + col0;
  for (int kb = 0; kb < k; kb += KWG) {
#pragma unroll 1
    for (int ku = 0; ku < KWG; ku += UNROLL) {
#pragma unroll
      for (int u = 0; u < UNROLL; u++) {
        const int kk = kb + ku + u;
        floatv b[NVEC];
#pragma unroll
        for (int v = 0; v < NVEC; v++) b[v] = LOADV(Bp + kk * n + COLV(tn, v));
#pragma unroll
        for (int wm = 0; wm < WPTM; wm++) {
          const float a = Ap[wm * k + kk];
#pragma unroll
          for (int v = 0; v < NVEC; v++) acc[wm][v] = mad((floatv)(a), b[v], acc[wm][v]);
        }
      }
    }
  }
#endif

#pragma unroll
  for (int wm = 0; wm < WPTM; wm++) {
    __global float *Cp = C + (row0 + tm * WPTM + wm) * n + col0;
#pragma unroll
    for (int v = 0; v < NVEC; v++) STOREV(acc[wm][v], Cp + COLV(tn, v));
  }
}
