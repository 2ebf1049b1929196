/* A kernel built in code (hetune/kernel.h) instead of a spec file, then tuned by measuring every
 * config of its space on the "c" device: y = alpha * x + y with a tunable unroll.
 *
 *   saxpy_builder [N]      prints each config's time and the fastest; exit 0 when every config
 *                          verified against the reference */
#include <stdio.h>
#include <stdlib.h>

#include "hetune/hetune.h"

static const char *const kernel_text =
    "#ifndef UNROLL\n#define UNROLL 1\n#endif\n"
    "void saxpy(float *y, const float *x, float alpha, int n) {\n"
    "  int i = 0;\n"
    "  for (; i + UNROLL <= n; i += UNROLL)\n"
    "    for (int u = 0; u < UNROLL; u++) y[i + u] += alpha * x[i + u];\n"
    "  for (; i < n; i++) y[i] += alpha * x[i];\n"
    "}\n";

static const char *const reference_text =
    "void saxpy_ref(float *y, const float *x, float alpha, int n) {\n"
    "  for (int i = 0; i < n; i++) y[i] += alpha * x[i];\n"
    "}\n";

/* The kernel, its problem (N) and its harness (data, reference, tolerance) in one spec. */
static ht_status build(int64_t n, ht_spec **out) {
  ht_kernel *k = NULL, *ref = NULL;
  ht_status st = ht_kernel_create("saxpy_builder", &k);
  if (!st) st = ht_kernel_set_source(k, HT_LANG_C, kernel_text, NULL);
  if (!st) st = ht_kernel_set_entry(k, "saxpy");
  if (!st) st = ht_kernel_set_flags(k, "-O2");
  if (!st) st = ht_kernel_add_size(k, "N", n);
  if (!st) st = ht_kernel_add_buffer(k, "y", HT_DTYPE_F32, "N", HT_ACCESS_READWRITE);
  if (!st) st = ht_kernel_add_buffer(k, "x", HT_DTYPE_F32, "N", HT_ACCESS_READ);
  if (!st) st = ht_kernel_add_scalar(k, "alpha", HT_DTYPE_F32, "2.5");
  if (!st) st = ht_kernel_add_scalar(k, "n", HT_DTYPE_I32, "N");
  if (!st) st = ht_kernel_add_param_pow2(k, "UNROLL", 1, 8);
  if (!st) st = ht_kernel_add_constraint(k, "UNROLL <= N");
  if (!st) st = ht_kernel_set_work(k, "2.0*N", "12.0*N");
  if (!st) st = ht_kernel_add_metric(k, "GB/s", "12.0*N/time_s/1e9");
  if (!st) st = ht_kernel_set_init_random(k, "x", -1, 1);
  if (!st) st = ht_kernel_reference(k, &ref);
  if (!st) st = ht_kernel_set_source(ref, HT_LANG_C, reference_text, NULL);
  if (!st) st = ht_kernel_set_entry(ref, "saxpy_ref");
  if (!st) st = ht_kernel_set_tolerance(k, 1e-6, 1e-6);
  if (!st) st = ht_kernel_finish(k, out);
  ht_kernel_destroy(k); /* the spec does not depend on the builder */
  return st;
}

typedef struct tally {
  ht_runner *runner;
  ht_space *space;
  int failed;
  double best_s;
  char best[128];
} tally;

static int measure(const ht_config *cfg, void *ctx) {
  tally *t = ctx;
  ht_result r;
  char text[128];
  ht_config_format(t->space, cfg, text, sizeof text);
  if (ht_runner_evaluate(t->runner, cfg, &r) || r.status != HT_EVAL_OK) {
    printf("%-10s failed: %s\n", text, r.message);
    t->failed++;
    return 0;
  }
  printf("%-10s %.3f ms\n", text, r.time_s * 1e3);
  if (r.time_s < t->best_s || !t->best[0]) {
    t->best_s = r.time_s;
    snprintf(t->best, sizeof t->best, "%s", text);
  }
  return 0;
}

int main(int argc, char **argv) {
  ht_spec *spec = NULL;
  ht_runner_options ro;
  ht_runner_options_default(&ro);
  ro.max_runs = 5;
  tally t = {0};
  if (build(argc > 1 ? atoll(argv[1]) : 1 << 20, &spec) ||
      ht_runner_create(spec, "c", &ro, &t.runner) ||
      ht_spec_build_space(spec, ht_runner_device(t.runner), &t.space) ||
      ht_space_enumerate(t.space, measure, &t)) {
    fprintf(stderr, "saxpy_builder: %s\n", ht_last_error());
    return 1;
  }
  printf("fastest: %s (%.3f ms)\n", t.best, t.best_s * 1e3);
  ht_space_destroy(t.space);
  ht_runner_destroy(t.runner);
  ht_spec_destroy(spec);
  return t.failed || !t.best[0];
}
