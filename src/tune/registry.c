/* The strategy registry: adding a strategy is one file and one line here. model_guided needs the
 * gbt model kind: a build without XGBoost leaves it out, and ht_strategy_check says why. */
#include <string.h>

#include "hetune/model.h"
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
#ifdef HT_HAVE_XGBOOST
  &ht_strategy_model_guided,
#endif
  &ht_strategy_random,
  &ht_strategy_simulated_annealing,
};

int ht_strategy_count(void) { return (int)(sizeof strategies / sizeof strategies[0]); }
const ht_strategy_ops *ht_strategy_at(int i) { return i >= 0 && i < ht_strategy_count() ? strategies[i] : NULL; }

ht_status ht_strategy_check(const char *name) {
  if (!name) return ht_error(HT_ERR_INVALID, "no strategy given");
  if (ht_strategy_find(name)) return HT_OK;
#ifndef HT_HAVE_XGBOOST
  if (strcmp(name, "model_guided") == 0)
    return ht_error_prefix(ht_model_kind_check("gbt"), "strategy model_guided needs the gbt model kind: ");
#endif
  return ht_error(HT_ERR_NOTFOUND, "unknown strategy '%s'", name);
}

const ht_strategy_ops *ht_strategy_find(const char *name) {
  for (int i = 0; i < ht_strategy_count(); i++)
    if (strcmp(strategies[i]->name, name) == 0) return strategies[i];
  return NULL;
}
