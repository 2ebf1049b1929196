/* PTX constructs beyond straight-line code: a call sequence (printf, a noinline function),
 * inline asm with its own scope and named registers, a texture fetch, dynamic shared memory. */
#include <cstdio>

__device__ __noinline__ float twice(float x) { return 2.0f * x; }

extern "C" __global__ void misc(float *out, cudaTextureObject_t tex, int n)
{
  extern __shared__ float dyn[];
  unsigned flag;
  asm("{\n\t.reg .pred p;\n\tsetp.ne.u32 p, %1, 0;\n\tselp.u32 %0, 1, 0, p;\n\t}" : "=r"(flag) : "r"(n));
  dyn[threadIdx.x] = tex1Dfetch<float>(tex, threadIdx.x);
  __syncthreads();
  if (flag && threadIdx.x == 0) printf("n = %d\n", n);
  out[threadIdx.x] = twice(dyn[(threadIdx.x + 1) % blockDim.x]);
}
