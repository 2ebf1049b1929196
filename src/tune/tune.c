/* The tuning loop: strategy asks, runner measures (or the store already knows), store records,
 * strategy is told. Stops on budget (evaluations or seconds), exhaustion or a stop request. Then,
 * if asked, the fastest configs are measured again in fresh worker processes and the best is the
 * one with the lowest median: on a noisy device the fastest single measurement is often luck. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetune/tune.h"

void ht_tune_options_default(ht_tune_options *o) {
  memset(o, 0, sizeof *o);
  o->strategy = "auto";
  o->seed = 1;
  o->confirm_runs = 2;
}

typedef struct measured_config {
  ht_config cfg;
  double time_s;
} measured_config;

typedef struct tune_ctx {
  const ht_spec *spec;
  ht_space *space;
  ht_store *store;
  ht_runner *runner;
  const ht_tune_options *opt;
  ht_eval_key key;
  int64_t session_id;
  ht_tune_progress progress;
  ht_tune_summary *sum;
  double t0;
  char *config_key;      /* the config in hand, formatted once (whole: it keys the store) */
  ht_result result;      /* its result */
  measured_config *ok;   /* this session's successful configs, for the confirmation */
  int n_ok, cap_ok;
} tune_ctx;

static ht_status register_run(tune_ctx *c) {
  const ht_spec *s = c->spec;
  const ht_device_info *dev = c->opt->store_device ? c->opt->store_device : ht_runner_device(c->runner);
  ht_status st = ht_store_put_device(c->store, dev, &c->key.device_id);
  char *space_json = st ? NULL : ht_spec_space_json(s);
  if (!st) st = ht_store_put_kernel(c->store, s->name, ht_language_name(s->kernel.lang), s->source_hash, s->path,
                                    space_json ? space_json : "{}", &c->key.kernel_id);
  free(space_json);
  ht_spec_problem_key(s, c->sum->problem, sizeof c->sum->problem);
  if (!st) st = ht_store_put_problem(c->store, c->key.kernel_id, c->sum->problem, &c->key.problem_id);
  ht_session_info si = {c->key.kernel_id,       c->key.device_id,          c->key.problem_id, c->opt->strategy,
                        c->opt->seed,           c->opt->budget_evals,      c->opt->budget_seconds,
                        c->opt->strategy_options};
  if (!st) st = ht_store_session_begin(c->store, &si, &c->session_id);
  return st;
}

/* Measures cfg, or (reuse) takes it from the store when it was measured before. */
static ht_status evaluate(tune_ctx *c, const ht_config *cfg, int reuse, ht_result *res, int *reused) {
  free(c->config_key);
  c->config_key = ht_config_text(c->space, cfg);
  if (!c->config_key) return ht_error(HT_ERR_NOMEM, "out of memory");
  char *json = ht_spec_config_json(c->spec, c->space, cfg);
  c->key.config_key = c->config_key;
  c->key.config_json = json ? json : "{}";
  int found = 0;
  ht_status st = reuse ? ht_store_get_eval(c->store, &c->key, res, &found) : HT_OK;
  *reused = found;
  if (!st && !found) {
    st = ht_runner_evaluate(c->runner, cfg, res);
    if (!st) st = ht_store_put_eval(c->store, c->session_id, &c->key, res, NULL);
  }
  free(json);
  return st;
}

static void account(tune_ctx *c, const ht_result *res, int reused) {
  ht_tune_progress *p = &c->progress;
  ht_tune_summary *sum = c->sum;
  p->done++;
  if (reused) p->reused++;
  else p->measured++;
  if (res->status != HT_EVAL_OK) p->failures++;
  else if (!sum->found || res->time_s < sum->best.time_s) {
    sum->found = 1;
    sum->best = *res;
    snprintf(sum->best_config, sizeof sum->best_config, "%s", c->config_key);
    p->best_time_s = res->time_s;
    p->best_config = sum->best_config;
  }
  p->last = res;
  p->last_config = c->config_key;
  p->last_reused = reused;
  p->elapsed_s = ht_now() - c->t0;
  if (c->opt->progress) c->opt->progress(p, c->opt->progress_ctx);
}

static int out_of_budget(const tune_ctx *c) {
  const ht_tune_options *o = c->opt;
  if (o->stop && *o->stop) return 1;
  if (o->budget_evals > 0 && c->progress.done >= o->budget_evals) return 1;
  return o->budget_seconds > 0 && ht_now() - c->t0 >= o->budget_seconds;
}

static ht_status remember_ok(tune_ctx *c, const ht_config *cfg, const ht_result *res) {
  if (res->status != HT_EVAL_OK || !c->opt->confirm) return HT_OK;
  if (c->n_ok == c->cap_ok) {
    int cap = c->cap_ok ? 2 * c->cap_ok : 64;
    measured_config *m = realloc(c->ok, (size_t)cap * sizeof *m);
    if (!m) return ht_error(HT_ERR_NOMEM, "out of memory");
    c->ok = m;
    c->cap_ok = cap;
  }
  c->ok[c->n_ok++] = (measured_config){*cfg, res->time_s};
  return HT_OK;
}

static ht_status loop(tune_ctx *c, const ht_strategy_ops *ops, void *state) {
  ht_config cfg;
  while (!out_of_budget(c) && ops->ask(state, &cfg, 1) == 1) {
    int reused = 0;
    ht_status st = evaluate(c, &cfg, !c->opt->no_reuse, &c->result, &reused);
    if (!st) st = remember_ok(c, &cfg, &c->result);
    if (st) return st;
    ops->tell(state, &cfg, &c->result);
    account(c, &c->result, reused);
  }
  return HT_OK;
}

/* ---- confirmation ---- */

static int cmp_measured(const void *a, const void *b) {
  double x = ((const measured_config *)a)->time_s, y = ((const measured_config *)b)->time_s;
  return (x > y) - (x < y);
}

static int cmp_time(const void *a, const void *b) {
  double x = ((const ht_result *)a)->time_s, y = ((const ht_result *)b)->time_s;
  return (x > y) - (x < y);
}

/* The median of a candidate's n measurements (sorted in place by time); NAN if any failed: a
 * config that fails when measured again is no one's best. *near: the measurement at the median. */
static double candidate_median(ht_result *m, int n, const ht_result **near) {
  for (int i = 0; i < n; i++)
    if (m[i].status != HT_EVAL_OK) return NAN;
  qsort(m, (size_t)n, sizeof *m, cmp_time);
  *near = &m[n / 2];
  return n % 2 ? m[n / 2].time_s : 0.5 * (m[n / 2 - 1].time_s + m[n / 2].time_s);
}

static void report_confirm(tune_ctx *c, const ht_result *res, int64_t total) {
  ht_tune_progress *p = &c->progress;
  p->confirm_done = ++c->sum->confirmed;
  p->confirm_total = total;
  p->last = res;
  p->last_config = c->config_key;
  p->last_reused = 0;
  p->elapsed_s = ht_now() - c->t0;
  if (c->opt->progress) c->opt->progress(p, c->opt->progress_ctx);
}

/* Measures the k fastest configs of the session r more times, round by round, each round in a
 * fresh worker process, and makes the one with the lowest median (search measurement included)
 * the session's best. */
static ht_status confirm(tune_ctx *c) {
  qsort(c->ok, (size_t)c->n_ok, sizeof *c->ok, cmp_measured);
  int k = c->opt->confirm < c->n_ok ? c->opt->confirm : c->n_ok, per = 1 + c->opt->confirm_runs;
  ht_result *m = malloc((size_t)k * per * sizeof *m);
  if (!m) return ht_error(HT_ERR_NOMEM, "out of memory");
  ht_status st = HT_OK;
  int done = 1;
  for (int i = 0; i < k && !st; i++) { /* the search's measurement: the store has it */
    int found = 0;
    st = evaluate(c, &c->ok[i].cfg, 1, &m[(size_t)i * per], &found);
  }
  for (; done < per && !st && !(c->opt->stop && *c->opt->stop); done++) {
    ht_runner_new_worker(c->runner);
    for (int i = 0; i < k && !st; i++) {
      int reused;
      st = evaluate(c, &c->ok[i].cfg, 0, &m[(size_t)i * per + done], &reused);
      if (!st) report_confirm(c, &m[(size_t)i * per + done], (int64_t)k * (per - 1));
    }
  }
  double best = INFINITY; /* when no candidate holds up, the search's best stays as measured */
  for (int i = 0; i < k && !st; i++) {
    const ht_result *near = NULL;
    double med = candidate_median(&m[(size_t)i * per], done, &near);
    if (!(med < best)) continue;
    best = med;
    c->sum->best = *near;
    c->sum->best.time_s = med;
    c->sum->best_measurements = done;
    ht_config_format(c->space, &c->ok[i].cfg, c->sum->best_config, sizeof c->sum->best_config);
  }
  free(m);
  return st;
}

static ht_status run_strategy(tune_ctx *c) {
  const ht_strategy_ops *ops = ht_strategy_find(c->opt->strategy);
  if (!ops) {
    ht_buf names = {0};
    for (int i = 0; i < ht_strategy_count(); i++) ht_buf_appendf(&names, "%s%s", i ? ", " : "", ht_strategy_at(i)->name);
    ht_status st = ht_error(HT_ERR_NOTFOUND, "unknown strategy '%s' (available: %s)", c->opt->strategy, names.data);
    ht_buf_free(&names);
    return st;
  }
  ht_options *so;
  ht_status st = ht_options_parse(c->opt->strategy_options, &so);
  if (st) return st;
  void *state = NULL;
  st = ops->init(&state, c->space, so, c->opt->seed);
  if (!st) st = ht_options_check(so, "strategy", ops->name);
  if (!st) st = loop(c, ops, state);
  if (state) ops->destroy(state);
  ht_options_destroy(so);
  return st;
}

static void finish(tune_ctx *c, ht_status st) {
  ht_tune_summary *sum = c->sum;
  sum->session_id = c->session_id;
  sum->measured = c->progress.measured;
  sum->reused = c->progress.reused;
  sum->failures = c->progress.failures;
  sum->elapsed_s = ht_now() - c->t0;
  sum->interrupted = c->opt->stop && *c->opt->stop;
  if (c->session_id) {
    char saved[2048];
    snprintf(saved, sizeof saved, "%s", ht_last_error()); /* keep the error that stopped us */
    ht_store_session_end(c->store, c->session_id, st ? "failed" : sum->interrupted ? "interrupted" : "finished",
                         c->progress.done + sum->confirmed, sum->found ? sum->best.time_s : NAN);
    if (st) ht_error(st, "%s", saved);
  }
}

ht_status ht_tune(const ht_spec *spec, const char *device_id, ht_store *store, const ht_tune_options *opt,
                  const ht_runner_options *ropt, ht_tune_summary *out) {
  ht_tune_options defaults;
  if (!opt) {
    ht_tune_options_default(&defaults);
    opt = &defaults;
  }
  memset(out, 0, sizeof *out);
  ht_result_init(&out->best);
  tune_ctx c = {.spec = spec, .store = store, .opt = opt, .sum = out, .t0 = ht_now()};
  c.progress.best_time_s = NAN;
  c.progress.budget_evals = opt->budget_evals;
  c.progress.budget_seconds = opt->budget_seconds;
  /* Flags $HETUNE_ALLOWED_FLAGS refuses fail the run, not each config as a stored compile failure. */
  ht_status st = ht_flags_check(spec->kernel.flags, "kernel flags");
  if (!st && spec->has_reference) st = ht_flags_check(spec->reference.flags, "reference flags");
  if (!st) st = ht_runner_create(spec, device_id, ropt, &c.runner);
  if (!st) {
    out->device = *ht_runner_device(c.runner);
    st = ht_spec_build_space(spec, &out->device, &c.space);
    if (opt->store_device) out->device = *opt->store_device;
  }
  if (!st) st = ht_space_size(c.space, HT_SPACE_COUNT_STEPS, &out->space_size, &out->space_size_exact);
  c.progress.space_size = out->space_size;
  c.progress.space_size_exact = out->space_size_exact;
  if (!st) st = register_run(&c);
  if (!st) st = run_strategy(&c);
  out->best_measurements = out->found;
  if (!st && opt->confirm > 0 && c.n_ok > 0 && !(opt->stop && *opt->stop)) st = confirm(&c);
  finish(&c, st);
  free(c.ok);
  free(c.config_key);
  ht_space_destroy(c.space);
  ht_runner_destroy(c.runner);
  return st;
}
