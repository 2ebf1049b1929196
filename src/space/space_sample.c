/* Uniform sampling of distinct valid configs, and neighbourhoods. */
#include <stdlib.h>
#include <string.h>

#include "space/space_internal.h"

#define MATERIALISE_MAX (UINT64_C(1) << 24) /* beyond this, stream through the enumeration instead */
#define RARE_FRACTION 1e-3                   /* below this valid fraction, rejection is not worth trying */
#define ENUMERABLE 5e7                       /* valid configs one enumeration pass can afford */
#define MAX_TRIES 2e7                        /* rejection draws before enumerating anyway (~2 s) */

/* ---- a set of configs (indices into the output array) ---- */
typedef struct cset {
  int32_t *slot;
  size_t mask;
} cset;

static int cset_init(cset *h, int n) {
  size_t cap = 16;
  while (cap < (size_t)n * 2) cap *= 2;
  h->slot = malloc(cap * sizeof *h->slot);
  h->mask = cap - 1;
  if (h->slot) memset(h->slot, -1, cap * sizeof *h->slot);
  return h->slot != NULL;
}

/* Inserts out[k] unless an equal config is there; returns 1 when inserted. */
static int cset_add(cset *h, const ht_config *out, int k) {
  size_t i = (size_t)ht_config_hash(&out[k]) & h->mask;
  for (; h->slot[i] >= 0; i = (i + 1) & h->mask)
    if (ht_config_equal(&out[h->slot[i]], &out[k])) return 0;
  h->slot[i] = k;
  return 1;
}

/* One rejection attempt: draw each parameter uniformly and stop at the first failing level, so a
 * rejected draw costs little. Accepted draws are uniform over the valid configs. */
static int draw(ht_space *s, ht_rng *rng, ht_value *vars, ht_config *c) {
  c->n = s->n_params;
  for (int p = 0; p < s->n_params; p++) {
    c->idx[p] = (int32_t)ht_rng_below(rng, (uint64_t)s->params[p].n);
    vars[p] = s->params[p].values[c->idx[p]];
    if (!ht_space_check_level(s, p, vars)) return 0;
  }
  return ht_space_filter_ok(s, c);
}

typedef struct rejection {
  cset h;
  int got;
  uint64_t tries;
} rejection;

static void rejection_round(ht_space *s, ht_rng *rng, int n, ht_config *out, rejection *r, uint64_t cap) {
  for (uint64_t a = 0; a < cap && r->got < n; a++, r->tries++)
    if (draw(s, rng, s->vars, &out[r->got]) && cset_add(&r->h, out, r->got)) r->got++;
}

/* Rejection first (cheap, uniform, no counting); a second, longer round only when the valid set
 * looks too big to enumerate. 1 = done, 0 = enumerate instead, -1 = out of memory. */
static int sample_rejection(ht_space *s, ht_rng *rng, int n, ht_config *out) {
  rejection r = {.got = 0};
  if (!cset_init(&r.h, n)) return -1;
  rejection_round(s, rng, n, out, &r, 2000 + 200 * (uint64_t)n);
  double cart = (double)ht_space_cartesian_size(s);
  double est_valid = cart * (r.got + 1) / (double)r.tries;
  if (r.got < n && est_valid > ENUMERABLE) {
    double need = 20.0 * (n - r.got) * (double)r.tries / (r.got + 1);
    rejection_round(s, rng, n, out, &r, need < MAX_TRIES ? (uint64_t)need : (uint64_t)MAX_TRIES);
  }
  free(r.h.slot);
  return r.got == n;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* n distinct indices in [0, count), n <= count, sorted. */
static uint64_t *pick_indices(ht_rng *rng, uint64_t count, int n) {
  uint64_t *pick = malloc(((size_t)n + 1) * sizeof *pick);
  if (!pick) return NULL;
  if ((uint64_t)n * 2 >= count) { /* dense: partial Fisher-Yates over all indices */
    uint64_t *all = malloc((size_t)count * sizeof *all + 1);
    if (!all) {
      free(pick);
      return NULL;
    }
    for (uint64_t i = 0; i < count; i++) all[i] = i;
    for (int k = 0; k < n; k++) {
      uint64_t j = (uint64_t)k + ht_rng_below(rng, count - (uint64_t)k), t = all[k];
      all[k] = all[j];
      all[j] = t;
      pick[k] = all[k];
    }
    free(all);
  } else { /* sparse: draw, sort, drop duplicates, draw the missing ones again */
    int k = 0;
    while (k < n) {
      for (; k < n; k++) pick[k] = ht_rng_below(rng, count);
      qsort(pick, (size_t)n, sizeof *pick, cmp_u64);
      int w = 1;
      for (int r = 1; r < n; r++)
        if (pick[r] != pick[w - 1]) pick[w++] = pick[r];
      k = w;
    }
  }
  qsort(pick, (size_t)n, sizeof *pick, cmp_u64);
  return pick;
}

typedef struct streamer {
  const uint64_t *pick;
  int n, k;
  uint64_t i;
  ht_config *out;
} streamer;

static int stream_visit(const ht_config *c, void *ctx) {
  streamer *st = ctx;
  if (st->pick[st->k] == st->i++) st->out[st->k++] = *c;
  return st->k == st->n;
}

static void shuffle(ht_rng *rng, ht_config *out, int n) {
  for (int k = n - 1; k > 0; k--) {
    uint64_t j = ht_rng_below(rng, (uint64_t)k + 1);
    ht_config t = out[k];
    out[k] = out[j];
    out[j] = t;
  }
}

/* Exact sampling by index: from the materialised list, or one streaming pass when the list would
 * be too large to keep. */
static ht_status sample_by_index(ht_space *s, ht_rng *rng, int n, ht_config *out, int *got) {
  uint64_t count;
  ht_status st = ht_space_count(s, &count);
  if (st) return st;
  if ((uint64_t)n > count) n = (int)count;
  if (n == 0) return HT_OK;
  if (count <= MATERIALISE_MAX && (st = ht_space_materialise(s))) return st;
  uint64_t *pick = pick_indices(rng, count, n);
  if (!pick) return ht_error(HT_ERR_NOMEM, "out of memory sampling");
  if (s->listed) {
    for (int k = 0; k < n; k++) ht_space_list_get(s, pick[k], &out[k]);
  } else {
    streamer sm = {pick, n, 0, 0, out};
    st = ht_space_enumerate(s, stream_visit, &sm);
  }
  free(pick);
  if (st) return st;
  shuffle(rng, out, n);
  *got = n;
  return HT_OK;
}

ht_status ht_space_sample(ht_space *s, ht_rng *rng, int n, ht_config *out, int *got) {
  if (!s || !rng || !got || (n > 0 && !out)) return ht_error(HT_ERR_INVALID, "ht_space_sample: bad arguments");
  *got = 0;
  if (n <= 0) return HT_OK;
  ht_status st = ht_space_plan(s);
  if (st) return st;
  if (!s->constant_ok) return HT_OK;
  /* Once counted, small or sparse-but-enumerable spaces are sampled exactly by index. */
  int by_index = s->listed || (s->counted && (s->count <= (uint64_t)n ||
                                               ((double)s->count <= ENUMERABLE &&
                                                (double)s->count < RARE_FRACTION * (double)ht_space_cartesian_size(s))));
  if (!by_index) {
    int done = sample_rejection(s, rng, n, out);
    if (done < 0) return ht_error(HT_ERR_NOMEM, "out of memory sampling");
    if (done) {
      *got = n;
      return HT_OK;
    }
  }
  /* Rejection was unlucky or hopeless: the valid set is small or sparse, so enumerating is affordable. */
  return sample_by_index(s, rng, n, out, got);
}

/* ---- neighbourhoods ---- */
static void try_neighbour(ht_space *s, const ht_config *c, int p, int v, ht_config *out, int max, int *n) {
  if (*n >= max) return;
  ht_config t = *c;
  t.idx[p] = v;
  if (ht_space_is_valid(s, &t)) out[(*n)++] = t;
}

ht_status ht_space_neighbours(ht_space *s, const ht_config *c, ht_neighbour_kind kind, ht_config *out, int max,
                              int *n) {
  if (!s || !c || !n || (max > 0 && !out)) return ht_error(HT_ERR_INVALID, "ht_space_neighbours: bad arguments");
  *n = 0;
  if (c->n != s->n_params) return ht_error(HT_ERR_INVALID, "config has %d parameters, the space %d", c->n, s->n_params);
  for (int p = 0; p < s->n_params; p++)
    if (c->idx[p] < 0 || c->idx[p] >= s->params[p].n)
      return ht_error(HT_ERR_INVALID, "config index %d of parameter '%s' is out of range", c->idx[p],
                      s->params[p].name);
  for (int p = 0; p < s->n_params && *n < max; p++) {
    if (kind == HT_NEIGH_ADJACENT) {
      if (c->idx[p] > 0) try_neighbour(s, c, p, c->idx[p] - 1, out, max, n);
      if (c->idx[p] + 1 < s->params[p].n) try_neighbour(s, c, p, c->idx[p] + 1, out, max, n);
    } else {
      for (int v = 0; v < s->params[p].n && *n < max; v++)
        if (v != c->idx[p]) try_neighbour(s, c, p, v, out, max, n);
    }
  }
  return HT_OK;
}
