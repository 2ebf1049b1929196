/* Scoring strategies on recorded spaces (Willemsen et al., FGCS 2024).
 *
 * Baseline: random search without replacement over the n recorded configs (failures count as the
 * worst successful time, here and for the strategies; before a first success a run's best is that
 * worst time too). With the times sorted v_1 <= ... <= v_n, the best of k draws has expected rank
 * (n+1)/(k+1), and expected time
 *   E_k = v_1 + sum_{i=1}^{n-1} (v_{i+1} - v_i) P(all k draws rank > i),
 *   P(all k draws rank > i) = C(n-i, k) / C(n, k).
 * The methodology works in rank space (its calculated baseline is the time at the expected rank,
 * its strategy curves are fitted to ranks), which is the default here; HT_AGGREGATE_VALUE uses
 * E_k and averages P(t) per run instead. k draws take k times the mean recorded cost.
 * Budget: target(p) = f_opt + (f_median - f_opt)(1 - p); the range runs from the time the baseline
 * is expected to reach target(p_start) to the time it reaches target(p_cutoff).
 * P(t) = (f(t) - f_random(t)) / (f_opt - f_random(t)) at evenly spaced points t of that range;
 * the score is its mean. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hetune/replay.h"
#include "tune/recorded_internal.h"

#define BOOTSTRAP 200 /* resamples of the seeds for the rank-space interval */

void ht_score_options_default(ht_score_options *o) {
  memset(o, 0, sizeof *o);
  o->seeds = 20;
  o->first_seed = 1;
  o->p_cutoff = 0.96;
  o->p_start = 0.5;
  o->points = 100;
  o->charge_strategy_time = 1;
  o->aggregate = HT_AGGREGATE_RANK;
}

void ht_baseline_free(ht_baseline *b) {
  free(b->dist);
  free(b->expected_best);
  memset(b, 0, sizeof *b);
}

void ht_score_free(ht_score *s) {
  free(s->curve);
  free(s->curve_lo);
  free(s->curve_hi);
  memset(s, 0, sizeof *s);
}

/* E_k for k = 0..n over values v[0..n) sorted ascending. P(rank > i) for fixed k follows the
 * recurrence P_{i+1} = P_i (n - i - k) / (n - i), so each k costs O(n). */
static void expected_best(const double *v, int n, double worst, double *e) {
  e[0] = worst;
  for (int k = 1; k <= n; k++) {
    double sum = v[0], p = 1.0;
    for (int i = 0; i + 1 < n; i++) {
      p *= (double)(n - i - k) / (double)(n - i);
      if (p <= 0) break;
      sum += (v[i + 1] - v[i]) * p;
    }
    e[k] = sum;
  }
}

/* The time at 0-based fractional rank x of dist, interpolated between neighbours. */
static double time_at_rank(const ht_baseline *b, double x) {
  if (x <= 0) return b->dist[0];
  if (x >= b->n - 1) return b->dist[b->n - 1];
  int i = (int)x;
  return b->dist[i] + (x - i) * (b->dist[i + 1] - b->dist[i]);
}

/* 0-based rank of time f: how many configs are strictly faster. */
static int rank_of(const ht_baseline *b, double f) {
  int lo = 0, hi = b->n;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (b->dist[mid] < f) lo = mid + 1;
    else hi = mid;
  }
  return lo < b->n ? lo : b->n - 1;
}

static void expected_best_rank(const ht_baseline *b, double *e) {
  e[0] = b->dist[b->n - 1];
  for (int k = 1; k <= b->n; k++) e[k] = time_at_rank(b, (double)(b->n + 1) / (k + 1) - 1);
}

static int first_k_reaching(const ht_baseline *b, double target) {
  for (int k = 0; k <= b->n; k++)
    if (b->expected_best[k] <= target) return k;
  return b->n;
}

ht_status ht_baseline_compute(const ht_recorded *r, const ht_score_options *o, ht_baseline *out) {
  memset(out, 0, sizeof *out);
  const ht_recorded_stats *s = &r->stats;
  int n = (int)s->n;
  if (n < 1) return ht_error(HT_ERR_INVALID, "%s: no configs to score on", ht_recorded_name(r));
  out->dist = calloc((size_t)n, sizeof *out->dist);
  out->expected_best = malloc(((size_t)n + 1) * sizeof *out->expected_best);
  if (!out->dist || !out->expected_best) {
    ht_baseline_free(out);
    return ht_error(HT_ERR_NOMEM, "out of memory");
  }
  for (int i = 0; i < n; i++) out->dist[i] = (uint64_t)i < s->n_ok ? r->sorted[i] : s->f_worst;
  out->n = n;
  if (o->aggregate == HT_AGGREGATE_VALUE) expected_best(out->dist, n, s->f_worst, out->expected_best);
  else expected_best_rank(out, out->expected_best);
  out->mean_cost_s = s->mean_cost_s > 0 ? s->mean_cost_s : 1e-3;
  out->f_opt = s->f_opt;
  double span = s->f_median - s->f_opt;
  int k_end = first_k_reaching(out, s->f_opt + span * (1 - o->p_cutoff));
  int k_start = first_k_reaching(out, s->f_opt + span * (1 - o->p_start));
  if (k_end < 1) k_end = 1;
  if (k_start >= k_end) k_start = k_end - 1;
  out->t_start = k_start * out->mean_cost_s;
  out->t_cutoff = k_end * out->mean_cost_s;
  return HT_OK;
}

double ht_baseline_at(const ht_baseline *b, double t) {
  double k = t / b->mean_cost_s;
  if (k >= b->n) return b->expected_best[b->n];
  if (k <= 0) return b->expected_best[0];
  int lo = (int)k;
  double f = k - lo;
  return (1 - f) * b->expected_best[lo] + f * b->expected_best[lo + 1];
}

static double point_time(const ht_baseline *b, int j, int points) {
  return b->t_start + (points > 1 ? j * (b->t_cutoff - b->t_start) / (points - 1) : 0);
}

/* P(t) of best time f where random search is at fr. */
static double perf(const ht_baseline *b, double fr, double f) {
  double den = b->f_opt - fr;
  return fabs(den) > 1e-12 * b->f_opt ? (f - fr) / den : (f <= b->f_opt ? 1.0 : 0.0);
}

/* One run's best time at each point; the run's steps are in time order. */
static void run_best(const ht_baseline *b, const ht_replay_trace *t, double worst, int points, double *best_at) {
  double best = worst;
  int s = 0;
  for (int j = 0; j < points; j++) {
    double tj = point_time(b, j, points);
    for (; s < t->n && t->steps[s].t <= tj; s++)
      if (t->steps[s].best < best) best = t->steps[s].best;
    best_at[j] = best;
  }
}

/* q-quantile of x[0..n), sorting x. */
static double quantile(double *x, int n, double q) {
  qsort(x, (size_t)n, sizeof *x, ht_stat_cmp_double);
  double pos = q * (n - 1);
  int i = (int)pos;
  return i + 1 < n ? x[i] + (pos - i) * (x[i + 1] - x[i]) : x[n - 1];
}

/* Score of the seeds picked by pick[0..S) (ranks: [seed][point]; fr: the baseline per point);
 * curve gets P(t) per point. */
static double rank_score(const ht_baseline *b, const double *fr, const double *ranks, const int *pick, int S, int P,
                         double *curve) {
  double sum = 0;
  for (int j = 0; j < P; j++) {
    double r = 0;
    for (int s = 0; s < S; s++) r += ranks[(size_t)pick[s] * P + j];
    double p = perf(b, fr[j], time_at_rank(b, r / S));
    if (curve) curve[j] = p;
    sum += p;
  }
  return sum / P;
}

/* Rank-space combination with a bootstrap interval over the seeds. best: [seed][point] times. */
static ht_status combine_ranks(const ht_baseline *b, const double *fr, const double *best, int S, int P, ht_score *out) {
  double *ranks = malloc((size_t)S * P * sizeof *ranks), *boot = malloc(BOOTSTRAP * sizeof *boot),
         *bcurve = malloc((size_t)BOOTSTRAP * P * sizeof *bcurve), *col = malloc(BOOTSTRAP * sizeof *col);
  int *pick = malloc((size_t)S * sizeof *pick);
  ht_status st = ranks && boot && bcurve && col && pick ? HT_OK : ht_error(HT_ERR_NOMEM, "out of memory");
  if (!st) {
    for (size_t i = 0; i < (size_t)S * P; i++) ranks[i] = rank_of(b, best[i]);
    for (int s = 0; s < S; s++) pick[s] = s;
    out->mean = rank_score(b, fr, ranks, pick, S, P, out->curve);
    ht_rng rng;
    ht_rng_seed(&rng, 12345);
    for (int k = 0; k < BOOTSTRAP; k++) {
      for (int s = 0; s < S; s++) pick[s] = (int)ht_rng_below(&rng, (uint64_t)S);
      boot[k] = rank_score(b, fr, ranks, pick, S, P, bcurve + (size_t)k * P);
    }
    out->lo = quantile(boot, BOOTSTRAP, 0.025);
    out->hi = quantile(boot, BOOTSTRAP, 0.975);
    for (int j = 0; j < P; j++) {
      for (int k = 0; k < BOOTSTRAP; k++) col[k] = bcurve[(size_t)k * P + j];
      out->curve_lo[j] = quantile(col, BOOTSTRAP, 0.025);
      out->curve_hi[j] = quantile(col, BOOTSTRAP, 0.975);
    }
  }
  free(ranks);
  free(boot);
  free(bcurve);
  free(col);
  free(pick);
  return st;
}

/* Value-space combination: P(t) per run (pm: [seed][point]), averaged. */
static ht_status combine_values(const double *pm, int S, int P, ht_score *out) {
  double *col = malloc((size_t)S * sizeof *col);
  if (!col) return ht_error(HT_ERR_NOMEM, "out of memory");
  double sum = 0;
  for (int j = 0; j < P; j++) {
    for (int s = 0; s < S; s++) col[s] = pm[(size_t)s * P + j];
    out->curve[j] = ht_stat_mean(col, S);
    double h = 1.96 * ht_stat_stddev(col, S) / sqrt((double)S);
    out->curve_lo[j] = out->curve[j] - h;
    out->curve_hi[j] = out->curve[j] + h;
    sum += out->curve[j];
  }
  out->mean = sum / P;
  double h = 1.96 * out->std / sqrt((double)S);
  out->lo = out->mean - h;
  out->hi = out->mean + h;
  free(col);
  return HT_OK;
}

/* Each run's P(t) (pm) and own score (mean of its P(t)), for the spread between runs. */
static void run_scores(const ht_baseline *b, const double *fr, const double *best, int S, int P, double *pm,
                       double *runs) {
  for (int s = 0; s < S; s++) {
    double sum = 0;
    for (int j = 0; j < P; j++) sum += pm[(size_t)s * P + j] = perf(b, fr[j], best[(size_t)s * P + j]);
    runs[s] = sum / P;
  }
}

ht_status ht_score_strategy(ht_recorded *r, const ht_baseline *b, const char *strategy, const ht_score_options *o,
                            ht_score *out) {
  memset(out, 0, sizeof *out);
  int P = o->points > 0 ? o->points : 100, S = o->seeds > 0 ? o->seeds : 1;
  double *runs = calloc((size_t)S, sizeof *runs), *best = calloc((size_t)S * (size_t)P, sizeof *best),
         *pm = calloc((size_t)S * (size_t)P, sizeof *pm), *fr = calloc((size_t)P, sizeof *fr);
  out->curve = calloc((size_t)P, sizeof *out->curve);
  out->curve_lo = calloc((size_t)P, sizeof *out->curve_lo);
  out->curve_hi = calloc((size_t)P, sizeof *out->curve_hi);
  ht_status st = runs && best && pm && fr && out->curve && out->curve_lo && out->curve_hi
                   ? HT_OK
                   : ht_error(HT_ERR_NOMEM, "out of memory");
  for (int j = 0; !st && j < P; j++) fr[j] = ht_baseline_at(b, point_time(b, j, P));
  double cost = 0, strat = 0;
  for (int seed = 0; !st && seed < S; seed++) {
    ht_replay_options ro;
    ht_replay_options_default(&ro);
    ro.strategy = strategy;
    ro.strategy_options = o->strategy_options;
    ro.seed = o->first_seed + (uint64_t)seed;
    ro.budget_seconds = b->t_cutoff;
    ro.charge_strategy_time = o->charge_strategy_time;
    ht_replay_trace t;
    st = ht_replay(r, &ro, &t);
    if (st) break;
    run_best(b, &t, r->stats.f_worst, P, best + (size_t)seed * P);
    out->evals_mean += (double)t.n / S;
    out->strategy_s_mean += t.strategy_s / S;
    if (t.max_ask_s > out->ask_s_max) out->ask_s_max = t.max_ask_s;
    strat += t.strategy_s;
    cost += t.n ? t.steps[t.n - 1].t - (o->charge_strategy_time ? t.strategy_s : 0) : 0;
    ht_replay_trace_free(&t);
  }
  if (!st) {
    out->seeds = S;
    run_scores(b, fr, best, S, P, pm, runs);
    out->std = ht_stat_stddev(runs, S);
    out->overhead_frac = strat + cost > 0 ? strat / (strat + cost) : 0;
    st = o->aggregate == HT_AGGREGATE_VALUE ? combine_values(pm, S, P, out) : combine_ranks(b, fr, best, S, P, out);
    out->ci95 = (out->hi - out->lo) / 2;
  }
  free(runs);
  free(best);
  free(pm);
  free(fr);
  if (st) ht_score_free(out);
  return st;
}
