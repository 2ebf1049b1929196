/* brute_force: every valid config in enumeration order, walked with a cursor: a huge space starts
 * at once, nothing is counted or listed first. */
#include <stdlib.h>

#include "tune/strategy_util.h"

typedef struct bf_state {
  ht_space *space;
  ht_space_cursor cur;
} bf_state;

static ht_status bf_init(void **state, ht_space *space, const ht_options *opt, uint64_t seed) {
  (void)opt;
  (void)seed;
  bf_state *s = calloc(1, sizeof *s);
  if (!s) return ht_error(HT_ERR_NOMEM, "out of memory");
  s->space = space;
  *state = s;
  return HT_OK;
}

static int bf_ask(void *state, ht_config *out, int max) {
  bf_state *s = state;
  int n = 0, found = 1;
  while (n < max && ht_space_next(s->space, &s->cur, &out[n], &found) == HT_OK && found) n++;
  return n;
}

static void bf_tell(void *state, const ht_config *cfg, const ht_result *r) {
  (void)state;
  (void)cfg;
  (void)r;
}

const ht_strategy_ops ht_strategy_brute_force = {"brute_force", "every valid config, in order", bf_init, bf_ask,
                                                 bf_tell, free, ht_strategy_always_batch_free};
