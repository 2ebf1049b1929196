/* The GEMM generator's public functions: check the problem, describe the kernel by kind and target
 * (gemm_c.c, gemm_opencl.c, gemm_cuda.c, gemm_clblast.c), build it (gemm_kernel.c), and where a
 * folder is given write its spec file and sources there with ht_kernel_write_json. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gemm/gemm_internal.h"

void ht_gemm_problem_default(ht_gemm_problem *p, int64_t m, int64_t n, int64_t k) {
  *p = (ht_gemm_problem){.m = m, .n = n, .k = k, .type = HT_DTYPE_F32, .alpha = 1.0, .beta = 0.0};
}

/* Kernels take the sizes as int (offsets are computed in size_t): each side must fit in an int32. */
static ht_status check_problem(const ht_gemm_problem *p) {
  if (!p) return ht_error(HT_ERR_INVALID, "gemm: problem is NULL");
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
  return HT_OK;
}

typedef ht_status (*def_fn)(const ht_gemm_problem *, gemm_kernel_def *);

/* The generator of a kind for a target. */
static ht_status find_def(ht_gemm_target t, ht_gemm_kind kind, def_fn *out) {
  static const def_fn defs[3][3] = {
      [HT_GEMM_TUNED] = {gemm_def_c, gemm_def_opencl, gemm_def_cuda},
      [HT_GEMM_VENDOR] = {gemm_def_vendor_c, gemm_def_vendor_opencl, gemm_def_vendor_cuda},
      [HT_GEMM_NAIVE] = {gemm_def_naive_c, gemm_def_naive_opencl, gemm_def_naive_cuda}};
  if ((unsigned)t > HT_GEMM_CUDA)
    return ht_error(HT_ERR_INVALID, "gemm: target %d: expected HT_GEMM_C, HT_GEMM_OPENCL or HT_GEMM_CUDA", (int)t);
  if ((unsigned)kind > HT_GEMM_NAIVE)
    return ht_error(HT_ERR_INVALID, "gemm: kind %d: expected HT_GEMM_TUNED, HT_GEMM_VENDOR or HT_GEMM_NAIVE", (int)kind);
  *out = defs[kind][t];
  return HT_OK;
}

/* The kernel, and with json the spec file's name in dir (malloc'ed). */
static ht_status make_kernel(const ht_gemm_problem *p, ht_gemm_target t, ht_gemm_kind kind, const char *dir,
                             ht_kernel **out, char **json) {
  if (!out) return ht_error(HT_ERR_INVALID, "gemm: out is NULL");
  *out = NULL;
  def_fn def = NULL;
  ht_status st = check_problem(p);
  if (!st) st = find_def(t, kind, &def);
  if (st) return st;
  gemm_kernel_def d = {0};
  st = def(p, &d);
  if (!st) st = gemm_kernel_build(p, &d, dir, out);
  if (!st && json && !(*json = ht_strfmt("%s/%s", dir, d.json))) st = ht_error(HT_ERR_NOMEM, "out of memory");
  gemm_kernel_def_free(&d);
  if (st) {
    ht_kernel_destroy(*out);
    *out = NULL;
  }
  return st;
}

ht_status ht_gemm_kernel(const ht_gemm_problem *p, ht_gemm_target target, ht_gemm_kind kind, const char *dir,
                         ht_kernel **out) {
  return make_kernel(p, target, kind, dir, out, NULL);
}

/* The kernel written into dir: its spec file (path in *json) and sources. */
static ht_status write_kernel(const ht_gemm_problem *p, ht_gemm_target t, ht_gemm_kind kind, const char *dir,
                              ht_kernel **k, char **json) {
  *json = NULL;
  if (!dir || !*dir) return ht_error(HT_ERR_INVALID, "gemm: no output folder");
  ht_status st = make_kernel(p, t, kind, dir, k, json);
  if (!st) st = ht_kernel_write_json(*k, *json);
  if (st) {
    free(*json);
    *json = NULL;
  }
  return st;
}

ht_status ht_gemm_spec(const ht_gemm_problem *p, ht_gemm_target target, ht_gemm_kind kind, const char *dir,
                       ht_spec **out) {
  if (!out) return ht_error(HT_ERR_INVALID, "gemm: out is NULL");
  *out = NULL;
  ht_kernel *k = NULL;
  char *json = NULL;
  ht_status st = dir ? write_kernel(p, target, kind, dir, &k, &json) : make_kernel(p, target, kind, NULL, &k, NULL);
  if (!st) st = ht_kernel_finish(k, out);
  /* the file says what the built spec says, identity included: the store names it as the spec's */
  if (!st && json) (*out)->path = json;
  else free(json);
  ht_kernel_destroy(k);
  return st;
}

static ht_status generate(const ht_gemm_problem *p, ht_gemm_target t, ht_gemm_kind kind, const char *dir,
                          char **spec_path) {
  if (!spec_path) return ht_error(HT_ERR_INVALID, "gemm: spec_path is NULL");
  ht_kernel *k = NULL;
  ht_status st = write_kernel(p, t, kind, dir, &k, spec_path);
  ht_kernel_destroy(k);
  return st;
}

ht_status ht_gemm_generate(const ht_gemm_problem *p, ht_gemm_target target, const char *dir, char **spec_path) {
  return generate(p, target, HT_GEMM_TUNED, dir, spec_path);
}

ht_status ht_gemm_generate_vendor(const ht_gemm_problem *p, ht_gemm_target target, const char *dir,
                                  char **spec_path) {
  return generate(p, target, HT_GEMM_VENDOR, dir, spec_path);
}

ht_status ht_gemm_generate_naive(const ht_gemm_problem *p, ht_gemm_target target, const char *dir, char **spec_path) {
  return generate(p, target, HT_GEMM_NAIVE, dir, spec_path);
}

ht_status gemm_generate_opencl(const ht_gemm_problem *p, const char *dir, char **spec_path) {
  return generate(p, HT_GEMM_OPENCL, HT_GEMM_TUNED, dir, spec_path);
}
ht_status gemm_naive_opencl(const ht_gemm_problem *p, const char *dir, char **spec_path) {
  return generate(p, HT_GEMM_OPENCL, HT_GEMM_NAIVE, dir, spec_path);
}
ht_status gemm_vendor_opencl(const ht_gemm_problem *p, const char *dir, char **spec_path) {
  return generate(p, HT_GEMM_OPENCL, HT_GEMM_VENDOR, dir, spec_path);
}
ht_status gemm_generate_cuda(const ht_gemm_problem *p, const char *dir, char **spec_path) {
  return generate(p, HT_GEMM_CUDA, HT_GEMM_TUNED, dir, spec_path);
}
ht_status gemm_naive_cuda(const ht_gemm_problem *p, const char *dir, char **spec_path) {
  return generate(p, HT_GEMM_CUDA, HT_GEMM_NAIVE, dir, spec_path);
}
ht_status gemm_vendor_cuda(const ht_gemm_problem *p, const char *dir, char **spec_path) {
  return generate(p, HT_GEMM_CUDA, HT_GEMM_VENDOR, dir, spec_path);
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
