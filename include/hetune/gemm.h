/* The GEMM generator (reference 004): C = alpha * op(A) * op(B) + beta * C, row-major, FP32 or
 * FP64, any M, N, K. For a problem and a target it writes a kernel spec (docs/spec.md) whose
 * parameters and constraints are the schedule's search space, plus the kernel source, so the
 * runner, the strategies and the store tune it like any other kernel. */
#ifndef HETUNE_GEMM_H
#define HETUNE_GEMM_H

#include <stdint.h>

#include "hetune/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ht_gemm_target { HT_GEMM_C = 0, HT_GEMM_OPENCL = 1, HT_GEMM_CUDA = 2 } ht_gemm_target;

typedef struct ht_gemm_problem {
  int64_t m, n, k;
  ht_dtype type;        /* HT_DTYPE_F32 or HT_DTYPE_F64 */
  int trans_a, trans_b; /* 1: A is stored K x M (B: N x K) and used transposed */
  double alpha, beta;
} ht_gemm_problem;

/* Fills defaults: FP32, no transposes, alpha 1, beta 0. */
void ht_gemm_problem_default(ht_gemm_problem *p, int64_t m, int64_t n, int64_t k);

/* Writes the generated spec and source(s) for the target into dir (created if needed) and
 * returns the spec's path (malloc'ed). The spec's reference is a plain C GEMM, so every variant
 * the runner measures is verified. Bad problems (sizes < 1, other types) -> HT_ERR_INVALID. */
ht_status ht_gemm_generate(const ht_gemm_problem *p, ht_gemm_target target, const char *dir, char **spec_path);

/* The vendor baseline as a spec without parameters: OpenBLAS cblas_?gemm for HT_GEMM_C, cuBLAS
 * for HT_GEMM_CUDA, CLBlast for HT_GEMM_OPENCL. All three are C kernels (language "c"): run them
 * on the "c" device; the cuBLAS and CLBlast ones reach their GPU or OpenCL device themselves (the
 * OpenCL one the device named by the environment variable HETUNE_GEMM_DEVICE, "opencl:P:D"). */
ht_status ht_gemm_generate_vendor(const ht_gemm_problem *p, ht_gemm_target target, const char *dir, char **spec_path);
/* The config a model of the target picks without measuring, written as "MR=12,NV=2,..." into key
 * (cap bytes). HT_GEMM_C: BLIS's analytical model (the register tile fills the vector registers,
 * B's micro-panel and A's fit in L1, the packed A block in half of L2, all cores). HT_GEMM_CUDA:
 * the register-blocking rule of hand-written SIMT SGEMMs (256 threads, 8 x 8 per thread of a
 * 128 x 128 block, 16-deep shared panels, 16-byte loads). Returns 1 when written, 0 for
 * HT_GEMM_OPENCL (no model) or a too small key; `hetune gemm` measures it with the warm start, so
 * a short, noisy search cannot end below it. */
int ht_gemm_model_config(const ht_gemm_problem *p, ht_gemm_target target, char *key, size_t cap);

/* The OpenBLAS this process has loaded, as openblas_get_config() names it (version, and the
 * kernels its DYNAMIC_ARCH picked when it loaded), or NULL when the BLAS is not OpenBLAS. Sets
 * *avx2_on_avx512 when the CPU has AVX-512 but OpenBLAS runs older kernels (OPENBLAS_CORETYPE set
 * to an older core, or an OpenBLAS older than the CPU): OPENBLAS_CORETYPE=SkylakeX in the
 * environment before the process starts selects its AVX-512 kernels. OpenBLAS is loaded here if
 * the process has not loaded it; the vendor baseline runs in a worker forked from this process, so
 * this is the build it measures. */
const char *ht_gemm_openblas_build(int *avx2_on_avx512);
/* The naive kernel (one thread per C element, no tiling) for the target, as a spec. */
ht_status ht_gemm_generate_naive(const ht_gemm_problem *p, ht_gemm_target target, const char *dir, char **spec_path);

#ifdef __cplusplus
}
#endif
#endif
