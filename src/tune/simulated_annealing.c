/* simulated_annealing: simulated annealing over the valid neighbours of a config.
 *
 * Algorithm
 *  - Evaluate `init` random valid configs and start from the best (a random unasked config while
 *    no start succeeded).
 *  - Each ask proposes a random valid neighbour of the current config that was never asked.
 *  - When a proposal is told, Metropolis acceptance on the relative difference: a better (or equal)
 *    proposal is always accepted, a worse one with probability exp(-(f_new - f_cur) / (T * f_cur)),
 *    so "10% slower" means the same at every time scale. Failed evaluations (+inf) are never
 *    accepted.
 *  - Geometric cooling: T = T0 * alpha^k after k tells (the cooling counts evaluations, since the
 *    budget is not known to a strategy).
 *  - When every neighbour of the current config was asked, the search moves to the best known
 *    neighbour (not back to where it came from) without asking anything; after `walk` such moves
 *    in a row it restarts from a random unasked config.
 *  - Reheat: after `stall` tells without a new best, T goes back to T0 and the search continues
 *    from the best config found; when the previous reheat found nothing better either, it restarts
 *    from a random unasked config instead.
 *  Whenever nothing near the search is left to ask (batched asks waiting on untold results), a
 *  random unasked config is asked instead, so ask() returns 0 only when every valid config has
 *  been asked.
 *
 * Options (defaults)
 *  T0=0.05         start temperature (relative: at T=0.05 a 5% worse proposal is accepted with
 *                  probability exp(-1) = 0.37, a 20% worse one with 0.02). Kernel Tuner's T=1 is
 *                  far too hot for budgets of tens to hundreds of evaluations.
 *  alpha=0.97      cooling factor per evaluation (T halves every ~23 evaluations).
 *  stall=60        tells without a new best before reheating.
 *  walk=8          consecutive moves over fully asked neighbourhoods before a random restart.
 *  init=10         random configs evaluated before annealing starts.
 *  neighbour=hamming  proposals change one parameter to any other value (hamming) or to the
 *                  previous/next value of its list (adjacent).
 *
 * Reproducible from the seed and the sequence of tells. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tune/strategy_util.h"


/* ---- the strategy ---- */
typedef struct sa_state {
  ht_space *space;
  ht_rng rng;
  double T0, alpha, T;
  int stall, walk, init_left, started;
  ht_neighbour_kind kind;
  ht_config_set asked;
  ht_config_set known;
  ht_config *nb; /* valid neighbours of cur */
  int *pick;     /* scratch: indices of unasked neighbours */
  int nb_cap, nb_n;
  ht_config cur, prev, await, best_cfg;
  double fcur, best;
  int have_cur, have_prev, awaiting, have_best, since_best, moves, failed_reheats;
} sa_state;

static int distance(const ht_config *a, const ht_config *b) { /* Hamming distance */
  int d = 0;
  for (int p = 0; p < a->n; p++) d += a->idx[p] != b->idx[p];
  return d;
}

static void set_current(sa_state *s, const ht_config *c, double f) {
  if (s->have_cur) {
    s->prev = s->cur;
    s->have_prev = 1;
  }
  s->cur = *c;
  s->fcur = f;
  s->have_cur = 1;
  if (ht_space_neighbours(s->space, &s->cur, s->kind, s->nb, s->nb_cap, &s->nb_n)) s->nb_n = 0;
}

static int take(sa_state *s, const ht_config *c, ht_config *out) {
  if (ht_config_set_add(&s->asked, c) != 1) return 0;
  *out = *c;
  return 1;
}

static int random_unasked(sa_state *s, ht_config *out) {
  ht_config c;
  return ht_sample_unasked(s->space, &s->rng, &s->asked, &c, 1) == 1 && take(s, &c, out);
}

/* Moves to the best known, successful neighbour other than the one we came from. 0 if none. */
static int move_known(sa_state *s) {
  int bi = -1;
  double bf = INFINITY;
  for (int i = 0; i < s->nb_n; i++) {
    const double *v = ht_config_set_value(&s->known, &s->nb[i]);
    if (v && *v < bf && !(s->have_prev && ht_config_equal(&s->nb[i], &s->prev))) {
      bf = *v;
      bi = i;
    }
  }
  if (bi < 0) return 0;
  ht_config c = s->nb[bi];
  set_current(s, &c, bf);
  return 1;
}

static int next_config(sa_state *s, ht_config *out) {
  for (;;) {
    if (!s->have_cur) {
      if (s->init_left > 0) {
        s->init_left--;
        return random_unasked(s, out);
      }
      if (!s->started) { /* anneal first from the best of the initial sample */
        s->started = 1;
        if (s->have_best && isfinite(s->best)) {
          set_current(s, &s->best_cfg, s->best);
          continue;
        }
      }
      if (s->awaiting) return random_unasked(s, out); /* batched: the start is not told yet */
      if (!random_unasked(s, out)) return 0;
      s->await = *out;
      s->awaiting = 1;
      s->moves = 0;
      return 1;
    }
    int n = 0, pending = 0;
    for (int i = 0; i < s->nb_n; i++) {
      if (!ht_config_set_has(&s->asked, &s->nb[i])) s->pick[n++] = i;
      else if (!ht_config_set_value(&s->known, &s->nb[i])) pending = 1;
    }
    if (n > 0) {
      ht_config c = s->nb[s->pick[ht_rng_below(&s->rng, (uint64_t)n)]];
      return take(s, &c, out);
    }
    if (pending) return random_unasked(s, out); /* batched: wait for the neighbours' results */
    if (++s->moves > s->walk || !move_known(s)) s->have_cur = s->have_prev = 0; /* restart */
  }
}

static ht_status sa_init(void **state, ht_space *space, const ht_options *opt, uint64_t seed) {
  double T0 = ht_options_double(opt, "T0", 0.05), alpha = ht_options_double(opt, "alpha", 0.97);
  int64_t stall = ht_options_int(opt, "stall", 60), walk = ht_options_int(opt, "walk", 8);
  int64_t init = ht_options_int(opt, "init", 10);
  const char *nb = ht_options_str(opt, "neighbour", "hamming");
  if (!(T0 > 0) || !isfinite(T0)) return ht_error(HT_ERR_INVALID, "simulated_annealing: T0 must be > 0");
  if (!(alpha > 0 && alpha <= 1)) return ht_error(HT_ERR_INVALID, "simulated_annealing: alpha must be in (0, 1]");
  if (stall < 1 || stall > 100000000) return ht_error(HT_ERR_INVALID, "simulated_annealing: stall must be >= 1");
  if (walk < 0 || walk > 1000000) return ht_error(HT_ERR_INVALID, "simulated_annealing: walk must be >= 0");
  if (init < 0 || init > 1000000) return ht_error(HT_ERR_INVALID, "simulated_annealing: init must be >= 0");
  if (strcmp(nb, "hamming") != 0 && strcmp(nb, "adjacent") != 0)
    return ht_error(HT_ERR_INVALID, "simulated_annealing: neighbour must be hamming or adjacent, not '%s'", nb);
  sa_state *s = calloc(1, sizeof *s);
  if (!s) return ht_error(HT_ERR_NOMEM, "out of memory");
  s->space = space;
  ht_rng_seed(&s->rng, seed);
  s->T0 = s->T = T0;
  s->alpha = alpha;
  s->stall = (int)stall;
  s->walk = (int)walk;
  s->init_left = (int)init;
  s->kind = strcmp(nb, "adjacent") == 0 ? HT_NEIGH_ADJACENT : HT_NEIGH_HAMMING;
  s->best = INFINITY;
  ht_config_set_init(&s->asked);
  s->nb_cap = 2 * ht_space_param_count(space) + 1;
  for (int p = 0; p < ht_space_param_count(space); p++) s->nb_cap += ht_space_value_count(space, p);
  s->nb = malloc(sizeof(ht_config) * (size_t)s->nb_cap);
  s->pick = malloc(sizeof(int) * (size_t)s->nb_cap);
  if (!s->nb || !s->pick) {
    free(s->nb);
    free(s->pick);
    free(s);
    return ht_error(HT_ERR_NOMEM, "out of memory");
  }
  *state = s;
  return HT_OK;
}

static int sa_ask(void *state, ht_config *out, int max) {
  sa_state *s = state;
  int n = 0;
  while (n < max && next_config(s, &out[n])) n++;
  return n;
}

static void sa_tell(void *state, const ht_config *cfg, const ht_result *r) {
  sa_state *s = state;
  double f = ht_objective(r);
  ht_config_set_put(&s->known, cfg, f);
  s->T *= s->alpha;
  if (f < s->best) {
    s->best = f;
    s->best_cfg = *cfg;
    s->have_best = 1;
    s->since_best = 0;
    s->failed_reheats = 0;
  } else {
    s->since_best++;
  }
  if (s->awaiting && ht_config_equal(cfg, &s->await)) {
    s->awaiting = 0;
    if (isfinite(f)) set_current(s, cfg, f); /* else: restart at the next ask */
  } else if (s->have_cur && isfinite(f) && distance(cfg, &s->cur) <= 2) {
    int accept = f <= s->fcur;
    if (!accept && s->fcur > 0) accept = ht_rng_uniform(&s->rng) < exp(-(f - s->fcur) / (s->T * s->fcur));
    if (accept) {
      set_current(s, cfg, f);
      s->moves = 0;
    }
  }
  if (s->since_best >= s->stall) { /* stuck: reheat from the best, or restart if that failed before */
    s->since_best = 0;
    s->T = s->T0;
    s->have_prev = 0;
    if (s->failed_reheats++ % 2 == 0 && s->have_best) {
      s->have_cur = 0;
      set_current(s, &s->best_cfg, s->best);
    } else if (!s->awaiting) {
      s->have_cur = 0;
    }
    s->moves = 0;
  }
}

static void sa_destroy(void *state) {
  sa_state *s = state;
  ht_config_set_free(&s->asked);
  ht_config_set_free(&s->known);
  free(s->nb);
  free(s->pick);
  free(s);
}

const ht_strategy_ops ht_strategy_simulated_annealing = {
  "simulated_annealing", "simulated annealing on relative differences, geometric cooling, reheats and restarts",
  sa_init, sa_ask, sa_tell, sa_destroy, NULL};
