/* Prediction latency of every registered model: fit on a synthetic dataset of 2000 rows x 30
 * features shaped like the dataset builder's (sizes, work, bytes/flops, tuning parameters, launch
 * geometry, device descriptors, PTX counts), then time ht_model_predict one call at a time over
 * held-out rows and report the median and 90th percentile in ns, with the fit time and the
 * held-out median relative error (a sanity column: a fast model that predicts nonsense is no win).
 *
 * usage: bench_model_latency [rows] [calls] [model...]   (defaults 2000, 20000, all models)
 * The project goal is < 5 us per prediction (docs/prediction.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hetune/model.h"

enum { P = 30 };

static const char *const names[P] = {
  "size:M",      "size:N",       "size:K",          "work",           "log_work",        "bytes",
  "flops",       "intensity",    "param:TX",        "param:TY",       "param:UNROLL",    "param:VEC",
  "launch:work_items", "launch:work_groups", "launch:group_size", "launch:warps", "device:cus", "device:clock_mhz",
  "device:mem_gbps", "ptx:l_mr",   "ptx:l_mw",        "ptx:l_shr",      "ptx:l_shw",       "ptx:l_s",
  "ptx:l_dpu",   "ptx:l_sfu",    "ptx:l_c",         "ptx:dpc",        "ptx:regs",        "ptx:smem",
};

static uint64_t rng_state = 12345;
static double urand(void) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(rng_state >> 11) / 9007199254740992.0;
}
static int pick(int lo_log2, int hi_log2) { return 1 << (lo_log2 + (int)(urand() * (hi_log2 - lo_log2 + 1))); }

/* One GEMM-like row: time = compute / efficiency(params) + memory / bandwidth + launch overhead,
 * a cache step above 4 MiB, 3% log-normal-ish noise. Two devices. */
static void make_row(double *x, double *y) {
  double m = pick(6, 11), n = pick(6, 11), k = pick(6, 11), tx = pick(2, 5), ty = pick(2, 5), unroll = pick(0, 3),
         vec = pick(0, 2);
  int dev = urand() < 0.5;
  double cus = dev ? 80 : 16, clock = dev ? 1400 : 2600, bw = dev ? 900 : 60;
  double work = m * n * k, bytes = 8 * (m * k + k * n + m * n), flops = 2 * work;
  double items = m * n / vec, group = tx * ty, groups = ceil(items / group), warps = ceil(group / 32);
  double *v = (double[P]){m, n, k, work, log(work), bytes, flops, flops / bytes, tx, ty, unroll, vec, items, groups,
                          group, warps, cus, clock, bw, 2 + unroll, 1, 2 * unroll, 2, 2, 0, 0, 10 + 3 * unroll,
                          0.4 + 0.05 * unroll, 20 + 8 * unroll + 4 * vec, 8 * group * (1 + vec)};
  memcpy(x, v, sizeof(double) * P);
  double eff = 0.15 + 0.5 * (1 - 1 / (1 + unroll)) * (group >= 64 ? 1 : group / 64.0) * (vec > 1 ? 1.2 : 1);
  double occupancy = fmin(1, groups / (2 * cus));
  double peak = cus * clock * 1e6 * (dev ? 128 : 16);
  double t = flops / (peak * eff * fmax(occupancy, 0.05)) + bytes / (bw * 1e9) * (bytes > 4 << 20 ? 2.5 : 1) + 5e-6;
  *y = t * exp(0.03 * (2 * urand() - 1) * 1.7);
}

static ht_dataset *make_dataset(int rows) {
  ht_dataset *d;
  if (ht_dataset_create(rows, P, &d)) return NULL;
  for (int j = 0; j < P; j++) d->names[j] = ht_strdup(names[j]);
  for (int i = 0; i < rows; i++) {
    make_row(d->x + (size_t)i * P, &d->y[i]);
    d->work[i] = d->x[(size_t)i * P + 3];
  }
  d->n_groups = 1;
  return d;
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void bench(const char *kind, const ht_dataset *train, const ht_dataset *test, int calls) {
  ht_model *m;
  double t0 = now_ns();
  if (ht_model_fit(kind, train, NULL, 1, &m)) {
    printf("%-10s fit failed: %s\n", kind, ht_last_error());
    return;
  }
  double fit_ms = (now_ns() - t0) / 1e6;
  double *ns = malloc((size_t)calls * sizeof *ns), *err = malloc((size_t)test->n_rows * sizeof *err), sink = 0;
  for (int i = 0; i < test->n_rows; i++) err[i] = fabs(ht_model_predict(m, test->x + (size_t)i * P) / test->y[i] - 1);
  for (int c = 0; c < calls; c++) {
    const double *x = test->x + (size_t)(c % test->n_rows) * P;
    double a = now_ns();
    sink += ht_model_predict(m, x);
    ns[c] = now_ns() - a;
  }
  qsort(ns, (size_t)calls, sizeof *ns, cmp_double);
  qsort(err, (size_t)test->n_rows, sizeof *err, cmp_double);
  printf("%-10s %10.0f %10.0f %10.1f %9.1f%%   (%g)\n", kind, ns[calls / 2], ns[calls * 9 / 10], fit_ms,
         100 * err[test->n_rows / 2], sink > 0 ? 1.0 : 0.0);
  free(ns);
  free(err);
  ht_model_destroy(m);
}

int main(int argc, char **argv) {
  int rows = argc > 1 ? atoi(argv[1]) : 2000, calls = argc > 2 ? atoi(argv[2]) : 20000;
  if (rows < 1 || calls < 1) {
    fprintf(stderr, "usage: bench_model_latency [rows] [calls] [model...]\n");
    return 2;
  }
  ht_dataset *train = make_dataset(rows), *test = make_dataset(1000);
  if (!train || !test) return 1;
  /* the clock's own cost (median of back-to-back reads), included in every timing below */
  double clk[1001];
  for (int i = 0; i < 1001; i++) {
    double a = now_ns();
    clk[i] = now_ns() - a;
  }
  qsort(clk, 1001, sizeof *clk, cmp_double);
  printf("# %d training rows x %d features, %d predict calls per model; one clock read costs ~%.0f ns (included)\n",
         rows, P, calls, clk[500]);
  printf("%-10s %10s %10s %10s %10s\n", "model", "median_ns", "p90_ns", "fit_ms", "med_err");
  if (argc > 3)
    for (int i = 3; i < argc; i++) bench(argv[i], train, test, calls);
  else
    for (int i = 0; i < ht_model_kind_count(); i++) bench(ht_model_kind_at(i)->name, train, test, calls);
  ht_dataset_destroy(train);
  ht_dataset_destroy(test);
  return 0;
}
