/* The co-execution planner (001's Alg. 5.3, ht_partition_plan) on synthetic devices like the sim
 * backend's: 2 to 5 PUs of unequal speed, PU 0 a CPU, the others behind a link whose copy per
 * chunk costs latency + bytes / bandwidth, and in the "waves" family a GPU-like time that counts
 * whole waves of blocks. Per case: efficiency = ideal makespan / predicted makespan, the ideal
 * being the continuous optimum (the common finish time T with sum_i chunk_i(T) = total, copies
 * included, each PU's chunk (T - latency) / (time per iteration)); imbalance (Tmax - Tmin) / Tmax
 * over the PUs used; steps; the planner's time (median of many plans). Prints tables for
 * BENCHMARKS.md. Usage: bench_partition [SEEDS] (default 5) [-v: every case]. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetune/hetune.h"

enum { MAX_PU = 5, PLAN_REPS = 2001 };

typedef struct device {
  double per_iter, latency, bytes_per_iter, bandwidth;
  int64_t wave; /* 0: time grows with every iteration */
} device;

typedef struct machine {
  int n;
  device d[MAX_PU];
} machine;

static double device_time(const device *d, int64_t size) {
  int64_t work = d->wave ? (size + d->wave - 1) / d->wave * d->wave : size;
  double copy = d->bandwidth > 0 ? (double)size * d->bytes_per_iter / d->bandwidth : 0;
  return d->latency + d->per_iter * (double)work + copy;
}

static double chunk_time(void *ctx, int pu, int version, int64_t lb, int64_t ub) {
  (void)version;
  return device_time(&((machine *)ctx)->d[pu], ub - lb);
}

/* The time per iteration on the continuous envelope (waves spread evenly), copies included. */
static double slope(const device *d) { return d->per_iter + (d->bandwidth > 0 ? d->bytes_per_iter / d->bandwidth : 0); }

/* The common finish time T with sum_i max(0, (T - latency_i) / slope_i) = total, by bisection. */
static double ideal_makespan(const machine *m, double total) {
  double lo = 0, hi = INFINITY;
  for (int i = 0; i < m->n; i++) hi = fmin(hi, m->d[i].latency + slope(&m->d[i]) * total);
  for (int k = 0; k < 200; k++) {
    double mid = 0.5 * (lo + hi), sum = 0;
    for (int i = 0; i < m->n; i++) sum += fmax(0, (mid - m->d[i].latency) / slope(&m->d[i]));
    if (sum >= total)
      hi = mid;
    else
      lo = mid;
  }
  return hi;
}

static double uniform(ht_rng *r, double lo, double hi) { return lo + (hi - lo) * ht_rng_uniform(r); }

/* PU 0: a CPU at 1-2 ns per iteration; the others 1.5x to 12x faster behind a link of 5-50 us
 * latency, 0.5-4 bytes per iteration at 6-25 GB/s. */
static machine make_machine(int n, uint64_t seed, int waves) {
  ht_rng r;
  ht_rng_seed(&r, seed * 31 + (uint64_t)n);
  machine m = {.n = n};
  m.d[0] = (device){.per_iter = uniform(&r, 1e-9, 2e-9)};
  for (int i = 1; i < n; i++) {
    double speedup = exp(uniform(&r, log(1.5), log(12)));
    m.d[i] = (device){.per_iter = m.d[0].per_iter / speedup, .latency = uniform(&r, 5e-6, 5e-5),
                      .bytes_per_iter = uniform(&r, 0.5, 4), .bandwidth = uniform(&r, 6e9, 25e9)};
    if (waves) m.d[i].wave = 128 * (int64_t)(1 + ht_rng_below(&r, 64));
  }
  return m;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct result {
  double efficiency, imbalance, plan_us;
  int steps, used;
} result;

static int run_case(machine *m, int64_t total, const ht_partition_opts *o, result *res) {
  static double us[PLAN_REPS];
  ht_partition p;
  for (int k = 0; k < PLAN_REPS; k++) {
    if (ht_partition_plan(m->n, 0, total, chunk_time, m, o, &p))
      return fprintf(stderr, "bench_partition: %s\n", ht_last_error()), 1;
    us[k] = p.plan_us;
  }
  qsort(us, PLAN_REPS, sizeof *us, cmp);
  double tmin = INFINITY, tmax = 0;
  res->used = 0;
  for (int i = 0; i < m->n; i++)
    if (p.ub[i] > p.lb[i]) tmin = fmin(tmin, p.time_s[i]), tmax = fmax(tmax, p.time_s[i]), res->used++;
  res->efficiency = ideal_makespan(m, (double)total) / p.makespan_s;
  res->imbalance = (tmax - tmin) / tmax;
  res->steps = p.steps;
  res->plan_us = us[PLAN_REPS / 2];
  return 0;
}

typedef struct summary {
  double eff_sum, eff_min, imb_sum, imb_max, steps_sum, us_max;
  double us[64];
  int n;
} summary;

static void add(summary *s, const result *r) {
  if (!s->n) s->eff_min = INFINITY;
  s->eff_sum += r->efficiency, s->eff_min = fmin(s->eff_min, r->efficiency);
  s->imb_sum += r->imbalance, s->imb_max = fmax(s->imb_max, r->imbalance);
  s->steps_sum += r->steps, s->us_max = fmax(s->us_max, r->plan_us);
  s->us[s->n++] = r->plan_us;
}

static void print_row(const char *family, int64_t total, int n, const char *plan, summary *s) {
  qsort(s->us, (size_t)s->n, sizeof *s->us, cmp);
  printf("| %s | 2^%d | %d | %s | %.4f | %.4f | %.2f%% | %.2f%% | %.1f | %.1f | %.1f |\n", family, (int)log2((double)total), n, plan, s->eff_sum / s->n,
         s->eff_min, 100 * s->imb_sum / s->n, 100 * s->imb_max, s->steps_sum / s->n, s->us[s->n / 2], s->us_max);
}

int main(int argc, char **argv) {
  int seeds = argc > 1 && argv[1][0] != '-' ? atoi(argv[1]) : 5, verbose = argc > 1 && !strcmp(argv[argc - 1], "-v");
  if (seeds < 1 || seeds > 64) return fprintf(stderr, "usage: bench_partition [SEEDS 1-64] [-v]\n"), 2;
  const char *plans[2] = {"Alg. 5.3", "+ refine"};
  printf("| family | iterations | PUs | plan | efficiency (mean) | efficiency (min) | imbalance (mean) | imbalance (max) | steps "
         "(mean) | plan us (median) | plan us (max) |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (int waves = 0; waves < 2; waves++)
    for (int64_t total = 1 << 22; total >= 1 << 16; total >>= 6)
    for (int n = 2; n <= MAX_PU; n++)
      for (int refine = 0; refine < 2; refine++) {
        summary s = {0};
        ht_partition_opts o = {.refine = refine};
        for (int seed = 1; seed <= seeds; seed++) {
          machine m = make_machine(n, (uint64_t)seed, waves);
          result r;
          if (run_case(&m, total, &o, &r)) return 1;
          add(&s, &r);
          if (verbose)
            fprintf(stderr, "N=%lld n=%d waves=%d refine=%d seed=%d: eff %.4f imb %.4f steps %d used %d %.1f us\n", (long long)total, n, waves,
                    refine, seed, r.efficiency, r.imbalance, r.steps, r.used, r.plan_us);
        }
        print_row(waves ? "waves" : "affine", total, n, plans[refine], &s);
      }
  return 0;
}
