/* The surrogate models' working parts, for the search strategies (src/tune/ includes this header;
 * it is not public API): the Gaussian process of the `gp` kind piece by piece, so `bayes` can
 * grow it one observation at a time, and the boosted trees of the `gbt` kind trained with the
 * objectives and row weights `model_guided` uses. The kinds' ht_model_ops fit a whole dataset at
 * once; a strategy that asks after every result needs the same model updated in O(n^2). */
#ifndef HETUNE_MODEL_SURROGATE_H
#define HETUNE_MODEL_SURROGATE_H

#include <math.h>
#include <stdint.h>

#include "hetune/model.h"
#include "hetune/space.h" /* HT_MAX_PARAMS */

/* ---- Gaussian process (gp_core.c) ----
 * Zero mean, Matern 5/2 kernel sf2 (1 + r + r^2/3) exp(-r), r = sqrt(5) |z - z'|, on scaled inputs
 * z = x / l (inputs x in about [0, 1], one length-scale l per input or one shared), observation
 * noise sn2. Hyperparameters travel as th: nl log length-scales, then log sf2 and log sn2. */
#define HT_GP_MAX_DIM HT_MODEL_MAX_FEATURES
#define HT_GP_MAX_TH (HT_GP_MAX_DIM + 2)
#if HT_MAX_PARAMS > HT_GP_MAX_DIM
#error "a strategy's parameters must fit the GP's inputs"
#endif

static inline double ht_gp_matern(double sf2, double r2) {
  double r = sqrt(5.0 * r2);
  return sf2 * (1.0 + r + r * r / 3.0) * exp(-r);
}

static inline double ht_gp_dist2(const double *a, const double *z, int D) {
  double s = 0;
  for (int k = 0; k < D; k++) s += (a[k] - z[k]) * (a[k] - z[k]);
  return s;
}

/* The prior means of the hyperparameters (log l = log 0.5, log sf2 = 0, log sn2 = log 0.01). */
void ht_gp_theta_default(double *th, int nl);
/* Maximum a posteriori hyperparameters for n points x (n x D, row-major) with standardised
 * targets y: log marginal likelihood plus weak log-normal priors (log l ~ N(log 0.5, 1.5^2),
 * log sf2 ~ N(0, 1.5^2), log sn2 ~ N(log 0.01, 2^2), so a few points cannot collapse the
 * length-scales), maximised by iRprop- on the analytic gradient in log space from th, within
 * fixed bounds, for at most iters iterations (fewer once the steps are tiny or the objective
 * stalls for 8). th receives the best point; returns its objective (-INFINITY when no
 * evaluation was finite or memory ran out, th unchanged). nl: 1 (shared) or D. */
double ht_gp_map_fit(const double *x, const double *y, int n, int D, int nl, double *th, int iters);

/* The posterior over n points (the first ones real observations, the rest whatever the caller
 * appends, e.g. pending configs at their predicted mean) and a pool of m candidates whose
 * predictive vectors V = L^-1 k(points, candidate) follow every appended point, so predicting the
 * pool after an append costs O(n m), not O(n^2 m). Column-major, leading dimension cap. */
typedef struct ht_gp {
  int D;
  double il[HT_GP_MAX_DIM], sf2, sn2; /* inverse length-scales; sn2 includes any jitter added */
  int n, cap;                         /* points, room for points */
  double *z, *L, *y, *w, *kv;         /* inputs (cap x D), Cholesky factor, targets, L^-1 y, scratch */
  int m, m_cap;                       /* pool */
  double *pz, *V, *ss, *mu, *sd, *scr; /* inputs, V, |V_j|^2, predictive mean and sd, scratch */
} ht_gp;

void ht_gp_init(ht_gp *g, int D);
void ht_gp_free(ht_gp *g);
/* Sets il, sf2 and sn2 from th (nl length-scales). */
void ht_gp_set_theta(ht_gp *g, const double *th, int nl);
/* z = x scaled by the inverse length-scales. */
void ht_gp_scale(const ht_gp *g, const double *x, double *z);
/* Room for cap points, and the Cholesky factor of the n points z[rows[i]] (z: scaled inputs,
 * D per row), with growing jitter added to sn2 where the factorisation fails. Empties the pool.
 * 0 when out of memory or the matrix stays indefinite. */
int ht_gp_factor(ht_gp *g, const double *z, const int *rows, int n, int cap);
/* Targets of the first n points. */
void ht_gp_set_targets(ht_gp *g, const double *y, int n);
/* w = L^-1 y. */
void ht_gp_solve(ht_gp *g);
/* Adds point z with target y (requires n < cap): one new row of L, and of V for every candidate. */
void ht_gp_append(ht_gp *g, const double *z, double y);
/* Appends z at its posterior mean given the current targets (the kriging believer). */
void ht_gp_append_believed(ht_gp *g, const double *z);
/* Forgets the points after the first n (they must be the last appended). */
void ht_gp_truncate(ht_gp *g, int n);
/* Mean and variance of a new observation at z (noise included), from the current w. */
void ht_gp_predict(ht_gp *g, const double *z, double *mean, double *var);
/* Adds k candidates (scaled inputs, D each) to the pool; 0 when out of memory. */
int ht_gp_pool_add(ht_gp *g, const double *z, int k);
/* Removes candidate j; the last one takes its index. */
void ht_gp_pool_remove(ht_gp *g, int j);
/* mu and sd (latent, noise excluded) of every candidate; solves w first. */
void ht_gp_pool_predict(ht_gp *g);

/* OpenBLAS runs the GP's small matrices on one thread: more mostly spin, and results then do not
 * depend on the machine's thread count. Returns the count to restore with ht_gp_blas_end. */
int ht_gp_blas_begin(void);
void ht_gp_blas_end(int threads);
/* Ends OpenBLAS's idle thread pool (done when hetune is loaded), unless a thread other than the
 * caller and the pool's runs; 1 when ended, 0 when left, already ended or the BLAS library has no
 * pool. */
int ht_gp_end_idle_blas_pool(void);

/* ---- boosted trees (gbt.c) ---- */
typedef struct ht_gbt_params {
  int64_t rounds, depth;
  double eta, subsample, min_child_weight, lambda;
  int rank;             /* 1: rank:pairwise with every row in one group (targets: higher is better);
                           0: squared error from base_score = the targets' mean */
  const double *weight; /* one per row, or NULL */
} ht_gbt_params;
/* Trees fitted by XGBoost to d (x, y) as the gbt kind's state: ht_model_gbt.predict evaluates
 * them exactly as XGBoost's own prediction would. XGBoost is used with these parameters as given
 * (not range-checked): one it refuses is HT_ERR_INTERNAL with its message. keep (tests): the
 * XGBoost booster too, freed by the caller. */
ht_status ht_gbt_train(void **state, const ht_dataset *d, const ht_gbt_params *p, uint64_t seed, void **keep);

#endif
