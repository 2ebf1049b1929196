/* bayes: Bayesian optimisation with a Gaussian-process surrogate.
 *
 * Inputs: each parameter's values sorted numerically (strings, or lists holding one, keep list
 * order); a config is the rank of each value scaled to [0,1]. Single-valued parameters are dropped.
 * Output (target=copula, the default): each successful time becomes the normal quantile of its
 * mid-rank among the successful times, (rank + 1) / (n + 1), a time between two observed ones
 * interpolating their ranks; then standardised. Kernel times are heavy-tailed, and near-equal top
 * configs differ by less than the noise: the rank transform spreads the good end as evenly as the
 * bad one, and no slow config or artefact (14% of the first gemm_c recording sat at a
 * scheduler-quantum 8 ms among 0.7 ms neighbours) can stretch the scale. target=log: log(time),
 * capped at median + clip * (median - best) of the successful log times, then standardised.
 * strategy-bench (6 recorded spaces, hybrid, 4 sets of 100 seeds): copula with kappa=3 scored
 * 0.812 / 0.799 / 0.818 / 0.803 against 0.773 / 0.775 / 0.798 / - for log with kappa=2 (copula with
 * kappa=2: 0.793 and 0.805 on the second and third set, kappa=4: 0.793 and 0.812); bayes alone
 * 0.738 against 0.712 (seeds 101-200). A success arriving more than `outlier` predictive sds
 * slower than predicted stays out of the regression. Failures: fail=model leaves them out of the
 * regression and multiplies the acquisition by a success probability (kernel-weighted share of
 * successes around the candidate, one pseudo-observation at the overall rate); fail=penalty
 * regresses them at the worst target + a quarter of the range + 0.1, which scored worse where
 * failures form stripes (the penalties force short length-scales everywhere).
 *
 * Model: the Gaussian process of the gp model kind (src/model/gp_core.c, through
 * model/surrogate.h): zero mean, Matern 5/2, ARD length-scales (ard=0: one shared), signal and
 * noise variance, fitted by MAP (log marginal likelihood + weak log-normal priors, so a few points
 * cannot collapse the length-scales) with iRprop-, from the last optimum and, at the first fit and
 * every 4th, from the prior mean. A fit sees at most fit_max observations (best
 * quarter + random rest); refits come when the data grew by an eighth (every observation early,
 * every 25 at 200), bounding the amortised cost, and only once the evaluations told since the
 * last refit took 1/refit_share times the refit's estimated cost (a flop count at 5 GFLOP/s, so
 * the decision depends on the tells, not on a clock): with cheap evaluations refits come later.
 * On gemm_c (0.109 s per evaluation, ~390 evaluations per run) that took the strategy's share of
 * the clock from 1.5% to 0.6% with the same scores (0.810 / 0.798 against 0.812 / 0.799 on two
 * sets of 100 seeds).
 *
 * Acquisition: acq=lcb: mu - kappa * sd (default; with target=log it scored 0.56 against EI's 0.51),
 * or acq=ei: log expected improvement over the best observation (xi shifts it). Maximised over a
 * pool of unasked valid configs: `candidates` uniform draws plus the unasked valid neighbours of
 * the `local` best observations (each other value of one parameter, at most 16 per parameter,
 * nearest ranks first; for the best one also every two-parameter one-rank move, up to 16 params).
 * Cost: V = L^-1 k(X, pool) persists between asks and gains one row per observation (one dgemv),
 * so an ask is O(n^2 + n m), not O(n^2 m); refits redraw the pool and rebuild V with cblas_dtrsm.
 * Measured ask+tell times: BENCHMARKS.md (bench/bench_strategy_overhead).
 *
 * Initial design: n_init uniform random configs (maximin designs pick extreme configs, rarely good,
 * and scored worse); random draws go on until one evaluation succeeded. Batches and configs asked
 * but not told: kriging believer (pending configs join the GP at their predicted mean until the
 * next ask).
 *
 * Options (defaults): n_init (min(10, max(5, d + 1)), d = parameters with more than one value),
 * candidates (1500), local (3), acq (lcb | ei), kappa (3), xi (0), target (copula | log),
 * clip (target=log: 0.5; 0 = off), outlier (3; 0 = off), fail (model | penalty), ard (1),
 * fit_max (192), refit_share (0.005; 0 = refit whenever the data grew by an eighth).
 * Deterministic given the seed and the tells. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/surrogate.h"
#include "tune/strategy_util.h"

#define MAX_TH (HT_MAX_PARAMS + 2)

typedef struct bo_obs {
  ht_config c;
  double t;    /* objective: time, +inf for failures */
  int outlier; /* far slower than the model predicted when it arrived: left out of the regression */
} bo_obs;

typedef struct bo {
  ht_space *space;
  ht_rng rng;
  int D, act[HT_MAX_PARAMS], nv[HT_MAX_PARAMS]; /* active parameters (more than one value) */
  double *enc[HT_MAX_PARAMS];                   /* value index -> [0,1] rank */
  int *ord[HT_MAX_PARAMS], *rank[HT_MAX_PARAMS];
  /* options */
  int n_init, n_cand, n_local, lcb, ard, fit_max, fail_model;
  double share;      /* refits may cost at most this share of the evaluations' wall time */
  double wall_since; /* wall time of the evaluations told since the last refit */
  double xi, kappa, clip, outlier_z;
  /* history */
  ht_config_set asked;
  bo_obs *obs;
  int n_obs, cap_obs, n_ok;
  ht_config *pend, *design;
  int n_pend, cap_pend, n_design, next_design;
  /* hyperparameters */
  double th[MAX_TH];
  int n_th, fitted, fit_n, n_fits;
  /* The GP: gp.n points (n_real observations, then fakes), the pool's candidates as its pool.
   * gobs: the observation of each real point; the first n_seen observations are in the model, their
   * scaled inputs in oz (for the feasibility sums). */
  ht_gp gp;
  int n_real, n_seen, cap_gobs, cap_oz;
  int *gobs;
  double *oz;
  double ybest, ymean, ysd, ycap, ypen; /* target transform of the last targets() */
  int copula, n_sorted;                  /* target=copula: normal quantiles of the ranks */
  double *sorted;                        /* the successful log times of the last targets(), sorted */
  /* candidate pool (gp.m of them; their inputs and predictions are the GP's): configs, and the
   * kernel-weighted count of all / successful observations around each */
  int pool_cap;
  ht_config *pc;
  double *sw, *sok;
  ht_config_set pooled, expanded;
} bo;

static int grow(void **p, int *cap, int need, size_t elem) {
  if (need <= *cap) return 1;
  int c = *cap ? *cap : 16;
  while (c < need) c *= 2;
  void *q = realloc(*p, (size_t)c * elem);
  if (!q) return 0;
  *p = q;
  *cap = c;
  return 1;
}

/* ---- encoding ---- */
static int build_encoding(bo *b) {
  int P = ht_space_param_count(b->space);
  for (int p = 0; p < P; p++) {
    int n = ht_space_value_count(b->space, p);
    if (n < 2) continue;
    int k = b->D++;
    b->act[k] = p;
    b->nv[k] = n;
    b->enc[k] = malloc(sizeof(double) * (size_t)n);
    b->ord[k] = malloc(sizeof(int) * (size_t)n);
    b->rank[k] = malloc(sizeof(int) * (size_t)n);
    if (!b->enc[k] || !b->ord[k] || !b->rank[k]) return 0;
    int numeric = 1;
    for (int v = 0; v < n; v++) numeric &= ht_space_value(b->space, p, v).kind != HT_VAL_STR;
    for (int v = 0; v < n; v++) { /* insertion sort by value (lists are short) */
      double x = numeric ? ht_value_as_double(ht_space_value(b->space, p, v)) : v;
      int r = v;
      while (r > 0 &&
             (numeric ? ht_value_as_double(ht_space_value(b->space, p, b->ord[k][r - 1])) : b->ord[k][r - 1]) > x) {
        b->ord[k][r] = b->ord[k][r - 1];
        r--;
      }
      b->ord[k][r] = v;
    }
    for (int r = 0; r < n; r++) {
      b->rank[k][b->ord[k][r]] = r;
      b->enc[k][b->ord[k][r]] = (double)r / (n - 1);
    }
  }
  return 1;
}

static void encode_raw(const bo *b, const ht_config *c, double *x) {
  for (int k = 0; k < b->D; k++) x[k] = b->enc[k][c->idx[b->act[k]]];
}

/* The GP's inputs of c: its encoding scaled by the current length-scales. */
static void encode(const bo *b, const ht_config *c, double *z) {
  encode_raw(b, c, z);
  ht_gp_scale(&b->gp, z, z);
}

/* ---- hyperparameters ---- */
static int cmp_double_idx(const void *a, const void *b) {
  const double *x = a, *y = b;
  return (x[0] > y[0]) - (x[0] < y[0]);
}

/* Fits on at most fit_max of the ng model points (the best quarter and a uniform rest); y: their
 * standardised targets, gi: their observations. */
static void fit_hyper(bo *b, const double *y, const int *gi, int ng) {
  int D = b->D, nf = ng < b->fit_max ? ng : b->fit_max;
  double *x = malloc(sizeof(double) * (size_t)nf * (D ? D : 1)), *ys = malloc(sizeof(double) * (size_t)nf);
  double *order = malloc(sizeof(double) * 2 * (size_t)ng);
  if (!x || !ys || !order) goto done;
  for (int i = 0; i < ng; i++) {
    order[2 * i] = y[i];
    order[2 * i + 1] = i;
  }
  if (nf < ng) { /* best quarter, then a partial shuffle of the rest */
    qsort(order, (size_t)ng, 2 * sizeof(double), cmp_double_idx);
    for (int i = nf / 4; i < nf; i++) {
      int j = i + (int)ht_rng_below(&b->rng, (uint64_t)(ng - i));
      double t0 = order[2 * i], t1 = order[2 * i + 1];
      order[2 * i] = order[2 * j];
      order[2 * i + 1] = order[2 * j + 1];
      order[2 * j] = t0;
      order[2 * j + 1] = t1;
    }
  }
  for (int i = 0; i < nf; i++) {
    int o = (int)order[2 * i + 1];
    encode_raw(b, &b->obs[gi[o]].c, x + (size_t)i * D);
    ys[i] = y[o];
  }
  int nl = b->n_th - 2;
  double th[MAX_TH];
  if (b->fitted)
    memcpy(th, b->th, sizeof th);
  else
    ht_gp_theta_default(th, nl);
  double v = ht_gp_map_fit(x, ys, nf, D, nl, th, b->fitted ? 40 : 80);
  if (b->fitted && b->n_fits % 4 == 0) {
    double th2[MAX_TH];
    ht_gp_theta_default(th2, nl);
    if (ht_gp_map_fit(x, ys, nf, D, nl, th2, 60) > v) memcpy(th, th2, sizeof th);
  }
  if (v > -INFINITY || !b->fitted) memcpy(b->th, th, sizeof th);
  b->fitted = 1;
  b->n_fits++;
done:
  b->fit_n = b->n_obs;
  free(x);
  free(ys);
  free(order);
}

/* ---- the candidate pool: the GP holds its inputs and predictive vectors, bayes its configs ---- */
static int pool_reserve(bo *b, int need) {
  if (need <= b->pool_cap) return 1;
  int cap = b->pool_cap;
  while (cap < need) cap = cap ? 2 * cap : 1024;
  void **arr[] = {(void **)&b->pc, (void **)&b->sw, (void **)&b->sok};
  size_t per[] = {sizeof(ht_config), 8, 8};
  for (size_t i = 0; i < sizeof arr / sizeof arr[0]; i++) {
    void *q = realloc(*arr[i], per[i] * (size_t)cap);
    if (!q) return 0;
    *arr[i] = q;
  }
  b->pool_cap = cap;
  return 1;
}

static int pool_add(bo *b, const ht_config *c, int k) {
  if (k <= 0) return 1;
  int D = b->D, m = b->gp.m;
  double *z = malloc(sizeof(double) * (size_t)k * (D ? D : 1));
  int ok = z && pool_reserve(b, m + k);
  for (int j = 0; ok && j < k; j++) encode(b, &c[j], z + (size_t)j * D);
  ok = ok && ht_gp_pool_add(&b->gp, z, k);
  for (int j = 0; ok && j < k; j++) {
    const double *zj = z + (size_t)j * D;
    b->pc[m + j] = c[j];
    b->sw[m + j] = b->sok[m + j] = 0;
    for (int i = 0; b->fail_model && i < b->n_seen; i++) {
      double wt = ht_gp_matern(1.0, ht_gp_dist2(b->oz + (size_t)i * D, zj, D));
      b->sw[m + j] += wt;
      b->sok[m + j] += isfinite(b->obs[i].t) ? wt : 0.0;
    }
  }
  free(z);
  return ok;
}

static void pool_remove(bo *b, int j) {
  int last = b->gp.m - 1;
  b->pc[j] = b->pc[last];
  b->sw[j] = b->sw[last];
  b->sok[j] = b->sok[last];
  ht_gp_pool_remove(&b->gp, j);
}

static int is_point(const bo *b, int i) { return !b->obs[i].outlier && (!b->fail_model || isfinite(b->obs[i].t)); }

/* x with Phi(x) = p, 0 < p < 1: Abramowitz & Stegun 26.2.23 (error < 4.5e-4) refined by two
 * Newton steps on erfc; cheap, because every ask maps every observation. */
static double normal_quantile(double p) {
  double q = p < 0.5 ? p : 1.0 - p, t = sqrt(-2.0 * log(q));
  double x = t - (2.515517 + t * (0.802853 + t * 0.010328)) / (1.0 + t * (1.432788 + t * (0.189269 + t * 0.001308)));
  if (p < 0.5) x = -x;
  for (int i = 0; i < 2; i++) x -= (0.5 * erfc(-x / M_SQRT2) - p) / (exp(-0.5 * x * x) / sqrt(2 * M_PI));
  return x;
}

/* Copula target of log time lt among the n sorted successful log times: the normal quantile of
 * its mid-rank, interpolated between neighbours so an unseen time maps smoothly. */
static double copula_of(const double *sorted, int n, double lt) {
  int lo = 0, hi = n;
  while (lo < hi) { int mid = (lo + hi) / 2; if (sorted[mid] < lt) lo = mid + 1; else hi = mid; }
  double r = lo; /* observations strictly faster */
  int eq = lo;
  while (eq < n && sorted[eq] == lt) eq++;
  if (eq > lo) r = 0.5 * (lo + eq - 1);
  else if (lo > 0 && lo < n) r = lo - 1 + (lt - sorted[lo - 1]) / (sorted[lo] - sorted[lo - 1]);
  else if (lo == 0) r = -0.5;
  else r = n - 0.5;
  return normal_quantile((r + 1.0) / (n + 1.0));
}

static double log_time(double t) { return log(t > 1e-30 ? t : 1e-30); }

/* The target of a successful log time before standardising (the transform of the last targets()
 * call): its copula value, or the log time itself, capped. */
static double raw_target(const bo *b, double lt) {
  if (b->copula && b->n_sorted > 0) return copula_of(b->sorted, b->n_sorted, lt);
  return lt < b->ycap ? lt : b->ycap;
}

/* The standardised target of a successful time t. */
static double target_of(const bo *b, double t) {
  return (raw_target(b, log_time(t)) - b->ymean) / b->ysd;
}

/* Takes observation n_seen into the model: its inputs, the feasibility sums, and the GP when it
 * is a model point (a success, or any observation with fail=penalty). */
static int see(bo *b) {
  int i = b->n_seen, D = b->D;
  if (!grow((void **)&b->oz, &b->cap_oz, (i + 1) * (D ? D : 1), sizeof(double)) ||
      !grow((void **)&b->gobs, &b->cap_gobs, b->n_real + 1, sizeof(int)))
    return 0;
  double *z = b->oz + (size_t)i * D;
  int ok = isfinite(b->obs[i].t);
  encode(b, &b->obs[i].c, z);
  for (int j = 0; b->fail_model && j < b->gp.m; j++) {
    double wt = ht_gp_matern(1.0, ht_gp_dist2(b->gp.pz + (size_t)j * D, z, D));
    b->sw[j] += wt;
    b->sok[j] += ok ? wt : 0.0;
  }
  if (ok && b->outlier_z > 0 && b->n_real >= 10) { /* far slower than predicted? */
    double yn = target_of(b, b->obs[i].t), mean, var, sn2 = b->gp.sn2;
    ht_gp_predict(&b->gp, z, &mean, &var);
    if (yn - mean > b->outlier_z * sqrt(var > sn2 ? var : sn2)) b->obs[i].outlier = 1;
  }
  if (is_point(b, i)) {
    if (b->gp.n >= b->gp.cap) return 0;
    ht_gp_append(&b->gp, z, ok ? target_of(b, b->obs[i].t) : b->ypen);
    b->gobs[b->n_real++] = i;
    ht_gp_solve(&b->gp);
  }
  b->n_seen++;
  return 1;
}

/* Standardised targets of the model points (log time; failures penalised with fail=penalty) in
 * observation order into y, their observations into gi; returns how many; sets ybest. */
static int targets(bo *b, double *y, int *gi) {
  double lo = INFINITY, hi = -INFINITY, cap = INFINITY, sum = 0, sq = 0;
  double *l = malloc(sizeof(double) * (size_t)(b->n_obs + 1));
  int n_ok = 0, n = 0;
  for (int i = 0; l && i < b->n_obs; i++)
    if (isfinite(b->obs[i].t)) l[n_ok++] = log_time(b->obs[i].t);
  if (l && n_ok > 0) {
    qsort(l, (size_t)n_ok, sizeof(double), ht_stat_cmp_double);
    if (b->copula) { /* the sorted times define the transform until the next call */
      free(b->sorted);
      b->sorted = l;
      b->n_sorted = n_ok;
      l = NULL;
      lo = copula_of(b->sorted, n_ok, b->sorted[0]);
      hi = copula_of(b->sorted, n_ok, b->sorted[n_ok - 1]);
    } else {
      lo = l[0];
      hi = l[n_ok - 1];
      double med = n_ok % 2 ? l[n_ok / 2] : 0.5 * (l[n_ok / 2 - 1] + l[n_ok / 2]);
      if (b->clip > 0) cap = med + b->clip * (med - lo) + 1e-3;
      if (hi > cap) hi = cap;
    }
  }
  free(l);
  b->ycap = cap;
  double pen = hi + 0.25 * (hi - lo) + 0.1;
  for (int i = 0; i < b->n_obs; i++)
    if (is_point(b, i)) {
      gi[n] = i;
      y[n] = isfinite(b->obs[i].t) ? raw_target(b, log_time(b->obs[i].t)) : pen;
      sum += y[n++];
    }
  double mean = n > 0 ? sum / n : 0.0;
  for (int i = 0; i < n; i++) sq += (y[i] - mean) * (y[i] - mean);
  double sd = n > 1 ? sqrt(sq / (n - 1)) : 1.0;
  if (!(sd > 1e-12)) sd = 1.0;
  for (int i = 0; i < n; i++) y[i] = (y[i] - mean) / sd;
  b->ybest = (lo - mean) / sd;
  b->ymean = mean;
  b->ysd = sd;
  b->ypen = (pen - mean) / sd;
  return n;
}

/* Up to max uniform configs neither asked nor in the pool: one ht_space_sample call (distinct
 * configs) filtered here, so a refill never returns what the pool already holds. */
static int draw_unasked(bo *b, ht_config *out, int max) {
  int got = 0, n = 0;
  if (ht_space_sample(b->space, &b->rng, max, out, &got)) got = 0;
  for (int i = 0; i < got; i++)
    if (!ht_config_set_has(&b->asked, &out[i]) && !ht_config_set_has(&b->pooled, &out[i])) out[n++] = out[i];
  if (n == 0) { /* the unasked part is small or unlucky: the shared sampler scans for it */
    n = ht_sample_unasked(b->space, &b->rng, &b->asked, out, max < 64 ? max : 64);
    int k = 0;
    for (int i = 0; i < n; i++)
      if (!ht_config_set_has(&b->pooled, &out[i])) out[k++] = out[i];
    n = k;
  }
  return n;
}

/* Refactors the GP over every model point with the current hyperparameters, and draws a fresh
 * pool. */
static int rebuild(bo *b, int need) {
  int D = b->D, cap = need + 32 + b->n_obs / 2;
  ht_gp_set_theta(&b->gp, b->th, b->n_th - 2);
  if (!grow((void **)&b->oz, &b->cap_oz, (b->n_obs + 1) * (D ? D : 1), sizeof(double)) ||
      !grow((void **)&b->gobs, &b->cap_gobs, b->n_obs + 1, sizeof(int)))
    return 0;
  int n = 0, upto = b->n_seen; /* newer observations go through see() and its outlier test */
  for (int i = 0; i < upto; i++) {
    encode(b, &b->obs[i].c, b->oz + (size_t)i * D);
    if (is_point(b, i)) b->gobs[n++] = i;
  }
  if (!ht_gp_factor(&b->gp, b->oz, b->gobs, n, cap)) return 0;
  b->n_real = n;
  ht_config_set_free(&b->pooled);
  ht_config_set_free(&b->expanded);
  ht_config *c = malloc(sizeof(ht_config) * (size_t)b->n_cand);
  if (!c) return 0;
  int got = draw_unasked(b, c, b->n_cand);
  for (int i = 0; i < got; i++) ht_config_set_add(&b->pooled, &c[i]);
  int ok = pool_add(b, c, got);
  free(c);
  return ok;
}

static void add_if_new(bo *b, const ht_config *t, ht_config *list, int *n, int cap) {
  if (*n < cap && !ht_config_set_has(&b->asked, t) && !ht_config_set_has(&b->pooled, t) &&
      ht_space_is_valid(b->space, t) && ht_config_set_add(&b->pooled, t) == 1)
    list[(*n)++] = *t;
}

/* Valid unasked configs near c that are not in the pool yet, added to the pool. */
static void expand(bo *b, const ht_config *c, int pairs) {
  int cap = b->D * 16 + (pairs ? 2 * b->D * b->D : 0) + 1, n = 0;
  ht_config *list = malloc(sizeof(ht_config) * (size_t)cap);
  if (!list) return;
  for (int k = 0; k < b->D; k++) {
    int p = b->act[k], nv = b->nv[k], r0 = b->rank[k][c->idx[p]], tried = 0;
    for (int dr = 1; dr < nv && tried < 16; dr++)
      for (int s = -1; s <= 1 && tried < 16; s += 2) {
        int r = r0 + s * dr;
        if (r < 0 || r >= nv) continue;
        if (dr > 3 && nv > 16) { /* far ranks of long lists: random ones instead */
          r = (int)ht_rng_below(&b->rng, (uint64_t)nv);
          if (r == r0) continue;
        }
        tried++;
        ht_config t = *c;
        t.idx[p] = b->ord[k][r];
        add_if_new(b, &t, list, &n, cap);
      }
  }
  for (int k = 0; pairs && k < b->D; k++)
    for (int l = k + 1; l < b->D; l++)
      for (int s = 0; s < 4; s++) {
        int p = b->act[k], q = b->act[l], rp = b->rank[k][c->idx[p]] + (s & 1 ? 1 : -1),
            rq = b->rank[l][c->idx[q]] + (s & 2 ? 1 : -1);
        if (rp < 0 || rp >= b->nv[k] || rq < 0 || rq >= b->nv[l]) continue;
        ht_config t = *c;
        t.idx[p] = b->ord[k][rp];
        t.idx[q] = b->ord[l][rq];
        add_if_new(b, &t, list, &n, cap);
      }
  pool_add(b, list, n);
  free(list);
}

/* Estimated seconds of a refit with ng model points: the hyperparameter fit (~55 iterations of a
 * Cholesky, an inverse and the gradient sums on up to fit_max points) and the rebuild of the
 * pool's predictive vectors (n^2 m), at 5 GFLOP/s (this machine: a refit at 400 observations and
 * 1500 candidates took ~80 ms, the model says 90 ms). Deterministic: it depends on sizes only. */
static double refit_cost(const bo *b, int ng) {
  double nf = ng < b->fit_max ? ng : b->fit_max, n = ng, m = b->n_cand, D = b->D > 0 ? b->D : 1;
  double fit = 55.0 * (nf * nf * nf + 4.0 * nf * nf * D), build = n * n * m + 10.0 * n * m * D;
  return (fit + build) / 5e9;
}

/* Brings the GP up to date for an ask of up to max configs: refit/rebuild when due, else append the
 * new observations; then the pending configs as fakes and the neighbours of the best configs. */
static int sync_model(bo *b, int max) {
  double *y = malloc(sizeof(double) * (size_t)b->n_obs);
  int *gi = malloc(sizeof(int) * (size_t)b->n_obs);
  int ok = y && gi;
  int ng = ok ? targets(b, y, gi) : 0, need = ng + b->n_pend + max;
  int due = !b->fitted || (b->n_obs >= b->fit_n + (b->fit_n / 8 > 1 ? b->fit_n / 8 : 1) &&
                           (b->share <= 0 || b->wall_since * b->share >= refit_cost(b, ng)));
  if (ok && due) {
    fit_hyper(b, y, gi, ng);
    b->wall_since = 0;
  }
  if (ok && (due || need > b->gp.cap || b->gp.m == 0))
    ok = rebuild(b, need);
  else if (ok) /* drop the fakes of the last ask */
    ht_gp_truncate(&b->gp, b->n_real);
  if (ok && b->n_seen < b->n_obs) {                       /* the new observations, one by one (outlier test) */
    ht_gp_set_targets(&b->gp, y, b->n_real); /* the model points seen before come first */
    if (b->n_real > 0) ht_gp_solve(&b->gp);
    while (ok && b->n_seen < b->n_obs) ok = see(b);
    ng = targets(b, y, gi); /* outliers leave the targets */
  }
  if (ok) {
    ht_gp_set_targets(&b->gp, y, ng);
    double z[HT_MAX_PARAMS];
    for (int i = 0; i < b->n_pend; i++) { /* kriging believer */
      encode(b, &b->pend[i], z);
      ht_gp_append_believed(&b->gp, z);
    }
    /* the best few observations, each expanded once per pool */
    int top[8], nt = 0, want = b->n_local < 8 ? b->n_local : 8;
    for (int t = 0; t < want; t++) {
      int best = -1;
      for (int i = 0; i < b->n_obs; i++) {
        int used = 0;
        for (int u = 0; u < nt; u++) used |= top[u] == i;
        if (!used && isfinite(b->obs[i].t) && (best < 0 || b->obs[i].t < b->obs[best].t)) best = i;
      }
      if (best < 0) break;
      top[nt++] = best;
      if (ht_config_set_add(&b->expanded, &b->obs[best].c) == 1) expand(b, &b->obs[best].c, t == 0 && b->D <= 16);
    }
  }
  free(y);
  free(gi);
  return ok;
}

static double log_ei(double imp, double s) {
  double z = imp / s;
  if (z > -6.0) {
    double h = z * 0.5 * erfc(-z / M_SQRT2) + exp(-0.5 * z * z) / sqrt(2 * M_PI);
    return log(s) + log(h > 1e-300 ? h : 1e-300);
  }
  return log(s) - 0.5 * z * z - 0.5 * log(2 * M_PI) - 2.0 * log(-z); /* asymptotic tail */
}

static int pick(bo *b) {
  ht_gp_pool_predict(&b->gp);
  int best = -1;
  double bv = -INFINITY, p0 = b->n_seen > 0 ? (double)b->n_ok / b->n_seen : 1.0;
  const double *mu = b->gp.mu, *sd = b->gp.sd;
  for (int j = 0; j < b->gp.m; j++) {
    double a = b->lcb ? -(mu[j] - b->kappa * sd[j]) : log_ei(b->ybest - mu[j] - b->xi, sd[j]);
    if (b->fail_model && p0 < 1.0) a += log((b->sok[j] + p0) / (b->sw[j] + 1.0) + 1e-12);
    if (isnan(a)) a = -INFINITY;
    if (best < 0 || a > bv) {
      best = j;
      bv = a;
    }
  }
  return best;
}

/* ---- ask / tell ---- */
static int emit(bo *b, const ht_config *c, ht_config *out, int *got) {
  if (!grow((void **)&b->pend, &b->cap_pend, b->n_pend + 1, sizeof(ht_config))) return 0;
  if (ht_config_set_add(&b->asked, c) < 0) return 0;
  b->pend[b->n_pend++] = *c;
  out[(*got)++] = *c;
  return 1;
}

/* The initial design: n_init uniform draws. (Spread-out designs such as maximin pick extreme
 * configs, which are rarely good; they scored worse on the recorded spaces.) */
static void make_design(bo *b) {
  b->design = malloc(sizeof(ht_config) * (size_t)b->n_init);
  if (b->design) b->n_design = ht_sample_unasked(b->space, &b->rng, &b->asked, b->design, b->n_init);
}

static int model_ask(bo *b, ht_config *out, int max, int got);

static int bo_ask(void *state, ht_config *out, int max) {
  bo *b = state;
  int got = 0;
  if (!b->design && b->n_init > 0) make_design(b);
  while (got < max && (b->n_obs + b->n_pend < b->n_init || b->n_ok == 0)) {
    ht_config c;
    int have = 0;
    while (!have && b->next_design < b->n_design) {
      c = b->design[b->next_design++];
      have = !ht_config_set_has(&b->asked, &c);
    }
    if (!have && ht_sample_unasked(b->space, &b->rng, &b->asked, &c, 1) == 1) have = 1;
    if (!have || !emit(b, &c, out, &got)) return got;
  }
  if (got == max) return got;
  int threads = ht_gp_blas_begin(); /* one BLAS thread for the GP's small matrices */
  got = model_ask(b, out, max, got);
  ht_gp_blas_end(threads);
  ht_config c; /* only if the model failed (out of memory): uniform draws keep the search going */
  while (got < max && ht_sample_unasked(b->space, &b->rng, &b->asked, &c, 1) == 1 && emit(b, &c, out, &got)) {
  }
  return got;
}

static int model_ask(bo *b, ht_config *out, int max, int got) {
  if (!sync_model(b, max)) return got;
  double z[HT_MAX_PARAMS];
  while (got < max) {
    if (b->gp.m == 0) { /* pool used up: more uniform draws */
      ht_config *c = malloc(sizeof(ht_config) * (size_t)b->n_cand);
      int n = c ? draw_unasked(b, c, b->n_cand) : 0;
      for (int i = 0; i < n; i++) ht_config_set_add(&b->pooled, &c[i]);
      int ok = c && pool_add(b, c, n);
      free(c);
      if (!ok || b->gp.m == 0) break;
    }
    int j = pick(b);
    if (j < 0) break;
    ht_config c = b->pc[j];
    double y = b->gp.mu[j];
    memcpy(z, b->gp.pz + (size_t)j * b->D, sizeof(double) * (size_t)b->D);
    pool_remove(b, j);
    if (ht_config_set_has(&b->asked, &c)) continue;
    if (!emit(b, &c, out, &got)) break;
    if (b->gp.n < b->gp.cap) ht_gp_append(&b->gp, z, y);
  }
  return got;
}

static void bo_tell(void *state, const ht_config *cfg, const ht_result *r) {
  bo *b = state;
  for (int i = 0; i < b->n_pend; i++)
    if (ht_config_equal(&b->pend[i], cfg)) {
      memmove(b->pend + i, b->pend + i + 1, sizeof(ht_config) * (size_t)(b->n_pend - i - 1));
      b->n_pend--;
      break;
    }
  ht_config_set_add(&b->asked, cfg);
  if (!grow((void **)&b->obs, &b->cap_obs, b->n_obs + 1, sizeof(bo_obs))) return;
  b->obs[b->n_obs].c = *cfg;
  b->obs[b->n_obs].t = ht_objective(r);
  b->obs[b->n_obs].outlier = 0;
  b->n_ok += isfinite(b->obs[b->n_obs].t);
  b->wall_since += ht_eval_wall(r);
  b->n_obs++;
}

static void bo_destroy(void *state) {
  bo *b = state;
  if (!b) return;
  for (int k = 0; k < HT_MAX_PARAMS; k++) {
    free(b->enc[k]);
    free(b->ord[k]);
    free(b->rank[k]);
  }
  ht_config_set_free(&b->asked);
  ht_config_set_free(&b->pooled);
  ht_config_set_free(&b->expanded);
  ht_gp_free(&b->gp);
  void *blocks[] = {b->obs, b->pend, b->design, b->pc, b->sw, b->sok, b->oz, b->gobs, b->sorted, b};
  for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++) free(blocks[i]);
}

static ht_status bo_init(void **state, ht_space *space, const ht_options *opt, uint64_t seed) {
  bo *b = calloc(1, sizeof *b);
  if (!b) return ht_error(HT_ERR_NOMEM, "out of memory");
  b->space = space;
  ht_rng_seed(&b->rng, seed);
  ht_config_set_init(&b->asked);
  ht_config_set_init(&b->pooled);
  ht_config_set_init(&b->expanded);
  if (!build_encoding(b)) {
    bo_destroy(b);
    return ht_error(HT_ERR_NOMEM, "out of memory");
  }
  ht_gp_init(&b->gp, b->D);
  int def_init = b->D + 1 < 5 ? 5 : b->D + 1 > 10 ? 10 : b->D + 1;
  b->n_init = (int)ht_options_int(opt, "n_init", def_init);
  b->n_cand = (int)ht_options_int(opt, "candidates", 1500);
  b->n_local = (int)ht_options_int(opt, "local", 3);
  b->ard = (int)ht_options_int(opt, "ard", 1);
  b->fit_max = (int)ht_options_int(opt, "fit_max", 192);
  b->share = ht_options_double(opt, "refit_share", 0.005);
  b->outlier_z = ht_options_double(opt, "outlier", 3.0);
  const char *fail = ht_options_str(opt, "fail", "model");
  b->fail_model = strcmp(fail, "model") == 0;
  b->xi = ht_options_double(opt, "xi", 0.0);
  b->clip = ht_options_double(opt, "clip", 0.5);
  const char *target = ht_options_str(opt, "target", "copula");
  b->copula = strcmp(target, "copula") == 0;
  b->kappa = ht_options_double(opt, "kappa", 3.0);
  const char *acq = ht_options_str(opt, "acq", "lcb");
  b->lcb = strcmp(acq, "lcb") == 0;
  int bad = (!b->lcb && strcmp(acq, "ei") != 0) || (!b->copula && strcmp(target, "log") != 0) ||
            (!b->fail_model && strcmp(fail, "penalty") != 0) || b->n_init < 1 || b->n_init > 10000 ||
            b->n_cand < 1 || b->n_cand > 1000000 || b->n_local < 0 || b->fit_max < 8 ||
            b->fit_max > 4000 || !isfinite(b->xi) || !(b->kappa >= 0 && b->kappa < 100) ||
            !(b->clip >= 0 && b->clip < 1e6) || !(b->outlier_z >= 0 && b->outlier_z < 1e6) ||
            !(b->share >= 0 && b->share <= 1);
  if (bad) {
    bo_destroy(b);
    return ht_error(HT_ERR_INVALID, "bayes: options: acq=ei|lcb, target=copula|log, fail=model|penalty, n_init "
                                    "1..10000, candidates 1..1e6, local >= 0, fit_max 8..4000, kappa, clip, "
                                    "outlier >= 0, refit_share 0..1");
  }
  b->n_th = (b->ard && b->D > 0 ? b->D : 1) + 2;
  *state = b;
  return HT_OK;
}

const ht_strategy_ops ht_strategy_bayes = {
    "bayes",   "Bayesian optimisation: GP (Matern 5/2, ARD) + lower confidence bound (acq=ei: expected improvement)", bo_init, bo_ask, bo_tell,
    bo_destroy, NULL};
