/* Recorded files as other tools write them and as hetune writes them: Kernel Tuner 1.5's T4
 * results and cache (tests/data/kernel_tuner, made by make.py there), time units, hetune's T4 and
 * CSV exports read back (string values holding ',' '=' '\', checked against Kernel Tuner's T4
 * schema), NaN parameter values and caches without tune_params_keys. */
#define _GNU_SOURCE /* mkdtemp */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetune/replay.h"
#include "hetune/store.h"
#include "hetune/tune.h"

#define KT_DIR HT_SOURCE_DIR "/tests/data/kernel_tuner"

static char dir[512];

static const char *tmp_path(const char *name) {
  static char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return path;
}

static const char *write_tmp(const char *name, const char *text) {
  const char *path = tmp_path(name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  return path;
}

static ht_recorded *load(const char *path) {
  ht_recorded *r = NULL;
  if (ht_recorded_load(path, &r)) fail_msg("%s", ht_last_error());
  return r;
}

static void expect_error(const char *name, const char *text, const char *needle) {
  ht_recorded *r = NULL;
  ht_status st = ht_recorded_load(write_tmp(name, text), &r);
  if (st == HT_OK || !strstr(ht_last_error(), needle))
    fail_msg("%s: got %d '%s', want an error with '%s'", name, st, st ? ht_last_error() : "", needle);
  assert_null(r);
}

/* Every config once (brute force, budget beyond the space): the clock ends at the sum of the
 * recorded costs. */
static double replay_total(ht_recorded *r) {
  ht_replay_options o;
  ht_replay_options_default(&o);
  o.strategy = "brute_force";
  o.charge_strategy_time = 0;
  ht_replay_trace t;
  if (ht_replay(r, &o, &t)) fail_msg("%s", ht_last_error());
  assert_int_equal(t.n, ht_recorded_size(r));
  double total = t.steps[t.n - 1].t;
  ht_replay_trace_free(&t);
  return total;
}

static void expect_status(ht_recorded *r, const char *config, ht_eval_status status, double time_s) {
  ht_config c;
  ht_result res;
  if (ht_config_parse(ht_recorded_space(r), config, &c)) fail_msg("%s", ht_last_error());
  assert_int_equal(ht_recorded_lookup(r, &c, &res, NULL), 1);
  assert_int_equal(res.status, status);
  if (status == HT_EVAL_OK && fabs(res.time_s - time_s) > 1e-12 * time_s)
    fail_msg("%s: %.17g s, want %.17g s", config, res.time_s, time_s);
}

/* ---- Kernel Tuner 1.5 ---- */

/* make.py prints these sums, which Python takes from the files' JSON numbers (milliseconds):
 * compilation + benchmark + framework + validation over the T4 results, compile_time +
 * verification_time + benchmark_time + framework_time over the cache entries, and the best
 * "time" of both. */
static const double kt_t4_cost_ms = 1250.2141690000003, kt_cache_cost_ms = 1224.8569410000982,
                    kt_best_ms = 0.009865571478647845;

/* Both files: 8 configs, 2 parameters, 7 successes and the compile failure, the best time, and a
 * replay of everything that takes the files' total cost_ms, in seconds. */
static void check_kernel_tuner_file(const char *path, double cost_ms) {
  ht_recorded *r = load(path);
  assert_int_equal(ht_recorded_size(r), 8);
  assert_int_equal(ht_space_param_count(ht_recorded_space(r)), 2);
  ht_recorded_stats st;
  ht_recorded_stats_get(r, &st);
  assert_int_equal(st.n_ok, 7);
  assert_true(fabs(st.f_opt - kt_best_ms * 1e-3) < 1e-15);
  double total = replay_total(r);
  if (fabs(total - cost_ms * 1e-3) > 1e-9) fail_msg("%s: replayed %.9g s, the file holds %.9g s", path, total, cost_ms * 1e-3);
  expect_status(r, "unroll=8,acc_t=double", HT_EVAL_COMPILE, 0);
  expect_status(r, "unroll=8,acc_t=float", HT_EVAL_OK, kt_best_ms * 1e-3);
  ht_recorded_destroy(r);
}

static void test_kernel_tuner_t4(void **state) {
  (void)state;
  check_kernel_tuner_file(KT_DIR "/t4_results.json", kt_t4_cost_ms);
}

/* Kernel Tuner 1.x marks a failure with "__error__" and writes no "time". */
static void test_kernel_tuner_cache(void **state) {
  (void)state;
  check_kernel_tuner_file(KT_DIR "/cache.json", kt_cache_cost_ms);
}

/* Without tune_params_keys the parameters are the keys of tune_params, never "time". */
static void test_cache_without_keys(void **state) {
  (void)state;
  const char *entries = "\"cache\": {\"16,float\": {\"bx\": 16, \"t\": \"float\", \"time\": 1.5, \"compile_time\": 300,"
                        " \"GFLOP/s\": 12.5}, \"32,float\": {\"bx\": 32, \"t\": \"float\", \"time\": 0.5}}}";
  char text[1024];
  snprintf(text, sizeof text, "{\"tune_params\": {\"bx\": [16, 32], \"t\": [\"float\"]}, %s", entries);
  ht_recorded *r = load(write_tmp("nokeys.json", text));
  ht_space *s = ht_recorded_space(r);
  assert_int_equal(ht_space_param_count(s), 2);
  assert_string_equal(ht_space_param_name(s, 0), "bx");
  assert_string_equal(ht_space_param_name(s, 1), "t");
  expect_status(r, "bx=32,t=float", HT_EVAL_OK, 0.5e-3);
  assert_true(fabs(replay_total(r) - 0.3) < 1e-12); /* the compile time; no costs recorded for the other */
  ht_recorded_destroy(r);
  snprintf(text, sizeof text, "{\"kernel_name\": \"k\", %s", entries);
  expect_error("nothing.json", text, "without \"tune_params_keys\" or \"tune_params\"");
}

/* ---- units ---- */

static void t4_with_unit(char *buf, size_t len, const char *meta, const char *times, const char *time_unit) {
  snprintf(buf, len,
           "{\"schema_version\": \"1.0.0\", %s \"results\": [{\"configuration\": {\"A\": 1}, \"invalidity\": \"correct\","
           " \"correctness\": 1, \"times\": %s, \"measurements\": [{\"name\": \"time\", \"value\": 2, \"unit\": %s}]}]}",
           meta, times, time_unit);
}

static void expect_units(const char *meta, const char *times, const char *time_unit, double cost_s, double time_s) {
  char text[1024];
  t4_with_unit(text, sizeof text, meta, times, time_unit);
  ht_recorded *r = load(write_tmp("unit.json", text));
  ht_recorded_stats st;
  ht_recorded_stats_get(r, &st);
  if (fabs(st.total_cost_s - cost_s) > 1e-12 * cost_s || fabs(st.f_opt - time_s) > 1e-12 * time_s)
    fail_msg("%s %s %s: cost %g s, time %g s; want %g s, %g s", meta, times, time_unit, st.total_cost_s, st.f_opt,
             cost_s, time_s);
  ht_recorded_destroy(r);
}

static void test_t4_units(void **state) {
  (void)state;
  const char *kt_times = "{\"compilation\": 100, \"benchmark\": 20, \"framework\": 5, \"search_algorithm\": 7,"
                         " \"validation\": 1, \"runtimes\": [3, 3]}";
  const char *schema_times = "{\"compilation_time\": 100, \"framework\": 5, \"validation\": 1, \"runtimes\": [3, 3]}";
  const struct {
    const char *name;
    double scale;
  } units[] = {{"seconds", 1}, {"milliseconds", 1e-3}, {"microseconds", 1e-6}, {"nanoseconds", 1e-9}, {"ms", 1e-3}, {"us", 1e-6}};
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    char meta[96], unit[32];
    snprintf(meta, sizeof meta, "\"metadata\": {\"timeunit\": \"%s\"},", units[i].name);
    snprintf(unit, sizeof unit, "\"%s\"", units[i].name);
    /* Kernel Tuner's benchmark covers the runs; without it the runs count. */
    expect_units(meta, kt_times, "\"\"", 126 * units[i].scale, 2 * units[i].scale);
    expect_units(meta, schema_times, "\"ms\"", 112 * units[i].scale, 2e-3);
    expect_units("", schema_times, unit, 112, 2 * units[i].scale);
  }
  /* No timeunit: Kernel Tuner's writer (before 1.5) wrote milliseconds, hetune's seconds. */
  expect_units("", kt_times, "\"ms\"", 0.126, 2e-3);
  expect_units("", schema_times, "\"s\"", 112, 2);
  char text[1024];
  t4_with_unit(text, sizeof text, "\"metadata\": {\"timeunit\": \"fortnights\"},", schema_times, "\"s\"");
  expect_error("badunit.json", text, "metadata.timeunit: unknown time unit 'fortnights'");
  t4_with_unit(text, sizeof text, "\"metadata\": {\"timeunit\": 1000},", schema_times, "\"s\"");
  expect_error("numunit.json", text, "unknown time unit '(not a string)'");
  t4_with_unit(text, sizeof text, "", schema_times, "\"jiffies\"");
  expect_error("badmunit.json", text, "result 1, measurement 'time': unknown time unit 'jiffies'");
}

/* ---- NaN ---- */

static void test_nan_values(void **state) {
  (void)state;
  expect_error("nan.csv", "config,status,time_s,wall_s\n\"A=1,B=2\",ok,0.003,1\n\"A=nan,B=2\",ok,0.001,1\n", "row 3: parameter 'A' is 'nan'");
  expect_error("nan.json", "{\"results\": [{\"configuration\": {\"A\": \"NaN\"}, \"invalidity\": \"correct\", \"times\": {}}]}",
               "row 1: parameter 'A' is 'NaN'");
}

/* ---- hetune's exports read back ---- */

typedef struct fixture {
  ht_store *st;
  ht_space *space;
  int64_t session;
  ht_eval_key key;
} fixture;

/* A string parameter whose values hold the config text's separators, and an integer one. */
static const char *const kinds[] = {"a,b", "x=y", "c\\d", "plain"};

static void fixture_open(fixture *f) {
  char db[1100];
  snprintf(db, sizeof db, "%s", tmp_path("hetune.db"));
  remove(db);
  assert_int_equal(ht_store_open(db, &f->st), HT_OK);
  ht_device_info d;
  memset(&d, 0, sizeof d);
  snprintf(d.backend, sizeof d.backend, "c");
  snprintf(d.id, sizeof d.id, "c:0");
  snprintf(d.name, sizeof d.name, "Test CPU");
  snprintf(d.fingerprint, sizeof d.fingerprint, "%016x", 0xabc);
  memset(&f->key, 0, sizeof f->key);
  assert_int_equal(ht_store_put_device(f->st, &d, &f->key.device_id), HT_OK);
  assert_int_equal(ht_store_put_kernel(f->st, "k", "c", "0123", "k.json", "{}", &f->key.kernel_id), HT_OK);
  assert_int_equal(ht_store_put_problem(f->st, f->key.kernel_id, "N=8", &f->key.problem_id), HT_OK);
  ht_session_info si = {f->key.kernel_id, f->key.device_id, f->key.problem_id, "brute_force", 1, 0, 0, NULL};
  assert_int_equal(ht_store_session_begin(f->st, &si, &f->session), HT_OK);
  ht_value kv[4], tv[2] = {ht_int(1), ht_int(2)};
  for (int i = 0; i < 4; i++) kv[i] = ht_str(kinds[i]);
  assert_int_equal(ht_space_create(&f->space), HT_OK);
  assert_int_equal(ht_space_add_param(f->space, "KIND", kv, 4), HT_OK);
  assert_int_equal(ht_space_add_param(f->space, "T", tv, 2), HT_OK);
}

static void fixture_close(fixture *f) {
  ht_space_destroy(f->space);
  ht_store_close(f->st);
}

/* Config i of the 8: time (i+1) ms, compile 0.1 s, verify 0.01 s, framework 0.001 s, one run;
 * config 5 fails to compile; a metric without value. Keys as the tuner writes them. */
static void put_space(fixture *f, double *t4_cost) {
  *t4_cost = 0;
  for (uint64_t i = 0; i < 8; i++) {
    ht_config c;
    char key[256], json[256];
    assert_int_equal(ht_space_get(f->space, i, &c), HT_OK);
    ht_config_format(f->space, &c, key, sizeof key);
    json_t *o = json_pack("{s:s, s:I}", "KIND", ht_space_value(f->space, 0, c.idx[0]).u.s, "T",
                          (json_int_t)ht_space_value(f->space, 1, c.idx[1]).u.i);
    char *dump = json_dumps(o, JSON_COMPACT);
    snprintf(json, sizeof json, "%s", dump);
    free(dump);
    json_decref(o);
    ht_result r;
    ht_result_init(&r);
    r.status = i == 5 ? HT_EVAL_COMPILE : HT_EVAL_OK;
    r.n_samples = i == 5 ? 0 : 1;
    r.samples[0] = (double)(i + 1) * 1e-3;
    ht_result_summarise(&r);
    r.compile_s = 0.1, r.verify_s = 0.01, r.framework_s = 0.001, r.wall_s = 0.5 + (double)i;
    r.n_metrics = 1;
    snprintf(r.metrics[0].name, sizeof r.metrics[0].name, "gflops");
    r.metrics[0].value = i == 2 ? NAN : 1.0;
    *t4_cost += r.compile_s + r.verify_s + r.framework_s + (i == 5 ? 0 : r.samples[0]);
    f->key.config_key = key;
    f->key.config_json = json;
    assert_int_equal(ht_store_put_eval(f->st, f->session, &f->key, &r, NULL), HT_OK);
  }
}

static void export_to(fixture *f, const char *name, int t4) {
  FILE *out = fopen(tmp_path(name), "w");
  assert_non_null(out);
  ht_eval_filter flt = {.kernel_name = "k"};
  assert_int_equal(t4 ? ht_store_export_t4(f->st, &flt, out) : ht_store_export_csv(f->st, &flt, out), HT_OK);
  fclose(out);
}

/* Each config's time and status as the store holds them. */
static void expect_space(ht_recorded *r, fixture *f) {
  assert_int_equal(ht_recorded_size(r), 8);
  for (uint64_t i = 0; i < 8; i++) {
    ht_config c;
    char key[256];
    assert_int_equal(ht_space_get(f->space, i, &c), HT_OK);
    ht_config_format(f->space, &c, key, sizeof key);
    expect_status(r, key, i == 5 ? HT_EVAL_COMPILE : HT_EVAL_OK, (double)(i + 1) * 1e-3);
  }
}

static void test_export_read_back(void **state) {
  (void)state;
  fixture f;
  fixture_open(&f);
  double t4_cost;
  put_space(&f, &t4_cost);
  /* The text form reads back as the config, and escapes exactly the separators. */
  ht_config c, back;
  char key[256];
  assert_int_equal(ht_config_parse(f.space, "KIND=a\\,b,T=2", &c), HT_OK);
  ht_config_format(f.space, &c, key, sizeof key);
  assert_string_equal(key, "KIND=a\\,b,T=2");
  for (uint64_t i = 0; i < 8; i++) {
    assert_int_equal(ht_space_get(f.space, i, &c), HT_OK);
    ht_config_format(f.space, &c, key, sizeof key);
    if (ht_config_parse(f.space, key, &back)) fail_msg("%s", ht_last_error());
    assert_true(ht_config_equal(&c, &back));
  }
  export_to(&f, "k.csv", 0);
  ht_recorded *r = load(tmp_path("k.csv"));
  expect_space(r, &f);
  assert_true(fabs(replay_total(r) - (8 * 0.5 + 28)) < 1e-9); /* wall_s */
  ht_recorded_destroy(r);
  export_to(&f, "k.json", 1);
  r = load(tmp_path("k.json"));
  expect_space(r, &f);
  assert_true(fabs(replay_total(r) - t4_cost) < 1e-9);
  ht_recorded_destroy(r);
  assert_int_equal(ht_recorded_from_store(f.st, "k", NULL, NULL, &r), HT_OK);
  expect_space(r, &f);
  ht_recorded_destroy(r);
  fixture_close(&f);
}

/* hetune's T4 export against Kernel Tuner's copy of the T4 1.0.0 results schema, with Python's
 * jsonschema (skipped without it); a broken copy must fail, so the check is known to run. */
static int validate(const char *file) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "python3 -c 'import json, sys, jsonschema; jsonschema.validate(json.load(open(sys.argv[2])), "
           "json.load(open(sys.argv[1])))' '%s/results-schema.json' '%s' 2>/dev/null",
           KT_DIR, file);
  return system(cmd);
}

static void test_export_t4_schema(void **state) {
  (void)state;
  if (system("python3 -c 'import jsonschema' 2>/dev/null") != 0) {
    print_message("python3 with jsonschema not found (Debian: python3-jsonschema): T4 schema check skipped\n");
    skip();
  }
  fixture f;
  fixture_open(&f);
  double t4_cost;
  put_space(&f, &t4_cost);
  export_to(&f, "schema.json", 1);
  fixture_close(&f);
  assert_int_equal(validate(tmp_path("schema.json")), 0);
  char *text = NULL;
  size_t len = 0;
  assert_int_equal(ht_read_file(tmp_path("schema.json"), &text, &len), HT_OK);
  json_t *doc = json_loads(text, 0, NULL);
  free(text);
  assert_non_null(doc);
  assert_string_equal(json_string_value(json_object_get(json_object_get(doc, "metadata"), "timeunit")), "seconds");
  json_object_set_new(json_array_get(json_object_get(doc, "results"), 0), "invalidity", json_string("great"));
  assert_int_equal(json_dump_file(doc, tmp_path("broken.json"), 0), 0);
  json_decref(doc);
  assert_int_not_equal(validate(tmp_path("broken.json")), 0);
  assert_int_equal(validate(KT_DIR "/t4_results.json"), 0);
}

int main(void) {
  snprintf(dir, sizeof dir, "%s/recorded_io_XXXXXX", HT_BINARY_DIR);
  if (!mkdtemp(dir)) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kernel_tuner_t4),  cmocka_unit_test(test_kernel_tuner_cache),
      cmocka_unit_test(test_cache_without_keys), cmocka_unit_test(test_t4_units),
      cmocka_unit_test(test_nan_values),        cmocka_unit_test(test_export_read_back),
      cmocka_unit_test(test_export_t4_schema),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
