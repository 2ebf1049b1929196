/* The generated GEMM kernels as kernel objects (hetune/kernel.h): what every generator's kernel
 * shares (sizes, arguments, reference, work, metric) around what its gemm_kernel_def sets apart.
 * Every text here is the one the generated spec files have always had (alpha as %.17g, the work
 * expressions, the file names): a built kernel's identity is computed over these fields, and
 * stored tunings of the GEMM kernels are found by that identity. */
#include <stdio.h>
#include <stdlib.h>

#include "gemm/gemm_internal.h"

void gemm_kernel_def_free(gemm_kernel_def *d) {
  ht_buf_free(&d->text);
  ht_buf_free(&d->ref_text);
}

/* C, A, B, m, n, k, alpha, beta; C is read too only when beta != 0. */
static ht_status add_arguments(ht_kernel *k, const ht_gemm_problem *p, int c_zeros) {
  const ht_dtype t = p->type;
  char alpha[40], beta[40];
  snprintf(alpha, sizeof alpha, "%.17g", p->alpha);
  snprintf(beta, sizeof beta, "%.17g", p->beta);
  ht_status st = ht_kernel_add_buffer(k, "C", t, "M*N", p->beta != 0 ? HT_ACCESS_READWRITE : HT_ACCESS_WRITE);
  if (!st) st = ht_kernel_set_init(k, "C", c_zeros && p->beta == 0 ? HT_INIT_ZEROS : HT_INIT_RANDOM);
  if (!st) st = ht_kernel_add_buffer(k, "A", t, "M*K", HT_ACCESS_READ);
  if (!st) st = ht_kernel_set_init(k, "A", HT_INIT_RANDOM);
  if (!st) st = ht_kernel_add_buffer(k, "B", t, "K*N", HT_ACCESS_READ);
  if (!st) st = ht_kernel_set_init(k, "B", HT_INIT_RANDOM);
  static const char *const dims[][2] = {{"m", "M"}, {"n", "N"}, {"k", "K"}};
  for (int i = 0; i < 3 && !st; i++) st = ht_kernel_add_scalar(k, dims[i][0], HT_DTYPE_I32, dims[i][1]);
  if (!st) st = ht_kernel_add_scalar(k, "alpha", t, alpha);
  if (!st) st = ht_kernel_add_scalar(k, "beta", t, beta);
  return st;
}

/* Sizes (run-time arguments only), reference, work and the GFLOP/s metric. */
static ht_status add_problem(ht_kernel *k, const ht_gemm_problem *p, const gemm_kernel_def *d) {
  const int64_t sizes[] = {p->m, p->n, p->k};
  static const char *const names[] = {"M", "N", "K"};
  ht_status st = ht_kernel_set_size_defines(k, 0);
  for (int i = 0; i < 3 && !st; i++) st = ht_kernel_add_size(k, names[i], sizes[i]);
  ht_kernel *ref;
  if (!st) st = ht_kernel_reference(k, &ref);
  if (!st) st = ht_kernel_set_source(ref, HT_LANG_C, d->ref_text.data, d->ref_file);
  if (!st) st = ht_kernel_set_entry(ref, "gemm_ref");
  char bytes[64];
  snprintf(bytes, sizeof bytes, "%d.0*(M*K+K*N+%d*M*N)", (int)ht_dtype_size(p->type), p->beta != 0 ? 2 : 1);
  if (!st) st = ht_kernel_set_work(k, "2.0*M*N*K", bytes);
  if (!st) st = ht_kernel_add_metric(k, "GFLOP/s", "2.0*M*N*K/time_s/1e9");
  return st;
}

static ht_status add_source(ht_kernel *k, const gemm_kernel_def *d) {
  ht_status st = ht_kernel_set_source(k, d->lang, d->text.data, d->file);
  if (!st) st = ht_kernel_set_entry(k, d->entry);
  if (!st && d->flags) st = ht_kernel_set_flags(k, d->flags);
  if (!st && d->launch_dims[0]) st = ht_kernel_set_geometry(k, d->launch, 2, d->launch_dims);
  if (!st && d->launch_dims[0]) st = ht_kernel_set_geometry(k, HT_GEOM_LOCAL, 2, d->local_dims);
  return st;
}

ht_status gemm_kernel_build(const ht_gemm_problem *p, const gemm_kernel_def *d, const char *dir, ht_kernel **out) {
  *out = NULL;
  if (d->text.failed || d->ref_text.failed || !d->text.data || !d->ref_text.data)
    return ht_error(HT_ERR_NOMEM, "gemm: out of memory making the sources of %s", d->name);
  ht_kernel *k;
  ht_status st = ht_kernel_create(d->name, &k);
  if (st) return st;
  if (dir) st = ht_kernel_set_base_dir(k, dir);
  if (!st) st = add_source(k, d);
  if (!st) st = add_arguments(k, p, d->c_zeros);
  if (!st) st = gemm_space_add_to(k, &d->space);
  if (!st) st = add_problem(k, p, d);
  if (st) ht_kernel_destroy(k);
  else *out = k;
  return st;
}
