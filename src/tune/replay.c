/* Replay: a strategy runs through ask/tell against a recorded space. The clock advances by each
 * evaluation's recorded cost and, by default, by the strategy's own measured ask/tell time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetune/replay.h"
#include "hetune/tune.h"
#include "tune/executor.h"

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

static ht_status not_recorded(const ht_replay_options *o) {
  char why[1024];
  snprintf(why, sizeof why, "%s", ht_last_error());
  return ht_error(HT_ERR_INTERNAL, "replay: %s asked a config that was not recorded (%s)",
                  o->strategy ? o->strategy : "random", why);
}

/* The session asks one config at a time; the executor answers from the record. The clock advances
 * by each evaluation's recorded cost and, when charged, the strategy's time since the last step. */
static ht_status replay_loop(ht_tuner *tn, ht_executor *ex, const ht_replay_options *o, ht_replay_trace *t) {
  double clock = 0, best = INFINITY, strat_before = 0;
  int cap = 0;
  ht_config c;
  ht_exec_done d;
  ht_tuner_stats ts;
  while (!ht_tuner_done(tn)) {
    int got = 0;
    ht_status st = ht_tuner_ask(tn, &c, 1, &got);
    if (!st && got == 1) st = ht_executor_submit(ex, &c, 1);
    if (st == HT_ERR_NOTFOUND) return not_recorded(o);
    if (!st && got == 1) st = ht_executor_poll(ex, &d, 1, 1, &got);
    if (st) return st;
    if (got != 1) break;
    st = ht_tuner_tell(tn, &d.cfg, &d.result);
    if (st) return st;
    ht_tuner_stats_get(tn, &ts);
    double strat = ts.strategy_s - strat_before;
    strat_before = ts.strategy_s;
    t->strategy_s += strat;
    t->max_ask_s = ts.max_ask_s;
    double charge = d.cost_s + (o->charge_strategy_time ? strat : 0);
    clock += charge;
    ht_tuner_charge(tn, charge);
    double v = d.result.status == HT_EVAL_OK ? d.result.time_s : INFINITY;
    if (v < best) {
      best = v;
      t->best_config = d.cfg;
      t->found = 1;
    }
    st = push_step(t, &cap, (ht_replay_step){clock, v, best});
    if (st) return st;
  }
  return HT_OK;
}

ht_status ht_replay(ht_recorded *r, const ht_replay_options *o, ht_replay_trace *out) {
  if (!r || !o || !out) return ht_error(HT_ERR_INVALID, "ht_replay: bad arguments");
  memset(out, 0, sizeof *out);
  ht_tuner_options to;
  ht_tuner_options_default(&to);
  to.strategy = o->strategy ? o->strategy : "random";
  to.strategy_options = o->strategy_options;
  to.seed = o->seed;
  to.budget_evals = o->budget_evals;
  to.budget_seconds = o->budget_seconds;
  to.virtual_clock = 1;
  ht_tuner *tn = NULL;
  ht_executor ex = {0};
  ht_status st = ht_tuner_create(ht_recorded_space(r), &to, &tn);
  if (!st) st = ht_executor_open("replay", r, &ex);
  if (!st) st = replay_loop(tn, &ex, o, out);
  ht_executor_close(&ex);
  ht_tuner_destroy(tn);
  if (st) ht_replay_trace_free(out);
  return st;
}
