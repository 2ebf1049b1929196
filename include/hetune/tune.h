/* The tuning loop and its strategies. A strategy sees only the space and the results it is told:
 * ask(n) -> configs, tell(config, result). The same strategy runs live, in replay, or farmed out. */
#ifndef HETUNE_TUNE_H
#define HETUNE_TUNE_H

#include <signal.h>

#include "hetune/core.h"
#include "hetune/measure.h"
#include "hetune/result.h"
#include "hetune/space.h"
#include "hetune/spec.h"
#include "hetune/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Strategy options: "key=value,key=value" text, read with typed getters and defaults. */
typedef struct ht_options ht_options;
ht_status ht_options_parse(const char *text, ht_options **out); /* NULL or "" -> empty */
void ht_options_destroy(ht_options *o);
int64_t ht_options_int(const ht_options *o, const char *key, int64_t def);
double ht_options_double(const ht_options *o, const char *key, double def);
const char *ht_options_str(const ht_options *o, const char *key, const char *def);
/* Keys never read by a getter (to report typos); malloc'ed comma list or NULL. */
char *ht_options_unused(const ht_options *o);
/* After the getters ran: an error naming the first value a typed getter could not read whole
 * (k=abc for an integer), else the keys no getter read; the message starts "KIND NAME" ("strategy
 * bayes option kappa=2x: expected a number"). */
ht_status ht_options_check(const ht_options *o, const char *kind, const char *name);
/* A copy of base with "key=value,..." defaults added for the keys base lacks (a composite strategy
 * giving one part other defaults); after the part read it, ht_options_absorb(base, copy) carries
 * which keys were read, or malformed, back to base for ht_options_check. */
ht_status ht_options_derive(const ht_options *base, const char *defaults, ht_options **out);
void ht_options_absorb(const ht_options *base, const ht_options *derived);

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
