/* Where things are in a spec's text, and the errors that name them: the spec's side of the JSON
 * position helpers (core/json_text.c), which every strict JSON reader shares. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_text.h"
#include "spec/spec_internal.h"

const char *spec_text_member(const char *obj, const char *key, int want_value) {
  return ht_json_member(obj, key, want_value);
}

const char *spec_text_element(const char *arr, size_t i) { return ht_json_element(arr, i); }

const char *spec_text_root(const spec_ctx *c) { return ht_json_skip_ws(c->text); }

const char *spec_enter(spec_ctx *c, const char *key) {
  const char *outer = c->obj;
  c->obj = spec_text_member(outer ? outer : spec_text_root(c), key, 1);
  return outer;
}

/* ---- errors at a position ---- */

ht_status spec_fail_at(spec_ctx *c, const char *at, ht_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ht_status st = ht_text_fail_at_v(c->path, c->text, at, code, fmt, ap);
  va_end(ap);
  return st;
}

/* Where an error about key (and its value) points: the key as a member of the object being
 * read when it is one (exact), else its first occurrence after that object's start, else
 * anywhere in the file. */
static const char *locate(spec_ctx *c, const char *key, const char *value) {
  const char *obj = c->obj ? c->obj : spec_text_root(c);
  const char *m = spec_text_member(obj, key, 0);
  if (m) {
    const char *v = value ? ht_json_find_quoted(m, NULL, value) : NULL;
    return v ? v : m;
  }
  const char *from[] = {obj, c->text};
  for (int i = 0; i < 2; i++) {
    const char *at = ht_json_find_quoted(from[i], key, value);
    if (!at && key) at = ht_json_find_quoted(from[i], NULL, key);
    if (at) return at;
  }
  return NULL;
}

ht_status spec_fail(spec_ctx *c, const char *key, const char *value, ht_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ht_status st = ht_text_fail_at_v(c->path, c->text, locate(c, key, value), code, fmt, ap);
  va_end(ap);
  return st;
}

/* ---- unknown keys ---- */

const char *spec_nearest(const char *word, const char *const *known) { return ht_nearest_word(word, known); }

ht_status spec_check_keys(spec_ctx *c, json_t *obj, const char *obj_text, const char *where,
                          const char *const *known) {
  return ht_json_check_keys(c->path, c->text, obj, obj_text, where, known);
}
