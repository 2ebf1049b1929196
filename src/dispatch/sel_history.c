/* Selector "history": the variant with the lowest time measured at this size, else interpolated
 * from the sizes measured nearby (001's ranking tables), else predicted by a stored model. */
#include "dispatch/dispatch_internal.h"

static int choose(ht_computation *c, const int64_t *sizes, htd_estimate *est) {
  return htd_choose_fastest(c, sizes, 0, est);
}

const htd_selector_ops htd_selector_history = {
    "history", "measured times at the size, else interpolated from nearby sizes, else a stored model", choose};
