/* Static plans: each device's chunk time predicted from what the computation knows of its variants
 * (measured chunks, interpolated, or a model, copies included), split by the partitioner, and
 * cached per size bucket as shares of the split size. */
#include <math.h>
#include <string.h>

#include "coexec/coexec_internal.h"

typedef struct plan_ctx {
  ht_coexec *x;
  const int64_t *sizes;
} plan_ctx;

static double version_time(ht_coexec *x, const int64_t *sizes, int variant, int64_t lb, int64_t ub) {
  if (ub <= lb) return 0;
  ht_computation *c = x->c;
  htx_chunk k = htx_chunk_at(&x->split, sizes[x->split.dim], lb, ub);
  int64_t cs[HTD_MAX_SIZES], rep[HTD_MAX_SIZES];
  htx_chunk_sizes(c, &x->split, sizes, &k, cs);
  uint64_t key = htd_bucket(c, cs, rep);
  htd_estimate e;
  htd_estimate_variant(c, variant, rep, key, 0, &e);
  return e.calibrated ? e.total_s : NAN;
}

static double chunk_time(void *ctx, int pu, int version, int64_t lb, int64_t ub) {
  plan_ctx *p = ctx;
  return version_time(p->x, p->sizes, p->x->versions[pu][version], lb, ub);
}

int htx_calibrated(ht_coexec *x, const int64_t *sizes) {
  int64_t n = sizes[x->split.dim];
  for (int i = 0; i < x->n_pus; i++)
    for (int j = 0; j < x->n_versions[i]; j++)
      if (!isfinite(version_time(x, sizes, x->versions[i][j], 0, n))) return 0;
  return 1;
}

static htx_plan_slot *slot_for(ht_coexec *x, const int64_t *sizes, uint64_t *key) {
  int64_t rep[HTD_MAX_SIZES];
  *key = htd_bucket(x->c, sizes, rep);
  return &x->plans[*key % HTX_PLAN_SLOTS];
}

void htx_plan_forget(ht_coexec *x, const int64_t *sizes) {
  uint64_t key;
  htx_plan_slot *s = slot_for(x, sizes, &key);
  if (s->key == key) s->key = 0;
}

/* A cached plan made for another size of the bucket, applied to n rows: each device keeps its
 * share, bounds rounded to the granularity, the last device used takes the rest. */
static void scale_plan(const ht_coexec *x, const htx_plan_slot *s, int64_t n, ht_partition *p) {
  *p = s->plan;
  int64_t total = s->plan.ub[p->n_pus - 1] - s->plan.lb[0], g = x->split.granularity, at = 0;
  int last = -1;
  for (int i = 0; i < p->n_pus; i++)
    if (s->plan.ub[i] > s->plan.lb[i]) last = i;
  for (int i = 0; i < p->n_pus; i++) {
    int64_t rows = total > 0 ? (int64_t)((double)(s->plan.ub[i] - s->plan.lb[i]) / (double)total * (double)n) : 0;
    rows = rows / g * g;
    p->lb[i] = at;
    p->ub[i] = i == last ? n : (at + rows > n ? n : at + rows);
    at = p->ub[i];
  }
  p->plan_us = 0;
}

static void fill_report(ht_coexec *x, const int64_t *sizes, const ht_partition *p, ht_coexec_report *r) {
  r->n_pus = x->n_pus;
  r->plan = *p;
  r->pred_makespan_s = 0;
  for (int i = 0; i < x->n_pus; i++) {
    ht_coexec_pu_report *u = &r->pu[i];
    memset(u, 0, sizeof *u);
    u->lb = p->lb[i], u->ub = p->ub[i], u->rows = p->ub[i] - p->lb[i];
    u->variant = p->ub[i] > p->lb[i] ? x->versions[i][p->version[i]] : -1;
    u->pred_s = u->variant < 0 ? 0 : version_time(x, sizes, u->variant, u->lb, u->ub);
    if (u->variant >= 0) {
      htx_chunk k = htx_chunk_at(&x->split, sizes[x->split.dim], u->lb, u->ub);
      int64_t cs[HTD_MAX_SIZES], rep[HTD_MAX_SIZES];
      htx_chunk_sizes(x->c, &x->split, sizes, &k, cs);
      htd_bucket(x->c, cs, rep);
      u->config = htd_config_for(x->c, u->variant, rep);
    }
    if (u->pred_s > r->pred_makespan_s) r->pred_makespan_s = u->pred_s;
  }
}

ht_status htx_plan(ht_coexec *x, const int64_t *sizes, ht_coexec_report *r) {
  uint64_t key;
  htx_plan_slot *s = slot_for(x, sizes, &key);
  int64_t n = sizes[x->split.dim];
  ht_partition p;
  r->from_cache = s->key == key;
  if (r->from_cache) {
    scale_plan(x, s, n, &p);
  } else {
    ht_status st = htx_fill_power(x);
    if (st) return st;
    ht_partition_opts o = x->popts;
    o.n_versions = x->n_versions;
    o.power_w = x->has_power ? x->power_w : NULL;
    o.granularity = x->split.granularity;
    plan_ctx ctx = {x, sizes};
    st = ht_partition_plan(x->n_pus, 0, n, chunk_time, &ctx, &o, &p);
    if (st) return ht_error_prefix(st, "%s: planning the split: ", x->c->name);
    s->key = key;
    s->plan = p;
  }
  r->schedule = "static";
  fill_report(x, sizes, &p, r);
  return HT_OK;
}
