/* Where things are in a spec's text, and the errors that name them. jansson keeps no positions
 * for keys or values, so the text (already valid JSON when these run) is scanned again. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec/spec_internal.h"

/* ---- a small scanner over valid JSON text ---- */

static const char *ws(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
  return p;
}

/* p at the opening quote; returns just past the closing one. */
static const char *skip_string(const char *p) {
  for (p++; *p && *p != '"'; p++)
    if (*p == '\\' && p[1]) p++;
  return *p ? p + 1 : p;
}

static const char *skip_value(const char *p) {
  p = ws(p);
  if (*p == '"') return skip_string(p);
  if (*p != '{' && *p != '[') {
    while (*p && !strchr(",}] \t\r\n", *p)) p++;
    return p;
  }
  int depth = 0;
  do {
    if (*p == '"') {
      p = skip_string(p);
      continue;
    }
    if (*p == '{' || *p == '[') depth++;
    else if (*p == '}' || *p == ']') depth--;
    p++;
  } while (depth > 0 && *p);
  return p;
}

const char *spec_text_member(const char *obj, const char *key, int want_value) {
  if (!obj || !key) return NULL;
  obj = ws(obj);
  if (*obj != '{') return NULL;
  size_t klen = strlen(key);
  for (const char *p = ws(obj + 1); *p == '"'; p = ws(p + 1)) {
    const char *name = p, *end = skip_string(p);
    p = ws(end);
    if (*p != ':') return NULL;
    const char *value = ws(p + 1);
    /* keys written with escapes do not match here; callers then fall back to a text search */
    if ((size_t)(end - name) == klen + 2 && strncmp(name + 1, key, klen) == 0) return want_value ? value : name;
    p = ws(skip_value(value));
    if (*p != ',') return NULL;
  }
  return NULL;
}

const char *spec_text_element(const char *arr, size_t i) {
  if (!arr) return NULL;
  const char *p = ws(arr);
  if (*p != '[') return NULL;
  p = ws(p + 1);
  for (size_t k = 0; *p && *p != ']'; k++) {
    if (k == i) return p;
    p = ws(skip_value(p));
    if (*p != ',') return NULL;
    p = ws(p + 1);
  }
  return NULL;
}

const char *spec_text_root(const spec_ctx *c) { return ws(c->text); }

const char *spec_enter(spec_ctx *c, const char *key) {
  const char *outer = c->obj;
  c->obj = spec_text_member(outer ? outer : spec_text_root(c), key, 1);
  return outer;
}

/* ---- errors at a position ---- */

static void text_pos(const char *text, const char *at, int *line, int *col) {
  *line = 1;
  *col = 1;
  for (const char *p = text; p < at; p++) {
    if (*p == '\n') {
      (*line)++;
      *col = 1;
    } else {
      (*col)++;
    }
  }
}

static ht_status fail_at_v(spec_ctx *c, const char *at, ht_status code, const char *fmt, va_list ap) {
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  if (!at) return ht_error(code, "%s: %s", c->path, msg);
  int line, col;
  text_pos(c->text, at, &line, &col);
  return ht_error(code, "%s:%d:%d: %s", c->path, line, col, msg);
}

ht_status spec_fail_at(spec_ctx *c, const char *at, ht_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ht_status st = fail_at_v(c, at, code, fmt, ap);
  va_end(ap);
  return st;
}

/* The first quoted occurrence of needle at or after from: after the key when one is given. */
static const char *find_quoted(const char *from, const char *key, const char *needle) {
  if (!needle) return NULL;
  char *q = ht_strfmt("\"%s\"", needle);
  if (!q) return NULL;
  if (key) {
    char *k = ht_strfmt("\"%s\"", key);
    const char *kp = k ? strstr(from, k) : NULL;
    if (kp) from = kp;
    free(k);
  }
  const char *p = strstr(from, q);
  free(q);
  return p;
}

/* Where an error about key (and its value) points: the key as a member of the object being
 * read when it is one (exact), else its first occurrence after that object's start, else
 * anywhere in the file. */
static const char *locate(spec_ctx *c, const char *key, const char *value) {
  const char *obj = c->obj ? c->obj : spec_text_root(c);
  const char *m = spec_text_member(obj, key, 0);
  if (m) {
    const char *v = value ? find_quoted(m, NULL, value) : NULL;
    return v ? v : m;
  }
  const char *from[] = {obj, c->text};
  for (int i = 0; i < 2; i++) {
    const char *at = find_quoted(from[i], key, value);
    if (!at && key) at = find_quoted(from[i], NULL, key);
    if (at) return at;
  }
  return NULL;
}

ht_status spec_fail(spec_ctx *c, const char *key, const char *value, ht_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ht_status st = fail_at_v(c, locate(c, key, value), code, fmt, ap);
  va_end(ap);
  return st;
}

/* ---- unknown keys ---- */

/* Optimal string alignment distance: edits plus swaps of neighbours ("langauge"). */
static int edit_distance(const char *a, const char *b) {
  size_t n = strlen(a), m = strlen(b);
  if (n > 63 || m > 63) return 64;
  int d[64][64];
  for (size_t i = 0; i <= n; i++) d[i][0] = (int)i;
  for (size_t j = 0; j <= m; j++) d[0][j] = (int)j;
  for (size_t i = 1; i <= n; i++)
    for (size_t j = 1; j <= m; j++) {
      int cost = a[i - 1] != b[j - 1], best = d[i - 1][j - 1] + cost;
      if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < best)
        best = d[i - 2][j - 2] + 1;
      d[i][j] = best;
    }
  return d[n][m];
}

const char *spec_nearest(const char *word, const char *const *known) {
  const char *best = NULL;
  int best_d = 1 << 20;
  for (int i = 0; known[i]; i++) {
    int d = edit_distance(word, known[i]);
    if (d < best_d) best_d = d, best = known[i];
  }
  /* close enough to be a slip of the keyboard, not a different word */
  return best && best_d <= 1 + (int)strlen(best) / 4 ? best : NULL;
}

static int is_known(const char *key, const char *const *known) {
  for (int i = 0; known[i]; i++)
    if (strcmp(key, known[i]) == 0) return 1;
  return 0;
}

ht_status spec_check_keys(spec_ctx *c, json_t *obj, const char *obj_text, const char *where,
                          const char *const *known) {
  const char *key;
  json_t *v;
  json_object_foreach(obj, key, v) {
    if (is_known(key, known)) continue;
    const char *at = spec_text_member(obj_text, key, 0);
    if (!at) at = find_quoted(obj_text ? obj_text : c->text, NULL, key);
    const char *in = *where ? " in " : "";
    const char *near = spec_nearest(key, known);
    if (near) return spec_fail_at(c, at, HT_ERR_INVALID, "unknown key \"%s\"%s%s: did you mean \"%s\"?", key, in, where, near);
    ht_buf list = {0};
    for (int i = 0; known[i]; i++) ht_buf_appendf(&list, "%s%s", i ? ", " : "", known[i]);
    ht_status st = spec_fail_at(c, at, HT_ERR_INVALID, "unknown key \"%s\"%s%s (known keys: %s)", key, in, where,
                                list.data ? list.data : "");
    ht_buf_free(&list);
    return st;
  }
  return HT_OK;
}
