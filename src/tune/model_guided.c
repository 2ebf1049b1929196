/* model_guided: the AutoTVM loop with an XGBoost cost model.
 *
 * Algorithm
 *   1. The first n_init configs are drawn uniformly at random (without replacement).
 *   2. After that, whenever the internal queue is empty, a boosted-tree model is fitted on every
 *      evaluation told so far (an ask that comes before every asked config was told fits on what is
 *      known), and ranks a candidate pool of untested valid configs: `candidates` drawn uniformly
 *      (ht_sample_unasked) plus the valid Hamming neighbours (one parameter changed) of the `top`
 *      best configs observed. The best `batch` candidates by predicted time are queued; each slot of
 *      the batch is instead a uniformly random candidate with probability `epsilon` (exploration).
 *   3. The tune loop asks one config at a time and tells its result; the queue is refilled (model
 *      refitted) when it runs dry. Asks return 0 only when every valid config was asked.
 *   Features: each parameter's numeric value (string parameters: the index of the value); with
 *   pairs=1 also the product of every pair of numeric parameters (up to 16 parameters), which lets
 *   the trees see e.g. a work-group size TX*TY in one split.
 *   Targets: objective=reg fits log(time) with squared error; failed configs get a penalty above the
 *   worst observed (worst + max(0.5 * (worst - best), 0.1) in log space). objective=rank trains
 *   rank:pairwise (as AutoTVM does) on the same targets negated; only the order matters there.
 *   If XGBoost fails (any non-zero return code), a warning is logged once and that batch is random.
 *   Fewer than two distinct successful results also give a random batch (nothing to learn yet).
 *   Deterministic: XGBoost runs with nthread=1 and a seed derived from the strategy's seed.
 *
 * Options (defaults)
 *   n_init=10       random configs before the first model
 *   batch=8         configs measured between refits
 *   candidates=2000 uniformly sampled untested configs ranked per refit
 *   top=5           best observed configs whose neighbours join the candidates
 *   epsilon=0.1     share of each batch drawn at random
 *   objective=reg   reg (log-time regression) or rank (rank:pairwise)
 *   pairs=0         1 adds pairwise products of numeric parameters as features
 *   rounds=50, depth=5, eta=0.3   boosting rounds, tree depth, learning rate (min_child_weight=1)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xgboost/c_api.h>

#include "tune/strategy_util.h"

#define MAX_PAIR_PARAMS 16
#define NEIGH_MAX 512

typedef struct mg_state {
  ht_space *space;
  ht_rng rng;
  uint64_t seed, count;
  int np, nfeat;
  int numeric[HT_MAX_PARAMS]; /* 1 when every value of the parameter is a number */
  int pair_a[MAX_PAIR_PARAMS * MAX_PAIR_PARAMS], pair_b[MAX_PAIR_PARAMS * MAX_PAIR_PARAMS], n_pairs;
  double *fval; /* fval[p * vmax + v]: feature value of parameter p's v-th value */
  int vmax;
  /* options */
  int n_init, batch, n_cand, top, rounds, depth, rank;
  double eps, eta;
  /* what is known */
  ht_config_set asked;
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
  s->n_init = clampi(ht_options_int(opt, "n_init", 10), 1, 1 << 20);
  s->batch = clampi(ht_options_int(opt, "batch", 8), 1, 1 << 16);
  s->n_cand = clampi(ht_options_int(opt, "candidates", 2000), 1, 1 << 22);
  s->top = clampi(ht_options_int(opt, "top", 5), 0, 1 << 10);
  s->rounds = clampi(ht_options_int(opt, "rounds", 50), 1, 10000);
  s->depth = clampi(ht_options_int(opt, "depth", 5), 1, 16);
  s->eps = ht_options_double(opt, "epsilon", 0.1);
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
  if (!st) st = ht_space_count(space, &s->count);

  /* Feature table: value (or index for strings) of every parameter value. */
  s->np = ht_space_param_count(space);
  for (int p = 0; p < s->np; p++)
    if (ht_space_value_count(space, p) > s->vmax) s->vmax = ht_space_value_count(space, p);
  if (!st) {
    s->fval = malloc(sizeof(double) * (size_t)(s->np ? s->np : 1) * (size_t)(s->vmax ? s->vmax : 1));
    s->q_cap = s->batch > s->n_init ? s->batch : s->n_init;
    s->queue = malloc(sizeof(ht_config) * (size_t)s->q_cap);
    if (!s->fval || !s->queue) st = ht_error(HT_ERR_NOMEM, "out of memory");
  }
  for (int p = 0; !st && p < s->np; p++) {
    int nv = ht_space_value_count(space, p);
    s->numeric[p] = 1;
    for (int v = 0; v < nv; v++)
      if (ht_space_value(space, p, v).kind == HT_VAL_STR) s->numeric[p] = 0;
    for (int v = 0; v < nv; v++)
      s->fval[p * s->vmax + v] = s->numeric[p] ? ht_value_as_double(ht_space_value(space, p, v)) : v;
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
    free(s->queue);
    free(s);
    return st;
  }
  *state = s;
  return HT_OK;
}

static void features(const mg_state *s, const ht_config *c, float *row) {
  for (int p = 0; p < s->np; p++) row[p] = (float)s->fval[p * s->vmax + c->idx[p]];
  for (int k = 0; k < s->n_pairs; k++) {
    int a = s->pair_a[k], b = s->pair_b[k];
    row[s->np + k] = (float)(s->fval[a * s->vmax + c->idx[a]] * s->fval[b * s->vmax + c->idx[b]]);
  }
}

static void warn_once(mg_state *s, const char *what) {
  if (s->warned) return;
  s->warned = 1;
  ht_log(1, "model_guided: XGBoost %s failed (%s); sampling at random instead", what, XGBGetLastError());
}

/* Fits the model on every told evaluation and writes a score per candidate (higher = better).
 * 0 on success; 1 when there is nothing to learn; -1 when XGBoost failed (warned). */
static int fit_and_score(mg_state *s, const ht_config *cand, int n_cand, double *score) {
  int n = s->n_obs, nf = s->nfeat > 0 ? s->nfeat : 1;
  double best = INFINITY, worst = -INFINITY;
  for (int i = 0; i < n; i++)
    if (isfinite(s->time[i])) {
      double l = log(s->time[i] > 1e-30 ? s->time[i] : 1e-30);
      if (l < best) best = l;
      if (l > worst) worst = l;
    }
  if (!(worst > best) || s->nfeat == 0) return 1; /* under two distinct successful results */
  double penalty = worst + fmax(0.5 * (worst - best), 0.1);
  float *x = malloc(sizeof(float) * (size_t)n * (size_t)nf), *y = malloc(sizeof(float) * (size_t)n);
  float *xc = malloc(sizeof(float) * (size_t)n_cand * (size_t)nf);
  DMatrixHandle dtrain = NULL, dcand = NULL;
  BoosterHandle bst = NULL;
  int rc = -1;
  const char *what = "training";
  if (!x || !y || !xc) goto done;
  double mean = 0;
  for (int i = 0; i < n; i++) {
    features(s, &s->obs[i], x + (size_t)i * nf);
    double l = isfinite(s->time[i]) ? log(s->time[i] > 1e-30 ? s->time[i] : 1e-30) : penalty;
    y[i] = (float)(s->rank ? -l : l);
    mean += l;
  }
  mean /= n;
  for (int i = 0; i < n_cand; i++) features(s, &cand[i], xc + (size_t)i * nf);
  char seed[32], eta[32], base[32], depth[16];
  snprintf(depth, sizeof depth, "%d", s->depth);
  snprintf(seed, sizeof seed, "%d", (int)(s->seed & 0x7fffffff));
  snprintf(eta, sizeof eta, "%.17g", s->eta);
  snprintf(base, sizeof base, "%.9g", mean);
  unsigned group = (unsigned)n;
  int bad = XGDMatrixCreateFromMat_omp(x, (bst_ulong)n, (bst_ulong)nf, NAN, &dtrain, 1) ||
            XGDMatrixSetFloatInfo(dtrain, "label", y, (bst_ulong)n) ||
            (s->rank && XGDMatrixSetUIntInfo(dtrain, "group", &group, 1)) ||
            XGBoosterCreate(&dtrain, 1, &bst) || XGBoosterSetParam(bst, "verbosity", "0") ||
            XGBoosterSetParam(bst, "nthread", "1") || XGBoosterSetParam(bst, "seed", seed) ||
            XGBoosterSetParam(bst, "booster", "gbtree") || XGBoosterSetParam(bst, "tree_method", "exact") ||
            XGBoosterSetParam(bst, "objective", s->rank ? "rank:pairwise" : "reg:squarederror") ||
            XGBoosterSetParam(bst, "max_depth", depth) || XGBoosterSetParam(bst, "eta", eta) ||
            XGBoosterSetParam(bst, "min_child_weight", "1") ||
            (!s->rank && XGBoosterSetParam(bst, "base_score", base));
  for (int it = 0; !bad && it < s->rounds; it++) bad = XGBoosterUpdateOneIter(bst, it, dtrain) != 0;
  if (bad) goto done;
  what = "prediction";
  bst_ulong out_len = 0;
  const float *pred = NULL;
  if (XGDMatrixCreateFromMat_omp(xc, (bst_ulong)n_cand, (bst_ulong)nf, NAN, &dcand, 1) ||
      XGBoosterPredict(bst, dcand, 0, 0, 0, &out_len, &pred) || out_len != (bst_ulong)n_cand || !pred)
    goto done;
  for (int i = 0; i < n_cand; i++) score[i] = s->rank ? pred[i] : -(double)pred[i];
  rc = 0;
done:
  if (rc < 0) {
    if (!x || !y || !xc) {
      if (!s->warned) ht_log(1, "model_guided: out of memory fitting the model; sampling at random instead");
      s->warned = 1;
    } else {
      warn_once(s, what);
    }
  }
  if (dcand && XGDMatrixFree(dcand)) warn_once(s, "free");
  if (bst && XGBoosterFree(bst)) warn_once(s, "free");
  if (dtrain && XGDMatrixFree(dtrain)) warn_once(s, "free");
  free(x);
  free(y);
  free(xc);
  return rc;
}

typedef struct scored {
  double score;
  int i;
} scored;

static int by_score_desc(const void *a, const void *b) {
  const scored *x = a, *y = b;
  if (x->score != y->score) return x->score > y->score ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
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

/* Up to max unasked valid configs drawn uniformly. ht_space_sample already returns distinct configs,
 * so one draw filtered against the asked set is enough while most of the space is unasked (and far
 * cheaper than ht_sample_unasked's pairwise duplicate check); when the filter leaves under half,
 * ht_sample_unasked takes over (it scans small spaces, so nothing unasked is missed). */
static int sample_candidates(mg_state *s, ht_config *out, int max) {
  int got = 0, n = 0;
  if (ht_space_sample(s->space, &s->rng, max, out, &got) == HT_OK)
    for (int i = 0; i < got; i++)
      if (!ht_config_set_has(&s->asked, &out[i])) out[n++] = out[i];
  if (2 * n >= max) return n;
  return ht_sample_unasked(s->space, &s->rng, &s->asked, out, max);
}

/* Refills the queue: random configs until n_init were asked, then a model-ranked batch. */
static void refill(mg_state *s) {
  s->q_head = s->q_n = 0;
  if ((int64_t)s->asked.n < s->n_init) {
    s->q_n = ht_sample_unasked(s->space, &s->rng, &s->asked, s->queue, s->n_init - (int)s->asked.n);
    return;
  }
  int cap = s->n_cand + s->top * NEIGH_MAX;
  ht_config *cand = malloc(sizeof(ht_config) * (size_t)cap);
  double *score = malloc(sizeof(double) * (size_t)cap);
  scored *order = malloc(sizeof(scored) * (size_t)cap);
  char *taken = calloc((size_t)cap, 1);
  if (!cand || !score || !order || !taken) { /* fall back to a small random batch */
    s->q_n = ht_sample_unasked(s->space, &s->rng, &s->asked, s->queue, s->batch);
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
    for (int i = 0; i < n_uni && s->q_n < s->batch; i++) s->queue[s->q_n++] = cand[i];
    goto done;
  }
  for (int i = 0; i < n; i++) order[i] = (scored){score[i], i};
  qsort(order, (size_t)n, sizeof *order, by_score_desc);
  int next = 0, want = s->batch < n ? s->batch : n;
  while (s->q_n < want) {
    int pick = -1;
    if (s->eps > 0 && ht_rng_uniform(&s->rng) < s->eps) {
      int r = (int)ht_rng_below(&s->rng, (uint64_t)n_uni);
      for (int k = 0; k < n_uni && pick < 0; k++) /* nearest untaken from a random start */
        if (!taken[(r + k) % n_uni]) pick = (r + k) % n_uni;
    }
    while (pick < 0 && next < n) {
      if (!taken[order[next].i]) pick = order[next].i;
      next++;
    }
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
  free(order);
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
}

static void mg_destroy(void *state) {
  mg_state *s = state;
  if (!s) return;
  if (s->n_fits)
    ht_log(3, "model_guided: %d refits, on average %.2f ms fit+predict, %.2f ms sampling+selection", s->n_fits, 1e3 * s->fit_s / s->n_fits,
           1e3 * s->rank_s / s->n_fits);
  ht_config_set_free(&s->asked);
  free(s->obs);
  free(s->time);
  free(s->queue);
  free(s->fval);
  free(s);
}

const ht_strategy_ops ht_strategy_model_guided = {
  "model_guided", "AutoTVM loop: an XGBoost cost model ranks sampled configs, the best batch is measured",
  mg_init, mg_ask, mg_tell, mg_destroy};
