/* The GEMM generator's public functions: check the problem, create the folder, dispatch by target
 * (gemm_c.c, gemm_opencl.c, gemm_cuda.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gemm/gemm_internal.h"

/* The C case of the naive kernel lives with the C generator (gemm_c.c). */
ht_status gemm_naive_c(const ht_gemm_problem *p, const char *dir, char **spec_path);

void ht_gemm_problem_default(ht_gemm_problem *p, int64_t m, int64_t n, int64_t k) {
  *p = (ht_gemm_problem){.m = m, .n = n, .k = k, .type = HT_DTYPE_F32, .alpha = 1.0, .beta = 0.0};
}

/* Kernels take the sizes as int (offsets are computed in size_t): each side must fit in an int32. */
static ht_status check_problem(const ht_gemm_problem *p, const char *dir, char **spec_path) {
  if (!spec_path) return ht_error(HT_ERR_INVALID, "gemm: spec_path is NULL");
  *spec_path = NULL;
  if (!p) return ht_error(HT_ERR_INVALID, "gemm: problem is NULL");
  if (!dir || !*dir) return ht_error(HT_ERR_INVALID, "gemm: no output folder");
  const int64_t lim = INT32_MAX;
  if (p->m < 1 || p->n < 1 || p->k < 1 || p->m > lim || p->n > lim || p->k > lim)
    return ht_error(HT_ERR_INVALID, "gemm: sizes %lld x %lld x %lld: each must be between 1 and %lld",
                    (long long)p->m, (long long)p->n, (long long)p->k, (long long)lim);
  if (p->type != HT_DTYPE_F32 && p->type != HT_DTYPE_F64)
    return ht_error(HT_ERR_INVALID, "gemm: type %s: expected float (f32) or double (f64)", ht_dtype_name(p->type));
  if (!isfinite(p->alpha) || !isfinite(p->beta))
    return ht_error(HT_ERR_INVALID, "gemm: alpha %g, beta %g: expected finite numbers", p->alpha, p->beta);
  if ((p->trans_a != 0 && p->trans_a != 1) || (p->trans_b != 0 && p->trans_b != 1))
    return ht_error(HT_ERR_INVALID, "gemm: trans_a %d, trans_b %d: expected 0 or 1", p->trans_a, p->trans_b);
  return ht_mkdir_p(dir);
}

static ht_status bad_target(ht_gemm_target t) {
  return ht_error(HT_ERR_INVALID, "gemm: target %d: expected HT_GEMM_C, HT_GEMM_OPENCL or HT_GEMM_CUDA", (int)t);
}

ht_status ht_gemm_generate(const ht_gemm_problem *p, ht_gemm_target target, const char *dir, char **spec_path) {
  ht_status st = check_problem(p, dir, spec_path);
  if (st) return st;
  switch (target) {
  case HT_GEMM_C: return gemm_generate_c(p, dir, spec_path);
  case HT_GEMM_OPENCL: return gemm_generate_opencl(p, dir, spec_path);
  case HT_GEMM_CUDA: return gemm_generate_cuda(p, dir, spec_path);
  }
  return bad_target(target);
}

ht_status ht_gemm_generate_vendor(const ht_gemm_problem *p, ht_gemm_target target, const char *dir,
                                  char **spec_path) {
  ht_status st = check_problem(p, dir, spec_path);
  if (st) return st;
  switch (target) {
  case HT_GEMM_C: return gemm_vendor_c(p, dir, spec_path);
  case HT_GEMM_CUDA: return gemm_vendor_cuda(p, dir, spec_path);
  case HT_GEMM_OPENCL: return gemm_vendor_opencl(p, dir, spec_path);
  }
  return bad_target(target);
}

ht_status ht_gemm_generate_naive(const ht_gemm_problem *p, ht_gemm_target target, const char *dir, char **spec_path) {
  ht_status st = check_problem(p, dir, spec_path);
  if (st) return st;
  return gemm_naive(p, target, dir, spec_path);
}

ht_status gemm_naive(const ht_gemm_problem *p, ht_gemm_target t, const char *dir, char **spec_path) {
  switch (t) {
  case HT_GEMM_C: return gemm_naive_c(p, dir, spec_path);
  case HT_GEMM_OPENCL: return gemm_naive_opencl(p, dir, spec_path);
  case HT_GEMM_CUDA: return gemm_naive_cuda(p, dir, spec_path);
  }
  return bad_target(t);
}

int ht_gemm_model_config(const ht_gemm_problem *p, ht_gemm_target target, char *key, size_t cap) {
  if (!p || !key || cap == 0) return 0;
  switch (target) {
  case HT_GEMM_C: return gemm_model_config_c(p, key, cap);
  case HT_GEMM_CUDA: return gemm_model_config_cuda(p, key, cap);
  case HT_GEMM_OPENCL: return 0; /* OpenCL devices differ too much (PoCL's best tiles are a CPU's) */
  }
  return 0;
}
