/* starpu: StarPU's non-linear regression performance model (STARPU_NL_REGRESSION_BASED),
 * time = a * n^b + c, one per footprint, with StarPU's history model as the fallback. The baseline
 * the learned models have to beat: it is what a task runtime does today.
 *
 * Footprint: the values of a row's param:* and device:* features (what StarPU hashes into its
 * footprint is the data layout; here the version and device play that part). n is one feature
 * (option size, default "work": StarPU's default n is the total data size, work is our closest).
 *
 * Fit per footprint with at least 3 distinct n (StarPU does not trust a regression over a narrow
 * size range either: it wants min size < 90% of max):
 *   - n is divided by the footprint's largest n (u = n / nref) so u^b stays in range;
 *   - b: a grid over [B_LO, B_HI] in steps of 0.05, then golden-section search within one step of
 *     the best grid point; for each b, a and c are the linear least squares of y on [u^b, 1];
 *   - c >= 0: if the unconstrained c is negative, c = 0 and a is refitted alone. StarPU's model is
 *     a time with a constant overhead, which cannot be negative; a negative c is the fit bending
 *     the curve, and extrapolates to negative times for small n. (StarPU itself searches c in
 *     [0, min y) and takes a, b from the log-log line of y - c, as we read its regression.c; we
 *     search b instead because a and c are then linear, the objective is the error in seconds
 *     rather than in log space, and the same code recovers an exact law to machine precision.)
 *   - a Gauss-Newton polish of (a, b, c) (c held at 0 when the constraint is active), each step
 *     kept only if the squared error drops: the search alone leaves b ~1e-8 off.
 * A footprint with fewer than 3 distinct n, or any n <= 0 (no power of it), keeps a history model:
 * the mean per exact n; another n takes the nearest recorded n (by ratio) scaled linearly
 * (y * n / n_near), i.e. constant throughput. A footprint unseen in training uses one fit over all
 * rows (history over all rows if that has fewer than 3 distinct n).
 *
 * Options:
 *   size=FEATURE   (default work) the feature that is n.
 * The target is seconds by default (StarPU fits seconds); with target=log the constraint c >= 0
 * and the linear scaling of the history fallback lose their meaning.
 *
 * What goes wrong with it (reference anchors/runtimes.md, StarPU section, and what follows from
 * the form): one number n cannot tell a 1000x10 matrix from a 10x1000 one, so shapes with the same
 * size share a curve; a power law has no cache cliffs or occupancy steps (the ranking model and
 * the learned models do); timing spikes pull least squares (StarPU issue #50: 70-100 ms samples
 * among 190 us ones sent all GEMMs to one or two GPUs) — there is no robust loss here either;
 * nothing is shared between footprints, so every new version or device needs its own calibration
 * (StarPU wants 10 runs per entry before trusting it) and an unseen one gets the average curve;
 * StarPU fits this model only at program end because it is costly, so the first run schedules on
 * history alone.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_util.h"

#define B_LO (-1.0)
#define B_HI 4.0
#define B_STEP 0.05

enum { KIND_REGRESSION = 0, KIND_HISTORY = 1, MAX_POINTS = 1 << 28 };

typedef struct curve {
  int kind;
  double a, b, c, nref; /* a * (n / nref)^b + c */
  int m;                /* history: distinct n, ascending, and the mean y at each */
  double *n, *y;
} curve;

typedef struct starpu {
  int p; /* features at fit: bounds every column index a loaded model reads */
  int size_col;
  mu_footprints fp;
  curve *curves; /* one per footprint */
  curve global;
} starpu;

static void curve_free(curve *c) {
  free(c->n);
  free(c->y);
  c->n = c->y = NULL;
}

static void starpu_destroy(void *state) {
  starpu *s = state;
  if (!s) return;
  for (int f = 0; s->curves && f < s->fp.n; f++) curve_free(&s->curves[f]);
  free(s->curves);
  curve_free(&s->global);
  mu_footprints_free(&s->fp);
  free(s);
}

/* ---- the regression ---- */

typedef struct pts {
  int n;
  const double *u, *y; /* u = n / nref */
} pts;

/* a and c (c >= 0) for a fixed b; returns the squared error. */
static double fit_ac(const pts *p, double b, double *a, double *c) {
  double sf = 0, sff = 0, sy = 0, sfy = 0;
  for (int i = 0; i < p->n; i++) {
    double f = pow(p->u[i], b);
    sf += f;
    sff += f * f;
    sy += p->y[i];
    sfy += f * p->y[i];
  }
  double det = p->n * sff - sf * sf;
  *a = det > 0 ? (p->n * sfy - sf * sy) / det : 0;
  *c = det > 0 ? (sy - *a * sf) / p->n : sy / p->n;
  if (*c < 0) {
    *c = 0;
    *a = sff > 0 ? sfy / sff : 0;
  }
  double e = 0;
  for (int i = 0; i < p->n; i++) {
    double r = *a * pow(p->u[i], b) + *c - p->y[i];
    e += r * r;
  }
  return isfinite(e) ? e : INFINITY;
}

static double search_b(const pts *p) {
  double best = INFINITY, bb = 0, a, c;
  for (double b = B_LO; b <= B_HI + 1e-9; b += B_STEP) {
    double e = fit_ac(p, b, &a, &c);
    if (e < best) best = e, bb = b;
  }
  const double g = (sqrt(5) - 1) / 2;
  double lo = bb - B_STEP, hi = bb + B_STEP;
  double x1 = hi - g * (hi - lo), x2 = lo + g * (hi - lo);
  double f1 = fit_ac(p, x1, &a, &c), f2 = fit_ac(p, x2, &a, &c);
  for (int it = 0; it < 80 && hi - lo > 1e-12; it++) {
    if (f1 < f2) hi = x2, x2 = x1, f2 = f1, x1 = hi - g * (hi - lo), f1 = fit_ac(p, x1, &a, &c);
    else lo = x1, x1 = x2, f1 = f2, x2 = lo + g * (hi - lo), f2 = fit_ac(p, x2, &a, &c);
  }
  double bm = (lo + hi) / 2;
  return fit_ac(p, bm, &a, &c) <= best ? bm : bb;
}

static double sse(const pts *p, double a, double b, double c) {
  double e = 0;
  for (int i = 0; i < p->n; i++) {
    double r = a * pow(p->u[i], b) + c - p->y[i];
    e += r * r;
  }
  return isfinite(e) ? e : INFINITY;
}

/* Solves the k x k system g x = r (k <= 3) by Gaussian elimination with pivoting; 0 on success. */
static int solve_small(double g[3][3], double r[3], int k) {
  for (int i = 0; i < k; i++) {
    int piv = i;
    for (int j = i + 1; j < k; j++)
      if (fabs(g[j][i]) > fabs(g[piv][i])) piv = j;
    if (!(fabs(g[piv][i]) > 0)) return -1;
    for (int j = 0; j < k; j++) {
      double t = g[i][j];
      g[i][j] = g[piv][j];
      g[piv][j] = t;
    }
    double t = r[i];
    r[i] = r[piv];
    r[piv] = t;
    for (int j = i + 1; j < k; j++) {
      double f = g[j][i] / g[i][i];
      for (int l = i; l < k; l++) g[j][l] -= f * g[i][l];
      r[j] -= f * r[i];
    }
  }
  for (int i = k - 1; i >= 0; i--) {
    for (int j = i + 1; j < k; j++) r[i] -= g[i][j] * r[j];
    r[i] /= g[i][i];
  }
  return 0;
}

/* Gauss-Newton on (a, b[, c]); a step is kept only when it lowers the error and keeps c >= 0. */
static void polish(const pts *p, double *a, double *b, double *c) {
  int k = *c > 0 ? 3 : 2;
  double e = sse(p, *a, *b, *c);
  for (int it = 0; it < 30 && e > 0; it++) {
    double g[3][3] = {{0}}, r[3] = {0};
    for (int i = 0; i < p->n; i++) {
      double f = pow(p->u[i], *b), lu = log(p->u[i]);
      double j[3] = {f, *a * f * lu, 1}, res = p->y[i] - (*a * f + *c);
      for (int x = 0; x < k; x++) {
        r[x] += j[x] * res;
        for (int y = 0; y < k; y++) g[x][y] += j[x] * j[y];
      }
    }
    if (solve_small(g, r, k) != 0) return;
    double na = *a + r[0], nb = *b + r[1], nc = k == 3 ? *c + r[2] : *c;
    double ne = nc >= 0 ? sse(p, na, nb, nc) : INFINITY;
    if (!(ne < e)) return;
    *a = na, *b = nb, *c = nc, e = ne;
  }
}

static void fit_regression(curve *cv, const double *n, const double *y, int cnt) {
  double nref = 0;
  for (int i = 0; i < cnt; i++) nref = fmax(nref, n[i]);
  double *u = malloc((size_t)cnt * sizeof *u);
  if (!u) return; /* stays a history model */
  for (int i = 0; i < cnt; i++) u[i] = n[i] / nref;
  pts p = {cnt, u, y};
  double b = search_b(&p), a, c;
  fit_ac(&p, b, &a, &c);
  polish(&p, &a, &b, &c);
  free(u);
  cv->kind = KIND_REGRESSION;
  cv->a = a, cv->b = b, cv->c = c, cv->nref = nref;
}

/* ---- history, and the choice between them ---- */

static int cmp_pair(const void *x, const void *y) {
  const double *a = x, *b = y;
  return a[0] < b[0] ? -1 : a[0] > b[0];
}

/* A curve from cnt (n, y) points: the history table always (it is small and keeps the model
 * explainable), a regression on top when there are >= 3 distinct positive n. */
static ht_status fit_curve(curve *cv, const double *n, const double *y, int cnt) {
  double *pair = malloc((size_t)(2 * cnt + 2) * sizeof *pair);
  cv->n = malloc((size_t)(cnt + 1) * sizeof *cv->n);
  cv->y = malloc((size_t)(cnt + 1) * sizeof *cv->y);
  if (!pair || !cv->n || !cv->y) {
    free(pair);
    return ht_error(HT_ERR_NOMEM, "starpu: out of memory");
  }
  for (int i = 0; i < cnt; i++) pair[2 * i] = n[i], pair[2 * i + 1] = y[i];
  qsort(pair, (size_t)cnt, 2 * sizeof *pair, cmp_pair);
  int positive = 1;
  cv->m = 0;
  for (int i = 0; i < cnt;) {
    int j = i;
    double s = 0;
    while (j < cnt && pair[2 * j] == pair[2 * i]) s += pair[2 * j++ + 1];
    cv->n[cv->m] = pair[2 * i];
    cv->y[cv->m++] = s / (j - i);
    if (!(pair[2 * i] > 0)) positive = 0;
    i = j;
  }
  free(pair);
  cv->kind = KIND_HISTORY;
  if (cv->m >= 3 && positive) fit_regression(cv, n, y, cnt);
  return HT_OK;
}

static double history_at(const curve *cv, double n) {
  int best = 0;
  double bd = INFINITY;
  for (int i = 0; i < cv->m; i++) {
    if (cv->n[i] == n) return cv->y[i];
    double d = n > 0 && cv->n[i] > 0 ? fabs(log(n / cv->n[i])) : fabs(n - cv->n[i]);
    if (d < bd) bd = d, best = i;
  }
  double v = cv->n[best] > 0 && n > 0 ? cv->y[best] * n / cv->n[best] : cv->y[best];
  return isfinite(v) ? v : cv->y[best];
}

static double curve_at(const curve *cv, double n) {
  if (cv->kind == KIND_REGRESSION && n > 0) {
    double v = cv->a * pow(n / cv->nref, cv->b) + cv->c;
    if (isfinite(v)) return v;
  }
  return history_at(cv, n);
}

/* ---- fit ---- */

static ht_status fit_footprints(starpu *s, const ht_dataset *d, const int *row_fp) {
  int N = d->n_rows, p = d->n_features;
  double *n = malloc((size_t)N * sizeof *n), *y = malloc((size_t)N * sizeof *y);
  s->curves = calloc((size_t)s->fp.n, sizeof *s->curves);
  ht_status st = n && y && s->curves ? HT_OK : ht_error(HT_ERR_NOMEM, "starpu: out of memory");
  for (int f = 0; !st && f < s->fp.n; f++) {
    int cnt = 0;
    for (int i = 0; i < N; i++)
      if (row_fp[i] == f) n[cnt] = d->x[(size_t)i * p + s->size_col], y[cnt++] = d->y[i];
    st = fit_curve(&s->curves[f], n, y, cnt);
  }
  if (!st) {
    for (int i = 0; i < N; i++) n[i] = d->x[(size_t)i * p + s->size_col];
    st = fit_curve(&s->global, n, d->y, N);
  }
  free(n);
  free(y);
  return st;
}

static ht_status starpu_fit(void **state, const ht_dataset *train, const ht_options *opt, uint64_t seed) {
  (void)seed;
  *state = NULL;
  const char *size = ht_options_str(opt, "size", "work");
  int col = ht_dataset_feature(train, size);
  if (col < 0) return ht_error(HT_ERR_INVALID, "starpu option size=%s: no such feature in the dataset", size);
  starpu *s = calloc(1, sizeof *s);
  int *row_fp = malloc((size_t)(train->n_rows + 1) * sizeof *row_fp);
  ht_status st = s && row_fp ? HT_OK : ht_error(HT_ERR_NOMEM, "starpu: out of memory");
  if (!st) {
    s->size_col = col;
    s->p = train->n_features;
    st = mu_footprints_fit(&s->fp, train, row_fp);
  }
  if (!st) st = fit_footprints(s, train, row_fp);
  free(row_fp);
  if (st) {
    starpu_destroy(s);
    return st;
  }
  *state = s;
  return HT_OK;
}

static double starpu_predict(const void *state, const double *x) {
  const starpu *s = state;
  int f = mu_footprints_find(&s->fp, x);
  return curve_at(f >= 0 ? &s->curves[f] : &s->global, x[s->size_col]);
}

/* ---- serialisation ---- */

static void curve_save(const curve *cv, ht_buf *b) {
  mu_put_i64(b, cv->kind);
  mu_put_f64(b, cv->a);
  mu_put_f64(b, cv->b);
  mu_put_f64(b, cv->c);
  mu_put_f64(b, cv->nref);
  mu_put_i64(b, cv->m);
  mu_put_f64s(b, cv->n, cv->m);
  mu_put_f64s(b, cv->y, cv->m);
}

static void curve_load(curve *cv, mu_reader *r) {
  cv->kind = (int)mu_get_count(r, KIND_REGRESSION, KIND_HISTORY);
  cv->a = mu_get_f64(r);
  cv->b = mu_get_f64(r);
  cv->c = mu_get_f64(r);
  cv->nref = mu_get_f64(r);
  cv->m = (int)mu_get_count(r, 1, MAX_POINTS);
  cv->n = mu_get_f64s(r, cv->m);
  cv->y = mu_get_f64s(r, cv->m);
  /* fit writes finite numbers only: anything else is corruption that would predict NaN */
  int ok = isfinite(cv->a) && isfinite(cv->b) && isfinite(cv->c) && isfinite(cv->nref);
  if (cv->kind == KIND_REGRESSION && !(cv->nref > 0)) ok = 0;
  for (int i = 0; !r->failed && i < cv->m; i++)
    if (!isfinite(cv->n[i]) || !isfinite(cv->y[i]) || (i && !(cv->n[i] > cv->n[i - 1]))) ok = 0;
  if (!ok) r->failed = 1;
}

static ht_status starpu_save(const void *state, ht_buf *out) {
  const starpu *s = state;
  mu_put_tag(out, "starpu");
  mu_put_i64(out, s->p);
  mu_put_i64(out, s->size_col);
  mu_footprints_save(&s->fp, out);
  for (int f = 0; f < s->fp.n; f++) curve_save(&s->curves[f], out);
  curve_save(&s->global, out);
  return HT_OK;
}

static ht_status starpu_load(void **state, const char *data, size_t len) {
  *state = NULL;
  starpu *s = calloc(1, sizeof *s);
  if (!s) return ht_error(HT_ERR_NOMEM, "starpu: out of memory");
  mu_reader r;
  mu_reader_init(&r, data, len);
  mu_get_tag(&r, "starpu");
  s->p = (int)mu_get_count(&r, 1, 1 << 20);
  s->size_col = (int)mu_get_count(&r, 0, s->p - 1);
  if (!r.failed && mu_footprints_load(&s->fp, &r, s->p) != 0) r.failed = 1;
  /* each curve takes at least 56 bytes: bound the count before allocating */
  if (!r.failed && (size_t)s->fp.n > (r.len - r.pos) / 56) r.failed = 1;
  if (!r.failed && !(s->curves = calloc((size_t)s->fp.n, sizeof *s->curves))) r.failed = 1;
  for (int f = 0; !r.failed && f < s->fp.n; f++) curve_load(&s->curves[f], &r);
  if (!r.failed) curve_load(&s->global, &r);
  ht_status st = mu_reader_finish(&r, "starpu");
  if (st) {
    if (!s->curves) s->fp.n = 0;
    starpu_destroy(s);
    return st;
  }
  *state = s;
  return HT_OK;
}

const ht_model_ops ht_model_starpu = {
  .name = "starpu",
  .summary = "StarPU's a*n^b+c per footprint (param/device values), history fallback; the runtime baseline",
  .default_target = "time",
  .fit = starpu_fit,
  .predict = starpu_predict,
  .save = starpu_save,
  .load = starpu_load,
  .destroy = starpu_destroy,
  .raw_inputs = 1, /* n, the grid size and the footprint values are used as they are */
};
