/* A builder's fields as a spec's JSON (docs/spec.md): the identity hash of a kernel built in code
 * is taken over it, as a spec file's is over the file. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>

#include "spec/kernel_internal.h"

static const char *const init_names[] = {"random", "zeros", "ramp", "fill", "file"};
static const char *const access_names[] = {"", "read", "write", "readwrite"};

/* Adds value under key, keeping the first failure in *ok. */
static void put(json_t *o, const char *key, json_t *value, int *ok) {
  if (!value || json_object_set_new(o, key, value)) *ok = 0;
}

static json_t *texts(char *const *list, int n) {
  json_t *a = json_array();
  for (int i = 0; a && i < n; i++)
    if (json_array_append_new(a, json_string(list[i]))) {
      json_decref(a);
      return NULL;
    }
  return a;
}

/* language, source, entry, flags, defines and geometry: a kernel's and its reference's keys. */
static void describe_source(const ht_kernel *k, json_t *o, int *ok) {
  if (!k->has_source) return;
  put(o, "language", json_string(ht_language_name(k->lang)), ok);
  /* text without a file stands in as its hash: the identity changes with the text */
  if (k->path) put(o, "source", json_string(k->path), ok);
  if (k->entry) put(o, "entry", json_string(k->entry), ok);
  if (k->flags) put(o, "flags", json_string(k->flags), ok);
  if (k->n_defines) {
    json_t *d = json_object();
    for (int i = 0; d && i < k->n_defines; i++) put(d, k->define_names[i], json_string(k->define_values[i]), ok);
    put(o, "defines", d, ok);
  }
  for (int g = 0; g < HT_GEOM_COUNT; g++)
    if (k->geom_set[g]) put(o, kb_geometry_keys[g], texts(k->geom[g], k->geom_n[g]), ok);
}

static json_t *describe_init(const kb_arg *a) {
  if (a->init == HT_INIT_FILL) return json_pack("{s:f}", "fill", a->fill);
  if (a->init == HT_INIT_FILE) return json_pack("{s:s}", "file", a->file);
  if (a->init_range) return json_pack("{s:[f,f]}", "random", a->lo, a->hi);
  return json_string(init_names[a->init]);
}

static json_t *describe_args(const ht_kernel *k, int *ok) {
  json_t *list = json_array();
  for (int i = 0; list && i < k->n_args; i++) {
    const kb_arg *a = &k->args[i];
    json_t *o = json_object();
    put(o, "name", json_string(a->name), ok);
    put(o, "type", json_string(ht_dtype_name(a->type)), ok);
    if (a->kind == KB_STOP) put(o, "stop", json_true(), ok);
    else put(o, a->kind == KB_BUFFER ? "buffer" : "value", json_string(a->expr), ok);
    if (a->kind == KB_BUFFER) put(o, "access", json_string(access_names[a->access]), ok);
    if (a->kind == KB_BUFFER && a->init_set) put(o, "init", describe_init(a), ok);
    if (!o || json_array_append_new(list, o)) *ok = 0;
  }
  return list;
}

static json_t *describe_params(const ht_kernel *k, int *ok) {
  json_t *o = json_object();
  for (int i = 0; o && i < k->n_params; i++) {
    const kb_param *p = &k->params[i];
    json_t *v;
    if (p->form == KB_POW2) v = json_pack("{s:[I,I]}", "pow2", (json_int_t)p->lo, (json_int_t)p->hi);
    else if (p->form == KB_RANGE)
      v = json_pack("{s:[I,I],s:I}", "range", (json_int_t)p->lo, (json_int_t)p->hi, "step", (json_int_t)p->step);
    else {
      v = json_array();
      for (int j = 0; v && j < p->n; j++)
        if (json_array_append_new(v, spec_value_json(p->values[j]))) *ok = 0;
    }
    put(o, p->name, v, ok);
  }
  return o;
}

/* Sizes, parameters, constraints, work, metrics and the harness's fields. */
static void describe_problem(const ht_kernel *k, json_t *o, int *ok) {
  json_t *sizes = json_object();
  for (int i = 0; sizes && i < k->n_sizes; i++) put(sizes, k->size_names[i], json_integer(k->size_values[i]), ok);
  put(o, "sizes", sizes, ok);
  put(o, "parameters", describe_params(k, ok), ok);
  if (k->n_constraints) put(o, "constraints", texts(k->constraints, k->n_constraints), ok);
  if (k->n_metrics) {
    json_t *m = json_object();
    for (int i = 0; m && i < k->n_metrics; i++) put(m, k->metric_names[i], json_string(k->metric_exprs[i]), ok);
    put(o, "metrics", m, ok);
  }
  if (k->work[0] || k->work[1]) {
    json_t *w = json_object();
    if (k->work[0]) put(w, "flops", json_string(k->work[0]), ok);
    if (k->work[1]) put(w, "bytes", json_string(k->work[1]), ok);
    put(o, "work", w, ok);
  }
  if (!isnan(k->rtol) || !isnan(k->atol)) {
    json_t *t = json_object();
    if (!isnan(k->rtol)) put(t, "rtol", json_real(k->rtol), ok);
    if (!isnan(k->atol)) put(t, "atol", json_real(k->atol), ok);
    put(o, "tolerance", t, ok);
  }
  if (k->has_seed) put(o, "seed", json_integer((json_int_t)k->seed), ok);
  if (k->has_size_defines) put(o, "size_defines", json_boolean(k->size_defines), ok);
}

json_t *kb_describe(const ht_kernel *k) {
  json_t *o = json_object();
  int ok = o != NULL;
  put(o, "name", json_string(k->name), &ok);
  describe_source(k, o, &ok);
  put(o, "arguments", describe_args(k, &ok), &ok);
  describe_problem(k, o, &ok);
  if (k->reference) {
    json_t *r = json_object();
    if (r) describe_source(k->reference, r, &ok);
    put(o, "reference", r, &ok);
  }
  if (ok) return o;
  json_decref(o);
  return NULL;
}
