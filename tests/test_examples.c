/* Every example kernel, at problem sizes that are not multiples of any tile or vector width:
 * random configs of each spec are tuned on the spec's own backend and must all pass verification
 * against the spec's C reference (a wrong config is recorded as a "correctness" failure, which
 * this test reports with its message). A spec added to examples/ without an entry here fails the
 * test, so no example goes unchecked. CUDA specs are skipped, with a message, without a GPU, and
 * OpenCL specs without an OpenCL device. */
#include <dirent.h>
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

#define EXAMPLES HT_SOURCE_DIR "/examples/"
enum { CONFIGS = 6 };

/* spec (relative to examples/), device, awkward sizes ("K=V,K=V") */
static const struct example {
  const char *spec, *device, *sizes;
} examples[] = {
    {"blackscholes/blackscholes_c.json", "c", "N=10007"},
    {"blackscholes/blackscholes_opencl.json", "opencl", "N=10007"},
    {"convolution/convolution_opencl.json", "opencl", "W=131,H=67"},
    {"dispatch/options_c.json", "c", "N=10007"},
    {"dispatch/options_cuda.json", "cuda", "N=10007"},
    {"gemm/gemm_c.json", "c", "M=67,N=45,K=33"},
    {"gemm/gemm_cuda.json", "cuda", "M=256,N=256,K=64"},
    {"gemm/gemm_naive_opencl.json", "opencl", "M=67,N=45,K=33"},
    /* the tiled kernel needs tile multiples (its constraints say so); the smallest sizes that keep
     * every tile shape valid */
    {"gemm/gemm_opencl.json", "opencl", "M=128,N=256,K=32"},
    {"histogram/histogram_opencl.json", "opencl", "N=100003,B=100"},
    {"matvec/matvec_c.json", "c", "M=301,N=207"},
    {"nbody/nbody_c.json", "c", "N=301"},
    {"reduction/reduction_opencl.json", "opencl", "N=100003,G=97"},
    {"stencil/stencil_c.json", "c", "W=131,H=67"},
    {"stencil/stencil_cuda.json", "cuda", "W=131,H=67"},
    {"stencil/stencil_opencl.json", "opencl", "W=131,H=67"},
    {"transpose/transpose_opencl.json", "opencl", "W=131,H=67"},
    {"vadd/vadd_c.json", "c", "N=10007"},
    {"vadd/vadd_cuda.json", "cuda", "N=10007"},
    {"vadd/vadd_opencl.json", "opencl", "N=10007"},
};
enum { N_EXAMPLES = sizeof examples / sizeof examples[0] };

/* Whether a device of the backend exists, asked through the probe (a child process): opening it
 * here would start the OpenCL or CUDA runtime in this process, and neither survives the fork of
 * the runner's workers. */
static int has_device(const char *backend) {
  ht_device_info *infos = NULL;
  int n = 0, found = 0;
  if (ht_device_list(&infos, &n, NULL)) return 0;
  size_t len = strlen(backend);
  for (int i = 0; i < n; i++) found |= strncmp(infos[i].id, backend, len) == 0 && infos[i].id[len] == ':';
  free(infos);
  return found;
}

static int print_failure(const ht_eval_record *rec, void *ctx) {
  (void)ctx;
  if (rec->result.status != HT_EVAL_OK)
    fprintf(stderr, "  %s at %s: %s: %s\n", rec->config_key, rec->problem, ht_eval_status_name(rec->result.status),
            rec->result.message);
  return 0;
}

/* Sets "K=V,K=V" on s. */
static void set_sizes(ht_spec *s, const char *sizes) {
  char buf[128];
  snprintf(buf, sizeof buf, "%s", sizes);
  char *save = NULL;
  for (char *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save))
    if (ht_spec_set_size(s, kv)) fail_msg("%s", ht_last_error());
}

/* CONFIGS random configs of one example, each verified; returns how many failed. */
static int64_t check_example(const struct example *e, const char *db) {
  char path[512];
  snprintf(path, sizeof path, EXAMPLES "%s", e->spec);
  ht_spec *spec = NULL;
  if (ht_spec_load(path, &spec)) fail_msg("%s", ht_last_error());
  set_sizes(spec, e->sizes);
  ht_store *st = NULL;
  assert_int_equal(ht_store_open(db, &st), HT_OK);
  ht_tune_options to;
  ht_tune_options_default(&to);
  to.budget_evals = CONFIGS;
  to.seed = 11;
  ht_runner_options ro;
  ht_runner_options_default(&ro);
  ro.max_runs = 2;
  ro.max_time_s = 0.05;
  ht_tune_summary *sum = calloc(1, sizeof *sum);
  assert_non_null(sum);
  if (ht_tune(spec, e->device, st, &to, &ro, sum)) fail_msg("%s: %s", e->spec, ht_last_error());
  int64_t failed = sum->failures;
  fprintf(stderr, "%s at %s: %lld configs, %lld failed\n", e->spec, e->sizes, (long long)sum->measured,
          (long long)failed);
  assert_true(sum->measured == CONFIGS || (uint64_t)sum->measured == sum->space_size);
  if (failed) {
    ht_eval_filter f = {.kernel_name = ht_spec_name(spec)};
    assert_int_equal(ht_store_each_eval(st, &f, print_failure, NULL), HT_OK);
  }
  ht_store_close(st);
  ht_spec_destroy(spec);
  free(sum);
  return failed;
}

static void test_every_example_verifies(void **state) {
  (void)state;
  char dir[] = "/tmp/hetune-examples-XXXXXX";
  assert_non_null(mkdtemp(dir));
  const int have_cuda = has_device("cuda"), have_opencl = has_device("opencl");
  int64_t failed = 0;
  for (int i = 0; i < N_EXAMPLES; i++) {
    if (strcmp(examples[i].device, "cuda") == 0 && !have_cuda) {
      fprintf(stderr, "SKIP %s: no usable CUDA device\n", examples[i].spec);
      continue;
    }
    if (strcmp(examples[i].device, "opencl") == 0 && !have_opencl) {
      fprintf(stderr, "SKIP %s: no OpenCL device (a GPU machine without PoCL)\n", examples[i].spec);
      continue;
    }
    char db[512];
    snprintf(db, sizeof db, "%s/%d.db", dir, i);
    failed += check_example(&examples[i], db);
    unlink(db);
  }
  rmdir(dir);
  assert_int_equal(failed, 0);
}

static int listed(const char *spec) {
  for (int i = 0; i < N_EXAMPLES; i++)
    if (strcmp(examples[i].spec, spec) == 0) return 1;
  return 0;
}

/* Every examples/<dir>/<name>.json is in the table above. */
static void test_every_example_listed(void **state) {
  (void)state;
  DIR *top = opendir(EXAMPLES);
  assert_non_null(top);
  int n = 0;
  for (struct dirent *d; (d = readdir(top));) {
    if (d->d_name[0] == '.') continue;
    char sub[512];
    snprintf(sub, sizeof sub, EXAMPLES "%s", d->d_name);
    DIR *in = opendir(sub);
    if (!in) continue;
    for (struct dirent *f; (f = readdir(in));) {
      size_t len = strlen(f->d_name);
      if (len < 5 || strcmp(f->d_name + len - 5, ".json") != 0) continue;
      char spec[512];
      snprintf(spec, sizeof spec, "%s/%s", d->d_name, f->d_name);
      if (!listed(spec)) fail_msg("examples/%s has no entry in test_examples.c", spec);
      n++;
    }
    closedir(in);
  }
  closedir(top);
  assert_int_equal(n, N_EXAMPLES);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_example_listed),
      cmocka_unit_test(test_every_example_verifies),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
