/* The pieces of a launch that come from a spec: kernel choice, geometry, lengths, arguments, work,
 * and copies at an offset. */
#include <stdio.h>
#include <string.h>

#include "exec/exec_internal.h"

ht_status ht_exec_kernel_for(const ht_spec *spec, const ht_device *dev, const ht_spec_kernel **out) {
  const char *lang = ht_language_name(spec->kernel.lang);
  *out = &spec->kernel;
  if (ht_device_caps(dev) & HT_CAP_SIMULATED) { /* it runs C on the host and models the time */
    if (spec->kernel.lang == HT_LANG_C) return HT_OK;
    if (spec->has_reference && spec->reference.lang == HT_LANG_C) return *out = &spec->reference, HT_OK;
    return ht_error(HT_ERR_INVALID,
                    "%s: cannot run on simulated device %s: it runs C on the host, and the kernel is %s with %s",
                    spec->name, dev->info.id, lang, spec->has_reference ? "a reference that is not C" : "no reference");
  }
  if (strcmp(lang, dev->ops->name) == 0) return HT_OK;
  return ht_error(HT_ERR_INVALID, "%s: kernel language %s cannot run on device %s (%s kernels run on %s devices)",
                  spec->name, lang, dev->info.id, lang, lang);
}

/* opts' part of dimension d: its offset, and its count rounded up to the work-group size. */
static int apply_part(const ht_run_opts *opts, int d, ht_launch *l, char *msg, size_t len) {
  size_t off = opts->offset[d], count = opts->count[d] ? opts->count[d] : l->global[d] - off;
  if (off > l->global[d] || count > l->global[d] - off) {
    snprintf(msg, len, "launch part: dimension %d: [%zu, %zu) is not inside its %zu work-items", d, off, off + count,
             l->global[d]);
    return 1;
  }
  if (l->local[d] > 1 && count % l->local[d]) count += l->local[d] - count % l->local[d];
  l->offset[d] = off;
  l->global[d] = count;
  return 0;
}

int ht_exec_geometry(const ht_spec_kernel *k, const ht_value *vars, const ht_run_opts *opts, ht_launch *l, char *msg,
                     size_t len) {
  memset(l, 0, sizeof *l);
  l->dims = k->dims;
  for (int d = 0; d < k->dims; d++) {
    int64_t g = 0, lo = k->lang == HT_LANG_CUDA ? 1 : 0;
    if (ht_expr_eval_int(k->global[d], vars, &g) || (k->local[d] && ht_expr_eval_int(k->local[d], vars, &lo))) {
      snprintf(msg, len, "launch geometry: %s", ht_last_error());
      return 1;
    }
    if (g <= 0 || lo < 0 || (k->local[d] && lo == 0)) {
      snprintf(msg, len, "launch geometry: global[%d] = %lld, local[%d] = %lld (must be positive)", d, (long long)g, d,
               (long long)lo);
      return 1;
    }
    if (lo > 0 && g % lo) g += lo - g % lo; /* round up: kernels guard their edges */
    l->global[d] = (size_t)g;
    l->local[d] = (size_t)lo;
  }
  for (int d = 0; d < k->dims; d++)
    if (l->local[d] == 0 && k->local[0]) l->local[d] = 1;
  if (k->dims == 0) { /* C functions have no geometry: one call */
    l->dims = 1;
    l->global[0] = l->local[0] = 1;
  }
  for (int d = 0; opts && d < l->dims; d++)
    if (apply_part(opts, d, l, msg, len)) return 1;
  return 0;
}

ht_status ht_exec_lengths(const ht_spec *s, const ht_value *vars, size_t *len) {
  for (int i = 0; i < s->n_args; i++) {
    const ht_spec_arg *a = &s->args[i];
    int64_t n = 0;
    if (a->is_buffer && ht_expr_eval_int(a->length, vars, &n))
      return ht_error_prefix(HT_ERR_INVALID, "%s: argument %s: ", s->name, a->name);
    if (n < 0) return ht_error(HT_ERR_INVALID, "%s: argument %s: length %lld is negative", s->name, a->name, (long long)n);
    len[i] = (size_t)n;
  }
  return HT_OK;
}

int ht_exec_args(const ht_spec *s, const ht_value *vars, ht_buffer *const *bufs, ht_arg *args, char *msg, size_t len) {
  for (int i = 0; i < s->n_args; i++) {
    const ht_spec_arg *a = &s->args[i];
    memset(&args[i], 0, sizeof args[i]);
    args[i].type = a->type;
    if (a->is_stop_flag) {
      args[i].is_stop_flag = 1; /* the backend passes the flag */
    } else if (a->is_buffer) {
      args[i].is_buffer = 1;
      args[i].buf = bufs[i];
    } else if (ht_expr_eval(a->value, vars, &args[i].value)) {
      snprintf(msg, len, "argument %s: %s", a->name, ht_last_error());
      return 1;
    }
  }
  return 0;
}

void ht_exec_work(const ht_spec *s, const ht_value *vars, ht_launch *l) {
  double f = 0, b = 0;
  if (s->work_flops && ht_expr_eval_double(s->work_flops, vars, &f)) f = 0;
  if (s->work_bytes && ht_expr_eval_double(s->work_bytes, vars, &b)) b = 0;
  l->work_flops = f > 0 ? f : 0;
  l->work_bytes = b > 0 ? b : 0;
  ht_error_clear(); /* a work expression that cannot be computed here is just unknown work */
}

ht_status ht_exec_copy(ht_device *dev, ht_buffer *b, size_t offset, void *host, size_t bytes, int to_device,
                       double *seconds) {
  double t = 0;
  ht_status st = to_device ? ht_device_buffer_write_at(dev, b, offset, host, bytes, &t)
                           : ht_device_buffer_read_at(dev, b, offset, host, bytes, &t);
  if (!st) *seconds += t;
  return st;
}
