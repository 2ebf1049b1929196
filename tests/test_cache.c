/* What hetune trusts: compile cache folders nobody else can write, cache entries checked before
 * they are loaded and rebuilt when damaged or replaced, header edits seen by the cache keys and the
 * kernel identity, compiler flags from an allow list, and reads bounded to regular files. */
#define _GNU_SOURCE /* nftw */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "device/cuda_nvrtc.h"
#include "hetune/hetune.h"

#include "cli_test_util.h"

/* PoCL and its LLVM keep compiler state alive until exit; only LeakSanitizer reads this. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libpocl\nleak:libLLVM\nleak:libclang\n"; }

static char root[64]; /* this run's folder */

/* root/name, in one of 16 rotating buffers: copy a path that must outlive many calls. */
static const char *at(const char *name) {
  static char bufs[16][512];
  static int next;
  char *b = bufs[next++ % 16];
  snprintf(b, sizeof bufs[0], "%s/%s", root, name);
  return b;
}

static void write_text(const char *path, const char *text) {
  FILE *fp = fopen(path, "w");
  assert_non_null(fp);
  fputs(text, fp);
  assert_int_equal(fclose(fp), 0);
}

static void use_cache(const char *name) { setenv("HETUNE_CACHE_DIR", at(name), 1); }

static int setup(void **state) {
  (void)state;
  snprintf(root, sizeof root, "/tmp/ht_cache_XXXXXX");
  if (!mkdtemp(root)) return -1;
  /* PoCL reads its cache folder once per process: one for the whole run. */
  setenv("POCL_CACHE_DIR", at("pocl"), 1);
  unsetenv("HETUNE_ALLOWED_FLAGS");
  return mkdir(at("src"), 0700);
}

static int teardown(void **state) {
  (void)state;
  rm_tree(root);
  return 0;
}

/* ---- compiling and running "out[0] = VALUE" ---- */

static const char *c_kernel = "#include \"value.h\"\nvoid k(int *out) { out[0] = VALUE; }\n";
static const char *cl_kernel = "#include \"value.h\"\n__kernel void k(__global int *out) { out[0] = VALUE; }\n";

static ht_status compile(ht_device *dev, ht_language lang, const char *file, const char *flags, const char *value,
                         ht_program **p, ht_compile_info *info) {
  char *text = NULL;
  assert_int_equal(ht_read_file(file, &text, NULL), HT_OK);
  const char *names[] = {"EXTRA"}, *values[] = {value ? value : "0"};
  ht_defines defs = {1, names, values};
  ht_source src = {.lang = lang, .text = text, .path = file, .entry = "k", .flags = flags};
  memset(info, 0, sizeof *info);
  ht_status s = ht_device_compile(dev, &src, &defs, p, info);
  free(info->log);
  info->log = NULL;
  free(text);
  return s;
}

static int run_value(ht_device *dev, ht_program *p) {
  ht_buffer *b = NULL;
  int v = -1;
  double t;
  assert_int_equal(ht_device_buffer_new(dev, sizeof v, &b), HT_OK);
  ht_arg arg = {.is_buffer = 1, .buf = b, .type = HT_DTYPE_I32};
  ht_launch l = {.dims = 1, .global = {1}, .local = {0}, .n_args = 1, .args = &arg};
  assert_int_equal(ht_device_launch(dev, p, &l, &t), HT_OK);
  assert_int_equal(ht_device_buffer_read(dev, b, &v, sizeof v, &t), HT_OK);
  ht_device_buffer_free(dev, b);
  ht_device_program_free(dev, p);
  return v;
}

/* Compiles file and returns the value its kernel writes; *cached says whether it came from disk. */
static int compile_run(ht_device *dev, ht_language lang, const char *file, const char *value, int *cached) {
  ht_program *p = NULL;
  ht_compile_info info;
  ht_status s = compile(dev, lang, file, NULL, value, &p, &info);
  if (s) fail_msg("compile %s: %s", file, ht_last_error());
  *cached = info.cached;
  return run_value(dev, p);
}

static void write_kernel(const char *file, const char *text, int value) {
  char h[64];
  snprintf(h, sizeof h, "#define VALUE %d\n", value);
  write_text(at("src/value.h"), h);
  write_text(file, text);
}

/* The only file of the cache folder sub ending in ext, as a path; "" when there is not one. */
static const char *only_entry(const char *sub, const char *ext) {
  static char path[600];
  DIR *d = opendir(at(sub));
  int n = 0;
  path[0] = '\0';
  for (struct dirent *e; d && (e = readdir(d));) {
    size_t len = strlen(e->d_name), k = strlen(ext);
    if (len > k && strcmp(e->d_name + len - k, ext) == 0 && ++n == 1)
      snprintf(path, sizeof path, "%s/%s", at(sub), e->d_name);
  }
  if (d) closedir(d);
  if (n != 1) path[0] = '\0';
  return path;
}

static void copy_file(const char *from, const char *to) {
  char *data = NULL;
  size_t len = 0;
  assert_int_equal(ht_read_file(from, &data, &len), HT_OK);
  int fd = open(to, O_WRONLY | O_TRUNC);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, data, len), (ssize_t)len);
  close(fd);
  free(data);
}

/* A spec of hk(float *o, int n) with two configs; extra adds fields, init_file (if not NULL)
 * fills o from a file. */
static void write_spec(const char *name, const char *extra, const char *init_file) {
  char text[2048], init[700] = "";
  if (init_file) snprintf(init, sizeof init, ", \"access\": \"readwrite\", \"init\": {\"file\": \"%s\"}", init_file);
  snprintf(text, sizeof text,
           "{\"name\": \"hk\", \"language\": \"c\", \"source\": \"hk.c\", \"entry\": \"hk\", \"sizes\": {\"N\": 64},\n"
           " \"arguments\": [{\"name\": \"o\", \"type\": \"float\", \"buffer\": \"N\"%s},\n"
           "   {\"name\": \"n\", \"type\": \"int32\", \"value\": \"N\"}],\n"
           " \"parameters\": {\"U\": [1, 2]}%s}\n",
           init_file ? init : ", \"access\": \"write\"", extra);
  write_text(at(name), text);
}

/* ---- item: cache folders another user could write are refused ---- */

static void expect_refused(ht_device *dev, const char *cache, const char *why) {
  setenv("HETUNE_CACHE_DIR", cache, 1);
  ht_program *p = NULL;
  ht_compile_info info;
  ht_status s = compile(dev, HT_LANG_C, at("src/k.c"), NULL, NULL, &p, &info);
  if (s != HT_ERR_IO || !strstr(ht_last_error(), why) || !strstr(ht_last_error(), "HETUNE_CACHE_DIR"))
    fail_msg("cache %s: expected a refusal saying '%s', got %d: %s", cache, why, s, ht_last_error());
  char sub[600];
  snprintf(sub, sizeof sub, "%s/c", cache);
  assert_int_equal(access(sub, F_OK), -1); /* nothing was written there */
  /* Opening the device fails up front: tuning stores no compile failures for a cache problem. */
  ht_device *other = NULL;
  assert_int_equal(ht_device_open("c", &other), HT_ERR_IO);
  assert_non_null(strstr(ht_last_error(), why));
}

static void test_shared_cache_refused(void **state) {
  (void)state;
  ht_device *dev = NULL;
  assert_int_equal(ht_device_open("c", &dev), HT_OK);
  write_kernel(at("src/k.c"), c_kernel, 1);
  assert_int_equal(mkdir(at("open"), 0777), 0);
  assert_int_equal(chmod(at("open"), 0777), 0);
  expect_refused(dev, at("open"), "writable by everyone");
  assert_int_equal(chmod(at("open"), 0770), 0);
  expect_refused(dev, at("open"), "writable by its group");
  /* a world-writable folder above the cache, without the sticky bit /tmp has */
  assert_int_equal(chmod(at("open"), 0777), 0);
  assert_int_equal(mkdir(at("open/mine"), 0700), 0);
  expect_refused(dev, at("open/mine"), "above the cache");
  if (geteuid() == 0) {
    assert_int_equal(mkdir(at("theirs"), 0700), 0);
    assert_int_equal(chown(at("theirs"), NOBODY, NOBODY), 0);
    expect_refused(dev, at("theirs"), "belongs to uid 65534");
  }
  /* A cache made fresh is private all the way down, and works. */
  use_cache("new/deep/cache");
  int cached;
  assert_int_equal(compile_run(dev, HT_LANG_C, at("src/k.c"), NULL, &cached), 1);
  const char *made[] = {"new", "new/deep", "new/deep/cache", "new/deep/cache/c"};
  for (int i = 0; i < 4; i++) {
    struct stat st;
    assert_int_equal(stat(at(made[i]), &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
  }
  ht_device_close(dev);
}

/* A folder checked once is remembered, not trusted for ever: made writable by others, or replaced
 * by another folder under the same name, it is checked (and refused) again. */
static void test_checked_cache_rechecked(void **state) {
  (void)state;
  ht_device *dev = NULL;
  assert_int_equal(ht_device_open("c", &dev), HT_OK);
  write_kernel(at("src/k.c"), c_kernel, 1);
  use_cache("later");
  int cached;
  assert_int_equal(compile_run(dev, HT_LANG_C, at("src/k.c"), NULL, &cached), 1);
  assert_int_equal(chmod(at("later/c"), 0777), 0);
  ht_program *p = NULL;
  ht_compile_info info;
  assert_int_equal(compile(dev, HT_LANG_C, at("src/k.c"), NULL, NULL, &p, &info), HT_ERR_IO);
  assert_non_null(strstr(ht_last_error(), "writable by everyone"));
  char moved[600];
  snprintf(moved, sizeof moved, "%s", at("later-old"));
  assert_int_equal(rename(at("later/c"), moved), 0);
  assert_int_equal(mkdir(at("later/c"), 0777), 0);
  assert_int_equal(chmod(at("later/c"), 0777), 0);
  assert_int_equal(compile(dev, HT_LANG_C, at("src/k.c"), NULL, NULL, &p, &info), HT_ERR_IO);
  assert_non_null(strstr(ht_last_error(), "writable by everyone"));
  assert_int_equal(chmod(at("later/c"), 0700), 0);
  assert_int_equal(compile_run(dev, HT_LANG_C, at("src/k.c"), NULL, &cached), 1);
  ht_device_close(dev);
}

static void test_shared_cache_refused_opencl(void **state) {
  (void)state;
  ht_device *dev = NULL;
  if (ht_device_open("opencl", &dev)) skip();
  write_kernel(at("src/k.cl"), cl_kernel, 1);
  assert_int_equal(mkdir(at("cl-open"), 0777), 0);
  assert_int_equal(chmod(at("cl-open"), 0777), 0);
  ht_program *p = NULL;
  ht_compile_info info;
  use_cache("cl-open");
  assert_int_equal(compile(dev, HT_LANG_OPENCL, at("src/k.cl"), NULL, NULL, &p, &info), HT_ERR_IO);
  assert_non_null(strstr(ht_last_error(), "writable by everyone"));
  ht_device *other = NULL;
  assert_int_equal(ht_device_open("opencl", &other), HT_ERR_IO);
  /* PoCL's own cache of compiled kernels gets the same check */
  use_cache("cl-cache");
  setenv("POCL_CACHE_DIR", at("cl-open"), 1);
  assert_int_equal(compile(dev, HT_LANG_OPENCL, at("src/k.cl"), NULL, NULL, &p, &info), HT_ERR_IO);
  assert_non_null(strstr(ht_last_error(), "POCL_CACHE_DIR"));
  setenv("POCL_CACHE_DIR", at("pocl"), 1);
  int cached;
  assert_int_equal(compile_run(dev, HT_LANG_OPENCL, at("src/k.cl"), NULL, &cached), 1);
  ht_device_close(dev);
}

/* ---- items: replaced or damaged entries are rebuilt, never loaded ---- */

/* The C device with the cache folder cache and src/k.c holding text, VALUE being value. */
static ht_device *c_device(const char *cache, const char *text, int value) {
  ht_device *dev = NULL;
  assert_int_equal(ht_device_open("c", &dev), HT_OK);
  use_cache(cache);
  write_kernel(at("src/k.c"), text, value);
  return dev;
}

static void test_replaced_so_rebuilt(void **state) {
  (void)state;
  ht_device *dev = c_device("replaced", "#include \"value.h\"\nvoid k(int *out) { out[0] = VALUE + EXTRA; }\n", 1);
  int cached;
  assert_int_equal(compile_run(dev, HT_LANG_C, at("src/k.c"), "0", &cached), 1);
  char so[600], deps[600];
  snprintf(so, sizeof so, "%s", only_entry("replaced/c", ".so"));
  snprintf(deps, sizeof deps, "%s", only_entry("replaced/c", ".deps"));
  assert_true(so[0] && deps[0]);
  assert_int_equal(compile_run(dev, HT_LANG_C, at("src/k.c"), "0", &cached), 1);
  assert_int_equal(cached, 1);
  /* Another entry's binary in its place (what an intruder could leave): built again, not run. */
  use_cache("other");
  assert_int_equal(compile_run(dev, HT_LANG_C, at("src/k.c"), "100", &cached), 101);
  char other_so[600], other_deps[600];
  snprintf(other_so, sizeof other_so, "%s", only_entry("other/c", ".so"));
  snprintf(other_deps, sizeof other_deps, "%s", only_entry("other/c", ".deps"));
  use_cache("replaced");
  copy_file(other_so, so);
  assert_int_equal(compile_run(dev, HT_LANG_C, at("src/k.c"), "0", &cached), 1);
  assert_int_equal(cached, 0);
  /* The binary with its manifest: the manifest is bound to its own entry's name. */
  copy_file(other_so, so);
  copy_file(other_deps, deps);
  assert_int_equal(compile_run(dev, HT_LANG_C, at("src/k.c"), "0", &cached), 1);
  assert_int_equal(cached, 0);
  ht_device_close(dev);
}

static void test_damaged_entries_rebuilt(void **state) {
  (void)state;
  ht_device *dev = c_device("damaged", c_kernel, 7);
  int cached;
  assert_int_equal(compile_run(dev, HT_LANG_C, at("src/k.c"), NULL, &cached), 7);
  char so[600], deps[600];
  snprintf(so, sizeof so, "%s", only_entry("damaged/c", ".so"));
  snprintf(deps, sizeof deps, "%s", only_entry("damaged/c", ".deps"));
  assert_int_equal(truncate(so, 100), 0); /* a disk that filled up, a killed copy */
  assert_int_equal(compile_run(dev, HT_LANG_C, at("src/k.c"), NULL, &cached), 7);
  assert_int_equal(cached, 0);
  write_text(deps, "garbage\n");
  assert_int_equal(compile_run(dev, HT_LANG_C, at("src/k.c"), NULL, &cached), 7);
  assert_int_equal(cached, 0);
  assert_int_equal(unlink(deps), 0);
  assert_int_equal(compile_run(dev, HT_LANG_C, at("src/k.c"), NULL, &cached), 7);
  assert_int_equal(cached, 0);
  assert_int_equal(compile_run(dev, HT_LANG_C, at("src/k.c"), NULL, &cached), 7);
  assert_int_equal(cached, 1);
  ht_device_close(dev);
}

static void test_damaged_opencl_binary_rebuilt(void **state) {
  (void)state;
  ht_device *dev = NULL;
  if (ht_device_open("opencl", &dev)) skip();
  write_kernel(at("src/k.cl"), "#include \"value.h\"\n__kernel void k(__global int *out) { out[0] = VALUE + EXTRA; }\n",
               3);
  int cached;
  use_cache("cl-other");
  assert_int_equal(compile_run(dev, HT_LANG_OPENCL, at("src/k.cl"), "10", &cached), 13);
  char other[600], bin[600];
  snprintf(other, sizeof other, "%s", only_entry("cl-other/opencl", ".bin"));
  use_cache("cl-damaged");
  assert_int_equal(compile_run(dev, HT_LANG_OPENCL, at("src/k.cl"), "0", &cached), 3);
  snprintf(bin, sizeof bin, "%s", only_entry("cl-damaged/opencl", ".bin"));
  assert_true(other[0] && bin[0]);
  copy_file(other, bin); /* a valid binary, of another kernel */
  assert_int_equal(compile_run(dev, HT_LANG_OPENCL, at("src/k.cl"), "0", &cached), 3);
  assert_int_equal(cached, 0);
  assert_int_equal(truncate(bin, 40), 0);
  assert_int_equal(compile_run(dev, HT_LANG_OPENCL, at("src/k.cl"), "0", &cached), 3);
  assert_int_equal(cached, 0);
  assert_int_equal(compile_run(dev, HT_LANG_OPENCL, at("src/k.cl"), "0", &cached), 3);
  assert_int_equal(cached, 1);
  ht_device_close(dev);
}

/* Truncates every .so of the cache folder sub; how many there were. */
static int truncate_all(const char *sub) {
  char dir[600], path[900];
  snprintf(dir, sizeof dir, "%s", at(sub));
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (len < 4 || strcmp(e->d_name + len - 3, ".so") != 0) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    n += truncate(path, 64) == 0;
  }
  if (d) closedir(d);
  return n;
}

/* Tunes spec into db by brute force (extra: one more option, or NULL) and expects the summary's
 * counts, "(measured M, reused R)". */
static void tune_expect(const char *spec, const char *db, const char *extra, const char *counts) {
  run_out *r = malloc(sizeof *r);
  run(r, "tune", spec, "--db", db, "--quiet", "--strategy", "brute_force", extra);
  if (r->rc || !strstr(r->out, counts))
    fail_msg("%s: exit %d, expected %s\n%s%s", r->cmd, r->rc, counts, r->out, r->err);
  free(r);
}

/* A damaged reference binary is built again, not the end of the run. */
static void test_cli_damaged_reference(void **state) {
  (void)state;
  use_cache("cli-ref");
  write_text(at("hk.c"), "void hk(float *o, int n) { for (int i = 0; i < n; i++) o[i] = 2; }\n");
  write_text(at("hkref.c"), "void hkref(float *o, int n) { for (int i = 0; i < n; i++) o[i] = 2; }\n");
  write_spec("ref.json", ", \"reference\": {\"language\": \"c\", \"source\": \"hkref.c\", \"entry\": \"hkref\"}", NULL);
  char spec[600], db[600];
  snprintf(spec, sizeof spec, "%s", at("ref.json"));
  snprintf(db, sizeof db, "%s", at("ref.db"));
  tune_expect(spec, db, NULL, "(measured 2, reused 0)");
  assert_int_equal(truncate_all("cli-ref/c"), 3); /* two configs and the reference */
  tune_expect(spec, db, "--no-reuse", "(measured 2, reused 0)");
}

/* ---- item: an edited header is a new kernel ---- */

static void header_edit(const char *dev_id, ht_language lang, const char *name, const char *text, const char *cache) {
  char file[600];
  snprintf(file, sizeof file, "%s", at(name));
  ht_device *dev = NULL;
  if (ht_device_open(dev_id, &dev)) skip();
  use_cache(cache);
  write_kernel(file, text, 1);
  int cached;
  assert_int_equal(compile_run(dev, lang, file, NULL, &cached), 1);
  assert_int_equal(compile_run(dev, lang, file, NULL, &cached), 1);
  assert_int_equal(cached, 1);
  write_text(at("src/value.h"), "#define VALUE 2\n");
  assert_int_equal(compile_run(dev, lang, file, NULL, &cached), 2);
  assert_int_equal(cached, 0);
  /* a header of a header, found through -I */
  write_text(at("src/value.h"), "#include <deep.h>\n");
  char inc[600];
  snprintf(inc, sizeof inc, "%s-inc", at(cache));
  assert_int_equal(mkdir(inc, 0700), 0);
  char deep[700];
  snprintf(deep, sizeof deep, "%s/deep.h", inc);
  write_text(deep, "#define VALUE 3\n");
  char flags[700];
  snprintf(flags, sizeof flags, "-I%s", inc);
  ht_program *p = NULL;
  ht_compile_info info;
  assert_int_equal(compile(dev, lang, file, flags, NULL, &p, &info), HT_OK);
  assert_int_equal(run_value(dev, p), 3);
  write_text(deep, "#define VALUE 4\n");
  assert_int_equal(compile(dev, lang, file, flags, NULL, &p, &info), HT_OK);
  assert_int_equal(info.cached, 0);
  assert_int_equal(run_value(dev, p), 4);
  ht_device_close(dev);
}

static void test_header_edit_c(void **state) {
  (void)state;
  header_edit("c", HT_LANG_C, "src/k.c", c_kernel, "hdr-c");
}

static void test_header_edit_opencl(void **state) {
  (void)state;
  header_edit("opencl", HT_LANG_OPENCL, "src/k.cl", cl_kernel, "hdr-cl");
}

static void test_include_hash(void **state) {
  (void)state;
  assert_int_equal(mkdir(at("inc"), 0700), 0);
  assert_int_equal(mkdir(at("inc/sys"), 0700), 0);
  write_text(at("inc/a.h"), "#include \"b.h\"\n#include <stdio.h>\n");
  write_text(at("inc/b.h"), "#include \"a.h\" /* a cycle */\nint b;\n");
  write_text(at("inc/sys/c.h"), "int c;\n");
  const char *text = "  #  include \"a.h\"\n#include <c.h>\n#include NAME\n";
  const char *path = at("inc/k.cu");
  uint64_t none = ht_include_hash("int x;\n#include <stdio.h>\n", path, NULL, 42);
  assert_true(none == 42); /* nothing found: identities of header-less kernels stay as they were */
  uint64_t h1 = ht_include_hash(text, path, "-I sys", 1);
  uint64_t with_dir = ht_include_hash(text, path, "--include-path=" HT_SOURCE_DIR, 1);
  assert_true(h1 != 1);
  char flags[600];
  snprintf(flags, sizeof flags, "-O2 -I%s", at("inc/sys"));
  uint64_t h2 = ht_include_hash(text, path, flags, 1);
  assert_true(h2 != h1 && with_dir == h1); /* c.h found through -I only */
  write_text(at("inc/sys/c.h"), "int c2;\n");
  assert_true(ht_include_hash(text, path, flags, 1) != h2);
  write_text(at("inc/b.h"), "int b2;\n");
  assert_true(ht_include_hash(text, path, "-I sys", 1) != h1);
  /* the CUDA cache key follows headers found through --include-path */
  snprintf(flags, sizeof flags, "--include-path %s", at("inc/sys"));
  ht_source src = {.lang = HT_LANG_CUDA, .text = text, .path = path, .entry = "k", .flags = flags};
  uint64_t k = ht_cuda_cache_key(&src, NULL, "compute_80", "NVRTC 12.0");
  write_text(at("inc/sys/c.h"), "int c3;\n");
  assert_true(k != ht_cuda_cache_key(&src, NULL, "compute_80", "NVRTC 12.0"));
}

static const char *scaled_kernel =
    "#include \"scale.h\"\nvoid hk(float *o, int n) { for (int i = 0; i < n; i++) o[i] = SCALE; }\n";

static void test_spec_identity_follows_headers(void **state) {
  (void)state;
  write_text(at("scale.h"), "#define SCALE 2\n");
  write_text(at("hk.c"), scaled_kernel);
  write_spec("hk.json", "", NULL);
  ht_spec *s = NULL;
  char before[17];
  assert_int_equal(ht_spec_load(at("hk.json"), &s), HT_OK);
  snprintf(before, sizeof before, "%s", ht_spec_identity(s));
  ht_spec_destroy(s);
  write_text(at("scale.h"), "#define SCALE 3\n");
  assert_int_equal(ht_spec_load(at("hk.json"), &s), HT_OK);
  assert_string_not_equal(ht_spec_identity(s), before);
  ht_spec_destroy(s);
  write_text(at("scale.h"), "#define SCALE 2\n");
  assert_int_equal(ht_spec_load(at("hk.json"), &s), HT_OK);
  assert_string_equal(ht_spec_identity(s), before);
  ht_spec_destroy(s);
}

/* Stored results measured with the old header are not reused after an edit. */
static void test_cli_header_edit_measures_again(void **state) {
  (void)state;
  use_cache("cli");
  write_text(at("scale.h"), "#define SCALE 2\n");
  write_text(at("hk.c"), scaled_kernel);
  write_spec("hk.json", "", NULL);
  char spec[600], db[600];
  snprintf(spec, sizeof spec, "%s", at("hk.json"));
  snprintf(db, sizeof db, "%s", at("hk.db"));
  tune_expect(spec, db, NULL, "(measured 2, reused 0)");
  tune_expect(spec, db, NULL, "(measured 0, reused 2)");
  write_text(at("scale.h"), "#define SCALE 5\n");
  tune_expect(spec, db, NULL, "(measured 2, reused 0)");
}

/* ---- item: compiler flags from an allow list ---- */

/* A script that leaves the file marker when run: what a spec's "-wrapper" could run instead. */
static const char *write_wrapper(const char *marker) {
  static char script[600];
  char text[800];
  snprintf(script, sizeof script, "%s.sh", at(marker));
  snprintf(text, sizeof text, "#!/bin/sh\ntouch %s\n", at(marker));
  write_text(script, text);
  assert_int_equal(chmod(script, 0700), 0);
  return script;
}

static void test_allowed_flags(void **state) {
  (void)state;
  ht_device *dev = c_device("flags", c_kernel, 5);
  char wrapper[700];
  snprintf(wrapper, sizeof wrapper, "-wrapper %s", write_wrapper("ran"));
  ht_program *p = NULL;
  ht_compile_info info;
  setenv("HETUNE_ALLOWED_FLAGS", "default", 1);
  assert_int_equal(compile(dev, HT_LANG_C, at("src/k.c"), wrapper, NULL, &p, &info), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "compiler flag '-wrapper' is not allowed"));
  assert_int_equal(access(at("ran"), F_OK), -1);
  const char *refused[] = {"-fplugin=/tmp/x.so", "@flags.txt", "-DX=1\v-Xclang", "-Wl,-plugin=x", "-B/tmp", "-lfoo"};
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
    if (ht_flags_check(refused[i], "k.c") != HT_ERR_INVALID) fail_msg("'%s' passed the default list", refused[i]);
  const char *fine = " -O3 -ffast-math -march=native -DTILE=4 -Iinc -cl-mad-enable --use_fast_math -lm";
  assert_int_equal(ht_flags_check(fine, "k"), HT_OK);
  assert_int_equal(compile(dev, HT_LANG_C, at("src/k.c"), "-O2 -funroll-loops", NULL, &p, &info), HT_OK);
  assert_int_equal(run_value(dev, p), 5);
  setenv("HETUNE_ALLOWED_FLAGS", "-O* default-not -fopenmp", 1);
  assert_int_equal(ht_flags_check("-O2 -fopenmp", "k"), HT_OK);
  assert_int_equal(ht_flags_check("-ffast-math", "k"), HT_ERR_INVALID);
  setenv("HETUNE_ALLOWED_FLAGS", "default -mllvm", 1);
  assert_int_equal(ht_flags_check("-O1 -mllvm", "k"), HT_OK);
  /* NVRTC: checked before NVRTC is even loaded */
  ht_source cu = {.lang = HT_LANG_CUDA, .text = "", .path = "k.cu", .entry = "k", .flags = "-Xcompiler x"};
  char *ptx = NULL, *log = NULL;
  assert_int_equal(ht_cuda_compile_ptx(&cu, NULL, NULL, &ptx, &log), HT_ERR_INVALID);
  free(ptx);
  free(log);
  /* No list: a spec's flags are trusted like its source, and reach the compiler. */
  unsetenv("HETUNE_ALLOWED_FLAGS");
  compile(dev, HT_LANG_C, at("src/k.c"), wrapper, NULL, &p, &info);
  assert_int_equal(access(at("ran"), F_OK), 0);
  ht_device_close(dev);
}

static void test_opencl_define_blanks(void **state) {
  (void)state;
  ht_device *dev = NULL;
  if (ht_device_open("opencl", &dev)) skip();
  use_cache("cl-defs");
  write_kernel(at("src/k.cl"), cl_kernel, 1);
  ht_program *p = NULL;
  ht_compile_info info;
  assert_int_equal(compile(dev, HT_LANG_OPENCL, at("src/k.cl"), NULL, "1 -Dother=2", &p, &info), HT_ERR_COMPILE);
  assert_non_null(strstr(ht_last_error(), "blanks"));
  ht_device_close(dev);
}

static void test_cli_allowed_flags(void **state) {
  (void)state;
  use_cache("cli-flags");
  char extra[700];
  write_text(at("hk.c"), "void hk(float *o, int n) { for (int i = 0; i < n; i++) o[i] = 1; }\n");
  snprintf(extra, sizeof extra, ", \"flags\": \"-wrapper %s\"", write_wrapper("cli-ran"));
  write_spec("flags.json", extra, NULL);
  run_out *r = malloc(sizeof *r);
  run(r, "tune", at("flags.json"), "--db", at("flags.db"), "--quiet", "--allowed-flags", "default");
  expect_error(r, 1, "flags.json", "'-wrapper' is not allowed");
  assert_int_equal(access(at("cli-ran"), F_OK), -1);
  free(r);
}

/* ---- item: reads are bounded to regular files ---- */

static void test_bounded_reads(void **state) {
  (void)state;
  char *data = NULL;
  size_t len;
  assert_int_equal(ht_read_file("/dev/zero", &data, &len), HT_ERR_IO);
  assert_non_null(strstr(ht_last_error(), "/dev/zero: not a regular file"));
  assert_int_equal(mkfifo(at("fifo"), 0600), 0);
  assert_int_equal(ht_read_file(at("fifo"), &data, &len), HT_ERR_IO); /* refused, not waited on */
  assert_non_null(strstr(ht_last_error(), "(a pipe)"));
  assert_int_equal(ht_read_file(root, &data, &len), HT_ERR_IO);
  write_text(at("big"), "0123456789abcdef");
  assert_int_equal(ht_read_file_max(at("big"), 10, &data, &len), HT_ERR_IO);
  assert_non_null(strstr(ht_last_error(), "16 bytes, more than the limit of 10 bytes"));
  assert_int_equal(ht_read_file_max(at("big"), 16, &data, &len), HT_OK);
  assert_int_equal(len, 16);
  free(data);
  ht_space *space = NULL;
  assert_int_equal(ht_space_load_t1(at("fifo"), &space), HT_ERR_IO);
  ht_bandwidth_curve curve;
  assert_int_equal(ht_bandwidth_load("/dev/zero", &curve), HT_ERR_IO);
  assert_non_null(strstr(ht_last_error(), "not a regular file"));
}

static void test_cli_bounded_reads(void **state) {
  (void)state;
  use_cache("cli-reads");
  run_out *r = malloc(sizeof *r);
  char fifo[600];
  snprintf(fifo, sizeof fifo, "%s", at("cli-fifo"));
  assert_int_equal(mkfifo(fifo, 0600), 0);
  run(r, "tune", "/dev/zero", "--db", at("r.db"), "--quiet");
  expect_error(r, 1, "/dev/zero: not a regular file");
  run(r, "space", "count", "/dev/zero");
  expect_error(r, 1, "/dev/zero: not a regular file");
  run(r, "space", "count", fifo);
  expect_error(r, 1, "not a regular file");
  run(r, "replay", "/dev/zero");
  expect_error(r, 1, "/dev/zero: not a regular file");
  /* init data: the file must be a regular file no larger than the buffer */
  write_text(at("hk.c"), "void hk(float *o, int n) { for (int i = 0; i < n; i++) o[i] = 1; }\n");
  const char *inits[][2] = {{"/dev/zero", "not a regular file"}, {"big", "more than the limit of 256 bytes"}};
  char big[600];
  snprintf(big, sizeof big, "%s", at("big"));
  FILE *fp = fopen(big, "w");
  assert_non_null(fp);
  for (int i = 0; i < 1000; i++) fputc('x', fp);
  fclose(fp);
  for (int i = 0; i < 2; i++) {
    write_spec("init.json", "", i ? big : inits[i][0]);
    run(r, "tune", at("init.json"), "--db", at("r.db"), "--quiet");
    if (r->rc == 0 || !strstr(r->err, inits[i][1])) fail_msg("init %s: exit %d\n%s", inits[i][0], r->rc, r->err);
  }
  free(r);
}

/* ---- item: threads and processes that build the same entry at once all get a checked binary ---- */

typedef struct {
  ht_device *dev;
  char value[16];
  int result;
  char error[256];
} build_job;

static void *build_and_run(void *arg) {
  build_job *j = arg;
  ht_program *p = NULL;
  ht_compile_info info;
  if (compile(j->dev, HT_LANG_C, at("src/k.c"), NULL, j->value, &p, &info) == HT_OK) j->result = run_value(j->dev, p);
  else snprintf(j->error, sizeof j->error, "%s", ht_last_error());
  return NULL;
}

/* Each builder compiles its own binary (they differ: the compiler reads a temporary copy of the
 * source); one must never be checked against another's manifest. */
static void test_concurrent_builds(void **state) {
  (void)state;
  enum { THREADS = 4, ROUNDS = 6 };
  ht_device *devs[THREADS];
  for (int t = 0; t < THREADS; t++) assert_int_equal(ht_device_open("c", &devs[t]), HT_OK);
  use_cache("concurrent");
  write_kernel(at("src/k.c"), "#include \"value.h\"\nvoid k(int *out) { out[0] = VALUE + EXTRA; }\n", 5);
  for (int round = 0; round < ROUNDS; round++) {
    pthread_t th[THREADS];
    build_job jobs[THREADS];
    for (int t = 0; t < THREADS; t++) {
      jobs[t] = (build_job){.dev = devs[t], .result = -1};
      snprintf(jobs[t].value, sizeof jobs[t].value, "%d", 10 * round); /* a new entry each round */
      assert_int_equal(pthread_create(&th[t], NULL, build_and_run, &jobs[t]), 0);
    }
    for (int t = 0; t < THREADS; t++) {
      pthread_join(th[t], NULL);
      if (jobs[t].result != 5 + 10 * round)
        fail_msg("round %d, builder %d: got %d %s", round, t, jobs[t].result, jobs[t].error);
    }
  }
  for (int t = 0; t < THREADS; t++) ht_device_close(devs[t]);
}

/* A cached entry loads without the builders' lock. While one thread keeps making the entry be
 * built again (its manifest removed, the new binary renamed over the old), another keeps loading
 * it: every load must give a kernel that runs, from the cache or built anew. */
typedef struct reload_job {
  ht_device *dev;
  int rounds, wrong, failed, cached;
  char error[256];
} reload_job;

static void *reload(void *arg) {
  reload_job *j = arg;
  for (int i = 0; i < j->rounds; i++) {
    ht_program *p = NULL;
    ht_compile_info info;
    if (compile(j->dev, HT_LANG_C, at("src/k.c"), NULL, "3", &p, &info) != HT_OK) {
      j->failed++;
      snprintf(j->error, sizeof j->error, "%s", ht_last_error());
      continue;
    }
    j->cached += info.cached;
    j->wrong += run_value(j->dev, p) != 7 + 3;
  }
  return NULL;
}

static void test_loaded_while_rebuilt(void **state) {
  (void)state;
  ht_device *loader = NULL, *builder = NULL;
  assert_int_equal(ht_device_open("c", &loader), HT_OK);
  assert_int_equal(ht_device_open("c", &builder), HT_OK);
  use_cache("rebuilt");
  write_kernel(at("src/k.c"), "#include \"value.h\"\nvoid k(int *out) { out[0] = VALUE + EXTRA; }\n", 7);
  reload_job first = {.dev = loader, .rounds = 1};
  reload(&first);
  char deps[600];
  snprintf(deps, sizeof deps, "%s", only_entry("rebuilt/c", ".deps"));
  assert_true(deps[0]);
  reload_job j = {.dev = loader, .rounds = 400};
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, reload, &j), 0);
  int rebuilt = 0;
  for (int i = 0; i < 8; i++) {
    unlink(deps);
    int cached = 1;
    assert_int_equal(compile_run(builder, HT_LANG_C, at("src/k.c"), "3", &cached), 10);
    rebuilt += !cached;
  }
  pthread_join(th, NULL);
  if (j.failed || j.wrong) fail_msg("%d loads failed (%s), %d ran the wrong kernel", j.failed, j.error, j.wrong);
  assert_true(rebuilt >= 1); /* the loader may rebuild too: then the builder finds it cached */
  assert_true(j.cached >= 1);
  ht_device_close(loader);
  ht_device_close(builder);
}

/* The kernels' header <hetune/stop.h> lives in the cache folder: removed or edited there, it is
 * written back, and the entries that include it load from the cache again. */
static void test_stop_header_restored(void **state) {
  (void)state;
  ht_device *dev = c_device("stoph", "#include <hetune/stop.h>\n#include \"value.h\"\n"
                                     "void k(int *out) { out[0] = VALUE + EXTRA; }\n", 4);
  int cached;
  assert_int_equal(compile_run(dev, HT_LANG_C, at("src/k.c"), "0", &cached), 4);
  assert_int_equal(cached, 0);
  const char *header = at("stoph/include/hetune/stop.h");
  char *original = NULL;
  assert_int_equal(ht_read_file(header, &original, NULL), HT_OK);
  assert_int_equal(unlink(header), 0);
  assert_int_equal(compile_run(dev, HT_LANG_C, at("src/k.c"), "0", &cached), 4);
  assert_int_equal(cached, 1);
  write_text(header, "#error edited\n");
  assert_int_equal(compile_run(dev, HT_LANG_C, at("src/k.c"), "0", &cached), 4);
  assert_int_equal(cached, 1);
  char *now = NULL;
  assert_int_equal(ht_read_file(header, &now, NULL), HT_OK);
  assert_string_equal(now, original);
  free(now);
  free(original);
  ht_device_close(dev);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shared_cache_refused),
      cmocka_unit_test(test_checked_cache_rechecked),
      cmocka_unit_test(test_shared_cache_refused_opencl),
      cmocka_unit_test(test_replaced_so_rebuilt),
      cmocka_unit_test(test_damaged_entries_rebuilt),
      cmocka_unit_test(test_damaged_opencl_binary_rebuilt),
      cmocka_unit_test(test_cli_damaged_reference),
      cmocka_unit_test(test_header_edit_c),
      cmocka_unit_test(test_header_edit_opencl),
      cmocka_unit_test(test_include_hash),
      cmocka_unit_test(test_spec_identity_follows_headers),
      cmocka_unit_test(test_cli_header_edit_measures_again),
      cmocka_unit_test(test_allowed_flags),
      cmocka_unit_test(test_opencl_define_blanks),
      cmocka_unit_test(test_cli_allowed_flags),
      cmocka_unit_test(test_bounded_reads),
      cmocka_unit_test(test_cli_bounded_reads),
      cmocka_unit_test(test_concurrent_builds),
      cmocka_unit_test(test_loaded_while_rebuilt),
      cmocka_unit_test(test_stop_header_restored),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
