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
 * Model: zero-mean GP, Matern 5/2, ARD length-scales (ard=0: one shared), signal and noise
 * variance, fitted by MAP (log marginal likelihood + weak log-normal priors: log l ~ N(log 0.5,
 * 1.5^2), log sf2 ~ N(0, 1.5^2), log sn2 ~ N(log 0.01, 2^2), so a few points cannot collapse the
 * length-scales) with iRprop- on the analytic gradient in log space, from the last optimum and, at
 * the first fit and every 4th, from the prior mean. A fit sees at most fit_max observations (best
 * quarter + random rest); refits come when the data grew by an eighth (every observation early,
 * every 25 at 200), bounding the amortised cost, and only once the evaluations told since the
 * last refit took 1/refit_share times the refit's estimated cost (a flop count at 5 GFLOP/s, so
 * the decision depends on the tells, not on a clock): with cheap evaluations refits come later.
 * On gemm_c (0.109 s per evaluation, ~390 evaluations per run) that took the strategy's share of
 * the clock from 1.5% to 0.6% with the same scores (0.810 / 0.798 against 0.812 / 0.799 on two
 * sets of 100 seeds). Cholesky: LAPACKE_dpotrf, jitter on failure.
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
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tune/strategy_util.h"

#define MAX_TH (HT_MAX_PARAMS + 2)
#define LS_LO (-3.9) /* log length-scale bounds: 0.02 .. 20 on the [0,1] encoding */
#define LS_HI 3.0
#define SF_LO (-4.6) /* log signal variance: 0.01 .. 50 */
#define SF_HI 3.9
#define SN_LO (-13.8) /* log noise variance: 1e-6 .. 2 */
#define SN_HI 0.7

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
  double il[HT_MAX_PARAMS], sf2, sn2;
  /* GP: n_gp points (n_real observations, then fakes), L lower Cholesky factor, column-major, ld n_cap.
   * gobs: the observation of each real point; the first n_seen observations are in the model, their
   * scaled inputs in oz (for the feasibility sums). */
  int n_gp, n_real, n_cap, n_seen, cap_gobs, cap_oz;
  int *gobs;
  double *gz, *L, *gy, *w, *kv, *oz;
  double ybest, ymean, ysd, ycap, ypen; /* target transform of the last targets() */
  int copula, n_sorted;                  /* target=copula: normal quantiles of the ranks */
  double *sorted;                        /* the successful log times of the last targets(), sorted */
  /* candidate pool: configs, scaled inputs, V (n_cap x m_cap, column-major), squared column norms */
  int m, m_cap;
  ht_config *pc;
  double *pz, *V, *ss, *mu, *sd, *scr, *sw, *sok; /* sw, sok: kernel-weighted count of all / successful observations */
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

static void encode(const bo *b, const ht_config *c, double *z) {
  for (int k = 0; k < b->D; k++) z[k] = b->enc[k][c->idx[b->act[k]]] * b->il[k];
}

static inline double matern(double sf2, double r2) {
  double r = sqrt(5.0 * r2);
  return sf2 * (1.0 + r + r * r / 3.0) * exp(-r);
}

static inline double dist2(const double *a, const double *z, int D) {
  double s = 0;
  for (int k = 0; k < D; k++) s += (a[k] - z[k]) * (a[k] - z[k]);
  return s;
}

/* ---- hyperparameters: MAP by iRprop- ---- */
typedef struct fitdata {
  int n, D, nl;
  const double *x, *y;
  double *K, *C, *Q, *alpha;
} fitdata;

static const double PRIOR_MU[3] = {-0.693, 0.0, -4.605}, PRIOR_SD[3] = {1.5, 1.5, 2.0};

static double map_objective(fitdata *f, const double *th, double *g) {
  int n = f->n, D = f->D, nl = f->nl;
  double il2[HT_MAX_PARAMS], sf2 = exp(th[nl]), sn2 = exp(th[nl + 1]);
  for (int k = 0; k < D; k++) il2[k] = exp(-2.0 * th[nl == 1 ? 0 : k]);
  for (int a = 0; a < n; a++) {
    const double *xa = f->x + (size_t)a * D;
    f->K[a + (size_t)a * n] = sf2 + sn2;
    for (int c = 0; c < a; c++) {
      const double *xc = f->x + (size_t)c * D;
      double r2 = 0;
      for (int k = 0; k < D; k++) r2 += (xa[k] - xc[k]) * (xa[k] - xc[k]) * il2[k];
      double r = sqrt(5.0 * r2), e = exp(-r);
      f->K[a + (size_t)c * n] = sf2 * (1.0 + r + r * r / 3.0) * e;
      f->Q[a + (size_t)c * n] = sf2 * (5.0 / 3.0) * (1.0 + r) * e;
    }
  }
  double jitter = 0;
  for (int attempt = 0;; attempt++) {
    for (int c = 0; c < n; c++)
      for (int a = c; a < n; a++) f->C[a + (size_t)c * n] = f->K[a + (size_t)c * n] + (a == c ? jitter : 0);
    if (LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', n, f->C, n) == 0) break;
    if (attempt == 4) return -INFINITY;
    jitter = (sf2 + sn2) * pow(10.0, -8 + 2 * attempt);
  }
  double logdet = 0, fit = 0;
  for (int a = 0; a < n; a++) logdet += 2.0 * log(f->C[a + (size_t)a * n]);
  memcpy(f->alpha, f->y, sizeof(double) * (size_t)n);
  LAPACKE_dpotrs_work(LAPACK_COL_MAJOR, 'L', n, 1, f->C, n, f->alpha, n);
  for (int a = 0; a < n; a++) fit += f->y[a] * f->alpha[a];
  double val = -0.5 * fit - 0.5 * logdet - 0.5 * n * log(2 * M_PI);
  for (int i = 0; i < nl + 2; i++) {
    int kind = i < nl ? 0 : i - nl + 1;
    double u = (th[i] - PRIOR_MU[kind]) / PRIOR_SD[kind];
    val -= 0.5 * u * u;
    if (g) g[i] = -u / PRIOR_SD[kind];
  }
  if (!g || !isfinite(val)) return isfinite(val) ? val : -INFINITY;
  LAPACKE_dpotri_work(LAPACK_COL_MAJOR, 'L', n, f->C, n); /* C = K^-1 (lower) */
  double gl[HT_MAX_PARAMS] = {0}, gsf = 0, gsn = 0;
  for (int a = 0; a < n; a++) {
    const double *xa = f->x + (size_t)a * D;
    double maa = f->alpha[a] * f->alpha[a] - f->C[a + (size_t)a * n];
    gsf += 0.5 * maa * sf2;
    gsn += 0.5 * maa * sn2;
    for (int c = 0; c < a; c++) {
      const double *xc = f->x + (size_t)c * D;
      double m = f->alpha[a] * f->alpha[c] - f->C[a + (size_t)c * n];
      gsf += m * f->K[a + (size_t)c * n];
      double q = m * f->Q[a + (size_t)c * n];
      for (int k = 0; k < D; k++) gl[k] += q * (xa[k] - xc[k]) * (xa[k] - xc[k]);
    }
  }
  for (int k = 0; k < D; k++) g[nl == 1 ? 0 : k] += gl[k] * il2[k];
  g[nl] += gsf;
  g[nl + 1] += gsn;
  return val;
}

static double rprop(fitdata *f, double *th, int iters) {
  int nt = f->nl + 2;
  double step[MAX_TH], gprev[MAX_TH] = {0}, g[MAX_TH], best[MAX_TH], fbest = -INFINITY;
  for (int i = 0; i < nt; i++) step[i] = 0.3;
  for (int it = 0, last = 0; it < iters && it - last < 8; it++) {
    double v = map_objective(f, th, g);
    if (v > fbest + 1e-3) last = it;
    if (v > fbest) {
      fbest = v;
      memcpy(best, th, sizeof(double) * (size_t)nt);
    }
    if (!isfinite(v)) break;
    double maxstep = 0;
    for (int i = 0; i < nt; i++) {
      double lo = i < f->nl ? LS_LO : i == f->nl ? SF_LO : SN_LO, hi = i < f->nl ? LS_HI : i == f->nl ? SF_HI : SN_HI;
      if (!isfinite(g[i])) g[i] = 0;
      if (g[i] * gprev[i] > 0)
        step[i] = fmin(step[i] * 1.2, 1.0);
      else if (g[i] * gprev[i] < 0) {
        step[i] = fmax(step[i] * 0.5, 1e-4);
        g[i] = 0;
      }
      th[i] += g[i] > 0 ? step[i] : g[i] < 0 ? -step[i] : 0;
      th[i] = fmin(fmax(th[i], lo), hi);
      gprev[i] = g[i];
      maxstep = fmax(maxstep, step[i]);
    }
    if (maxstep < 2e-3) break;
  }
  if (fbest > -INFINITY) memcpy(th, best, sizeof(double) * (size_t)nt);
  return fbest;
}

static void default_theta(const bo *b, double *th) {
  for (int i = 0; i < b->n_th - 2; i++) th[i] = PRIOR_MU[0];
  th[b->n_th - 2] = PRIOR_MU[1];
  th[b->n_th - 1] = PRIOR_MU[2];
}

static int cmp_double_idx(const void *a, const void *b) {
  const double *x = a, *y = b;
  return (x[0] > y[0]) - (x[0] < y[0]);
}

/* Fits on at most fit_max of the ng model points (the best quarter and a uniform rest); y: their
 * standardised targets, gi: their observations. */
static void fit_hyper(bo *b, const double *y, const int *gi, int ng) {
  int D = b->D, nf = ng < b->fit_max ? ng : b->fit_max;
  double *x = malloc(sizeof(double) * (size_t)nf * (D ? D : 1)), *ys = malloc(sizeof(double) * (size_t)nf);
  double *buf = malloc(sizeof(double) * ((size_t)3 * nf * nf + nf));
  double *order = malloc(sizeof(double) * 2 * (size_t)ng);
  if (!x || !ys || !buf || !order) goto done;
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
  fitdata f = {
      nf, D, b->n_th - 2, x, ys, buf, buf + (size_t)nf * nf, buf + (size_t)2 * nf * nf, buf + (size_t)3 * nf * nf};
  double th[MAX_TH];
  if (b->fitted)
    memcpy(th, b->th, sizeof th);
  else
    default_theta(b, th);
  double v = rprop(&f, th, b->fitted ? 40 : 80);
  if (b->fitted && b->n_fits % 4 == 0) {
    double th2[MAX_TH];
    default_theta(b, th2);
    if (rprop(&f, th2, 60) > v) memcpy(th, th2, sizeof th);
  }
  if (v > -INFINITY || !b->fitted) memcpy(b->th, th, sizeof th);
  b->fitted = 1;
  b->n_fits++;
done:
  b->fit_n = b->n_obs;
  free(x);
  free(ys);
  free(buf);
  free(order);
}

/* ---- the GP and the candidate pool ---- */
static int pool_reserve(bo *b, int need) {
  if (need <= b->m_cap) return 1;
  int cap = b->m_cap;
  while (cap < need) cap = cap ? 2 * cap : 1024;
  void **arr[] = {(void **)&b->ss,  (void **)&b->mu, (void **)&b->sd, (void **)&b->scr, (void **)&b->sw,
                  (void **)&b->sok, (void **)&b->pc, (void **)&b->pz, (void **)&b->V};
  size_t per[] = {8, 8, 8, 8, 8, 8, sizeof(ht_config), 8 * (size_t)(b->D ? b->D : 1), 8 * (size_t)b->n_cap};
  for (size_t i = 0; i < sizeof arr / sizeof arr[0]; i++) {
    void *q = realloc(*arr[i], per[i] * (size_t)cap);
    if (!q) return 0;
    *arr[i] = q;
  }
  b->m_cap = cap;
  return 1;
}

static int pool_add(bo *b, const ht_config *c, int k) {
  if (k <= 0) return 1;
  if (!pool_reserve(b, b->m + k)) return 0;
  int D = b->D, n = b->n_gp;
  for (int j = 0; j < k; j++) {
    int col = b->m + j;
    b->pc[col] = c[j];
    double *z = b->pz + (size_t)col * D, *v = b->V + (size_t)col * b->n_cap;
    encode(b, &c[j], z);
    for (int i = 0; i < n; i++) v[i] = matern(b->sf2, dist2(b->gz + (size_t)i * D, z, D));
    b->sw[col] = b->sok[col] = 0;
    for (int i = 0; b->fail_model && i < b->n_seen; i++) {
      double wt = matern(1.0, dist2(b->oz + (size_t)i * D, z, D));
      b->sw[col] += wt;
      b->sok[col] += isfinite(b->obs[i].t) ? wt : 0.0;
    }
  }
  if (n > 0)
    cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasNonUnit, n, k, 1.0, b->L, b->n_cap,
                b->V + (size_t)b->m * b->n_cap, b->n_cap);
  for (int j = 0; j < k; j++) {
    double *v = b->V + (size_t)(b->m + j) * b->n_cap;
    b->ss[b->m + j] = n > 0 ? cblas_ddot(n, v, 1, v, 1) : 0.0;
  }
  b->m += k;
  return 1;
}

static void pool_remove(bo *b, int j) {
  int last = --b->m;
  if (j == last) return;
  b->pc[j] = b->pc[last];
  memcpy(b->pz + (size_t)j * b->D, b->pz + (size_t)last * b->D, sizeof(double) * (size_t)b->D);
  memcpy(b->V + (size_t)j * b->n_cap, b->V + (size_t)last * b->n_cap, sizeof(double) * (size_t)b->n_gp);
  b->ss[j] = b->ss[last];
  b->sw[j] = b->sw[last];
  b->sok[j] = b->sok[last];
}

/* Adds a point (scaled inputs z) to the GP: one new row of L, and of V for every pool member.
 * Requires n_gp < n_cap. gy[n] is left for the caller. */
static void gp_append(bo *b, const double *z) {
  int n = b->n_gp, D = b->D, ld = b->n_cap;
  double *k = b->kv;
  for (int i = 0; i < n; i++) k[i] = matern(b->sf2, dist2(b->gz + (size_t)i * D, z, D));
  if (n > 0) cblas_dtrsv(CblasColMajor, CblasLower, CblasNoTrans, CblasNonUnit, n, b->L, ld, k, 1);
  double d2 = b->sf2 + b->sn2 - (n > 0 ? cblas_ddot(n, k, 1, k, 1) : 0.0), floor = 1e-9 * (b->sf2 + b->sn2);
  double lnn = sqrt(d2 > floor ? d2 : floor);
  for (int i = 0; i < n; i++) b->L[n + (size_t)i * ld] = k[i];
  b->L[n + (size_t)n * ld] = lnn;
  if (b->m > 0) {
    if (n > 0)
      cblas_dgemv(CblasColMajor, CblasTrans, n, b->m, 1.0, b->V, ld, k, 1, 0.0, b->scr, 1);
    else
      memset(b->scr, 0, sizeof(double) * (size_t)b->m);
    for (int j = 0; j < b->m; j++) {
      double v = (matern(b->sf2, dist2(b->pz + (size_t)j * D, z, D)) - b->scr[j]) / lnn;
      b->V[n + (size_t)j * ld] = v;
      b->ss[j] += v * v;
    }
  }
  memcpy(b->gz + (size_t)n * D, z, sizeof(double) * (size_t)D);
  b->n_gp++;
}

/* w = L^-1 gy */
static void solve_w(bo *b) {
  memcpy(b->w, b->gy, sizeof(double) * (size_t)b->n_gp);
  cblas_dtrsv(CblasColMajor, CblasLower, CblasNoTrans, CblasNonUnit, b->n_gp, b->L, b->n_cap, b->w, 1);
}

static void predict_pool(bo *b) {
  solve_w(b);
  cblas_dgemv(CblasColMajor, CblasTrans, b->n_gp, b->m, 1.0, b->V, b->n_cap, b->w, 1, 0.0, b->mu, 1);
  for (int j = 0; j < b->m; j++) {
    double v = b->sf2 - b->ss[j];
    b->sd[j] = sqrt(v > 1e-10 * b->sf2 ? v : 1e-10 * b->sf2);
  }
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
  for (int j = 0; b->fail_model && j < b->m; j++) {
    double wt = matern(1.0, dist2(b->pz + (size_t)j * D, z, D));
    b->sw[j] += wt;
    b->sok[j] += ok ? wt : 0.0;
  }
  if (ok && b->outlier_z > 0 && b->n_real >= 10) { /* far slower than predicted? */
    int n = b->n_gp;
    double *k = b->kv, yn = target_of(b, b->obs[i].t);
    for (int r = 0; r < n; r++) k[r] = matern(b->sf2, dist2(b->gz + (size_t)r * D, z, D));
    cblas_dtrsv(CblasColMajor, CblasLower, CblasNoTrans, CblasNonUnit, n, b->L, b->n_cap, k, 1);
    double mean = cblas_ddot(n, k, 1, b->w, 1), var = b->sf2 + b->sn2 - cblas_ddot(n, k, 1, k, 1);
    if (yn - mean > b->outlier_z * sqrt(var > b->sn2 ? var : b->sn2)) b->obs[i].outlier = 1;
  }
  if (is_point(b, i)) {
    if (b->n_gp >= b->n_cap) return 0;
    gp_append(b, z);
    b->gy[b->n_gp - 1] = ok ? target_of(b, b->obs[i].t) : b->ypen;
    b->gobs[b->n_real++] = i;
    solve_w(b);
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

/* Recomputes L for every model point with the current hyperparameters, and draws a fresh pool. */
static int rebuild(bo *b, int need) {
  int D = b->D, cap = need + 32 + b->n_obs / 2;
  free(b->L);
  free(b->gz);
  free(b->gy);
  free(b->w);
  free(b->kv);
  free(b->V);
  b->V = NULL;
  b->m = b->m_cap = 0;
  b->n_cap = cap;
  b->L = malloc(sizeof(double) * (size_t)cap * cap);
  b->gz = malloc(sizeof(double) * (size_t)cap * (D ? D : 1));
  b->gy = malloc(sizeof(double) * (size_t)cap);
  b->w = malloc(sizeof(double) * (size_t)cap);
  b->kv = malloc(sizeof(double) * (size_t)cap);
  if (!b->L || !b->gz || !b->gy || !b->w || !b->kv) return 0;
  int nl = b->n_th - 2;
  for (int k = 0; k < D; k++) b->il[k] = exp(-b->th[nl == 1 ? 0 : k]);
  b->sf2 = exp(b->th[nl]);
  b->sn2 = exp(b->th[nl + 1]);
  if (!grow((void **)&b->oz, &b->cap_oz, (b->n_obs + 1) * (D ? D : 1), sizeof(double)) ||
      !grow((void **)&b->gobs, &b->cap_gobs, b->n_obs + 1, sizeof(int)))
    return 0;
  int n = 0, upto = b->n_seen; /* newer observations go through see() and its outlier test */
  for (int i = 0; i < upto; i++) {
    encode(b, &b->obs[i].c, b->oz + (size_t)i * D);
    if (!is_point(b, i)) continue;
    memcpy(b->gz + (size_t)n * D, b->oz + (size_t)i * D, sizeof(double) * (size_t)D);
    b->gobs[n++] = i;
  }
  for (int attempt = 0;; attempt++) {
    for (int c = 0; c < n; c++) {
      b->L[c + (size_t)c * cap] = b->sf2 + b->sn2;
      for (int a = c + 1; a < n; a++)
        b->L[a + (size_t)c * cap] = matern(b->sf2, dist2(b->gz + (size_t)a * D, b->gz + (size_t)c * D, D));
    }
    if (n == 0 || LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', n, b->L, cap) == 0) break;
    if (attempt == 5) return 0;
    b->sn2 += (b->sf2 + b->sn2) * pow(10.0, -8 + 2 * attempt); /* jitter, kept for later appends */
  }
  b->n_gp = b->n_real = n;
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
  if (ok && (due || need > b->n_cap || b->m == 0))
    ok = rebuild(b, need);
  else if (ok && b->n_gp > b->n_real) { /* drop the fakes of the last ask */
    b->n_gp = b->n_real;
    for (int j = 0; j < b->m; j++) {
      const double *v = b->V + (size_t)j * b->n_cap;
      b->ss[j] = b->n_gp > 0 ? cblas_ddot(b->n_gp, v, 1, v, 1) : 0.0;
    }
  }
  if (ok && b->n_seen < b->n_obs) {                       /* the new observations, one by one (outlier test) */
    memcpy(b->gy, y, sizeof(double) * (size_t)b->n_real); /* the model points seen before come first */
    if (b->n_real > 0) solve_w(b);
    while (ok && b->n_seen < b->n_obs) ok = see(b);
    ng = targets(b, y, gi); /* outliers leave the targets */
  }
  if (ok) {
    memcpy(b->gy, y, sizeof(double) * (size_t)ng);
    double z[HT_MAX_PARAMS];
    for (int i = 0; i < b->n_pend; i++) { /* kriging believer */
      solve_w(b);
      encode(b, &b->pend[i], z);
      gp_append(b, z);
      int n = b->n_gp - 1;
      b->gy[n] = n > 0 ? cblas_ddot(n, b->L + n, b->n_cap, b->w, 1) : 0.0;
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
  predict_pool(b);
  int best = -1;
  double bv = -INFINITY, p0 = b->n_seen > 0 ? (double)b->n_ok / b->n_seen : 1.0;
  for (int j = 0; j < b->m; j++) {
    double a = b->lcb ? -(b->mu[j] - b->kappa * b->sd[j]) : log_ei(b->ybest - b->mu[j] - b->xi, b->sd[j]);
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
  /* One BLAS thread: these matrices are too small to gain from more (threads mostly spin), and the
   * results then do not depend on the machine's thread count. Restored before returning. */
  int threads = openblas_get_num_threads();
  if (threads != 1) openblas_set_num_threads(1);
  got = model_ask(b, out, max, got);
  if (threads != 1) openblas_set_num_threads(threads);
  ht_config c; /* only if the model failed (out of memory): uniform draws keep the search going */
  while (got < max && ht_sample_unasked(b->space, &b->rng, &b->asked, &c, 1) == 1 && emit(b, &c, out, &got)) {
  }
  return got;
}

static int model_ask(bo *b, ht_config *out, int max, int got) {
  if (!sync_model(b, max)) return got;
  double z[HT_MAX_PARAMS];
  while (got < max) {
    if (b->m == 0) { /* pool used up: more uniform draws */
      ht_config *c = malloc(sizeof(ht_config) * (size_t)b->n_cand);
      int n = c ? draw_unasked(b, c, b->n_cand) : 0;
      for (int i = 0; i < n; i++) ht_config_set_add(&b->pooled, &c[i]);
      int ok = c && pool_add(b, c, n);
      free(c);
      if (!ok || b->m == 0) break;
    }
    int j = pick(b);
    if (j < 0) break;
    ht_config c = b->pc[j];
    double y = b->mu[j];
    memcpy(z, b->pz + (size_t)j * b->D, sizeof(double) * (size_t)b->D);
    pool_remove(b, j);
    if (ht_config_set_has(&b->asked, &c)) continue;
    if (!emit(b, &c, out, &got)) break;
    if (b->n_gp < b->n_cap) {
      gp_append(b, z);
      b->gy[b->n_gp - 1] = y;
    }
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
  void *blocks[] = {b->obs, b->pend, b->design, b->gz, b->L,   b->gy, b->w,   b->kv, b->pc,   b->pz,
                    b->V,   b->ss,   b->mu,     b->sd, b->scr, b->sw, b->sok, b->oz, b->gobs, b->sorted, b};
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
    "bayes",   "Bayesian optimisation: GP (Matern 5/2, ARD) + expected improvement", bo_init, bo_ask, bo_tell,
    bo_destroy};
