/* Positions in JSON text and the errors that name them (json_text.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_text.h"

/* ---- a small scanner over valid JSON text ---- */

const char *ht_json_skip_ws(const char *p) {
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
  p = ht_json_skip_ws(p);
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

const char *ht_json_member(const char *obj, const char *key, int want_value) {
  if (!obj || !key) return NULL;
  obj = ht_json_skip_ws(obj);
  if (*obj != '{') return NULL;
  size_t klen = strlen(key);
  for (const char *p = ht_json_skip_ws(obj + 1); *p == '"'; p = ht_json_skip_ws(p + 1)) {
    const char *name = p, *end = skip_string(p);
    p = ht_json_skip_ws(end);
    if (*p != ':') return NULL;
    const char *value = ht_json_skip_ws(p + 1);
    /* keys written with escapes do not match here; callers then fall back to a text search */
    if ((size_t)(end - name) == klen + 2 && strncmp(name + 1, key, klen) == 0) return want_value ? value : name;
    p = ht_json_skip_ws(skip_value(value));
    if (*p != ',') return NULL;
  }
  return NULL;
}

const char *ht_json_element(const char *arr, size_t i) {
  if (!arr) return NULL;
  const char *p = ht_json_skip_ws(arr);
  if (*p != '[') return NULL;
  p = ht_json_skip_ws(p + 1);
  for (size_t k = 0; *p && *p != ']'; k++) {
    if (k == i) return p;
    p = ht_json_skip_ws(skip_value(p));
    if (*p != ',') return NULL;
    p = ht_json_skip_ws(p + 1);
  }
  return NULL;
}

const char *ht_json_find_quoted(const char *from, const char *key, const char *needle) {
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

ht_status ht_text_fail_at_v(const char *path, const char *text, const char *at, ht_status code, const char *fmt,
                            va_list ap) {
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  if (!at || !text) return ht_error(code, "%s: %s", path, msg);
  int line, col;
  text_pos(text, at, &line, &col);
  return ht_error(code, "%s:%d:%d: %s", path, line, col, msg);
}

ht_status ht_text_fail_at(const char *path, const char *text, const char *at, ht_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ht_status st = ht_text_fail_at_v(path, text, at, code, fmt, ap);
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

const char *ht_nearest_word(const char *word, const char *const *known) {
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

ht_status ht_json_check_keys(const char *path, const char *text, json_t *obj, const char *obj_text, const char *where,
                             const char *const *known) {
  const char *key;
  json_t *v;
  json_object_foreach(obj, key, v) {
    if (is_known(key, known)) continue;
    const char *at = ht_json_member(obj_text, key, 0);
    if (!at) at = ht_json_find_quoted(obj_text ? obj_text : text, NULL, key);
    const char *in = *where ? " in " : "";
    const char *near = ht_nearest_word(key, known);
    if (near)
      return ht_text_fail_at(path, text, at, HT_ERR_INVALID, "unknown key \"%s\"%s%s: did you mean \"%s\"?", key, in,
                             where, near);
    ht_buf list = {0};
    for (int i = 0; known[i]; i++) ht_buf_appendf(&list, "%s%s", i ? ", " : "", known[i]);
    ht_status st = ht_text_fail_at(path, text, at, HT_ERR_INVALID, "unknown key \"%s\"%s%s (known keys: %s)", key, in,
                                   where, list.data ? list.data : "");
    ht_buf_free(&list);
    return st;
  }
  return HT_OK;
}
