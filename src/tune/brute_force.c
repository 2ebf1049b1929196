/* brute_force: every valid config in enumeration order. */
#include <stdlib.h>

#include "hetune/tune.h"

typedef struct bf_state {
  ht_space *space;
  uint64_t next, count;
} bf_state;

static ht_status bf_init(void **state, ht_space *space, const ht_options *opt, uint64_t seed) {
  (void)opt;
  (void)seed;
  bf_state *s = calloc(1, sizeof *s);
  if (!s) return ht_error(HT_ERR_NOMEM, "out of memory");
  s->space = space;
  ht_status st = ht_space_count(space, &s->count);
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return HT_OK;
}

static int bf_ask(void *state, ht_config *out, int max) {
  bf_state *s = state;
  int n = 0;
  while (n < max && s->next < s->count && ht_space_get(s->space, s->next, &out[n]) == HT_OK) {
    s->next++;
    n++;
  }
  return n;
}

static void bf_tell(void *state, const ht_config *cfg, const ht_result *r) {
  (void)state;
  (void)cfg;
  (void)r;
}

const ht_strategy_ops ht_strategy_brute_force = {"brute_force", "every valid config, in order", bf_init, bf_ask,
                                                 bf_tell, free};
