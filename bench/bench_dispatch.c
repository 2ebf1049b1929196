/* Per-call dispatch's own cost: a warm decision (cache hit), a static-cache hit, a cold decision
 * per variant, and an application loop of small calls through ht_computation_run beside the same
 * calls of the chosen variant made directly (ht_variant_run), in alternating blocks. Prints a
 * table for BENCHMARKS.md. Usage: bench_dispatch [CALLS [OPTIONS]] (default 100000; OPTIONS: the
 * computation's options beside explore=0, "sample_below_us=32" say). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/sim.h"
#include "dispatch/dispatch_internal.h"
#include "hetune/hetune.h"

#define SPEC HT_SOURCE_DIR "/examples/vadd/vadd_c.json"
#define BLOCK 1000

static int fail(void) { return fprintf(stderr, "bench_dispatch: %s\n", ht_last_error()), 1; }

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *x, int n) {
  qsort(x, (size_t)n, sizeof *x, cmp);
  return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

/* Two single-thread variants of vadd (unrolled or not: any machine has one thread), calibrated at a few sizes. */
static int build(ht_spec *s, const char *options, ht_computation **c) {
  if (ht_computation_create("bench_vadd", NULL, c) ||
      ht_computation_add_variant(*c, s, "c", "NTHREADS=1,CHUNK=0,UNROLL=1", NULL) ||
      ht_computation_add_variant(*c, s, "c", "NTHREADS=1,CHUNK=0,UNROLL=4", NULL) ||
      ht_computation_set_options(*c, options) || ht_computation_finish(*c))
    return fail();
  return 0;
}

static int calibrate(ht_computation *c, int64_t n, int variants) {
  ht_host_arg *args;
  if (ht_computation_make_args(c, &n, 1, &args)) return fail();
  for (int v = 0; v < variants; v++)
    for (int k = 0; k < 3; k++)
      if (ht_computation_run_variant(c, v, &n, args, NULL)) return fail();
  ht_computation_free_args(c, args);
  return 0;
}

static void decision_latency(ht_computation *c, int64_t n) {
  enum { REPS = 200000 };
  static double ns[REPS / 1000];
  ht_decision d;
  for (int b = 0; b < REPS / 1000; b++) {
    int64_t t0 = ht_now_ns();
    for (int i = 0; i < 1000; i++) ht_computation_decide(c, &n, &d);
    ns[b] = (double)(ht_now_ns() - t0) / 1000;
  }
  printf("| warm decision (in-memory cache hit) | %.0f ns |\n", median(ns, REPS / 1000));
  ht_static_entry e = {ht_computation_size_key(c, &n), d.variant, d.config, 1000, 'M'};
  ht_computation_set_static_cache(c, &e, 1);
  for (int b = 0; b < REPS / 1000; b++) {
    int64_t t0 = ht_now_ns();
    for (int i = 0; i < 1000; i++) ht_computation_decide(c, &n, &d);
    ns[b] = (double)(ht_now_ns() - t0) / 1000;
  }
  printf("| static-cache hit | %.0f ns |\n", median(ns, REPS / 1000));
  ht_computation_set_static_cache(c, NULL, 0);
}

/* Sizes never decided before: each is a miss that estimates every variant (interpolation). */
static void cold_latency(ht_computation *c, int variants) {
  enum { N = 2000 };
  static double ns[N];
  for (int i = 0; i < N; i++) {
    int64_t n = 1500 + 7 * i;
    ht_decision d;
    ht_computation_decide(c, &n, &d);
    ns[i] = d.decide_ns / variants;
  }
  printf("| cold decision, per variant (%d variants, 4 sizes measured) | %.0f ns |\n", variants, median(ns, N));
}

static double block_ns(ht_computation *c, ht_variant *v, int64_t n, const ht_host_arg *args) {
  int64_t t0 = ht_now_ns();
  for (int i = 0; i < BLOCK; i++)
    if (c ? ht_computation_run(c, &n, args, NULL, NULL) : ht_variant_run(v, &n, args, NULL, NULL)) return NAN;
  return (double)(ht_now_ns() - t0) / BLOCK;
}

/* Alternating blocks of BLOCK calls through dispatch and of the chosen variant directly: first with
 * short calls fed back in samples (the default), then with every call fed back (c_every). Each pair
 * alternates on its own, so that neither computation's state is in the caches of the other's calls. */
static int call_loop(ht_computation *c, ht_computation *c_every, const ht_spec *s, int64_t n, int calls) {
  ht_host_arg *args;
  ht_decision d;
  if (ht_computation_make_args(c, &n, 2, &args) || ht_computation_decide(c, &n, &d)) return fail();
  ht_exec *ex;
  ht_variant *v;
  if (ht_exec_open("c", &ex) || ht_variant_create(ex, s, d.config, &v)) return fail();
  int blocks = calls / BLOCK;
  double *through = calloc((size_t)blocks, sizeof *through), *every = calloc((size_t)blocks, sizeof *every),
         *direct = calloc((size_t)blocks, sizeof *direct);
  double *direct_every = calloc((size_t)blocks, sizeof *direct_every);
  for (int b = 0; b < blocks; b++) {
    through[b] = block_ns(c, NULL, n, args);
    direct[b] = block_ns(NULL, v, n, args);
    if (isnan(through[b]) || isnan(direct[b])) return fail();
  }
  for (int b = 0; b < blocks; b++) {
    every[b] = block_ns(c_every, NULL, n, args);
    direct_every[b] = block_ns(NULL, v, n, args);
    if (isnan(every[b]) || isnan(direct_every[b])) return fail();
  }
  /* each block against the direct block right after it: a slow phase of the machine falls on both */
  double *paired = calloc((size_t)blocks, sizeof *paired), *paired_every = calloc((size_t)blocks, sizeof *paired_every);
  if (!paired || !paired_every) return fail();
  for (int b = 0; b < blocks; b++) paired[b] = through[b] / direct[b], paired_every[b] = every[b] / direct_every[b];
  double pm = median(paired, blocks), pq1 = paired[blocks / 4], pq3 = paired[3 * blocks / 4];
  double pme = median(paired_every, blocks);
  double mt = median(through, blocks), me = median(every, blocks), md = median(direct, blocks),
         mde = median(direct_every, blocks);
  printf("| %d calls of vadd N=%lld: through ht_computation_run | %.0f ns per call |\n", blocks * BLOCK, (long long)n,
         mt);
  printf("| the same, every call fed back (sample_below_us=0) | %.0f ns per call |\n", me);
  printf("| the same calls of the chosen variant, ht_variant_run | %.0f ns per call |\n", md);
  printf("| dispatch's share: sampled feedback / every call fed back | %+.1f%% / %+.1f%% |\n", 100 * (mt / md - 1),
         100 * (me / mde - 1));
  printf("| the same, block by block against the direct block after it: median (quartiles) / every call | %+.1f%% "
         "(%+.1f%% to %+.1f%%) / %+.1f%% |\n",
         100 * (pm - 1), 100 * (pq1 - 1), 100 * (pq3 - 1), 100 * (pme - 1));
  free(paired);
  free(paired_every);
  free(direct_every);
  free(through);
  free(every);
  free(direct);
  ht_variant_destroy(v);
  ht_exec_close(ex);
  ht_computation_free_args(c, args);
  return 0;
}

/* Drift: two simulated devices (tests/data/sim/dispatch.json) near their crossover; the winner is
 * slowed down 2x after 20 calls; how many calls until the choice moves to the other device. */
static int drift(void) {
  setenv("HETUNE_SIM", HT_SOURCE_DIR "/tests/data/sim/dispatch.json", 1);
  ht_spec *s;
  ht_computation *c;
  if (ht_spec_load(HT_SOURCE_DIR "/examples/dispatch/options_c.json", &s) ||
      ht_computation_create("drift", NULL, &c) || ht_computation_add_variant(c, s, "sim:0", "THREADS_ALL=0", NULL) ||
      ht_computation_add_variant(c, s, "sim:1", "THREADS_ALL=0", NULL) || ht_computation_set_options(c, "explore=0") ||
      ht_computation_finish(c) || calibrate(c, 5000, 2))
    return fail();
  int64_t n = 5000;
  ht_host_arg *args;
  if (ht_computation_make_args(c, &n, 1, &args)) return fail();
  int first = -1, flipped_after = -1;
  for (int call = 1; call <= 60 && flipped_after < 0; call++) {
    ht_decision d;
    if (call == 21 && ht_sim_set_speed(ht_exec_device(c->v[first].ex), 2.0)) return fail();
    if (ht_computation_run(c, &n, args, &d, NULL)) return fail();
    if (first < 0) first = d.variant;
    if (call > 20 && d.variant != first) flipped_after = call - 20;
  }
  printf("| drift: the chosen device (sim, N=5000) slowed 2x after 20 calls; calls until the choice moved | %d |\n",
         flipped_after);
  ht_computation_free_args(c, args);
  ht_computation_destroy(c);
  ht_spec_destroy(s);
  return flipped_after > 0 ? 0 : 1;
}

int main(int argc, char **argv) {
  int calls = argc > 1 ? atoi(argv[1]) : 100000;
  if (calls < BLOCK) calls = BLOCK;
  ht_spec *s;
  ht_computation *c;
  ht_computation *c_every;
  char *options = ht_strfmt("explore=0%s%s", argc > 2 ? "," : "", argc > 2 ? argv[2] : "");
  if (ht_spec_load(SPEC, &s) || build(s, options, &c) || build(s, "explore=0,sample_below_us=0", &c_every))
    return fail();
  free(options);
  for (int64_t n = 1000; n <= 1000000; n *= 10)
    if (calibrate(c, n, 2) || calibrate(c_every, n, 2)) return 1;
  printf("| what | median |\n|---|---|\n");
  decision_latency(c, 1000);
  cold_latency(c, 2);
  int rc = call_loop(c, c_every, s, 1000, calls);
  if (!rc) rc = call_loop(c, c_every, s, 10000, calls);
  if (!rc) rc = drift();
  ht_computation_destroy(c);
  ht_computation_destroy(c_every);
  ht_spec_destroy(s);
  return rc;
}
