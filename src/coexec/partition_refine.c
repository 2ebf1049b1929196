/* An optional last step after Alg. 5.3 (not in 001): the PUs the plan uses finish together at a
 * common time T; for a trial T each PU in order takes the longest chunk (in granules, by
 * bisection) it predicts to finish by T, and T itself is bisected to the lowest value whose
 * chunks cover the range. Alg. 5.3 stops within `converge` (2%) of balance; this closes the rest
 * when times grow with the chunk. The result is kept only when its predicted makespan is lower,
 * so a time that does not grow with the chunk (a sawtooth) never makes a plan worse. */
#include <math.h>
#include <string.h>

#include "coexec/partition_internal.h"

enum { T_BISECTIONS = 24 };

static double chunk_time(const htp_problem *p, const ht_partition *r, int i, int64_t lb, int64_t ub) {
  double t = p->time(p->ctx, i, r->version[i], lb, ub);
  return t > 0 && isfinite(t) ? t : INFINITY;
}

/* The longest chunk from `at` that PU i finishes by t: whole granules, at most to the end. The
 * search gallops from `guess` granules (the PU's chunk at the previous trial time, which differs
 * little as t converges), then bisects the bracket: a few calls per PU instead of log2(range). */
static int64_t longest_by(const htp_problem *p, const ht_partition *r, int i, int64_t at, double t, int64_t guess) {
  int64_t g = p->granularity, lo = 0, hi = (p->ub - at) / g;
  if (hi > 0 && chunk_time(p, r, i, at, p->ub) <= t) return p->ub - at; /* the whole rest, tail included */
  if (guess > hi) guess = hi;
  if (guess > 0) {
    int64_t step = 1;
    if (chunk_time(p, r, i, at, at + guess * g) <= t) {
      lo = guess;
      while (lo + step < hi && chunk_time(p, r, i, at, at + (lo + step) * g) <= t) lo += step, step *= 2;
      if (lo + step < hi) hi = lo + step - 1;
    } else {
      hi = guess - 1;
      while (hi - step > 0 && chunk_time(p, r, i, at, at + (hi - step + 1) * g) > t) hi -= step, step *= 2;
      if (hi - step > 0) lo = hi - step + 1;
    }
  }
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (chunk_time(p, r, i, at, at + mid * g) <= t)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo * g;
}

/* Chunks for finish time t over the used PUs; the last used PU takes what is left. Returns 1
 * when the chunks before it leave it no more than it finishes by t. */
/* size holds each PU's chunk at the previous trial (the search's first guess) and gets the new. */
static int chunks_by(const htp_problem *p, const ht_partition *r, const int *used, double t, int64_t *size) {
  int64_t at = p->lb;
  int last = -1;
  for (int i = 0; i < p->n; i++) {
    if (!used[i]) size[i] = 0;
    else last = i;
  }
  for (int i = 0; i < last; i++) {
    if (!used[i]) continue;
    size[i] = longest_by(p, r, i, at, t, size[i] / p->granularity);
    at += size[i];
  }
  size[last] = p->ub - at;
  return size[last] == 0 || chunk_time(p, r, last, at, p->ub) <= t;
}

static void apply(const htp_problem *p, const int64_t *size, ht_partition *r) {
  ht_partition c = *r;
  int64_t at = p->lb;
  c.makespan_s = 0;
  for (int i = 0; i < p->n; i++) {
    c.lb[i] = at;
    c.ub[i] = at += size[i];
    c.time_s[i] = size[i] ? chunk_time(p, r, i, c.lb[i], c.ub[i]) : 0;
    c.makespan_s = fmax(c.makespan_s, c.time_s[i]);
  }
  if (!(c.makespan_s < r->makespan_s)) return;
  c.energy_j = htp_energy(p, &c);
  *r = c;
}

void htp_refine(const htp_problem *p, ht_partition *r) {
  int used[HT_COEXEC_MAX_PUS] = {0}, n_used = 0;
  double lo = INFINITY, hi = r->makespan_s;
  for (int i = 0; i < p->n; i++)
    if (r->lb[i] < r->ub[i]) used[i] = 1, n_used++, lo = fmin(lo, r->time_s[i]);
  if (n_used < 2) return;
  int64_t size[HT_COEXEC_MAX_PUS], best[HT_COEXEC_MAX_PUS];
  for (int i = 0; i < p->n; i++) best[i] = r->ub[i] - r->lb[i]; /* the plan's chunks: the first guesses */
  if (!chunks_by(p, r, used, hi, best)) return; /* times that do not grow with the chunk */
  memcpy(size, best, sizeof size);
  for (int k = 0; k < T_BISECTIONS && hi - lo > 1e-4 * hi; k++) {
    double mid = 0.5 * (lo + hi);
    if (chunks_by(p, r, used, mid, size)) {
      hi = mid;
      memcpy(best, size, sizeof best);
    } else {
      lo = mid;
      memcpy(size, best, sizeof size); /* guesses from the last trial that covered the range */
    }
  }
  apply(p, best, r);
}
