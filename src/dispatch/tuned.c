/* What tuning left in the store for a computation's variants: a fixed-config variant's measured
 * kernel times by size (its history before any call), a "best" variant's best config per size
 * tuned, and a stored model of the kernel on the device. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch/dispatch_internal.h"
#include "hetune/model.h"

/* ---- configs ---- */

/* A fixed config in the store's canonical text; for "best", the first valid config as the one to
 * run where nothing was tuned. */
ht_status htd_variant_prepare(ht_computation *c, int vi) {
  htd_variant *v = &c->v[vi];
  const ht_device_info *info = &ht_exec_device(v->ex)->info;
  ht_space *space;
  ht_status st = ht_spec_build_space(v->spec, info, &space);
  ht_config cfg;
  int found = 1;
  if (!st && !v->best) st = ht_config_parse(space, v->config, &cfg);
  if (!st && v->best) {
    ht_space_cursor cur = {0};
    st = ht_space_next(space, &cur, &cfg, &found);
    if (!st && !found) st = ht_error(HT_ERR_INVALID, "no config satisfies the constraints on %s", info->id);
  } else if (!st && !ht_space_is_valid(space, &cfg)) {
    st = ht_error(HT_ERR_INVALID, "config %s breaks a constraint on %s", v->config, info->id);
  }
  char *text = st ? NULL : ht_config_text(space, &cfg);
  ht_space_destroy(space);
  if (st) return ht_error_prefix(st, "%s: variant %d (%s): ", c->name, vi, v->spec->name);
  if (!text) return ht_error(HT_ERR_NOMEM, "out of memory");
  if (v->best) {
    v->fixed_config = text;
  } else {
    free(v->config);
    v->config = text;
  }
  snprintf(v->label, sizeof v->label, "%s %s on %s", v->spec->name, v->best ? "best" : *text ? text : "(no parameters)",
           info->id);
  snprintf(v->key, sizeof v->key, "%s/%s/%s", v->spec->source_hash, info->fingerprint, v->best ? "best" : text);
  return HT_OK;
}

/* ---- evaluations ---- */

typedef struct best_row {
  char problem[160];
  char *config;
  double time_s;
} best_row;

typedef struct eval_ctx {
  ht_computation *c;
  int vi;
  best_row *best;
  int n_best, cap_best;
  int oom;
} eval_ctx;

static int problem_sizes(const ht_computation *c, const char *problem, int64_t *sizes) {
  return ht_features_parse_problem(c->spec0, problem, sizes, "store") == HT_OK;
}

static void keep_best(eval_ctx *e, const ht_eval_record *r) {
  for (int i = 0; i < e->n_best; i++)
    if (!strcmp(e->best[i].problem, r->problem)) {
      if (r->result.time_s < e->best[i].time_s) {
        char *cfg = ht_strdup(r->config_key);
        if (!cfg) return (void)(e->oom = 1);
        free(e->best[i].config);
        e->best[i].config = cfg;
        e->best[i].time_s = r->result.time_s;
      }
      return;
    }
  if (e->n_best == e->cap_best) {
    int cap = e->cap_best ? 2 * e->cap_best : 16;
    best_row *b = realloc(e->best, sizeof *b * (size_t)cap);
    if (!b) return (void)(e->oom = 1);
    e->best = b;
    e->cap_best = cap;
  }
  best_row *b = &e->best[e->n_best];
  snprintf(b->problem, sizeof b->problem, "%s", r->problem);
  b->time_s = r->result.time_s;
  if ((b->config = ht_strdup(r->config_key))) e->n_best++;
  else e->oom = 1;
}

static int on_eval(const ht_eval_record *r, void *ctx) {
  eval_ctx *e = ctx;
  ht_computation *c = e->c;
  htd_variant *v = &c->v[e->vi];
  const ht_device_info *info = &ht_exec_device(v->ex)->info;
  if (strcmp(r->source_hash, v->spec->source_hash) || strcmp(r->device_fingerprint, info->fingerprint)) return 0;
  if (!(r->result.time_s > 0)) return 0;
  if (v->best) {
    keep_best(e, r);
    return e->oom;
  }
  int64_t sizes[HTD_MAX_SIZES], rep[HTD_MAX_SIZES];
  if (strcmp(r->config_key, v->config) || !problem_sizes(c, r->problem, sizes)) return 0;
  uint64_t key = htd_bucket(c, sizes, rep);
  htd_history_add(&v->hist, htd_work(v->spec, rep), key, rep, r->result.time_s, c->window, 1); /* + copies later */
  return 0;
}

/* A best variant's history: each tuned size's best time, as for a fixed config. */
static ht_status take_best(eval_ctx *e) {
  ht_computation *c = e->c;
  htd_variant *v = &c->v[e->vi];
  v->tuned = calloc((size_t)e->n_best + 1, sizeof *v->tuned);
  if (!v->tuned) return ht_error(HT_ERR_NOMEM, "out of memory");
  for (int i = 0; i < e->n_best; i++) {
    int64_t sizes[HTD_MAX_SIZES], rep[HTD_MAX_SIZES];
    if (!problem_sizes(c, e->best[i].problem, sizes)) continue;
    uint64_t key = htd_bucket(c, sizes, rep);
    double work = htd_work(v->spec, rep);
    v->tuned[v->n_tuned++] = (htd_tuned){work, e->best[i].config};
    e->best[i].config = NULL;
    htd_history_add(&v->hist, work, key, rep, e->best[i].time_s, c->window, 1); /* + copies later */
  }
  return HT_OK;
}

/* ---- models ---- */

typedef struct model_ctx {
  const htd_variant *v;
  ht_model *model;
  ht_model_reach reach;
  ht_status st;
} model_ctx;

static int on_model(const ht_model_record *r, void *ctx) {
  model_ctx *m = ctx;
  const ht_device_info *info = &ht_exec_device(m->v->ex)->info;
  if ((r->source_hash && *r->source_hash && strcmp(r->source_hash, m->v->spec->source_hash)) ||
      (r->device_id && *r->device_id && strcmp(r->device_id, info->id)))
    return 0;
  m->st = ht_model_load(r->blob, r->blob_len, &m->model);
  if (!m->st && ht_model_reach_parse(r->provenance_json, &m->reach)) { /* the model without its bands */
    ht_log(1, "%s: model '%s': %s", m->v->label, r->name, ht_last_error());
    ht_error_clear();
  }
  return 1; /* the newest that fits */
}

static ht_status load_model(ht_computation *c, int vi) {
  htd_variant *v = &c->v[vi];
  model_ctx m = {.v = v};
  ht_status st = ht_store_each_model(c->st, NULL, v->spec->name, on_model, &m);
  if (!st) st = m.st;
  if (st || !m.model) return st;
  ht_feature_set *fs;
  if ((st = ht_features_create(v->spec, &ht_exec_device(v->ex)->info, &fs))) {
    ht_model_destroy(m.model);
    return st;
  }
  if (ht_features_count(fs) != ht_model_n_features(m.model)) { /* trained on another feature layout */
    ht_log(1, "%s: the stored model of %s has %d features, the kernel %d: not used", c->name, v->label,
           ht_model_n_features(m.model), ht_features_count(fs));
    ht_model_destroy(m.model);
    ht_features_destroy(fs);
    return HT_OK;
  }
  v->model = m.model;
  v->model_fs = fs;
  v->model_reach = m.reach;
  return HT_OK;
}

/* ---- the model's fastest config ---- */

typedef struct argmin_ctx {
  const htd_variant *v;
  ht_space *space;
  const int64_t *sizes;
  double best_t;
  ht_config best;
  int found;
} argmin_ctx;

static int argmin_visit(const ht_config *cfg, void *ctx) {
  argmin_ctx *a = ctx;
  ht_value params[HT_MAX_PARAMS];
  double x[HT_MODEL_MAX_FEATURES];
  ht_config_values(a->space, cfg, params);
  if (ht_features_compute(a->v->model_fs, a->sizes, params, x)) return 0;
  double t = ht_model_predict(a->v->model, x);
  if (!a->found || t < a->best_t) a->best_t = t, a->best = *cfg, a->found = 1;
  return 0;
}

/* A "best" variant nothing was tuned for, with a stored model: the config the model predicts
 * fastest at the bucket's sizes (P3: once per bucket, then remembered). NULL when none. */
const char *htd_model_argmin(ht_computation *c, int vi, const int64_t *rep, uint64_t key) {
  htd_variant *v = &c->v[vi];
  for (int i = 0; i < v->n_argmin; i++)
    if (v->argmin[i].key == key) return v->argmin[i].config;
  argmin_ctx a = {v, NULL, rep, 0, {0}, 0};
  if (ht_spec_build_space(v->spec, &ht_exec_device(v->ex)->info, &a.space)) return NULL;
  int failed = ht_space_enumerate(a.space, argmin_visit, &a) != HT_OK || !a.found;
  char *text = failed ? NULL : ht_config_text(a.space, &a.best);
  ht_space_destroy(a.space);
  htd_argmin_entry *grown = text ? realloc(v->argmin, sizeof *grown * (size_t)(v->n_argmin + 1)) : NULL;
  if (!grown) return free(text), NULL;
  v->argmin = grown;
  v->argmin[v->n_argmin++] = (htd_argmin_entry){key, text};
  return text;
}

/* ---- transfers ---- */

/* A device's copy times, from the store, else measured once now (and stored): needed where a
 * variant's times come from tuning runs or a model, which time the kernel alone. */
static ht_status load_transfers(ht_computation *c, int vi) {
  htd_variant *v = &c->v[vi];
  ht_device *dev = ht_exec_device(v->ex);
  if (ht_device_caps(dev) & HT_CAP_HOST_MEMORY) return HT_OK; /* nothing is copied */
  if (!(v->transfers = calloc(1, sizeof *v->transfers))) return ht_error(HT_ERR_NOMEM, "out of memory");
  int found = 0;
  ht_status st = ht_store_get_transfers(c->st, &dev->info, v->transfers, &found);
  if (st || found) return st;
  ht_log(1, "%s: measuring the copy times of %s once (hetune bandwidth --transfers)", c->name, dev->info.id);
  ht_transfer_options o;
  ht_transfer_options_default(&o);
  o.max_bytes = 64.0 * 1024 * 1024; /* enough to extrapolate from, in seconds not minutes */
  if ((st = ht_transfer_measure(dev, &o, v->transfers))) return ht_error_prefix(st, "%s: copy times: ", dev->info.id);
  if (ht_store_put_transfers(c->st, &dev->info, v->transfers))
    ht_log(1, "%s: the copy times of %s could not be stored: %s", c->name, dev->info.id, ht_last_error());
  return HT_OK;
}

/* Tuning runs timed the kernel alone: each of their points gets the copies a call pays. */
static void add_copies(ht_computation *c, int vi) {
  htd_variant *v = &c->v[vi];
  for (int i = 0; i < v->hist.n; i++) {
    htd_point *p = &v->hist.pts[i];
    if (!p->from_store) continue;
    double t = htd_transfer_s(c, vi, p->rep);
    for (int k = 0; k < p->n; k++) p->samples[k] += t, p->sorted[k] += t;
    p->median += t;
  }
}

static int has_store_points(const htd_variant *v) {
  for (int i = 0; i < v->hist.n; i++)
    if (v->hist.pts[i].from_store) return 1;
  return 0;
}

ht_status htd_tuned_load(ht_computation *c) {
  ht_status st = HT_OK;
  for (int i = 0; i < c->n_variants && !st; i++) {
    eval_ctx e = {c, i, NULL, 0, 0, 0};
    ht_eval_filter f = {c->v[i].spec->name, NULL, NULL, 1};
    st = ht_store_each_eval(c->st, &f, on_eval, &e);
    if (!st && e.oom) st = ht_error(HT_ERR_NOMEM, "out of memory");
    if (!st && c->v[i].best) st = take_best(&e);
    for (int k = 0; k < e.n_best; k++) free(e.best[k].config);
    free(e.best);
    if (!st) st = load_model(c, i);
    if (!st && (has_store_points(&c->v[i]) || c->v[i].model) && !(st = load_transfers(c, i))) add_copies(c, i);
  }
  return st;
}
