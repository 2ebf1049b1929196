/* A set of configs and the sampling of unasked configs, shared by the strategies. */
#include <stdlib.h>
#include <string.h>

#include "tune/strategy_util.h"

void ht_config_set_init(ht_config_set *s) { memset(s, 0, sizeof *s); }

void ht_config_set_free(ht_config_set *s) {
  free(s->slot);
  free(s->val);
  free(s->used);
  memset(s, 0, sizeof *s);
}

void ht_config_set_clear(ht_config_set *s) {
  if (s->cap) memset(s->used, 0, s->cap);
  s->n = 0;
}

static uint64_t find_slot(const ht_config_set *s, const ht_config *c) {
  uint64_t i = ht_config_hash(c) & (s->cap - 1);
  while (s->used[i] && !ht_config_equal(&s->slot[i], c)) i = (i + 1) & (s->cap - 1);
  return i;
}

int ht_config_set_has(const ht_config_set *s, const ht_config *c) {
  return s->cap && s->used[find_slot(s, c)];
}

static int grow(ht_config_set *s) {
  uint64_t cap = s->cap ? s->cap * 2 : 256;
  ht_config_set t = {malloc(cap * sizeof(ht_config)), calloc(cap, sizeof(double)), calloc(cap, 1), cap, 0};
  if (!t.slot || !t.val || !t.used) {
    ht_config_set_free(&t);
    return 0;
  }
  for (uint64_t i = 0; i < s->cap; i++)
    if (s->used[i]) {
      uint64_t j = find_slot(&t, &s->slot[i]);
      t.slot[j] = s->slot[i];
      t.val[j] = s->val[i];
      t.used[j] = 1;
      t.n++;
    }
  ht_config_set_free(s);
  *s = t;
  return 1;
}

int ht_config_set_add(ht_config_set *s, const ht_config *c) {
  if (2 * (s->n + 1) > s->cap && !grow(s)) return -1;
  uint64_t i = find_slot(s, c);
  if (s->used[i]) return 0;
  s->slot[i] = *c;
  s->val[i] = 0;
  s->used[i] = 1;
  s->n++;
  return 1;
}

int ht_config_set_put(ht_config_set *s, const ht_config *c, double v) {
  if (ht_config_set_add(s, c) < 0) return 0;
  s->val[find_slot(s, c)] = v;
  return 1;
}

const double *ht_config_set_value(const ht_config_set *s, const ht_config *c) {
  if (!s->cap) return NULL;
  uint64_t i = find_slot(s, c);
  return s->used[i] ? &s->val[i] : NULL;
}

/* Draws in rounds; when the unasked part is small, the draws mostly hit asked configs, so after a
 * few rounds the whole valid list is scanned instead (fine: such spaces are small). `taken` holds
 * what this call already picked, so de-duplication stays linear. */
static int take(const ht_config_set *asked, ht_config_set *taken, const ht_config *c) {
  return !ht_config_set_has(asked, c) && ht_config_set_add(taken, c) == 1;
}

int ht_sample_unasked(ht_space *space, ht_rng *rng, const ht_config_set *asked, ht_config *out, int max) {
  uint64_t count = 0;
  if (max <= 0 || ht_strategy_space_bound(space, &count) || count <= asked->n) return 0;
  int got = 0;
  ht_config *draw = malloc(sizeof(ht_config) * (size_t)max);
  ht_config_set taken = {0};
  if (!draw) return 0;
  for (int round = 0; round < 8 && got < max; round++) {
    int n = 0;
    if (ht_space_sample(space, rng, max, draw, &n)) break;
    for (int i = 0; i < n && got < max; i++)
      if (take(asked, &taken, &draw[i])) out[got++] = draw[i];
  }
  free(draw);
  if (got < max && count <= (UINT64_C(1) << 24)) { /* scan from a random start */
    uint64_t start = ht_rng_below(rng, count);
    for (uint64_t k = 0; k < count && got < max; k++) {
      ht_config c;
      if (ht_space_get(space, (start + k) % count, &c)) break;
      if (take(asked, &taken, &c)) out[got++] = c;
    }
  }
  ht_config_set_free(&taken);
  return got;
}
