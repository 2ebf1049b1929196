/* One call for the prediction code: static and executed counts, dpc, alpha and resources. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ptx/ptx_internal.h"

static double counts_sum(const ht_ptx_counts *c) {
  return c->compute + c->global_read + c->global_write + c->shared_read + c->shared_write + c->sync + c->dpu + c->sfu;
}

ht_status ht_ptx_features_get(const ht_ptx_module *m, int kernel, const double *param_values, int n,
                              const ht_ptx_exec_options *opts, ht_ptx_features *out) {
  if (!out) return ht_error(HT_ERR_INVALID, "ht_ptx_features_get: NULL output");
  memset(out, 0, sizeof *out);
  out->registers = out->shared_words = -1;
  ht_status st = ht_ptx_static_counts(m, kernel, &out->static_counts);
  if (!st) st = ht_ptx_executed_counts(m, kernel, param_values, n, opts, &out->executed, &out->exec);
  if (st) return st;
  /* Equation (1) holds by construction; checked because the model relies on it. */
  if (fabs(counts_sum(&out->static_counts) - out->static_counts.total) > 1e-9 * (1 + out->static_counts.total) ||
      fabs(counts_sum(&out->executed) - out->executed.total) > 1e-9 * (1 + out->executed.total))
    return ht_error(HT_ERR_INTERNAL, "PTX class counts do not sum to the total");
  out->dpc = out->static_counts.total > 0 ? ht_ptx_dpc(m, kernel) : 0.0;
  /* Arithmetic intensity as reference 003 defines it: static on-chip instructions (sync
   * included: __syncthreads goes through shared memory) over off-chip memory instructions. */
  const ht_ptx_counts *s = &out->static_counts;
  double off = s->global_read + s->global_write;
  double on = s->compute + s->shared_read + s->shared_write + s->sync + s->dpu + s->sfu;
  out->alpha = off > 0 ? on / off : INFINITY;
  return HT_OK;
}

int ht_ptx_features_set_resources(ht_ptx_features *f, const ht_ptx_resources *res, int n_res, const char *kernel) {
  for (int i = 0; f && res && kernel && i < n_res; i++) {
    if (strcmp(res[i].kernel, kernel) != 0) continue;
    f->registers = res[i].registers;
    f->shared_words = (res[i].shared_bytes + 3) / 4;
    f->local_bytes = res[i].local_bytes;
    f->spill_bytes = res[i].spill_bytes;
    return 0;
  }
  return -1;
}

ht_status ht_ptx_features_from_source(const char *source_text, const char *source_name, const char *const *defines,
                                      const char *arch, const char *kernel, const double *param_values, int n,
                                      ht_ptx_features *out) {
  char *ptx = NULL;
  ht_ptx_resources *res = calloc(HT_PTX_MAX_RESOURCES, sizeof *res);
  if (!res) return ht_error(HT_ERR_NOMEM, "out of memory");
  int n_res = 0;
  ht_ptx_module *m = NULL;
  ht_status st = ht_ptx_compile(source_text, source_name, defines, arch, &ptx, res, HT_PTX_MAX_RESOURCES, &n_res);
  if (!st) st = ht_ptx_parse(ptx, source_name, &m);
  if (!st) {
    int k = ht_ptx_kernel_find(m, kernel);
    if (k < 0) st = HT_ERR_NOTFOUND;
    else if (!(st = ht_ptx_features_get(m, k, param_values, n, NULL, out)))
      ht_ptx_features_set_resources(out, res, n_res, ht_ptx_kernel_name(m, k));
  }
  ht_ptx_free(m);
  free(ptx);
  free(res);
  return st;
}
