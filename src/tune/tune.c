/* The tuning loop, a driver of a session and the local executor: the session asks (seed configs
 * first, then the strategy), the runner measures (or the store already knows), the store records,
 * the session is told. Stops on budget (evaluations or seconds), exhaustion or a stop request. Then,
 * if asked, the fastest configs are measured again in fresh worker processes and the best is the
 * one with the lowest median: on a noisy device the fastest single measurement is often luck. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetune/tune.h"
#include "spec/spec_struct.h"
#include "tune/executor.h"

#define COMMIT_GROUP 64 /* evaluations per store commit (ht_store_group_evals) */
#define CACHED_BATCH 32 /* the default batch grows to this while nothing is compiled (next_batch) */

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
  ht_executor exec;      /* the local executor: runner and store */
  const ht_tune_options *opt;
  ht_eval_key key;
  int64_t session_id;
  ht_tune_progress progress;
  ht_tune_summary *sum;
  double t0;
  char *config_key;      /* the config just evaluated, formatted once */
  ht_config *seeds;      /* the seed configs the space holds */
  int n_seeds;
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

/* The config in hand as text, for the progress and the summary. */
static ht_status name_config(tune_ctx *c, const ht_config *cfg) {
  free(c->config_key);
  c->config_key = ht_config_text(c->space, cfg);
  return c->config_key ? HT_OK : ht_error(HT_ERR_NOMEM, "out of memory");
}

/* One evaluation by the local executor, outside its queue (the confirmation). */
static ht_status evaluate(tune_ctx *c, const ht_config *cfg, int reuse, ht_result *res, int *reused) {
  ht_status st = name_config(c, cfg);
  return st ? st : ht_local_evaluate(c->exec.state, cfg, NULL, reuse, res, reused);
}

static void account(tune_ctx *c, const ht_result *res, int reused, int seed) {
  ht_tune_progress *p = &c->progress;
  ht_tune_summary *sum = c->sum;
  p->done++;
  if (reused) p->reused++;
  else p->measured++;
  if (seed) {
    sum->seeds++;
    if (res->status != HT_EVAL_OK) sum->seed_failures++;
    else if (!(res->time_s >= sum->seed_best_time_s)) sum->seed_best_time_s = res->time_s;
  }
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
  p->last_seed = seed;
  p->elapsed_s = ht_now() - c->t0;
  if (c->opt->progress) c->opt->progress(p, c->opt->progress_ctx);
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

static int stopped(const tune_ctx *c) { return c->opt->stop && *c->opt->stop; }

/* --time is up: what a batch has not measured yet is left out rather than measured past it. */
static int out_of_time(const tune_ctx *c) {
  return c->opt->budget_seconds > 0 && ht_now() - c->t0 >= c->opt->budget_seconds;
}

/* One finished evaluation: kept for the confirmation, told to the session, reported. */
static ht_status take_result(tune_ctx *c, ht_tuner *t, const ht_exec_done *d) {
  const int seed = ht_tuner_is_seed(t, &d->cfg);
  ht_status st = name_config(c, &d->cfg);
  if (!st) st = remember_ok(c, &d->cfg, &d->result);
  if (!st) st = ht_tuner_tell(t, &d->cfg, &d->result);
  if (!st) account(c, &d->result, d->reused, seed);
  return st;
}

/* The batch asked at a time: as given, or by default two per compile job where the strategy's
 * choices do not depend on it, so the kernels of a batch compile at once and the next round's
 * compilers start while nothing else waits on them. */
static int batch_of(const tune_ctx *c, const ht_tuner *t) {
  if (c->opt->batch > 0) return c->opt->batch;
  if (!ht_tuner_batch_free(t)) return 1;
  const int jobs = ht_runner_compile_jobs(c->runner);
  return 2 * jobs < HT_MAX_PRECOMPILE ? 2 * jobs : HT_MAX_PRECOMPILE;
}

/* The next default batch: where nothing of the last one had to be compiled (its kernels were in
 * the cache, or the store had its results), twice as many, up to CACHED_BATCH: between batches
 * the runner and its worker wait on each other, and a short kernel pays for that at every few
 * configs. A batch that compiled goes back to the first size, so that compiles never hold the
 * first measurement back for long. */
static int next_batch(const tune_ctx *c, int base, int batch, int compiled) {
  if (c->opt->batch > 0 || base <= 1) return batch;
  const int grown = 2 * batch < CACHED_BATCH ? 2 * batch : CACHED_BATCH;
  return compiled || grown < base ? base : grown;
}

/* Asks a batch, submits it, takes its results as they come; a stop request ends a batch after the
 * config in hand. */
static ht_status loop(tune_ctx *c, ht_tuner *t) {
  const int base = batch_of(c, t);
  int batch = base;
  ht_config *cfgs = malloc(sizeof *cfgs * (size_t)(base > CACHED_BATCH ? base : CACHED_BATCH));
  ht_exec_done *d = malloc(sizeof *d);
  ht_status st = cfgs && d ? HT_OK : ht_error(HT_ERR_NOMEM, "out of memory");
  while (!st && !ht_tuner_done(t)) {
    int got = 0, compiled = 0;
    st = ht_tuner_ask(t, cfgs, batch, &got);
    if (!st && got == 0) break;
    if (!st) st = ht_executor_submit(&c->exec, cfgs, got);
    while (!st && ht_executor_pending(&c->exec) > 0) {
      st = ht_executor_poll(&c->exec, d, 1, 1, &got);
      if (!st && got == 1) {
        compiled |= !d->reused && !d->result.compile_cached;
        st = take_result(c, t, d);
      }
      if (stopped(c) || out_of_time(c)) break;
    }
    batch = next_batch(c, base, batch, compiled);
  }
  free(cfgs);
  free(d);
  return st;
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
  p->last_seed = 0;
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

/* The seed configs the space holds, parsed; the others are left out (another problem's). */
static ht_status parse_seeds(tune_ctx *c) {
  const ht_tune_options *o = c->opt;
  if (o->n_seed_configs <= 0 || !o->seed_configs) return HT_OK;
  c->seeds = malloc(sizeof *c->seeds * (size_t)o->n_seed_configs);
  if (!c->seeds) return ht_error(HT_ERR_NOMEM, "out of memory");
  for (int i = 0; i < o->n_seed_configs; i++) {
    ht_config *cfg = &c->seeds[c->n_seeds];
    if (o->seed_configs[i] && !ht_config_parse(c->space, o->seed_configs[i], cfg) && ht_space_is_valid(c->space, cfg))
      c->n_seeds++;
    else ht_log(3, "tune: seed config '%s' left out: not in this space", o->seed_configs[i] ? o->seed_configs[i] : "");
  }
  ht_error_clear(); /* a seed that did not parse is no error of the run */
  return HT_OK;
}

static ht_status run_strategy(tune_ctx *c) {
  const ht_tune_options *o = c->opt;
  ht_local_args la = {c->spec, c->space, c->store, c->runner, c->key, c->session_id, !o->no_reuse};
  ht_status st = ht_executor_open("local", &la, &c->exec);
  if (!st) st = parse_seeds(c);
  ht_tuner_options to;
  ht_tuner_options_default(&to);
  to.strategy = o->strategy;
  to.strategy_options = o->strategy_options;
  to.seed = o->seed;
  to.budget_evals = o->budget_evals;
  to.budget_seconds = o->budget_seconds;
  to.clock_start = c->t0;
  to.seed_configs = c->seeds;
  to.n_seed_configs = c->n_seeds;
  to.stop = o->stop;
  ht_tuner *t = NULL;
  if (!st) st = ht_tuner_create(c->space, &to, &t);
  /* Short evaluations would spend more on their commits than on anything else hetune does: they
   * are committed in groups, each journaled first so that kill -9 loses none. */
  if (!st) st = ht_store_group_evals(c->store, COMMIT_GROUP);
  if (!st) st = loop(c, t);
  /* Nothing more to measure: the worker exits while the last group is committed. */
  if (o->confirm <= 0) ht_runner_release_worker(c->runner);
  ht_status settled = ht_store_group_evals(c->store, 0);
  if (!st) st = settled;
  ht_tuner_destroy(t);
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
  out->seed_best_time_s = NAN;
  tune_ctx c = {.spec = spec, .store = store, .opt = opt, .sum = out, .t0 = ht_now()};
  c.progress.best_time_s = NAN;
  c.progress.budget_evals = opt->budget_evals;
  c.progress.budget_seconds = opt->budget_seconds;
  /* Flags $HETUNE_ALLOWED_FLAGS refuses fail the run, not each config as a stored compile failure. */
  ht_status st = ht_flags_check(spec->kernel.flags, "kernel flags");
  if (!st && spec->has_reference) st = ht_flags_check(spec->reference.flags, "reference flags");
  if (!st) st = ht_runner_start(spec, device_id, ropt, &c.runner); /* data and reference come meanwhile */
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
  ht_executor_close(&c.exec);
  free(c.ok);
  free(c.seeds);
  free(c.config_key);
  ht_space_destroy(c.space);
  ht_runner_destroy(c.runner);
  return st;
}
