/* Interop with other tools: the StarPU perfmodel export (its file structure, footprints StarPU
 * computes, StarPU's own starpu_perfmodel_display reading it where starpu-tools is installed, and
 * a StarPU program predicting hetune's times with it where libstarpu-dev is) and tuning a T1 file. */
#define _GNU_SOURCE /* nftw */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "cli_test_util.h"

static char dir[512], db[600];

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "%s/interop-XXXXXX", HT_BINARY_DIR);
  if (!mkdtemp(dir)) return -1;
  snprintf(db, sizeof db, "%s/tuned.db", dir);
  return chdir(HT_SOURCE_DIR);
}

static int teardown(void **state) {
  (void)state;
  rm_tree(dir);
  return 0;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  static char text[65536];
  size_t n = fread(text, 1, sizeof text - 1, f);
  text[n] = '\0';
  fclose(f);
  return text;
}

/* Tunes vadd_c at two sizes with a small budget, once per test run. */
static void tune_vadd(void) {
  static int done;
  if (done) return;
  run_out r;
  /* 10 timed runs at least: StarPU trusts an entry from STARPU_CALIBRATE_MINIMUM (10) samples */
  run(&r, "tune", "examples/vadd/vadd_c.json", "--size", "N=4096", "--budget", "3", "--min-runs", "10", "--quiet", "--db",
      db);
  if (r.rc) fail_msg("%s: %s", r.cmd, r.err);
  run(&r, "tune", "examples/vadd/vadd_c.json", "--size", "N=8192", "--budget", "3", "--min-runs", "10", "--quiet", "--db",
      db);
  if (r.rc) fail_msg("%s: %s", r.cmd, r.err);
  done = 1;
}

/* The file as StarPU 1.3 writes a history model: version 45, one CPU device, and an entry per
 * size whose footprint is StarPU's for a size_base of that size (values from StarPU's own
 * starpu_hash_crc32c_be_n: 4096 -> cabfb472, 8192 -> 8ba307a5). */
static void test_starpu_perfmodel_file(void **state) {
  (void)state;
  tune_vadd();
  char path[700];
  snprintf(path, sizeof path, "%s/vadd.model", dir);
  run_out r;
  run(&r, "export", "--format", "starpu-perfmodel", "--kernel", "vadd_c", "--device", "c:0", "--db", db, "--output", path);
  if (r.rc) fail_msg("%s: %s", r.cmd, r.err);
  const char *t = slurp(path);
  assert_non_null(t);
  assert_non_null(strstr(t, "# Performance Model Version\n45\n"));
  assert_non_null(strstr(t, "# device type (CPU - 0, CUDA - 1, OPENCL - 2, MIC - 3, MPI_MS - 5)\n0\n"));
  assert_non_null(strstr(t, "# number of entries\n2\n"));
  const char *e1 = strstr(t, "\ncabfb472\t4096 "), *e2 = strstr(t, "\n8ba307a5\t8192 ");
  if (!e1 || !e2 || e2 < e1) fail_msg("entries missing or out of order:\n%s", t);
  double mean, dev, sum, sum2, flops;
  unsigned long long size;
  unsigned fp;
  int n;
  assert_int_equal(sscanf(e1 + 1, "%x %llu %le %le %le %le %le %d", &fp, &size, &flops, &mean, &dev, &sum, &sum2, &n), 8);
  assert_true(n >= 1 && mean > 0 && dev >= 0);
  assert_true(fabs(sum / n - mean) <= 1e-5 * mean); /* printed with 7 digits */
  /* Errors: a device StarPU has no architecture for, several kernels, nothing stored. */
  run(&r, "export", "--format", "starpu-perfmodel", "--db", db, "--kernel", "nosuch");
  expect_error(&r, 1, "no successful evaluations", "none match the filter");
  run(&r, "export", "--format", "starpu-perfmodl", "--db", db);
  expect_error(&r, 2, "--format must be csv, t4, kt-cache or starpu-perfmodel");
}

static int have_tool(const char *name) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "command -v %s > /dev/null 2>&1", name);
  return system(cmd) == 0;
}

/* The exported model where StarPU looks for it, symbol hetune_vadd on host testhost:
 * top/codelets/45/hetune_vadd.testhost (made once). */
static void put_model(char *top, size_t top_len, char *path, size_t path_len) {
  static int done;
  tune_vadd();
  snprintf(top, top_len, "%s/starpu", dir);
  snprintf(path, path_len, "%s/codelets/45/hetune_vadd.testhost", top);
  if (done) return;
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s/codelets/45'", top);
  assert_int_equal(system(cmd), 0);
  run_out r;
  run(&r, "export", "--format", "starpu-perfmodel", "--kernel", "vadd_c", "--device", "c:0", "--db", db, "--output", path);
  if (r.rc) fail_msg("%s: %s", r.cmd, r.err);
  done = 1;
}

/* StarPU reads the file: starpu_perfmodel_display, with the model put where StarPU looks for it
 * (STARPU_PERF_MODEL_DIR/codelets/45/SYMBOL.HOSTNAME), shows the sizes and means hetune wrote. */
static void test_starpu_reads_it(void **state) {
  (void)state;
  if (!have_tool("starpu_perfmodel_display")) {
    print_message("starpu_perfmodel_display not found (Debian: starpu-tools): skipped\n");
    skip();
  }
  char top[700], path[800];
  put_model(top, sizeof top, path, sizeof path);
  run_out r;
  char *argv[] = {"/bin/sh", "-c",
                  "STARPU_PERF_MODEL_DIR=\"$0\" STARPU_HOSTNAME=testhost STARPU_SILENT=1 "
                  "starpu_perfmodel_display -s hetune_vadd",
                  top, NULL};
  run_argv(&r, NULL, argv);
  if (r.rc) fail_msg("starpu_perfmodel_display failed (%d): %s%s", r.rc, r.out, r.err);
  /* Each of our entries, as StarPU prints it: hash, size, flops, mean (us), stddev (us), n. */
  const char *t = slurp(path);
  for (const char *line = strstr(t, "# hash"); line && (line = strchr(line, '\n')) && line[1] != '\n';) {
    line++;
    unsigned fp;
    unsigned long long size;
    double flops, mean;
    assert_int_equal(sscanf(line, "%x %llu %le %le", &fp, &size, &flops, &mean), 4);
    char hash[16], m[32];
    snprintf(hash, sizeof hash, "%08x", fp);
    snprintf(m, sizeof m, "%e", mean);
    const char *shown = strstr(r.out, hash);
    if (!shown || !strstr(shown, m)) fail_msg("StarPU does not show entry %s (mean %s):\n%s", hash, m, r.out);
  }
  assert_non_null(strstr(r.out, "\t4096 "));
  assert_non_null(strstr(r.out, "\t8192 "));
}

/* A StarPU program uses the model: a codelet whose perfmodel has the exported symbol and a
 * size_base returning N gets hetune's mean as StarPU's expected length of a task on N elements
 * (docs/interop.md), and no prediction for a size hetune did not measure. */
static const char starpu_program[] =
  "#include <starpu.h>\n#include <stdio.h>\n"
  "static void f(void *b[], void *a) { (void)b, (void)a; }\n"
  "static size_t size_of(struct starpu_task *t, unsigned i) {\n  (void)i;\n"
  "  return STARPU_VECTOR_GET_NX(starpu_data_get_interface_on_node(STARPU_TASK_GET_HANDLE(t, 0), STARPU_MAIN_RAM));\n}\n"
  "static struct starpu_perfmodel pm = {.type = STARPU_HISTORY_BASED, .symbol = \"hetune_vadd\", .size_base = size_of};\n"
  "static struct starpu_codelet cl = {.cpu_funcs = {f}, .nbuffers = 1, .modes = {STARPU_RW}, .model = &pm};\n"
  "int main(int argc, char **argv) {\n  static float v[1 << 16];\n  if (starpu_init(NULL)) return 1;\n"
  "  for (int i = 1; i < argc; i++) {\n    starpu_data_handle_t h;\n"
  "    starpu_vector_data_register(&h, STARPU_MAIN_RAM, (uintptr_t)v, (uint32_t)atoi(argv[i]), sizeof(float));\n"
  "    struct starpu_task *t = starpu_task_create();\n    t->cl = &cl, t->handles[0] = h, t->destroy = 0;\n"
  "    printf(\"%s %e\\n\", argv[i], starpu_task_expected_length(t, starpu_worker_get_perf_archtype(0, 0), 0));\n"
  "    starpu_task_destroy(t);\n    starpu_data_unregister(h);\n  }\n  starpu_shutdown();\n  return 0;\n}\n";

static void test_starpu_uses_it(void **state) {
  (void)state;
  if (system("pkg-config --exists starpu-1.3") != 0) {
    print_message("StarPU 1.3 (Debian: libstarpu-dev) not found: skipped\n");
    skip();
  }
  char src[700], prog[700], cmd[2048], top[700], path[800];
  put_model(top, sizeof top, path, sizeof path);
  snprintf(src, sizeof src, "%s/uses_model.c", dir);
  snprintf(prog, sizeof prog, "%s/uses_model", dir);
  FILE *f = fopen(src, "w");
  assert_non_null(f);
  fputs(starpu_program, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "cc '%s' -o '%s' $(pkg-config --cflags --libs starpu-1.3)", src, prog);
  assert_int_equal(system(cmd), 0);
  char *argv[] = {"/bin/sh", "-c",
                  "STARPU_PERF_MODEL_DIR=\"$0\" STARPU_HOSTNAME=testhost STARPU_SILENT=1 STARPU_NCPU=1 STARPU_NCUDA=0 "
                  "STARPU_NOPENCL=0 \"$1\" 4096 8192 1000",
                  top, prog, NULL};
  run_out r;
  run_argv(&r, NULL, argv);
  if (r.rc) fail_msg("the StarPU program failed (%d): %s%s", r.rc, r.out, r.err);
  const char *t = slurp(path);
  assert_non_null(t);
  for (int n = 4096; n <= 8192; n *= 2) {
    char key[32], want[64];
    snprintf(key, sizeof key, "\t%d ", n);
    const char *e = strstr(t, key);
    double mean;
    assert_non_null(e);
    assert_int_equal(sscanf(e, "%*d %*e %le", &mean), 1);
    snprintf(want, sizeof want, "%d %e\n", n, mean);
    if (!strstr(r.out, want)) fail_msg("StarPU expects otherwise for %d elements (hetune: %s):\n%s", n, want, r.out);
  }
  assert_non_null(strstr(r.out, "1000 nan")); /* not measured: StarPU has no prediction */
}

/* ---- T1 files ---- */

/* Tuning a T1 file: the kernel it names, on a device of its language, stored under its
 * KernelName with its parameters; --size overrides its ProblemSize. */
static void test_t1_tune(void **state) {
  (void)state;
  char t1db[700];
  snprintf(t1db, sizeof t1db, "%s/t1.db", dir);
  run_out r;
  run(&r, "tune", "tests/data/t1/vadd_t1.json", "--budget", "3", "--quiet", "--db", t1db);
  if (r.rc) fail_msg("%s: %s", r.cmd, r.err);
  if (!strstr(r.out, "tuned vadd_t1 on opencl:")) fail_msg("not the T1 kernel on OpenCL:\n%s", r.out);
  run(&r, "tune", "tests/data/t1/vadd_t1.json", "--size", "N=8192", "--budget", "2", "--quiet", "--db", t1db);
  if (r.rc) fail_msg("%s: %s", r.cmd, r.err);
  run(&r, "export", "--format", "csv", "--kernel", "vadd_t1", "--ok", "--db", t1db);
  if (r.rc) fail_msg("%s: %s", r.cmd, r.err);
  int rows = 0, big = 0;
  char *save = NULL;
  strtok_r(r.out, "\n", &save); /* the header */
  for (char *l = strtok_r(NULL, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    rows++;
    if (!strstr(l, ",vadd_t1,opencl:") || !strstr(l, "block_size_x=")) fail_msg("row of another kernel: %.200s", l);
    big += strstr(l, ",N=8192,") != NULL;
  }
  assert_int_equal(rows, 5);
  assert_int_equal(big, 2);
}

/* Writes tests/data/t1/vadd_t1.json with from replaced by to as DIR/bad.json, next to a copy of
 * its kernel. */
static const char *bad_t1(const char *from, const char *to) {
  static char path[700];
  char text[8192], cmd[2048];
  snprintf(cmd, sizeof cmd, "cp tests/data/t1/vadd_t1.cl '%s/'", dir);
  assert_int_equal(system(cmd), 0);
  FILE *f = fopen("tests/data/t1/vadd_t1.json", "r");
  assert_non_null(f);
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  char *at = strstr(text, from);
  if (!at) fail_msg("'%s' not in vadd_t1.json", from);
  snprintf(path, sizeof path, "%s/bad.json", dir);
  f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
  fclose(f);
  return path;
}

/* What a T1 file holds that hetune cannot map is one error at its line:column. */
static void test_t1_errors(void **state) {
  (void)state;
  char t1db[700];
  snprintf(t1db, sizeof t1db, "%s/t1-bad.db", dir);
  static const struct {
    const char *from, *to, *where, *what;
  } cases[] = {
      {"\"Language\"", "\"Shape\": 1, \"Language\"", "bad.json:13:5:", "unknown key \"Shape\" in KernelSpecification"},
      {"\"vadd_t1.cl\"", "\"missing.cl\"", "bad.json:15:19:", "KernelFile \"missing.cl\": no such file"},
      {"\"Language\"", "\"SharedMemory\": 1024, \"Language\"", "bad.json:13:5:", "\"SharedMemory\" is not supported"},
      {"\"OpenCL\"", "\"HIP\"", "bad.json:13:17:", "Language \"HIP\" is not supported"},
      {"\"Random\", \"FillValue\": 1.0},\n      {\"Name\": \"b\"", "\"Generator\"},\n      {\"Name\": \"b\"",
       "bad.json:24:20:", "FillType \"Generator\" is not supported"},
      {"{\"N\": 4096}", "[4096]", "bad.json:17:5:", "\"ProblemSize\" must be an object of named sizes"},
      {"\"FillValue\": \"N\"", "\"FillValue\": \"N\", \"Output\": true", "bad.json:27:80:",
       "unknown key \"Output\" in Arguments[3]"},
      {"block_size_x\"}", "block_size_x * nope\"}", "bad.json:18:5:", "unknown name 'nope'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    run_out r;
    run(&r, "tune", bad_t1(cases[i].from, cases[i].to), "--budget", "1", "--db", t1db);
    expect_error(&r, 1, cases[i].where, cases[i].what);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_starpu_perfmodel_file),
      cmocka_unit_test(test_starpu_reads_it),
      cmocka_unit_test(test_starpu_uses_it),
      cmocka_unit_test(test_t1_tune),
      cmocka_unit_test(test_t1_errors),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
