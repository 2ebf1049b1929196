/* Tiled SGEMM C = A * B, row-major: A is M x K, B is K x N, C is M x N (hetune example, CUDA).
 * The same schedule space as gemm.cl, chosen by compile-time defines:
 *   MWG, NWG    rows / columns of C computed by one block
 *   KWG         k-step (depth of the shared-memory tiles)
 *   WPTM, WPTN  rows / columns of C computed by one thread (register tile)
 *   VW          vector width of the B loads and C stores: 1 (float), 2 (float2), 4 (float4)
 *   STRN        0: a thread owns WPTN adjacent columns; 1: its VW-wide vectors are strided by
 *               the block width, so adjacent threads touch adjacent memory (coalescing)
 *   USE_LOCAL   1: stage tiles of A and B in shared memory; 0: read global memory directly
 *   UNROLL      unroll factor of the inner k loop (KWG iterations)
 * Launch: block = (NWG/WPTN, MWG/WPTM), grid = (N/NWG, M/MWG). Requires M % MWG == 0,
 * N % NWG == 0, K % KWG == 0, MWG % WPTM == 0, NWG % WPTN == 0, WPTN % VW == 0,
 * KWG % UNROLL == 0 (the spec's constraints). */

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

#define TN (NWG / WPTN)
#define TM (MWG / WPTM)
#define NVEC (WPTN / VW)

#if VW == 1
typedef float floatv;
__device__ __forceinline__ void fmav(floatv &c, float a, const floatv &b) { c = fmaf(a, b, c); }
__device__ __forceinline__ floatv zerov() { return 0.0f; }
#elif VW == 2
typedef float2 floatv;
__device__ __forceinline__ void fmav(floatv &c, float a, const floatv &b)
{
  c.x = fmaf(a, b.x, c.x);
  c.y = fmaf(a, b.y, c.y);
}
__device__ __forceinline__ floatv zerov() { return make_float2(0.0f, 0.0f); }
#elif VW == 4
typedef float4 floatv;
__device__ __forceinline__ void fmav(floatv &c, float a, const floatv &b)
{
  c.x = fmaf(a, b.x, c.x);
  c.y = fmaf(a, b.y, c.y);
  c.z = fmaf(a, b.z, c.z);
  c.w = fmaf(a, b.w, c.w);
}
__device__ __forceinline__ floatv zerov() { return make_float4(0.0f, 0.0f, 0.0f, 0.0f); }
#else
#error "VW must be 1, 2 or 4 for CUDA"
#endif

/* Aligned vector load/store: every column offset is a multiple of VW and n % VW == 0. */
#define LOADV(p) (*reinterpret_cast<const floatv *>(p))
#define STOREV(v, p) (*reinterpret_cast<floatv *>(p) = (v))

#if STRN
#define COLV(tn, v) (((v) * TN + (tn)) * VW)
#else
#define COLV(tn, v) (((tn) * NVEC + (v)) * VW)
#endif

extern "C" __global__ void __launch_bounds__(TN * TM)
gemm(float *__restrict__ C, const float *__restrict__ A, const float *__restrict__ B,
     const int m, const int n, const int k)
{
  const int tn = threadIdx.x;
  const int tm = threadIdx.y;
  const int col0 = blockIdx.x * NWG;
  const int row0 = blockIdx.y * MWG;
  (void)m;

  floatv acc[WPTM][NVEC];
#pragma unroll
  for (int wm = 0; wm < WPTM; wm++)
#pragma unroll
    for (int v = 0; v < NVEC; v++) acc[wm][v] = zerov();

#if USE_LOCAL
  __shared__ __align__(16) float Als[KWG][MWG]; /* A tile, transposed */
  __shared__ __align__(16) float Bls[KWG][NWG];
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
    __syncthreads();
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
          for (int v = 0; v < NVEC; v++) fmav(acc[wm][v], a, b[v]);
        }
      }
    }
    __syncthreads();
  }
#else
  const float *Ap = A + (row0 + tm * WPTM) * k;
  const float *Bp = B + col0;
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
          const float a = __ldg(Ap + wm * k + kk);
#pragma unroll
          for (int v = 0; v < NVEC; v++) fmav(acc[wm][v], a, b[v]);
        }
      }
    }
  }
#endif

#pragma unroll
  for (int wm = 0; wm < WPTM; wm++) {
    float *Cp = C + (row0 + tm * WPTM + wm) * n + col0;
#pragma unroll
    for (int v = 0; v < NVEC; v++) STOREV(acc[wm][v], Cp + COLV(tn, v));
  }
}
