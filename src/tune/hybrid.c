/* hybrid: one strategy opens the search, a second one takes over and knows everything seen so far.
 *
 * Why: on the recorded spaces (strategy-bench, rank-space scores) the boosted trees of
 * `model_guided`, with their space-filling start, find good regions fastest, but stall at
 * refining the best configs; the Gaussian process of `bayes` refines best but starts slowly
 * (uniform draws until it has n_init results). Opening with model_guided for `switch`
 * evaluations and then running bayes on all results scores above both on 3 of 6 spaces and
 * within 0.014 of the better one on the others (docs/strategies.md). Starting both models from a
 * 6-config design and switching after 8 evaluations scored 0.792 (worst space 0.703) against
 * 0.779 (0.639) for a 10-config design and a switch at 15 (50 seeds; switch 10: 0.787); with
 * bayes regressing ranks (session 6) the same defaults score 0.808. Handing every 2nd to 5th ask
 * after the switch back to the first strategy did not help (0.777 against 0.786 on 200 seeds).
 *
 * Every result goes to both strategies, so the second starts with the first one's evaluations
 * as its initial design. The hybrid never asks a config twice: a config the second strategy
 * proposes that the first one asked and that is still pending is skipped (the second asks
 * again, up to 4 times per slot). When the first strategy has nothing left to propose, the
 * second takes over early; the hybrid is finished when the one asking proposes nothing new.
 *
 * Options (defaults): first (model_guided; random in a build without XGBoost, which has no
 * model_guided: bayes then starts from uniform draws, as on its own), then (bayes), switch (8:
 * evaluations asked by the first strategy). Every other option goes to both strategies; n_init
 * defaults to 6 for both.
 * Deterministic given the seed and the tells (the second strategy gets seed + 0x9e3779b97f4a7c15). */
#include <stdlib.h>
#include <string.h>

#include "tune/strategy_util.h"

#ifdef HT_HAVE_XGBOOST
#define FIRST_DEFAULT "model_guided"
#else
#define FIRST_DEFAULT "random"
#endif

#define RETRIES 4
/* Defaults the hybrid gives both parts where the user gave none: a 6-config initial design
 * (model_guided's own default is 10, bayes's up to 10), so the models start earlier. */
#define PART_DEFAULTS "n_init=6"

typedef struct hy_part {
  const ht_strategy_ops *ops;
  void *state;
} hy_part;

typedef struct hy_state {
  hy_part part[2];
  int active;          /* 0: the first strategy asks, 1: the second */
  int64_t asks, n_switch;
  ht_config_set asked; /* everything either strategy asked or was told */
  ht_options *opt;     /* the options with the hybrid's defaults for its parts */
} hy_state;

static void hy_destroy(void *state) {
  hy_state *s = state;
  if (!s) return;
  for (int k = 0; k < 2; k++)
    if (s->part[k].ops) s->part[k].ops->destroy(s->part[k].state);
  ht_config_set_free(&s->asked);
  ht_options_destroy(s->opt);
  free(s);
}

static ht_status open_part(hy_part *p, const char *name, ht_space *space, const ht_options *opt, uint64_t seed) {
  const ht_strategy_ops *ops = ht_strategy_find(name);
  if (!ops && ht_strategy_check(name) == HT_ERR_UNSUPPORTED) return ht_error_prefix(HT_ERR_UNSUPPORTED, "hybrid: ");
  if (!ops || strcmp(name, "hybrid") == 0 || strcmp(name, "auto") == 0)
    return ht_error(HT_ERR_NOTFOUND, "hybrid: '%s' cannot be one of its strategies", name);
  ht_status st = ops->init(&p->state, space, opt, seed);
  if (!st) p->ops = ops;
  return st;
}

static ht_status hy_init(void **state, ht_space *space, const ht_options *opt, uint64_t seed) {
  hy_state *s = calloc(1, sizeof *s);
  if (!s) return ht_error(HT_ERR_NOMEM, "out of memory");
  ht_config_set_init(&s->asked);
  s->n_switch = ht_options_int(opt, "switch", 8);
  ht_status st = s->n_switch < 0 ? ht_error(HT_ERR_INVALID, "hybrid: switch must be 0 or more") : HT_OK;
  if (!st) st = ht_options_derive(opt, PART_DEFAULTS, &s->opt);
  if (!st) st = open_part(&s->part[0], ht_options_str(opt, "first", FIRST_DEFAULT), space, s->opt, seed);
  if (!st) st = open_part(&s->part[1], ht_options_str(opt, "then", "bayes"), space, s->opt, seed + 0x9e3779b97f4a7c15ULL);
  ht_options_absorb(opt, s->opt); /* keys the parts read count as read */
  if (st) {
    hy_destroy(s);
    return st;
  }
  *state = s;
  return HT_OK;
}

/* One config nobody asked yet from the active strategy, or 0. */
static int ask_active(hy_state *s, ht_config *out) {
  hy_part *p = &s->part[s->active];
  for (int tries = 0; tries < RETRIES; tries++) {
    if (p->ops->ask(p->state, out, 1) != 1) return 0;
    if (!ht_config_set_has(&s->asked, out)) return ht_config_set_add(&s->asked, out) == 1;
  }
  return 0;
}

static int hy_ask(void *state, ht_config *out, int max) {
  hy_state *s = state;
  int got = 0;
  while (got < max) {
    if (s->active == 0 && s->asks >= s->n_switch) s->active = 1;
    int ok = ask_active(s, &out[got]);
    if (!ok && s->active == 0) { /* the first strategy is done: hand over early */
      s->active = 1;
      ok = ask_active(s, &out[got]);
    }
    if (!ok) break;
    got++;
    s->asks++;
  }
  return got;
}

static void hy_tell(void *state, const ht_config *cfg, const ht_result *r) {
  hy_state *s = state;
  ht_config_set_add(&s->asked, cfg); /* a result nobody asked for: never ask it */
  for (int k = 0; k < 2; k++) s->part[k].ops->tell(s->part[k].state, cfg, r);
}

const ht_strategy_ops ht_strategy_hybrid = {"hybrid", "model_guided opens, bayes takes over with every result",
                                            hy_init, hy_ask, hy_tell, hy_destroy, NULL};
