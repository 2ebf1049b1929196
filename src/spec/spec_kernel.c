/* Spec files' kernels (source, geometry, defines) and arguments into the builder; binding and spaces. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spec/kernel_internal.h"

/* An optional list of 1 to 3 expressions (0 to 3 for the forms that modify another) into kk. */
static ht_status parse_geometry_form(spec_ctx *c, json_t *obj, ht_geometry form, const char *prefix, ht_kernel *kk) {
  const char *key = kb_geometry_keys[form];
  json_t *arr = json_object_get(obj, key);
  if (!arr) return HT_OK;
  /* an empty list is "no local size" for local and the like, but no geometry at all for these */
  int whole = form == HT_GEOM_GLOBAL || form == HT_GEOM_GRID || form == HT_GEOM_PROBLEM;
  if (!json_is_array(arr) || json_array_size(arr) > 3 || (whole && json_array_size(arr) == 0))
    return spec_fail(c, key, NULL, HT_ERR_INVALID, "%s%s: expected a list of %s to 3 expressions", prefix, key,
                     whole ? "1" : "0");
  char buf[3][64];
  const char *texts[3] = {NULL, NULL, NULL};
  for (size_t i = 0; i < json_array_size(arr); i++) {
    json_t *v = json_array_get(arr, i);
    if (json_is_string(v)) texts[i] = json_string_value(v);
    else if (json_is_integer(v)) {
      snprintf(buf[i], sizeof buf[i], "%lld", (long long)json_integer_value(v));
      texts[i] = buf[i];
    } else return spec_fail(c, key, NULL, HT_ERR_INVALID, "%s%s[%zu]: expected an expression", prefix, key, i);
  }
  return ht_kernel_set_geometry(kk, form, (int)json_array_size(arr), texts);
}

static ht_status parse_defines(spec_ctx *c, json_t *obj, const char *prefix, ht_kernel *kk) {
  json_t *defs = json_object_get(obj, "defines");
  if (!defs) return HT_OK;
  if (!json_is_object(defs))
    return spec_fail(c, "defines", NULL, HT_ERR_INVALID, "%sdefines: expected an object NAME: value", prefix);
  const char *key, *outer = spec_enter(c, "defines");
  json_t *v;
  json_object_foreach(defs, key, v) {
    char *val = json_is_string(v)    ? ht_strdup(json_string_value(v))
                : json_is_integer(v) ? ht_strfmt("%lld", (long long)json_integer_value(v))
                : json_is_real(v)    ? ht_strfmt("%.17g", json_real_value(v))
                                     : NULL;
    if (!val) return spec_fail(c, key, NULL, HT_ERR_INVALID, "%sdefines.%s: expected a string or number", prefix, key);
    ht_status st = ht_kernel_add_define(kk, key, val);
    free(val);
    if (st) return st;
  }
  c->obj = outer;
  return HT_OK;
}

ht_status spec_parse_kernel(spec_ctx *c, json_t *obj, const char *prefix, ht_kernel *kk) {
  static const char *const keys[] = {SPEC_KERNEL_KEYS, NULL};
  const char *lang, *source, *entry, *flags;
  ht_status st;
  int is_ref = *prefix != '\0';
  c->in_key = is_ref ? "reference" : NULL;
  c->obj = is_ref ? spec_text_member(spec_text_root(c), "reference", 1) : NULL;
  snprintf(c->in_field, sizeof c->in_field, "reference");
  if (is_ref && (st = spec_check_keys(c, obj, c->obj, "reference", keys))) return st;
  if ((st = spec_string(c, obj, "language", 1, &lang)) || (st = spec_string(c, obj, "source", 1, &source)) ||
      (st = spec_string(c, obj, "entry", 1, &entry)) || (st = spec_string(c, obj, "flags", 0, &flags)))
    return st;
  c->in_key = NULL;
  ht_language l;
  if (ht_language_parse(lang, &l))
    return spec_fail(c, "language", lang, HT_ERR_INVALID, "%slanguage: unknown \"%s\" (expected c, opencl or cuda)",
                     prefix, lang);
  /* the source is read when the kernel is finished: relative to the spec's folder (the base) */
  if ((st = ht_kernel_set_source(kk, l, NULL, source)) || (st = ht_kernel_set_entry(kk, entry)) ||
      (flags && (st = ht_kernel_set_flags(kk, flags))) || (st = parse_defines(c, obj, prefix, kk)))
    return st;
  for (int g = 0; g < HT_GEOM_COUNT; g++)
    if ((st = parse_geometry_form(c, obj, (ht_geometry)g, prefix, kk))) return st;
  c->obj = NULL;
  return HT_OK;
}

/* ---- arguments ---- */

static ht_status init_object(spec_ctx *c, json_t *v, const char *name, const char *where, const char *text) {
  /* one form at a time: {"fill": 2, "random": [0, 1]} would leave one of them unused */
  json_t *r = json_object_get(v, "random"), *f = json_object_get(v, "fill"), *file = json_object_get(v, "file");
  int one = json_is_object(v) && json_object_size(v) == 1;
  if (one && json_is_array(r) && json_array_size(r) == 2 && json_is_number(json_array_get(r, 0)) &&
      json_is_number(json_array_get(r, 1)))
    return ht_kernel_set_init_random(c->k, name, json_number_value(json_array_get(r, 0)),
                                     json_number_value(json_array_get(r, 1)));
  if (one && json_is_number(f)) return ht_kernel_set_init_fill(c->k, name, json_number_value(f));
  if (one && json_is_string(file)) return ht_kernel_set_init_file(c->k, name, json_string_value(file));
  return spec_fail_at(c, text, HT_ERR_INVALID, "%s: expected random, zeros, ramp, "
                      "{\"fill\": x}, {\"random\": [lo, hi]} or {\"file\": path}", where);
}

static ht_status parse_init(spec_ctx *c, json_t *v, const char *name) {
  if (!v) return HT_OK; /* the builder's default: random for a buffer the kernel reads */
  if (json_is_string(v)) {
    const char *s = json_string_value(v);
    if (strcmp(s, "random") == 0) return ht_kernel_set_init(c->k, name, HT_INIT_RANDOM);
    if (strcmp(s, "zeros") == 0) return ht_kernel_set_init(c->k, name, HT_INIT_ZEROS);
    if (strcmp(s, "ramp") == 0) return ht_kernel_set_init(c->k, name, HT_INIT_RAMP);
    return spec_fail(c, "init", s, HT_ERR_INVALID,
                     "arguments.%s.init: unknown \"%s\" (expected random, zeros, ramp, {\"fill\": x}, "
                     "{\"random\": [lo, hi]} or {\"file\": path})", name, s);
  }
  static const char *const keys[] = {"random", "fill", "file", NULL};
  char where[96];
  snprintf(where, sizeof where, "arguments.%.60s.init", name);
  const char *text = spec_text_member(c->obj, "init", 1);
  ht_status st = json_is_object(v) ? spec_check_keys(c, v, text, where, keys) : HT_OK;
  return st ? st : init_object(c, v, name, where, text);
}

static ht_status parse_access(spec_ctx *c, json_t *arg, const char *name, ht_access *out) {
  const char *acc;
  ht_status st = spec_string(c, arg, "access", 0, &acc);
  if (st) return st;
  if (!acc || strcmp(acc, "read") == 0) *out = HT_ACCESS_READ;
  else if (strcmp(acc, "write") == 0) *out = HT_ACCESS_WRITE;
  else if (strcmp(acc, "readwrite") == 0) *out = HT_ACCESS_READWRITE;
  else
    return spec_fail(c, "access", acc, HT_ERR_INVALID,
                     "arguments.%s.access: unknown \"%s\" (expected read, write or readwrite)", name, acc);
  return HT_OK;
}

/* A scalar has a type and a value; reading, writing and initial contents are for buffers. */
static ht_status check_scalar_keys(spec_ctx *c, json_t *arg, const char *name) {
  const char *buffer_only[] = {"access", "init"};
  for (int i = 0; i < 2; i++)
    if (json_object_get(arg, buffer_only[i]))
      return spec_fail_at(c, spec_text_member(c->obj, buffer_only[i], 0), HT_ERR_INVALID,
                          "arguments.%s: \"%s\" is for buffers; a scalar (\"value\") has none", name, buffer_only[i]);
  return HT_OK;
}

/* "stop": true: the flag of cooperative cancellation, an int32 the runtime owns and the kernel polls;
 * it has no length, value, access or initial contents. */
static ht_status parse_stop_flag(spec_ctx *c, json_t *arg, json_t *stop, const char *name, ht_dtype type) {
  if (!json_is_true(stop))
    return spec_fail_at(c, spec_text_member(c->obj, "stop", 0), HT_ERR_INVALID,
                        "arguments.%s.stop: expected true (the argument is the stop flag)", name);
  if (type != HT_DTYPE_I32)
    return spec_fail(c, "type", NULL, HT_ERR_INVALID, "arguments.%s: the stop flag's type is int32", name);
  static const char *const others[] = {"buffer", "value", "access", "init"};
  for (int i = 0; i < 4; i++)
    if (json_object_get(arg, others[i]))
      return spec_fail_at(c, spec_text_member(c->obj, others[i], 0), HT_ERR_INVALID,
                          "arguments.%s: the stop flag has no \"%s\"", name, others[i]);
  return ht_kernel_add_stop_flag(c->k, name);
}

static ht_status parse_buffer(spec_ctx *c, json_t *arg, json_t *len, const char *name, ht_dtype type) {
  char field[128], buf[64];
  const char *text;
  ht_access access = HT_ACCESS_READ;
  snprintf(field, sizeof field, "arguments.%.60s.buffer", name);
  ht_status st;
  if ((st = spec_expr_text(c, len, field, buf, &text)) || (st = parse_access(c, arg, name, &access)) ||
      (st = ht_kernel_add_buffer(c->k, name, type, text, access)))
    return st;
  return parse_init(c, json_object_get(arg, "init"), name);
}

static ht_status parse_arg(spec_ctx *c, json_t *arg, size_t i) {
  static const char *const keys[] = {"name", "type", "buffer", "value", "init", "access", "stop", NULL};
  const char *name, *type;
  ht_dtype dtype;
  ht_status st;
  if (!json_is_object(arg))
    return spec_fail(c, "arguments", NULL, HT_ERR_INVALID, "arguments[%zu]: expected an object", i);
  c->in_key = "arguments";
  snprintf(c->in_field, sizeof c->in_field, "arguments[%zu]", i);
  if ((st = spec_check_keys(c, arg, c->obj, c->in_field, keys))) return st;
  if ((st = spec_string(c, arg, "name", 1, &name)) || (st = spec_string(c, arg, "type", 1, &type)))
    return st;
  if (ht_dtype_parse(type, &dtype) || strpbrk(type, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"))
    return spec_fail(c, "type", type, HT_ERR_INVALID, "arguments.%s.type: unknown type \"%s\" (expected float, "
                     "double, int32, uint32, int64, uint64, int8 or uint8)", name, type);
  json_t *len = json_object_get(arg, "buffer"), *val = json_object_get(arg, "value");
  json_t *stop = json_object_get(arg, "stop");
  if (stop) return parse_stop_flag(c, arg, stop, name, dtype);
  if ((len != NULL) == (val != NULL))
    return spec_fail_at(c, c->obj, HT_ERR_INVALID,
                        "arguments.%s: give either \"buffer\" (a length) or \"value\" (a scalar)", name);
  if (len) return parse_buffer(c, arg, len, name, dtype);
  char field[128], buf[64];
  const char *text;
  snprintf(field, sizeof field, "arguments.%.60s.value", name);
  if ((st = check_scalar_keys(c, arg, name)) || (st = spec_expr_text(c, val, field, buf, &text))) return st;
  return ht_kernel_add_scalar(c->k, name, dtype, text);
}

ht_status spec_parse_args(spec_ctx *c, json_t *root) {
  json_t *args = json_object_get(root, "arguments");
  if (!args)
    return spec_fail_at(c, spec_text_root(c), HT_ERR_INVALID, "missing required field \"arguments\"");
  if (!json_is_array(args))
    return spec_fail(c, "arguments", NULL, HT_ERR_INVALID, "\"arguments\" must be a list of the kernel's arguments");
  const char *text = spec_text_member(spec_text_root(c), "arguments", 1);
  for (size_t i = 0; i < json_array_size(args); i++) {
    c->obj = spec_text_element(text, i);
    ht_status st = parse_arg(c, json_array_get(args, i), i);
    if (st) return st;
  }
  c->in_key = NULL;
  c->obj = NULL;
  return HT_OK;
}

/* ---- use ---- */

const char *spec_label(const ht_spec *s) { return s->path ? s->path : s->name; }

ht_status ht_spec_set_size(ht_spec *s, const char *assignment) {
  const char *eq = strchr(assignment, '=');
  if (!eq) return ht_error(HT_ERR_INVALID, "--size %s: expected NAME=VALUE", assignment);
  char *end;
  long long v = strtoll(eq + 1, &end, 10);
  if (*end || eq[1] == '\0')
    return ht_error(HT_ERR_INVALID, "--size %s: value '%s' is not an integer", assignment, eq + 1);
  for (int i = 0; i < s->n_sizes; i++)
    if (strlen(s->size_names[i]) == (size_t)(eq - assignment) &&
        strncmp(s->size_names[i], assignment, (size_t)(eq - assignment)) == 0) {
      s->size_values[i] = v;
      return HT_OK;
    }
  ht_buf known = {0};
  for (int i = 0; i < s->n_sizes; i++) ht_buf_appendf(&known, "%s%s", i ? ", " : "", s->size_names[i]);
  ht_status st = ht_error(HT_ERR_INVALID, "--size %s: %s has no size '%.*s' (sizes: %s)", assignment, spec_label(s),
                          (int)(eq - assignment), assignment, known.data ? known.data : "none");
  ht_buf_free(&known);
  return st;
}

int ht_spec_problem_key(const ht_spec *s, char *buf, size_t len) {
  size_t n = 0;
  if (len) buf[0] = '\0';
  for (int i = 0; i < s->n_sizes && n < len; i++)
    n += (size_t)snprintf(buf + n, len - n, "%s%s=%lld", i ? "," : "", s->size_names[i],
                          (long long)s->size_values[i]);
  return (int)n;
}

void ht_spec_bind(const ht_spec *s, const ht_space *space, const ht_config *cfg, const ht_device_info *dev,
                  ht_value *vars) {
  (void)space; /* the space's values are the spec's, in the same order */
  for (int i = 0; i < s->n_params; i++)
    vars[i] = s->params[i].values[cfg ? cfg->idx[i] : 0];
  for (int i = 0; i < s->n_sizes; i++) vars[s->first_size + i] = ht_int(s->size_values[i]);
  const char *dn[32];
  ht_value dv[32];
  ht_device_info zero;
  memset(&zero, 0, sizeof zero);
  int nd = ht_device_constants(dev ? dev : &zero, dn, dv, 32);
  for (int i = 0; i < nd; i++) vars[s->first_device + i] = dv[i];
  vars[s->slot_time_s] = ht_float(NAN);
  vars[s->slot_time_ms] = ht_float(NAN);
}

void ht_spec_defines_fill(const ht_spec *s, const ht_spec_kernel *k, const ht_value *vars, int with_params,
                          ht_spec_defines *d) {
  const int cap = (int)(sizeof d->names / sizeof d->names[0]);
  d->n = 0;
  for (int i = 0; i < k->n_defines && d->n < 64; i++) {
    d->names[d->n] = k->define_names[i];
    d->values[d->n++] = k->define_values[i];
  }
  int from = with_params ? 0 : s->first_size, to = s->size_defines ? s->first_device : s->first_size;
  for (int i = from; i < to && d->n < cap; i++) {
    /* a string value is passed whole (the spec owns it): cut to a buffer, two configs would
     * compile to the same binary */
    if (vars[i].kind == HT_VAL_STR) d->values[d->n] = vars[i].u.s;
    else {
      ht_value_format(vars[i], d->text[d->n], sizeof d->text[0]);
      d->values[d->n] = d->text[d->n];
    }
    d->names[d->n] = s->names[i];
    d->n++;
  }
}

ht_status ht_spec_build_space(const ht_spec *s, const ht_device_info *dev, ht_space **out) {
  ht_space *sp;
  ht_status st = ht_space_create(&sp);
  for (int i = 0; i < s->n_params && !st; i++)
    st = ht_space_add_param(sp, s->params[i].name, s->params[i].values, s->params[i].n_values);
  ht_value *vars = calloc((size_t)s->n_names, sizeof(ht_value));
  if (!st && !vars) st = ht_error(HT_ERR_NOMEM, "out of memory");
  if (!st) ht_spec_bind(s, NULL, NULL, dev, vars);
  for (int i = s->first_size; i < s->slot_time_s && !st; i++) st = ht_space_set_constant(sp, s->names[i], vars[i]);
  for (int i = 0; i < s->n_constraints && !st; i++) {
    st = ht_space_add_constraint(sp, s->constraints[i]);
    if (st) ht_error_prefix(st, "%s: constraints[%d]: ", spec_label(s), i);
  }
  free(vars);
  if (st) {
    ht_space_destroy(sp);
    return st;
  }
  *out = sp;
  return HT_OK;
}

json_t *spec_value_json(ht_value v) {
  switch (v.kind) {
  case HT_VAL_INT: return json_integer(v.u.i);
  case HT_VAL_FLOAT: return json_real(v.u.f);
  default: return json_string(v.u.s);
  }
}

char *ht_spec_space_json(const ht_spec *s) {
  json_t *o = json_object();
  for (int i = 0; i < s->n_params; i++) {
    json_t *arr = json_array();
    for (int j = 0; j < s->params[i].n_values; j++) json_array_append_new(arr, spec_value_json(s->params[i].values[j]));
    json_object_set_new(o, s->params[i].name, arr);
  }
  char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(o);
  return text;
}

char *ht_spec_config_json(const ht_spec *s, const ht_space *space, const ht_config *cfg) {
  json_t *o = json_object();
  for (int i = 0; i < s->n_params; i++)
    json_object_set_new(o, s->params[i].name, spec_value_json(ht_space_value(space, i, cfg->idx[i])));
  char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(o);
  return text;
}

static void kernel_free(ht_spec_kernel *k) {
  free(k->source_path);
  free(k->source_text);
  free(k->entry);
  free(k->flags);
  for (int d = 0; d < 3; d++) {
    ht_expr_destroy(k->global[d]);
    ht_expr_destroy(k->local[d]);
  }
  for (int i = 0; i < k->n_defines; i++) {
    free(k->define_names[i]);
    free(k->define_values[i]);
  }
  free(k->define_names);
  free(k->define_values);
}

void ht_spec_destroy(ht_spec *s) {
  if (!s) return;
  kernel_free(&s->kernel);
  kernel_free(&s->reference);
  for (int i = 0; i < s->n_args; i++) {
    free(s->args[i].name);
    free(s->args[i].file);
    ht_expr_destroy(s->args[i].length);
    ht_expr_destroy(s->args[i].value);
  }
  free(s->args);
  for (int i = 0; i < s->n_params; i++) {
    for (int j = 0; j < s->params[i].n_values; j++)
      if (s->params[i].values[j].kind == HT_VAL_STR) free((char *)s->params[i].values[j].u.s);
    free(s->params[i].values);
    free(s->params[i].name);
  }
  free(s->params);
  for (int i = 0; i < s->n_sizes; i++) free(s->size_names[i]);
  free(s->size_names);
  free(s->size_values);
  for (int i = 0; i < s->n_constraints; i++) free(s->constraints[i]);
  free(s->constraints);
  for (int i = 0; i < s->n_metrics; i++) {
    free(s->metric_names[i]);
    ht_expr_destroy(s->metrics[i]);
  }
  free(s->metric_names);
  free(s->metrics);
  ht_expr_destroy(s->work_flops);
  ht_expr_destroy(s->work_bytes);
  free(s->names);
  free(s->name);
  free(s->path);
  free(s);
}
