/* hetune tune's outcome as a user sees it: a failed evaluation's line carries its reason, -v
 * prints it whole, the exit code says whether a config succeeded (0), none did (1), the command
 * line or device was wrong (2) or Ctrl-C stopped the run (130, with what was measured stored), a
 * noisy best time is flagged, and best / show take a spec file or a kernel name alike. */
#define _GNU_SOURCE /* nftw */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include "cli_test_util.h"

static char dir[64];
static char path_buf[320];

static const char *in_dir(const char *name) {
  snprintf(path_buf, sizeof path_buf, "%s/%s", dir, name);
  return path_buf;
}

static void write_text(const char *name, const char *text) {
  FILE *fp = fopen(in_dir(name), "w");
  assert_non_null(fp);
  fputs(text, fp);
  assert_int_equal(fclose(fp), 0);
}

/* NAME.json: kernel ENTRY of SOURCE, one float output of N elements, parameter U, reference ref.c */
static void write_spec(const char *name, const char *kernel, const char *source, const char *params,
                       const char *constraints) {
  char text[2048], file[96];
  snprintf(text, sizeof text,
           "{\n  \"name\": \"%s\",\n  \"language\": \"c\",\n  \"source\": \"%s\",\n  \"entry\": \"k\",\n"
           "  \"sizes\": {\"N\": 1024},\n"
           "  \"arguments\": [{\"name\": \"o\", \"type\": \"float\", \"buffer\": \"N\", \"access\": \"write\"},\n"
           "                {\"name\": \"a\", \"type\": \"float\", \"buffer\": \"N\"},\n"
           "                {\"name\": \"n\", \"type\": \"int32\", \"value\": \"N\"}],\n"
           "  \"parameters\": %s,\n  \"constraints\": [%s],\n"
           "  \"reference\": {\"language\": \"c\", \"source\": \"ref.c\", \"entry\": \"kref\"}\n}\n",
           kernel, source, params, constraints);
  snprintf(file, sizeof file, "%s.json", name);
  write_text(file, text);
}

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/ht_cli_tune_XXXXXX");
  if (!mkdtemp(dir)) return -1;
  write_text("ref.c", "void kref(float *o, const float *a, int n){for(int i=0;i<n;i++)o[i]=a[i]*2;}\n");
  write_text("good.c", "void k(float *o, const float *a, int n){for(int i=0;i<n;i++)o[i]=a[i]*U;}\n");
  write_text("broken.c", "void k(float *o, const float *a, int n){ o[0] = undeclared_name; }\n");
  /* about 50 ms per call, so a run of a few configs lasts long enough to be interrupted */
  write_text("slow.c", "#include <time.h>\n"
                       "void k(float *o, const float *a, int n){struct timespec t = {0, 50000000}; nanosleep(&t, 0);\n"
                       "  for(int i=0;i<n;i++)o[i]=a[i]*2;}\n");
  /* every other call sleeps 30 ms longer: its times cannot reach a 10% relative standard deviation */
  write_text("noisy.c", "#include <time.h>\n"
                        "void k(float *o, const float *a, int n){static int c; struct timespec t = {0, c++ % 2 ? "
                        "31000000 : 1000000}; nanosleep(&t, 0);\n  for(int i=0;i<n;i++)o[i]=a[i]*2;}\n");
  write_spec("good", "kgood", "good.c", "{\"U\": [1, 2, 3]}", "");
  write_spec("broken", "kbroken", "broken.c", "{\"U\": [1, 2]}", "");
  write_spec("slow", "kslow", "slow.c", "{\"U\": {\"range\": [1, 40]}}", "");
  write_spec("noisy", "knoisy", "noisy.c", "{\"U\": [1]}", "");
  write_spec("huge", "khuge", "good.c",
             "{\"U\": [2], \"A\": {\"range\": [1, 4096]}, \"B\": {\"range\": [1, 4096]}, "
             "\"C\": {\"range\": [1, 4096]}}",
             "\"(A + B + C) % 7 == 1\"");
  return 0;
}

static int teardown(void **state) {
  (void)state;
  rm_tree(dir);
  return 0;
}

static const char *db_path(const char *tag) {
  static char db[2][320];
  static int which;
  which ^= 1;
  snprintf(db[which], sizeof db[which], "%s/%s.db", dir, tag);
  return db[which];
}

static const char *spec_path(const char *name) {
  static char p[2][320];
  static int which;
  which ^= 1;
  snprintf(p[which], sizeof p[which], "%s/%s.json", dir, name);
  return p[which];
}

static int64_t count_rows(const char *db, const char *sql) {
  sqlite3 *h;
  sqlite3_stmt *q;
  int64_t n = -1;
  assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  if (sqlite3_prepare_v2(h, sql, -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
    n = sqlite3_column_int64(q, 0);
  sqlite3_finalize(q);
  sqlite3_close(h);
  return n;
}

/* ---- failures you can read, and the exit code when nothing succeeded ---- */

static void test_failure_lines_and_exit_1(void **state) {
  (void)state;
  run_out *r = malloc(sizeof *r);
  const char *spec = spec_path("broken"), *db = db_path("broken");
  run(r, "tune", spec, "--db", db);
  if (r->rc != 1) fail_msg("a spec whose every config fails: exit %d\n%s", r->rc, r->err);
  /* each progress line names the failure and the compiler's first line, naming the user's source */
  if (!strstr(r->err, "U=1: compile: ") || !strstr(r->err, "undeclared_name"))
    fail_msg("progress lines lack the compiler message:\n%s", r->err);
  if (!strstr(r->err, "no config succeeded; the first failure was U=") || !strstr(r->out, "2 failed (2 compile)"))
    fail_msg("summary:\n%s\n%s", r->out, r->err);
  /* quiet: the summary, and one error line with the first failure's reason; exit 1 also when reused */
  run(r, "tune", spec, "--db", db, "--quiet");
  const char *nl = strchr(r->err, '\n');
  if (r->rc != 1 || !nl || nl[1] || !strstr(r->err, "no config succeeded") || !strstr(r->err, "undeclared_name") ||
      !strstr(r->out, "(measured 0, reused 2), 2 failed (2 compile)"))
    fail_msg("tune --quiet, every config failing and stored: exit %d\n%s\n%s", r->rc, r->out, r->err);
  free(r);
}

/* A kernel whose output is wrong: the line says which element and what was expected. */
static void test_correctness_reason(void **state) {
  (void)state;
  run_out *r = malloc(sizeof *r);
  run(r, "tune", spec_path("good"), "--db", db_path("good_wrong"), "--strategy", "brute_force", "--in-process");
  if (r->rc != 0) fail_msg("exit %d: %s", r->rc, r->err);
  /* U=1 and U=3 compute a*1 and a*3 where the reference computes a*2 */
  if (!strstr(r->err, "U=1: correctness: o[") || !strstr(r->err, "expected") || !strstr(r->err, "U=3: correctness: "))
    fail_msg("correctness lines:\n%s", r->err);
  if (!strstr(r->out, "best: U=2") || !strstr(r->out, "2 failed (2 correctness)")) fail_msg("summary:\n%s", r->out);
  free(r);
}

/* -v prints the whole reason under the line: the compiler's full output names the source line. */
static void test_verbose_prints_whole_reason(void **state) {
  (void)state;
  run_out *r = malloc(sizeof *r);
  run(r, "tune", spec_path("broken"), "--db", db_path("broken_v"), "-v", "--budget", "1");
  assert_int_equal(r->rc, 1);
  const char *line = strstr(r->err, "[1/1] U=");
  if (!line || !strstr(line, "\n    ")) fail_msg("-v: no indented reason under the failure line:\n%s", r->err);
  assert_null(strstr(r->err, "-v prints each failure"));
  free(r);
}

/* ---- Ctrl-C: exit 130, and what finished is stored ---- */

/* Starts the CLI with argv, its stream fd (1 or 2) into a pipe whose read end goes to *rd, the
 * other to /dev/null. */
static pid_t start_cli(char **argv, int fd, int *rd) {
  int p[2];
  assert_int_equal(pipe(p), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dup2(p[1], fd);
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 3 - fd);
    execv(argv[0], argv);
    _exit(127);
  }
  close(p[1]);
  *rd = p[0];
  return pid;
}

static void test_ctrl_c_exits_130(void **state) {
  (void)state;
  const char *db = db_path("slow");
  char *argv[] = {HT_CLI, "tune", (char *)spec_path("slow"), "--db", (char *)db, "--strategy", "random",
                  "--max-runs", "2", "--min-runs", "2", NULL};
  int pe;
  pid_t pid = start_cli(argv, 2, &pe);
  /* wait for two finished evaluations (two progress lines), then interrupt */
  char buf[8192];
  size_t len = 0;
  int lines = 0;
  time_t deadline = time(NULL) + RUN_TIMEOUT_S;
  while (lines < 2 && time(NULL) < deadline) {
    struct pollfd p = {pe, POLLIN, 0};
    if (poll(&p, 1, 1000) <= 0) continue;
    ssize_t n = read(pe, buf + len, sizeof buf - 1 - len);
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; i++) lines += buf[len + (size_t)i] == '\n';
    len += (size_t)n;
  }
  buf[len] = '\0';
  kill(pid, SIGINT);
  int status;
  waitpid(pid, &status, 0);
  close(pe);
  if (lines < 2) fail_msg("no progress before the deadline:\n%s", buf);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 130)
    fail_msg("after Ctrl-C: status %d (expected exit 130)", status);
  int64_t stored = count_rows(db, "SELECT count(*) FROM evaluations WHERE status = 'ok'");
  if (stored < 2 || stored >= 40) fail_msg("%lld evaluations stored after Ctrl-C, expected 2..39", (long long)stored);
  assert_int_equal(count_rows(db, "SELECT count(*) FROM sessions WHERE status = 'interrupted'"), 1);
}

/* ---- a best time whose runs never settled is flagged ---- */

static void test_noisy_best_is_flagged(void **state) {
  (void)state;
  run_out *r = malloc(sizeof *r);
  run(r, "tune", spec_path("noisy"), "--db", db_path("noisy"), "--quiet", "--min-runs", "4", "--max-runs", "4");
  if (r->rc != 0) fail_msg("exit %d: %s", r->rc, r->err);
  if (!strstr(r->out, "warning: the best time's rsd") || !strstr(r->out, "above the 10% target"))
    fail_msg("a best time at a high rsd is not flagged:\n%s", r->out);
  run(r, "tune", spec_path("good"), "--db", db_path("calm"), "--quiet", "--strategy", "brute_force");
  assert_int_equal(r->rc, 0);
  if (strstr(r->out, "warning:") && !strstr(r->out, "rsd")) fail_msg("unexpected warning:\n%s", r->out);
  free(r);
}

/* ---- a space too large to count first (6.9e10 configs) is tuned at once ---- */

static void test_huge_space_starts_at_once(void **state) {
  (void)state;
  run_out *r = malloc(sizeof *r);
  static const char *const strategies[] = {"brute_force", "random", "auto"};
  for (int i = 0; i < 3; i++) {
    run(r, "tune", spec_path("huge"), "--db", db_path("huge"), "--quiet", "--budget", "2", "--strategy", strategies[i]);
    if (r->rc != 0 || !strstr(r->out, "space: about ") || !strstr(r->out, "evaluated 2 "))
      fail_msg("tune --strategy %s on a huge space: exit %d\n%s%s", strategies[i], r->rc, r->out, r->err);
  }
  run(r, "space", "count", spec_path("huge"), "--estimate");
  if (r->rc != 0 || !strstr(r->out, "about 9") || !strstr(r->out, "valid of 68719476736")) /* about 9.8e9 */
    fail_msg("--estimate:\n%s", r->out);
  run(r, "space", "count", spec_path("huge"), "--time", "0.5");
  if (r->rc != 0 || !strstr(r->out, "at least ") || !strstr(r->out, "counting stopped")) fail_msg("--time:\n%s", r->out);
  free(r);
}

/* ---- Ctrl-C stops a long count with the configs found so far ---- */

/* 1 once process pid catches SIGINT (its handler is in place), from /proc/PID/status. */
static int catches_sigint(pid_t pid) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "r");
  unsigned long long mask = 0;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "SigCgt: %llx", &mask) == 1) break;
  if (f) fclose(f);
  return (mask >> (SIGINT - 1)) & 1;
}

static void test_ctrl_c_stops_count(void **state) {
  (void)state;
  char *argv[] = {HT_CLI, "space", "count", (char *)spec_path("huge"), NULL};
  int po;
  pid_t pid = start_cli(argv, 1, &po);
  for (time_t deadline = time(NULL) + RUN_TIMEOUT_S; !catches_sigint(pid) && time(NULL) < deadline;) usleep(10000);
  kill(pid, SIGINT);
  char out[4096];
  size_t len = 0;
  for (ssize_t n; len < sizeof out - 1 && (n = read(po, out + len, sizeof out - 1 - len)) > 0;) len += (size_t)n;
  out[len] = '\0';
  close(po);
  int status;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 130) fail_msg("after Ctrl-C: status %d (expected exit 130)", status);
  if (!strstr(out, "at least ") || !strstr(out, "counting stopped")) fail_msg("no count so far after Ctrl-C:\n%s", out);
}

/* ---- two configs whose values share their first 300 characters are two configs ---- */

static void test_long_values_do_not_collide(void **state) {
  (void)state;
  char params[1024], a[301];
  memset(a, 'a', 300);
  a[300] = '\0';
  snprintf(params, sizeof params, "{\"U\": [2], \"S\": [\"%s1\", \"%s2\"]}", a, a);
  /* the kernel adds the last character of S, less '1': right for ...1, wrong for ...2, so a
   * value cut short on its way to the compiler (one binary for both) shows too */
  write_text("long.c", "#define STR2(x) #x\n#define STR(x) STR2(x)\n"
                       "void k(float *o, const float *a, int n){for(int i=0;i<n;i++)"
                       "o[i]=a[i]*U+(STR(S)[sizeof STR(S)-2]-'1');}\n");
  write_spec("long", "klong", "long.c", params, "");
  run_out *r = malloc(sizeof *r);
  run(r, "tune", spec_path("long"), "--db", db_path("long"), "--quiet", "--strategy", "brute_force");
  if (r->rc != 0 || !strstr(r->out, "evaluated 2 (measured 2, reused 0), 1 failed (1 correctness)"))
    fail_msg("tune:\n%s%s", r->out, r->err);
  free(r);
}

/* ---- best and show take a spec file or a kernel name; tune defaults to auto ---- */

static void test_best_and_show_forms(void **state) {
  (void)state;
  run_out *r = malloc(sizeof *r);
  const char *db = db_path("forms"), *spec = spec_path("good");
  run(r, "tune", spec, "--db", db, "--quiet");
  assert_int_equal(r->rc, 0);
  char by_file[sizeof r->out];
  run(r, "best", spec, "--db", db);
  assert_int_equal(r->rc, 0);
  snprintf(by_file, sizeof by_file, "%s", r->out);
  run(r, "best", "kgood", "--db", db);
  assert_int_equal(r->rc, 0);
  assert_string_equal(r->out, by_file);
  assert_non_null(strstr(by_file, "U=2\n"));
  run(r, "show", spec, "--db", db);
  assert_int_equal(r->rc, 0);
  if (!strstr(r->out, "fastest configs of kgood") || !strstr(r->out, " auto ")) fail_msg("show SPEC:\n%s", r->out);
  run(r, "show", "kgood", "--db", db);
  assert_int_equal(r->rc, 0);
  assert_non_null(strstr(r->out, "fastest configs of kgood"));
  /* the best as C #defines for a build, and as JSON */
  run(r, "best", spec, "--db", db, "--format", "header");
  if (r->rc || !strstr(r->out, "#ifndef HETUNE_BEST_KGOOD_H") || !strstr(r->out, "\n#define U 2\n"))
    fail_msg("best --format header:\n%s%s", r->out, r->err);
  run(r, "best", "kgood", "--db", db, "--format", "json");
  json_error_t jerr;
  json_t *j = json_loads(r->out, 0, &jerr);
  if (r->rc || !j || json_integer_value(json_object_get(json_object_get(json_array_get(j, 0), "config"), "U")) != 2)
    fail_msg("best --format json:\n%s%s", r->out, r->err);
  json_decref(j);
  run(r, "best", "kgood", "--db", db, "--format", "xml");
  expect_error(r, 2, "--format xml");
  run(r, "best", "kgood", "--db", db, "--size", "N=4");
  expect_error(r, 2, "--size needs a SPEC file");
  run(r, "best", "nokernel", "--db", db);
  expect_error(r, 1, "no successful evaluation of nokernel");
  free(r);
}

/* ---- options: --opt=value and -- ---- */

static void test_option_forms(void **state) {
  (void)state;
  run_out *r = malloc(sizeof *r);
  const char *db = db_path("forms2");
  char dbopt[400];
  snprintf(dbopt, sizeof dbopt, "--db=%s", db);
  run(r, "tune", "--budget=2", dbopt, "-q", "--", spec_path("good"));
  if (r->rc != 0) fail_msg("tune --budget=2 --db=... -q -- SPEC: exit %d\n%s", r->rc, r->err);
  assert_non_null(strstr(r->out, "evaluated 2 "));
  assert_string_equal(r->err, "");
  run(r, "space", "sample", spec_path("good"), "-n2");
  assert_int_equal(r->rc, 0);
  free(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_failure_lines_and_exit_1), cmocka_unit_test(test_correctness_reason),
    cmocka_unit_test(test_verbose_prints_whole_reason), cmocka_unit_test(test_ctrl_c_exits_130),
    cmocka_unit_test(test_noisy_best_is_flagged),   cmocka_unit_test(test_best_and_show_forms),
    cmocka_unit_test(test_option_forms),             cmocka_unit_test(test_huge_space_starts_at_once),
    cmocka_unit_test(test_ctrl_c_stops_count),
    cmocka_unit_test(test_long_values_do_not_collide),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
