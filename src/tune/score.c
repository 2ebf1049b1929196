/* Scoring strategies on recorded spaces (Willemsen et al., FGCS 2024).
 *
 * Baseline: random search without replacement over the n recorded configs, whose expected best
 * after k draws is exact: with the values sorted v_1 <= ... <= v_n,
 *   E_k = v_1 + sum_{i=1}^{n-1} (v_{i+1} - v_i) P(all k draws rank > i),
 *   P(all k draws rank > i) = C(n-i, k) / C(n, k).
 * Failed configs count as the worst successful time, here and for the strategies (before a first
 * success a run's best is that worst time too). k draws take k times the mean recorded cost.
 * Budget: target(p) = f_opt + (f_median - f_opt)(1 - p); the range runs from the time the baseline
 * is expected to reach target(p_start) to the time it reaches target(p_cutoff).
 * Score of one run: the mean over evenly spaced points t of that range of
 *   P(t) = (f(t) - f_random(t)) / (f_opt - f_random(t)). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hetune/replay.h"
#include "tune/recorded_internal.h"

void ht_score_options_default(ht_score_options *o) {
  memset(o, 0, sizeof *o);
  o->seeds = 20;
  o->p_cutoff = 0.96;
  o->p_start = 0.5;
  o->points = 100;
  o->charge_strategy_time = 1;
}

void ht_baseline_free(ht_baseline *b) {
  free(b->expected_best);
  memset(b, 0, sizeof *b);
}

void ht_score_free(ht_score *s) {
  free(s->curve);
  free(s->curve_std);
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

static int first_k_reaching(const ht_baseline *b, double target) {
  for (int k = 0; k <= b->n; k++)
    if (b->expected_best[k] <= target) return k;
  return b->n;
}

ht_status ht_baseline_compute(const ht_recorded *r, const ht_score_options *o, ht_baseline *out) {
  memset(out, 0, sizeof *out);
  const ht_recorded_stats *s = &r->stats;
  int n = (int)s->n;
  double *v = malloc(((size_t)n + 1) * sizeof *v);
  out->expected_best = malloc(((size_t)n + 1) * sizeof *out->expected_best);
  if (!v || !out->expected_best) {
    free(v);
    ht_baseline_free(out);
    return ht_error(HT_ERR_NOMEM, "out of memory");
  }
  for (int i = 0; i < n; i++) v[i] = (uint64_t)i < s->n_ok ? r->sorted[i] : s->f_worst;
  expected_best(v, n, s->f_worst, out->expected_best);
  free(v);
  out->n = n;
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

/* P(t) at each point for one run; the run's steps are in time order. */
static double run_score(const ht_baseline *b, const ht_replay_trace *t, double worst, int points, double *p_at) {
  double sum = 0, best = worst;
  int s = 0;
  for (int j = 0; j < points; j++) {
    double tj = b->t_start + (points > 1 ? j * (b->t_cutoff - b->t_start) / (points - 1) : 0);
    for (; s < t->n && t->steps[s].t <= tj; s++)
      if (t->steps[s].best < best) best = t->steps[s].best;
    double fr = ht_baseline_at(b, tj), den = b->f_opt - fr;
    double p = fabs(den) > 1e-12 * b->f_opt ? (best - fr) / den : (best <= b->f_opt ? 1.0 : 0.0);
    p_at[j] = p;
    sum += p;
  }
  return sum / points;
}

ht_status ht_score_strategy(ht_recorded *r, const ht_baseline *b, const char *strategy, const ht_score_options *o,
                            ht_score *out) {
  memset(out, 0, sizeof *out);
  int P = o->points > 0 ? o->points : 100, S = o->seeds > 0 ? o->seeds : 1;
  double *runs = calloc((size_t)S, sizeof *runs), *p = calloc((size_t)S * (size_t)P, sizeof *p);
  out->curve = calloc((size_t)P, sizeof *out->curve);
  out->curve_std = calloc((size_t)P, sizeof *out->curve_std);
  ht_status st = runs && p && out->curve && out->curve_std ? HT_OK : ht_error(HT_ERR_NOMEM, "out of memory");
  double cost = 0, strat = 0;
  for (int seed = 0; !st && seed < S; seed++) {
    ht_replay_options ro;
    ht_replay_options_default(&ro);
    ro.strategy = strategy;
    ro.strategy_options = o->strategy_options;
    ro.seed = (uint64_t)seed + 1;
    ro.budget_seconds = b->t_cutoff;
    ro.charge_strategy_time = o->charge_strategy_time;
    ht_replay_trace t;
    st = ht_replay(r, &ro, &t);
    if (st) break;
    runs[seed] = run_score(b, &t, r->stats.f_worst, P, p + (size_t)seed * P);
    out->evals_mean += (double)t.n / S;
    out->strategy_s_mean += t.strategy_s / S;
    if (t.max_ask_s > out->ask_s_max) out->ask_s_max = t.max_ask_s;
    strat += t.strategy_s;
    cost += t.n ? t.steps[t.n - 1].t - (o->charge_strategy_time ? t.strategy_s : 0) : 0;
    ht_replay_trace_free(&t);
  }
  if (!st) {
    out->seeds = S;
    out->mean = ht_stat_mean(runs, S);
    out->std = ht_stat_stddev(runs, S);
    out->ci95 = 1.96 * out->std / sqrt((double)S);
    out->overhead_frac = strat + cost > 0 ? strat / (strat + cost) : 0;
    double *col = malloc((size_t)S * sizeof *col);
    for (int j = 0; col && j < P; j++) {
      for (int s = 0; s < S; s++) col[s] = p[(size_t)s * P + j];
      out->curve[j] = ht_stat_mean(col, S);
      out->curve_std[j] = ht_stat_stddev(col, S);
    }
    free(col);
  }
  free(runs);
  free(p);
  if (st) ht_score_free(out);
  return st;
}
