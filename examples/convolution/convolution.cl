/* 2-D convolution (hetune example, language "opencl"); see convolution_ref.c for the exact
 * definition: out (w x h) = in ((w+FW-1) x (h+FH-1), padded by the caller) correlated with the
 * FW x FH filter filt; FW and FH are compile-time sizes, so the filter loops unroll fully.
 *
 * A work-group computes a (BX*TX) x (BY*TY) block of out; work-item (tx, ty) computes the
 * TX x TY outputs at columns bx0 + tx + k*BX and rows by0 + ty + l*BY (strided by the group
 * shape, so adjacent work-items touch adjacent memory). Tunables (-D):
 *   BX, BY        work-group shape (block_size_x, block_size_y in Kernel Tuner's example)
 *   TX, TY        outputs per work-item in x and y (tile_size_x, tile_size_y)
 *   USE_LOCAL     1: stage the (BX*TX+FW-1) x (BY*TY+FH-1) input block in local memory first
 *                 (one barrier); 0: read in straight from global memory (the caches do the reuse)
 *   PAD           extra columns of the local input block (0 or 1; only with USE_LOCAL;
 *                 Kernel Tuner's use_padding)
 *   FILTER_CONST  1: the filter is a __constant argument; 0: __global const
 * Launch: global = (ceil_div(W, BX*TX) * BX, ceil_div(H, BY*TY) * BY), local = (BX, BY).
 * Any w and h work: outputs outside w x h are not written. Without local memory, the blocks
 * that cross the right or bottom edge take a separate, plain path (the test is uniform per
 * work-group), so that the interior blocks run without bounds checks, which PoCL vectorizes
 * across work-items. */

#if FILTER_CONST
#define FILT_Q __constant
#else
#define FILT_Q __global const
#endif

#define OBX (BX * TX)            /* output block width */
#define OBY (BY * TY)            /* output block height */
#define IBX (OBX + FW - 1)       /* input block width */
#define IBY (OBY + FH - 1)       /* input block height */

__kernel __attribute__((reqd_work_group_size(BX, BY, 1)))
void convolution(__global float *restrict out, __global const float *restrict in,
                 FILT_Q float *restrict filt, const int w, const int h)
{
  const int tx = (int)get_local_id(0), ty = (int)get_local_id(1);
  const int bx0 = (int)get_group_id(0) * OBX, by0 = (int)get_group_id(1) * OBY;
  const int iw = w + FW - 1;

#if USE_LOCAL
  const int ih = h + FH - 1;
  __local float blk[IBY][IBX + PAD];
  for (int e = ty * BX + tx; e < IBY * IBX; e += BX * BY) {
    const int r = e / IBX, c = e % IBX;
    if (by0 + r < ih && bx0 + c < iw) blk[r][c] = in[(by0 + r) * iw + bx0 + c];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  /* Parts of blk past the input's edge stay unset; they only feed outputs that are not
   * written. */
#define SRC(l, k, j, i) blk[ty + (l) * BY + (j)][tx + (k) * BX + (i)]
#else
  if (bx0 + OBX > w || by0 + OBY > h) {
    /* Edge block: plain loops, same summation order; outputs outside w x h are skipped. */
#pragma unroll 1
    for (int l = 0; l < TY; l++)
#pragma unroll 1
      for (int k = 0; k < TX; k++) {
        const int x = bx0 + tx + k * BX, y = by0 + ty + l * BY;
        if (x >= w || y >= h) continue;
        float s = 0.0f;
#pragma unroll 1
        for (int j = 0; j < FH; j++)
#pragma unroll 1
          for (int i = 0; i < FW; i++) s += in[(y + j) * iw + x + i] * filt[j * FW + i];
        out[y * w + x] = s;
      }
    return;
  }
  __global const float *p = in + (by0 + ty) * iw + bx0 + tx;
#define SRC(l, k, j, i) p[((l) * BY + (j)) * iw + (k) * BX + (i)]
#endif

  /* (the accumulators start after the barrier: PoCL keeps values that live across a barrier in
   * memory) */
  float acc[TY][TX];
#pragma unroll
  for (int l = 0; l < TY; l++)
#pragma unroll
    for (int k = 0; k < TX; k++) acc[l][k] = 0.0f;

#pragma unroll
  for (int j = 0; j < FH; j++)
#pragma unroll
    for (int i = 0; i < FW; i++) {
      const float f = filt[j * FW + i];
#pragma unroll
      for (int l = 0; l < TY; l++)
#pragma unroll
        for (int k = 0; k < TX; k++) acc[l][k] += SRC(l, k, j, i) * f;
    }

#pragma unroll
  for (int l = 0; l < TY; l++) {
    const int y = by0 + ty + l * BY;
#pragma unroll
    for (int k = 0; k < TX; k++) {
      const int x = bx0 + tx + k * BX;
      if (x < w && y < h) out[y * w + x] = acc[l][k];
    }
  }
}
