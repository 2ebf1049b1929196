/* Loop kernels for the executed-count tests: a loop bounded by a kernel parameter, and a nest. */
extern "C" __global__ void strided(float *out, const float *in, int K)
{
  float acc = 0.0f;
#pragma unroll 1
  for (int k = 0; k < K; k += 4) acc += in[k + threadIdx.x];
  out[threadIdx.x] = acc;
}

extern "C" __global__ void nested(float *out, const float *in, int n, int m)
{
  float acc = 0.0f;
#pragma unroll 1
  for (int i = 0; i < n; i++) {
#pragma unroll 1
    for (int j = 0; j < m; j++) acc += in[i * m + j];
    __syncthreads();
  }
  out[threadIdx.x] = acc;
}

extern "C" __global__ void fixed(double *out, const float *in)
{
  __shared__ float s[64];
  double acc = 0.0;
  s[threadIdx.x] = in[threadIdx.x];
  __syncthreads();
#pragma unroll 1
  for (int i = 0; i < 10; i++) acc += __sinf(s[(threadIdx.x + i) & 63]);
  out[threadIdx.x] = acc;
}
