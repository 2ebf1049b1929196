/* The open tuning session (ht_tuner) driven by hand: every strategy asked in batches and told out
 * of order, seed configs first, the errors; the replay executor against ht_replay; and ht_tune's
 * batches, seed configs and nearby stored bests on a real C kernel. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hetune/hetune.h"
#include "cache_test_util.h"
#include "hetune/replay.h"
#include "tune/executor.h"

static char tmpdir[256];

/* A bowl over the value indices; configs with (i0 + i1) % 5 == 2 fail. */
static double objective(const ht_config *c) {
  if ((c->idx[0] + c->idx[1]) % 5 == 2) return INFINITY;
  double v = 1e-3;
  for (int p = 0; p < c->n; p++) v += 1e-4 * (c->idx[p] - 1.5 - 0.3 * p) * (c->idx[p] - 1.5 - 0.3 * p);
  return v;
}

static void make_result(const ht_config *c, ht_result *r) {
  double t = objective(c);
  ht_result_init(r);
  if (isinf(t)) {
    r->status = HT_EVAL_RUNTIME;
    return;
  }
  r->status = HT_EVAL_OK;
  r->n_samples = 1;
  r->samples[0] = t;
  ht_result_summarise(r);
  r->wall_s = t;
}

/* 4 parameters of `values` values, a + b <= 8: 550 valid configs of 5 values, all 256 of 4. */
static ht_space *space_of(int values) {
  ht_space *s;
  assert_int_equal(ht_space_create(&s), HT_OK);
  const char *names[] = {"a", "b", "c", "d"};
  for (int p = 0; p < 4; p++) assert_int_equal(ht_space_add_param_range(s, names[p], 1, values, 1), HT_OK);
  assert_int_equal(ht_space_add_constraint(s, "a + b <= 8"), HT_OK);
  return s;
}

static ht_space *small_space(void) { return space_of(5); }

static ht_tuner *open_tuner(ht_space *s, const char *strategy, int64_t budget, const ht_config *seeds, int n_seeds) {
  ht_tuner_options o;
  ht_tuner_options_default(&o);
  o.strategy = strategy;
  o.seed = 5;
  o.budget_evals = budget;
  o.seed_configs = seeds;
  o.n_seed_configs = n_seeds;
  ht_tuner *t = NULL;
  if (ht_tuner_create(s, &o, &t)) fail_msg("%s: %s", strategy, ht_last_error());
  return t;
}

typedef struct session_log {
  ht_config asked[640];
  int n;
  double best;
  int best_at;
} session_log;

static void record_ask(ht_space *s, session_log *log, const ht_config *c, const char *who) {
  if (!ht_space_is_valid(s, c)) fail_msg("%s handed out an invalid config", who);
  for (int j = 0; j < log->n; j++)
    if (ht_config_equal(&log->asked[j], c)) fail_msg("%s handed out a config twice (ask %d)", who, log->n);
  assert_true(log->n < 640);
  double f = objective(c);
  if (f < log->best) {
    log->best = f;
    log->best_at = log->n;
  }
  log->asked[log->n++] = *c;
}

/* Runs t to its end asking `batch` at a time; each round's results are told after the next
 * round's ask, in reverse order (results in another order than asked, with asks outstanding). */
static void drive_lagged(ht_tuner *t, ht_space *s, int batch, session_log *log, const char *who) {
  ht_config prev[8], cur[8];
  int n_prev = 0, got = 0;
  log->n = 0;
  log->best = INFINITY;
  log->best_at = -1;
  while (!ht_tuner_done(t)) {
    if (ht_tuner_ask(t, cur, batch, &got)) fail_msg("%s: ask: %s", who, ht_last_error());
    assert_true(got >= 0 && got <= batch);
    for (int k = 0; k < got; k++) record_ask(s, log, &cur[k], who);
    for (int k = n_prev - 1; k >= 0; k--) {
      ht_result r;
      make_result(&prev[k], &r);
      if (ht_tuner_tell(t, &prev[k], &r)) fail_msg("%s: tell: %s", who, ht_last_error());
    }
    memcpy(prev, cur, sizeof(ht_config) * (size_t)got);
    n_prev = got;
    if (got == 0) break;
  }
  for (int k = n_prev - 1; k >= 0; k--) {
    ht_result r;
    make_result(&prev[k], &r);
    assert_int_equal(ht_tuner_tell(t, &prev[k], &r), HT_OK);
  }
}

/* Every strategy: the budget holds, nothing is handed out twice, and best is the fastest told. */
static void test_every_strategy_batched_out_of_order(void **state) {
  (void)state;
  ht_space *s = small_space();
  session_log *log = calloc(1, sizeof *log);
  for (int i = 0; i < ht_strategy_count(); i++) {
    const char *name = ht_strategy_at(i)->name;
    ht_tuner *t = open_tuner(s, name, 37, NULL, 0);
    drive_lagged(t, s, 4, log, name);
    ht_tuner_stats ts;
    ht_tuner_stats_get(t, &ts);
    if (log->n != 37) fail_msg("%s: %d configs for a budget of 37", name, log->n);
    assert_int_equal(ts.asked, 37);
    assert_int_equal(ts.told, 37);
    assert_int_equal(ts.pending, 0);
    ht_config best;
    ht_result r;
    assert_true(ht_tuner_best(t, &best, &r));
    assert_true(ht_config_equal(&best, &log->asked[log->best_at]));
    assert_true(r.time_s == log->best);
    int got = 1;
    assert_int_equal(ht_tuner_ask(t, &best, 1, &got), HT_ERR_INVALID); /* done: asking again is an error */
    assert_int_equal(got, 0);
    assert_non_null(strstr(ht_last_error(), "done"));
    ht_tuner_destroy(t);
  }
  free(log);
  ht_space_destroy(s);
}

/* Without a budget every strategy asks each valid config once and then says it is done. */
static void test_exhaustion(void **state) {
  (void)state;
  ht_space *s;
  assert_int_equal(ht_space_create(&s), HT_OK);
  assert_int_equal(ht_space_add_param_range(s, "a", 1, 4, 1), HT_OK);
  assert_int_equal(ht_space_add_param_range(s, "b", 1, 3, 1), HT_OK);
  session_log *log = calloc(1, sizeof *log);
  for (int i = 0; i < ht_strategy_count(); i++) {
    const char *name = ht_strategy_at(i)->name;
    ht_tuner *t = open_tuner(s, name, 0, NULL, 0);
    drive_lagged(t, s, 3, log, name);
    if (log->n != 12) fail_msg("%s: %d of the 12 configs", name, log->n);
    assert_true(ht_tuner_done(t));
    ht_tuner_destroy(t);
  }
  free(log);
  ht_space_destroy(s);
}

static ht_config cfg2(int a, int b, int c, int d) {
  ht_config x;
  memset(&x, 0, sizeof x);
  x.n = 4;
  x.idx[0] = a, x.idx[1] = b, x.idx[2] = c, x.idx[3] = d;
  return x;
}

/* Seed configs come first, in order, a repeat once; the strategy never hands one out again, even
 * brute force, which proposes every config. */
static void test_seed_configs_first(void **state) {
  (void)state;
  ht_space *s = space_of(4);
  ht_config seeds[3] = {cfg2(3, 3, 0, 2), cfg2(0, 0, 0, 0), cfg2(3, 3, 0, 2)};
  session_log *log = calloc(1, sizeof *log);
  uint64_t size = 0;
  assert_int_equal(ht_space_count(s, &size), HT_OK);
  for (int i = 0; i < ht_strategy_count(); i++) {
    const char *name = ht_strategy_at(i)->name;
    ht_tuner *t = open_tuner(s, name, 0, seeds, 3);
    ht_config first[3];
    int got = 0, got2 = 0;
    assert_int_equal(ht_tuner_ask(t, first, 2, &got), HT_OK); /* the seeds, told before the strategy asks */
    assert_int_equal(got, 2);
    assert_true(ht_config_equal(&first[0], &seeds[0]));
    assert_true(ht_config_equal(&first[1], &seeds[1]));
    for (int k = 1; k >= 0; k--) {
      ht_result r;
      make_result(&first[k], &r);
      assert_int_equal(ht_tuner_tell(t, &first[k], &r), HT_OK);
    }
    assert_int_equal(ht_tuner_ask(t, &first[2], 1, &got2), HT_OK);
    assert_int_equal(got2, 1);
    assert_true(ht_tuner_is_seed(t, &first[0]) && ht_tuner_is_seed(t, &first[1]));
    assert_false(ht_tuner_is_seed(t, &first[2]));
    ht_result r2;
    make_result(&first[2], &r2);
    assert_int_equal(ht_tuner_tell(t, &first[2], &r2), HT_OK);
    drive_lagged(t, s, 2, log, name);
    for (int k = 0; k < 3; k++) record_ask(s, log, &first[k], name); /* no repeats of these either */
    if ((uint64_t)log->n != size) fail_msg("%s: %d of %llu configs", name, log->n, (unsigned long long)size);
    ht_tuner_stats ts;
    ht_tuner_stats_get(t, &ts);
    assert_int_equal(ts.seeds_asked, 2);
    ht_tuner_destroy(t);
  }
  free(log);
  ht_space_destroy(s);
}

static void test_errors(void **state) {
  (void)state;
  ht_space *s = small_space();
  ht_tuner *t = open_tuner(s, "random", 2, NULL, 0);
  ht_config c[2], other = cfg2(1, 1, 1, 1);
  ht_result r;
  int got = 0;
  assert_int_equal(ht_tuner_ask(t, c, 2, &got), HT_OK);
  assert_int_equal(got, 2);
  if (ht_config_equal(&c[0], &other) || ht_config_equal(&c[1], &other)) other = cfg2(2, 2, 2, 2);
  make_result(&other, &r);
  assert_int_equal(ht_tuner_tell(t, &other, &r), HT_ERR_INVALID); /* never asked */
  assert_non_null(strstr(ht_last_error(), "never asked"));
  make_result(&c[1], &r);
  assert_int_equal(ht_tuner_tell(t, &c[1], &r), HT_OK);
  assert_int_equal(ht_tuner_tell(t, &c[1], &r), HT_ERR_INVALID); /* twice */
  assert_non_null(strstr(ht_last_error(), "told already"));
  assert_true(ht_tuner_done(t)); /* the budget of 2 is handed out; c[0] may still be told */
  assert_int_equal(ht_tuner_ask(t, c, 1, &got), HT_ERR_INVALID);
  make_result(&c[0], &r);
  assert_int_equal(ht_tuner_tell(t, &c[0], &r), HT_OK);
  ht_tuner_destroy(t);
  /* creation: an unknown strategy, an unknown option, a seed config the space does not hold */
  ht_tuner_options o;
  ht_tuner_options_default(&o);
  o.strategy = "nope";
  assert_int_equal(ht_tuner_create(s, &o, &t), HT_ERR_NOTFOUND);
  assert_non_null(strstr(ht_last_error(), "brute_force")); /* the list of strategies */
  o.strategy = "bayes";
  o.strategy_options = "kapa=2";
  assert_int_equal(ht_tuner_create(s, &o, &t), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "kapa"));
  o.strategy_options = NULL;
  ht_config bad = cfg2(4, 4, 0, 0); /* a + b = 10 > 8 */
  o.seed_configs = &bad;
  o.n_seed_configs = 1;
  assert_int_equal(ht_tuner_create(s, &o, &t), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "a=5,b=5,c=1,d=1"));
  assert_null(t);
  ht_space_destroy(s);
}

/* A virtual clock: the time budget counts what was charged, not wall time; stop ends it too. */
static void test_virtual_clock_and_stop(void **state) {
  (void)state;
  ht_space *s = small_space();
  ht_tuner_options o;
  ht_tuner_options_default(&o);
  o.strategy = "random";
  o.budget_seconds = 1.0;
  o.virtual_clock = 1;
  volatile sig_atomic_t stop = 0;
  o.stop = &stop;
  ht_tuner *t;
  assert_int_equal(ht_tuner_create(s, &o, &t), HT_OK);
  ht_config c;
  int got, n = 0;
  while (!ht_tuner_done(t) && !ht_tuner_ask(t, &c, 1, &got) && got == 1) {
    ht_result r;
    make_result(&c, &r);
    assert_int_equal(ht_tuner_tell(t, &c, &r), HT_OK);
    ht_tuner_charge(t, 0.25);
    n++;
  }
  assert_int_equal(n, 4);
  ht_tuner_destroy(t);
  o.budget_seconds = 0;
  assert_int_equal(ht_tuner_create(s, &o, &t), HT_OK);
  assert_int_equal(ht_tuner_ask(t, &c, 1, &got), HT_OK);
  assert_int_equal(got, 1);
  stop = 1;
  assert_true(ht_tuner_done(t));
  ht_tuner_destroy(t);
  ht_space_destroy(s);
}

/* The replay executor under a hand-written loop gives ht_replay's trace, step for step. */
static void test_replay_executor_equals_replay(void **state) {
  (void)state;
  ht_recorded *rec;
  if (ht_recorded_load(HT_SOURCE_DIR "/data/spaces/convolution_opencl.csv", &rec)) fail_msg("%s", ht_last_error());
  const char *strategies[] = {"random", "greedy_ils", "bayes", "genetic"};
  for (int i = 0; i < 4; i++) {
    ht_replay_options ro;
    ht_replay_options_default(&ro);
    ro.strategy = strategies[i];
    ro.seed = 3;
    ro.budget_evals = 40;
    ro.charge_strategy_time = 0;
    ht_replay_trace tr;
    if (ht_replay(rec, &ro, &tr)) fail_msg("%s", ht_last_error());
    ht_tuner_options o;
    ht_tuner_options_default(&o);
    o.strategy = strategies[i];
    o.seed = 3;
    o.budget_evals = 40;
    o.virtual_clock = 1;
    ht_tuner *t;
    ht_executor ex;
    assert_int_equal(ht_tuner_create(ht_recorded_space(rec), &o, &t), HT_OK);
    assert_int_equal(ht_executor_open("replay", rec, &ex), HT_OK);
    ht_config c;
    ht_exec_done d;
    int got, n = 0;
    double clock = 0;
    while (!ht_tuner_done(t) && !ht_tuner_ask(t, &c, 1, &got) && got == 1) {
      assert_int_equal(ht_executor_submit(&ex, &c, 1), HT_OK);
      assert_int_equal(ht_executor_pending(&ex), 1);
      assert_int_equal(ht_executor_poll(&ex, &d, 1, 0, &got), HT_OK);
      assert_int_equal(got, 1);
      assert_true(ht_config_equal(&d.cfg, &c));
      assert_int_equal(ht_tuner_tell(t, &d.cfg, &d.result), HT_OK);
      clock += d.cost_s;
      double v = d.result.status == HT_EVAL_OK ? d.result.time_s : INFINITY;
      assert_true(n < tr.n);
      if (!(tr.steps[n].t == clock && (tr.steps[n].value == v)))
        fail_msg("%s: step %d differs: %g %g against %g %g", strategies[i], n, clock, v, tr.steps[n].t, tr.steps[n].value);
      n++;
    }
    assert_int_equal(n, tr.n);
    ht_config best;
    assert_true(ht_tuner_best(t, &best, NULL));
    assert_true(ht_config_equal(&best, &tr.best_config));
    ht_executor_close(&ex);
    ht_tuner_destroy(t);
    ht_replay_trace_free(&tr);
  }
  ht_executor ex;
  assert_int_equal(ht_executor_open("replay", rec, &ex), HT_OK);
  ht_config outside;
  memset(&outside, 0, sizeof outside);
  outside.n = ht_space_param_count(ht_recorded_space(rec));
  for (int p = 0; p < outside.n; p++) outside.idx[p] = ht_space_value_count(ht_recorded_space(rec), p) - 1;
  if (!ht_space_is_valid(ht_recorded_space(rec), &outside))
    assert_int_equal(ht_executor_submit(&ex, &outside, 1), HT_ERR_NOTFOUND);
  ht_executor_close(&ex);
  assert_int_equal(ht_executor_open("nope", rec, &ex), HT_ERR_NOTFOUND);
  ht_recorded_destroy(rec);
}

/* ---- ht_tune on a C kernel ---- */

static ht_spec *vadd(const char *size) {
  ht_spec *spec;
  if (ht_spec_load(HT_SOURCE_DIR "/examples/vadd/vadd_c.json", &spec)) fail_msg("%s", ht_last_error());
  assert_int_equal(ht_spec_set_size(spec, size), HT_OK);
  return spec;
}

typedef struct seen {
  char keys[64][128];
  int n, seeds;
} seen;

static void note_progress(const ht_tune_progress *p, void *ctx) {
  seen *s = ctx;
  if (s->n < 64) snprintf(s->keys[s->n++], sizeof s->keys[0], "%s", p->last_config);
  if (p->last_seed) s->seeds++;
}

static ht_status tune(const char *size, const char *db, const char *strategy, int batch, int64_t budget, int no_reuse,
                      const char *const *seeds, int n_seeds, seen *log, ht_tune_summary *sum) {
  ht_spec *spec = vadd(size);
  ht_store *st;
  assert_int_equal(ht_store_open(db, &st), HT_OK);
  ht_tune_options to;
  ht_tune_options_default(&to);
  assert_int_equal(to.batch, 0); /* by default: as the strategy allows */
  to.strategy = strategy;
  to.batch = batch;
  to.budget_evals = budget;
  to.no_reuse = no_reuse;
  to.seed_configs = seeds;
  to.n_seed_configs = n_seeds;
  to.progress = note_progress;
  to.progress_ctx = log;
  memset(log, 0, sizeof *log);
  ht_runner_options ro;
  ht_runner_options_default(&ro);
  ro.max_runs = 3;
  ro.max_time_s = 0.05;
  ht_status s = ht_tune(spec, "c", st, &to, &ro, sum);
  ht_store_close(st);
  ht_spec_destroy(spec);
  return s;
}

/* A batch of 4 with brute force measures the configs of a batch of 1, in the same order. */
static void test_tune_batches(void **state) {
  (void)state;
  char db[512];
  snprintf(db, sizeof db, "%s/batch.db", tmpdir);
  ht_tune_summary *sum = malloc(sizeof *sum);
  seen *one = malloc(sizeof *one), *four = malloc(sizeof *four);
  if (tune("N=20000", db, "brute_force", 1, 6, 0, NULL, 0, one, sum)) fail_msg("%s", ht_last_error());
  assert_int_equal(sum->measured, 6);
  if (tune("N=20000", db, "brute_force", 4, 6, 1, NULL, 0, four, sum)) fail_msg("%s", ht_last_error());
  assert_int_equal(sum->measured, 6); /* 4 + 2: a batch never passes the budget */
  assert_int_equal(one->n, 6);
  assert_int_equal(four->n, 6);
  for (int i = 0; i < 6; i++) assert_string_equal(one->keys[i], four->keys[i]);
  free(one);
  free(four);
  free(sum);
}

/* The first evaluation's report outlasts the time budget. */
static void outlast_budget(const ht_tune_progress *p, void *ctx) {
  (void)ctx;
  for (double t0 = ht_now(); p->elapsed_s + (ht_now() - t0) < 1.1;) poll(NULL, 0, 10);
}

typedef struct first_report {
  const char *cache;
  int objects; /* kernels in the cache when the first evaluation was reported; -1: none yet */
} first_report;

static void count_at_first(const ht_tune_progress *p, void *ctx) {
  (void)p;
  first_report *f = ctx;
  if (f->objects < 0) f->objects = cached_objects(f->cache);
}

/* HETUNE_CACHE_DIR set to dir; the value it had, to give back to restore_cache_dir. */
static char *use_cache_dir(const char *dir) {
  char *old = getenv("HETUNE_CACHE_DIR") ? strdup(getenv("HETUNE_CACHE_DIR")) : NULL;
  setenv("HETUNE_CACHE_DIR", dir, 1);
  return old;
}

static void restore_cache_dir(char *old) {
  if (old) setenv("HETUNE_CACHE_DIR", old, 1);
  else unsetenv("HETUNE_CACHE_DIR");
  free(old);
}

/* Tunes spec on c into st, which it closes with spec: `measured` configs must be measured. */
static void tune_closing(ht_spec *spec, ht_store *st, const ht_tune_options *to, const ht_runner_options *ro,
                         int64_t measured) {
  ht_tune_summary *sum = malloc(sizeof *sum);
  if (ht_tune(spec, "c", st, to, ro, sum)) fail_msg("%s", ht_last_error());
  assert_int_equal(sum->measured, measured);
  ht_store_close(st);
  ht_spec_destroy(spec);
  free(sum);
}

/* The kernels built when the first evaluation of a 4-config tuning is reported, in a fresh
 * compile cache, with the default batch. */
static int built_at_first_report(const char *strategy, const char *name) {
  char db[512], cache[512];
  snprintf(db, sizeof db, "%s/%s.db", tmpdir, name);
  snprintf(cache, sizeof cache, "%s/%s-cache", tmpdir, name);
  char *old = use_cache_dir(cache);
  ht_spec *spec = vadd("N=20000");
  ht_store *st;
  assert_int_equal(ht_store_open(db, &st), HT_OK);
  ht_tune_options to;
  ht_tune_options_default(&to);
  to.strategy = strategy;
  to.budget_evals = 4;
  first_report f = {cache, -1};
  to.progress = count_at_first;
  to.progress_ctx = &f;
  ht_runner_options ro;
  ht_runner_options_default(&ro);
  ro.max_runs = 3;
  ro.compile_jobs = 2; /* batches of 4 where the strategy allows */
  tune_closing(spec, st, &to, &ro, 4);
  restore_cache_dir(old);
  return f.objects;
}

/* By default brute force, whose choices do not depend on the batch, is asked two configs per
 * compile job, so the four are built before the first is measured (and the reference); greedy
 * local search, whose next config depends on the last result, one at a time. */
static void test_default_batch_follows_strategy(void **state) {
  (void)state;
  assert_int_equal(built_at_first_report("brute_force", "default_batch_bf"), 1 + 4);
  assert_int_equal(built_at_first_report("greedy_ils", "default_batch_ils"), 1 + 1);
}

/* Kernels of the cache folder mapped in this process at the most at one report: a batch's kernels
 * are all loaded before its first is measured, so at a report the rest of the batch is. */
typedef struct loaded_watch {
  const char *cache;
  int most;
} loaded_watch;

static void count_loaded(const ht_tune_progress *p, void *ctx) {
  (void)p;
  loaded_watch *w = ctx;
  FILE *maps = fopen("/proc/self/maps", "r");
  char line[1024], last[1024] = "";
  int n = 0;
  while (maps && fgets(line, sizeof line, maps)) {
    const char *path = strchr(line, '/');
    if (path && strstr(path, w->cache) && strstr(path, ".so") && strcmp(path, last) != 0) {
      n++;
      snprintf(last, sizeof last, "%s", path);
    }
  }
  if (maps) fclose(maps);
  if (n > w->most) w->most = n;
}

/* The 40 configs of a kernel that takes no time, in this process, every config measured; the
 * most kernels loaded at once. */
static int most_loaded(const char *cache, int batch) {
  char db[512];
  snprintf(db, sizeof db, "%s/loaded.db", tmpdir);
  ht_spec *spec;
  if (ht_spec_load(HT_SOURCE_DIR "/bench/data/spin_c.json", &spec)) fail_msg("%s", ht_last_error());
  assert_int_equal(ht_spec_set_size(spec, "SPIN_US=0"), HT_OK);
  ht_store *st;
  assert_int_equal(ht_store_open(db, &st), HT_OK);
  ht_tune_options to;
  ht_tune_options_default(&to);
  to.strategy = "brute_force";
  to.batch = batch;
  to.no_reuse = 1;
  loaded_watch w = {cache, 0};
  to.progress = count_loaded;
  to.progress_ctx = &w;
  ht_runner_options ro;
  ht_runner_options_default(&ro);
  ro.isolate = 0;
  ro.max_runs = 2;
  ro.compile_jobs = 2; /* batches of 4 to begin with */
  tune_closing(spec, st, &to, &ro, 40);
  return w.most;
}

/* While a default batch has nothing to compile, the next is twice as large (up to 32): here 4, 8,
 * 16, then the 12 left. In a new cache every batch compiles, and they stay at 4; a batch given is
 * kept whatever the cache holds. */
static void test_default_batch_grows_while_cached(void **state) {
  (void)state;
  char cache[512];
  snprintf(cache, sizeof cache, "%s/grow-cache", tmpdir);
  char *old = use_cache_dir(cache);
  assert_int_equal(most_loaded(cache, 0), 3);  /* all compiled: batches of 4, one measured */
  assert_int_equal(most_loaded(cache, 0), 15); /* all cached: the batch of 16, one measured */
  assert_int_equal(most_loaded(cache, 4), 3);
  restore_cache_dir(old);
}

/* --time ends a batch under way: its configs not measured yet are left out. */
static void test_tune_batch_stops_at_time(void **state) {
  (void)state;
  char db[512];
  snprintf(db, sizeof db, "%s/batch_time.db", tmpdir);
  ht_spec *spec = vadd("N=20000");
  ht_store *st;
  assert_int_equal(ht_store_open(db, &st), HT_OK);
  ht_tune_options to;
  ht_tune_options_default(&to);
  to.strategy = "brute_force";
  to.batch = 8;
  to.budget_seconds = 1.0; /* up while the first of 8 is reported */
  to.progress = outlast_budget;
  ht_runner_options ro;
  ht_runner_options_default(&ro);
  ro.max_runs = 3;
  ht_tune_summary *sum = malloc(sizeof *sum);
  if (ht_tune(spec, "c", st, &to, &ro, sum)) fail_msg("%s", ht_last_error());
  assert_int_equal(sum->measured, 1);
  ht_store_close(st);
  ht_spec_destroy(spec);
  free(sum);
}

/* Seed configs are measured first (those the space does not hold are left out), and the nearby
 * stored bests of other sizes come back nearest first. */
static void test_tune_seeds_and_nearby_bests(void **state) {
  (void)state;
  char db[512];
  snprintf(db, sizeof db, "%s/seeds.db", tmpdir);
  ht_tune_summary *sum = malloc(sizeof *sum);
  seen *log = malloc(sizeof *log);
  const char *seeds[] = {"NTHREADS=1,CHUNK=4096,UNROLL=2", "NTHREADS=1,CHUNK=4096", "NTHREADS=1,CHUNK=1048576,UNROLL=2",
                         "NTHREADS=1,CHUNK=4096,UNROLL=2"};
  if (tune("N=20000", db, "random", 1, 4, 0, seeds, 4, log, sum)) fail_msg("%s", ht_last_error());
  /* only the first is in the space: the second names too few parameters, the third's CHUNK > N */
  assert_int_equal(sum->seeds, 1);
  assert_int_equal(log->seeds, 1);
  assert_string_equal(log->keys[0], "NTHREADS=1,CHUNK=4096,UNROLL=2");
  assert_int_equal(sum->measured, 4);
  assert_true(sum->found);
  char best20k[1024];
  snprintf(best20k, sizeof best20k, "%s", sum->best_config);
  if (tune("N=80000", db, "random", 1, 3, 0, NULL, 0, log, sum)) fail_msg("%s", ht_last_error());
  assert_int_equal(sum->seeds, 0);
  assert_true(isnan(sum->seed_best_time_s));
  ht_spec *spec = vadd("N=25000");
  ht_store *st;
  assert_int_equal(ht_store_open(db, &st), HT_OK);
  char **near = NULL;
  int n = 0;
  assert_int_equal(ht_tune_nearby_bests(st, spec, 4, &near, &n), HT_OK);
  assert_true(n >= 1 && n <= 2);
  assert_string_equal(near[0], best20k); /* 20000 is nearer to 25000 than 80000 */
  ht_tune_configs_free(near, n);
  assert_int_equal(ht_tune_nearby_bests(st, spec, 1, &near, &n), HT_OK);
  assert_int_equal(n, 1);
  ht_tune_configs_free(near, n);
  ht_store_close(st);
  ht_spec_destroy(spec);
  free(log);
  free(sum);
}

static int setup(void **state) {
  (void)state;
  snprintf(tmpdir, sizeof tmpdir, "/tmp/hetune-test-session-XXXXXX");
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char *cmd = ht_strfmt("rm -rf '%s'", tmpdir);
  int rc = system(cmd);
  free(cmd);
  return rc == 0 ? 0 : -1;
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_every_strategy_batched_out_of_order),
    cmocka_unit_test(test_exhaustion),
    cmocka_unit_test(test_seed_configs_first),
    cmocka_unit_test(test_errors),
    cmocka_unit_test(test_virtual_clock_and_stop),
    cmocka_unit_test(test_replay_executor_equals_replay),
    cmocka_unit_test(test_tune_batches),
    cmocka_unit_test(test_tune_batch_stops_at_time),
    cmocka_unit_test(test_default_batch_follows_strategy),
    cmocka_unit_test(test_default_batch_grows_while_cached),
    cmocka_unit_test(test_tune_seeds_and_nearby_bests),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
