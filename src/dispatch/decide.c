/* Deciding and running: the static cache, then the in-memory cache, then the selector over every
 * variant's estimate; exploration of close or unknown variants; the run on the caller's buffers. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch/dispatch_internal.h"
#include "hetune/model.h"

/* ---- estimates ---- */

static double model_kernel_s(ht_computation *c, int vi, const int64_t *sizes) {
  htd_variant *v = &c->v[vi];
  if (!v->model) return NAN;
  const char *config = htd_config_for(c, vi, sizes);
  ht_value params[HT_MAX_PARAMS];
  double x[HT_MODEL_MAX_FEATURES];
  if (ht_features_parse_config(v->spec, config, params, "dispatch") ||
      ht_features_compute(v->model_fs, sizes, params, x))
    return NAN;
  return ht_model_predict(v->model, x);
}

void htd_estimate_variant(ht_computation *c, int vi, const int64_t *sizes, uint64_t bucket, int prefer_model,
                          htd_estimate *out) {
  htd_variant *v = &c->v[vi];
  int exact;
  double lo, hi, work = htd_work(v->spec, sizes);
  double t = htd_history_estimate(&v->hist, work, bucket, &exact, &lo, &hi);
  *out = (htd_estimate){NAN, NAN, NAN, NAN, NAN, HT_SRC_HISTORY, 0, 0};
  if (isfinite(t) && (exact || !prefer_model || !v->model)) {
    double f = exact ? 1 : v->correction;
    const htd_point *p = exact ? htd_history_find(&v->hist, bucket) : NULL;
    *out = (htd_estimate){NAN, NAN, t * f, lo * f, hi * f, exact ? HT_SRC_MEASURED : HT_SRC_HISTORY, 1,
                          p && p->censored};
    return;
  }
  double k = model_kernel_s(c, vi, sizes);
  if (!isfinite(k)) return;
  double tr = htd_transfer_s(c, vi, sizes), f = v->correction;
  *out = (htd_estimate){k, tr, (k + tr) * f, NAN, NAN, HT_SRC_MODEL, 1, 0};
  /* The model's band covers its kernel time (measured / predicted, out of sample), the copies
   * come from their own table. */
  const ht_band *b = ht_model_reach_band(&v->model_reach, htd_problem_work(v->spec, sizes), NULL);
  if (b) out->lo = (k * b->lo + tr) * f, out->hi = (k * b->hi + tr) * f;
}

int htd_choose_fastest(ht_computation *c, const int64_t *sizes, int prefer_model, htd_estimate *est) {
  int64_t rep[HTD_MAX_SIZES];
  uint64_t key = htd_bucket(c, sizes, rep);
  for (int i = 0; i < c->n_variants; i++) htd_estimate_variant(c, i, sizes, key, prefer_model, &est[i]);
  for (int i = 0; i < c->n_variants; i++)
    if (!est[i].calibrated || htd_point_untrusted(htd_history_find(&c->v[i].hist, key))) {
      /* nothing known, or too few calls here: run it until its time is trusted */
      est[i].source = HT_SRC_EXPLORE;
      return i;
    }
  return htd_argmin(est, c->n_variants, NULL);
}

int htd_argmin(const htd_estimate *est, int n, int *runner_up) {
  int best = -1, second = -1;
  for (int i = 0; i < n; i++) {
    if (!est[i].calibrated) continue;
    if (best < 0 || est[i].total_s < est[best].total_s) second = best, best = i;
    else if (second < 0 || est[i].total_s < est[second].total_s) second = i;
  }
  if (runner_up) *runner_up = second;
  return best;
}

/* ---- configs ---- */

const char *htd_config_for(ht_computation *c, int vi, const int64_t *sizes) {
  htd_variant *v = &c->v[vi];
  if (!v->best) return v->config;
  if (!v->n_tuned && v->model) { /* nothing tuned: the model's fastest config at this size */
    int64_t rep[HTD_MAX_SIZES];
    const char *m = htd_model_argmin(c, vi, sizes, htd_bucket(c, sizes, rep));
    if (m) return m;
  }
  /* the tuned best of the nearest size tuned (by work) */
  double work = htd_work(v->spec, sizes), best_d = INFINITY;
  const char *config = v->fixed_config;
  for (int i = 0; i < v->n_tuned; i++) {
    double d = fabs(log(v->tuned[i].work / work));
    if (d < best_d) best_d = d, config = v->tuned[i].config;
  }
  return config;
}

ht_status htd_variant_for(ht_computation *c, int vi, const char *config, ht_variant **out) {
  htd_variant *v = &c->v[vi];
  for (int i = 0; i < v->n_runs; i++)
    if (!strcmp(v->runs[i].config, config)) return *out = v->runs[i].run, HT_OK;
  htd_config_run *runs = realloc(v->runs, sizeof *runs * (size_t)(v->n_runs + 1));
  if (!runs) return ht_error(HT_ERR_NOMEM, "out of memory");
  v->runs = runs;
  ht_status st = ht_variant_create(v->ex, v->spec, config, out);
  if (st) return ht_error_prefix(st, "%s: variant %d (%s): ", c->name, vi, v->label);
  if (!(runs[v->n_runs].config = ht_strdup(config))) {
    ht_variant_destroy(*out);
    return ht_error(HT_ERR_NOMEM, "out of memory");
  }
  runs[v->n_runs++].run = *out;
  return HT_OK;
}

/* ---- deciding ---- */

static int static_find(const ht_computation *c, uint64_t key) {
  int lo = 0, hi = c->n_statics - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if (c->statics[mid].key == key) return mid;
    if (c->statics[mid].key < key) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

static int from_static(const ht_computation *c, uint64_t key, ht_decision *out) {
  int i = c->n_statics ? static_find(c, key) : -1;
  if (i < 0 || c->statics[i].variant < 0 || c->statics[i].variant >= c->n_variants) return 0;
  const ht_static_entry *e = &c->statics[i];
  *out = (ht_decision){.variant = e->variant, .config = e->config, .pred_kernel_s = NAN, .pred_transfer_s = NAN,
                       .pred_total_s = (double)e->time_ns * 1e-9, .band_lo = NAN, .band_hi = NAN,
                       .runner_up = -1, .source = HT_SRC_STATIC};
  return 1;
}

/* Bands overlap, or, without bands, the runner-up is within 10%. A runner-up known only to take at
 * least the winner's time (it lost a race to it) is not close: racing or exploring it again would
 * only repeat what the race showed. */
static int is_close(const htd_estimate *w, const htd_estimate *r) {
  if (r->bound && r->total_s >= w->total_s) return 0;
  if (isfinite(w->hi) && isfinite(r->lo)) return r->lo <= w->hi;
  return r->total_s <= 1.1 * w->total_s;
}

static ht_status full_decision(ht_computation *c, const int64_t *rep, uint64_t key, ht_decision *out) {
  htd_estimate est[HTD_MAX_VARIANTS];
  int w = c->selector->choose(c, rep, est);
  if (w < 0) return HT_ERR_INVALID; /* the selector set the message */
  int second;
  htd_argmin(est, c->n_variants, &second);
  if (second == w) second = -1;
  if (second < 0) /* the runner-up of the others, when the winner was not the argmin */
    for (int i = 0; i < c->n_variants; i++)
      if (i != w && est[i].calibrated && (second < 0 || est[i].total_s < est[second].total_s)) second = i;
  const htd_estimate *e = &est[w];
  *out = (ht_decision){.variant = w, .config = htd_config_for(c, w, rep), .pred_kernel_s = e->kernel_s,
                       .pred_transfer_s = e->transfer_s, .pred_total_s = e->total_s, .band_lo = e->lo,
                       .band_hi = e->hi, .runner_up = second, .source = e->source};
  out->close = second >= 0 && e->calibrated && is_close(e, &est[second]);
  out->runner_up_total_s = second >= 0 ? est[second].total_s : NAN;
  if (e->source == HT_SRC_EXPLORE) return HT_OK; /* tried once, then decided on what it showed */
  return htd_cache_put(&c->cache, key, out);
}

/* 000's "explore the runner-up" with a regret bound: only when the two are close and the runner-up
 * is expected within regret_cap of the winner, with a probability that falls as it is repeated. */
static void maybe_explore(ht_computation *c, ht_decision *d) {
  if (!d->close || d->runner_up < 0 || c->explore <= 0) return;
  if (!(d->runner_up_total_s <= c->regret_cap * d->pred_total_s)) return;
  htd_variant *r = &c->v[d->runner_up];
  double p = c->explore / sqrt(1.0 + r->explored);
  if (ht_rng_uniform(&c->rng) >= p) return;
  r->explored++;
  d->variant = d->runner_up;
  d->pred_total_s = d->runner_up_total_s;
  d->band_lo = d->band_hi = NAN;
  d->source = HT_SRC_EXPLORE;
}

/* A hit is not timed: two clock reads would cost more than the hit itself. */
/* A variant slowed by drift, not run for HTD_REPROBE calls, that at its speed before the drift
 * would be within the regret cap of the winner: run it once to see whether it is still slow. Like
 * every run of a variant not chosen, only while exploration is on (explore > 0): with it off, every
 * call runs the selector's choice (dispatch bench scores that). */
static void maybe_reprobe(ht_computation *c, const int64_t *rep, uint64_t key, ht_decision *d) {
  for (int i = 0; i < c->n_variants; i++) {
    htd_variant *v = &c->v[i];
    if (i == d->variant || !(v->drift_f > c->drift) || c->calls - v->probed_at < v->reprobe_every) continue;
    v->probed_at = c->calls;
    htd_estimate e;
    htd_estimate_variant(c, i, rep, key, 0, &e);
    if (!e.calibrated || !(e.total_s / v->drift_f <= c->regret_cap * d->pred_total_s)) continue;
    d->variant = i;
    d->pred_total_s = e.total_s;
    d->band_lo = d->band_hi = NAN;
    d->source = HT_SRC_EXPLORE;
    return;
  }
}

/* The variants that lost at key to decision d and may be re-probed there (dispatch_internal.h,
 * HTD_REPROBE): returns the first call at which one is due, and sets *due to one due now (-1: none). */
static int64_t loser_due(const ht_computation *c, uint64_t key, const ht_decision *d, int *due) {
  int64_t first = INT64_MAX;
  *due = -1;
  if (c->explore <= 0 || !(d->pred_total_s > 0)) return first;
  for (int i = 0; i < c->n_variants; i++) {
    const htd_point *p = i == d->variant ? NULL : htd_history_find(&c->v[i].hist, key);
    if (!p || p->from_store || p->censored || htd_point_untrusted(p)) continue;
    if (p->reprobing > 0 && p->reprobing < HTD_REPROBE_CALLS) return *due = i, c->calls; /* one under way */
    double slower = fmax(1, p->sorted[0] / d->pred_total_s - 1); /* at its fastest there: a median of */
                                                                   /* slow calls alone would wait forever */
    double every = p->reprobe_every ? p->reprobe_every : HTD_REPROBE;
    double wait = fmin(HTD_REPROBE_CALLS * every * slower, 1e15);
    int64_t at = p->probed_at + (int64_t)ceil(wait);
    if (at <= c->calls && *due < 0) *due = i;
    if (at < first) first = at;
  }
  return first;
}

/* A variant that lost here, due a re-probe, runs instead of the winner for the re-probe's calls;
 * their feedback compares the faster with the winner's time (feedback.c). hit: the cache slot d
 * came from, whose reprobe_at spares a cache hit the search while nothing is due. */
static void maybe_reprobe_loser(ht_computation *c, uint64_t key, htd_slot *hit, ht_decision *d) {
  if (hit && c->calls < hit->reprobe_at) return;
  int i;
  int64_t next = loser_due(c, key, d, &i);
  if (hit) hit->reprobe_at = i < 0 ? next : 0; /* 0: searched again at the next hit */
  if (i < 0) return;
  htd_point *p = htd_history_find(&c->v[i].hist, key);
  if (p->reprobing <= 0 || p->reprobing >= HTD_REPROBE_CALLS) { /* a new re-probe, not the next call of one */
    p->reprobing = HTD_REPROBE_CALLS;
    p->reprobe_bar = d->pred_total_s;
  }
  p->probed_at = c->calls; /* decided but never run (decide without run): not picked at every call */
  d->runner_up = d->variant;
  d->runner_up_total_s = d->pred_total_s;
  d->variant = i;
  d->pred_total_s = p->median;
  d->pred_kernel_s = d->pred_transfer_s = d->band_lo = d->band_hi = NAN;
  d->close = 0;
  d->source = HT_SRC_EXPLORE;
}

/* slot: the cache slot the decision came from, NULL when it did not come from the cache. */
static ht_status decide(ht_computation *c, const int64_t *sizes, ht_decision *out, uint64_t *key_out, int64_t *rep,
                        htd_slot **slot) {
  uint64_t key = htd_bucket(c, sizes, rep);
  *key_out = key;
  ht_status st = HT_OK;
  int is_static = from_static(c, key, out);
  htd_slot *hit = is_static ? NULL : htd_cache_slot(&c->cache, key);
  *slot = hit;
  if (hit) {
    *out = hit->d;
    out->source = HT_SRC_CACHED;
    out->decide_ns = 0;
  } else if (!is_static) {
    int64_t t0 = ht_now_ns();
    st = full_decision(c, rep, key, out);
    out->decide_ns = (double)(ht_now_ns() - t0);
  }
  if (!st && out->source != HT_SRC_EXPLORE) maybe_explore(c, out);
  if (!st && out->source != HT_SRC_EXPLORE && c->n_drifted && c->explore > 0) maybe_reprobe(c, rep, key, out);
  if (!st && out->source != HT_SRC_EXPLORE && !is_static) maybe_reprobe_loser(c, key, hit, out);
  if (!st && out->source == HT_SRC_EXPLORE) out->config = htd_config_for(c, out->variant, rep);
  return st;
}

static ht_status check_call(const ht_computation *c, const int64_t *sizes, ht_decision *out) {
  if (!c || !sizes || !out) return ht_error(HT_ERR_INVALID, "dispatch: bad arguments (computation, sizes, decision)");
  if (!c->finished) return ht_error(HT_ERR_INVALID, "%s: call ht_computation_finish before deciding", c->name);
  for (int i = 0; i < c->spec0->n_sizes; i++)
    if (sizes[i] < 0)
      return ht_error(HT_ERR_INVALID, "%s: size %s = %lld is negative", c->name, c->spec0->size_names[i],
                      (long long)sizes[i]);
  return HT_OK;
}

ht_status ht_computation_decide(ht_computation *c, const int64_t *sizes, ht_decision *out) {
  uint64_t key;
  int64_t rep[HTD_MAX_SIZES];
  htd_slot *slot;
  ht_status st = check_call(c, sizes, out);
  return st ? st : decide(c, sizes, out, &key, rep, &slot);
}

/* ---- running ---- */

static ht_status run_one(ht_computation *c, int vi, const char *config, const int64_t *sizes,
                         const ht_host_arg *args, ht_run_times *t, ht_variant **ran) {
  ht_variant *run;
  ht_status st = htd_variant_for(c, vi, config, &run);
  if (!st) st = ht_variant_run(run, sizes, args, NULL, t);
  if (ran) *ran = run;
  return st ? ht_error_prefix(st, "%s: running variant %d (%s): ", c->name, vi, c->v[vi].label) : HT_OK;
}

/* ---- the same call again ---- */

/* A call at the sizes of the previous one, whose cached decision stands with its calls sampled, is
 * run again without deciding (bucket, cache probe, config lookup, log search: a few hundred
 * instructions of a small call's few thousand) while the cache and the open log entries are
 * unchanged, the decision may not be explored and no re-probe is due. The call due to be fed back
 * (one in the slot's sample_every) is fed back from here, and the repeat goes on while the decision
 * still stands. */
static void arm_repeat(ht_computation *c, htd_slot *slot, const int64_t *sizes, uint64_t key, const int64_t *rep,
                       ht_variant *run, int entry) {
  htd_repeat *r = &c->repeat;
  r->armed = slot && !(slot->d.close && c->explore > 0);
  if (!r->armed) return;
  r->reprobe_at = INT64_MAX; /* the first call at which a re-probe may be due: of a variant drift */
                             /* slowed (maybe_reprobe), or of one that lost here (maybe_reprobe_loser) */
  for (int i = 0; c->n_drifted && c->explore > 0 && i < c->n_variants; i++) {
    int64_t due = c->v[i].probed_at + c->v[i].reprobe_every;
    if (i != slot->d.variant && c->v[i].drift_f > c->drift && due < r->reprobe_at) r->reprobe_at = due;
  }
  int due_now;
  int64_t loser = loser_due(c, key, &slot->d, &due_now);
  if (loser < r->reprobe_at) r->reprobe_at = loser;
  memcpy(r->sizes, sizes, sizeof *sizes * (size_t)c->spec0->n_sizes);
  memcpy(r->rep, rep, sizeof *rep * (size_t)c->spec0->n_sizes);
  r->key = key;
  r->slot = slot;
  r->run = run;
  r->entry = entry;
  r->cache_changes = c->cache.changes;
  r->log_changes = c->log_changes;
}

static int can_repeat(const ht_computation *c, const int64_t *sizes, const ht_host_arg *args) {
  const htd_repeat *r = &c->repeat;
  if (!r->armed || !args || !sizes || r->cache_changes != c->cache.changes || r->log_changes != c->log_changes ||
      c->calls >= r->reprobe_at)
    return 0;
  for (int i = 0; i < c->spec0->n_sizes; i++) /* a loop: memcmp's call costs more than one or two sizes */
    if (sizes[i] != r->sizes[i]) return 0;
  return 1;
}

static ht_status run_repeat(ht_computation *c, const int64_t *sizes, const ht_host_arg *args, ht_decision *out,
                            ht_run_times *times) {
  htd_repeat *r = &c->repeat;
  const ht_decision *d = &r->slot->d;
  ht_run_times t = {0};
  /* a call neither fed back nor asked for its times is not timed: two clock reads or four, on a
   * small call, cost more than dispatch */
  const int fed_back = r->slot->sample_left <= 1;
  ht_status st = ht_variant_run(r->run, sizes, args, NULL, fed_back || times ? &t : NULL);
  if (st) {
    r->armed = 0;
    return ht_error_prefix(st, "%s: running variant %d (%s): ", c->name, d->variant, c->v[d->variant].label);
  }
  c->calls++;
  c->v[d->variant].probed_at = c->calls;
  r->slot->sample_left--;
  if (times) *times = t;
  if (out) *out = *d, out->source = HT_SRC_CACHED, out->decide_ns = 0;
  if (!fed_back) { /* counted in the log, nothing more: no copy of the decision either */
    if (r->entry >= 0) c->log[r->entry].skipped++;
    return HT_OK;
  }
  ht_decision cached = *d;
  cached.source = HT_SRC_CACHED;
  cached.decide_ns = 0;
  htd_feedback_at(c, cached.variant, sizes, r->key, r->rep, &cached, &t); /* the one call in sample_every */
  r->armed = r->cache_changes == c->cache.changes && r->log_changes == c->log_changes && r->slot->sample_every > 1;
  return HT_OK;
}

/* A call that decides (not a repeat): kept out of line so that a repeat does not pay for its frame. */
static __attribute__((noinline)) ht_status run_decided(ht_computation *c, const int64_t *sizes,
                                                       const ht_host_arg *args, ht_decision *out, ht_run_times *times) {
  ht_decision d;
  uint64_t key;
  int64_t rep[HTD_MAX_SIZES];
  htd_slot *slot = NULL;
  ht_variant *ran = NULL;
  if (c) c->repeat.armed = 0;
  ht_status st = check_call(c, sizes, &d);
  if (!st && !args) st = ht_error(HT_ERR_INVALID, "%s: no arguments", c->name);
  if (!st) st = decide(c, sizes, &d, &key, rep, &slot);
  ht_run_times t;
  if (!st) st = run_one(c, d.variant, d.config, sizes, args, &t, &ran);
  if (st) return st;
  c->calls++;
  c->v[d.variant].probed_at = c->calls;
  int entry;
  uint32_t changes = c->cache.changes;
  if (htd_feedback_skip(c, slot, sizes, &d, &entry)) {
    arm_repeat(c, slot, sizes, key, rep, ran, entry);
  } else {
    htd_feedback_at(c, d.variant, sizes, key, rep, &d, &t);
    /* the decision stood and its calls are now sampled: the next ones may repeat it */
    if (slot && c->cache.changes == changes && d.source == HT_SRC_CACHED && slot->d.variant == d.variant &&
        slot->sample_every > 1 && htd_log_entry_of(c, sizes, &d, &entry))
      arm_repeat(c, slot, sizes, key, rep, ran, entry);
  }
  if (out) *out = d;
  if (times) *times = t;
  return HT_OK;
}

ht_status ht_computation_run(ht_computation *c, const int64_t *sizes, const ht_host_arg *args, ht_decision *out,
                             ht_run_times *times) {
  if (c && can_repeat(c, sizes, args)) return run_repeat(c, sizes, args, out, times);
  return run_decided(c, sizes, args, out, times);
}

ht_status ht_computation_run_variant(ht_computation *c, int variant, const int64_t *sizes, const ht_host_arg *args,
                                     ht_run_times *times) {
  ht_decision unused;
  ht_status st = check_call(c, sizes, &unused);
  if (!st && (variant < 0 || variant >= c->n_variants))
    st = ht_error(HT_ERR_INVALID, "%s: no variant %d (it has %d)", c->name, variant, c->n_variants);
  if (!st && !args) st = ht_error(HT_ERR_INVALID, "%s: no arguments", c->name);
  int64_t rep[HTD_MAX_SIZES];
  if (!st) htd_bucket(c, sizes, rep);
  ht_run_times t;
  if (!st) st = run_one(c, variant, htd_config_for(c, variant, rep), sizes, args, &t, NULL);
  if (st) return st;
  c->calls++;
  htd_feedback(c, variant, sizes, NULL, &t);
  if (times) *times = t;
  return HT_OK;
}

ht_status ht_computation_set_static_cache(ht_computation *c, const ht_static_entry *entries, int n) {
  if (!c || (n && !entries) || n < 0) return ht_error(HT_ERR_INVALID, "ht_computation_set_static_cache: bad arguments");
  for (int i = 1; i < n; i++)
    if (entries[i].key <= entries[i - 1].key)
      return ht_error(HT_ERR_INVALID, "%s: static cache entry %d is out of order (keys must increase)", c->name, i);
  for (int i = 0; i < n; i++)
    if (entries[i].variant < 0 || entries[i].variant >= c->n_variants || !entries[i].config)
      return ht_error(HT_ERR_INVALID, "%s: static cache entry %d names variant %d; the computation has %d", c->name, i,
                      entries[i].variant, c->n_variants);
  c->statics = entries;
  c->n_statics = n;
  c->repeat.armed = 0;
  return HT_OK;
}

/* ---- explaining ---- */

static void recent_samples(const htd_point *p, int window, ht_variant_estimate *e) {
  int n = p->n < 8 ? p->n : 8;
  for (int i = 0; i < n; i++) e->recent[i] = p->samples[((p->next - n + i) % window + window) % window];
  e->n_recent = n;
}

ht_status ht_computation_estimate(ht_computation *c, const int64_t *sizes, ht_variant_estimate *out) {
  ht_decision unused;
  ht_status st = check_call(c, sizes, &unused);
  if (st || !out) return st ? st : ht_error(HT_ERR_INVALID, "ht_computation_estimate: out is NULL");
  int64_t rep[HTD_MAX_SIZES];
  uint64_t key = htd_bucket(c, sizes, rep);
  int prefer_model = !strcmp(c->selector->name, "model");
  for (int i = 0; i < c->n_variants; i++) {
    const htd_variant *v = &c->v[i];
    htd_estimate e;
    htd_estimate_variant(c, i, rep, key, prefer_model, &e);
    out[i] = (ht_variant_estimate){.config = htd_config_for(c, i, rep), .kernel_s = e.kernel_s,
                                   .transfer_s = e.transfer_s, .total_s = e.total_s, .band_lo = e.lo,
                                   .band_hi = e.hi, .source = e.calibrated ? e.source : HT_SRC_EXPLORE,
                                   .correction = v->correction, .n_sizes_measured = v->hist.n,
                                   .has_model = v->model != NULL};
    const htd_point *p = htd_history_find(&v->hist, key);
    if (p) recent_samples(p, c->window, &out[i]);
  }
  return HT_OK;
}
