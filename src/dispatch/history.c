/* A variant's measured times by call size: 001's ranking tables, interpolated in log-log between
 * measured sizes, so that a size never run is judged from its neighbours. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch/dispatch_internal.h"

void htd_history_free(htd_history *h) {
  free(h->pts);
  memset(h, 0, sizeof *h);
}

htd_point *htd_history_find(const htd_history *h, uint64_t bucket) {
  for (int i = 0; i < h->n; i++)
    if (h->pts[i].bucket == bucket) return &h->pts[i];
  return NULL;
}

static void update_median(htd_point *p) {
  const double *v = p->sorted;
  p->median = p->n % 2 ? v[p->n / 2] : 0.5 * (v[p->n / 2 - 1] + v[p->n / 2]);
}

void htd_point_resort(htd_point *p) {
  for (int i = 0; i < p->n; i++) {
    double x = p->samples[i];
    int k = i;
    for (; k > 0 && p->sorted[k - 1] > x; k--) p->sorted[k] = p->sorted[k - 1];
    p->sorted[k] = x;
  }
  if (p->n) update_median(p);
}

static htd_point *point_insert(htd_history *h, double work, uint64_t bucket) {
  if (h->n == h->cap) {
    int cap = h->cap ? 2 * h->cap : 8;
    htd_point *p = realloc(h->pts, sizeof *p * (size_t)cap);
    if (!p) return NULL;
    h->pts = p;
    h->cap = cap;
  }
  int at = h->n;
  while (at > 0 && h->pts[at - 1].work > work) at--;
  memmove(&h->pts[at + 1], &h->pts[at], sizeof *h->pts * (size_t)(h->n - at));
  h->n++;
  htd_point *p = &h->pts[at];
  memset(p, 0, sizeof *p);
  p->work = work;
  p->bucket = bucket;
  return p;
}

/* The sorted copy follows the ring: the sample the new one replaces leaves it, the new one goes in
 * its place, both by moving at most a window of values, so every call has the exact median without
 * a sort (this runs on the path of every dispatched call). */
void htd_point_add(htd_point *p, double seconds, int window) {
  int n = p->n;
  if (n == window) { /* the oldest sample leaves */
    double old = p->samples[p->next];
    int at = 0;
    while (at < n - 1 && p->sorted[at] != old) at++;
    memmove(&p->sorted[at], &p->sorted[at + 1], sizeof p->sorted[0] * (size_t)(n - 1 - at));
    n--;
  }
  int k = n;
  for (; k > 0 && p->sorted[k - 1] > seconds; k--) p->sorted[k] = p->sorted[k - 1];
  p->sorted[k] = seconds;
  p->samples[p->next] = seconds;
  p->next = (p->next + 1) % window;
  p->n = n + 1;
  update_median(p);
}

void htd_point_restart(htd_point *p, double s, int window) {
  p->samples[0] = s;
  p->n = 1;
  p->next = 1 % window;
  htd_point_resort(p);
}

int htd_point_untrusted(const htd_point *p) {
  return p && !p->from_store && !p->censored && p->n < HTD_TRUSTED_CALLS;
}

void htd_point_raise(htd_point *p, double bound) {
  for (int i = 0; i < p->n; i++)
    if (p->samples[i] < bound) p->samples[i] = bound;
  htd_point_resort(p);
}

htd_point *htd_history_add(htd_history *h, double work, uint64_t bucket, const int64_t *rep, double seconds, int window,
                           int from_store) {
  if (!(seconds > 0) || !isfinite(seconds)) return NULL;
  htd_point *p = htd_history_find(h, bucket);
  if (p && (p->from_store || p->censored) && !from_store) { /* calls measured here replace tuning runs */
    p->n = p->next = 0;                                       /* and bounds */
    p->censored = 0;
  }
  if (p && !p->from_store && from_store) return p;         /* ...and are not replaced by them */
  if (!p && !(p = point_insert(h, work, bucket))) return NULL;
  memcpy(p->rep, rep, sizeof p->rep);
  p->from_store = from_store;
  htd_point_add(p, seconds, window);
  return p;
}

void htd_history_scale(htd_history *h, double f) {
  for (int i = 0; i < h->n; i++) {
    for (int k = 0; k < h->pts[i].n; k++) h->pts[i].samples[k] *= f, h->pts[i].sorted[k] *= f;
    h->pts[i].median *= f;
  }
}

/* The spread of a point's samples around its median, as factors (lo <= 1 <= hi). */
static void spread(const htd_point *p, double *lo, double *hi) {
  double mn = ht_stat_min(p->samples, p->n), mx = ht_stat_max(p->samples, p->n);
  *lo = p->median > 0 ? mn / p->median : 1;
  *hi = p->median > 0 ? mx / p->median : 1;
}

/* log-log slope between two points, for sizes beyond every measured one: kept to what times do
 * there, never falling with more work and at most a little worse than linear, so that two close
 * noisy points do not send the estimate far off. */
static double slope(const htd_point *a, const htd_point *b) {
  double dw = log(b->work) - log(a->work);
  double s = dw > 0 ? (log(b->median) - log(a->median)) / dw : 1;
  return s < 0 ? 0 : s > 1.5 ? 1.5 : s;
}

double htd_history_estimate(const htd_history *h, double work, uint64_t bucket, int *exact, double *lo, double *hi) {
  *exact = 0;
  *lo = *hi = NAN;
  if (!h->n) return NAN;
  const htd_point *p = htd_history_find(h, bucket);
  double flo, fhi, widen;
  if (p) {
    *exact = 1;
    spread(p, &flo, &fhi);
    *lo = p->median * flo;
    *hi = p->median * fhi;
    return p->median;
  }
  int i = 0;
  while (i < h->n && h->pts[i].work <= work) i++;
  const htd_point *a, *b; /* the segment whose line gives the estimate */
  double t;
  if (h->n == 1) {
    a = b = &h->pts[0];
    t = a->median * work / a->work; /* one point: time in proportion to work */
    widen = 1.5;
  } else if (i > 0 && i < h->n) {
    /* between two measured sizes (a->work <= work < b->work): the line through both, whatever its
     * slope, so the estimate stays between their times. Clamped as beyond them, a steep rise to b
     * (a cache falling short, a variant slowed by the machine) would be ignored and the size
     * judged from a alone. */
    a = &h->pts[i - 1];
    b = a + 1;
    t = a->median * pow(work / a->work, log(b->median / a->median) / log(b->work / a->work));
    widen = 1.1;
  } else {
    a = &h->pts[i == 0 ? 0 : h->n - 2];
    b = a + 1;
    const htd_point *from = i == 0 ? a : b; /* the nearest measured size */
    t = from->median * pow(work / from->work, slope(a, b));
    widen = 1.25; /* beyond the measured sizes the band widens */
  }
  double alo, ahi, blo, bhi;
  spread(a, &alo, &ahi);
  spread(b, &blo, &bhi);
  *lo = t * fmin(alo, blo) / widen;
  *hi = t * fmax(ahi, bhi) * widen;
  return t;
}
