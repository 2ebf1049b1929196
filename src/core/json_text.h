/* Positions in JSON text and the errors that name them, for every strict JSON reader (specs, sim
 * device files). jansson keeps no positions for keys or values, so the text (already valid JSON
 * when these run) is scanned again. Internal. */
#ifndef HETUNE_JSON_TEXT_H
#define HETUNE_JSON_TEXT_H

#include <jansson.h>
#include <stdarg.h>

#include "hetune/core.h"

/* p past blanks: the start of the value there. */
const char *ht_json_skip_ws(const char *p);
/* The member key of the object whose text starts at obj: the key's opening quote, or with
 * want_value its value. NULL when obj is not an object or has no such key. */
const char *ht_json_member(const char *obj, const char *key, int want_value);
/* Element i of the array whose text starts at arr, or NULL. */
const char *ht_json_element(const char *arr, size_t i);
/* The first quoted occurrence of needle at or after from: after the quoted key when one is given. */
const char *ht_json_find_quoted(const char *from, const char *key, const char *needle);

/* Error "path:line:col: msg", the position of at in text (just "path: msg" when at is NULL). */
ht_status ht_text_fail_at_v(const char *path, const char *text, const char *at, ht_status code, const char *fmt,
                            va_list ap);
ht_status ht_text_fail_at(const char *path, const char *text, const char *at, ht_status code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* The entry of known (NULL-terminated) closest to word by edit distance, or NULL when none is close. */
const char *ht_nearest_word(const char *word, const char *const *known);
/* Fails on the first key of obj (its text at obj_text, within the file's text) not in known
 * (NULL-terminated), at that key, with the nearest known key: 'unknown key "acces" in
 * arguments[0]: did you mean "access"?'. where names the object in messages ("" for the top). */
ht_status ht_json_check_keys(const char *path, const char *text, json_t *obj, const char *obj_text, const char *where,
                             const char *const *known);

#endif
