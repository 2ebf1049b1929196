/* 001's Alg. 5.3 (§5.3.3.1): the iteration space [lb, ub) is cut into one contiguous chunk per
 * PU, starting from an equal split; each step scales every chunk by T_all / (n_act * T_i), so a
 * PU slower than the mean gets less, renormalises to the exact total, drops PUs whose chunk fell
 * below a share of the largest (or whose iterations per watt did), and registers the schedule;
 * the registered schedule with the lowest predicted makespan is kept. The times come from the
 * caller (predicted from models, with copies), so the steps cost only arithmetic.
 *
 * Choices where 001 is silent (docs/coexec.md):
 *  - the update divides by the number of active PUs, not all of them: after an elimination the
 *    printed num_PU would shrink every chunk before normalisation undid it, and keeps Σ o/R_i = 1;
 *  - the steps stop when every T_i is within `converge` (2%) of their mean, or sizes stop changing;
 *  - an elimination is final: the schedules registered before it (which used the dropped PU) are
 *    forgotten, otherwise the lowest makespan would always bring the dropped PU back. */
#include <math.h>
#include <string.h>

#include "coexec/partition_internal.h"

/* what names the field and its key in the options text: "max_steps (steps=)" */
static ht_status bad(const char *what, double v, const char *expected) {
  return ht_error(HT_ERR_INVALID, "partition option %s %g: expected %s", what, v, expected);
}

ht_status htp_check_opts(const ht_partition_opts *o, int n) {
  if (o->max_steps < 0 || o->max_steps > 1000) return bad("max_steps (steps=)", o->max_steps, "0 (15) to 1000");
  if (!(o->eliminate < 1)) return bad("eliminate (eliminate=)", o->eliminate, "a share below 1 (0: 0.10, < 0: never)");
  if (!(o->converge >= 0 && o->converge < 1)) return bad("converge (converge=)", o->converge, "a share in [0, 1) (0: 0.02)");
  if (o->granularity < 0) return bad("granularity (granularity=)", (double)o->granularity, "0 (1) or more");
  if (o->remainder_pu < -1 || o->remainder_pu >= n)
    return ht_error(HT_ERR_INVALID, "partition option remainder_pu (remainder=) %d: expected -1 (largest chunk) or a PU 0 to %d",
                    o->remainder_pu, n - 1);
  for (int i = 0; o->n_versions && i < n; i++)
    if (o->n_versions[i] < 1 || o->n_versions[i] > 1024)
      return ht_error(HT_ERR_INVALID, "partition option n_versions[%d] = %d: expected 1 to 1024", i,
                      o->n_versions[i]);
  for (int i = 0; o->power_w && i < n; i++)
    if (!(o->power_w[i] > 0 && isfinite(o->power_w[i])))
      return ht_error(HT_ERR_INVALID, "partition option power_w[%d] = %g: expected watts above 0", i, o->power_w[i]);
  if (!(o->eliminate_energy >= 0 && o->eliminate_energy <= 1))
    return bad("eliminate_energy (energy=)", o->eliminate_energy, "a share in [0, 1] (0: off)");
  if (!(o->idle_power_w >= 0 && isfinite(o->idle_power_w))) return bad("idle_power_w (idle_power=)", o->idle_power_w, "watts >= 0");
  if (o->recursive < 0 || o->recursive > 1 || o->refine < 0 || o->refine > 1)
    return ht_error(HT_ERR_INVALID, "partition options recursive (%d) and refine (%d): expected 0 or 1", o->recursive,
                    o->refine);
  if (!o->power_w && (o->eliminate_energy > 0 || o->recursive || o->idle_power_w > 0))
    return ht_error(HT_ERR_INVALID, "partition options eliminate_energy, idle_power_w and recursive need power_w "
                                    "(the active power of each PU)");
  return HT_OK;
}

ht_status htp_problem_init(htp_problem *p, int n, int64_t lb, int64_t ub, ht_chunk_time_fn time, void *ctx,
                           const ht_partition_opts *opts) {
  if (n < 1 || n > HT_COEXEC_MAX_PUS)
    return ht_error(HT_ERR_INVALID, "ht_partition_plan: n_pus %d: expected 1 to %d", n, HT_COEXEC_MAX_PUS);
  if (ub < lb)
    return ht_error(HT_ERR_INVALID, "ht_partition_plan: range [%lld, %lld): ub is below lb", (long long)lb,
                    (long long)ub);
  if (ub - (double)lb > 9007199254740992.0) /* sizes are scaled in doubles: exact to 2^53 */
    return ht_error(HT_ERR_INVALID, "ht_partition_plan: range [%lld, %lld): expected at most 2^53 iterations",
                    (long long)lb, (long long)ub);
  if (!time) return ht_error(HT_ERR_INVALID, "ht_partition_plan: no time function");
  ht_partition_opts zero = {0};
  const ht_partition_opts *o = opts ? opts : &zero;
  ht_status st = htp_check_opts(o, n);
  if (st) return st;
  *p = (htp_problem){.n = n, .lb = lb, .ub = ub, .time = time, .ctx = ctx};
  p->max_steps = o->max_steps ? o->max_steps : 15;
  p->eliminate = o->eliminate == 0 ? 0.10 : o->eliminate;
  p->converge = o->converge ? o->converge : 0.02;
  p->granularity = o->granularity ? o->granularity : 1;
  p->remainder_pu = o->remainder_pu;
  for (int i = 0; i < n; i++) p->n_versions[i] = o->n_versions ? o->n_versions[i] : 1;
  p->power_w = o->power_w;
  p->eliminate_energy = o->eliminate_energy;
  p->idle_power_w = o->idle_power_w;
  p->recursive = o->recursive;
  p->refine = o->refine;
  return HT_OK;
}

/* The state of one run: wanted (real-valued) sizes, integer sizes, times, who is out. */
typedef struct run {
  const htp_problem *p;
  const int *version;
  double want[HT_COEXEC_MAX_PUS];
  int64_t size[HT_COEXEC_MAX_PUS];
  double t[HT_COEXEC_MAX_PUS];
  int out[HT_COEXEC_MAX_PUS]; /* eliminated_at: 0 while the PU takes part */
} run;

static int argmax_size(const run *r) {
  int best = -1;
  for (int i = 0; i < r->p->n; i++)
    if (!r->out[i] && (best < 0 || r->size[i] > r->size[best])) best = i;
  return best;
}

/* Integer sizes from r->want: scaled to the total, each rounded down to the granularity; the
 * whole granules left go to the remainder PU, the part of a granule at the range's end to the
 * last PU with a chunk (so every inner bound stays on the granularity). */
static void normalise(run *r) {
  const htp_problem *p = r->p;
  int64_t total = p->ub - p->lb, g = p->granularity, tail = total % g, whole = total - tail, given = 0;
  double sum = 0;
  for (int i = 0; i < p->n; i++)
    if (!r->out[i]) sum += r->want[i];
  for (int i = 0; i < p->n; i++) {
    double share = !r->out[i] && sum > 0 ? r->want[i] / sum : 0;
    r->size[i] = (int64_t)floor(share * (double)whole / (double)g) * g;
    given += r->size[i];
  }
  int rem = p->remainder_pu >= 0 && !r->out[p->remainder_pu] ? p->remainder_pu : argmax_size(r);
  if (rem < 0) return;
  r->size[rem] += whole - given; /* floor rounding: a few granules, never negative in practice */
  int last = rem;
  for (int i = 0; i < p->n; i++)
    if (r->size[i] > 0) last = i;
  r->size[last] += tail;
}

static void bounds(const htp_problem *p, const int64_t *size, int64_t *lb, int64_t *ub) {
  int64_t at = p->lb;
  for (int i = 0; i < p->n; i++) {
    lb[i] = at;
    at += size[i];
    ub[i] = at;
  }
}

/* Predicted times of the chunks. A PU that cannot run its chunk leaves (out = -1) and the rest
 * are split again; HT_ERR_INVALID when none is left. */
static ht_status evaluate(run *r) {
  const htp_problem *p = r->p;
  for (;;) {
    int64_t lb[HT_COEXEC_MAX_PUS], ub[HT_COEXEC_MAX_PUS];
    bounds(p, r->size, lb, ub);
    int failed = 0;
    for (int i = 0; i < p->n; i++) {
      r->t[i] = 0;
      if (r->out[i] || r->size[i] == 0) continue;
      double t = p->time(p->ctx, i, r->version[i], lb[i], ub[i]);
      if (!(t > 0) || !isfinite(t)) {
        r->out[i] = -1;
        failed = 1;
      } else {
        r->t[i] = t;
      }
    }
    if (!failed) return HT_OK;
    int any = 0;
    for (int i = 0; i < p->n; i++) any |= !r->out[i];
    if (!any) return ht_error(HT_ERR_INVALID, "ht_partition_plan: no PU can run a chunk of [%lld, %lld)",
                              (long long)p->lb, (long long)p->ub);
    for (int i = 0; i < p->n; i++) r->want[i] = r->out[i] ? 0 : (double)(r->size[i] ? r->size[i] : 1);
    normalise(r);
  }
}

/* The elimination rules of one step: a chunk below `eliminate` of the largest, iterations per
 * watt below `eliminate_energy` of the best, or a chunk rounded to nothing. 1 when one left. */
static int eliminate(run *r, int step, int rules) {
  const htp_problem *p = r->p;
  int64_t max = 0;
  double best_ipw = 0;
  for (int i = 0; i < p->n; i++)
    if (!r->out[i] && r->size[i] > max) max = r->size[i];
  int dropped = 0;
  for (int i = 0; i < p->n; i++)
    if (!r->out[i] && (r->size[i] == 0 || (rules && (double)r->size[i] < p->eliminate * (double)max))) {
      r->out[i] = step;
      dropped = 1;
    }
  if (!rules || !(p->eliminate_energy > 0)) return dropped;
  for (int i = 0; i < p->n; i++)
    if (!r->out[i]) best_ipw = fmax(best_ipw, (double)r->size[i] / p->power_w[i]);
  for (int i = 0; i < p->n; i++)
    if (!r->out[i] && (double)r->size[i] / p->power_w[i] < p->eliminate_energy * best_ipw) {
      r->out[i] = step;
      dropped = 1;
    }
  return dropped;
}

/* The convergence measure: the largest |T_i - mean| / mean over the PUs with a chunk. */
static double max_deviation(const run *r) {
  double sum = 0, dev = 0;
  int n = 0;
  for (int i = 0; i < r->p->n; i++)
    if (r->t[i] > 0) sum += r->t[i], n++;
  for (int i = 0; i < r->p->n; i++)
    if (r->t[i] > 0) dev = fmax(dev, fabs(r->t[i] - sum / n) / (sum / n));
  return dev;
}

double htp_energy(const htp_problem *p, const ht_partition *r) {
  if (!p->power_w) return NAN;
  double e = 0;
  for (int i = 0; i < p->n; i++) e += p->power_w[i] * r->time_s[i] + p->idle_power_w * (r->makespan_s - r->time_s[i]);
  return e;
}

/* Keeps the schedule in best when its predicted makespan is the lowest so far. */
static void register_schedule(const run *r, int step, ht_partition *best) {
  double makespan = 0;
  for (int i = 0; i < r->p->n; i++) makespan = fmax(makespan, r->t[i]);
  if (best->best_step >= 0 && !(makespan < best->makespan_s)) return;
  bounds(r->p, r->size, best->lb, best->ub);
  memcpy(best->time_s, r->t, sizeof r->t);
  best->makespan_s = makespan;
  best->best_step = step;
}

/* One refinement step: size_i * T_all / (n_act * T_i), i.e. size * o / R_i with o = 1 / n_act. */
static void adjust(run *r) {
  double t_all = 0;
  int n_act = 0;
  for (int i = 0; i < r->p->n; i++)
    if (r->t[i] > 0) t_all += r->t[i], n_act++;
  for (int i = 0; i < r->p->n; i++)
    r->want[i] = r->t[i] > 0 ? (double)r->size[i] * t_all / (n_act * r->t[i]) : 0;
}

static ht_status start(run *r, const int *eliminated_at) {
  for (int i = 0; i < r->p->n; i++) {
    r->out[i] = eliminated_at ? eliminated_at[i] : 0;
    r->want[i] = r->out[i] ? 0 : 1;
  }
  normalise(r);
  return evaluate(r);
}

static void finish(const run *r, int steps, ht_partition *out) {
  out->n_pus = r->p->n;
  memcpy(out->version, r->version, sizeof(int) * (size_t)r->p->n);
  for (int i = 0; i < r->p->n; i++) out->eliminated_at[i] = out->lb[i] < out->ub[i] ? 0 : r->out[i];
  out->steps = steps;
  out->combinations = 1;
}

ht_status htp_alg53(const htp_problem *p, const int *version, const int *eliminated_at, int rules, ht_partition *out) {
  run r = {.p = p, .version = version};
  memset(out, 0, sizeof *out);
  out->best_step = -1;
  ht_status st = start(&r, eliminated_at);
  if (st) return st;
  int step = 0;
  while (p->ub > p->lb && step < p->max_steps) {
    int64_t before[HT_COEXEC_MAX_PUS];
    memcpy(before, r.size, sizeof before);
    adjust(&r);
    normalise(&r);
    step++;
    if (eliminate(&r, step, rules)) {
      normalise(&r);
      out->best_step = -1; /* an elimination is final: forget the schedules that used the PU */
    }
    int unchanged = !memcmp(before, r.size, sizeof before);
    if (!unchanged && (st = evaluate(&r))) return st;
    register_schedule(&r, step, out);
    if (unchanged || max_deviation(&r) < p->converge) break;
  }
  if (out->best_step < 0) register_schedule(&r, step, out); /* an empty range: nothing to refine */
  finish(&r, step, out);
  out->energy_j = htp_energy(p, out);
  return HT_OK;
}
