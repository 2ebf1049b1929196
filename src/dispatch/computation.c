/* Computations: variants of one operation, checked to share one signature, with their options. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch/dispatch_internal.h"
#include "hetune/model.h"

const char *ht_decision_source_name(ht_decision_source s) {
  static const char *const names[] = {"static", "cached", "measured", "history", "model", "rule", "explore"};
  return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "?";
}

ht_status ht_computation_create(const char *name, ht_store *st, ht_computation **out) {
  if (!out) return ht_error(HT_ERR_INVALID, "ht_computation_create: out is NULL");
  *out = NULL;
  if (!name || !*name) return ht_error(HT_ERR_INVALID, "a computation needs a name");
  ht_computation *c = calloc(1, sizeof *c);
  if (!c || !(c->name = ht_strdup(name))) {
    free(c);
    return ht_error(HT_ERR_NOMEM, "out of memory");
  }
  c->st = st;
  c->selector = htd_selector_find("history");
  c->window = 16;
  c->drift = 1.25;
  c->explore = 0.05;
  c->regret_cap = 1.2;
  c->sample_below_s = 16e-6;
  c->seed = 1;
  htd_log_init(c);
  *out = c;
  return HT_OK;
}

static ht_status exec_for(ht_computation *c, const char *device_id, ht_exec **out) {
  for (int i = 0; i < c->n_variants; i++)
    if (c->v[i].ex && !strcmp(c->v[i].device_id, device_id)) return *out = c->v[i].ex, HT_OK;
  ht_status st = ht_exec_open(device_id, out);
  if (!st) c->ex[c->n_ex++] = *out;
  return st;
}

ht_status ht_computation_add_variant(ht_computation *c, const ht_spec *spec, const char *device_id,
                                     const char *config, int *index) {
  if (!c || !spec || !device_id) return ht_error(HT_ERR_INVALID, "ht_computation_add_variant: bad arguments");
  if (c->finished) return ht_error(HT_ERR_INVALID, "%s: variants are added before ht_computation_finish", c->name);
  if (c->n_variants == HTD_MAX_VARIANTS)
    return ht_error(HT_ERR_INVALID, "%s: more than %d variants", c->name, HTD_MAX_VARIANTS);
  htd_variant *v = &c->v[c->n_variants];
  memset(v, 0, sizeof *v);
  v->spec = spec;
  v->best = config && !strcmp(config, "best");
  v->device_id = ht_strdup(device_id);
  v->config = ht_strdup(config ? config : "");
  v->correction = 1;
  v->drift_f = 1;
  v->reprobe_every = HTD_REPROBE;
  if (!v->device_id || !v->config) return ht_error(HT_ERR_NOMEM, "out of memory");
  ht_status st = exec_for(c, device_id, &v->ex);
  if (st) {
    free(v->device_id);
    free(v->config);
    return ht_error_prefix(st, "%s: variant %d: ", c->name, c->n_variants);
  }
  snprintf(v->label, sizeof v->label, "%s %s on %s", spec->name, *v->config ? v->config : "(no parameters)",
           ht_exec_device(v->ex)->info.id);
  if (index) *index = c->n_variants;
  c->n_variants++;
  return HT_OK;
}

/* ---- one signature ---- */

static const char *access_name(ht_access a) {
  return a == HT_ACCESS_READ ? "read" : a == HT_ACCESS_WRITE ? "write" : "readwrite";
}

static ht_status same_sizes(const ht_computation *c, int i) {
  const ht_spec *a = c->spec0, *b = c->v[i].spec;
  if (a->n_sizes != b->n_sizes)
    return ht_error(HT_ERR_INVALID, "%s: variant %d (%s) has %d sizes, variant 0 (%s) has %d", c->name, i, b->name,
                    b->n_sizes, a->name, a->n_sizes);
  for (int k = 0; k < a->n_sizes; k++)
    if (strcmp(a->size_names[k], b->size_names[k]))
      return ht_error(HT_ERR_INVALID, "%s: variant %d (%s): size %d is %s, variant 0 (%s) calls it %s", c->name, i,
                      b->name, k + 1, b->size_names[k], a->name, a->size_names[k]);
  return HT_OK;
}

static ht_status same_arg(const ht_computation *c, int i, int k) {
  const ht_spec_arg *x = &c->spec0->args[k], *y = &c->v[i].spec->args[k];
  const char *what = NULL;
  char a[64], b[64];
  if (strcmp(x->name, y->name)) what = "name", snprintf(a, sizeof a, "%s", x->name), snprintf(b, sizeof b, "%s", y->name);
  else if (x->is_buffer != y->is_buffer || x->is_stop_flag != y->is_stop_flag)
    what = "kind", snprintf(a, sizeof a, "%s", x->is_buffer ? "buffer" : x->is_stop_flag ? "stop flag" : "scalar"),
    snprintf(b, sizeof b, "%s", y->is_buffer ? "buffer" : y->is_stop_flag ? "stop flag" : "scalar");
  else if (x->type != y->type)
    what = "type", snprintf(a, sizeof a, "%s", ht_dtype_name(x->type)), snprintf(b, sizeof b, "%s", ht_dtype_name(y->type));
  else if (x->is_buffer && x->access != y->access)
    what = "access", snprintf(a, sizeof a, "%s", access_name(x->access)), snprintf(b, sizeof b, "%s", access_name(y->access));
  if (!what) return HT_OK;
  return ht_error(HT_ERR_INVALID, "%s: variant %d (%s): argument %d has %s %s, variant 0 (%s) has %s", c->name, i,
                  c->v[i].spec->name, k + 1, what, b, c->spec0->name, a);
}

static ht_status same_signature(const ht_computation *c, int i) {
  ht_status st = same_sizes(c, i);
  if (st) return st;
  const ht_spec *a = c->spec0, *b = c->v[i].spec;
  if (a->n_args != b->n_args)
    return ht_error(HT_ERR_INVALID, "%s: variant %d (%s) has %d arguments, variant 0 (%s) has %d", c->name, i, b->name,
                    b->n_args, a->name, a->n_args);
  for (int k = 0; k < a->n_args; k++)
    if ((st = same_arg(c, i, k))) return st;
  return HT_OK;
}

/* ---- options ---- */

static ht_status set_rule(ht_computation *c, const char *text) {
  ht_expr_destroy(c->rule);
  c->rule = NULL;
  free(c->rule_text);
  c->rule_text = ht_strdup(text);
  return c->rule_text ? HT_OK : ht_error(HT_ERR_NOMEM, "out of memory");
}

static ht_status read_bucket(ht_computation *c, const char *b) {
  if (!strcmp(b, "exact")) c->bucket = HTD_BUCKET_EXACT;
  else if (!strcmp(b, "log2")) c->bucket = HTD_BUCKET_LOG2;
  else if (!strcmp(b, "decade")) c->bucket = HTD_BUCKET_DECADE;
  else return ht_error(HT_ERR_INVALID, "%s: bucket '%s': expected exact, log2 or decade", c->name, b);
  return HT_OK;
}

ht_status ht_computation_set_options(ht_computation *c, const char *options) {
  if (!c) return ht_error(HT_ERR_INVALID, "ht_computation_set_options: no computation");
  ht_options *o;
  ht_status st = ht_options_parse(options, &o);
  if (st) return ht_error_prefix(st, "%s: options: ", c->name);
  c->repeat.armed = 0;
  const char *sel = ht_options_str(o, "selector", c->selector ? c->selector->name : "history");
  const char *bucket = ht_options_str(o, "bucket", NULL);
  const char *rule = ht_options_str(o, "rule", NULL);
  c->window = (int)ht_options_int(o, "window", c->window);
  c->drift = ht_options_double(o, "drift", c->drift);
  c->explore = ht_options_double(o, "explore", c->explore);
  c->regret_cap = ht_options_double(o, "regret_cap", c->regret_cap);
  c->sample_below_s = 1e-6 * ht_options_double(o, "sample_below_us", 1e6 * c->sample_below_s);
  c->seed = (uint64_t)ht_options_int(o, "seed", (int64_t)c->seed);
  st = ht_options_check(o, "computation", c->name);
  if (!st && !(c->selector = htd_selector_find(sel)))
    st = ht_error(HT_ERR_INVALID, "%s: unknown selector '%s' (known: %s)", c->name, sel, htd_selector_names());
  if (!st && bucket) st = read_bucket(c, bucket);
  if (!st && rule) st = set_rule(c, rule);
  if (!st && (c->window < 1 || c->window > HTD_WINDOW_MAX))
    st = ht_error(HT_ERR_INVALID, "%s: window %d: expected 1 to %d", c->name, c->window, HTD_WINDOW_MAX);
  if (!st && !(c->drift > 1)) st = ht_error(HT_ERR_INVALID, "%s: drift %g: expected a factor above 1", c->name, c->drift);
  if (!st && !(c->explore >= 0 && c->explore <= 1))
    st = ht_error(HT_ERR_INVALID, "%s: explore %g: expected a probability in [0, 1]", c->name, c->explore);
  if (!st && !(c->sample_below_s >= 0 && c->sample_below_s <= 1))
    st = ht_error(HT_ERR_INVALID, "%s: sample_below_us %g: expected 0 (every call fed back) to 1e6", c->name,
                  1e6 * c->sample_below_s);
  if (!st && !(c->regret_cap >= 1))
    st = ht_error(HT_ERR_INVALID, "%s: regret_cap %g: expected 1 or more", c->name, c->regret_cap);
  ht_options_destroy(o);
  return st;
}

static ht_status compile_rule(ht_computation *c) {
  if (strcmp(c->selector->name, "rule")) return HT_OK;
  if (!c->rule_text)
    return ht_error(HT_ERR_INVALID, "%s: selector rule needs a rule: an expression of the sizes giving a variant index",
                    c->name);
  ht_status st = ht_expr_compile(c->rule_text, (const char *const *)c->spec0->size_names, c->spec0->n_sizes, &c->rule);
  return st ? ht_error_prefix(st, "%s: rule '%s': ", c->name, c->rule_text) : HT_OK;
}

static uint64_t identity_of(const ht_computation *c) {
  uint64_t h = ht_hash_str(c->name, 0);
  for (int i = 0; i < c->n_variants; i++) {
    const htd_variant *v = &c->v[i];
    h = ht_hash_str(v->spec->source_hash, ht_hash_str(v->config, h));
    h = ht_hash_str(ht_exec_device(v->ex)->info.fingerprint, h);
  }
  return h ? h : 1;
}

ht_status ht_computation_finish(ht_computation *c) {
  if (!c) return ht_error(HT_ERR_INVALID, "ht_computation_finish: no computation");
  if (c->finished) return HT_OK;
  if (!c->n_variants) return ht_error(HT_ERR_INVALID, "%s: a computation needs at least one variant", c->name);
  c->spec0 = c->v[0].spec;
  if (c->spec0->n_sizes > HTD_MAX_SIZES)
    return ht_error(HT_ERR_INVALID, "%s: %d sizes; dispatch handles at most %d", c->name, c->spec0->n_sizes,
                    HTD_MAX_SIZES);
  ht_status st = HT_OK;
  for (int i = 1; i < c->n_variants && !st; i++) st = same_signature(c, i);
  for (int i = 0; i < c->n_variants && !st; i++) st = htd_variant_prepare(c, i);
  if (!st) st = compile_rule(c);
  if (st) return st;
  ht_rng_seed(&c->rng, c->seed);
  c->identity = identity_of(c);
  c->finished = 1;
  return htd_history_load(c);
}

static void variant_free(htd_variant *v) {
  for (int i = 0; i < v->n_runs; i++) {
    ht_variant_destroy(v->runs[i].run);
    free(v->runs[i].config);
  }
  free(v->runs);
  for (int i = 0; i < v->n_tuned; i++) free(v->tuned[i].config);
  for (int i = 0; i < v->n_argmin; i++) free(v->argmin[i].config);
  free(v->argmin);
  free(v->tuned);
  free(v->transfers);
  htd_history_free(&v->hist);
  ht_model_destroy(v->model);
  ht_features_destroy(v->model_fs);
  free(v->fixed_config);
  free(v->device_id);
  free(v->config);
  ht_spec_destroy(v->owned_spec);
}

void ht_computation_destroy(ht_computation *c) {
  if (!c) return;
  if (c->finished && c->n_log && ht_computation_flush(c))
    ht_log(1, "%s: the last calls could not be logged: %s", c->name, ht_last_error());
  if (c->race_free) c->race_free(c->race);
  for (int i = 0; i < c->n_variants; i++) variant_free(&c->v[i]);
  for (int i = 0; i < c->n_ex; i++) ht_exec_close(c->ex[i]);
  htd_cache_free(&c->cache);
  ht_expr_destroy(c->rule);
  free(c->rule_text);
  free(c->log);
  free(c->name);
  free(c);
}

const char *ht_computation_name(const ht_computation *c) { return c ? c->name : NULL; }

int ht_computation_variant_count(const ht_computation *c) { return c ? c->n_variants : 0; }

const char *ht_computation_variant_label(const ht_computation *c, int variant) {
  return c && variant >= 0 && variant < c->n_variants ? c->v[variant].label : NULL;
}

const ht_spec *ht_computation_spec(const ht_computation *c) { return c ? c->spec0 : NULL; }

/* ---- sizes ---- */

/* The bucket's representative: the size itself, or the geometric centre of its power-of-two or
 * decade, in integer arithmetic and one multiply, so the exported header's copy of it
 * (static_cache.c) gives the same number on any machine. */
int64_t htd_bucket_rep(int kind, int64_t n) {
  if (kind == HTD_BUCKET_EXACT || n <= 1) return n;
  int64_t p = 1, base = kind == HTD_BUCKET_LOG2 ? 2 : 10;
  while (p <= n / base) p *= base;
  return (int64_t)((double)p * (kind == HTD_BUCKET_LOG2 ? 1.4142135623730951 : 3.1622776601683795) + 0.5);
}

uint64_t htd_bucket(const ht_computation *c, const int64_t *sizes, int64_t *rep) {
  uint64_t h = c->identity;
  for (int i = 0; i < c->spec0->n_sizes; i++) {
    rep[i] = htd_bucket_rep((int)c->bucket, sizes[i]);
    h = (h ^ (uint64_t)rep[i]) * 0x100000001b3ULL;
    h ^= h >> 29;
  }
  return h ? h : 1;
}

uint64_t ht_computation_size_key(const ht_computation *c, const int64_t *sizes) {
  int64_t rep[HTD_MAX_SIZES];
  return c && c->finished && sizes ? htd_bucket(c, sizes, rep) : 0;
}

void htd_size_vars(const ht_spec *spec, const int64_t *sizes, ht_value *vars) {
  for (int i = 0; i < spec->n_names; i++) vars[i] = ht_int(0);
  for (int i = 0; i < spec->n_sizes; i++) vars[spec->first_size + i] = ht_int(sizes[i]);
}

double htd_problem_work(const ht_spec *spec, const int64_t *sizes) {
  double w = 1;
  for (int i = 0; i < spec->n_sizes; i++) w *= (double)(sizes[i] > 0 ? sizes[i] : 1);
  return w;
}

double htd_work(const ht_spec *spec, const int64_t *sizes) {
  double w = 1;
  if (spec->work_flops) {
    ht_value vars[spec->n_names + 1];
    htd_size_vars(spec, sizes, vars);
    if (!ht_expr_eval_double(spec->work_flops, vars, &w) && w > 0) return w;
  }
  return htd_problem_work(spec, sizes);
}

double htd_transfer_s(const ht_computation *c, int vi, const int64_t *sizes) {
  const htd_variant *v = &c->v[vi];
  if (!v->transfers) return 0;
  const ht_spec *spec = v->spec;
  ht_value vars[spec->n_names + 1];
  htd_size_vars(spec, sizes, vars);
  double s = 0;
  for (int i = 0; i < spec->n_args; i++) {
    const ht_spec_arg *a = &spec->args[i];
    int64_t n;
    if (!a->is_buffer || ht_expr_eval_int(a->length, vars, &n) || n <= 0) continue;
    double bytes = (double)n * (double)ht_dtype_size(a->type);
    if (a->access & HT_ACCESS_READ) s += ht_transfer_time(v->transfers, HT_H2D, bytes);
    if (a->access & HT_ACCESS_WRITE) s += ht_transfer_time(v->transfers, HT_D2H, bytes);
  }
  return s;
}
