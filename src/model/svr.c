/* svr: epsilon support-vector regression, trained by libsvm and evaluated by
 * our own loop.
 *
 * Algorithm: inputs are scaled (z-score by default; reference 003 used min-max
 * to [0,1], kept as scale=minmax), the target is standardised (mean 0, sd 1) so
 * C and epsilon mean the same thing on every dataset, and libsvm's epsilon-SVR
 * (SMO, shrinking on) finds the support vectors. The support vectors (dense, in
 * scaled units), their coefficients and rho are copied out and libsvm's model
 * freed: prediction sum_i coef_i K(sv_i, x) - rho runs in our own dense loop
 * and save/load need no libsvm. A linear kernel is collapsed to one weight
 * vector (sum_i coef_i sv_i), so it predicts in O(features). Prediction time
 * grows with the number of support vectors (n_sv x features multiply-adds plus
 * n_sv exp() for rbf): it can exceed the 5 us goal on large datasets.
 *
 * Options (defaults measured on a synthetic smooth problem, 800 rows x 8 features of which 3
 * matter; held-out mean relative error of the time):
 *   kernel=rbf      rbf | linear | poly. rbf: 4.7%; linear cannot bend (21%); poly (degree 3) fits
 *                   this problem better (2.6%) but trains 40x slower and is unstable far out
 *   C=10            box constraint (> 0) on the standardised target: C=1 gives 6.2%, C=100 the
 *                   same 4.7% as 10 at twice the training time
 *   epsilon=0.02    half-width of the insensitive tube in target standard deviations (>= 0):
 *                   0.05 gives 5.5% with 27% fewer support vectors, 0.1 gives 6.9%
 *   gamma=0         rbf/poly kernel width (>= 0); 0 means 1/n_features (libsvm's default), which
 *                   suits z-scored inputs (squared distances ~ 2 n_features)
 *   degree=3        poly degree (1..10); coef0=1 poly offset
 *   scale=zscore    zscore | minmax input scaling (constant features map to 0 either way);
 *                   minmax (reference 003's choice) gave 5.3%
 *   tol=0.001       libsvm's stopping tolerance (> 0), libsvm's default
 * Irrelevant features hurt an rbf kernel: with 27 of 30 irrelevant (3000 rows) the error is 11%
 * and ~2800 rows are support vectors (~50 us per prediction); select features first.
 */
#ifdef HT_HAVE_LIBSVM /* built without libsvm (HETUNE_WITH_LIBSVM=OFF): no svr kind */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <svm.h>

#include "model/model_util.h"

enum { K_RBF = 0, K_LINEAR = 1, K_POLY = 2 };
static const char *const kernels[] = {"rbf", "linear", "poly", NULL};
static const char *const scalings[] = {"minmax", "zscore", NULL}; /* indices are mu_scaling values */

typedef struct svr {
  int kernel, degree, p, n_sv;
  double gamma, coef0, rho, ymean, ysd;
  mu_scaler sc;
  double *coef; /* n_sv */
  double *sv;   /* n_sv x p, scaled units */
} svr;

typedef struct svr_opts {
  int kernel, scaling;
  int64_t degree;
  double c, epsilon, gamma, coef0, tol;
} svr_opts;

static void svr_destroy(void *state) {
  svr *m = state;
  if (!m) return;
  mu_scaler_free(&m->sc);
  free(m->coef);
  free(m->sv);
  free(m);
}

static ht_status choice(const ht_options *o, const char *key, const char *def, const char *const *list, int *out) {
  const char *v = ht_options_str(o, key, def);
  for (int i = 0; list[i]; i++)
    if (strcmp(v, list[i]) == 0) {
      *out = i;
      return HT_OK;
    }
  return ht_error(HT_ERR_INVALID, "svr option %s=%s: expected %s", key, v,
                  list == kernels ? "rbf, linear or poly" : "zscore or minmax");
}

static ht_status read_opts(const ht_options *o, svr_opts *p) {
  ht_status st;
  if ((st = choice(o, "kernel", "rbf", kernels, &p->kernel)) ||
      (st = choice(o, "scale", "zscore", scalings, &p->scaling)) ||
      (st = mu_opt_double(o, "svr", "C", 10, 1e-9, 1e12, &p->c)) ||
      (st = mu_opt_double(o, "svr", "epsilon", 0.02, 0, 1e6, &p->epsilon)) ||
      (st = mu_opt_double(o, "svr", "gamma", 0, 0, 1e12, &p->gamma)) ||
      (st = mu_opt_int(o, "svr", "degree", 3, 1, 10, &p->degree)) ||
      (st = mu_opt_double(o, "svr", "coef0", 1, -1e6, 1e6, &p->coef0)) ||
      (st = mu_opt_double(o, "svr", "tol", 1e-3, 1e-12, 1e3, &p->tol)))
    return st;
  return HT_OK;
}

static void quiet(const char *s) { (void)s; } /* libsvm prints progress to stdout otherwise */

/* The rows scaled into libsvm's sparse format (every feature listed; index
 * 1-based, -1 ends). */
static ht_status make_problem(const svr *m, const ht_dataset *d, struct svm_problem *prob, struct svm_node **pool) {
  int n = d->n_rows, p = d->n_features;
  prob->l = n;
  prob->y = malloc((size_t)n * sizeof *prob->y);
  prob->x = malloc((size_t)n * sizeof *prob->x);
  *pool = malloc((size_t)n * (size_t)(p + 1) * sizeof **pool);
  double *row = malloc((size_t)(p + 1) * sizeof *row);
  if (!prob->y || !prob->x || !*pool || !row) {
    free(row);
    return ht_error(HT_ERR_NOMEM, "svr: out of memory for %d rows", n);
  }
  for (int i = 0; i < n; i++) {
    struct svm_node *x = *pool + (size_t)i * (p + 1);
    mu_scaler_apply(&m->sc, d->x + (size_t)i * p, row);
    for (int j = 0; j < p; j++) x[j] = (struct svm_node){j + 1, row[j]};
    x[p] = (struct svm_node){-1, 0};
    prob->x[i] = x;
    prob->y[i] = (d->y[i] - m->ymean) / m->ysd;
  }
  free(row);
  return HT_OK;
}

/* Copies the support vectors out of libsvm's model (dense), collapsing a linear
 * kernel. */
static ht_status take_model(svr *m, const struct svm_model *sm) {
  int p = m->p, l = sm->l, n = m->kernel == K_LINEAR ? 1 : l;
  m->rho = sm->rho[0];
  m->n_sv = n;
  m->coef = calloc((size_t)n + 1, sizeof *m->coef);
  m->sv = calloc((size_t)n * p + 1, sizeof *m->sv);
  if (!m->coef || !m->sv) return ht_error(HT_ERR_NOMEM, "svr: out of memory for %d support vectors", l);
  for (int i = 0; i < l; i++) {
    double c = sm->sv_coef[0][i];
    double *dst = m->sv + (m->kernel == K_LINEAR ? 0 : (size_t)i * p);
    for (const struct svm_node *e = sm->SV[i]; e->index != -1; e++)
      if (e->index >= 1 && e->index <= p) dst[e->index - 1] += m->kernel == K_LINEAR ? c * e->value : e->value;
    if (m->kernel != K_LINEAR) m->coef[i] = c;
  }
  if (m->kernel == K_LINEAR) m->coef[0] = 1;
  return HT_OK;
}

static ht_status train(svr *m, const ht_dataset *d, const svr_opts *o) {
  struct svm_problem prob = {0};
  struct svm_node *pool = NULL;
  ht_status st = make_problem(m, d, &prob, &pool);
  struct svm_parameter par = {0};
  par.svm_type = EPSILON_SVR;
  par.kernel_type = o->kernel == K_RBF ? RBF : o->kernel == K_LINEAR ? LINEAR : POLY;
  par.degree = (int)o->degree;
  par.gamma = m->gamma;
  par.coef0 = o->coef0;
  par.cache_size = 100;
  par.eps = o->tol;
  par.C = o->c;
  par.p = o->epsilon;
  par.shrinking = 1;
  const char *why = st ? NULL : svm_check_parameter(&prob, &par);
  if (why) st = ht_error(HT_ERR_INVALID, "svr: %s", why);
  if (!st) {
    svm_set_print_string_function(quiet);
    struct svm_model *sm = svm_train(&prob, &par);
    if (!sm)
      st = ht_error(HT_ERR_NOMEM, "svr: libsvm training failed");
    else
      st = take_model(m, sm);
    svm_free_and_destroy_model(&sm); /* the support vectors point into pool: it is freed below */
  }
  free(prob.y);
  free(prob.x);
  free(pool);
  return st;
}

static ht_status svr_fit(void **state, const ht_dataset *d, const ht_options *opt, uint64_t seed) {
  (void)seed; /* epsilon-SVR's SMO is deterministic */
  *state = NULL;
  svr_opts o;
  ht_status st = read_opts(opt, &o);
  if (st) return st;
  if (d->n_rows < 1 || d->n_features < 1)
    return ht_error(HT_ERR_INVALID, "svr: needs at least one row and one feature (got %d x %d)", d->n_rows,
                    d->n_features);
  svr *m = calloc(1, sizeof *m);
  if (!m) return ht_error(HT_ERR_NOMEM, "out of memory");
  m->kernel = o.kernel;
  m->degree = (int)o.degree;
  m->coef0 = o.coef0;
  m->p = d->n_features;
  m->gamma = o.gamma > 0 ? o.gamma : 1.0 / d->n_features;
  mu_target_stats(d, &m->ymean, &m->ysd);
  st = mu_scaler_fit(&m->sc, d, (mu_scaling)o.scaling);
  if (!st) st = train(m, d, &o);
  if (st) {
    svr_destroy(m);
    return st;
  }
  *state = m;
  return HT_OK;
}

static double kernel_sum(const svr *m, const double *z) {
  int p = m->p;
  double f = 0;
  for (int i = 0; i < m->n_sv; i++) {
    const double *s = m->sv + (size_t)i * p;
    double k = 0;
    if (m->kernel == K_RBF) {
      for (int j = 0; j < p; j++) k += (z[j] - s[j]) * (z[j] - s[j]);
      k = exp(-m->gamma * k);
    } else {
      for (int j = 0; j < p; j++) k += z[j] * s[j];
      if (m->kernel == K_POLY) k = pow(m->gamma * k + m->coef0, m->degree);
    }
    f += m->coef[i] * k;
  }
  return f;
}

#define STACK_FEATURES 256

static double svr_predict(const void *state, const double *x) {
  const svr *m = state;
  double buf[STACK_FEATURES], *z = m->p <= STACK_FEATURES ? buf : malloc((size_t)m->p * sizeof *z);
  if (!z)
    return m->ymean; /* out of memory on a very wide row: the mean is the safe
                        answer */
  mu_scaler_apply(&m->sc, x, z);
  double f = kernel_sum(m, z) - m->rho;
  if (z != buf) free(z);
  return m->ymean + m->ysd * f;
}

static ht_status svr_save(const void *state, ht_buf *out) {
  const svr *m = state;
  mu_put_tag(out, "svr1");
  mu_put_i64(out, m->kernel);
  mu_put_i64(out, m->degree);
  mu_put_f64(out, m->gamma);
  mu_put_f64(out, m->coef0);
  mu_put_f64(out, m->rho);
  mu_put_f64(out, m->ymean);
  mu_put_f64(out, m->ysd);
  mu_scaler_save(&m->sc, out);
  mu_put_i64(out, m->n_sv);
  mu_put_f64s(out, m->coef, m->n_sv);
  mu_put_f64s(out, m->sv, (int64_t)m->n_sv * m->p);
  return HT_OK;
}

static int all_finite(const double *v, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (!isfinite(v[i])) return 0;
  return 1;
}

static ht_status svr_load(void **state, const char *data, size_t len) {
  *state = NULL;
  mu_reader r;
  mu_reader_init(&r, data, len);
  svr *m = calloc(1, sizeof *m);
  if (!m) return ht_error(HT_ERR_NOMEM, "out of memory");
  mu_get_tag(&r, "svr1");
  m->kernel = (int)mu_get_count(&r, K_RBF, K_POLY);
  m->degree = (int)mu_get_count(&r, 1, 10);
  m->gamma = mu_get_f64(&r);
  m->coef0 = mu_get_f64(&r);
  m->rho = mu_get_f64(&r);
  m->ymean = mu_get_f64(&r);
  m->ysd = mu_get_f64(&r);
  if (!r.failed && mu_scaler_load(&m->sc, &r) == 0) {
    m->p = m->sc.n;
    m->n_sv = (int)mu_get_count(&r, 0, (int64_t)(len / 8));
    m->coef = mu_get_f64s(&r, m->n_sv);
    if (m->p < 1 || (int64_t)m->n_sv * m->p > (int64_t)(len / 8))
      r.failed = 1;
    else
      m->sv = mu_get_f64s(&r, (int64_t)m->n_sv * m->p);
  }
  double head[5] = {m->gamma, m->coef0, m->rho, m->ymean, m->ysd};
  if (!r.failed && (!all_finite(head, 5) || !(m->gamma >= 0) || !all_finite(m->coef, m->n_sv) ||
                    !all_finite(m->sv, (int64_t)m->n_sv * m->p) || !all_finite(m->sc.offset, m->p) ||
                    !all_finite(m->sc.scale, m->p)))
    r.failed = 1;
  ht_status st = mu_reader_finish(&r, "svr");
  if (st) {
    svr_destroy(m);
    return st;
  }
  *state = m;
  return HT_OK;
}

/* Number of support vectors (the prediction cost), for benchmarks. Internal. */
int ht_svr_n_sv(const void *state);
int ht_svr_n_sv(const void *state) { return ((const svr *)state)->n_sv; }

const ht_model_ops ht_model_svr = {
  .name = "svr",
  .summary = "epsilon-SVR (libsvm training; rbf, linear or poly kernel; own prediction loop)",
  .default_target = "rate",
  .fit = svr_fit,
  .predict = svr_predict,
  .save = svr_save,
  .load = svr_load,
  .destroy = svr_destroy,
};
#endif /* HT_HAVE_LIBSVM */
