/* greedy_ils: greedy iterated local search, after Kernel Tuner's greedy_ils (multi-start local
 * search with perturbation).
 *
 * Algorithm
 *  1. Evaluate `init` random valid configs and start from the best of them (Kernel Tuner starts
 *     from a single random config; a few samples first avoid climbing from a poor region, which
 *     matters most at small budgets).
 *  2. First-improvement hill climbing over the valid neighbours of the current config: the first
 *     neighbour better than the current config becomes current and the visit starts again from its
 *     neighbours. Neighbours whose objective is already known (told earlier) are compared without
 *     being asked again, so a climb may pass through known configs for free. Failed evaluations
 *     count as +inf (never better; any success beats a failed start).
 *     Visiting order (order=): random is Kernel Tuner's; guided (the default) visits first the
 *     neighbour whose changed parameter value has the better mean log objective over everything
 *     told so far (a per-parameter marginal, shrunk toward the overall mean; ties in random
 *     order), so that values that were good elsewhere are tried first. It changes only the order,
 *     not what counts as a local optimum.
 *  3. At a local optimum one ILS iteration ends: a kick sets perm_size distinct parameters of the
 *     last local optimum (accept=new, Kernel Tuner's acceptance) or of the best config found
 *     (accept=best) to other random values, valid and preferably unasked (a random walk of
 *     perm_size Hamming steps when no such draw is valid), and climbing continues from there
 *     whatever its objective.
 *  4. After `restart` consecutive iterations that did not improve the best objective seen, climbing
 *     restarts from a fresh random unasked config.
 *  Whenever nothing near the search is left to ask (batched asks waiting on untold results, a
 *  neighbourhood fully asked), a random unasked config is asked instead, so ask() returns 0 only
 *  when every valid config has been asked.
 *
 * Options (defaults)
 *  neighbour=hamming   hamming: change one parameter to any other value; adjacent: to the
 *                      previous/next value of its list; mixed: adjacent neighbours first, then the
 *                      other Hamming neighbours.
 *  order=guided        guided or random (see 2).
 *  perm_size=2         parameters changed by a kick (0: restart at every local optimum).
 *  accept=new          new or best (see 3).
 *  restart=10          iterations without a new best before a random restart.
 *  init=8              random configs evaluated before the first climb.
 *  Defaults were chosen on the recorded spaces of data/spaces (strategy-bench) and on synthetic
 *  landscapes: init and the guided order help most at small budgets; a kick of 2 parameters
 *  escapes the local optima of small spaces where 3 or more lands too far away.
 *
 * Reproducible from the seed and the sequence of tells. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tune/strategy_util.h"


/* ---- the strategy ---- */
enum { NB_HAMMING, NB_ADJACENT, NB_MIXED };

typedef struct ils_state {
  ht_space *space;
  ht_rng rng;
  int kind, perm_size, restart, init_left, started;
  ht_config_set asked;
  ht_config_set known;
  ht_config *nb, *walk; /* neighbours of cur (shuffled), scratch for the random walk */
  int nb_cap, nb_n, nb_pos;
  ht_config cur, await, best_cfg;
  double fcur, best;
  int have_cur, awaiting, improved, stall;
  int from_best;     /* accept=best: perturb the best config found, not the last local optimum */
  int guided;        /* order=guided: neighbours by the marginal model, best first */
  int *off;          /* per parameter: its first slot in msum/mcnt */
  double *msum, gsum, maxlog;
  int *mcnt, gcnt;
} ils_state;

/* The marginal model: the mean log objective of the told configs holding value v of parameter p,
 * shrunk toward the mean of all (one pseudo-observation). Failures count as e times the worst. */
static void model_add(ils_state *s, const ht_config *c, double f) {
  double l;
  if (isfinite(f)) {
    l = log(f);
    if (s->gcnt == 0 || l > s->maxlog) s->maxlog = l;
  } else if (s->gcnt > 0) {
    l = s->maxlog + 1;
  } else {
    return;
  }
  for (int p = 0; p < c->n; p++) {
    s->msum[s->off[p] + c->idx[p]] += l;
    s->mcnt[s->off[p] + c->idx[p]]++;
  }
  s->gsum += l;
  s->gcnt++;
}

static double model_value(const ils_state *s, int p, int v) {
  int k = s->off[p] + v;
  double g = s->gcnt ? s->gsum / s->gcnt : 0;
  return (s->msum[k] + g) / (s->mcnt[k] + 1);
}

static void shuffle(ht_rng *rng, ht_config *a, int n) {
  for (int k = n - 1; k > 0; k--) {
    int j = (int)ht_rng_below(rng, (uint64_t)k + 1);
    ht_config t = a[k];
    a[k] = a[j];
    a[j] = t;
  }
}

static int changed_param(const ht_config *a, const ht_config *b) {
  for (int p = 0; p < a->n; p++)
    if (a->idx[p] != b->idx[p]) return p;
  return -1;
}

static int distance(const ht_config *a, const ht_config *b) { /* Hamming distance */
  int d = 0;
  for (int p = 0; p < a->n; p++) d += a->idx[p] != b->idx[p];
  return d;
}

/* Makes c current and lists its neighbours in visiting order. Neighbours already told are settled
 * here, once: the best of those better than c becomes current instead (a free move), the others
 * leave the list, which keeps only the neighbours still to ask or waiting for their results. */
static void set_current(ils_state *s, const ht_config *c, double f) {
  ht_config next = *c;
  for (;;) {
    s->cur = next;
    s->fcur = f;
    s->have_cur = 1;
    s->nb_n = s->nb_pos = 0;
    ht_neighbour_kind k = s->kind == NB_ADJACENT ? HT_NEIGH_ADJACENT : HT_NEIGH_HAMMING;
    if (ht_space_neighbours(s->space, &s->cur, k, s->nb, s->nb_cap, &s->nb_n)) s->nb_n = 0;
    if (s->kind != NB_MIXED) {
      shuffle(&s->rng, s->nb, s->nb_n);
    } else {
      int a = 0; /* adjacent ones to the front, then each part shuffled */
      for (int i = 0; i < s->nb_n; i++) {
        int p = changed_param(&s->nb[i], &s->cur);
        if (abs(s->nb[i].idx[p] - s->cur.idx[p]) == 1) {
          ht_config t = s->nb[a];
          s->nb[a++] = s->nb[i];
          s->nb[i] = t;
        }
      }
      shuffle(&s->rng, s->nb, a);
      shuffle(&s->rng, s->nb + a, s->nb_n - a);
    }
    int m = 0, better = 0;
    for (int i = 0; i < s->nb_n; i++) {
      const double *v = ht_config_set_value(&s->known, &s->nb[i]);
      if (!v) s->nb[m++] = s->nb[i];
      else if (*v < f) {
        f = *v;
        next = s->nb[i];
        better = 1;
      }
    }
    s->nb_n = m;
    if (!better) return;
  }
}

static int take(ils_state *s, const ht_config *c, ht_config *out) {
  if (ht_config_set_add(&s->asked, c) != 1) return 0;
  *out = *c;
  return 1;
}

static int random_unasked(ils_state *s, ht_config *out) {
  ht_config c;
  return ht_sample_unasked(s->space, &s->rng, &s->asked, &c, 1) == 1 && take(s, &c, out);
}

static int any_pending_neighbour(const ils_state *s) {
  for (int i = 0; i < s->nb_n; i++)
    if (!ht_config_set_value(&s->known, &s->nb[i]) && ht_config_set_has(&s->asked, &s->nb[i])) return 1;
  return 0;
}

/* A kick: perm_size distinct parameters set to other random values, valid and preferably
 * unasked (a few draws); a random walk over valid Hamming neighbours when no draw is valid. */
static ht_config perturb(ils_state *s) {
  ht_config base = s->from_best && isfinite(s->best) ? s->best_cfg : s->cur, x = base, found = base;
  int n = base.n, k = s->perm_size < n ? s->perm_size : n, have = 0;
  for (int tries = 0; tries < 32 && k > 0; tries++) {
    x = base;
    int changed = 0;
    for (int j = 0; j < 4 * n && changed < k; j++) {
      int p = (int)ht_rng_below(&s->rng, (uint64_t)n), vals = ht_space_value_count(s->space, p);
      if (vals < 2 || x.idx[p] != base.idx[p]) continue;
      int v = (int)ht_rng_below(&s->rng, (uint64_t)vals - 1);
      x.idx[p] = v >= base.idx[p] ? v + 1 : v;
      changed++;
    }
    if (changed == 0 || !ht_space_is_valid(s->space, &x)) continue;
    found = x;
    have = 1;
    if (!ht_config_set_has(&s->asked, &x)) return x;
  }
  if (have) return found;
  x = base;
  for (int step = 0; step < k; step++) {
    int m = 0;
    if (ht_space_neighbours(s->space, &x, HT_NEIGH_HAMMING, s->walk, s->nb_cap, &m) || m == 0) break;
    x = s->walk[ht_rng_below(&s->rng, (uint64_t)m)];
  }
  return x;
}

static int next_config(ils_state *s, ht_config *out) {
  for (;;) {
    if (!s->have_cur) {
      if (s->init_left > 0) {
        s->init_left--;
        return random_unasked(s, out);
      }
      if (!s->started) { /* climb first from the best of the initial sample */
        s->started = 1;
        if (isfinite(s->best)) {
          set_current(s, &s->best_cfg, s->best);
          continue;
        }
      }
      if (s->awaiting) return random_unasked(s, out); /* batched: the start is not told yet */
      if (!random_unasked(s, out)) return 0;
      s->await = *out;
      s->awaiting = 1;
      s->improved = 0;
      return 1;
    }
    while (s->nb_pos < s->nb_n) {
      if (s->guided) { /* the best predicted first */
        int bj = s->nb_pos;
        double bk = INFINITY;
        for (int j = s->nb_pos; j < s->nb_n; j++) {
          const ht_config *t = &s->nb[j];
          int p = changed_param(t, &s->cur);
          double key = model_value(s, p, t->idx[p]) - model_value(s, p, s->cur.idx[p]);
          if (key < bk) {
            bk = key;
            bj = j;
          }
        }
        ht_config t = s->nb[bj];
        s->nb[bj] = s->nb[s->nb_pos];
        s->nb[s->nb_pos] = t;
      }
      ht_config c = s->nb[s->nb_pos++];
      if (!ht_config_set_has(&s->asked, &c)) return take(s, &c, out);
      const double *v = ht_config_set_value(&s->known, &c); /* asked meanwhile (batched asks) */
      if (v && *v < s->fcur) set_current(s, &c, *v);
    }
    if (any_pending_neighbour(s)) return random_unasked(s, out); /* batched: climb waits on tells */
    /* A local optimum: one ILS iteration done. */
    s->stall = s->improved ? 0 : s->stall + 1;
    s->improved = 0;
    if (s->stall >= s->restart) {
      s->stall = 0;
      s->have_cur = 0;
      continue;
    }
    ht_config x = perturb(s);
    const double *v = ht_config_set_value(&s->known, &x);
    if (v) {
      set_current(s, &x, *v);
      continue;
    }
    s->have_cur = 0;
    if (ht_config_set_has(&s->asked, &x)) continue; /* asked, not told (batched): restart instead */
    if (!take(s, &x, out)) return 0;
    s->await = x;
    s->awaiting = 1;
    return 1;
  }
}

static void ils_destroy(void *state) {
  ils_state *s = state;
  ht_config_set_free(&s->asked);
  ht_config_set_free(&s->known);
  free(s->nb);
  free(s->walk);
  free(s->off);
  free(s->msum);
  free(s->mcnt);
  free(s);
}

static ht_status ils_init(void **state, ht_space *space, const ht_options *opt, uint64_t seed) {
  const char *nb = ht_options_str(opt, "neighbour", "hamming");
  int64_t perm = ht_options_int(opt, "perm_size", 2), restart = ht_options_int(opt, "restart", 10);
  int64_t init = ht_options_int(opt, "init", 8);
  const char *order = ht_options_str(opt, "order", "guided");
  const char *accept = ht_options_str(opt, "accept", "new");
  if (strcmp(accept, "new") != 0 && strcmp(accept, "best") != 0)
    return ht_error(HT_ERR_INVALID, "greedy_ils: accept must be new or best, not '%s'", accept);
  int kind = strcmp(nb, "hamming") == 0 ? NB_HAMMING : strcmp(nb, "adjacent") == 0 ? NB_ADJACENT
           : strcmp(nb, "mixed") == 0   ? NB_MIXED
                                        : -1;
  if (kind < 0) return ht_error(HT_ERR_INVALID, "greedy_ils: neighbour must be hamming, adjacent or mixed, not '%s'", nb);
  if (perm < 0 || perm > 1000) return ht_error(HT_ERR_INVALID, "greedy_ils: perm_size must be in 0..1000");
  if (restart < 1 || restart > 1000000) return ht_error(HT_ERR_INVALID, "greedy_ils: restart must be in 1..1000000");
  if (init < 0 || init > 1000000) return ht_error(HT_ERR_INVALID, "greedy_ils: init must be in 0..1000000");
  if (strcmp(order, "random") != 0 && strcmp(order, "guided") != 0)
    return ht_error(HT_ERR_INVALID, "greedy_ils: order must be random or guided, not '%s'", order);
  ils_state *s = calloc(1, sizeof *s);
  if (!s) return ht_error(HT_ERR_NOMEM, "out of memory");
  s->space = space;
  ht_rng_seed(&s->rng, seed);
  s->kind = kind;
  s->perm_size = (int)perm;
  s->restart = (int)restart;
  s->init_left = (int)init;
  s->guided = strcmp(order, "guided") == 0;
  s->from_best = strcmp(accept, "best") == 0;
  ht_config_set_init(&s->asked);
  int params = ht_space_param_count(space), slots = 0;
  s->off = malloc(sizeof(int) * (size_t)(params + 1));
  for (int p = 0; s->off && p < params; p++) {
    s->off[p] = slots;
    slots += ht_space_value_count(space, p);
  }
  s->msum = calloc((size_t)slots + 1, sizeof(double));
  s->mcnt = calloc((size_t)slots + 1, sizeof(int));
  s->best = INFINITY;
  s->nb_cap = 2 * ht_space_param_count(space) + 1;
  for (int p = 0; p < ht_space_param_count(space); p++) s->nb_cap += ht_space_value_count(space, p);
  s->nb = malloc(sizeof(ht_config) * (size_t)s->nb_cap);
  s->walk = malloc(sizeof(ht_config) * (size_t)s->nb_cap);
  if (!s->nb || !s->walk || !s->off || !s->msum || !s->mcnt) {
    ils_destroy(s);
    return ht_error(HT_ERR_NOMEM, "out of memory");
  }
  *state = s;
  return HT_OK;
}

static int ils_ask(void *state, ht_config *out, int max) {
  ils_state *s = state;
  int n = 0;
  while (n < max && next_config(s, &out[n])) n++;
  return n;
}

static void ils_tell(void *state, const ht_config *cfg, const ht_result *r) {
  ils_state *s = state;
  double f = ht_objective(r);
  ht_config_set_put(&s->known, cfg, f);
  model_add(s, cfg, f);
  if (f < s->best) {
    s->best = f;
    s->best_cfg = *cfg;
    s->improved = 1;
  }
  if (s->awaiting && ht_config_equal(cfg, &s->await)) {
    s->awaiting = 0;
    set_current(s, cfg, f);
  } else if (s->have_cur && f < s->fcur) {
    if (distance(cfg, &s->cur) == 1) set_current(s, cfg, f); /* a better neighbour */
  }
}


const ht_strategy_ops ht_strategy_greedy_ils = {
  "greedy_ils", "iterated first-improvement local search with random-walk perturbation and restarts",
  ils_init, ils_ask, ils_tell, ils_destroy, NULL};
