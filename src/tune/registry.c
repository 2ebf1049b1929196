/* The strategy registry: adding a strategy is one file and one line here. */
#include <string.h>

#include "hetune/tune.h"

extern const ht_strategy_ops ht_strategy_auto;
extern const ht_strategy_ops ht_strategy_bayes;
extern const ht_strategy_ops ht_strategy_brute_force;
extern const ht_strategy_ops ht_strategy_cmaes;
extern const ht_strategy_ops ht_strategy_genetic;
extern const ht_strategy_ops ht_strategy_greedy_ils;
extern const ht_strategy_ops ht_strategy_hybrid;
extern const ht_strategy_ops ht_strategy_model_guided;
extern const ht_strategy_ops ht_strategy_random;
extern const ht_strategy_ops ht_strategy_simulated_annealing;

static const ht_strategy_ops *const strategies[] = {
  &ht_strategy_auto,
  &ht_strategy_bayes,
  &ht_strategy_brute_force,
  &ht_strategy_cmaes,
  &ht_strategy_genetic,
  &ht_strategy_greedy_ils,
  &ht_strategy_hybrid,
  &ht_strategy_model_guided,
  &ht_strategy_random,
  &ht_strategy_simulated_annealing,
};

int ht_strategy_count(void) { return (int)(sizeof strategies / sizeof strategies[0]); }
const ht_strategy_ops *ht_strategy_at(int i) { return i >= 0 && i < ht_strategy_count() ? strategies[i] : NULL; }

const ht_strategy_ops *ht_strategy_find(const char *name) {
  for (int i = 0; i < ht_strategy_count(); i++)
    if (strcmp(strategies[i]->name, name) == 0) return strategies[i];
  return NULL;
}
