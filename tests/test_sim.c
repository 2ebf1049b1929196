/* The sim backend: devices from a JSON file ($HETUNE_SIM) whose times follow the file, on a
 * virtual clock, while the code runs for real on the host; and tuning on them, twice, to the
 * same stored times. tests/data/sim/tiny.json has round numbers so every time is known. */
#define _GNU_SOURCE /* nftw */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "cli_test_util.h"
#include "device/backend.h"
#include "device/sim.h"
#include "hetune/device.h"
#include "hetune/store.h"

#define TINY HT_SOURCE_DIR "/tests/data/sim/tiny.json"
#define STEPPED HT_SOURCE_DIR "/tests/data/sim/transfer_step.json"
/* sim:0 of tiny.json, as fingerprinted before the link step and the speed change existed */
#define TINY_GPU_FINGERPRINT "ddf330342dfb1d84"

static char dir[64];

static const char *in_dir(const char *name) {
  static char p[2][320];
  static int which;
  which ^= 1;
  snprintf(p[which], sizeof p[which], "%s/%s", dir, name);
  return p[which];
}

static void write_text(const char *name, const char *text) {
  FILE *fp = fopen(in_dir(name), "w");
  assert_non_null(fp);
  fputs(text, fp);
  assert_int_equal(fclose(fp), 0);
}

static ht_device *open_sim(const char *file, const char *id) {
  setenv("HETUNE_SIM", file, 1);
  ht_device *dev = NULL;
  if (ht_device_open(id, &dev)) fail_msg("open %s with %s: %s", id, file, ht_last_error());
  return dev;
}

/* ---- the file's errors: one message naming file:line:col and the key ---- */

/* A file of one device whose members are body; the error opening it must hold every needle. */
static void expect_file_error(const char *body, const char *const *needles) {
  char text[2048];
  snprintf(text, sizeof text, "{\n  \"devices\": [\n    {\n%s\n    }\n  ]\n}\n", body);
  write_text("bad.json", text);
  setenv("HETUNE_SIM", in_dir("bad.json"), 1);
  ht_device *dev = NULL;
  ht_status st = ht_device_open("sim:0", &dev);
  if (st == HT_OK) fail_msg("a bad sim file opened:\n%s", text);
  for (int i = 0; needles[i]; i++)
    if (!strstr(ht_last_error(), needles[i])) fail_msg("error lacks \"%s\": %s", needles[i], ht_last_error());
}
#define expect_file_error(body, ...) expect_file_error(body, (const char *const[]){__VA_ARGS__, NULL})

#define OK_FIELDS "      \"name\": \"d\", \"seconds_per_unit\": 1e-9, \"memory_bytes\": 1000000"

static void test_file_errors(void **state) {
  (void)state;
  expect_file_error("      \"name\": \"d\", \"memory_bytes\": 1000000,\n      \"flop_per_s\": 1e12",
                    "bad.json:5:7: ", "unknown key \"flop_per_s\" in devices[0]: did you mean \"flops_per_s\"?");
  expect_file_error("      \"seconds_per_unit\": 1e-9, \"memory_bytes\": 1000000", "bad.json:3:5: ",
                    "devices[0]: \"name\" is required");
  expect_file_error("      \"name\": \"d\", \"memory_bytes\": 1000000", "bad.json:3:5: ", "devices[0]: no throughput");
  expect_file_error("      \"name\": \"d\", \"seconds_per_unit\": 1e-9", "devices[0]: \"memory_bytes\" is required");
  expect_file_error(OK_FIELDS ",\n      \"bytes_per_s\": -5", "bad.json:5:22: ",
                    "devices[0].bytes_per_s: expected a number > 0, got -5");
  expect_file_error(OK_FIELDS ",\n      \"noise_rsd\": 2", "bad.json:5:20: ", "devices[0].noise_rsd: expected a number >= 0 and <= 1, got 2");
  expect_file_error(OK_FIELDS ",\n      \"compute_units\": 1.5", "devices[0].compute_units: expected a whole number >= 1");
  expect_file_error(OK_FIELDS ",\n      \"launch_latency_s\": \"fast\"", "devices[0].launch_latency_s", "got \"fast\"");
  expect_file_error(OK_FIELDS ",\n      \"real\": 1", "devices[0].real: expected true or false");
  expect_file_error(OK_FIELDS ",\n      \"power_w\": 10, \"idle_w\": 20", "devices[0].idle_w: idle power 20 W");
  expect_file_error(OK_FIELDS ",\n      \"h2d\": {\"latency\": 1e-5, \"bytes_per_s\": 1e9}", "bad.json:5:15: ",
                    "unknown key \"latency\" in devices[0].h2d: did you mean \"latency_s\"?");
  expect_file_error(OK_FIELDS ",\n      \"d2h\": {\"latency_s\": 1e-5}", "bad.json:5:14: ",
                    "devices[0].d2h: \"bytes_per_s\" is required");
  expect_file_error(OK_FIELDS ",\n      \"frobnicate\": 1", "unknown key \"frobnicate\" in devices[0] (known keys: name,");
  /* the link's step and the speed change */
  expect_file_error(OK_FIELDS ",\n      \"h2d\": {\"bytes_per_s\": 1e9, \"step_bytes\": 1024}", "bad.json:5:35: ",
                    "devices[0].h2d.step_bytes: \"step_bytes\" and \"above\" go together");
  expect_file_error(OK_FIELDS ",\n      \"h2d\": {\"bytes_per_s\": 1e9, \"above\": {\"bytes_per_s\": 2e9}}",
                    "devices[0].h2d.above: \"step_bytes\" and \"above\" go together");
  expect_file_error(OK_FIELDS ",\n      \"h2d\": {\"bytes_per_s\": 1e9, \"step_bytes\": 1.5, \"above\": {\"bytes_per_s\": 2e9}}",
                    "devices[0].h2d.step_bytes: expected a whole number > 0, got 1.5");
  expect_file_error(OK_FIELDS ",\n      \"h2d\": {\"bytes_per_s\": 1e9, \"step_bytes\": 9, \"above\": {\"latency_s\": 1}}",
                    "bad.json:5:61: ", "devices[0].h2d.above: \"bytes_per_s\" is required");
  expect_file_error(OK_FIELDS ",\n      \"d2h\": {\"bytes_per_s\": 1e9, \"step_bytes\": 9, \"above\": {\"bytes_per_s\": 1, \"step_bytes\": 2}}",
                    "unknown key \"step_bytes\" in devices[0].d2h.above");
  expect_file_error(OK_FIELDS ",\n      \"h2d\": {\"bytes_per_s\": 1e9, \"step_bytes\": 9, \"above\": 5}",
                    "devices[0].h2d.above: expected {\"latency_s\": seconds");
  expect_file_error(OK_FIELDS ",\n      \"speed_change\": {\"after_launches\": 3}", "bad.json:5:23: ",
                    "devices[0].speed_change: \"factor\" is required");
  expect_file_error(OK_FIELDS ",\n      \"speed_change\": {\"after_launches\": 3, \"factor\": 0}",
                    "devices[0].speed_change.factor: expected a number > 0, got 0");
  expect_file_error(OK_FIELDS ",\n      \"speed_change\": {\"after_launch\": 3, \"factor\": 2}",
                    "unknown key \"after_launch\" in devices[0].speed_change: did you mean \"after_launches\"?");
  expect_file_error(OK_FIELDS ",\n      \"speed_change\": [3, 2]", "devices[0].speed_change: expected {\"after_launches\"");
  /* not JSON, not the top level expected, no file */
  write_text("syntax.json", "{\"devices\": [\n  {\"name\": \"d\",,}\n]}\n");
  setenv("HETUNE_SIM", in_dir("syntax.json"), 1);
  ht_device *dev = NULL;
  assert_int_equal(ht_device_open("sim:0", &dev), HT_ERR_PARSE);
  assert_non_null(strstr(ht_last_error(), "syntax.json:2:"));
  write_text("top.json", "{\"device\": []}\n");
  setenv("HETUNE_SIM", in_dir("top.json"), 1);
  assert_int_not_equal(ht_device_open("sim:0", &dev), HT_OK);
  assert_non_null(strstr(ht_last_error(), "unknown key \"device\": did you mean \"devices\"?"));
  setenv("HETUNE_SIM", in_dir("missing.json"), 1);
  assert_int_equal(ht_device_open("sim:0", &dev), HT_ERR_IO);
  assert_non_null(strstr(ht_last_error(), "HETUNE_SIM: "));
  assert_non_null(strstr(ht_last_error(), "missing.json"));
}

/* No file: no sim devices, and no complaint. */
static void test_no_file_no_devices(void **state) {
  (void)state;
  unsetenv("HETUNE_SIM");
  ht_device_info *infos = NULL;
  int n = 0;
  ht_buf notes = {0};
  assert_int_equal(ht_device_list(&infos, &n, &notes), HT_OK);
  for (int i = 0; i < n; i++) assert_string_not_equal(infos[i].backend, "sim");
  assert_true(!notes.data || !strstr(notes.data, "sim"));
  free(infos);
  ht_buf_free(&notes);
  ht_device *dev = NULL;
  assert_int_equal(ht_device_open("sim:0", &dev), HT_ERR_NOTFOUND);
}

/* ---- hetune devices and the device's info ---- */

static void test_devices_lists_sim(void **state) {
  (void)state;
  run_out *r = malloc(sizeof *r);
  setenv("HETUNE_SIM", TINY, 1);
  run(r, "devices");
  if (r->rc || !strstr(r->out, "sim:0        tiny gpu") || !strstr(r->out, "sim:1        tiny cpu") ||
      !strstr(r->out, "vendor hetune sim") || !strstr(r->out, "compute units 16, max threads 4096, warp 32"))
    fail_msg("hetune devices with HETUNE_SIM: exit %d\n%s\n%s", r->rc, r->out, r->err);
  /* a bad file: the other devices are still listed, the sim line says why */
  write_text("bad_list.json", "{\"devices\": [{\"name\": \"x\"}]}\n");
  setenv("HETUNE_SIM", in_dir("bad_list.json"), 1);
  run(r, "devices");
  if (r->rc || !strstr(r->out, "c:0") || !strstr(r->out, "sim: ") || !strstr(r->out, "no throughput"))
    fail_msg("hetune devices with a bad HETUNE_SIM: exit %d\n%s\n%s", r->rc, r->out, r->err);
  free(r);
}

static void test_info_and_fingerprint(void **state) {
  (void)state;
  ht_device *dev = open_sim(TINY, "sim:0");
  assert_string_equal(ht_device_info_get(dev)->id, "sim:0");
  assert_string_equal(ht_device_info_get(dev)->name, "tiny gpu");
  assert_string_equal(ht_device_info_get(dev)->vendor, "hetune sim");
  assert_int_equal(ht_device_info_get(dev)->global_mem_bytes, 1000000000);
  assert_int_equal(ht_device_info_get(dev)->max_work_group_size, 256);
  assert_true(ht_device_caps(dev) & HT_CAP_SIMULATED);
  char fp[17];
  memcpy(fp, ht_device_info_get(dev)->fingerprint, sizeof fp);
  ht_device_close(dev);
  /* the same numbers: the same device; one number changed: another */
  const char *a = "{\"devices\": [{\"name\": \"tiny gpu\", \"flops_per_s\": 1e12, \"memory_bytes\": 1e9}]}";
  write_text("fa.json", a);
  write_text("fb.json", a);
  write_text("fc.json", "{\"devices\": [{\"name\": \"tiny gpu\", \"flops_per_s\": 2e12, \"memory_bytes\": 1e9}]}");
  char fps[3][17];
  const char *files[] = {"fa.json", "fb.json", "fc.json"};
  for (int i = 0; i < 3; i++) {
    dev = open_sim(in_dir(files[i]), "sim:0");
    memcpy(fps[i], ht_device_info_get(dev)->fingerprint, 17);
    ht_device_close(dev);
  }
  assert_string_equal(fps[0], fps[1]);
  assert_string_not_equal(fps[0], fps[2]);
  assert_string_not_equal(fps[0], fp);
}

/* ---- launches and transfers follow the file ---- */

static const char *vadd_src = "void vadd(float *c, const float *a, const float *b, int n) {\n"
                              "  for (int i = 0; i < n; i++) c[i] = a[i] + b[i];\n}\n";

typedef struct vadd_run {
  ht_program *prog;
  ht_buffer *buf[3];
  ht_arg args[4];
  ht_launch l;
} vadd_run;

enum { N = 1000 };

static void vadd_setup(ht_device *dev, vadd_run *v) {
  ht_source src = {HT_LANG_C, vadd_src, "vadd.c", "vadd", NULL};
  memset(v, 0, sizeof *v);
  if (ht_device_compile(dev, &src, NULL, &v->prog, NULL)) fail_msg("compile: %s", ht_last_error());
  for (int i = 0; i < 3; i++) {
    assert_int_equal(ht_device_buffer_new(dev, N * sizeof(float), &v->buf[i]), HT_OK);
    v->args[i] = (ht_arg){.is_buffer = 1, .buf = v->buf[i], .type = HT_DTYPE_F32};
  }
  v->args[3] = (ht_arg){.type = HT_DTYPE_I32, .value = ht_int(N)};
  v->l = (ht_launch){.dims = 1, .global = {N, 1, 1}, .local = {1, 1, 1}, .n_args = 4, .args = v->args};
}

static void vadd_free(ht_device *dev, vadd_run *v) {
  for (int i = 0; i < 3; i++) ht_device_buffer_free(dev, v->buf[i]);
  ht_device_program_free(dev, v->prog);
}

static void test_kernel_times_follow_the_file(void **state) {
  (void)state;
  ht_device *dev = open_sim(TINY, "sim:0");
  vadd_run v;
  vadd_setup(dev, &v);
  float a[N], b[N], c[N];
  for (int i = 0; i < N; i++) a[i] = (float)i, b[i] = 0.5f * (float)i;
  double t = -1;
  assert_int_equal(ht_device_buffer_write(dev, v.buf[1], a, sizeof a, &t), HT_OK);
  assert_int_equal(ht_device_buffer_write(dev, v.buf[2], b, sizeof b, &t), HT_OK);
  /* compute-bound: 2e9 flops at 1e12/s over 1e8 bytes at 1e11/s, plus 10 us of launch latency */
  v.l.work_flops = 2e9;
  v.l.work_bytes = 1e8;
  assert_int_equal(ht_device_launch(dev, v.prog, &v.l, &t), HT_OK);
  assert_true(t == 1e-5 + 2e9 / 1e12);
  /* memory-bound */
  v.l.work_flops = 1e6;
  v.l.work_bytes = 5e8;
  assert_int_equal(ht_device_launch(dev, v.prog, &v.l, &t), HT_OK);
  assert_true(t == 1e-5 + 5e8 / 1e11);
  /* the result is real */
  assert_int_equal(ht_device_buffer_read(dev, v.buf[0], c, sizeof c, &t), HT_OK);
  for (int i = 0; i < N; i++) assert_true(c[i] == a[i] + b[i]);
  /* a roofline device cannot time a launch that carries no work */
  v.l.work_flops = v.l.work_bytes = 0;
  assert_int_equal(ht_device_launch(dev, v.prog, &v.l, &t), HT_ERR_RUNTIME);
  assert_non_null(strstr(ht_last_error(), "carries no work"));
  ht_sim_usage u;
  assert_int_equal(ht_sim_usage_get(dev, &u), HT_OK);
  assert_int_equal(u.launches, 2);
  assert_true(fabs(u.kernel_s - (1e-5 + 2e-3 + 1e-5 + 5e-3)) < 1e-15);
  assert_true(fabs(u.energy_j - (100 * u.kernel_s + 10 * u.transfer_s)) < 1e-12);
  vadd_free(dev, &v);
  ht_device_close(dev);
  /* an OpenCL source is refused, saying why */
  dev = open_sim(TINY, "sim:0");
  ht_source cl = {HT_LANG_OPENCL, "__kernel void k(){}", "k.cl", "k", NULL};
  ht_program *p = NULL;
  assert_int_equal(ht_device_compile(dev, &cl, NULL, &p, NULL), HT_ERR_COMPILE);
  assert_non_null(strstr(ht_last_error(), "a simulated device runs C sources"));
  ht_device_close(dev);
  assert_int_equal(ht_sim_usage_get(NULL, &u), HT_ERR_INVALID);
}

/* Time per unit of work (here work-items), with seeded noise: the same times on every open. */
static void launch_series(double *t, int n) {
  ht_device *dev = open_sim(TINY, "sim:1");
  vadd_run v;
  vadd_setup(dev, &v);
  for (int i = 0; i < n; i++) assert_int_equal(ht_device_launch(dev, v.prog, &v.l, &t[i]), HT_OK);
  vadd_free(dev, &v);
  ht_device_close(dev);
}

static void test_noise_is_seeded(void **state) {
  (void)state;
  double t1[20], t2[20];
  launch_series(t1, 20);
  launch_series(t2, 20);
  double mean = 0, clean = 1e-6 + 1e-9 * N; /* latency + seconds_per_unit per work-item */
  int differ = 0;
  for (int i = 0; i < 20; i++) {
    assert_true(t1[i] == t2[i]);
    assert_true(t1[i] > 0.5 * clean && t1[i] < 1.5 * clean);
    differ |= t1[i] != t1[0];
    mean += t1[i] / 20;
  }
  assert_true(differ);
  assert_true(fabs(mean / clean - 1) < 0.05);
}

static void test_transfer_times_follow_the_file(void **state) {
  (void)state;
  ht_device *dev = open_sim(TINY, "sim:0");
  ht_buffer *b = NULL;
  static char host[1000000];
  assert_int_equal(ht_device_buffer_new(dev, sizeof host, &b), HT_OK);
  double t = -1;
  assert_int_equal(ht_device_buffer_write(dev, b, host, sizeof host, &t), HT_OK);
  assert_true(t == 1e-5 + 1e6 / 1e10);
  assert_int_equal(ht_device_buffer_read(dev, b, host, 1000, &t), HT_OK);
  assert_true(t == 2e-5 + 1e3 / 5e9);
  ht_sim_usage u;
  assert_int_equal(ht_sim_usage_get(dev, &u), HT_OK);
  assert_int_equal(u.transfers, 2);
  assert_true(fabs(u.energy_j - 10 * (1e-5 + 1e-4 + 2e-5 + 2e-7)) < 1e-15);
  ht_device_buffer_free(dev, b);
  ht_device_close(dev);
  /* no h2d/d2h in the file: transfers take no time */
  dev = open_sim(TINY, "sim:1");
  assert_int_equal(ht_device_buffer_new(dev, sizeof host, &b), HT_OK);
  assert_int_equal(ht_device_buffer_write(dev, b, host, sizeof host, &t), HT_OK);
  assert_true(t == 0);
  ht_device_buffer_free(dev, b);
  ht_device_close(dev);
}

/* A link with a step: copies of more than step_bytes use the "above" figures; the step and the
 * speed change are part of the fingerprint, and a file without them keeps its old one. */
static void test_transfer_step(void **state) {
  (void)state;
  ht_device *dev = open_sim(STEPPED, "sim:0");
  ht_buffer *b = NULL;
  static char host[2 << 20];
  assert_int_equal(dev->ops->buffer_new(dev, sizeof host, &b), HT_OK);
  double t = -1;
  assert_int_equal(dev->ops->buffer_write(dev, b, host, 1 << 20, &t), HT_OK);
  assert_true(t == 25e-6 + 1048576 / 6.3e9);
  assert_int_equal(dev->ops->buffer_write(dev, b, host, (1 << 20) + 1, &t), HT_OK);
  assert_true(t == 50e-6 + 1048577 / 8e9);
  assert_int_equal(dev->ops->buffer_read(dev, b, host, sizeof host, &t), HT_OK); /* no step on d2h */
  assert_true(t == 30e-6 + sizeof host / 5.5e9);
  dev->ops->buffer_free(dev, b);
  char fp[17];
  memcpy(fp, dev->info.fingerprint, sizeof fp);
  ht_device_close(dev);
  write_text("nostep.json", "{\"devices\": [{\"name\": \"d\", \"seconds_per_unit\": 1, \"memory_bytes\": 1e6,"
                            " \"h2d\": {\"bytes_per_s\": 1e9}}]}");
  write_text("step.json", "{\"devices\": [{\"name\": \"d\", \"seconds_per_unit\": 1, \"memory_bytes\": 1e6,"
                          " \"h2d\": {\"bytes_per_s\": 1e9, \"step_bytes\": 8, \"above\": {\"bytes_per_s\": 1e9}}}]}");
  write_text("speed.json", "{\"devices\": [{\"name\": \"d\", \"seconds_per_unit\": 1, \"memory_bytes\": 1e6,"
                           " \"h2d\": {\"bytes_per_s\": 1e9}, \"speed_change\": {\"after_launches\": 0, \"factor\": 1}}]}");
  const char *files[] = {"nostep.json", "step.json", "speed.json"};
  char fps[3][17];
  for (int i = 0; i < 3; i++) {
    dev = open_sim(in_dir(files[i]), "sim:0");
    memcpy(fps[i], dev->info.fingerprint, 17);
    ht_device_close(dev);
  }
  assert_string_not_equal(fps[0], fps[1]);
  assert_string_not_equal(fps[0], fps[2]);
  assert_string_not_equal(fps[1], fps[2]);
  assert_string_not_equal(fp, fps[0]);
  /* the fingerprint of a file without the later keys, as hetune computed it before they existed */
  dev = open_sim(TINY, "sim:0");
  assert_string_equal(dev->info.fingerprint, TINY_GPU_FINGERPRINT);
  ht_device_close(dev);
}

/* Kernel times of n launches of the stepped device, with ht_sim_set_speed(factor) before launch
 * set_at (-1: never). */
static void speed_series(double *t, int n, int set_at, double factor) {
  ht_device *dev = open_sim(STEPPED, "sim:0");
  vadd_run v;
  vadd_setup(dev, &v);
  v.l.work_flops = 1e9; /* 1 ms at 1e12 flop/s, plus 10 us of latency */
  for (int i = 0; i < n; i++) {
    if (i == set_at) assert_int_equal(ht_sim_set_speed(dev, factor), HT_OK);
    assert_int_equal(dev->ops->launch(dev, v.prog, &v.l, &t[i]), HT_OK);
  }
  vadd_free(dev, &v);
  ht_device_close(dev);
}

/* "speed_change": {"after_launches": 3, "factor": 2}: launches 4 on take twice as long; and
 * ht_sim_set_speed multiplies from the call on; both the same on every run. */
static void test_speed_change(void **state) {
  (void)state;
  double a[8], b[8], c[8], base = 1e-5 + 1e9 / 1e12;
  speed_series(a, 8, -1, 1);
  speed_series(b, 8, -1, 1);
  for (int i = 0; i < 8; i++) {
    assert_true(a[i] == b[i]);
    assert_true(a[i] == (i < 3 ? base : 2 * base));
  }
  speed_series(c, 8, 1, 0.5); /* half the time from launch 2 on, then the file's change on top */
  for (int i = 0; i < 8; i++) assert_true(c[i] == (i < 1 ? base : i < 3 ? 0.5 * base : base));
  speed_series(b, 8, 1, 0.5);
  for (int i = 0; i < 8; i++) assert_true(b[i] == c[i]);
  /* a later call replaces the factor; bad factors and other devices are refused */
  ht_device *dev = open_sim(STEPPED, "sim:0");
  vadd_run v;
  vadd_setup(dev, &v);
  v.l.work_flops = 1e9;
  double t = 0;
  assert_int_equal(ht_sim_set_speed(dev, 3), HT_OK);
  assert_int_equal(ht_sim_set_speed(dev, 4), HT_OK);
  assert_int_equal(dev->ops->launch(dev, v.prog, &v.l, &t), HT_OK);
  assert_true(t == 4 * base);
  assert_int_equal(ht_sim_set_speed(dev, 0), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "speed factor 0: expected a finite number > 0"));
  assert_int_equal(ht_sim_set_speed(dev, NAN), HT_ERR_INVALID);
  ht_sim_usage u;
  assert_int_equal(ht_sim_usage_get(dev, &u), HT_OK);
  assert_true(u.kernel_s == t);
  vadd_free(dev, &v);
  ht_device_close(dev);
  ht_device *host = NULL;
  assert_int_equal(ht_device_open("c", &host), HT_OK);
  assert_int_equal(ht_sim_set_speed(host, 2), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "c:0 is not a simulated device"));
  ht_device_close(host);
  assert_int_equal(ht_sim_set_speed(NULL, 2), HT_ERR_INVALID);
}

static void test_memory_limit(void **state) {
  (void)state;
  ht_device *dev = open_sim(TINY, "sim:1"); /* 1e8 bytes */
  ht_buffer *a = NULL, *b = NULL;
  assert_int_equal(ht_device_buffer_new(dev, 60000000, &a), HT_OK);
  assert_int_equal(ht_device_buffer_new(dev, 60000000, &b), HT_ERR_DEVICE);
  assert_non_null(strstr(ht_last_error(), "sim:1 (tiny cpu): out of device memory: 60000000 bytes asked"));
  ht_device_buffer_free(dev, a);
  assert_int_equal(ht_device_buffer_new(dev, 60000000, &b), HT_OK);
  ht_device_buffer_free(dev, b);
  ht_device_close(dev);
}

/* "real": true sleeps for the modelled time; the virtual clock does not. */
static void test_real_sleeps(void **state) {
  (void)state;
  write_text("real.json", "{\"devices\": [{\"name\": \"slow\", \"seconds_per_unit\": 5e-5, \"memory_bytes\": 1e8,"
                          " \"real\": true, \"h2d\": {\"latency_s\": 0.03, \"bytes_per_s\": 1e9}},"
                          " {\"name\": \"slow virtual\", \"seconds_per_unit\": 1, \"memory_bytes\": 1e8}]}");
  ht_device *dev = open_sim(in_dir("real.json"), "sim:0");
  vadd_run v;
  vadd_setup(dev, &v);
  double t = 0, w0 = ht_now();
  assert_int_equal(ht_device_launch(dev, v.prog, &v.l, &t), HT_OK); /* 1000 work-items */
  double wall = ht_now() - w0;
  assert_true(t == 5e-5 * N);
  assert_true(wall >= t);
  assert_true(wall < t + 10); /* generous: a loaded machine */
  w0 = ht_now();
  static float host[N];
  assert_int_equal(ht_device_buffer_write(dev, v.buf[0], host, sizeof host, &t), HT_OK);
  assert_true(ht_now() - w0 >= t && t >= 0.03);
  vadd_free(dev, &v);
  ht_device_close(dev);
  dev = open_sim(in_dir("real.json"), "sim:1");
  vadd_setup(dev, &v);
  w0 = ht_now();
  assert_int_equal(ht_device_launch(dev, v.prog, &v.l, &t), HT_OK);
  assert_true(t == 1.0 * N && ht_now() - w0 < 100); /* 1000 s modelled, not waited for */
  vadd_free(dev, &v);
  ht_device_close(dev);
}

/* The shipped machine: a PCIe GPU and its host CPU, with the figures of their datasheets. */
static void test_shipped_file(void **state) {
  (void)state;
  const char *file = HT_SOURCE_DIR "/data/sim/pcie_gpu.json";
  ht_device *gpu = open_sim(file, "sim:0"), *cpu = open_sim(file, "sim:1");
  assert_non_null(strstr(ht_device_info_get(gpu)->name, "A100"));
  assert_int_equal(ht_device_info_get(gpu)->warp_size, 32);
  assert_int_equal(ht_device_info_get(cpu)->warp_size, 1);
  vadd_run v;
  vadd_setup(gpu, &v);
  v.l.work_flops = 1e7; /* memory-bound: 1.2e8 bytes at 1,555 GB/s */
  v.l.work_bytes = 1.2e8;
  double t = 0, clean = 5e-6 + 1.2e8 / 1.555e12;
  assert_int_equal(ht_device_launch(gpu, v.prog, &v.l, &t), HT_OK);
  assert_true(t > 0.8 * clean && t < 1.2 * clean); /* 2% noise */
  static float host[N];
  assert_int_equal(ht_device_buffer_write(gpu, v.buf[1], host, sizeof host, &t), HT_OK);
  assert_true(t == 10e-6 + sizeof host / 25e9); /* PCIe 4.0 x16, pinned */
  vadd_free(gpu, &v);
  ht_device_close(gpu);
  ht_device_close(cpu);
}

/* ---- tuning on sim devices: identical stored times, verified outputs ---- */

typedef struct stored {
  int n;
  char key[64][64];
  ht_result r[64];
} stored;

static int collect(const ht_eval_record *rec, void *ctx) {
  stored *s = ctx;
  if (s->n >= 64) return 1;
  snprintf(s->key[s->n], sizeof s->key[0], "%s", rec->config_key);
  s->r[s->n++] = rec->result;
  return 0;
}

/* Tunes spec on device into a fresh database; returns what was stored. */
static void tune_into(const char *spec, const char *device, const char *budget, const char *db, stored *s) {
  run_out *r = malloc(sizeof *r);
  remove(db);
  run(r, "tune", spec, "--device", device, "--strategy", "brute_force", "--budget", budget, "--size", "N=100000",
      "--db", db);
  if (r->rc) fail_msg("hetune%s: exit %d\n%s\n%s", r->cmd, r->rc, r->out, r->err);
  free(r);
  ht_store *st = NULL;
  assert_int_equal(ht_store_open_readonly(db, &st), HT_OK);
  memset(s, 0, sizeof *s);
  assert_int_equal(ht_store_each_eval(st, NULL, collect, s), HT_OK);
  ht_store_close(st);
}

static void expect_same(const stored *a, const stored *b) {
  assert_int_equal(a->n, b->n);
  for (int i = 0; i < a->n; i++) {
    assert_string_equal(a->key[i], b->key[i]);
    const ht_result *x = &a->r[i], *y = &b->r[i];
    if (x->status != HT_EVAL_OK) fail_msg("%s: %s", a->key[i], x->message); /* outputs verified */
    assert_int_equal(y->status, HT_EVAL_OK);
    assert_true(x->time_s == y->time_s && x->h2d_s == y->h2d_s && x->d2h_s == y->d2h_s);
    assert_int_equal(x->n_samples, y->n_samples);
    for (int k = 0; k < x->n_samples; k++) assert_true(x->samples[k] == y->samples[k]);
  }
}

static void test_tuning_twice_same_times(void **state) {
  (void)state;
  static stored a, b;
  setenv("HETUNE_SIM", TINY, 1);
  const char *cl = HT_SOURCE_DIR "/examples/vadd/vadd_opencl.json", *c = HT_SOURCE_DIR "/examples/vadd/vadd_c.json";
  tune_into(cl, "sim:0", "all", in_dir("cl1.db"), &a);
  tune_into(cl, "sim:0", "all", in_dir("cl2.db"), &b);
  expect_same(&a, &b);
  assert_int_equal(a.n, 25); /* WG <= 256 of sim:0: 5 x 5 configs */
  /* vadd moves 12 bytes per element: 1.2e6 bytes at 1e11/s over 1e5 flops at 1e12/s, plus latency;
   * the upload is three buffers of 4e5 bytes (and the runner's 64-byte guard each) */
  double h2d = 3 * (1e-5 + (4e5 + 64) / 1e10);
  assert_true(fabs(a.r[0].time_s - (1e-5 + 1.2e6 / 1e11)) < 1e-15);
  assert_true(fabs(a.r[0].h2d_s - h2d) < 1e-15);
  /* the C spec on the noisy device: every sample drawn again the same */
  tune_into(c, "sim:1", "6", in_dir("c1.db"), &a);
  tune_into(c, "sim:1", "6", in_dir("c2.db"), &b);
  expect_same(&a, &b);
  assert_int_equal(a.n, 6);
  assert_true(a.r[0].samples[0] != a.r[0].samples[1]);
}

/* A kernel that is not C, without a C reference, cannot run on a sim device: one error says why. */
static void test_no_c_source(void **state) {
  (void)state;
  write_text("k.cl", "__kernel void k(__global float *o, int n) { int i = get_global_id(0); if (i < n) o[i] = 1; }\n");
  write_text("nocref.json", "{\"name\": \"nocref\", \"language\": \"opencl\", \"source\": \"k.cl\", \"entry\": \"k\",\n"
                            " \"sizes\": {\"N\": 64}, \"global\": [\"N\"], \"local\": [\"WG\"],\n"
                            " \"parameters\": {\"WG\": [1, 2]},\n \"arguments\": [{\"name\": \"o\", \"type\": "
                            "\"float\", \"buffer\": \"N\", \"access\": \"write\"},\n"
                            "  {\"name\": \"n\", \"type\": \"int32\", \"value\": \"N\"}]}\n");
  setenv("HETUNE_SIM", TINY, 1);
  run_out *r = malloc(sizeof *r);
  run(r, "tune", in_dir("nocref.json"), "--device", "sim:1", "--db", in_dir("nocref.db"), "-q");
  expect_error(r, 1, "nocref: cannot run on simulated device sim:1", "the kernel is opencl with no reference");
  free(r);
}

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/ht_sim_XXXXXX");
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  rm_tree(dir);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_file_errors),
      cmocka_unit_test(test_no_file_no_devices),
      cmocka_unit_test(test_devices_lists_sim),
      cmocka_unit_test(test_info_and_fingerprint),
      cmocka_unit_test(test_kernel_times_follow_the_file),
      cmocka_unit_test(test_noise_is_seeded),
      cmocka_unit_test(test_transfer_times_follow_the_file),
      cmocka_unit_test(test_transfer_step),
      cmocka_unit_test(test_speed_change),
      cmocka_unit_test(test_memory_limit),
      cmocka_unit_test(test_real_sleeps),
      cmocka_unit_test(test_shipped_file),
      cmocka_unit_test(test_tuning_twice_same_times),
      cmocka_unit_test(test_no_c_source),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
