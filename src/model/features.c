/* Feature vectors for (kernel, config, problem size, device), computed from the spec alone so any
 * kernel gets them without hand-written features:
 *   size:<S>             each problem size
 *   work, log_work       product of the problem sizes (and its log10)
 *   flops, log_flops     from the spec's work.flops (0 when not given)
 *   bytes, log_bytes     work.bytes, else the sum of the buffer sizes
 *   intensity            flops / bytes (0 without flops)
 *   param:<P>            each tuning parameter (strings: index in the parameter's value list)
 *   launch:work_items    product of the global sizes (OpenCL/CUDA only, as the rest of launch:*)
 *   launch:work_groups   product of ceil(global / local) (0 when the runtime chooses the local size)
 *   launch:group_size    product of the local sizes
 *   launch:warps         ceil(group_size / warp size)
 *   launch:work_per_item work / work_items
 *   log_work_items, log_work_groups
 *   device:*             compute units, clock, max group size, local memory, warp size (when the
 *                        device is known)
 * Logs are log10(1 + v): sizes span decades, and models that scale inputs linearly (ELM, MLP,
 * SVR, kNN) otherwise see every small size as 0. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hetune/model.h"
#include "model/features_internal.h"
#include "space/config_text.h"

enum { MAX_FEATURES = HT_MODEL_MAX_FEATURES };

static ht_status add_name(ht_feature_set *fs, const char *fmt, const char *arg) {
  if (fs->n >= MAX_FEATURES) return ht_error(HT_ERR_INVALID, "%s: more than %d features", fs->spec->path, MAX_FEATURES);
  char *name = ht_strfmt(fmt, arg ? arg : "");
  if (!name) return ht_error(HT_ERR_NOMEM, "out of memory");
  fs->names[fs->n++] = name;
  return HT_OK;
}

static ht_status add_names(ht_feature_set *fs, const char *const *list) {
  ht_status st = HT_OK;
  for (int i = 0; list[i] && !st; i++) st = add_name(fs, "%s", list[i]);
  return st;
}

static ht_status layout(ht_feature_set *fs) {
  const ht_spec *s = fs->spec;
  static const char *const work[] = {"work", "log_work", "flops", "log_flops", "bytes", "log_bytes", "intensity", NULL};
  static const char *const launch[] = {"launch:work_items", "launch:work_groups", "launch:group_size", "launch:warps",
                                       "launch:work_per_item", "log_work_items", "log_work_groups", NULL};
  static const char *const device[] = {"device:compute_units", "device:clock_mhz", "device:max_group",
                                       "device:local_mem", "device:warp_size", NULL};
  ht_status st = HT_OK;
  for (int i = 0; i < s->n_sizes && !st; i++) st = add_name(fs, "size:%s", s->size_names[i]);
  if (!st) st = add_names(fs, work);
  fs->first_param = fs->n;
  for (int i = 0; i < s->n_params && !st; i++) st = add_name(fs, "param:%s", s->params[i].name);
  fs->first_launch = fs->n;
  if (!st && s->kernel.dims > 0) st = add_names(fs, launch);
  fs->first_device = fs->n;
  if (!st && fs->has_device) st = add_names(fs, device);
  fs->first_static = fs->n;
  if (!st) st = ht_features_static_layout(fs);
  return st;
}

ht_status ht_features_create(const ht_spec *spec, const ht_device_info *dev, ht_feature_set **out) {
  *out = NULL;
  ht_feature_set *fs = calloc(1, sizeof *fs);
  if (!fs) return ht_error(HT_ERR_NOMEM, "out of memory");
  fs->spec = spec;
  if (dev) {
    fs->dev = *dev;
    fs->has_device = 1;
  }
  fs->names = calloc(MAX_FEATURES, sizeof *fs->names);
  fs->vars = calloc((size_t)spec->n_names + 1, sizeof *fs->vars);
  ht_status st = fs->names && fs->vars ? layout(fs) : ht_error(HT_ERR_NOMEM, "out of memory");
  if (st) {
    ht_features_destroy(fs);
    return st;
  }
  *out = fs;
  return HT_OK;
}

void ht_features_destroy(ht_feature_set *fs) {
  if (!fs) return;
  for (int i = 0; fs->names && i < fs->n; i++) free(fs->names[i]);
  free(fs->names);
  free(fs->vars);
  ht_features_static_free(fs);
  free(fs);
}

int ht_features_count(const ht_feature_set *fs) { return fs->n; }
const ht_spec *ht_features_spec(const ht_feature_set *fs) { return fs->spec; }
const char *ht_features_name(const ht_feature_set *fs, int i) { return i >= 0 && i < fs->n ? fs->names[i] : NULL; }

static double log1p10(double v) { return v > 0 ? log10(1 + v) : 0; }

static ht_status eval_expr(const ht_feature_set *fs, const ht_expr *e, const char *what, double *out) {
  ht_status st = ht_expr_eval_double(e, fs->vars, out);
  if (st) return ht_error_prefix(st, "%s: %s: ", fs->spec->path, what);
  return HT_OK;
}

static ht_status buffer_bytes(const ht_feature_set *fs, double *out) {
  *out = 0;
  for (int i = 0; i < fs->spec->n_args; i++) {
    const ht_spec_arg *a = &fs->spec->args[i];
    if (!a->is_buffer) continue;
    double n;
    ht_status st = eval_expr(fs, a->length, a->name, &n);
    if (st) return st;
    *out += n * (double)ht_dtype_size(a->type);
  }
  return HT_OK;
}

static ht_status work_features(const ht_feature_set *fs, double work, double *x) {
  double flops = 0, bytes = 0;
  ht_status st = HT_OK;
  if (fs->spec->work_flops) st = eval_expr(fs, fs->spec->work_flops, "work.flops", &flops);
  if (!st) st = fs->spec->work_bytes ? eval_expr(fs, fs->spec->work_bytes, "work.bytes", &bytes) : buffer_bytes(fs, &bytes);
  if (st) return st;
  double v[] = {work, log1p10(work), flops, log1p10(flops), bytes, log1p10(bytes), bytes > 0 ? flops / bytes : 0};
  memcpy(x, v, sizeof v);
  return HT_OK;
}

static ht_status launch_features(const ht_feature_set *fs, double work, double *x) {
  const ht_spec_kernel *k = &fs->spec->kernel;
  double items = 1, groups = 1, group = 1;
  for (int d = 0; d < k->dims; d++) {
    double g, l = 0;
    ht_status st = eval_expr(fs, k->global[d], "global", &g);
    if (!st && k->local[d]) st = eval_expr(fs, k->local[d], "local", &l);
    if (st) return st;
    items *= g;
    group *= l;
    groups *= l > 0 ? ceil(g / l) : 0;
  }
  int warp = fs->has_device && fs->dev.warp_size > 0 ? fs->dev.warp_size : 32;
  double v[] = {items, groups, group, ceil(group / warp), items > 0 ? work / items : 0, log1p10(items), log1p10(groups)};
  memcpy(x, v, sizeof v);
  return HT_OK;
}

static void device_features(const ht_feature_set *fs, double *x) {
  const ht_device_info *d = &fs->dev;
  double v[] = {d->compute_units, d->clock_mhz, (double)d->max_work_group_size, (double)d->local_mem_bytes, d->warp_size};
  memcpy(x, v, sizeof v);
}

/* The expression variables: parameters, sizes, device constants, as ht_spec_bind lays them out. */
static void bind(ht_feature_set *fs, const int64_t *sizes, const ht_value *params) {
  const ht_spec *s = fs->spec;
  ht_spec_bind(s, NULL, NULL, fs->has_device ? &fs->dev : NULL, fs->vars);
  for (int i = 0; i < s->n_params; i++) fs->vars[i] = params[i];
  for (int i = 0; i < s->n_sizes; i++) fs->vars[s->first_size + i] = ht_int(sizes[i]);
}

static double param_number(const ht_spec_param *p, ht_value v) {
  if (v.kind != HT_VAL_STR) return ht_value_as_double(v);
  for (int i = 0; i < p->n_values; i++)
    if (ht_value_equal(p->values[i], v)) return i;
  return -1;
}

ht_status ht_features_compute(ht_feature_set *fs, const int64_t *sizes, const ht_value *params, double *x) {
  const ht_spec *s = fs->spec;
  bind(fs, sizes, params);
  double work = 1;
  for (int i = 0; i < s->n_sizes; i++) {
    x[i] = (double)sizes[i];
    work *= (double)sizes[i];
  }
  ht_status st = work_features(fs, work, x + s->n_sizes);
  for (int i = 0; i < s->n_params; i++) x[fs->first_param + i] = param_number(&s->params[i], params[i]);
  if (!st && s->kernel.dims > 0) st = launch_features(fs, work, x + fs->first_launch);
  if (!st && fs->has_device) device_features(fs, x + fs->first_device);
  if (!st) st = ht_features_static(fs, x);
  return st;
}

/* ---- parsing "M=1024,N=512" and "TX=16,TY=8" ---- */

typedef ht_status (*assign_fn)(const ht_spec *s, const char *name, const char *value, void *out, const char *where);

/* Calls fn for each NAME=VALUE of text, in the escaped form config keys are written in. */
static ht_status each_assignment(const ht_spec *s, const char *text, assign_fn fn, void *out, const char *where) {
  char *buf = ht_strdup(text), *names[HT_MAX_PARAMS + 64], *values[HT_MAX_PARAMS + 64], *bad = NULL;
  if (!buf) return ht_error(HT_ERR_NOMEM, "out of memory");
  int n = ht_config_split(buf, names, values, HT_MAX_PARAMS + 64, &bad);
  ht_status st = HT_OK;
  if (n == -1) st = ht_error(HT_ERR_INVALID, "%s: '%s': expected NAME=VALUE", where, bad);
  else if (n < 0) st = ht_error(HT_ERR_INVALID, "%s: '%s': too many NAME=VALUE items", where, text);
  for (int i = 0; !st && i < n; i++) {
    const char *name = names[i];
    while (*name == ' ') name++;
    st = fn(s, name, values[i], out, where);
  }
  free(buf);
  return st;
}

static ht_status assign_size(const ht_spec *s, const char *name, const char *value, void *out, const char *where) {
  for (int i = 0; i < s->n_sizes; i++) {
    if (strcmp(s->size_names[i], name) != 0) continue;
    char *end;
    long long v = strtoll(value, &end, 10);
    if (*value == 0 || *end) return ht_error(HT_ERR_INVALID, "%s: size %s=%s is not an integer", where, name, value);
    ((int64_t *)out)[i] = v;
    return HT_OK;
  }
  return ht_error(HT_ERR_NOTFOUND, "%s: '%s' is not a problem size of %s", where, name, s->name);
}

ht_status ht_features_parse_problem(const ht_spec *s, const char *text, int64_t *sizes, const char *where) {
  for (int i = 0; i < s->n_sizes; i++) sizes[i] = s->size_values[i];
  return each_assignment(s, text, assign_size, sizes, where);
}

static ht_status assign_param(const ht_spec *s, const char *name, const char *value, void *out, const char *where) {
  ht_value *params = out;
  for (int i = 0; i < s->n_params; i++) {
    const ht_spec_param *p = &s->params[i];
    if (strcmp(p->name, name) != 0) continue;
    for (int j = 0; j < p->n_values; j++) {
      char t[64];
      const ht_value *pv = &p->values[j];
      if (pv->kind != HT_VAL_STR) ht_value_format(*pv, t, sizeof t); /* strings compare whole */
      if (strcmp(pv->kind == HT_VAL_STR ? pv->u.s : t, value) == 0) {
        params[i] = p->values[j];
        return HT_OK;
      }
    }
    char *end;
    double v = strtod(value, &end);
    if (*value == 0 || *end)
      return ht_error(HT_ERR_INVALID, "%s: %s=%s is not one of the parameter's values", where, name, value);
    params[i] = v == floor(v) && fabs(v) < 9e15 ? ht_int((int64_t)v) : ht_float(v);
    return HT_OK;
  }
  return ht_error(HT_ERR_NOTFOUND, "%s: '%s' is not a parameter of %s", where, name, s->name);
}

ht_status ht_features_parse_config(const ht_spec *s, const char *text, ht_value *params, const char *where) {
  for (int i = 0; i < s->n_params; i++) params[i] = ht_float(NAN);
  ht_status st = each_assignment(s, text, assign_param, params, where);
  for (int i = 0; i < s->n_params && !st; i++)
    if (params[i].kind == HT_VAL_FLOAT && isnan(params[i].u.f))
      st = ht_error(HT_ERR_INVALID, "%s: parameter %s has no value", where, s->params[i].name);
  return st;
}
