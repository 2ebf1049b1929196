/* Selector "rule": a fixed rule written by the user, an expression of the sizes giving the variant
 * index ("N < 65536 ? 0 : 1"). No estimates, no learning: what a hand-written dispatcher does. */
#include <math.h>

#include "dispatch/dispatch_internal.h"

static int choose(ht_computation *c, const int64_t *sizes, htd_estimate *est) {
  const ht_spec *s = c->spec0;
  ht_value vars[HTD_MAX_SIZES];
  for (int i = 0; i < s->n_sizes; i++) vars[i] = ht_int(sizes[i]);
  for (int i = 0; i < c->n_variants; i++) est[i] = (htd_estimate){NAN, NAN, NAN, NAN, NAN, HT_SRC_RULE, 0, 0};
  int64_t v;
  ht_status st = ht_expr_eval_int(c->rule, vars, &v);
  if (st) return ht_error_prefix(st, "%s: rule '%s': ", c->name, c->rule_text), -1;
  if (v < 0 || v >= c->n_variants)
    return ht_error(HT_ERR_INVALID, "%s: rule '%s' gave variant %lld; the computation has %d", c->name, c->rule_text,
                    (long long)v, c->n_variants),
           -1;
  est[v].calibrated = 1;
  return (int)v;
}

const htd_selector_ops htd_selector_rule = {"rule", "a fixed expression of the sizes giving the variant index",
                                            choose};
