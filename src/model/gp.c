/* gp: Gaussian-process regression, the surrogate of the `bayes` strategy as a model kind. Besides
 * a prediction it gives its own uncertainty (predict_sd: the posterior standard deviation of the
 * predicted number, ht_model_predict_interval).
 *
 * Algorithm: min-max scale the inputs to [0, 1] (the wrapper has already taken log10(1 + v) of
 * wide-ranging features), standardise the target; zero-mean GP with a Matern 5/2 kernel, one
 * length-scale per feature (ard=1) or one shared, signal and noise variance (gp_core.c). The
 * hyperparameters maximise the log marginal likelihood plus weak log-normal priors (iRprop-, from
 * the priors' means, `iters` iterations) on at most `fit_max` rows drawn at random with the seed,
 * as bayes fits its own; the posterior then takes every row (at most `rows`, drawn at random
 * beyond that: the Cholesky factor costs n^3 / 3 flops and n^2 doubles). BLAS on one thread, so
 * the model does not depend on the machine's thread count.
 * predict: k(x, rows) . K^-1 y, O(n features); predict_sd: sqrt(sf2 - |L^-1 k|^2), O(n^2), the
 * latent function's standard deviation (the measurement noise sn2 excluded).
 * Save: hyperparameters, scaling and the rows; load refactors the kernel matrix, which gives the
 * same bits, so a loaded model predicts exactly as the saved one.
 *
 * Options (defaults): ard (1), fit_max (192: bayes's default; MAP fitting costs ~iters x fit_max^3),
 * iters (80), rows (2000). */
#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_util.h"
#include "model/surrogate.h"

#define GP_MAX_ROWS 20000

typedef struct gpm {
  int p, nl;
  double th[HT_GP_MAX_TH];
  mu_scaler sc;
  double ymean, ysd;
  double *x, *y; /* the rows in [0, 1] (n x p) and their standardised targets */
  ht_gp g;       /* the posterior over the rows (g.n of them) */
  double *alpha; /* K^-1 y: the mean at x is k(x) . alpha */
} gpm;

typedef struct gp_opts {
  int64_t ard, fit_max, iters, rows;
} gp_opts;

static void gp_destroy(void *state) {
  gpm *m = state;
  if (!m) return;
  mu_scaler_free(&m->sc);
  ht_gp_free(&m->g);
  free(m->x);
  free(m->y);
  free(m->alpha);
  free(m);
}

static ht_status read_opts(const ht_options *o, gp_opts *p) {
  ht_status st;
  if ((st = mu_opt_int(o, "gp", "ard", 1, 0, 1, &p->ard)) ||
      (st = mu_opt_int(o, "gp", "fit_max", 192, 8, 4000, &p->fit_max)) ||
      (st = mu_opt_int(o, "gp", "iters", 80, 1, 10000, &p->iters)) ||
      (st = mu_opt_int(o, "gp", "rows", 2000, 1, GP_MAX_ROWS, &p->rows)))
    return st;
  return HT_OK;
}

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* The first k of n indices after a partial shuffle by rng, in increasing order. */
static int *draw_rows(int n, int k, ht_rng *rng) {
  int *idx = malloc(sizeof(int) * (size_t)(n ? n : 1));
  if (!idx) return NULL;
  for (int i = 0; i < n; i++) idx[i] = i;
  for (int i = 0; i < k && i < n; i++) {
    int j = i + (int)ht_rng_below(rng, (uint64_t)(n - i)), t = idx[i];
    idx[i] = idx[j];
    idx[j] = t;
  }
  qsort(idx, (size_t)(k < n ? k : n), sizeof(int), cmp_int);
  return idx;
}

/* The posterior over m's n rows with its hyperparameters: the factor, then alpha = L^-T L^-1 y.
 * sn2 < 0: the noise ht_gp_set_theta gives, else this one (a saved model's, its jitter included).
 * 0 when out of memory or the kernel matrix is not positive definite. */
static int posterior(gpm *m, int n, double sn2) {
  int p = m->p;
  ht_gp_init(&m->g, p);
  ht_gp_set_theta(&m->g, m->th, m->nl);
  if (sn2 >= 0) m->g.sn2 = sn2;
  double *z = malloc(sizeof(double) * (size_t)n * (size_t)(p ? p : 1));
  int *idx = malloc(sizeof(int) * (size_t)n);
  m->alpha = malloc(sizeof(double) * (size_t)n);
  int ok = z && idx && m->alpha;
  for (int i = 0; ok && i < n; i++) {
    idx[i] = i;
    ht_gp_scale(&m->g, m->x + (size_t)i * p, z + (size_t)i * p);
  }
  ok = ok && ht_gp_factor(&m->g, z, idx, n, n);
  if (ok) {
    ht_gp_set_targets(&m->g, m->y, n);
    ht_gp_solve(&m->g);
    memcpy(m->alpha, m->g.w, sizeof(double) * (size_t)n);
    cblas_dtrsv(CblasColMajor, CblasLower, CblasTrans, CblasNonUnit, n, m->g.L, m->g.cap, m->alpha, 1);
  }
  free(z);
  free(idx);
  return ok;
}

/* Copies the rows of d listed in rows (n of them) into m: inputs scaled to [0, 1], targets
 * standardised. */
static ht_status take_rows(gpm *m, const ht_dataset *d, const int *rows, int n) {
  ht_dataset *sub;
  ht_status st = ht_dataset_subset(d, rows, n, &sub);
  if (st) return st;
  st = mu_scaler_fit(&m->sc, sub, MU_MINMAX);
  m->x = malloc(sizeof(double) * (size_t)n * (size_t)(m->p ? m->p : 1));
  m->y = malloc(sizeof(double) * (size_t)n);
  if (!st && (!m->x || !m->y)) st = ht_error(HT_ERR_NOMEM, "gp: out of memory for %d rows", n);
  if (!st) {
    mu_target_stats(sub, &m->ymean, &m->ysd);
    for (int i = 0; i < n; i++) {
      mu_scaler_apply(&m->sc, sub->x + (size_t)i * m->p, m->x + (size_t)i * m->p);
      m->y[i] = (sub->y[i] - m->ymean) / m->ysd;
    }
  }
  ht_dataset_destroy(sub);
  return st;
}

/* MAP hyperparameters from the priors' means on at most fit_max of the n rows. */
static ht_status fit_theta(gpm *m, int n, const gp_opts *o, ht_rng *rng) {
  int nf = n < o->fit_max ? n : (int)o->fit_max, p = m->p;
  int *pick = draw_rows(n, nf, rng);
  double *x = malloc(sizeof(double) * (size_t)nf * (size_t)(p ? p : 1)), *y = malloc(sizeof(double) * (size_t)nf);
  ht_status st = pick && x && y ? HT_OK : ht_error(HT_ERR_NOMEM, "gp: out of memory");
  for (int i = 0; !st && i < nf; i++) {
    memcpy(x + (size_t)i * p, m->x + (size_t)pick[i] * p, sizeof(double) * (size_t)p);
    y[i] = m->y[pick[i]];
  }
  ht_gp_theta_default(m->th, m->nl);
  if (!st && !(ht_gp_map_fit(x, y, nf, p, m->nl, m->th, (int)o->iters) > -INFINITY))
    st = ht_error(HT_ERR_INVALID, "gp: the marginal likelihood is not finite on these %d rows", nf);
  free(pick);
  free(x);
  free(y);
  return st;
}

static ht_status gp_fit(void **state, const ht_dataset *d, const ht_options *opt, uint64_t seed) {
  *state = NULL;
  gp_opts o;
  ht_status st = read_opts(opt, &o);
  if (st) return st;
  if (d->n_features > HT_GP_MAX_DIM)
    return ht_error(HT_ERR_INVALID, "gp: %d features (at most %d)", d->n_features, HT_GP_MAX_DIM);
  gpm *m = calloc(1, sizeof *m);
  if (!m) return ht_error(HT_ERR_NOMEM, "out of memory");
  m->p = d->n_features;
  m->nl = o.ard && m->p > 0 ? m->p : 1;
  ht_rng rng;
  ht_rng_seed(&rng, seed);
  int n = d->n_rows < o.rows ? d->n_rows : (int)o.rows;
  int *rows = draw_rows(d->n_rows, n, &rng);
  st = rows ? take_rows(m, d, rows, n) : ht_error(HT_ERR_NOMEM, "out of memory");
  free(rows);
  int threads = ht_gp_blas_begin();
  if (!st) st = fit_theta(m, n, &o, &rng);
  if (!st && !posterior(m, n, -1))
    st = ht_error(HT_ERR_INVALID, "gp: the kernel matrix of %d rows is not positive definite", n);
  ht_gp_blas_end(threads);
  if (st) {
    gp_destroy(m);
    return st;
  }
  *state = m;
  return HT_OK;
}

/* Scaled GP inputs of a raw feature vector. */
static void inputs(const gpm *m, const double *x, double *z) {
  double u[HT_GP_MAX_DIM];
  mu_scaler_apply(&m->sc, x, u);
  ht_gp_scale(&m->g, u, z);
}

static double gp_predict(const void *state, const double *x) {
  const gpm *m = state;
  const ht_gp *g = &m->g;
  double z[HT_GP_MAX_DIM], s = 0;
  inputs(m, x, z);
  for (int i = 0; i < g->n; i++) s += ht_gp_matern(g->sf2, ht_gp_dist2(g->z + (size_t)i * m->p, z, m->p)) * m->alpha[i];
  return m->ymean + m->ysd * s;
}

static double gp_predict_sd(const void *state, const double *x) {
  const gpm *m = state;
  const ht_gp *g = &m->g;
  double z[HT_GP_MAX_DIM], *k = malloc(sizeof(double) * (size_t)g->n);
  if (!k) return NAN;
  inputs(m, x, z);
  for (int i = 0; i < g->n; i++) k[i] = ht_gp_matern(g->sf2, ht_gp_dist2(g->z + (size_t)i * m->p, z, m->p));
  cblas_dtrsv(CblasColMajor, CblasLower, CblasNoTrans, CblasNonUnit, g->n, g->L, g->cap, k, 1);
  double v = g->sf2 - cblas_ddot(g->n, k, 1, k, 1);
  free(k);
  return m->ysd * sqrt(v > 1e-10 * g->sf2 ? v : 1e-10 * g->sf2);
}

/* ---- serialisation: hyperparameters, scaling, rows; load refactors ---- */

static ht_status gp_save(const void *state, ht_buf *out) {
  const gpm *m = state;
  mu_put_tag(out, "gp1");
  mu_put_i64(out, m->p);
  mu_put_i64(out, m->nl);
  mu_put_f64s(out, m->th, m->nl + 2);
  mu_put_f64(out, m->g.sn2);
  mu_scaler_save(&m->sc, out);
  mu_put_f64(out, m->ymean);
  mu_put_f64(out, m->ysd);
  mu_put_i64(out, m->g.n);
  mu_put_f64s(out, m->x, (int64_t)m->g.n * m->p);
  mu_put_f64s(out, m->y, m->g.n);
  return HT_OK;
}

static int all_finite(const double *v, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (!isfinite(v[i])) return 0;
  return 1;
}

static ht_status gp_load(void **state, const char *data, size_t len) {
  *state = NULL;
  mu_reader r;
  mu_reader_init(&r, data, len);
  gpm *m = calloc(1, sizeof *m);
  if (!m) return ht_error(HT_ERR_NOMEM, "out of memory");
  mu_get_tag(&r, "gp1");
  m->p = (int)mu_get_count(&r, 0, HT_GP_MAX_DIM);
  m->nl = (int)mu_get_count(&r, 1, m->p > 0 ? m->p : 1);
  if (m->nl != 1 && m->nl != m->p) r.failed = 1;
  for (int i = 0; i < m->nl + 2 && !r.failed; i++) m->th[i] = mu_get_f64(&r);
  double sn2 = mu_get_f64(&r);
  if (!r.failed && (mu_scaler_load(&m->sc, &r) || m->sc.n != m->p)) r.failed = 1;
  m->ymean = mu_get_f64(&r);
  m->ysd = mu_get_f64(&r);
  int n = (int)mu_get_count(&r, 1, (int64_t)(len / 8 / (size_t)(m->p + 1)));
  if (!r.failed) m->x = mu_get_f64s(&r, (int64_t)n * m->p);
  if (!r.failed) m->y = mu_get_f64s(&r, n);
  ht_status st = mu_reader_finish(&r, "gp");
  int sane = !st && all_finite(m->th, m->nl + 2) && isfinite(m->ymean) && isfinite(m->ysd) && m->ysd > 0 &&
             sn2 > 0 && isfinite(sn2) && all_finite(m->x, (int64_t)n * m->p) && all_finite(m->y, n) &&
             all_finite(m->sc.offset, m->p) && all_finite(m->sc.scale, m->p);
  if (!st && !sane) st = ht_error(HT_ERR_PARSE, "saved gp model: a value is not a finite number");
  if (!st && !(isfinite(exp(m->th[m->nl])) && exp(m->th[m->nl]) > 0))
    st = ht_error(HT_ERR_PARSE, "saved gp model: bad signal variance");
  int threads = ht_gp_blas_begin();
  if (!st && !posterior(m, n, sn2)) st = ht_error(HT_ERR_PARSE, "saved gp model: its kernel matrix does not factor");
  ht_gp_blas_end(threads);
  if (st) {
    gp_destroy(m);
    return st;
  }
  *state = m;
  return HT_OK;
}

const ht_model_ops ht_model_gp = {
  .name = "gp",
  .summary = "Gaussian process (Matern 5/2, ARD, MAP hyperparameters) with its own standard deviation",
  .default_target = "rate",
  .fit = gp_fit,
  .predict = gp_predict,
  .save = gp_save,
  .load = gp_load,
  .destroy = gp_destroy,
  .predict_sd = gp_predict_sd,
};
