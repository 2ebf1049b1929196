/* The framework's own cost: per timed repetition (backend launch path, empty kernel) and per
 * evaluation (the whole tuning loop around a 1 ms kernel: worker round trip, verification, data
 * upload, statistics, the store). Prints a table for BENCHMARKS.md. Usage: bench_overhead [DB]. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hetune/hetune.h"

#define DATA HT_SOURCE_DIR "/bench/data/"
#define REPS 2000

/* Host wall time per launch minus the time the backend reports for the kernel itself. */
static int per_rep(const char *device, ht_language lang, const char *file) {
  ht_device *dev;
  if (ht_device_open(device, &dev)) return fprintf(stderr, "%s\n", ht_last_error()), 1;
  char *text;
  if (ht_read_file(file, &text, NULL)) return fprintf(stderr, "%s\n", ht_last_error()), 1;
  ht_source src = {lang, text, file, "empty", NULL};
  ht_defines defs = {0, NULL, NULL};
  ht_program *prog;
  ht_compile_info info = {0};
  ht_buffer *buf;
  if (ht_device_compile(dev, &src, &defs, &prog, &info) || ht_device_buffer_new(dev, 64, &buf))
    return fprintf(stderr, "%s\n", ht_last_error()), 1;
  ht_arg arg = {.is_buffer = 1, .buf = buf, .type = HT_DTYPE_F32};
  ht_launch l = {.dims = 1, .global = {1, 1, 1}, .local = {1, 1, 1}, .n_args = 1, .args = &arg};
  static double wall[REPS], kern[REPS], over[REPS];
  for (int i = 0; i < REPS; i++) {
    double t0 = ht_now();
    ht_device_launch(dev, prog, &l, &kern[i]);
    wall[i] = ht_now() - t0;
    over[i] = wall[i] - kern[i];
  }
  printf("| %-10s | %8.2f | %8.2f | %8.2f |\n", device, ht_stat_median(wall, REPS) * 1e6,
         ht_stat_median(kern, REPS) * 1e6, ht_stat_median(over, REPS) * 1e6);
  ht_device_buffer_free(dev, buf);
  ht_device_program_free(dev, prog);
  free(info.log);
  free(text);
  ht_device_close(dev);
  return 0;
}

typedef struct sums {
  double compile, launch, framework, wall;
  int n, samples;
  double fw[64];
} sums;

static int add_eval(const ht_eval_record *rec, void *ctx) {
  sums *s = ctx;
  const ht_result *r = &rec->result;
  s->compile += r->compile_s;
  s->framework += r->framework_s;
  s->wall += r->wall_s;
  s->launch += r->wall_s - r->framework_s - r->compile_s;
  s->samples += r->n_samples;
  if (s->n < 64) s->fw[s->n] = r->framework_s;
  s->n++;
  return 0;
}

static int tune_once(const ht_spec *spec, const char *db, int isolate, ht_tune_summary *sum, double *total) {
  ht_store *st;
  if (ht_store_open(db, &st)) return fprintf(stderr, "%s\n", ht_last_error()), 1;
  ht_tune_options to;
  ht_tune_options_default(&to);
  to.strategy = "brute_force";
  ht_runner_options ro;
  ht_runner_options_default(&ro);
  ro.isolate = isolate;
  ro.min_runs = ro.max_runs = 3; /* fixed: on a noisy machine adaptive run counts would change the share */
  double t0 = ht_now();
  ht_status s = ht_tune(spec, "c", st, &to, &ro, sum);
  *total = ht_now() - t0;
  ht_store_close(st);
  if (s) fprintf(stderr, "%s\n", ht_last_error());
  return s != HT_OK;
}

/* Tunes 40 configs of a 1 ms kernel into a fresh database, the compile cache warmed by a first
 * pass: the framework's share is the tuning time that is neither kernel runs nor compilation. */
static int per_eval(const char *db, int isolate, int spin_us) {
  ht_spec *spec;
  char size[64];
  snprintf(size, sizeof size, "SPIN_US=%d", spin_us);
  if (ht_spec_load(DATA "spin_c.json", &spec) || ht_spec_set_size(spec, size))
    return fprintf(stderr, "%s\n", ht_last_error()), 1;
  static ht_tune_summary sum;
  double total;
  unlink(db);
  if (tune_once(spec, db, isolate, &sum, &total)) return 1;
  unlink(db);
  if (tune_once(spec, db, isolate, &sum, &total)) return 1;
  ht_store *st;
  sums all = {0};
  if (ht_store_open_readonly(db, &st) || ht_store_each_eval(st, NULL, add_eval, &all))
    return fprintf(stderr, "%s\n", ht_last_error()), 1;
  ht_store_close(st);
  double overhead = total - all.launch - all.compile;
  printf("| %6.1f | %-11s | %5d | %7.0f | %8.3f | %8.3f | %8.3f | %16.3f | %11.3f | %6.2f%% |\n", spin_us / 1e3, isolate ? "worker" : "in-process",
         all.n, (double)all.samples / all.n, total, all.launch, all.compile, overhead * 1e3 / all.n,
         ht_stat_median(all.fw, all.n < 64 ? all.n : 64) * 1e3, 100 * overhead / total);
  ht_spec_destroy(spec);
  return 0;
}

/* The per-evaluation rows first: as in `hetune tune` of a C kernel, no OpenCL platform is loaded
 * yet. Once PoCL is (the per-repetition rows), its threads and libraries stay in the process and
 * make every later dlopen, dlclose and thread listing slower. */
int main(int argc, char **argv) {
  char db[256];
  snprintf(db, sizeof db, "%s", argc > 1 ? argv[1] : "/tmp/hetune-bench-overhead.db");
  unlink(db);
  printf("Per evaluation (40 configs of a C kernel of known duration, compile cache warm; times in seconds)\n\n");
  printf("| kernel ms | runner      | evals | runs/eval | total s | kernel s | compile s | overhead/eval ms | in-eval ms | share |\n"
         "|---|---|---|---|---|---|---|---|---|---|\n");
  static const int spins[] = {1000, 10000};
  for (int i = 0; i < 2; i++)
    for (int isolate = 1; isolate >= 0; isolate--)
      if (per_eval(db, isolate, spins[i])) return 1;
  unlink(db);
  printf("\nPer timed repetition (empty kernel, %d launches, medians in microseconds)\n\n", REPS);
  printf("| device     | wall/run | kernel   | overhead |\n|---|---|---|---|\n");
  if (per_rep("c", HT_LANG_C, DATA "empty.c") || per_rep("opencl", HT_LANG_OPENCL, DATA "empty.cl")) return 1;
  return 0;
}
