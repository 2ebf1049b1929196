/* Learning from every call: measured times join the variant's history (measured pairs win over
 * predictions), predictions that keep missing are corrected by the median ratio, a device whose
 * speed changed (drift) has its whole history rescaled and the cached decisions dropped, and every
 * call is logged in the store, in batches, for the programs that come after. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch/dispatch_internal.h"
#include "hetune/model.h"

enum { LOG_BATCH = 256, DRIFT_CALLS = 5, DRIFT_OUTSIDE = 3 };

/* ---- drift and bias ---- */

static void push_ratio(htd_variant *v, double r) {
  v->ratio[v->next_ratio] = r;
  v->next_ratio = (v->next_ratio + 1) % DRIFT_CALLS;
  if (v->n_ratio < DRIFT_CALLS) v->n_ratio++;
}

/* The factor the device's speed changed by, when DRIFT_OUTSIDE of the last DRIFT_CALLS ratios fall
 * beyond the drift factor on the same side; 0 otherwise. */
static double drift_factor(const ht_computation *c, const htd_variant *v) {
  double up[DRIFT_CALLS], down[DRIFT_CALLS];
  int n_up = 0, n_down = 0;
  for (int i = 0; i < v->n_ratio; i++) {
    if (v->ratio[i] > c->drift) up[n_up++] = v->ratio[i];
    if (v->ratio[i] < 1 / c->drift) down[n_down++] = v->ratio[i];
  }
  if (n_up >= DRIFT_OUTSIDE) return ht_stat_median(up, n_up);
  if (n_down >= DRIFT_OUTSIDE) return ht_stat_median(down, n_down);
  return 0;
}

/* Keeps the newest k samples of p beyond the drift factor of expected on f's side: those that
 * show the device's new speed. Keeping the newest whatever their side left times of the old speed
 * beside a rescaled history; the next calls then matched them, a passing stall never drifted back,
 * and the scale of the variant's other sizes stayed wrong. */
static void keep_beyond(const ht_computation *c, htd_point *p, double expected, double f, int k) {
  double keep[HTD_WINDOW_MAX];
  int n = 0, window = c->window;
  for (int i = 0; i < p->n && n < k; i++) { /* newest first */
    double s = p->samples[((p->next - 1 - i) % window + window) % window];
    if (f > 1 ? s > c->drift * expected : s < expected / c->drift) keep[n++] = s;
  }
  if (!n) keep[n++] = p->samples[((p->next - 1) % window + window) % window];
  for (int i = 0; i < n; i++) p->samples[i] = keep[n - 1 - i];
  p->n = n;
  p->next = n % window;
  htd_point_resort(p);
}

static void rescale(ht_computation *c, htd_variant *v, double f) {
  htd_history_scale(&v->hist, f);
  v->n_ratio = v->next_ratio = 0;
  int was_slowed = v->drift_f > c->drift;
  v->drift_f *= f;
  c->n_drifted += (v->drift_f > c->drift) - was_slowed;
}

/* The variant's speed changed by f against what expected said: its whole history is rescaled,
 * but for the samples of now that already show the new speed (at most keep of them), and so are
 * the histories of the other variants on its device. A device that slows down (a busier machine,
 * a throttled clock) slows every kernel on it; rescaling only the variant that happened to run
 * moved the choice to another variant of the same device, just as slowed but not yet run. */
static void on_drift(ht_computation *c, htd_variant *v, htd_point *now, double f, int keep, double expected) {
  double saved[HTD_WINDOW_MAX];
  int n_saved = now ? now->n : 0;
  if (now) memcpy(saved, now->samples, sizeof saved[0] * (size_t)n_saved);
  rescale(c, v, f);
  if (now) {
    memcpy(now->samples, saved, sizeof saved[0] * (size_t)n_saved);
    keep_beyond(c, now, expected, f, keep);
  }
  v->correction = 1;
  for (int i = 0; i < c->n_variants; i++)
    if (&c->v[i] != v && c->v[i].ex == v->ex) rescale(c, &c->v[i], f);
  htd_cache_clear(&c->cache);
  ht_log(2, "%s: %s changed speed by %.2fx: history rescaled, decisions dropped", c->name, v->label, f);
}

/* ---- the log ---- */

void htd_log_init(ht_computation *c) {
  for (int k = 0; k < HTD_OPEN_GROUPS; k++) c->open[k].entry = -1;
}

/* The entry's times: those of its median call (by total), so that the three add up. */
static void close_group(ht_computation *c, htd_log_group *g) {
  if (g->entry < 0) return;
  c->log_changes++;
  htd_log_entry *e = &c->log[g->entry];
  double total[HTD_LOG_GROUP], sorted[HTD_LOG_GROUP];
  for (int i = 0; i < e->calls; i++) sorted[i] = total[i] = g->t[0][i] + g->t[1][i] + g->t[2][i];
  double m = ht_stat_median(sorted, e->calls);
  int at = 0;
  for (int i = 1; i < e->calls; i++)
    if (fabs(total[i] - m) < fabs(total[at] - m)) at = i;
  e->kernel_s = g->t[0][at];
  e->h2d_s = g->t[1][at];
  e->d2h_s = g->t[2][at];
  g->entry = -1;
}

static void close_groups(ht_computation *c) {
  for (int k = 0; k < HTD_OPEN_GROUPS; k++) close_group(c, &c->open[k]);
}

/* The open entry of calls alike (variant, sizes, decision source, config, censored), or NULL. */
static htd_log_group *open_group(ht_computation *c, int vi, const int64_t *sizes, char source, const char *config,
                                 int censored) {
  for (int k = 0; k < HTD_OPEN_GROUPS; k++) {
    htd_log_group *g = &c->open[k];
    const htd_log_entry *e = g->entry >= 0 ? &c->log[g->entry] : NULL;
    if (e && e->variant == vi && e->source == source && e->config == config && e->censored == censored &&
        !memcmp(e->sizes, sizes, sizeof *sizes * (size_t)c->spec0->n_sizes))
      return g;
  }
  return NULL;
}

/* A new entry and its group: a free slot, else the oldest entry's (closed first). */
static htd_log_group *new_group(ht_computation *c) {
  if (c->n_log >= LOG_BATCH && ht_computation_flush(c)) ht_log(1, "%s: logging calls: %s", c->name, ht_last_error());
  if (c->n_log == c->cap_log) {
    int cap = c->cap_log ? 2 * c->cap_log : 64;
    htd_log_entry *l = realloc(c->log, sizeof *l * (size_t)cap);
    if (!l) return NULL; /* the call ran; only its log line is lost */
    c->log = l;
    c->cap_log = cap;
  }
  htd_log_group *g = &c->open[0];
  for (int k = 0; k < HTD_OPEN_GROUPS && g->entry >= 0; k++)
    if (c->open[k].entry < g->entry) g = &c->open[k];
  close_group(c, g);
  g->entry = c->n_log++;
  return g;
}

static void log_call(ht_computation *c, int vi, const int64_t *sizes, const ht_decision *d, const char *config,
                     const ht_run_times *t, int censored) {
  if (!c->st) return;
  char source = d ? (char)d->source : (char)HT_SRC_EXPLORE;
  htd_log_group *g = open_group(c, vi, sizes, source, config, censored);
  if (!g) {
    if (!(g = new_group(c))) return;
    htd_log_entry *e = &c->log[g->entry];
    e->variant = vi;
    e->censored = censored;
    e->calls = 0;
    e->skipped = 0;
    e->source = source;
    memcpy(e->sizes, sizes, sizeof *sizes * (size_t)c->spec0->n_sizes);
    e->pred_total_s = d ? d->pred_total_s : NAN;
    e->when = ht_wall_time();
    e->config = config;
  }
  htd_log_entry *e = &c->log[g->entry];
  g->t[0][e->calls] = t->kernel_s;
  g->t[1][e->calls] = t->h2d_s;
  g->t[2][e->calls] = t->d2h_s;
  if (++e->calls == HTD_LOG_GROUP) close_group(c, g); /* full: the next call alike starts another */
}

static void sizes_text(const ht_spec *s, const int64_t *sizes, char *buf, size_t len) {
  size_t at = 0;
  buf[0] = 0;
  for (int i = 0; i < s->n_sizes && at < len; i++)
    at += (size_t)snprintf(buf + at, len - at, "%s%s=%lld", i ? "," : "", s->size_names[i], (long long)sizes[i]);
}

ht_status ht_computation_flush(ht_computation *c) {
  if (!c) return ht_error(HT_ERR_INVALID, "ht_computation_flush: no computation");
  if (!c->st || !c->n_log) return HT_OK;
  close_groups(c);
  c->log_changes++;
  ht_dispatch_record *recs = calloc((size_t)c->n_log, sizeof *recs);
  char (*sizes)[160] = calloc((size_t)c->n_log, sizeof *sizes);
  ht_status st = recs && sizes ? HT_OK : ht_error(HT_ERR_NOMEM, "out of memory");
  for (int i = 0; !st && i < c->n_log; i++) {
    const htd_log_entry *e = &c->log[i];
    const htd_variant *v = &c->v[e->variant];
    sizes_text(c->spec0, e->sizes, sizes[i], sizeof sizes[i]);
    recs[i] = (ht_dispatch_record){c->name, v->label, v->key, e->config, sizes[i],
                                   ht_decision_source_name((ht_decision_source)e->source), e->pred_total_s,
                                   e->calls + e->skipped, e->kernel_s, e->h2d_s, e->d2h_s, e->when, e->censored};
  }
  if (!st) st = ht_store_put_dispatch_log(c->st, recs, c->n_log);
  if (!st) c->n_log = 0;
  free(recs);
  free(sizes);
  return st;
}

/* ---- feedback ---- */

/* Where a standing cached decision's winner has a full window at its bucket and a short median,
 * only one of its calls in `every` is fed back (dispatch_internal.h, HTD_SAMPLE_MAX). */
static void set_sampling(const ht_computation *c, htd_slot *s, const htd_point *p) {
  int every = 1;
  if (p->n >= c->window && !p->censored && p->median > 0 && p->median < c->sample_below_s)
    every = (int)fmin(ceil(c->sample_below_s / p->median), HTD_SAMPLE_MAX);
  s->sample_every = every;
  if (s->sample_left <= 0 || s->sample_left > every) s->sample_left = every;
}

int htd_log_entry_of(ht_computation *c, const int64_t *sizes, const ht_decision *d, int *entry) {
  *entry = -1;
  if (!c->st) return 1;
  htd_log_group *g = open_group(c, d->variant, sizes, (char)HT_SRC_CACHED, d->config, 0);
  if (g) *entry = g->entry;
  return g != NULL;
}

int htd_feedback_skip(ht_computation *c, htd_slot *s, const int64_t *sizes, const ht_decision *d, int *entry) {
  *entry = -1;
  if (d->source != HT_SRC_CACHED || !s || s->d.variant != d->variant || s->sample_every <= 1) return 0;
  if (--s->sample_left <= 0) return 0; /* this one is fed back; set_sampling starts the count again */
  /* counted in the open log entry of the same calls; where there is none, fed back (and logged) */
  if (!htd_log_entry_of(c, sizes, d, entry)) return 0;
  if (*entry >= 0) c->log[*entry].skipped++;
  return 1;
}

void htd_feedback(ht_computation *c, int vi, const int64_t *sizes, const ht_decision *d, const ht_run_times *t) {
  int64_t rep[HTD_MAX_SIZES];
  uint64_t key = htd_bucket(c, sizes, rep);
  htd_feedback_at(c, vi, sizes, key, rep, d, t);
}

/* A call of a re-probe (decide.c, maybe_reprobe_loser): HTD_REPROBE_CALLS calls in a row, judged
 * by the fastest, since the first may pay for waking what the variant needs (a thread pool asleep,
 * a clock gone down) after the calls it did not run. Faster than the winner's time, the variant's
 * calls at this size start anew from that time and the decision there is made again (it runs until
 * its time is trusted, then the faster wins); slower or not, the next re-probe waits twice as long,
 * so a variant whose lucky calls keep beating the winner costs fewer and fewer calls. Its calls are
 * no yardstick for drift or bias: the winner's decision stands unless the probe beat it. */
static void reprobe_answer(ht_computation *c, const htd_variant *v, htd_point *p, uint64_t key, double total) {
  p->reprobe_best = p->reprobing == HTD_REPROBE_CALLS ? total : fmin(p->reprobe_best, total);
  if (--p->reprobing > 0) return;
  int every = p->reprobe_every ? p->reprobe_every : HTD_REPROBE;
  p->reprobe_every = every < HTD_REPROBE_MAX ? 2 * every : HTD_REPROBE_MAX;
  if (!(p->reprobe_best < p->reprobe_bar)) return;
  htd_point_restart(p, p->reprobe_best, c->window);
  htd_cache_drop(&c->cache, key);
  ht_log(2, "%s: a re-probe of %s took %.3g s against the winner's %.3g s: measured again", c->name, v->label,
         p->reprobe_best, p->reprobe_bar);
}

void htd_feedback_at(ht_computation *c, int vi, const int64_t *sizes, uint64_t key, const int64_t *rep,
                     const ht_decision *d, const ht_run_times *t) {
  htd_variant *v = &c->v[vi];
  double total = t->kernel_s + t->h2d_s + t->d2h_s;
  const char *config = d ? d->config : htd_config_for(c, vi, rep);
  log_call(c, vi, sizes, d, config, t, 0);
  htd_point *before = htd_history_find(&v->hist, key);
  int was_measured = before && !before->from_store && !before->censored;
  double expected = was_measured ? (htd_point_untrusted(before) ? NAN : before->median)
                                  : d && d->variant == vi ? d->pred_total_s : NAN;
  htd_point *p = before;
  if (was_measured && total > 0 && isfinite(total)) htd_point_add(p, total, c->window); /* the common case */
  else p = htd_history_add(&v->hist, htd_work(v->spec, rep), key, rep, total, c->window, 0);
  if (!p) return;
  p->probed_at = c->calls;
  if (p->reprobing > 0 && p->reprobing <= HTD_REPROBE_CALLS && was_measured) {
    reprobe_answer(c, v, p, key, total);
    return;
  }
  if (isfinite(expected) && expected > 0) {
    /* A re-probe that finds a slowed variant fast again undoes the drift at once. */
    if (d && d->source == HT_SRC_EXPLORE && v->drift_f > c->drift) {
      int fast = total / expected < 1 / c->drift;
      v->reprobe_every = fast ? HTD_REPROBE : v->reprobe_every < HTD_REPROBE_MAX ? 2 * v->reprobe_every : HTD_REPROBE_MAX;
      if (fast) return on_drift(c, v, p, total / expected, 1, expected);
    }
    push_ratio(v, total / expected);
    double f = drift_factor(c, v);
    if (f > 0) return on_drift(c, v, p, f, DRIFT_OUTSIDE, expected);
    if (!was_measured && v->n_ratio >= 3) { /* bias of what was predicted, not measured */
      double tmp[DRIFT_CALLS];
      memcpy(tmp, v->ratio, sizeof tmp[0] * (size_t)v->n_ratio);
      v->correction = ht_stat_median(tmp, v->n_ratio);
    }
  }
  /* A decision made on a prediction is made again on the measurement; one made on a measurement
   * stands while the winner's time stays within the drift factor of what it expected. */
  htd_slot *slot = htd_cache_slot(&c->cache, key);
  const ht_decision *cached = slot ? &slot->d : NULL;
  if (cached && (cached->source != HT_SRC_MEASURED || cached->variant != vi ||
                 !(p->median <= c->drift * cached->pred_total_s && p->median * c->drift >= cached->pred_total_s) ||
                 (cached->runner_up >= 0 && p->median > cached->runner_up_total_s)))
    htd_cache_drop(&c->cache, key);
  else if (slot)
    set_sampling(c, slot, p); /* the decision stands: its calls may be sampled */
}

/* ---- censored times: lower bounds ---- */

/* Raises the bucket's estimate to at least bound; a bucket without times gets the bound as one. */
static void raise_bound(ht_computation *c, htd_variant *v, uint64_t key, const int64_t *rep, double bound) {
  htd_point *p = htd_history_find(&v->hist, key);
  if (p) {
    htd_point_raise(p, bound);
  } else if ((p = htd_history_add(&v->hist, htd_work(v->spec, rep), key, rep, bound, c->window, 0))) {
    p->censored = 1;
  }
}

void htd_feedback_censored(ht_computation *c, int vi, const int64_t *sizes, const ht_run_times *t) {
  int64_t rep[HTD_MAX_SIZES];
  uint64_t key = htd_bucket(c, sizes, rep);
  double bound = t->kernel_s + t->h2d_s + t->d2h_s;
  if (!(bound > 0) || !isfinite(bound)) return;
  log_call(c, vi, sizes, NULL, htd_config_for(c, vi, rep), t, 1);
  raise_bound(c, &c->v[vi], key, rep, bound);
  htd_cache_drop(&c->cache, key); /* decided on a time that is now known too low */
}

ht_status ht_computation_record(ht_computation *c, int variant, const int64_t *sizes, const ht_run_times *t,
                                int censored) {
  if (!c || !sizes || !t) return ht_error(HT_ERR_INVALID, "ht_computation_record: bad arguments");
  if (!c->finished) return ht_error(HT_ERR_INVALID, "%s: call ht_computation_finish before recording", c->name);
  if (variant < 0 || variant >= c->n_variants)
    return ht_error(HT_ERR_INVALID, "%s: no variant %d (it has %d)", c->name, variant, c->n_variants);
  double total = t->kernel_s + t->h2d_s + t->d2h_s;
  if (!(total > 0) || !isfinite(total) || t->kernel_s < 0 || t->h2d_s < 0 || t->d2h_s < 0)
    return ht_error(HT_ERR_INVALID, "%s: variant %d: time %g s (kernel %g, in %g, out %g) is not a positive number",
                    c->name, variant, total, t->kernel_s, t->h2d_s, t->d2h_s);
  c->calls++; /* a call the application ran: re-probes are timed in calls, whoever ran them */
  if (censored) htd_feedback_censored(c, variant, sizes, t);
  else htd_feedback(c, variant, sizes, NULL, t);
  return HT_OK;
}

/* ---- history from the store ---- */

typedef struct load_ctx {
  ht_computation *c;
  ht_status st;
} load_ctx;

static int from_log(const ht_dispatch_record *r, void *ctx) {
  load_ctx *l = ctx;
  ht_computation *c = l->c;
  for (int i = 0; i < c->n_variants; i++) {
    htd_variant *v = &c->v[i];
    if (strcmp(v->key, r->variant_key)) continue;
    int64_t sizes[HTD_MAX_SIZES], rep[HTD_MAX_SIZES];
    if (ht_features_parse_problem(c->spec0, r->sizes, sizes, "dispatch log")) return 0; /* another shape */
    uint64_t key = htd_bucket(c, sizes, rep);
    double t = r->kernel_s + r->h2d_s + r->d2h_s;
    if (r->censored) raise_bound(c, v, key, rep, t);
    else /* a row of several calls counts as that many, up to the calls a time needs to be trusted */
      for (int64_t k = 0; k < r->calls && k < HTD_TRUSTED_CALLS; k++)
        htd_history_add(&v->hist, htd_work(v->spec, rep), key, rep, t, c->window, 0);
  }
  return 0;
}

ht_status htd_history_load(ht_computation *c) {
  if (!c->st) return HT_OK;
  load_ctx l = {c, HT_OK};
  ht_status st = htd_tuned_load(c);
  if (!st) st = ht_store_each_dispatch_log(c->st, c->name, 20000, from_log, &l);
  return st ? ht_error_prefix(st, "%s: reading its history: ", c->name) : l.st;
}
