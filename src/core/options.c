/* Options of strategies, model kinds and other parts: "key=value,key=value".
 * The typed getters fall back to the default on a missing key; a value they cannot read whole
 * (k=abc, k=3x) is remembered, and ht_options_check reports it with the unread keys, so a typo
 * fails the run instead of silently becoming 0. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hetune/options.h"

#define MAX_OPTIONS 32

struct ht_options {
  int n;
  char *key[MAX_OPTIONS], *value[MAX_OPTIONS];
  int used[MAX_OPTIONS];
  const char *bad_kind[MAX_OPTIONS]; /* what a getter expected and could not read, or NULL */
};

ht_status ht_options_parse(const char *text, ht_options **out) {
  ht_options *o = calloc(1, sizeof *o);
  if (!o) return ht_error(HT_ERR_NOMEM, "out of memory");
  char *copy = ht_strdup(text ? text : ""), *save = NULL;
  for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(tok, '=');
    if (!eq || eq == tok || o->n == MAX_OPTIONS) {
      ht_status st = ht_error(HT_ERR_INVALID, "strategy option '%s': expected key=value", tok);
      free(copy);
      ht_options_destroy(o);
      return st;
    }
    *eq = '\0';
    o->key[o->n] = ht_strdup(tok);
    o->value[o->n++] = ht_strdup(eq + 1);
  }
  free(copy);
  *out = o;
  return HT_OK;
}

void ht_options_destroy(ht_options *o) {
  if (!o) return;
  for (int i = 0; i < o->n; i++) {
    free(o->key[i]);
    free(o->value[i]);
  }
  free(o);
}

static int index_of(const ht_options *o, const char *key) {
  for (int i = 0; o && i < o->n; i++)
    if (strcmp(o->key[i], key) == 0) return i;
  return -1;
}

/* Index of key, marked as read (bookkeeping only: reports unknown keys), or -1. */
static int find(const ht_options *o, const char *key) {
  int i = index_of(o, key);
  if (i >= 0) ((ht_options *)o)->used[i] = 1;
  return i;
}

static void mark_bad(const ht_options *o, int i, const char *kind) {
  ((ht_options *)o)->bad_kind[i] = kind;
}

int64_t ht_options_int(const ht_options *o, const char *key, int64_t def) {
  int i = find(o, key);
  if (i < 0) return def;
  char *end = NULL;
  errno = 0;
  long long x = strtoll(o->value[i], &end, 10);
  if (end == o->value[i] || *end || errno) {
    mark_bad(o, i, "a whole number");
    return def;
  }
  return x;
}

double ht_options_double(const ht_options *o, const char *key, double def) {
  int i = find(o, key);
  if (i < 0) return def;
  char *end = NULL;
  double x = strtod(o->value[i], &end);
  if (end == o->value[i] || *end || !isfinite(x)) {
    mark_bad(o, i, "a number");
    return def;
  }
  return x;
}

const char *ht_options_str(const ht_options *o, const char *key, const char *def) {
  int i = find(o, key);
  return i < 0 ? def : o->value[i];
}

char *ht_options_unused(const ht_options *o) {
  ht_buf b = {0};
  for (int i = 0; o && i < o->n; i++)
    if (!o->used[i]) ht_buf_appendf(&b, "%s%s", b.len ? ", " : "", o->key[i]);
  return b.data;
}

ht_status ht_options_check(const ht_options *o, const char *kind, const char *name) {
  for (int i = 0; o && i < o->n; i++)
    if (o->bad_kind[i])
      return ht_error(HT_ERR_INVALID, "%s %s option %s=%s: expected %s", kind, name, o->key[i], o->value[i],
                      o->bad_kind[i]);
  char *unused = ht_options_unused(o);
  if (!unused) return HT_OK;
  ht_status st = ht_error(HT_ERR_INVALID, "%s %s has no option(s): %s", kind, name, unused);
  free(unused);
  return st;
}

ht_status ht_options_derive(const ht_options *base, const char *defaults, ht_options **out) {
  ht_options *d;
  ht_status st = ht_options_parse(defaults, &d);
  if (st) return st;
  ht_options *o = calloc(1, sizeof *o);
  if (!o) {
    ht_options_destroy(d);
    return ht_error(HT_ERR_NOMEM, "out of memory");
  }
  for (int i = 0; base && i < base->n; i++) {
    o->key[o->n] = ht_strdup(base->key[i]);
    o->value[o->n++] = ht_strdup(base->value[i]);
  }
  for (int i = 0; i < d->n && o->n < MAX_OPTIONS; i++)
    if (index_of(base, d->key[i]) < 0) {
      o->key[o->n] = ht_strdup(d->key[i]);
      o->value[o->n++] = ht_strdup(d->value[i]);
    }
  ht_options_destroy(d);
  *out = o;
  return HT_OK;
}

void ht_options_absorb(const ht_options *base, const ht_options *derived) {
  ht_options *b = (ht_options *)base; /* bookkeeping only, as in find() */
  for (int i = 0; b && derived && i < b->n && i < derived->n; i++) { /* base's keys come first in derived */
    b->used[i] |= derived->used[i];
    if (!b->bad_kind[i]) b->bad_kind[i] = derived->bad_kind[i];
  }
}
