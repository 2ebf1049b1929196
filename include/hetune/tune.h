/* The tuning loop and its strategies. A strategy sees only the space and the results it is told:
 * ask(n) -> configs, tell(config, result). The same strategy runs live, in replay, or farmed out. */
#ifndef HETUNE_TUNE_H
#define HETUNE_TUNE_H

#include <signal.h>

#include "hetune/core.h"
#include "hetune/measure.h"
#include "hetune/options.h"
#include "hetune/result.h"
#include "hetune/space.h"
#include "hetune/spec.h"
#include "hetune/store.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ht_strategy_ops {
  const char *name;
  const char *summary;
  ht_status (*init)(void **state, ht_space *space, const ht_options *opt, uint64_t seed);
  /* Up to max configs to evaluate next; never one already asked. 0 = finished. */
  int (*ask)(void *state, ht_config *out, int max);
  void (*tell)(void *state, const ht_config *cfg, const ht_result *r);
  void (*destroy)(void *state);
  /* 1 when asking in batches changes none of the configs handed out, nor their order (brute force,
   * random): a batch then costs nothing, and its kernels can be compiled at once. NULL: it may. */
  int (*batch_free)(const void *state);
} ht_strategy_ops;

int ht_strategy_count(void);
const ht_strategy_ops *ht_strategy_at(int i);
const ht_strategy_ops *ht_strategy_find(const char *name);
/* HT_OK for a strategy of this build; HT_ERR_UNSUPPORTED saying why for one this build left out
 * (model_guided needs the gbt model kind, so XGBoost); HT_ERR_NOTFOUND for an unknown name. */
ht_status ht_strategy_check(const char *name);

/* ---- the open tuning session ----
 * A strategy on a space, driven by whoever evaluates the configs: ask hands out up to n configs,
 * none ever handed out before; tell takes their results, in any order, and passes each to the
 * strategy once. ht_tune, ht_replay and strategy-bench are loops over a session; so is any caller
 * that evaluates configs its own way (several at once, other processes or machines).
 *
 *   ht_tuner *t;
 *   ht_tuner_create(space, &o, &t);
 *   while (!ht_tuner_done(t)) {
 *     ht_config c[4];
 *     int n;
 *     if (ht_tuner_ask(t, c, 4, &n) || n == 0) break;
 *     for (int i = 0; i < n; i++) { measure c[i] into r; ht_tuner_tell(t, &c[i], &r); }
 *   }
 *   ht_tuner_best(t, &best, &res);
 *   ht_tuner_destroy(t);
 */
typedef struct ht_tuner ht_tuner;

typedef struct ht_tuner_options {
  const char *strategy;          /* default "auto" */
  const char *strategy_options;  /* "key=value,..."; a key the strategy does not read is an error */
  uint64_t seed;                 /* the strategy's seed (default 1) */
  int64_t budget_evals;          /* configs handed out at most (0 = no limit) */
  double budget_seconds;         /* no config handed out once the clock reached it (0 = no limit) */
  int virtual_clock;             /* 0: the clock is wall time; 1: the seconds ht_tuner_charge added */
  double clock_start;            /* wall clock: runs from this ht_now() time (0: from ht_tuner_create) */
  /* Warm start: configs handed out first, in this order, before any of the strategy's own (a
   * repeat counts once). Each must be valid in the space. The strategy is told their results like
   * its own, and a config it proposes that was asked already is not handed out again. */
  const ht_config *seed_configs;
  int n_seed_configs;
  volatile sig_atomic_t *stop;   /* nonzero: the session is done (what was handed out may still be told) */
} ht_tuner_options;
void ht_tuner_options_default(ht_tuner_options *o);

/* The space must outlive the session. Errors: an unknown strategy or option, a seed config the
 * space does not hold. */
ht_status ht_tuner_create(ht_space *space, const ht_tuner_options *o, ht_tuner **out);
/* Up to max configs into out, *got of them: fewer when the budget is nearly spent or the strategy
 * has fewer to give; 0 when the session is done. Asking again after the session said it was done
 * (ht_tuner_done, or an ask that gave 0) is an error. */
ht_status ht_tuner_ask(ht_tuner *t, ht_config *out, int max, int *got);
/* The result of a config the session handed out. A config never handed out, or told before, is an error. */
ht_status ht_tuner_tell(ht_tuner *t, const ht_config *cfg, const ht_result *r);
/* 1 when no more configs will be handed out: the budget is spent, the strategy has asked every
 * config it will, or the stop flag is set. Results of configs handed out may still be told. */
int ht_tuner_done(ht_tuner *t);
/* The fastest successful result told so far (the first of equal times): 1, or 0 when none. Either
 * pointer may be NULL. */
int ht_tuner_best(const ht_tuner *t, ht_config *cfg, ht_result *r);
/* Adds seconds to a virtual clock (what an evaluation cost in replay). */
void ht_tuner_charge(ht_tuner *t, double seconds);
/* 1 when cfg was handed out as one of the seed configs. */
int ht_tuner_is_seed(const ht_tuner *t, const ht_config *cfg);
/* 1 when the session's strategy hands out the same configs in the same order whatever the batch
 * asked (ht_strategy_ops.batch_free; auto: the strategy it picked). */
int ht_tuner_batch_free(const ht_tuner *t);

typedef struct ht_tuner_stats {
  int64_t asked, told, pending; /* configs handed out, results told, handed out and not yet told */
  int64_t seeds_asked;          /* of the asked: seed configs */
  double clock_s;               /* the session's clock (wall or virtual) */
  double strategy_s;            /* the strategy's own time, its asks and tells together */
  double max_ask_s;             /* the slowest ht_tuner_ask's strategy time */
} ht_tuner_stats;
void ht_tuner_stats_get(const ht_tuner *t, ht_tuner_stats *out);
void ht_tuner_destroy(ht_tuner *t);

typedef struct ht_tune_progress {
  int64_t done, budget_evals;   /* evaluations so far (measured + reused), budget (0 = none) */
  int64_t measured, reused, failures;
  uint64_t space_size;          /* valid configs (an estimate when space_size_exact is 0) */
  int space_size_exact;
  double elapsed_s, budget_seconds;
  double best_time_s;           /* NAN until one config succeeded */
  const char *best_config;
  const char *last_config;      /* the config just finished */
  const ht_result *last;
  int last_reused;
  int last_seed;                /* the config just finished was one of ht_tune_options.seed_configs */
  int64_t confirm_done, confirm_total; /* the confirmation's evaluations (0 / 0 during the search) */
} ht_tune_progress;
typedef void (*ht_tune_progress_fn)(const ht_tune_progress *p, void *ctx);

typedef struct ht_tune_options {
  const char *strategy;         /* default "auto" */
  const char *strategy_options; /* "key=value,..." */
  uint64_t seed;
  int64_t budget_evals;         /* 0 = no limit */
  double budget_seconds;        /* 0 = no limit */
  int no_reuse;                 /* 1: measure again even when the store has the config */
  int confirm;                  /* after the search, measure the N fastest configs again (default 0) */
  int confirm_runs;             /* ...this many times each, every round in a fresh worker (default 2) */
  ht_tune_progress_fn progress;
  void *progress_ctx;
  volatile sig_atomic_t *stop;  /* set to nonzero (e.g. from SIGINT) to stop after the current config */
  /* The device the evaluations are stored (and reused) under, and the summary names; NULL: the
   * runner's. For a C kernel that drives another device (a vendor library's GPU or OpenCL call),
   * that device is where it ran. The space is built with the runner's device all the same. */
  const ht_device_info *store_device;
  /* Configs asked and submitted together. 0 (the default): two per compile job (the runner's
   * compile_jobs, else one per CPU this process may use) when the strategy's choices do not depend on the
   * batch (ht_tuner_batch_free), so a batch's C kernels compile at once, and after a batch that
   * had nothing to compile (kernels cached, results stored) twice the last, up to 32; else 1. The
   * local executor evaluates them one after another. A batch never takes more than budget_evals
   * leaves; once budget_seconds is reached, or a stop is requested, the configs of a batch not
   * measured yet are left out (the one in hand finishes; a batch's compiles ahead are not cut
   * short). */
  int batch;
  /* Warm start: configs ("TX=16,TY=8", as ht_config_text writes them) evaluated first, before the
   * strategy's own; the strategy is told their results. Texts the space does not hold (another
   * problem's constraints, parameters of another version) are left out. */
  const char *const *seed_configs;
  int n_seed_configs;
} ht_tune_options;

void ht_tune_options_default(ht_tune_options *o);

typedef struct ht_tune_summary {
  int64_t session_id;
  int64_t measured, reused, failures;
  uint64_t space_size;          /* valid configs: counted, or estimated when too many to count first */
  int space_size_exact;         /* 0: space_size is an estimate */
  int found;                    /* a config succeeded */
  char best_config[1024];
  ht_result best;
  double elapsed_s;
  int interrupted;
  int64_t confirmed;            /* evaluations of the confirmation; best is then by median */
  int best_measurements;        /* measurements behind best.time_s (1 without confirmation) */
  ht_device_info device;
  char problem[512];
  int64_t seeds, seed_failures; /* seed configs evaluated (counted in measured and reused too), failed */
  double seed_best_time_s;      /* their best time; NAN when none succeeded */
} ht_tune_summary;

/* Tunes spec on device_id, storing every evaluation in st: committed in groups while it runs
 * (ht_store_group_evals), all committed when it returns, grouping then off. */
ht_status ht_tune(const ht_spec *spec, const char *device_id, ht_store *st, const ht_tune_options *opt,
                  const ht_runner_options *ropt, ht_tune_summary *out);

/* Seed configs from other problem sizes: for each other problem of spec's kernel (the same source,
 * any device) in st, its fastest successful config; nearest problems first (distance: the sum over
 * the sizes of |log ratio|, a size the other problem lacks counting as 1), up to max distinct
 * configs. *configs (malloc'ed, each text too; NULL when none) suits ht_tune_options.seed_configs;
 * free it with ht_tune_configs_free. */
ht_status ht_tune_nearby_bests(ht_store *st, const ht_spec *spec, int max, char ***configs, int *n);
void ht_tune_configs_free(char **configs, int n);

#ifdef __cplusplus
}
#endif
#endif
