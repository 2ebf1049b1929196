/* The public planner around Alg. 5.3 (partition.c): version combinations (001 §5.3.5: every
 * combination of the PUs' versions is planned and the lowest predicted makespan kept; past 64
 * combinations, greedy descent one PU at a time), the recursive energy variant (§5.3.6) and the
 * optional refinement. */
#include <math.h>
#include <string.h>

#include "coexec/partition_internal.h"

enum { MAX_COMBINATIONS = 64, MAX_GREEDY_PASSES = 8 };

/* Whether the rules dropped a PU that was in the run (not one an outer run had dropped). */
static int any_rule_elimination(const ht_partition *r, const int *before) {
  for (int i = 0; i < r->n_pus; i++)
    if (r->eliminated_at[i] > 0 && !(before && before[i])) return 1;
  return 0;
}

static void keep_lower_energy(ht_partition *best, const ht_partition *cand) {
  if (cand->energy_j < best->energy_j) *best = *cand;
}

/* Alg. 5.3 on one combination; with `recursive`, when the rules dropped PUs, also the plan of
 * all the PUs without dropping any and a fresh plan of the reduced set (itself recursive): 001
 * notes that dropping a PU does not always lower the energy. The lowest predicted energy wins. */
static ht_status plan_set(const htp_problem *p, const int *version, const int *eliminated_at, ht_partition *out) {
  ht_status st = htp_alg53(p, version, eliminated_at, 1, out);
  if (st) return st;
  if (p->refine) htp_refine(p, out);
  if (!p->recursive || !any_rule_elimination(out, eliminated_at)) return HT_OK;
  ht_partition all, reduced;
  int rest[HT_COEXEC_MAX_PUS];
  memcpy(rest, out->eliminated_at, sizeof rest);
  int steps = out->steps;
  if (!htp_alg53(p, version, eliminated_at, 0, &all)) {
    if (p->refine) htp_refine(p, &all);
    steps += all.steps;
    keep_lower_energy(out, &all);
  }
  if (!plan_set(p, version, rest, &reduced)) {
    steps += reduced.steps;
    keep_lower_energy(out, &reduced);
  }
  out->steps = steps;
  return HT_OK;
}

/* Plans one combination into *best when its predicted makespan is lower; counts it. */
static void try_combination(const htp_problem *p, const int *version, ht_partition *best, int *count,
                            ht_status *last) {
  ht_partition r;
  ht_status st = plan_set(p, version, NULL, &r);
  (*count)++;
  if (st) {
    *last = st;
    return;
  }
  if (best->n_pus == 0 || r.makespan_s < best->makespan_s) *best = r;
}

static int next_combination(const htp_problem *p, int *v) {
  for (int i = 0; i < p->n; i++) {
    if (++v[i] < p->n_versions[i]) return 1;
    v[i] = 0;
  }
  return 0;
}

static void every_combination(const htp_problem *p, ht_partition *best, int *count, ht_status *last) {
  int v[HT_COEXEC_MAX_PUS] = {0};
  do try_combination(p, v, best, count, last);
  while (next_combination(p, v));
}

/* Greedy coordinate descent: each PU in turn takes the version that lowers the plan's makespan
 * with the others fixed, until a pass changes nothing. */
static void greedy(const htp_problem *p, ht_partition *best, int *count, ht_status *last) {
  int v[HT_COEXEC_MAX_PUS] = {0};
  try_combination(p, v, best, count, last);
  for (int pass = 0, changed = 1; changed && pass < MAX_GREEDY_PASSES; pass++) {
    changed = 0;
    for (int i = 0; i < p->n; i++) {
      int keep = best->n_pus ? best->version[i] : v[i];
      for (int k = 0; k < p->n_versions[i]; k++) {
        if (best->n_pus) memcpy(v, best->version, sizeof(int) * (size_t)p->n);
        if (k == keep) continue;
        v[i] = k;
        double before = best->n_pus ? best->makespan_s : INFINITY;
        try_combination(p, v, best, count, last);
        changed |= best->makespan_s < before;
      }
    }
  }
}

static int64_t combinations(const htp_problem *p) {
  int64_t c = 1;
  for (int i = 0; i < p->n && c <= MAX_COMBINATIONS; i++) c *= p->n_versions[i];
  return c;
}

ht_status ht_partition_plan(int n_pus, int64_t lb, int64_t ub, ht_chunk_time_fn time, void *ctx,
                            const ht_partition_opts *opts, ht_partition *out) {
  if (!out) return ht_error(HT_ERR_INVALID, "ht_partition_plan: no result to fill");
  double t0 = ht_now();
  htp_problem p;
  ht_status st = htp_problem_init(&p, n_pus, lb, ub, time, ctx, opts), last = HT_OK;
  if (st) return st;
  ht_partition best = {0};
  int count = 0;
  if (combinations(&p) <= MAX_COMBINATIONS)
    every_combination(&p, &best, &count, &last);
  else
    greedy(&p, &best, &count, &last);
  if (best.n_pus == 0) return last ? last : ht_error(HT_ERR_INVALID, "ht_partition_plan: no PU can run");
  *out = best;
  out->combinations = count;
  out->plan_us = (ht_now() - t0) * 1e6;
  return HT_OK;
}
