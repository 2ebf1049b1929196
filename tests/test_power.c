/* Device power figures: a simulated device's model read back; RAPL counters in a planted powercap
 * tree (two packages, parts and a psys domain that are no package, a counter wrapping around,
 * unreadable files) measured on a scripted clock and on the real one; NVML absent, and a stand-in
 * for it that checks a CUDA device is found by its PCI bus; figures kept in a store; the command. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "device/backend.h"
#include "device/power.h"
#include "hetune/store.h"

#define TREE HT_BINARY_DIR "/test_power_tree"

static void write_file(const char *dir, const char *file, const char *text) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  FILE *f = fopen(path, "w");
  if (!f) fail_msg("cannot write %s", path);
  fputs(text, f);
  fclose(f);
}

/* A fresh domain folder root/name with its name file and counters. */
static char *domain(const char *root, const char *name, const char *kind, uint64_t range, uint64_t energy) {
  char *dir = ht_strfmt("%s/%s", root, name), text[32];
  assert_int_equal(ht_mkdir_p(dir), HT_OK);
  write_file(dir, "name", kind);
  snprintf(text, sizeof text, "%llu\n", (unsigned long long)range);
  write_file(dir, "max_energy_range_uj", text);
  snprintf(text, sizeof text, "%llu\n", (unsigned long long)energy);
  write_file(dir, "energy_uj", text);
  return dir;
}

static char *fresh_tree(const char *name) {
  char *root = ht_strfmt("%s/%s", TREE, name);
  char *cmd = ht_strfmt("rm -rf '%s'", root);
  assert_int_equal(system(cmd), 0);
  free(cmd);
  assert_int_equal(ht_mkdir_p(root), HT_OK);
  return root;
}

static ht_device *open_device(const char *id) {
  ht_device *dev = NULL;
  if (ht_device_open(id, &dev)) fail_msg("%s", ht_last_error());
  return dev;
}

static void expect_error(ht_status st, ht_status code, const char *needle) {
  assert_int_equal(st, code);
  if (!strstr(ht_last_error(), needle)) fail_msg("expected '%s' in: %s", needle, ht_last_error());
}

static void test_sim_figures(void **state) {
  (void)state;
  ht_device *dev = open_device("sim:1");
  ht_device_power_info p;
  assert_int_equal(ht_device_power(dev, NULL, &p), HT_OK);
  assert_true(p.active_w == 300 && p.idle_w == 40);
  assert_string_equal(p.source, "sim model");
  ht_device_close(dev);
  dev = open_device("sim:3"); /* its entry gives no power */
  expect_error(ht_device_power(dev, NULL, &p), HT_ERR_UNSUPPORTED, "no power reading for device sim:3");
  assert_non_null(strstr(ht_last_error(), "\"power_w\""));
  ht_device_close(dev);
  assert_int_equal(ht_device_power(NULL, NULL, &p), HT_ERR_INVALID);
}

/* A scripted clock: each sleep advances time and every package's counter at its idle or loaded
 * power, wrapping at its range, by rewriting the files the reader reads. */
typedef struct script {
  double t;
  int on, starts, stops, threads, wraps;
  struct {
    const char *dir;
    uint64_t range, uj;
    double idle_w, load_w;
  } pkg[2];
} script;

static double script_now(void *ctx) { return ((script *)ctx)->t; }

static void script_sleep(void *ctx, double s) {
  script *c = ctx;
  c->t += s;
  for (int i = 0; i < 2; i++) {
    uint64_t uj = c->pkg[i].uj + (uint64_t)((c->on ? c->pkg[i].load_w : c->pkg[i].idle_w) * s * 1e6 + 0.5);
    c->wraps += uj >= c->pkg[i].range;
    c->pkg[i].uj = uj % c->pkg[i].range;
    char text[32];
    snprintf(text, sizeof text, "%llu\n", (unsigned long long)c->pkg[i].uj);
    write_file(c->pkg[i].dir, "energy_uj", text);
  }
}

static ht_status script_load(void *ctx, int on, int threads) {
  script *c = ctx;
  c->on = on;
  c->threads = threads;
  on ? c->starts++ : c->stops++;
  return HT_OK;
}

static void test_rapl_scripted(void **state) {
  (void)state;
  char *root = fresh_tree("scripted");
  script c = {0};
  /* package 0 starts 2 J before its wrap-around: the first load window crosses it */
  c.pkg[0].range = 262143328850ull, c.pkg[0].uj = c.pkg[0].range - 2000000, c.pkg[0].idle_w = 10, c.pkg[0].load_w = 60;
  c.pkg[1].range = 65532610987ull, c.pkg[1].uj = 1000, c.pkg[1].idle_w = 5, c.pkg[1].load_w = 40;
  char *d0 = domain(root, "intel-rapl:0", "package-0\n", c.pkg[0].range, c.pkg[0].uj);
  char *d1 = domain(root, "intel-rapl:1", "package-1\n", c.pkg[1].range, c.pkg[1].uj);
  c.pkg[0].dir = d0, c.pkg[1].dir = d1;
  free(domain(root, "intel-rapl:0:0", "core\n", 100, 7)); /* parts and psys are not packages */
  char *psys = domain(root, "intel-rapl:2", "psys\n", 100, 7);
  write_file(psys, "energy_uj", "not a number");
  free(psys);
  ht_device_power_options o = {.idle_s = 0.1, .load_s = 0.3, .window_s = 0.05, .threads = 3};
  ht_power_clock clk = {script_now, script_sleep, script_load, &c};
  ht_device_power_info p;
  if (ht_power_rapl("c:0", root, &o, &clk, &p)) fail_msg("%s", ht_last_error());
  assert_float_equal(p.idle_w, 15, 1e-6);
  assert_float_equal(p.active_w, 100, 1e-6);
  assert_true(p.active_w > p.idle_w);
  assert_int_equal(c.wraps, 1);
  assert_int_equal(c.starts, 1);
  assert_int_equal(c.stops, 1);
  assert_int_equal(c.threads, 3);
  assert_string_equal(p.source, "rapl");
  assert_non_null(strstr(p.detail, "package domains intel-rapl:0, intel-rapl:1 under"));
  free(d0), free(d1), free(root);
}

/* Counters that do not advance, on the real clock with the real load: no reading, said so. */
static void test_rapl_real_clock(void **state) {
  (void)state;
  char *root = fresh_tree("still");
  free(domain(root, "intel-rapl:0", "package-0\n", 1000000, 5));
  ht_device_power_options o = {.idle_s = 0.01, .load_s = 0.03, .window_s = 0.01, .threads = 2};
  ht_device_power_info p;
  expect_error(ht_power_rapl("c:0", root, &o, NULL, &p), HT_ERR_UNSUPPORTED, "did not advance");
  setenv("HETUNE_POWERCAP_DIR", root, 1); /* the public call on the C device reads the same tree */
  ht_device *dev = open_device("c");
  expect_error(ht_device_power(dev, &o, &p), HT_ERR_UNSUPPORTED, "no power reading for device c:0: the RAPL counters");
  ht_device_close(dev);
  unsetenv("HETUNE_POWERCAP_DIR");
  free(root);
}

static void test_rapl_errors(void **state) {
  (void)state;
  char *root = fresh_tree("errors");
  ht_device_power_info p;
  ht_device_power_options o = {.idle_s = 0.01, .load_s = 0.01, .window_s = 0.01, .threads = 1};
  expect_error(ht_power_rapl("c:0", root, &o, NULL, &p), HT_ERR_UNSUPPORTED,
               "has no RAPL package domain (not readable here)");
  assert_non_null(strstr(ht_last_error(), root));
  expect_error(ht_power_rapl("c:0", TREE "/none", &o, NULL, &p), HT_ERR_UNSUPPORTED,
               "/none has no RAPL package domain");
  char *dir = domain(root, "intel-rapl:0", "package-0\n", 1000, 5);
  write_file(dir, "energy_uj", "12 J");
  expect_error(ht_power_rapl("c:0", root, &o, NULL, &p), HT_ERR_UNSUPPORTED, "intel-rapl:0/energy_uj: '12 J' is not");
  char *file = ht_strfmt("%s/energy_uj", dir);
  if (geteuid() != 0) { /* root reads any file: only another user sees the permission error */
    chmod(file, 0);
    expect_error(ht_power_rapl("c:0", root, &o, NULL, &p), HT_ERR_UNSUPPORTED, "readable by root only");
  }
  unlink(file);
  assert_int_equal(mkdir(file, 0700), 0); /* a counter that cannot be read */
  expect_error(ht_power_rapl("c:0", root, &o, NULL, &p), HT_ERR_UNSUPPORTED, "intel-rapl:0/energy_uj: Is a directory");
  free(file), free(dir), free(root);
}

static void test_nvml_absent(void **state) {
  (void)state;
  ht_device_power_info p;
  expect_error(ht_power_nvml("cuda:0", "libhetune-no-such-nvml.so.1", 0, NULL, &p), HT_ERR_UNSUPPORTED,
               "no power reading for device cuda:0: libhetune-no-such-nvml.so.1 not found");
  expect_error(ht_power_nvml("cuda:0", "libm.so.6", 0, NULL, &p), HT_ERR_UNSUPPORTED, "lacks the NVML power calls");
}

/* A stand-in for libnvidia-ml (no NVIDIA driver here), with the calls hetune makes, built for the
 * test: two GPUs in bus order, 0000:17:00.0 drawing 60 W under a 300 W limit and 0000:65:00.0
 * 80 W under 700 W; any other bus is not found (NVML_ERROR_NOT_FOUND, 6). */
static const char *fake_nvml =
    "static const char *bus[2] = {\"0000:17:00.0\", \"0000:65:00.0\"};\n"
    "static const unsigned draw[2] = {60000, 80000}, limit[2] = {300000, 700000};\n"
    "int nvmlInit_v2(void) { return 0; }\n"
    "int nvmlShutdown(void) { return 0; }\n"
    "const char *nvmlErrorString(int rc) { return rc == 6 ? \"Not Found\" : \"Unknown Error\"; }\n"
    "int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **d) { if (i > 1) return 6; *d = (void *)(long)(i + 1); return 0; }\n"
    "int nvmlDeviceGetHandleByPciBusId_v2(const char *b, void **d) {\n"
    "  for (int i = 0; i < 2; i++) {\n"
    "    const char *p = b, *q = bus[i];\n"
    "    while (*p && *p == *q) p++, q++;\n"
    "    if (!*p && !*q) { *d = (void *)(long)(i + 1); return 0; }\n"
    "  }\n"
    "  return 6;\n"
    "}\n"
    "int nvmlDeviceGetPowerUsage(void *d, unsigned *mw) { *mw = draw[(long)d - 1]; return 0; }\n"
    "int nvmlDeviceGetEnforcedPowerLimit(void *d, unsigned *mw) { *mw = limit[(long)d - 1]; return 0; }\n";

/* CUDA's device 0 may be NVML's device 1 (CUDA counts fastest first, NVML by bus): the reading goes
 * by the bus where the CUDA backend knows it, by index otherwise. */
static void test_nvml_by_bus(void **state) {
  (void)state;
  const char *dir = HT_BINARY_DIR;
  write_file(dir, "test_power_fake_nvml.c", fake_nvml);
  char *lib = ht_strfmt("%s/libtest_power_fake_nvml.so", dir);
  char *cmd = ht_strfmt("cc -shared -fPIC -o %s %s/test_power_fake_nvml.c", lib, dir);
  assert_int_equal(system(cmd), 0);
  ht_device_power_info p;
  assert_int_equal(ht_power_nvml("cuda:0", lib, 0, "0000:65:00.0", &p), HT_OK);
  assert_true(p.active_w == 700 && p.idle_w == 80);
  assert_non_null(strstr(p.detail, "PCI 0000:65:00.0"));
  assert_int_equal(ht_power_nvml("cuda:0", lib, 0, "", &p), HT_OK); /* no bus known: by index */
  assert_true(p.active_w == 300 && p.idle_w == 60);
  expect_error(ht_power_nvml("cuda:1", lib, 1, "0000:99:00.0", &p), HT_ERR_UNSUPPORTED,
               "no power reading for device cuda:1: nvmlDeviceGetHandleByPciBusId_v2 failed: Not Found");
  free(cmd);
  free(lib);
}

/* Figures in a store: none at first, kept per device, replaced when measured again, and a
 * figure that is no power refused. */
static void test_store_power(void **state) {
  (void)state;
  char *db = ht_strfmt("%s/test_power_store.db", HT_BINARY_DIR);
  unlink(db);
  ht_store *st;
  ht_device *dev;
  assert_int_equal(ht_store_open(db, &st), HT_OK);
  assert_int_equal(ht_device_open("c", &dev), HT_OK);
  ht_device_power_info p = {.active_w = 180, .idle_w = 40, .source = "rapl", .detail = "intel-rapl:0"}, q;
  int found = 1;
  double when = 0;
  assert_int_equal(ht_store_get_power(st, &dev->info, &q, &when, &found), HT_OK);
  assert_int_equal(found, 0);
  assert_int_equal(ht_store_put_power(st, &dev->info, &p), HT_OK);
  assert_int_equal(ht_store_get_power(st, &dev->info, &q, &when, &found), HT_OK);
  assert_true(found && q.active_w == 180 && q.idle_w == 40 && when > 0);
  assert_string_equal(q.source, "rapl");
  assert_string_equal(q.detail, "intel-rapl:0");
  p.active_w = 150;
  assert_int_equal(ht_store_put_power(st, &dev->info, &p), HT_OK);
  assert_int_equal(ht_store_get_power(st, &dev->info, &q, NULL, &found), HT_OK);
  assert_true(found && q.active_w == 150);
  p.active_w = 0;
  expect_error(ht_store_put_power(st, &dev->info, &p), HT_ERR_INVALID, "expected active > 0");
  ht_device_close(dev);
  ht_store_close(st);
  free(db);
}

static void test_cli(void **state) {
  (void)state;
  char *root = fresh_tree("cli");
  char *cmd = ht_strfmt("HETUNE_POWERCAP_DIR='%s' %s devices --power 2>&1", root, HT_CLI);
  FILE *f = popen(cmd, "r");
  assert_non_null(f);
  static char out[65536];
  size_t n = fread(out, 1, sizeof out - 1, f);
  out[n] = 0;
  int rc = pclose(f);
  if (!WIFEXITED(rc) || WEXITSTATUS(rc)) fail_msg("%s", out);
  if (!strstr(out, "power: active 300.0 W, idle 40.0 W (sim model: big gpu)")) fail_msg("%s", out);
  if (!strstr(out, "power: none: no power reading for device c:0:")) fail_msg("%s", out);
  free(cmd);
  /* --db keeps measured figures (none here: no RAPL counters to read); alone it is a usage error */
  char *db = ht_strfmt("%s/test_power_cli.db", HT_BINARY_DIR);
  unlink(db);
  cmd = ht_strfmt("HETUNE_POWERCAP_DIR='%s' %s devices --power --db %s > /dev/null 2>&1", root, HT_CLI, db);
  rc = system(cmd);
  assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) == 0);
  assert_int_equal(access(db, F_OK), 0);
  free(cmd);
  cmd = ht_strfmt("%s devices --db %s 2>&1", HT_CLI, db);
  f = popen(cmd, "r");
  n = fread(out, 1, sizeof out - 1, f);
  out[n] = 0;
  rc = pclose(f);
  assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) == 2);
  assert_non_null(strstr(out, "--db goes with --power"));
  free(cmd), free(db), free(root);
}

int main(void) {
  setenv("HETUNE_SIM", HT_SOURCE_DIR "/tests/data/sim/coexec.json", 1);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sim_figures), cmocka_unit_test(test_rapl_scripted), cmocka_unit_test(test_rapl_real_clock),
      cmocka_unit_test(test_rapl_errors), cmocka_unit_test(test_nvml_absent), cmocka_unit_test(test_nvml_by_bus), cmocka_unit_test(test_store_power),   cmocka_unit_test(test_cli),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
