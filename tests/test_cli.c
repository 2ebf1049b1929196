/* The hetune command on bad input: bad spec files, bad expressions, missing sources, unknown
 * devices, bad options, foreign, read-only and full databases. Each gets one clear error line on
 * stderr (naming the file and line:column or the field), nothing on stdout, exit code 2 for usage
 * errors and 1 for the others, and nothing already stored is lost. */
#define _GNU_SOURCE /* nftw */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "hetune/hetune.h"

#include "cli_test_util.h"

/* ---- fixtures: a folder with a tiny C kernel, its reference, and a spec built from lines ---- */

typedef struct fix {
  char dir[64];
  char path[256];
  char db[256];
} fix;

static fix *F;

static void write_text(const char *path, const char *text) {
  FILE *fp = fopen(path, "w");
  assert_non_null(fp);
  fputs(text, fp);
  assert_int_equal(fclose(fp), 0);
}

static const char *in_dir(const char *name) {
  snprintf(F->path, sizeof F->path, "%s/%s", F->dir, name);
  return F->path;
}

static int setup(void **state) {
  (void)state;
  F = calloc(1, sizeof *F);
  snprintf(F->dir, sizeof F->dir, "/tmp/ht_cli_XXXXXX");
  if (!F || !mkdtemp(F->dir)) return -1;
  write_text(in_dir("k.c"), "void k(float *o, const float *a, int n){for(int i=0;i<n;i++)o[i]=a[i]*2;}\n");
  write_text(in_dir("ref.c"), "void kref(float *o, const float *a, int n){for(int i=0;i<n;i++)o[i]=a[i]*2;}\n");
  snprintf(F->db, sizeof F->db, "%s/hetune.db", F->dir);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  rm_tree(F->dir);
  free(F);
  return 0;
}

/* The spec's fields, one per line: field i is on line i + 2 of the file. */
static const char *const base_lines[] = {
  "\"name\": \"k\"",
  "\"language\": \"c\"",
  "\"source\": \"k.c\"",
  "\"entry\": \"k\"",
  "\"sizes\": {\"N\": 1024}",
  "\"arguments\": [{\"name\": \"o\", \"type\": \"float\", \"buffer\": \"N\", \"access\": \"write\"}, "
  "{\"name\": \"a\", \"type\": \"float\", \"buffer\": \"N\"}, "
  "{\"name\": \"n\", \"type\": \"int32\", \"value\": \"N\"}]",
  "\"parameters\": {\"U\": [1, 2, 4]}",
  "\"constraints\": [\"U <= 4\"]",
  "\"reference\": {\"language\": \"c\", \"source\": \"ref.c\", \"entry\": \"kref\"}",
  "\"metrics\": {\"GB/s\": \"8*N/time_s/1e9\"}",
  NULL};

static int same_key(const char *a, const char *b) {
  const char *ea = strchr(a + 1, '"'), *eb = strchr(b + 1, '"');
  return ea && eb && ea - a == eb - b && strncmp(a, b, (size_t)(ea - a)) == 0;
}

/* Writes NAME: the base spec with each override replacing the field of the same key ("-\"key\""
 * removes it; a new key is added at the end). Returns the file's path. */
static const char *spec_v(const char *name, const char *const *over) {
  char text[8192] = "{\n";
  int first = 1;
  for (int i = 0; base_lines[i]; i++) {
    const char *line = base_lines[i];
    for (int j = 0; over[j]; j++)
      if (same_key(over[j][0] == '-' ? over[j] + 1 : over[j], line)) line = over[j];
    if (line[0] == '-') line = "\"seed\": 1"; /* a known key keeps the line numbers */
    snprintf(text + strlen(text), sizeof text - strlen(text), "%s  %s", first ? "" : ",\n", line);
    first = 0;
  }
  for (int j = 0; over[j]; j++) {
    int known = 0;
    for (int i = 0; base_lines[i]; i++) known |= same_key(over[j][0] == '-' ? over[j] + 1 : over[j], base_lines[i]);
    if (!known) snprintf(text + strlen(text), sizeof text - strlen(text), ",\n  %s", over[j]);
  }
  strcat(text, "\n}\n");
  write_text(in_dir(name), text);
  return F->path;
}
#define spec(name, ...) spec_v(name, (const char *const[]){__VA_ARGS__, NULL})

/* Tunes name (a spec in the folder) quietly into the fixture's database. */
static void tune(run_out *r, const char *name) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s", F->dir, name);
  run(r, "tune", path, "--db", F->db, "--quiet");
}

/* Expects `hetune tune` of a bad spec to fail with one line naming it and each needle. */
#define expect_bad_spec(file, ...)                                                                   \
  do {                                                                                               \
    run_out *r_ = malloc(sizeof *r_);                                                                \
    tune(r_, file);                                                                                  \
    char where_[128];                                                                                \
    snprintf(where_, sizeof where_, "%s/%s", F->dir, file);                                          \
    expect_error(r_, 1, where_, __VA_ARGS__);                                                        \
    free(r_);                                                                                        \
  } while (0)

/* ---- the good spec works: the baseline every other case breaks ---- */

static void test_good_spec_tunes(void **state) {
  (void)state;
  run_out *r = malloc(sizeof *r);
  spec("good.json", "\"name\": \"k\"");
  tune(r, "good.json");
  if (r->rc) fail_msg("good spec failed: %s", r->err);
  assert_non_null(strstr(r->out, "best: U="));
  assert_string_equal(r->err, "");
  free(r);
}

static void exec_sql(const char *db, const char *sql) {
  sqlite3 *h;
  assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
  char *err = NULL;
  if (sqlite3_exec(h, sql, NULL, NULL, &err) != SQLITE_OK) fail_msg("%s: %s", sql, err);
  sqlite3_close(h);
}

/* TAG.json (the good spec) and a fresh database TAG.db in the fixture's folder. */
static void good_spec_and_db(const char *tag, char path[256], char db[300]) {
  char name[64];
  snprintf(name, sizeof name, "%s.json", tag);
  snprintf(path, 256, "%s", spec(name, "\"name\": \"k\""));
  snprintf(db, 300, "%s/%s.db", F->dir, tag);
}

/* Stores another measurement of the evaluations WHERE selects, its time_s the SQL expression TIME. */
static void measure_again(const char *db, const char *time, const char *where) {
  char sql[1024];
  snprintf(sql, sizeof sql,
           "INSERT INTO evaluations (session_id, kernel_id, device_id, problem_id, config_key, config_json, status,"
           " time_s, n_samples, samples_json, timestamp) SELECT session_id, kernel_id, device_id, problem_id,"
           " config_key, config_json, status, %s, n_samples, samples_json, timestamp + 1 FROM evaluations WHERE %s",
           time, where);
  exec_sql(db, sql);
}

/* `best` judges a config measured several times by the median of its measurements: U=1's one
 * lucky 1 ms among two 5 ms measurements loses to U=2's single 2 ms. */
static void test_best_uses_median_of_repeats(void **state) {
  (void)state;
  run_out *r = malloc(sizeof *r);
  char db[300], path[256];
  good_spec_and_db("best", path, db);
  run(r, "tune", path, "--db", db, "--quiet");
  if (r->rc) fail_msg("tune failed: %s", r->err);
  exec_sql(db, "UPDATE evaluations SET time_s = CASE config_key WHEN 'U=1' THEN 0.001 WHEN 'U=2' THEN 0.002 "
               "ELSE 0.003 END");
  run(r, "best", path, "--db", db);
  assert_int_equal(r->rc, 0);
  assert_non_null(strstr(r->out, "U=1\n  1 ms on c:0"));
  measure_again(db, "0.005", "config_key = 'U=1'");
  measure_again(db, "0.005", "config_key = 'U=1' AND time_s = 0.001");
  run(r, "best", path, "--db", db);
  assert_int_equal(r->rc, 0);
  if (!strstr(r->out, "U=2\n  2 ms on c:0")) fail_msg("best: %s", r->out);
  /* U=2 measured again at 9 ms (median of two: 5.5 ms), U=4 at 3.1 ms (3.05 ms): U=4 is best */
  measure_again(db, "CASE config_key WHEN 'U=2' THEN 0.009 ELSE 0.0031 END", "config_key IN ('U=2', 'U=4')");
  run(r, "best", path, "--db", db);
  assert_int_equal(r->rc, 0);
  if (!strstr(r->out, "U=4\n  3.05 ms on c:0") || !strstr(r->out, "(median of 2 measurements)"))
    fail_msg("best: %s", r->out);
  /* show lists configs by the same medians, with how often each was measured */
  run(r, "show", "k", "--db", db);
  assert_int_equal(r->rc, 0);
  const char *list = strstr(r->out, "fastest configs of k"); /* the session table above holds times too */
  const char *u4 = list ? strstr(list, " 3.05 ms") : NULL, *u1 = u4 ? strstr(u4 + 8, " 5 ms") : NULL;
  const char *u2 = u1 ? strstr(u1, " 5.5 ms") : NULL;
  if (!u2 || !strstr(u4, "U=4  (x2)") || !strstr(u1, "U=1  (x3)") || !strstr(u2, "U=2  (x2)")) {
    print_message("show:\n%s\n", r->out);
    fail();
  }
  free(r);
}

/* --confirm: the summary says how many confirmations ran and what the best time is the median of */
static void test_confirm_summary(void **state) {
  (void)state;
  run_out *r = malloc(sizeof *r);
  char db[300], path[256];
  good_spec_and_db("confirm", path, db);
  run(r, "tune", path, "--db", db, "--quiet", "--confirm", "2", "--confirm-runs", "3");
  if (r->rc) fail_msg("tune failed: %s", r->err);
  if (!strstr(r->out, "confirmed: 6 more measurements of the fastest configs") ||
      !strstr(r->out, "(median of 4 measurements, each in its own worker process)"))
    fail_msg("tune --confirm: %s", r->out);
  free(r);
}

/* ---- JSON and field errors ---- */

static void test_json_syntax_error(void **state) {
  (void)state;
  write_text(in_dir("syntax.json"), "{\n  \"name\": \"k\",\n  \"language\": \"c\"\n  \"source\": \"k.c\"\n}\n");
  expect_bad_spec("syntax.json", "syntax.json:4:");
  write_text(in_dir("empty.json"), "");
  expect_bad_spec("empty.json", "empty.json:");
  write_text(in_dir("array.json"), "[1, 2]\n");
  expect_bad_spec("array.json", "JSON object");
}

static void test_wrong_field_types(void **state) {
  (void)state;
  spec("t1.json", "\"name\": 5");
  expect_bad_spec("t1.json", "t1.json:2:", "\"name\"", "string");
  spec("t2.json", "\"sizes\": {\"N\": \"big\"}");
  expect_bad_spec("t2.json", "t2.json:6:", "sizes.N", "integer");
  spec("t3.json", "\"arguments\": {\"o\": 1}");
  expect_bad_spec("t3.json", "t3.json:7:", "arguments");
  spec("t4.json", "\"parameters\": [1, 2]");
  expect_bad_spec("t4.json", "t4.json:8:", "parameters");
  spec("t5.json", "\"constraints\": \"U < 4\"");
  expect_bad_spec("t5.json", "t5.json:9:", "constraints");
  spec("t6.json", "\"metrics\": [\"N\"]");
  expect_bad_spec("t6.json", "t6.json:11:", "metrics");
  spec("t7.json", "\"parameters\": {\"U\": [1, {\"x\": 1}]}");
  expect_bad_spec("t7.json", "t7.json:8:", "parameters.U[1]");
  spec("t8.json", "\"tolerance\": {\"rtol\": \"small\"}");
  expect_bad_spec("t8.json", "t8.json:12:", "tolerance");
  spec("t9.json", "\"reference\": \"ref.c\"");
  expect_bad_spec("t9.json", "t9.json:10:", "reference");
  spec("t10.json", "\"seed\": \"x\"");
  expect_bad_spec("t10.json", "t10.json:12:", "seed");
  spec("t11.json", "\"size_defines\": \"yes\"");
  expect_bad_spec("t11.json", "t11.json:12:", "size_defines");
}

static void test_missing_fields(void **state) {
  (void)state;
  const char *fields[] = {"name", "language", "source", "entry", "arguments", "parameters"};
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
    char over[64], file[64];
    snprintf(over, sizeof over, "-\"%s\"", fields[i]);
    snprintf(file, sizeof file, "missing_%s.json", fields[i]);
    spec_v(file, (const char *const[]){over, NULL});
    expect_bad_spec(file, fields[i]);
  }
  spec("m_ref.json", "\"reference\": {\"language\": \"c\", \"source\": \"ref.c\"}");
  expect_bad_spec("m_ref.json", "m_ref.json:10:", "\"reference.entry\"");
  spec("m_arg.json", "\"arguments\": [{\"name\": \"o\", \"buffer\": \"N\"}]");
  expect_bad_spec("m_arg.json", "m_arg.json:7:", "\"arguments[0].type\"");
  spec("m_len.json", "\"arguments\": [{\"name\": \"o\", \"type\": \"float\"}]");
  expect_bad_spec("m_len.json", "m_len.json:7:", "arguments.o", "buffer");
}

static void test_unknown_words(void **state) {
  (void)state;
  spec("l.json", "\"language\": \"fortran\"");
  expect_bad_spec("l.json", "l.json:3:", "fortran");
  spec("rl.json", "\"reference\": {\"language\": \"cobol\", \"source\": \"ref.c\", \"entry\": \"kref\"}");
  expect_bad_spec("rl.json", "rl.json:10:", "reference", "cobol");
  spec("i.json", "\"arguments\": [{\"name\": \"o\", \"type\": \"float\", \"buffer\": \"N\", \"init\": \"ones\"}]");
  expect_bad_spec("i.json", "i.json:7:", "arguments.o.init", "ones");
  spec("i2.json", "\"arguments\": [{\"name\": \"o\", \"type\": \"float\", \"buffer\": \"N\", \"init\": {\"x\": 1}}]");
  expect_bad_spec("i2.json", "i2.json:7:", "arguments.o.init");
  spec("a.json", "\"arguments\": [{\"name\": \"o\", \"type\": \"float\", \"buffer\": \"N\", \"access\": \"rw\"}]");
  expect_bad_spec("a.json", "a.json:7:", "arguments.o.access", "rw");
  spec("ty.json", "\"arguments\": [{\"name\": \"o\", \"type\": \"half8\", \"buffer\": \"N\"}]");
  expect_bad_spec("ty.json", "ty.json:7:", "arguments.o.type", "half8");
}

static void test_bad_parameters(void **state) {
  (void)state;
  spec("p1.json", "\"parameters\": {\"U\": {\"range\": [8, 1]}}");
  expect_bad_spec("p1.json", "p1.json:8:", "parameters.U", "range");
  spec("p2.json", "\"parameters\": {\"U\": {\"pow2\": [0, 8]}}");
  expect_bad_spec("p2.json", "p2.json:8:", "parameters.U");
  spec("p3.json", "\"parameters\": {\"U\": {\"range\": [1, 8], \"step\": 0}}");
  expect_bad_spec("p3.json", "p3.json:8:", "parameters.U", "step");
  spec("p4.json", "\"parameters\": {\"U\": {\"range\": [1]}}");
  expect_bad_spec("p4.json", "p4.json:8:", "parameters.U");
  spec("p5.json", "\"parameters\": {\"U\": []}");
  expect_bad_spec("p5.json", "p5.json:8:", "parameters.U", "empty");
  spec("p6.json", "\"parameters\": {\"U\": 4}");
  expect_bad_spec("p6.json", "p6.json:8:", "parameters.U");
  spec("p7.json", "\"parameters\": {\"U\": {\"range\": [1, 8], \"step\": \"two\"}}");
  expect_bad_spec("p7.json", "p7.json:8:", "parameters.U", "step");
  spec("p8.json", "\"parameters\": {\"N\": [1, 2]}", "\"constraints\": []");
  expect_bad_spec("p8.json", "p8.json:6:", "N");
}

/* ---- expressions: the error names the line:column of the expression and the column in it ---- */

static void test_bad_expressions(void **state) {
  (void)state;
  spec("e1.json", "\"constraints\": [\"U <= 4\", \"U < * 2\"]");
  expect_bad_spec("e1.json", "e1.json:9:", "constraints[1]", "column 5");
  spec("e2.json", "\"metrics\": {\"GB/s\": \"8*N/(time_s\"}");
  expect_bad_spec("e2.json", "e2.json:11:", "metrics.GB/s", "column");
  spec("e3.json", "\"arguments\": [{\"name\": \"o\", \"type\": \"float\", \"buffer\": \"N+\", \"access\": \"write\"}]");
  expect_bad_spec("e3.json", "e3.json:7:", "arguments.o.buffer", "column 3");
  spec("e4.json", "\"arguments\": [{\"name\": \"n\", \"type\": \"int32\", \"value\": \"N**\"}]");
  expect_bad_spec("e4.json", "e4.json:7:", "arguments.n.value", "column");
  spec("e5.json", "\"global\": [\"N/\"]", "\"local\": [\"U\"]");
  expect_bad_spec("e5.json", "e5.json:12:", "global[0]", "column 3");
  spec("e6.json", "\"global\": [\"N\"]", "\"local\": [\"U)\"]");
  expect_bad_spec("e6.json", "e6.json:13:", "local[0]", "column 2");
  spec("e7.json", "\"global\": [{\"n\": 1}]");
  expect_bad_spec("e7.json", "e7.json:12:", "global[0]");
  spec("e8.json", "\"arguments\": [{\"name\": \"n\", \"type\": \"int32\", \"value\": [1]}]");
  expect_bad_spec("e8.json", "e8.json:7:", "arguments.n.value");
}

static void test_unknown_names(void **state) {
  (void)state;
  spec("u1.json", "\"constraints\": [\"U <= WG\"]");
  expect_bad_spec("u1.json", "u1.json:9:", "constraints[0]", "WG", "column 6");
  spec("u2.json", "\"metrics\": {\"GF\": \"2*M/time_s\"}");
  expect_bad_spec("u2.json", "u2.json:11:", "metrics.GF", "'M'");
  spec("u3.json", "\"arguments\": [{\"name\": \"n\", \"type\": \"int32\", \"value\": \"device.nope\"}]");
  expect_bad_spec("u3.json", "u3.json:7:", "arguments.n.value", "device.nope");
  spec("u4.json", "\"arguments\": [{\"name\": \"o\", \"type\": \"float\", \"buffer\": \"N*U\"}]");
  expect_bad_spec("u4.json", "u4.json:7:", "arguments.o.buffer", "parameters");
  spec("u5.json", "\"arguments\": [{\"name\": \"o\", \"type\": \"float\", \"buffer\": \"time_s\"}]");
  expect_bad_spec("u5.json", "u5.json:7:", "arguments.o.buffer");
}

/* ---- files that are not there ---- */

static void test_missing_files(void **state) {
  (void)state;
  run_out *r = malloc(sizeof *r);
  spec("s1.json", "\"source\": \"nope.c\"");
  expect_bad_spec("s1.json", "s1.json:4:", "nope.c");
  spec("s2.json", "\"reference\": {\"language\": \"c\", \"source\": \"nope_ref.c\", \"entry\": \"kref\"}");
  expect_bad_spec("s2.json", "s2.json:10:", "reference", "nope_ref.c");
  spec("s3.json", "\"arguments\": [{\"name\": \"a\", \"type\": \"float\", \"buffer\": \"N\", \"init\": {\"file\": "
                  "\"nope.bin\"}}, {\"name\": \"o\", \"type\": \"float\", \"buffer\": \"N\", \"access\": \"write\"}, "
                  "{\"name\": \"n\", \"type\": \"int32\", \"value\": \"N\"}]");
  expect_bad_spec("s3.json", "s3.json:7:", "arguments.a.init.file", "nope.bin");
  run(r, "tune", "/nope.json", "--db", F->db, "--quiet");
  expect_error(r, 1, "/nope.json");
  run(r, "best", "/nope.json", "--db", F->db);
  expect_error(r, 1, "/nope.json");
  run(r, "space", "count", "/nope.json");
  expect_error(r, 1, "/nope.json");
  run(r, "show", "--db", "/nope.db");
  expect_error(r, 1, "/nope.db");
  run(r, "export", "--format", "csv", "--db", "/nope.db");
  expect_error(r, 1, "/nope.db");
  free(r);
}

/* ---- the command line ---- */

static void test_bad_options(void **state) {
  (void)state;
  run_out *r = malloc(sizeof *r);
  const char *good = spec("opt.json", "\"name\": \"k\"");
  char path[256];
  snprintf(path, sizeof path, "%s", good);
  /* an unknown or unavailable device is a usage error (exit 2), like an unknown strategy */
  run(r, "tune", path, "--db", F->db, "--quiet", "--device", "nope:0");
  expect_error(r, 2, "nope:0");
  run(r, "tune", path, "--db", F->db, "--quiet", "--device", "opencl:9:9");
  expect_error(r, 2, "opencl:9:9");
  run(r, "space", "count", path, "--device", "nope:0");
  expect_error(r, 2, "nope:0");
  /* getopt_long conventions: unknown short options, missing values, flags given values */
  run(r, "tune", path, "--db", F->db, "-x");
  expect_error(r, 2, "unknown option -x");
  run(r, "tune", path, "--db", F->db, "--quiet", "--no-reuse=1");
  expect_error(r, 2, "--no-reuse takes no value");
  run(r, "tune", path, "--db", F->db, "--device", "--quiet");
  expect_error(r, 2, "option --device needs a value");
  run(r, "space", "sample", path, "-n");
  expect_error(r, 2, "option -n needs a value");
  run(r, "space", "sample", path, "--bogus=3");
  expect_error(r, 2, "unknown option --bogus");
  run(r, "best", "--db", F->db, "-q", path);
  expect_error(r, 2, "unknown option -q");
  /* numbers past what the option can hold are refused, not truncated or left to fail later */
  run(r, "space", "sample", path, "-n", "1000000000000");
  expect_error(r, 2, "-n 1000000000000", "from 1 to 1000000");
  run(r, "tune", path, "--db", F->db, "--quiet", "--min-runs", "4294967297");
  expect_error(r, 2, "--min-runs 4294967297", "from 1 to 256");
  run(r, "tune", path, "--db", F->db, "--quiet", "--batch", "4", "--compile-jobs", "0");
  expect_error(r, 2, "--compile-jobs 0", "from 1 to 256");
  run(r, "tune", path, "--db", F->db, "--quiet", "--strategy", "annealing_x");
  expect_error(r, 2, "annealing_x");
  run(r, "tune", path, "--db", F->db, "--quiet", "--frobnicate", "1");
  expect_error(r, 2, "--frobnicate");
  run(r, "tune", path, "--db", F->db, "--quiet", "--size", "Q=4");
  expect_error(r, 2, "Q=4");
  run(r, "tune", path, "--db", F->db, "--quiet", "--size", "N=big");
  expect_error(r, 2, "N=big");
  run(r, "tune", path, "--db", F->db, "--quiet", "--size", "N");
  expect_error(r, 2, "--size N");
  run(r, "tune", path, "--db", F->db, "--quiet", "--budget", "lots");
  expect_error(r, 2, "--budget", "lots");
  run(r, "tune", path, "--db", F->db, "--quiet", "--budget", "-3");
  expect_error(r, 2, "--budget");
  run(r, "tune", path, "--db", F->db, "--quiet", "--budget", "5x");
  expect_error(r, 2, "--budget", "5x");
  run(r, "tune", path, "--db", F->db, "--quiet", "--seed", "x");
  expect_error(r, 2, "--seed");
  run(r, "tune", path, "--db", F->db, "--quiet", "--timeout", "soon");
  expect_error(r, 2, "--timeout");
  run(r, "tune", path, "--db", F->db, "--quiet", "--compile-timeout", "0");
  expect_error(r, 2, "--compile-timeout");
  run(r, "tune", path, "--db", F->db, "--quiet", "--setup-timeout", "-1");
  expect_error(r, 2, "--setup-timeout");
  run(r, "tune", path, "--db", F->db, "--quiet", "--warmup", "-1");
  expect_error(r, 2, "--warmup -1", "0 or more");
  run(r, "tune", path, "--db", F->db, "--quiet", "--warmup", "long");
  expect_error(r, 2, "--warmup long");
  run(r, "tune", path, "--db", F->db, "--quiet", "--confirm", "0");
  expect_error(r, 2, "--confirm");
  run(r, "tune", path, "--db", F->db, "--quiet", "--confirm", "3", "--confirm-runs", "x");
  expect_error(r, 2, "--confirm-runs");
  run(r, "tune", path, "--db", F->db, "--quiet", "--confirm", "65");
  expect_error(r, 2, "at most 64");
  run(r, "tune", path, "--db", F->db, "--quiet", "--budget");
  expect_error(r, 2, "hetune tune: ", "--budget");
  run(r, "tune", "--db", F->db);
  expect_error(r, 2, "SPEC");
  run(r, "space", "count", path, "-n", "x");
  expect_error(r, 2, "-n");
  run(r, "export", "--format", "xml", "--db", F->db);
  expect_error(r, 2, "--format");
  run(r, "export", "--format", "csv", "--db", F->db, "--output", "/nope/out.csv");
  expect_error(r, 1, "/nope/out.csv");
  run(r, "export", "--format", "csv", "--db", F->db, "--output", "/dev/full");
  expect_error(r, 1, "/dev/full");
  run(r, "frobnicate");
  expect_error(r, 2, "frobnicate");
  run(r, "devices", "extra");
  expect_error(r, 2, "devices");
  free(r);
}

static void test_help(void **state) {
  (void)state;
  run_out *r = malloc(sizeof *r);
  const char *cmds[] = {"devices", "tune", "best", "show", "export", "space", "replay", "strategy-bench"};
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
    run(r, cmds[i], "--help");
    if (r->rc != 0 || !strstr(r->out, "usage: hetune") || r->err[0])
      fail_msg("hetune %s --help: exit %d\nstdout: %s\nstderr: %s", cmds[i], r->rc, r->out, r->err);
  }
  run(r, "--help");
  assert_int_equal(r->rc, 0);
  assert_non_null(strstr(r->out, "usage: hetune"));
  free(r);
}

/* ---- databases ---- */

static char *read_all(const char *path, size_t *len) {
  char *data = NULL;
  assert_int_equal(ht_read_file(path, &data, len), HT_OK);
  return data;
}

static void expect_untouched(const char *path, const char *before, size_t len) {
  size_t after_len;
  char *after = read_all(path, &after_len);
  assert_int_equal(after_len, len);
  assert_memory_equal(after, before, len);
  free(after);
}

static void test_not_a_database(void **state) {
  (void)state;
  run_out *r = malloc(sizeof *r);
  char spec_path[256], db[256];
  snprintf(spec_path, sizeof spec_path, "%s", spec("db.json", "\"name\": \"k\""));
  snprintf(db, sizeof db, "%s", in_dir("random.db"));
  char bytes[4096];
  srand(7);
  for (size_t i = 0; i < sizeof bytes; i++) bytes[i] = (char)rand();
  FILE *fp = fopen(db, "wb");
  assert_non_null(fp);
  fwrite(bytes, 1, sizeof bytes, fp);
  fclose(fp);
  run(r, "tune", spec_path, "--db", db, "--quiet");
  expect_error(r, 1, db);
  run(r, "show", "--db", db);
  expect_error(r, 1, db);
  expect_untouched(db, bytes, sizeof bytes);
  assert_int_equal(access(in_dir("random.db-wal"), F_OK), -1);
  free(r);
}

static void test_foreign_database(void **state) {
  (void)state;
  run_out *r = malloc(sizeof *r);
  char spec_path[256], db[256], cmd[600];
  snprintf(spec_path, sizeof spec_path, "%s", spec("db.json", "\"name\": \"k\""));
  snprintf(db, sizeof db, "%s", in_dir("foreign.db"));
  snprintf(cmd, sizeof cmd, "sqlite3 '%s' 'create table photos(id integer primary key, name text);"
                            "insert into photos values (1, \"cat\")' 2>/dev/null", db);
  if (system(cmd) != 0) {
    free(r);
    skip();
  }
  size_t len;
  char *before = read_all(db, &len);
  run(r, "tune", spec_path, "--db", db, "--quiet");
  expect_error(r, 1, db, "not a hetune database");
  run(r, "export", "--format", "csv", "--db", db);
  expect_error(r, 1, db);
  expect_untouched(db, before, len);
  free(before);
  free(r);
}

/* Tunes into db and returns how many evaluations `hetune export` then lists. */
static int count_evals(const char *db) {
  run_out *r = malloc(sizeof *r);
  run(r, "export", "--format", "csv", "--db", db);
  if (r->rc) fail_msg("export failed: %s", r->err);
  int lines = 0;
  for (const char *p = r->out; (p = strchr(p, '\n')); p++) lines++;
  free(r);
  return lines - 1; /* the header */
}

static void tune_into(const char *spec_path, const char *db, const char *size) {
  run_out *r = malloc(sizeof *r);
  run(r, "tune", spec_path, "--db", db, "--quiet", "--size", size);
  if (r->rc) fail_msg("tune into %s failed: %s", db, r->err);
  free(r);
}

static void test_readonly_database(void **state) {
  (void)state;
  if (geteuid() != 0) skip(); /* needs root to become nobody; non-root permissions stop us anyway */
  run_out *r = malloc(sizeof *r);
  char spec_path[256], dir[200], db[256], cache[256];
  snprintf(spec_path, sizeof spec_path, "%s", spec("ro.json", "\"name\": \"k\""));
  snprintf(dir, sizeof dir, "%s/ro", F->dir);
  snprintf(db, sizeof db, "%s/hetune.db", dir);
  snprintf(cache, sizeof cache, "%s", in_dir("cache"));
  assert_int_equal(mkdir(dir, 0755), 0);
  /* nobody's own compile cache: hetune refuses one that someone else could write */
  assert_int_equal(mkdir(cache, 0700), 0);
  assert_int_equal(chown(cache, NOBODY, NOBODY), 0);
  tune_into(spec_path, db, "N=256");
  int before = count_evals(db);
  assert_true(before > 0);
  assert_int_equal(chmod(F->dir, 0755), 0);
  assert_int_equal(chmod(spec_path, 0644), 0);
  assert_int_equal(chmod(db, 0444), 0);
  assert_int_equal(chmod(dir, 0555), 0);
  char *own_cache = getenv("HETUNE_CACHE_DIR") ? strdup(getenv("HETUNE_CACHE_DIR")) : NULL;
  setenv("HETUNE_CACHE_DIR", cache, 1);
  run_opts o = {.as_nobody = 1};
  const char *sizes[] = {"N=256", "N=512"}; /* all stored, then none stored */
  for (int i = 0; i < 2; i++) {
    run_as(r, &o, "tune", spec_path, "--db", db, "--quiet", "--size", sizes[i], (char *)NULL);
    expect_error(r, 1, db, "read-only");
  }
  run_as(r, &o, "show", "k", "--db", db, (char *)NULL);
  assert_int_equal(r->rc, 0);
  if (own_cache) setenv("HETUNE_CACHE_DIR", own_cache, 1);
  else unsetenv("HETUNE_CACHE_DIR");
  free(own_cache);
  chmod(dir, 0755);
  chmod(F->dir, 0700);
  assert_int_equal(count_evals(db), before);
  free(r);
}

/* A full disk: a tiny tmpfs filled up after the first tuning (as root), else a file size limit. */
static void test_full_disk(void **state) {
  (void)state;
  run_out *r = malloc(sizeof *r);
  char spec_path[256], dir[200], db[256], fill[256];
  snprintf(spec_path, sizeof spec_path, "%s", spec("full.json", "\"name\": \"k\""));
  snprintf(dir, sizeof dir, "%s/full", F->dir);
  snprintf(db, sizeof db, "%s/hetune.db", dir);
  snprintf(fill, sizeof fill, "%s/fill", dir);
  assert_int_equal(mkdir(dir, 0755), 0);
  int mounted = mount("tmpfs", dir, "tmpfs", 0, "size=512k") == 0;
  tune_into(spec_path, db, "N=256");
  int before = count_evals(db);
  run_opts o = {0};
  if (mounted) {
    FILE *fp = fopen(fill, "wb");
    assert_non_null(fp);
    static const char zeros[4096];
    while (fwrite(zeros, 1, sizeof zeros, fp) == sizeof zeros && fflush(fp) == 0) {
    }
    fclose(fp);
  } else {
    struct stat sb;
    assert_int_equal(stat(db, &sb), 0);
    o.max_fsize = (rlim_t)sb.st_size; /* the database may not grow, nor its journal exceed it */
  }
  run_as(r, &o, "tune", spec_path, "--db", db, "--quiet", "--size", "N=512", "--no-reuse", (char *)NULL);
  expect_error(r, 1, db);
  if (mounted && !strstr(r->err, "disk full")) fail_msg("a full disk is not named as such: %s", r->err);
  if (mounted) unlink(fill);
  assert_int_equal(count_evals(db), before);
  if (mounted) umount(dir);
  free(r);
}

/* ---- replay and strategy-bench on a space recorded by brute force ---- */

static void test_replay_and_bench(void **state) {
  (void)state;
  run_out *r = malloc(sizeof *r);
  char csv[256], plots[256], svg[300];
  const char *path = spec("rec.json", "\"name\": \"krec\"", "\"parameters\": {\"U\": [1, 2, 4], \"V\": [1, 2, 3, 4, 5]}");
  run(r, "tune", path, "--db", F->db, "--quiet", "--strategy", "brute_force", "--in-process");
  if (r->rc) fail_msg("recording failed: %s", r->err);
  run(r, "replay", "--db", F->db, "--kernel", "krec", "--strategy", "random", "--seed", "3");
  if (r->rc || !strstr(r->out, "15 of 15 configs") || !strstr(r->out, "0.0% slower"))
    fail_msg("replay from the store: exit %d\n%s%s", r->rc, r->out, r->err);
  snprintf(csv, sizeof csv, "%s/krec.csv", F->dir);
  run(r, "export", "--format", "csv", "--kernel", "krec", "--db", F->db, "--output", csv);
  assert_int_equal(r->rc, 0);
  snprintf(plots, sizeof plots, "%s/plots", F->dir);
  run(r, "strategy-bench", csv, "--seeds", "3", "--strategies", "random,brute_force", "--plot", plots, "--quiet");
  if (r->rc || !strstr(r->out, "| random |") || !strstr(r->out, "| brute_force |"))
    fail_msg("strategy-bench: exit %d\n%s%s", r->rc, r->out, r->err);
  snprintf(svg, sizeof svg, "%s/overall.svg", plots);
  assert_int_equal(access(svg, R_OK), 0);
  snprintf(svg, sizeof svg, "%s/krec.tsv", plots);
  assert_int_equal(access(svg, R_OK), 0);
  run(r, "strategy-bench", csv, "--strategies", "nope");
  expect_error(r, 2, "unknown strategy 'nope'");
  run(r, "strategy-bench", csv, "--start", "0.99");
  expect_error(r, 2, "--start");
  run(r, "strategy-bench", csv, "--aggregate", "median");
  expect_error(r, 2, "--aggregate");
  run(r, "strategy-bench", csv, "--first-seed", "-3");
  expect_error(r, 2, "--first-seed");
  run(r, "strategy-bench", csv, "--seeds", "2", "--first-seed", "40", "--strategies", "random", "--quiet");
  if (r->rc || !strstr(r->out, "| random |")) fail_msg("strategy-bench --first-seed: exit %d\n%s%s", r->rc, r->out, r->err);
  run(r, "strategy-bench", csv, "--seeds", "2", "--strategies", "random", "--aggregate", "value", "--quiet");
  if (r->rc || !strstr(r->out, "| random |")) fail_msg("strategy-bench --aggregate value: exit %d\n%s%s", r->rc, r->out, r->err);
  run(r, "replay", csv, "--options", "bogus=1");
  expect_error(r, 1, "bogus");
  run(r, "replay", csv, "--strategy", "bayes", "--options", "kappa=2x");
  expect_error(r, 1, "kappa=2x: expected a number");
  run(r, "replay", csv, "--strategy", "greedy_ils", "--options", "restart=abc");
  expect_error(r, 1, "restart=abc: expected a whole number");
  run(r, "replay", "--db", F->db);
  expect_error(r, 2, "--kernel");
  run(r, "replay", in_dir("missing.csv"));
  expect_error(r, 1, "missing.csv");
  run(r, "replay", in_dir("k.c"));
  expect_error(r, 1, "k.c");
  free(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_good_spec_tunes),    cmocka_unit_test(test_best_uses_median_of_repeats),
    cmocka_unit_test(test_confirm_summary),    cmocka_unit_test(test_json_syntax_error),
    cmocka_unit_test(test_wrong_field_types),  cmocka_unit_test(test_missing_fields),
    cmocka_unit_test(test_unknown_words),      cmocka_unit_test(test_bad_parameters),
    cmocka_unit_test(test_bad_expressions),    cmocka_unit_test(test_unknown_names),
    cmocka_unit_test(test_missing_files),      cmocka_unit_test(test_bad_options),
    cmocka_unit_test(test_help),               cmocka_unit_test(test_not_a_database),
    cmocka_unit_test(test_foreign_database),   cmocka_unit_test(test_readonly_database),
    cmocka_unit_test(test_full_disk),          cmocka_unit_test(test_replay_and_bench),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
