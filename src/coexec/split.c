/* Split declarations: which size is cut, how each buffer's rows lie, and what a chunk's run sees. */
#include <stdlib.h>
#include <string.h>

#include "coexec/coexec_internal.h"

static int size_index(const ht_spec *s, const char *name) {
  for (int i = 0; i < s->n_sizes; i++)
    if (!strcmp(s->size_names[i], name)) return i;
  return -1;
}

static int arg_index(const ht_spec *s, const char *name) {
  for (int i = 0; i < s->n_args; i++)
    if (!strcmp(s->args[i].name, name)) return i;
  return -1;
}

static ht_status add_buffer(const ht_computation *c, const ht_split_buffer *b, htx_split *out) {
  const ht_spec *s = c->spec0;
  int k = b->name ? arg_index(s, b->name) : -1;
  if (k < 0) return ht_error(HT_ERR_INVALID, "split: buffer '%s': the specs have no such argument", b->name ? b->name : "");
  if (!s->args[k].is_buffer) return ht_error(HT_ERR_INVALID, "split: '%s' is a scalar, not a buffer", b->name);
  if (out->stride[k]) return ht_error(HT_ERR_INVALID, "split: buffer '%s' is named twice", b->name);
  ht_status st = ht_expr_compile(b->stride ? b->stride : "", (const char *const *)s->size_names, s->n_sizes,
                                 &out->stride[k]);
  return st ? ht_error_prefix(st, "split: buffer '%s': stride '%s': ", b->name, b->stride ? b->stride : "") : HT_OK;
}

/* Every written buffer is split (chunks write disjoint rows); a halo cannot be read from a buffer
 * that chunks also write, since neighbours change those rows during the call. */
static ht_status check_writes(const ht_computation *c, const htx_split *s) {
  const ht_spec *spec = c->spec0;
  for (int k = 0; k < spec->n_args; k++) {
    const ht_spec_arg *a = &spec->args[k];
    if (!a->is_buffer || !(a->access & HT_ACCESS_WRITE)) continue;
    if (!s->stride[k])
      return ht_error(HT_ERR_INVALID, "split: buffer '%s' is written, so it must be split (name it in the split's buffers)",
                      a->name);
    if (s->halo && (a->access & HT_ACCESS_READ))
      return ht_error(HT_ERR_INVALID, "split: buffer '%s' is read and written: a halo would read rows other chunks write",
                      a->name);
  }
  return HT_OK;
}

ht_status htx_split_compile(const ht_computation *c, const ht_split *in, htx_split *out) {
  memset(out, 0, sizeof *out);
  const ht_spec *s = c->spec0;
  if (!in || !in->dim) return ht_error(HT_ERR_INVALID, "split: no dim (the size to cut)");
  if ((out->dim = size_index(s, in->dim)) < 0)
    return ht_error(HT_ERR_INVALID, "split: dim '%s' is not a size of %s", in->dim, ht_spec_name(s));
  if (in->granularity < 0 || in->halo < 0)
    return ht_error(HT_ERR_INVALID, "split: granularity and halo cannot be negative");
  if (in->n_buffers < 1 || !in->buffers) return ht_error(HT_ERR_INVALID, "split: no buffers to split");
  out->granularity = in->granularity ? in->granularity : 1;
  out->halo = in->halo;
  out->n_args = s->n_args;
  if (!(out->stride = calloc((size_t)s->n_args, sizeof *out->stride))) return ht_error(HT_ERR_NOMEM, "out of memory");
  ht_status st = HT_OK;
  for (int i = 0; i < in->n_buffers && !st; i++) st = add_buffer(c, &in->buffers[i], out);
  if (!st) st = check_writes(c, out);
  if (st) htx_split_free(out);
  return st;
}

void htx_split_free(htx_split *s) {
  for (int k = 0; s->stride && k < s->n_args; k++) ht_expr_destroy(s->stride[k]);
  free(s->stride);
  s->stride = NULL;
}

htx_chunk htx_chunk_at(const htx_split *s, int64_t n, int64_t lb, int64_t ub) {
  htx_chunk k = {lb, ub, lb - s->halo, ub + s->halo};
  if (k.a < 0) k.a = 0;
  if (k.b > n) k.b = n;
  return k;
}

void htx_chunk_sizes(const ht_computation *c, const htx_split *s, const int64_t *sizes, const htx_chunk *k,
                     int64_t *out) {
  memcpy(out, sizes, sizeof *out * (size_t)c->spec0->n_sizes);
  out[s->dim] = k->b - k->a;
}

/* A stride at sizes: it is compiled over the size names alone. */
static int64_t stride_at(const ht_spec *spec, const ht_expr *e, const int64_t *sizes) {
  ht_value vars[spec->n_sizes + 1];
  for (int i = 0; i < spec->n_sizes; i++) vars[i] = ht_int(sizes[i]);
  int64_t v;
  return ht_expr_eval_int(e, vars, &v) ? -1 : v;
}

/* A buffer's length at sizes (its expression is over the spec's names). */
static int64_t length_at(const ht_spec *spec, const ht_expr *e, const int64_t *sizes) {
  ht_value vars[spec->n_names + 1];
  htd_size_vars(spec, sizes, vars);
  int64_t v;
  return ht_expr_eval_int(e, vars, &v) ? -1 : v;
}

ht_status htx_check_call(const ht_computation *c, const htx_split *s, const int64_t *sizes, const ht_host_arg *args) {
  const ht_spec *spec = c->spec0;
  int64_t n = sizes[s->dim];
  if (n < 1) return ht_error(HT_ERR_INVALID, "split: size %s = %lld: nothing to split", spec->size_names[s->dim], (long long)n);
  for (int k = 0; k < spec->n_args; k++) {
    if (!s->stride[k]) continue;
    const ht_spec_arg *a = &spec->args[k];
    int64_t stride = stride_at(spec, s->stride[k], sizes), len = length_at(spec, a->length, sizes);
    if (stride < 1) return ht_error(HT_ERR_INVALID, "split: buffer '%s': stride is %lld at these sizes", a->name, (long long)stride);
    if (len != n * stride)
      return ht_error(HT_ERR_INVALID, "split: buffer '%s' holds %lld elements, not %s (%lld) rows of %lld", a->name,
                      (long long)len, spec->size_names[s->dim], (long long)n, (long long)stride);
    if (args && args[k].count < (size_t)len)
      return ht_error(HT_ERR_INVALID, "split: buffer '%s': %zu elements given, %lld needed", a->name, args[k].count,
                      (long long)len);
  }
  return HT_OK;
}

void htx_chunk_args(const ht_computation *c, const htx_split *s, const int64_t *sizes, const htx_chunk *k,
                    const ht_host_arg *args, ht_host_arg *out) {
  const ht_spec *spec = c->spec0;
  for (int i = 0; i < spec->n_args; i++) {
    out[i] = args[i];
    if (!s->stride[i]) continue;
    size_t stride = (size_t)stride_at(spec, s->stride[i], sizes), es = ht_dtype_size(spec->args[i].type);
    out[i].data = (char *)args[i].data + (size_t)k->a * stride * es;
    out[i].count = (size_t)(k->b - k->a) * stride;
    if (!(spec->args[i].access & HT_ACCESS_WRITE)) {
      out[i].lo = out[i].hi = 0; /* read: every row it sees, halo included */
      continue;
    }
    out[i].lo = (size_t)(k->lb - k->a) * stride; /* written: only its own rows come back */
    out[i].hi = (size_t)(k->ub - k->a) * stride;
  }
}
