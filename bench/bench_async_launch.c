/* What an asynchronous launch costs on the c device beside a synchronous one, for a small OpenMP
 * kernel on every processor (a race's and a split call's launches are asynchronous). Each launch
 * adds 1.0 to n floats; the result is checked. Prints a table for BENCHMARKS.md (medians).
 * Usage: bench_async_launch [N] [LAUNCHES]  (default 40000 elements, 2000 launches). */
#include <stdio.h>
#include <stdlib.h>

#include "hetune/hetune.h"

/* OpenMP's default team: one thread per processor */
static const char *src =
    "void add_one(float *x, int n) {\n"
    "#pragma omp parallel for\n"
    "  for (int i = 0; i < n; i++) x[i] += 1.0f;\n"
    "}\n";

enum { MAX_LAUNCHES = 100000 };

static double samples[MAX_LAUNCHES];

/* Seconds per launch of each, from the launch until the kernel is known to have returned. */
static int time_launches(ht_device *dev, ht_program *p, const ht_launch *l, int launches, int async, double *median) {
  for (int i = 0; i < launches; i++) {
    double t0 = ht_now();
    ht_event *ev = NULL;
    ht_status s = async ? ht_device_launch_async(dev, p, l, &ev) : ht_device_launch(dev, p, l, NULL);
    if (!s && async) s = ht_device_wait(dev, ev, NULL);
    if (s) return fprintf(stderr, "launch: %s\n", ht_last_error()), 1;
    samples[i] = ht_now() - t0;
  }
  *median = ht_stat_median(samples, launches);
  return 0;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 40000, launches = argc > 2 ? atoi(argv[2]) : 2000;
  if (n < 1 || launches < 1 || launches > MAX_LAUNCHES)
    return fprintf(stderr, "usage: bench_async_launch [N >= 1] [LAUNCHES 1..%d]\n", MAX_LAUNCHES), 2;
  ht_device *dev = NULL;
  if (ht_device_open("c", &dev)) return fprintf(stderr, "c: %s\n", ht_last_error()), 1;
  ht_source s = {HT_LANG_C, src, "bench_async_launch", "add_one", "-O2 -fopenmp"};
  ht_program *p = NULL;
  ht_compile_info info = {0};
  ht_buffer *x = NULL;
  if (ht_device_compile(dev, &s, NULL, &p, &info) || ht_device_buffer_new(dev, sizeof(float) * (size_t)n, &x))
    return fprintf(stderr, "c: %s\n%s\n", ht_last_error(), info.log ? info.log : ""), 1;
  free(info.log);
  float *zeros = calloc((size_t)n, sizeof *zeros);
  if (ht_device_buffer_write(dev, x, zeros, sizeof(float) * (size_t)n, NULL)) return fprintf(stderr, "c: %s\n", ht_last_error()), 1;
  ht_arg args[] = {{.is_buffer = 1, .buf = x, .type = HT_DTYPE_F32}, {.type = HT_DTYPE_I32, .value = ht_int(n)}};
  ht_launch l = {.dims = 1, .global = {1}, .local = {1}, .n_args = 2, .args = args};
  double sync_s = 0, async_s = 0;
  int rc = time_launches(dev, p, &l, launches, 0, &sync_s) || time_launches(dev, p, &l, launches, 1, &async_s);
  if (!rc && ht_device_buffer_read(dev, x, zeros, sizeof(float) * (size_t)n, NULL)) rc = fprintf(stderr, "c: %s\n", ht_last_error());
  for (int i = 0; i < n && !rc; i++)
    if (zeros[i] != (float)(2 * launches)) rc = fprintf(stderr, "x[%d] = %g, expected %d\n", i, zeros[i], 2 * launches);
  if (!rc) {
    printf("| elements | launches | synchronous us | asynchronous us | async - sync us |\n|---|---|---|---|---|\n");
    printf("| %d | %d | %.1f | %.1f | %.1f |\n", n, launches, sync_s * 1e6, async_s * 1e6, (async_s - sync_s) * 1e6);
  }
  free(zeros);
  ht_device_buffer_free(dev, x);
  ht_device_program_free(dev, p);
  ht_device_close(dev);
  return rc;
}
