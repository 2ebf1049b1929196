/* ht_kernel_finish: the checks that need the three parts together (names, geometry, expressions,
 * outputs, C prototypes) and the ht_spec they make. Every producer of specs (the JSON loader,
 * code using hetune/kernel.h, the generators) ends here, so they cannot drift apart. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spec/kernel_internal.h"

static const char *const time_names[] = {"time_s", "time_ms"};

char *kb_resolve(const char *dir, const char *file) {
  if (file[0] == '/' || !dir) return ht_strdup(file);
  return ht_strfmt("%s/%s", dir, file);
}

static ht_status nomem(void) { return ht_error(HT_ERR_NOMEM, "out of memory"); }

ht_status kb_compile(const ht_kernel *k, const ht_spec *s, spec_area area, int index, const char *text,
                     const char *field, int with_times, ht_expr **out) {
  /* the time names come last: only metrics see them, other expressions are evaluated before a run */
  if (ht_expr_compile(text, s->names, with_times ? s->n_names : s->slot_time_s, out) == HT_OK) return HT_OK;
  char msg[1024], key[128];
  snprintf(msg, sizeof msg, "%s", ht_last_error());
  spec_field_key(field, key, sizeof key);
  /* a long expression is quoted by its start, so the reason (which names the column) still fits */
  int shown = strlen(text) > 160 ? 150 : (int)strlen(text);
  return kb_fail(k, area, index, key, text, HT_ERR_PARSE, "%s: \"%.*s%s\": %s", field, shown, text,
                 shown < (int)strlen(text) ? "..." : "", msg);
}

/* ---- names: parameters, then sizes, then device constants, then times (ht_spec_bind's layout) ---- */

static ht_status add_name(ht_spec *s, const char *name) {
  const char **n = realloc(s->names, sizeof(char *) * (size_t)(s->n_names + 1));
  if (!n) return nomem();
  s->names = n;
  s->names[s->n_names++] = name;
  return HT_OK;
}

static ht_status build_names(const ht_kernel *k, ht_spec *s) {
  for (int i = 0; i < s->n_params; i++)
    if (add_name(s, s->params[i].name)) return HT_ERR_NOMEM;
  s->first_size = s->n_names;
  for (int i = 0; i < s->n_sizes; i++) {
    for (int j = 0; j < s->n_params; j++)
      if (strcmp(s->params[j].name, s->size_names[i]) == 0)
        return kb_fail(k, SPEC_AT_TOP, 0, s->size_names[i], NULL, HT_ERR_INVALID,
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

/* ---- the problem and the space ---- */

static ht_status copy_params_and_sizes(const ht_kernel *k, ht_spec *s) {
  s->params = calloc((size_t)k->n_params + 1, sizeof(ht_spec_param));
  s->size_names = calloc((size_t)k->n_sizes + 1, sizeof(char *));
  s->size_values = calloc((size_t)k->n_sizes + 1, sizeof(int64_t));
  if (!s->params || !s->size_names || !s->size_values) return nomem();
  for (; s->n_params < k->n_params; s->n_params++) {
    const kb_param *p = &k->params[s->n_params];
    ht_spec_param *q = &s->params[s->n_params];
    if (!(q->name = ht_strdup(p->name)) || !(q->values = calloc((size_t)p->n, sizeof(ht_value)))) return nomem();
    for (; q->n_values < p->n; q->n_values++) {
      ht_value v = p->values[q->n_values];
      if (v.kind == HT_VAL_STR && !(v.u.s = ht_strdup(v.u.s))) return nomem();
      q->values[q->n_values] = v;
    }
  }
  for (; s->n_sizes < k->n_sizes; s->n_sizes++) {
    if (!(s->size_names[s->n_sizes] = ht_strdup(k->size_names[s->n_sizes]))) return nomem();
    s->size_values[s->n_sizes] = k->size_values[s->n_sizes];
  }
  return HT_OK;
}

/* ---- a launchable kernel: source, defines, geometry ---- */

static void wrap(char **text, const char *fmt, const char *other) {
  char *t = ht_strfmt(fmt, *text, other);
  free(*text);
  *text = t;
}

/* Folds every geometry form into one global (total work-items) and one local text per dim. */
static void combine_geometry(char *const g[HT_GEOM_COUNT][3], int dims, char *global[3], char *local[3]) {
  for (int d = 0; d < dims; d++) {
    local[d] = g[HT_GEOM_LOCAL][d] ? ht_strdup(g[HT_GEOM_LOCAL][d]) : NULL;
    if (local[d] && g[HT_GEOM_LOCAL_MUL][d]) wrap(&local[d], "(%s)*(%s)", g[HT_GEOM_LOCAL_MUL][d]);
    if (local[d] && g[HT_GEOM_LOCAL_DIV][d]) wrap(&local[d], "(%s)/(%s)", g[HT_GEOM_LOCAL_DIV][d]);
    const char *l = local[d] ? local[d] : "1", *div = g[HT_GEOM_GRID_DIV][d];
    if (g[HT_GEOM_GLOBAL][d]) global[d] = ht_strdup(g[HT_GEOM_GLOBAL][d]);
    else if (g[HT_GEOM_GRID][d]) global[d] = ht_strfmt("(%s)*(%s)", g[HT_GEOM_GRID][d], l);
    else if (g[HT_GEOM_PROBLEM][d]) global[d] = ht_strfmt("ceil_div(%s, %s)*(%s)", g[HT_GEOM_PROBLEM][d], div ? div : l, l);
    else global[d] = ht_strdup("1");
    if (g[HT_GEOM_GLOBAL_MUL][d]) wrap(&global[d], "(%s)*(%s)", g[HT_GEOM_GLOBAL_MUL][d]);
    if (g[HT_GEOM_GLOBAL_DIV][d]) wrap(&global[d], "(%s)/(%s)", g[HT_GEOM_GLOBAL_DIV][d]);
  }
}

/* One launch form, no grid_div without "problem", and (GPU kernels) a geometry no list exceeds. */
static ht_status check_geometry(const ht_kernel *kk, spec_area area, const char *prefix, int form_dims) {
  const int *n = kk->geom_n;
  if ((n[HT_GEOM_GLOBAL] > 0) + (n[HT_GEOM_GRID] > 0) + (n[HT_GEOM_PROBLEM] > 0) > 1)
    return kb_fail(kk, area, 0, n[HT_GEOM_GRID] ? "grid" : "problem", NULL, HT_ERR_INVALID,
                   "%sgive one of \"global\", \"grid\" or \"problem\"+\"grid_div\", not several", prefix);
  if (n[HT_GEOM_GRID_DIV] && !n[HT_GEOM_PROBLEM])
    return kb_fail(kk, area, 0, "grid_div", NULL, HT_ERR_INVALID, "%sgrid_div needs \"problem\"", prefix);
  if (kk->lang == HT_LANG_C) return HT_OK; /* a C function gets no geometry: whatever is given is unused */
  if (form_dims == 0)
    return kb_fail(kk, area, 0, "language", NULL, HT_ERR_INVALID,
                   "%smissing launch geometry: %s kernels need \"global\", \"grid\" or \"problem\"", prefix,
                   ht_language_name(kk->lang));
  for (int f = HT_GEOM_GRID_DIV; f < HT_GEOM_COUNT; f++)
    if (n[f] > form_dims)
      return kb_fail(kk, area, 0, kb_geometry_keys[f], NULL, HT_ERR_INVALID, "%s%s has %d dimensions, the launch geometry %d",
                     prefix, kb_geometry_keys[f], n[f], form_dims);
  return HT_OK;
}

static ht_status finish_geometry(const ht_kernel *kk, ht_spec *s, spec_area area, const char *prefix, ht_spec_kernel *out) {
  const int *n = kk->geom_n;
  int form_dims = n[HT_GEOM_GLOBAL] > n[HT_GEOM_GRID] ? n[HT_GEOM_GLOBAL] : n[HT_GEOM_GRID];
  if (n[HT_GEOM_PROBLEM] > form_dims) form_dims = n[HT_GEOM_PROBLEM];
  int dims = form_dims > n[HT_GEOM_LOCAL] ? form_dims : n[HT_GEOM_LOCAL];
  ht_status st = check_geometry(kk, area, prefix, form_dims);
  if (st) return st;
  char *global[3] = {0}, *local[3] = {0};
  combine_geometry(kk->geom, dims, global, local);
  out->dims = dims;
  for (int d = 0; d < dims && !st; d++) {
    char field[64];
    snprintf(field, sizeof field, "%sglobal[%d]", prefix, d);
    st = global[d] ? kb_compile(kk, s, area, 0, global[d], field, 0, &out->global[d]) : nomem();
    snprintf(field, sizeof field, "%slocal[%d]", prefix, d);
    if (!st && local[d]) st = kb_compile(kk, s, area, 0, local[d], field, 0, &out->local[d]);
  }
  for (int d = 0; d < 3; d++) {
    free(global[d]);
    free(local[d]);
  }
  return st;
}

/* Source text without a file is named after the kernel, in the base folder (#include looks there). */
char *kb_source_file(const ht_kernel *kk, const ht_kernel *root) {
  if (kk->path) return ht_strdup(kk->path);
  const char *ext = kk->lang == HT_LANG_OPENCL ? "cl" : kk->lang == HT_LANG_CUDA ? "cu" : "c";
  return ht_strfmt("%s%s.%s", root->name, kk != root ? "_reference" : "", ext);
}

static ht_status finish_source(const ht_kernel *kk, const ht_kernel *root, ht_spec *s, ht_spec_kernel *out) {
  const int is_ref = kk != root;
  const spec_area area = is_ref ? SPEC_AT_REFERENCE : SPEC_AT_TOP;
  const char *prefix = is_ref ? "reference." : "";
  if (!kk->has_source)
    return kb_fail(kk, area, 0, NULL, NULL, HT_ERR_INVALID, "missing required field \"%ssource\"", prefix);
  if (!kk->entry) return kb_fail(kk, area, 0, NULL, NULL, HT_ERR_INVALID, "missing required field \"%sentry\"", prefix);
  out->lang = kk->lang;
  char *file = kb_source_file(kk, root);
  out->source_path = file ? kb_resolve(kk->path || root->base_dir ? root->base_dir : ".", file) : NULL;
  free(file);
  out->entry = ht_strdup(kk->entry);
  out->flags = kk->flags ? ht_strdup(kk->flags) : NULL;
  if (!out->source_path || !out->entry || (kk->flags && !out->flags)) return nomem();
  if (kk->text) {
    if (!(out->source_text = ht_strdup(kk->text))) return nomem();
  } else if (ht_read_file(out->source_path, &out->source_text, NULL)) {
    return kb_fail(kk, area, 0, "source", kk->path, HT_ERR_IO, "%ssource: %s", prefix, ht_last_error());
  }
  out->define_names = calloc((size_t)kk->n_defines + 1, sizeof(char *));
  out->define_values = calloc((size_t)kk->n_defines + 1, sizeof(char *));
  if (!out->define_names || !out->define_values) return nomem();
  for (; out->n_defines < kk->n_defines; out->n_defines++) {
    out->define_names[out->n_defines] = ht_strdup(kk->define_names[out->n_defines]);
    out->define_values[out->n_defines] = ht_strdup(kk->define_values[out->n_defines]);
    if (!out->define_names[out->n_defines] || !out->define_values[out->n_defines]) return nomem();
  }
  return finish_geometry(kk, s, area, prefix, out);
}

/* ---- arguments ---- */

static int uses_params(const ht_spec *s, const ht_expr *e) {
  for (int i = 0; i < s->n_params; i++)
    if (ht_expr_uses(e, i)) return 1;
  return 0;
}

/* A buffer's initial contents: the given form, or random for a buffer the kernel reads. */
static ht_status finish_init(const ht_kernel *k, int i, ht_spec_arg *a) {
  const kb_arg *b = &k->args[i];
  const int fl = ht_dtype_is_float(a->type);
  a->lo = fl ? -1 : 0;
  a->hi = fl ? 1 : 100;
  a->init = b->init_set ? b->init : (a->access & HT_ACCESS_READ) ? HT_INIT_RANDOM : HT_INIT_ZEROS;
  if (b->init_range) {
    a->lo = b->lo;
    a->hi = b->hi;
  }
  a->fill = b->fill;
  if (a->init != HT_INIT_FILE) return HT_OK;
  if (!(a->file = kb_resolve(k->base_dir, b->file))) return nomem();
  if (access(a->file, R_OK) != 0)
    return kb_fail(k, SPEC_AT_ARG, i, "file", b->file, HT_ERR_IO, "arguments.%.60s.init.file: %s: %s", b->name, b->file,
                   strerror(errno));
  return HT_OK;
}

static ht_status finish_arg(const ht_kernel *k, ht_spec *s, int i) {
  const kb_arg *b = &k->args[i];
  ht_spec_arg *a = &s->args[i];
  char field[128];
  if (!(a->name = ht_strdup(b->name))) return nomem();
  a->type = b->type;
  if (b->kind == KB_STOP) {
    a->is_stop_flag = 1;
    return HT_OK;
  }
  if (b->kind == KB_SCALAR) {
    snprintf(field, sizeof field, "arguments.%.60s.value", b->name);
    return kb_compile(k, s, SPEC_AT_ARG, i, b->expr, field, 0, &a->value);
  }
  a->is_buffer = 1;
  a->access = b->access;
  snprintf(field, sizeof field, "arguments.%.60s.buffer", b->name);
  ht_status st = kb_compile(k, s, SPEC_AT_ARG, i, b->expr, field, 0, &a->length);
  if (st) return st;
  if (uses_params(s, a->length))
    return kb_fail(k, SPEC_AT_ARG, i, "buffer", NULL, HT_ERR_INVALID,
                   "%s: a buffer's length may use sizes but not parameters (data must be the same for every config)",
                   field);
  return finish_init(k, i, a);
}

/* Verification compares the written buffers: a kernel that writes none could not be checked. */
static ht_status finish_args(const ht_kernel *k, ht_spec *s) {
  if (!(s->args = calloc((size_t)k->n_args + 1, sizeof(ht_spec_arg)))) return nomem();
  int written = 0;
  for (int i = 0; i < k->n_args; i++) {
    s->n_args = i + 1;
    ht_status st = finish_arg(k, s, i);
    if (st) return st;
    written |= s->args[i].is_buffer && (s->args[i].access & HT_ACCESS_WRITE);
  }
  if (written) return HT_OK;
  return kb_fail(k, SPEC_AT_TOP, 0, "arguments", NULL, HT_ERR_INVALID,
                 "arguments: no buffer is written (\"access\": \"write\" or \"readwrite\"), so no output could be "
                 "checked");
}

/* ---- constraints, metrics, work ---- */

static ht_status finish_rest(const ht_kernel *k, ht_spec *s) {
  s->constraints = calloc((size_t)k->n_constraints + 1, sizeof(char *));
  s->metric_names = calloc((size_t)k->n_metrics + 1, sizeof(char *));
  s->metrics = calloc((size_t)k->n_metrics + 1, sizeof(ht_expr *));
  if (!s->constraints || !s->metric_names || !s->metrics) return nomem();
  char field[128];
  ht_status st = HT_OK;
  for (int i = 0; i < k->n_constraints && !st; i++) {
    snprintf(field, sizeof field, "constraints[%d]", i);
    ht_expr *e = NULL; /* compiled here only to report errors with their position */
    st = kb_compile(k, s, SPEC_AT_TOP, 0, k->constraints[i], field, 0, &e);
    ht_expr_destroy(e);
    if (!st && !(s->constraints[s->n_constraints++] = ht_strdup(k->constraints[i]))) st = nomem();
  }
  for (int i = 0; i < k->n_metrics && !st; i++) {
    snprintf(field, sizeof field, "metrics.%.80s", k->metric_names[i]);
    st = kb_compile(k, s, SPEC_AT_METRICS, 0, k->metric_exprs[i], field, 1, &s->metrics[i]);
    if (!st && !(s->metric_names[s->n_metrics++] = ht_strdup(k->metric_names[i]))) st = nomem();
  }
  ht_expr **work[2] = {&s->work_flops, &s->work_bytes};
  static const char *const work_fields[2] = {"work.flops", "work.bytes"};
  for (int i = 0; i < 2 && !st; i++)
    if (k->work[i]) st = kb_compile(k, s, SPEC_AT_WORK, 0, k->work[i], work_fields[i], 0, work[i]);
  return st;
}

/* ---- identity ---- */

/* The kernel's identity: sources, the headers they include (by content) and every field that
 * changes what is measured. Sizes, parameters, constraints and metrics are left out: they do not
 * change a stored measurement. */
static ht_status hash_spec(ht_spec *s, json_t *desc) {
  json_t *copy = json_deep_copy(desc);
  if (!copy) return nomem();
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

/* ---- the whole ---- */

static ht_status finish_all(const ht_kernel *k, ht_spec *s, json_t *desc) {
  ht_status st;
  if ((st = copy_params_and_sizes(k, s)) || (st = build_names(k, s))) return st;
  if ((st = finish_source(k, k, s, &s->kernel)) || (st = finish_args(k, s))) return st;
  if (k->reference) {
    s->has_reference = 1;
    if ((st = finish_source(k->reference, k, s, &s->reference))) return st;
  }
  if ((st = finish_rest(k, s)) || (st = kb_check_signatures(k, s))) return st;
  if (desc) return hash_spec(s, desc);
  json_t *own = kb_describe(k);
  st = own ? hash_spec(s, own) : nomem();
  json_decref(own);
  return st;
}

ht_status kb_finish(ht_kernel *k, const char *path, json_t *desc, ht_spec **out) {
  if (!out) return kb_misuse(NULL, "ht_kernel_finish", "out is NULL");
  *out = NULL;
  if (!k || k->parent) return kb_misuse(NULL, "ht_kernel_finish", "give the kernel (not NULL, not its reference)");
  if (k->first_error)
    return ht_error(HT_ERR_INVALID, "kernel \"%s\": not finished: an earlier call failed: %s", k->name, k->first_error);
  ht_spec *s = calloc(1, sizeof *s);
  if (!s || !(s->name = ht_strdup(k->name)) || (path && !(s->path = ht_strdup(path)))) {
    ht_spec_destroy(s);
    return nomem();
  }
  s->seed = k->has_seed ? k->seed : 1;
  s->size_defines = k->size_defines;
  s->rtol = isnan(k->rtol) ? -1 : k->rtol;
  s->atol = isnan(k->atol) ? -1 : k->atol;
  ht_status st = finish_all(k, s, desc);
  if (st) {
    /* the parts together were wrong, not a call: once mended, finishing again may succeed */
    free(k->first_error);
    k->first_error = NULL;
    ht_spec_destroy(s);
    return st;
  }
  *out = s;
  return HT_OK;
}

ht_status ht_kernel_finish(ht_kernel *k, ht_spec **out) { return kb_finish(k, NULL, NULL, out); }
