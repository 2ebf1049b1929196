/* A computation file's "split" object (docs/coexec.md), every error at its file:line:column:
 *   "split": {"dim": "N", "granularity": 64, "halo": 1, "buffers": {"x": "1", "y": "1"},
 *             "options": {"schedule": "static", "eliminate": 0.1}, "power_w": {"c": 95}} */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "coexec/coexec_internal.h"
#include "core/json_text.h"

static const char *const split_keys[] = {"dim", "granularity", "halo", "buffers", "options", "power_w", "_comment", NULL};

typedef struct load_ctx {
  const char *path, *text;
  json_t *split;
  const char *at; /* the split object's text */
} load_ctx;

static ht_status fail(const load_ctx *l, const char *obj, const char *key, const char *fmt, const char *detail) {
  const char *at = key ? ht_json_member(obj, key, 1) : NULL;
  return ht_text_fail_at(l->path, l->text, at ? at : obj, HT_ERR_INVALID, fmt, detail ? detail : "");
}

static ht_status read_int(const load_ctx *l, const char *key, int64_t *out) {
  json_t *v = json_object_get(l->split, key);
  *out = 0;
  if (!v) return HT_OK;
  if (!json_is_integer(v) || json_integer_value(v) < 0)
    return fail(l, l->at, key, "split: \"%s\": expected a whole number, 0 or more", key);
  *out = json_integer_value(v);
  return HT_OK;
}

/* "buffers": {"name": "stride expression", ...} */
static ht_status read_buffers(const load_ctx *l, ht_split_buffer *b, int *n) {
  json_t *o = json_object_get(l->split, "buffers");
  const char *at = ht_json_member(l->at, "buffers", 1);
  *n = 0;
  if (!json_is_object(o) || !json_object_size(o))
    return fail(l, l->at, o ? "buffers" : NULL, "split: \"buffers\": expected an object {\"buffer\": \"elements per row\", ...}%s",
                NULL);
  const char *key;
  json_t *v;
  json_object_foreach(o, key, v) {
    if (*n == HT_COEXEC_MAX_PUS * 4) return fail(l, at, key, "split: too many buffers%s", NULL);
    if (!json_is_string(v) && !json_is_integer(v))
      return fail(l, at, key, "split: buffer \"%s\": expected its elements per row (a number or an expression of the sizes)", key);
    b[(*n)++] = (ht_split_buffer){key, json_is_string(v) ? json_string_value(v) : NULL};
  }
  return HT_OK;
}

/* "options": {"schedule": "static", "eliminate": 0.1} as option text. */
static ht_status options_text(const load_ctx *l, ht_buf *b) {
  json_t *o = json_object_get(l->split, "options");
  if (!o) return HT_OK;
  if (!json_is_object(o)) return fail(l, l->at, "options", "split: \"options\": expected an object%s", NULL);
  const char *at = ht_json_member(l->at, "options", 1), *key;
  json_t *v;
  json_object_foreach(o, key, v) {
    if (json_is_string(v) && !strpbrk(json_string_value(v), ",="))
      ht_buf_appendf(b, "%s%s=%s", b->len ? "," : "", key, json_string_value(v));
    else if (json_is_number(v)) ht_buf_appendf(b, "%s%s=%.17g", b->len ? "," : "", key, json_number_value(v));
    else return fail(l, at, key, "split: option \"%s\": expected a number or a word", key);
  }
  return b->failed ? ht_error(HT_ERR_NOMEM, "out of memory") : HT_OK;
}

static ht_status read_power(const load_ctx *l, ht_coexec *x) {
  json_t *o = json_object_get(l->split, "power_w");
  if (!o) return HT_OK;
  if (!json_is_object(o)) return fail(l, l->at, "power_w", "split: \"power_w\": expected {\"device\": watts, ...}%s", NULL);
  const char *at = ht_json_member(l->at, "power_w", 1), *key;
  json_t *v;
  json_object_foreach(o, key, v) {
    ht_status st = json_is_number(v) ? ht_coexec_set_power(x, key, json_number_value(v))
                                     : ht_error(HT_ERR_INVALID, "expected watts, a number");
    if (st) return fail(l, at, key, "split: power_w: %s", ht_last_error());
  }
  return HT_OK;
}

static ht_status build(const load_ctx *l, ht_computation *c, ht_coexec **out) {
  ht_split s = {0};
  ht_split_buffer bufs[HT_COEXEC_MAX_PUS * 4];
  json_t *dim = json_object_get(l->split, "dim");
  ht_status st = ht_json_check_keys(l->path, l->text, l->split, l->at, "split", split_keys);
  if (!st && !json_is_string(dim)) st = fail(l, l->at, dim ? "dim" : NULL, "split: \"dim\": expected the name of the size to cut%s", NULL);
  if (!st) s.dim = json_string_value(dim);
  if (!st) st = read_int(l, "granularity", &s.granularity);
  if (!st) st = read_int(l, "halo", &s.halo);
  if (!st) st = read_buffers(l, bufs, &s.n_buffers);
  s.buffers = bufs;
  ht_buf opts = {0};
  if (!st) st = options_text(l, &opts);
  if (!st && (st = ht_coexec_create(c, &s, opts.len ? opts.data : "", out)))
    st = fail(l, l->at, NULL, "split: %s", ht_last_error());
  ht_buf_free(&opts);
  if (!st && (st = read_power(l, *out))) {
    ht_coexec_destroy(*out);
    *out = NULL;
  }
  return st;
}

ht_status ht_coexec_load(const char *path, ht_store *st, ht_coexec **out) {
  if (!path || !out) return ht_error(HT_ERR_INVALID, "ht_coexec_load: bad arguments");
  *out = NULL;
  ht_computation *c;
  ht_status s = ht_computation_load(path, st, &c); /* checks the file as JSON and every other key */
  if (s) return s;
  char *text;
  if ((s = ht_read_file(path, &text, NULL))) {
    ht_computation_destroy(c);
    return s;
  }
  json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
  load_ctx l = {path, text, root ? json_object_get(root, "split") : NULL, NULL};
  if (!l.split) s = ht_text_fail_at(path, text, text, HT_ERR_INVALID, "no \"split\": the file says how to cut a call%s", "");
  else l.at = ht_json_member(text, "split", 1), s = build(&l, c, out);
  json_decref(root);
  free(text);
  if (s) ht_computation_destroy(c);
  else (*out)->owns_c = 1;
  return s;
}
