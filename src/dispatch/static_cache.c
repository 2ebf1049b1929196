/* The static cache (000's): decisions exported as a C header an application compiles in, so it
 * decides with no store and no model, and hetune itself answers from it first. */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch/dispatch_internal.h"

typedef struct entry {
  uint64_t key;
  int variant;
  const char *config;
  double time_s;
  char source;
} entry;

typedef struct entries {
  entry *e;
  int n, cap;
} entries;

static int has_key(const entries *l, uint64_t key) {
  for (int i = 0; i < l->n; i++)
    if (l->e[i].key == key) return 1;
  return 0;
}

static ht_status add_decision(ht_computation *c, const int64_t *sizes, entries *l) {
  if (has_key(l, ht_computation_size_key(c, sizes))) return HT_OK;
  ht_decision d;
  ht_status st = ht_computation_decide(c, sizes, &d);
  if (st) return st;
  if (d.source == HT_SRC_EXPLORE) return HT_OK; /* nothing known yet: no decision to keep */
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 64;
    entry *e = realloc(l->e, sizeof *e * (size_t)cap);
    if (!e) return ht_error(HT_ERR_NOMEM, "out of memory");
    l->e = e;
    l->cap = cap;
  }
  int measured = d.source == HT_SRC_MEASURED || d.source == HT_SRC_STATIC;
  l->e[l->n++] = (entry){ht_computation_size_key(c, sizes), d.variant, d.config, d.pred_total_s, measured ? 'M' : 'P'};
  return HT_OK;
}

static int by_key(const void *a, const void *b) {
  uint64_t x = ((const entry *)a)->key, y = ((const entry *)b)->key;
  return x < y ? -1 : x > y;
}

static ht_status collect(ht_computation *c, const int64_t *sizes, int n, entries *l) {
  ht_status st = HT_OK;
  for (int v = 0; v < c->n_variants && !st; v++)
    for (int i = 0; i < c->v[v].hist.n && !st; i++) st = add_decision(c, c->v[v].hist.pts[i].rep, l);
  for (int i = 0; i < n && !st; i++) st = add_decision(c, sizes + (size_t)i * (size_t)c->spec0->n_sizes, l);
  if (!st) qsort(l->e, (size_t)l->n, sizeof *l->e, by_key);
  return st;
}

static int is_identifier(const char *s) {
  if (!s || !(isalpha((unsigned char)*s) || *s == '_')) return 0;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && *s != '_') return 0;
  return 1;
}

/* A C string literal of s. */
static void put_string(FILE *out, const char *s) {
  fputc('"', out);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fprintf(out, "\\%c", *s);
    else if (isprint((unsigned char)*s)) fputc(*s, out);
    else fprintf(out, "\\%03o", (unsigned char)*s);
  }
  fputc('"', out);
}

static void put_header(const ht_computation *c, const char *sym, FILE *out) {
  fprintf(out, "/* The decisions of hetune computation ");
  put_string(out, c->name);
  fprintf(out, ", exported by hetune dispatch export-cache: compile it into the\n"
               " * application; %s_lookup(sizes) decides with no store, and ht_computation_set_static_cache(c,\n"
               " * %s_cache, %s_cache_size) makes hetune answer from it first. Variants:\n",
          sym, sym, sym);
  for (int i = 0; i < c->n_variants; i++) fprintf(out, " *   %d: %s\n", i, c->v[i].label);
  fprintf(out, " * Sizes (in this order):");
  for (int i = 0; i < c->spec0->n_sizes; i++) fprintf(out, " %s", c->spec0->size_names[i]);
  fprintf(out, " */\n#ifndef HETUNE_CACHE_%s_H\n#define HETUNE_CACHE_%s_H\n\n#include <stdint.h>\n\n", sym, sym);
  fprintf(out, "#ifdef HETUNE_DISPATCH_H\ntypedef ht_static_entry %s_entry;\n#else\n"
               "typedef struct %s_entry {\n  uint64_t key;\n  int variant;\n  const char *config;\n"
               "  int64_t time_ns;\n  char source; /* 'M' measured, 'P' predicted */\n} %s_entry;\n#endif\n\n",
          sym, sym, sym);
}

static void put_entries(const entries *l, const char *sym, FILE *out) {
  fprintf(out, "static const %s_entry %s_cache[] = {\n", sym, sym);
  for (int i = 0; i < l->n; i++) {
    const entry *e = &l->e[i];
    double ns = isfinite(e->time_s) ? e->time_s * 1e9 : -1;
    fprintf(out, "    {0x%016llxULL, %d, ", (unsigned long long)e->key, e->variant);
    put_string(out, e->config);
    fprintf(out, ", %lld, '%c'},\n", (long long)llround(ns), e->source);
  }
  if (!l->n) fprintf(out, "    {0, -1, \"\", -1, 'P'} /* empty: no entry matches a key */\n");
  fprintf(out, "};\nenum { %s_cache_size = %d };\n\n", sym, l->n);
}

/* The same key as ht_computation_size_key: htd_bucket and htd_bucket_rep, written out. */
static void put_lookup(const ht_computation *c, const char *sym, FILE *out) {
  fprintf(out,
          "static inline uint64_t %s_key(const int64_t *sizes) {\n"
          "  uint64_t h = 0x%016llxULL;\n"
          "  for (int i = 0; i < %d; i++) {\n"
          "    int64_t n = sizes[i], rep = n;\n",
          sym, (unsigned long long)c->identity, c->spec0->n_sizes);
  if (c->bucket != HTD_BUCKET_EXACT)
    fprintf(out,
            "    if (n > 1) {\n"
            "      int64_t p = 1;\n"
            "      while (p <= n / %d) p *= %d;\n"
            "      rep = (int64_t)((double)p * %.17g + 0.5);\n"
            "    }\n",
            c->bucket == HTD_BUCKET_LOG2 ? 2 : 10, c->bucket == HTD_BUCKET_LOG2 ? 2 : 10,
            c->bucket == HTD_BUCKET_LOG2 ? 1.4142135623730951 : 3.1622776601683795);
  fprintf(out,
          "    h = (h ^ (uint64_t)rep) * 0x100000001b3ULL;\n"
          "    h ^= h >> 29;\n"
          "  }\n"
          "  return h ? h : 1;\n"
          "}\n\n"
          "/* The decision at sizes, or NULL when the cache has none. */\n"
          "static inline const %s_entry *%s_lookup(const int64_t *sizes) {\n"
          "  uint64_t key = %s_key(sizes);\n"
          "  int lo = 0, hi = %s_cache_size - 1;\n"
          "  while (lo <= hi) {\n"
          "    int mid = lo + (hi - lo) / 2;\n"
          "    if (%s_cache[mid].key == key) return &%s_cache[mid];\n"
          "    if (%s_cache[mid].key < key) lo = mid + 1;\n"
          "    else hi = mid - 1;\n"
          "  }\n"
          "  return 0;\n"
          "}\n\n#endif\n",
          sym, sym, sym, sym, sym, sym, sym);
}

ht_status ht_computation_export_cache(ht_computation *c, const int64_t *sizes, int n, const char *symbol, FILE *out) {
  if (!c || !c->finished || (n && !sizes) || n < 0 || !out)
    return ht_error(HT_ERR_INVALID, "ht_computation_export_cache: bad arguments");
  if (!is_identifier(symbol))
    return ht_error(HT_ERR_INVALID, "export cache: symbol '%s' is not a C identifier", symbol ? symbol : "");
  entries l = {0};
  double explore = c->explore;
  c->explore = 0; /* the decisions themselves, not a roll of exploration */
  ht_status st = collect(c, sizes, n, &l);
  c->explore = explore;
  if (!st) {
    put_header(c, symbol, out);
    put_entries(&l, symbol, out);
    put_lookup(c, symbol, out);
    if (ferror(out)) st = ht_error(HT_ERR_IO, "export cache: write error");
  }
  free(l.e);
  return st;
}
