/* Strict spec loading. Every file in tests/data/specs/bad/ (also rejected by the JSON Schema,
 * tests/spec_schema.py) and bad_loader/ (structurally valid; only the loader, which compiles the
 * C kernel's prototype, can tell) fails to load with exactly the error in its .err file, and
 * `hetune space count` and `hetune tune` exit 1 with that one line and store nothing. Every spec
 * the project ships or generates loads. Verification fails a kernel that leaves an output element
 * unchanged where the reference changes it, even within tolerance. */
#include <glob.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "hetune/hetune.h"
#include "measure/evaluator.h"
#include "spec/spec_internal.h"

#define SPECS HT_SOURCE_DIR "/tests/data/specs"
#define GENERATED HT_BINARY_DIR "/spec-generated"

static char tmpdir[256];

static int setup(void **state) {
  (void)state;
  snprintf(tmpdir, sizeof tmpdir, "/tmp/ht_spec_XXXXXX");
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  return system(cmd) == 0 ? 0 : -1;
}

/* The files matching pattern; their number in *n. */
static glob_t files(const char *pattern, size_t *n) {
  glob_t g;
  memset(&g, 0, sizeof g);
  int rc = glob(pattern, 0, NULL, &g);
  if (rc != 0 && rc != GLOB_NOMATCH) fail_msg("glob %s: %d", pattern, rc);
  *n = rc == 0 ? g.gl_pathc : 0;
  return g;
}

static char *read_text(const char *path) {
  char *text = NULL;
  if (ht_read_file(path, &text, NULL)) fail_msg("%s", ht_last_error());
  return text;
}

/* The error a bad spec must give: its .err file, {dir} standing for the spec's folder. */
static char *expected_error(const char *spec) {
  char err[1024], dir[1024];
  snprintf(err, sizeof err, "%.*s.err", (int)(strlen(spec) - 5), spec);
  snprintf(dir, sizeof dir, "%.*s", (int)(strrchr(spec, '/') - spec), spec);
  char *tmpl = read_text(err);
  tmpl[strcspn(tmpl, "\n")] = '\0';
  ht_buf out = {0};
  for (const char *p = tmpl; *p;) {
    const char *at = strstr(p, "{dir}");
    size_t len = at ? (size_t)(at - p) : strlen(p);
    ht_buf_append_bytes(&out, p, len);
    if (at) ht_buf_append(&out, dir);
    p += len + (at ? 5 : 0);
  }
  free(tmpl);
  return out.data;
}

static int run_cli(char **log, ...) {
  char *argv[16] = {HT_CLI};
  int n = 1, code = -1;
  va_list ap;
  va_start(ap, log);
  for (char *a; n < 15 && (a = va_arg(ap, char *));) argv[n++] = a;
  va_end(ap);
  if (ht_run_capture(argv, NULL, 120, log, &code)) fail_msg("%s: %s", argv[1], ht_last_error());
  return code;
}

static long long count_rows(const char *db, const char *sql) {
  sqlite3 *h;
  sqlite3_stmt *q;
  long long n = -1;
  assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
  if (sqlite3_prepare_v2(h, sql, -1, &q, NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW) n = sqlite3_column_int64(q, 0);
  sqlite3_finalize(q);
  sqlite3_close(h);
  return n;
}

/* ---- bad specs: one exact error, from the library and from the command line ---- */

static void expect_rejected(const char *spec) {
  char *want = expected_error(spec), *log = NULL, line[2048], db[512];
  ht_spec *s = NULL;
  if (ht_spec_load(spec, &s) == HT_OK) fail_msg("%s loaded; expected: %s", spec, want);
  if (strcmp(ht_last_error(), want) != 0) fail_msg("%s:\n  got:      %s\n  expected: %s", spec, ht_last_error(), want);
  snprintf(line, sizeof line, "hetune: %s\n", want);
  int rc = run_cli(&log, "space", "count", spec, (char *)NULL);
  if (rc != 1 || strcmp(log, line) != 0) fail_msg("hetune space count %s: exit %d, output:\n%s", spec, rc, log);
  free(log);
  snprintf(db, sizeof db, "%s/bad.db", tmpdir);
  rc = run_cli(&log, "tune", spec, "--db", db, "--quiet", (char *)NULL);
  if (rc != 1 || strcmp(log, line) != 0) fail_msg("hetune tune %s: exit %d, output:\n%s", spec, rc, log);
  if (access(db, F_OK) == 0) assert_int_equal(count_rows(db, "SELECT count(*) FROM evaluations"), 0);
  free(log);
  free(want);
}

static void reject_all(const char *pattern, size_t at_least) {
  size_t n;
  glob_t g = files(pattern, &n);
  if (n < at_least) fail_msg("%s: %zu files, expected at least %zu", pattern, n, at_least);
  for (size_t i = 0; i < n; i++) expect_rejected(g.gl_pathv[i]);
  globfree(&g);
}

/* Unknown keys anywhere, missing geometry, no written buffer, keys that do not go together. */
static void test_bad_specs(void **state) {
  (void)state;
  reject_all(SPECS "/bad/*.json", 16);
}

/* Missing, extra and mistyped arguments of a C kernel or its reference; launch dimensions. */
static void test_bad_specs_only_the_loader_sees(void **state) {
  (void)state;
  reject_all(SPECS "/bad_loader/*.json", 6);
}

/* Line and column of the second occurrence of needle in text; 0 when there is none. */
static int second_occurrence(const char *text, const char *needle, int *line, int *col) {
  size_t len = strlen(needle), seen = 0, i = 0;
  *line = *col = 1;
  for (; text[i] && seen < 2; i++) {
    if (strncmp(text + i, needle, len) == 0 && ++seen == 2) break;
    *line += text[i] == '\n';
    *col = text[i] == '\n' ? 1 : *col + 1;
  }
  return seen == 2;
}

/* The error points at the misspelt key itself, also when its text occurs earlier in the file. */
static void test_position_is_the_keys(void **state) {
  (void)state;
  const char *path = SPECS "/bad/typo_after_same_text.json";
  char *text = read_text(path), *want = expected_error(path), where[64];
  int line, col;
  assert_true(second_occurrence(text, "\"acces\"", &line, &col)); /* a size's name, then the typo */
  snprintf(where, sizeof where, ".json:%d:%d: ", line, col);
  if (!strstr(want, where)) fail_msg("%s does not point at %s", want, where);
  free(text);
  free(want);
}

static void test_nearest_key(void **state) {
  (void)state;
  static const char *const keys[] = {"language", "access", "constraints", "rtol", "atol", NULL};
  assert_string_equal(spec_nearest("acces", keys), "access");
  assert_string_equal(spec_nearest("langauge", keys), "language");
  assert_string_equal(spec_nearest("constraint", keys), "constraints");
  assert_string_equal(spec_nearest("rtl", keys), "rtol");
  assert_null(spec_nearest("seed", keys));
  assert_null(spec_nearest("frobnicate", keys));
}

/* ---- every spec the project ships or generates loads ---- */

static void load_all(const char *pattern, size_t at_least) {
  size_t n;
  glob_t g = files(pattern, &n);
  if (n < at_least) fail_msg("%s: %zu files, expected at least %zu", pattern, n, at_least);
  for (size_t i = 0; i < n; i++) {
    ht_spec *s = NULL;
    if (ht_spec_load(g.gl_pathv[i], &s)) fail_msg("%s", ht_last_error());
    ht_spec_destroy(s);
  }
  globfree(&g);
}

static void test_shipped_specs_load(void **state) {
  (void)state;
  load_all(HT_SOURCE_DIR "/examples/*/*.json", 18);
  load_all(HT_SOURCE_DIR "/tests/data/misbehave/*.json", 2);
  load_all(HT_SOURCE_DIR "/bench/data/*.json", 1);
  load_all(SPECS "/good/*.json", 4);
}

/* Every GEMM generator (tuned, naive, vendor; C, OpenCL, CUDA; both types, transposes, beta)
 * writes into GENERATED, which the schema test validates too. */
static void generate_gemm(void) {
  const ht_gemm_problem problems[] = {{.m = 64, .n = 48, .k = 32, .type = HT_DTYPE_F32, .alpha = 1},
                                      {.m = 33, .n = 17, .k = 9, .type = HT_DTYPE_F64, .trans_a = 1, .trans_b = 1,
                                       .alpha = 2, .beta = 0.5}};
  typedef ht_status (*gen)(const ht_gemm_problem *, ht_gemm_target, const char *, char **);
  const gen gens[] = {ht_gemm_generate, ht_gemm_generate_naive, ht_gemm_generate_vendor};
  for (int p = 0; p < 2; p++)
    for (int g = 0; g < 3; g++)
      for (int t = HT_GEMM_C; t <= HT_GEMM_CUDA; t++) {
        char dir[512], *path = NULL;
        snprintf(dir, sizeof dir, "%s/gemm_%d_%d_%d", GENERATED, p, g, t);
        assert_int_equal(ht_mkdir_p(dir), HT_OK);
        if (gens[g](&problems[p], (ht_gemm_target)t, dir, &path)) fail_msg("generate: %s", ht_last_error());
        free(path);
      }
}

/* The bandwidth probes write their specs before they open the device: devices that are not there
 * get them written without a measurement. In a child: the OpenCL runtime would stay in this process. */
static void generate_probes(void) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    const char *ids[] = {"c:7", "opencl:9:9", "cuda:9"};
    ht_bandwidth_curve *curve = malloc(sizeof *curve);
    for (int i = 0; i < 3 && curve; i++) ht_bandwidth_measure(ids[i], 4096, 4096, 1, NULL, NULL, NULL, curve);
    _exit(0);
  }
  int status;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  const char *backends[] = {"c", "opencl", "cuda"};
  for (int i = 0; i < 3; i++) {
    char from[1024], to[1024];
    snprintf(from, sizeof from, "%s/probes/bandwidth_%s.json", ht_cache_dir(), backends[i]);
    snprintf(to, sizeof to, "%s/probes/bandwidth_%s.json", GENERATED, backends[i]);
    ht_spec *s = NULL;
    if (ht_spec_load(from, &s)) fail_msg("%s", ht_last_error());
    ht_spec_destroy(s);
    char *text = read_text(from);
    assert_int_equal(ht_mkdir_p(GENERATED "/probes"), HT_OK);
    assert_int_equal(ht_write_file_atomic(to, text, strlen(text)), HT_OK);
    free(text);
  }
}

static void test_generated_specs_load(void **state) {
  (void)state;
  assert_int_equal(system("rm -rf " GENERATED), 0);
  generate_gemm();
  load_all(GENERATED "/gemm_*/*.json", 18);
  generate_probes();
}

/* ---- the C prototype check ---- */

static int count_markers(const char *cache) {
  char pattern[600];
  snprintf(pattern, sizeof pattern, "%s/c/signature-*.ok", cache);
  size_t n;
  glob_t g = files(pattern, &n);
  globfree(&g);
  return (int)n;
}

static int load_ok(const char *path) {
  ht_spec *s = NULL;
  ht_status st = ht_spec_load(path, &s);
  ht_spec_destroy(s);
  return st == HT_OK;
}

/* The outcome is cached: a second load does not run the compiler; a failed check caches nothing.
 * Without a C compiler the check is skipped and the spec loads. */
static void test_signature_check_cache(void **state) {
  (void)state;
  char cache[512], script[600], calls[600], *old_cache = ht_strdup(getenv("HETUNE_CACHE_DIR"));
  snprintf(cache, sizeof cache, "%s/cache", tmpdir);
  snprintf(script, sizeof script, "%s/cc.sh", tmpdir);
  snprintf(calls, sizeof calls, "%s/calls", tmpdir);
  char text[1024];
  snprintf(text, sizeof text, "#!/bin/sh\necho x >> '%s'\nexec cc \"$@\"\n", calls);
  assert_int_equal(ht_write_file_atomic(script, text, strlen(text)), HT_OK);
  assert_int_equal(chmod(script, 0755), 0);
  setenv("HETUNE_CACHE_DIR", cache, 1);
  setenv("HETUNE_CC", script, 1);
  assert_true(load_ok(SPECS "/good/axpy_c.json"));
  assert_int_equal(count_markers(cache), 2); /* the kernel and its reference */
  char *log = read_text(calls);
  assert_string_equal(log, "x\nx\n");
  free(log);
  assert_true(load_ok(SPECS "/good/axpy_c.json"));
  log = read_text(calls);
  assert_string_equal(log, "x\nx\n"); /* no compiler run the second time */
  free(log);
  assert_false(load_ok(SPECS "/bad_loader/missing_arg.json"));
  assert_int_equal(count_markers(cache), 2);
  setenv("HETUNE_CC", "/nonexistent/cc", 1);
  assert_true(load_ok(SPECS "/bad_loader/missing_arg.json"));
  unsetenv("HETUNE_CC");
  if (old_cache) setenv("HETUNE_CACHE_DIR", old_cache, 1);
  else unsetenv("HETUNE_CACHE_DIR");
  free(old_cache);
}

/* ---- verification: outputs left unchanged ---- */

/* y += 3e-5 * x (x = 1) with the last element skipped: within the default tolerance of the
 * reference, so only the comparison with the initial contents catches it. */
static void test_unchanged_output_fails(void **state) {
  (void)state;
  enum { N = 100 };
  float init[N], ref[N], out[N];
  for (int i = 0; i < N; i++) init[i] = (float)(i % 7) / 7.0f - 0.5f, ref[i] = out[i] = init[i] + 3e-5f;
  out[N - 1] = init[N - 1];
  char msg[512];
  assert_int_equal(ht_verify_buffer("y", HT_DTYPE_F32, out, ref, NULL, N, -1, -1, msg, sizeof msg), 0);
  assert_int_equal(ht_verify_buffer("y", HT_DTYPE_F32, out, ref, init, N, -1, -1, msg, sizeof msg), 1);
  if (!strstr(msg, "y[99]") || !strstr(msg, "not written") || !strstr(msg, "1 of 100"))
    fail_msg("message: %s", msg);
  /* a value the reference rounds to 1e-13 and the kernel to exactly the initial 0 is no skip */
  float zero[N] = {0}, tiny[N] = {0};
  tiny[0] = 1.0f, tiny[5] = 1e-13f;
  float got[N] = {0};
  got[0] = 1.0f;
  assert_int_equal(ht_verify_buffer("c", HT_DTYPE_F32, got, tiny, zero, N, -1, -1, msg, sizeof msg), 0);
}

/* Every element type, sizes around the checker's blocks of 256: one element wrong (the last, or
 * the first past a block) is found, named and counted; so is one left as it was; 64-bit integers
 * beyond 2^53 are compared exactly; a NaN output and a finite one where the reference has Inf fail. */
static void test_verify_types_and_sizes(void **state) {
  (void)state;
  static const ht_dtype types[] = {HT_DTYPE_F32, HT_DTYPE_F64, HT_DTYPE_I32, HT_DTYPE_U32,
                                   HT_DTYPE_I64, HT_DTYPE_U64, HT_DTYPE_I8,  HT_DTYPE_U8};
  static const size_t sizes[] = {1, 255, 256, 257, 513, 1000};
  unsigned char init[8000], ref[8000], out[8000];
  char msg[512], want[64];
  for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
      ht_dtype t = types[ti];
      size_t n = sizes[si], es = ht_dtype_size(t), bad[2] = {n - 1, n > 256 ? 256 : 0};
      for (size_t i = 0; i < n * es; i++) init[i] = (unsigned char)(i % 5), ref[i] = out[i] = (unsigned char)(i % 5 + 40);
      if (ht_dtype_is_float(t)) /* bytes of small valid numbers: 1.5 and 2.5 times powers of two */
        for (size_t i = 0; i < n; i++) {
          double a = 1.5 + (double)(i % 9), b = a + 1;
          if (t == HT_DTYPE_F32) ((float *)init)[i] = (float)a, ((float *)ref)[i] = ((float *)out)[i] = (float)b;
          else ((double *)init)[i] = a, ((double *)ref)[i] = ((double *)out)[i] = b;
        }
      assert_int_equal(ht_verify_buffer("v", t, out, ref, init, n, -1, -1, msg, sizeof msg), 0);
      for (int k = 0; k < 2; k++) {
        size_t i = bad[k];
        unsigned char keep[8];
        memcpy(keep, out + i * es, es);
        out[i * es] ^= 0x3; /* the lowest byte: a different value in every type */
        if (ht_verify_buffer("v", t, out, ref, init, n, 0, 0, msg, sizeof msg) != 1) fail_msg("%s n=%zu i=%zu: not found", ht_dtype_name(t), n, i);
        snprintf(want, sizeof want, "v[%zu]", i);
        if (!strstr(msg, want) || !strstr(msg, " 1 of ")) fail_msg("%s n=%zu: %s", ht_dtype_name(t), n, msg);
        memcpy(out + i * es, init + i * es, es); /* left as it was */
        int r = ht_verify_buffer("v", t, out, ref, init, n, 1e9, 1e9, msg, sizeof msg);
        if (r != 1 || !strstr(msg, want) || !strstr(msg, "not written"))
          fail_msg("%s n=%zu unchanged: %s", ht_dtype_name(t), n, msg);
        memcpy(out + i * es, keep, es);
      }
    }
  double r[3] = {1, 2, 2}, o[3] = {1, 2, 2};
  assert_int_equal(ht_verify_buffer("d", HT_DTYPE_F64, o, r, NULL, 3, -1, -1, msg, sizeof msg), 0);
  o[2] = NAN;
  assert_int_equal(ht_verify_buffer("d", HT_DTYPE_F64, o, r, NULL, 3, -1, -1, msg, sizeof msg), 1);
  if (!strstr(msg, "d[2]")) fail_msg("message: %s", msg);
  o[2] = 2, r[1] = INFINITY;
  assert_int_equal(ht_verify_buffer("d", HT_DTYPE_F64, o, r, NULL, 3, -1, -1, msg, sizeof msg), 1);
  if (!strstr(msg, "d[1]")) fail_msg("message: %s", msg);
}

/* The float and double checks against a plain loop written from their definition, on random data
 * with awkward values (NaN, infinities, signed zeros, subnormals, differences right at the
 * tolerance), at sizes that end anywhere: the same count of elements that differ, and of elements
 * left as they were. */
static size_t expected_bad(ht_dtype t, const void *out, const void *ref, size_t n, double rtol, double atol) {
  size_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    double o = t == HT_DTYPE_F32 ? ((const float *)out)[i] : ((const double *)out)[i];
    double r = t == HT_DTYPE_F32 ? ((const float *)ref)[i] : ((const double *)ref)[i];
    if (!isfinite(o) || (isfinite(r) && fabs(o - r) > atol + rtol * fabs(r)) || (isinf(r) && o != r)) bad++;
  }
  return bad;
}

static double awkward(ht_rng *g) {
  static const double special[] = {NAN, INFINITY, -INFINITY, 0.0, -0.0, 1e-310, 1e-40, 3.0e38, -1.0};
  return ht_rng_uniform(g) < 0.1 ? special[ht_rng_below(g, 9)] : (ht_rng_uniform(g) - 0.5) * 200;
}

static void test_verify_counts_random(void **state) {
  (void)state;
  static const size_t sizes[] = {1, 3, 17, 255, 1000, 4099};
  static double ref[4099], out[4099], init[4099];
  char msg[512], want[96];
  ht_rng g;
  ht_rng_seed(&g, 7);
  for (int ti = 0; ti < 2; ti++)
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
      for (int trial = 0; trial < 20; trial++) {
        ht_dtype t = ti ? HT_DTYPE_F64 : HT_DTYPE_F32;
        size_t n = sizes[si];
        int tight = trial % 2;
        for (size_t i = 0; i < n; i++) {
          double r = awkward(&g), u = ht_rng_uniform(&g);
          double o = u < 0.6 ? r : u < 0.8 ? r * (1 + (tight ? 1e-12 : 1e-5) * (ht_rng_uniform(&g) - 0.5)) : awkward(&g);
          double in = u < 0.05 ? o : 0;
          if (t == HT_DTYPE_F32) ((float *)ref)[i] = (float)r, ((float *)out)[i] = (float)o, ((float *)init)[i] = (float)in;
          else ref[i] = r, out[i] = o, init[i] = in;
        }
        double rtol = tight ? 1e-6 : 0, atol = tight ? 0 : 1e-3;
        size_t bad = expected_bad(t, out, ref, n, rtol, atol);
        int r = ht_verify_buffer("v", t, out, ref, NULL, n, rtol, atol, msg, sizeof msg);
        snprintf(want, sizeof want, " %zu of %zu elements differ", bad, n);
        if (r != (bad > 0) || (bad && !strstr(msg, want)))
          fail_msg("%s n=%zu trial %d: expected %zu differing, got %d: %s", ht_dtype_name(t), n, trial, bad, r, r ? msg : "");
        /* left as they were: finite values, every one within a huge tolerance */
        double max_ref = 0;
        for (size_t i = 0; i < n; i++) {
          double rv = (ht_rng_uniform(&g) - 0.5) * 200, u = ht_rng_uniform(&g);
          double in = u < 0.3 ? rv : u < 0.5 ? rv * (1 + 1e-9) : u < 0.6 ? 0 : -rv;
          double ov = ht_rng_uniform(&g) < 0.3 ? in : rv;
          if (t == HT_DTYPE_F32) ((float *)ref)[i] = (float)rv, ((float *)out)[i] = (float)ov, ((float *)init)[i] = (float)in;
          else ref[i] = rv, out[i] = ov, init[i] = in;
          max_ref = fmax(max_ref, fabs(t == HT_DTYPE_F32 ? (double)(float)rv : rv));
        }
        double noise = 64 * (t == HT_DTYPE_F32 ? 0x1p-23 : 0x1p-52) * max_ref;
        size_t left = 0, es = ht_dtype_size(t);
        for (size_t i = 0; i < n; i++) {
          double rv = t == HT_DTYPE_F32 ? ((float *)ref)[i] : ref[i], in = t == HT_DTYPE_F32 ? ((float *)init)[i] : init[i];
          left += memcmp((char *)out + i * es, (char *)init + i * es, es) == 0 && fabs(rv - in) > noise;
        }
        r = ht_verify_buffer("v", t, out, ref, init, n, 1e9, 1e9, msg, sizeof msg);
        snprintf(want, sizeof want, " %zu of %zu elements left as they were", left, n);
        if (r != (left > 0) || (left && !strstr(msg, want)))
          fail_msg("%s n=%zu trial %d: expected %zu left as they were, got %d: %s", ht_dtype_name(t), n, trial, left, r,
                   r ? msg : "");
      }
}

static ht_config mode(int m) {
  ht_config c;
  memset(&c, 0, sizeof c);
  c.n = 1;
  c.idx[0] = m;
  return c;
}

/* The off-by-one kernel is recorded as a correctness failure; the right one passes. */
static void test_off_by_one_kernel(void **state) {
  (void)state;
  ht_spec *spec = NULL;
  if (ht_spec_load(SPECS "/good/axpy_c.json", &spec)) fail_msg("%s", ht_last_error());
  ht_runner_options o;
  ht_runner_options_default(&o);
  o.max_runs = 3;
  o.max_time_s = 0.05;
  ht_runner *r;
  assert_int_equal(ht_runner_create(spec, "c", &o, &r), HT_OK);
  ht_result *res = malloc(sizeof *res);
  ht_config c = mode(0);
  assert_int_equal(ht_runner_evaluate(r, &c, res), HT_OK);
  if (res->status != HT_EVAL_OK) fail_msg("MODE=0: %s", res->message);
  c = mode(1);
  assert_int_equal(ht_runner_evaluate(r, &c, res), HT_OK);
  assert_int_equal(res->status, HT_EVAL_CORRECTNESS);
  if (!strstr(res->message, "y[999]") || !strstr(res->message, "not written")) fail_msg("MODE=1: %s", res->message);
  free(res);
  ht_runner_destroy(r);
  ht_spec_destroy(spec);
}

/* `hetune tune` of the off-by-one kernel alone stores its failure and no verified result. */
static void test_off_by_one_is_not_stored_as_verified(void **state) {
  (void)state;
  char *text = read_text(SPECS "/good/axpy_c.json"), spec[512], db[512], *log = NULL;
  ht_buf b = {0};
  const char *p = text;
  for (const char *at; (at = strstr(p, "\"../"));) { /* sources by absolute path: the spec moves */
    ht_buf_append_bytes(&b, p, (size_t)(at - p) + 1);
    ht_buf_append(&b, SPECS "/");
    p = at + 4;
  }
  ht_buf_append(&b, p);
  char *only = strstr(b.data, "\"MODE\": [0, 1]");
  assert_non_null(only);
  memcpy(only, "\"MODE\": [1]   ", 14);
  snprintf(spec, sizeof spec, "%s/offbyone.json", tmpdir);
  snprintf(db, sizeof db, "%s/offbyone.db", tmpdir);
  assert_int_equal(ht_write_file_atomic(spec, b.data, b.len), HT_OK);
  int rc = run_cli(&log, "tune", spec, "--db", db, "--quiet", (char *)NULL);
  if (rc != 1 || !strstr(log, "no config succeeded")) fail_msg("tune: exit %d: %s", rc, log); /* none succeeded */
  assert_int_equal(count_rows(db, "SELECT count(*) FROM evaluations WHERE status = 'correctness'"), 1);
  assert_int_equal(count_rows(db, "SELECT count(*) FROM evaluations WHERE status <> 'correctness'"), 0);
  free(log);
  ht_buf_free(&b);
  free(text);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_nearest_key),
      cmocka_unit_test(test_bad_specs),
      cmocka_unit_test(test_bad_specs_only_the_loader_sees),
      cmocka_unit_test(test_position_is_the_keys),
      cmocka_unit_test(test_shipped_specs_load),
      cmocka_unit_test(test_signature_check_cache),
      cmocka_unit_test(test_unchanged_output_fails),
      cmocka_unit_test(test_verify_types_and_sizes), cmocka_unit_test(test_verify_counts_random),
      cmocka_unit_test(test_off_by_one_kernel),
      cmocka_unit_test(test_off_by_one_is_not_stored_as_verified),
      cmocka_unit_test(test_generated_specs_load),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
