/* The tuning loop: strategy asks, runner measures (or the store already knows), store records,
 * strategy is told. Stops on budget (evaluations or seconds), exhaustion or a stop request. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetune/tune.h"

void ht_tune_options_default(ht_tune_options *o) {
  memset(o, 0, sizeof *o);
  o->strategy = "random";
  o->seed = 1;
}

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
  char config_key[1024]; /* the config in hand, formatted once */
  ht_result result;      /* its result */
} tune_ctx;

static ht_status register_run(tune_ctx *c) {
  const ht_spec *s = c->spec;
  ht_status st = ht_store_put_device(c->store, ht_runner_device(c->runner), &c->key.device_id);
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

/* Measures cfg, or takes it from the store when it was measured before. */
static ht_status evaluate(tune_ctx *c, const ht_config *cfg, ht_result *res, int *reused) {
  ht_config_format(c->space, cfg, c->config_key, sizeof c->config_key);
  char *json = ht_spec_config_json(c->spec, c->space, cfg);
  c->key.config_key = c->config_key;
  c->key.config_json = json ? json : "{}";
  int found = 0;
  ht_status st = c->opt->no_reuse ? HT_OK : ht_store_get_eval(c->store, &c->key, res, &found);
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

static ht_status loop(tune_ctx *c, const ht_strategy_ops *ops, void *state) {
  ht_config cfg;
  while (!out_of_budget(c) && ops->ask(state, &cfg, 1) == 1) {
    int reused = 0;
    ht_status st = evaluate(c, &cfg, &c->result, &reused);
    if (st) return st;
    ops->tell(state, &cfg, &c->result);
    account(c, &c->result, reused);
  }
  return HT_OK;
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
                         c->progress.done, sum->found ? sum->best.time_s : NAN);
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
  ht_status st = ht_runner_create(spec, device_id, ropt, &c.runner);
  if (!st) {
    out->device = *ht_runner_device(c.runner);
    st = ht_spec_build_space(spec, &out->device, &c.space);
  }
  if (!st) st = ht_space_count(c.space, &out->space_size);
  c.progress.space_size = out->space_size;
  if (!st) st = register_run(&c);
  if (!st) st = run_strategy(&c);
  finish(&c, st);
  ht_space_destroy(c.space);
  ht_runner_destroy(c.runner);
  return st;
}
