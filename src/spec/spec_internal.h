/* Shared by the spec parser's files: the JSON loader, one producer of the kernel builder
 * (kernel_internal.h). It checks the file's shape and hands each value to the builder, whose
 * errors it places at file:line:column. */
#ifndef HT_SPEC_INTERNAL_H
#define HT_SPEC_INTERNAL_H

#include <jansson.h>

#include "hetune/kernel.h"
#include "spec/spec_struct.h"

typedef struct spec_ctx {
  const char *path; /* the spec file, for messages */
  char *text;       /* its text, to locate values for line:column */
  const char *dir;  /* its folder: sources and data files are relative to it */
  ht_kernel *k;      /* the builder the file's values go to */
  const char *in_key; /* the object being read ("reference", "arguments"), NULL at the top */
  char in_field[64];  /* its name in messages: "reference", "arguments[2]" */
  const char *obj;    /* that object's text (its '{'), NULL at the top: errors point inside it */
  int arg_index;      /* T1 files: the argument being read, for messages */
} spec_ctx;

/* ---- positions and errors (spec_text.c) ---- */

/* The member key of the object whose text starts at obj: the key's opening quote, or with
 * want_value its value. NULL when obj is not an object or has no such key. */
const char *spec_text_member(const char *obj, const char *key, int want_value);
/* Element i of the array whose text starts at arr, or NULL. */
const char *spec_text_element(const char *arr, size_t i);
/* The root value's text. */
const char *spec_text_root(const spec_ctx *c);
/* Errors point into member key of the object being read from now on; returns the object to go
 * back to (c->obj = outer) when done with it. */
const char *spec_enter(spec_ctx *c, const char *key);
/* Error "path:line:col: msg", the position of at in the text (just "path: msg" when at is NULL). */
ht_status spec_fail_at(spec_ctx *c, const char *at, ht_status code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Error "path:line:col: msg" at key (and its quoted value): in the object being read (c->obj)
 * when it has that key, else the first occurrence after it, else anywhere in the file. */
ht_status spec_fail(spec_ctx *c, const char *key, const char *value, ht_status code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Fails on the first key of obj (text at obj_text) not in known (NULL-terminated), at that key,
 * with the nearest known key: 'unknown key "acces" in arguments[0]: did you mean "access"?'.
 * where names the object in messages ("" for the top level). */
ht_status spec_check_keys(spec_ctx *c, json_t *obj, const char *obj_text, const char *where,
                          const char *const *known);
/* The entry of known (NULL-terminated) closest to word by edit distance, or NULL when none is close. */
const char *spec_nearest(const char *word, const char *const *known);

/* ---- parsing ---- */

/* The keys of a kernel: the spec's top level has them, and so has "reference". */
#define SPEC_GEOMETRY_KEYS                                                                                    \
  "global", "grid", "problem", "grid_div", "local", "global_mul", "global_div", "local_mul", "local_div"
#define SPEC_KERNEL_KEYS "language", "source", "entry", "flags", "defines", SPEC_GEOMETRY_KEYS
ht_status spec_string(spec_ctx *c, json_t *obj, const char *key, int required, const char **out);
/* The JSON key a field's value sits under: "arguments.n.value" -> "value", "global[0]" -> "global". */
void spec_field_key(const char *field, char *key, size_t len);
/* A parameter's value as JSON (a new reference, NULL when out of memory). */
json_t *spec_value_json(ht_value v);
/* The spec's file, or its name for one built in code (no file): for messages. */
const char *spec_label(const ht_spec *s);
/* The text of an expression given as a JSON string or number (numbers formatted into buf). */
ht_status spec_expr_text(spec_ctx *c, json_t *v, const char *field, char buf[64], const char **text);
/* The kernel's keys of obj (the top level, or "reference" with prefix "reference.") into kk. */
ht_status spec_parse_kernel(spec_ctx *c, json_t *obj, const char *prefix, ht_kernel *kk);
ht_status spec_parse_args(spec_ctx *c, json_t *root);
/* A T1 file's root (one with "ConfigurationSpace"): the kernel it names, as a spec (spec_t1.c). */
ht_status spec_parse_t1(spec_ctx *c, json_t *root, ht_spec **out);

#endif
