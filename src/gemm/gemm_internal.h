/* One generator per target (gemm_c.c, gemm_opencl.c, gemm_cuda.c); gemm.c dispatches. */
#ifndef HETUNE_GEMM_INTERNAL_H
#define HETUNE_GEMM_INTERNAL_H

#include "hetune/gemm.h"
#include "hetune/hetune.h" /* spec, space, ptx */

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
/* The spec's "parameters" and "constraints" lines. */
void gemm_space_json(ht_buf *b, const gemm_space_def *d);
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

/* Each writes its spec + source into dir (existing) and returns the spec path (malloc'ed). */
ht_status gemm_generate_c(const ht_gemm_problem *p, const char *dir, char **spec_path);
ht_status gemm_generate_opencl(const ht_gemm_problem *p, const char *dir, char **spec_path);
ht_status gemm_generate_cuda(const ht_gemm_problem *p, const char *dir, char **spec_path);
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
ht_status gemm_vendor_c(const ht_gemm_problem *p, const char *dir, char **spec_path);     /* OpenBLAS */
ht_status gemm_vendor_cuda(const ht_gemm_problem *p, const char *dir, char **spec_path);  /* cuBLAS */
ht_status gemm_vendor_opencl(const ht_gemm_problem *p, const char *dir, char **spec_path); /* CLBlast */
ht_status gemm_naive(const ht_gemm_problem *p, ht_gemm_target t, const char *dir, char **spec_path);
/* The naive GPU kernels (one work-item / thread per C element); gemm_naive dispatches to them. */
ht_status gemm_naive_opencl(const ht_gemm_problem *p, const char *dir, char **spec_path);
ht_status gemm_naive_cuda(const ht_gemm_problem *p, const char *dir, char **spec_path);

/* Shared by the GPU generators (defined in gemm_opencl.c). */
/* The tiled kernel's launch lines and its space's parameters and device-independent constraints
 * (cuda: CUDA's vector widths); each generator adds its memory and register bounds. */
#define GEMM_GPU_TILE_GEOMETRY \
  "  \"grid\": [\"ceil_div(N, NWG)\", \"ceil_div(M, MWG)\"],\n  \"local\": [\"NWG/WPTN\", \"MWG/WPTM\"],\n"
enum { GEMM_GPU_N_PARAMS = 11 };
void gemm_gpu_tile_space(gemm_space_def *d, int cuda);
#define GEMM_GPU_REF_SOURCE "gemm_ref_gpu.c"
/* Sizes >= 1 and 32-bit, float or double, finite alpha/beta, non-NULL arguments. */
ht_status gemm_gpu_check(const ht_gemm_problem *p, const char *dir, char **spec_path);
int gemm_gpu_wide_index(const ht_gemm_problem *p); /* 1: some matrix has more than INT32_MAX elements */
const char *gemm_gpu_real(const ht_gemm_problem *p); /* "float" or "double" */
/* Writes text to dir/name (atomically); *path_out (malloc'ed) gets the path when not NULL. */
ht_status gemm_gpu_write(const char *dir, const char *name, const ht_buf *text, char **path_out);
/* dir/GEMM_GPU_REF_SOURCE: gemm_ref(C, A, B, alpha, beta, m, n, k) in plain C (double accumulation). */
ht_status gemm_gpu_write_reference(const ht_gemm_problem *p, const char *dir);
/* The spec's head (name_<f32|f64>_<n|t><n|t> .. arguments) and tail (reference, work, metrics, closing brace). */
void gemm_gpu_spec_begin(ht_buf *b, const ht_gemm_problem *p, const char *name, const char *lang, const char *source,
                         const char *entry);
void gemm_gpu_spec_end(ht_buf *b, const ht_gemm_problem *p);
/* REAL, TRANS_A, TRANS_B, HAS_BETA, IDX defines (OpenCL: REAL2..8 and cl_khr_fp64 for double). */
void gemm_gpu_problem_header(ht_buf *b, const ht_gemm_problem *p, int opencl);
/* Writes dir/source_name (src), the C reference and dir/json_name (spec); frees both buffers. */
ht_status gemm_gpu_write_spec(const ht_gemm_problem *p, const char *dir, const char *source_name, ht_buf *src,
                              const char *json_name, ht_buf *spec, char **spec_path);
/* A vendor library's GEMM called from a C kernel on the host device (cuBLAS, CLBlast), as a spec
 * without parameters: <name>.c (entry <name>) and <name>.json. */
typedef struct gemm_vendor_lib {
  const char *name;                    /* "gemm_cublas" */
  const char *library;                 /* "cuBLAS", for the source's first comment */
  const char *symbol_f32, *symbol_f64; /* the library's GEMM, as the source's GEMM_SYMBOL */
  const char *flags;                   /* C compiler and linker flags, or NULL */
  const char *body;                    /* the source after REAL, TRANS_A, TRANS_B and GEMM_SYMBOL */
  const char *parameters;              /* the library's own tuning parameters (JSON object), or NULL */
  const char *constraints;             /* their constraints (JSON list), or NULL */
} gemm_vendor_lib;
ht_status gemm_gpu_vendor(const ht_gemm_problem *p, const char *dir, const gemm_vendor_lib *lib, char **spec_path);
/* The naive kernel (source text `kernel`, launch lines `geometry`) as a spec for OpenCL or CUDA. */
ht_status gemm_gpu_naive(const ht_gemm_problem *p, const char *dir, int opencl, const char *kernel,
                         const char *geometry, char **spec_path);

#endif
