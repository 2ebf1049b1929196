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
} ht_strategy_ops;

int ht_strategy_count(void);
const ht_strategy_ops *ht_strategy_at(int i);
const ht_strategy_ops *ht_strategy_find(const char *name);

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
} ht_tune_summary;

/* Tunes spec on device_id, storing every evaluation in st. */
ht_status ht_tune(const ht_spec *spec, const char *device_id, ht_store *st, const ht_tune_options *opt,
                  const ht_runner_options *ropt, ht_tune_summary *out);

#ifdef __cplusplus
}
#endif
#endif
