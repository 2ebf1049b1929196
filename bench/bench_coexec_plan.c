/* Planning time of a co-executed call (BENCHMARKS.md, "Splitting a call across devices"): a
 * computation over N simulated devices (bench/coexec/devices.json) with measured chunk times at a
 * few sizes, planned again and again with the plan cache cleared; median time per plan.
 * usage: bench_coexec_plan [COMPUTATION.json] [OPTIONS]   (default bench/coexec/blur_5dev.json) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetune/hetune.h"

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Each variant measured at the whole call and at a few fractions of it. */
static int calibrate(ht_computation *c, int64_t *sizes, int dim) {
  int64_t whole = sizes[dim];
  for (int f = 1; f <= 16; f *= 2) {
    sizes[dim] = whole / f;
    ht_host_arg *args;
    if (ht_computation_make_args(c, sizes, 1, &args)) return 1;
    for (int v = 0; v < ht_computation_variant_count(c); v++)
      if (ht_computation_run_variant(c, v, sizes, args, NULL)) return 1;
    ht_computation_free_args(c, args);
  }
  sizes[dim] = whole;
  return 0;
}

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : HT_SOURCE_DIR "/bench/coexec/blur_5dev.json";
  setenv("HETUNE_SIM", HT_SOURCE_DIR "/bench/coexec/devices.json", 0);
  ht_coexec *x;
  if (ht_coexec_load(path, NULL, &x) || (argc > 2 && ht_coexec_set_options(x, argv[2])))
    return fprintf(stderr, "%s\n", ht_last_error()), 1;
  ht_computation *c = ht_coexec_computation(x);
  const ht_spec *s = ht_computation_spec(c);
  int64_t sizes[16];
  for (int i = 0; i < ht_spec_size_count(s); i++) sizes[i] = ht_spec_size_value(s, i);
  int dim = ht_coexec_split_dim(x);
  sizes[dim] *= 64;
  if (calibrate(c, sizes, dim)) return fprintf(stderr, "%s\n", ht_last_error()), 1;
  enum { N = 201 };
  double us[N];
  ht_coexec_report r;
  for (int i = 0; i < N; i++) {
    if (ht_coexec_set_options(x, "") || ht_coexec_plan(x, sizes, &r)) return fprintf(stderr, "%s\n", ht_last_error()), 1;
    us[i] = r.plan.plan_us;
  }
  qsort(us, N, sizeof *us, cmp);
  printf("%s: %d devices, %lld rows: plan %.1f us median (%.1f-%.1f us, 10-90%%), %d steps, predicted makespan %.3f ms\n",
         ht_computation_name(c), ht_coexec_pu_count(x), (long long)sizes[dim], us[N / 2], us[N / 10], us[N * 9 / 10],
         r.plan.steps, 1e3 * r.pred_makespan_s);
  ht_coexec_destroy(x);
  return 0;
}
