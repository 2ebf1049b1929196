/* auto: picks a strategy for the space and hands every ask/tell to it.
 *
 * The choice is measured, not guessed: `hetune strategy-bench` on the recorded spaces in
 * data/spaces (table in docs/strategies.md and BENCHMARKS.md) decides the default. Rules:
 *   - a space of at most `small` valid configs (default 16) is measured completely, in random
 *     order (no model can pay for itself there);
 *   - otherwise the strategy that scored best over the recorded spaces, DEFAULT_CHOICE below.
 * Options: use=NAME forces a strategy; small=N; every other option is passed to the chosen
 * strategy (so "auto" accepts the options of the strategy it picks). */
#include <stdlib.h>
#include <string.h>

#include "tune/strategy_util.h"

#define DEFAULT_CHOICE "hybrid"

typedef struct auto_state {
  const ht_strategy_ops *ops;
  void *inner;
} auto_state;

static ht_status auto_init(void **state, ht_space *space, const ht_options *opt, uint64_t seed) {
  uint64_t count = 0;
  ht_status st = ht_strategy_space_bound(space, &count);
  if (st) return st;
  const char *use = ht_options_str(opt, "use", NULL);
  int64_t small = ht_options_int(opt, "small", 16);
  const char *name = use ? use : count <= (uint64_t)small ? "random" : DEFAULT_CHOICE;
  const ht_strategy_ops *ops = ht_strategy_find(name);
  if (!ops && ht_strategy_check(name) == HT_ERR_UNSUPPORTED) return ht_error_prefix(HT_ERR_UNSUPPORTED, "auto: ");
  if (!ops || strcmp(name, "auto") == 0) return ht_error(HT_ERR_NOTFOUND, "auto: unknown strategy '%s'", name);
  auto_state *s = calloc(1, sizeof *s);
  if (!s) return ht_error(HT_ERR_NOMEM, "out of memory");
  s->ops = ops;
  st = ops->init(&s->inner, space, opt, seed);
  if (st) {
    free(s);
    return st;
  }
  if (count == UINT64_MAX) ht_log(3, "auto: %s for a space too large to count first", name);
  else ht_log(3, "auto: %s for %llu valid configs", name, (unsigned long long)count);
  *state = s;
  return HT_OK;
}

static int auto_ask(void *state, ht_config *out, int max) {
  auto_state *s = state;
  return s->ops->ask(s->inner, out, max);
}

static void auto_tell(void *state, const ht_config *cfg, const ht_result *r) {
  auto_state *s = state;
  s->ops->tell(s->inner, cfg, r);
}

static void auto_destroy(void *state) {
  auto_state *s = state;
  s->ops->destroy(s->inner);
  free(s);
}

static int auto_batch_free(const void *state) {
  const auto_state *s = state;
  return s->ops->batch_free && s->ops->batch_free(s->inner);
}

const ht_strategy_ops ht_strategy_auto = {"auto", "picks the strategy that scored best on the recorded spaces", auto_init,
                                          auto_ask, auto_tell, auto_destroy, auto_batch_free};
