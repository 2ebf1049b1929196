/* The in-memory decision cache: open addressing with linear probing, keys hashed from the size
 * bucket, so a warm decision is one multiply, a probe or two and a copy. A slot holds a decision
 * while its key is set and its generation is the cache's: clearing is a new generation, not a pass
 * over every slot (drift clears the cache, and a cache of thousands of sizes took tens of
 * microseconds to wipe, at every change of speed). */
#include <stdlib.h>
#include <string.h>

#include "dispatch/dispatch_internal.h"

static uint32_t home(const htd_cache *c, uint64_t key) {
  return (uint32_t)((key * 0x9e3779b97f4a7c15ULL) >> 32) & (c->cap - 1);
}

static int held(const htd_cache *c, uint32_t i) { return c->slots[i].key && c->slots[i].gen == c->gen; }

void htd_cache_free(htd_cache *c) {
  free(c->slots);
  memset(c, 0, sizeof *c);
}

void htd_cache_clear(htd_cache *c) {
  if (++c->gen == 0 && c->slots) memset(c->slots, 0, sizeof *c->slots * c->cap); /* wrapped around */
  c->used = 0;
  c->changes++;
}

htd_slot *htd_cache_slot(htd_cache *c, uint64_t key) {
  if (!c->used) return NULL;
  for (uint32_t i = home(c, key);; i = (i + 1) & (c->cap - 1)) {
    if (!held(c, i)) return NULL;
    if (c->slots[i].key == key) return &c->slots[i];
  }
}

static void insert(htd_cache *c, const htd_slot *slot) {
  uint32_t i = home(c, slot->key);
  while (held(c, i) && c->slots[i].key != slot->key) i = (i + 1) & (c->cap - 1);
  if (!held(c, i)) c->used++;
  c->slots[i] = *slot;
  c->slots[i].gen = c->gen;
}

static ht_status grow(htd_cache *c) {
  htd_cache bigger = {calloc(c->cap ? 2 * (size_t)c->cap : 64, sizeof(htd_slot)), c->cap ? 2 * c->cap : 64, 0,
                      c->changes, 0};
  if (!bigger.slots) return ht_error(HT_ERR_NOMEM, "out of memory");
  for (uint32_t i = 0; i < c->cap; i++)
    if (held(c, i)) insert(&bigger, &c->slots[i]);
  free(c->slots);
  *c = bigger;
  return HT_OK;
}

ht_status htd_cache_put(htd_cache *c, uint64_t key, const ht_decision *d) {
  if (2 * (c->used + 1) > c->cap) {
    ht_status st = grow(c);
    if (st) return st;
  }
  insert(c, &(htd_slot){key, *d, 0, 0, 0, 0}); /* a new decision: not settled, re-probes not searched */
  c->changes++;
  return HT_OK;
}

/* Backward-shift deletion keeps every probe chain unbroken without tombstones. */
void htd_cache_drop(htd_cache *c, uint64_t key) {
  if (!c->used) return;
  uint32_t i = home(c, key), mask = c->cap - 1;
  while (held(c, i) && c->slots[i].key != key) i = (i + 1) & mask;
  if (!held(c, i)) return;
  c->slots[i].key = 0;
  c->used--;
  c->changes++;
  for (uint32_t j = (i + 1) & mask; held(c, j); j = (j + 1) & mask) {
    uint32_t h = home(c, c->slots[j].key);
    /* the entry at j may move to the hole at i when its home is not cyclically in (i, j] */
    if ((j > i && (h <= i || h > j)) || (j < i && h <= i && h > j)) {
      c->slots[i] = c->slots[j];
      c->slots[j].key = 0;
      i = j;
    }
  }
}
