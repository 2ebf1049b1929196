/* Host data for a call, made as the spec's "init" says: what the command line and benchmarks
 * run a computation on. */
#include <stdlib.h>

#include "dispatch/dispatch_internal.h"
#include "measure/evaluator.h"

ht_status ht_computation_make_args(const ht_computation *c, const int64_t *sizes, uint64_t seed, ht_host_arg **out) {
  if (!c || !c->finished || !sizes || !out) return ht_error(HT_ERR_INVALID, "ht_computation_make_args: bad arguments");
  const ht_spec *s = c->spec0;
  ht_host_arg *args = calloc((size_t)s->n_args + 1, sizeof *args);
  ht_value *vars = calloc((size_t)s->n_names + 1, sizeof *vars);
  ht_status st = args && vars ? HT_OK : ht_error(HT_ERR_NOMEM, "out of memory");
  if (!st) htd_size_vars(s, sizes, vars);
  for (int i = 0; !st && i < s->n_args; i++) {
    const ht_spec_arg *a = &s->args[i];
    int64_t n;
    if (!a->is_buffer) continue;
    if ((st = ht_expr_eval_int(a->length, vars, &n))) st = ht_error_prefix(st, "%s: argument %s: ", s->name, a->name);
    else if (n < 0) st = ht_error(HT_ERR_INVALID, "%s: argument %s: length %lld", s->name, a->name, (long long)n);
    else if (!(args[i].data = malloc((size_t)n * ht_dtype_size(a->type) + 1))) st = ht_error(HT_ERR_NOMEM, "out of memory");
    else {
      args[i].count = (size_t)n;
      st = ht_fill_buffer(a, args[i].data, (size_t)n, seed + (uint64_t)i);
    }
  }
  free(vars);
  if (st) {
    ht_computation_free_args(c, args);
    return st;
  }
  *out = args;
  return HT_OK;
}

void ht_computation_free_args(const ht_computation *c, ht_host_arg *args) {
  if (!args) return;
  for (int i = 0; c && i < c->spec0->n_args; i++) free(args[i].data);
  free(args);
}
