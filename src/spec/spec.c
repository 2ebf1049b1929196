/* Kernel spec files: the JSON loader. It checks the file's shape (keys, types) and gives every
 * value to a kernel builder (kernel.c), whose finishing checks place their errors back in the file. */
#include <jansson.h>
#include <libgen.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec/kernel_internal.h"

/* ---- small JSON accessors with errors naming the field ---- */

ht_status spec_string(spec_ctx *c, json_t *obj, const char *key, int required, const char **out) {
  json_t *v = json_object_get(obj, key);
  const char *in = c->in_key ? c->in_field : "", *dot = c->in_key ? "." : "";
  *out = NULL;
  if (!v) {
    if (!required) return HT_OK;
    return spec_fail_at(c, c->obj ? c->obj : spec_text_root(c), HT_ERR_INVALID, "missing required field \"%s%s%s\"", in,
                        dot, key);
  }
  if (!json_is_string(v))
    return spec_fail(c, key, NULL, HT_ERR_INVALID, "field \"%s%s%s\" must be a string", in, dot, key);
  *out = json_string_value(v);
  return HT_OK;
}

void spec_field_key(const char *field, char *key, size_t len) {
  snprintf(key, len, "%s", strchr(field, '.') ? strrchr(field, '.') + 1 : field);
  char *bracket = strchr(key, '[');
  if (bracket) *bracket = '\0';
}

ht_status spec_expr_text(spec_ctx *c, json_t *v, const char *field, char buf[64], const char **text) {
  if (json_is_string(v)) {
    *text = json_string_value(v);
  } else if (json_is_integer(v)) {
    snprintf(buf, 64, "%lld", (long long)json_integer_value(v));
    *text = buf;
  } else if (json_is_real(v)) {
    snprintf(buf, 64, "%.17g", json_real_value(v));
    *text = buf;
  } else {
    char key[128];
    spec_field_key(field, key, sizeof key);
    return spec_fail(c, key, NULL, HT_ERR_INVALID, "%s: expected an expression (string or number)", field);
  }
  return HT_OK;
}

/* ---- sizes ---- */

static ht_status parse_sizes(spec_ctx *c, json_t *root) {
  json_t *sizes = json_object_get(root, "sizes");
  if (!sizes) return HT_OK;
  if (!json_is_object(sizes))
    return spec_fail(c, "sizes", NULL, HT_ERR_INVALID, "\"sizes\" must be an object of name: integer");
  const char *key, *outer = spec_enter(c, "sizes");
  json_t *v;
  json_object_foreach(sizes, key, v) {
    if (!json_is_integer(v))
      return spec_fail(c, key, NULL, HT_ERR_INVALID, "sizes.%s: expected an integer", key);
    ht_status st = ht_kernel_add_size(c->k, key, json_integer_value(v));
    if (st) return st;
  }
  c->obj = outer;
  return HT_OK;
}

/* ---- parameters ---- */

/* {"range": [lo, hi], "step": s} or {"pow2": [lo, hi]}: which keys an object form may have. */
static ht_status check_range_keys(spec_ctx *c, const char *name, json_t *obj, const char *text) {
  static const char *const all[] = {"range", "pow2", "step", NULL};
  char where[96];
  snprintf(where, sizeof where, "parameters.%.80s", name);
  ht_status st = spec_check_keys(c, obj, text, where, all);
  if (st) return st;
  json_t *range = json_object_get(obj, "range"), *pow2 = json_object_get(obj, "pow2");
  if (range && pow2)
    return spec_fail_at(c, spec_text_member(text, "pow2", 0), HT_ERR_INVALID,
                        "%s: give \"range\" or \"pow2\", not both", where);
  if (pow2 && json_object_get(obj, "step"))
    return spec_fail_at(c, spec_text_member(text, "step", 0), HT_ERR_INVALID,
                        "%s: \"step\" goes with \"range\"; \"pow2\" always doubles", where);
  return HT_OK;
}

static ht_status param_range(spec_ctx *c, const char *name, json_t *obj, const char *text) {
  ht_status st = json_is_object(obj) ? check_range_keys(c, name, obj, text) : HT_OK;
  if (st) return st;
  json_t *range = json_object_get(obj, "range"), *pow2 = json_object_get(obj, "pow2");
  json_t *r = range ? range : pow2;
  if (!r || !json_is_array(r) || json_array_size(r) != 2 || !json_is_integer(json_array_get(r, 0)) ||
      !json_is_integer(json_array_get(r, 1)))
    return spec_fail(c, name, NULL, HT_ERR_INVALID,
                     "parameters.%s: expected a list of values, {\"range\": [lo, hi]} or {\"pow2\": [lo, hi]}", name);
  int64_t lo = json_integer_value(json_array_get(r, 0)), hi = json_integer_value(json_array_get(r, 1));
  json_t *stepv = json_object_get(obj, "step");
  if (stepv && !json_is_integer(stepv))
    return spec_fail(c, name, NULL, HT_ERR_INVALID, "parameters.%s: \"step\" must be an integer", name);
  if (pow2) return ht_kernel_add_param_pow2(c->k, name, lo, hi);
  return ht_kernel_add_param_range(c->k, name, lo, hi, stepv ? json_integer_value(stepv) : 1);
}

static ht_status param_list(spec_ctx *c, const char *name, json_t *arr) {
  size_t n = json_array_size(arr);
  ht_value *values = calloc(n ? n : 1, sizeof(ht_value));
  if (!values) return ht_error(HT_ERR_NOMEM, "out of memory");
  ht_status st = HT_OK;
  for (size_t i = 0; i < n && !st; i++) {
    json_t *v = json_array_get(arr, i);
    if (json_is_integer(v)) values[i] = ht_int(json_integer_value(v));
    else if (json_is_real(v)) values[i] = ht_float(json_real_value(v));
    else if (json_is_string(v)) values[i] = ht_str(json_string_value(v)); /* the builder copies it */
    else if (json_is_boolean(v)) values[i] = ht_int(json_is_true(v));
    else st = spec_fail(c, name, NULL, HT_ERR_INVALID, "parameters.%s[%zu]: expected a number or a string", name, i);
  }
  if (!st) st = ht_kernel_add_param(c->k, name, values, (int)n);
  free(values);
  return st;
}

static ht_status parse_params(spec_ctx *c, json_t *root) {
  json_t *params = json_object_get(root, "parameters");
  if (!params) return spec_fail_at(c, spec_text_root(c), HT_ERR_INVALID, "missing required field \"parameters\"");
  if (!json_is_object(params))
    return spec_fail(c, "parameters", NULL, HT_ERR_INVALID, "\"parameters\" must be an object of name: values");
  size_t n = json_object_size(params);
  if (n > HT_MAX_PARAMS)
    return spec_fail(c, "parameters", NULL, HT_ERR_INVALID, "too many parameters (%zu, at most %d)", n, HT_MAX_PARAMS);
  const char *key, *outer = spec_enter(c, "parameters");
  json_t *v;
  json_object_foreach(params, key, v) {
    ht_status st = json_is_array(v) ? param_list(c, key, v) : param_range(c, key, v, spec_text_member(c->obj, key, 1));
    if (st) return st;
  }
  c->obj = outer;
  return HT_OK;
}

/* ---- constraints, metrics, work, tolerance ---- */

static ht_status parse_constraints(spec_ctx *c, json_t *root) {
  json_t *arr = json_object_get(root, "constraints");
  if (!arr) return HT_OK;
  if (!json_is_array(arr))
    return spec_fail(c, "constraints", NULL, HT_ERR_INVALID, "\"constraints\" must be a list of expressions");
  for (size_t i = 0; i < json_array_size(arr); i++) {
    json_t *v = json_array_get(arr, i);
    if (!json_is_string(v))
      return spec_fail(c, "constraints", NULL, HT_ERR_INVALID, "constraints[%zu]: expected a string expression", i);
    ht_status st = ht_kernel_add_constraint(c->k, json_string_value(v));
    if (st) return st;
  }
  return HT_OK;
}

static ht_status parse_metrics(spec_ctx *c, json_t *root) {
  json_t *obj = json_object_get(root, "metrics");
  if (!obj) return HT_OK;
  if (!json_is_object(obj))
    return spec_fail(c, "metrics", NULL, HT_ERR_INVALID, "\"metrics\" must be an object of name: expression");
  if (json_object_size(obj) > 8) return spec_fail(c, "metrics", NULL, HT_ERR_INVALID, "at most 8 metrics");
  const char *key, *text, *outer = spec_enter(c, "metrics");
  json_t *v;
  json_object_foreach(obj, key, v) {
    char field[96], buf[64];
    snprintf(field, sizeof field, "metrics.%.80s", key);
    ht_status st = spec_expr_text(c, v, field, buf, &text);
    if (!st) st = ht_kernel_add_metric(c->k, key, text);
    if (st) return st;
  }
  c->obj = outer;
  return HT_OK;
}

/* "work": {"flops": expr, "bytes": expr}: what one run computes and moves, for prediction features
 * (arithmetic intensity). Either may be absent. */
static ht_status parse_work(spec_ctx *c, json_t *root) {
  json_t *w = json_object_get(root, "work");
  if (!w) return HT_OK;
  if (!json_is_object(w))
    return spec_fail(c, "work", NULL, HT_ERR_INVALID, "\"work\" must be {\"flops\": expression, \"bytes\": expression}");
  static const char *const keys[] = {"flops", "bytes", NULL};
  const char *outer = spec_enter(c, "work"), *text[2] = {NULL, NULL};
  ht_status st = spec_check_keys(c, w, c->obj, "work", keys);
  char buf[2][64];
  for (int i = 0; i < 2 && !st; i++) {
    json_t *v = json_object_get(w, keys[i]);
    char field[64];
    snprintf(field, sizeof field, "work.%s", keys[i]);
    if (v) st = spec_expr_text(c, v, field, buf[i], &text[i]);
  }
  if (!st) st = ht_kernel_set_work(c->k, text[0], text[1]);
  c->obj = outer;
  return st;
}

static ht_status parse_tolerance(spec_ctx *c, json_t *root) {
  static const char *const keys[] = {"rtol", "atol", NULL};
  json_t *t = json_object_get(root, "tolerance");
  if (!t) return HT_OK;
  if (!json_is_object(t))
    return spec_fail(c, "tolerance", NULL, HT_ERR_INVALID, "\"tolerance\" must be {\"rtol\": number, \"atol\": number}");
  const char *text = spec_text_member(spec_text_root(c), "tolerance", 1);
  ht_status st = spec_check_keys(c, t, text, "tolerance", keys);
  if (st) return st;
  double tol[2] = {NAN, NAN};
  for (int i = 0; i < 2; i++) {
    json_t *v = json_object_get(t, keys[i]);
    if (!v) continue;
    if (!json_is_number(v) || json_number_value(v) < 0)
      return spec_fail_at(c, spec_text_member(text, keys[i], 0), HT_ERR_INVALID,
                          "tolerance.%s: expected a number >= 0", keys[i]);
    tol[i] = json_number_value(v);
  }
  return ht_kernel_set_tolerance(c->k, tol[0], tol[1]);
}

/* ---- the whole file ---- */

/* The builder's errors, at the place in the file their field is. */
static ht_status locate_error(void *ctx, const spec_where *w, ht_status code, const char *msg) {
  spec_ctx *c = ctx;
  static const char *const objects[] = {NULL, "reference", "arguments", "parameters", "metrics", "work", "tolerance"};
  const char *root = spec_text_root(c);
  const char *obj = objects[w->area] ? spec_text_member(root, objects[w->area], 1) : NULL;
  if (w->area == SPEC_AT_ARG) obj = obj ? spec_text_element(obj, (size_t)w->index) : NULL;
  c->obj = obj;
  if (!w->key) return spec_fail_at(c, obj ? obj : root, code, "%s", msg);
  return spec_fail(c, w->key, w->value, code, "%s", msg);
}

static ht_status parse_options(spec_ctx *c, json_t *root) {
  json_t *sd = json_object_get(root, "size_defines"), *seed = json_object_get(root, "seed");
  if (sd && !json_is_boolean(sd))
    return spec_fail(c, "size_defines", NULL, HT_ERR_INVALID, "\"size_defines\" must be true or false");
  if (seed && !json_is_integer(seed))
    return spec_fail(c, "seed", NULL, HT_ERR_INVALID, "\"seed\" must be an integer");
  ht_status st = sd ? ht_kernel_set_size_defines(c->k, json_is_true(sd)) : HT_OK;
  if (!st && seed) st = ht_kernel_set_seed(c->k, (uint64_t)json_integer_value(seed));
  return st;
}

static ht_status parse_root(spec_ctx *c, json_t *root, ht_spec **out) {
  const char *name;
  ht_status st;
  if (!json_is_object(root)) return spec_fail_at(c, spec_text_root(c), HT_ERR_INVALID, "the spec must be a JSON object");
  static const char *const keys[] = {"name",        "sizes",   "size_defines", "arguments", "parameters",
                                     "constraints", "metrics", "work",         "reference", "tolerance",
                                     "seed",        "$schema", SPEC_KERNEL_KEYS, NULL};
  if ((st = spec_check_keys(c, root, spec_text_root(c), "", keys))) return st;
  const char *schema; /* where editors find the JSON Schema; nothing to hetune */
  if ((st = spec_string(c, root, "$schema", 0, &schema))) return st;
  if ((st = spec_string(c, root, "name", 1, &name))) return st;
  if ((st = ht_kernel_create(name, &c->k))) return st;
  kb_set_locator(c->k, locate_error, c);
  if ((st = ht_kernel_set_base_dir(c->k, c->dir)) || (st = parse_options(c, root))) return st;
  if ((st = parse_params(c, root)) || (st = parse_sizes(c, root))) return st;
  if ((st = spec_parse_kernel(c, root, "", c->k)) || (st = spec_parse_args(c, root))) return st;
  json_t *ref = json_object_get(root, "reference");
  if (ref) {
    ht_kernel *r;
    if (!json_is_object(ref))
      return spec_fail(c, "reference", NULL, HT_ERR_INVALID, "\"reference\" must be an object");
    if ((st = ht_kernel_reference(c->k, &r)) || (st = spec_parse_kernel(c, ref, "reference.", r))) return st;
  }
  if ((st = parse_constraints(c, root)) || (st = parse_metrics(c, root)) || (st = parse_work(c, root)) ||
      (st = parse_tolerance(c, root)))
    return st;
  return kb_finish(c->k, c->path, root, out);
}

ht_status ht_spec_load(const char *path, ht_spec **out) {
  *out = NULL;
  spec_ctx c = {.path = path};
  ht_status st = ht_read_file(path, &c.text, NULL);
  if (st) return st;
  json_error_t jerr;
  json_t *root = json_loads(c.text, JSON_REJECT_DUPLICATES, &jerr);
  if (!root) {
    st = ht_error(HT_ERR_PARSE, "%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
    free(c.text);
    return st;
  }
  char *dircopy = ht_strdup(path);
  c.dir = dircopy ? dirname(dircopy) : ".";
  int t1 = json_is_object(root) && json_object_get(root, "ConfigurationSpace");
  st = t1 ? spec_parse_t1(&c, root, out) : parse_root(&c, root, out);
  ht_kernel_destroy(c.k);
  json_decref(root);
  free(c.text);
  free(dircopy);
  return st;
}
