/* The race's figures (001 §5.1.4, Table 5.1): per kernel pair and size, the winner, the race's
 * speedup over the slowest variant alone, its overhead over the winner alone (t_race /
 * t_winner_alone - 1, measured side by side in alternating rounds), the stop delay as a share of
 * t_win, and an energy estimate E = sum over participants of P_max x busy time. Prints a table for
 * BENCHMARKS.md. Usage: bench_race [ROUNDS] (default 7).
 *
 * Power: a simulated device's power_w from its file; otherwise the per-device defaults below (the
 * CPU's package power, which PoCL shares here). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/sim.h"
#include "hetune/hetune.h"

#define EX HT_SOURCE_DIR "/examples/"
#define RACE HT_SOURCE_DIR "/tests/data/race/"

enum { MAX_ROUNDS = 64 };

/* P_max of a device without a file saying it: a server CPU socket's package power. */
static const double default_power_w = 120;

typedef struct pair {
  const char *name;
  const char *spec[2], *device[2], *config[2];
  int64_t sizes[2];
} pair;

static const pair pairs[] = {
    {"vadd c / PoCL",
     {EX "vadd/vadd_c.json", EX "vadd/vadd_opencl.json"},
     {"c", "opencl"},
     {"NTHREADS=2,CHUNK=0,UNROLL=4", "WG=64,WPT=4"},
     {1000000, 10000000}},
    {"blackscholes c / PoCL",
     {EX "blackscholes/blackscholes_c.json", EX "blackscholes/blackscholes_opencl.json"},
     {"c", "opencl"},
     {"NTHREADS=2,CHUNK=0,BLOCK=64", "WG=64,VW=4,OPT=1,STRIDED=0"},
     {100000, 1000000}},
    {"spin c 20 ms / realtime sim GPU 50 ms",
     {RACE "spin_c.json", RACE "spin_c.json"},
     {"c", "sim:0"},
     {"US=20000,GARBAGE=0", "US=0,GARBAGE=0"},
     {1000, 0}},
    {"spin c 200 ms / realtime sim GPU 50 ms",
     {RACE "spin_c.json", RACE "spin_c.json"},
     {"c", "sim:0"},
     {"US=200000,GARBAGE=0", "US=0,GARBAGE=0"},
     {1000, 0}},
    {"spin c 200 ms, stopped by signal / realtime sim GPU 50 ms",
     {RACE "spin_signal.json", RACE "spin_c.json"},
     {"c", "sim:0"},
     {"US=200000,GARBAGE=0", "US=0,GARBAGE=0"},
     {1000, 0}},
};

static int fail(const char *what) { return fprintf(stderr, "bench_race: %s: %s\n", what, ht_last_error()), 1; }

static double power_of(const char *device) {
  ht_device *d;
  ht_sim_usage u;
  double p = default_power_w;
  if (!ht_device_open(device, &d)) {
    if ((ht_device_caps(d) & HT_CAP_SIMULATED) && !ht_sim_usage_get(d, &u) && u.power_w > 0) p = u.power_w;
    ht_device_close(d);
  }
  return p;
}

typedef struct samples {
  double alone[2][MAX_ROUNDS], race[MAX_ROUNDS], stop_pct[MAX_ROUNDS], energy[MAX_ROUNDS];
  int wins[2];
} samples;

/* One round: each variant alone, then the race, on the same data. */
static int round_of(ht_computation *c, int64_t n, ht_host_arg *args, const double *power, samples *s, int k) {
  for (int v = 0; v < 2; v++) {
    double t0 = ht_now();
    if (ht_computation_run_variant(c, v, &n, args, NULL)) return fail("alone");
    s->alone[v][k] = ht_now() - t0;
  }
  ht_race_result r;
  double t0 = ht_now();
  if (ht_race_run(c, &n, args, NULL, 0, &r)) return fail("race");
  s->race[k] = ht_now() - t0;
  s->wins[r.winner]++;
  s->stop_pct[k] = 100 * r.stop_delay / r.t_win;
  s->energy[k] = 0;
  for (int i = 0; i < r.n; i++) s->energy[k] += power[r.p[i].variant] * r.p[i].end_s;
  return 0;
}

static int bench_size(const pair *p, ht_computation *c, int64_t n, int rounds, const double *power) {
  ht_host_arg *args;
  static samples s;
  memset(&s, 0, sizeof s);
  if (ht_computation_make_args(c, &n, 1, &args)) return fail("data");
  int rc = round_of(c, n, args, power, &s, 0); /* warm-up: compiles at this size, first touches */
  memset(s.wins, 0, sizeof s.wins);
  for (int k = 0; k < rounds && !rc; k++) rc = round_of(c, n, args, power, &s, k);
  ht_computation_free_args(c, args);
  if (rc) return rc;
  int w = s.wins[1] > s.wins[0];
  double alone[2] = {ht_stat_median(s.alone[0], rounds), ht_stat_median(s.alone[1], rounds)};
  double race = ht_stat_median(s.race, rounds), slowest = alone[0] > alone[1] ? alone[0] : alone[1];
  printf("| %s | %lld | %s (%d/%d) | %.3f / %.3f ms | %.3f ms | %.2fx | %+.1f%% | %.1f%% | %.2f / %.2f J |\n", p->name,
         (long long)n, p->device[w], s.wins[w], rounds, alone[0] * 1e3, alone[1] * 1e3, race * 1e3, slowest / race,
         100 * (race / alone[w] - 1), ht_stat_median(s.stop_pct, rounds), ht_stat_median(s.energy, rounds),
         power[w] * alone[w]);
  return 0;
}

/* The pairs' C configs run two threads; one where this process may use one CPU (pinned, a
 * container's quota, a one-core machine), whose c device allows no more. */
static const char *fit_threads(const char *device, const char *config, char *buf, size_t len) {
  ht_device *dev;
  if (strcmp(device, "c") || strncmp(config, "NTHREADS=2,", 11) || ht_device_open("c", &dev)) return config;
  int one = ht_device_info_get(dev)->max_threads < 2;
  ht_device_close(dev);
  if (!one) return config;
  snprintf(buf, len, "NTHREADS=1%s", config + 10);
  return buf;
}

static int bench_pair(const pair *p, ht_spec **specs, int rounds) {
  ht_computation *c;
  char config[128];
  double power[2] = {power_of(p->device[0]), power_of(p->device[1])};
  for (int v = 0; v < 2; v++)
    if (ht_spec_load(p->spec[v], &specs[v])) return fail(p->spec[v]);
  if (ht_computation_create("bench_race", NULL, &c)) return fail("computation");
  int rc = 0;
  for (int v = 0; v < 2 && !rc; v++)
    if (ht_computation_add_variant(c, specs[v], p->device[v], fit_threads(p->device[v], p->config[v], config, sizeof config),
                                   NULL))
      rc = fail(p->name);
  if (!rc && ht_computation_finish(c)) rc = fail(p->name);
  for (int i = 0; i < 2 && !rc && p->sizes[i]; i++) rc = bench_size(p, c, p->sizes[i], rounds, power);
  ht_computation_destroy(c);
  return rc;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 7;
  if (rounds < 1 || rounds > MAX_ROUNDS) return fprintf(stderr, "usage: bench_race [ROUNDS 1..%d]\n", MAX_ROUNDS), 2;
  setenv("HETUNE_SIM", RACE "sim.json", 1);
  printf("| pair | N | winner (races won) | alone: variant 0 / 1 | race | speedup over slowest | overhead vs "
         "winner alone | stop delay / t_win | energy: race / winner alone |\n|---|---|---|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
    ht_device *d;
    if (!strcmp(pairs[i].device[1], "opencl") && ht_device_open("opencl", &d)) {
      printf("| %s | - | no OpenCL device here | | | | | | |\n", pairs[i].name);
      continue;
    }
    if (!strcmp(pairs[i].device[1], "opencl")) ht_device_close(d);
    ht_spec *specs[2] = {NULL, NULL};
    int rc = bench_pair(&pairs[i], specs, rounds);
    ht_spec_destroy(specs[0]);
    ht_spec_destroy(specs[1]);
    if (rc) return rc;
  }
  return 0;
}
