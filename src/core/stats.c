/* Clocks and sample statistics. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hetune/core.h"

int64_t ht_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

double ht_now(void) { return (double)ht_now_ns() * 1e-9; }

double ht_wall_time(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int ht_stat_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double ht_stat_median(const double *x, int n) {
  if (n <= 0) return NAN;
  double small[64], *tmp = n <= 64 ? small : malloc(sizeof(double) * (size_t)n);
  if (!tmp) return NAN;
  memcpy(tmp, x, sizeof(double) * (size_t)n);
  qsort(tmp, (size_t)n, sizeof(double), ht_stat_cmp_double);
  double m = n % 2 ? tmp[n / 2] : 0.5 * (tmp[n / 2 - 1] + tmp[n / 2]);
  if (tmp != small) free(tmp);
  return m;
}

double ht_stat_mean(const double *x, int n) {
  if (n <= 0) return NAN;
  double s = 0;
  for (int i = 0; i < n; i++) s += x[i];
  return s / n;
}

double ht_stat_stddev(const double *x, int n) {
  if (n < 2) return 0;
  double m = ht_stat_mean(x, n), s = 0;
  for (int i = 0; i < n; i++) s += (x[i] - m) * (x[i] - m);
  return sqrt(s / (n - 1));
}

double ht_stat_min(const double *x, int n) {
  double m = n > 0 ? x[0] : NAN;
  for (int i = 1; i < n; i++) m = x[i] < m ? x[i] : m;
  return m;
}

double ht_stat_max(const double *x, int n) {
  double m = n > 0 ? x[0] : NAN;
  for (int i = 1; i < n; i++) m = x[i] > m ? x[i] : m;
  return m;
}
