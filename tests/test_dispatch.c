/* Per-call dispatch: signatures, files, choices on simulated devices with a crossover, the caches,
 * feedback (drift, bias, exploration's regret cap) and the call log across programs. */
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
#include <sys/wait.h>
#include <unistd.h>

#include "device/sim.h"
#include "dispatch/dispatch_internal.h"

#define EX HT_SOURCE_DIR "/examples/"
#define SPEC EX "dispatch/options_c.json"

static ht_spec *load(const char *path) {
  ht_spec *s = NULL;
  if (ht_spec_load(path, &s)) fail_msg("%s", ht_last_error());
  return s;
}

/* sim:0 slow CPU, sim:1 PCIe GPU (tests/data/sim/dispatch.json): times are modelled, exact. */
static ht_computation *offload(ht_spec *s, ht_store *st, const char *options) {
  ht_computation *c;
  assert_int_equal(ht_computation_create("offload", st, &c), HT_OK);
  if (ht_computation_add_variant(c, s, "sim:0", "THREADS_ALL=0", NULL) ||
      ht_computation_add_variant(c, s, "sim:1", "THREADS_ALL=0", NULL) ||
      (options && ht_computation_set_options(c, options)) || ht_computation_finish(c))
    fail_msg("%s", ht_last_error());
  return c;
}

/* n variants alike on one simulated device, their times told apart only by what a test feeds back. */
static ht_computation *alike(ht_spec *s, const char *name, int n, const char *options) {
  ht_computation *c;
  assert_int_equal(ht_computation_create(name, NULL, &c), HT_OK);
  for (int v = 0; v < n; v++) assert_int_equal(ht_computation_add_variant(c, s, "sim:0", "THREADS_ALL=0", NULL), HT_OK);
  assert_int_equal(ht_computation_set_options(c, options), HT_OK);
  assert_int_equal(ht_computation_finish(c), HT_OK);
  return c;
}

static double run_variant(ht_computation *c, int v, int64_t n) {
  ht_host_arg *args;
  ht_run_times t;
  if (ht_computation_make_args(c, &n, 3, &args) || ht_computation_run_variant(c, v, &n, args, &t))
    fail_msg("%s", ht_last_error());
  ht_computation_free_args(c, args);
  return t.kernel_s + t.h2d_s + t.d2h_s;
}

static int64_t size_at(int i) { return llround(pow(10, 2 + i * 0.25)); } /* 100 .. 10^6 */

/* Calibrated at every other size, the choice at the sizes between is the measured fastest. */
static void test_crossover(void **state) {
  (void)state;
  ht_spec *s = load(SPEC);
  ht_computation *c = offload(s, NULL, "explore=0");
  for (int i = 0; i <= 16; i += 2)
    for (int v = 0; v < 2; v++) run_variant(c, v, size_at(i));
  int wins[2] = {0, 0};
  for (int i = 1; i < 16; i += 2) {
    int64_t n = size_at(i);
    ht_decision d;
    assert_int_equal(ht_computation_decide(c, &n, &d), HT_OK);
    assert_int_equal(d.source, HT_SRC_HISTORY);
    double t0 = run_variant(c, 0, n), t1 = run_variant(c, 1, n);
    if (d.variant != (t1 < t0)) fail_msg("N=%lld: chose %d, times %g %g", (long long)n, d.variant, t0, t1);
    wins[t1 < t0]++;
  }
  assert_true(wins[0] > 0 && wins[1] > 0); /* a real crossover: each device wins somewhere */
  ht_computation_destroy(c);
  ht_spec_destroy(s);
}

/* The transfers of a device behind a link are part of what is compared: the GPU's 5 copies cost
 * 5 x 10 us plus bytes / 25 GB/s, which run on the host CPU does not pay. */
static void test_transfers_counted(void **state) {
  (void)state;
  ht_spec *s = load(SPEC);
  ht_computation *c = offload(s, NULL, NULL);
  int64_t n = 1000;
  double gpu = run_variant(c, 1, n);
  double copies = 5 * 1e-5 + 5 * 4.0 * (double)n / 2.5e10;
  double kernel = 5e-6 + fmax(60.0 * (double)n / 1e13, 20.0 * (double)n / 1e12); /* roofline + latency */
  if (fabs(gpu - (copies + kernel)) > 1e-9) fail_msg("gpu total %g, expected %g", gpu, copies + kernel);
  ht_computation_destroy(c);
  ht_spec_destroy(s);
}

static void test_cache_hit_and_invalidation(void **state) {
  (void)state;
  ht_spec *s = load(SPEC);
  ht_computation *c = offload(s, NULL, "explore=0");
  int64_t n = 5000;
  for (int k = 0; k < HTD_TRUSTED_CALLS; k++) run_variant(c, 0, n), run_variant(c, 1, n);
  ht_decision a, b;
  assert_int_equal(ht_computation_decide(c, &n, &a), HT_OK);
  assert_int_equal(a.source, HT_SRC_MEASURED);
  assert_int_equal(ht_computation_decide(c, &n, &b), HT_OK);
  assert_int_equal(b.source, HT_SRC_CACHED);
  assert_int_equal(b.variant, a.variant);
  /* the key changes with the size and with the bucket */
  int64_t m = 5001;
  assert_true(ht_computation_size_key(c, &n) != ht_computation_size_key(c, &m));
  ht_computation_destroy(c);
  c = offload(s, NULL, "bucket=log2");
  assert_true(ht_computation_size_key(c, &n) == ht_computation_size_key(c, &m));
  ht_computation_destroy(c);
  ht_spec_destroy(s);
}

/* The cache on its own: thousands of keys (so probe chains wrap and cross), a clear that leaves
 * nothing behind, keys put again after it, drops in the middle of chains, and the generation count
 * wrapping around. */
static void test_cache_clear_and_drop(void **state) {
  (void)state;
  htd_cache cache = {0};
  ht_decision d = {0};
  for (int round = 0; round < 3; round++) {
    if (round == 2) cache.gen = UINT32_MAX; /* the next clear wraps the generation to 0 */
    for (uint64_t k = 1; k <= 3000; k++) {
      d.variant = (int)(k % 7) + round;
      assert_int_equal(htd_cache_put(&cache, k * 0x10001, &d), HT_OK);
    }
    for (uint64_t k = 1; k <= 3000; k += 3) htd_cache_drop(&cache, k * 0x10001);
    for (uint64_t k = 1; k <= 3000; k++) {
      htd_slot *s = htd_cache_slot(&cache, k * 0x10001);
      if (k % 3 == 1) assert_null(s);
      else if (!s || s->d.variant != (int)(k % 7) + round) fail_msg("round %d: key %llu lost", round, (unsigned long long)k);
    }
    assert_int_equal(cache.used, 2000);
    htd_cache_clear(&cache);
    assert_int_equal(cache.used, 0);
    for (uint64_t k = 1; k <= 3000; k++) assert_null(htd_cache_slot(&cache, k * 0x10001));
    d.variant = 9;
    assert_int_equal(htd_cache_put(&cache, 2 * 0x10001, &d), HT_OK); /* in a slot an earlier generation held */
    assert_int_equal(htd_cache_slot(&cache, 2 * 0x10001)->d.variant, 9);
    assert_null(htd_cache_slot(&cache, 3 * 0x10001));
    htd_cache_drop(&cache, 2 * 0x10001);
    assert_int_equal(cache.used, 0);
  }
  htd_cache_free(&cache);
}

/* Scripted times for variant v at n, fed back as if measured. */
static void feed(ht_computation *c, int v, int64_t n, double seconds) {
  ht_decision d;
  if (ht_computation_decide(c, &n, &d)) fail_msg("%s", ht_last_error());
  ht_run_times t = {seconds, 0, 0, seconds};
  htd_feedback(c, v, &n, d.variant == v ? &d : NULL, &t);
}

/* A device that becomes 2x slower loses its calls within 10 calls, at every size. */
static void test_drift_flips_choice(void **state) {
  (void)state;
  ht_spec *s = load(SPEC);
  ht_computation *c = offload(s, NULL, "explore=0");
  int64_t n = 1000, other = 4000;
  for (int k = 0; k < 16; k++) feed(c, 0, n, 1.0e-3), feed(c, 1, n, 1.3e-3), feed(c, 0, other, 4e-3),
                                feed(c, 1, other, 5e-3);
  ht_decision d;
  assert_int_equal(ht_computation_decide(c, &n, &d), HT_OK);
  assert_int_equal(d.variant, 0);
  int flipped = 0;
  for (int call = 1; call <= 10 && !flipped; call++) {
    feed(c, 0, n, 2.0e-3); /* the device now runs at half speed */
    assert_int_equal(ht_computation_decide(c, &n, &d), HT_OK);
    flipped = d.variant == 1 ? call : 0;
  }
  if (!flipped) fail_msg("still variant 0 after 10 slower calls");
  /* the other size was rescaled with the device, without a call there */
  assert_int_equal(ht_computation_decide(c, &other, &d), HT_OK);
  assert_int_equal(d.variant, 1);
  ht_computation_destroy(c);
  ht_spec_destroy(s);
}

/* Exploration on (re-probes are exploration), but never of a close runner-up (regret_cap 1). */
#define REPROBES_ONLY "regret_cap=1"

/* A stall taken for a change of speed does not lock the variant out: it is re-probed and, fast
 * again, chosen again. With exploration off (explore=0) every call runs the selector's choice, and
 * the GPU keeps the calls. */
static void test_stall_reprobed(void **state) {
  (void)state;
  ht_spec *s = load(SPEC);
  for (int explore = 0; explore < 2; explore++) {
    ht_computation *c = offload(s, NULL, explore ? REPROBES_ONLY : "explore=0");
    int64_t n = 5000;
    for (int k = 0; k < 5; k++) run_variant(c, 0, n), run_variant(c, 1, n);
    ht_host_arg *args;
    assert_int_equal(ht_computation_make_args(c, &n, 3, &args), HT_OK);
    ht_decision d;
    assert_int_equal(ht_computation_run(c, &n, args, &d, NULL), HT_OK);
    assert_int_equal(d.variant, 0); /* the CPU wins at 5000 */
    ht_device *cpu = ht_exec_device(c->v[0].ex);
    assert_int_equal(ht_sim_set_speed(cpu, 1000), HT_OK); /* a stall: 1000x slower for a few calls */
    for (int k = 0; k < 5; k++) assert_int_equal(ht_computation_run(c, &n, args, &d, NULL), HT_OK);
    assert_int_equal(ht_sim_set_speed(cpu, 1), HT_OK);
    assert_int_equal(ht_computation_decide(c, &n, &d), HT_OK);
    assert_int_equal(d.variant, 1); /* drift moved it to the GPU */
    int back = 0;
    for (int k = 0; k < 2 * HTD_REPROBE && !back; k++) {
      assert_int_equal(ht_computation_run(c, &n, args, &d, NULL), HT_OK);
      back = d.variant == 0 && d.source == HT_SRC_EXPLORE;
    }
    assert_int_equal(back, explore); /* re-probed... */
    assert_int_equal(ht_computation_decide(c, &n, &d), HT_OK);
    assert_int_equal(d.variant, explore ? 0 : 1); /* ...and the CPU chosen again */
    ht_computation_free_args(c, args);
    ht_computation_destroy(c);
  }
  ht_spec_destroy(s);
}

/* Exploration runs the runner-up only when it is close and expected within the regret cap. */
static void test_exploration_regret_cap(void **state) {
  (void)state;
  ht_spec *s = load(SPEC);
  ht_computation *c = alike(s, "explore", 3, "explore=1,regret_cap=1.2,seed=5");
  int64_t n = 2000, m = 8000;
  for (int k = 0; k < 8; k++) { /* 0 and 1 close at n, 2 far; at m the runner-up is 1.5x away */
    double f = k % 2 ? 0.95 : 1.05; /* 5% noise: the bands of 0 and 1 overlap at n */
    ht_run_times t0 = {1.00e-3 * f, 0, 0, 0}, t1 = {1.05e-3 * f, 0, 0, 0}, t2 = {2e-3 * f, 0, 0, 0};
    ht_run_times u0 = {1.00e-3 * f, 0, 0, 0}, u1 = {1.5e-3 * f, 0, 0, 0};
    htd_feedback(c, 0, &n, NULL, &t0), htd_feedback(c, 1, &n, NULL, &t1), htd_feedback(c, 2, &n, NULL, &t2);
    htd_feedback(c, 0, &m, NULL, &u0), htd_feedback(c, 1, &m, NULL, &u1), htd_feedback(c, 2, &m, NULL, &t2);
  }
  int explored = 0;
  for (int k = 0; k < 400; k++) {
    ht_decision d;
    assert_int_equal(ht_computation_decide(c, &n, &d), HT_OK);
    assert_true(d.variant != 2);
    explored += d.source == HT_SRC_EXPLORE;
    assert_int_equal(ht_computation_decide(c, &m, &d), HT_OK);
    assert_int_equal(d.variant, 0); /* 1.5x away: never explored */
  }
  assert_true(explored > 0 && explored < 200); /* explored, less and less often */
  ht_computation_destroy(c);
  ht_spec_destroy(s);
}

/* Predictions that keep missing are corrected by the median ratio once three calls show it. */
static void test_bias_correction(void **state) {
  (void)state;
  ht_spec *s = load(SPEC);
  ht_computation *c = offload(s, NULL, "explore=0");
  for (int k = 0; k < 3; k++) feed(c, 0, 1000, 1e-3), feed(c, 0, 100000, 1e-1);
  int64_t mid = 10000;
  ht_variant_estimate e[2];
  assert_int_equal(ht_computation_estimate(c, &mid, e), HT_OK);
  assert_int_equal(e[0].source, HT_SRC_HISTORY);
  assert_true(fabs(e[0].total_s - 1e-2) < 1e-6); /* log-log between the two: linear here */
  assert_true(e[0].correction == 1);
  ht_computation_destroy(c);
  ht_spec_destroy(s);
}

static void test_rule_selector(void **state) {
  (void)state;
  ht_spec *s = load(SPEC);
  ht_computation *c = offload(s, NULL, "selector=rule,rule=N < 1000 ? 0 : 1");
  int64_t small = 999, big = 1000;
  ht_decision d;
  assert_int_equal(ht_computation_decide(c, &small, &d), HT_OK);
  assert_int_equal(d.variant, 0);
  assert_int_equal(d.source, HT_SRC_RULE);
  assert_int_equal(ht_computation_decide(c, &big, &d), HT_OK);
  assert_int_equal(d.variant, 1);
  ht_computation_destroy(c);
  assert_int_equal(ht_computation_create("bad", NULL, &c), HT_OK);
  assert_int_equal(ht_computation_add_variant(c, s, "sim:0", "THREADS_ALL=0", NULL), HT_OK);
  assert_int_equal(ht_computation_set_options(c, "selector=rule,rule=N > 5 ? 7 : 0"), HT_OK);
  assert_int_equal(ht_computation_finish(c), HT_OK);
  assert_int_equal(ht_computation_decide(c, &big, &d), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "gave variant 7"));
  ht_computation_destroy(c);
  ht_spec_destroy(s);
}

static void test_signature_mismatch(void **state) {
  (void)state;
  ht_spec *a = load(SPEC), *b = load(EX "blackscholes/blackscholes_c.json"), *v = load(EX "vadd/vadd_c.json");
  ht_computation *c;
  assert_int_equal(ht_computation_create("mix", NULL, &c), HT_OK);
  assert_int_equal(ht_computation_add_variant(c, a, "c", "THREADS_ALL=0", NULL), HT_OK);
  assert_int_equal(ht_computation_add_variant(c, v, "c", "best", NULL), HT_OK);
  assert_int_equal(ht_computation_finish(c), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "variant 1 (vadd_c)"));
  ht_computation_destroy(c);
  /* same arguments: blackscholes_c and options_c are one operation */
  assert_int_equal(ht_computation_create("same", NULL, &c), HT_OK);
  assert_int_equal(ht_computation_add_variant(c, a, "c", "THREADS_ALL=0", NULL), HT_OK);
  assert_int_equal(ht_computation_add_variant(c, b, "c", "NTHREADS=1,CHUNK=0,BLOCK=16", NULL), HT_OK);
  if (ht_computation_finish(c)) fail_msg("%s", ht_last_error());
  ht_computation_destroy(c);
  /* a config that is not one */
  assert_int_equal(ht_computation_create("bad", NULL, &c), HT_OK);
  assert_int_equal(ht_computation_add_variant(c, a, "c", "THREADS_ALL=7", NULL), HT_OK);
  assert_int_equal(ht_computation_finish(c), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "THREADS_ALL"));
  ht_computation_destroy(c);
  ht_spec_destroy(a);
  ht_spec_destroy(b);
  ht_spec_destroy(v);
}

static char *write_tmp(const char *name, const char *text) {
  char *path = ht_strfmt("%s/%s", HT_BINARY_DIR, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  return path;
}

static void expect_load_error(const char *text, const char *needle) {
  char *path = write_tmp("test_dispatch_comp.json", text);
  ht_computation *c = (ht_computation *)1;
  assert_int_not_equal(ht_computation_load(path, NULL, &c), HT_OK);
  assert_null(c);
  if (!strstr(ht_last_error(), needle)) fail_msg("expected '%s' in: %s", needle, ht_last_error());
  free(path);
}

static void test_file_errors(void **state) {
  (void)state;
  const char *v = "{\"spec\": \"" SPEC "\", \"device\": \"sim:0\", \"config\": \"THREADS_ALL=0\"}";
  char *text = ht_strfmt("{\"name\": \"x\", \"variants\": [%s], \"selectr\": \"history\"}", v);
  expect_load_error(text, "did you mean \"selector\"");
  free(text);
  text = ht_strfmt("{\"name\": \"x\", \"variants\": [%s], \"selector\": \"magic\"}", v);
  expect_load_error(text, "unknown selector 'magic'");
  free(text);
  text = ht_strfmt("{\"name\": \"x\", \"variants\": [%s], \"bucket\": \"log3\"}", v);
  expect_load_error(text, "bucket 'log3'");
  free(text);
  expect_load_error("{\"name\": \"x\", \"variants\": []}", "non-empty array");
  expect_load_error("{\"name\": \"x\", \"variants\": [{\"spec\": \"nope.json\", \"device\": \"c\"}]}", "nope.json");
  text = ht_strfmt("{\"name\": \"x\", \"variants\": [{\"spec\": \"" SPEC "\", \"device\": \"gpu:9\"}]}");
  expect_load_error(text, "gpu");
  free(text);
  expect_load_error("{\"name\": \"x\", \"variants\": [{\"device\": \"c\"}]}", "missing \"spec\"");
  expect_load_error("{\"name\": \"x\",", "test_dispatch_comp.json:1:");
  text = ht_strfmt("{\"name\": \"x\", \"variants\": [%s], \"feedback\": {\"window\": 0}}", v);
  expect_load_error(text, "window 0");
  free(text);
}

static void test_example_files_load(void **state) {
  (void)state;
  ht_computation *c;
  if (ht_computation_load(EX "dispatch/computations/cpu_threads.json", NULL, &c)) fail_msg("%s", ht_last_error());
  assert_int_equal(ht_computation_variant_count(c), 2);
  ht_computation_destroy(c);
}

/* The calls a program ran are in the store, and the next program decides from them. */
static void test_log_across_programs(void **state) {
  (void)state;
  char *db = ht_strfmt("%s/test_dispatch_log.db", HT_BINARY_DIR);
  unlink(db);
  ht_store *st;
  assert_int_equal(ht_store_open(db, &st), HT_OK);
  ht_spec *s = load(SPEC);
  ht_computation *c = offload(s, st, "explore=0");
  int64_t n = 30000;
  double t0 = 0, t1 = 0;
  for (int k = 0; k < HTD_TRUSTED_CALLS; k++) t0 = run_variant(c, 0, n), t1 = run_variant(c, 1, n);
  ht_computation_destroy(c); /* writes the log */
  c = offload(s, st, "explore=0");
  ht_decision d;
  assert_int_equal(ht_computation_decide(c, &n, &d), HT_OK);
  assert_int_equal(d.source, HT_SRC_MEASURED);
  assert_int_equal(d.variant, t1 < t0);
  assert_true(fabs(d.pred_total_s - fmin(t0, t1)) < 1e-12);
  ht_computation_destroy(c);
  ht_spec_destroy(s);
  ht_store_close(st);
  free(db);
}

static int64_t sum_calls;
static int add_calls(const ht_dispatch_record *r, void *ctx) {
  (*(int *)ctx)++;
  sum_calls += r->calls;
  return 0;
}

/* The calls the store's log of "offload" counts; *rows: in how many rows. */
static int64_t logged_calls(ht_store *st, int *rows) {
  sum_calls = 0;
  *rows = 0;
  assert_int_equal(ht_store_each_dispatch_log(st, "offload", 0, add_calls, rows), HT_OK);
  return sum_calls;
}

/* Calls of a settled decision shorter than sample_below_us are fed back in samples, at each size
 * on its own (calls here alternate between two sizes); every call is still counted in the log, and
 * a device that slows down still loses its calls. With sample_below_us=0 every call is fed back. */
static void test_sampled_feedback(void **state) {
  (void)state;
  ht_spec *s = load(SPEC);
  const char *options[] = {"explore=0", "explore=0,sample_below_us=0"};
  for (int o = 0; o < 2; o++) {
    char *db = ht_strfmt("%s/test_dispatch_sampled%d.db", HT_BINARY_DIR, o);
    unlink(db);
    ht_store *st;
    assert_int_equal(ht_store_open(db, &st), HT_OK);
    ht_computation *c = offload(s, st, options[o]);
    int64_t n[2] = {100, 110}, calls = 400;
    ht_host_arg *args;
    ht_decision d;
    if (ht_computation_make_args(c, &n[1], 5, &args)) fail_msg("%s", ht_last_error());
    for (int call = 0; call < calls; call++)
      if (ht_computation_run(c, &n[call % 2], args, &d, NULL)) fail_msg("%s", ht_last_error());
    int chosen = d.variant, most_every = 1;
    const htd_variant *v = &c->v[chosen];
    for (int i = 0; i < 2; i++) {
      uint64_t key = ht_computation_size_key(c, &n[i]);
      const htd_slot *slot = htd_cache_slot(&c->cache, key);
      assert_non_null(slot);
      assert_int_equal(slot->d.variant, chosen);
      double median = htd_history_find(&v->hist, key)->median;
      assert_true(median < 16e-6); /* the sim device's modelled call: short enough to be sampled */
      assert_int_equal(slot->sample_every, o == 0 ? (int)ceil(16e-6 / median) : 1);
      if (o == 0) assert_true(slot->sample_every > 1);
      most_every = slot->sample_every > most_every ? slot->sample_every : most_every;
    }
    int moved = 0;
    assert_int_equal(ht_sim_set_speed(ht_exec_device(v->ex), 50.0), HT_OK);
    for (int call = 1; call <= 400 && !moved; call++) {
      if (ht_computation_run(c, &n[call % 2], args, &d, NULL)) fail_msg("%s", ht_last_error());
      moved = d.variant != chosen ? call : 0;
    }
    if (!moved) fail_msg("%s: still variant %d after 400 calls 50x slower", options[o], chosen);
    int most = 2 * (3 * most_every + 1);
    if (moved > most) fail_msg("%s: the choice moved after %d calls (at most %d)", options[o], moved, most);
    calls += moved;
    ht_computation_free_args(c, args);
    ht_computation_destroy(c); /* writes the log */
    int rows;
    assert_int_equal(logged_calls(st, &rows), calls);
    /* the two sizes' calls group in rows of their own, not a row per call */
    if (rows > calls / 16) fail_msg("%s: %lld calls logged in %d rows", options[o], (long long)calls, rows);
    ht_store_close(st);
    free(db);
  }
  /* Without a store (no log line to match), the calls in between are not fed back: each size's
   * newest times advance by one sample in `every` calls. */
  ht_computation *c = offload(s, NULL, "explore=0");
  int64_t n[2] = {100, 110};
  ht_host_arg *args;
  ht_decision d;
  if (ht_computation_make_args(c, &n[1], 5, &args)) fail_msg("%s", ht_last_error());
  for (int call = 0; call < 400; call++)
    if (ht_computation_run(c, &n[call % 2], args, &d, NULL)) fail_msg("%s", ht_last_error());
  const htd_point *p = htd_history_find(&c->v[d.variant].hist, ht_computation_size_key(c, &n[0]));
  const htd_slot *slot = htd_cache_slot(&c->cache, ht_computation_size_key(c, &n[0]));
  int before = p->next;
  for (int call = 0; call < 2 * slot->sample_every; call++)
    if (ht_computation_run(c, &n[call % 2], args, &d, NULL)) fail_msg("%s", ht_last_error());
  int fed = (p->next - before + c->window) % c->window;
  if (fed > 1) fail_msg("%d calls at N=100, one in %d to feed back: %d fed back", slot->sample_every,
                        slot->sample_every, fed);
  ht_computation_free_args(c, args);
  ht_computation_destroy(c);
  ht_spec_destroy(s);
}

/* Calls at one size repeat the standing decision without deciding again, yet still see what
 * changes it: a device slowing down, a faster variant recorded, a static cache set; every call is
 * logged. */
static void test_repeated_calls(void **state) {
  (void)state;
  ht_spec *s = load(SPEC);
  char *db = ht_strfmt("%s/test_dispatch_repeat.db", HT_BINARY_DIR);
  unlink(db);
  ht_store *st;
  assert_int_equal(ht_store_open(db, &st), HT_OK);
  ht_computation *c = offload(s, st, REPROBES_ONLY);
  int64_t n = 100, calls = 0;
  ht_host_arg *args;
  ht_decision d;
  if (ht_computation_make_args(c, &n, 5, &args)) fail_msg("%s", ht_last_error());
  for (; calls < 300; calls++)
    if (ht_computation_run(c, &n, args, &d, NULL)) fail_msg("%s", ht_last_error());
  int chosen = d.variant;
  const htd_slot *slot = htd_cache_slot(&c->cache, ht_computation_size_key(c, &n));
  assert_non_null(slot);
  assert_true(slot->sample_every > 1);
  assert_true(c->repeat.armed); /* the calls repeat the decision */
  assert_int_equal(d.source, HT_SRC_CACHED);
  assert_int_equal(d.variant, slot->d.variant);
  assert_string_equal(d.config, slot->d.config);
  /* a slowdown is seen as soon as with calls at changing sizes: the repeats count towards sampling */
  int every = slot->sample_every, moved = 0;
  assert_int_equal(ht_sim_set_speed(ht_exec_device(c->v[chosen].ex), 50.0), HT_OK);
  for (int call = 1; call <= 400 && !moved; call++, calls++) {
    if (ht_computation_run(c, &n, args, &d, NULL)) fail_msg("%s", ht_last_error());
    moved = d.variant != chosen ? call : 0;
  }
  if (!moved || moved > 3 * every + 1) fail_msg("the choice moved after %d calls (at most %d)", moved, 3 * every + 1);
  assert_int_equal(ht_sim_set_speed(ht_exec_device(c->v[chosen].ex), 1.0), HT_OK);
  /* settled again, the other variant recorded as much faster: the next call takes it */
  for (int call = 0; call < 100; call++, calls++)
    if (ht_computation_run(c, &n, args, &d, NULL)) fail_msg("%s", ht_last_error());
  int now = d.variant;
  assert_true(c->repeat.armed);
  ht_run_times fast = {1e-9, 0, 0, 1e-9};
  for (int k = 0; k < 16; k++) assert_int_equal(ht_computation_record(c, 1 - now, &n, &fast, 0), HT_OK);
  calls += 16; /* recorded times are logged as calls */
  if (ht_computation_run(c, &n, args, &d, NULL)) fail_msg("%s", ht_last_error());
  calls++;
  assert_int_equal(d.variant, 1 - now);
  /* decisions at many other sizes move the cache's slots (it grows): the next call is still right */
  for (int call = 0; call < 50; call++, calls++)
    if (ht_computation_run(c, &n, args, &d, NULL)) fail_msg("%s", ht_last_error());
  assert_true(c->repeat.armed);
  ht_decision other;
  for (int64_t m = 1000; m < 1200; m++) assert_int_equal(ht_computation_decide(c, &m, &other), HT_OK);
  assert_int_equal(ht_computation_decide(c, &n, &other), HT_OK);
  if (ht_computation_run(c, &n, args, &d, NULL)) fail_msg("%s", ht_last_error());
  calls++;
  assert_int_equal(d.variant, other.variant);
  /* a static cache set between two calls answers the next one */
  for (int call = 0; call < 50; call++, calls++)
    if (ht_computation_run(c, &n, args, &d, NULL)) fail_msg("%s", ht_last_error());
  ht_static_entry e = {ht_computation_size_key(c, &n), 1 - d.variant, "THREADS_ALL=0", 1000, 'M'};
  assert_int_equal(ht_computation_set_static_cache(c, &e, 1), HT_OK);
  if (ht_computation_run(c, &n, args, &d, NULL)) fail_msg("%s", ht_last_error());
  calls++;
  assert_int_equal(d.source, HT_SRC_STATIC);
  assert_int_equal(d.variant, e.variant);
  ht_computation_free_args(c, args);
  ht_computation_destroy(c); /* writes the log */
  int rows;
  assert_int_equal(logged_calls(st, &rows), calls);
  ht_store_close(st);
  free(db);
  ht_spec_destroy(s);
}

/* A burst of slow calls mixed with normal ones is taken for a change of speed; when the calls
 * after it are normal again, the speed changes back: the variant's other sizes are not left
 * rescaled. */
static void test_passing_stall_drifts_back(void **state) {
  (void)state;
  ht_spec *s = load(SPEC);
  ht_computation *c = offload(s, NULL, "explore=0");
  int64_t n = 1000, other = 4000;
  for (int k = 0; k < 16; k++) feed(c, 0, n, 1.0e-3), feed(c, 1, n, 1.3e-3), feed(c, 0, other, 4e-3);
  const double burst[] = {2e-3, 2e-3, 1e-3, 1e-3, 2e-3}; /* 3 of 5 twice as slow: a drift */
  for (int k = 0; k < 5; k++) feed(c, 0, n, burst[k]);
  assert_true(c->v[0].drift_f > 1.5);
  for (int k = 0; k < 10; k++) feed(c, 0, n, 1.0e-3);
  if (fabs(c->v[0].drift_f - 1) > 0.1) fail_msg("drift factor %g after the burst passed", c->v[0].drift_f);
  double t_other = htd_history_find(&c->v[0].hist, ht_computation_size_key(c, &other))->median;
  if (fabs(t_other / 4e-3 - 1) > 0.1) fail_msg("the other size's median is %g s, measured 4e-3 s", t_other);
  assert_int_equal(c->n_drifted, 0);
  ht_computation_destroy(c);
  ht_spec_destroy(s);
}

/* A device's change of speed is every kernel's on it: the other variant of the same device is
 * rescaled with the one that ran, the variant of another device is not. Before, the choice moved
 * to the other variant of the slowed device, as slow but not yet run. */
static void test_drift_moves_the_whole_device(void **state) {
  (void)state;
  ht_spec *s = load(SPEC);
  ht_computation *c;
  assert_int_equal(ht_computation_create("device", NULL, &c), HT_OK);
  if (ht_computation_add_variant(c, s, "sim:0", "THREADS_ALL=0", NULL) ||
      ht_computation_add_variant(c, s, "sim:0", "THREADS_ALL=1", NULL) ||
      ht_computation_add_variant(c, s, "sim:1", "THREADS_ALL=0", NULL) || ht_computation_set_options(c, "explore=0") ||
      ht_computation_finish(c))
    fail_msg("%s", ht_last_error());
  int64_t n = 1000;
  for (int k = 0; k < 16; k++) feed(c, 0, n, 1.0e-3), feed(c, 1, n, 1.1e-3), feed(c, 2, n, 1.5e-3);
  for (int k = 0; k < 5; k++) feed(c, 0, n, 2.0e-3); /* sim:0 now runs at half speed */
  if (fabs(c->v[0].drift_f - 2) > 0.01 || fabs(c->v[1].drift_f - 2) > 0.01 || c->v[2].drift_f != 1)
    fail_msg("drift factors %g, %g (same device), %g (another)", c->v[0].drift_f, c->v[1].drift_f, c->v[2].drift_f);
  ht_decision d;
  assert_int_equal(ht_computation_decide(c, &n, &d), HT_OK);
  assert_int_equal(d.variant, 2); /* 1.5 ms on sim:1 against 2.2 ms for sim:0's other variant now */
  ht_computation_destroy(c);
  ht_spec_destroy(s);
}

/* A variant's slow first call (threads started, pages touched) does not keep it from ever running
 * again: it is run until its time there rests on HTD_TRUSTED_CALLS calls, and then wins. */
static void test_slow_first_call_not_trusted(void **state) {
  (void)state;
  ht_spec *s = load(SPEC);
  ht_computation *c = offload(s, NULL, "explore=0");
  int64_t n = 1000;
  for (int k = 0; k < HTD_TRUSTED_CALLS; k++) feed(c, 0, n, 1.0e-3);
  feed(c, 1, n, 50e-3); /* the first call, fifty times the later ones */
  ht_decision d;
  for (int k = 1; k < HTD_TRUSTED_CALLS; k++) {
    assert_int_equal(ht_computation_decide(c, &n, &d), HT_OK);
    assert_int_equal(d.variant, 1);
    assert_int_equal(d.source, HT_SRC_EXPLORE);
    feed(c, 1, n, 0.5e-3);
  }
  assert_int_equal(ht_computation_decide(c, &n, &d), HT_OK);
  assert_int_equal(d.variant, 1);
  assert_int_equal(d.source, HT_SRC_MEASURED);
  ht_computation_destroy(c);
  ht_spec_destroy(s);
}

/* Calls of ht_computation_run at n; returns how many ran variant v, and the decision of the last. */
static int calls_of(ht_computation *c, int64_t n, int calls, int v, ht_decision *last) {
  ht_host_arg *args;
  if (ht_computation_make_args(c, &n, 3, &args)) fail_msg("%s", ht_last_error());
  int ran = 0;
  for (int k = 0; k < calls; k++) {
    if (ht_computation_run(c, &n, args, last, NULL)) fail_msg("%s", ht_last_error());
    ran += last->variant == v;
  }
  ht_computation_free_args(c, args);
  return ran;
}

/* The GPU is 1.38x faster at 15,000 (67 us against 93 us), but its first trusted calls came in a
 * slow phase (1.6x its time): without re-probes it never runs again; with them, a re-probe (two
 * calls) beats the CPU, its calls start anew, and it wins from then on (the CPU, now the loser,
 * re-probed). */
static void test_loser_reprobed(void **state) {
  (void)state;
  ht_spec *s = load(SPEC);
  int64_t n = 15000;
  ht_computation *ref = offload(s, NULL, NULL);
  double gpu = run_variant(ref, 1, n), cpu = run_variant(ref, 0, n);
  assert_true(gpu < cpu && 1.6 * gpu > cpu);
  ht_computation_destroy(ref);
  for (int explore = 0; explore < 2; explore++) {
    ht_computation *c = offload(s, NULL, explore ? NULL : "explore=0");
    ht_run_times slow = {1.6 * gpu, 0, 0, 1.6 * gpu};
    for (int k = 0; k < HTD_TRUSTED_CALLS; k++) {
      run_variant(c, 0, n);
      assert_int_equal(ht_computation_record(c, 1, &n, &slow, 0), HT_OK);
    }
    ht_decision d;
    int on_gpu = calls_of(c, n, HTD_REPROBE_CALLS * (HTD_REPROBE + 1) + 2 * HTD_TRUSTED_CALLS, 1, &d);
    if (!explore) assert_int_equal(on_gpu, 0); /* locked out */
    else assert_true(on_gpu >= HTD_REPROBE_CALLS + HTD_TRUSTED_CALLS - 1); /* the re-probe, then anew */
    on_gpu = calls_of(c, n, 20, 1, &d);
    if (!explore) assert_int_equal(on_gpu, 0);
    else if (on_gpu < 19) fail_msg("the GPU ran %d of the next 20 calls (the CPU, now the loser: one re-probe)", on_gpu);
    assert_int_equal(d.variant, explore);
    ht_computation_destroy(c);
  }
  ht_spec_destroy(s);
}

/* A loser that really is slower costs two calls in a growing interval, longer the slower it is:
 * 1.79x slower at 5,000, it was re-probed after 32, 96, 224, 480, 992 and 2,016 calls (12 calls
 * of 3,000); 9.2x slower at 500, after 262, 786 and 1,836 calls (6): 0.3% and 1.6% of the time
 * spent, the first re-probe a 16th of the time before it and each later one half as much. */
static void test_loser_reprobes_bounded(void **state) {
  (void)state;
  ht_spec *s = load(SPEC);
  const int64_t sizes[] = {5000, 500};
  const int expected[] = {12, 6};
  for (int i = 0; i < 2; i++) {
    ht_computation *c = offload(s, NULL, NULL);
    int64_t n = sizes[i];
    double cpu = 0, gpu = 0;
    for (int k = 0; k < HTD_TRUSTED_CALLS; k++) cpu = run_variant(c, 0, n), gpu = run_variant(c, 1, n);
    ht_decision d;
    int on_gpu = calls_of(c, n, 3000, 1, &d);
    if (on_gpu != expected[i]) fail_msg("N=%lld: the slower GPU ran %d of 3000 calls, not %d", (long long)n, on_gpu, expected[i]);
    double regret = on_gpu * (gpu - cpu) / (3000 * cpu);
    if (regret > 0.02) fail_msg("N=%lld: re-probes cost %.2f%% of the time", (long long)n, 100 * regret);
    assert_int_equal(d.variant, 0);
    ht_computation_destroy(c);
  }
  ht_spec_destroy(s);
}

/* A size's first calls are no speed to compare with. Calibrated size after size (as `dispatch
 * bench` does), each size's first call slow (its pages touched for the first time), the second and
 * third calls set against one or two samples looked like a device twice as fast, and the variant's
 * other sizes were rescaled by half. */
static void test_new_sizes_do_not_drift(void **state) {
  (void)state;
  ht_spec *s = load(SPEC);
  ht_computation *c = offload(s, NULL, "explore=0");
  int64_t n = 1000;
  ht_run_times t = {1e-3, 0, 0, 1e-3};
  for (int k = 0; k < 16; k++) assert_int_equal(ht_computation_record(c, 0, &n, &t, 0), HT_OK);
  for (int64_t size = 2000; size <= 4000; size *= 2) {
    const double calls[] = {4, 2, 2, 2}; /* the first one slow */
    for (int k = 0; k < 4; k++) {
      double x = calls[k] * 1e-3 * (double)size / 2000;
      t = (ht_run_times){x, 0, 0, x};
      assert_int_equal(ht_computation_record(c, 0, &size, &t, 0), HT_OK);
    }
  }
  if (fabs(c->v[0].drift_f - 1) > 0.01) fail_msg("drift factor %g after calibrating two sizes", c->v[0].drift_f);
  double t_first = htd_history_find(&c->v[0].hist, ht_computation_size_key(c, &n))->median;
  if (fabs(t_first / 1e-3 - 1) > 0.01) fail_msg("N=1000's median is %g s, measured 1e-3 s", t_first);
  ht_computation_destroy(c);
  ht_spec_destroy(s);
}

/* Between two measured sizes a variant's time follows the line through both, however steep: 16
 * threads measured at 7.6 us for 1,000 options and at 3.8 ms for 4,361 (an H200's host, OpenMP's
 * threads held up), against a GPU at 51 and 74 us. Judged from its left neighbour alone (the slope
 * capped as beyond the measured sizes) the CPU looked 23 us at 2,088 and was chosen; it took
 * 5.8 ms there. Beyond the measured sizes the slope stays capped. */
static void test_interpolation_between_neighbours(void **state) {
  (void)state;
  ht_spec *s = load(SPEC);
  ht_computation *c = alike(s, "steep", 2, "explore=0");
  int64_t lo = 1000, hi = 4361, mid = 2088, beyond = 2 * 4361;
  const double t[2][2] = {{7.6e-6, 3.8e-3}, {51e-6, 74e-6}}; /* [variant][lo, hi] */
  for (int k = 0; k < 5; k++)
    for (int v = 0; v < 2; v++) {
      ht_run_times a = {t[v][0], 0, 0, t[v][0]}, b = {t[v][1], 0, 0, t[v][1]};
      assert_int_equal(ht_computation_record(c, v, &lo, &a, 0), HT_OK);
      assert_int_equal(ht_computation_record(c, v, &hi, &b, 0), HT_OK);
    }
  ht_variant_estimate e[2];
  assert_int_equal(ht_computation_estimate(c, &mid, e), HT_OK);
  if (!(e[0].total_s > t[1][1] && e[0].total_s < t[0][1]))
    fail_msg("16 threads at 2088: %g s, expected between the GPU's 74 us and its own 3.8 ms", e[0].total_s);
  ht_decision d;
  assert_int_equal(ht_computation_decide(c, &mid, &d), HT_OK);
  assert_int_equal(d.variant, 1);
  assert_int_equal(ht_computation_estimate(c, &beyond, e), HT_OK);
  if (!(e[0].total_s <= t[0][1] * pow(2, 1.5) * (1 + 1e-9))) fail_msg("beyond 4361: %g s", e[0].total_s);
  ht_computation_destroy(c);
  ht_spec_destroy(s);
}

/* A tuning run's time (the kernel alone) stored for (spec, device, N, config). */
static void store_eval(ht_store *st, const ht_spec *s, const char *device, int64_t n, const char *config, double t) {
  ht_exec *ex;
  if (ht_exec_open(device, &ex)) fail_msg("%s", ht_last_error());
  int64_t dev_id, kernel_id, problem_id;
  char problem[64];
  snprintf(problem, sizeof problem, "N=%lld", (long long)n);
  ht_result r;
  ht_result_init(&r);
  r.status = HT_EVAL_OK;
  r.time_s = t;
  ht_eval_key k = {0, 0, 0, config, "{}"};
  if (ht_store_put_device(st, &ht_exec_device(ex)->info, &dev_id) ||
      ht_store_put_kernel(st, s->name, "c", s->source_hash, s->path, "{}", &kernel_id) ||
      ht_store_put_problem(st, kernel_id, problem, &problem_id))
    fail_msg("%s", ht_last_error());
  k.kernel_id = kernel_id, k.device_id = dev_id, k.problem_id = problem_id;
  if (ht_store_put_eval(st, 0, &k, &r, NULL)) fail_msg("%s", ht_last_error());
  ht_exec_close(ex);
}

/* Tuning results count as measurements of the kernel; a device behind a link gets its copies
 * added, from its transfer table, measured once and stored. */
static void test_tuned_times_get_copies(void **state) {
  (void)state;
  char *db = ht_strfmt("%s/test_dispatch_tuned.db", HT_BINARY_DIR);
  unlink(db);
  ht_store *st;
  assert_int_equal(ht_store_open(db, &st), HT_OK);
  ht_spec *s = load(SPEC);
  store_eval(st, s, "sim:1", 100000, "THREADS_ALL=0", 1e-3);
  store_eval(st, s, "sim:0", 100000, "THREADS_ALL=0", 2e-3);
  ht_computation *c = offload(s, st, "explore=0");
  int64_t n = 100000;
  ht_variant_estimate e[2];
  assert_int_equal(ht_computation_estimate(c, &n, e), HT_OK);
  assert_int_equal(e[0].source, HT_SRC_MEASURED);
  assert_true(fabs(e[0].total_s - 2e-3) < 1e-12); /* the host CPU copies nothing */
  double copies = 5 * 1e-5 + 5 * 4.0 * (double)n / 2.5e10;
  if (fabs(e[1].total_s - (1e-3 + copies)) > 0.05 * copies) fail_msg("gpu %g, expected %g", e[1].total_s, 1e-3 + copies);
  ht_computation_destroy(c);
  ht_exec *ex;
  ht_transfer_table t;
  int found = 0;
  assert_int_equal(ht_exec_open("sim:1", &ex), HT_OK);
  assert_int_equal(ht_store_get_transfers(st, &ht_exec_device(ex)->info, &t, &found), HT_OK);
  assert_true(found); /* measured once, kept for the next program */
  ht_exec_close(ex);
  ht_spec_destroy(s);
  ht_store_close(st);
  free(db);
}

/* A store holding only a model of options_c on sim:0 (made-up times at N = 10^3 .. 10^6, all
 * threads 4x faster), fitted in a store of tuning runs that is then dropped, so no size is
 * measured; provenance (may be NULL) is stored with the model. */
static ht_store *model_only_store(const ht_spec *s, const char *name, const char *provenance) {
  char *runs = ht_strfmt("%s/test_dispatch_%s_runs.db", HT_BINARY_DIR, name);
  char *db = ht_strfmt("%s/test_dispatch_%s.db", HT_BINARY_DIR, name);
  unlink(runs);
  unlink(db);
  ht_store *st;
  assert_int_equal(ht_store_open(runs, &st), HT_OK);
  for (int64_t n = 1000; n <= 1000000; n *= 10)
    store_eval(st, s, "sim:0", n, "THREADS_ALL=0", 4e-9 * (double)n), store_eval(st, s, "sim:0", n, "THREADS_ALL=1", 1e-9 * (double)n);
  ht_exec *ex;
  ht_feature_set *fs;
  ht_dataset *d;
  ht_model *m;
  ht_buf blob = {0};
  if (ht_exec_open("sim:0", &ex) || ht_features_create(s, &ht_exec_device(ex)->info, &fs) ||
      ht_dataset_from_store(fs, st, NULL, &d) || ht_model_fit("knn", d, "k=1", 1, &m) || ht_model_save(m, &blob))
    fail_msg("%s", ht_last_error());
  ht_model_record rec = {.name = name, .kind = "knn", .kernel_name = s->name, .source_hash = s->source_hash,
                         .device_id = ht_exec_device(ex)->info.id, .n_rows = d->n_rows, .blob = blob.data,
                         .blob_len = blob.len, .provenance_json = provenance};
  ht_store_close(st);
  assert_int_equal(ht_store_open(db, &st), HT_OK);
  assert_int_equal(ht_store_put_model(st, &rec, NULL), HT_OK);
  ht_model_destroy(m);
  ht_dataset_destroy(d);
  ht_features_destroy(fs);
  ht_buf_free(&blob);
  ht_exec_close(ex);
  free(runs);
  free(db);
  return st;
}

/* A "best" variant with nothing tuned at its size and a stored model runs the model's fastest
 * config; the model answers for its kernel time where nothing was measured. */
static void test_model_best_config(void **state) {
  (void)state;
  ht_spec *s = load(SPEC);
  ht_store *st = model_only_store(s, "model", NULL);
  ht_computation *c;
  assert_int_equal(ht_computation_create("model", st, &c), HT_OK);
  assert_int_equal(ht_computation_add_variant(c, s, "sim:0", "best", NULL), HT_OK);
  assert_int_equal(ht_computation_set_options(c, "selector=model"), HT_OK);
  if (ht_computation_finish(c)) fail_msg("%s", ht_last_error());
  int64_t n = 50000;
  ht_decision dec;
  assert_int_equal(ht_computation_decide(c, &n, &dec), HT_OK);
  assert_string_equal(dec.config, "THREADS_ALL=1");
  assert_int_equal(dec.source, HT_SRC_MODEL);
  ht_computation_destroy(c);
  ht_spec_destroy(s);
  ht_store_close(st);
}

/* The exported header compiles on its own and finds the same decisions as the computation. */
static void test_static_cache_header(void **state) {
  (void)state;
  ht_spec *s = load(SPEC);
  ht_computation *c = offload(s, NULL, "explore=0,bucket=log2");
  int64_t sizes[] = {300, 3000, 30000, 300000};
  for (int i = 0; i < 4; i++)
    for (int k = 0; k < HTD_TRUSTED_CALLS; k++) run_variant(c, 0, sizes[i]), run_variant(c, 1, sizes[i]);
  char *h = ht_strfmt("%s/test_dispatch_cache.h", HT_BINARY_DIR);
  FILE *f = fopen(h, "w");
  assert_int_equal(ht_computation_export_cache(c, NULL, 0, "offload", f), HT_OK);
  fclose(f);
  char *prog = ht_strfmt(
      "#include <stdio.h>\n#include \"%s\"\nint main(void) {\n"
      "  long long n[] = {300, 3000, 30000, 300000, 77};\n"
      "  for (int i = 0; i < 5; i++) { int64_t s = n[i]; const offload_entry *e = offload_lookup(&s);\n"
      "    printf(\"%%d %%s %%llx\\n\", e ? e->variant : -1, e ? e->config : \"-\", (unsigned long long)offload_key(&s)); }\n"
      "  return 0; }\n", h);
  char *src = write_tmp("test_dispatch_cache.c", prog);
  char *bin = ht_strfmt("%s/test_dispatch_cache", HT_BINARY_DIR);
  char *cmd = ht_strfmt("cc -std=c11 -Wall -Werror -o %s %s && %s", bin, src, bin);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  long long n[] = {300, 3000, 30000, 300000, 77};
  for (int i = 0; i < 5; i++) {
    int variant;
    char config[64];
    unsigned long long key;
    if (fscanf(p, "%d %63s %llx", &variant, config, &key) != 3) fail_msg("the header's program printed too little");
    int64_t sz = n[i];
    assert_true(key == ht_computation_size_key(c, &sz));
    ht_decision d;
    assert_int_equal(ht_computation_decide(c, &sz, &d), HT_OK);
    if (i < 4) assert_int_equal(variant, d.variant), assert_string_equal(config, d.config);
    else assert_int_equal(variant, -1); /* a size never measured is not in the cache */
  }
  assert_int_equal(pclose(p), 0);
  free(h), free(prog), free(src), free(bin), free(cmd);
  ht_computation_destroy(c);
  ht_spec_destroy(s);
}

static void test_static_cache_used_first(void **state) {
  (void)state;
  ht_spec *s = load(SPEC);
  ht_computation *c = offload(s, NULL, "explore=0");
  int64_t n = 100;
  ht_static_entry e[1] = {{ht_computation_size_key(c, &n), 1, "THREADS_ALL=0", 42, 'M'}};
  assert_int_equal(ht_computation_set_static_cache(c, e, 1), HT_OK);
  ht_decision d;
  assert_int_equal(ht_computation_decide(c, &n, &d), HT_OK);
  assert_int_equal(d.source, HT_SRC_STATIC);
  assert_int_equal(d.variant, 1);
  ht_static_entry bad[2] = {{5, 0, "", 1, 'M'}, {4, 0, "", 1, 'M'}};
  assert_int_equal(ht_computation_set_static_cache(c, bad, 2), HT_ERR_INVALID);
  ht_computation_destroy(c);
  ht_spec_destroy(s);
}

/* The command line: decide, bench, explain, export-cache on the two simulated devices, and usage errors. */
static int cli(const char *args, char *out, size_t len) { return run_shell(NULL, args, out, len); }

static int occurrences(const char *text, const char *what) {
  int n = 0;
  for (const char *s = strstr(text, what); s; s = strstr(s + 1, what)) n++;
  return n;
}

static void test_cli(void **state) {
  (void)state;
  char *comp = ht_strfmt("{\"name\": \"cli\", \"variants\": [{\"spec\": \"%s\", \"device\": \"sim:0\", \"config\": "
                         "\"THREADS_ALL=0\"}, {\"spec\": \"%s\", \"device\": \"sim:1\", \"config\": \"THREADS_ALL=0\"}]}",
                         SPEC, SPEC);
  char *path = write_tmp("test_dispatch_cli.json", comp);
  char *db = ht_strfmt("%s/test_dispatch_cli.db", HT_BINARY_DIR);
  unlink(db);
  static char out[65536];
  char *args = ht_strfmt("dispatch bench %s --sizes N=100:1000000 --points 9 --repeat %d --db %s", path,
                         HTD_TRUSTED_CALLS, db); /* enough calls that decide at a measured size trusts them */
  if (cli(args, out, sizeof out)) fail_msg("%s", out);
  assert_non_null(strstr(out, "selector:                          accuracy 100.0% (4 of 4)"));
  assert_int_equal(occurrences(out, " history\n"), 4); /* each decided between measured sizes, none run before */
  free(args);
  args = ht_strfmt("dispatch decide %s --size N=1000000 --db %s", path, db);
  assert_int_equal(cli(args, out, sizeof out), 0);
  assert_non_null(strstr(out, "variant 1, options_c THREADS_ALL=0 on sim:1")); /* the GPU at 10^6 */
  free(args);
  args = ht_strfmt("explain %s --size N=100 --db %s", path, db);
  assert_int_equal(cli(args, out, sizeof out), 0);
  assert_non_null(strstr(out, "*0 options_c THREADS_ALL=0 on sim:0")); /* the CPU at 100 */
  assert_non_null(strstr(out, "from measured"));
  free(args);
  char *h = ht_strfmt("%s/test_dispatch_cli.h", HT_BINARY_DIR);
  args = ht_strfmt("dispatch export-cache %s --output %s --symbol cli_cache --db %s", path, h, db);
  assert_int_equal(cli(args, out, sizeof out), 0);
  assert_int_equal(access(h, R_OK), 0);
  free(args);
  args = ht_strfmt("dispatch frobnicate %s", path);
  assert_int_equal(cli(args, out, sizeof out), 2);
  assert_non_null(strstr(out, "unknown subcommand 'frobnicate'"));
  free(args);
  args = ht_strfmt("dispatch bench %s --sizes M=1:10 --db %s", path, db);
  assert_int_equal(cli(args, out, sizeof out), 2);
  assert_non_null(strstr(out, "no size 'M'"));
  free(args);
  free(h), free(db), free(path), free(comp);
}

/* The two configs of options_c on sim:0, chosen by the model alone. */
static ht_computation *two_configs_by_model(const ht_spec *s, const char *provenance, ht_store **st) {
  *st = model_only_store(s, "bands", provenance);
  ht_computation *c;
  assert_int_equal(ht_computation_create("bands", *st, &c), HT_OK);
  assert_int_equal(ht_computation_add_variant(c, s, "sim:0", "THREADS_ALL=0", NULL), HT_OK);
  assert_int_equal(ht_computation_add_variant(c, s, "sim:0", "THREADS_ALL=1", NULL), HT_OK);
  assert_int_equal(ht_computation_set_options(c, "selector=model,explore=0"), HT_OK);
  if (ht_computation_finish(c)) fail_msg("%s", ht_last_error());
  return c;
}

static ht_decision decide_at(ht_computation *c, int64_t n) {
  ht_decision d;
  if (ht_computation_decide(c, &n, &d)) fail_msg("%s", ht_last_error());
  return d;
}

/* A model's recorded bands make its decisions close or not: the 4x faster config wins either way,
 * but the slower one's band reaches the winner's only where the band is wide (inside the training
 * sizes with the interpolation band, beyond them with the extrapolation band). */
static void test_model_bands_close(void **state) {
  (void)state;
  static const char *prov =
      "{\"work_min\": 1000, \"work_max\": 1000000, \"band_coverage\": 0.8, \"band_interp\": [0.9, 1.1], "
      "\"band_extrap\": [0.2, 5.0]}";
  ht_store *st;
  ht_spec *s = load(SPEC);
  ht_computation *c = two_configs_by_model(s, prov, &st);
  ht_decision in = decide_at(c, 50000), out = decide_at(c, 10000000);
  assert_int_equal(in.variant, 1);
  assert_int_equal(in.source, HT_SRC_MODEL);
  assert_true(in.band_lo < in.pred_total_s && in.pred_total_s < in.band_hi);
  assert_false(in.close); /* 4x apart, each within 10% */
  assert_int_equal(out.variant, 1);
  assert_true(out.band_hi > 4.5 * out.pred_total_s);
  assert_true(out.close); /* beyond the training sizes: 0.2x - 5x */
  ht_computation_destroy(c);
  ht_store_close(st);
  /* without a provenance: no bands, and 4x apart is not close */
  c = two_configs_by_model(s, NULL, &st);
  out = decide_at(c, 10000000);
  assert_true(isnan(out.band_lo) && isnan(out.band_hi));
  assert_false(out.close);
  ht_computation_destroy(c);
  ht_store_close(st);
  ht_spec_destroy(s);
}

int main(void) {
  setenv("HETUNE_SIM", HT_SOURCE_DIR "/tests/data/sim/dispatch.json", 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_crossover),          cmocka_unit_test(test_transfers_counted),
      cmocka_unit_test(test_cache_hit_and_invalidation), cmocka_unit_test(test_drift_flips_choice),
      cmocka_unit_test(test_stall_reprobed),
      cmocka_unit_test(test_exploration_regret_cap), cmocka_unit_test(test_bias_correction),
      cmocka_unit_test(test_rule_selector),      cmocka_unit_test(test_signature_mismatch),
      cmocka_unit_test(test_file_errors),        cmocka_unit_test(test_example_files_load),
      cmocka_unit_test(test_log_across_programs),
      cmocka_unit_test(test_sampled_feedback), cmocka_unit_test(test_repeated_calls),
      cmocka_unit_test(test_passing_stall_drifts_back), cmocka_unit_test(test_new_sizes_do_not_drift),
      cmocka_unit_test(test_interpolation_between_neighbours),
      cmocka_unit_test(test_drift_moves_the_whole_device), cmocka_unit_test(test_slow_first_call_not_trusted), cmocka_unit_test(test_cache_clear_and_drop),
      cmocka_unit_test(test_loser_reprobed), cmocka_unit_test(test_loser_reprobes_bounded),
      cmocka_unit_test(test_static_cache_header),
      cmocka_unit_test(test_static_cache_used_first), cmocka_unit_test(test_tuned_times_get_copies),
      cmocka_unit_test(test_model_best_config), cmocka_unit_test(test_model_bands_close),  cmocka_unit_test(test_cli),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
