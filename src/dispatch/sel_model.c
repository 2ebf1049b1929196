/* Selector "model": 000's and 001's predicted-time argmin: a stored model of each variant's kernel
 * time plus its transfers, where no time was measured at this very size. */
#include "dispatch/dispatch_internal.h"

static int choose(ht_computation *c, const int64_t *sizes, htd_estimate *est) {
  return htd_choose_fastest(c, sizes, 1, est);
}

const htd_selector_ops htd_selector_model = {
    "model", "a stored model's kernel time plus transfers, unless measured at this size", choose};
