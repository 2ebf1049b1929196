/* The execution layer: variants run in this process on caller-owned buffers, on c and OpenCL
 * (PoCL), in flight and waited for; two halves of one array on two devices at once, one by host
 * offsets and one at a global work offset; device buffers kept and grown across calls; errors. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetune/hetune.h"

#define EX HT_SOURCE_DIR "/examples/vadd/"
#define DATA HT_SOURCE_DIR "/tests/data/exec/"

static ht_spec *load(const char *path) {
  ht_spec *s = NULL;
  if (ht_spec_load(path, &s)) fail_msg("%s", ht_last_error());
  return s;
}

static int have(const char *device) {
  ht_exec *ex;
  if (ht_exec_open(device, &ex)) return 0;
  ht_exec_close(ex);
  return 1;
}

typedef struct arrays {
  size_t n;
  float *a, *b, *c;
} arrays;

static arrays make(size_t n, uint64_t seed) {
  arrays x = {n, malloc(n * 4), malloc(n * 4), malloc(n * 4)};
  ht_rng rng;
  ht_rng_seed(&rng, seed);
  for (size_t i = 0; i < n; i++) {
    x.a[i] = (float)ht_rng_uniform(&rng);
    x.b[i] = (float)ht_rng_uniform(&rng);
    x.c[i] = -1.0f; /* poison: every element must be written */
  }
  return x;
}

static void check_sum(const arrays *x, size_t lo, size_t hi, const char *what) {
  for (size_t i = lo; i < hi; i++)
    if (x->c[i] != x->a[i] + x->b[i]) fail_msg("%s: c[%zu] = %g, expected %g", what, i, x->c[i], x->a[i] + x->b[i]);
}

static void drop(arrays *x) {
  free(x->a);
  free(x->b);
  free(x->c);
}

/* vadd's arguments (c, a, b, n) for the elements [lo, hi) of x, at host pointers moved by lo. */
static void args_of(arrays *x, size_t lo, size_t hi, ht_host_arg args[4]) {
  memset(args, 0, 4 * sizeof *args);
  args[0] = (ht_host_arg){x->c + lo, hi - lo, 0, 0};
  args[1] = (ht_host_arg){x->a + lo, hi - lo, 0, 0};
  args[2] = (ht_host_arg){x->b + lo, hi - lo, 0, 0};
}

/* The same variant code on two devices, started, polled, waited for; then larger and smaller sizes
 * on the kept device buffers. */
static void run_vadd(const char *device, const char *spec_path, const char *config) {
  ht_spec *s = load(spec_path);
  ht_exec *ex;
  ht_variant *v;
  assert_int_equal(ht_exec_open(device, &ex), HT_OK);
  if (ht_variant_create(ex, s, config, &v)) fail_msg("%s %s: %s", device, config, ht_last_error());
  static const size_t sizes[] = {1000, 4097, 1, 777};
  for (int k = 0; k < 4; k++) {
    arrays x = make(sizes[k], 7 + (uint64_t)k);
    ht_host_arg args[4];
    args_of(&x, 0, x.n, args);
    int64_t n = (int64_t)x.n;
    ht_run *r;
    if (ht_variant_start(v, &n, args, NULL, &r)) fail_msg("%s: %s", device, ht_last_error());
    int p = ht_run_poll(r);
    assert_true(p == 0 || p == 1);
    ht_run_times t;
    assert_int_equal(ht_run_wait(r, &t), HT_OK);
    assert_true(t.kernel_s >= 0 && t.wall_s >= t.kernel_s);
    check_sum(&x, 0, x.n, device);
    drop(&x);
  }
  ht_variant_destroy(v);
  ht_exec_close(ex);
  ht_spec_destroy(s);
}

/* On a simulated GPU the same spec runs its C reference: right results, modelled times that
 * follow the device file, identical from one run to the next. */
static void test_vadd_on_sim(void **state) {
  (void)state;
  setenv("HETUNE_SIM", HT_SOURCE_DIR "/data/sim/pcie_gpu.json", 1);
  run_vadd("sim:0", EX "vadd_opencl.json", "WG=64,WPT=4");
  ht_spec *s = load(EX "vadd_opencl.json");
  ht_run_times t[2];
  for (int k = 0; k < 2; k++) {
    ht_exec *ex;
    ht_variant *v;
    assert_int_equal(ht_exec_open("sim:0", &ex), HT_OK);
    assert_int_equal(ht_variant_create(ex, s, "WG=64,WPT=4", &v), HT_OK);
    arrays x = make(1 << 20, 5);
    ht_host_arg args[4];
    args_of(&x, 0, x.n, args);
    int64_t n = (int64_t)x.n;
    assert_int_equal(ht_variant_run(v, &n, args, NULL, &t[k]), HT_OK);
    check_sum(&x, 0, x.n, "sim");
    drop(&x);
    ht_variant_destroy(v);
    ht_exec_close(ex);
  }
  assert_true(t[0].kernel_s == t[1].kernel_s && t[0].h2d_s == t[1].h2d_s && t[0].d2h_s == t[1].d2h_s);
  /* 2 MiB read over 25 GB/s after 10 us each (two inputs), 4 MiB at 1.555 TB/s plus 5 us (noise 2%) */
  double mib4 = 4.0 * (1 << 20);
  assert_true(fabs(t[0].h2d_s - 2 * (10e-6 + mib4 / 25e9)) < 1e-9);
  assert_true(fabs(t[0].d2h_s - (10e-6 + mib4 / 25e9)) < 1e-9);
  double kernel = 5e-6 + 3 * mib4 / 1.555e12;
  assert_true(fabs(t[0].kernel_s / kernel - 1) < 0.1);
  ht_spec_destroy(s);
  unsetenv("HETUNE_SIM");
}

/* Two OpenMP threads where this process may use two CPUs: vadd_c's space allows no more threads
 * than the device has (one, pinned or on a one-core machine). */
static void test_vadd_on_each_device(void **state) {
  (void)state;
  ht_device *dev;
  assert_int_equal(ht_device_open("c", &dev), HT_OK);
  char config[64];
  snprintf(config, sizeof config, "NTHREADS=%d,CHUNK=0,UNROLL=4", ht_device_info_get(dev)->max_threads > 1 ? 2 : 1);
  ht_device_close(dev);
  run_vadd("c", EX "vadd_c.json", config);
  if (!have("opencl")) skip();
  run_vadd("opencl", EX "vadd_opencl.json", "WG=64,WPT=4");
  run_vadd("opencl", DATA "vadd_gid_opencl.json", "WG=8");
}

/* c computes the first half (host pointers moved, its own size), OpenCL the second at a global work
 * offset on the whole arrays (copying in and out only its half); both in flight at once. */
static void test_two_halves_on_two_devices(void **state) {
  (void)state;
  if (!have("opencl")) skip();
  ht_spec *sc = load(EX "vadd_c.json"), *so = load(DATA "vadd_gid_opencl.json");
  ht_exec *ec, *eo;
  ht_variant *vc, *vo;
  assert_int_equal(ht_exec_open("c", &ec), HT_OK);
  assert_int_equal(ht_exec_open("opencl", &eo), HT_OK);
  assert_int_equal(ht_variant_create(ec, sc, "NTHREADS=1,CHUNK=0,UNROLL=1", &vc), HT_OK);
  assert_int_equal(ht_variant_create(eo, so, "WG=8", &vo), HT_OK);
  assert_true(ht_device_caps(ht_exec_device(eo)) & HT_CAP_OFFSET);
  static const size_t sizes[] = {1000, 1001, 17};
  for (int k = 0; k < 3; k++) {
    arrays x = make(sizes[k], 11 + (uint64_t)k);
    size_t half = x.n / 2;
    ht_host_arg first[4], second[4];
    args_of(&x, 0, half, first);
    args_of(&x, 0, x.n, second);
    for (int i = 0; i < 3; i++) second[i].lo = half, second[i].hi = x.n;
    int64_t n1 = (int64_t)half, n = (int64_t)x.n;
    ht_run_opts part = {.offset = {half, 0, 0}, .count = {x.n - half, 0, 0}};
    ht_run *r1, *r2;
    assert_int_equal(ht_variant_start(vc, &n1, first, NULL, &r1), HT_OK);
    if (ht_variant_start(vo, &n, second, &part, &r2)) fail_msg("%s", ht_last_error());
    assert_int_equal(ht_run_wait(r2, NULL), HT_OK);
    assert_int_equal(ht_run_wait(r1, NULL), HT_OK);
    check_sum(&x, 0, x.n, "two halves");
    drop(&x);
  }
  ht_variant_destroy(vc);
  ht_variant_destroy(vo);
  ht_exec_close(ec);
  ht_exec_close(eo);
  ht_spec_destroy(sc);
  ht_spec_destroy(so);
}

/* A call at the sizes of the one before reuses its geometry and buffer lengths, but never those of
 * a call with run options (a part of the range) or at other sizes: each call below must write
 * every element it covers. */
static void test_frame_follows_sizes_and_options(void **state) {
  (void)state;
  if (!have("opencl")) skip();
  ht_spec *s = load(DATA "vadd_gid_opencl.json");
  ht_exec *ex;
  ht_variant *v;
  assert_int_equal(ht_exec_open("opencl", &ex), HT_OK);
  assert_int_equal(ht_variant_create(ex, s, "WG=8", &v), HT_OK);
  static const size_t sizes[] = {1000, 1000, 1000, 2000, 1000, 1000};
  for (int k = 0; k < 6; k++) {
    arrays x = make(sizes[k], 31 + (uint64_t)k);
    ht_host_arg args[4];
    args_of(&x, 0, x.n, args);
    int64_t n = (int64_t)x.n;
    size_t half = k == 1 || k == 4 ? x.n / 2 : 0; /* these two run the second half only */
    ht_run_opts part = {.offset = {half, 0, 0}, .count = {x.n - half, 0, 0}};
    for (int i = 0; half && i < 3; i++) args[i].lo = half, args[i].hi = x.n;
    if (ht_variant_run(v, &n, args, half ? &part : NULL, NULL)) fail_msg("call %d: %s", k, ht_last_error());
    check_sum(&x, half, x.n, "call at the sizes of the one before");
    drop(&x);
  }
  ht_variant_destroy(v);
  ht_exec_close(ex);
  ht_spec_destroy(s);
}

/* A kernel spinning on its stop flag is stopped by ht_run_cancel: wait returns long before the
 * kernel's own safety bound, and nothing is copied out of a cancelled run. */
static void cancel_spin(const char *device, const char *spec_path) {
  ht_spec *s = load(spec_path);
  ht_exec *ex;
  ht_variant *v;
  assert_int_equal(ht_exec_open(device, &ex), HT_OK);
  assert_int_equal(ht_variant_create(ex, s, "", &v), HT_OK);
  float out[4] = {-1, -1, -1, -1};
  ht_host_arg args[3] = {{out, 4, 0, 0}, {0}, {0}};
  ht_run *r;
  ht_run_opts copy = {.copy = 1}; /* on c, not in place: the caller's memory stays untouched */
  assert_int_equal(ht_variant_start(v, NULL, args, &copy, &r), HT_OK);
  assert_int_equal(ht_run_poll(r), 0); /* it spins until told */
  double t0 = ht_now();
  if (ht_run_cancel(r)) fail_msg("%s: %s", device, ht_last_error());
  ht_run_times t;
  assert_int_equal(ht_run_wait(r, &t), HT_OK);
  if (ht_now() - t0 > 5) fail_msg("%s: the kernel ran %.1f s after its cancellation", device, ht_now() - t0);
  assert_true(out[0] == -1); /* a cancelled run copies nothing out */
  ht_variant_destroy(v);
  ht_exec_close(ex);
  ht_spec_destroy(s);
}

static void test_cancel(void **state) {
  (void)state;
  cancel_spin("c", DATA "spin_c.json");
  if (!have("opencl")) skip();
  cancel_spin("opencl", DATA "spin_opencl.json");
}

/* What a caller can get wrong gets one clear error, and the device stays usable. */
static void test_errors(void **state) {
  (void)state;
  ht_spec *s = load(EX "vadd_c.json");
  ht_exec *ex;
  ht_variant *v;
  assert_int_equal(ht_exec_open("c", &ex), HT_OK);
  assert_int_equal(ht_variant_create(ex, s, "NTHREADS=1,CHUNK=0,UNROLL=3", &v), HT_ERR_INVALID);
  assert_int_equal(ht_variant_create(ex, s, "NTHREADS=1,CHUNK=0", &v), HT_ERR_INVALID);
  assert_int_equal(ht_variant_create(ex, s, "NTHREADS=1,CHUNK=0,UNROLL=1", &v), HT_OK);
  arrays x = make(100, 3);
  ht_host_arg args[4];
  args_of(&x, 0, 100, args);
  int64_t n = 200;
  assert_int_equal(ht_variant_run(v, &n, args, NULL, NULL), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "holds 100 elements, the kernel needs 200"));
  n = 100;
  args[1].lo = 50, args[1].hi = 101;
  assert_int_equal(ht_variant_run(v, &n, args, NULL, NULL), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "not inside"));
  args[1].lo = args[1].hi = 0;
  ht_run_opts part = {.offset = {10, 0, 0}};
  assert_int_equal(ht_variant_run(v, &n, args, &part, NULL), HT_ERR_INVALID); /* C: one work-item */
  ht_run *r;
  assert_int_equal(ht_variant_start(v, &n, args, NULL, &r), HT_OK);
  assert_int_equal(ht_run_cancel(r), HT_ERR_UNSUPPORTED); /* no stop flag in vadd */
  assert_int_equal(ht_run_wait(r, NULL), HT_OK);
  check_sum(&x, 0, 100, "after errors");
  drop(&x);
  ht_variant_destroy(v);
  ht_exec_close(ex);
  ht_spec_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_vadd_on_each_device),
    cmocka_unit_test(test_vadd_on_sim),
    cmocka_unit_test(test_two_halves_on_two_devices),
      cmocka_unit_test(test_frame_follows_sizes_and_options),
    cmocka_unit_test(test_cancel),
    cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
