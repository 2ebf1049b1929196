/* Helpers shared by the search strategies (internal). */
#ifndef HETUNE_STRATEGY_UTIL_H
#define HETUNE_STRATEGY_UTIL_H

#include <math.h>

#include "hetune/tune.h"

/* A set of configs (open addressing on ht_config_hash, full compare on collision), optionally
 * mapping each to a value (an objective). A zeroed struct is an empty set. */
typedef struct ht_config_set {
  ht_config *slot;
  double *val;
  uint8_t *used;
  uint64_t cap, n;
} ht_config_set;

void ht_config_set_init(ht_config_set *s);
void ht_config_set_free(ht_config_set *s);
/* Empties the set but keeps its memory, for a set refilled again and again. */
void ht_config_set_clear(ht_config_set *s);
int ht_config_set_has(const ht_config_set *s, const ht_config *c);
/* 1 when c was added, 0 when already there, -1 when out of memory. */
int ht_config_set_add(ht_config_set *s, const ht_config *c);
/* Adds c or updates its value: 1, or 0 when out of memory. */
int ht_config_set_put(ht_config_set *s, const ht_config *c, double v);
/* The value stored with c (0 when added without one), or NULL when c is not in the set. */
const double *ht_config_set_value(const ht_config_set *s, const ht_config *c);

/* How many valid configs a strategy may count on: the exact count when counting is cheap, else
 * UINT64_MAX ("more than will ever be asked"), so a huge space is searched at once instead of
 * being counted first. */
static inline ht_status ht_strategy_space_bound(ht_space *space, uint64_t *bound) {
  int exact;
  ht_status st = ht_space_size(space, HT_SPACE_COUNT_STEPS, bound, &exact);
  if (!st && !exact) *bound = UINT64_MAX;
  return st;
}

/* The value a strategy minimises: the median time of a successful evaluation, +inf otherwise. */
static inline double ht_objective(const ht_result *r) {
  return r->status == HT_EVAL_OK && isfinite(r->time_s) ? r->time_s : INFINITY;
}

/* What an evaluation cost the tuner (its wall time), 0 when unknown: strategies that budget their
 * own time against the evaluations' read it. */
static inline double ht_eval_wall(const ht_result *r) {
  return r->wall_s > 0 && isfinite(r->wall_s) ? r->wall_s : 0.0;
}

/* Up to max valid configs not in `asked`, drawn uniformly from the space. Returns how many. */
int ht_sample_unasked(ht_space *space, ht_rng *rng, const ht_config_set *asked, ht_config *out, int max);

/* ht_strategy_ops.batch_free of a strategy whose choices never depend on the batch. */
static inline int ht_strategy_always_batch_free(const void *state) {
  (void)state;
  return 1;
}

#endif
