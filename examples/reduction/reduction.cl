/* Segmented sum reduction (hetune example, language "opencl"); see reduction_ref.c for the exact
 * definition: out[g] = sum of segment g (seg = ceil(n / ng) elements) of in.
 *
 * Each work-group reduces SPG consecutive segments, one after the other. Tunables (-D):
 *   WG      work-group size (a power of two: the tree halves it)
 *   SPG     segments per work-group (the launch has ceil(ng / SPG) groups)
 *   VW      vector width of the loads and the per-work-item accumulators: 1, 2, 4, 8, 16
 *           (float .. float16, vloadN, so segments need not be aligned)
 *   UNROLL  independent accumulators per work-item (the main loop is unrolled UNROLL times,
 *           breaking the add dependency chain)
 *   LOAD    0: strided: in step s, work-item t reads vector (s*UNROLL + u)*WG + t, so adjacent
 *              work-items read adjacent vectors (coalesced on GPUs, vectorized across work-items
 *              by PoCL);
 *           1: contiguous: work-item t reads its own contiguous block of the segment
 *   FINAL   how the WG per-work-item sums (in local memory) are combined:
 *           0: tree, log2(WG) halving steps with a barrier each;
 *           1: work-item 0 adds all WG values serially;
 *           2: two levels: work-items 0..31 each add WG/32 values (strided), then work-item 0
 *              adds those 32 (needs WG >= 64)
 * The part of a segment that does not fill a whole step of WG*VW*UNROLL elements is added with
 * scalar strided loads, so any n and ng work. */

#if VW == 1
typedef float floatv;
#define VLOAD(p) (*(p))
#define HSUM(v) (v)
#elif VW == 2
typedef float2 floatv;
#define VLOAD(p) vload2(0, (p))
#define HSUM(v) ((v).s0 + (v).s1)
#elif VW == 4
typedef float4 floatv;
#define VLOAD(p) vload4(0, (p))
#define HSUM(v) (((v).s0 + (v).s1) + ((v).s2 + (v).s3))
#elif VW == 8
typedef float8 floatv;
#define VLOAD(p) vload8(0, (p))
#define HSUM4(v) (((v).s0 + (v).s1) + ((v).s2 + (v).s3))
#define HSUM(v) (HSUM4((v).lo) + HSUM4((v).hi))
#elif VW == 16
typedef float16 floatv;
#define VLOAD(p) vload16(0, (p))
#define HSUM4(v) (((v).s0 + (v).s1) + ((v).s2 + (v).s3))
#define HSUM8(v) (HSUM4((v).lo) + HSUM4((v).hi))
#define HSUM(v) (HSUM8((v).lo) + HSUM8((v).hi))
#else
#error "VW must be 1, 2, 4, 8 or 16"
#endif

#define STEP (WG * VW * UNROLL)            /* elements consumed per main-loop step */

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void reduction(__global float *restrict out, __global const float *restrict in, const int n,
               const int ng, const int seg)
{
  __local float part[WG];
  const int t = (int)get_local_id(0);

  for (int sg = 0; sg < SPG; sg++) {
    const int g = (int)get_group_id(0) * SPG + sg;
    const long begin = (long)g * seg;
    const long end_ = begin + seg < n ? begin + seg : n;
    const int len = end_ > begin ? (int)(end_ - begin) : 0; /* 0 past the last segment */
    __global const float *p = in + (len > 0 ? begin : 0);
    const int steps = len / STEP;

    floatv acc[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; u++) acc[u] = (floatv)(0.0f);

#if LOAD == 0
    __global const float *q = p + t * VW;
    for (int s = 0; s < steps; s++) {
#pragma unroll
      for (int u = 0; u < UNROLL; u++) acc[u] += VLOAD(q + (s * UNROLL + u) * (WG * VW));
    }
#else
    __global const float *q = p + t * (steps * VW * UNROLL);
    for (int s = 0; s < steps; s++) {
#pragma unroll
      for (int u = 0; u < UNROLL; u++) acc[u] += VLOAD(q + (s * UNROLL + u) * VW);
    }
#endif
    float tail = 0.0f;
    for (int i = steps * STEP + t; i < len; i += WG) tail += p[i];

    floatv a = acc[0];
#pragma unroll
    for (int u = 1; u < UNROLL; u++) a += acc[u];
    part[t] = HSUM(a) + tail;
    barrier(CLK_LOCAL_MEM_FENCE);

#if FINAL == 0
    for (int off = WG / 2; off > 0; off >>= 1) {
      if (t < off) part[t] += part[t + off];
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (t == 0 && g < ng) out[g] = part[0];
#elif FINAL == 1
    if (t == 0) {
      float s = 0.0f;
      for (int i = 0; i < WG; i++) s += part[i];
      if (g < ng) out[g] = s;
    }
#elif FINAL == 2
    float s = 0.0f;
    if (t < 32)
      for (int i = t; i < WG; i += 32) s += part[i];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (t < 32) part[t] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (t == 0) {
      float r = 0.0f;
      for (int i = 0; i < 32; i++) r += part[i];
      if (g < ng) out[g] = r;
    }
#else
#error "FINAL must be 0, 1 or 2"
#endif
    barrier(CLK_LOCAL_MEM_FENCE); /* part is reused by the next segment */
  }
}
