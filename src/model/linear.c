/* linear: ridge least squares on z-scored features, optionally with their squares and pairwise
 * products. With a log or rate target and the log_work / log-size features this is a power law
 * time = C * work^b (times one factor per other feature), the model most analytical performance
 * models reduce to.
 *
 * Algorithm: z-score every feature (constant ones become 0 and get weight 0), expand to degree 2
 * if asked (x_j, then x_j^2 and x_j*x_k for j < k), centre the expanded columns and the target so
 * the intercept is not penalised, and minimise |A w - y|^2 + lambda |w|^2 with a rank-revealing
 * QR (mu_lstsq: LAPACK dgelsy on A over sqrt(lambda) I), not the normal equations, whose Gram
 * matrix squares the condition number: size features are strongly correlated (work, flops, bytes,
 * log10(1 + size) from the wrapper), and a tiny lambda must still solve. The centring folds into the
 * intercept. predict: scale, expand on the fly, one dot product (~60 ns for 30 features; the
 * wrapper's log10 of the inputs brings a call to ~200 ns).
 *
 * Options:
 *   degree=1|2   (default 1) 2 adds squares and pairwise products: p + p(p+1)/2 terms, 495 for
 *                30 features (at most 64 features); it bends the power law (e.g. a cache step)
 *                but extrapolates wildly. On the bench's GEMM-like data: median error 23.6% ->
 *                8.4%, fit 7 ms -> 0.27 s, predict 0.2 -> 2.8 us.
 *   lambda=L     (default 1e-3, >= 0) ridge on the z-scored columns. On measured data the
 *                near-collinear size features (sizes, work, flops, bytes, work-items in log form)
 *                get huge opposite weights without it: on gemm_opencl's hold-out of the two
 *                largest sizes the mean error was 1054% at 1e-6 and 77% at 1e-3 (gemm_c: 15.7% ->
 *                14.8%). The price is a small bias on exact laws (extrapolated 100x in work: 3.9e-8
 *                at 1e-10, 3.9e-4 at 1e-6): pass lambda=1e-10 for noise-free data.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_util.h"

/* degree=2 on 64 features is 2144 terms: a QR of (rows + 2144) x 2144 takes seconds; beyond, the
 * fit would run for minutes (30 features, 495 terms, 2000 rows: ~0.25 s). */
enum { MAX_DEG2_FEATURES = 64 };

typedef struct linear {
  mu_scaler sc;
  int degree;
  int q;        /* expanded terms */
  double *w;    /* q weights */
  double b0;    /* intercept */
} linear;

static int n_terms(int p, int degree) { return degree == 2 ? p + p * (p + 1) / 2 : p; }

/* Expanded terms of one z-scored row: z, then z_j^2 and z_j z_k (j < k) in a fixed order. */
static void expand(const double *z, int p, int degree, double *out) {
  memcpy(out, z, (size_t)p * sizeof *z);
  if (degree < 2) return;
  int t = p;
  for (int j = 0; j < p; j++)
    for (int k = j; k < p; k++) out[t++] = z[j] * z[k];
}

static void linear_destroy(void *state) {
  linear *m = state;
  if (!m) return;
  mu_scaler_free(&m->sc);
  free(m->w);
  free(m);
}

/* Design matrix of expanded, centred terms; mean receives the column means. */
static ht_status design(const linear *m, const ht_dataset *d, double **a_out, double *mean) {
  int p = d->n_features, q = m->q, n = d->n_rows;
  double *a = malloc(((size_t)n * q + 1) * sizeof *a), *z = malloc((size_t)(p + 1) * sizeof *z);
  if (!a || !z) {
    free(a);
    free(z);
    return ht_error(HT_ERR_NOMEM, "linear: out of memory for a %d x %d design", n, q);
  }
  for (int t = 0; t < q; t++) mean[t] = 0;
  for (int i = 0; i < n; i++) {
    mu_scaler_apply(&m->sc, d->x + (size_t)i * p, z);
    expand(z, p, m->degree, a + (size_t)i * q);
    for (int t = 0; t < q; t++) mean[t] += a[(size_t)i * q + t] / n;
  }
  for (int i = 0; i < n; i++)
    for (int t = 0; t < q; t++) a[(size_t)i * q + t] -= mean[t];
  free(z);
  *a_out = a;
  return HT_OK;
}

static ht_status solve(linear *m, const ht_dataset *d, double lambda) {
  double *mean = malloc((size_t)(m->q + 1) * sizeof *mean), *a = NULL, *yc = NULL, ym = 0;
  if (!mean) return ht_error(HT_ERR_NOMEM, "linear: out of memory");
  ht_status st = design(m, d, &a, mean);
  if (!st && !(yc = malloc((size_t)d->n_rows * sizeof *yc))) st = ht_error(HT_ERR_NOMEM, "linear: out of memory");
  if (!st) {
    for (int i = 0; i < d->n_rows; i++) ym += d->y[i] / d->n_rows;
    for (int i = 0; i < d->n_rows; i++) yc[i] = d->y[i] - ym;
    if (m->q > 0) st = mu_lstsq(a, d->n_rows, m->q, yc, lambda, m->w);
  }
  if (!st) {
    m->b0 = ym;
    for (int t = 0; t < m->q; t++) m->b0 -= m->w[t] * mean[t];
  }
  free(mean);
  free(a);
  free(yc);
  return st;
}

static ht_status linear_fit(void **state, const ht_dataset *train, const ht_options *opt, uint64_t seed) {
  (void)seed;
  *state = NULL;
  int64_t degree;
  double lambda;
  ht_status st = mu_opt_int(opt, "linear", "degree", 1, 1, 2, &degree);
  if (!st) st = mu_opt_double(opt, "linear", "lambda", 1e-3, 0, 1e12, &lambda);
  if (st) return st;
  if (degree == 2 && train->n_features > MAX_DEG2_FEATURES)
    return ht_error(HT_ERR_INVALID, "linear: degree=2 with %d features gives %d terms (at most %d features)",
                    train->n_features, n_terms(train->n_features, 2), MAX_DEG2_FEATURES);
  linear *m = calloc(1, sizeof *m);
  if (!m) return ht_error(HT_ERR_NOMEM, "linear: out of memory");
  m->degree = (int)degree;
  m->q = n_terms(train->n_features, m->degree);
  st = mu_scaler_fit(&m->sc, train, MU_ZSCORE);
  if (!st && !(m->w = calloc((size_t)m->q + 1, sizeof *m->w))) st = ht_error(HT_ERR_NOMEM, "linear: out of memory");
  if (!st) st = solve(m, train, lambda);
  if (st) {
    linear_destroy(m);
    return st;
  }
  *state = m;
  return HT_OK;
}

/* Degree 2 without a buffer of expanded terms: the pairwise products are formed as they are used,
 * in the same order as expand(). */
static double linear_predict(const void *state, const double *x) {
  const linear *m = state;
  int p = m->sc.n, t = p;
  double s = m->b0, zbuf[128], *z = p <= 128 ? zbuf : malloc((size_t)p * sizeof *z);
  if (!z) return m->b0;
  mu_scaler_apply(&m->sc, x, z);
  for (int j = 0; j < p; j++) s += m->w[j] * z[j];
  if (m->degree == 2)
    for (int j = 0; j < p; j++)
      for (int k = j; k < p; k++) s += m->w[t++] * z[j] * z[k];
  if (z != zbuf) free(z);
  return isfinite(s) ? s : m->b0;
}

static ht_status linear_save(const void *state, ht_buf *out) {
  const linear *m = state;
  mu_put_tag(out, "linear");
  mu_scaler_save(&m->sc, out);
  mu_put_i64(out, m->degree);
  mu_put_f64(out, m->b0);
  mu_put_f64s(out, m->w, m->q);
  return HT_OK;
}

static ht_status linear_load(void **state, const char *data, size_t len) {
  *state = NULL;
  linear *m = calloc(1, sizeof *m);
  if (!m) return ht_error(HT_ERR_NOMEM, "linear: out of memory");
  mu_reader r;
  mu_reader_init(&r, data, len);
  mu_get_tag(&r, "linear");
  if (!r.failed && mu_scaler_load(&m->sc, &r) == 0) {
    m->degree = (int)mu_get_count(&r, 1, 2);
    /* bound p before n_terms() so a corrupt count cannot overflow the term count */
    if (m->degree == 2 && m->sc.n > MAX_DEG2_FEATURES) r.failed = 1;
    m->q = n_terms(m->sc.n, m->degree);
    m->b0 = mu_get_f64(&r);
    m->w = mu_get_f64s(&r, m->q);
  } else {
    r.failed = 1;
  }
  ht_status st = mu_reader_finish(&r, "linear");
  if (st) {
    linear_destroy(m);
    return st;
  }
  *state = m;
  return HT_OK;
}

const ht_model_ops ht_model_linear = {
  .name = "linear",
  .summary = "ridge least squares on z-scored features (degree=2 adds products); a power law on log features",
  .default_target = "rate",
  .fit = linear_fit,
  .predict = linear_predict,
  .save = linear_save,
  .load = linear_load,
  .destroy = linear_destroy,
};
