/* Replay and scoring of search strategies on recorded spaces.
 *
 * A recorded space is every config of a space measured once (the CSV files in data/spaces, a T4 results file,
 * a Kernel Tuner cache file, or the store). Replay runs a strategy through ask/tell against it
 * without a device, charging each evaluation the time it took when it was recorded (compile +
 * runs + framework) plus the strategy's own time, so the time axis is what a user would wait.
 * Scoring follows Willemsen et al. (FGCS 2024): the exact expected best of random search without
 * replacement is the baseline, the time budget runs from where that baseline is expected to reach
 * a start target to where it reaches the cutoff target, and P(t) = (f(t) - f_random(t)) /
 * (f_opt - f_random(t)) is averaged over that range (0 = random search, 1 = the optimum). */
#ifndef HETUNE_REPLAY_H
#define HETUNE_REPLAY_H

#include "hetune/result.h"
#include "hetune/space.h"
#include "hetune/store.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ht_recorded ht_recorded;

/* Loads a recorded space by content: hetune CSV export, T4 results JSON, or Kernel Tuner cache
 * JSON. The file must hold one kernel, device and problem; repeated configs count as
 * ht_recorded_from_store says. */
ht_status ht_recorded_load(const char *path, ht_recorded **out);
/* The evaluations in the store of one kernel on one device for one problem (problem NULL: the
 * store must hold exactly one). A config recorded several times (in a file or the store) counts
 * with the median of its successful times, as ht_store_get_eval judges it, and the mean of its
 * evaluations' costs; with no success, its last evaluation. */
ht_status ht_recorded_from_store(ht_store *st, const char *kernel, const char *device_id, const char *problem,
                                 ht_recorded **out);
void ht_recorded_destroy(ht_recorded *r);

const char *ht_recorded_name(const ht_recorded *r); /* file stem or kernel name */
/* The space: each parameter's recorded values (sorted), filtered to the recorded configs. */
ht_space *ht_recorded_space(ht_recorded *r);
uint64_t ht_recorded_size(const ht_recorded *r);

/* The recorded outcome of c (status, time_s, one sample) and what evaluating it cost in seconds.
 * Returns 0 when c was not recorded. */
int ht_recorded_lookup(const ht_recorded *r, const ht_config *c, ht_result *res, double *cost_s);

typedef struct ht_recorded_stats {
  uint64_t n, n_ok;    /* configs recorded, of which succeeded */
  double f_opt;        /* best time */
  double f_median;     /* median time of the successful configs */
  double f_worst;      /* worst successful time (what a failed or missing result counts as) */
  double mean_cost_s;  /* mean evaluation cost over all recorded configs */
  double total_cost_s; /* what brute force cost */
} ht_recorded_stats;
void ht_recorded_stats_get(const ht_recorded *r, ht_recorded_stats *out);

/* ---- replay ---- */
typedef struct ht_replay_options {
  const char *strategy;         /* default "random" */
  const char *strategy_options; /* "key=value,..." */
  uint64_t seed;
  int64_t budget_evals;         /* 0 = none */
  double budget_seconds;        /* simulated seconds; 0 = none */
  int charge_strategy_time;     /* add the strategy's measured ask/tell time to the clock (default 1) */
} ht_replay_options;
void ht_replay_options_default(ht_replay_options *o);

typedef struct ht_replay_step {
  double t;                     /* simulated time when this evaluation finished */
  double value;                 /* its time (INFINITY when it failed) */
  double best;                  /* best so far (INFINITY until one succeeded) */
} ht_replay_step;

typedef struct ht_replay_trace {
  ht_replay_step *steps;
  int n;
  double strategy_s;            /* total measured ask/tell time */
  double max_ask_s;             /* slowest single ask */
  ht_config best_config;
  int found;
} ht_replay_trace;
void ht_replay_trace_free(ht_replay_trace *t);

/* Replays one strategy run. Every asked config must be recorded (the space's filter guarantees it). */
ht_status ht_replay(ht_recorded *r, const ht_replay_options *o, ht_replay_trace *out);

/* ---- scoring ---- */
typedef struct ht_score_options {
  int seeds;                    /* runs per strategy and space (default 20) */
  uint64_t first_seed;          /* seed of the first run; run k uses first_seed + k (default 1) */
  double p_cutoff;              /* end of the budget: baseline reaches this fraction (default 0.96) */
  double p_start;               /* start of the budget (default 0.5) */
  int points;                   /* time points in the range (default 100) */
  int charge_strategy_time;     /* default 1 */
  const char *strategy_options; /* passed to every strategy (default none) */
  int aggregate;                /* HT_AGGREGATE_RANK (default) or HT_AGGREGATE_VALUE, see ht_score */
} ht_score_options;
enum { HT_AGGREGATE_RANK = 0, HT_AGGREGATE_VALUE = 1 };
void ht_score_options_default(ht_score_options *o);

/* The random-search baseline and the budget of one space. */
typedef struct ht_baseline {
  int n;                        /* configs (draws possible) */
  double *dist;                 /* [n]: every config's time ascending, failures as the worst success */
  double *expected_best;        /* [k] for k = 0..n: random search's best after k draws (k = 0: f_worst):
                                 * HT_AGGREGATE_RANK: the time at the expected rank of the best, (n+1)/(k+1);
                                 * HT_AGGREGATE_VALUE: the expected time of the best */
  double mean_cost_s;           /* time per draw */
  double f_opt;
  double t_start, t_cutoff;     /* the budget, in seconds */
} ht_baseline;
ht_status ht_baseline_compute(const ht_recorded *r, const ht_score_options *o, ht_baseline *out);
double ht_baseline_at(const ht_baseline *b, double t); /* expected best of random search at time t */
void ht_baseline_free(ht_baseline *b);

/* How runs are combined (Willemsen et al.: rank space). HT_AGGREGATE_RANK: at each time point the
 * seeds' best-so-far times become ranks in dist, the ranks are averaged, and P(t) is computed
 * from the time at that mean rank; the score is the mean of P(t) over the range, and its 95%
 * interval comes from resampling the seeds (bootstrap). Robust to the heavy tails of kernel
 * times. HT_AGGREGATE_VALUE: P(t) per run, averaged over runs; interval mean +- 1.96 sd/sqrt(seeds). */
typedef struct ht_score {
  double mean;                  /* the score */
  double lo, hi;                /* its 95% confidence interval */
  double ci95;                  /* (hi - lo) / 2, for one-number tables */
  double std;                   /* standard deviation of the per-run scores (mean of each run's P(t)) */
  double *curve, *curve_lo, *curve_hi; /* [points]: P(t) of the combined runs and its 95% band */
  double evals_mean;            /* evaluations per run up to the cutoff */
  double strategy_s_mean;       /* strategy time per run */
  double ask_s_max;             /* slowest ask seen */
  double overhead_frac;         /* strategy time / (strategy time + recorded cost) */
  int seeds;
} ht_score;
void ht_score_free(ht_score *s);

/* Scores one strategy on one space. The time points are t_start + i (t_cutoff - t_start)/(points-1). */
ht_status ht_score_strategy(ht_recorded *r, const ht_baseline *b, const char *strategy, const ht_score_options *o,
                            ht_score *out);

#ifdef __cplusplus
}
#endif
#endif
