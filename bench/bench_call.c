/* What a call of a tiny kernel costs on the c device beside the same C function called directly:
 * through ht_variant_run timed and not timed, and through ht_computation_run (one variant). The
 * kernel adds two vectors of N floats (bench/data/add.c, default 16); the result is checked. Rounds
 * of alternating blocks, medians per call. Prints a table for BENCHMARKS.md.
 * Usage: bench_call [N] [CALLS] (default 16 elements, 1,000,000 calls). */
#include <stdio.h>
#include <stdlib.h>

#include "hetune/hetune.h"

#define SPEC HT_SOURCE_DIR "/bench/data/add_c.json"
enum { ROUNDS = 7 };

/* the kernel's code, compiled into this program */
static void add(float *restrict c, const float *restrict a, const float *restrict b, int n) {
  for (int i = 0; i < n; i++) c[i] = a[i] + b[i];
}

static int fail(void) { return fprintf(stderr, "bench_call: %s\n", ht_last_error()), 1; }

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct loop {
  ht_variant *v;
  ht_computation *c;
  const ht_host_arg *args;
  int64_t n;
} loop;

/* ns per call of one way: 0 direct, 1 ht_variant_run timed, 2 not timed, 3 ht_computation_run */
static double block(const loop *l, int way, int calls) {
  void (*volatile fn)(float *, const float *, const float *, int) = add; /* not inlined away */
  ht_run_times t;
  int64_t t0 = ht_now_ns();
  for (int i = 0; i < calls; i++) {
    ht_status st = HT_OK;
    if (way == 0) fn(l->args[0].data, l->args[1].data, l->args[2].data, (int)l->n);
    else if (way == 1) st = ht_variant_run(l->v, &l->n, l->args, NULL, &t);
    else if (way == 2) st = ht_variant_run(l->v, &l->n, l->args, NULL, NULL);
    else st = ht_computation_run(l->c, &l->n, l->args, NULL, NULL);
    if (st) return -1;
  }
  return (double)(ht_now_ns() - t0) / calls;
}

int main(int argc, char **argv) {
  int64_t n = argc > 1 ? atoll(argv[1]) : 16;
  int calls = argc > 2 ? atoi(argv[2]) : 1000000;
  if (n < 1 || calls < ROUNDS) return fprintf(stderr, "usage: bench_call [N >= 1] [CALLS]\n"), 2;
  ht_spec *s;
  ht_exec *ex;
  loop l = {.n = n};
  ht_host_arg *args;
  if (ht_spec_load(SPEC, &s) || ht_exec_open("c", &ex) || ht_variant_create(ex, s, "", &l.v) ||
      ht_computation_create("bench_call", NULL, &l.c) || ht_computation_add_variant(l.c, s, "c", "", NULL) ||
      ht_computation_finish(l.c) || ht_computation_make_args(l.c, &n, 1, &args))
    return fail();
  l.args = args;
  static const char *const names[] = {"the C function called directly", "ht_variant_run, timed",
                                      "ht_variant_run, not timed (times NULL)", "ht_computation_run (one variant)"};
  double ns[4][ROUNDS];
  for (int r = 0; r < ROUNDS; r++)
    for (int way = 0; way < 4; way++)
      if ((ns[way][r] = block(&l, way, calls / ROUNDS)) < 0) return fail();
  const float *c = args[0].data, *a = args[1].data, *b = args[2].data;
  for (int64_t i = 0; i < n; i++)
    if (c[i] != a[i] + b[i]) return fprintf(stderr, "bench_call: wrong result at %lld\n", (long long)i), 1;
  printf("| a call of add, N=%lld, on c | median ns per call (of %d rounds) |\n|---|---|\n", (long long)n, ROUNDS);
  for (int way = 0; way < 4; way++) {
    qsort(ns[way], ROUNDS, sizeof ns[way][0], cmp);
    printf("| %s | %.1f |\n", names[way], ns[way][ROUNDS / 2]);
  }
  ht_computation_free_args(l.c, args);
  ht_computation_destroy(l.c);
  ht_variant_destroy(l.v);
  ht_exec_close(ex);
  ht_spec_destroy(s);
  return 0;
}
