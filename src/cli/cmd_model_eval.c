/* hetune model eval: cross-validation, hold-out of the largest problem sizes, ranking quality,
 * latency and MRMR ranking of every model kind on one kernel's measurements. */
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
  "  --test F          also a random hold-out of this fraction of the rows, as reference 003's test\n"
  "                    set (default 0.2, 0 = skip)\n"
  "  --seed N          seed of folds and models (default 1)\n"
  "  --band C          also check prediction bands of coverage C (e.g. 0.8): bands estimated on the\n"
  "                    training rows alone, the share of held-out rows inside them printed per kind\n"
  "  --mrmr            also print the MRMR ranking of the features\n"
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
} eval_row;

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
  free(pred);
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
  free(pred);
  free(train);
  free(test);
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
  for (char *k = strtok_r(kinds, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
    eval_row r = {.kind = k, .band = e->band};
    if (e->folds) cross_validate(&r, d, options, (int)e->folds, seed);
    if (e->test > 0) random_test(&r, d, options, e->test, seed);
    if (e->holdout) hold_out(&r, d, options, (int)e->holdout, seed);
    fit_and_time(&r, d, options, seed);
    print_row(&r, o);
    fflush(stdout);
  }
  return CLI_OK;
}

int cmd_model_eval(int argc, char **argv) {
  static const char *const flags[] = {"mrmr", "markdown", "tsv", NULL};
  static const char *const known[] = {"data",  "data-db", "device",   "bandwidth", "kinds",
                                      "options", "folds", "holdout", "seed",   "mrmr",      "markdown",
                                      "tsv",   "test",    "size",     "band",  NULL};
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
