/* The open tuning session: a strategy behind ask/tell that keeps the books the drivers need
 * (what was handed out and told, the best result, the budget, the clock, the strategy's own
 * time), so ht_tune, replay and any outside evaluator share one loop's rules.
 *
 * Seed configs go first. A strategy never repeats its own asks, but it may propose a seed config
 * (it was told the seed's result, not asked for it): such a proposal is dropped and the strategy
 * asked again, so nothing is handed out twice and the strategy hears of every config once. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tune/strategy_util.h"

enum { PENDING = 1, TOLD = 2 }; /* values in the asked set */

struct ht_tuner {
  ht_space *space;
  const ht_strategy_ops *ops;
  void *state;
  ht_options *opt;             /* lives as long as the strategy: it may read options late */
  ht_tuner_options o;
  ht_config *seeds;            /* a copy of the seed configs */
  int n_seeds, next_seed;
  ht_config_set asked;         /* every config handed out: PENDING or TOLD */
  ht_config_set seed_set;      /* the seed configs handed out */
  int64_t n_asked, n_told, n_seeds_asked;
  int exhausted;               /* the strategy asked for nothing more */
  int finished;                /* the session said it was done */
  double t0, clock;            /* wall start; virtual clock */
  double strategy_s, max_ask_s;
  int found;
  ht_config best_cfg;
  ht_result best;
};

void ht_tuner_options_default(ht_tuner_options *o) {
  memset(o, 0, sizeof *o);
  o->strategy = "auto";
  o->seed = 1;
}

static ht_status unknown_strategy(const char *name) {
  if (ht_strategy_check(name) == HT_ERR_UNSUPPORTED) return HT_ERR_UNSUPPORTED;
  ht_buf names = {0};
  for (int i = 0; i < ht_strategy_count(); i++) ht_buf_appendf(&names, "%s%s", i ? ", " : "", ht_strategy_at(i)->name);
  ht_status st = ht_error(HT_ERR_NOTFOUND, "unknown strategy '%s' (available: %s)", name, names.data ? names.data : "");
  ht_buf_free(&names);
  return st;
}

static ht_status copy_seeds(ht_tuner *t, const ht_config *seeds, int n) {
  if (n <= 0) return HT_OK;
  if (!seeds) return ht_error(HT_ERR_INVALID, "ht_tuner_create: %d seed configs but no array", n);
  for (int i = 0; i < n; i++)
    if (!ht_space_is_valid(t->space, &seeds[i])) {
      char text[512];
      ht_config_format(t->space, &seeds[i], text, sizeof text);
      return ht_error(HT_ERR_INVALID, "seed config %d (%s) is not a valid config of the space", i + 1,
                      seeds[i].n == ht_space_param_count(t->space) ? text : "wrong number of parameters");
    }
  t->seeds = malloc(sizeof(ht_config) * (size_t)n);
  if (!t->seeds) return ht_error(HT_ERR_NOMEM, "out of memory");
  memcpy(t->seeds, seeds, sizeof(ht_config) * (size_t)n);
  t->n_seeds = n;
  return HT_OK;
}

ht_status ht_tuner_create(ht_space *space, const ht_tuner_options *o, ht_tuner **out) {
  *out = NULL;
  if (!space) return ht_error(HT_ERR_INVALID, "ht_tuner_create: space is NULL");
  ht_tuner_options defaults;
  if (!o) {
    ht_tuner_options_default(&defaults);
    o = &defaults;
  }
  const char *name = o->strategy ? o->strategy : "auto";
  const ht_strategy_ops *ops = ht_strategy_find(name);
  if (!ops) return unknown_strategy(name);
  ht_tuner *t = calloc(1, sizeof *t);
  if (!t) return ht_error(HT_ERR_NOMEM, "out of memory");
  t->space = space;
  t->o = *o;
  t->o.strategy = name;
  t->o.seed_configs = NULL; /* copied below; the caller's array may go */
  t->t0 = o->clock_start > 0 ? o->clock_start : ht_now();
  ht_result_init(&t->best);
  ht_status st = ht_options_parse(o->strategy_options, &t->opt);
  if (!st) st = ops->init(&t->state, space, t->opt, o->seed);
  if (!st) t->ops = ops;
  if (!st) st = ht_options_check(t->opt, "strategy", name);
  if (!st) st = copy_seeds(t, o->seed_configs, o->n_seed_configs);
  if (st) {
    ht_tuner_destroy(t);
    return st;
  }
  *out = t;
  return HT_OK;
}

void ht_tuner_destroy(ht_tuner *t) {
  if (!t) return;
  if (t->ops && t->state) t->ops->destroy(t->state);
  ht_options_destroy(t->opt);
  ht_config_set_free(&t->asked);
  ht_config_set_free(&t->seed_set);
  free(t->seeds);
  free(t);
}

static double clock_now(const ht_tuner *t) { return t->o.virtual_clock ? t->clock : ht_now() - t->t0; }

static int out_of_budget(const ht_tuner *t) {
  const ht_tuner_options *o = &t->o;
  if (o->stop && *o->stop) return 1;
  if (o->budget_evals > 0 && t->n_asked >= o->budget_evals) return 1;
  return o->budget_seconds > 0 && clock_now(t) >= o->budget_seconds;
}

int ht_tuner_done(ht_tuner *t) {
  if (!t->finished && (t->exhausted || out_of_budget(t))) t->finished = 1;
  return t->finished;
}

/* Marks c handed out; 0 when it was already (or out of memory). */
static int hand_out(ht_tuner *t, const ht_config *c) {
  if (ht_config_set_has(&t->asked, c) || !ht_config_set_put(&t->asked, c, PENDING)) return 0;
  t->n_asked++;
  return 1;
}

static int ask_seeds(ht_tuner *t, ht_config *out, int want) {
  int got = 0;
  while (got < want && t->next_seed < t->n_seeds) {
    const ht_config *c = &t->seeds[t->next_seed++];
    if (!hand_out(t, c)) continue; /* a repeat */
    ht_config_set_add(&t->seed_set, c);
    t->n_seeds_asked++;
    out[got++] = *c;
  }
  return got;
}

/* The strategy's configs, dropping any already handed out (seeds) and asking again for those. */
static int ask_strategy(ht_tuner *t, ht_config *out, int want) {
  int got = 0;
  double spent = 0;
  while (got < want) {
    double t0 = ht_now();
    int k = t->ops->ask(t->state, out + got, want - got);
    spent += ht_now() - t0;
    if (k <= 0) {
      t->exhausted = 1;
      break;
    }
    int kept = 0;
    for (int i = 0; i < k; i++)
      if (hand_out(t, &out[got + i])) out[got + kept++] = out[got + i];
    got += kept;
    if (kept == k) break; /* fewer than wanted is the strategy's answer; ask again only for drops */
  }
  t->strategy_s += spent;
  if (spent > t->max_ask_s) t->max_ask_s = spent;
  return got;
}

ht_status ht_tuner_ask(ht_tuner *t, ht_config *out, int max, int *got) {
  *got = 0;
  if (max < 0 || (max > 0 && !out)) return ht_error(HT_ERR_INVALID, "ht_tuner_ask: bad arguments");
  if (t->finished) return ht_error(HT_ERR_INVALID, "ht_tuner_ask: the session is done (budget spent, space exhausted or stopped)");
  if (ht_tuner_done(t) || max == 0) return HT_OK;
  int64_t want = max;
  if (t->o.budget_evals > 0 && t->o.budget_evals - t->n_asked < want) want = t->o.budget_evals - t->n_asked;
  int n = ask_seeds(t, out, (int)want);
  if (n < want) n += ask_strategy(t, out + n, (int)want - n);
  *got = n;
  if (n == 0) t->finished = 1;
  return HT_OK;
}

ht_status ht_tuner_tell(ht_tuner *t, const ht_config *cfg, const ht_result *r) {
  if (!cfg || !r) return ht_error(HT_ERR_INVALID, "ht_tuner_tell: bad arguments");
  const double *v = ht_config_set_value(&t->asked, cfg);
  if (!v || *v != PENDING) {
    char text[512] = "(a config of another space)";
    if (cfg->n == ht_space_param_count(t->space)) ht_config_format(t->space, cfg, text, sizeof text);
    return ht_error(HT_ERR_INVALID, "ht_tuner_tell: %s %s", text, v ? "was told already" : "was never asked");
  }
  ht_config_set_put(&t->asked, cfg, TOLD);
  t->n_told++;
  if (r->status == HT_EVAL_OK && (!t->found || r->time_s < t->best.time_s)) {
    t->found = 1;
    t->best_cfg = *cfg;
    t->best = *r;
  }
  double t0 = ht_now();
  t->ops->tell(t->state, cfg, r);
  t->strategy_s += ht_now() - t0;
  return HT_OK;
}

int ht_tuner_best(const ht_tuner *t, ht_config *cfg, ht_result *r) {
  if (!t->found) return 0;
  if (cfg) *cfg = t->best_cfg;
  if (r) *r = t->best;
  return 1;
}

void ht_tuner_charge(ht_tuner *t, double seconds) { t->clock += seconds; }

int ht_tuner_is_seed(const ht_tuner *t, const ht_config *cfg) { return ht_config_set_has(&t->seed_set, cfg); }

int ht_tuner_batch_free(const ht_tuner *t) { return t && t->ops && t->ops->batch_free && t->ops->batch_free(t->state); }

void ht_tuner_stats_get(const ht_tuner *t, ht_tuner_stats *out) {
  memset(out, 0, sizeof *out);
  out->asked = t->n_asked;
  out->told = t->n_told;
  out->pending = t->n_asked - t->n_told;
  out->seeds_asked = t->n_seeds_asked;
  out->clock_s = clock_now(t);
  out->strategy_s = t->strategy_s;
  out->max_ask_s = t->max_ask_s;
}
