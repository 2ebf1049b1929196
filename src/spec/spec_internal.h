/* Shared by the spec parser's files. */
#ifndef HT_SPEC_INTERNAL_H
#define HT_SPEC_INTERNAL_H

#include <jansson.h>

#include "hetune/spec.h"

typedef struct spec_ctx {
  const char *path; /* the spec file, for messages */
  char *text;       /* its text, to locate values for line:column */
  const char *dir;  /* its folder: sources and data files are relative to it */
  ht_spec *spec;
  int with_times;   /* expressions may name time_s and time_ms (metrics only) */
  const char *in_key; /* the object being read ("reference", "arguments"), NULL at the top */
  char in_field[64];  /* its name in messages: "reference", "arguments[2]" */
} spec_ctx;

/* Error "path:line:col: msg", the position of the quoted value (or key) in the file. */
ht_status spec_fail(spec_ctx *c, const char *key, const char *value, ht_status code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
ht_status spec_string(spec_ctx *c, json_t *obj, const char *key, int required, const char **out);
ht_status spec_expr(spec_ctx *c, json_t *v, const char *field, ht_expr **out);
ht_status spec_compile_text(spec_ctx *c, const char *text, const char *field, ht_expr **out);
ht_status spec_parse_kernel(spec_ctx *c, json_t *obj, const char *prefix, ht_spec_kernel *k);
ht_status spec_parse_args(spec_ctx *c, json_t *root);
ht_status spec_hash(spec_ctx *c, json_t *root);

#endif
