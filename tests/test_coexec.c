/* Co-execution: split declarations and their errors, split calls whose results equal one device's
 * (awkward sizes, halos, dynamic chunks), plans that balance simulated devices, a device that fails
 * mid-call, the plan cache, and the command. Simulated devices (tests/data/sim/coexec.json) are
 * noise-free, so their times follow from the work. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_shell.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coexec/coexec_internal.h"

#define DATA HT_SOURCE_DIR "/tests/data/coexec/"
#define OPTIONS HT_SOURCE_DIR "/examples/dispatch/options_c.json"

static char *write_tmp(const char *name, const char *text) {
  char *path = ht_strfmt("%s/%s", HT_BINARY_DIR, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  return path;
}

/* A computation of the options kernel on the given devices, split by N. */
static char *options_file(const char *name, const char *devices, const char *split_extra) {
  ht_buf b = {0};
  ht_buf_appendf(&b, "{\"name\": \"%s\", \"variants\": [", name);
  char list[256];
  snprintf(list, sizeof list, "%s", devices);
  int first = 1;
  for (char *d = strtok(list, ","); d; d = strtok(NULL, ","), first = 0)
    ht_buf_appendf(&b, "%s{\"spec\": \"%s\", \"device\": \"%s\", \"config\": \"THREADS_ALL=0\"}", first ? "" : ", ",
                   OPTIONS, d);
  ht_buf_appendf(&b, "], \"split\": {\"dim\": \"N\", \"buffers\": {\"call\": \"1\", \"put\": \"1\", \"s\": \"1\", "
                     "\"k\": \"1\", \"t\": \"1\"}%s}}",
                 split_extra ? split_extra : "");
  char *file = ht_strfmt("test_coexec_%s.json", name);
  char *path = write_tmp(file, b.data);
  free(file);
  ht_buf_free(&b);
  return path;
}

static ht_coexec *load(const char *path) {
  ht_coexec *x = NULL;
  if (ht_coexec_load(path, NULL, &x)) fail_msg("%s", ht_last_error());
  return x;
}

/* The written buffers of two calls agree exactly (each row is computed by the same code). */
static void assert_same_outputs(const ht_computation *c, const ht_host_arg *a, const ht_host_arg *b) {
  const ht_spec *s = ht_computation_spec(c);
  for (int i = 0; i < ht_spec_arg_count(s); i++) {
    if (!ht_spec_arg_is_buffer(s, i) || !(ht_spec_arg_access(s, i) & HT_ACCESS_WRITE)) continue;
    size_t bytes = a[i].count * ht_dtype_size(ht_spec_arg_type(s, i));
    if (memcmp(a[i].data, b[i].data, bytes)) fail_msg("buffer %s differs from one device's result", ht_spec_arg_name(s, i));
  }
}

/* Runs x at sizes on fresh data and checks the result against variant v alone. */
static void check_against_single(ht_coexec *x, const int64_t *sizes, int v, ht_coexec_report *r) {
  ht_computation *c = ht_coexec_computation(x);
  ht_host_arg *split, *one;
  if (ht_computation_make_args(c, sizes, 7, &split) || ht_computation_make_args(c, sizes, 7, &one))
    fail_msg("%s", ht_last_error());
  if (ht_coexec_run(x, sizes, split, r)) fail_msg("%s", ht_last_error());
  if (ht_computation_run_variant(c, v, sizes, one, NULL)) fail_msg("%s", ht_last_error());
  assert_same_outputs(c, split, one);
  ht_computation_free_args(c, split);
  ht_computation_free_args(c, one);
}

static void expect_load_error(const char *split, const char *needle) {
  char *text = ht_strfmt("{\"name\": \"bad\", \"variants\": [{\"spec\": \"%s\", \"device\": \"sim:0\", \"config\": "
                         "\"THREADS_ALL=0\"}],\n \"split\": %s}",
                         OPTIONS, split);
  char *path = write_tmp("test_coexec_bad.json", text);
  ht_coexec *x = (ht_coexec *)1;
  if (!ht_coexec_load(path, NULL, &x)) fail_msg("loaded, expected an error with '%s'", needle);
  assert_null(x);
  if (!strstr(ht_last_error(), needle)) fail_msg("expected '%s' in: %s", needle, ht_last_error());
  if (!strstr(ht_last_error(), "test_coexec_bad.json:2:")) fail_msg("no position in: %s", ht_last_error());
  free(path);
  free(text);
}

static void test_split_errors(void **state) {
  (void)state;
  const char *all = "\"buffers\": {\"call\": \"1\", \"put\": \"1\", \"s\": \"1\", \"k\": \"1\", \"t\": \"1\"}";
  char *t;
  expect_load_error("{\"buffers\": {\"call\": \"1\"}}", "\"dim\": expected the name of the size to cut");
  expect_load_error(t = ht_strfmt("{\"dim\": \"M\", %s}", all), "dim 'M' is not a size of options_c"), free(t);
  expect_load_error("{\"dim\": \"N\", \"buffers\": {\"call\": \"1\", \"put\": \"1\", \"q\": \"1\"}}",
                    "buffer 'q': the specs have no such argument");
  expect_load_error("{\"dim\": \"N\", \"buffers\": {\"call\": \"1\", \"n\": \"1\"}}", "'n' is a scalar, not a buffer");
  expect_load_error("{\"dim\": \"N\", \"buffers\": {\"call\": \"1\", \"s\": \"1\"}}",
                    "buffer 'put' is written, so it must be split");
  expect_load_error(t = ht_strfmt("{\"dim\": \"N\", \"halo\": -1, %s}", all), "\"halo\": expected a whole number"), free(t);
  expect_load_error(t = ht_strfmt("{\"dim\": \"N\", \"hallo\": 1, %s}", all), "did you mean \"halo\""), free(t);
  expect_load_error(t = ht_strfmt("{\"dim\": \"N\", %s, \"options\": {\"schedul\": \"static\"}}", all), "schedul"), free(t);
  expect_load_error(t = ht_strfmt("{\"dim\": \"N\", %s, \"options\": {\"schedule\": \"fastest\"}}", all),
                    "schedule 'fastest': expected static or dynamic"),
      free(t);
  expect_load_error(t = ht_strfmt("{\"dim\": \"N\", %s, \"power_w\": {\"sim:7\": 50}}", all),
                    "no variant runs on device 'sim:7'"),
      free(t);
  expect_load_error("{\"dim\": \"N\", \"buffers\": {\"call\": \"N+\", \"put\": \"1\"}}", "stride 'N+'");
  /* a computation file without a split is not one co-execution can run */
  char *text = ht_strfmt("{\"name\": \"plain\", \"variants\": [{\"spec\": \"%s\", \"device\": \"sim:0\"}]}", OPTIONS);
  char *path = write_tmp("test_coexec_plain.json", text);
  ht_coexec *x;
  assert_int_not_equal(ht_coexec_load(path, NULL, &x), HT_OK);
  assert_non_null(strstr(ht_last_error(), "no \"split\""));
  free(path), free(text);
}

/* A halo cannot be read from a buffer chunks write; a buffer's length must be whole rows. */
static void test_split_checks_at_call(void **state) {
  (void)state;
  ht_spec *s;
  if (ht_spec_load(DATA "blur.json", &s)) fail_msg("%s", ht_last_error());
  ht_computation *c;
  assert_int_equal(ht_computation_create("rows", NULL, &c), HT_OK);
  assert_int_equal(ht_computation_add_variant(c, s, "sim:0", "", NULL), HT_OK);
  ht_split_buffer b[2] = {{"out", "C"}, {"in", "C+1"}}; /* in holds R*C elements, not R rows of C+1 */
  ht_split split = {"R", 0, 1, 2, b};
  ht_coexec *x;
  assert_int_equal(ht_coexec_create(c, &split, NULL, &x), HT_OK);
  int64_t sizes[2] = {100, 10};
  ht_coexec_report r;
  assert_int_not_equal(ht_coexec_plan(x, sizes, &r), HT_OK);
  assert_non_null(strstr(ht_last_error(), "buffer 'in' holds 1000 elements, not R (100) rows of 11"));
  ht_coexec_destroy(x);
  ht_computation_destroy(c);
  ht_spec_destroy(s);
}

/* An awkward size split over a real host device and two simulated GPUs, first measured by dynamic
 * chunks, then planned: each call's results equal one device's. */
static void test_split_matches_one_device(void **state) {
  (void)state;
  char *path = options_file("match", "c,sim:1,sim:2", ", \"granularity\": 64");
  ht_coexec *x = load(path);
  assert_int_equal(ht_coexec_pu_count(x), 3);
  int64_t n = 100003;
  ht_coexec_report r;
  check_against_single(x, &n, 0, &r);
  assert_string_equal(r.schedule, "dynamic"); /* nothing measured yet */
  for (int i = 0; i < 3; i++) assert_int_equal(r.pu[i].status, HT_OK);
  check_against_single(x, &n, 1, &r);
  assert_string_equal(r.schedule, "static");
  int64_t rows = 0;
  for (int i = 0; i < 3; i++) {
    if (r.pu[i].variant < 0) continue;
    assert_true(r.pu[i].lb % 64 == 0);
    rows += r.pu[i].ub - r.pu[i].lb;
  }
  assert_int_equal(rows, n);
  ht_coexec_destroy(x);
  free(path);
}

/* A stencil split by rows with a halo of one row, on the host (in copies) and simulated devices,
 * planned and in many small dynamic chunks: every row equals the unsplit blur. */
static void test_halo_split(void **state) {
  (void)state;
  ht_coexec *x = load(DATA "blur_split.json");
  int64_t sizes[2] = {1001, 67};
  ht_coexec_report r;
  /* dynamic until every device has run a chunk (a device whose thread started late may get none) */
  for (int call = 0; call < 8 && (call < 2 || strcmp(r.schedule, "static")); call++) check_against_single(x, sizes, 0, &r);
  assert_string_equal(r.schedule, "static");
  assert_int_equal(ht_coexec_set_options(x, "schedule=dynamic,min_chunk=3"), HT_OK);
  check_against_single(x, sizes, 0, &r);
  int chunks = 0;
  for (int i = 0; i < r.n_pus; i++) chunks += r.pu[i].chunks;
  assert_true(chunks > 6);
  assert_int_not_equal(ht_coexec_set_options(x, "schedule=dynamc"), HT_OK);
  assert_non_null(strstr(ht_last_error(), "schedule 'dynamc'"));
  ht_coexec_destroy(x);
}

/* Measured single-device times of every variant at n. */
static void calibrate(ht_coexec *x, int64_t n, double *alone) {
  ht_computation *c = ht_coexec_computation(x);
  ht_host_arg *args;
  if (ht_computation_make_args(c, &n, 3, &args)) fail_msg("%s", ht_last_error());
  for (int v = 0; v < ht_computation_variant_count(c); v++) {
    ht_run_times t;
    if (ht_computation_run_variant(c, v, &n, args, &t)) fail_msg("%s", ht_last_error());
    alone[v] = t.kernel_s + t.h2d_s + t.d2h_s;
  }
  ht_computation_free_args(c, args);
}

/* A split of the options kernel over devices, each variant measured at n and n / 2: enough for
 * plans. *path gets the file to free. */
static ht_coexec *calibrated(const char *name, const char *devices, const char *split_extra, int64_t n, char **path) {
  *path = options_file(name, devices, split_extra);
  ht_coexec *x = load(*path);
  double alone[HT_COEXEC_MAX_PUS];
  calibrate(x, n, alone);
  calibrate(x, n / 2, alone);
  return x;
}

/* Three simulated devices of unequal speed, with copies: once their times are known, the plan
 * makes them finish together, close to the ideal makespan 1 / sum(1 / T_device). */
static void test_plan_balances_simulated_devices(void **state) {
  (void)state;
  char *path = options_file("balance", "sim:0,sim:1,sim:2", NULL);
  ht_coexec *x = load(path);
  int64_t n = 2000000;
  double alone[3], inv = 0;
  calibrate(x, n, alone);
  calibrate(x, n / 4, alone + 0); /* a second size: chunk times are interpolated between them */
  calibrate(x, n, alone);
  for (int i = 0; i < 3; i++) inv += 1 / alone[i];
  ht_coexec_report r;
  ht_computation *c = ht_coexec_computation(x);
  ht_host_arg *args;
  if (ht_computation_make_args(c, &n, 3, &args)) fail_msg("%s", ht_last_error());
  for (int call = 0; call < 4; call++)
    if (ht_coexec_run(x, &n, args, &r)) fail_msg("%s", ht_last_error());
  ht_computation_free_args(c, args);
  assert_string_equal(r.schedule, "static");
  double efficiency = (1 / inv) / r.makespan_s;
  if (efficiency < 0.95 || r.imbalance > 0.05)
    fail_msg("efficiency %.3f, imbalance %.3f (makespan %g s, ideal %g s)", efficiency, r.imbalance, r.makespan_s, 1 / inv);
  assert_true(r.plan.plan_us < 1e5);
  ht_coexec_destroy(x);
  free(path);
}

/* A GPU whose memory holds a small chunk only fails on the chunk the plan gives it: its rows run
 * on the fastest device that worked, the failure is reported, the results are right. */
static void test_failed_device_rerun(void **state) {
  (void)state;
  char *path = options_file("fail", "sim:0,sim:3", NULL);
  ht_coexec *x = load(path);
  int64_t small = 2000, n = 200000;
  double alone[2];
  calibrate(x, small, alone); /* 5 buffers x 4 bytes x 2000 fit in 400 kB; x 200000 do not */
  calibrate(x, small * 2, alone);
  ht_coexec_report r;
  check_against_single(x, &n, 0, &r);
  assert_int_not_equal(r.pu[1].status, HT_OK);
  assert_non_null(strstr(r.pu[1].error, "sim:3"));
  assert_true(r.reruns >= 1);
  assert_int_equal(r.pu[1].chunks, 0);
  ht_coexec_destroy(x);
  free(path);
}

/* Plans are cached per size bucket; a plan whose call was unbalanced is made again. */
static void test_plan_cache(void **state) {
  (void)state;
  char *path;
  int64_t n = 500000;
  ht_coexec *x = calibrated("cache", "sim:0,sim:1", NULL, n, &path);
  ht_coexec_report r;
  assert_int_equal(ht_coexec_plan(x, &n, &r), HT_OK);
  assert_int_equal(r.from_cache, 0);
  assert_true(r.plan.steps >= 1);
  assert_int_equal(ht_coexec_plan(x, &n, &r), HT_OK);
  assert_int_equal(r.from_cache, 1);
  assert_int_equal(r.pu[0].ub + (r.pu[1].ub - r.pu[1].lb), n);
  htx_plan_forget(x, &n);
  assert_int_equal(ht_coexec_plan(x, &n, &r), HT_OK);
  assert_int_equal(r.from_cache, 0);
  /* nothing known at all: no plan, but a run measures (dynamic) */
  char *path2 = options_file("cold", "sim:0,sim:2", NULL);
  ht_coexec *cold = load(path2);
  assert_int_not_equal(ht_coexec_plan(cold, &n, &r), HT_OK);
  assert_non_null(strstr(ht_last_error(), "nothing predicts"));
  ht_coexec_destroy(cold);
  ht_coexec_destroy(x);
  free(path), free(path2);
}

/* The examples load (their devices open, their splits check against their specs). */
static void test_example_files_load(void **state) {
  (void)state;
  const char *files[] = {"options_split.json", "blackscholes_c_pocl.json"};
  for (int i = 0; i < 2; i++) {
    char *path = ht_strfmt("%s/examples/coexec/computations/%s", HT_SOURCE_DIR, files[i]);
    ht_coexec *x = load(path);
    assert_int_equal(ht_coexec_pu_count(x), 2);
    ht_coexec_destroy(x);
    free(path);
  }
}

/* The host's C kernel and the OpenCL kernel (PoCL here) at once, planned after a dynamic call
 * measured them: the split results agree with the OpenCL kernel alone within the spec's tolerance
 * (the two kernels' math libraries differ in the last bits). */
static void test_c_and_opencl(void **state) {
  (void)state;
  ht_coexec *x = load(HT_SOURCE_DIR "/examples/coexec/computations/blackscholes_c_pocl.json");
  ht_computation *c = ht_coexec_computation(x);
  int64_t n = 100003;
  ht_coexec_report r;
  for (int call = 0; call < 3; call++) {
    ht_host_arg *split, *one;
    if (ht_computation_make_args(c, &n, 5, &split) || ht_computation_make_args(c, &n, 5, &one) ||
        ht_coexec_run(x, &n, split, &r) || ht_computation_run_variant(c, 1, &n, one, NULL))
      fail_msg("%s", ht_last_error());
    for (int b = 0; b < 2; b++) /* call and put */
      for (int64_t i = 0; i < n; i++) {
        float u = ((float *)split[b].data)[i], v = ((float *)one[b].data)[i];
        if (!(fabsf(u - v) <= 1e-4f + 1e-4f * fabsf(v))) fail_msg("call %d, buffer %d, option %lld: %g vs %g", call, b, (long long)i, u, v);
      }
    ht_computation_free_args(c, split);
    ht_computation_free_args(c, one);
  }
  int64_t rows = 0;
  for (int i = 0; i < r.n_pus; i++) rows += r.pu[i].rows;
  assert_int_equal(rows, n);
  ht_coexec_destroy(x);
}

/* Power figures from the file: with the energy rule, the device doing the fewest rows per watt
 * (the 300 W GPU) is dropped; by time alone it takes the largest chunk. */
static void test_energy_rule(void **state) {
  (void)state;
  char *path;
  int64_t n = 400000;
  ht_coexec *x = calibrated("energy", "sim:0,sim:1,sim:2", ", \"power_w\": {\"sim:0\": 95, \"sim:1\": 300, \"sim:2\": 120}", n, &path);
  ht_coexec_report r;
  assert_int_equal(ht_coexec_plan(x, &n, &r), HT_OK);
  assert_int_not_equal(r.pu[1].variant, -1);
  assert_true(r.pu[1].rows > r.pu[0].rows && r.pu[1].rows > r.pu[2].rows);
  assert_true(isfinite(r.plan.energy_j));
  assert_int_equal(ht_coexec_set_options(x, "energy=0.6"), HT_OK);
  assert_int_equal(ht_coexec_plan(x, &n, &r), HT_OK);
  assert_int_equal(r.pu[1].variant, -1);
  assert_true(r.plan.eliminated_at[1] > 0);
  assert_true(r.pu[0].rows + r.pu[2].rows == n);
  assert_int_not_equal(ht_coexec_set_power(x, "sim:1", -5), HT_OK);
  ht_coexec_destroy(x);
  free(path);
}

/* No "power_w" in the file: with an energy option on, each simulated device's power comes from its
 * model (ht_device_power: power_w less idle_w), and the same device as in test_energy_rule is
 * dropped. A device with no
 * power figure at all is named, with how to give it. */
static void test_energy_from_device_power(void **state) {
  (void)state;
  char *path;
  int64_t n = 400000;
  ht_coexec *x = calibrated("energy_device", "sim:0,sim:1,sim:2", NULL, n, &path);
  ht_coexec_report r;
  assert_int_equal(ht_coexec_set_options(x, "energy=0.6"), HT_OK);
  if (ht_coexec_plan(x, &n, &r)) fail_msg("%s", ht_last_error());
  assert_int_equal(r.pu[1].variant, -1);
  assert_true(r.plan.eliminated_at[1] > 0);
  assert_true(isfinite(r.plan.energy_j));
  assert_true(x->power_w[0] == 95 - 20 && x->power_w[1] == 300 - 40 && x->power_w[2] == 120 - 15);
  ht_coexec_destroy(x);
  free(path);
  n = 4000;
  x = calibrated("energy_nopower", "sim:0,sim:3", NULL, n, &path); /* sim:3's entry has no power_w */
  assert_int_equal(ht_coexec_set_options(x, "recursive=1"), HT_OK);
  assert_int_equal(ht_coexec_plan(x, &n, &r), HT_ERR_UNSUPPORTED);
  const char *msg = ht_last_error();
  if (!strstr(msg, "no power reading for device sim:3") || !strstr(msg, "\"power_w\": {\"sim:3\"") ||
      !strstr(msg, "ht_coexec_set_power"))
    fail_msg("%s", msg);
  assert_int_equal(ht_coexec_set_power(x, "sim:3", 250), HT_OK);
  if (ht_coexec_plan(x, &n, &r)) fail_msg("%s", ht_last_error());
  ht_coexec_destroy(x);
  free(path);
}

/* A CPU's power measured once (RAPL, every core loaded) is kept in the computation's store: with
 * no RAPL counters to read here, the energy plan needs the stored figure, and a computation without
 * the store fails to get one. */
static void test_energy_power_from_store(void **state) {
  (void)state;
  char *db = ht_strfmt("%s/test_coexec_power.db", HT_BINARY_DIR), *path = options_file("store_power", "c,sim:1", NULL);
  unlink(db);
  setenv("HETUNE_POWERCAP_DIR", "/nonexistent-hetune-powercap", 1);
  int64_t n = 40000;
  for (int with_store = 0; with_store < 2; with_store++) {
    ht_store *st = NULL;
    if (with_store) {
      ht_device *dev;
      ht_device_power_info p = {.active_w = 95, .idle_w = 20, .source = "rapl", .detail = "planted by the test"};
      assert_int_equal(ht_store_open(db, &st), HT_OK);
      assert_int_equal(ht_device_open("c", &dev), HT_OK);
      assert_int_equal(ht_store_put_power(st, ht_device_info_get(dev), &p), HT_OK);
      ht_device_close(dev);
    }
    ht_coexec *x;
    if (ht_coexec_load(path, st, &x)) fail_msg("%s", ht_last_error());
    double alone[2];
    calibrate(x, n, alone);
    calibrate(x, n / 2, alone);
    assert_int_equal(ht_coexec_set_options(x, "energy=0.01"), HT_OK);
    ht_coexec_report r;
    ht_status s = ht_coexec_plan(x, &n, &r);
    if (!with_store && (s != HT_ERR_UNSUPPORTED || !strstr(ht_last_error(), "no power reading for device c:0")))
      fail_msg("without the store: %d %s", s, ht_last_error());
    if (with_store && s) fail_msg("%s", ht_last_error());
    if (with_store) assert_true(x->power_w[0] == 95 - 20);
    ht_coexec_destroy(x);
    if (st) ht_store_close(st);
  }
  unsetenv("HETUNE_POWERCAP_DIR");
  free(path);
  free(db);
}

static int cli(const char *args, char *out, size_t len) { return run_shell(NULL, args, out, len); }

static void test_cli(void **state) {
  (void)state;
  char *db = ht_strfmt("%s/test_coexec_cli.db", HT_BINARY_DIR);
  unlink(db);
  static char out[65536];
  char *args = ht_strfmt("coexec plan %sblur_split.json --size R=2001 --db %s", DATA, db);
  assert_int_equal(cli(args, out, sizeof out), 1); /* nothing measured yet */
  assert_non_null(strstr(out, "nothing predicts"));
  free(args);
  args = ht_strfmt("coexec bench %sblur_split.json --size R=2001 --size C=33 --repeat 3 --db %s", DATA, db);
  if (cli(args, out, sizeof out)) fail_msg("%s", out);
  assert_non_null(strstr(out, "results: match"));
  assert_non_null(strstr(out, "efficiency"));
  free(args);
  args = ht_strfmt("coexec plan %sblur_split.json --size R=2001 --size C=33 --db %s", DATA, db);
  if (cli(args, out, sizeof out)) fail_msg("%s", out);
  assert_non_null(strstr(out, "schedule static"));
  free(args);
  args = ht_strfmt("coexec run %sblur_split.json --calls 2 --options schedule=dynamic --db %s", DATA, db);
  if (cli(args, out, sizeof out)) fail_msg("%s", out);
  assert_non_null(strstr(out, "call 2:"));
  assert_non_null(strstr(out, "schedule dynamic"));
  free(args);
  args = ht_strfmt("coexec split %sblur_split.json", DATA);
  assert_int_equal(cli(args, out, sizeof out), 2);
  assert_non_null(strstr(out, "unknown subcommand 'split'"));
  free(args);
  args = ht_strfmt("coexec run %sblur_split.json --options replan=0 --db %s", DATA, db);
  assert_int_equal(cli(args, out, sizeof out), 2);
  assert_non_null(strstr(out, "replan 0"));
  free(args);
  free(db);
}

int main(void) {
  setenv("HETUNE_SIM", HT_SOURCE_DIR "/tests/data/sim/coexec.json", 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_split_errors),
      cmocka_unit_test(test_split_checks_at_call),
      cmocka_unit_test(test_split_matches_one_device),
      cmocka_unit_test(test_halo_split),
      cmocka_unit_test(test_plan_balances_simulated_devices),
      cmocka_unit_test(test_failed_device_rerun),
      cmocka_unit_test(test_plan_cache),
      cmocka_unit_test(test_c_and_opencl),
      cmocka_unit_test(test_energy_rule),
      cmocka_unit_test(test_energy_power_from_store),
      cmocka_unit_test(test_energy_from_device_power),
      cmocka_unit_test(test_example_files_load),
      cmocka_unit_test(test_cli),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
