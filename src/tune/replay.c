/* Replay: a strategy runs through ask/tell against a recorded space. The clock advances by each
 * evaluation's recorded cost and, by default, by the strategy's own measured ask/tell time. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hetune/replay.h"
#include "hetune/tune.h"
#include "tune/recorded_internal.h"

void ht_replay_options_default(ht_replay_options *o) {
  memset(o, 0, sizeof *o);
  o->strategy = "random";
  o->seed = 1;
  o->charge_strategy_time = 1;
}

void ht_replay_trace_free(ht_replay_trace *t) {
  if (!t) return;
  free(t->steps);
  memset(t, 0, sizeof *t);
}

static int out_of_budget(const ht_replay_options *o, const ht_replay_trace *t, double clock) {
  if (o->budget_evals > 0 && t->n >= o->budget_evals) return 1;
  return o->budget_seconds > 0 && clock >= o->budget_seconds;
}

static ht_status push_step(ht_replay_trace *t, int *cap, ht_replay_step s) {
  if (t->n == *cap) {
    int c = *cap ? 2 * *cap : 256;
    ht_replay_step *n = realloc(t->steps, (size_t)c * sizeof *n);
    if (!n) return ht_error(HT_ERR_NOMEM, "out of memory");
    t->steps = n;
    *cap = c;
  }
  t->steps[t->n++] = s;
  return HT_OK;
}

static ht_status replay_loop(ht_recorded *r, const ht_strategy_ops *ops, void *state, const ht_replay_options *o,
                             ht_replay_trace *t) {
  double clock = 0, best = INFINITY;
  int cap = 0;
  ht_config c;
  while (!out_of_budget(o, t, clock)) {
    double t0 = ht_now();
    int got = ops->ask(state, &c, 1);
    double ask_s = ht_now() - t0;
    if (got != 1) break;
    ht_result res;
    double cost = 0;
    if (!ht_recorded_lookup(r, &c, &res, &cost))
      return ht_error(HT_ERR_INTERNAL, "replay: %s asked a config that was not recorded", ops->name);
    t0 = ht_now();
    ops->tell(state, &c, &res);
    double strat = ask_s + (ht_now() - t0);
    t->strategy_s += strat;
    if (ask_s > t->max_ask_s) t->max_ask_s = ask_s;
    clock += cost + (o->charge_strategy_time ? strat : 0);
    double v = res.status == HT_EVAL_OK ? res.time_s : INFINITY;
    if (v < best) {
      best = v;
      t->best_config = c;
      t->found = 1;
    }
    ht_status st = push_step(t, &cap, (ht_replay_step){clock, v, best});
    if (st) return st;
  }
  return HT_OK;
}

ht_status ht_replay(ht_recorded *r, const ht_replay_options *o, ht_replay_trace *out) {
  if (!r || !o || !out) return ht_error(HT_ERR_INVALID, "ht_replay: bad arguments");
  memset(out, 0, sizeof *out);
  const char *name = o->strategy ? o->strategy : "random";
  const ht_strategy_ops *ops = ht_strategy_find(name);
  if (!ops) return ht_error(HT_ERR_NOTFOUND, "unknown strategy '%s'", name);
  ht_options *opt = NULL;
  ht_status st = ht_options_parse(o->strategy_options, &opt);
  void *state = NULL;
  if (!st) st = ops->init(&state, ht_recorded_space(r), opt, o->seed);
  if (!st) st = ht_options_check(opt, "strategy", name);
  if (!st) st = replay_loop(r, ops, state, o, out);
  if (state) ops->destroy(state);
  ht_options_destroy(opt);
  if (st) ht_replay_trace_free(out);
  return st;
}
