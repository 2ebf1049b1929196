/* Readers of recorded spaces: hetune's CSV export, T4 results JSON and Kernel Tuner cache JSON,
 * chosen by content. */
#include <ctype.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/csv.h"
#include "tune/recorded_internal.h"

/* ---- CSV ---- */
static double num_at(const ht_csv_row *r, int c) {
  if (c < 0 || c >= r->n || !r->f[c][0]) return NAN;
  return strtod(r->f[c], NULL);
}

/* What an evaluation cost: the recorded wall time, or its parts when wall_s is absent. */
static double csv_cost(const ht_csv_row *r, const int *c) {
  double wall = num_at(r, c[0]);
  if (isfinite(wall)) return wall;
  double sum = 0;
  for (int k = 1; k <= 3; k++)
    if (isfinite(num_at(r, c[k]))) sum += num_at(r, c[k]);
  double mean = num_at(r, c[4]), n = num_at(r, c[5]);
  if (isfinite(mean) && isfinite(n)) sum += mean * n;
  return sum;
}

static ht_status csv_row_add(rec_builder *b, const ht_csv_row *head, const ht_csv_row *r, const int *c, size_t line) {
  if (r->n != head->n)
    return ht_error(HT_ERR_PARSE, "%s: line %zu has %d fields, the header %d", b->source, line, r->n, head->n);
  rec_outcome o = {HT_EVAL_OK, num_at(r, c[7]), csv_cost(r, c)};
  if (ht_eval_status_parse(r->f[c[6]], &o.status))
    return ht_error(HT_ERR_PARSE, "%s: line %zu: unknown status '%s'", b->source, line, r->f[c[6]]);
  const char *ident[3];
  for (int k = 0; k < 3; k++) ident[k] = c[9 + k] >= 0 ? r->f[c[9 + k]] : NULL;
  return rec_add_config_text(b, r->f[c[8]], &o, ident, line);
}

static ht_status load_csv(rec_builder *b, const char *text, size_t len) {
  ht_csv_row head = {0}, r = {0};
  char *scratch = malloc(len + 1);
  size_t pos = 0, line = 1;
  ht_status st = HT_OK;
  if (!scratch) return ht_error(HT_ERR_NOMEM, "out of memory");
  if (ht_csv_next(text, &pos, &head, scratch) != 1) st = ht_error(HT_ERR_PARSE, "%s: no CSV header", b->source);
  static const char *const names[] = {"wall_s", "compile_s", "verify_s", "framework_s", "mean_s", "n_samples",
                                      "status", "time_s", "config", "kernel", "device_id", "problem"};
  int c[12];
  for (int k = 0; k < 12; k++) c[k] = ht_csv_col(&head, names[k]);
  for (int k = 6; !st && k <= 8; k++)
    if (c[k] < 0) st = ht_error(HT_ERR_PARSE, "%s: the CSV header has no '%s' column (write it with hetune export --format csv)", b->source, names[k]);
  while (!st) {
    int got = ht_csv_next(text, &pos, &r, scratch);
    line++;
    if (got == 0) break;
    if (got < 0) st = ht_error(HT_ERR_PARSE, "%s: line %zu: malformed CSV", b->source, line);
    else if (!(r.n == 1 && !r.f[0][0])) st = csv_row_add(b, &head, &r, c, line);
  }
  ht_csv_row_free(&head);
  ht_csv_row_free(&r);
  free(scratch);
  return st;
}

/* ---- JSON: T4 and Kernel Tuner cache ---- */
static void value_text(json_t *v, char *buf, size_t len) {
  if (json_is_integer(v)) snprintf(buf, len, "%lld", (long long)json_integer_value(v));
  else if (json_is_real(v)) snprintf(buf, len, "%.17g", json_real_value(v));
  else if (json_is_string(v)) snprintf(buf, len, "%s", json_string_value(v));
  else if (json_is_boolean(v)) snprintf(buf, len, "%d", json_is_true(v));
  else snprintf(buf, len, "null");
}

/* Adds the parameters of object cfg (keys in `keys` order when given, else the object's order). */
static ht_status add_json_config(rec_builder *b, json_t *cfg, json_t *keys, const rec_outcome *o,
                                 const char *const ident[3], size_t row) {
  const char *names[HT_MAX_PARAMS], *texts[HT_MAX_PARAMS];
  char buf[HT_MAX_PARAMS][128];
  int n = 0;
  if (json_is_array(keys)) {
    for (size_t i = 0; i < json_array_size(keys) && n < HT_MAX_PARAMS; i++) {
      const char *k = json_string_value(json_array_get(keys, i));
      json_t *v = k ? json_object_get(cfg, k) : NULL;
      if (!v) return ht_error(HT_ERR_PARSE, "%s: entry %zu has no parameter '%s'", b->source, row, k ? k : "?");
      names[n] = k;
      value_text(v, buf[n], sizeof buf[n]);
      texts[n] = buf[n];
      n++;
    }
  } else {
    const char *k;
    json_t *v;
    json_object_foreach(cfg, k, v) {
      if (n == HT_MAX_PARAMS) return ht_error(HT_ERR_PARSE, "%s: entry %zu: too many parameters", b->source, row);
      names[n] = k;
      value_text(v, buf[n], sizeof buf[n]);
      texts[n] = buf[n];
      n++;
    }
  }
  return rec_builder_add(b, n, names, texts, o, ident, row);
}

/* Time units by the names T4 writers give them: Kernel Tuner writes "milliseconds" in
 * metadata.timeunit and "ms" in measurements, hetune "seconds" and "s". */
static ht_status time_unit(const rec_builder *b, const char *unit, const char *where, double *scale) {
  static const struct {
    const char *name;
    double scale;
  } units[] = {{"s", 1},           {"sec", 1},          {"second", 1},        {"seconds", 1},
               {"ms", 1e-3},       {"millisecond", 1e-3}, {"milliseconds", 1e-3}, {"us", 1e-6},
               {"\xc2\xb5s", 1e-6}, {"microsecond", 1e-6}, {"microseconds", 1e-6}, {"ns", 1e-9},
               {"nanosecond", 1e-9}, {"nanoseconds", 1e-9}};
  for (size_t i = 0; unit && i < sizeof units / sizeof units[0]; i++)
    if (!strcmp(unit, units[i].name)) {
      *scale = units[i].scale;
      return HT_OK;
    }
  return ht_error(HT_ERR_PARSE, "%s: %s: unknown time unit '%s' (known: seconds, milliseconds, microseconds, "
                  "nanoseconds, or s, ms, us, ns)", b->source, where, unit ? unit : "(not a string)");
}

static double jnum(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  return json_is_number(v) ? json_number_value(v) : 0.0;
}

/* The unit of the results' "times": metadata.timeunit; without one, milliseconds in files from
 * Kernel Tuner's writer (it names the times "compilation" and "benchmark", and wrote milliseconds
 * before it wrote a timeunit), else seconds (hetune's exports before they wrote one). */
static ht_status t4_times_unit(const rec_builder *b, json_t *root, json_t *results, double *scale) {
  json_t *unit = json_object_get(json_object_get(root, "metadata"), "timeunit"), *e;
  if (unit) return time_unit(b, json_string_value(unit), "metadata.timeunit", scale);
  *scale = 1.0;
  size_t i;
  json_array_foreach(results, i, e) {
    json_t *t = json_object_get(e, "times");
    if (json_object_get(t, "compilation") || json_object_get(t, "benchmark")) *scale = 1e-3;
  }
  return HT_OK;
}

/* What evaluating the config took: compile, runs, framework and validation. Kernel Tuner's
 * "benchmark" covers the runs and their overhead; without it, the runs' own times. */
static double t4_cost(json_t *t, double scale) {
  double sum = jnum(t, "compilation_time") + jnum(t, "compilation") + jnum(t, "framework") + jnum(t, "validation");
  json_t *bench = json_object_get(t, "benchmark"), *rt;
  size_t i;
  if (json_is_number(bench)) sum += json_number_value(bench);
  else json_array_foreach(json_object_get(t, "runtimes"), i, rt) sum += json_is_number(rt) ? json_number_value(rt) : 0;
  return sum * scale;
}

/* The "time" measurement in seconds: in its own unit, or the file's when it names none. */
static ht_status t4_time(const rec_builder *b, json_t *e, double times_scale, size_t row, double *time_s) {
  json_t *m;
  size_t i;
  json_array_foreach(json_object_get(e, "measurements"), i, m) {
    const char *name = json_string_value(json_object_get(m, "name"));
    if (!name || strcmp(name, "time") != 0) continue;
    const char *unit = json_string_value(json_object_get(m, "unit"));
    double scale = times_scale;
    char where[64];
    snprintf(where, sizeof where, "result %zu, measurement 'time'", row);
    if (unit && *unit && time_unit(b, unit, where, &scale)) return HT_ERR_PARSE;
    *time_s = jnum(m, "value") * scale;
  }
  return HT_OK;
}

/* T4: time from the "time" measurement, cost from "times" (times_scale: their unit in seconds). */
static ht_status t4_entry(rec_builder *b, json_t *e, double times_scale, size_t row) {
  json_t *cfg = json_object_get(e, "configuration");
  const char *inv = json_string_value(json_object_get(e, "invalidity"));
  if (!json_is_object(cfg) || !inv) return ht_error(HT_ERR_PARSE, "%s: result %zu lacks configuration or invalidity", b->source, row);
  rec_outcome o = {HT_EVAL_OK, NAN, 0};
  if (strcmp(inv, "correct") != 0 && ht_eval_status_parse(inv, &o.status))
    return ht_error(HT_ERR_PARSE, "%s: result %zu: unknown invalidity '%s'", b->source, row, inv);
  if (o.status == HT_EVAL_CONSTRAINTS) return HT_OK; /* not part of the valid space */
  if (t4_time(b, e, times_scale, row, &o.time_s)) return HT_ERR_PARSE;
  o.cost_s = t4_cost(json_object_get(e, "times"), times_scale);
  json_t *prov = json_object_get(e, "hetune");
  const char *ident[3] = {json_string_value(json_object_get(prov, "kernel")),
                          json_string_value(json_object_get(prov, "device_id")),
                          json_string_value(json_object_get(prov, "problem"))};
  return add_json_config(b, cfg, NULL, &o, ident, row);
}

/* Kernel Tuner cache: times in milliseconds. A failure is "__error__": "CompilationFailedConfig"
 * and the like (Kernel Tuner 1.x, with no "time") or that name in "time" (older caches). */
static ht_status kt_entry(rec_builder *b, json_t *e, json_t *keys, size_t row) {
  json_t *time = json_object_get(e, "time");
  const char *what = json_string_value(json_object_get(e, "__error__"));
  rec_outcome o = {HT_EVAL_OK, NAN, 0};
  if (!what && json_is_number(time)) o.time_s = json_number_value(time) * 1e-3;
  else {
    if (!what) what = json_string_value(time);
    if (!what) return ht_error(HT_ERR_PARSE, "%s: cache entry %zu has no time", b->source, row);
    if (strstr(what, "Invalid")) return HT_OK; /* violates the restrictions: not in the space */
    o.status = strstr(what, "Compil") ? HT_EVAL_COMPILE : strstr(what, "Timeout") ? HT_EVAL_TIMEOUT : HT_EVAL_RUNTIME;
  }
  o.cost_s = 1e-3 * (jnum(e, "compile_time") + jnum(e, "verification_time") + jnum(e, "benchmark_time") +
                     jnum(e, "framework_time"));
  return add_json_config(b, e, keys, &o, NULL, row);
}

/* The parameter names of a Kernel Tuner cache, as a new reference (NULL: none, error set). An entry
 * mixes them with results and metrics of any name, so they come from "tune_params_keys", or else
 * the keys of "tune_params". */
static json_t *kt_keys(const rec_builder *b, json_t *root) {
  json_t *keys = json_object_get(root, "tune_params_keys"), *params = json_object_get(root, "tune_params"), *v;
  if (json_is_array(keys)) return json_incref(keys);
  if (!json_is_object(params)) {
    ht_error(HT_ERR_PARSE, "%s: a Kernel Tuner cache without \"tune_params_keys\" or \"tune_params\": its entries do "
             "not say which fields are parameters", b->source);
    return NULL;
  }
  const char *k;
  keys = json_array();
  json_object_foreach(params, k, v) json_array_append_new(keys, json_string(k));
  return keys;
}

static ht_status load_t4(rec_builder *b, json_t *root, json_t *results) {
  double scale;
  ht_status st = t4_times_unit(b, root, results, &scale);
  size_t i;
  json_t *e;
  json_array_foreach(results, i, e) if (!st) st = t4_entry(b, e, scale, i + 1);
  return st;
}

static ht_status load_kt_cache(rec_builder *b, json_t *root, json_t *cache) {
  json_t *keys = kt_keys(b, root), *e;
  if (!keys) return HT_ERR_PARSE;
  ht_status st = HT_OK;
  size_t row = 0;
  const char *k;
  json_object_foreach(cache, k, e) if (!st) st = kt_entry(b, e, keys, ++row);
  json_decref(keys);
  return st;
}

static ht_status load_json(rec_builder *b, const char *text) {
  json_error_t err;
  json_t *root = json_loads(text, 0, &err);
  if (!root) return ht_error(HT_ERR_PARSE, "%s:%d:%d: %s", b->source, err.line, err.column, err.text);
  ht_status st;
  json_t *results = json_object_get(root, "results"), *cache = json_object_get(root, "cache");
  if (json_is_array(results)) st = load_t4(b, root, results);
  else if (json_is_object(cache)) st = load_kt_cache(b, root, cache);
  else
    st = ht_error(HT_ERR_PARSE, "%s: neither a T4 results file (\"results\") nor a Kernel Tuner cache (\"cache\")", b->source);
  json_decref(root);
  return st;
}

static void file_stem(const char *path, char *out, size_t len) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  snprintf(out, len, "%s", base);
  char *dot = strrchr(out, '.');
  if (dot && dot != out) *dot = '\0';
}

ht_status ht_recorded_load(const char *path, ht_recorded **out) {
  if (!path || !out) return ht_error(HT_ERR_INVALID, "ht_recorded_load: bad arguments");
  char *text = NULL;
  size_t len = 0;
  ht_status st = ht_read_file(path, &text, &len);
  if (st) return st;
  rec_builder b;
  rec_builder_init(&b, path);
  const char *p = text;
  while (isspace((unsigned char)*p)) p++;
  st = *p == '{' ? load_json(&b, text) : load_csv(&b, text, len);
  char name[128];
  file_stem(path, name, sizeof name);
  if (!st) st = rec_builder_finish(&b, name, out);
  rec_builder_free(&b);
  free(text);
  return st;
}
