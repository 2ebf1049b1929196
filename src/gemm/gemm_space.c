/* The generators' search spaces as data: one table of parameters and one list of constraints per
 * space, added to the kernel object and built into an in-memory space from the same data, from which
 * the model config is picked. So the model config is valid by construction: it is a config of the
 * very space the spec describes. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm/gemm_internal.h"

void gemm_space_init(gemm_space_def *d, const gemm_param *params, int n_params) {
  d->params = params;
  d->n_params = n_params;
  d->n_cons = 0;
  d->overflow = 0;
}

void gemm_space_add(gemm_space_def *d, const char *fmt, ...) {
  if (d->n_cons == GEMM_MAX_CONS) {
    d->overflow = 1;
    return;
  }
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(d->cons[d->n_cons], sizeof d->cons[0], fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof d->cons[0]) d->overflow = 1;
  else d->n_cons++;
}

ht_status gemm_space_add_to(ht_kernel *k, const gemm_space_def *d) {
  if (d->overflow) return ht_error(HT_ERR_INVALID, "gemm: a constraint of the generated space is too long");
  ht_status st = HT_OK;
  for (int i = 0; i < d->n_params && !st; i++) {
    ht_value v[GEMM_MAX_VALUES];
    for (int j = 0; j < d->params[i].n; j++) v[j] = ht_int(d->params[i].v[j]);
    st = ht_kernel_add_param(k, d->params[i].name, v, d->params[i].n);
  }
  for (int i = 0; i < d->n_cons && !st; i++) st = ht_kernel_add_constraint(k, d->cons[i]);
  return st;
}

static ht_status add_constants(ht_space *s, const ht_gemm_problem *p, const ht_device_info *dev) {
  const char *sizes[] = {"M", "N", "K"};
  const int64_t v[] = {p->m, p->n, p->k};
  ht_status st = HT_OK;
  for (int i = 0; i < 3 && !st; i++) st = ht_space_set_constant(s, sizes[i], ht_int(v[i]));
  if (st || !dev) return st;
  const char *names[16];
  ht_value values[16];
  const int n = ht_device_constants(dev, names, values, 16);
  for (int i = 0; i < n && !st; i++) st = ht_space_set_constant(s, names[i], values[i]);
  return st;
}

ht_status gemm_space_build(const gemm_space_def *d, const ht_gemm_problem *p, const ht_device_info *dev,
                           ht_space **out) {
  *out = NULL;
  if (d->overflow) return ht_error(HT_ERR_INVALID, "gemm: a constraint of the generated space is too long");
  ht_space *s;
  ht_status st = ht_space_create(&s);
  for (int i = 0; i < d->n_params && !st; i++) {
    ht_value v[GEMM_MAX_VALUES];
    for (int j = 0; j < d->params[i].n; j++) v[j] = ht_int(d->params[i].v[j]);
    st = ht_space_add_param(s, d->params[i].name, v, d->params[i].n);
  }
  if (!st) st = add_constants(s, p, dev);
  for (int i = 0; i < d->n_cons && !st; i++) st = ht_space_add_constraint(s, d->cons[i]);
  if (st) {
    ht_space_destroy(s);
    return st;
  }
  *out = s;
  return HT_OK;
}

typedef struct pick_ctx {
  ht_space *space;
  gemm_pref_fn pref;
  const void *ctx;
  int found;
  int64_t best[GEMM_MAX_KEYS], cur[GEMM_MAX_KEYS];
  ht_config cfg;
} pick_ctx;

static int pick_visit(const ht_config *c, void *vctx) {
  pick_ctx *p = vctx;
  ht_value v[HT_MAX_PARAMS];
  ht_config_values(p->space, c, v);
  memset(p->cur, 0, sizeof p->cur);
  p->pref(v, p->ctx, p->cur);
  int better = !p->found;
  for (int i = 0; i < GEMM_MAX_KEYS && !better; i++) {
    if (p->cur[i] == p->best[i]) continue;
    better = p->cur[i] > p->best[i];
    break;
  }
  if (better) {
    p->found = 1;
    p->cfg = *c;
    memcpy(p->best, p->cur, sizeof p->best);
  }
  return 0;
}

int gemm_space_pick(ht_space *s, gemm_pref_fn pref, const void *ctx, char *key, size_t cap) {
  pick_ctx p = {.space = s, .pref = pref, .ctx = ctx};
  if (ht_space_enumerate(s, pick_visit, &p) || !p.found) return 0;
  char text[1024];
  const int n = ht_config_format(s, &p.cfg, text, sizeof text);
  if (n <= 0 || (size_t)n >= sizeof text || (size_t)n >= cap) return 0;
  memcpy(key, text, (size_t)n + 1);
  return 1;
}

int gemm_pick_from(const gemm_space_def *d, const ht_gemm_problem *p, const ht_device_info *dev, gemm_pref_fn pref,
                   const void *ctx, char *key, size_t cap) {
  ht_space *s;
  if (gemm_space_build(d, p, dev, &s)) return 0;
  const int ok = gemm_space_pick(s, pref, ctx, key, cap);
  ht_space_destroy(s);
  return ok;
}

static int64_t floor_log2(int64_t x) {
  int64_t r = 0;
  while (x > 1) x >>= 1, r++;
  return r;
}

int64_t gemm_log2_distance(int64_t v, int64_t target) {
  if (v <= 0 || target <= 0) return v > target ? v - target : target - v;
  const int64_t d = floor_log2(v) - floor_log2(target);
  return d < 0 ? -d : d;
}
