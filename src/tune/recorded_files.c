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

static double unit_scale(const char *unit) {
  if (!unit || !strcmp(unit, "s")) return 1.0;
  if (!strcmp(unit, "ms")) return 1e-3;
  if (!strcmp(unit, "us")) return 1e-6;
  if (!strcmp(unit, "ns")) return 1e-9;
  return NAN;
}

static double jnum(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  return json_is_number(v) ? json_number_value(v) : 0.0;
}

/* T4: time from the "time" measurement (its unit), cost from "times" (seconds). */
static ht_status t4_entry(rec_builder *b, json_t *e, size_t row) {
  json_t *cfg = json_object_get(e, "configuration");
  const char *inv = json_string_value(json_object_get(e, "invalidity"));
  if (!json_is_object(cfg) || !inv) return ht_error(HT_ERR_PARSE, "%s: result %zu lacks configuration or invalidity", b->source, row);
  rec_outcome o = {HT_EVAL_OK, NAN, 0};
  if (strcmp(inv, "correct") != 0 && ht_eval_status_parse(inv, &o.status))
    return ht_error(HT_ERR_PARSE, "%s: result %zu: unknown invalidity '%s'", b->source, row, inv);
  if (o.status == HT_EVAL_CONSTRAINTS) return HT_OK; /* not part of the valid space */
  json_t *m, *ms = json_object_get(e, "measurements");
  size_t i;
  json_array_foreach(ms, i, m) {
    if (!json_is_string(json_object_get(m, "name")) || strcmp(json_string_value(json_object_get(m, "name")), "time")) continue;
    o.time_s = jnum(m, "value") * unit_scale(json_string_value(json_object_get(m, "unit")));
  }
  json_t *t = json_object_get(e, "times"), *rt;
  o.cost_s = jnum(t, "compilation_time") + jnum(t, "compilation") + jnum(t, "framework") + jnum(t, "validation");
  json_array_foreach(json_object_get(t, "runtimes"), i, rt) o.cost_s += json_is_number(rt) ? json_number_value(rt) : 0;
  json_t *prov = json_object_get(e, "hetune");
  const char *ident[3] = {json_string_value(json_object_get(prov, "kernel")),
                          json_string_value(json_object_get(prov, "device_id")),
                          json_string_value(json_object_get(prov, "problem"))};
  return add_json_config(b, cfg, NULL, &o, ident, row);
}

/* Kernel Tuner cache: times in milliseconds; failures are strings in "time". */
static ht_status kt_entry(rec_builder *b, json_t *e, json_t *keys, size_t row) {
  json_t *time = json_object_get(e, "time");
  rec_outcome o = {HT_EVAL_OK, NAN, 0};
  if (json_is_number(time)) o.time_s = json_number_value(time) * 1e-3;
  else {
    const char *what = json_string_value(time);
    if (!what) return ht_error(HT_ERR_PARSE, "%s: cache entry %zu has no time", b->source, row);
    if (strstr(what, "Invalid")) return HT_OK; /* violates the restrictions: not in the space */
    o.status = strstr(what, "Compil") ? HT_EVAL_COMPILE : strstr(what, "Timeout") ? HT_EVAL_TIMEOUT : HT_EVAL_RUNTIME;
  }
  o.cost_s = 1e-3 * (jnum(e, "compile_time") + jnum(e, "verification_time") + jnum(e, "benchmark_time") +
                     jnum(e, "framework_time"));
  return add_json_config(b, e, keys, &o, NULL, row);
}

static ht_status load_json(rec_builder *b, const char *text) {
  json_error_t err;
  json_t *root = json_loads(text, 0, &err);
  if (!root) return ht_error(HT_ERR_PARSE, "%s:%d:%d: %s", b->source, err.line, err.column, err.text);
  ht_status st = HT_OK;
  json_t *results = json_object_get(root, "results"), *cache = json_object_get(root, "cache"), *e;
  size_t row = 0;
  if (json_is_array(results)) {
    size_t i;
    json_array_foreach(results, i, e) if (!st) st = t4_entry(b, e, ++row);
  } else if (json_is_object(cache)) {
    json_t *keys = json_object_get(root, "tune_params_keys");
    const char *k;
    json_object_foreach(cache, k, e) if (!st) st = kt_entry(b, e, keys, ++row);
  } else
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
