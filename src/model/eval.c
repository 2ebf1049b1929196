/* Evaluation of predictions: errors, ranking within a problem, cross-validation, hold-out by
 * problem size and prediction latency (docs/prediction.md defines every number). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hetune/model.h"

/* ---- ranks and Spearman ---- */

typedef struct keyed {
  double v;
  int i;
} keyed;

static int keyed_cmp(const void *a, const void *b) {
  double x = ((const keyed *)a)->v, y = ((const keyed *)b)->v;
  return x < y ? -1 : x > y;
}

/* Average ranks (ties share the mean of their positions). */
static void ranks(const double *v, int n, keyed *tmp, double *rank) {
  for (int i = 0; i < n; i++) tmp[i] = (keyed){v[i], i};
  qsort(tmp, (size_t)n, sizeof *tmp, keyed_cmp);
  for (int a = 0; a < n;) {
    int b = a;
    while (b + 1 < n && tmp[b + 1].v == tmp[a].v) b++;
    for (int k = a; k <= b; k++) rank[tmp[k].i] = 0.5 * (a + b);
    a = b + 1;
  }
}

static double pearson(const double *a, const double *b, int n) {
  double ma = 0, mb = 0, sab = 0, saa = 0, sbb = 0;
  for (int i = 0; i < n; i++) ma += a[i], mb += b[i];
  ma /= n;
  mb /= n;
  for (int i = 0; i < n; i++) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  return saa > 0 && sbb > 0 ? sab / sqrt(saa * sbb) : 0;
}

/* ---- accuracy ---- */

typedef struct group_scratch {
  double *y, *p, *ry, *rp;
  keyed *tmp;
} group_scratch;

/* Ranking metrics of one group's rows (n >= 2). */
static void group_metrics(const group_scratch *g, int n, double *rho, int *top1, double *penalty) {
  ranks(g->y, n, g->tmp, g->ry);
  ranks(g->p, n, g->tmp, g->rp);
  *rho = pearson(g->ry, g->rp, n);
  int best = 0, chosen = 0;
  for (int i = 1; i < n; i++) {
    if (g->y[i] < g->y[best]) best = i;
    if (g->p[i] < g->p[chosen]) chosen = i;
  }
  *top1 = g->y[chosen] == g->y[best];
  *penalty = 100.0 * (g->y[chosen] / g->y[best] - 1);
}

static void ranking_metrics(const ht_dataset *d, const double *pred, group_scratch *g, ht_accuracy *a) {
  double rho_sum = 0, pen_sum = 0;
  int hits = 0;
  for (int grp = 0; grp < d->n_groups; grp++) {
    int n = 0;
    for (int i = 0; i < d->n_rows; i++)
      if (d->group[i] == grp && isfinite(pred[i])) {
        g->y[n] = d->y[i];
        g->p[n++] = pred[i];
      }
    if (n < 2) continue;
    double rho, pen;
    int top1;
    group_metrics(g, n, &rho, &top1, &pen);
    rho_sum += rho;
    pen_sum += pen;
    hits += top1;
    a->penalty_max = fmax(a->penalty_max, pen);
    a->n_groups++;
  }
  if (a->n_groups) {
    a->spearman = rho_sum / a->n_groups;
    a->top1 = (double)hits / a->n_groups;
    a->penalty_mean = pen_sum / a->n_groups;
  }
}

static void error_metrics(const ht_dataset *d, const double *pred, ht_accuracy *a) {
  double sum = 0, ly = 0, ss_tot = 0, ss_res = 0;
  int n = 0;
  for (int i = 0; i < d->n_rows; i++) {
    if (!isfinite(pred[i])) continue;
    double e = 100.0 * fabs(pred[i] - d->y[i]) / d->y[i];
    sum += e;
    a->mape_max = fmax(a->mape_max, e);
    ly += log(d->y[i]);
    n++;
  }
  a->n_rows = n;
  if (!n) return;
  a->mape_mean = sum / n;
  ly /= n;
  for (int i = 0; i < d->n_rows; i++) {
    if (!isfinite(pred[i])) continue;
    double l = log(d->y[i]), lp = pred[i] > 0 ? log(pred[i]) : log(1e-30);
    ss_tot += (l - ly) * (l - ly);
    ss_res += (l - lp) * (l - lp);
  }
  a->r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : 0;
}

ht_status ht_accuracy_compute(const ht_dataset *d, const double *pred, ht_accuracy *out) {
  memset(out, 0, sizeof *out);
  size_t n = (size_t)d->n_rows + 1;
  group_scratch g = {malloc(n * sizeof(double)), malloc(n * sizeof(double)), malloc(n * sizeof(double)),
                     malloc(n * sizeof(double)), malloc(n * sizeof(keyed))};
  ht_status st = HT_OK;
  if (!g.y || !g.p || !g.ry || !g.rp || !g.tmp) st = ht_error(HT_ERR_NOMEM, "out of memory");
  else {
    error_metrics(d, pred, out);
    ranking_metrics(d, pred, &g, out);
  }
  free(g.y);
  free(g.p);
  free(g.ry);
  free(g.rp);
  free(g.tmp);
  return st;
}

/* ---- cross-validation and hold-out ---- */

ht_status ht_model_holdout(const char *kind, const ht_dataset *d, const char *options, uint64_t seed,
                           const int *train, int n_train, const int *test, int n_test, double *pred) {
  ht_dataset *tr;
  ht_status st = ht_dataset_subset(d, train, n_train, &tr);
  if (st) return st;
  ht_model *m;
  st = ht_model_fit(kind, tr, options, seed, &m);
  ht_dataset_destroy(tr);
  if (st) return st;
  for (int k = 0; k < n_test; k++) pred[k] = ht_model_predict(m, d->x + (size_t)test[k] * d->n_features);
  ht_model_destroy(m);
  return HT_OK;
}

ht_status ht_model_cross_validate(const char *kind, const ht_dataset *d, const char *options, int folds,
                                  uint64_t seed, double *pred) {
  int n = d->n_rows;
  if (folds < 2 || folds > n) return ht_error(HT_ERR_INVALID, "%d-fold cross-validation of %d rows", folds, n);
  int *perm = malloc((size_t)n * sizeof *perm), *train = malloc((size_t)n * sizeof *train);
  int *test = malloc((size_t)n * sizeof *test);
  double *p = malloc((size_t)n * sizeof *p);
  ht_status st = perm && train && test && p ? HT_OK : ht_error(HT_ERR_NOMEM, "out of memory");
  ht_rng rng;
  ht_rng_seed(&rng, seed);
  for (int i = 0; i < n && perm; i++) perm[i] = i;
  for (int i = n - 1; i > 0 && perm; i--) {
    int j = (int)ht_rng_below(&rng, (uint64_t)i + 1), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  for (int f = 0; f < folds && !st; f++) {
    int nt = 0, ns = 0;
    for (int k = 0; k < n; k++) {
      if (k % folds == f) test[ns++] = perm[k];
      else train[nt++] = perm[k];
    }
    st = ht_model_holdout(kind, d, options, seed + (uint64_t)f, train, nt, test, ns, p);
    for (int k = 0; k < ns && !st; k++) pred[test[k]] = p[k];
  }
  free(perm);
  free(train);
  free(test);
  free(p);
  return st;
}

static int dbl_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

ht_status ht_dataset_split_largest(const ht_dataset *d, int n_largest, int **train, int *n_train, int **test,
                                   int *n_test) {
  int n = d->n_rows;
  double *w = malloc((size_t)(n + 1) * sizeof *w);
  *train = malloc((size_t)(n + 1) * sizeof **train);
  *test = malloc((size_t)(n + 1) * sizeof **test);
  if (!w || !*train || !*test) {
    free(w);
    free(*train);
    free(*test);
    return ht_error(HT_ERR_NOMEM, "out of memory");
  }
  memcpy(w, d->work, (size_t)n * sizeof *w);
  qsort(w, (size_t)n, sizeof *w, dbl_cmp);
  int distinct = 0;
  double cut = INFINITY;
  for (int i = n - 1; i >= 0; i--)
    if (i == n - 1 || w[i] != w[i + 1]) {
      if (distinct++ == n_largest) break;
      cut = w[i];
    }
  free(w);
  *n_train = *n_test = 0;
  for (int i = 0; i < n; i++) {
    if (d->work[i] >= cut) (*test)[(*n_test)++] = i;
    else (*train)[(*n_train)++] = i;
  }
  if (*n_train == 0 || *n_test == 0) {
    free(*train);
    free(*test);
    *train = *test = NULL;
    return ht_error(HT_ERR_INVALID, "hold-out of the %d largest sizes leaves %s (%d distinct sizes)", n_largest,
                    *n_test ? "nothing to train on" : "nothing to test", distinct);
  }
  return HT_OK;
}

double ht_model_latency_ns(const ht_model *m, const ht_dataset *d, int calls) {
  enum { REPEATS = 7 };
  double t[REPEATS], sink = 0;
  for (int r = 0; r < REPEATS; r++) {
    double t0 = ht_now();
    for (int c = 0; c < calls; c++) sink += ht_model_predict(m, d->x + (size_t)(c % d->n_rows) * d->n_features);
    t[r] = (ht_now() - t0) / calls * 1e9;
  }
  volatile double keep = sink; /* the calls must not be optimised away */
  (void)keep;
  return ht_stat_median(t, REPEATS);
}
