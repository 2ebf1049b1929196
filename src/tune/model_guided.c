/* model_guided: the AutoTVM loop with a boosted-tree cost model (the gbt model kind: trained by
 * XGBoost, evaluated by its own tree walk, which gives XGBoost's predictions bit for bit).
 *
 * Algorithm
 *   1. Initial design: n_init configs. With spread=1 each is picked greedily as the farthest (in
 *      rank space: every parameter's value index scaled to [0, 1]) from the configs already picked,
 *      among 20x as many uniform draws; spread=0 draws them uniformly.
 *   2. Then, whenever the internal queue is empty, boosted trees are fitted on every evaluation
 *      told so far (an ask that comes before every asked config was told fits on what is known) and
 *      rank a candidate pool of untested valid configs: `candidates` uniform draws plus the valid
 *      Hamming neighbours (one parameter changed) of the `top` best configs observed.
 *   3. A batch is queued. Its first `local` slots take the best-ranked neighbour of the best observed
 *      configs (local refinement, as a local search would); every other slot is, with probability
 *      epsilon, a random candidate (explore=1: the one farthest from everything observed among 256
 *      draws; explore=2: the same among the top 10% by the model), else the best-ranked untaken
 *      candidate. With models > 1, the boosters are fitted on bootstrap resamples and the criterion
 *      is their mean plus kappa times their spread (ts=1: slot k uses booster k % models alone,
 *      Thompson-style).
 *   4. Batch size: `batch`, or with batch=0 one config per `ramp` observations (at most 16), at
 *      least one per 50 observations either way, so refits stay cheap early and amortised late.
 *   Asks return 0 only when every valid config was asked.
 *   Features: each parameter's numeric value (string parameters: the index of the value); with
 *   pairs=1 also the product of every pair of numeric parameters (up to 16 parameters).
 *   Targets: objective=reg fits log(time) with squared error; failed configs get a penalty above the
 *   worst observed (worst + max(0.5 * (worst - best), 0.1) in log space). objective=rank trains
 *   rank:pairwise (as AutoTVM does) on the same targets negated; only the order matters there.
 *   If fitting fails (XGBoost refuses a parameter, memory runs out), a warning is logged once and
 *   that batch is random.
 *   Fewer than two distinct successful results also give a random batch (nothing to learn yet).
 *   Deterministic: XGBoost runs with nthread=1 and a seed derived from the strategy's seed.
 *
 * Options (defaults; with them strategy-bench, 20 seeds, scores a mean 0.572 and worst space 0.216,
 * against 0.397 and -0.085 for the earlier fixed batch of 8 with a uniform initial design)
 *   n_init=10       configs of the initial design
 *   spread=1        space-filling initial design (0: uniform)
 *   batch=0         configs per refit (0: adaptive, one per `ramp` observations, at most 16)
 *   ramp=25         observations per batch slot when batch=0
 *   refit_share=0.005  batch=0: batches large enough that a refit (~8 ms) costs at most this
 *                   share of their evaluations' wall time, at most one slot per 16 observations
 *                   (0 = off). On gemm_c's 0.109 s evaluations its own time fell from 1.48% to
 *                   0.76% of the clock; strategy-bench 0.761 against 0.749 (seeds 1-50) and 0.744
 *                   against 0.732 (101-200): C spaces -0.01 to -0.03, OpenCL spaces up to +0.05
 *   candidates=2000 uniformly sampled untested configs ranked per refit
 *   top=5           best observed configs whose neighbours join the candidates
 *   local=1         slots per batch given to the best neighbour of the best configs
 *   epsilon=0.1     share of the other slots drawn at random
 *   explore=0       how random slots are drawn: 0 uniform, 1 farthest of 256, 2 farthest of the top 10%
 *   models=1        boosters per refit (more: bootstrap ensemble)
 *   kappa=0         with models > 1: weight of the ensemble spread in the criterion
 *   ts=1            with models > 1: slot k ranks by booster k (Thompson-style)
 *   subsample=1     XGBoost row subsampling
 *   objective=reg   reg (log-time regression) or rank (rank:pairwise)
 *   pairs=0         1 adds pairwise products of numeric parameters as features
 *   rounds=50, depth=5, eta=0.3   boosting rounds, tree depth, learning rate (min_child_weight=1)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/surrogate.h"
#include "tune/strategy_util.h"

#define MAX_PAIR_PARAMS 16
#define NEIGH_MAX 512
/* What one refit (boosting and ranking ~2000 candidates) costs: 7.3 ms at 50 observations on the
 * development machine (BENCHMARKS.md), rounded up. A constant, not a clock, so a run depends only
 * on its seed and its tells. */
#define REFIT_S 0.008

typedef struct mg_state {
  ht_space *space;
  ht_rng rng;
  uint64_t seed, count;
  int np, nfeat;
  int numeric[HT_MAX_PARAMS]; /* 1 when every value of the parameter is a number */
  int pair_a[MAX_PAIR_PARAMS * MAX_PAIR_PARAMS], pair_b[MAX_PAIR_PARAMS * MAX_PAIR_PARAMS], n_pairs;
  double *fval; /* fval[p * vmax + v]: feature value of parameter p's v-th value */
  double *rk;   /* rk[p * vmax + v]: rank of that value among the parameter's values, scaled to [0,1] */
  int vmax;
  /* options */
  int n_init, batch, ramp, n_cand, top, rounds, depth, rank, models, ts, spread, local, explore;
  double eps, eta, kappa, subsample;
  double share; /* batch=0: refits may cost at most this share of the evaluations' wall time */
  double wall;  /* wall time of every evaluation told */
  /* what is known */
  ht_config_set asked;
  ht_config_set drawn; /* sample_candidates' configs of one refill, kept so refills reuse its memory */
  ht_config *obs;
  double *time; /* objective (+inf for failures) */
  int n_obs, cap_obs;
  /* the batch being handed out */
  ht_config *queue;
  int q_head, q_n, q_cap;
  int warned;
  /* cost accounting (debug log on destroy) */
  int n_fits;
  double fit_s, rank_s;
} mg_state;

static int clampi(int64_t v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : (int)v; }

static ht_status mg_init(void **state, ht_space *space, const ht_options *opt, uint64_t seed) {
  mg_state *s = calloc(1, sizeof *s);
  if (!s) return ht_error(HT_ERR_NOMEM, "out of memory");
  s->space = space;
  s->seed = seed;
  ht_rng_seed(&s->rng, seed ^ UINT64_C(0x6d6f64656c677569));
  ht_config_set_init(&s->asked);
  ht_config_set_init(&s->drawn);
  s->n_init = clampi(ht_options_int(opt, "n_init", 10), 1, 1 << 20);
  s->batch = clampi(ht_options_int(opt, "batch", 0), 0, 1 << 16);
  s->ramp = clampi(ht_options_int(opt, "ramp", 25), 1, 1 << 16);
  s->share = fmin(fmax(ht_options_double(opt, "refit_share", 0.005), 0.0), 1.0);
  s->n_cand = clampi(ht_options_int(opt, "candidates", 2000), 1, 1 << 22);
  s->top = clampi(ht_options_int(opt, "top", 5), 0, 1 << 10);
  s->rounds = clampi(ht_options_int(opt, "rounds", 50), 1, 10000);
  s->depth = clampi(ht_options_int(opt, "depth", 5), 1, 16);
  s->eps = ht_options_double(opt, "epsilon", 0.1);
  s->spread = (int)ht_options_int(opt, "spread", 1);
  s->explore = (int)ht_options_int(opt, "explore", 0);
  s->local = clampi(ht_options_int(opt, "local", 1), 0, 1 << 16);
  s->models = clampi(ht_options_int(opt, "models", 1), 1, 64);
  s->ts = (int)ht_options_int(opt, "ts", 1);
  s->kappa = ht_options_double(opt, "kappa", 0.0);
  s->subsample = ht_options_double(opt, "subsample", 1.0);
  s->eta = ht_options_double(opt, "eta", 0.3);
  const char *obj = ht_options_str(opt, "objective", "reg");
  int pairs = (int)ht_options_int(opt, "pairs", 0);
  ht_status st = HT_OK;
  if (strcmp(obj, "reg") == 0) s->rank = 0;
  else if (strcmp(obj, "rank") == 0) s->rank = 1;
  else st = ht_error(HT_ERR_INVALID, "model_guided: objective must be reg or rank, not '%s'", obj);
  if (!st && !(s->eps >= 0 && s->eps <= 1))
    st = ht_error(HT_ERR_INVALID, "model_guided: epsilon must be in [0, 1]");
  if (!st && !(s->eta > 0 && s->eta <= 1)) st = ht_error(HT_ERR_INVALID, "model_guided: eta must be in (0, 1]");
  if (!st) st = ht_strategy_space_bound(space, &s->count);

  /* Feature table: value (or index for strings) of every parameter value. */
  s->np = ht_space_param_count(space);
  for (int p = 0; p < s->np; p++)
    if (ht_space_value_count(space, p) > s->vmax) s->vmax = ht_space_value_count(space, p);
  if (!st) {
    s->fval = malloc(sizeof(double) * (size_t)(s->np ? s->np : 1) * (size_t)(s->vmax ? s->vmax : 1));
    s->rk = malloc(sizeof(double) * (size_t)(s->np ? s->np : 1) * (size_t)(s->vmax ? s->vmax : 1));
    s->q_cap = s->batch > s->n_init ? s->batch : s->n_init;
    if (s->q_cap < 64) s->q_cap = 64;
    s->queue = malloc(sizeof(ht_config) * (size_t)s->q_cap);
    if (!s->fval || !s->rk || !s->queue) st = ht_error(HT_ERR_NOMEM, "out of memory");
  }
  for (int p = 0; !st && p < s->np; p++) {
    int nv = ht_space_value_count(space, p);
    s->numeric[p] = 1;
    for (int v = 0; v < nv; v++)
      if (ht_space_value(space, p, v).kind == HT_VAL_STR) s->numeric[p] = 0;
    for (int v = 0; v < nv; v++)
      s->fval[p * s->vmax + v] = s->numeric[p] ? ht_value_as_double(ht_space_value(space, p, v)) : v;
    for (int v = 0; v < nv; v++) {
      int r = 0;
      for (int u = 0; u < nv; u++) r += s->fval[p * s->vmax + u] < s->fval[p * s->vmax + v];
      s->rk[p * s->vmax + v] = nv > 1 ? (double)r / (nv - 1) : 0;
    }
  }
  if (!st && pairs && s->np <= MAX_PAIR_PARAMS)
    for (int a = 0; a < s->np; a++)
      for (int b = a + 1; b < s->np; b++)
        if (s->numeric[a] && s->numeric[b] && ht_space_value_count(space, a) > 1 &&
            ht_space_value_count(space, b) > 1) {
          s->pair_a[s->n_pairs] = a;
          s->pair_b[s->n_pairs++] = b;
        }
  s->nfeat = s->np + s->n_pairs;
  if (st) {
    free(s->fval);
    free(s->rk);
    free(s->queue);
    free(s);
    return st;
  }
  *state = s;
  return HT_OK;
}

static void features(const mg_state *s, const ht_config *c, double *row) {
  for (int p = 0; p < s->np; p++) row[p] = s->fval[p * s->vmax + c->idx[p]];
  for (int k = 0; k < s->n_pairs; k++) {
    int a = s->pair_a[k], b = s->pair_b[k];
    row[s->np + k] = s->fval[a * s->vmax + c->idx[a]] * s->fval[b * s->vmax + c->idx[b]];
  }
}

/* The training set: every told evaluation's features and log time, failures at the penalty;
 * negated for the ranking objective (higher ranks better). */
static ht_status training_set(mg_state *s, double penalty, ht_dataset **out) {
  ht_status st = ht_dataset_create(s->n_obs, s->nfeat, out);
  for (int i = 0; !st && i < s->n_obs; i++) {
    features(s, &s->obs[i], (*out)->x + (size_t)i * s->nfeat);
    double l = isfinite(s->time[i]) ? log(s->time[i] > 1e-30 ? s->time[i] : 1e-30) : penalty;
    (*out)->y[i] = s->rank ? -l : l;
  }
  return st;
}

/* Fits s->models boosted-tree models (the gbt kind; one: on every told evaluation, more: on
 * bootstrap resamples) and writes each one's score per candidate (higher = better) to
 * score[k * n_cand + i]. 0 on success; 1 when there is nothing to learn; -1 when fitting failed
 * (warned once). */
static int fit_and_score(mg_state *s, const ht_config *cand, int n_cand, double *score) {
  int n = s->n_obs;
  double best = INFINITY, worst = -INFINITY;
  for (int i = 0; i < n; i++)
    if (isfinite(s->time[i])) {
      double l = log(s->time[i] > 1e-30 ? s->time[i] : 1e-30);
      if (l < best) best = l;
      if (l > worst) worst = l;
    }
  if (!(worst > best) || s->nfeat == 0) return 1; /* under two distinct successful results */
  const ht_model_ops *gbt = ht_model_kind_find("gbt");
  ht_dataset *d = NULL;
  double *w = malloc(sizeof(double) * (size_t)n), row[HT_MAX_PARAMS + MAX_PAIR_PARAMS * MAX_PAIR_PARAMS];
  double penalty = worst + fmax(0.5 * (worst - best), 0.1);
  ht_status st = w ? training_set(s, penalty, &d) : ht_error(HT_ERR_NOMEM, "out of memory");
  ht_gbt_params p = {s->rounds, s->depth, s->eta, s->subsample, 1, 1, s->rank, s->models > 1 ? w : NULL};
  for (int k = 0; !st && k < s->models; k++) {
    uint64_t seed = ht_rng_next(&s->rng);
    if (s->models > 1) { /* bootstrap: multinomial counts as weights */
      for (int i = 0; i < n; i++) w[i] = 0;
      for (int i = 0; i < n; i++) w[ht_rng_below(&s->rng, (uint64_t)n)] += 1;
    }
    void *trees;
    if ((st = ht_gbt_train(&trees, d, &p, seed, NULL))) break;
    for (int i = 0; i < n_cand; i++) {
      features(s, &cand[i], row);
      double pred = gbt->predict(trees, row);
      score[(size_t)k * n_cand + i] = s->rank ? pred : -pred;
    }
    gbt->destroy(trees);
  }
  if (st && !s->warned) {
    s->warned = 1;
    ht_log(1, "model_guided: fitting the boosted trees failed (%s); sampling at random instead", ht_last_error());
  }
  ht_dataset_destroy(d);
  free(w);
  return st ? -1 : 0;
}

typedef struct told {
  double t;
  int i;
} told;

static int by_time(const void *a, const void *b) {
  const told *x = a, *y = b;
  if (x->t != y->t) return x->t < y->t ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

/* Adds the unasked valid neighbours of the `top` best observed configs to cand (deduplicated). */
static int add_neighbours(mg_state *s, ht_config *cand, int n, int cap) {
  if (s->top <= 0 || s->n_obs == 0) return n;
  told *order = malloc(sizeof(told) * (size_t)s->n_obs);
  ht_config *nb = malloc(sizeof(ht_config) * NEIGH_MAX);
  ht_config_set pool;
  ht_config_set_init(&pool);
  int ok = order && nb;
  for (int i = 0; ok && i < n; i++) ok = ht_config_set_add(&pool, &cand[i]) >= 0;
  int m = 0;
  for (int i = 0; ok && i < s->n_obs; i++)
    if (isfinite(s->time[i])) order[m++] = (told){s->time[i], i};
  if (ok) qsort(order, (size_t)m, sizeof *order, by_time);
  for (int k = 0; ok && k < m && k < s->top && n < cap; k++) {
    int got = 0;
    if (ht_space_neighbours(s->space, &s->obs[order[k].i], HT_NEIGH_HAMMING, nb, NEIGH_MAX, &got)) break;
    for (int j = 0; j < got && n < cap; j++)
      if (!ht_config_set_has(&s->asked, &nb[j]) && ht_config_set_add(&pool, &nb[j]) == 1) cand[n++] = nb[j];
  }
  ht_config_set_free(&pool);
  free(nb);
  free(order);
  return n;
}

/* Up to max unasked valid configs drawn uniformly, in random order. ht_space_sample returns distinct
 * configs; a few draws are filtered against the asked set and each other (hash sets, not
 * ht_sample_unasked's pairwise check, which costs tens of ms once a small space is half asked).
 * When that leaves under half of what is wanted (a mostly asked space), the valid list is scanned
 * from a random start, so nothing unasked is ever missed. */
static int sample_candidates(mg_state *s, ht_config *out, int max) {
  if (max <= 0 || s->asked.n >= s->count) return 0;
  uint64_t left = s->count - s->asked.n;
  int want = left < (uint64_t)max ? (int)left : max, n = 0;
  ht_config *draw = malloc(sizeof(ht_config) * (size_t)max);
  ht_config_set *seen = &s->drawn;
  ht_config_set_clear(seen);
  for (int round = 0; draw && round < 4 && n < want; round++) {
    int got = 0;
    if (ht_space_sample(s->space, &s->rng, max, draw, &got)) break;
    for (int i = 0; i < got && n < want; i++)
      if (!ht_config_set_has(&s->asked, &draw[i]) && ht_config_set_add(seen, &draw[i]) == 1) out[n++] = draw[i];
    if ((uint64_t)got >= s->count) break; /* drew the whole space */
  }
  if (2 * n < want && s->count <= (UINT64_C(1) << 24)) {
    uint64_t start = ht_rng_below(&s->rng, s->count);
    for (uint64_t k = 0; k < s->count && n < want; k++) {
      ht_config c;
      if (ht_space_get(s->space, (start + k) % s->count, &c)) break;
      if (!ht_config_set_has(&s->asked, &c) && ht_config_set_add(seen, &c) == 1) out[n++] = c;
    }
  }
  for (int i = n - 1; i > 0; i--) { /* random order: ties in the model's ranking break at random */
    int j = (int)ht_rng_below(&s->rng, (uint64_t)i + 1);
    ht_config t = out[i];
    out[i] = out[j];
    out[j] = t;
  }
  free(draw);
  return n;
}

static double dist2(const mg_state *s, const ht_config *a, const ht_config *b) {
  double d = 0;
  for (int p = 0; p < s->np; p++) {
    double e = s->rk[p * s->vmax + a->idx[p]] - s->rk[p * s->vmax + b->idx[p]];
    d += e * e;
  }
  return d;
}

/* Initial design: `want` configs picked greedily for spread (each the farthest, in rank space,
 * from the observed and the already picked ones) among 20x as many uniform draws. */
static int spread_sample(mg_state *s, ht_config *out, int want) {
  int m = want * 20 < 2000 ? want * 20 : 2000;
  if (m < want) m = want;
  ht_config *pool = malloc(sizeof(ht_config) * (size_t)m);
  double *dmin = malloc(sizeof(double) * (size_t)m);
  if (!pool || !dmin) {
    free(pool);
    free(dmin);
    return ht_sample_unasked(s->space, &s->rng, &s->asked, out, want);
  }
  int n = sample_candidates(s, pool, m), got = 0;
  for (int i = 0; i < n; i++) {
    dmin[i] = INFINITY;
    for (int j = 0; j < s->n_obs; j++) dmin[i] = fmin(dmin[i], dist2(s, &pool[i], &s->obs[j]));
  }
  while (got < want && got < n) {
    int pick = 0; /* the first draw when nothing is known: uniform */
    for (int i = 1; i < n; i++)
      if (dmin[i] > dmin[pick]) pick = i;
    if (dmin[pick] < 0) break;
    out[got++] = pool[pick];
    dmin[pick] = -1;
    for (int i = 0; i < n; i++)
      if (dmin[i] >= 0) dmin[i] = fmin(dmin[i], dist2(s, &pool[i], &pool[pick]));
  }
  free(pool);
  free(dmin);
  return got;
}

static int hamming1(const mg_state *s, const ht_config *a, const ht_config *b) {
  int d = 0;
  for (int p = 0; p < s->np && d < 2; p++) d += a->idx[p] != b->idx[p];
  return d == 1;
}

/* The best-scored untaken candidate that differs in one parameter from the best observed config
 * that still has such candidates (among the `top` best); -1 when none. */
static int local_pick(mg_state *s, const ht_config *cand, int n, const double *crit, const char *taken) {
  int m = 0, pick = -1;
  told *order = malloc(sizeof(told) * (size_t)(s->n_obs ? s->n_obs : 1));
  if (!order) return -1;
  for (int i = 0; i < s->n_obs; i++)
    if (isfinite(s->time[i])) order[m++] = (told){s->time[i], i};
  qsort(order, (size_t)m, sizeof *order, by_time);
  for (int k = 0; k < m && k < s->top && pick < 0; k++)
    for (int i = 0; i < n; i++)
      if (!taken[i] && (pick < 0 || crit[i] > crit[pick]) && hamming1(s, &cand[i], &s->obs[order[k].i])) pick = i;
  free(order);
  return pick;
}

static int by_double_desc(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x < y) - (x > y);
}

/* Exploration pick: the untaken candidate farthest (rank space) from every observed config, among
 * 256 random uniform candidates (explore=1) or among those in the top 10% of the criterion
 * (explore=2). */
static int far_pick(mg_state *s, const ht_config *cand, int n, int n_uni, const double *crit, const char *taken) {
  double thr = -INFINITY;
  if (s->explore == 2) {
    double *c = malloc(sizeof(double) * (size_t)n);
    if (!c) return -1;
    memcpy(c, crit, sizeof(double) * (size_t)n);
    qsort(c, (size_t)n, sizeof *c, by_double_desc);
    thr = c[n / 10];
    free(c);
  }
  int pick = -1;
  double best = -1;
  for (int t = 0; t < 256; t++) {
    int i = s->explore == 2 ? (int)ht_rng_below(&s->rng, (uint64_t)n) : (int)ht_rng_below(&s->rng, (uint64_t)n_uni);
    if (taken[i] || crit[i] < thr) continue;
    double d = INFINITY;
    for (int j = 0; j < s->n_obs; j++) d = fmin(d, dist2(s, &cand[i], &s->obs[j]));
    if (d > best) {
      best = d;
      pick = i;
    }
  }
  return pick;
}

/* Refills the queue: random configs until n_init were asked, then a model-ranked batch. */
/* Configs per refit: batch, or (batch=0) one per `ramp` observations up to 16; at least one per 50
 * observations either way, which bounds the amortised refit cost. With batch=0 and cheap
 * evaluations, also enough that a refit costs at most refit_share of the batch's evaluation time
 * (estimated from the wall times told), but at most one slot per 16 observations. */
static int batch_size(const mg_state *s) {
  int b = s->batch > 0 ? s->batch : s->n_obs / s->ramp;
  if (s->batch <= 0 && b > 16) b = 16;
  if (b < s->n_obs / 50) b = s->n_obs / 50;
  if (s->batch <= 0 && s->share > 0 && s->n_obs > 0 && s->wall > 0) { /* cheap evaluations: refit less often */
    double need = REFIT_S / (s->share * (s->wall / s->n_obs)), most = s->n_obs / 16.0;
    if (need > most) need = most; /* early models stay fresh: at most one slot per 16 observations */
    if (need > b) b = (int)ceil(need);
  }
  return b < 1 ? 1 : b > s->q_cap ? s->q_cap : b;
}

static void refill(mg_state *s) {
  s->q_head = s->q_n = 0;
  if ((int64_t)s->asked.n < s->n_init) {
    int want = s->n_init - (int)s->asked.n;
    s->q_n = s->spread ? spread_sample(s, s->queue, want) : ht_sample_unasked(s->space, &s->rng, &s->asked, s->queue, want);
    return;
  }
  int cap = s->n_cand + s->top * NEIGH_MAX;
  ht_config *cand = malloc(sizeof(ht_config) * (size_t)cap);
  double *score = malloc(sizeof(double) * (size_t)cap * (size_t)(s->models + 1));
  char *taken = calloc((size_t)cap, 1);
  if (!cand || !score || !taken) { /* fall back to a small random batch */
    s->q_n = ht_sample_unasked(s->space, &s->rng, &s->asked, s->queue, batch_size(s));
    goto done;
  }
  double t0 = ht_now();
  int n_uni = sample_candidates(s, cand, s->n_cand);
  if (n_uni == 0) goto done; /* every valid config was asked */
  int n = add_neighbours(s, cand, n_uni, cap);
  double t1 = ht_now();
  int fit = fit_and_score(s, cand, n, score);
  double t2 = ht_now();
  if (fit != 0) { /* no model: the uniform part is already in random order */
    for (int i = 0; i < n_uni && s->q_n < batch_size(s); i++) s->queue[s->q_n++] = cand[i];
    goto done;
  }
  /* Per slot: epsilon -> a random uniform candidate; otherwise the best untaken by the slot's
   * criterion (ts: model slot % models; ucb: mean + kappa * spread over the models). */
  double *crit = score + (size_t)s->models * n;
  for (int i = 0; i < n; i++) {
    double m = 0, v = 0;
    for (int k = 0; k < s->models; k++) m += score[(size_t)k * n + i];
    m /= s->models;
    for (int k = 0; k < s->models; k++) v += (score[(size_t)k * n + i] - m) * (score[(size_t)k * n + i] - m);
    crit[i] = m + (s->models > 1 ? s->kappa * sqrt(v / (s->models - 1)) : 0);
  }
  /* The refit cost grows with the observations: past 50 per batch slot, batches grow with them. */
  int b = batch_size(s), want = b < n ? b : n;
  for (int slot = 0; s->q_n < want; slot++) {
    int pick = -1;
    if (slot < s->local) pick = local_pick(s, cand, n, crit, taken);
    if (pick < 0 && s->eps > 0 && ht_rng_uniform(&s->rng) < s->eps) {
      if (s->explore) pick = far_pick(s, cand, n, n_uni, crit, taken);
      int r = (int)ht_rng_below(&s->rng, (uint64_t)n_uni);
      for (int k = 0; k < n_uni && pick < 0; k++) /* nearest untaken from a random start */
        if (!taken[(r + k) % n_uni]) pick = (r + k) % n_uni;
    }
    const double *c = s->ts && s->models > 1 ? score + (size_t)(slot % s->models) * n : crit;
    if (pick < 0)
      for (int i = 0; i < n; i++)
        if (!taken[i] && (pick < 0 || c[i] > c[pick])) pick = i;
    if (pick < 0) break;
    taken[pick] = 1;
    s->queue[s->q_n++] = cand[pick];
  }
  s->n_fits++;
  s->fit_s += t2 - t1;
  s->rank_s += (t1 - t0) + (ht_now() - t2);
  ht_log(3, "model_guided: refit on %d evaluations, %d candidates: %.2f ms", s->n_obs, n, 1e3 * (ht_now() - t0));
done:
  free(cand);
  free(score);
  free(taken);
}

static int mg_ask(void *state, ht_config *out, int max) {
  mg_state *s = state;
  int got = 0;
  while (got < max && s->asked.n < s->count) {
    if (s->q_head == s->q_n) {
      refill(s);
      if (s->q_n == 0) break;
    }
    ht_config c = s->queue[s->q_head++];
    if (ht_config_set_has(&s->asked, &c)) continue; /* told meanwhile by someone else */
    if (ht_config_set_add(&s->asked, &c) < 0) break;
    out[got++] = c;
  }
  return got;
}

static void mg_tell(void *state, const ht_config *cfg, const ht_result *r) {
  mg_state *s = state;
  if (cfg->n != s->np) return;
  if (!ht_config_set_has(&s->asked, cfg)) { /* a result the strategy did not ask for: remember it too */
    if (!ht_space_is_valid(s->space, cfg) || ht_config_set_add(&s->asked, cfg) < 0) return;
  }
  if (s->n_obs == s->cap_obs) {
    int cap = s->cap_obs ? 2 * s->cap_obs : 64;
    ht_config *o = realloc(s->obs, sizeof(ht_config) * (size_t)cap);
    if (!o) return;
    s->obs = o;
    double *t = realloc(s->time, sizeof(double) * (size_t)cap);
    if (!t) return;
    s->time = t;
    s->cap_obs = cap;
  }
  s->obs[s->n_obs] = *cfg;
  s->time[s->n_obs++] = ht_objective(r);
  s->wall += ht_eval_wall(r);
}

static void mg_destroy(void *state) {
  mg_state *s = state;
  if (!s) return;
  if (s->n_fits)
    ht_log(3, "model_guided: %d refits, on average %.2f ms fit+predict, %.2f ms sampling+selection", s->n_fits, 1e3 * s->fit_s / s->n_fits,
           1e3 * s->rank_s / s->n_fits);
  ht_config_set_free(&s->asked);
  ht_config_set_free(&s->drawn);
  free(s->obs);
  free(s->time);
  free(s->queue);
  free(s->fval);
  free(s->rk);
  free(s);
}

const ht_strategy_ops ht_strategy_model_guided = {
  "model_guided", "AutoTVM loop: an XGBoost cost model ranks sampled configs, the best batch is measured",
  mg_init, mg_ask, mg_tell, mg_destroy, NULL};
