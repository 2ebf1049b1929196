/* Bandwidth curves and the models' roofline floor: log-log interpolation of a curve, its CSV form
 * and every way a curve file can be wrong, a real probe run on the C device, and a model trained on
 * in-cache sizes whose floor catches the slowdown beyond the cache (and survives save -> load). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hetune/model.h"
#include "hetune/ptx.h"

static char tmp_dir[256];

static int setup(void **unused) {
  (void)unused;
  snprintf(tmp_dir, sizeof tmp_dir, "/tmp/hetune_test_roofline_XXXXXX");
  return mkdtemp(tmp_dir) ? 0 : -1;
}

static int teardown(void **unused) {
  (void)unused;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmp_dir);
  return system(cmd) == 0 ? 0 : -1;
}

static char *write_tmp(const char *name, const char *text) {
  static char path[512];
  snprintf(path, sizeof path, "%s/%s", tmp_dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  return path;
}

/* A cache of 1 MB at 100 GB/s, memory at 25 GB/s from 4 MB on. */
static ht_bandwidth_curve cache_curve(void) {
  ht_bandwidth_curve c = {0};
  const double bytes[] = {1e5, 1e6, 4e6, 1.6e7}, gbps[] = {100, 100, 25, 25};
  for (int i = 0; i < 4; i++) c.bytes[i] = bytes[i], c.bytes_per_s[i] = gbps[i] * 1e9, c.threads[i] = 2;
  c.n = 4;
  return c;
}

static void test_curve_interpolation(void **unused) {
  (void)unused;
  ht_bandwidth_curve c = cache_curve(), empty = {0};
  assert_true(isnan(ht_bandwidth_at(&empty, 1e6)));
  assert_float_equal(ht_bandwidth_at(&c, 10), 100e9, 1); /* below the first point: its value */
  assert_float_equal(ht_bandwidth_at(&c, 5e5), 100e9, 1);
  assert_float_equal(ht_bandwidth_at(&c, 2e6), 50e9, 1e3); /* halfway in log-log: 100 / 4^0.5 */
  assert_float_equal(ht_bandwidth_at(&c, 4e6), 25e9, 1);
  assert_float_equal(ht_bandwidth_at(&c, 1e12), 25e9, 1); /* beyond the last: its value */
}

static void test_curve_csv(void **unused) {
  (void)unused;
  ht_bandwidth_curve c = cache_curve(), back;
  char path[512];
  snprintf(path, sizeof path, "%s/curve.csv", tmp_dir);
  assert_int_equal(ht_bandwidth_save(path, &c, "a test curve"), HT_OK);
  assert_int_equal(ht_bandwidth_load(path, &back), HT_OK);
  assert_int_equal(back.n, 4);
  for (int i = 0; i < 4; i++) {
    assert_float_equal(back.bytes[i], c.bytes[i], 0.5);
    assert_float_equal(back.bytes_per_s[i], c.bytes_per_s[i], 1e6);
    assert_int_equal(back.threads[i], 2);
  }
  /* a curve without the threads column loads too */
  assert_int_equal(ht_bandwidth_load(write_tmp("two.csv", "bytes,gb_per_s\n1000,5\n2000,6.5\n"), &back), HT_OK);
  assert_int_equal(back.n, 2);
  assert_float_equal(back.bytes_per_s[1], 6.5e9, 1);
}

static void expect_bad(const char *name, const char *text, ht_status want, const char *needle) {
  ht_bandwidth_curve c;
  const char *path = text ? write_tmp(name, text) : "/nonexistent/curve.csv";
  assert_int_equal(ht_bandwidth_load(path, &c), want);
  if (!strstr(ht_last_error(), needle)) fail_msg("error '%s' lacks '%s'", ht_last_error(), needle);
}

static void test_curve_bad_files(void **unused) {
  (void)unused;
  expect_bad("missing", NULL, HT_ERR_IO, "/nonexistent/curve.csv");
  expect_bad("header.csv", "size,speed\n1000,5\n", HT_ERR_PARSE, "header.csv:1: expected the header");
  expect_bad("empty.csv", "# nothing\nbytes,gb_per_s\n", HT_ERR_PARSE, "no points");
  expect_bad("order.csv", "bytes,gb_per_s\n2000,5\n1000,6\n", HT_ERR_PARSE, "order.csv:3: bytes 1000 do not increase");
  expect_bad("neg.csv", "bytes,gb_per_s\n1000,-5\n", HT_ERR_PARSE, "neg.csv:2: expected a positive bandwidth");
  expect_bad("word.csv", "bytes,gb_per_s\nlots,5\n", HT_ERR_PARSE, "word.csv:2: expected a positive number of bytes");
  expect_bad("nan.csv", "bytes,gb_per_s\n1000,nan\n", HT_ERR_PARSE, "nan.csv:2");
}

static void count_progress(int sweep, double bytes, double bytes_per_s, int threads, void *ctx) {
  assert_true(sweep >= 1 && sweep <= 2 && bytes >= 65536 && bytes_per_s > 0 && threads >= 1);
  ++*(int *)ctx;
}

/* The real probe on the C device: every point verified and timed, bandwidth positive. */
static void test_measure_c(void **unused) {
  (void)unused;
  ht_bandwidth_curve c;
  int calls = 0;
  ht_status st = ht_bandwidth_measure("c", 65536, 1 << 20, 2, NULL, count_progress, &calls, &c);
  if (st) fail_msg("measure: %s", ht_last_error());
  assert_int_equal(c.n, 5); /* 64 KiB .. 1 MiB, doubling */
  assert_int_equal(calls, 10); /* 5 points x 2 sweeps */
  for (int i = 0; i < c.n; i++) {
    assert_float_equal(c.bytes[i], 65536.0 * (1 << i), 0.5);
    assert_true(c.bytes_per_s[i] > 1e8 && c.bytes_per_s[i] < 1e13);
    assert_true(c.threads[i] >= 1);
  }
  assert_int_equal(ht_bandwidth_measure("sim:0", 65536, 1 << 20, 1, NULL, NULL, NULL, &c), HT_ERR_UNSUPPORTED);
  assert_non_null(strstr(ht_last_error(), "sim:0"));
  assert_int_equal(ht_bandwidth_measure("c", 1 << 20, 65536, 1, NULL, NULL, NULL, &c), HT_ERR_INVALID);
}

/* ---- the floor in a model ---- */

static const char *const names[] = {"work", "bytes"};

/* Rows of a streaming kernel: time = bytes / (0.8 x the curve's bandwidth), two "configs" (the
 * second half as fast); work = elements. */
static ht_dataset *streaming(const ht_bandwidth_curve *c, double max_bytes) {
  int n = 0;
  for (double b = 1e5; b <= max_bytes * 1.001; b *= 2) n += 2;
  ht_dataset *d;
  assert_int_equal(ht_dataset_create(n, 2, &d), HT_OK);
  for (int j = 0; j < 2; j++) d->names[j] = ht_strdup(names[j]);
  int i = 0;
  for (double b = 1e5; b <= max_bytes * 1.001; b *= 2) {
    for (int k = 0; k < 2; k++, i++) {
      d->x[2 * i] = d->work[i] = b / 4;
      d->x[2 * i + 1] = b;
      d->y[i] = b / (0.8 * ht_bandwidth_at(c, b)) * (k ? 2 : 1);
      d->group[i] = i / 2;
    }
  }
  d->n_groups = i / 2;
  return d;
}

/* A model stored before the floor existed (version 2: no flag after the routes) still loads. */
static void expect_version2_loads(const ht_model *m) {
  ht_buf b = {0};
  assert_int_equal(ht_model_save(m, &b), HT_OK);
  assert_memory_equal(b.data, "HTMODEL3", 8);
  memcpy(b.data, "HTMODEL2", 8);
  ht_model *old = NULL;
  assert_int_equal(ht_model_load(b.data, b.len - 8, &old), HT_OK); /* without the 8-byte flag */
  assert_int_equal(ht_model_roofline(old, NULL, NULL), 0);
  double x[2] = {1e5, 4e5}, p1 = ht_model_predict(m, x), p2 = ht_model_predict(old, x);
  assert_memory_equal(&p1, &p2, sizeof p1);
  ht_model_destroy(old);
  ht_buf_free(&b);
}

static void test_floor_catches_cache_cliff(void **unused) {
  (void)unused;
  ht_bandwidth_curve c = cache_curve();
  ht_dataset *d = streaming(&c, 8e5); /* training: all in the 1 MB cache */
  ht_model *plain = NULL, *floored = NULL, *back = NULL;
  assert_int_equal(ht_model_fit("linear", d, NULL, 1, &plain), HT_OK);
  assert_int_equal(ht_model_roofline(plain, NULL, NULL), 0);
  expect_version2_loads(plain);
  d->bandwidth = c;
  assert_int_equal(ht_model_fit("linear", d, NULL, 1, &floored), HT_OK);
  double k;
  int points;
  assert_int_equal(ht_model_roofline(floored, &k, &points), 1);
  assert_float_equal(k, 1.0, 1e-12); /* no training row beats the curve */
  assert_int_equal(points, 4);
  double x[2] = {1.6e7 / 4, 1.6e7}; /* 16 MB: from memory, 4x slower per byte */
  double truth = 1.6e7 / (0.8 * 25e9), floor = 1.6e7 / 25e9;
  double p_plain = ht_model_predict(plain, x), p_floor = ht_model_predict(floored, x);
  assert_true(p_plain < 0.5 * truth);         /* the in-cache rate, extrapolated */
  assert_float_equal(p_floor, floor, 1e-12); /* the floor: within 20% of the truth */
  double small[2] = {2e5 / 4, 2e5};           /* in cache: the floor does not bite */
  assert_float_equal(ht_model_predict(floored, small), ht_model_predict(plain, small), 1e-15);
  ht_buf b = {0};
  assert_int_equal(ht_model_save(floored, &b), HT_OK);
  assert_int_equal(ht_model_load(b.data, b.len, &back), HT_OK);
  double p_back = ht_model_predict(back, x);
  assert_memory_equal(&p_back, &p_floor, sizeof p_back);
  for (size_t len = 0; len < b.len; len++) { /* every truncation refused, roofline section included */
    ht_model *cut = NULL;
    char *copy = malloc(len + 1);
    memcpy(copy, b.data, len);
    ht_status st = ht_model_load(copy, len, &cut);
    free(copy);
    assert_int_equal(st, HT_ERR_PARSE);
    assert_null(cut);
  }
  ht_buf_free(&b);
  ht_model_destroy(plain);
  ht_model_destroy(floored);
  ht_model_destroy(back);
  ht_dataset_destroy(d);
}

/* A row faster than the curve (its bytes overstate the traffic) raises k so the floor never lies
 * above a training time; subsets keep the curve, so "auto" gets the floor too. */
static void test_floor_calibrated(void **unused) {
  (void)unused;
  ht_bandwidth_curve c = cache_curve();
  ht_dataset *d = streaming(&c, 1.6e7);
  d->bandwidth = c;
  d->y[0] /= 2.5; /* 2 x the curve's speed */
  ht_model *m = NULL;
  assert_int_equal(ht_model_fit("auto", d, NULL, 1, &m), HT_OK);
  double k;
  assert_int_equal(ht_model_roofline(m, &k, NULL), 1);
  assert_float_equal(k, 2.0, 1e-9);
  for (int i = 0; i < d->n_rows; i++)
    assert_true(d->y[i] >= d->x[2 * i + 1] / (k * ht_bandwidth_at(&c, d->x[2 * i + 1])) * (1 - 1e-12));
  int rows[] = {3, 1};
  ht_dataset *sub;
  assert_int_equal(ht_dataset_subset(d, rows, 2, &sub), HT_OK);
  assert_int_equal(sub->bandwidth.n, 4);
  ht_dataset_destroy(sub);
  ht_model_destroy(m);
  ht_dataset_destroy(d);
}

/* The OpenCL probe on PoCL, one working set: every one of its configs compiles, verifies (exact
 * sum through atomics) and times. */
static void test_measure_opencl(void **unused) {
  (void)unused;
  ht_bandwidth_curve c;
  ht_status st = ht_bandwidth_measure("opencl:0:0", 65536, 65536, 1, NULL, NULL, NULL, &c);
  if (st) fail_msg("measure: %s", ht_last_error());
  assert_int_equal(c.n, 1);
  assert_float_equal(c.bytes[0], 65536.0, 0.5);
  assert_true(c.bytes_per_s[0] > 1e8 && c.bytes_per_s[0] < 1e13);
  assert_true(c.threads[0] >= 64); /* work-items: at least one group of 64 */
}

/* The CUDA probe: measured where a GPU is; elsewhere the run fails at the device (the probe files
 * are written before it is opened) and the generated kernel is compiled with nvcc, when present,
 * for every block size: the entry, the warp shuffle and the atomic add must be in the PTX. */
static void test_cuda_probe(void **unused) {
  (void)unused;
  ht_bandwidth_curve c;
  if (ht_bandwidth_measure("cuda:0", 65536, 131072, 1, NULL, NULL, NULL, &c) == HT_OK) {
    assert_int_equal(c.n, 2);
    assert_true(c.bytes_per_s[0] > 1e8 && c.threads[1] >= 128);
    return;
  }
  fprintf(stderr, "no CUDA device (%s): compile check only\n", ht_last_error());
  if (!ht_ptx_nvcc_path()) {
    fprintf(stderr, "nvcc not found: CUDA probe compile check skipped\n");
    skip();
  }
  char path[1024];
  snprintf(path, sizeof path, "%s/probes/bw_read.cu", ht_cache_dir());
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  static char src[8192];
  size_t len = fread(src, 1, sizeof src - 1, f);
  fclose(f);
  src[len] = '\0';
  const char *const blocks[] = {"BLOCK=128", "BLOCK=1024"};
  for (int i = 0; i < 2; i++) {
    const char *defs[] = {blocks[i], "BPS=4", NULL};
    char *ptx = NULL;
    ht_status st = ht_ptx_compile(src, "bw_read.cu", defs, "sm_90", &ptx, NULL, 0, NULL);
    if (st) fail_msg("nvcc: %s", ht_last_error());
    assert_non_null(strstr(ptx, ".entry bw_read("));
    assert_non_null(strstr(ptx, "shfl.sync.down"));
    assert_true(strstr(ptx, "atom.global.add.u32") || strstr(ptx, "red.global.add.u32"));
    assert_non_null(strstr(ptx, "ld.global.nc.v4.u32"));
    free(ptx);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_curve_interpolation),       cmocka_unit_test(test_curve_csv),
    cmocka_unit_test(test_curve_bad_files),           cmocka_unit_test(test_measure_c),
    cmocka_unit_test(test_measure_opencl),
    cmocka_unit_test(test_cuda_probe),
    cmocka_unit_test(test_floor_catches_cache_cliff), cmocka_unit_test(test_floor_calibrated),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
