/* Races (src/coexec/race.c): the faster variant wins and the slower is stopped; the winner's
 * outputs land in the caller's buffers and a loser's never do; C against PoCL and against a
 * realtime simulated GPU; a loser that cannot be stopped; every variant failing; the censored
 * times in the history and the store (with the schema 5 -> 6 migration); race dispatch; the CLI. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_shell.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hetune/coexec.h"

#define DATA HT_SOURCE_DIR "/tests/data/race/"

typedef struct variant_def {
  const char *spec, *device, *config;
} variant_def;

typedef struct fixture {
  ht_spec *specs[4];
  ht_computation *c;
  ht_host_arg *args;
  int64_t n;
} fixture;

static int have(const char *device) {
  ht_device *d;
  if (ht_device_open(device, &d)) return 0;
  ht_device_close(d);
  return 1;
}

/* A computation of the given variants (specs under tests/data/race/) and its data at N = 1000. */
static void make(fixture *f, const variant_def *v, int n, ht_store *st, const char *options) {
  memset(f, 0, sizeof *f);
  assert_int_equal(ht_computation_create("race_test", st, &f->c), HT_OK);
  for (int i = 0; i < n; i++) {
    char path[512];
    snprintf(path, sizeof path, DATA "%s", v[i].spec);
    if (ht_spec_load(path, &f->specs[i]) || ht_computation_add_variant(f->c, f->specs[i], v[i].device, v[i].config, NULL))
      fail_msg("%s", ht_last_error());
  }
  if ((options && ht_computation_set_options(f->c, options)) || ht_computation_finish(f->c)) fail_msg("%s", ht_last_error());
  f->n = 1000;
  if (ht_computation_make_args(f->c, &f->n, 7, &f->args)) fail_msg("%s", ht_last_error());
}

static void drop(fixture *f) {
  ht_computation_free_args(f->c, f->args);
  ht_computation_destroy(f->c);
  for (int i = 0; i < 4; i++) ht_spec_destroy(f->specs[i]);
}

/* out (argument 0) holds twice in (argument 1). */
static void check_doubled(const fixture *f, const char *what) {
  const float *out = f->args[0].data, *in = f->args[1].data;
  for (int64_t i = 0; i < f->n; i++)
    if (out[i] != 2 * in[i]) fail_msg("%s: out[%lld] = %g, expected %g", what, (long long)i, out[i], 2 * in[i]);
}

static ht_race_result race(fixture *f, const int *variants, int n) {
  ht_race_result r;
  if (ht_race_run(f->c, &f->n, f->args, variants, n, &r)) fail_msg("%s", ht_last_error());
  return r;
}

static const ht_race_participant *of(const ht_race_result *r, int variant) {
  for (int i = 0; i < r->n; i++)
    if (r->p[i].variant == variant) return &r->p[i];
  fail_msg("variant %d did not race", variant);
  return NULL;
}

/* ---- the race itself ---- */

/* A 20 ms spin beats a 2 s one in either order; the loser, which filled its output with garbage
 * first, is stopped long before its end and the caller sees only the winner's output. */
static void test_fast_beats_slow(void **state) {
  (void)state;
  fixture f;
  variant_def v[] = {{"spin_c.json", "c", "US=20000,GARBAGE=0"}, {"spin_c.json", "c", "US=2000000,GARBAGE=1"}};
  make(&f, v, 2, NULL, NULL);
  static const int orders[2][2] = {{0, 1}, {1, 0}};
  for (int k = 0; k < 2; k++) {
    memset(f.args[0].data, 0, sizeof(float) * (size_t)f.n);
    ht_race_result r = race(&f, orders[k], 2);
    assert_int_equal(r.winner, 0);
    assert_int_equal(of(&r, 0)->outcome, HT_RACE_WON);
    assert_int_equal(of(&r, 1)->outcome, HT_RACE_STOPPED);
    if (!(r.t_win < 1.0 && r.stop_delay < 1.0)) fail_msg("t_win %.3f s, stop delay %.3f s", r.t_win, r.stop_delay);
    assert_true(r.wall_s < 1.9); /* the 2 s spin did not run to its end */
    check_doubled(&f, "after the race");
  }
  drop(&f);
}

/* A loser that never polls its flag (spin_signal.c, an OpenMP region of include/hetune/stop.h) is
 * stopped by signal 30 s before its end; the same kernel as the winner runs whole. */
static void test_signal_stopped_loser(void **state) {
  (void)state;
  fixture f;
  variant_def v[] = {{"spin_c.json", "c", "US=20000,GARBAGE=0"},
                     {"spin_signal.json", "c", "US=30000000,GARBAGE=1"},
                     {"spin_signal.json", "c", "US=20000,GARBAGE=0"},
                     {"spin_c.json", "c", "US=2000000,GARBAGE=1"}};
  make(&f, v, 4, NULL, NULL);
  static const int pairs[2][2] = {{0, 1}, {2, 3}};
  for (int k = 0; k < 2; k++) {
    memset(f.args[0].data, 0, sizeof(float) * (size_t)f.n);
    ht_race_result r = race(&f, pairs[k], 2);
    assert_int_equal(r.winner, pairs[k][0]);
    assert_int_equal(of(&r, pairs[k][1])->outcome, HT_RACE_STOPPED);
    fprintf(stderr, "race %d: won after %.1f ms, the loser stopped %.3f ms later\n", k, r.t_win * 1e3,
            r.stop_delay * 1e3);
    if (!(r.stop_delay < 1.0 && r.wall_s < 1.9)) fail_msg("stop delay %.3f s, wall %.3f s", r.stop_delay, r.wall_s);
    check_doubled(&f, "after the race");
  }
  drop(&f);
}

/* Every variant failing (a roofline-only simulated device cannot time a launch without "work")
 * is one error naming each failure, and the caller's buffers stay as they were. */
static void test_all_fail(void **state) {
  (void)state;
  fixture f;
  variant_def v[] = {{"spin_c.json", "sim:3", "US=0,GARBAGE=1"}, {"spin_c.json", "sim:3", "US=20000,GARBAGE=1"}};
  make(&f, v, 2, NULL, NULL);
  float *out = f.args[0].data;
  for (int64_t i = 0; i < f.n; i++) out[i] = 5;
  ht_race_result r;
  assert_int_not_equal(ht_race_run(f.c, &f.n, f.args, NULL, 0, &r), HT_OK);
  const char *e = ht_last_error();
  if (!strstr(e, "every variant of the race failed") || !strstr(e, "variant 0 (") || !strstr(e, "variant 1 (") ||
      !strstr(e, "roofline"))
    fail_msg("unexpected error: %s", e);
  assert_int_equal(r.winner, -1);
  for (int64_t i = 0; i < f.n; i++) assert_true(out[i] == 5);
  drop(&f);
}

/* A loser that cannot be stopped (a simulated device without HT_CAP_CANCEL, which sleeps its
 * 300 ms) runs to its end: it finished, so its time is a measurement. */
static void test_unstoppable_loser_finishes(void **state) {
  (void)state;
  fixture f;
  variant_def v[] = {{"spin_c.json", "c", "US=0,GARBAGE=0"}, {"spin_c.json", "sim:2", "US=0,GARBAGE=1"}};
  make(&f, v, 2, NULL, NULL);
  ht_race_result r = race(&f, NULL, 0);
  assert_int_equal(r.winner, 0);
  assert_int_equal(of(&r, 1)->outcome, HT_RACE_FINISHED);
  assert_true(r.stop_delay > 0.1); /* it slept its modelled time */
  check_doubled(&f, "unstoppable loser");
  ht_variant_estimate est[2];
  assert_int_equal(ht_computation_estimate(f.c, &f.n, est), HT_OK);
  assert_int_equal(est[1].source, HT_SRC_MEASURED);
  assert_true(fabs(est[1].total_s - 0.3) < 1e-6); /* its modelled time, measured */
  drop(&f);
}

/* C against a realtime simulated GPU: the GPU's 50 ms launch beats a 2 s spin, and a 20 ms spin
 * beats its 2 s launch, which is stopped in its sleep. */
static void test_c_against_realtime_sim(void **state) {
  (void)state;
  fixture f;
  variant_def v[] = {{"spin_c.json", "c", "US=2000000,GARBAGE=1"},
                     {"spin_c.json", "sim:0", "US=0,GARBAGE=0"},
                     {"spin_c.json", "c", "US=20000,GARBAGE=0"},
                     {"spin_c.json", "sim:1", "US=0,GARBAGE=1"}};
  make(&f, v, 4, NULL, NULL);
  int gpu_wins[] = {0, 1}, c_wins[] = {3, 2};
  ht_race_result r = race(&f, gpu_wins, 2);
  assert_int_equal(r.winner, 1);
  assert_int_equal(of(&r, 0)->outcome, HT_RACE_STOPPED);
  assert_true(r.t_win >= 0.05 && r.wall_s < 1.9);
  check_doubled(&f, "sim wins");
  memset(f.args[0].data, 0, sizeof(float) * (size_t)f.n);
  r = race(&f, c_wins, 2);
  assert_int_equal(r.winner, 2);
  assert_int_equal(of(&r, 3)->outcome, HT_RACE_STOPPED);
  assert_true(r.stop_delay < 1.0 && r.wall_s < 1.9);
  check_doubled(&f, "c wins");
  drop(&f);
}

/* C against PoCL, each stopping the other through the cooperative flag. PoCL's first compile
 * takes seconds: the variants are made before the clock starts. */
static void test_c_against_opencl(void **state) {
  (void)state;
  if (!have("opencl")) skip();
  fixture f;
  variant_def v[] = {{"spin_c.json", "c", "US=20000,GARBAGE=0"},
                     {"spin_opencl.json", "opencl", "ROUNDS=10000000000"},
                     {"spin_c.json", "c", "US=2000000,GARBAGE=1"},
                     {"spin_opencl.json", "opencl", "ROUNDS=1000"}};
  make(&f, v, 4, NULL, NULL);
  int c_wins[] = {0, 1}, cl_wins[] = {2, 3};
  ht_race_result r = race(&f, c_wins, 2);
  assert_int_equal(r.winner, 0);
  assert_int_equal(of(&r, 1)->outcome, HT_RACE_STOPPED);
  if (!(r.stop_delay < 5.0)) fail_msg("PoCL took %.3f s to stop", r.stop_delay);
  check_doubled(&f, "c beats PoCL");
  memset(f.args[0].data, 0, sizeof(float) * (size_t)f.n);
  r = race(&f, cl_wins, 2);
  assert_int_equal(r.winner, 3);
  assert_int_equal(of(&r, 2)->outcome, HT_RACE_STOPPED);
  check_doubled(&f, "PoCL beats c");
  drop(&f);
}

/* A realtime simulated device claims what a race needs; others keep running to their end; a
 * "realtime" that is not a boolean is an error naming the file, position and key. */
static void test_realtime_sim_device(void **state) {
  (void)state;
  ht_device *d;
  assert_int_equal(ht_device_open("sim:0", &d), HT_OK);
  assert_int_equal(ht_device_caps(d) & (HT_CAP_ASYNC | HT_CAP_CANCEL), HT_CAP_ASYNC | HT_CAP_CANCEL);
  ht_device_close(d);
  assert_int_equal(ht_device_open("sim:2", &d), HT_OK);
  assert_int_equal(ht_device_caps(d) & (HT_CAP_ASYNC | HT_CAP_CANCEL), 0);
  ht_device_close(d);
  char *path = ht_strfmt("%s/test_race_bad_sim.json", HT_BINARY_DIR);
  FILE *f = fopen(path, "w");
  fputs("{\"devices\": [\n  {\"name\": \"x\", \"seconds_per_unit\": 1, \"memory_bytes\": 10, \"realtime\": 1}]}\n", f);
  fclose(f);
  setenv("HETUNE_SIM", path, 1);
  assert_int_not_equal(ht_device_open("sim:0", &d), HT_OK);
  if (!strstr(ht_last_error(), "test_race_bad_sim.json:2:") || !strstr(ht_last_error(), "devices[0].realtime: expected true or false"))
    fail_msg("unexpected error: %s", ht_last_error());
  setenv("HETUNE_SIM", DATA "sim.json", 1);
  free(path);
}

static void test_bad_calls(void **state) {
  (void)state;
  fixture f;
  variant_def v[] = {{"spin_c.json", "c", "US=0,GARBAGE=0"}, {"spin_c.json", "c", "US=0,GARBAGE=1"}};
  make(&f, v, 2, NULL, NULL);
  int twice[] = {0, 0}, missing[] = {0, 5};
  assert_int_equal(ht_race_run(f.c, &f.n, f.args, twice, 2, NULL), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "raced twice"));
  assert_int_equal(ht_race_run(f.c, &f.n, f.args, missing, 2, NULL), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "no variant 5"));
  assert_int_equal(ht_race_run(f.c, &f.n, NULL, NULL, 0, NULL), HT_ERR_INVALID);
  drop(&f);
}

/* ---- what a race teaches ---- */

/* A censored bound raises the estimate to at least the bound and never lowers it. */
static void test_censored_bound(void **state) {
  (void)state;
  fixture f;
  variant_def v[] = {{"spin_c.json", "c", "US=0,GARBAGE=0"}, {"spin_c.json", "c", "US=0,GARBAGE=1"}};
  make(&f, v, 2, NULL, NULL);
  ht_variant_estimate est[2];
  ht_run_times one = {.kernel_s = 1.0}, half = {.kernel_s = 0.5}, two = {.kernel_s = 2.0};
  assert_int_equal(ht_computation_record(f.c, 0, &f.n, &one, 0), HT_OK);
  assert_int_equal(ht_computation_record(f.c, 0, &f.n, &half, 1), HT_OK);
  ht_computation_estimate(f.c, &f.n, est);
  assert_true(est[0].total_s == 1.0); /* a lower bound below the time changes nothing */
  assert_int_equal(ht_computation_record(f.c, 0, &f.n, &two, 1), HT_OK);
  ht_computation_estimate(f.c, &f.n, est);
  assert_true(est[0].total_s >= 2.0);
  assert_int_equal(ht_computation_record(f.c, 1, &f.n, &half, 1), HT_OK); /* nothing known: the bound */
  ht_computation_estimate(f.c, &f.n, est);
  assert_true(est[1].total_s == 0.5);
  ht_run_times bad = {.kernel_s = -1};
  assert_int_equal(ht_computation_record(f.c, 1, &f.n, &bad, 1), HT_ERR_INVALID);
  assert_int_equal(ht_computation_record(f.c, 2, &f.n, &one, 1), HT_ERR_INVALID);
  drop(&f);
}

typedef struct log_seen {
  int rows, censored[2], measured[2];
  double censored_s;
} log_seen;

static int count_row(const ht_dispatch_record *r, void *ctx) {
  log_seen *s = ctx;
  int v = strstr(r->variant, "GARBAGE=1") ? 1 : 0;
  s->rows++;
  if (r->censored) s->censored[v]++, s->censored_s = r->kernel_s + r->h2d_s + r->d2h_s;
  else s->measured[v]++;
  return 0;
}

static char *temp_db(const char *name) {
  char *path = ht_strfmt("%s/%s", HT_BINARY_DIR, name);
  unlink(path);
  char *wal = ht_strfmt("%s-wal", path), *shm = ht_strfmt("%s-shm", path);
  unlink(wal);
  unlink(shm);
  free(wal);
  free(shm);
  return path;
}

/* The race's times reach the store: the winner's measured, the loser's censored; a program that
 * comes after reads the loser's bound back into its history. */
static void test_censored_in_store(void **state) {
  (void)state;
  char *path = temp_db("test_race_log.db");
  ht_store *st;
  assert_int_equal(ht_store_open(path, &st), HT_OK);
  fixture f;
  variant_def v[] = {{"spin_c.json", "c", "US=20000,GARBAGE=0"}, {"spin_c.json", "c", "US=2000000,GARBAGE=1"}};
  make(&f, v, 2, st, NULL);
  ht_race_result r = race(&f, NULL, 0);
  assert_int_equal(r.winner, 0);
  drop(&f);
  log_seen seen = {0};
  assert_int_equal(ht_store_each_dispatch_log(st, "race_test", 0, count_row, &seen), HT_OK);
  assert_int_equal(seen.rows, 2);
  assert_int_equal(seen.measured[0], 1);
  assert_int_equal(seen.censored[1], 1);
  make(&f, v, 2, st, NULL);
  ht_variant_estimate est[2];
  ht_computation_estimate(f.c, &f.n, est);
  assert_true(est[1].total_s >= seen.censored_s && seen.censored_s > 0.01);
  drop(&f);
  ht_store_close(st);
  free(path);
}

static void sql(sqlite3 *db, const char *q) {
  char *err = NULL;
  if (sqlite3_exec(db, q, NULL, NULL, &err) != SQLITE_OK) fail_msg("%s: %s", q, err);
}

/* A database of schema 5 (a log without the censored column) reads as before, also read-only,
 * and is migrated to the newest schema when opened for writing: its rows are measurements. */
static void test_schema_5_migrates(void **state) {
  (void)state;
  char *path = temp_db("test_race_v5.db");
  ht_store *st;
  assert_int_equal(ht_store_open(path, &st), HT_OK);
  ht_dispatch_record rec = {"old", "v", "k", "", "N=10", "measured", NAN, 1, 0.25, 0, 0, 1.0, 0};
  assert_int_equal(ht_store_put_dispatch_log(st, &rec, 1), HT_OK);
  ht_store_close(st);
  sqlite3 *db;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  sql(db, "DROP TABLE device_power; ALTER TABLE dispatch_log DROP COLUMN censored;"
          " DELETE FROM schema_history WHERE version >= 6; PRAGMA user_version = 5;");
  sqlite3_close(db);
  for (int pass = 0; pass < 2; pass++) { /* read-only first (not migrated), then migrated */
    assert_int_equal(pass ? ht_store_open(path, &st) : ht_store_open_readonly(path, &st), HT_OK);
    log_seen seen = {0};
    assert_int_equal(ht_store_each_dispatch_log(st, "old", 0, count_row, &seen), HT_OK);
    assert_int_equal(seen.rows, 1);
    assert_int_equal(seen.measured[0], 1);
    ht_store_close(st);
  }
  assert_int_equal(ht_store_open(path, &st), HT_OK);
  rec.censored = 1;
  assert_int_equal(ht_store_put_dispatch_log(st, &rec, 1), HT_OK);
  log_seen seen = {0};
  assert_int_equal(ht_store_each_dispatch_log(st, "old", 0, count_row, &seen), HT_OK);
  assert_int_equal(seen.rows, 2);
  assert_int_equal(seen.censored[0], 1);
  ht_store_close(st);
  free(path);
}

/* ---- race dispatch ---- */

/* Uncalibrated variants are raced; two calibrated far apart are not (the call runs as dispatch
 * runs it); two calibrated close together are raced. */
static void test_race_dispatch(void **state) {
  (void)state;
  fixture f;
  variant_def v[] = {{"spin_c.json", "c", "US=0,GARBAGE=0"}, {"spin_c.json", "c", "US=200000,GARBAGE=1"}};
  make(&f, v, 2, NULL, "explore=0");
  ht_decision d;
  ht_race_result r;
  ht_run_times t;
  assert_int_equal(ht_race_dispatch(f.c, &f.n, f.args, &d, &t, &r), HT_OK);
  assert_int_equal(r.n, 2); /* nothing known: raced */
  assert_int_equal(d.variant, 0);
  check_doubled(&f, "raced dispatch");
  assert_int_equal(ht_race_dispatch(f.c, &f.n, f.args, &d, &t, &r), HT_OK);
  assert_int_equal(r.n, 0); /* the loser is known to take at least the winner's time: not raced again */
  assert_int_equal(d.variant, 0);
  assert_false(d.close);
  ht_computation_run_variant(f.c, 1, &f.n, f.args, NULL); /* its real time: far from variant 0's */
  check_doubled(&f, "calibration"); /* undone by the next call */
  assert_int_equal(ht_race_dispatch(f.c, &f.n, f.args, &d, &t, &r), HT_OK);
  assert_int_equal(r.n, 0); /* not close: not raced */
  assert_int_equal(d.variant, 0);
  check_doubled(&f, "dispatch");
  drop(&f);
  variant_def same[] = {{"spin_c.json", "c", "US=20000,GARBAGE=0"}, {"spin_c.json", "c", "US=20000,GARBAGE=1"}};
  make(&f, same, 2, NULL, "explore=0");
  ht_run_times twenty = {.kernel_s = 0.02};
  ht_computation_record(f.c, 0, &f.n, &twenty, 0);
  ht_computation_record(f.c, 1, &f.n, &twenty, 0);
  assert_int_equal(ht_race_dispatch(f.c, &f.n, f.args, &d, NULL, &r), HT_OK);
  assert_int_equal(r.n, 2); /* close: raced */
  assert_true(r.winner == 0 || r.winner == 1);
  assert_int_equal(d.variant, r.winner);
  drop(&f);
}

/* ---- the command ---- */

static int cli(const char *args, char *out, size_t len) {
  char *all = ht_strfmt("race %s", args);
  int rc = run_shell(HT_SOURCE_DIR, all, out, len);
  free(all);
  return rc;
}

static void test_cli(void **state) {
  (void)state;
  char out[8192];
  assert_int_equal(cli("--help", out, sizeof out), 0);
  assert_non_null(strstr(out, "usage: hetune race COMP"));
  assert_int_equal(cli("", out, sizeof out), 2);
  assert_non_null(strstr(out, "expected a computation file"));
  assert_int_equal(cli("tests/data/race/spin_race.json --variants 0,x", out, sizeof out), 2);
  assert_non_null(strstr(out, "--variants"));
  assert_int_equal(cli("tests/data/race/spin_race.json --variants 0,7", out, sizeof out), 2);
  assert_non_null(strstr(out, "no variant 7"));
  assert_int_equal(cli("tests/data/race/spin_race.json --repeat 0", out, sizeof out), 2);
  assert_int_equal(cli("tests/data/race/spin_race.json --bogus 1", out, sizeof out), 2);
  char *db = temp_db("test_race_cli.db");
  char *args = ht_strfmt("tests/data/race/spin_race.json --size N=100 --repeat 2 --db %s", db);
  int rc = cli(args, out, sizeof out);
  if (rc) fail_msg("exit %d: %s", rc, out);
  if (!strstr(out, "race 2: winner variant 0") || !strstr(out, "stopped")) fail_msg("unexpected output:\n%s", out);
  free(args);
  free(db);
}

int main(void) {
  setenv("HETUNE_SIM", DATA "sim.json", 1);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_fast_beats_slow),
    cmocka_unit_test(test_signal_stopped_loser),
    cmocka_unit_test(test_all_fail),
    cmocka_unit_test(test_unstoppable_loser_finishes),
    cmocka_unit_test(test_c_against_realtime_sim),
    cmocka_unit_test(test_c_against_opencl),
    cmocka_unit_test(test_realtime_sim_device),
    cmocka_unit_test(test_bad_calls),
    cmocka_unit_test(test_censored_bound),
    cmocka_unit_test(test_censored_in_store),
    cmocka_unit_test(test_schema_5_migrates),
    cmocka_unit_test(test_race_dispatch),
    cmocka_unit_test(test_cli),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
