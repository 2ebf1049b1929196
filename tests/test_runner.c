/* The runner and the tuning loop against kernels written to misbehave: every failure is recorded
 * with its T4 status and tuning goes on; interrupted runs resume from the store. */
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/cpus.h"
#include "hetune/hetune.h"
#include "cache_test_util.h"

#define DATA HT_SOURCE_DIR "/tests/data/misbehave/"

static char tmpdir[256];

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

/* A runner of the spec in file on device, with fast_options. */
static ht_runner *runner_for(const char *file, const char *device, ht_spec **spec) {
  *spec = load(file);
  ht_runner_options o;
  fast_options(&o);
  ht_runner *r = NULL;
  assert_int_equal(ht_runner_create(*spec, device, &o, &r), HT_OK);
  return r;
}

static ht_config config_of(int n, ...) {
  ht_config c;
  memset(&c, 0, sizeof c);
  c.n = n;
  va_list ap;
  va_start(ap, n);
  for (int i = 0; i < n; i++) c.idx[i] = va_arg(ap, int);
  va_end(ap);
  return c;
}

/* Every mode of the C kernel, in one worker-backed runner, in an order that makes each failure
 * follow another: the runner must restart its worker and go on. ahead: each config is sent to the
 * worker with the next one ahead (ht_runner_evaluate_ahead): every failure is still its own. */
static void failures_are_results(int ahead) {
  ht_spec *spec;
  ht_runner *r = runner_for(DATA "bad_c.json", "c", &spec);
  static const struct {
    int mode;
    ht_eval_status want;
  } cases[] = {{0, HT_EVAL_OK},          {1, HT_EVAL_RUNTIME}, {2, HT_EVAL_TIMEOUT}, {3, HT_EVAL_CORRECTNESS},
               {4, HT_EVAL_COMPILE},     {5, HT_EVAL_CORRECTNESS}, {6, HT_EVAL_RUNTIME}, {0, HT_EVAL_OK}};
  const size_t n = sizeof cases / sizeof cases[0];
  ht_result *res = malloc(sizeof *res);
  for (size_t i = 0; i < n; i++) {
    ht_config c = config_of(1, cases[i].mode), next = config_of(1, i + 1 < n ? cases[i + 1].mode : 0);
    assert_int_equal(ht_runner_evaluate_ahead(r, &c, ahead && i + 1 < n ? &next : NULL, res), HT_OK);
    if (res->status != cases[i].want)
      fprintf(stderr, "mode %d: got %s (%s)\n", cases[i].mode, ht_eval_status_name(res->status), res->message);
    assert_int_equal(res->status, cases[i].want);
    if (res->status == HT_EVAL_OK) {
      assert_true(res->n_samples >= 2);
      assert_true(res->time_s > 0 && isfinite(res->time_s));
    } else {
      assert_true(strlen(res->message) > 0);
      assert_true(isnan(res->time_s));
    }
  }
  /* segfault, hang and abort each cost a worker: 1 + 3 restarts */
  assert_int_equal(ht_runner_worker_starts(r), 4);
  if (ahead) { /* a config sent ahead and not asked for ends its worker; what is asked is measured */
    ht_config ok = config_of(1, 0), wrong = config_of(1, 3);
    assert_int_equal(ht_runner_evaluate_ahead(r, &ok, &ok, res), HT_OK);
    assert_int_equal(ht_runner_evaluate(r, &ok, res), HT_OK); /* the one sent ahead */
    assert_int_equal(res->status, HT_EVAL_OK);
    assert_int_equal(ht_runner_worker_starts(r), 4);
    assert_int_equal(ht_runner_evaluate_ahead(r, &ok, &ok, res), HT_OK);
    assert_int_equal(ht_runner_evaluate(r, &wrong, res), HT_OK);
    assert_int_equal(res->status, HT_EVAL_CORRECTNESS);
    assert_int_equal(ht_runner_worker_starts(r), 5);
    assert_int_equal(ht_runner_evaluate_ahead(r, &ok, &ok, res), HT_OK); /* dropped by destroy */
  }
  free(res);
  ht_runner_destroy(r);
  ht_spec_destroy(spec);
}

static void test_c_failures_are_results(void **state) {
  (void)state;
  failures_are_results(0);
}

static void test_c_failures_sent_ahead(void **state) {
  (void)state;
  failures_are_results(1);
}

/* cfg measured OK, the runner having started `starts` workers so far. */
static void measured_ok(ht_runner *r, const ht_config *cfg, int starts) {
  ht_result *res = malloc(sizeof *res);
  assert_int_equal(ht_runner_evaluate(r, cfg, res), HT_OK);
  assert_int_equal(res->status, HT_EVAL_OK);
  assert_int_equal(ht_runner_worker_starts(r), starts);
  free(res);
}

/* A released worker ends while the caller goes on; what was sent ahead is dropped, and a later
 * evaluation waits for it and starts a new one. */
static void test_released_worker(void **state) {
  (void)state;
  ht_spec *spec;
  ht_runner *r = runner_for(DATA "bad_c.json", "c", &spec);
  ht_config ok = config_of(1, 0);
  ht_result *res = malloc(sizeof *res);
  assert_int_equal(ht_runner_evaluate_ahead(r, &ok, &ok, res), HT_OK);
  assert_int_equal(res->status, HT_EVAL_OK);
  free(res);
  ht_runner_release_worker(r);
  ht_runner_release_worker(r); /* twice: nothing more */
  assert_int_equal(ht_runner_worker_starts(r), 1);
  measured_ok(r, &ok, 2);
  ht_runner_release_worker(r); /* nothing in flight: the worker exits by itself */
  measured_ok(r, &ok, 3);
  ht_runner_release_worker(r);
  ht_runner_destroy(r);
  ht_spec_destroy(spec);
}

static void test_opencl_failures_are_results(void **state) {
  (void)state;
  ht_spec *spec;
  ht_runner *r = runner_for(DATA "bad_opencl.json", "opencl", &spec);
  /* MODE index: 0->0, 1->3, 2->4, 3->5, 4->7; WG index 1 -> 64 (N=1001 is not a multiple: edges) */
  static const struct {
    int mode_idx, wg_idx;
    ht_eval_status want;
  } cases[] = {{0, 1, HT_EVAL_OK},      {1, 1, HT_EVAL_CORRECTNESS}, {2, 0, HT_EVAL_COMPILE},
               {3, 1, HT_EVAL_CORRECTNESS}, {4, 0, HT_EVAL_CORRECTNESS}, {0, 0, HT_EVAL_OK}};
  ht_result *res = malloc(sizeof *res);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ht_config c = config_of(2, cases[i].mode_idx, cases[i].wg_idx);
    assert_int_equal(ht_runner_evaluate(r, &c, res), HT_OK);
    if (res->status != cases[i].want) fprintf(stderr, "case %zu: %s (%s)\n", i, ht_eval_status_name(res->status), res->message);
    assert_int_equal(res->status, cases[i].want);
  }
  assert_int_equal(ht_runner_worker_starts(r), 1);
  free(res);
  ht_runner_destroy(r);
  ht_spec_destroy(spec);
}

/* Three configs of vadd on PoCL with a 50 ms run timeout; 0 when each is measured. */
static int first_launches_ok(const ht_spec *spec, int isolate, int first) {
  ht_runner_options o;
  fast_options(&o);
  o.timeout_s = 0.05; /* each first launch compiles for longer: 4 of 4 configs timed out here without the fix */
  o.isolate = isolate;
  ht_runner *r;
  if (ht_runner_create(spec, "opencl", &o, &r)) return fprintf(stderr, "%s\n", ht_last_error()), 1;
  ht_result *res = malloc(sizeof *res);
  int bad = 0;
  for (int wg = 0; wg < 3 && !bad; wg++) {
    ht_config c = config_of(2, first + wg, wg); /* WG index (7 values), WPT index (5) */
    if (ht_runner_evaluate(r, &c, res) || res->status != HT_EVAL_OK)
      bad = 1, fprintf(stderr, "isolate=%d, config %d: %s\n", isolate, wg, res->message);
  }
  free(res);
  ht_runner_destroy(r);
  return bad;
}

/* PoCL compiles a kernel for its work-group size at the first launch, which takes far longer than
 * the kernel: that launch runs under the compile timeout, so a short run timeout does not fail
 * configs that run in microseconds, with a worker and in-process (in a child: OpenCL opened in
 * this process would not survive the forks of the later tests' workers). */
static void test_opencl_first_launch_compiles(void **state) {
  (void)state;
  char *pocl = ht_strfmt("%s/pocl-first-launch", tmpdir);
  mkdir(pocl, 0700);
  setenv("POCL_CACHE_DIR", pocl, 1); /* nothing compiled before: each first launch compiles */
  ht_spec *spec = load(HT_SOURCE_DIR "/examples/vadd/vadd_opencl.json");
  assert_int_equal(ht_spec_set_size(spec, "N=1000"), HT_OK);
  assert_int_equal(first_launches_ok(spec, 1, 0), 0);
  ht_runner_options o;
  fast_options(&o);
  ht_runner *r;
  assert_int_equal(ht_runner_create(spec, "opencl", &o, &r), HT_OK);
  ht_result *res = malloc(sizeof *res);
  ht_config bad = config_of(2, 0, 5); /* WPT has 5 values */
  assert_int_equal(ht_runner_evaluate(r, &bad, res), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "parameter WPT has 5 values, not a value 5"));
  free(res);
  ht_runner_destroy(r);
  pid_t pid = fork();
  if (pid == 0) _exit(first_launches_ok(spec, 0, 3));
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  unsetenv("POCL_CACHE_DIR");
  free(pocl);
  ht_spec_destroy(spec);
}

/* A write one element (C) or a few elements (OpenCL without its edge guard) past the end of a
 * buffer is a correctness failure naming the element, at sizes that are and are not multiples of
 * the vector and work-group widths; the correct kernel passes at each. */
static void expect_overrun(const char *file, const char *device, const char *size, const char *first_bad) {
  ht_spec *spec = load(file);
  assert_int_equal(ht_spec_set_size(spec, size), HT_OK);
  ht_runner_options o;
  fast_options(&o);
  ht_runner *r;
  assert_int_equal(ht_runner_create(spec, device, &o, &r), HT_OK);
  ht_result *res = malloc(sizeof *res);
  ht_config c = config_of(1, 0);
  assert_int_equal(ht_runner_evaluate(r, &c, res), HT_OK);
  if (res->status != HT_EVAL_OK) fail_msg("%s %s MODE=0: %s", file, size, res->message);
  c = config_of(1, 1);
  assert_int_equal(ht_runner_evaluate(r, &c, res), HT_OK);
  if (res->status != HT_EVAL_CORRECTNESS || !strstr(res->message, first_bad) || !strstr(res->message, "past the end"))
    fail_msg("%s %s MODE=1: %s: %s", file, size, ht_eval_status_name(res->status), res->message);
  free(res);
  ht_runner_destroy(r);
  ht_spec_destroy(spec);
}

static void test_overrun_detected(void **state) {
  (void)state;
  expect_overrun(DATA "overrun_c.json", "c", "N=1", "out[1]");
  expect_overrun(DATA "overrun_c.json", "c", "N=1000", "out[1000]");
  expect_overrun(DATA "overrun_c.json", "c", "N=4099", "out[4099]");
  expect_overrun(DATA "overrun_opencl.json", "opencl", "N=1001", "out[1001]");
  expect_overrun(DATA "overrun_opencl.json", "opencl", "N=13", "out[13]");
}

static void test_in_process_runner(void **state) {
  (void)state;
  ht_spec *spec = load(DATA "bad_c.json");
  ht_runner_options o;
  fast_options(&o);
  o.isolate = 0;
  ht_runner *r;
  assert_int_equal(ht_runner_create(spec, "c", &o, &r), HT_OK);
  ht_result *res = malloc(sizeof *res);
  ht_config c = config_of(1, 3);
  assert_int_equal(ht_runner_evaluate(r, &c, res), HT_OK);
  assert_int_equal(res->status, HT_EVAL_CORRECTNESS);
  assert_non_null(strstr(res->message, "out[500]"));
  c = config_of(1, 0);
  assert_int_equal(ht_runner_evaluate(r, &c, res), HT_OK);
  assert_int_equal(res->status, HT_EVAL_OK);
  assert_int_equal(ht_runner_worker_starts(r), 0);
  free(res);
  ht_runner_destroy(r);
  ht_spec_destroy(spec);
}

static void test_unknown_device_is_an_error(void **state) {
  (void)state;
  ht_spec *spec = load(DATA "bad_c.json");
  ht_runner *r = NULL;
  assert_int_not_equal(ht_runner_create(spec, "nope:3", NULL, &r), HT_OK);
  assert_null(r);
  assert_non_null(strstr(ht_last_error(), "nope:3"));
  ht_spec_destroy(spec);
}

/* ---- the tuning loop ---- */

static char *db_path(const char *name) { return ht_strfmt("%s/%s", tmpdir, name); }

static ht_status tune(const char *spec_file, const char *device, const char *db, const char *strategy, int64_t budget,
                      int no_reuse, ht_tune_summary *sum) {
  ht_spec *spec = load(spec_file);
  ht_store *st;
  assert_int_equal(ht_store_open(db, &st), HT_OK);
  ht_tune_options to;
  ht_tune_options_default(&to);
  to.strategy = strategy;
  to.budget_evals = budget;
  to.no_reuse = no_reuse;
  ht_runner_options ro;
  fast_options(&ro);
  ht_status s = ht_tune(spec, device, st, &to, &ro, sum);
  ht_store_close(st);
  ht_spec_destroy(spec);
  return s;
}

static int count_status(const ht_eval_record *rec, void *ctx) {
  int *counts = ctx;
  counts[rec->result.status]++;
  return 0;
}

static void test_tuning_goes_on_after_failures(void **state) {
  (void)state;
  char *db = db_path("misbehave.db");
  ht_tune_summary *sum = malloc(sizeof *sum);
  assert_int_equal(tune(DATA "bad_c.json", "c", db, "brute_force", 0, 0, sum), HT_OK);
  assert_int_equal(sum->space_size, 7);
  assert_int_equal(sum->measured, 7);
  assert_int_equal(sum->failures, 6);
  assert_true(sum->found);
  assert_string_equal(sum->best_config, "MODE=0");
  ht_store *st;
  assert_int_equal(ht_store_open_readonly(db, &st), HT_OK);
  int counts[6] = {0};
  assert_int_equal(ht_store_each_eval(st, NULL, count_status, counts), HT_OK);
  assert_int_equal(counts[HT_EVAL_OK], 1);
  assert_int_equal(counts[HT_EVAL_RUNTIME], 2);
  assert_int_equal(counts[HT_EVAL_TIMEOUT], 1);
  assert_int_equal(counts[HT_EVAL_CORRECTNESS], 2);
  assert_int_equal(counts[HT_EVAL_COMPILE], 1);
  ht_store_close(st);
  /* A second run reuses every stored evaluation, failures included: nothing is measured. */
  assert_int_equal(tune(DATA "bad_c.json", "c", db, "random", 0, 0, sum), HT_OK);
  assert_int_equal(sum->measured, 0);
  assert_int_equal(sum->reused, 7);
  free(sum);
  free(db);
}

/* Tuning a space again without the store compiles nothing: every binary comes from the cache. */
static int all_cached_in_session(const ht_eval_record *rec, void *ctx) {
  int64_t *c = ctx;
  if (rec->session_id == c[0] && rec->result.status == HT_EVAL_OK) {
    c[1]++;
    c[2] += rec->result.compile_cached;
  }
  return 0;
}

static void test_second_tuning_compiles_nothing(void **state) {
  (void)state;
  char *db = db_path("cache.db");
  ht_tune_summary *sum = malloc(sizeof *sum);
  assert_int_equal(tune(DATA "bad_opencl.json", "opencl", db, "brute_force", 0, 1, sum), HT_OK);
  assert_int_equal(tune(DATA "bad_opencl.json", "opencl", db, "brute_force", 0, 1, sum), HT_OK);
  assert_int_equal(sum->measured, 10);
  ht_store *st;
  assert_int_equal(ht_store_open_readonly(db, &st), HT_OK);
  int64_t c[3] = {sum->session_id, 0, 0};
  assert_int_equal(ht_store_each_eval(st, NULL, all_cached_in_session, c), HT_OK);
  assert_true(c[1] >= 2);
  assert_int_equal(c[2], c[1]);
  ht_store_close(st);
  free(sum);
  free(db);
}

/* Lines in a file: here, the compilers a wrapper saw start. */
static int lines_in(const char *path) {
  FILE *f = fopen(path, "r");
  int n = 0;
  for (int c; f && (c = fgetc(f)) != EOF;) n += c == '\n';
  if (f) fclose(f);
  return n;
}

/* Built ahead, in a worker and in-process: every config's object is in the cache before any is
 * measured, by one compiler run each, and stays loaded: each evaluation runs it without looking
 * it up again (deleted from the cache, it is not built again) and reports its own build time (not
 * "cached"); one that failed to build reports the compiler's message without building again.
 * A config measured again is looked up. Configs out of range and too many at once are refused. */
static void test_precompile(void **state) {
  (void)state;
  ht_spec *spec = load(DATA "bad_c.json");
  ht_runner_options o;
  fast_options(&o);
  o.compile_jobs = 2;
  char *old = getenv("HETUNE_CACHE_DIR") ? ht_strdup(getenv("HETUNE_CACHE_DIR")) : NULL;
  char *log = ht_strfmt("%s/compilers.log", tmpdir), *wrapper = ht_strfmt("%s/cc.sh", tmpdir);
  FILE *w = fopen(wrapper, "w");
  assert_non_null(w);
  fprintf(w, "echo run >> '%s'\nexec cc \"$@\"\n", log);
  fclose(w);
  char *cc = ht_strfmt("sh %s", wrapper), *old_cc = getenv("HETUNE_CC") ? ht_strdup(getenv("HETUNE_CC")) : NULL;
  setenv("HETUNE_CC", cc, 1);
  ht_result *res = malloc(sizeof *res);
  for (int isolate = 0; isolate <= 1; isolate++) {
    char *cache = ht_strfmt("%s/precompile-%d", tmpdir, isolate);
    setenv("HETUNE_CACHE_DIR", cache, 1);
    o.isolate = isolate;
    ht_runner *r;
    assert_int_equal(ht_runner_create(spec, "c", &o, &r), HT_OK);
    assert_int_equal(ht_runner_compile_jobs(r), 2);
    int objects = cached_objects(cache), runs = lines_in(log); /* the reference's */
    ht_config cfgs[4] = {config_of(1, 0), config_of(1, 3), config_of(1, 4), config_of(1, 5)};
    assert_int_equal(ht_runner_precompile(r, cfgs, 4), HT_OK);
    assert_int_equal(cached_objects(cache) - objects, 3); /* mode 4 does not compile */
    assert_int_equal(lines_in(log) - runs, 4);
    assert_int_equal(each_cached_object(cache, 1), objects + 3);
    static const ht_eval_status want[4] = {HT_EVAL_OK, HT_EVAL_CORRECTNESS, HT_EVAL_COMPILE, HT_EVAL_CORRECTNESS};
    for (int i = 0; i < 4; i++) {
      assert_int_equal(ht_runner_evaluate(r, &cfgs[i], res), HT_OK);
      assert_int_equal(res->status, want[i]);
      assert_true(!res->compile_cached && res->compile_s > 0);
      if (want[i] == HT_EVAL_COMPILE) assert_non_null(strstr(res->message, "error"));
    }
    assert_int_equal(lines_in(log) - runs, 4);
    assert_int_equal(ht_runner_evaluate(r, &cfgs[0], res), HT_OK);
    assert_true(!res->compile_cached && lines_in(log) - runs == 5);
    assert_int_equal(ht_runner_evaluate(r, &cfgs[0], res), HT_OK);
    assert_true(res->compile_cached && res->compile_s == 0);
    /* A batch all in the cache is loaded on the calling thread; the next one compiles what it
     * must (3, its object deleted above; 1 and 6, new), the threads starting at the first. */
    ht_config warm[2] = {config_of(1, 0), config_of(1, 0)}, mixed[4] = {config_of(1, 0), config_of(1, 3),
                                                                       config_of(1, 1), config_of(1, 6)};
    assert_int_equal(ht_runner_precompile(r, warm, 2), HT_OK);
    assert_int_equal(lines_in(log) - runs, 5);
    assert_int_equal(ht_runner_precompile(r, mixed, 4), HT_OK);
    assert_int_equal(lines_in(log) - runs, 8);
    assert_int_equal(ht_runner_evaluate(r, &mixed[0], res), HT_OK);
    assert_true(res->status == HT_EVAL_OK && res->compile_cached);
    assert_int_equal(ht_runner_evaluate(r, &mixed[1], res), HT_OK);
    assert_true(res->status == HT_EVAL_CORRECTNESS && !res->compile_cached && res->compile_s > 0);
    assert_int_equal(lines_in(log) - runs, 8);
    ht_config bad[2] = {config_of(1, 0), config_of(1, 99)};
    assert_int_equal(ht_runner_precompile(r, bad, 2), HT_ERR_INVALID);
    assert_int_equal(ht_runner_precompile(r, cfgs, HT_MAX_PRECOMPILE + 1), HT_ERR_INVALID);
    ht_runner_destroy(r);
    free(cache);
  }
  ht_runner *r; /* by default, one compiler per CPU this process may use (not the host's count) */
  o.compile_jobs = 0;
  assert_int_equal(ht_runner_create(spec, "c", &o, &r), HT_OK);
  assert_int_equal(ht_runner_compile_jobs(r), ht_cpus_usable());
  ht_runner_destroy(r);
  if (old_cc) setenv("HETUNE_CC", old_cc, 1);
  else unsetenv("HETUNE_CC");
  free(old_cc);
  if (old) setenv("HETUNE_CACHE_DIR", old, 1);
  else unsetenv("HETUNE_CACHE_DIR");
  free(old);
  free(cc);
  free(wrapper);
  free(log);
  free(res);
  ht_spec_destroy(spec);
}

/* kill -9 in the middle of a run loses no finished evaluation, and the rerun resumes. */
static void die_after_three(const ht_tune_progress *p, void *ctx) {
  (void)ctx;
  if (p->measured == 3) raise(SIGKILL);
}

static void test_kill_9_loses_nothing(void **state) {
  (void)state;
  char *db = db_path("killed.db");
  pid_t pid = fork();
  if (pid == 0) {
    ht_spec *spec;
    ht_store *st;
    if (ht_spec_load(DATA "bad_c.json", &spec) || ht_store_open(db, &st)) _exit(3);
    ht_tune_options to;
    ht_tune_options_default(&to);
    to.strategy = "brute_force";
    to.progress = die_after_three;
    ht_runner_options ro;
    fast_options(&ro);
    static ht_tune_summary sum;
    ht_tune(spec, "c", st, &to, &ro, &sum);
    _exit(4);
  }
  int status;
  waitpid(pid, &status, 0);
  assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  ht_store *st;
  /* opened for writing: evaluations still in the killed tuning's journal are put in */
  assert_int_equal(ht_store_open(db, &st), HT_OK);
  int counts[6] = {0};
  assert_int_equal(ht_store_each_eval(st, NULL, count_status, counts), HT_OK);
  int total = 0;
  for (int i = 0; i < 6; i++) total += counts[i];
  assert_int_equal(total, 3);
  ht_store_close(st);
  ht_tune_summary *sum = malloc(sizeof *sum);
  assert_int_equal(tune(DATA "bad_c.json", "c", db, "brute_force", 0, 0, sum), HT_OK);
  assert_int_equal(sum->reused, 3);
  assert_int_equal(sum->measured, 4);
  free(sum);
  free(db);
}

static void test_unknown_strategy(void **state) {
  (void)state;
  char *db = db_path("strategy.db");
  ht_tune_summary *sum = malloc(sizeof *sum);
  assert_int_equal(tune(DATA "bad_c.json", "c", db, "annealing_nope", 0, 0, sum), HT_ERR_NOTFOUND);
  assert_non_null(strstr(ht_last_error(), "annealing_nope"));
  assert_non_null(strstr(ht_last_error(), "brute_force"));
  free(sum);
  free(db);
}

static void test_budget_and_random_without_replacement(void **state) {
  (void)state;
  char *db = db_path("budget.db");
  ht_tune_summary *sum = malloc(sizeof *sum);
  assert_int_equal(tune(DATA "bad_opencl.json", "opencl", db, "random", 4, 0, sum), HT_OK);
  assert_int_equal(sum->measured + sum->reused, 4);
  /* budget larger than the space: stops after all 10 configs, each once */
  assert_int_equal(tune(DATA "bad_opencl.json", "opencl", db, "random", 1000, 0, sum), HT_OK);
  assert_int_equal(sum->measured + sum->reused, 10);
  assert_int_equal(sum->reused, 4);
  free(sum);
  free(db);
}

static int setup(void **state) {
  (void)state;
  snprintf(tmpdir, sizeof tmpdir, "/tmp/hetune-test-runner-XXXXXX");
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char *cmd = ht_strfmt("rm -rf '%s'", tmpdir);
  int rc = system(cmd);
  free(cmd);
  return rc == 0 ? 0 : -1;
}

typedef struct config_times {
  const char *config;
  double t[8];
  int n, total;
} config_times;

static int collect_config_times(const ht_eval_record *rec, void *ctx) {
  config_times *c = ctx;
  c->total++;
  if (strcmp(rec->config_key, c->config) == 0 && c->n < 8) c->t[c->n++] = rec->result.time_s;
  return 0;
}

/* --confirm 3 --confirm-runs 2: after 6 evaluations, the 3 fastest are measured twice more (each
 * round in a new worker); the best is the config with the lowest median of its 3 measurements, and
 * its reported time is that median, as the store's measurements give it. */
static void test_confirm_fastest(void **state) {
  (void)state;
  char *db = db_path("confirm.db");
  ht_spec *spec = load(HT_SOURCE_DIR "/examples/vadd/vadd_c.json");
  ht_store *st;
  assert_int_equal(ht_store_open(db, &st), HT_OK);
  ht_tune_options to;
  ht_tune_options_default(&to);
  to.budget_evals = 6;
  to.confirm = 3;
  assert_int_equal(to.confirm_runs, 2);
  ht_runner_options ro;
  fast_options(&ro);
  ht_tune_summary *sum = malloc(sizeof *sum);
  if (ht_tune(spec, "c", st, &to, &ro, sum)) fail_msg("%s", ht_last_error());
  assert_int_equal(sum->measured, 6);
  assert_int_equal(sum->confirmed, 6);
  assert_int_equal(sum->best_measurements, 3);
  config_times ct = {.config = sum->best_config};
  ht_eval_filter f = {.kernel_name = ht_spec_name(spec)};
  assert_int_equal(ht_store_each_eval(st, &f, collect_config_times, &ct), HT_OK);
  assert_int_equal(ct.total, 12);
  assert_int_equal(ct.n, 3);
  for (int i = 0; i < 2; i++) /* sort the three */
    for (int j = 0; j < 2 - i; j++)
      if (ct.t[j] > ct.t[j + 1]) {
        double x = ct.t[j];
        ct.t[j] = ct.t[j + 1];
        ct.t[j + 1] = x;
      }
  assert_true(sum->best.time_s == ct.t[1]);
  ht_store_close(st);
  ht_spec_destroy(spec);
  free(sum);
  free(db);
}

/* --warmup S: untimed runs go on until S seconds have passed, so the evaluation takes at least
 * that long (a lower bound on a monotonic clock: it cannot flake on a busy machine). */
static void test_warmup_time(void **state) {
  (void)state;
  ht_spec *spec = load(DATA "bad_c.json");
  ht_runner_options o;
  fast_options(&o);
  o.isolate = 0;
  o.warmup_s = 0.3;
  ht_runner *r;
  assert_int_equal(ht_runner_create(spec, "c", &o, &r), HT_OK);
  ht_result *res = malloc(sizeof *res);
  ht_config c = config_of(1, 0);
  assert_int_equal(ht_runner_evaluate(r, &c, res), HT_OK);
  assert_int_equal(res->status, HT_EVAL_OK);
  assert_true(res->wall_s >= 0.3);
  assert_true(res->n_samples >= 2 && res->n_samples <= 5); /* warm-up runs are not samples */
  free(res);
  ht_runner_destroy(r);
  ht_spec_destroy(spec);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_c_failures_are_results),
    cmocka_unit_test(test_c_failures_sent_ahead),
    cmocka_unit_test(test_released_worker),
    cmocka_unit_test(test_opencl_failures_are_results),
    cmocka_unit_test(test_opencl_first_launch_compiles),
    cmocka_unit_test(test_in_process_runner), cmocka_unit_test(test_overrun_detected),
    cmocka_unit_test(test_warmup_time),
    cmocka_unit_test(test_confirm_fastest),
    cmocka_unit_test(test_unknown_device_is_an_error),
    cmocka_unit_test(test_tuning_goes_on_after_failures),
    cmocka_unit_test(test_second_tuning_compiles_nothing),
    cmocka_unit_test(test_precompile),
    cmocka_unit_test(test_kill_9_loses_nothing),
    cmocka_unit_test(test_unknown_strategy),
    cmocka_unit_test(test_budget_and_random_without_replacement),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
