/* hetune model eval: cross-validation, hold-out of the largest problem sizes, ranking quality,
 * latency and MRMR ranking of every model kind on one kernel's measurements. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char *eval_help =
  "usage: hetune model eval SPEC (--data FILE.csv ... | --data-db DB) [options]\n"
  "\n"
  "Scores model kinds on the kernel's measurements (docs/prediction.md): K-fold cross-validation over\n"
  "rows, and a hold-out of the largest problem sizes (trained on the smaller ones: extrapolation).\n"
  "Errors are 100|predicted - measured| / measured; ranking metrics compare the configs of one problem.\n"
  "\n"
  "  --data FILE       hetune export CSV (repeatable); rows of other kernels are skipped. Rows measured\n"
  "                    in several files (recordings) merge into their median; eval then prints how the\n"
  "                    repeats agree, the labels' floor, and each file's time / the rows' medians\n"
  "  --data-db DB      read the evaluations from a hetune database instead\n"
  "  --device D        only rows measured on device D (e.g. opencl:0:0)\n"
  "  --bandwidth F     the device's bandwidth curve (CSV of 'hetune bandwidth'): every model gets the\n"
  "                    roofline floor of its training rows\n"
  "  --kinds A,B,..    model kinds (default: every kind; 'hetune model kinds' lists them)\n"
  "  --options K=V,..  options for every kind (wrapper: target=log|rate|time, route=none|decade)\n"
  "  --folds K         cross-validation folds (default 10, 0 = skip)\n"
  "  --holdout N       hold out the N largest problem sizes (default 2, 0 = skip)\n"
  "  --test F          also a random hold-out of this fraction of the rows, as the test set of\n"
  "                    [003] in docs/bibliography.md (default 0.2, 0 = skip)\n"
  "  --seed N          seed of folds and models (default 1)\n"
  "  --band C          also check prediction bands of coverage C (e.g. 0.8): bands estimated on the\n"
  "                    training rows alone, the share of held-out rows inside them printed per kind\n"
  "  --mrmr            also print the MRMR ranking of the features\n"
  "  --plot FILE.svg   draw each kind's predicted against measured times (log axes, a panel per kind):\n"
  "                    the cross-validation and hold-out predictions, y = x, and the --band bands\n"
  "                    (default 0.8 with --plot)\n"
  "  --markdown        print a markdown table\n"
  "  --tsv             print tab-separated lines: kernel, model, evaluation, the numbers\n";

typedef struct eval_row {
  const char *kind;
  ht_accuracy cv, ho, test;
  int has_cv, has_ho, has_test;
  double band;               /* coverage asked for, 0: none */
  ht_band band_ho, band_test; /* extrapolation band for the hold-out, interpolation for the test */
  double inside_ho, inside_test; /* share of those rows inside their band */
  double fit_s, latency_ns;
  char error[256];
  double *cv_pred, *ho_pred; /* kept for --plot: every row's CV prediction, the held-out rows' */
  int *ho_rows, n_ho;
} eval_row;

static void eval_row_free(eval_row *r) {
  free(r->cv_pred);
  free(r->ho_pred);
  free(r->ho_rows);
}

static void fit_and_time(eval_row *r, const ht_dataset *d, const char *options, uint64_t seed) {
  double t0 = ht_now();
  ht_model *m;
  if (ht_model_fit(r->kind, d, options, seed, &m)) {
    snprintf(r->error, sizeof r->error, "%s", ht_last_error());
    return;
  }
  r->fit_s = ht_now() - t0;
  r->latency_ns = ht_model_latency_ns(m, d, 20000);
  ht_model_destroy(m);
}

static void cross_validate(eval_row *r, const ht_dataset *d, const char *options, int folds, uint64_t seed) {
  double *pred = malloc((size_t)d->n_rows * sizeof *pred);
  if (pred && !ht_model_cross_validate(r->kind, d, options, folds, seed, pred))
    r->has_cv = !ht_accuracy_compute(d, pred, &r->cv);
  else snprintf(r->error, sizeof r->error, "%s", ht_last_error());
  r->cv_pred = pred;
}

/* The share of the test rows whose measured time lies inside the band around pred. */
static double share_inside(const ht_dataset *d, const int *test, int n_test, const double *pred, const ht_band *b) {
  int in = 0;
  for (int k = 0; k < n_test; k++) {
    double y = d->y[test[k]];
    in += y >= b->lo * pred[k] && y <= b->hi * pred[k];
  }
  return n_test ? (double)in / n_test : NAN;
}

/* The band of the kind estimated on the train rows alone (extrap: the extrapolation band, else
 * the interpolation band), and the share of the test rows inside it. */
static void check_band(eval_row *r, const ht_dataset *d, const char *options, uint64_t seed, const int *train,
                       int n_train, const int *test, int n_test, const double *pred, int extrap, ht_band *band,
                       double *inside) {
  ht_dataset *tr = NULL;
  ht_band interp, ext;
  if (ht_dataset_subset(d, train, n_train, &tr) || ht_model_bands(r->kind, tr, options, seed, r->band, &interp, &ext))
    snprintf(r->error, sizeof r->error, "band: %s", ht_last_error());
  else {
    *band = extrap ? ext : interp;
    *inside = band->n ? share_inside(d, test, n_test, pred, band) : NAN;
  }
  ht_dataset_destroy(tr);
}

static void hold_out(eval_row *r, const ht_dataset *d, const char *options, int largest, uint64_t seed) {
  int *train, *test, n_train, n_test;
  if (ht_dataset_split_largest(d, largest, &train, &n_train, &test, &n_test)) {
    snprintf(r->error, sizeof r->error, "%s", ht_last_error());
    return;
  }
  double *pred = malloc((size_t)n_test * sizeof *pred);
  ht_dataset *td = NULL;
  if (pred && !ht_model_holdout(r->kind, d, options, seed, train, n_train, test, n_test, pred) &&
      !ht_dataset_subset(d, test, n_test, &td))
    r->has_ho = !ht_accuracy_compute(td, pred, &r->ho);
  else snprintf(r->error, sizeof r->error, "%s", ht_last_error());
  if (r->has_ho && r->band > 0)
    check_band(r, d, options, seed, train, n_train, test, n_test, pred, 1, &r->band_ho, &r->inside_ho);
  ht_dataset_destroy(td);
  r->ho_pred = pred;
  r->ho_rows = test;
  r->n_ho = pred ? n_test : 0;
  free(train);
}

/* Reference 003's protocol: a random fraction of the rows held out. */
static void random_test(eval_row *r, const ht_dataset *d, const char *options, double fraction, uint64_t seed) {
  int n = d->n_rows, *perm = malloc((size_t)n * sizeof *perm), n_test = (int)lround(fraction * n);
  double *pred = malloc((size_t)n * sizeof *pred);
  ht_dataset *td = NULL;
  ht_rng rng;
  ht_rng_seed(&rng, seed ^ 0x7e57);
  for (int i = 0; perm && i < n; i++) perm[i] = i;
  for (int i = n - 1; perm && i > 0; i--) {
    int j = (int)ht_rng_below(&rng, (uint64_t)i + 1), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  if (n_test < 1 || n_test >= n) snprintf(r->error, sizeof r->error, "test fraction %g of %d rows", fraction, n);
  else if (perm && pred && !ht_model_holdout(r->kind, d, options, seed, perm + n_test, n - n_test, perm, n_test, pred) &&
           !ht_dataset_subset(d, perm, n_test, &td))
    r->has_test = !ht_accuracy_compute(td, pred, &r->test);
  else snprintf(r->error, sizeof r->error, "%s", ht_last_error());
  if (r->has_test && r->band > 0)
    check_band(r, d, options, seed, perm + n_test, n - n_test, perm, n_test, pred, 0, &r->band_test, &r->inside_test);
  ht_dataset_destroy(td);
  free(perm);
  free(pred);
}

/* How results are printed: a table, a markdown table, or tab-separated lines naming the kernel. */
typedef struct out_style {
  const char *kernel;
  int markdown, tsv;
} out_style;

static void print_line(const char *kind, const char *what, const ht_accuracy *x, const eval_row *r,
                       const out_style *o) {
  int markdown = o->markdown;
  if (o->tsv) {
    printf("%s\t%s\t%s\t%d\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\t%.6g\n", o->kernel, kind, what, x->n_rows,
           x->mape_mean, x->mape_max, x->r2, x->spearman, x->top1, x->penalty_mean, x->penalty_max, r->fit_s,
           r->latency_ns);
    return;
  }
  const char *sep = markdown ? " | " : "  ";
  printf("%s%-8s%s%-8s", markdown ? "| " : "", kind, sep, what);
  printf("%s%7.2f%s%7.1f%s%6.3f%s%6.3f%s%5.2f%s%7.2f%s%7.1f", sep, x->mape_mean, sep, x->mape_max, sep, x->r2, sep,
         x->spearman, sep, x->top1, sep, x->penalty_mean, sep, x->penalty_max);
  printf("%s%7.3f%s%8.0f%s\n", sep, r->fit_s, sep, r->latency_ns, markdown ? " |" : "");
}

static void print_band(const char *kind, const char *what, const ht_band *b, double inside, const out_style *o) {
  if (o->tsv) return;
  if (!b->n) printf("%s%-8s  %-8s  band: too few training rows or sizes to estimate one%s\n", o->markdown ? "| " : "",
                    kind, what, o->markdown ? " |" : "");
  else
    printf("%s%-8s  %-8s  band: %.0f%% band [%.3f, %.3f] x predicted (from %d training rows) holds %.0f%% of the "
           "rows%s\n", o->markdown ? "| " : "", kind, what, 100 * b->coverage, b->lo, b->hi, b->n, 100 * inside,
           o->markdown ? " |" : "");
}

static void print_row(const eval_row *r, const out_style *o) {
  int markdown = o->markdown;
  if (r->has_cv) print_line(r->kind, "cv", &r->cv, r, o);
  if (r->has_test) print_line(r->kind, "test", &r->test, r, o);
  if (r->has_ho) print_line(r->kind, "holdout", &r->ho, r, o);
  if (r->band > 0 && r->has_test) print_band(r->kind, "test", &r->band_test, r->inside_test, o);
  if (r->band > 0 && r->has_ho) print_band(r->kind, "holdout", &r->band_ho, r->inside_ho, o);
  if (r->error[0] && o->tsv) fprintf(stderr, "hetune: model eval: %s: %s\n", r->kind, r->error);
  else if (r->error[0]) printf("%s%-8s failed: %s%s\n", markdown ? "| " : "", r->kind, r->error, markdown ? " |" : "");
}

/* Each recording's drift: its repeated measurements against their rows' medians, one line per
 * --data file in the order given, and a warning when recordings differ as a whole by over 10%. */
static void print_drift(const ht_dataset *d, const cli_args *a, const out_style *o) {
  if (o->tsv || !d->source_ratio) return;
  double lo = INFINITY, hi = 0;
  for (int k = 0; k < d->n_sources; k++)
    if (isfinite(d->source_ratio[k])) {
      lo = fmin(lo, d->source_ratio[k]);
      hi = fmax(hi, d->source_ratio[k]);
    }
  if (!(hi > 0)) return; /* no file shares a row with another */
  printf("recordings: time / the row's median, median over each file's repeated rows\n");
  for (int i = 0, k = 0; i < a->n_opt && k < d->n_sources; i++)
    if (strcmp(a->opt_name[i], "data") == 0) printf("  %7.3f  %s\n", d->source_ratio[k++], a->opt_value[i]);
  if (hi > 1.1 * lo)
    printf("recordings differ as a whole by up to %.2fx: the machine ran slower or faster between them, and the "
           "merged medians mix its states\n",
           hi / lo);
}

/* floor_m: the measurements per row the floor splits (ht_accuracy_floor), 0 without a floor. */
static void print_header(const ht_dataset *d, const ht_spec *s, int folds, int holdout, int floor_m,
                         const cli_args *a, const out_style *o) {
  if (o->tsv) return;
  int markdown = o->markdown;
  printf("%s: %d rows", ht_spec_name(s), d->n_rows);
  if (d->n_measured > d->n_rows) printf(" (%d measurements, repeats merged into their median)", d->n_measured);
  printf(", %d problems, %d features; %d-fold CV, hold-out of the %d largest sizes\n", d->n_groups, d->n_features,
         folds, holdout);
  if (d->n_repeat_pairs > 0)
    printf("label noise: two measurements of one config at one problem differ by %.1f%% (median of %d pairs), "
           "%.1f%% at the 90th percentile\n",
           100 * d->repeat_diff_median, d->n_repeat_pairs, 100 * d->repeat_diff_p90);
  int m = floor_m;
  if (m > 0)
    printf("floor: the 'floor' lines score the median of half of each row's %d measurements (%d or %d) as the "
           "prediction of the median of the rest: how well the measurements agree with themselves\n",
           m, m / 2, m - m / 2);
  print_drift(d, a, o);
  if (markdown) {
    printf("\n| model | evaluation | mean err %% | max err %% | R2 (log) | Spearman | top-1 | penalty mean %% | "
           "penalty max %% | fit s | predict ns |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  } else
    printf("%-8s  %-8s  %7s  %7s  %6s  %6s  %5s  %7s  %7s  %7s  %8s\n", "model", "eval", "mean%", "max%", "R2", "rho",
           "top1", "pen_avg", "pen_max", "fit_s", "pred_ns");
}

static void print_mrmr(const ht_dataset *d) {
  int *order = malloc((size_t)d->n_features * sizeof *order);
  double *score = malloc((size_t)d->n_features * sizeof *score);
  if (order && score && !ht_mrmr_rank(d, 10, order, score)) {
    printf("\nMRMR ranking (10 equal-frequency bins, MID criterion in bits):\n");
    for (int k = 0; k < d->n_features; k++) printf("  %2d  %-24s %8.4f\n", k + 1, d->names[order[k]], score[k]);
  } else cli_fail("model eval: mrmr");
  free(order);
  free(score);
}

/* Every name of --kinds must be a model kind (checked before the data is read). */
static int check_kinds(const char *list) {
  char kinds[1024];
  snprintf(kinds, sizeof kinds, "%s", list ? list : "");
  char *save = NULL;
  for (char *k = strtok_r(kinds, ",", &save); k; k = strtok_r(NULL, ",", &save))
    if (ht_model_kind_check(k)) return cli_usage_error("model eval", "%s", ht_last_error());
  return CLI_OK;
}

typedef struct eval_settings {
  long long folds, holdout, seed;
  double test, band;
} eval_settings;

static int read_settings(const cli_args *a, eval_settings *e) {
  const char *v;
  if (check_kinds(cli_opt(a, "kinds"))) return CLI_USAGE;
  *e = (eval_settings){.folds = 10, .holdout = 2, .seed = 1, .test = 0.2};
  if ((v = cli_opt(a, "test")) && strcmp(v, "0") != 0 && cli_number("model eval", "--test", v, 0, &e->test))
    return CLI_USAGE;
  if (v && strcmp(v, "0") == 0) e->test = 0;
  if (e->test >= 1) return cli_usage_error("model eval", "--test must be below 1");
  if ((v = cli_opt(a, "band")) && cli_number("model eval", "--band", v, 0, &e->band)) return CLI_USAGE;
  if (v && !(e->band > 0 && e->band < 1)) return cli_usage_error("model eval", "--band must be between 0 and 1");
  if ((v = cli_opt(a, "folds")) && cli_integer_in("model eval", "--folds", v, 0, 1000, &e->folds)) return CLI_USAGE;
  if ((v = cli_opt(a, "holdout")) && cli_integer_in("model eval", "--holdout", v, 0, 1000, &e->holdout)) return CLI_USAGE;
  if ((v = cli_opt(a, "seed")) && cli_integer("model eval", "--seed", v, 0, &e->seed)) return CLI_USAGE;
  if (e->folds == 1) return cli_usage_error("model eval", "--folds must be 0 or at least 2");
  if (cli_opt(a, "plot") && !e->folds && !e->holdout)
    return cli_usage_error("model eval", "--plot draws the --folds and --holdout predictions: both are 0");
  if (cli_opt(a, "plot") && e->band == 0) e->band = 0.8;
  return CLI_OK;
}

/* The labels' floor (ht_accuracy_floor), as a pseudo-model "floor": on every row (all, the "cv"
 * line, computed by the caller: m > 0) and on the held-out rows; nothing without repeats. */
static void print_floor(const ht_dataset *d, const ht_accuracy *all, int m, long long folds, long long holdout,
                        const out_style *o) {
  eval_row r = {.kind = "floor", .cv = *all, .has_cv = folds && m > 0};
  int m_ho = 0, *train = NULL, *test = NULL, n_train, n_test;
  ht_dataset *td = NULL;
  if (holdout && m > 0 && !ht_dataset_split_largest(d, (int)holdout, &train, &n_train, &test, &n_test) &&
      !ht_dataset_subset(d, test, n_test, &td) && !ht_accuracy_floor(td, &r.ho, &m_ho))
    r.has_ho = m_ho > 0;
  ht_dataset_destroy(td);
  free(train);
  free(test);
  if (r.has_cv || r.has_ho) print_row(&r, o);
}

/* ---- --plot: predicted against measured, a panel per kind ---- */

enum { MAX_PLOT_KINDS = 16 };

/* A kind's two panels: predicted against measured, and predicted / measured against measured
 * (where a band of +-20% is as wide as the eye can see). */
typedef struct eval_panel {
  double ends[2], one[2];                 /* the x range; y = 1 on the ratio panel */
  double blo[2], bhi[2], elo[2], ehi[2];   /* the bands' edges (interpolation b, extrapolation e) */
  double rblo[2], rbhi[2], relo[2], rehi[2];
  double *cv_y, *ho_x, *ho_y, *cv_r, *ho_r; /* predictions in the unit, and / measured */
  plot_series s[6], rs[6];
  char title[128];
} eval_panel;

/* Times in unit k; NAN where a prediction is missing or not positive (not drawable on log axes). */
static void panel_points(eval_panel *p, const eval_row *r, const ht_dataset *d, double k) {
  for (int i = 0; r->cv_pred && i < d->n_rows; i++) {
    p->cv_y[i] = r->cv_pred[i] > 0 ? r->cv_pred[i] * k : NAN;
    p->cv_r[i] = p->cv_y[i] / (d->y[i] * k);
  }
  for (int i = 0; r->ho_pred && i < r->n_ho; i++) {
    p->ho_x[i] = d->y[r->ho_rows[i]] * k;
    p->ho_y[i] = r->ho_pred[i] > 0 ? r->ho_pred[i] * k : NAN;
    p->ho_r[i] = p->ho_y[i] / p->ho_x[i];
  }
}

/* measured in [lo, hi] x predicted  <=>  predicted in [measured / hi, measured / lo]. */
static void band_edges(const ht_band *b, const double *at, double *lo, double *hi) {
  for (int i = 0; i < 2; i++) {
    lo[i] = b->n ? at[i] / b->hi : NAN;
    hi[i] = b->n ? at[i] / b->lo : NAN;
  }
}

/* The series of one panel into s: y the predictions (or ratios), bands lo/hi and their edges. */
static int panel_series(plot_series *s, const eval_row *r, const ht_dataset *d, const char *const *names,
                        const double *meas, eval_panel *p, int ratio) {
  const double *ident = ratio ? p->one : p->ends;
  band_edges(&r->band_test, ident, ratio ? p->rblo : p->blo, ratio ? p->rbhi : p->bhi);
  band_edges(&r->band_ho, ident, ratio ? p->relo : p->elo, ratio ? p->rehi : p->ehi);
  int n = 0;
  if (r->has_test && r->band_test.n)
    s[n++] = (plot_series){names[0], PLOT_BAND, 2, p->ends, NULL, ratio ? p->rblo : p->blo, ratio ? p->rbhi : p->bhi,
                           0, 0, PLOT_NONE, 0};
  if (r->has_ho && r->band_ho.n) {
    s[n++] = (plot_series){names[1], PLOT_LINE, 2, p->ends, ratio ? p->relo : p->elo, NULL, NULL, 1, 1, PLOT_NONE, 1.2};
    s[n++] = (plot_series){NULL, PLOT_LINE, 2, p->ends, ratio ? p->rehi : p->ehi, NULL, NULL, 1, 1, PLOT_NONE, 1.2};
  }
  s[n++] = (plot_series){names[2], PLOT_LINE, 2, p->ends, ident, NULL, NULL, 6, 0, PLOT_NONE, 1};
  if (r->cv_pred)
    s[n++] = (plot_series){names[3], PLOT_POINTS, d->n_rows, meas, ratio ? p->cv_r : p->cv_y, NULL, NULL, 0, 0, 0, 0};
  if (r->ho_pred)
    s[n++] = (plot_series){names[4], PLOT_POINTS, r->n_ho, p->ho_x, ratio ? p->ho_r : p->ho_y, NULL, NULL, 1, 0, 2, 0};
  return n;
}

static int alloc_points(eval_panel *p, const eval_row *r, const ht_dataset *d) {
  size_t n = (size_t)d->n_rows, h = (size_t)r->n_ho + 1;
  p->cv_y = malloc(n * sizeof(double)), p->cv_r = malloc(n * sizeof(double));
  p->ho_x = malloc(h * sizeof(double)), p->ho_y = malloc(h * sizeof(double)), p->ho_r = malloc(h * sizeof(double));
  return p->cv_y && p->cv_r && p->ho_x && p->ho_y && p->ho_r ? 0 : -1;
}

/* The shared ranges: times (both axes of the first panels), ratios (symmetric about 1). */
static void eval_ranges(const eval_panel *ep, const eval_row *rows, int n, const ht_dataset *d, const double *meas,
                        double *t, double *q) {
  double lo = INFINITY, hi = 0, m = 1;
  for (int i = 0; i < d->n_rows; i++) lo = fmin(lo, meas[i]), hi = fmax(hi, meas[i]);
  for (int j = 0; j < n; j++)
    for (int i = 0; rows[j].cv_pred && i < d->n_rows; i++)
      if (ep[j].cv_y[i] > 0) lo = fmin(lo, ep[j].cv_y[i]), hi = fmax(hi, ep[j].cv_y[i]), m = fmax(m, fmax(ep[j].cv_r[i], 1 / ep[j].cv_r[i]));
  for (int j = 0; j < n; j++)
    for (int i = 0; i < rows[j].n_ho; i++)
      if (ep[j].ho_r[i] > 0) m = fmax(m, fmax(ep[j].ho_r[i], 1 / ep[j].ho_r[i]));
  plot_nice_range(&lo, &hi, 1);
  double l = 1 / m;
  plot_nice_range(&l, &m, 1);
  t[0] = lo, t[1] = hi, q[0] = fmin(l, 1 / m), q[1] = fmax(m, 1 / l);
}

static int plot_eval(const char *path, const char *kernel, const ht_dataset *d, const eval_row *rows, int n,
                     const eval_settings *e) {
  const int cols = n < 3 ? n : 3, groups = (n + cols - 1) / cols, n_panels = 2 * cols * groups;
  eval_panel *ep = calloc((size_t)n, sizeof *ep);
  plot_panel *pp = calloc((size_t)n_panels, sizeof *pp);
  double *meas = malloc((size_t)d->n_rows * sizeof *meas), max = 0, t[2], q[2];
  int rc = ep && pp && meas ? 0 : -1;
  for (int i = 0; i < d->n_rows; i++) max = fmax(max, d->y[i]);
  const char *unit;
  double k = plot_time_unit(max, &unit);
  for (int i = 0; !rc && i < d->n_rows; i++) meas[i] = d->y[i] * k;
  char n0[64], n1[64], n2[] = "y = x", n3[64], n4[64], label_x[64], label_y[64], title[256];
  snprintf(n0, sizeof n0, "%.0f%% band, interpolation", 100 * e->band);
  snprintf(n1, sizeof n1, "%.0f%% band, extrapolation", 100 * e->band);
  snprintf(n3, sizeof n3, "%lld-fold cross-validation", e->folds);
  snprintf(n4, sizeof n4, "hold-out: %lld largest sizes", e->holdout);
  const char *names[] = {n0, n1, n2, n3, n4};
  for (int j = 0; !rc && j < n; j++)
    if (!(rc = alloc_points(&ep[j], &rows[j], d))) panel_points(&ep[j], &rows[j], d, k);
  if (!rc) eval_ranges(ep, rows, n, d, meas, t, q);
  snprintf(label_x, sizeof label_x, "measured time (%s)", unit);
  snprintf(label_y, sizeof label_y, "predicted time (%s)", unit);
  for (int j = 0; !rc && j < n; j++) { /* kind j: its column in its group's two rows */
    eval_panel *p = &ep[j];
    p->ends[0] = t[0], p->ends[1] = t[1], p->one[0] = p->one[1] = 1;
    int ns = panel_series(p->s, &rows[j], d, names, meas, p, 0), nr = panel_series(p->rs, &rows[j], d, names, meas, p, 1);
    snprintf(p->title, sizeof p->title, "%s%s", rows[j].kind, rows[j].error[0] ? " (failed)" : "");
    if (rows[j].has_cv) snprintf(p->title + strlen(p->title), sizeof p->title - strlen(p->title), ": CV error %.1f%%",
                                 rows[j].cv.mape_mean);
    int top = (j / cols) * 2 * cols + j % cols;
    pp[top] = (plot_panel){p->title, {label_x, 1, t[0], t[1]}, {label_y, 1, t[0], t[1]}, ns, p->s, 0, NULL, NULL};
    pp[top + cols] = (plot_panel){"", {label_x, 1, t[0], t[1]}, {"predicted / measured", 1, q[0], q[1]}, nr, p->rs, 0,
                                  NULL, NULL};
  }
  snprintf(title, sizeof title, "%s: predicted against measured time", kernel);
  plot_figure fig = {title, "Bands: where the rows should fall by the band estimated on the training rows, at sizes "
                     "seen (interpolation) and beyond them.", n_panels, cols, pp, 0};
  if (rc) fprintf(stderr, "hetune model eval: --plot: out of memory\n");
  else if ((rc = plot_write(path, &fig))) fprintf(stderr, "hetune model eval: cannot write %s: %s\n", path, strerror(errno));
  else printf("\nplot: %s\n", path);
  for (int j = 0; ep && j < n; j++)
    free(ep[j].cv_y), free(ep[j].cv_r), free(ep[j].ho_x), free(ep[j].ho_y), free(ep[j].ho_r);
  free(ep);
  free(pp);
  free(meas);
  return rc ? CLI_ERROR : CLI_OK;
}

static int run_kinds(const cli_args *a, const ht_dataset *d, const eval_settings *e, const ht_accuracy *floor,
                     int floor_m, const out_style *o) {
  char kinds[1024];
  const char *list = cli_opt(a, "kinds");
  if (!list) {
    kinds[0] = 0;
    for (int i = 0; i < ht_model_kind_count(); i++)
      snprintf(kinds + strlen(kinds), sizeof kinds - strlen(kinds), "%s%s", i ? "," : "", ht_model_kind_at(i)->name);
  } else snprintf(kinds, sizeof kinds, "%s", list);
  print_floor(d, floor, floor_m, e->folds, e->holdout, o);
  const char *options = cli_opt(a, "options");
  uint64_t seed = (uint64_t)e->seed;
  char *save = NULL;
  eval_row rows[MAX_PLOT_KINDS];
  int n = 0;
  for (char *k = strtok_r(kinds, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
    eval_row r = {.kind = k, .band = e->band};
    if (e->folds) cross_validate(&r, d, options, (int)e->folds, seed);
    if (e->test > 0) random_test(&r, d, options, e->test, seed);
    if (e->holdout) hold_out(&r, d, options, (int)e->holdout, seed);
    fit_and_time(&r, d, options, seed);
    print_row(&r, o);
    fflush(stdout);
    if (n < MAX_PLOT_KINDS) rows[n++] = r;
    else eval_row_free(&r);
  }
  const char *plot = cli_opt(a, "plot");
  int rc = plot ? plot_eval(plot, o->kernel, d, rows, n, e) : CLI_OK;
  for (int i = 0; i < n; i++) eval_row_free(&rows[i]);
  return rc;
}

int cmd_model_eval(int argc, char **argv) {
  static const char *const flags[] = {"mrmr", "markdown", "tsv", NULL};
  static const char *const known[] = {"data",  "data-db", "device",   "bandwidth", "kinds",
                                      "options", "folds", "holdout", "seed",   "mrmr",      "markdown",
                                      "tsv",   "test",    "size",     "band",  "plot", NULL};
  if (cli_wants_help(argc, argv)) {
    fputs(eval_help, stdout);
    return CLI_OK;
  }
  cli_args a;
  eval_settings e;
  int rc = cli_parse(argc, argv, "model eval", known, flags, &a);
  if (!rc) rc = read_settings(&a, &e);
  if (rc) return rc;
  ht_spec *spec;
  ht_feature_set *fs;
  ht_dataset *d;
  if ((rc = cli_model_dataset(&a, "model eval", &spec, &fs, &d))) return rc;
  out_style o = {ht_spec_name(spec), cli_has(&a, "markdown"), cli_has(&a, "tsv")};
  ht_accuracy floor;
  int floor_m = 0;
  if (ht_accuracy_floor(d, &floor, &floor_m)) floor_m = 0; /* out of memory: no floor lines */
  print_header(d, spec, (int)e.folds, (int)e.holdout, floor_m, &a, &o);
  rc = run_kinds(&a, d, &e, &floor, floor_m, &o);
  if (!rc && cli_has(&a, "mrmr")) print_mrmr(d);
  ht_dataset_destroy(d);
  ht_features_destroy(fs);
  ht_spec_destroy(spec);
  return rc;
}
