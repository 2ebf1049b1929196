/* random: uniform sampling of valid configs without replacement. Small spaces shuffle their index
 * list lazily; spaces too large to list sample directly and remember what was asked. */
#include <stdlib.h>
#include <string.h>

#include "tune/strategy_util.h"

#define SHUFFLE_LIMIT (1u << 22)

typedef struct rnd_state {
  ht_space *space;
  ht_rng rng;
  uint64_t count, next;
  uint32_t *perm; /* lazily shuffled indices (small spaces) */
  uint64_t *seen; /* open-addressed set of config hashes (large spaces) */
  uint64_t seen_cap, seen_n;
} rnd_state;

static ht_status rnd_init(void **state, ht_space *space, const ht_options *opt, uint64_t seed) {
  (void)opt;
  rnd_state *s = calloc(1, sizeof *s);
  if (!s) return ht_error(HT_ERR_NOMEM, "out of memory");
  s->space = space;
  ht_rng_seed(&s->rng, seed);
  ht_status st = ht_strategy_space_bound(space, &s->count);
  if (!st && s->count <= SHUFFLE_LIMIT) {
    s->perm = malloc(sizeof(uint32_t) * (s->count ? s->count : 1));
    if (!s->perm) st = ht_error(HT_ERR_NOMEM, "out of memory");
    for (uint64_t i = 0; !st && i < s->count; i++) s->perm[i] = (uint32_t)i;
  }
  if (st) {
    free(s);
    return st;
  }
  *state = s;
  return HT_OK;
}

static int seen_insert(rnd_state *s, uint64_t h) {
  if (h == 0) h = 1;
  if (2 * (s->seen_n + 1) > s->seen_cap) {
    uint64_t cap = s->seen_cap ? 2 * s->seen_cap : 1024, *t = calloc(cap, sizeof(uint64_t));
    if (!t) return 0;
    for (uint64_t i = 0; i < s->seen_cap; i++)
      if (s->seen[i]) {
        uint64_t j = s->seen[i] & (cap - 1);
        while (t[j]) j = (j + 1) & (cap - 1);
        t[j] = s->seen[i];
      }
    free(s->seen);
    s->seen = t;
    s->seen_cap = cap;
  }
  uint64_t j = h & (s->seen_cap - 1);
  while (s->seen[j]) {
    if (s->seen[j] == h) return 0;
    j = (j + 1) & (s->seen_cap - 1);
  }
  s->seen[j] = h;
  s->seen_n++;
  return 1;
}

static int rnd_ask(void *state, ht_config *out, int max) {
  rnd_state *s = state;
  int n = 0;
  while (n < max && s->next < s->count) {
    if (s->perm) {
      uint64_t j = s->next + ht_rng_below(&s->rng, s->count - s->next);
      uint32_t t = s->perm[j];
      s->perm[j] = s->perm[s->next];
      s->perm[s->next] = t;
      if (ht_space_get(s->space, t, &out[n])) return n;
    } else {
      int got = 0;
      if (ht_space_sample(s->space, &s->rng, 1, &out[n], &got) || got == 0) return n;
      if (!seen_insert(s, ht_config_hash(&out[n]))) continue;
    }
    s->next++;
    n++;
  }
  return n;
}

static void rnd_tell(void *state, const ht_config *cfg, const ht_result *r) {
  (void)state;
  (void)cfg;
  (void)r;
}

static void rnd_destroy(void *state) {
  rnd_state *s = state;
  free(s->perm);
  free(s->seen);
  free(s);
}

const ht_strategy_ops ht_strategy_random = {"random", "uniform random sampling without replacement", rnd_init,
                                            rnd_ask, rnd_tell, rnd_destroy, ht_strategy_always_batch_free};
