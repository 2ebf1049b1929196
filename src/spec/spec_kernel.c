/* Spec parsing of kernels (source, geometry, defines) and arguments; binding and spaces. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hetune/spec.h"
#include "spec/spec_internal.h"

static char *resolve(const char *dir, const char *file) {
  if (file[0] == '/') return ht_strdup(file);
  return ht_strfmt("%s/%s", dir, file);
}

/* Reads an optional array of expression strings into texts[3]; returns its length in *n. */
static ht_status geometry_texts(spec_ctx *c, json_t *obj, const char *key, const char *prefix, char *texts[3],
                                int *n) {
  json_t *arr = json_object_get(obj, key);
  *n = 0;
  if (!arr) return HT_OK;
  /* an empty list is "no local size" for local and the like, but no geometry at all for these */
  int form = !strcmp(key, "global") || !strcmp(key, "grid") || !strcmp(key, "problem");
  if (!json_is_array(arr) || json_array_size(arr) > 3 || (form && json_array_size(arr) == 0))
    return spec_fail(c, key, NULL, HT_ERR_INVALID, "%s%s: expected a list of %s to 3 expressions", prefix, key,
                     form ? "1" : "0");
  for (size_t i = 0; i < json_array_size(arr); i++) {
    json_t *v = json_array_get(arr, i);
    if (json_is_string(v)) texts[i] = ht_strdup(json_string_value(v));
    else if (json_is_integer(v)) texts[i] = ht_strfmt("%lld", (long long)json_integer_value(v));
    else return spec_fail(c, key, NULL, HT_ERR_INVALID, "%s%s[%zu]: expected an expression", prefix, key, i);
  }
  *n = (int)json_array_size(arr);
  return HT_OK;
}

static void wrap(char **text, const char *fmt, const char *other) {
  char *t = ht_strfmt(fmt, *text, other);
  free(*text);
  *text = t;
}

typedef struct geometry {
  char *global[3], *grid[3], *problem[3], *div[3], *local[3], *gmul[3], *gdiv[3], *lmul[3], *ldiv[3];
  int n_global, n_grid, n_problem, n_div, n_local, n_gmul, n_gdiv, n_lmul, n_ldiv;
} geometry;

static void geometry_free(geometry *g) {
  char **all[] = {g->global, g->grid, g->problem, g->div, g->local, g->gmul, g->gdiv, g->lmul, g->ldiv};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    for (int d = 0; d < 3; d++) free(all[i][d]);
}

static ht_status read_geometry(spec_ctx *c, json_t *obj, const char *prefix, geometry *g) {
  ht_status st;
  if ((st = geometry_texts(c, obj, "global", prefix, g->global, &g->n_global)) ||
      (st = geometry_texts(c, obj, "grid", prefix, g->grid, &g->n_grid)) ||
      (st = geometry_texts(c, obj, "problem", prefix, g->problem, &g->n_problem)) ||
      (st = geometry_texts(c, obj, "grid_div", prefix, g->div, &g->n_div)) ||
      (st = geometry_texts(c, obj, "local", prefix, g->local, &g->n_local)) ||
      (st = geometry_texts(c, obj, "global_mul", prefix, g->gmul, &g->n_gmul)) ||
      (st = geometry_texts(c, obj, "global_div", prefix, g->gdiv, &g->n_gdiv)) ||
      (st = geometry_texts(c, obj, "local_mul", prefix, g->lmul, &g->n_lmul)) ||
      (st = geometry_texts(c, obj, "local_div", prefix, g->ldiv, &g->n_ldiv)))
    return st;
  int forms = (g->n_global > 0) + (g->n_grid > 0) + (g->n_problem > 0);
  if (forms > 1)
    return spec_fail(c, g->n_grid ? "grid" : "problem", NULL, HT_ERR_INVALID,
                     "%sgive one of \"global\", \"grid\" or \"problem\"+\"grid_div\", not several", prefix);
  if (g->n_div && !g->n_problem)
    return spec_fail(c, "grid_div", NULL, HT_ERR_INVALID, "%sgrid_div needs \"problem\"", prefix);
  return HT_OK;
}

/* Folds every geometry form into one global (total work-items) and one local text per dim. */
static void combine_geometry(geometry *g, int dims, char *global[3], char *local[3]) {
  for (int d = 0; d < dims; d++) {
    local[d] = g->local[d] ? ht_strdup(g->local[d]) : NULL;
    if (local[d] && g->lmul[d]) wrap(&local[d], "(%s)*(%s)", g->lmul[d]);
    if (local[d] && g->ldiv[d]) wrap(&local[d], "(%s)/(%s)", g->ldiv[d]);
    const char *l = local[d] ? local[d] : "1";
    if (g->global[d]) global[d] = ht_strdup(g->global[d]);
    else if (g->grid[d]) global[d] = ht_strfmt("(%s)*(%s)", g->grid[d], l);
    else if (g->problem[d])
      global[d] = ht_strfmt("ceil_div(%s, %s)*(%s)", g->problem[d], g->div[d] ? g->div[d] : l, l);
    else global[d] = ht_strdup("1");
    if (g->gmul[d]) wrap(&global[d], "(%s)*(%s)", g->gmul[d]);
    if (g->gdiv[d]) wrap(&global[d], "(%s)/(%s)", g->gdiv[d]);
  }
}

/* GPU kernels need a launch geometry, and no list may have more dimensions than it. */
static ht_status check_dims(spec_ctx *c, const geometry *g, const char *prefix, ht_language lang, int form_dims) {
  if (lang != HT_LANG_C && form_dims == 0)
    return spec_fail(c, "language", NULL, HT_ERR_INVALID,
                     "%smissing launch geometry: %s kernels need \"global\", \"grid\" or \"problem\"", prefix,
                     ht_language_name(lang));
  if (lang == HT_LANG_C) return HT_OK; /* a C function gets no geometry: whatever is given is unused */
  const char *names[] = {"grid_div", "local", "global_mul", "global_div", "local_mul", "local_div"};
  const int counts[] = {g->n_div, g->n_local, g->n_gmul, g->n_gdiv, g->n_lmul, g->n_ldiv};
  for (int i = 0; i < 6; i++)
    if (counts[i] > form_dims)
      return spec_fail(c, names[i], NULL, HT_ERR_INVALID, "%s%s has %d dimensions, the launch geometry %d", prefix,
                       names[i], counts[i], form_dims);
  return HT_OK;
}

static ht_status parse_geometry(spec_ctx *c, json_t *obj, const char *prefix, ht_spec_kernel *k) {
  geometry g;
  memset(&g, 0, sizeof g);
  ht_status st = read_geometry(c, obj, prefix, &g);
  int form_dims = g.n_global > g.n_grid ? g.n_global : g.n_grid;
  if (g.n_problem > form_dims) form_dims = g.n_problem;
  int dims = form_dims > g.n_local ? form_dims : g.n_local;
  if (!st) st = check_dims(c, &g, prefix, k->lang, form_dims);
  char *global[3] = {0}, *local[3] = {0};
  if (!st) combine_geometry(&g, dims, global, local);
  k->dims = st ? 0 : dims;
  for (int d = 0; d < dims && !st; d++) {
    char field[64];
    snprintf(field, sizeof field, "%sglobal[%d]", prefix, d);
    st = spec_compile_text(c, global[d], field, &k->global[d]);
    snprintf(field, sizeof field, "%slocal[%d]", prefix, d);
    if (!st && local[d]) st = spec_compile_text(c, local[d], field, &k->local[d]);
  }
  for (int d = 0; d < 3; d++) {
    free(global[d]);
    free(local[d]);
  }
  geometry_free(&g);
  return st;
}

static ht_status parse_defines(spec_ctx *c, json_t *obj, const char *prefix, ht_spec_kernel *k) {
  json_t *defs = json_object_get(obj, "defines");
  if (!defs) return HT_OK;
  if (!json_is_object(defs))
    return spec_fail(c, "defines", NULL, HT_ERR_INVALID, "%sdefines: expected an object NAME: value", prefix);
  size_t n = json_object_size(defs);
  k->define_names = calloc(n + 1, sizeof(char *));
  k->define_values = calloc(n + 1, sizeof(char *));
  if (!k->define_names || !k->define_values) return ht_error(HT_ERR_NOMEM, "out of memory");
  const char *key, *outer = spec_enter(c, "defines");
  json_t *v;
  json_object_foreach(defs, key, v) {
    char *val = json_is_string(v)    ? ht_strdup(json_string_value(v))
                : json_is_integer(v) ? ht_strfmt("%lld", (long long)json_integer_value(v))
                : json_is_real(v)    ? ht_strfmt("%.17g", json_real_value(v))
                                     : NULL;
    if (!val) return spec_fail(c, key, NULL, HT_ERR_INVALID, "%sdefines.%s: expected a string or number", prefix, key);
    k->define_names[k->n_defines] = ht_strdup(key);
    k->define_values[k->n_defines++] = val;
  }
  c->obj = outer;
  return HT_OK;
}

ht_status spec_parse_kernel(spec_ctx *c, json_t *obj, const char *prefix, ht_spec_kernel *k) {
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
  if (ht_language_parse(lang, &k->lang))
    return spec_fail(c, "language", lang, HT_ERR_INVALID, "%slanguage: unknown \"%s\" (expected c, opencl or cuda)",
                     prefix, lang);
  k->source_path = resolve(c->dir, source);
  k->entry = ht_strdup(entry);
  k->flags = flags ? ht_strdup(flags) : NULL;
  if (!k->source_path || !k->entry) return ht_error(HT_ERR_NOMEM, "out of memory");
  if (ht_read_file(k->source_path, &k->source_text, NULL))
    return spec_fail(c, "source", source, HT_ERR_IO, "%ssource: %s", prefix, ht_last_error());
  if ((st = parse_defines(c, obj, prefix, k)) || (st = parse_geometry(c, obj, prefix, k))) return st;
  c->obj = NULL;
  return HT_OK;
}

/* ---- arguments ---- */

static ht_status parse_init(spec_ctx *c, json_t *v, const char *name, ht_spec_arg *a) {
  a->lo = -1;
  a->hi = 1;
  if (!ht_dtype_is_float(a->type)) {
    a->lo = 0;
    a->hi = 100;
  }
  if (!v) {
    a->init = (a->access & HT_ACCESS_READ) ? HT_INIT_RANDOM : HT_INIT_ZEROS;
    return HT_OK;
  }
  if (json_is_string(v)) {
    const char *s = json_string_value(v);
    if (strcmp(s, "random") == 0) a->init = HT_INIT_RANDOM;
    else if (strcmp(s, "zeros") == 0) a->init = HT_INIT_ZEROS;
    else if (strcmp(s, "ramp") == 0) a->init = HT_INIT_RAMP;
    else
      return spec_fail(c, "init", s, HT_ERR_INVALID,
                       "arguments.%s.init: unknown \"%s\" (expected random, zeros, ramp, {\"fill\": x}, "
                       "{\"random\": [lo, hi]} or {\"file\": path})", name, s);
    return HT_OK;
  }
  static const char *const keys[] = {"random", "fill", "file", NULL};
  char where[96];
  snprintf(where, sizeof where, "arguments.%.60s.init", name);
  const char *text = spec_text_member(c->obj, "init", 1);
  ht_status st = json_is_object(v) ? spec_check_keys(c, v, text, where, keys) : HT_OK;
  if (st) return st;
  /* one form at a time: {"fill": 2, "random": [0, 1]} would leave one of them unused */
  json_t *r = json_object_get(v, "random"), *f = json_object_get(v, "fill"), *file = json_object_get(v, "file");
  int one = json_is_object(v) && json_object_size(v) == 1;
  if (one && json_is_array(r) && json_array_size(r) == 2 && json_is_number(json_array_get(r, 0)) &&
      json_is_number(json_array_get(r, 1))) {
    a->init = HT_INIT_RANDOM;
    a->lo = json_number_value(json_array_get(r, 0));
    a->hi = json_number_value(json_array_get(r, 1));
  } else if (one && json_is_number(f)) {
    a->init = HT_INIT_FILL;
    a->fill = json_number_value(f);
  } else if (one && json_is_string(file)) {
    a->init = HT_INIT_FILE;
    a->file = resolve(c->dir, json_string_value(file));
    if (a->file && access(a->file, R_OK) != 0)
      return spec_fail(c, "file", json_string_value(file), HT_ERR_IO, "%s.file: %s: %s", where,
                       json_string_value(file), strerror(errno));
  } else {
    return spec_fail_at(c, text, HT_ERR_INVALID, "%s: expected random, zeros, ramp, "
                        "{\"fill\": x}, {\"random\": [lo, hi]} or {\"file\": path}", where);
  }
  return HT_OK;
}

static ht_status parse_access(spec_ctx *c, json_t *arg, const char *name, ht_spec_arg *a) {
  const char *acc;
  ht_status st = spec_string(c, arg, "access", 0, &acc);
  if (st) return st;
  if (!acc || strcmp(acc, "read") == 0) a->access = HT_ACCESS_READ;
  else if (strcmp(acc, "write") == 0) a->access = HT_ACCESS_WRITE;
  else if (strcmp(acc, "readwrite") == 0) a->access = HT_ACCESS_READWRITE;
  else
    return spec_fail(c, "access", acc, HT_ERR_INVALID,
                     "arguments.%s.access: unknown \"%s\" (expected read, write or readwrite)", name, acc);
  return HT_OK;
}

static int uses_params(const ht_spec *s, const ht_expr *e) {
  for (int i = 0; i < s->n_params; i++)
    if (ht_expr_uses(e, i)) return 1;
  return 0;
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
static ht_status parse_stop_flag(spec_ctx *c, json_t *arg, json_t *stop, const char *name, ht_spec_arg *a) {
  if (!json_is_true(stop))
    return spec_fail_at(c, spec_text_member(c->obj, "stop", 0), HT_ERR_INVALID,
                        "arguments.%s.stop: expected true (the argument is the stop flag)", name);
  if (a->type != HT_DTYPE_I32)
    return spec_fail(c, "type", NULL, HT_ERR_INVALID, "arguments.%s: the stop flag's type is int32", name);
  static const char *const others[] = {"buffer", "value", "access", "init"};
  for (int i = 0; i < 4; i++)
    if (json_object_get(arg, others[i]))
      return spec_fail_at(c, spec_text_member(c->obj, others[i], 0), HT_ERR_INVALID,
                          "arguments.%s: the stop flag has no \"%s\"", name, others[i]);
  a->is_stop_flag = 1;
  return HT_OK;
}

static ht_status parse_arg(spec_ctx *c, json_t *arg, size_t i, ht_spec_arg *a) {
  static const char *const keys[] = {"name", "type", "buffer", "value", "init", "access", "stop", NULL};
  ht_spec *s = c->spec;
  const char *name, *type;
  char field[128];
  ht_status st;
  if (!json_is_object(arg))
    return spec_fail(c, "arguments", NULL, HT_ERR_INVALID, "arguments[%zu]: expected an object", i);
  c->in_key = "arguments";
  snprintf(c->in_field, sizeof c->in_field, "arguments[%zu]", i);
  if ((st = spec_check_keys(c, arg, c->obj, c->in_field, keys))) return st;
  if ((st = spec_string(c, arg, "name", 1, &name)) || (st = spec_string(c, arg, "type", 1, &type)))
    return st;
  a->name = ht_strdup(name);
  if (ht_dtype_parse(type, &a->type) || strpbrk(type, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"))
    return spec_fail(c, "type", type, HT_ERR_INVALID, "arguments.%s.type: unknown type \"%s\" (expected float, "
                     "double, int32, uint32, int64, uint64, int8 or uint8)", name, type);
  json_t *len = json_object_get(arg, "buffer"), *val = json_object_get(arg, "value");
  json_t *stop = json_object_get(arg, "stop");
  if (stop) return parse_stop_flag(c, arg, stop, name, a);
  if ((len != NULL) == (val != NULL))
    return spec_fail_at(c, c->obj, HT_ERR_INVALID,
                        "arguments.%s: give either \"buffer\" (a length) or \"value\" (a scalar)", name);
  if (val) {
    snprintf(field, sizeof field, "arguments.%.60s.value", name);
    if ((st = check_scalar_keys(c, arg, name))) return st;
    return spec_expr(c, val, field, &a->value);
  }
  a->is_buffer = 1;
  snprintf(field, sizeof field, "arguments.%.60s.buffer", name);
  if ((st = spec_expr(c, len, field, &a->length))) return st;
  if (uses_params(s, a->length))
    return spec_fail(c, "buffer", NULL, HT_ERR_INVALID,
                     "%s: a buffer's length may use sizes but not parameters (data must be the same for every config)",
                     field);
  if ((st = parse_access(c, arg, name, a))) return st;
  return parse_init(c, json_object_get(arg, "init"), name, a);
}

/* Verification compares the written buffers: a kernel that writes none could not be checked. */
static ht_status check_outputs(spec_ctx *c) {
  const ht_spec *s = c->spec;
  for (int i = 0; i < s->n_args; i++)
    if (s->args[i].is_buffer && (s->args[i].access & HT_ACCESS_WRITE)) return HT_OK;
  return spec_fail(c, "arguments", NULL, HT_ERR_INVALID,
                   "arguments: no buffer is written (\"access\": \"write\" or \"readwrite\"), so no output could be "
                   "checked");
}

ht_status spec_parse_args(spec_ctx *c, json_t *root) {
  json_t *args = json_object_get(root, "arguments");
  if (!args)
    return spec_fail_at(c, spec_text_root(c), HT_ERR_INVALID, "missing required field \"arguments\"");
  if (!json_is_array(args))
    return spec_fail(c, "arguments", NULL, HT_ERR_INVALID, "\"arguments\" must be a list of the kernel's arguments");
  ht_spec *s = c->spec;
  s->args = calloc(json_array_size(args) + 1, sizeof(ht_spec_arg));
  if (!s->args) return ht_error(HT_ERR_NOMEM, "out of memory");
  const char *text = spec_text_member(spec_text_root(c), "arguments", 1);
  for (size_t i = 0; i < json_array_size(args); i++) {
    c->obj = spec_text_element(text, i);
    ht_status st = parse_arg(c, json_array_get(args, i), i, &s->args[i]);
    s->n_args = (int)i + 1;
    if (st) return st;
  }
  c->in_key = NULL;
  c->obj = NULL;
  return check_outputs(c);
}

/* The kernel's identity: sources, the headers they include (by content) and every field that
 * changes what is measured. Sizes, parameters, constraints and metrics are left out: they do not
 * change a stored measurement. */
ht_status spec_hash(spec_ctx *c, json_t *root) {
  ht_spec *s = c->spec;
  json_t *copy = json_deep_copy(root);
  if (!copy) return ht_error(HT_ERR_NOMEM, "out of memory");
  const char *skip[] = {"sizes", "parameters", "constraints", "metrics", "work", "name", "$schema"};
  for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++) json_object_del(copy, skip[i]);
  char *text = json_dumps(copy, JSON_SORT_KEYS | JSON_COMPACT);
  json_decref(copy);
  uint64_t h = ht_hash_str(text ? text : "", 0);
  free(text);
  h = ht_hash_str(s->kernel.source_text, h);
  h = ht_include_hash(s->kernel.source_text, s->kernel.source_path, s->kernel.flags, h);
  if (s->has_reference) {
    h = ht_hash_str(s->reference.source_text, h);
    h = ht_include_hash(s->reference.source_text, s->reference.source_path, s->reference.flags, h);
  }
  ht_hash_hex(h, s->source_hash);
  return HT_OK;
}

/* ---- use ---- */

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
  ht_status st = ht_error(HT_ERR_INVALID, "--size %s: %s has no size '%.*s' (sizes: %s)", assignment, s->path,
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
    if (st) ht_error_prefix(st, "%s: constraints[%d]: ", s->path, i);
  }
  free(vars);
  if (st) {
    ht_space_destroy(sp);
    return st;
  }
  *out = sp;
  return HT_OK;
}

static json_t *value_json(ht_value v) {
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
    for (int j = 0; j < s->params[i].n_values; j++) json_array_append_new(arr, value_json(s->params[i].values[j]));
    json_object_set_new(o, s->params[i].name, arr);
  }
  char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
  json_decref(o);
  return text;
}

char *ht_spec_config_json(const ht_spec *s, const ht_space *space, const ht_config *cfg) {
  json_t *o = json_object();
  for (int i = 0; i < s->n_params; i++)
    json_object_set_new(o, s->params[i].name, value_json(ht_space_value(space, i, cfg->idx[i])));
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
