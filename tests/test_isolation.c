/* The worker's isolation against kernels that leave things behind: a config's failure is its own,
 * every wait is bounded, and no process outlives the runner. Kernels in tests/data/misbehave. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "hetune/hetune.h"

#define DATA HT_SOURCE_DIR "/tests/data/misbehave/"

static char tmpdir[256], pidfile[300];

static ht_spec *load(const char *file) {
  ht_spec *s = NULL;
  ht_status st = ht_spec_load(file, &s);
  if (st) fprintf(stderr, "%s\n", ht_last_error());
  assert_int_equal(st, HT_OK);
  return s;
}

static void fast_options(ht_runner_options *o) {
  ht_runner_options_default(o);
  o->timeout_s = 2;
  o->max_runs = 5;
  o->max_time_s = 0.05;
}

static ht_config mode(int m) {
  ht_config c;
  memset(&c, 0, sizeof c);
  c.n = 1;
  c.idx[0] = m;
  return c;
}

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* A process that no longer runs: gone, or a zombie nobody reaped yet. */
static int is_gone(pid_t pid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return 1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *close_paren = strrchr(buf, ')');
  return !close_paren || close_paren[2] == 'Z' || close_paren[2] == 'X';
}

/* Pids the kernels and the compiler wrapper noted: how many, and how many still run after waiting
 * up to `wait_s` for them to go. */
static int noted_running(double wait_s, int *noted) {
  double until = ht_now() + wait_s;
  for (;;) {
    int n = 0, running = 0, pid;
    FILE *f = fopen(pidfile, "r");
    while (f && fscanf(f, "%d", &pid) == 1) {
      n++;
      running += !is_gone(pid);
    }
    if (f) fclose(f);
    if (noted) *noted = n;
    if (!running || ht_now() > until) return running;
    sleep_s(0.02);
  }
}

static void kill_noted(void) {
  int pid;
  FILE *f = fopen(pidfile, "r");
  while (f && fscanf(f, "%d", &pid) == 1)
    if (pid > 1) kill(pid, SIGKILL);
  if (f) fclose(f);
  unlink(pidfile);
}

static ht_runner *runner(const ht_spec *spec, const ht_runner_options *o) {
  ht_runner *r = NULL;
  ht_status st = ht_runner_create(spec, "c", o, &r);
  if (st) fail_msg("%s", ht_last_error());
  return r;
}

static ht_eval_status eval(ht_runner *r, int m, ht_result *res) {
  ht_config c = mode(m);
  assert_int_equal(ht_runner_evaluate(r, &c, res), HT_OK);
  if (res->status != HT_EVAL_OK) fprintf(stderr, "MODE=%d: %s: %s\n", m, ht_eval_status_name(res->status), res->message);
  return res->status;
}

/* A kernel leaves a thread sleeping in its own code. Unloading the kernel under it would crash the
 * worker during the next, correct config and record that config as failed. */
static void test_leftover_thread_blames_no_other_config(void **state) {
  (void)state;
  ht_spec *spec = load(DATA "leftover_c.json");
  ht_runner_options o;
  fast_options(&o);
  ht_runner *r = runner(spec, &o);
  ht_result *res = malloc(sizeof *res);
  assert_int_equal(eval(r, 1, res), HT_EVAL_OK);
  sleep_s(0.6); /* the thread wakes up */
  for (int i = 0; i < 3; i++) assert_int_equal(eval(r, 0, res), HT_EVAL_OK);
  assert_int_equal(ht_runner_worker_starts(r), 2); /* the worker that ran MODE 1 was not reused */
  free(res);
  ht_runner_destroy(r);
  ht_spec_destroy(spec);
}

/* Processes a kernel forks (a child; a grandchild whose parent exited) end with its worker, before
 * the next config runs; the next config is not affected. */
static void test_forked_processes_end_with_the_worker(void **state) {
  (void)state;
  ht_spec *spec = load(DATA "leftover_c.json");
  ht_runner_options o;
  fast_options(&o);
  ht_runner *r = runner(spec, &o);
  ht_result *res = malloc(sizeof *res);
  int noted = 0;
  for (int m = 2; m <= 4; m += 2) {
    assert_int_equal(eval(r, m, res), HT_EVAL_OK);
    assert_int_equal(eval(r, 0, res), HT_EVAL_OK);
    assert_int_equal(noted_running(2, &noted), 0);
    assert_int_equal(noted, m / 2);
  }
  assert_int_equal(ht_runner_worker_starts(r), 3);
  free(res);
  ht_runner_destroy(r);
  ht_spec_destroy(spec);
}

/* A kernel that forks and then crashes: its child holds the worker's pipes, yet the crash is seen
 * at once and recorded as a crash, not as a timeout; the child ends too. */
static void test_fork_then_crash_is_a_runtime_failure(void **state) {
  (void)state;
  ht_spec *spec = load(DATA "leftover_c.json");
  ht_runner_options o;
  fast_options(&o);
  o.timeout_s = 30;
  ht_runner *r = runner(spec, &o);
  ht_result *res = malloc(sizeof *res);
  double t0 = ht_now();
  assert_int_equal(eval(r, 3, res), HT_EVAL_RUNTIME);
  assert_true(ht_now() - t0 < 10);
  assert_non_null(strstr(res->message, "signal 11"));
  assert_int_equal(noted_running(2, NULL), 0);
  assert_int_equal(eval(r, 0, res), HT_EVAL_OK);
  free(res);
  ht_runner_destroy(r);
  ht_spec_destroy(spec);
}

/* OpenMP's thread pool is the runtime's, not a leftover: teams of 4, 2 and 4 threads keep one
 * worker. */
static void test_openmp_pool_keeps_the_worker(void **state) {
  (void)state;
  ht_spec *spec = load(DATA "leftover_c.json");
  ht_runner_options o;
  fast_options(&o);
  ht_runner *r = runner(spec, &o);
  ht_result *res = malloc(sizeof *res);
  static const int modes[] = {5, 6, 5, 0, 6};
  for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) assert_int_equal(eval(r, modes[i], res), HT_EVAL_OK);
  assert_int_equal(ht_runner_worker_starts(r), 1);
  free(res);
  ht_runner_destroy(r);
  ht_spec_destroy(spec);
}

/* Files a compiler left in the C backend's cache: temporary sources and objects. */
static int temp_files_in(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    n += strncmp(e->d_name, "src-", 4) == 0 || strstr(e->d_name, ".tmp.") != NULL;
  if (d) closedir(d);
  return n;
}

/* A compiler that hangs is killed at the compile timeout with the processes it started, its
 * temporary files are removed, and the config is a compile failure naming the limit. */
static void test_hanging_compiler_is_killed(void **state) {
  (void)state;
  char *cache = ht_strfmt("%s/cache", tmpdir), *cc_dir = ht_strfmt("%s/c", cache);
  char *old_cache = ht_strdup(getenv("HETUNE_CACHE_DIR"));
  setenv("HETUNE_CACHE_DIR", cache, 1);
  setenv("HETUNE_CC", DATA "hang_cc.sh", 1);
  ht_spec *spec = load(DATA "leftover_c.json");
  ht_runner_options o;
  fast_options(&o);
  ht_result *res = malloc(sizeof *res);
  /* MODE 0 and the reference built first, with the usual timeout: the 1 s one below is for the
   * hanging compiler, and a real compile on a slow or busy machine may take longer than that. */
  ht_runner *r = runner(spec, &o);
  assert_int_equal(eval(r, 0, res), HT_EVAL_OK);
  ht_runner_destroy(r);
  o.compile_timeout_s = 1;
  r = runner(spec, &o);
  double t0 = ht_now();
  assert_int_equal(eval(r, 7, res), HT_EVAL_COMPILE);
  assert_true(ht_now() - t0 < 5);
  assert_non_null(strstr(res->message, "compile timeout"));
  int noted = 0;
  assert_int_equal(noted_running(2, &noted), 0);
  assert_int_equal(noted, 2);
  assert_int_equal(temp_files_in(cc_dir), 0);
  assert_int_equal(eval(r, 0, res), HT_EVAL_OK);
  free(res);
  ht_runner_destroy(r);
  ht_spec_destroy(spec);
  unsetenv("HETUNE_CC");
  if (old_cache) setenv("HETUNE_CACHE_DIR", old_cache, 1);
  else unsetenv("HETUNE_CACHE_DIR");
  free(old_cache);
  free(cache);
  free(cc_dir);
}

/* A reference that crashes, is killed (as by the out-of-memory killer) or hangs: the error says it
 * was the reference, and how it ended. */
static void reference_fails(const char *ref, double setup_timeout_s, const char *want1, const char *want2) {
  ht_spec *spec = load(DATA "bad_ref_c.json");
  assert_int_equal(ht_spec_set_size(spec, ref), HT_OK);
  ht_runner_options o;
  fast_options(&o);
  o.setup_timeout_s = setup_timeout_s;
  ht_runner *r = NULL;
  double t0 = ht_now();
  assert_int_not_equal(ht_runner_create(spec, "c", &o, &r), HT_OK);
  assert_true(ht_now() - t0 < setup_timeout_s + 10);
  assert_null(r);
  const char *msg = ht_last_error();
  fprintf(stderr, "%s: %s\n", ref, msg);
  assert_non_null(strstr(msg, "reference scale_ref"));
  assert_non_null(strstr(msg, want1));
  assert_non_null(strstr(msg, want2));
  /* Started as ht_tune starts it, the runner knows its device at once, and the first evaluation
   * returns the same error (the worker made its reference meanwhile). */
  assert_int_equal(ht_runner_start(spec, "c", &o, &r), HT_OK);
  assert_string_equal(ht_runner_device(r)->id, "c:0");
  static ht_result res;
  ht_config first = {.n = ht_spec_param_count(spec)}; /* each parameter's first value */
  assert_int_not_equal(ht_runner_evaluate(r, &first, &res), HT_OK);
  msg = ht_last_error();
  assert_non_null(strstr(msg, "reference scale_ref"));
  assert_non_null(strstr(msg, want1));
  assert_non_null(strstr(msg, want2));
  ht_runner_destroy(r);
  ht_spec_destroy(spec);
}

static void test_reference_failures_are_named(void **state) {
  (void)state;
  reference_fails("REF=1", 60, "signal 11", "crashed");
  reference_fails("REF=2", 60, "signal 9", "out of memory");
  reference_fails("REF=3", 1, "1 s", "setup timeout");
}

static void tuner_killed_while_hung(void) {
  ht_spec *spec;
  if (ht_spec_load(DATA "leftover_c.json", &spec)) _exit(3);
  ht_runner_options o;
  fast_options(&o);
  o.timeout_s = 60;
  ht_runner *r;
  if (ht_runner_create(spec, "c", &o, &r)) _exit(4);
  static ht_result res;
  ht_config c = mode(8);
  ht_runner_evaluate(r, &c, &res);
  _exit(5);
}

/* A tuner killed with -9 while its kernel (which forked) runs: the worker and what the kernel
 * forked end too. */
static void test_nothing_outlives_a_killed_tuner(void **state) {
  (void)state;
  fflush(NULL);
  pid_t tuner = fork();
  if (tuner == 0) tuner_killed_while_hung();
  int noted = 0;
  for (double until = ht_now() + 30; noted < 2 && ht_now() < until; sleep_s(0.05)) noted_running(0, &noted);
  assert_int_equal(noted, 2); /* the kernel's child, then the worker running the kernel */
  kill(tuner, SIGKILL);
  waitpid(tuner, NULL, 0);
  assert_int_equal(noted_running(5, NULL), 0);
}

/* Runs fn in a child process with stderr into a file: its exit status (-1 when it did not end
 * within limit_s; it is killed) and what it printed. */
static int in_child(void (*fn)(void), double limit_s, char *err, size_t len) {
  char *path = ht_strfmt("%s/child-stderr", tmpdir);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    fn();
    _exit(0);
  }
  int status = 0, done = 0;
  for (double until = ht_now() + limit_s; !done && ht_now() < until;) {
    done = waitpid(pid, &status, WNOHANG) == pid;
    if (!done) sleep_s(0.02);
  }
  if (!done) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  FILE *f = fopen(path, "r");
  size_t n = f ? fread(err, 1, len - 1, f) : 0;
  err[n] = '\0';
  if (f) fclose(f);
  free(path);
  return !done ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void hang_in_process(void) {
  ht_spec *spec;
  if (ht_spec_load(DATA "bad_c.json", &spec)) _exit(3);
  ht_runner_options o;
  fast_options(&o);
  o.timeout_s = 1;
  o.isolate = 0;
  ht_runner *r;
  if (ht_runner_create(spec, "c", &o, &r)) _exit(4);
  static ht_result res;
  ht_config c = mode(2);
  ht_runner_evaluate(r, &c, &res);
  _exit(5);
}

/* In this process a hung kernel cannot be stopped: the run ends (exit 124) with a message that says
 * why, instead of hanging for ever. */
static void test_in_process_hang_is_bounded(void **state) {
  (void)state;
  char err[4096];
  assert_int_equal(in_child(hang_in_process, 30, err, sizeof err), 124);
  fprintf(stderr, "%s", err);
  assert_non_null(strstr(err, "did not finish within 1 s"));
  assert_non_null(strstr(err, "in-process"));
}

/* A runner without a worker, for a child process: _exit(code) when it cannot start. */
static ht_runner *in_process_runner(const ht_spec *spec, int code) {
  ht_runner_options o;
  fast_options(&o);
  o.isolate = 0;
  ht_runner *r;
  if (ht_runner_create(spec, "c", &o, &r)) _exit(code);
  return r;
}

/* The next config refused, with the error saying why (printed for the test): else _exit(code). */
static void next_config_refused(ht_runner *r, int code) {
  static ht_result res;
  ht_config c = mode(0);
  if (ht_runner_evaluate(r, &c, &res) != HT_ERR_RUNTIME) _exit(code);
  fprintf(stderr, "%s\n", ht_last_error());
}

static void leftover_thread_in_process(void) {
  ht_spec *spec;
  if (ht_spec_load(DATA "leftover_c.json", &spec)) _exit(3);
  ht_runner *r = in_process_runner(spec, 4);
  static ht_result res;
  ht_config c = mode(1);
  if (ht_runner_evaluate(r, &c, &res) || res.status != HT_EVAL_OK) _exit(5);
  sleep_s(0.6);
  next_config_refused(r, 6);
  ht_runner_destroy(r);
  ht_spec_destroy(spec);
  _exit(0);
}

/* In this process too, a kernel whose thread may still run its code is never unloaded; as what
 * runs may disturb later configs, measuring one more is an error that says why. */
static void test_in_process_never_unloads_running_code(void **state) {
  (void)state;
  char err[4096];
  assert_int_equal(in_child(leftover_thread_in_process, 60, err, sizeof err), 0);
  assert_non_null(strstr(err, "config MODE=1 left threads running"));
}

static void *blocked_reader(void *arg) {
  char c;
  while (read(*(int *)arg, &c, 1) < 0 && errno == EINTR) {
  }
  return NULL;
}

/* Evaluates config m in r: 0 when the call and the config succeeded. */
static int evaluate_ok(ht_runner *r, int m) {
  static ht_result res;
  ht_config c = mode(m);
  if (ht_runner_evaluate(r, &c, &res)) return fprintf(stderr, "MODE=%d: %s\n", m, ht_last_error()), 1;
  return res.status != HT_EVAL_OK;
}

/* Threads the tuner starts between configs (as OpenBLAS starts its pool for a strategy's Gaussian
 * process) are not the next kernel's; a kernel built ahead in a batch that leaves a thread, when
 * it runs or when it is loaded, still is. */
static void tuner_threads_between_configs(void) {
  ht_spec *spec;
  if (ht_spec_load(DATA "leftover_c.json", &spec)) _exit(3);
  ht_runner *r = in_process_runner(spec, 4);
  if (evaluate_ok(r, 0)) _exit(5);
  int fd[2];
  pthread_t t[2];
  if (pipe(fd) || pthread_create(&t[0], NULL, blocked_reader, &fd[0])) _exit(6);
  if (evaluate_ok(r, 0)) _exit(7);
  ht_config batch[2] = {mode(5), mode(0)};
  if (pthread_create(&t[1], NULL, blocked_reader, &fd[0]) || ht_runner_precompile(r, batch, 2)) _exit(8);
  if (evaluate_ok(r, 5) || evaluate_ok(r, 0)) _exit(9);
  close(fd[1]);
  pthread_join(t[0], NULL);
  pthread_join(t[1], NULL);
  batch[0] = mode(1);
  if (ht_runner_precompile(r, batch, 2) || evaluate_ok(r, 1)) _exit(10);
  sleep_s(0.6);
  next_config_refused(r, 11);
  ht_runner_destroy(r);
  /* a kernel built ahead that starts a thread when it is loaded */
  r = in_process_runner(spec, 12);
  batch[0] = mode(9);
  if (ht_runner_precompile(r, batch, 2) || evaluate_ok(r, 9)) _exit(13);
  next_config_refused(r, 14);
  ht_runner_destroy(r);
  ht_spec_destroy(spec);
  _exit(0);
}

static void test_tuner_threads_are_not_leftovers(void **state) {
  (void)state;
  char err[4096];
  int rc = in_child(tuner_threads_between_configs, 60, err, sizeof err);
  fprintf(stderr, "%s", err);
  assert_int_equal(rc, 0);
  assert_non_null(strstr(err, "config MODE=1 left threads running"));
  assert_non_null(strstr(err, "config MODE=9 left threads running"));
}

static int setup(void **state) {
  (void)state;
  snprintf(tmpdir, sizeof tmpdir, "/tmp/hetune-test-isolation-XXXXXX");
  if (!mkdtemp(tmpdir)) return -1;
  snprintf(pidfile, sizeof pidfile, "%s/pids", tmpdir);
  setenv("HT_TEST_PIDS", pidfile, 1);
  return 0;
}

/* Whatever a failed test left running ends here. */
static int teardown(void **state) {
  (void)state;
  kill_noted();
  char *cmd = ht_strfmt("rm -rf '%s'", tmpdir);
  int rc = system(cmd);
  free(cmd);
  return rc == 0 ? 0 : -1;
}

static int each_teardown(void **state) {
  (void)state;
  kill_noted();
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_teardown(test_leftover_thread_blames_no_other_config, each_teardown),
    cmocka_unit_test_teardown(test_forked_processes_end_with_the_worker, each_teardown),
    cmocka_unit_test_teardown(test_fork_then_crash_is_a_runtime_failure, each_teardown),
    cmocka_unit_test_teardown(test_openmp_pool_keeps_the_worker, each_teardown),
    cmocka_unit_test_teardown(test_hanging_compiler_is_killed, each_teardown),
    cmocka_unit_test_teardown(test_nothing_outlives_a_killed_tuner, each_teardown),
    cmocka_unit_test(test_reference_failures_are_named),
    cmocka_unit_test(test_in_process_hang_is_bounded),
    cmocka_unit_test(test_in_process_never_unloads_running_code),
    cmocka_unit_test(test_tuner_threads_are_not_leftovers),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
