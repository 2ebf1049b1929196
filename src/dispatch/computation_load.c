/* Computation files (docs/dispatch.md): strict JSON, every error at its file:line:column. */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_text.h"
#include "dispatch/dispatch_internal.h"

/* "split" is read by co-execution (ht_coexec_load), which calls this loader first. */
static const char *const top_keys[] = {"name", "variants", "selector", "bucket", "rule", "feedback", "seed",
                                       "split", "_comment", NULL};
static const char *const variant_keys[] = {"spec", "device", "config", "_comment", NULL};
static const char *const feedback_keys[] = {"window", "drift", "explore", "regret_cap", "sample_below_us", NULL};

typedef struct file_ctx {
  const char *path, *text;
  char dir[4096];
} file_ctx;

/* at: the member's value (or key when the member is missing) in the object whose text starts at obj. */
static ht_status fail(const file_ctx *f, const char *obj, const char *key, const char *fmt, const char *detail) {
  const char *at = obj && key ? ht_json_member(obj, key, 1) : obj;
  return ht_text_fail_at(f->path, f->text, at ? at : obj, HT_ERR_INVALID, fmt, detail ? detail : "");
}

static ht_status get_string(const file_ctx *f, json_t *o, const char *obj, const char *key, int required,
                            const char **out) {
  json_t *v = json_object_get(o, key);
  *out = NULL;
  if (!v && required) return fail(f, obj, NULL, "missing \"%s\"", key);
  if (v && !json_is_string(v)) return fail(f, obj, key, "\"%s\": expected a string", key);
  if (v) *out = json_string_value(v);
  return HT_OK;
}

static ht_status add_variant(ht_computation *c, const file_ctx *f, json_t *o, const char *at, int i) {
  char where[32];
  snprintf(where, sizeof where, "variants[%d]", i);
  if (!json_is_object(o)) return ht_text_fail_at(f->path, f->text, at, HT_ERR_INVALID, "%s: expected an object", where);
  ht_status st = ht_json_check_keys(f->path, f->text, o, at, where, variant_keys);
  const char *spec_path, *device, *config;
  if (!st) st = get_string(f, o, at, "spec", 1, &spec_path);
  if (!st) st = get_string(f, o, at, "device", 1, &device);
  if (!st) st = get_string(f, o, at, "config", 0, &config);
  if (st) return st;
  char *full = spec_path[0] == '/' ? ht_strdup(spec_path) : ht_strfmt("%s/%s", f->dir, spec_path);
  ht_spec *spec = NULL;
  st = full ? ht_spec_load(full, &spec) : ht_error(HT_ERR_NOMEM, "out of memory");
  free(full);
  if (!st) st = ht_computation_add_variant(c, spec, device, config ? config : "best", NULL);
  if (st) {
    ht_spec_destroy(spec);
    return ht_text_fail_at(f->path, f->text, ht_json_member(at, "spec", 1), st, "%s: %s", where, ht_last_error());
  }
  c->v[c->n_variants - 1].owned_spec = spec;
  return HT_OK;
}

static ht_status add_variants(ht_computation *c, const file_ctx *f, json_t *root) {
  json_t *arr = json_object_get(root, "variants");
  const char *at = ht_json_member(f->text, "variants", 1);
  if (!json_is_array(arr) || !json_array_size(arr))
    return ht_text_fail_at(f->path, f->text, at ? at : f->text, HT_ERR_INVALID,
                           "\"variants\": expected a non-empty array of {\"spec\", \"device\", \"config\"}");
  for (size_t i = 0; i < json_array_size(arr); i++) {
    ht_status st = add_variant(c, f, json_array_get(arr, i), ht_json_element(at, i), (int)i);
    if (st) return st;
  }
  return HT_OK;
}

/* The file's options as the option text ht_computation_set_options reads. */
static ht_status options_text(const file_ctx *f, json_t *root, ht_buf *b) {
  static const char *const strings[] = {"selector", "bucket", "rule"};
  for (int i = 0; i < 3; i++) {
    json_t *v = json_object_get(root, strings[i]);
    if (!v) continue;
    if (!json_is_string(v) || strpbrk(json_string_value(v), ",="))
      return fail(f, f->text, strings[i], "\"%s\": expected a string without ',' or '='", strings[i]);
    ht_buf_appendf(b, "%s%s=%s", b->len ? "," : "", strings[i], json_string_value(v));
  }
  json_t *seed = json_object_get(root, "seed");
  if (seed && !json_is_integer(seed)) return fail(f, f->text, "seed", "\"seed\": expected a whole number%s", NULL);
  if (seed) ht_buf_appendf(b, "%sseed=%lld", b->len ? "," : "", (long long)json_integer_value(seed));
  json_t *fb = json_object_get(root, "feedback");
  if (!fb) return HT_OK;
  const char *fat = ht_json_member(f->text, "feedback", 1);
  if (!json_is_object(fb)) return fail(f, f->text, "feedback", "\"feedback\": expected an object%s", NULL);
  ht_status st = ht_json_check_keys(f->path, f->text, fb, fat, "feedback", feedback_keys);
  const char *key;
  json_t *v;
  json_object_foreach(fb, key, v) {
    if (st) break;
    if (!json_is_number(v)) st = fail(f, fat, key, "\"feedback\": expected numbers%s", NULL);
    else ht_buf_appendf(b, "%s%s=%.17g", b->len ? "," : "", key, json_number_value(v));
  }
  return st;
}

static ht_status load(ht_computation **out, const file_ctx *f, json_t *root, ht_store *st) {
  ht_status s = ht_json_check_keys(f->path, f->text, root, f->text, "", top_keys);
  json_t *split = json_object_get(root, "split");
  if (!s && split && !json_is_object(split)) s = fail(f, f->text, "split", "\"split\": expected an object%s", NULL);
  const char *name;
  if (!s) s = get_string(f, root, ht_json_skip_ws(f->text), "name", 1, &name);
  if (!s) s = ht_computation_create(name, st, out);
  if (!s) s = add_variants(*out, f, root);
  ht_buf opts = {0};
  if (!s) s = options_text(f, root, &opts);
  if (!s && opts.failed) s = ht_error(HT_ERR_NOMEM, "out of memory");
  if (!s && opts.len) s = ht_computation_set_options(*out, opts.data);
  ht_buf_free(&opts);
  if (s && *out && !strstr(ht_last_error(), f->path)) s = ht_error_prefix(s, "%s: ", f->path);
  return s;
}

ht_status ht_computation_load(const char *path, ht_store *st, ht_computation **out) {
  if (!path || !out) return ht_error(HT_ERR_INVALID, "ht_computation_load: bad arguments");
  *out = NULL;
  file_ctx f = {path, NULL, ""};
  char *text;
  ht_status s = ht_read_file(path, &text, NULL);
  if (s) return s;
  f.text = text;
  snprintf(f.dir, sizeof f.dir, "%s", path);
  char *d = dirname(f.dir);
  memmove(f.dir, d, strlen(d) + 1);
  json_error_t jerr;
  json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
  if (!root) s = ht_error(HT_ERR_PARSE, "%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
  else if (!json_is_object(root)) s = ht_text_fail_at(path, text, text, HT_ERR_PARSE, "expected a JSON object");
  else s = load(out, &f, root, st);
  if (!s && (s = ht_computation_finish(*out))) s = ht_error_prefix(s, "%s: ", path);
  json_decref(root);
  free(text);
  if (s) {
    ht_computation_destroy(*out);
    *out = NULL;
  }
  return s;
}
