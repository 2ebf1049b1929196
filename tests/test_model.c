/* Prediction plumbing: feature vectors from specs, datasets from export CSV files and the store,
 * the model wrapper (targets, decade routing, save/load), accuracy metrics against hand-computed
 * values, cross-validation and size hold-out, MRMR, stored models, and CUDA PTX features. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hetune/hetune.h"
#include "hetune/ptx.h"

static char dir[512];

static const char *write_tmp(const char *name, const char *text) {
  static char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  return path;
}

static ht_spec *load_spec(const char *rel) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", HT_SOURCE_DIR, rel);
  ht_spec *s;
  if (ht_spec_load(path, &s)) fail_msg("%s", ht_last_error());
  return s;
}

static double feature(ht_feature_set *fs, const double *x, const char *name) {
  for (int i = 0; i < ht_features_count(fs); i++)
    if (strcmp(ht_features_name(fs, i), name) == 0) return x[i];
  fail_msg("no feature %s", name);
  return NAN;
}

/* ---- features ---- */

static void test_features_gemm_opencl(void **state) {
  (void)state;
  ht_spec *s = load_spec("examples/gemm/gemm_opencl.json");
  ht_feature_set *fs;
  assert_int_equal(ht_features_create(s, NULL, &fs), HT_OK);
  int64_t sizes[3];
  ht_value params[16];
  assert_int_equal(ht_features_parse_problem(s, "M=512,K=256", sizes, "test"), HT_OK);
  assert_int_equal(sizes[0], 512);
  assert_int_equal(sizes[1], 1024); /* N keeps the spec's value */
  assert_int_equal(sizes[2], 256);
  assert_int_equal(ht_features_parse_config(s, "MWG=64,NWG=128,KWG=16,WPTM=4,WPTN=8,VW=4,STRN=1,USE_LOCAL=1,UNROLL=8",
                                            params, "test"),
                   HT_OK);
  double x[128];
  assert_int_equal(ht_features_compute(fs, sizes, params, x), HT_OK);
  double work = 512.0 * 1024 * 256;
  assert_true(feature(fs, x, "work") == work);
  assert_true(feature(fs, x, "flops") == 2 * work);
  assert_true(feature(fs, x, "bytes") == 4.0 * (512 * 256 + 256 * 1024 + 512 * 1024));
  assert_true(fabs(feature(fs, x, "intensity") - 2 * work / feature(fs, x, "bytes")) < 1e-9);
  assert_true(feature(fs, x, "param:WPTN") == 8);
  /* global = (N/WPTN, M/WPTM) = (128, 128), local = (NWG/WPTN, MWG/WPTM) = (16, 16) */
  assert_true(feature(fs, x, "launch:work_items") == 128 * 128);
  assert_true(feature(fs, x, "launch:group_size") == 256);
  assert_true(feature(fs, x, "launch:work_groups") == 64);
  assert_true(feature(fs, x, "launch:warps") == 8);
  assert_true(fabs(feature(fs, x, "log_work") - log10(1 + work)) < 1e-12);
  ht_features_destroy(fs);
  ht_spec_destroy(s);
}

static void test_features_bad_text(void **state) {
  (void)state;
  ht_spec *s = load_spec("examples/vadd/vadd_c.json");
  int64_t sizes[1];
  ht_value params[4];
  assert_int_equal(ht_features_parse_problem(s, "Q=5", sizes, "row 7"), HT_ERR_NOTFOUND);
  assert_non_null(strstr(ht_last_error(), "row 7: 'Q' is not a problem size"));
  assert_int_equal(ht_features_parse_problem(s, "N=12x", sizes, "row 7"), HT_ERR_INVALID);
  assert_int_equal(ht_features_parse_config(s, "NOPE=1", params, "cfg"), HT_ERR_NOTFOUND);
  assert_int_equal(ht_features_parse_config(s, "", params, "cfg"), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "has no value"));
  ht_spec_destroy(s);
}

/* ---- datasets from CSV ---- */

static const char *vadd_csv(void) {
  return write_tmp("vadd.csv",
                   "eval_id,kernel,device_id,problem,config,status,time_s,message\n"
                   "1,vadd_c,c:0,N=1000,\"NTHREADS=1,CHUNK=0,UNROLL=2\",ok,0.001,\n"
                   "2,vadd_c,c:0,N=1000,\"NTHREADS=2,CHUNK=0,UNROLL=2\",ok,0.0006,\n"
                   "3,vadd_c,c:0,N=1000,\"NTHREADS=4,CHUNK=0,UNROLL=2\",compile,,\"boom, \"\"quoted\"\"\"\n"
                   "4,other,c:0,N=1000,X=1,ok,0.5,\n"
                   "5,vadd_c,c:0,N=8000,\"NTHREADS=1,CHUNK=0,UNROLL=2\",ok,0.008,\n"
                   "6,vadd_c,opencl:0:0,N=8000,\"NTHREADS=2,CHUNK=0,UNROLL=2\",ok,0.004,\n");
}

static void test_dataset_from_csv(void **state) {
  (void)state;
  ht_spec *s = load_spec("examples/vadd/vadd_c.json");
  ht_feature_set *fs;
  assert_int_equal(ht_features_create(s, NULL, &fs), HT_OK);
  const char *path = vadd_csv();
  ht_dataset *d;
  if (ht_dataset_from_csv(fs, &path, 1, NULL, &d)) fail_msg("%s", ht_last_error());
  assert_int_equal(d->n_rows, 4); /* the failure and the other kernel are skipped */
  assert_int_equal(d->n_groups, 3);
  assert_int_equal(d->group[0], d->group[1]);
  assert_true(d->y[1] == 0.0006);
  assert_true(d->work[2] == 8000);
  ht_dataset_destroy(d);
  if (ht_dataset_from_csv(fs, &path, 1, "c:0", &d)) fail_msg("%s", ht_last_error());
  assert_int_equal(d->n_rows, 3);
  ht_dataset_destroy(d);
  assert_int_equal(ht_dataset_from_csv(fs, &path, 1, "cuda:0", &d), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "no successful evaluation of kernel 'vadd_c' on device cuda:0"));
  ht_features_destroy(fs);
  ht_spec_destroy(s);
}

/* The same config measured again (a second recording pass, in another file) is one row with the
 * median of its times, in the place of its first measurement; other devices stay apart. */
static void test_dataset_merges_repeats(void **state) {
  (void)state;
  ht_spec *s = load_spec("examples/vadd/vadd_c.json");
  ht_feature_set *fs;
  assert_int_equal(ht_features_create(s, NULL, &fs), HT_OK);
  char first[4096];
  snprintf(first, sizeof first, "%s", vadd_csv()); /* write_tmp's path buffer is reused */
  const char *paths[2] = {first,
                          write_tmp("vadd_pass2.csv", "kernel,device_id,problem,config,status,time_s\n"
                                                      "vadd_c,c:0,N=8000,\"NTHREADS=1,CHUNK=0,UNROLL=2\",ok,0.010\n"
                                                      "vadd_c,c:0,N=1000,\"NTHREADS=1,CHUNK=0,UNROLL=2\",ok,0.003\n"
                                                      "vadd_c,c:0,N=1000,\"NTHREADS=1,CHUNK=0,UNROLL=2\",ok,0.002\n"
                                                      "vadd_c,c:0,N=8000,\"NTHREADS=2,CHUNK=0,UNROLL=2\",ok,0.005\n")};
  ht_dataset *d;
  if (ht_dataset_from_csv(fs, paths, 2, NULL, &d)) fail_msg("%s", ht_last_error());
  assert_int_equal(d->n_measured, 8);
  assert_int_equal(d->n_rows, 5); /* N=8000 NTHREADS=2 on c:0 is new; on opencl it was already there */
  assert_true(d->y[0] == 0.002);  /* median of 0.001, 0.003, 0.002 */
  assert_true(d->y[1] == 0.0006);
  assert_true(fabs(d->y[2] - 0.009) < 1e-15); /* median of two: their mean */
  assert_true(d->y[3] == 0.004);
  assert_true(d->y[4] == 0.005);
  assert_int_equal(d->n_groups, 3);
  assert_int_equal(d->group[4], d->group[2]);
  /* pairs: 0.001/0.003 -> 2, 0.001/0.002 -> 1, 0.003/0.002 -> 0.5, 0.008/0.010 -> 0.25 */
  assert_int_equal(d->n_repeat_pairs, 4);
  assert_true(fabs(d->repeat_diff_median - 0.75) < 1e-12);
  assert_true(fabs(d->repeat_diff_p90 - 1.0) < 1e-12);
  /* each row keeps its measurements in the order read, and a subset keeps them */
  assert_non_null(d->repeats);
  assert_int_equal(d->n_repeats[0], 3);
  assert_true(d->repeats[0] == 0.001 && d->repeats[1] == 0.003 && d->repeats[2] == 0.002);
  assert_int_equal(d->n_repeats[1], 1);
  ht_dataset *sub;
  int row0 = 0;
  assert_int_equal(ht_dataset_subset(d, &row0, 1, &sub), HT_OK);
  assert_int_equal(sub->n_repeats[0], 3);
  assert_true(sub->repeats[2] == 0.002);
  ht_accuracy floor;
  int m = -1;
  assert_int_equal(ht_accuracy_floor(d, &floor, &m), HT_OK);
  assert_int_equal(m, 0); /* a row measured once: no floor */
  assert_int_equal(ht_accuracy_floor(sub, &floor, &m), HT_OK);
  assert_int_equal(m, 3);
  ht_dataset_destroy(sub);
  ht_dataset_destroy(d);
  if (ht_dataset_from_csv(fs, paths, 1, NULL, &d)) fail_msg("%s", ht_last_error());
  assert_int_equal(d->n_repeat_pairs, 0); /* no repeats, no noise estimate */
  assert_true(isnan(d->repeat_diff_median));
  assert_null(d->repeats);
  ht_dataset_destroy(d);
  ht_features_destroy(fs);
  ht_spec_destroy(s);
}

/* Ten recordings of every row, as data/datasets has for some kernels: all ten count for the floor.
 * A row measured more often than HT_DATASET_REPEATS keeps its first ones for the floor, but its
 * label is still the median of all of them. */
static void test_dataset_keeps_many_repeats(void **state) {
  (void)state;
  ht_spec *s = load_spec("examples/vadd/vadd_c.json");
  ht_feature_set *fs;
  assert_int_equal(ht_features_create(s, NULL, &fs), HT_OK);
  char csv[8192];
  int len = snprintf(csv, sizeof csv, "kernel,device_id,problem,config,status,time_s\n");
  for (int k = 1; k <= 20; k++) /* row 0: 1..20 ms; row 1: 1..10 ms */
    for (int row = 0; row < (k <= 10 ? 2 : 1); row++)
      len += snprintf(csv + len, sizeof csv - (size_t)len, "vadd_c,c:0,N=%d,\"NTHREADS=1,CHUNK=0,UNROLL=2\",ok,%g\n",
                      row ? 2000 : 1000, k * 1e-3);
  const char *path = write_tmp("vadd_many.csv", csv);
  ht_dataset *d;
  if (ht_dataset_from_csv(fs, &path, 1, NULL, &d)) fail_msg("%s", ht_last_error());
  assert_int_equal(d->n_rows, 2);
  assert_int_equal(d->n_measured, 30);
  assert_true(fabs(d->y[0] - 10.5e-3) < 1e-15); /* median of all 20 */
  assert_true(fabs(d->y[1] - 5.5e-3) < 1e-15);
  assert_int_equal(d->n_repeats[0], HT_DATASET_REPEATS);
  assert_int_equal(d->n_repeats[1], 10);
  ht_accuracy floor;
  int m = -1;
  assert_int_equal(ht_accuracy_floor(d, &floor, &m), HT_OK);
  assert_int_equal(m, 10); /* the fewest any row has */
  ht_dataset_destroy(d);
  ht_features_destroy(fs);
  ht_spec_destroy(s);
}

/* The floor by hand: two configs measured twice, (1, 4) and (2, 2) seconds. Half = one
 * measurement: the first predicting the second, pred (1, 2) for truth (4, 2): errors 75% and 0%,
 * the predicted best (config 0) takes 4 against the best 2: penalty 100%, ranks reversed; and the
 * second predicting the first, pred (4, 2) for truth (1, 2): errors 300% and 0%, penalty 100%. */
static void test_accuracy_floor(void **state) {
  (void)state;
  ht_dataset *d;
  assert_int_equal(ht_dataset_create(2, 1, &d), HT_OK);
  d->n_groups = 1;
  d->y[0] = 2.5;
  d->y[1] = 2;
  d->work[0] = d->work[1] = 1;
  d->repeats = calloc(2 * HT_DATASET_REPEATS, sizeof *d->repeats);
  d->n_repeats = calloc(2, sizeof *d->n_repeats);
  d->repeats[0] = 1;
  d->repeats[1] = 4;
  d->repeats[HT_DATASET_REPEATS] = d->repeats[HT_DATASET_REPEATS + 1] = 2;
  d->n_repeats[0] = 2;
  d->n_repeats[1] = 3; /* the third is not used: the fewest any row has count */
  d->repeats[HT_DATASET_REPEATS + 2] = 100;
  ht_accuracy f;
  int m;
  assert_int_equal(ht_accuracy_floor(d, &f, &m), HT_OK);
  assert_int_equal(m, 2);
  assert_int_equal(f.n_rows, 2);
  assert_int_equal(f.n_groups, 1);
  assert_true(fabs(f.mape_mean - 93.75) < 1e-9);
  assert_true(fabs(f.mape_max - 187.5) < 1e-9);
  assert_true(fabs(f.penalty_mean - 100) < 1e-9);
  assert_true(fabs(f.spearman + 1) < 1e-9);
  assert_true(f.top1 == 0);
  ht_dataset_destroy(d);
}

/* Ratios 1.0, 1.1, .. 3.0 (21 rows) and one row without a usable prediction: the 80% band runs
 * from the 3rd smallest ratio (index floor(0.1 * 20)) to the 19th (index ceil(0.9 * 20)). */
static void test_band_from_predictions(void **state) {
  (void)state;
  double y[22], pred[22];
  for (int i = 0; i < 21; i++) {
    y[i] = 1 + 0.1 * i;
    pred[i] = 1;
  }
  y[21] = 5;
  pred[21] = 0;
  ht_band b;
  assert_int_equal(ht_band_from_predictions(y, pred, 22, 0.8, &b), HT_OK);
  assert_int_equal(b.n, 21);
  assert_true(fabs(b.lo - 1.2) < 1e-12 && fabs(b.hi - 2.8) < 1e-12);
  assert_int_equal(ht_band_from_predictions(y, pred, 22, 1.5, &b), HT_ERR_INVALID);
  assert_int_equal(ht_band_from_predictions(y, pred, 0, 0.8, &b), HT_OK);
  assert_int_equal(b.n, 0);
}

static void test_dataset_bad_csv(void **state) {
  (void)state;
  ht_spec *s = load_spec("examples/vadd/vadd_c.json");
  ht_feature_set *fs;
  ht_dataset *d;
  assert_int_equal(ht_features_create(s, NULL, &fs), HT_OK);
  const char *p = write_tmp("nocol.csv", "kernel,device_id,problem,config,time_s\nvadd_c,c,N=1,NTHREADS=1,1\n");
  assert_int_equal(ht_dataset_from_csv(fs, &p, 1, NULL, &d), HT_ERR_PARSE);
  assert_non_null(strstr(ht_last_error(), "no 'status' column"));
  p = write_tmp("short.csv", "kernel,device_id,problem,config,status,time_s\nvadd_c,c,N=1,NTHREADS=1,ok\n");
  assert_int_equal(ht_dataset_from_csv(fs, &p, 1, NULL, &d), HT_ERR_PARSE);
  assert_non_null(strstr(ht_last_error(), "short.csv:2: 5 fields"));
  p = write_tmp("neg.csv", "kernel,device_id,problem,config,status,time_s\nvadd_c,c,N=1,NTHREADS=1,ok,-1\n");
  assert_int_equal(ht_dataset_from_csv(fs, &p, 1, NULL, &d), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "neg.csv:2: time -1"));
  p = write_tmp("quote.csv", "kernel,device_id,problem,config,status,time_s\nvadd_c,c,\"N=1,NTHREADS=1,ok,1\n");
  assert_int_equal(ht_dataset_from_csv(fs, &p, 1, NULL, &d), HT_ERR_PARSE);
  const char *missing = "/nonexistent/x.csv";
  assert_int_equal(ht_dataset_from_csv(fs, &missing, 1, NULL, &d), HT_ERR_IO);
  ht_features_destroy(fs);
  ht_spec_destroy(s);
}

/* ---- accuracy metrics against hand-computed values ---- */

static ht_dataset *toy_dataset(int n, int p) {
  ht_dataset *d;
  assert_int_equal(ht_dataset_create(n, p, &d), HT_OK);
  for (int j = 0; j < p; j++) d->names[j] = ht_strfmt("f%d", j);
  return d;
}

static void test_accuracy_values(void **state) {
  (void)state;
  ht_dataset *d = toy_dataset(5, 1);
  /* group 0: measured 1, 2, 4; group 1: measured 10, 20 */
  double y[] = {1, 2, 4, 10, 20}, pred[] = {2.2, 1.1, 4.4, 10, 30};
  int g[] = {0, 0, 0, 1, 1};
  for (int i = 0; i < 5; i++) d->y[i] = y[i], d->group[i] = g[i];
  d->n_groups = 2;
  ht_accuracy a;
  assert_int_equal(ht_accuracy_compute(d, pred, &a), HT_OK);
  assert_int_equal(a.n_rows, 5);
  assert_int_equal(a.n_groups, 2);
  /* errors: 120, 45, 10, 0, 50 % */
  assert_true(fabs(a.mape_mean - 45.0) < 1e-9);
  assert_true(fabs(a.mape_max - 120.0) < 1e-9);
  /* group 0 ranks: y 0,1,2; pred 1,0,2 -> rho = 0.5; group 1 -> 1 */
  assert_true(fabs(a.spearman - 0.75) < 1e-12);
  /* group 0 picks the row measured 2 (penalty 100 %), group 1 picks its best */
  assert_true(fabs(a.top1 - 0.5) < 1e-12);
  assert_true(fabs(a.penalty_mean - 50.0) < 1e-9);
  assert_true(fabs(a.penalty_max - 100.0) < 1e-9);
  ht_dataset_destroy(d);
}

static void test_split_largest(void **state) {
  (void)state;
  ht_dataset *d = toy_dataset(6, 1);
  double w[] = {10, 100, 1000, 100, 10000, 10000};
  for (int i = 0; i < 6; i++) d->work[i] = w[i], d->y[i] = 1;
  int *tr, *te, ntr, nte;
  assert_int_equal(ht_dataset_split_largest(d, 2, &tr, &ntr, &te, &nte), HT_OK);
  assert_int_equal(nte, 3); /* 1000, 10000, 10000 */
  assert_int_equal(ntr, 3);
  for (int k = 0; k < nte; k++) assert_true(d->work[te[k]] >= 1000);
  free(tr);
  free(te);
  assert_int_equal(ht_dataset_split_largest(d, 4, &tr, &ntr, &te, &nte), HT_ERR_INVALID);
  ht_dataset_destroy(d);
}

/* ---- the wrapper, with the linear model on an exact power law ---- */

/* time = 2e-9 * work^1.5 over work 1e3..1e8, features: work, log_work and a constant. */
static ht_dataset *power_law(int n) {
  ht_dataset *d = toy_dataset(n, 3);
  free(d->names[0]);
  d->names[0] = ht_strdup("work");
  free(d->names[1]);
  d->names[1] = ht_strdup("log_work");
  for (int i = 0; i < n; i++) {
    double w = pow(10, 3 + 5.0 * i / (n - 1));
    d->x[i * 3] = w;
    d->x[i * 3 + 1] = log10(1 + w);
    d->x[i * 3 + 2] = 7;
    d->work[i] = w;
    d->y[i] = 2e-9 * pow(w, 1.5);
    d->group[i] = 0;
  }
  d->n_groups = 1;
  return d;
}

static void test_wrapper_targets_and_routes(void **state) {
  (void)state;
  if (!ht_model_kind_find("linear")) skip();
  ht_dataset *d = power_law(60);
  const char *opts[] = {"target=log", "target=rate", "route=decade,route_min=10"};
  for (int k = 0; k < 3; k++) {
    ht_model *m;
    if (ht_model_fit("linear", d, opts[k], 1, &m)) fail_msg("%s: %s", opts[k], ht_last_error());
    double x[3] = {5e7, log10(1 + 5e7), 7};
    double want = 2e-9 * pow(5e7, 1.5), got = ht_model_predict(m, x);
    /* log time is linear in log10(1 + w) only approximately at small w: a percent is plenty */
    assert_true(fabs(got / want - 1) < 0.02);
    ht_buf b = {0};
    assert_int_equal(ht_model_save(m, &b), HT_OK);
    ht_model *m2;
    if (ht_model_load(b.data, b.len, &m2)) fail_msg("%s", ht_last_error());
    assert_true(ht_model_predict(m2, x) == got);
    assert_string_equal(ht_model_kind(m2), "linear");
    assert_string_equal(ht_model_feature_name(m2, 1), "log_work");
    for (size_t cut = 0; cut < b.len; cut += 7) {
      ht_model *bad = NULL;
      assert_int_not_equal(ht_model_load(b.data, cut, &bad), HT_OK);
      assert_null(bad);
    }
    ht_buf_free(&b);
    ht_model_destroy(m);
    ht_model_destroy(m2);
  }
  ht_dataset_destroy(d);
}

static void test_wrapper_errors(void **state) {
  (void)state;
  ht_dataset *d = power_law(20);
  ht_model *m = NULL;
  assert_int_equal(ht_model_fit("no_such_model", d, NULL, 1, &m), HT_ERR_NOTFOUND);
  if (ht_model_kind_find("linear")) {
    assert_int_equal(ht_model_fit("linear", d, "target=cubic", 1, &m), HT_ERR_INVALID);
    assert_int_equal(ht_model_fit("linear", d, "route=weekly", 1, &m), HT_ERR_INVALID);
    assert_int_equal(ht_model_fit("linear", d, "flavour=mint", 1, &m), HT_ERR_INVALID);
    assert_non_null(strstr(ht_last_error(), "flavour"));
    d->y[3] = 0;
    assert_int_equal(ht_model_fit("linear", d, NULL, 1, &m), HT_ERR_INVALID);
    assert_non_null(strstr(ht_last_error(), "row 3"));
  }
  assert_null(m);
  assert_int_equal(ht_model_load("HTMODEL1", 8, &m), HT_ERR_PARSE);
  assert_int_equal(ht_model_load("garbage!garbage!", 16, &m), HT_ERR_PARSE);
  ht_dataset_destroy(d);
}

static void test_cross_validation_and_holdout(void **state) {
  (void)state;
  if (!ht_model_kind_find("linear")) skip();
  ht_dataset *d = power_law(50);
  double pred[50];
  assert_int_equal(ht_model_cross_validate("linear", d, NULL, 5, 3, pred), HT_OK);
  ht_accuracy a;
  assert_int_equal(ht_accuracy_compute(d, pred, &a), HT_OK);
  assert_true(a.mape_max < 5);
  assert_true(a.r2 > 0.999);
  int *tr, *te, ntr, nte;
  assert_int_equal(ht_dataset_split_largest(d, 5, &tr, &ntr, &te, &nte), HT_OK);
  assert_int_equal(ht_model_holdout("linear", d, NULL, 1, tr, ntr, te, nte, pred), HT_OK);
  for (int k = 0; k < nte; k++) assert_true(fabs(pred[k] / d->y[te[k]] - 1) < 0.05);
  free(tr);
  free(te);
  assert_int_equal(ht_model_cross_validate("linear", d, NULL, 1, 3, pred), HT_ERR_INVALID);
  ht_dataset_destroy(d);
}

/* ---- MRMR ---- */

static void test_mrmr_prefers_relevant_and_new(void **state) {
  (void)state;
  int n = 400;
  ht_dataset *d = toy_dataset(n, 5);
  ht_rng r;
  ht_rng_seed(&r, 5);
  for (int i = 0; i < n; i++) {
    double a = ht_rng_uniform(&r), b = ht_rng_uniform(&r);
    double *x = d->x + i * 5;
    x[0] = ht_rng_uniform(&r); /* noise */
    x[1] = a;                  /* strongly relevant */
    x[2] = a + 1e-3 * ht_rng_uniform(&r); /* a near copy of x1: redundant */
    x[3] = b;                  /* relevant and new */
    x[4] = 3;                  /* constant */
    d->y[i] = 4 * a + b;
  }
  int order[5];
  double score[5];
  assert_int_equal(ht_mrmr_rank(d, 10, order, score), HT_OK);
  assert_true(order[0] == 1 || order[0] == 2);
  assert_int_equal(order[1], 3); /* the new information beats the copy */
  assert_int_equal(order[4], 4); /* constant last */
  ht_dataset_destroy(d);
}

/* ---- stored models ---- */

static int count_visit(const ht_model_record *rec, void *ctx) {
  int *n = ctx;
  if (*n == 0) assert_string_equal(rec->options, "v2"); /* newest first */
  assert_int_equal(rec->blob_len, 5);
  assert_memory_equal(rec->blob, "a\0b\0c", 5);
  (*n)++;
  return 0;
}

static void test_store_models(void **state) {
  (void)state;
  char path[1024];
  snprintf(path, sizeof path, "%s/models.db", dir);
  ht_store *st;
  assert_int_equal(ht_store_open(path, &st), HT_OK);
  ht_model_record rec = {.name = "k.gbt", .kind = "gbt", .options = "v1", .kernel_name = "k", .provenance_json = "{}",
                         .blob = "a\0b\0c", .blob_len = 5, .n_rows = 3};
  int64_t id1, id2;
  assert_int_equal(ht_store_put_model(st, &rec, &id1), HT_OK);
  rec.options = "v2";
  assert_int_equal(ht_store_put_model(st, &rec, &id2), HT_OK);
  assert_true(id2 > id1);
  rec.blob_len = 0;
  assert_int_equal(ht_store_put_model(st, &rec, &id2), HT_ERR_INVALID);
  int n = 0;
  assert_int_equal(ht_store_each_model(st, "k.gbt", NULL, count_visit, &n), HT_OK);
  assert_int_equal(n, 2);
  n = 0;
  assert_int_equal(ht_store_each_model(st, NULL, "other", count_visit, &n), HT_OK);
  assert_int_equal(n, 0);
  ht_store_close(st);
  assert_int_equal(ht_store_open_readonly(path, &st), HT_OK);
  n = 0;
  assert_int_equal(ht_store_each_model(st, NULL, "k", count_visit, &n), HT_OK);
  assert_int_equal(n, 2);
  assert_int_equal(ht_store_put_model(st, &rec, &id2), HT_ERR_STORE);
  ht_store_close(st);
}

/* ---- CUDA: PTX features follow the problem size (nvcc needed, no GPU) ---- */

static void test_cuda_ptx_features(void **state) {
  (void)state;
  if (!ht_ptx_nvcc_path()) skip();
  ht_spec *s = load_spec("examples/gemm/gemm_cuda.json");
  ht_feature_set *fs;
  assert_int_equal(ht_features_create(s, NULL, &fs), HT_OK);
  int64_t sizes[3];
  ht_value params[16];
  double x1[128], x2[128];
  assert_int_equal(ht_features_parse_config(s, "MWG=64,NWG=64,KWG=16,WPTM=4,WPTN=4,VW=2,STRN=0,USE_LOCAL=1,UNROLL=8",
                                            params, "t"),
                   HT_OK);
  assert_int_equal(ht_features_parse_problem(s, "M=256,N=256,K=256", sizes, "t"), HT_OK);
  if (ht_features_compute(fs, sizes, params, x1)) fail_msg("%s", ht_last_error());
  assert_int_equal(ht_features_parse_problem(s, "M=256,N=256,K=512", sizes, "t"), HT_OK);
  if (ht_features_compute(fs, sizes, params, x2)) fail_msg("%s", ht_last_error());
  double sum = 0;
  const char *cls[] = {"ptx:l_c", "ptx:l_mr", "ptx:l_mw", "ptx:l_shr", "ptx:l_shw", "ptx:l_s", "ptx:l_dpu", "ptx:l_sfu"};
  for (int i = 0; i < 8; i++) sum += feature(fs, x1, cls[i]);
  assert_true(sum == feature(fs, x1, "ptx:l"));
  /* the K loop runs K/KWG times: twice the global reads, shared reads and barriers per thread */
  assert_true(feature(fs, x1, "ptx:l_mr") > 0);
  assert_true(fabs(feature(fs, x2, "ptx:l_shr") / feature(fs, x1, "ptx:l_shr") - 2) < 0.05);
  assert_true(fabs(feature(fs, x2, "ptx:l_s") / feature(fs, x1, "ptx:l_s") - 2) < 0.05);
  assert_true(feature(fs, x1, "ptx:regs") > 0);
  assert_true(feature(fs, x1, "ptx:dpc") > 0 && feature(fs, x1, "ptx:dpc") <= 1);
  ht_features_destroy(fs);
  ht_spec_destroy(s);
}

/* ---- the command line ---- */

typedef struct cli_out {
  int rc;
  char out[16384], err[4096];
} cli_out;

/* Runs `hetune ARGS` (a shell fragment) capturing stdout and stderr. */
static void cli(cli_out *o, const char *args) {
  char cmd[4096], errpath[700];
  snprintf(errpath, sizeof errpath, "%s/stderr.txt", dir);
  snprintf(cmd, sizeof cmd, "cd '%s' && '%s' %s 2>'%s'", HT_SOURCE_DIR, HT_CLI, args, errpath);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  size_t n = fread(o->out, 1, sizeof o->out - 1, p);
  o->out[n] = 0;
  int status = pclose(p);
  o->rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  FILE *e = fopen(errpath, "r");
  n = e ? fread(o->err, 1, sizeof o->err - 1, e) : 0;
  o->err[n] = 0;
  if (e) fclose(e);
}

static void test_cli_train_predict_show(void **state) {
  (void)state;
  if (!ht_model_kind_find("linear")) skip();
  char args[2048];
  cli_out o;
  const char *csv = vadd_csv();
  snprintf(args, sizeof args, "model train examples/vadd/vadd_c.json --data '%s' --kind linear --db '%s/cli.db'", csv, dir);
  cli(&o, args);
  assert_int_equal(o.rc, 0);
  assert_non_null(strstr(o.out, "stored model 'vadd_c.linear' (linear, 4 rows of 3 problems"));
  snprintf(args, sizeof args, "predict examples/vadd/vadd_c.json --size N=4000 --config NTHREADS=1,CHUNK=0,UNROLL=2 --db '%s/cli.db'", dir);
  cli(&o, args);
  assert_int_equal(o.rc, 0);
  assert_non_null(strstr(o.out, "vadd_c N=4000 NTHREADS=1,CHUNK=0,UNROLL=2: predicted "));
  snprintf(args, sizeof args, "model show vadd_c.linear --db '%s/cli.db'", dir);
  cli(&o, args);
  assert_int_equal(o.rc, 0);
  assert_non_null(strstr(o.out, "\"rows\":4"));
  assert_non_null(strstr(o.out, "features ("));
  /* bad input: one line on stderr, non-zero exit, nothing printed */
  const char *bad[][2] = {
    {"model train examples/vadd/vadd_c.json --data /nonexistent.csv --kind linear --db '%s/cli.db'", "nonexistent.csv"},
    {"model train examples/vadd/vadd_c.json --data '%s/vadd.csv' --kind nope", "unknown model kind 'nope'"},
    {"model train examples/vadd/vadd_c.json --data '%s/vadd.csv' --kind linear --options lambda=-1 --db '%s/cli.db'", "lambda"},
    {"predict examples/vadd/vadd_c.json --config NTHREADS=1 --db '%s/cli.db'", "CHUNK has no value"},
    {"model predict missing_model --config NTHREADS=1 --db '%s/cli.db'", "no model 'missing_model'"},
    {"model eval examples/vadd/vadd_c.json", "expected --data"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    snprintf(args, sizeof args, bad[i][0], dir, dir);
    cli(&o, args);
    if (o.rc == 0 || !strstr(o.err, bad[i][1])) fail_msg("%s: rc %d, stderr: %s", args, o.rc, o.err);
    assert_string_equal(o.out, "");
  }
}

/* Real measurements through the store: tune two sizes, train from the database, rank the space. */
static void test_cli_store_data_and_top(void **state) {
  (void)state;
  if (!ht_model_kind_find("gbt")) skip();
  char args[2048];
  cli_out o;
  for (int n = 4096; n <= 8192; n *= 2) {
    snprintf(args, sizeof args, "tune examples/vadd/vadd_c.json --size N=%d --budget 6 --quiet --db '%s/tuned.db'", n, dir);
    cli(&o, args);
    if (o.rc != 0) fail_msg("%s: %s", args, o.err);
  }
  snprintf(args, sizeof args, "model train examples/vadd/vadd_c.json --data-db '%s/tuned.db' --kind gbt --db '%s/tuned.db'", dir, dir);
  cli(&o, args);
  if (o.rc != 0) fail_msg("%s: %s", args, o.err);
  assert_non_null(strstr(o.out, "rows of 2 problems"));
  snprintf(args, sizeof args, "predict examples/vadd/vadd_c.json --size N=16384 --top 3 --device c --db '%s/tuned.db'", dir);
  cli(&o, args);
  if (o.rc != 0) fail_msg("%s: %s", args, o.err);
  assert_non_null(strstr(o.out, "vadd_c N=16384: the 3 of "));
  assert_non_null(strstr(o.out, "    3  "));
  snprintf(args, sizeof args, "predict examples/vadd/vadd_c.json --top 3 --device nosuch --db '%s/tuned.db'", dir);
  cli(&o, args);
  assert_int_not_equal(o.rc, 0);
  assert_non_null(strstr(o.err, "nosuch"));
}

/* model eval on the five recordings of vadd_c: the floor lines come before the models', on every
 * row and on the hold-out; with one recording there are none. */
static void test_cli_eval_floor(void **state) {
  (void)state;
  char args[2048];
  int n = snprintf(args, sizeof args, "model eval examples/vadd/vadd_c.json --kinds linear --folds 3 --test 0 "
                                      "--data data/datasets/vadd_c.csv");
  const int prefix = n;
  for (int p = 2; p <= 5; p++)
    n += snprintf(args + n, sizeof args - (size_t)n, " --data data/datasets/pass%d/vadd_c.csv", p);
  cli_out o;
  cli(&o, args);
  if (o.rc != 0) fail_msg("%s: %s", args, o.err);
  assert_non_null(strstr(o.out, "median of half of each row's 5 measurements (2 or 3)"));
  const char *cv = strstr(o.out, "\nfloor     cv"), *ho = strstr(o.out, "\nfloor     holdout");
  const char *model = strstr(o.out, "\nlinear    cv");
  assert_true(cv && ho && model && cv < ho && ho < model);
  args[prefix] = 0;
  cli(&o, args);
  if (o.rc != 0) fail_msg("%s: %s", args, o.err);
  assert_null(strstr(o.out, "floor"));
}

/* --band 0.8: a band per evaluation, estimated on the training rows, with the share it holds. */
static void test_cli_eval_band(void **state) {
  (void)state;
  char args[1024];
  snprintf(args, sizeof args, "model eval examples/vadd/vadd_c.json --kinds linear --folds 0 --band 0.8 "
                              "--data data/datasets/vadd_c.csv");
  cli_out o;
  cli(&o, args);
  if (o.rc != 0) fail_msg("%s: %s", args, o.err);
  const char *t = strstr(o.out, "linear    test      band: 80% band ["), *h = strstr(o.out, "linear    holdout   band: 80% band [");
  assert_true(t && h);
  double lo, hi, held;
  int n;
  assert_int_equal(sscanf(h, "linear    holdout   band: 80%% band [%lf, %lf] x predicted (from %d training rows) holds %lf%%",
                          &lo, &hi, &n, &held), 4);
  assert_true(lo <= hi && n > 0 && held >= 0 && held <= 100);
  snprintf(args, sizeof args, "model eval examples/vadd/vadd_c.json --band 1.5 --data data/datasets/vadd_c.csv");
  cli(&o, args);
  assert_int_not_equal(o.rc, 0);
  assert_non_null(strstr(o.err, "--band must be between 0 and 1"));
  /* model train stores both bands; predict uses the one that fits the problem size */
  snprintf(args, sizeof args, "model train examples/vadd/vadd_c.json --data data/datasets/vadd_c.csv --kind linear "
                              "--name banded --db '%s/band.db'", dir);
  cli(&o, args);
  if (o.rc != 0) fail_msg("%s: %s", args, o.err);
  assert_non_null(strstr(o.out, "80% band inside the training sizes: "));
  assert_non_null(strstr(o.out, "80% band beyond them: "));
  const char *sizes[][2] = {{"1048576", "inside the training sizes)"}, {"268435456", "beyond the training sizes)"}};
  for (int i = 0; i < 2; i++) {
    snprintf(args, sizeof args, "model predict banded --size N=%s --config NTHREADS=2,CHUNK=0,UNROLL=4 --db '%s/band.db'",
             sizes[i][0], dir);
    cli(&o, args);
    if (o.rc != 0) fail_msg("%s: %s", args, o.err);
    assert_non_null(strstr(o.out, ", 80% band "));
    assert_non_null(strstr(o.out, sizes[i][1]));
  }
  snprintf(args, sizeof args, "predict examples/vadd/vadd_c.json --model banded --top 2 --size N=1048576 --db '%s/band.db'",
           dir);
  cli(&o, args);
  if (o.rc != 0) fail_msg("%s: %s", args, o.err);
  assert_non_null(strstr(o.out, "x its prediction at 80%)"));
}

static void cli_ok(cli_out *o, const char *args) {
  cli(o, args);
  if (o->rc != 0) fail_msg("%s: %s", args, o->err);
}

static void expect_cli_error(const char *args, const char *needle) {
  cli_out o;
  cli(&o, args);
  assert_int_not_equal(o.rc, 0);
  if (!strstr(o.err, needle)) fail_msg("%s: error '%s' lacks '%s'", args, o.err, needle);
}

/* Three recordings of the same four rows, the second 20% slower as a whole and the third 20%
 * faster, and a fourth file measuring a row no other has: each file's median ratio to the rows'
 * medians is 1, 1.2, 0.8 and unknown; model eval lists them and warns of the 1.5x drift. */
static void test_recording_drift(void **state) {
  (void)state;
  static const double scale[3] = {1.0, 1.2, 0.8};
  char paths[4][1024], text[1024], args[4096];
  for (int f = 0; f < 3; f++) {
    int len = snprintf(text, sizeof text, "kernel,device_id,problem,config,status,time_s\n");
    for (int n = 1000; n <= 8000; n *= 8)
      for (int t = 1; t <= 2; t++)
        len += snprintf(text + len, sizeof text - (size_t)len,
                        "vadd_c,c:0,N=%d,\"NTHREADS=%d,CHUNK=0,UNROLL=2\",ok,%g\n", n, t, scale[f] * n * 1e-6 / t);
    char name[32];
    snprintf(name, sizeof name, "drift%d.csv", f);
    snprintf(paths[f], sizeof paths[f], "%s", write_tmp(name, text));
  }
  snprintf(paths[3], sizeof paths[3], "%s",
           write_tmp("drift3.csv", "kernel,device_id,problem,config,status,time_s\n"
                                   "vadd_c,c:0,N=64000,\"NTHREADS=1,CHUNK=0,UNROLL=2\",ok,0.064\n"));
  ht_spec *s = load_spec("examples/vadd/vadd_c.json");
  ht_feature_set *fs;
  assert_int_equal(ht_features_create(s, NULL, &fs), HT_OK);
  const char *p[4] = {paths[0], paths[1], paths[2], paths[3]};
  ht_dataset *d;
  if (ht_dataset_from_csv(fs, p, 4, NULL, &d)) fail_msg("%s", ht_last_error());
  assert_int_equal(d->n_rows, 5);
  assert_int_equal(d->n_sources, 4);
  assert_true(fabs(d->source_ratio[0] - 1.0) < 1e-12);
  assert_true(fabs(d->source_ratio[1] - 1.2) < 1e-12);
  assert_true(fabs(d->source_ratio[2] - 0.8) < 1e-12);
  assert_true(isnan(d->source_ratio[3]));
  ht_dataset_destroy(d);
  if (ht_dataset_from_csv(fs, p, 1, NULL, &d)) fail_msg("%s", ht_last_error());
  assert_null(d->source_ratio); /* one file: nothing to compare */
  ht_dataset_destroy(d);
  ht_features_destroy(fs);
  ht_spec_destroy(s);
  cli_out o;
  snprintf(args, sizeof args,
           "model eval examples/vadd/vadd_c.json --data '%s' --data '%s' --data '%s' --data '%s' --kinds linear "
           "--folds 0 --test 0 --holdout 0",
           p[0], p[1], p[2], p[3]);
  cli_ok(&o, args);
  assert_non_null(strstr(o.out, "recordings: time / the row's median"));
  assert_non_null(strstr(o.out, "    1.200  "));
  assert_non_null(strstr(o.out, "      nan  "));
  assert_non_null(strstr(o.out, "recordings differ as a whole by up to 1.50x"));
  snprintf(args, sizeof args, "model eval examples/vadd/vadd_c.json --data '%s' --data '%s' --kinds linear --folds 0 "
                              "--test 0 --holdout 0", p[0], p[0]);
  cli_ok(&o, args);
  assert_non_null(strstr(o.out, "    1.000  "));
  assert_null(strstr(o.out, "differ as a whole")); /* the same file twice: no drift */
}

/* auto's choice, checked by hand: each candidate predicts the largest training size from the
 * others; by=error takes the lowest mean error, by=penalty the lowest best-config penalty (ties:
 * the lower error); validate=two averages the largest and the second largest size, each predicted
 * from the sizes below it; an unknown criterion or scheme is an error naming it. */
static void test_auto_choice(void **state) {
  (void)state;
  ht_spec *s = load_spec("examples/gemm/gemm_c.json");
  ht_feature_set *fs;
  assert_int_equal(ht_features_create(s, NULL, &fs), HT_OK);
  char csv[1024];
  snprintf(csv, sizeof csv, "%s/data/datasets/gemm_c.csv", HT_SOURCE_DIR);
  const char *path = csv;
  ht_dataset *d;
  if (ht_dataset_from_csv(fs, &path, 1, NULL, &d)) fail_msg("%s", ht_last_error());
  static const char *const kinds[] = {"linear", "starpu", "knn", "ranking"};
  int *train, *test, n_train, n_test;
  assert_int_equal(ht_dataset_split_largest(d, 1, &train, &n_train, &test, &n_test), HT_OK);
  double *pred = malloc((size_t)n_test * sizeof *pred), err[4], pen[4];
  ht_dataset *sub;
  assert_int_equal(ht_dataset_subset(d, test, n_test, &sub), HT_OK);
  int by_err = 0, by_pen = 0;
  for (int k = 0; k < 4; k++) {
    if (ht_model_holdout(kinds[k], d, "", 1, train, n_train, test, n_test, pred)) fail_msg("%s", ht_last_error());
    ht_accuracy a;
    assert_int_equal(ht_accuracy_compute(sub, pred, &a), HT_OK);
    err[k] = a.mape_mean;
    pen[k] = a.penalty_mean;
    if (err[k] < err[by_err]) by_err = k;
    if (pen[k] < pen[by_pen] || (pen[k] == pen[by_pen] && err[k] < err[by_pen])) by_pen = k;
  }
  const char *opts[2] = {"candidates=linear+starpu+knn+ranking", "candidates=linear+starpu+knn+ranking,by=penalty"};
  const int expect[2] = {by_err, by_pen};
  for (int i = 0; i < 2; i++) {
    ht_model *m;
    if (ht_model_fit("auto", d, opts[i], 1, &m)) fail_msg("%s", ht_last_error());
    char want[64];
    snprintf(want, sizeof want, "auto: %s (", kinds[expect[i]]);
    if (strncmp(ht_model_options(m), want, strlen(want)) != 0)
      fail_msg("%s: chose '%s', expected %s", opts[i], ht_model_options(m), kinds[expect[i]]);
    ht_model_destroy(m);
  }
  ht_model *m;
  assert_int_equal(ht_model_fit("auto", d, "by=speed", 1, &m), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "by=speed: expected by=error or by=penalty"));
  assert_int_equal(ht_model_fit("auto", d, "validate=three", 1, &m), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "validate=three: expected validate=last or validate=two"));
  /* validate=two: the mean of err (the largest size from the rest) and the error on the second
   * largest size predicted from the sizes below it. */
  int *train2, *test2, n_train2, n_test2, two = 0;
  assert_int_equal(ht_dataset_split_largest(d, 2, &train2, &n_train2, &test2, &n_test2), HT_OK);
  char *in_largest = calloc((size_t)d->n_rows, 1);
  for (int k = 0; k < n_test; k++) in_largest[test[k]] = 1;
  int n_second = 0;
  for (int k = 0; k < n_test2; k++)
    if (!in_largest[test2[k]]) test2[n_second++] = test2[k];
  assert_int_equal(n_second, n_test2 - n_test);
  /* Among linear, starpu and knn the two criteria disagree on this data (starpu by the largest
   * size alone, linear by two), so the test tells them apart. */
  double mean2[3], *pred2 = malloc((size_t)n_second * sizeof *pred2);
  int last = 0;
  for (int k = 0; k < 3; k++) {
    if (err[k] < err[last]) last = k;
    if (ht_model_holdout(kinds[k], d, "", 1, train2, n_train2, test2, n_second, pred2)) fail_msg("%s", ht_last_error());
    double sum = 0;
    for (int j = 0; j < n_second; j++) sum += fabs(pred2[j] - d->y[test2[j]]) / d->y[test2[j]];
    mean2[k] = (err[k] + 100 * sum / n_second) / 2;
    if (mean2[k] < mean2[two]) two = k;
  }
  assert_int_not_equal(two, last);
  if (ht_model_fit("auto", d, "candidates=linear+starpu+knn,validate=two", 1, &m)) fail_msg("%s", ht_last_error());
  char want[64];
  snprintf(want, sizeof want, "auto: %s (", kinds[two]);
  if (strncmp(ht_model_options(m), want, strlen(want)) != 0)
    fail_msg("validate=two: chose '%s', expected %s", ht_model_options(m), kinds[two]);
  ht_model_destroy(m);
  free(in_largest);
  free(pred2);
  free(train2);
  free(test2);
  free(pred);
  free(train);
  free(test);
  ht_dataset_destroy(sub);
  ht_dataset_destroy(d);
  ht_features_destroy(fs);
  ht_spec_destroy(s);
}

/* hetune bandwidth writes a curve; model train --bandwidth keeps the floor and says so, model show
 * too; a missing or malformed curve is an error naming the file, and nothing is stored. */
static void test_cli_roofline(void **state) {
  (void)state;
  char args[2048];
  cli_out o;
  expect_cli_error("bandwidth --sweeps 0", "--sweeps");
  expect_cli_error("bandwidth --device sim:0 --max 65536", "probes exist for c, opencl and cuda devices");
  expect_cli_error("bandwidth --min 1048576 --max 65536", "working sets");
  expect_cli_error("bandwidth --output /nonexistent/dir/bw.csv", "cannot write /nonexistent/dir/bw.csv");
  snprintf(args, sizeof args, "bandwidth --min 65536 --max 131072 --sweeps 1 --quiet --output '%s/bw.csv'", dir);
  cli_ok(&o, args);
  assert_non_null(strstr(o.out, "wrote 2 points to "));
  snprintf(args, sizeof args, "model train examples/vadd/vadd_c.json --data data/datasets/vadd_c.csv --kind linear "
                              "--name floored --bandwidth '%s/bw.csv' --db '%s/roof.db'", dir, dir);
  cli_ok(&o, args);
  assert_non_null(strstr(o.out, "roofline floor: bytes / ("));
  assert_non_null(strstr(o.out, " x bandwidth at that working set), 2-point bandwidth curve"));
  /* A device that reads 1 TB/s up to 1 GB and 0.1 GB/s beyond: vadd's training rows (up to 0.8 GB)
   * are all below the curve (k = 1), and 3.2 GB at 2^28 floats is at the floor, 32 s. */
  char cliff[1100];
  snprintf(cliff, sizeof cliff, "%s", write_tmp("cliff.csv", "bytes,gb_per_s\n1000000,1000\n1000000000,1000\n2000000000,0.1\n"));
  snprintf(args, sizeof args, "model train examples/vadd/vadd_c.json --data data/datasets/vadd_c.csv --kind linear "
                              "--name cliff --bandwidth '%s' --db '%s/roof.db'", cliff, dir);
  cli_ok(&o, args);
  assert_non_null(strstr(o.out, "roofline floor: bytes / (1 x bandwidth at that working set), 3-point"));
  snprintf(args, sizeof args, "model predict cliff --size N=268435456 --config NTHREADS=2,CHUNK=0,UNROLL=4 --db '%s/roof.db'",
           dir);
  cli_ok(&o, args);
  assert_non_null(strstr(o.out, ": predicted 32.2123 s ("));
  assert_non_null(strstr(o.out, "(model 'cliff', linear, at the roofline floor: the device cannot read the bytes faster)"));
  snprintf(args, sizeof args, "model predict cliff --size N=1048576 --config NTHREADS=2,CHUNK=0,UNROLL=4 --db '%s/roof.db'",
           dir);
  cli_ok(&o, args);
  assert_null(strstr(o.out, "roofline floor"));
  snprintf(args, sizeof args, "model show floored --db '%s/roof.db'", dir);
  cli(&o, args);
  assert_int_equal(o.rc, 0);
  assert_non_null(strstr(o.out, "roofline floor: "));
  assert_non_null(strstr(o.out, "\"bandwidth\":"));
  write_tmp("bad_bw.csv", "bytes,gb_per_s\n65536,50\n65536,60\n");
  const char *curves[][2] = {{"missing.csv", "missing.csv"}, {"bad_bw.csv", "bad_bw.csv:3: bytes 65536 do not increase"}};
  for (int i = 0; i < 2; i++) {
    snprintf(args, sizeof args, "model train examples/vadd/vadd_c.json --data data/datasets/vadd_c.csv --kind linear "
                                "--name broken --bandwidth '%s/%s' --db '%s/roof.db'", dir, curves[i][0], dir);
    expect_cli_error(args, curves[i][1]);
  }
  snprintf(args, sizeof args, "model show broken --db '%s/roof.db'", dir);
  expect_cli_error(args, "no model 'broken'");
}

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "%s/model_test_XXXXXX", HT_BINARY_DIR);
  if (!mkdtemp(dir)) return -1;
  char cache[600];
  snprintf(cache, sizeof cache, "%s/cache", dir);
  setenv("HETUNE_CACHE_DIR", cache, 0);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_features_gemm_opencl),
    cmocka_unit_test(test_features_bad_text),
    cmocka_unit_test(test_dataset_from_csv),
    cmocka_unit_test(test_dataset_merges_repeats),
    cmocka_unit_test(test_dataset_keeps_many_repeats),
    cmocka_unit_test(test_accuracy_floor),
    cmocka_unit_test(test_band_from_predictions),
    cmocka_unit_test(test_dataset_bad_csv),
    cmocka_unit_test(test_accuracy_values),
    cmocka_unit_test(test_split_largest),
    cmocka_unit_test(test_wrapper_targets_and_routes),
    cmocka_unit_test(test_wrapper_errors),
    cmocka_unit_test(test_cross_validation_and_holdout),
    cmocka_unit_test(test_mrmr_prefers_relevant_and_new),
    cmocka_unit_test(test_store_models),
    cmocka_unit_test(test_cuda_ptx_features),
    cmocka_unit_test(test_cli_train_predict_show),
    cmocka_unit_test(test_cli_store_data_and_top),
    cmocka_unit_test(test_cli_eval_floor),
    cmocka_unit_test(test_cli_eval_band),
    cmocka_unit_test(test_cli_roofline),
    cmocka_unit_test(test_recording_drift),
    cmocka_unit_test(test_auto_choice),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
