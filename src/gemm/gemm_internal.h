/* One generator per target (gemm_c.c, gemm_opencl.c, gemm_cuda.c); gemm.c dispatches. */
#ifndef HETUNE_GEMM_INTERNAL_H
#define HETUNE_GEMM_INTERNAL_H

#include "hetune/gemm.h"
#include "hetune/hetune.h" /* spec, space, ptx */
#include "spec/spec_struct.h"

/* ---- search spaces as data (gemm_space.c) ----
 * Each generator's space is a table of parameters and a list of constraints, written into the
 * spec and built into an in-memory space from the same data; the model config is picked there. */
enum { GEMM_MAX_VALUES = 12, GEMM_MAX_CONS = 24, GEMM_MAX_KEYS = 12 };
typedef struct gemm_param {
  const char *name;
  int n;
  int v[GEMM_MAX_VALUES];
} gemm_param;
typedef struct gemm_space_def {
  const gemm_param *params;
  int n_params, n_cons;
  int overflow; /* a constraint did not fit: building fails */
  char cons[GEMM_MAX_CONS][192];
} gemm_space_def;
void gemm_space_init(gemm_space_def *d, const gemm_param *params, int n_params);
/* Appends a constraint, printf-style: numbers of the target's limits are written in. */
void gemm_space_add(gemm_space_def *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The space's parameters and constraints, added to the kernel k. */
ht_status gemm_space_add_to(ht_kernel *k, const gemm_space_def *d);
/* The space as ht_spec_build_space builds it from the spec: the sizes M, N, K and, with dev, the
 * device.* constants. */
ht_status gemm_space_build(const gemm_space_def *d, const ht_gemm_problem *p, const ht_device_info *dev,
                           ht_space **out);
/* A model's preferences: fills up to GEMM_MAX_KEYS keys (the rest are 0) for a config's values
 * (in parameter order); the valid config with the lexicographically largest keys is its choice. */
typedef void (*gemm_pref_fn)(const ht_value *v, const void *ctx, int64_t *keys);
/* Writes the preferred valid config of s as "A=1,B=2" into key: 1, or 0 when the space is empty or
 * key too small. gemm_pick_from builds the space of d first. */
int gemm_space_pick(ht_space *s, gemm_pref_fn pref, const void *ctx, char *key, size_t cap);
int gemm_pick_from(const gemm_space_def *d, const ht_gemm_problem *p, const ht_device_info *dev, gemm_pref_fn pref,
                   const void *ctx, char *key, size_t cap);
/* |log2 v - log2 target| for positive values (|v - target| otherwise): how far a value is from a
 * model's target, for preferences. */
int64_t gemm_log2_distance(int64_t v, int64_t target);

/* p's CPU for the C generator: p->cpu checked (HT_ERR_INVALID naming the bad field), or this
 * machine's. */
ht_status gemm_cpu_of(const ht_gemm_problem *p, ht_gemm_cpu *c);

/* ---- the kernels as objects (gemm_kernel.c) ----
 * A generator describes its kernel in a gemm_kernel_def; gemm_kernel_build makes the kernel
 * object, with what every GEMM kernel shares: the sizes M, N, K as run-time arguments (no size
 * defines, so one source and one compiled config serve every shape), the arguments C, A, B, m, n,
 * k, alpha, beta, the C reference, work and a GFLOP/s metric. Every field is what the generated
 * spec files have always said, so the kernels keep their identity (and stored results). */
typedef struct gemm_kernel_def {
  char name[64];              /* in the store: gemm_c_f32_nn, gemm_opencl_f32_nn, ... */
  char json[72];              /* the spec file's name in the output folder */
  char file[64];              /* the source's file name */
  ht_language lang;
  const char *entry, *flags;  /* flags may be NULL */
  ht_buf text, ref_text;      /* the sources of the kernel and of its C reference (entry gemm_ref) */
  const char *ref_file;
  ht_geometry launch;         /* GPU kernels: HT_GEOM_GLOBAL or HT_GEOM_GRID of launch_dims */
  const char *launch_dims[2], *local_dims[2]; /* launch_dims[0] NULL: a C function, no geometry */
  gemm_space_def space;
  int c_zeros;                /* C starts as zeros when beta is 0 (the GPU specs), else random */
} gemm_kernel_def;
/* The kernel of d for p; relative paths resolve against dir (NULL: the current folder). */
ht_status gemm_kernel_build(const ht_gemm_problem *p, const gemm_kernel_def *d, const char *dir, ht_kernel **out);
void gemm_kernel_def_free(gemm_kernel_def *d);

/* Each describes its kernel into d (zeroed by the caller; gemm_kernel_def_free frees it after an
 * error too). The problem is checked already (gemm.c). */
ht_status gemm_def_c(const ht_gemm_problem *p, gemm_kernel_def *d);
ht_status gemm_def_opencl(const ht_gemm_problem *p, gemm_kernel_def *d);
ht_status gemm_def_cuda(const ht_gemm_problem *p, gemm_kernel_def *d);
ht_status gemm_def_vendor_c(const ht_gemm_problem *p, gemm_kernel_def *d);      /* OpenBLAS */
ht_status gemm_def_vendor_cuda(const ht_gemm_problem *p, gemm_kernel_def *d);   /* cuBLAS */
ht_status gemm_def_vendor_opencl(const ht_gemm_problem *p, gemm_kernel_def *d); /* CLBlast */
ht_status gemm_def_naive_c(const ht_gemm_problem *p, gemm_kernel_def *d);
ht_status gemm_def_naive_opencl(const ht_gemm_problem *p, gemm_kernel_def *d);
ht_status gemm_def_naive_cuda(const ht_gemm_problem *p, gemm_kernel_def *d);
/* ht_gemm_generate and its siblings for one target (the tests call them). */
ht_status gemm_generate_opencl(const ht_gemm_problem *p, const char *dir, char **spec_path);
ht_status gemm_naive_opencl(const ht_gemm_problem *p, const char *dir, char **spec_path);
ht_status gemm_vendor_opencl(const ht_gemm_problem *p, const char *dir, char **spec_path);
ht_status gemm_generate_cuda(const ht_gemm_problem *p, const char *dir, char **spec_path);
ht_status gemm_naive_cuda(const ht_gemm_problem *p, const char *dir, char **spec_path);
ht_status gemm_vendor_cuda(const ht_gemm_problem *p, const char *dir, char **spec_path);
int gemm_model_config_c(const ht_gemm_problem *p, char *key, size_t cap);    /* see ht_gemm_model_config */
/* An H100's limits as the CUDA backend reports them: the space checked without a GPU. */
void gemm_cuda_h100_limits(ht_device_info *info);
/* Compiles a CUDA spec's kernel for one config of its space (the config's values as -D defines)
 * for arch with nvcc and fills *res with what ptxas reports for it; the PTX goes to *ptx
 * (malloc'ed) when ptx is not NULL. Errors: those of ht_ptx_compile, HT_ERR_PARSE when ptxas names
 * no kernel. */
ht_status gemm_cuda_compile_config(const ht_spec *spec, ht_space *space, const ht_config *c, const char *arch,
                                   char **ptx, ht_ptx_resources *res);
int gemm_model_config_cuda(const ht_gemm_problem *p, char *key, size_t cap); /* see ht_gemm_model_config */

/* ---- shared by the GPU generators (defined in gemm_opencl.c) ---- */
/* The tiled kernel's launch and its space's parameters and device-independent constraints (cuda:
 * CUDA's vector widths); each generator adds its memory and register bounds. */
enum { GEMM_GPU_N_PARAMS = 11 };
void gemm_gpu_tile_space(gemm_space_def *d, int cuda);
void gemm_gpu_tile_launch(gemm_kernel_def *d);
#define GEMM_GPU_REF_SOURCE "gemm_ref_gpu.c"
int gemm_gpu_wide_index(const ht_gemm_problem *p); /* 1: some matrix has more than INT32_MAX elements */
const char *gemm_gpu_real(const ht_gemm_problem *p); /* "float" or "double" */
/* What the GPU kernels' defs share: the name <base>_<f32|f64>_<n|t><n|t>, spec file <base>.json,
 * language, source file, entry, the C reference gemm_ref(C, A, B, alpha, beta, m, n, k) in plain C
 * (double accumulation) and C's zeros when beta is 0. The source text is the caller's. */
void gemm_gpu_def(const ht_gemm_problem *p, gemm_kernel_def *d, const char *base, ht_language lang, const char *file,
                  const char *entry);
/* REAL, TRANS_A, TRANS_B, HAS_BETA, IDX defines (OpenCL: REAL2..8 and cl_khr_fp64 for double). */
void gemm_gpu_problem_header(ht_buf *b, const ht_gemm_problem *p, int opencl);
/* A vendor library's GEMM called from a C kernel on the host device (cuBLAS, CLBlast), as a kernel
 * of <name>.c (entry <name>) and <name>.json. */
typedef struct gemm_vendor_lib {
  const char *name;                    /* "gemm_cublas" */
  const char *library;                 /* "cuBLAS", for the source's first comment */
  const char *symbol_f32, *symbol_f64; /* the library's GEMM, as the source's GEMM_SYMBOL */
  const char *flags;                   /* C compiler and linker flags, or NULL */
  const char *body;                    /* the source after REAL, TRANS_A, TRANS_B and GEMM_SYMBOL */
  /* the library's own tuning parameters and constraints, or NULL for none */
  void (*space)(gemm_space_def *d, const ht_gemm_problem *p);
} gemm_vendor_lib;
ht_status gemm_gpu_vendor(const ht_gemm_problem *p, const gemm_vendor_lib *lib, gemm_kernel_def *d);
/* The naive kernel (source text `kernel`) for OpenCL or CUDA, launched by launch of (N, M) dims. */
ht_status gemm_gpu_naive(const ht_gemm_problem *p, int opencl, const char *kernel, ht_geometry launch,
                         const char *const dims[2], gemm_kernel_def *d);

#endif
