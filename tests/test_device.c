/* Device backends: c (cc + dlopen + libffi), opencl (PoCL here), cuda host side (NVRTC). */
#define _GNU_SOURCE /* sched_setaffinity, sched_getcpu */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/cpus.h"
#include "device/backend.h" /* the backends' tables */
#include "device/cuda_nvrtc.h"
#include "hetune/device.h"

/* PoCL and its LLVM keep compiler state alive until exit; LeakSanitizer (ASan builds) would
 * report it as ours. This hook is only read by LSan; other builds never call it. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libpocl\nleak:libLLVM\nleak:libclang\n"; }

/* ---- helpers ---- */

static ht_device *open_or_fail(const char *id) {
  ht_device *dev = NULL;
  ht_status s = ht_device_open(id, &dev);
  if (s) fprintf(stderr, "open %s: %s\n", id, ht_last_error());
  assert_int_equal(s, HT_OK);
  assert_non_null(dev);
  return dev;
}

static ht_buffer *new_buffer(ht_device *dev, const void *data, size_t bytes) {
  ht_buffer *b = NULL;
  assert_int_equal(ht_device_buffer_new(dev, bytes, &b), HT_OK);
  if (data) {
    double t = -1;
    assert_int_equal(ht_device_buffer_write(dev, b, data, bytes, &t), HT_OK);
    assert_true(t >= 0);
  }
  return b;
}

static ht_arg buf_arg(ht_buffer *b, ht_dtype t) {
  ht_arg a = {.is_buffer = 1, .buf = b, .type = t};
  return a;
}

static ht_arg scalar_arg(ht_dtype t, ht_value v) {
  ht_arg a = {.is_buffer = 0, .type = t, .value = v};
  return a;
}

/* ---- c backend ---- */

static const char *c_vadd =
    "#include <stdint.h>\n"
    "void vadd(const float *a, const float *b, float *c, int32_t n, float alpha, double beta) {\n"
    "  for (int i = 0; i < n; i++) c[i] = alpha * a[i] + (float)beta * b[i] + OFFSET;\n"
    "}\n";

static ht_status c_compile(ht_device *dev, const char *text, const char *entry, const char *offset,
                           ht_program **p, ht_compile_info *info) {
  const char *names[] = {"OFFSET"};
  const char *values[] = {offset};
  ht_defines defs = {1, names, values};
  ht_source src = {.lang = HT_LANG_C, .text = text, .path = HT_SOURCE_DIR "/tests/vadd.c", .entry = entry};
  return ht_device_compile(dev, &src, &defs, p, info);
}

static void test_c_probe(void **state) {
  (void)state;
  ht_device_info infos[4];
  int n = 0;
  const ht_backend_ops *ops = ht_backend_find("c");
  assert_non_null(ops);
  assert_int_equal(ops->probe(infos, 4, &n), HT_OK);
  assert_int_equal(n, 1);
  assert_string_equal(infos[0].id, "c:0");
  assert_true(infos[0].compute_units >= 1);
  assert_true(infos[0].max_threads >= infos[0].compute_units);
  assert_int_equal(infos[0].warp_size, 1);
  assert_true(infos[0].global_mem_bytes > 0);
  assert_true(strlen(infos[0].compiler_version) > 0);
  assert_int_equal(strlen(infos[0].fingerprint), 16);
  const char *names[16];
  ht_value values[16];
  int k = ht_device_constants(&infos[0], names, values, 16);
  assert_int_equal(k, 9);
  assert_string_equal(names[0], "device.compute_units");
  assert_int_equal(values[2].u.i, 1);
}

static void write_fake_cc(const char *path, const char *version) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, "#!/bin/sh\necho '%s'\n", version);
  fclose(f);
  assert_int_equal(chmod(path, 0700), 0);
}

/* A fake compiler that appends a line to runs each time it runs. */
static void write_counting_cc(const char *path, const char *runs, const char *version) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, "#!/bin/sh\necho run >> '%s'\necho '%s'\n", runs, version);
  fclose(f);
  assert_int_equal(chmod(path, 0700), 0);
}

/* How many times a counting compiler ran. */
static int compiler_runs(const char *runs) {
  struct stat st;
  return stat(runs, &st) == 0 ? (int)(st.st_size / 4) : 0; /* "run\n" each */
}

static void probe_version(char *out, size_t len) {
  ht_device_info info;
  int n = 0;
  assert_int_equal(ht_backend_find("c")->probe(&info, 1, &n), HT_OK);
  assert_int_equal(n, 1);
  snprintf(out, len, "%s", info.compiler_version);
}

/* The probe is remembered, but never past a change of compiler: another command, or the same
 * compiler's file rewritten (an upgrade), or a wrapper's script rewritten, is probed again. */
static void test_c_probe_follows_compiler(void **state) {
  (void)state;
  char dir[] = "/tmp/hetune-fakecc-XXXXXX", path[64], v[256];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/fakecc", dir);
  const char *saved = getenv("HETUNE_CC");
  char *keep = saved ? strdup(saved) : NULL;
  write_fake_cc(path, "fakecc 1.0");
  setenv("HETUNE_CC", path, 1);
  probe_version(v, sizeof v);
  assert_string_equal(v, "fakecc 1.0");
  probe_version(v, sizeof v);
  assert_string_equal(v, "fakecc 1.0");
  write_fake_cc(path, "fakecc 2.00"); /* upgraded in place */
  probe_version(v, sizeof v);
  assert_string_equal(v, "fakecc 2.00");
  char wrapped[128];
  snprintf(wrapped, sizeof wrapped, "sh %s", path); /* a wrapper: the script is watched too */
  setenv("HETUNE_CC", wrapped, 1);
  probe_version(v, sizeof v);
  assert_string_equal(v, "fakecc 2.00");
  write_fake_cc(path, "fakecc 3.000");
  probe_version(v, sizeof v);
  assert_string_equal(v, "fakecc 3.000");
  if (keep) setenv("HETUNE_CC", keep, 1);
  else unsetenv("HETUNE_CC");
  probe_version(v, sizeof v);
  assert_string_not_equal(v, "fakecc 3.000");
  free(keep);
  unlink(path);
  rmdir(dir);
}

/* In a new process (a worker, another command) the compiler's version comes from the cache: the
 * compiler runs once per command and file status, not at every process's first probe. */
static void test_c_probe_kept_across_processes(void **state) {
  (void)state;
  char dir[] = "/tmp/hetune-fakecc-XXXXXX", path[64], runs[64];
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/fakecc", dir);
  snprintf(runs, sizeof runs, "%s/runs", dir);
  write_counting_cc(path, runs, "fakecc 4.2");
  const char *saved = getenv("HETUNE_CC");
  char *keep = saved ? strdup(saved) : NULL;
  setenv("HETUNE_CC", path, 1);
  for (int child = 0; child < 2; child++) { /* this process never probes this compiler itself */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      char v[256];
      ht_device_info info;
      int n = 0;
      ht_backend_find("c")->probe(&info, 1, &n);
      snprintf(v, sizeof v, "%s", info.compiler_version);
      _exit(n == 1 && strcmp(v, "fakecc 4.2") == 0 ? 0 : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  assert_int_equal(compiler_runs(runs), 1);
  if (keep) setenv("HETUNE_CC", keep, 1);
  else unsetenv("HETUNE_CC");
  free(keep);
  unlink(runs);
  unlink(path);
  rmdir(dir);
}

/* On a process pinned to one CPU the c device has one thread and one core, though the probe was
 * remembered before the pinning (a worker inherits its parent's). */
static void test_c_probe_follows_affinity(void **state) {
  (void)state;
  ht_device_info info;
  int n = 0;
  assert_int_equal(ht_backend_find("c")->probe(&info, 1, &n), HT_OK);
  assert_int_equal(info.max_threads, ht_cpus_usable());
  assert_true(info.compute_units >= 1 && info.compute_units <= info.max_threads);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &one);
    int ok = sched_setaffinity(0, sizeof one, &one) == 0 && ht_backend_find("c")->probe(&info, 1, &n) == HT_OK &&
             info.max_threads == 1 && info.compute_units == 1;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* A compiler found through an empty $PATH entry (the current folder) is remembered too. */
static void test_c_probe_path_current_folder(void **state) {
  (void)state;
  char dir[] = "/tmp/hetune-fakecc-XXXXXX", path[64], runs[64], old_cwd[4096], v[256];
  assert_non_null(mkdtemp(dir));
  assert_non_null(getcwd(old_cwd, sizeof old_cwd));
  snprintf(path, sizeof path, "%s/fakecc-here", dir);
  snprintf(runs, sizeof runs, "%s/runs", dir);
  write_counting_cc(path, runs, "fakecc here");
  char *old_path = getenv("PATH") ? strdup(getenv("PATH")) : NULL, *old_cc = getenv("HETUNE_CC") ? strdup(getenv("HETUNE_CC")) : NULL;
  char *new_path = ht_strfmt(":%s", old_path ? old_path : "/usr/bin:/bin");
  setenv("PATH", new_path, 1);
  setenv("HETUNE_CC", "fakecc-here", 1);
  assert_int_equal(chdir(dir), 0);
  for (int i = 0; i < 2; i++) {
    probe_version(v, sizeof v);
    assert_string_equal(v, "fakecc here");
  }
  assert_int_equal(compiler_runs(runs), 1);
  assert_int_equal(chdir(old_cwd), 0);
  if (old_path) setenv("PATH", old_path, 1);
  if (old_cc) setenv("HETUNE_CC", old_cc, 1);
  else unsetenv("HETUNE_CC");
  free(new_path);
  free(old_path);
  free(old_cc);
  unlink(runs);
  unlink(path);
  rmdir(dir);
}

static void test_c_vadd(void **state) {
  (void)state;
  ht_device *dev = open_or_fail("c");
  assert_string_equal(ht_device_info_get(dev)->id, "c:0");
  ht_program *p = NULL;
  ht_compile_info info = {0};
  ht_status s = c_compile(dev, c_vadd, "vadd", "0.5f", &p, &info);
  if (s) fprintf(stderr, "%s\n%s\n", ht_last_error(), info.log ? info.log : "");
  assert_int_equal(s, HT_OK);
  free(info.log);
  enum { N = 1000 };
  float a[N], b[N], c[N];
  for (int i = 0; i < N; i++) a[i] = (float)i, b[i] = 2.0f * (float)i;
  ht_buffer *ba = new_buffer(dev, a, sizeof a), *bb = new_buffer(dev, b, sizeof b), *bc = new_buffer(dev, NULL, sizeof c);
  ht_arg args[] = {buf_arg(ba, HT_DTYPE_F32), buf_arg(bb, HT_DTYPE_F32), buf_arg(bc, HT_DTYPE_F32),
                   scalar_arg(HT_DTYPE_I32, ht_int(N)), scalar_arg(HT_DTYPE_F32, ht_float(3.0)),
                   scalar_arg(HT_DTYPE_F64, ht_int(2))};
  ht_launch l = {.dims = 1, .global = {N}, .local = {0}, .n_args = 6, .args = args};
  double t = -1;
  assert_int_equal(ht_device_launch(dev, p, &l, &t), HT_OK);
  assert_true(t >= 0);
  assert_int_equal(ht_device_buffer_read(dev, bc, c, sizeof c, &t), HT_OK);
  for (int i = 0; i < N; i++) assert_float_equal(c[i], 3.0f * a[i] + 2.0f * b[i] + 0.5f, 1e-3);
  /* A string for a numeric scalar is rejected, not passed as garbage. */
  args[3] = scalar_arg(HT_DTYPE_I32, ht_str("x"));
  assert_int_equal(ht_device_launch(dev, p, &l, &t), HT_ERR_INVALID);
  args[3] = scalar_arg(HT_DTYPE_I32, ht_int(INT64_C(1) << 40));
  assert_int_equal(ht_device_launch(dev, p, &l, &t), HT_ERR_INVALID);
  ht_device_buffer_free(dev, ba);
  ht_device_buffer_free(dev, bb);
  ht_device_buffer_free(dev, bc);
  ht_device_program_free(dev, p);
  ht_device_close(dev);
}

/* Every scalar type reaches the kernel as given, in a call that fits the registers (six integer,
 * three floating-point arguments) and in one that does not (seven and nine): the two ways a call
 * is made (c_call.h). */
static const char *c_mixed =
    "#include <stdint.h>\n"
    "void fits(double *o, int8_t a, float g, uint8_t b, double h, int32_t c, float g2, uint32_t d, int64_t e) {\n"
    "  o[0] = a; o[1] = b; o[2] = c; o[3] = d; o[4] = (double)e; o[5] = g; o[6] = h; o[7] = g2;\n"
    "}\n"
    "void spills(double *o, int8_t a, float f0, uint8_t b, double f1, int32_t c, float f2, uint32_t d, double f3,\n"
    "            int64_t e, float f4, uint64_t u, double f5, float f6, double f7, float f8) {\n"
    "  o[0] = a; o[1] = b; o[2] = c; o[3] = d; o[4] = (double)e; o[5] = (double)(u >> 32);\n"
    "  o[6] = f0; o[7] = f1; o[8] = f2; o[9] = f3; o[10] = f4; o[11] = f5; o[12] = f6; o[13] = f7; o[14] = f8;\n"
    "}\n";

static void test_c_scalar_types(void **state) {
  (void)state;
  ht_device *dev = open_or_fail("c");
  ht_buffer *out = new_buffer(dev, NULL, 16 * sizeof(double));
  const double ints[] = {-5, 250, -123456, 4000000000.0, -1099511627776.0, 48879};
  const double reals[] = {1.5, -2.25, 3.125, 1e-300, -0.5, 6.0e200, 7.75, -8.5, 9.0};
  for (int k = 0; k < 2; k++) {
    ht_program *p = NULL;
    ht_compile_info info = {0};
    if (c_compile(dev, c_mixed, k ? "spills" : "fits", "0", &p, &info)) fail_msg("%s\n%s", ht_last_error(), info.log);
    free(info.log);
    ht_arg fits[] = {buf_arg(out, HT_DTYPE_F64), scalar_arg(HT_DTYPE_I8, ht_int(-5)),
                     scalar_arg(HT_DTYPE_F32, ht_float(1.5)), scalar_arg(HT_DTYPE_U8, ht_int(250)),
                     scalar_arg(HT_DTYPE_F64, ht_float(-2.25)), scalar_arg(HT_DTYPE_I32, ht_int(-123456)),
                     scalar_arg(HT_DTYPE_F32, ht_float(3.125)), scalar_arg(HT_DTYPE_U32, ht_int(4000000000LL)),
                     scalar_arg(HT_DTYPE_I64, ht_int(-1099511627776LL))};
    ht_arg spills[] = {buf_arg(out, HT_DTYPE_F64), scalar_arg(HT_DTYPE_I8, ht_int(-5)),
                       scalar_arg(HT_DTYPE_F32, ht_float(1.5)), scalar_arg(HT_DTYPE_U8, ht_int(250)),
                       scalar_arg(HT_DTYPE_F64, ht_float(-2.25)), scalar_arg(HT_DTYPE_I32, ht_int(-123456)),
                       scalar_arg(HT_DTYPE_F32, ht_float(3.125)), scalar_arg(HT_DTYPE_U32, ht_int(4000000000LL)),
                       scalar_arg(HT_DTYPE_F64, ht_float(1e-300)), scalar_arg(HT_DTYPE_I64, ht_int(-1099511627776LL)),
                       scalar_arg(HT_DTYPE_F32, ht_float(-0.5)), scalar_arg(HT_DTYPE_U64, ht_int(48879LL << 32)),
                       scalar_arg(HT_DTYPE_F64, ht_float(6.0e200)), scalar_arg(HT_DTYPE_F32, ht_float(7.75)),
                       scalar_arg(HT_DTYPE_F64, ht_float(-8.5)), scalar_arg(HT_DTYPE_F32, ht_float(9.0))};
    ht_launch l = {.dims = 1, .global = {1}, .n_args = k ? 16 : 9, .args = k ? spills : fits};
    double t, o[16];
    for (int call = 0; call < 2; call++) { /* the second call with the description kept */
      memset(o, 0, sizeof o);
      assert_int_equal(ht_device_buffer_write(dev, out, o, sizeof o, &t), HT_OK);
      assert_int_equal(ht_device_launch(dev, p, &l, &t), HT_OK);
      assert_int_equal(ht_device_buffer_read(dev, out, o, sizeof o, &t), HT_OK);
      for (int i = 0; i < (k ? 6 : 5); i++)
        if (o[i] != ints[i]) fail_msg("%s: integer %d arrived as %.17g, sent %.17g", k ? "spills" : "fits", i, o[i], ints[i]);
      const double fits_reals[] = {1.5, -2.25, 3.125};
      for (int i = 0; i < (k ? 9 : 3); i++) {
        double want = k ? reals[i] : fits_reals[i], got = o[(k ? 6 : 5) + i];
        if (got != want) fail_msg("%s: real %d arrived as %.17g, sent %.17g", k ? "spills" : "fits", i, got, want);
      }
    }
    ht_device_program_free(dev, p);
  }
  ht_device_buffer_free(dev, out);
  ht_device_close(dev);
}

static void test_c_cache(void **state) {
  (void)state;
  ht_device *dev = open_or_fail("c:0");
  ht_program *p = NULL;
  ht_compile_info info = {0};
  assert_int_equal(c_compile(dev, c_vadd, "vadd", "1.25f", &p, &info), HT_OK);
  ht_device_program_free(dev, p);
  free(info.log);
  assert_int_equal(c_compile(dev, c_vadd, "vadd", "1.25f", &p, &info), HT_OK);
  assert_int_equal(info.cached, 1);
  assert_true(info.seconds == 0);
  ht_device_program_free(dev, p);
  free(info.log);
  char fresh[32];
  snprintf(fresh, sizeof fresh, "%d.5f", (int)getpid()); /* never compiled before: a miss */
  assert_int_equal(c_compile(dev, c_vadd, "vadd", fresh, &p, &info), HT_OK);
  assert_int_equal(info.cached, 0);
  ht_device_program_free(dev, p);
  free(info.log);
  ht_device_close(dev);
}

/* A linker that refuses the link options that make loading cheaper (gold) still builds every
 * kernel: the build runs again without them, in a child, since the process stops asking. */
static void test_c_gold_linker(void **state) {
  (void)state;
  if (access("/usr/bin/ld.gold", X_OK) != 0) skip();
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    setenv("HETUNE_CC", "cc -fuse-ld=gold", 1);
    ht_device *dev = NULL;
    ht_program *p = NULL;
    ht_compile_info info = {0};
    char fresh[32];
    int salt = (int)(getpid() % 100000); /* a key never built before */
    snprintf(fresh, sizeof fresh, "%d.75f", salt);
    int ok = ht_device_open("c:0", &dev) == HT_OK && c_compile(dev, c_vadd, "vadd", fresh, &p, &info) == HT_OK &&
             !info.cached;
    float a[3] = {1, 2, 3}, b[3] = {0}, c[3] = {0};
    ht_buffer *ba = ok ? new_buffer(dev, a, sizeof a) : NULL, *bb = ok ? new_buffer(dev, b, sizeof b) : NULL,
              *bc = ok ? new_buffer(dev, c, sizeof c) : NULL;
    ht_arg args[] = {buf_arg(ba, HT_DTYPE_F32), buf_arg(bb, HT_DTYPE_F32), buf_arg(bc, HT_DTYPE_F32),
                     scalar_arg(HT_DTYPE_I32, ht_int(3)), scalar_arg(HT_DTYPE_F32, ht_float(2.0)),
                     scalar_arg(HT_DTYPE_F64, ht_int(0))};
    ht_launch l = {.dims = 1, .global = {3}, .n_args = 6, .args = args};
    double t;
    ok = ok && ht_device_launch(dev, p, &l, &t) == HT_OK && ht_device_buffer_read(dev, bc, c, sizeof c, &t) == HT_OK;
    _exit(ok && fabsf(c[0] - (2.75f + (float)salt)) < 0.01f && fabsf(c[2] - (6.75f + (float)salt)) < 0.01f ? 0 : 1);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* A cached kernel's system headers (under /usr, not /usr/local) are checked again only after a
 * while; its own headers at every lookup (test_cache.c, test_header_edit_c). */
static void test_c_system_headers_rechecked_later(void **state) {
  (void)state;
  assert_true(ht_c_file_recheck_s("/usr/include/stdint.h") == HT_SYSTEM_FILE_RECHECK_S);
  assert_true(ht_c_file_recheck_s("/usr/lib/gcc/x86_64-linux-gnu/12/include/stddef.h") > 0);
  assert_true(ht_c_file_recheck_s("/usr/local/include/value.h") == 0);
  assert_true(ht_c_file_recheck_s("/usr/../tmp/value.h") == 0);
  assert_true(ht_c_file_recheck_s("/home/me/kernels/value.h") == 0);
  assert_true(ht_c_file_recheck_s("/usr") == 0);
  uint64_t a = 0, b = 1;
  assert_int_equal(ht_c_file_hash("/usr/include/stdint.h", &a), HT_OK);
  assert_int_equal(ht_c_file_hash("/usr/include/stdint.h", &b), HT_OK);
  assert_true(a == b);
}

static void test_c_errors(void **state) {
  (void)state;
  ht_device *dev = open_or_fail("c");
  ht_program *p = NULL;
  ht_compile_info info = {0};
  ht_status s = c_compile(dev, "void f(void) { this is not C; }\n", "f", "0", &p, &info);
  assert_int_equal(s, HT_ERR_COMPILE);
  assert_non_null(info.log);
  assert_non_null(strstr(ht_last_error(), "error"));
  free(info.log);
  memset(&info, 0, sizeof info);
  s = c_compile(dev, c_vadd, "no_such_entry", "0", &p, &info);
  assert_int_equal(s, HT_ERR_COMPILE);
  assert_non_null(strstr(ht_last_error(), "entry 'no_such_entry' not found"));
  free(info.log);
  ht_device_close(dev);
}

/* An OpenMP kernel, freed and loaded again: libgomp must outlive the dlclose of its user. */
static void test_c_openmp(void **state) {
  (void)state;
  ht_device *dev = open_or_fail("c");
  const char *text = "void fill(double *x, int n) {\n"
                     "#pragma omp parallel for\n"
                     "  for (int i = 0; i < n; i++) x[i] = i * OFFSET;\n"
                     "}\n";
  for (int round = 0; round < 2; round++) {
    ht_program *p = NULL;
    ht_compile_info info = {0};
    assert_int_equal(c_compile(dev, text, "fill", round ? "3.0" : "2.0", &p, &info), HT_OK);
    free(info.log);
    enum { N = 4096 };
    ht_buffer *b = new_buffer(dev, NULL, N * sizeof(double));
    ht_arg args[] = {buf_arg(b, HT_DTYPE_F64), scalar_arg(HT_DTYPE_I32, ht_int(N))};
    ht_launch l = {.dims = 1, .global = {1}, .n_args = 2, .args = args};
    double t, x[N];
    assert_int_equal(ht_device_launch(dev, p, &l, &t), HT_OK);
    assert_int_equal(ht_device_buffer_read(dev, b, x, sizeof x, &t), HT_OK);
    assert_float_equal(x[N - 1], (N - 1) * (round ? 3.0 : 2.0), 1e-9);
    ht_device_buffer_free(dev, b);
    ht_device_program_free(dev, p);
  }
  ht_device_close(dev);
}

static void test_open_errors(void **state) {
  (void)state;
  ht_device *dev = NULL;
  assert_int_equal(ht_device_open("nope:0", &dev), HT_ERR_NOTFOUND);
  assert_non_null(strstr(ht_last_error(), "nope:0"));
  assert_non_null(strstr(ht_last_error(), "c:0"));
  assert_null(dev);
  assert_int_equal(ht_device_open("c:3", &dev), HT_ERR_NOTFOUND);
  assert_int_equal(ht_device_open("opencl:9:9", &dev), HT_ERR_NOTFOUND);
  assert_non_null(strstr(ht_last_error(), "opencl:9:9"));
  ht_language l;
  assert_int_equal(ht_language_parse("opencl", &l), HT_OK);
  assert_int_equal(l, HT_LANG_OPENCL);
  assert_string_equal(ht_language_name(HT_LANG_CUDA), "cuda");
  assert_int_equal(ht_language_parse("fortran", &l), HT_ERR_INVALID);
}

static void test_device_list(void **state) {
  (void)state;
  ht_device_info *infos = NULL;
  int n = 0;
  ht_buf notes = {0};
  assert_int_equal(ht_device_list(&infos, &n, &notes), HT_OK);
  assert_true(n >= 2); /* c:0 and PoCL */
  assert_string_equal(infos[0].id, "c:0");
  /* No GPU driver on the build machine: cuda explains itself in the notes. */
  if (notes.data) fprintf(stderr, "notes: %s", notes.data);
  free(infos);
  ht_buf_free(&notes);
}

/* ---- opencl backend (PoCL here) ---- */

static const char *cl_vadd =
    "__kernel void vadd(__global const float *a, __global const float *b, __global float *c,\n"
    "                   int n, float alpha, double beta) {\n"
    "  int i = get_global_id(0);\n"
    "  if (i < n) c[i] = alpha * a[i] + (float)beta * b[i] + OFFSET;\n"
    "}\n";

static ht_status cl_compile(ht_device *dev, const char *text, const char *offset, ht_program **p,
                            ht_compile_info *info) {
  const char *names[] = {"OFFSET"};
  const char *values[] = {offset};
  ht_defines defs = {1, names, values};
  ht_source src = {.lang = HT_LANG_OPENCL, .text = text, .path = HT_SOURCE_DIR "/tests/vadd.cl", .entry = "vadd",
                   .flags = "-cl-fast-relaxed-math"};
  memset(info, 0, sizeof *info);
  return ht_device_compile(dev, &src, &defs, p, info);
}

static void test_cl_probe(void **state) {
  (void)state;
  ht_device_info infos[16];
  int n = 0;
  ht_status s = ht_backend_find("opencl")->probe(infos, 16, &n);
  if (s) fprintf(stderr, "%s\n", ht_last_error());
  assert_int_equal(s, HT_OK);
  assert_true(n >= 1);
  assert_string_equal(infos[0].id, "opencl:0:0");
  assert_true(infos[0].compute_units >= 1);
  assert_true(infos[0].max_work_group_size >= 1);
  assert_true(infos[0].max_work_item_sizes[0] >= 1);
  assert_true(infos[0].global_mem_bytes > 0);
  assert_true(strlen(infos[0].name) > 0);
  assert_true(strlen(infos[0].compiler_version) > 0);
}

static void run_cl_vadd(ht_device *dev, ht_program *p, size_t local, size_t global) {
  enum { N = 1000 };
  float a[N], b[N], c[N];
  for (int i = 0; i < N; i++) a[i] = (float)i, b[i] = 1.0f - (float)i, c[i] = -1;
  ht_buffer *ba = new_buffer(dev, a, sizeof a), *bb = new_buffer(dev, b, sizeof b), *bc = new_buffer(dev, c, sizeof c);
  ht_arg args[] = {buf_arg(ba, HT_DTYPE_F32), buf_arg(bb, HT_DTYPE_F32), buf_arg(bc, HT_DTYPE_F32),
                   scalar_arg(HT_DTYPE_I32, ht_int(N)), scalar_arg(HT_DTYPE_F32, ht_float(2.0)),
                   scalar_arg(HT_DTYPE_F64, ht_float(4.0))};
  ht_launch l = {.dims = 1, .global = {global}, .local = {local}, .n_args = 6, .args = args};
  double t = -1;
  ht_status s = ht_device_launch(dev, p, &l, &t);
  if (s) fprintf(stderr, "%s\n", ht_last_error());
  assert_int_equal(s, HT_OK);
  assert_true(t >= 0);
  assert_int_equal(ht_device_buffer_read(dev, bc, c, sizeof c, &t), HT_OK);
  for (int i = 0; i < N; i++) assert_float_equal(c[i], 2.0f * a[i] + 4.0f * b[i] + 0.25f, 1e-2);
  ht_device_buffer_free(dev, ba);
  ht_device_buffer_free(dev, bb);
  ht_device_buffer_free(dev, bc);
}

static void test_cl_vadd(void **state) {
  (void)state;
  ht_device *dev = open_or_fail("opencl");
  assert_string_equal(ht_device_info_get(dev)->id, "opencl:0:0");
  ht_program *p = NULL;
  ht_compile_info info;
  ht_status s = cl_compile(dev, cl_vadd, "0.25f", &p, &info);
  if (s) fprintf(stderr, "%s\n%s\n", ht_last_error(), info.log ? info.log : "");
  assert_int_equal(s, HT_OK);
  free(info.log);
  run_cl_vadd(dev, p, 0, 1000);  /* the runtime chooses the work-group size */
  run_cl_vadd(dev, p, 8, 1024);  /* explicit work-group size, guarded tail */
  ht_device_program_free(dev, p);
  ht_device_close(dev);
}

static void test_cl_cache(void **state) {
  (void)state;
  ht_device *dev = open_or_fail("opencl:0:0");
  ht_program *p = NULL;
  ht_compile_info info;
  assert_int_equal(cl_compile(dev, cl_vadd, "0.25f", &p, &info), HT_OK);
  ht_device_program_free(dev, p);
  free(info.log);
  assert_int_equal(cl_compile(dev, cl_vadd, "0.25f", &p, &info), HT_OK);
  assert_int_equal(info.cached, 1);
  free(info.log);
  run_cl_vadd(dev, p, 4, 1000); /* the cached binary really runs */
  ht_device_program_free(dev, p);
  char fresh[32];
  snprintf(fresh, sizeof fresh, "%d.5f", (int)getpid());
  assert_int_equal(cl_compile(dev, cl_vadd, fresh, &p, &info), HT_OK);
  assert_int_equal(info.cached, 0);
  free(info.log);
  ht_device_program_free(dev, p);
  ht_device_close(dev);
}

static void test_cl_errors(void **state) {
  (void)state;
  ht_device *dev = open_or_fail("opencl");
  ht_program *p = NULL;
  ht_compile_info info;
  ht_status s = cl_compile(dev, "__kernel void vadd(__global float *a) { a[0] = undefined_thing; }\n", "0", &p, &info);
  assert_int_equal(s, HT_ERR_COMPILE);
  assert_non_null(info.log);
  assert_non_null(strstr(info.log, "undefined_thing"));
  assert_non_null(strstr(ht_last_error(), "error"));
  free(info.log);
  /* A work-group size that does not divide the global size (OpenCL 1.2 rules): an error, not a crash. */
  assert_int_equal(cl_compile(dev, cl_vadd, "0.25f", &p, &info), HT_OK);
  free(info.log);
  enum { N = 1000 };
  ht_buffer *b = new_buffer(dev, NULL, N * sizeof(float));
  ht_arg args[] = {buf_arg(b, HT_DTYPE_F32), buf_arg(b, HT_DTYPE_F32), buf_arg(b, HT_DTYPE_F32),
                   scalar_arg(HT_DTYPE_I32, ht_int(N)), scalar_arg(HT_DTYPE_F32, ht_float(2.0)),
                   scalar_arg(HT_DTYPE_F64, ht_float(4.0))};
  ht_launch l = {.dims = 1, .global = {N}, .local = {7}, .n_args = 6, .args = args};
  double t;
  assert_int_equal(ht_device_launch(dev, p, &l, &t), HT_ERR_RUNTIME);
  assert_non_null(strstr(ht_last_error(), "CL_INVALID_WORK_GROUP_SIZE"));
  l.local[0] = (size_t)1 << 20; /* larger than any device allows */
  l.global[0] = (size_t)1 << 20;
  assert_int_equal(ht_device_launch(dev, p, &l, &t), HT_ERR_RUNTIME);
  ht_device_buffer_free(dev, b);
  ht_device_program_free(dev, p);
  ht_device_close(dev);
}

/* ---- cuda, host side: NVRTC needs no GPU ---- */

static void test_cuda_ptx(void **state) {
  (void)state;
  const char *names[] = {"SCALE"};
  const char *values[] = {"3.0f"};
  ht_defines defs = {1, names, values};
  ht_source src = {.lang = HT_LANG_CUDA,
                   .text = "extern \"C\" __global__ void scale(float *x, int n) {\n"
                           "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                           "  if (i < n) x[i] *= SCALE;\n"
                           "}\n",
                   .path = HT_SOURCE_DIR "/tests/scale.cu",
                   .entry = "scale"};
  char *ptx = NULL, *log = NULL;
  ht_status s = ht_cuda_compile_ptx(&src, &defs, NULL, &ptx, &log);
  if (s == HT_ERR_UNSUPPORTED) {
    free(log);
    skip(); /* no NVRTC on this machine */
    return;
  }
  if (s) fprintf(stderr, "%s\n%s\n", ht_last_error(), log ? log : "");
  assert_int_equal(s, HT_OK);
  assert_non_null(ptx);
  assert_non_null(strstr(ptx, ".entry scale"));
  assert_non_null(strstr(ptx, "0f40400000")); /* SCALE=3.0f reached the compiler */
  free(ptx);
  free(log);
  /* Without the define the source does not compile: the log says why. */
  ptx = log = NULL;
  s = ht_cuda_compile_ptx(&src, NULL, "compute_80", &ptx, &log);
  assert_int_equal(s, HT_ERR_COMPILE);
  assert_null(ptx);
  assert_non_null(log);
  assert_non_null(strstr(log, "SCALE"));
  assert_non_null(strstr(ht_last_error(), "error"));
  free(log);
  src.text = "extern \"C\" __global__ void scale(float *x) { x[0] = ; }\n";
  ptx = log = NULL;
  assert_int_equal(ht_cuda_compile_ptx(&src, &defs, NULL, &ptx, &log), HT_ERR_COMPILE);
  assert_non_null(log);
  free(ptx);
  free(log);
}

static void test_cuda_probe(void **state) {
  (void)state;
  ht_device_info infos[8];
  int n = -1;
  ht_status s = ht_backend_find("cuda")->probe(infos, 8, &n);
  if (s) {
    /* The expected answer on machines without an NVIDIA driver: a reason, no crash. Where the
     * driver's device node is there, a failed probe is a defect, not an answer. */
    if (access("/dev/nvidiactl", F_OK) == 0) fail_msg("an NVIDIA driver is here, yet: %s", ht_last_error());
    assert_int_equal(s, HT_ERR_UNSUPPORTED);
    assert_true(strlen(ht_last_error()) > 0);
    assert_int_equal(n, 0);
    fprintf(stderr, "cuda probe: %s\n", ht_last_error());
    ht_device *dev = NULL;
    assert_int_equal(ht_device_open("cuda", &dev), HT_ERR_UNSUPPORTED);
    assert_null(dev);
  } else {
    assert_true(n >= 0);
    for (int i = 0; i < n; i++) assert_int_equal(infos[i].warp_size, 32);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_c_probe), cmocka_unit_test(test_c_probe_follows_compiler), cmocka_unit_test(test_c_probe_kept_across_processes),
      cmocka_unit_test(test_c_probe_path_current_folder),
      cmocka_unit_test(test_c_probe_follows_affinity),     cmocka_unit_test(test_c_vadd), cmocka_unit_test(test_c_scalar_types),      cmocka_unit_test(test_c_cache),
      cmocka_unit_test(test_c_gold_linker), cmocka_unit_test(test_c_system_headers_rechecked_later),
      cmocka_unit_test(test_c_errors),    cmocka_unit_test(test_c_openmp),    cmocka_unit_test(test_open_errors), cmocka_unit_test(test_device_list),
      cmocka_unit_test(test_cl_probe),    cmocka_unit_test(test_cl_vadd),     cmocka_unit_test(test_cl_cache),
      cmocka_unit_test(test_cl_errors),   cmocka_unit_test(test_cuda_ptx),    cmocka_unit_test(test_cuda_probe),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
