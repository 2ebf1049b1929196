/* Tick placement and labels for the plots: steps a reader can count in (1, 2, 5 x 10^k), decades
 * on log axes. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/plot.h"

enum { TARGET_TICKS = 6 };

/* The step of 1, 2 or 5 x 10^k nearest span / target (about target ticks, 4 to 10). */
static double nice_step(double span, int target) {
  double raw = span / target, mag = pow(10, floor(log10(raw))), f = raw / mag;
  return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
}

/* A range of one value (or none) gets some width, so the plot has an axis. */
static void widen_empty(double *lo, double *hi, int log) {
  if (!isfinite(*lo) || !isfinite(*hi)) *lo = *hi = log ? 1 : 0;
  if (*hi > *lo) return;
  if (log) {
    *lo /= 2;
    *hi *= 2;
  } else {
    double d = *lo ? fabs(*lo) / 2 : 1;
    *lo -= d;
    *hi += d;
  }
}

/* The largest of 1, 2, 5 x 10^k at or below v (up: the smallest at or above). */
static double snap125(double v, int up) {
  static const double m[] = {1, 2, 5, 10};
  double d = pow(10, floor(log10(v)));
  int i = up ? 0 : 3;
  if (up)
    while (i < 3 && m[i] * d < v * (1 - 1e-9)) i++;
  else
    while (i > 0 && m[i] * d > v * (1 + 1e-9)) i--;
  return m[i] * d;
}

void plot_nice_range(double *lo, double *hi, int log) {
  widen_empty(lo, hi, log);
  if (log) { /* 1, 2 or 5 x 10^k: whole decades would leave up to 90% of a decade empty at each end */
    *lo = snap125(*lo, 0);
    *hi = snap125(*hi, 1);
    return;
  }
  double step = nice_step(*hi - *lo, TARGET_TICKS);
  *lo = floor(*lo / step + 1e-9) * step;
  *hi = ceil(*hi / step - 1e-9) * step;
}

static int linear_ticks(double lo, double hi, double *t, int cap) {
  double step = nice_step(hi - lo, TARGET_TICKS), eps = step * 1e-6;
  int n = 0;
  for (double k = ceil((lo - eps) / step); n < cap && k * step <= hi + eps; k++) {
    double v = k * step;
    t[n++] = fabs(v) < eps ? 0 : v; /* no "-0" */
  }
  return n;
}

int plot_ticks(double lo, double hi, int log, double *t, int cap) {
  if (!(hi > lo) || cap <= 0) return 0;
  if (!log) return linear_ticks(lo, hi, t, cap);
  int a = (int)ceil(log10(lo) - 1e-9), b = (int)floor(log10(hi) + 1e-9), every = b - a > 9 ? 2 : 1, n = 0;
  if (b - a >= 2) { /* three decades or more: 2 and 5 between them would crowd the axis */
    for (int k = a; k <= b && n < cap; k += every) t[n++] = pow(10, k);
    return n;
  }
  static const double m[] = {1, 2, 5};
  for (int k = a - 1; k <= b && n < cap; k++)
    for (int i = 0; i < 3 && n < cap; i++) {
      double v = m[i] * pow(10, k);
      if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) t[n++] = v;
    }
  return n;
}

int plot_minor_ticks(double lo, double hi, double *t, int cap) {
  int n = 0;
  if (!(hi > lo) || !(lo > 0)) return 0;
  for (int k = (int)floor(log10(lo)); k <= (int)ceil(log10(hi)) && n < cap; k++)
    for (int m = 2; m <= 9 && n < cap; m++) {
      double v = m * pow(10, k);
      if (v > lo * (1 + 1e-9) && v < hi * (1 - 1e-9)) t[n++] = v;
    }
  return n;
}

/* "1e-05" -> "1e-5", "1e+06" -> "1e6". */
static void short_exponent(char *s) {
  char *e = strchr(s, 'e');
  if (!e) return;
  char *d = e + 1, *w = e + 1;
  if (*d == '+') d++;
  else if (*d == '-') *w++ = *d++;
  while (*d == '0' && d[1]) d++;
  memmove(w, d, strlen(d) + 1);
}

void plot_tick_label(double v, const double *t, int n, int log, char *buf, size_t cap) {
  if (v == 0) {
    snprintf(buf, cap, "0");
    return;
  }
  double a = fabs(v);
  if (log || n < 2) { /* each label on its own: 1, 20, 0.005, 1e6 */
    if (a >= 1e-3 && a < 1e5) snprintf(buf, cap, "%.*f", a >= 1 ? 0 : (int)ceil(-log10(a) - 1e-9), v);
    else snprintf(buf, cap, "%.0e", v);
    short_exponent(buf);
    return;
  }
  double step = fabs(t[1] - t[0]);
  if (fmax(fabs(t[0]), fabs(t[n - 1])) >= 1e6 || step < 1e-4) {
    snprintf(buf, cap, "%.2g", v);
    short_exponent(buf);
    return;
  }
  int digits = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
  snprintf(buf, cap, "%.*f", digits, v);
}

double plot_time_unit(double max_s, const char **unit) {
  if (max_s >= 1) return *unit = "s", 1;
  if (max_s >= 1e-3) return *unit = "ms", 1e3;
  if (max_s >= 1e-6) return *unit = "µs", 1e6;
  return *unit = "ns", 1e9;
}
