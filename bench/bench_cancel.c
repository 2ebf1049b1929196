/* The stop delay of cooperative cancellation: the time from ht_device_cancel to the return of
 * ht_device_wait, for a kernel that checks its stop flag at every iteration (spin) and one that
 * checks it every 1024 terms of a series (the example of docs/runtime.md), on c, OpenCL and CUDA
 * where present. Each launch runs for a moment first so the kernel is surely running. Prints a
 * table (medians of the runs) for BENCHMARKS.md. Usage: bench_cancel [RUNS] (default 30). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hetune/hetune.h"

/* spin(stop, out, bound) and series(stop, out, terms); bound and terms end a run whose cancel
 * failed within seconds to a minute, so the bench cannot hang. */
static const char *c_src =
    "#include <stdint.h>\n"
    "void spin(volatile int32_t *stop, float *out, int64_t bound) {\n"
    "  int64_t k = 0;\n"
    "  while (k < bound && !*stop) k++;\n"
    "  out[0] = (float)k;\n"
    "}\n"
    "void series(volatile int32_t *stop, float *out, int64_t terms) {\n"
    "  float sum = 0;\n"
    "  for (int64_t k = 0; k < terms; k++) {\n"
    "    if ((k & 1023) == 0 && *stop) break;\n"
    "    sum += (k & 1 ? -4.0f : 4.0f) / (float)(2 * k + 1);\n"
    "  }\n"
    "  out[0] = sum;\n"
    "}\n";

static const char *cl_src =
    "__kernel void spin(__global volatile int *stop, __global float *out, long bound) {\n"
    "  long k = 0;\n"
    "  while (k < bound && !*stop) k++;\n"
    "  out[get_global_id(0)] = (float)k;\n"
    "}\n"
    "__kernel void series(__global volatile int *stop, __global float *out, long terms) {\n"
    "  float sum = 0;\n"
    "  for (long k = 0; k < terms; k++) {\n"
    "    if ((k & 1023) == 0 && *stop) break;\n"
    "    sum += (k & 1 ? -4.0f : 4.0f) / (float)(2 * k + 1);\n"
    "  }\n"
    "  out[get_global_id(0)] = sum;\n"
    "}\n";

static const char *cuda_src =
    "extern \"C\" __global__ void spin(volatile int *stop, float *out, long long bound) {\n"
    "  long long k = 0;\n"
    "  while (k < bound && !*stop) k++;\n"
    "  out[blockIdx.x * blockDim.x + threadIdx.x] = (float)k;\n"
    "}\n"
    "extern \"C\" __global__ void series(volatile int *stop, float *out, long long terms) {\n"
    "  float sum = 0;\n"
    "  for (long long k = 0; k < terms; k++) {\n"
    "    if ((k & 1023) == 0 && *stop) break;\n"
    "    sum += (k & 1 ? -4.0f : 4.0f) / (float)(2 * k + 1);\n"
    "  }\n"
    "  out[blockIdx.x * blockDim.x + threadIdx.x] = sum;\n"
    "}\n";

static const struct target {
  const char *device;
  ht_language lang;
  const char **src;
  int64_t spin_bound, series_terms;
} targets[] = {
    {"c", HT_LANG_C, &c_src, 20000000000, 20000000000},
    {"opencl", HT_LANG_OPENCL, &cl_src, 10000000000, 20000000000},
    {"cuda", HT_LANG_CUDA, &cuda_src, 50000000, 100000000000},
};

enum { MAX_RUNS = 1000 };

/* One launch, cancelled after it has run for a moment: seconds from cancel to wait's return. */
static int stop_delay(ht_device *dev, ht_program *p, const ht_launch *l, double *delay) {
  ht_event *ev = NULL;
  if (ht_device_launch_async(dev, p, l, &ev)) return 1;
  usleep(20000);
  if (ht_device_poll(dev, ev) != 0) fprintf(stderr, "%s: the kernel finished before cancel\n", ht_device_info_get(dev)->id);
  double t0 = ht_now();
  ht_status s = ht_device_cancel(dev, ev);
  if (ht_device_wait(dev, ev, NULL) || s) return 1;
  *delay = ht_now() - t0;
  return 0;
}

static int bench_kernel(ht_device *dev, const struct target *t, const char *entry, int groups, int runs) {
  ht_source src = {t->lang, *t->src, "bench_cancel", entry, NULL};
  ht_program *p = NULL;
  ht_compile_info info = {0};
  ht_buffer *out = NULL;
  if (ht_device_compile(dev, &src, NULL, &p, &info) || ht_device_buffer_new(dev, sizeof(float) * (size_t)groups, &out))
    return fprintf(stderr, "%s: %s\n", ht_device_info_get(dev)->id, ht_last_error()), 1;
  free(info.log);
  int64_t bound = strcmp(entry, "spin") == 0 ? t->spin_bound : t->series_terms;
  ht_arg args[] = {{.is_stop_flag = 1, .type = HT_DTYPE_I32},
                   {.is_buffer = 1, .buf = out, .type = HT_DTYPE_F32},
                   {.type = HT_DTYPE_I64, .value = ht_int(bound)}};
  ht_launch l = {.dims = 1, .global = {(size_t)groups}, .local = {1}, .n_args = 3, .args = args};
  static double delay[MAX_RUNS];
  int rc = 0;
  for (int i = 0; i < runs && !rc; i++) rc = stop_delay(dev, p, &l, &delay[i]);
  if (rc) fprintf(stderr, "%s %s: %s\n", ht_device_info_get(dev)->id, entry, ht_last_error());
  else {
    double lo = delay[0], hi = delay[0];
    for (int i = 1; i < runs; i++) lo = delay[i] < lo ? delay[i] : lo, hi = delay[i] > hi ? delay[i] : hi;
    printf("| %-10s | %-6s | %6d | %5d | %10.1f | %8.1f | %8.1f |\n", ht_device_info_get(dev)->id, entry, groups, runs,
           ht_stat_median(delay, runs) * 1e6, lo * 1e6, hi * 1e6);
  }
  ht_device_buffer_free(dev, out);
  ht_device_program_free(dev, p);
  return rc;
}

int main(int argc, char **argv) {
  int runs = argc > 1 ? atoi(argv[1]) : 30;
  if (runs < 1 || runs > MAX_RUNS) return fprintf(stderr, "usage: bench_cancel [RUNS 1..%d]\n", MAX_RUNS), 2;
  printf("| device     | kernel | groups |  runs | median us  |   min us |   max us |\n");
  printf("|------------|--------|--------|-------|------------|----------|----------|\n");
  int rc = 0;
  for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
    ht_device *dev = NULL;
    if (ht_device_open(targets[i].device, &dev)) {
      fprintf(stderr, "skipping %s: %s\n", targets[i].device, ht_last_error());
      continue;
    }
    /* c runs the function once; elsewhere one work-group per compute unit, all spinning */
    int groups = targets[i].lang == HT_LANG_C ? 1 : ht_device_info_get(dev)->compute_units > 0 ? ht_device_info_get(dev)->compute_units : 1;
    for (const char **e = (const char *[]){"spin", "series", NULL}; *e; e++)
      rc |= bench_kernel(dev, &targets[i], *e, groups, runs);
    fprintf(stderr, "%s: %s\n", ht_device_info_get(dev)->id, ht_device_info_get(dev)->name);
    ht_device_close(dev);
  }
  return rc;
}
