/* Recorded spaces (CSV, T4, Kernel Tuner cache), replay and the Willemsen score: exact baseline
 * against enumeration, budgets, and bad files. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetune/replay.h"
#include "hetune/tune.h"

static char dir[512];

static const char *write_tmp(const char *name, const char *text) {
  static char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  return path;
}

/* A 3 x 4 space with 10 recorded configs: one compile failure, times 1..9 ms (X*10+Y pattern). */
static const char *csv_space(void) {
  char text[8192];
  int n = snprintf(text, sizeof text, "eval_id,kernel,device_id,problem,config,status,time_s,compile_s,wall_s,message\r\n");
  int id = 1;
  for (int x = 1; x <= 3; x++)
    for (int y = 0; y < 4; y++) {
      if (x == 3 && y >= 2) continue; /* not recorded: outside the space */
      int fail = x == 2 && y == 1;
      n += snprintf(text + n, sizeof text - (size_t)n, "%d,k,c,\"N=8\",\"X=%d,Y=%s\",%s,%s,0.5,%.3f,\"a, \"\"quoted\"\" msg\"\r\n",
                    id, x * 16, y == 3 ? "wide" : (const char *[]){"a", "b", "c"}[y], fail ? "compile" : "ok",
                    fail ? "" : (const char *[]){"0.009", "0.008", "0.007", "0.006", "0.005", "0.004", "0.003", "0.002", "0.001", "0.0095"}[id - 1],
                    fail ? 0.2 : 1.0 + 0.01 * id);
      id++;
    }
  return write_tmp("space.csv", text);
}

static void test_load_csv_and_lookup(void **state) {
  (void)state;
  ht_recorded *r;
  if (ht_recorded_load(csv_space(), &r)) fail_msg("%s", ht_last_error());
  assert_string_equal(ht_recorded_name(r), "space");
  assert_int_equal(ht_recorded_size(r), 10);
  ht_space *s = ht_recorded_space(r);
  assert_int_equal(ht_space_param_count(s), 2);
  assert_int_equal(ht_space_value_count(s, 0), 3);
  assert_int_equal(ht_space_value(s, 0, 2).u.i, 48); /* integers sorted numerically */
  assert_string_equal(ht_space_value(s, 1, 3).u.s, "wide");
  uint64_t n;
  assert_int_equal(ht_space_count(s, &n), HT_OK);
  assert_int_equal(n, 10);
  ht_config c;
  assert_int_equal(ht_config_parse(s, "X=48,Y=a", &c), HT_OK);
  ht_result res;
  double cost;
  assert_int_equal(ht_recorded_lookup(r, &c, &res, &cost), 1);
  assert_int_equal(res.status, HT_EVAL_OK);
  assert_true(fabs(res.time_s - 0.001) < 1e-12);
  assert_true(fabs(cost - 1.09) < 1e-9);
  assert_int_equal(ht_config_parse(s, "X=48,Y=c", &c), HT_OK);
  assert_false(ht_space_is_valid(s, &c));
  assert_int_equal(ht_recorded_lookup(r, &c, &res, &cost), 0);
  assert_int_equal(ht_config_parse(s, "X=32,Y=b", &c), HT_OK);
  assert_int_equal(ht_recorded_lookup(r, &c, &res, &cost), 1);
  assert_int_equal(res.status, HT_EVAL_COMPILE);
  ht_recorded_stats st;
  ht_recorded_stats_get(r, &st);
  assert_int_equal(st.n_ok, 9);
  assert_true(fabs(st.f_opt - 0.001) < 1e-12 && fabs(st.f_worst - 0.0095) < 1e-12);
  assert_true(fabs(st.f_median - 0.006) < 1e-12);
  ht_recorded_destroy(r);
}

/* A config recorded several times counts with the median of its successful times and the mean
 * of its costs; a config that never succeeded keeps its last failure. */
static void test_repeats_merge(void **state) {
  (void)state;
  const char *text = "eval_id,kernel,device_id,problem,config,status,time_s,compile_s,wall_s,message\n"
                     "1,k,c,N=8,\"X=1,Y=1\",ok,0.003,0,1.0,\n"
                     "2,k,c,N=8,\"X=1,Y=2\",ok,0.002,0,2.0,\n"
                     "3,k,c,N=8,\"X=1,Y=1\",ok,0.009,0,2.0,\n"
                     "4,k,c,N=8,\"X=2,Y=1\",compile,,0,0.5,bad\n"
                     "5,k,c,N=8,\"X=1,Y=2\",timeout,,0,4.0,slow\n"
                     "6,k,c,N=8,\"X=1,Y=1\",ok,0.004,0,3.0,\n"
                     "7,k,c,N=8,\"X=2,Y=1\",runtime,,0,1.5,crash\n";
  ht_recorded *r;
  if (ht_recorded_load(write_tmp("repeats.csv", text), &r)) fail_msg("%s", ht_last_error());
  assert_int_equal(ht_recorded_size(r), 3);
  ht_space *s = ht_recorded_space(r);
  ht_config c;
  ht_result res;
  double cost;
  assert_int_equal(ht_config_parse(s, "X=1,Y=1", &c), HT_OK);
  assert_int_equal(ht_recorded_lookup(r, &c, &res, &cost), 1);
  assert_int_equal(res.status, HT_EVAL_OK);
  assert_true(fabs(res.time_s - 0.004) < 1e-12); /* the median of 3, 9 and 4 ms */
  assert_true(fabs(cost - 2.0) < 1e-12);
  assert_int_equal(ht_config_parse(s, "X=1,Y=2", &c), HT_OK);
  assert_int_equal(ht_recorded_lookup(r, &c, &res, &cost), 1);
  assert_int_equal(res.status, HT_EVAL_OK); /* a later timeout does not hide the success */
  assert_true(fabs(res.time_s - 0.002) < 1e-12);
  assert_true(fabs(cost - 3.0) < 1e-12);
  assert_int_equal(ht_config_parse(s, "X=2,Y=1", &c), HT_OK);
  assert_int_equal(ht_recorded_lookup(r, &c, &res, &cost), 1);
  assert_int_equal(res.status, HT_EVAL_RUNTIME); /* never succeeded: the last failure */
  ht_recorded_destroy(r);
}

/* The value baseline's E_k against the average over every k-subset of the 10 values, and the rank
 * baseline's time at the expected rank of the best against the mean rank over those subsets. */
static void test_baseline_exact(void **state) {
  (void)state;
  ht_recorded *r;
  assert_int_equal(ht_recorded_load(csv_space(), &r), HT_OK);
  ht_score_options so;
  ht_score_options_default(&so);
  ht_baseline b, br;
  assert_int_equal(ht_baseline_compute(r, &so, &br), HT_OK);
  so.aggregate = HT_AGGREGATE_VALUE;
  assert_int_equal(ht_baseline_compute(r, &so, &b), HT_OK);
  const double v[10] = {0.009, 0.008, 0.007, 0.006, 0.005, 0.0095, 0.003, 0.002, 0.001, 0.0095}; /* fail = worst */
  const double asc[10] = {0.001, 0.002, 0.003, 0.005, 0.006, 0.007, 0.008, 0.009, 0.0095, 0.0095};
  const int sorted_rank[10] = {7, 6, 5, 4, 3, 8, 2, 1, 0, 9}; /* 0-based rank of each v in asc */
  for (int k = 1; k <= 10; k++) {
    double sum = 0, rank_sum = 0;
    int subsets = 0;
    for (int m = 0; m < 1024; m++) {
      if (__builtin_popcount((unsigned)m) != k) continue;
      double best = INFINITY;
      int rank = 10;
      for (int i = 0; i < 10; i++)
        if (m >> i & 1) {
          best = fmin(best, v[i]);
          rank = rank < sorted_rank[i] ? rank : sorted_rank[i];
        }
      sum += best;
      rank_sum += rank;
      subsets++;
    }
    if (fabs(b.expected_best[k] - sum / subsets) > 1e-12) fail_msg("E_%d = %g, want %g", k, b.expected_best[k], sum / subsets);
    double r0 = rank_sum / subsets; /* 0-based mean rank; the ascending times are v sorted */
    int i0 = (int)r0;
    double want = i0 + 1 < 10 ? asc[i0] + (r0 - i0) * (asc[i0 + 1] - asc[i0]) : asc[9];
    if (fabs(br.expected_best[k] - want) > 1e-12) fail_msg("rank E_%d = %g, want %g", k, br.expected_best[k], want);
  }
  assert_true(br.t_start < br.t_cutoff && br.t_cutoff <= b.t_cutoff + 1e-12);
  ht_baseline_free(&br);
  assert_true(b.t_start < b.t_cutoff);
  assert_true(fabs(ht_baseline_at(&b, 0) - 0.0095) < 1e-12);
  assert_true(fabs(ht_baseline_at(&b, 1e9) - 0.001) < 1e-12);
  ht_baseline_free(&b);
  ht_recorded_destroy(r);
}

static void test_replay_budgets(void **state) {
  (void)state;
  ht_recorded *r;
  assert_int_equal(ht_recorded_load(csv_space(), &r), HT_OK);
  for (int i = 0; i < ht_strategy_count(); i++) {
    ht_replay_options o;
    ht_replay_options_default(&o);
    o.strategy = ht_strategy_at(i)->name;
    o.charge_strategy_time = 0;
    ht_replay_trace t;
    if (ht_replay(r, &o, &t)) fail_msg("%s: %s", o.strategy, ht_last_error());
    assert_int_equal(t.n, 10); /* budget beyond the space: everything, once */
    assert_true(t.found);
    assert_true(fabs(t.steps[9].best - 0.001) < 1e-12);
    assert_true(fabs(t.steps[9].t - 9.69) < 1e-9); /* the recorded costs, exactly */
    ht_replay_trace_free(&t);
    o.budget_evals = 3;
    assert_int_equal(ht_replay(r, &o, &t), HT_OK);
    assert_int_equal(t.n, 3);
    ht_replay_trace_free(&t);
    o.budget_evals = 0;
    o.budget_seconds = 2.5; /* the run stops with the evaluation that crosses it */
    assert_int_equal(ht_replay(r, &o, &t), HT_OK);
    assert_true(t.n >= 3 && t.steps[t.n - 2].t < 2.5 && t.steps[t.n - 1].t >= 2.5);
    ht_replay_trace_free(&t);
  }
  ht_replay_options o;
  ht_replay_options_default(&o);
  ht_replay_trace t;
  o.strategy = "nope";
  assert_int_equal(ht_replay(r, &o, &t), HT_ERR_NOTFOUND);
  o.strategy = "random";
  o.strategy_options = "bogus=1";
  assert_int_equal(ht_replay(r, &o, &t), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "bogus"));
  ht_recorded_destroy(r);
}

/* Random search scores about 0 against its own exact baseline. */
static void test_random_scores_zero(void **state) {
  (void)state;
  char text[1 << 16];
  int n = snprintf(text, sizeof text, "config,status,time_s,wall_s\n");
  ht_rng rng;
  ht_rng_seed(&rng, 4);
  for (int a = 0; a < 20; a++)
    for (int b = 0; b < 20; b++)
      n += snprintf(text + n, sizeof text - (size_t)n, "\"A=%d,B=%d\",ok,%.6g,1\n", a, b, 1e-3 * (1 + 10 * ht_rng_uniform(&rng)));
  ht_recorded *r;
  assert_int_equal(ht_recorded_load(write_tmp("rand.csv", text), &r), HT_OK);
  for (int agg = HT_AGGREGATE_RANK; agg <= HT_AGGREGATE_VALUE; agg++) {
    ht_score_options so;
    ht_score_options_default(&so);
    so.seeds = 400;
    so.charge_strategy_time = 0;
    so.aggregate = agg;
    ht_baseline b;
    assert_int_equal(ht_baseline_compute(r, &so, &b), HT_OK);
    ht_score sc;
    assert_int_equal(ht_score_strategy(r, &b, "random", &so, &sc), HT_OK);
    if (fabs(sc.mean) > 3 * sc.ci95 + 0.05) fail_msg("aggregate %d: random scored %g +- %g", agg, sc.mean, sc.ci95);
    assert_true(sc.lo <= sc.mean && sc.mean <= sc.hi && sc.ci95 > 0);
    for (int j = 0; j < so.points; j++) assert_true(sc.curve_lo[j] <= sc.curve[j] + 1e-12 && sc.curve[j] <= sc.curve_hi[j] + 1e-12);
    ht_score_free(&sc);
    assert_int_equal(ht_score_strategy(r, &b, "brute_force", &so, &sc), HT_OK);
    assert_true(sc.mean < 1.0);
    ht_score_free(&sc);
    ht_baseline_free(&b);
  }
  ht_recorded_destroy(r);
}

static void test_t4_and_kernel_tuner_cache(void **state) {
  (void)state;
  const char *t4 = "{\"schema_version\": \"1.0.0\", \"results\": ["
                   "{\"configuration\": {\"T\": 8, \"V\": \"x\"}, \"invalidity\": \"correct\", \"objectives\": [\"time\"],"
                   " \"measurements\": [{\"name\": \"time\", \"value\": 2.0, \"unit\": \"ms\"}],"
                   " \"times\": {\"compilation_time\": 0.5, \"runtimes\": [0.002, 0.002], \"framework\": 0.1, \"validation\": 0.01}},"
                   "{\"configuration\": {\"T\": 16, \"V\": \"x\"}, \"invalidity\": \"runtime\", \"measurements\": [], \"times\": {}},"
                   "{\"configuration\": {\"T\": 32, \"V\": \"x\"}, \"invalidity\": \"constraints\", \"measurements\": [], \"times\": {}},"
                   "{\"configuration\": {\"T\": 16, \"V\": \"y\"}, \"invalidity\": \"correct\","
                   " \"measurements\": [{\"name\": \"time\", \"value\": 0.001, \"unit\": \"s\"}], \"times\": {\"compilation_time\": 1}}]}";
  ht_recorded *r;
  if (ht_recorded_load(write_tmp("t4.json", t4), &r)) fail_msg("%s", ht_last_error());
  assert_int_equal(ht_recorded_size(r), 3); /* the constraints row is not part of the space */
  ht_config c;
  ht_result res;
  double cost;
  assert_int_equal(ht_config_parse(ht_recorded_space(r), "T=8,V=x", &c), HT_OK);
  assert_int_equal(ht_recorded_lookup(r, &c, &res, &cost), 1);
  assert_true(fabs(res.time_s - 0.002) < 1e-12 && fabs(cost - 0.614) < 1e-9);
  ht_recorded_destroy(r);
  const char *kt = "{\"device_name\": \"dev\", \"kernel_name\": \"k\", \"tune_params_keys\": [\"bx\", \"by\"],"
                   " \"tune_params\": {\"bx\": [16, 32], \"by\": [1, 2]}, \"objective\": \"time\", \"cache\": {"
                   "\"16,1\": {\"bx\": 16, \"by\": 1, \"time\": 1.5, \"compile_time\": 300, \"benchmark_time\": 20},"
                   "\"16,2\": {\"bx\": 16, \"by\": 2, \"time\": \"CompilationFailedConfig\", \"compile_time\": 100},"
                   "\"32,1\": {\"bx\": 32, \"by\": 1, \"time\": \"InvalidConfig\"},"
                   "\"32,2\": {\"bx\": 32, \"by\": 2, \"time\": 0.5, \"compile_time\": 200, \"benchmark_time\": 10}}}";
  if (ht_recorded_load(write_tmp("cache.json", kt), &r)) fail_msg("%s", ht_last_error());
  assert_int_equal(ht_recorded_size(r), 3);
  ht_recorded_stats st;
  ht_recorded_stats_get(r, &st);
  assert_true(fabs(st.f_opt - 0.0005) < 1e-12 && st.n_ok == 2);
  assert_true(fabs(st.total_cost_s - 0.63) < 1e-9);
  ht_recorded_destroy(r);
}

static void expect_error(const char *name, const char *text, ht_status code, const char *needle) {
  ht_recorded *r = NULL;
  ht_status st = ht_recorded_load(text ? write_tmp(name, text) : name, &r);
  if (st != code || !strstr(ht_last_error(), needle))
    fail_msg("%s: got %d '%s', want %d with '%s'", name, st, ht_last_error(), code, needle);
  assert_null(r);
}

static void test_bad_files(void **state) {
  (void)state;
  expect_error("/nonexistent/space.csv", NULL, HT_ERR_IO, "/nonexistent/space.csv");
  expect_error("empty.csv", "", HT_ERR_PARSE, "no CSV header");
  expect_error("nocol.csv", "config,time_s\nA=1,0.1\n", HT_ERR_PARSE, "no 'status' column");
  expect_error("quote.csv", "config,status,time_s\n\"A=1,ok,0.1\n", HT_ERR_PARSE, "line 2: malformed CSV");
  expect_error("fields.csv", "config,status,time_s\nA=1,ok\n", HT_ERR_PARSE, "line 2 has 2 fields");
  expect_error("status.csv", "config,status,time_s\nA=1,great,0.1\n", HT_ERR_PARSE, "unknown status 'great'");
  expect_error("cfg.csv", "config,status,time_s\nA1,ok,0.1\n", HT_ERR_PARSE, "is not NAME=VALUE");
  expect_error("names.csv", "config,status,time_s\nA=1,ok,0.1\nB=1,ok,0.1\n", HT_ERR_PARSE, "'B' is not in the first row");
  expect_error("time.csv", "config,status,time_s\nA=1,ok,\n", HT_ERR_PARSE, "without a positive time");
  expect_error("mixed.csv", "config,status,time_s,problem\nA=1,ok,0.1,N=1\nA=2,ok,0.1,N=2\n", HT_ERR_INVALID,
               "problem 'N=2'");
  expect_error("allfail.csv", "config,status,time_s\nA=1,runtime,\n", HT_ERR_INVALID, "no recorded config succeeded");
  expect_error("header.csv", "config,status,time_s\n", HT_ERR_INVALID, "no recorded evaluations");
  expect_error("bad.json", "{\"results\": [", HT_ERR_PARSE, "bad.json:1:");
  expect_error("other.json", "{\"foo\": 1}", HT_ERR_PARSE, "neither a T4 results file");
  expect_error("t4bad.json", "{\"results\": [{\"configuration\": {\"A\": 1}}]}", HT_ERR_PARSE, "lacks configuration or invalidity");
}

int main(void) {
  snprintf(dir, sizeof dir, "%s/replay_test_XXXXXX", HT_BINARY_DIR);
  if (!mkdtemp(dir)) return 1;
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_load_csv_and_lookup), cmocka_unit_test(test_repeats_merge), cmocka_unit_test(test_baseline_exact),
    cmocka_unit_test(test_replay_budgets),      cmocka_unit_test(test_random_scores_zero),
    cmocka_unit_test(test_t4_and_kernel_tuner_cache), cmocka_unit_test(test_bad_files),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
