/* The kernel builder's setters (hetune/kernel.h): each records its part and checks what it can
 * alone; ht_kernel_finish (kernel_finish.c) checks the parts together. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spec/kernel_internal.h"

const char *const kb_geometry_keys[HT_GEOM_COUNT] = {"global",     "grid",       "problem",   "grid_div", "local",
                                                     "global_mul", "global_div", "local_mul", "local_div"};

static ht_kernel *root_of(const ht_kernel *k) { return (ht_kernel *)(k->parent ? k->parent : k); }

/* Remembered so that finishing a kernel one of whose calls failed fails too. */
static void remember(ht_kernel *k) {
  ht_kernel *r = root_of(k);
  if (!r->first_error) r->first_error = ht_strdup(ht_last_error());
}

ht_status kb_fail(const ht_kernel *k, spec_area area, int index, const char *key, const char *value, ht_status code,
                  const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ht_kernel *r = root_of(k);
  spec_where w = {area, index, key, value};
  ht_status st = r->locate ? r->locate(r->locate_ctx, &w, code, msg) : ht_error(code, "kernel \"%s\": %s", r->name, msg);
  remember(r);
  return st;
}

ht_status kb_misuse(ht_kernel *k, const char *call, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ht_status st = ht_error(HT_ERR_INVALID, "%s: %s", call, msg);
  if (k) remember(k);
  return st;
}

void kb_set_locator(ht_kernel *k, spec_locator fn, void *ctx) {
  k->locate = fn;
  k->locate_ctx = ctx;
}

static ht_status nomem(ht_kernel *k) {
  ht_status st = ht_error(HT_ERR_NOMEM, "out of memory");
  remember(k);
  return st;
}

/* Replaces *slot by a copy of text (NULL stays NULL). */
static ht_status set_text(ht_kernel *k, char **slot, const char *text) {
  char *copy = text ? ht_strdup(text) : NULL;
  if (text && !copy) return nomem(k);
  free(*slot);
  *slot = copy;
  return HT_OK;
}

/* The calls only a kernel takes (arguments, parameters, problem, harness), not its reference. */
static ht_status kernel_only(ht_kernel *k, const char *call) {
  if (!k) return kb_misuse(NULL, call, "the kernel is NULL");
  if (k->parent)
    return kb_misuse(k, call, "the reference takes its kernel's arguments, parameters, sizes and harness: "
                              "give them to the kernel");
  return HT_OK;
}

static ht_status grow(ht_kernel *k, void **array, int n, size_t size) {
  void *p = realloc(*array, size * (size_t)(n + 1));
  if (!p) return nomem(k);
  *array = p;
  return HT_OK;
}

ht_status ht_kernel_create(const char *name, ht_kernel **out) {
  if (!out) return ht_error(HT_ERR_INVALID, "ht_kernel_create: out is NULL");
  *out = NULL;
  if (!name) return ht_error(HT_ERR_INVALID, "ht_kernel_create: the name is NULL");
  ht_kernel *k = calloc(1, sizeof *k);
  if (!k || !(k->name = ht_strdup(name))) {
    free(k);
    return ht_error(HT_ERR_NOMEM, "out of memory");
  }
  k->rtol = k->atol = NAN;
  k->size_defines = 1;
  *out = k;
  return HT_OK;
}

static void free_source(ht_kernel *k) {
  free(k->text);
  free(k->path);
  free(k->entry);
  free(k->flags);
  for (int i = 0; i < k->n_defines; i++) {
    free(k->define_names[i]);
    free(k->define_values[i]);
  }
  free(k->define_names);
  free(k->define_values);
  for (int g = 0; g < HT_GEOM_COUNT; g++)
    for (int d = 0; d < 3; d++) free(k->geom[g][d]);
}

static void free_param(kb_param *p) {
  for (int j = 0; j < p->n; j++)
    if (p->values[j].kind == HT_VAL_STR) free((char *)p->values[j].u.s);
  free(p->values);
  free(p->name);
}

void ht_kernel_destroy(ht_kernel *k) {
  if (!k || k->parent) return; /* a reference goes with its kernel */
  if (k->reference) {
    free_source(k->reference);
    free(k->reference);
  }
  free_source(k);
  for (int i = 0; i < k->n_args; i++) {
    free(k->args[i].name);
    free(k->args[i].expr);
    free(k->args[i].file);
  }
  free(k->args);
  for (int i = 0; i < k->n_params; i++) free_param(&k->params[i]);
  free(k->params);
  for (int i = 0; i < k->n_sizes; i++) free(k->size_names[i]);
  free(k->size_names);
  free(k->size_values);
  for (int i = 0; i < k->n_constraints; i++) free(k->constraints[i]);
  free(k->constraints);
  for (int i = 0; i < k->n_metrics; i++) {
    free(k->metric_names[i]);
    free(k->metric_exprs[i]);
  }
  free(k->work[0]);
  free(k->work[1]);
  free(k->first_error);
  free(k->base_dir);
  free(k->name);
  free(k);
}

ht_status ht_kernel_set_base_dir(ht_kernel *k, const char *dir) {
  ht_status st = kernel_only(k, "ht_kernel_set_base_dir");
  return st ? st : set_text(k, &k->base_dir, dir);
}

/* ---- the source and its launch (a kernel's or its reference's) ---- */

ht_status ht_kernel_set_source(ht_kernel *k, ht_language lang, const char *text, const char *path) {
  if (!k) return kb_misuse(NULL, "ht_kernel_set_source", "the kernel is NULL");
  if (lang != HT_LANG_C && lang != HT_LANG_OPENCL && lang != HT_LANG_CUDA)
    return kb_misuse(k, "ht_kernel_set_source", "language %d: expected HT_LANG_C, HT_LANG_OPENCL or HT_LANG_CUDA",
                     (int)lang);
  if (!text && !path) return kb_misuse(k, "ht_kernel_set_source", "give the source text, a path, or both");
  ht_status st = set_text(k, &k->text, text);
  if (!st) st = set_text(k, &k->path, path);
  if (st) return st;
  k->lang = lang;
  k->has_source = 1;
  return HT_OK;
}

ht_status ht_kernel_set_entry(ht_kernel *k, const char *entry) {
  if (!k || !entry) return kb_misuse(k, "ht_kernel_set_entry", "the kernel or the entry is NULL");
  return set_text(k, &k->entry, entry);
}

ht_status ht_kernel_set_flags(ht_kernel *k, const char *flags) {
  if (!k) return kb_misuse(NULL, "ht_kernel_set_flags", "the kernel is NULL");
  return set_text(k, &k->flags, flags);
}

ht_status ht_kernel_add_define(ht_kernel *k, const char *name, const char *value) {
  if (!k || !name || !value) return kb_misuse(k, "ht_kernel_add_define", "the kernel, name or value is NULL");
  ht_status st = grow(k, (void **)&k->define_names, k->n_defines, sizeof(char *));
  if (!st) st = grow(k, (void **)&k->define_values, k->n_defines, sizeof(char *));
  if (st) return st;
  char *n = ht_strdup(name), *v = ht_strdup(value);
  if (!n || !v) {
    free(n);
    free(v);
    return nomem(k);
  }
  k->define_names[k->n_defines] = n;
  k->define_values[k->n_defines++] = v;
  return HT_OK;
}

ht_status ht_kernel_set_geometry(ht_kernel *k, ht_geometry form, int n, const char *const *exprs) {
  if (!k || (unsigned)form >= HT_GEOM_COUNT || (n > 0 && !exprs))
    return kb_misuse(k, "ht_kernel_set_geometry", "a NULL kernel or expression list, or an unknown form %d", (int)form);
  const char *key = kb_geometry_keys[form];
  /* an empty list is "no local size" for local and the like, but no geometry at all for these */
  const int whole = form == HT_GEOM_GLOBAL || form == HT_GEOM_GRID || form == HT_GEOM_PROBLEM;
  if (n < 0 || n > 3 || (whole && n == 0))
    return kb_fail(k, k->parent ? SPEC_AT_REFERENCE : SPEC_AT_TOP, 0, key, NULL, HT_ERR_INVALID,
                   "%s%s: expected a list of %s to 3 expressions", k->parent ? "reference." : "", key, whole ? "1" : "0");
  for (int d = 0; d < n; d++)
    if (!exprs[d]) return kb_misuse(k, "ht_kernel_set_geometry", "%s[%d] is NULL", key, d);
  char *copy[3] = {0};
  for (int d = 0; d < n; d++)
    if (!(copy[d] = ht_strdup(exprs[d]))) {
      for (int j = 0; j < d; j++) free(copy[j]);
      return nomem(k);
    }
  for (int d = 0; d < 3; d++) {
    free(k->geom[form][d]);
    k->geom[form][d] = copy[d];
  }
  k->geom_n[form] = n;
  k->geom_set[form] = 1;
  return HT_OK;
}

ht_status ht_kernel_reference(ht_kernel *k, ht_kernel **ref) {
  ht_status st = kernel_only(k, "ht_kernel_reference");
  if (st) return st;
  if (!ref) return kb_misuse(k, "ht_kernel_reference", "ref is NULL");
  if (!k->reference) {
    if (!(k->reference = calloc(1, sizeof *k->reference))) return nomem(k);
    k->reference->parent = k;
  }
  *ref = k->reference;
  return HT_OK;
}

/* ---- arguments ---- */

static ht_status add_arg(ht_kernel *k, const char *call, const char *name, ht_dtype type, kb_arg_kind kind,
                         const char *expr) {
  ht_status st = kernel_only(k, call);
  if (st) return st;
  if (!name || (kind != KB_STOP && !expr)) return kb_misuse(k, call, "the name or the expression is NULL");
  if ((unsigned)type >= HT_DTYPE_COUNT) return kb_misuse(k, call, "argument %s: unknown type %d", name, (int)type);
  if ((st = grow(k, (void **)&k->args, k->n_args, sizeof(kb_arg)))) return st;
  kb_arg *a = &k->args[k->n_args];
  memset(a, 0, sizeof *a);
  a->name = ht_strdup(name);
  a->expr = expr ? ht_strdup(expr) : NULL;
  if (!a->name || (expr && !a->expr)) {
    free(a->name);
    free(a->expr);
    return nomem(k);
  }
  a->type = type;
  a->kind = kind;
  k->n_args++;
  return HT_OK;
}

ht_status ht_kernel_add_buffer(ht_kernel *k, const char *name, ht_dtype type, const char *length, ht_access access) {
  if (access != HT_ACCESS_READ && access != HT_ACCESS_WRITE && access != HT_ACCESS_READWRITE)
    return kb_misuse(k, "ht_kernel_add_buffer", "argument %s: access %d: expected HT_ACCESS_READ, _WRITE or _READWRITE",
                     name ? name : "(null)", (int)access);
  ht_status st = add_arg(k, "ht_kernel_add_buffer", name, type, KB_BUFFER, length);
  if (!st) k->args[k->n_args - 1].access = access;
  return st;
}

ht_status ht_kernel_add_scalar(ht_kernel *k, const char *name, ht_dtype type, const char *value) {
  return add_arg(k, "ht_kernel_add_scalar", name, type, KB_SCALAR, value);
}

ht_status ht_kernel_add_stop_flag(ht_kernel *k, const char *name) {
  return add_arg(k, "ht_kernel_add_stop_flag", name, HT_DTYPE_I32, KB_STOP, NULL);
}

/* The buffer named arg (the last one of that name) for an init call; errors for others. */
static ht_status init_target(ht_kernel *k, const char *call, const char *arg, kb_arg **out) {
  ht_status st = kernel_only(k, call);
  if (st) return st;
  int i = k->n_args - 1;
  while (i >= 0 && (!arg || strcmp(k->args[i].name, arg) != 0)) i--;
  if (i < 0) return kb_misuse(k, call, "no argument \"%s\" (add it first)", arg ? arg : "(null)");
  if (k->args[i].kind == KB_SCALAR)
    return kb_fail(k, SPEC_AT_ARG, i, "init", NULL, HT_ERR_INVALID,
                   "arguments.%s: \"init\" is for buffers; a scalar (\"value\") has none", arg);
  if (k->args[i].kind == KB_STOP)
    return kb_fail(k, SPEC_AT_ARG, i, "init", NULL, HT_ERR_INVALID, "arguments.%s: the stop flag has no \"init\"", arg);
  *out = &k->args[i];
  return HT_OK;
}

ht_status ht_kernel_set_init(ht_kernel *k, const char *arg, ht_init_kind kind) {
  kb_arg *a;
  ht_status st = init_target(k, "ht_kernel_set_init", arg, &a);
  if (st) return st;
  if (kind != HT_INIT_RANDOM && kind != HT_INIT_ZEROS && kind != HT_INIT_RAMP)
    return kb_misuse(k, "ht_kernel_set_init", "%s: kind %d: fill and file take values (ht_kernel_set_init_fill, "
                     "ht_kernel_set_init_file)", arg, (int)kind);
  a->init_set = 1;
  a->init_range = 0;
  a->init = kind;
  return HT_OK;
}

ht_status ht_kernel_set_init_random(ht_kernel *k, const char *arg, double lo, double hi) {
  kb_arg *a;
  ht_status st = init_target(k, "ht_kernel_set_init_random", arg, &a);
  if (st) return st;
  a->init_set = a->init_range = 1;
  a->init = HT_INIT_RANDOM;
  a->lo = lo;
  a->hi = hi;
  return HT_OK;
}

ht_status ht_kernel_set_init_fill(ht_kernel *k, const char *arg, double value) {
  kb_arg *a;
  ht_status st = init_target(k, "ht_kernel_set_init_fill", arg, &a);
  if (st) return st;
  a->init_set = 1;
  a->init_range = 0;
  a->init = HT_INIT_FILL;
  a->fill = value;
  return HT_OK;
}

ht_status ht_kernel_set_init_file(ht_kernel *k, const char *arg, const char *path) {
  kb_arg *a;
  ht_status st = init_target(k, "ht_kernel_set_init_file", arg, &a);
  if (st) return st;
  if (!path) return kb_misuse(k, "ht_kernel_set_init_file", "%s: the path is NULL", arg);
  if ((st = set_text(k, &a->file, path))) return st;
  a->init_set = 1;
  a->init_range = 0;
  a->init = HT_INIT_FILE;
  return HT_OK;
}

/* ---- parameters, constraints, work, metrics ---- */

/* A new parameter's slot, after the checks every form shares. */
static ht_status new_param(ht_kernel *k, const char *call, const char *name, kb_param **out) {
  ht_status st = kernel_only(k, call);
  if (st) return st;
  if (!name) return kb_misuse(k, call, "the name is NULL");
  if (k->n_params >= HT_MAX_PARAMS)
    return kb_fail(k, SPEC_AT_TOP, 0, "parameters", NULL, HT_ERR_INVALID, "too many parameters (more than %d)",
                   HT_MAX_PARAMS);
  for (int i = 0; i < k->n_params; i++)
    if (strcmp(k->params[i].name, name) == 0)
      return kb_fail(k, SPEC_AT_PARAMS, 0, name, NULL, HT_ERR_INVALID, "parameters.%s: given twice", name);
  if ((st = grow(k, (void **)&k->params, k->n_params, sizeof(kb_param)))) return st;
  kb_param *p = &k->params[k->n_params];
  memset(p, 0, sizeof *p);
  if (!(p->name = ht_strdup(name))) return nomem(k);
  *out = p;
  return HT_OK;
}

ht_status ht_kernel_add_param(ht_kernel *k, const char *name, const ht_value *values, int n) {
  kb_param *p;
  ht_status st = new_param(k, "ht_kernel_add_param", name, &p);
  if (st) return st;
  if (n <= 0 || !values) {
    free(p->name);
    return kb_fail(k, SPEC_AT_PARAMS, 0, name, NULL, HT_ERR_INVALID, "parameters.%s: the list of values is empty", name);
  }
  p->values = calloc((size_t)n, sizeof(ht_value));
  for (int j = 0; p->values && j < n; j++) {
    p->values[j] = values[j];
    if (values[j].kind == HT_VAL_STR && !(p->values[j].u.s = ht_strdup(values[j].u.s ? values[j].u.s : ""))) {
      p->n = j;
      free_param(p);
      return nomem(k);
    }
  }
  if (!p->values) {
    free(p->name);
    return nomem(k);
  }
  p->n = n;
  p->form = KB_LIST;
  k->n_params++;
  return HT_OK;
}

/* lo..hi by step, or doubling with pow2; the range's checks as the spec's words. */
static ht_status add_range(ht_kernel *k, const char *call, const char *name, int64_t lo, int64_t hi, int64_t step,
                           int pow2) {
  kb_param *p;
  ht_status st = new_param(k, call, name, &p);
  if (st) return st;
  if (step <= 0) st = kb_fail(k, SPEC_AT_PARAMS, 0, name, NULL, HT_ERR_INVALID, "parameters.%s: \"step\" must be positive", name);
  else if (lo > hi || (pow2 && lo <= 0))
    st = kb_fail(k, SPEC_AT_PARAMS, 0, name, NULL, HT_ERR_INVALID, "parameters.%s: empty or invalid range [%lld, %lld]",
                 name, (long long)lo, (long long)hi);
  const int cap = 4096;
  if (!st && !(p->values = calloc((size_t)cap, sizeof(ht_value)))) st = nomem(k);
  for (int64_t x = lo; !st && x <= hi;) {
    if (p->n == cap) {
      st = kb_fail(k, SPEC_AT_PARAMS, 0, name, NULL, HT_ERR_INVALID, "parameters.%s: more than %d values", name, cap);
      break;
    }
    p->values[p->n++] = ht_int(x);
    /* the next value past INT64_MAX ends the range (signed overflow would be undefined) */
    if (pow2 ? __builtin_mul_overflow(x, 2, &x) : __builtin_add_overflow(x, step, &x)) break;
  }
  if (st) {
    free_param(p);
    return st;
  }
  p->form = pow2 ? KB_POW2 : KB_RANGE;
  p->lo = lo;
  p->hi = hi;
  p->step = step;
  k->n_params++;
  return HT_OK;
}

ht_status ht_kernel_add_param_range(ht_kernel *k, const char *name, int64_t lo, int64_t hi, int64_t step) {
  return add_range(k, "ht_kernel_add_param_range", name, lo, hi, step, 0);
}

ht_status ht_kernel_add_param_pow2(ht_kernel *k, const char *name, int64_t lo, int64_t hi) {
  return add_range(k, "ht_kernel_add_param_pow2", name, lo, hi, 1, 1);
}

ht_status ht_kernel_add_constraint(ht_kernel *k, const char *expr) {
  ht_status st = kernel_only(k, "ht_kernel_add_constraint");
  if (st) return st;
  if (!expr) return kb_misuse(k, "ht_kernel_add_constraint", "the expression is NULL");
  if ((st = grow(k, (void **)&k->constraints, k->n_constraints, sizeof(char *)))) return st;
  if (!(k->constraints[k->n_constraints] = ht_strdup(expr))) return nomem(k);
  k->n_constraints++;
  return HT_OK;
}

ht_status ht_kernel_set_work(ht_kernel *k, const char *flops, const char *bytes) {
  ht_status st = kernel_only(k, "ht_kernel_set_work");
  if (!st) st = set_text(k, &k->work[0], flops);
  if (!st) st = set_text(k, &k->work[1], bytes);
  return st;
}

ht_status ht_kernel_add_metric(ht_kernel *k, const char *name, const char *expr) {
  ht_status st = kernel_only(k, "ht_kernel_add_metric");
  if (st) return st;
  if (!name || !expr) return kb_misuse(k, "ht_kernel_add_metric", "the name or the expression is NULL");
  if (k->n_metrics == 8) return kb_fail(k, SPEC_AT_TOP, 0, "metrics", NULL, HT_ERR_INVALID, "at most 8 metrics");
  char *n = ht_strdup(name), *e = ht_strdup(expr);
  if (!n || !e) {
    free(n);
    free(e);
    return nomem(k);
  }
  k->metric_names[k->n_metrics] = n;
  k->metric_exprs[k->n_metrics++] = e;
  return HT_OK;
}

ht_status ht_kernel_set_size_defines(ht_kernel *k, int on) {
  ht_status st = kernel_only(k, "ht_kernel_set_size_defines");
  if (st) return st;
  k->has_size_defines = 1;
  k->size_defines = on != 0;
  return HT_OK;
}

/* ---- problem and harness ---- */

ht_status ht_kernel_add_size(ht_kernel *k, const char *name, int64_t value) {
  ht_status st = kernel_only(k, "ht_kernel_add_size");
  if (st) return st;
  if (!name) return kb_misuse(k, "ht_kernel_add_size", "the name is NULL");
  for (int i = 0; i < k->n_sizes; i++)
    if (strcmp(k->size_names[i], name) == 0)
      return kb_fail(k, SPEC_AT_TOP, 0, name, NULL, HT_ERR_INVALID, "sizes.%s: given twice", name);
  if ((st = grow(k, (void **)&k->size_names, k->n_sizes, sizeof(char *))) ||
      (st = grow(k, (void **)&k->size_values, k->n_sizes, sizeof(int64_t))))
    return st;
  if (!(k->size_names[k->n_sizes] = ht_strdup(name))) return nomem(k);
  k->size_values[k->n_sizes++] = value;
  return HT_OK;
}

ht_status ht_kernel_set_tolerance(ht_kernel *k, double rtol, double atol) {
  ht_status st = kernel_only(k, "ht_kernel_set_tolerance");
  if (st) return st;
  const double v[2] = {rtol, atol};
  static const char *const keys[] = {"rtol", "atol"};
  for (int i = 0; i < 2; i++)
    if (!isnan(v[i]) && !(v[i] >= 0 && isfinite(v[i])))
      return kb_fail(k, SPEC_AT_TOLERANCE, 0, keys[i], NULL, HT_ERR_INVALID, "tolerance.%s: expected a number >= 0",
                     keys[i]);
  k->rtol = rtol;
  k->atol = atol;
  return HT_OK;
}

ht_status ht_kernel_set_seed(ht_kernel *k, uint64_t seed) {
  ht_status st = kernel_only(k, "ht_kernel_set_seed");
  if (st) return st;
  k->has_seed = 1;
  k->seed = seed;
  return HT_OK;
}
