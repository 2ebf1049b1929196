/* The GEMM generator (reference 004): C = alpha * op(A) * op(B) + beta * C, row-major, FP32 or
 * FP64, any M, N, K. For a problem and a target it builds a kernel object (hetune/kernel.h) whose
 * parameters and constraints are the schedule's search space, so the runner, the strategies and
 * the store tune it like any other kernel; it writes the kernel as a spec file (docs/spec.md) and
 * sources where asked. */
#ifndef HETUNE_GEMM_H
#define HETUNE_GEMM_H

#include <stdint.h>

#include "hetune/core.h"
#include "hetune/device.h"
#include "hetune/kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ht_gemm_target { HT_GEMM_C = 0, HT_GEMM_OPENCL = 1, HT_GEMM_CUDA = 2 } ht_gemm_target;

/* The CPU the C generator writes for. Its constraints, the kernel's vector width and the model
 * config all follow these numbers, so they agree by construction on any CPU; fill one by hand to
 * generate for another CPU than this one. */
typedef struct ht_gemm_cpu {
  int vec_bytes;      /* SIMD register width: 16 (SSE, NEON), 32 (AVX2), 64 (AVX-512) */
  int registers;      /* SIMD registers: 16 on x86-64 before AVX-512, 32 with it */
  int64_t l1, l2, l3; /* data cache bytes: L1d and L2 per core, L3 shared (0: none, L2 is the last) */
  int cores;          /* threads the kernel may use */
} ht_gemm_cpu;

/* This machine: the widest vectors the CPU and OS support, the caches sysconf reports (32 KiB,
 * 512 KiB and 8 MiB where it reports none) and the CPUs this process may use (its affinity mask,
 * bounded by its control group's CPU quota). */
void ht_gemm_cpu_probe(ht_gemm_cpu *c);

typedef struct ht_gemm_problem {
  int64_t m, n, k;
  ht_dtype type;        /* HT_DTYPE_F32 or HT_DTYPE_F64 */
  int trans_a, trans_b; /* 1: A is stored K x M (B: N x K) and used transposed */
  double alpha, beta;
  /* The target's limits; NULL for the defaults. cpu (HT_GEMM_C): NULL probes this machine. gpu
   * (the GPU targets' model config): the device's limits as the runner or `hetune devices`
   * report them; NULL: an NVIDIA H100's. The GPU specs read the device's limits when tuned. */
  const ht_gemm_cpu *cpu;
  const ht_device_info *gpu;
} ht_gemm_problem;

/* Fills defaults: FP32, no transposes, alpha 1, beta 0, the default limits. */
void ht_gemm_problem_default(ht_gemm_problem *p, int64_t m, int64_t n, int64_t k);

/* Which kernel: the tuned schedule, the vendor library's GEMM (OpenBLAS, CLBlast, cuBLAS: see
 * ht_gemm_generate_vendor) or the naive kernel (ht_gemm_generate_naive). */
typedef enum ht_gemm_kind { HT_GEMM_TUNED = 0, HT_GEMM_VENDOR = 1, HT_GEMM_NAIVE = 2 } ht_gemm_kind;

/* The generated kernel as a kernel object, its sources as text named relative to dir (NULL: the
 * current folder); nothing is written. ht_kernel_finish makes its spec; ht_kernel_write_json into
 * dir writes the files ht_gemm_generate* write. Errors: those of ht_gemm_generate. */
ht_status ht_gemm_kernel(const ht_gemm_problem *p, ht_gemm_target target, ht_gemm_kind kind, const char *dir,
                         ht_kernel **out);
/* The generated kernel's spec, built in memory. With dir, its spec file and sources are written
 * there too (as ht_gemm_generate* write them) and spec->path names the file, which loads to the same
 * spec with the same identity; with dir NULL nothing is written and spec->path is NULL. */
ht_status ht_gemm_spec(const ht_gemm_problem *p, ht_gemm_target target, ht_gemm_kind kind, const char *dir,
                       ht_spec **out);

/* Writes the generated spec and source(s) for the target into dir (created if needed) and
 * returns the spec's path (malloc'ed). The spec's reference is a plain C GEMM, so every variant
 * the runner measures is verified. Bad problems (sizes < 1, other types, CPU limits out of range
 * or leaving no valid config) -> HT_ERR_INVALID. */
ht_status ht_gemm_generate(const ht_gemm_problem *p, ht_gemm_target target, const char *dir, char **spec_path);

/* The vendor baseline as a spec without parameters: OpenBLAS cblas_?gemm for HT_GEMM_C, cuBLAS
 * for HT_GEMM_CUDA, CLBlast for HT_GEMM_OPENCL. All three are C kernels (language "c"): run them
 * on the "c" device; the cuBLAS and CLBlast ones reach their GPU or OpenCL device themselves (the
 * OpenCL one the device named by the environment variable HETUNE_GEMM_DEVICE, "opencl:P:D"). */
ht_status ht_gemm_generate_vendor(const ht_gemm_problem *p, ht_gemm_target target, const char *dir, char **spec_path);
/* The config a model of the target picks without measuring, written as "MR=4,NV=4,..." into key
 * (cap bytes): the valid config of the generated space (for p's limits) that best matches the
 * model's preferences, so it never breaks a constraint. HT_GEMM_C: a 4-row register tile with as
 * many vectors as keep the accumulators within 3/4 of the registers, then BLIS's analytical
 * cache blocks (the micro-panels of A and B in 90% of L1, the packed A block in half of L2, the B
 * panel in L3), all cores. HT_GEMM_CUDA: the register-blocking rule of hand-written SIMT SGEMMs
 * (256 threads, 8 x 8 per thread of a 128 x 128 block, 16-deep shared panels, 16-byte loads), or
 * the valid config nearest to it. Returns 1 when written, 0 for HT_GEMM_OPENCL (no model), a too
 * small key, bad limits or an empty space; `hetune gemm` measures it with the warm start, so a
 * short, noisy search cannot end below it. */
int ht_gemm_model_config(const ht_gemm_problem *p, ht_gemm_target target, char *key, size_t cap);

/* The OpenBLAS this process has loaded, as openblas_get_config() names it (version, and the
 * kernels its DYNAMIC_ARCH picked when it loaded), or NULL when the BLAS is not OpenBLAS. Sets
 * *avx2_on_avx512 when the CPU has AVX-512 but OpenBLAS runs older kernels (OPENBLAS_CORETYPE set
 * to an older core, or an OpenBLAS older than the CPU): OPENBLAS_CORETYPE=SkylakeX in the
 * environment before the process starts selects its AVX-512 kernels. OpenBLAS is loaded here if
 * the process has not loaded it; the vendor baseline runs in a worker forked from this process, so
 * this is the build it measures. */
const char *ht_gemm_openblas_build(int *avx2_on_avx512);
/* Whether the vendor library `hetune gemm` measures beside the generated kernel can be loaded
 * here: 1, or 0 with why (the library and the package that has it) in why (cap bytes). Checked for
 * CLBlast (opencl), which its baseline's kernel loads at run time; OpenBLAS (c) is linked into its
 * baseline, and a missing cuBLAS (cuda) fails its baseline's evaluation with the reason. */
int ht_gemm_vendor_available(ht_gemm_target target, char *why, size_t cap);
/* The naive kernel (one thread per C element, no tiling) for the target, as a spec. */
ht_status ht_gemm_generate_naive(const ht_gemm_problem *p, ht_gemm_target target, const char *dir, char **spec_path);

#ifdef __cplusplus
}
#endif
#endif
