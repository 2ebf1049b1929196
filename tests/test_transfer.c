/* Host<->device transfer tables: measured on a simulated device whose link is known exactly (a
 * latency, a bandwidth and a protocol change at 1 MiB), on PoCL and on the host; looked up between
 * and beyond their points; written and read as CSV and in the store; measured by the command. */
#define _GNU_SOURCE /* nftw */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <sqlite3.h>

#include "cli_test_util.h"
#include "hetune/measure.h"
#include "hetune/store.h"

#define STEPPED HT_SOURCE_DIR "/tests/data/sim/transfer_step.json"
#define MIB 1048576.0

static char dir[64];

static const char *in_dir(const char *name) {
  static char p[2][320];
  static int which;
  which ^= 1;
  snprintf(p[which], sizeof p[which], "%s/%s", dir, name);
  return p[which];
}

static void write_text(const char *name, const char *text) {
  FILE *fp = fopen(in_dir(name), "w");
  assert_non_null(fp);
  fputs(text, fp);
  assert_int_equal(fclose(fp), 0);
}

/* The file's link: h2d 25 us + bytes / 6.3 GB/s up to 1 MiB, 50 us + bytes / 8 GB/s above;
 * d2h 30 us + bytes / 5.5 GB/s. */
static double model(ht_transfer_dir dir, double bytes) {
  if (dir == HT_D2H) return 30e-6 + bytes / 5.5e9;
  return bytes > MIB ? 50e-6 + bytes / 8e9 : 25e-6 + bytes / 6.3e9;
}

static ht_device *open_stepped(void) {
  setenv("HETUNE_SIM", STEPPED, 1);
  ht_device *dev = NULL;
  if (ht_device_open("sim:0", &dev)) fail_msg("open sim:0: %s", ht_last_error());
  return dev;
}

static int progress_calls;
static void count_progress(ht_transfer_dir dir, double bytes, double seconds, int points, void *ctx) {
  (void)dir, (void)bytes, (void)seconds, (void)points, (void)ctx;
  progress_calls++;
}

static void measure_stepped(ht_transfer_table *t) {
  ht_device *dev = open_stepped();
  ht_transfer_options o;
  ht_transfer_options_default(&o);
  o.max_bytes = 32 * MIB;
  o.progress = count_progress;
  if (ht_transfer_measure(dev, &o, t)) fail_msg("measure: %s", ht_last_error());
  ht_device_close(dev);
}

static void expect_increasing(const ht_transfer_table *t, ht_transfer_dir d) {
  for (int i = 1; i < t->n[d]; i++)
    if (!(t->bytes[d][i] > t->bytes[d][i - 1]))
      fail_msg("%s point %d: bytes %.0f after %.0f", ht_transfer_dir_name(d), i, t->bytes[d][i], t->bytes[d][i - 1]);
}

/* ht_transfer_time within 10% of the file's model at bytes. */
static void expect_close(const ht_transfer_table *t, ht_transfer_dir d, double bytes) {
  double got = ht_transfer_time(t, d, bytes), want = model(d, bytes);
  if (!(fabs(got / want - 1) <= 0.10))
    fail_msg("%s %.0f bytes: table %.3g s, model %.3g s", ht_transfer_dir_name(d), bytes, got, want);
}

/* The one interval whose slope is neither side's bandwidth holds the step, and is one stride wide:
 * a stride at a size never exceeds the size (it starts at 64 B and at most doubles per point).
 * The sweep noticed it: past the step it went back and measured with a smaller stride, where
 * plain doubling would have made the next interval twice as wide. */
static void expect_breakpoint(const ht_transfer_table *t) {
  const double *x = t->bytes[HT_H2D], *y = t->seconds[HT_H2D];
  int odd = -1;
  for (int i = 1; i < t->n[HT_H2D]; i++) {
    double slope = (y[i] - y[i - 1]) / (x[i] - x[i - 1]);
    if (fabs(slope * 6.3e9 - 1) > 1e-6 && fabs(slope * 8e9 - 1) > 1e-6) {
      if (odd >= 0) fail_msg("two intervals off both bandwidths: ending at %.0f and %.0f", x[odd], x[i]);
      odd = i;
    }
  }
  assert_true(odd > 0);
  if (!(x[odd - 1] <= MIB && x[odd] > MIB && x[odd] - x[odd - 1] <= x[odd - 1]))
    fail_msg("the step at 1 MiB was placed between %.0f and %.0f", x[odd - 1], x[odd]);
  assert_true(odd + 1 < t->n[HT_H2D]);
  if (!(x[odd + 1] - x[odd] < x[odd] - x[odd - 1]))
    fail_msg("no smaller stride after the step: points %.0f, %.0f, %.0f", x[odd - 1], x[odd], x[odd + 1]);
}

static void test_sim_table_follows_the_model(void **state) {
  (void)state;
  static ht_transfer_table t, again;
  progress_calls = 0;
  measure_stepped(&t);
  assert_int_equal(progress_calls, t.n[HT_H2D] + t.n[HT_D2H]);
  for (int d = 0; d < 2; d++) {
    assert_true(t.n[d] >= 10 && t.n[d] <= 200);
    expect_increasing(&t, d);
    assert_true(t.bytes[d][0] == 1 && t.bytes[d][t.n[d] - 1] == 32 * MIB);
    for (int i = 0; i < t.n[d]; i++) assert_true(fabs(t.seconds[d][i] / model(d, t.bytes[d][i]) - 1) < 1e-12);
    /* everywhere: log-spaced sizes up to 32 times beyond the last point, between every two points */
    for (double b = 1; b < 1024 * MIB; b *= 1.07) expect_close(&t, d, floor(b));
    for (int i = 1; i < t.n[d]; i++) expect_close(&t, d, floor((t.bytes[d][i - 1] + t.bytes[d][i]) / 2));
  }
  for (double b = MIB - 300000; b < MIB + 300000; b += 997) expect_close(&t, HT_H2D, b);
  expect_breakpoint(&t);
  measure_stepped(&again); /* the virtual clock: the same table */
  assert_memory_equal(&t, &again, sizeof t);
}

static void test_lookup(void **state) {
  (void)state;
  static ht_transfer_table t;
  memset(&t, 0, sizeof t);
  double x[] = {100, 200, 400}, y[] = {1e-5, 2e-5, 3e-5};
  t.n[HT_H2D] = 3;
  memcpy(t.bytes[HT_H2D], x, sizeof x);
  memcpy(t.seconds[HT_H2D], y, sizeof y);
  assert_true(ht_transfer_time(&t, HT_H2D, 1) == 1e-5);   /* below the first point: its time */
  assert_true(ht_transfer_time(&t, HT_H2D, NAN) == 1e-5);
  assert_true(fabs(ht_transfer_time(&t, HT_H2D, 150) - 1.5e-5) < 1e-18);
  assert_true(fabs(ht_transfer_time(&t, HT_H2D, 300) - 2.5e-5) < 1e-18);
  assert_true(fabs(ht_transfer_time(&t, HT_H2D, 800) - 5e-5) < 1e-18); /* the last segment goes on */
  assert_true(ht_transfer_time(&t, HT_D2H, 800) == 0);                 /* an empty direction */
  t.seconds[HT_H2D][2] = 1.5e-5; /* a falling last segment stops at the last point's time */
  assert_true(ht_transfer_time(&t, HT_H2D, 4000) == 1.5e-5);
  t.n[HT_H2D] = 1;
  assert_true(ht_transfer_time(&t, HT_H2D, 4000) == 1e-5);
  assert_true(ht_transfer_time(NULL, HT_H2D, 4000) == 0);
  assert_string_equal(ht_transfer_dir_name(HT_D2H), "d2h");
}

static void test_csv_round_trip(void **state) {
  (void)state;
  static ht_transfer_table t, back;
  measure_stepped(&t);
  assert_int_equal(ht_transfer_save(in_dir("t.csv"), &t, "a test table"), HT_OK);
  assert_int_equal(ht_transfer_load(in_dir("t.csv"), &back), HT_OK);
  assert_memory_equal(&t, &back, sizeof t);
  /* an empty table (a host device) is a header alone, and reads back empty */
  memset(&t, 0, sizeof t);
  assert_int_equal(ht_transfer_save(in_dir("empty.csv"), &t, NULL), HT_OK);
  back.n[0] = 7;
  assert_int_equal(ht_transfer_load(in_dir("empty.csv"), &back), HT_OK);
  assert_int_equal(back.n[HT_H2D] + back.n[HT_D2H], 0);
  /* directions may interleave; comments and blank lines are skipped */
  write_text("mixed.csv", "# mine\ndirection,bytes,seconds\nh2d,1,1e-5\nd2h,1,2e-5\n\nh2d,1000,2e-5\n");
  assert_int_equal(ht_transfer_load(in_dir("mixed.csv"), &back), HT_OK);
  assert_int_equal(back.n[HT_H2D], 2);
  assert_int_equal(back.n[HT_D2H], 1);
  assert_true(back.seconds[HT_D2H][0] == 2e-5);
}

/* text as a file; loading it fails with an error holding every needle. */
static void expect_load_error(const char *text, const char *const *needles) {
  static ht_transfer_table t;
  write_text("bad.csv", text);
  if (ht_transfer_load(in_dir("bad.csv"), &t) == HT_OK) fail_msg("loaded:\n%s", text);
  for (int i = 0; needles[i]; i++)
    if (!strstr(ht_last_error(), needles[i])) fail_msg("error lacks \"%s\": %s", needles[i], ht_last_error());
  assert_int_equal(t.n[0] + t.n[1], 0);
}
#define expect_load_error(text, ...) expect_load_error(text, (const char *const[]){__VA_ARGS__, NULL})

static void test_load_errors(void **state) {
  (void)state;
  expect_load_error("direction,bytes,seconds\nh2d,1,1e-5\nx2y,2,1e-5\n", "bad.csv:3: expected the direction h2d or d2h, got 'x2y'");
  expect_load_error("# c\ndirection,bytes,seconds\nh2d,10,1e-5\nd2h,5,1e-5\nh2d,10,2e-5\n",
                    "bad.csv:5: h2d bytes 10 do not increase (previous h2d row 10)");
  expect_load_error("direction,bytes,seconds\nh2d,-4,1e-5\n", "bad.csv:2: expected a positive number of bytes");
  expect_load_error("direction,bytes,seconds\nh2d,4,fast\n", "bad.csv:2: expected a time in seconds >= 0");
  expect_load_error("direction,bytes,seconds\nh2d,4,1e-5,3\n", "bad.csv:2: expected a time in seconds");
  expect_load_error("bytes,seconds\nh2d,4,1e-5\n", "bad.csv:1: expected the header 'direction,bytes,seconds'");
  expect_load_error("# nothing\n", "bad.csv: no header");
  static ht_transfer_table t;
  assert_int_equal(ht_transfer_load(in_dir("missing.csv"), &t), HT_ERR_IO);
  assert_non_null(strstr(ht_last_error(), "missing.csv"));
}

/* A hetune database as schema version 3 left it: no transfers table. */
static void make_old_db(const char *path) {
  ht_store *st = NULL;
  assert_int_equal(ht_store_open(path, &st), HT_OK);
  ht_store_close(st);
  sqlite3 *db = NULL;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  char *err = NULL;
  if (sqlite3_exec(db, "DROP TABLE transfers; DROP TABLE dispatch_log; DROP TABLE device_power;"
                       " DELETE FROM schema_history WHERE version >= 4;"
                       " PRAGMA user_version = 3",
                   NULL, NULL, &err) != SQLITE_OK)
    fail_msg("%s", err);
  sqlite3_close(db);
}

static void test_store(void **state) {
  (void)state;
  static ht_transfer_table t, got, small;
  measure_stepped(&t);
  ht_device *dev = open_stepped();
  make_old_db(in_dir("old.db"));
  ht_store *st = NULL;
  int found = 1;
  assert_int_equal(ht_store_open_readonly(in_dir("old.db"), &st), HT_OK); /* read as it is: no table */
  assert_int_equal(ht_store_get_transfers(st, ht_device_info_get(dev), &got, &found), HT_OK);
  assert_int_equal(found, 0);
  assert_int_equal(ht_store_put_transfers(st, ht_device_info_get(dev), &t), HT_ERR_STORE);
  assert_non_null(strstr(ht_last_error(), "read-only"));
  ht_store_close(st);
  assert_int_equal(ht_store_open(in_dir("old.db"), &st), HT_OK); /* migrated */
  assert_int_equal(ht_store_get_transfers(st, ht_device_info_get(dev), &got, &found), HT_OK);
  assert_int_equal(found, 0);
  assert_int_equal(ht_store_put_transfers(st, ht_device_info_get(dev), &t), HT_OK);
  assert_int_equal(ht_store_get_transfers(st, ht_device_info_get(dev), &got, &found), HT_OK);
  assert_int_equal(found, 1);
  assert_memory_equal(&t, &got, sizeof t);
  /* measured again: the new table replaces the old one whole */
  memset(&small, 0, sizeof small);
  small.n[HT_D2H] = 2;
  small.bytes[HT_D2H][0] = 10, small.bytes[HT_D2H][1] = 20;
  small.seconds[HT_D2H][0] = 1e-6, small.seconds[HT_D2H][1] = 2e-6;
  assert_int_equal(ht_store_put_transfers(st, ht_device_info_get(dev), &small), HT_OK);
  assert_int_equal(ht_store_get_transfers(st, ht_device_info_get(dev), &got, &found), HT_OK);
  assert_memory_equal(&small, &got, sizeof small);
  /* a table that is not one is refused, and the stored one stays */
  small.bytes[HT_D2H][1] = 5;
  assert_int_equal(ht_store_put_transfers(st, ht_device_info_get(dev), &small), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "bytes must increase"));
  assert_int_equal(ht_store_get_transfers(st, ht_device_info_get(dev), &got, &found), HT_OK);
  assert_int_equal(got.n[HT_D2H], 2);
  /* another device has none */
  ht_device_info other = *ht_device_info_get(dev);
  snprintf(other.fingerprint, sizeof other.fingerprint, "0123456789abcdef");
  assert_int_equal(ht_store_get_transfers(st, &other, &got, &found), HT_OK);
  assert_int_equal(found, 0);
  ht_store_close(st);
  /* read-only, the table is there to read */
  assert_int_equal(ht_store_open_readonly(in_dir("old.db"), &st), HT_OK);
  assert_int_equal(ht_store_get_transfers(st, ht_device_info_get(dev), &got, &found), HT_OK);
  assert_int_equal(found, 1);
  ht_store_close(st);
  ht_device_close(dev);
}

/* The c device works in host memory: nothing to copy. */
static void test_host_device_empty(void **state) {
  (void)state;
  static ht_transfer_table t;
  ht_device *dev = NULL;
  assert_int_equal(ht_device_open("c", &dev), HT_OK);
  t.n[0] = 5;
  assert_int_equal(ht_transfer_measure(dev, NULL, &t), HT_OK);
  assert_int_equal(t.n[HT_H2D] + t.n[HT_D2H], 0);
  assert_true(ht_transfer_time(&t, HT_H2D, 1e9) == 0 && ht_transfer_time(&t, HT_D2H, 1e9) == 0);
  /* options are checked first, naming the field */
  ht_transfer_options o;
  ht_transfer_options_default(&o);
  o.max_points = 1;
  assert_int_equal(ht_transfer_measure(dev, &o, &t), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "max_points 1: expected 2 to 256"));
  ht_transfer_options_default(&o);
  o.max_bytes = 0.5;
  assert_int_equal(ht_transfer_measure(dev, &o, &t), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "max_bytes"));
  ht_device_close(dev);
}

/* A sim device without links copies in no time: an empty table, as a host device's. */
static void test_sim_without_links_empty(void **state) {
  (void)state;
  static ht_transfer_table t;
  write_text("nolink.json", "{\"devices\": [{\"name\": \"d\", \"seconds_per_unit\": 1e-9, \"memory_bytes\": 1e7}]}");
  setenv("HETUNE_SIM", in_dir("nolink.json"), 1);
  ht_device *dev = NULL;
  assert_int_equal(ht_device_open("sim:0", &dev), HT_OK);
  assert_int_equal(ht_transfer_measure(dev, NULL, &t), HT_OK); /* max: the device's 1e7 bytes */
  assert_int_equal(t.n[HT_H2D] + t.n[HT_D2H], 0);
  ht_device_close(dev);
}

/* PoCL, where a copy is a memcpy on a shared machine: times are positive, sizes increase; no speed
 * is asserted. */
static void test_opencl_table(void **state) {
  (void)state;
  static ht_transfer_table t;
  ht_device *dev = NULL;
  if (ht_device_open("opencl", &dev)) {
    print_message("no OpenCL device: %s\n", ht_last_error());
    skip();
  }
  ht_transfer_options o;
  ht_transfer_options_default(&o);
  o.max_bytes = 16 * MIB;
  o.max_time_s = 0.05;
  assert_int_equal(ht_transfer_measure(dev, &o, &t), HT_OK);
  for (int d = 0; d < 2; d++) {
    assert_true(t.n[d] >= 5);
    expect_increasing(&t, d);
    assert_true(t.bytes[d][t.n[d] - 1] == 16 * MIB || t.n[d] == o.max_points);
    for (int i = 0; i < t.n[d]; i++) assert_true(t.seconds[d][i] > 0);
    assert_true(ht_transfer_time(&t, d, 64 * MIB) > 0);
  }
  ht_device_close(dev);
}

/* hetune bandwidth --transfers: the table printed, stored and written. */
static void test_cli(void **state) {
  (void)state;
  run_out *r = malloc(sizeof *r);
  setenv("HETUNE_SIM", STEPPED, 1);
  run(r, "bandwidth", "--transfers", "--device", "sim:0", "--max", "4194304", "--output", in_dir("cli.csv"),
      "--db", in_dir("cli.db"));
  if (r->rc || !strstr(r->out, "transfer times of sim:0 (stepped link gpu)") || !strstr(r->out, "h2d us") ||
      !strstr(r->out, "4194304") || !strstr(r->err, "h2d: 1 bytes, 25.00 us (1 points)"))
    fail_msg("hetune%s: exit %d\n%s\n%s", r->cmd, r->rc, r->out, r->err);
  static ht_transfer_table t, got;
  assert_int_equal(ht_transfer_load(in_dir("cli.csv"), &t), HT_OK);
  assert_true(t.bytes[HT_H2D][t.n[HT_H2D] - 1] == 4194304);
  ht_store *st = NULL;
  ht_device *dev = open_stepped();
  int found = 0;
  assert_int_equal(ht_store_open_readonly(in_dir("cli.db"), &st), HT_OK);
  assert_int_equal(ht_store_get_transfers(st, ht_device_info_get(dev), &got, &found), HT_OK);
  assert_int_equal(found, 1);
  assert_memory_equal(&t, &got, sizeof t);
  ht_store_close(st);
  ht_device_close(dev);
  /* the host device: an empty table, said so */
  run(r, "bandwidth", "--transfers", "--db", in_dir("cli.db"), "-q");
  if (r->rc || !strstr(r->out, "c:0") || !strstr(r->out, "nothing to copy") || r->err[0])
    fail_msg("hetune%s: exit %d\n%s\n%s", r->cmd, r->rc, r->out, r->err);
  /* options that do not go together */
  run(r, "bandwidth", "--transfers", "--sweeps", "3", "--db", in_dir("cli.db"));
  expect_error(r, 2, "--sweeps does not apply to --transfers");
  run(r, "bandwidth", "--db", in_dir("cli.db"));
  expect_error(r, 2, "--db goes with --transfers");
  run(r, "bandwidth", "--transfers", "--device", "nosuch", "--db", in_dir("cli.db"));
  assert_int_equal(r->rc, 2);
  free(r);
}

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/ht_transfer_XXXXXX");
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  rm_tree(dir);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sim_table_follows_the_model),
      cmocka_unit_test(test_lookup),
      cmocka_unit_test(test_csv_round_trip),
      cmocka_unit_test(test_load_errors),
      cmocka_unit_test(test_store),
      cmocka_unit_test(test_host_device_empty),
      cmocka_unit_test(test_sim_without_links_empty),
      cmocka_unit_test(test_opencl_table),
      cmocka_unit_test(test_cli),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
