/* Matrix transpose (hetune example, language "opencl"); see transpose_ref.c for the definition:
 * in is h x w (row-major), out is w x h, out[x * h + y] = in[y * w + x].
 *
 * A work-group transposes one TH x TW tile of in (rows y0 .. y0+TH-1, columns x0 .. x0+TW-1).
 * Tunables (-D):
 *   TW, TH     tile width (columns of in) and height (rows of in)
 *   VW         vector width: a work-item reads VW adjacent elements of a row of in (vloadN);
 *              with USE_LOCAL it also writes VW adjacent elements of a row of out (vstoreN)
 *   WPT        rows of the tile per work-item: the work-group is (TW/VW) x (TH/WPT)
 *   USE_LOCAL  1: stage the tile in local memory (coalesced reads and coalesced writes, with one
 *              barrier between); 0: every work-item writes its elements straight to out
 *              (reads coalesced, writes strided by h)
 *   PAD        extra columns of the local tile (0 or 1; only with USE_LOCAL): the transposed
 *              read walks a column of the tile, and padding changes its stride (bank conflicts
 *              on GPUs, cache-set aliasing on CPUs)
 * Launch: global = (ceil_div(W, TW) * TW/VW, ceil_div(H, TH) * TH/WPT), local = (TW/VW, TH/WPT).
 * Any w and h work: partial vectors and tiles at the right and bottom edges fall back to
 * guarded scalar accesses. */

#ifndef PAD
#define PAD 0
#endif

#define LX (TW / VW)   /* work-items per group along x */
#define LY (TH / WPT)  /* work-items per group along y */

#if VW == 1
typedef float floatv;
#define VLOAD(p) (*(p))
#define VSTORE(v, p) (*(p) = (v))
#elif VW == 2
typedef float2 floatv;
#define VLOAD(p) vload2(0, (p))
#define VSTORE(v, p) vstore2((v), 0, (p))
#elif VW == 4
typedef float4 floatv;
#define VLOAD(p) vload4(0, (p))
#define VSTORE(v, p) vstore4((v), 0, (p))
#elif VW == 8
typedef float8 floatv;
#define VLOAD(p) vload8(0, (p))
#define VSTORE(v, p) vstore8((v), 0, (p))
#else
#error "VW must be 1, 2, 4 or 8"
#endif

/* Loads VW elements of row y of in starting at column x (guarded at the right edge). */
inline void load_row(__global const float *restrict in, int w, int x, int y, float *v)
{
  __global const float *p = in + (long)y * w + x;
  if (x + VW <= w) {
#if VW == 1
    v[0] = *p;
#else
    floatv t = VLOAD(p);
#pragma unroll
    for (int e = 0; e < VW; e++) v[e] = t[e];
#endif
  } else {
#pragma unroll
    for (int e = 0; e < VW; e++) v[e] = x + e < w ? p[e] : 0.0f;
  }
}

__kernel __attribute__((reqd_work_group_size(LX, LY, 1)))
void transpose(__global float *restrict out, __global const float *restrict in, const int w,
               const int h)
{
  const int lx = (int)get_local_id(0), ly = (int)get_local_id(1);
  const int x0 = (int)get_group_id(0) * TW, y0 = (int)get_group_id(1) * TH;
  const int x = x0 + lx * VW;

#if USE_LOCAL
  __local float tile[TH][TW + PAD];
#pragma unroll
  for (int r = 0; r < WPT; r++) {
    const int row = ly + r * LY, y = y0 + row;
    float v[VW];
    if (y < h) {
      load_row(in, w, x, y, v);
#pragma unroll
      for (int e = 0; e < VW; e++) tile[row][lx * VW + e] = v[e];
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  /* The tile's transpose is TW rows (out rows x0..) of TH columns (out columns y0..), written as
   * TW * TH / VW vectors; work-item t writes vectors t, t + LX*LY, ... */
  const int t = ly * LX + lx;
#pragma unroll
  for (int r = 0; r < WPT; r++) {
    const int v = t + r * (LX * LY);
    const int orow = v / (TH / VW), ocol = (v % (TH / VW)) * VW;
    const int ox = y0 + ocol, oy = x0 + orow; /* column and row in out */
    if (oy >= w) continue;
    __global float *q = out + (long)oy * h + ox;
    if (ox + VW <= h) {
#if VW == 1
      *q = tile[ocol][orow];
#else
      floatv o;
#pragma unroll
      for (int e = 0; e < VW; e++) o[e] = tile[ocol + e][orow];
      VSTORE(o, q);
#endif
    } else {
#pragma unroll
      for (int e = 0; e < VW; e++)
        if (ox + e < h) q[e] = tile[ocol + e][orow];
    }
  }
#else
#pragma unroll
  for (int r = 0; r < WPT; r++) {
    const int y = y0 + ly + r * LY;
    if (y >= h) break;
    float v[VW];
    load_row(in, w, x, y, v);
#pragma unroll
    for (int e = 0; e < VW; e++)
      if (x + e < w) out[(long)(x + e) * h + y] = v[e];
  }
#endif
}
