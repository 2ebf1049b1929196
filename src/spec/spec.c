/* Kernel spec files: parsing (jansson), validation and the variable table of expressions. */
#include <jansson.h>
#include <libgen.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetune/spec.h"
#include "spec/spec_internal.h"

static const char *const time_names[] = {"time_s", "time_ms"};

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

/* The JSON key a field's value sits under: "arguments.n.value" -> "value", "global[0]" -> "global". */
static void field_key(const char *field, char *key, size_t len) {
  snprintf(key, len, "%s", strchr(field, '.') ? strrchr(field, '.') + 1 : field);
  char *bracket = strchr(key, '[');
  if (bracket) *bracket = '\0';
}

/* An expression given as a JSON string or number. */
ht_status spec_expr(spec_ctx *c, json_t *v, const char *field, ht_expr **out) {
  char numbuf[64];
  const char *text;
  if (json_is_string(v)) {
    text = json_string_value(v);
  } else if (json_is_integer(v)) {
    snprintf(numbuf, sizeof numbuf, "%lld", (long long)json_integer_value(v));
    text = numbuf;
  } else if (json_is_real(v)) {
    snprintf(numbuf, sizeof numbuf, "%.17g", json_real_value(v));
    text = numbuf;
  } else {
    char key[128];
    field_key(field, key, sizeof key);
    return spec_fail(c, key, NULL, HT_ERR_INVALID, "%s: expected an expression (string or number)", field);
  }
  return spec_compile_text(c, text, field, out);
}

ht_status spec_compile_text(spec_ctx *c, const char *text, const char *field, ht_expr **out) {
  ht_spec *s = c->spec;
  /* the time names come last: only metrics see them, other expressions are evaluated before a run */
  if (ht_expr_compile(text, s->names, c->with_times ? s->n_names : s->slot_time_s, out) == HT_OK) return HT_OK;
  char msg[1024], key[128];
  snprintf(msg, sizeof msg, "%s", ht_last_error());
  field_key(field, key, sizeof key);
  /* a long expression is quoted by its start, so the reason (which names the column) still fits */
  int shown = strlen(text) > 160 ? 150 : (int)strlen(text);
  return spec_fail(c, key, text, HT_ERR_PARSE, "%s: \"%.*s%s\": %s", field, shown, text,
                   shown < (int)strlen(text) ? "..." : "", msg);
}

/* ---- names ---- */

static ht_status add_name(ht_spec *s, const char *name) {
  const char **n = realloc(s->names, sizeof(char *) * (size_t)(s->n_names + 1));
  if (!n) return ht_error(HT_ERR_NOMEM, "out of memory");
  s->names = n;
  s->names[s->n_names++] = name;
  return HT_OK;
}

static int name_taken(const ht_spec *s, const char *name) {
  for (int i = 0; i < s->n_names; i++)
    if (strcmp(s->names[i], name) == 0) return 1;
  return 0;
}

/* Parameters, then sizes, then device constants, then times: the layout ht_spec_bind fills. */
static ht_status build_names(spec_ctx *c) {
  ht_spec *s = c->spec;
  for (int i = 0; i < s->n_params; i++)
    if (add_name(s, s->params[i].name)) return HT_ERR_NOMEM;
  s->first_size = s->n_names;
  for (int i = 0; i < s->n_sizes; i++) {
    if (name_taken(s, s->size_names[i]))
      return spec_fail(c, s->size_names[i], NULL, HT_ERR_INVALID,
                       "size \"%s\" has the name of a parameter", s->size_names[i]);
    if (add_name(s, s->size_names[i])) return HT_ERR_NOMEM;
  }
  s->first_device = s->n_names;
  ht_device_info dummy;
  memset(&dummy, 0, sizeof dummy);
  const char *dnames[32];
  ht_value dvals[32];
  int nd = ht_device_constants(&dummy, dnames, dvals, 32);
  for (int i = 0; i < nd; i++)
    if (add_name(s, dnames[i])) return HT_ERR_NOMEM;
  s->slot_time_s = s->n_names;
  s->slot_time_ms = s->n_names + 1;
  for (int i = 0; i < 2; i++)
    if (add_name(s, time_names[i])) return HT_ERR_NOMEM;
  return HT_OK;
}

/* ---- sizes ---- */

static ht_status parse_sizes(spec_ctx *c, json_t *root) {
  json_t *sizes = json_object_get(root, "sizes");
  if (!sizes) return HT_OK;
  if (!json_is_object(sizes))
    return spec_fail(c, "sizes", NULL, HT_ERR_INVALID, "\"sizes\" must be an object of name: integer");
  ht_spec *s = c->spec;
  size_t n = json_object_size(sizes);
  s->size_names = calloc(n ? n : 1, sizeof(char *));
  s->size_values = calloc(n ? n : 1, sizeof(int64_t));
  if (!s->size_names || !s->size_values) return ht_error(HT_ERR_NOMEM, "out of memory");
  const char *key, *outer = spec_enter(c, "sizes");
  json_t *v;
  json_object_foreach(sizes, key, v) {
    if (!json_is_integer(v))
      return spec_fail(c, key, NULL, HT_ERR_INVALID, "sizes.%s: expected an integer", key);
    s->size_names[s->n_sizes] = ht_strdup(key);
    s->size_values[s->n_sizes++] = json_integer_value(v);
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

static ht_status param_values_range(spec_ctx *c, const char *name, json_t *obj, const char *text, ht_spec_param *p) {
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
  int64_t step = stepv ? json_integer_value(stepv) : 1;
  if (step <= 0)
    return spec_fail(c, name, NULL, HT_ERR_INVALID, "parameters.%s: \"step\" must be positive", name);
  if (lo > hi || (pow2 && lo <= 0))
    return spec_fail(c, name, NULL, HT_ERR_INVALID, "parameters.%s: empty or invalid range [%lld, %lld]", name,
                     (long long)lo, (long long)hi);
  int cap = 4096;
  p->values = calloc((size_t)cap, sizeof(ht_value));
  if (!p->values) return ht_error(HT_ERR_NOMEM, "out of memory");
  for (int64_t x = lo; x <= hi;) {
    if (p->n_values == cap)
      return spec_fail(c, name, NULL, HT_ERR_INVALID, "parameters.%s: more than %d values", name, cap);
    p->values[p->n_values++] = ht_int(x);
    /* the next value past INT64_MAX ends the range (signed overflow would be undefined) */
    if (pow2 ? __builtin_mul_overflow(x, 2, &x) : __builtin_add_overflow(x, step, &x)) break;
  }
  return HT_OK;
}

static ht_status param_values_list(spec_ctx *c, const char *name, json_t *arr, ht_spec_param *p) {
  size_t n = json_array_size(arr);
  if (n == 0) return spec_fail(c, name, NULL, HT_ERR_INVALID, "parameters.%s: the list of values is empty", name);
  p->values = calloc(n, sizeof(ht_value));
  if (!p->values) return ht_error(HT_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    json_t *v = json_array_get(arr, i);
    if (json_is_integer(v)) p->values[i] = ht_int(json_integer_value(v));
    else if (json_is_real(v)) p->values[i] = ht_float(json_real_value(v));
    else if (json_is_string(v)) p->values[i] = ht_str(ht_strdup(json_string_value(v)));
    else if (json_is_boolean(v)) p->values[i] = ht_int(json_is_true(v));
    else
      return spec_fail(c, name, NULL, HT_ERR_INVALID, "parameters.%s[%zu]: expected a number or a string", name, i);
    p->n_values++;
  }
  return HT_OK;
}

static ht_status parse_params(spec_ctx *c, json_t *root) {
  json_t *params = json_object_get(root, "parameters");
  if (!params) return spec_fail_at(c, spec_text_root(c), HT_ERR_INVALID, "missing required field \"parameters\"");
  if (!json_is_object(params))
    return spec_fail(c, "parameters", NULL, HT_ERR_INVALID, "\"parameters\" must be an object of name: values");
  ht_spec *s = c->spec;
  size_t n = json_object_size(params);
  if (n > HT_MAX_PARAMS)
    return spec_fail(c, "parameters", NULL, HT_ERR_INVALID, "too many parameters (%zu, at most %d)", n, HT_MAX_PARAMS);
  s->params = calloc(n ? n : 1, sizeof(ht_spec_param));
  if (!s->params) return ht_error(HT_ERR_NOMEM, "out of memory");
  const char *key, *outer = spec_enter(c, "parameters");
  json_t *v;
  json_object_foreach(params, key, v) {
    ht_spec_param *p = &s->params[s->n_params++];
    p->name = ht_strdup(key);
    ht_status st = json_is_array(v) ? param_values_list(c, key, v, p)
                                    : param_values_range(c, key, v, spec_text_member(c->obj, key, 1), p);
    if (st) return st;
  }
  c->obj = outer;
  return HT_OK;
}

/* ---- constraints and metrics ---- */

static ht_status parse_constraints(spec_ctx *c, json_t *root) {
  json_t *arr = json_object_get(root, "constraints");
  if (!arr) return HT_OK;
  if (!json_is_array(arr))
    return spec_fail(c, "constraints", NULL, HT_ERR_INVALID, "\"constraints\" must be a list of expressions");
  ht_spec *s = c->spec;
  s->constraints = calloc(json_array_size(arr) + 1, sizeof(char *));
  if (!s->constraints) return ht_error(HT_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < json_array_size(arr); i++) {
    json_t *v = json_array_get(arr, i);
    char field[64];
    snprintf(field, sizeof field, "constraints[%zu]", i);
    if (!json_is_string(v))
      return spec_fail(c, "constraints", NULL, HT_ERR_INVALID, "%s: expected a string expression", field);
    ht_expr *e = NULL; /* compiled here only to report errors with their position */
    ht_status st = spec_compile_text(c, json_string_value(v), field, &e);
    ht_expr_destroy(e);
    if (st) return st;
    s->constraints[s->n_constraints++] = ht_strdup(json_string_value(v));
  }
  return HT_OK;
}

static ht_status parse_metrics(spec_ctx *c, json_t *root) {
  json_t *obj = json_object_get(root, "metrics");
  if (!obj) return HT_OK;
  if (!json_is_object(obj))
    return spec_fail(c, "metrics", NULL, HT_ERR_INVALID, "\"metrics\" must be an object of name: expression");
  ht_spec *s = c->spec;
  size_t n = json_object_size(obj);
  if (n > 8) return spec_fail(c, "metrics", NULL, HT_ERR_INVALID, "at most 8 metrics");
  s->metric_names = calloc(n + 1, sizeof(char *));
  s->metrics = calloc(n + 1, sizeof(ht_expr *));
  if (!s->metric_names || !s->metrics) return ht_error(HT_ERR_NOMEM, "out of memory");
  const char *key, *outer = spec_enter(c, "metrics");
  json_t *v;
  json_object_foreach(obj, key, v) {
    char field[96];
    snprintf(field, sizeof field, "metrics.%.80s", key);
    c->with_times = 1;
    ht_status st = spec_expr(c, v, field, &s->metrics[s->n_metrics]);
    c->with_times = 0;
    if (st) return st;
    s->metric_names[s->n_metrics++] = ht_strdup(key);
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
  const char *key, *outer = spec_enter(c, "work");
  ht_status st = spec_check_keys(c, w, c->obj, "work", keys);
  if (st) return st;
  json_t *v;
  json_object_foreach(w, key, v) {
    ht_expr **slot = strcmp(key, "flops") == 0 ? &c->spec->work_flops : &c->spec->work_bytes;
    char field[64];
    snprintf(field, sizeof field, "work.%s", key);
    if ((st = spec_expr(c, v, field, slot))) return st;
  }
  c->obj = outer;
  return HT_OK;
}

static ht_status parse_tolerance(spec_ctx *c, json_t *root) {
  static const char *const keys[] = {"rtol", "atol", NULL};
  ht_spec *s = c->spec;
  s->rtol = s->atol = -1;
  json_t *t = json_object_get(root, "tolerance");
  if (!t) return HT_OK;
  if (!json_is_object(t))
    return spec_fail(c, "tolerance", NULL, HT_ERR_INVALID, "\"tolerance\" must be {\"rtol\": number, \"atol\": number}");
  const char *text = spec_text_member(spec_text_root(c), "tolerance", 1);
  ht_status st = spec_check_keys(c, t, text, "tolerance", keys);
  if (st) return st;
  double *slots[] = {&s->rtol, &s->atol};
  for (int i = 0; i < 2; i++) {
    json_t *v = json_object_get(t, keys[i]);
    if (!v) continue;
    if (!json_is_number(v) || json_number_value(v) < 0)
      return spec_fail_at(c, spec_text_member(text, keys[i], 0), HT_ERR_INVALID,
                          "tolerance.%s: expected a number >= 0", keys[i]);
    *slots[i] = json_number_value(v);
  }
  return HT_OK;
}

/* ---- the whole file ---- */

static ht_status parse_root(spec_ctx *c, json_t *root) {
  ht_spec *s = c->spec;
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
  s->name = ht_strdup(name);
  json_t *sd = json_object_get(root, "size_defines"), *seed = json_object_get(root, "seed");
  if (sd && !json_is_boolean(sd))
    return spec_fail(c, "size_defines", NULL, HT_ERR_INVALID, "\"size_defines\" must be true or false");
  if (seed && !json_is_integer(seed))
    return spec_fail(c, "seed", NULL, HT_ERR_INVALID, "\"seed\" must be an integer");
  s->size_defines = sd ? json_is_true(sd) : 1;
  s->seed = seed ? (uint64_t)json_integer_value(seed) : 1;
  if ((st = parse_params(c, root)) || (st = parse_sizes(c, root)) || (st = build_names(c))) return st;
  if ((st = spec_parse_kernel(c, root, "", &s->kernel))) return st;
  if ((st = spec_parse_args(c, root))) return st;
  json_t *ref = json_object_get(root, "reference");
  if (ref) {
    if (!json_is_object(ref))
      return spec_fail(c, "reference", NULL, HT_ERR_INVALID, "\"reference\" must be an object");
    if ((st = spec_parse_kernel(c, ref, "reference.", &s->reference))) return st;
    s->has_reference = 1;
  }
  if ((st = parse_constraints(c, root)) || (st = parse_metrics(c, root)) || (st = parse_work(c, root)) ||
      (st = parse_tolerance(c, root)) || (st = spec_check_signatures(c)))
    return st;
  return spec_hash(c, root);
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
  c.spec = calloc(1, sizeof(ht_spec));
  if (!c.spec) st = ht_error(HT_ERR_NOMEM, "out of memory");
  else {
    c.spec->path = ht_strdup(path);
    st = parse_root(&c, root);
  }
  json_decref(root);
  free(c.text);
  free(dircopy);
  if (st) {
    ht_spec_destroy(c.spec);
    return st;
  }
  *out = c.spec;
  return HT_OK;
}
