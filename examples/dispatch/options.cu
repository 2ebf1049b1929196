/* Black-Scholes (../blackscholes_ref.c gives the definition) on a CUDA GPU: one option per thread,
 * BLOCK threads per block. The GPU version of options_c.json's operation, with the same arguments,
 * so a computation can choose between the CPU and the GPU per call (computations/offload_cuda.json). */
#define R 0.02f
#define V 0.30f

__device__ static float cnd(float d)
{
  const float kk = 1.0f / (1.0f + 0.2316419f * fabsf(d));
  const float poly = kk * (0.31938153f + kk * (-0.356563782f + kk * (1.781477937f +
                     kk * (-1.821255978f + kk * 1.330274429f))));
  const float c = 1.0f - 0.3989422804f * expf(-0.5f * d * d) * poly;
  return d < 0.0f ? 1.0f - c : c;
}

extern "C" __global__ void blackscholes(float *call, float *put, const float *s, const float *k,
                                        const float *t, int n)
{
  const int i = blockIdx.x * BLOCK + threadIdx.x;
  if (i >= n) return;
  const float sq = V * sqrtf(t[i]);
  const float d1 = (logf(s[i] / k[i]) + (R + 0.5f * V * V) * t[i]) / sq, d2 = d1 - sq;
  const float disc = k[i] * expf(-R * t[i]);
  const float n1 = cnd(d1), n2 = cnd(d2);
  call[i] = s[i] * n1 - disc * n2;
  put[i] = disc * (1.0f - n2) - s[i] * (1.0f - n1);
}
