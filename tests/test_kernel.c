/* Kernel objects (hetune/kernel.h): a spec built in code is the spec its JSON file loads to (same
 * arguments, parameters, geometry, space and defaults), and each mistake gets one error naming the
 * kernel and the field. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "hetune/hetune.h"
#include "spec/spec_struct.h"

#define EXAMPLES HT_SOURCE_DIR "/examples"

#define OK(call)                                                                                                     \
  do {                                                                                                               \
    if ((call) != HT_OK) fail_msg("%s: %s", #call, ht_last_error());                                                 \
  } while (0)

/* examples/vadd/vadd_opencl.json, call by call. */
static ht_kernel *vadd_opencl(void) {
  ht_kernel *k, *ref;
  OK(ht_kernel_create("vadd_opencl", &k));
  OK(ht_kernel_set_base_dir(k, EXAMPLES "/vadd"));
  OK(ht_kernel_set_source(k, HT_LANG_OPENCL, NULL, "vadd.cl"));
  OK(ht_kernel_set_entry(k, "vadd"));
  OK(ht_kernel_add_size(k, "N", 10000000));
  OK(ht_kernel_add_buffer(k, "c", HT_DTYPE_F32, "N", HT_ACCESS_WRITE));
  OK(ht_kernel_set_init(k, "c", HT_INIT_ZEROS));
  OK(ht_kernel_add_buffer(k, "a", HT_DTYPE_F32, "N", HT_ACCESS_READ));
  OK(ht_kernel_add_buffer(k, "b", HT_DTYPE_F32, "N", HT_ACCESS_READ));
  OK(ht_kernel_add_scalar(k, "n", HT_DTYPE_I32, "N"));
  OK(ht_kernel_add_param(k, "WG", (ht_value[]){ht_int(16), ht_int(32), ht_int(64), ht_int(128), ht_int(256),
                                               ht_int(512), ht_int(1024)}, 7));
  OK(ht_kernel_add_param_pow2(k, "WPT", 1, 16));
  OK(ht_kernel_add_constraint(k, "WG <= device.max_work_group_size"));
  OK(ht_kernel_set_geometry(k, HT_GEOM_GLOBAL, 1, (const char *[]){"ceil_div(N, WG*WPT)*WG"}));
  OK(ht_kernel_set_geometry(k, HT_GEOM_LOCAL, 1, (const char *[]){"WG"}));
  OK(ht_kernel_reference(k, &ref));
  OK(ht_kernel_set_source(ref, HT_LANG_C, NULL, "vadd_ref.c"));
  OK(ht_kernel_set_entry(ref, "vadd_ref"));
  OK(ht_kernel_set_tolerance(k, 0, 0));
  OK(ht_kernel_set_work(k, "1.0*N", "3.0*4*N"));
  OK(ht_kernel_add_metric(k, "GB/s", "3.0*4*N/time_s/1e9"));
  return k;
}

static int64_t eval(const ht_expr *e, const ht_value *vars) {
  int64_t v = -1;
  if (ht_expr_eval_int(e, vars, &v)) fail_msg("%s", ht_last_error());
  return v;
}

/* Same names, arguments, geometry (evaluated at one config), space and harness defaults. */
static void assert_same(const ht_spec *a, const ht_spec *b) {
  assert_int_equal(a->n_names, b->n_names);
  for (int i = 0; i < a->n_names; i++) assert_string_equal(a->names[i], b->names[i]);
  assert_int_equal(a->n_args, b->n_args);
  for (int i = 0; i < a->n_args; i++) {
    const ht_spec_arg *x = &a->args[i], *y = &b->args[i];
    assert_string_equal(x->name, y->name);
    assert_int_equal(x->type, y->type);
    assert_int_equal(x->is_buffer, y->is_buffer);
    assert_int_equal(x->access, y->access);
    assert_int_equal(x->init, y->init);
    assert_true(x->lo == y->lo && x->hi == y->hi);
  }
  char *sa = ht_spec_space_json(a), *sb = ht_spec_space_json(b);
  assert_string_equal(sa, sb);
  free(sa);
  free(sb);
  assert_int_equal(a->kernel.dims, b->kernel.dims);
  assert_int_equal(a->kernel.lang, b->kernel.lang);
  assert_string_equal(a->kernel.source_text, b->kernel.source_text);
  assert_string_equal(a->reference.source_text, b->reference.source_text);
  ht_value vars[64];
  assert_true(a->n_names <= 64);
  ht_spec_bind(a, NULL, NULL, NULL, vars);
  for (int d = 0; d < a->kernel.dims; d++) {
    assert_int_equal(eval(a->kernel.global[d], vars), eval(b->kernel.global[d], vars));
    assert_int_equal(eval(a->kernel.local[d], vars), eval(b->kernel.local[d], vars));
  }
  assert_int_equal(a->n_constraints, b->n_constraints);
  assert_int_equal(a->n_metrics, b->n_metrics);
  assert_true(a->rtol == b->rtol && a->atol == b->atol && a->seed == b->seed);
  assert_true((a->work_flops != NULL) == (b->work_flops != NULL));
}

static void test_built_equals_loaded(void **state) {
  (void)state;
  ht_kernel *k = vadd_opencl();
  ht_spec *built, *loaded;
  OK(ht_kernel_finish(k, &built));
  ht_kernel_destroy(k); /* the spec stands alone */
  OK(ht_spec_load(EXAMPLES "/vadd/vadd_opencl.json", &loaded));
  assert_same(built, loaded);
  assert_null(built->path);
  assert_int_equal(strlen(built->source_hash), 16);
  char key[64];
  ht_spec_problem_key(built, key, sizeof key);
  assert_string_equal(key, "N=10000000");
  OK(ht_spec_set_size(built, "N=77"));
  ht_spec_destroy(built);
  ht_spec_destroy(loaded);
}

/* The identity follows what is measured: another flag, another kernel; a parameter's values do not. */
static void test_identity(void **state) {
  (void)state;
  ht_spec *a, *b, *c;
  ht_kernel *k = vadd_opencl();
  OK(ht_kernel_finish(k, &a));
  OK(ht_kernel_add_param(k, "EXTRA", (ht_value[]){ht_int(1)}, 1));
  OK(ht_kernel_finish(k, &b));
  OK(ht_kernel_set_flags(k, "-cl-fast-relaxed-math"));
  OK(ht_kernel_finish(k, &c));
  assert_string_equal(a->source_hash, b->source_hash);
  assert_string_not_equal(a->source_hash, c->source_hash);
  ht_kernel_destroy(k);
  ht_spec_destroy(a);
  ht_spec_destroy(b);
  ht_spec_destroy(c);
}

/* A failing call (want: a piece of its message) and then ht_kernel_finish refusing the kernel. */
static void expect_error(ht_status st, ht_status code, const char *want) {
  if (st == HT_OK) fail_msg("succeeded; expected an error with: %s", want);
  assert_int_equal(st, code);
  if (!strstr(ht_last_error(), want)) fail_msg("got: %s\nexpected it to contain: %s", ht_last_error(), want);
}

static void test_setter_errors(void **state) {
  (void)state;
  ht_kernel *k = vadd_opencl(), *ref;
  ht_spec *s = NULL;
  expect_error(ht_kernel_set_init(k, "nope", HT_INIT_ZEROS), HT_ERR_INVALID, "no argument \"nope\"");
  expect_error(ht_kernel_set_init(k, "n", HT_INIT_ZEROS), HT_ERR_INVALID,
               "kernel \"vadd_opencl\": arguments.n: \"init\" is for buffers");
  expect_error(ht_kernel_add_size(k, "N", 5), HT_ERR_INVALID, "sizes.N: given twice");
  expect_error(ht_kernel_add_param(k, "WG", (ht_value[]){ht_int(1)}, 1), HT_ERR_INVALID, "parameters.WG: given twice");
  expect_error(ht_kernel_add_param_range(k, "R", 4, 1, 1), HT_ERR_INVALID, "parameters.R: empty or invalid range [4, 1]");
  expect_error(ht_kernel_set_tolerance(k, -1, 0), HT_ERR_INVALID, "tolerance.rtol: expected a number >= 0");
  expect_error(ht_kernel_set_geometry(k, HT_GEOM_GLOBAL, 0, NULL), HT_ERR_INVALID, "global: expected a list of 1 to 3");
  OK(ht_kernel_reference(k, &ref));
  expect_error(ht_kernel_add_size(ref, "M", 1), HT_ERR_INVALID, "the reference takes its kernel's arguments");
  /* the kernel is incomplete after a failed call: finishing says so rather than build part of it */
  expect_error(ht_kernel_finish(k, &s), HT_ERR_INVALID, "an earlier call failed");
  assert_null(s);
  ht_kernel_destroy(k);
}

/* Errors only the parts together show: named by the kernel and the field, as a spec file's are by line. */
static void test_finish_errors(void **state) {
  (void)state;
  ht_kernel *k = vadd_opencl();
  ht_spec *s = NULL;
  OK(ht_kernel_add_scalar(k, "m", HT_DTYPE_I32, "N + nope"));
  expect_error(ht_kernel_finish(k, &s), HT_ERR_PARSE, "kernel \"vadd_opencl\": arguments.m.value: \"N + nope\"");
  assert_null(s);
  ht_kernel_destroy(k);

  OK(ht_kernel_create("nogeom", &k));
  OK(ht_kernel_set_source(k, HT_LANG_OPENCL, "__kernel void f(__global float *o) { o[0] = 1; }", NULL));
  OK(ht_kernel_set_entry(k, "f"));
  OK(ht_kernel_add_buffer(k, "o", HT_DTYPE_F32, "1", HT_ACCESS_WRITE));
  expect_error(ht_kernel_finish(k, &s), HT_ERR_INVALID,
               "kernel \"nogeom\": missing launch geometry: opencl kernels need \"global\", \"grid\" or \"problem\"");
  /* mended, the same builder finishes */
  OK(ht_kernel_set_geometry(k, HT_GEOM_GLOBAL, 1, (const char *[]){"1"}));
  OK(ht_kernel_finish(k, &s));
  assert_int_equal(s->kernel.dims, 1);
  assert_string_equal(s->kernel.source_path, "./nogeom.cl");
  ht_spec_destroy(s);
  OK(ht_kernel_add_buffer(k, "p", HT_DTYPE_F32, "WG", HT_ACCESS_READ));
  OK(ht_kernel_add_param(k, "WG", (ht_value[]){ht_int(1)}, 1));
  expect_error(ht_kernel_finish(k, &s), HT_ERR_INVALID, "arguments.p.buffer: a buffer's length may use sizes but not");
  ht_kernel_destroy(k);
}

/* A C kernel's argument list is checked against its prototype, as a spec file's is. */
static void test_c_prototype(void **state) {
  (void)state;
  ht_kernel *k;
  ht_spec *s = NULL;
  OK(ht_kernel_create("proto", &k));
  OK(ht_kernel_set_source(k, HT_LANG_C, "void f(float *o, int n) { for (int i = 0; i < n; i++) o[i] = 1; }\n", NULL));
  OK(ht_kernel_set_entry(k, "f"));
  OK(ht_kernel_add_size(k, "N", 8));
  OK(ht_kernel_add_buffer(k, "o", HT_DTYPE_F64, "N", HT_ACCESS_WRITE));
  OK(ht_kernel_add_scalar(k, "n", HT_DTYPE_I32, "N"));
  expect_error(ht_kernel_finish(k, &s), HT_ERR_INVALID,
               "kernel \"proto\": arguments[0] \"o\": the spec's double buffer does not match parameter 1 of f");
  ht_kernel_destroy(k);
}

/* ---- the writer: build -> write -> load gives the same spec ---- */

static char *text_of(const char *path) {
  char *t = NULL;
  OK(ht_read_file(path, &t, NULL));
  return t;
}

/* vadd_opencl with its sources as text named after their files in dir, and a field of every other
 * kind the file can hold: flags, defines, a seed, each init form, ranges, string and float values. */
static ht_kernel *vadd_everything(const char *dir) {
  ht_kernel *k = vadd_opencl(), *ref;
  char *cl = text_of(EXAMPLES "/vadd/vadd.cl"), *c = text_of(EXAMPLES "/vadd/vadd_ref.c"), bin[600];
  OK(ht_kernel_set_base_dir(k, dir));
  OK(ht_kernel_set_source(k, HT_LANG_OPENCL, cl, "vadd.cl"));
  OK(ht_kernel_reference(k, &ref));
  OK(ht_kernel_set_source(ref, HT_LANG_C, c, "vadd_ref.c"));
  OK(ht_kernel_set_flags(k, "-cl-mad-enable"));
  OK(ht_kernel_add_define(k, "UNUSED", "3"));
  OK(ht_kernel_set_seed(k, 7));
  OK(ht_kernel_set_init_random(k, "a", -2, 0.25));
  snprintf(bin, sizeof bin, "%s/b.bin", dir);
  assert_int_equal(ht_write_file_atomic(bin, "", 0), HT_OK);
  OK(ht_kernel_set_init_file(k, "b", "b.bin"));
  OK(ht_kernel_set_init_fill(k, "c", 0.5));
  OK(ht_kernel_add_param_range(k, "R", 1, 7, 3));
  OK(ht_kernel_add_param(k, "MODE", (ht_value[]){ht_str("fast"), ht_float(0.125), ht_int(-4)}, 3));
  free(cl);
  free(c);
  return k;
}

static ht_spec *load(const char *path) {
  ht_spec *s = NULL;
  if (ht_spec_load(path, &s)) fail_msg("%s", ht_last_error());
  return s;
}

static void test_write_round_trip(void **state) {
  (void)state;
  char dir[] = "/tmp/ht_kernel_write_XXXXXX", path[256], sub[256];
  assert_non_null(mkdtemp(dir));
  ht_kernel *k = vadd_everything(dir);
  ht_spec *built, *loaded, *again, *moved;
  OK(ht_kernel_finish(k, &built));
  snprintf(path, sizeof path, "%s/vadd.json", dir);
  OK(ht_kernel_write_json(k, path));
  loaded = load(path);
  again = load(path);
  assert_same(built, loaded);
  assert_string_equal(loaded->path, path);
  assert_string_equal(loaded->kernel.source_path, built->kernel.source_path);
  assert_string_equal(loaded->kernel.flags, "-cl-mad-enable");
  assert_int_equal(loaded->kernel.n_defines, 1);
  assert_int_equal(loaded->seed, 7);
  assert_true(loaded->args[0].fill == 0.5 && loaded->args[0].init == HT_INIT_FILL);
  assert_string_equal(loaded->args[2].file, built->args[2].file);
  /* the file in the base folder keeps the built kernel's identity, so stored results are found */
  assert_string_equal(loaded->source_hash, built->source_hash);
  assert_string_equal(again->source_hash, loaded->source_hash);
  /* elsewhere, the relative paths are written absolute and still name the same files */
  snprintf(sub, sizeof sub, "%s/sub/vadd.json", dir);
  OK(ht_kernel_write_json(k, sub));
  moved = load(sub);
  assert_same(built, moved);
  assert_string_equal(moved->args[2].file, built->args[2].file);
  assert_string_not_equal(moved->source_hash, built->source_hash);
  ht_spec_destroy(built);
  ht_spec_destroy(loaded);
  ht_spec_destroy(again);
  ht_spec_destroy(moved);
  ht_kernel_destroy(k);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

/* Text without a path is written as NAME.c (a reference's as NAME_reference.c); a kernel that
 * would not finish writes nothing. */
static void test_write_text_and_errors(void **state) {
  (void)state;
  char dir[] = "/tmp/ht_kernel_write_XXXXXX", path[256], src[256];
  assert_non_null(mkdtemp(dir));
  ht_kernel *k;
  OK(ht_kernel_create("fill1", &k));
  OK(ht_kernel_set_base_dir(k, dir));
  OK(ht_kernel_set_source(k, HT_LANG_C, "void f(float *o, int n) { for (int i = 0; i < n; i++) o[i] = 1; }\n", NULL));
  OK(ht_kernel_set_entry(k, "f"));
  OK(ht_kernel_add_size(k, "N", 8));
  OK(ht_kernel_add_buffer(k, "o", HT_DTYPE_F32, "N", HT_ACCESS_WRITE));
  OK(ht_kernel_add_scalar(k, "n", HT_DTYPE_I32, "N + nope"));
  snprintf(path, sizeof path, "%s/fill1.json", dir);
  expect_error(ht_kernel_write_json(k, path), HT_ERR_PARSE, "not written: kernel \"fill1\": arguments.n.value");
  assert_int_equal(access(path, F_OK), -1);
  ht_kernel_destroy(k);

  OK(ht_kernel_create("fill1", &k));
  OK(ht_kernel_set_base_dir(k, dir));
  OK(ht_kernel_set_source(k, HT_LANG_C, "void f(float *o, int n) { for (int i = 0; i < n; i++) o[i] = 1; }\n", NULL));
  OK(ht_kernel_set_entry(k, "f"));
  OK(ht_kernel_add_size(k, "N", 8));
  OK(ht_kernel_add_buffer(k, "o", HT_DTYPE_F32, "N", HT_ACCESS_WRITE));
  OK(ht_kernel_add_scalar(k, "n", HT_DTYPE_I32, "N"));
  ht_kernel *ref;
  OK(ht_kernel_reference(k, &ref));
  OK(ht_kernel_set_source(ref, HT_LANG_C, "void r(float *o, int n) { for (int i = 0; i < n; i++) o[i] = 1.0f; }\n",
                          NULL));
  OK(ht_kernel_set_entry(ref, "r"));
  OK(ht_kernel_write_json(k, path));
  snprintf(src, sizeof src, "%s/fill1.c", dir);
  ht_spec *a = load(path), *b = load(path);
  assert_string_equal(a->kernel.source_path, src);
  assert_string_equal(a->source_hash, b->source_hash);
  /* the reference's text has a file of its own: both sources survive the write */
  snprintf(src, sizeof src, "%s/fill1_reference.c", dir);
  assert_string_equal(a->reference.source_path, src);
  assert_non_null(strstr(a->kernel.source_text, "void f("));
  assert_non_null(strstr(a->reference.source_text, "void r("));
  ht_spec_destroy(a);
  ht_spec_destroy(b);
  expect_error(ht_kernel_write_json(NULL, path), HT_ERR_INVALID, "ht_kernel_write_json: give the kernel");
  ht_kernel_destroy(k);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_built_equals_loaded), cmocka_unit_test(test_identity),
      cmocka_unit_test(test_setter_errors),       cmocka_unit_test(test_finish_errors),
      cmocka_unit_test(test_c_prototype),        cmocka_unit_test(test_write_round_trip),
      cmocka_unit_test(test_write_text_and_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
