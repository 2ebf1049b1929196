/* The learned models (gbt, mlp, svr, gp): accuracy on a smooth synthetic problem
 * with irrelevant features, determinism for a seed, bit-identical save/load,
 * corrupt bytes, few rows, constant features, option errors, gbt's own tree
 * evaluation against XGBoost's prediction, and gp's standard deviation. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef HT_HAVE_XGBOOST
#include <xgboost/c_api.h>
#endif

#include "hetune/model.h"
#include "hetune/tune.h"
#include "model/model_util.h"
#include "model/surrogate.h"

#define N_SIGNAL 3

/* The log time the synthetic kernel takes: smooth, nonlinear, with an
 * interaction. */
static double truth(const double *x) { return log(1 + x[0] * x[1]) + 0.5 * sin(x[2]); }

/* n rows of N_SIGNAL + n_noise features in [0, 3]; column n_features-1 is
 * constant when constant_col. y is the time in seconds (exp of truth), as the
 * wrapper expects. */
static ht_dataset *problem(int n, int n_noise, uint64_t seed, int constant_col) {
  int p = N_SIGNAL + n_noise + (constant_col ? 1 : 0);
  ht_dataset *d;
  assert_int_equal(ht_dataset_create(n, p, &d), HT_OK);
  ht_rng r;
  ht_rng_seed(&r, seed);
  for (int i = 0; i < n; i++) {
    double *x = d->x + (size_t)i * p;
    for (int j = 0; j < p; j++) x[j] = 3 * ht_rng_uniform(&r);
    if (constant_col) x[p - 1] = 2.5;
    d->y[i] = exp(truth(x));
    d->work[i] = 1;
  }
  for (int j = 0; j < p; j++) {
    char name[32];
    snprintf(name, sizeof name, "f%d", j);
    d->names[j] = strdup(name);
  }
  return d;
}

/* R^2 of the model's log prediction against the truth on held-out rows. */
static double r2(const ht_model *m, const ht_dataset *test) {
  double mean = 0, ss = 0, se = 0;
  for (int i = 0; i < test->n_rows; i++) mean += log(test->y[i]);
  mean /= test->n_rows;
  for (int i = 0; i < test->n_rows; i++) {
    double t = log(test->y[i]), p = log(ht_model_predict(m, test->x + (size_t)i * test->n_features));
    assert_true(isfinite(p));
    se += (p - t) * (p - t);
    ss += (t - mean) * (t - mean);
  }
  return 1 - se / ss;
}

typedef struct kind_case {
  const char *kind;
  const char *fast; /* options that keep the tests quick */
  double min_r2;    /* asserted held-out R^2 on the synthetic problem */
} kind_case;

static const kind_case cases[] = {
    {"gbt", "", 0.95},
    {"svr", "", 0.95},
    {"mlp", "", 0.95},
    {"gp", "", 0.95},
};

static const kind_case *case_of(void **state) { return *state; }

static void test_accuracy(void **state) {
  const kind_case *c = case_of(state);
  ht_dataset *train = problem(800, 5, 1, 0), *test = problem(300, 5, 2, 0);
  ht_model *m;
  if (ht_model_fit(c->kind, train, c->fast, 7, &m)) fail_msg("%s", ht_last_error());
  double r = r2(m, test);
  if (r < c->min_r2) fail_msg("%s: held-out R^2 %.4f < %.2f", c->kind, r, c->min_r2);
  ht_model_destroy(m);
  ht_dataset_destroy(train);
  ht_dataset_destroy(test);
}

/* Same seed, same model bytes; save -> load predicts bit-identically. */
static void test_determinism_and_roundtrip(void **state) {
  const kind_case *c = case_of(state);
  ht_dataset *train = problem(300, 3, 3, 0), *test = problem(50, 3, 4, 0);
  ht_model *a, *b, *l;
  if (ht_model_fit(c->kind, train, c->fast, 11, &a) || ht_model_fit(c->kind, train, c->fast, 11, &b))
    fail_msg("%s", ht_last_error());
  ht_buf sa = {0}, sb = {0};
  assert_int_equal(ht_model_save(a, &sa), HT_OK);
  assert_int_equal(ht_model_save(b, &sb), HT_OK);
  assert_int_equal(sa.len, sb.len);
  assert_memory_equal(sa.data, sb.data, sa.len);
  if (ht_model_load(sa.data, sa.len, &l)) fail_msg("%s", ht_last_error());
  for (int i = 0; i < test->n_rows; i++) {
    const double *x = test->x + (size_t)i * test->n_features;
    double pa = ht_model_predict(a, x), pl = ht_model_predict(l, x);
    assert_memory_equal(&pa, &pl, sizeof pa);
  }
  ht_buf_free(&sa);
  ht_buf_free(&sb);
  ht_model_destroy(a);
  ht_model_destroy(b);
  ht_model_destroy(l);
  ht_dataset_destroy(train);
  ht_dataset_destroy(test);
}

/* Every truncation of the model's own bytes is a parse error; random byte flips
 * either parse error or load a model that predicts without crashing. */
static void test_corrupt_bytes(void **state) {
  const kind_case *c = case_of(state);
  const ht_model_ops *ops = ht_model_kind_find(c->kind);
  ht_dataset *train = problem(40, 1, 5, 0);
  for (int i = 0; i < train->n_rows; i++) train->y[i] = log(train->y[i]);
  ht_options *opt;
  /* small models, so every truncation length is cheap */
  const char *small = strcmp(c->kind, "gbt") == 0   ? "rounds=3,depth=3"
                      : strcmp(c->kind, "mlp") == 0 ? "hidden=3"
                      : strcmp(c->kind, "gp") == 0  ? "fit_max=8,iters=5"
                                                    : "";
  assert_int_equal(ht_options_parse(small, &opt), HT_OK);
  void *s;
  if (ops->fit(&s, train, opt, 1)) fail_msg("%s", ht_last_error());
  ht_buf b = {0};
  assert_int_equal(ops->save(s, &b), HT_OK);
  for (size_t n = 0; n < b.len; n++) {
    void *t = (void *)1;
    assert_int_equal(ops->load(&t, b.data, n), HT_ERR_PARSE);
    assert_null(t);
  }
  ht_rng r;
  ht_rng_seed(&r, 99);
  char *copy = malloc(b.len);
  for (int k = 0; k < 2000; k++) {
    memcpy(copy, b.data, b.len);
    int flips = 1 + (int)ht_rng_below(&r, 3);
    for (int f = 0; f < flips; f++) copy[ht_rng_below(&r, b.len)] ^= (char)(1 + ht_rng_below(&r, 255));
    void *t = NULL;
    ht_status st = ops->load(&t, copy, b.len);
    assert_true(st == HT_OK || st == HT_ERR_PARSE);
    if (st == HT_OK) {
      (void)ops->predict(t, train->x);
      ops->destroy(t);
    }
  }
  void *t;
  assert_int_equal(ops->load(&t, b.data, b.len), HT_OK);
  assert_true(ops->predict(t, train->x) == ops->predict(s, train->x));
  ops->destroy(t);
  free(copy);
  ht_buf_free(&b);
  ops->destroy(s);
  ht_options_destroy(opt);
  ht_dataset_destroy(train);
}

/* One, two and five rows fit or are refused with HT_ERR_INVALID; a constant
 * feature and constant targets give finite predictions. */
static void test_few_rows_and_constants(void **state) {
  const kind_case *c = case_of(state);
  for (int n = 1; n <= 5; n += n < 2 ? 1 : 3) {
    ht_dataset *d = problem(n, 2, 6, 1);
    ht_model *m;
    ht_status st = ht_model_fit(c->kind, d, c->fast, 1, &m);
    assert_true(st == HT_OK || st == HT_ERR_INVALID);
    if (st == HT_OK) {
      assert_true(isfinite(ht_model_predict(m, d->x)));
      ht_model_destroy(m);
    }
    ht_dataset_destroy(d);
  }
  ht_dataset *d = problem(60, 2, 7, 1);
  for (int i = 0; i < d->n_rows; i++) d->y[i] = 0.25; /* constant target too */
  ht_model *m;
  if (ht_model_fit(c->kind, d, c->fast, 1, &m)) fail_msg("%s", ht_last_error());
  double far[6] = {100, -100, 1e6, 0, 0, 2.5}; /* far outside the training range */
  for (int i = 0; i < d->n_rows; i++) assert_float_equal(ht_model_predict(m, d->x + (size_t)i * 6), 0.25, 1e-3);
  assert_true(isfinite(ht_model_predict(m, far)));
  ht_model_destroy(m);
  d->y[0] = 0.5;
  if (ht_model_fit(c->kind, d, c->fast, 1, &m)) fail_msg("%s", ht_last_error());
  assert_true(isfinite(ht_model_predict(m, far)));
  ht_model_destroy(m);
  ht_dataset_destroy(d);
}

static void expect_invalid(const char *kind, const ht_dataset *d, const char *options) {
  ht_model *m = NULL;
  ht_status st = ht_model_fit(kind, d, options, 1, &m);
  if (st != HT_ERR_INVALID) fail_msg("%s with '%s': status %d, expected HT_ERR_INVALID", kind, options, st);
  assert_null(m);
}

static void test_option_errors(void **state) {
  const kind_case *c = case_of(state);
  ht_dataset *d = problem(30, 1, 8, 0);
  expect_invalid(c->kind, d, "bogus=1");
  if (strcmp(c->kind, "gbt") == 0) {
    static const char *const bad[] = {"rounds=0", "rounds=abc",  "depth=0",   "depth=3.5",          "eta=0",
                                      "eta=2",    "subsample=0", "lambda=-1", "min_child_weight=x", NULL};
    for (int i = 0; bad[i]; i++) expect_invalid(c->kind, d, bad[i]);
  } else if (strcmp(c->kind, "mlp") == 0) {
    static const char *const bad[] = {"hidden=0",    "hidden=8x",  "hidden=x8", "hidden=8xx8", "hidden=-3",
                                      "act=sigmoid", "lr=0",       "epochs=0",  "batch=0",     "l2=-1",
                                      "val=1",       "patience=0", NULL};
    for (int i = 0; bad[i]; i++) expect_invalid(c->kind, d, bad[i]);
  } else if (strcmp(c->kind, "gp") == 0) {
    static const char *const bad[] = {"ard=2", "ard=yes", "fit_max=7", "iters=0", "rows=0", "rows=20001", NULL};
    for (int i = 0; bad[i]; i++) expect_invalid(c->kind, d, bad[i]);
  } else {
    static const char *const bad[] = {"kernel=sigmoid", "C=0",      "C=abc",       "epsilon=-1",
                                      "gamma=-1",       "degree=0", "scale=maybe", NULL};
    for (int i = 0; bad[i]; i++) expect_invalid(c->kind, d, bad[i]);
  }
  ht_dataset_destroy(d);
}

#ifdef HT_HAVE_XGBOOST
/* gbt's flat-tree evaluation equals XGBoost's own prediction bit for bit, missing values
 * included, for the kind's squared error and for what model_guided trains (the ranking
 * objective, bootstrap weights). */
static void check_matches_xgboost(const ht_gbt_params *par) {
  ht_dataset *d = problem(500, 4, 9, 0);
  double *w = malloc(sizeof *w * (size_t)d->n_rows);
  for (int i = 0; i < d->n_rows; i++) {
    d->y[i] = log(d->y[i]);
    w[i] = (double)(i % 3);
    if (i % 7 == 0) d->x[(size_t)i * d->n_features + (size_t)(i % 3)] = NAN; /* learn default directions */
  }
  ht_gbt_params p = *par;
  if (p.weight) p.weight = w;
  void *s, *bst;
  if (ht_gbt_train(&s, d, &p, 3, &bst)) fail_msg("%s", ht_last_error());
  int n = 400, np = d->n_features;
  float *xf = malloc(sizeof *xf * (size_t)n * np);
  double *xd = malloc(sizeof *xd * (size_t)n * np);
  ht_rng r;
  ht_rng_seed(&r, 4);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < np; j++) {
      double v = 3.4 * ht_rng_uniform(&r) - 0.2;
      if (i < 100) v = d->x[(size_t)i * np + j]; /* training rows: values equal to thresholds' neighbours */
      if (ht_rng_below(&r, 10) == 0) v = NAN;
      xd[(size_t)i * np + j] = v;
      xf[(size_t)i * np + j] = (float)v;
    }
  DMatrixHandle dm;
  bst_ulong len;
  const float *pred;
  assert_int_equal(XGDMatrixCreateFromMat(xf, (bst_ulong)n, (bst_ulong)np, NAN, &dm), 0);
  assert_int_equal(XGBoosterPredict(bst, dm, 0, 0, 0, &len, &pred), 0);
  assert_int_equal(len, n);
  const ht_model_ops *ops = ht_model_kind_find("gbt");
  for (int i = 0; i < n; i++) {
    double mine = ops->predict(s, xd + (size_t)i * np);
    if (mine != (double)pred[i]) fail_msg("row %d: ours %.9g, XGBoost %.9g", i, mine, (double)pred[i]);
  }
  XGDMatrixFree(dm);
  XGBoosterFree(bst);
  ops->destroy(s);
  free(xf);
  free(xd);
  free(w);
  ht_dataset_destroy(d);
}

static void test_gbt_matches_xgboost(void **state) {
  (void)state;
  ht_gbt_params kind = {40, 6, 0.1, 0.8, 1, 1, 0, NULL}; /* the kind's defaults, fewer rounds and deeper */
  check_matches_xgboost(&kind);
  ht_gbt_params ranked = {50, 5, 0.3, 1, 1, 1, 1, NULL}, weighted = {50, 5, 0.3, 1, 1, 1, 0, (const double *)1};
  check_matches_xgboost(&ranked);
  check_matches_xgboost(&weighted);
}

/* Parameters XGBoost refuses are an error with its message, not a crash. */
static void test_gbt_refused_parameters(void **state) {
  (void)state;
  ht_dataset *d = problem(30, 1, 8, 0);
  ht_gbt_params p = {5, 3, 0.3, 2.5, 1, 1, 0, NULL}; /* subsample above 1 */
  void *s = (void *)1;
  assert_int_equal(ht_gbt_train(&s, d, &p, 1, NULL), HT_ERR_INTERNAL);
  assert_null(s);
  assert_non_null(strstr(ht_last_error(), "XGBoost"));
  ht_dataset_destroy(d);
}
#endif

/* A kind this build left out (gbt without XGBoost, svr without libsvm) is one clear error naming
 * the library and the build option; auto skips it; model_guided, which needs gbt, says so. A kind
 * that is built passes the check. */
static void test_kinds_of_this_build(void **state) {
  (void)state;
  static const char *const kinds[][3] = {{"gbt", "XGBoost", "HETUNE_WITH_XGBOOST"}, {"svr", "libsvm", "HETUNE_WITH_LIBSVM"}};
  ht_dataset *d = problem(60, 2, 5, 0);
  for (int i = 0; i < 2; i++) {
    const char *kind = kinds[i][0];
    if (ht_model_kind_find(kind)) {
      assert_int_equal(ht_model_kind_check(kind), HT_OK);
      continue;
    }
    print_message("%s is not in this build: checking its error\n", kind);
    char want[256];
    snprintf(want, sizeof want, "model kind '%s' is not in this build: hetune was built without %s (%s=OFF)", kind,
             kinds[i][1], kinds[i][2]);
    assert_int_equal(ht_model_kind_check(kind), HT_ERR_UNSUPPORTED);
    assert_string_equal(ht_last_error(), want);
    ht_model *m = NULL;
    assert_int_equal(ht_model_fit(kind, d, "", 1, &m), HT_ERR_UNSUPPORTED);
    assert_non_null(strstr(ht_last_error(), want));
    char candidates[64];
    snprintf(candidates, sizeof candidates, "candidates=%s+linear", kind);
    if (ht_model_fit("auto", d, candidates, 1, &m)) fail_msg("%s", ht_last_error());
    assert_string_equal(ht_model_kind(m), "linear");
    ht_model_destroy(m);
  }
  assert_int_equal(ht_model_kind_check("nosuch"), HT_ERR_NOTFOUND);
  ht_space *s;
  assert_int_equal(ht_space_create(&s), HT_OK);
  assert_int_equal(ht_space_add_param_range(s, "a", 1, 4, 1), HT_OK);
  ht_tuner_options o;
  ht_tuner_options_default(&o);
  o.strategy = "model_guided";
  ht_tuner *t = NULL;
  ht_status st = ht_tuner_create(s, &o, &t);
  if (ht_model_kind_find("gbt")) {
    assert_int_equal(st, HT_OK);
  } else {
    assert_int_equal(st, HT_ERR_UNSUPPORTED);
    assert_non_null(strstr(ht_last_error(), "model_guided needs the gbt model kind: model kind 'gbt' is not in this build"));
  }
  ht_tuner_destroy(t);
  ht_space_destroy(s);
  ht_dataset_destroy(d);
}

/* 1-D data: f(x) = exp(sin(2x)) at 30 points of [0, 3] with a gap in (1.2, 2). */
static ht_dataset *gapped_sine(void) {
  ht_dataset *d;
  assert_int_equal(ht_dataset_create(30, 1, &d), HT_OK);
  for (int i = 0; i < 30; i++) {
    double x = i < 15 ? 1.2 * i / 14 : 2.0 + 1.0 * (i - 15) / 14;
    d->x[i] = x;
    d->y[i] = exp(sin(2 * x));
    d->work[i] = 1;
  }
  d->names[0] = strdup("x");
  return d;
}

static double sd_width(const ht_model *m, double x) {
  double t, lo, hi;
  assert_int_equal(ht_model_predict_interval(m, &x, 1, &t, &lo, &hi), HT_OK);
  assert_true(lo <= t && t <= hi);
  assert_memory_equal(&t, &(double){ht_model_predict(m, &x)}, sizeof t);
  return log(hi / lo) / 2; /* the standard deviation of log time */
}

/* gp on a known function: predictions near it between the points, a standard deviation small at
 * the data and larger inside the gap, the same bits after save and load, bad z refused, and kinds
 * without a standard deviation say so. */
static void test_gp_uncertainty(void **state) {
  (void)state;
  ht_dataset *d = gapped_sine();
  ht_model *m, *l, *g;
  if (ht_model_fit("gp", d, "", 1, &m)) fail_msg("%s", ht_last_error());
  assert_true(ht_model_has_sd(m));
  for (double x = 0.05; x < 1.2; x += 0.1) {
    double err = log(ht_model_predict(m, &x)) - sin(2 * x);
    if (fabs(err) > 0.02) fail_msg("x=%g: log prediction off by %g", x, err);
  }
  double at_data = sd_width(m, d->x[5]), in_gap = sd_width(m, 1.6);
  if (!(at_data < 0.05 && in_gap > 3 * at_data)) fail_msg("sd %g at a point, %g in the gap", at_data, in_gap);
  ht_buf b = {0};
  assert_int_equal(ht_model_save(m, &b), HT_OK);
  if (ht_model_load(b.data, b.len, &l)) fail_msg("%s", ht_last_error());
  for (double x = 0; x < 3.5; x += 0.25) {
    double a = sd_width(m, x), c = sd_width(l, x);
    assert_memory_equal(&a, &c, sizeof a);
  }
  double t, lo, hi, x = 1;
  assert_int_equal(ht_model_predict_interval(m, &x, -1, &t, &lo, &hi), HT_ERR_INVALID);
  assert_int_equal(ht_model_predict_interval(m, &x, NAN, &t, &lo, &hi), HT_ERR_INVALID);
  if (ht_model_fit("mlp", d, "hidden=3", 1, &g)) fail_msg("%s", ht_last_error());
  assert_false(ht_model_has_sd(g));
  assert_int_equal(ht_model_predict_interval(g, &x, 1, &t, &lo, &hi), HT_ERR_UNSUPPORTED);
  assert_non_null(strstr(ht_last_error(), "mlp"));
  ht_buf_free(&b);
  ht_model_destroy(m);
  ht_model_destroy(l);
  ht_model_destroy(g);
  ht_dataset_destroy(d);
}

static void *wait_on_pipe(void *arg) {
  char c;
  return read(*(int *)arg, &c, 1) < 0 ? NULL : arg;
}

/* hetune ends OpenBLAS's idle pool when loaded, but not while another thread runs: one loading
 * hetune late (Python) could be inside a BLAS call, which the pool's end would leave waiting. */
static void test_blas_pool_left_while_threads_run(void **state) {
  (void)state;
  int fds[2];
  pthread_t t;
  openblas_set_num_threads(openblas_get_num_threads()); /* starts the pool if it was ended */
  assert_int_equal(pipe(fds), 0);
  assert_int_equal(pthread_create(&t, NULL, wait_on_pipe, &fds[0]), 0);
  assert_int_equal(ht_gp_end_idle_blas_pool(), 0);
  assert_int_equal(write(fds[1], "x", 1), 1);
  pthread_join(t, NULL);
  close(fds[0]);
  close(fds[1]);
}

static int threads_here(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  int n = -1;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "Threads: %d", &n) == 1) break;
  if (f) fclose(f);
  return n;
}

/* The GP's one-thread BLAS section does not start OpenBLAS's pool again once it was ended: its
 * threads would spin on the other cores beside the next kernel measured. */
static void test_gp_blas_leaves_the_pool_ended(void **state) {
  (void)state;
  int threads = openblas_get_num_threads();
  openblas_set_num_threads(threads); /* starts the pool if it was ended */
  int ended = ht_gp_end_idle_blas_pool();
  int before = threads_here();
  int saved = ht_gp_blas_begin();
  assert_int_equal(openblas_get_num_threads(), 1);
  if (ended) assert_int_equal(threads_here(), before);
  ht_gp_blas_end(saved);
  assert_int_equal(openblas_get_num_threads(), threads);
  if (ended) assert_int_equal(threads_here(), before);
  if (!ended) print_message("OpenBLAS's pool was not ended here: only the count was checked\n");
}

static int present(void **state) {
  const kind_case *c = *state;
  return ht_model_kind_find(c->kind) ? 0 : -1; /* a kind not yet registered fails its group setup */
}

#define CASE(fn, i, kind)                                                                                              \
  { kind ": " #fn, fn, present, NULL, (void *)&cases[i] }
#define KIND_TESTS(i, kind)                                                                                            \
  CASE(test_accuracy, i, kind), CASE(test_determinism_and_roundtrip, i, kind), CASE(test_corrupt_bytes, i, kind),      \
      CASE(test_few_rows_and_constants, i, kind), CASE(test_option_errors, i, kind)

int main(void) {
  const struct CMUnitTest tests[] = {
#ifdef HT_HAVE_XGBOOST
      KIND_TESTS(0, "gbt"),
      cmocka_unit_test(test_gbt_matches_xgboost),
      cmocka_unit_test(test_gbt_refused_parameters),
#endif
#ifdef HT_HAVE_LIBSVM
      KIND_TESTS(1, "svr"),
#endif
      KIND_TESTS(2, "mlp"),
      KIND_TESTS(3, "gp"),
      cmocka_unit_test(test_gp_uncertainty),
      cmocka_unit_test(test_kinds_of_this_build),
      cmocka_unit_test(test_blas_pool_left_while_threads_run),
      cmocka_unit_test(test_gp_blas_leaves_the_pool_ended),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
