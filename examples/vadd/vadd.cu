/* Vector add c = a + b (hetune example, language "cuda").
 * Tunables: BLOCK (threads per block), WPT (elements per thread).
 * Thread t of block g handles g*BLOCK*WPT + w*BLOCK + t, w = 0..WPT-1 (coalesced). */
extern "C" __global__ void vadd(float *c, const float *a, const float *b, int n)
{
  const int base = blockIdx.x * (BLOCK * WPT) + threadIdx.x;
#pragma unroll
  for (int w = 0; w < WPT; w++) {
    const int i = base + w * BLOCK;
    if (i < n) c[i] = a[i] + b[i];
  }
}
