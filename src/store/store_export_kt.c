/* Export: Kernel Tuner's cache file (the JSON that tune_kernel(cache=...) reads and writes, and
 * that its simulation mode replays), as Kernel Tuner 1.5 reads it (kernel_tuner/util.py:
 * process_cache, read_cache; runners/simulation.py):
 *   {"device_name", "kernel_name", "tune_params_keys": [names in order], "tune_params": {name:
 *    [values]}, "objective": "time", "cache": {"v1,v2,...": {name: value, ..., "time": ms, "times":
 *    [ms], "compile_time", "verification_time", "benchmark_time", "strategy_time",
 *    "framework_time": ms, "timestamp", metrics...}}}
 * A cache key is Python's str() of each value joined by commas ("16,0.5,True"), so numbers are
 * written as Python prints them. A failed config's "time" is the name of Kernel Tuner's error class
 * (CompilationFailedConfig, RuntimeFailedConfig, InvalidConfig). The file must end in "}\n}":
 * Kernel Tuner takes any other ending for a cache left open by a crash and appends one. One cache
 * holds one kernel on one device for one problem; a config measured twice keeps its latest result. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_internal.h"

/* Python's repr() of a float: the shortest digits that read back to v, fixed notation for
 * decimal exponents -4..15 (at least one decimal), scientific otherwise ("1e-05", "1.5e+16"). */
static void python_float(double v, char *out, size_t len) {
  if (!isfinite(v)) {
    snprintf(out, len, "%s", isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
    return;
  }
  char sci[40];
  for (int p = 0; p < 17; p++) {
    snprintf(sci, sizeof sci, "%.*e", p, v);
    if (strtod(sci, NULL) == v) break;
  }
  char digits[24], *e = strchr(sci, 'e');
  int exp = atoi(e + 1), nd = 0, neg = sci[0] == '-';
  for (const char *c = sci + neg; c < e; c++)
    if (*c != '.') digits[nd++] = *c;
  while (nd > 1 && digits[nd - 1] == '0') nd--;
  digits[nd] = '\0';
  char text[64];
  int n = 0;
  if (neg) text[n++] = '-';
  if (exp < -4 || exp >= 16) {
    n += snprintf(text + n, sizeof text - (size_t)n, "%c%s%se%c%02d", digits[0], nd > 1 ? "." : "", digits + 1,
                  exp < 0 ? '-' : '+', abs(exp));
  } else if (exp < 0) { /* 0.000ddd */
    n += snprintf(text + n, sizeof text - (size_t)n, "0.");
    for (int i = 0; i < -exp - 1; i++) text[n++] = '0';
    n += snprintf(text + n, sizeof text - (size_t)n, "%s", digits);
  } else { /* ddd.ddd, or ddd000.0 */
    for (int i = 0; i <= exp; i++) text[n++] = i < nd ? digits[i] : '0';
    n += snprintf(text + n, sizeof text - (size_t)n, ".%s", nd > exp + 1 ? digits + exp + 1 : "0");
  }
  snprintf(out, len, "%s", text);
}

/* Python's str() of a parameter value. */
static void python_str(const json_t *v, char *out, size_t len) {
  if (json_is_integer(v)) snprintf(out, len, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
  else if (json_is_real(v)) python_float(json_real_value(v), out, len);
  else if (json_is_string(v)) snprintf(out, len, "%s", json_string_value(v));
  else if (json_is_boolean(v)) snprintf(out, len, "%s", json_is_true(v) ? "True" : "False");
  else snprintf(out, len, "None");
}

typedef struct kt_ctx {
  json_t *cache, *keys, *params; /* "cache", "tune_params_keys", "tune_params" */
  char *kernel, *device_id, *device_name, *problem;
  ht_status error;
} kt_ctx;

static const char *kt_error_name(ht_eval_status s) {
  if (s == HT_EVAL_COMPILE) return "CompilationFailedConfig";
  if (s == HT_EVAL_CONSTRAINTS) return "InvalidConfig";
  return "RuntimeFailedConfig";
}

/* One cache holds one kernel, device and problem: a second of any is an error naming both. */
static int same_or_first(kt_ctx *c, char **have, const char *now, const char *what, const char *option) {
  return hts_export_one(have, now, what, option, "Kernel Tuner cache", &c->error);
}

static void add_value(json_t *list, json_t *v) {
  size_t i;
  json_t *have;
  json_array_foreach(list, i, have) if (json_equal(have, v)) return;
  json_array_append(list, v);
}

static json_t *kt_entry(const ht_result *r, json_t *cfg) {
  json_t *e = json_deep_copy(cfg);
  json_t *times = json_array();
  for (int i = 0; i < r->n_samples; i++)
    if (isfinite(r->samples[i])) json_array_append_new(times, json_real(r->samples[i] * 1e3));
  double bench = fmax(r->wall_s - r->compile_s - r->framework_s, 0); /* the kernel runs */
  char ts[40];
  hts_iso8601(r->timestamp, ts);
  json_object_set_new(e, "time", r->status == HT_EVAL_OK && isfinite(r->time_s) ? json_real(r->time_s * 1e3)
                                                                                : json_string(kt_error_name(r->status)));
  json_object_set_new(e, "times", times);
  json_object_set_new(e, "compile_time", json_real(isfinite(r->compile_s) ? r->compile_s * 1e3 : 0));
  json_object_set_new(e, "verification_time", json_real(isfinite(r->verify_s) ? r->verify_s * 1e3 : 0));
  json_object_set_new(e, "benchmark_time", json_real(isfinite(bench) ? bench * 1e3 : 0));
  json_object_set_new(e, "strategy_time", json_real(0));
  json_object_set_new(e, "framework_time", json_real(isfinite(r->framework_s) ? r->framework_s * 1e3 : 0));
  json_object_set_new(e, "timestamp", json_string(ts));
  for (int i = 0; i < r->n_metrics; i++)
    if (isfinite(r->metrics[i].value) && !json_object_get(e, r->metrics[i].name))
      json_object_set_new(e, r->metrics[i].name, json_real(r->metrics[i].value));
  return e;
}

/* The key of a config, its parameters in the first record's order (the spec's). */
static int kt_key(kt_ctx *c, json_t *cfg, char *key, size_t len) {
  size_t n = 0, i;
  json_t *name;
  key[0] = '\0';
  json_array_foreach(c->keys, i, name) {
    json_t *v = json_object_get(cfg, json_string_value(name));
    char s[512];
    if (!v) return 1;
    python_str(v, s, sizeof s);
    int w = snprintf(key + n, len - n, "%s%s", i ? "," : "", s);
    if (w < 0 || (size_t)w >= len - n) return 1;
    n += (size_t)w;
    add_value(json_object_get(c->params, json_string_value(name)), v);
  }
  return json_object_size(cfg) != json_array_size(c->keys);
}

static void first_record(kt_ctx *c, json_t *cfg) {
  const char *name;
  json_t *v;
  json_object_foreach(cfg, name, v) {
    json_array_append_new(c->keys, json_string(name));
    json_object_set_new(c->params, name, json_array());
  }
}

static int kt_row(const ht_eval_record *rec, void *p) {
  kt_ctx *c = p;
  if (same_or_first(c, &c->kernel, rec->kernel_name, "kernel", "kernel") ||
      same_or_first(c, &c->device_id, rec->device_id, "device", "device") ||
      same_or_first(c, &c->problem, rec->problem, "problem", "problem"))
    return 1;
  if (!c->device_name) c->device_name = ht_strdup(rec->device_name);
  json_t *cfg = json_loads(rec->config_json, 0, NULL);
  if (!json_is_object(cfg)) {
    json_decref(cfg);
    c->error = ht_error(HT_ERR_STORE, "evaluation %lld: damaged config %s", (long long)rec->eval_id, rec->config_json);
    return 1;
  }
  if (json_array_size(c->keys) == 0) first_record(c, cfg);
  char key[4096];
  if (kt_key(c, cfg, key, sizeof key)) {
    c->error = ht_error(HT_ERR_INVALID, "evaluation %lld: its parameters differ from the first one's (%s)",
                        (long long)rec->eval_id, rec->config_json);
  } else {
    json_object_set_new(c->cache, key, kt_entry(&rec->result, cfg)); /* oldest first: the latest stays */
  }
  json_decref(cfg);
  return c->error != HT_OK;
}

static ht_status kt_write(kt_ctx *c, FILE *out) {
  json_t *head = json_pack("{s:s, s:s, s:O, s:O, s:s}", "device_name", c->device_name ? c->device_name : "",
                           "kernel_name", c->kernel, "tune_params_keys", c->keys, "tune_params", c->params,
                           "objective", "time");
  char *text = head ? json_dumps(head, JSON_PRESERVE_ORDER | JSON_INDENT(1)) : NULL;
  json_decref(head);
  if (!text) return ht_error(HT_ERR_NOMEM, "out of memory");
  text[strlen(text) - 2] = '\0'; /* without "\n}": the cache goes in, then the ending Kernel Tuner wants */
  fprintf(out, "%s,\n \"cache\": {", text);
  free(text);
  const char *key;
  json_t *e;
  int n = 0;
  json_object_foreach(c->cache, key, e) {
    json_t *k = json_string(key);
    char *ks = json_dumps(k, JSON_ENCODE_ANY), *es = json_dumps(e, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    if (ks && es) fprintf(out, "%s\n  %s: %s", n++ ? "," : "", ks, es);
    json_decref(k);
    free(ks);
    free(es);
  }
  fputs("}\n}\n", out);
  return HT_OK;
}

ht_status ht_store_export_kt_cache(ht_store *st, const ht_eval_filter *f, FILE *out) {
  if (!st || !out) return ht_error(HT_ERR_INVALID, "export_kt_cache: NULL argument");
  kt_ctx c = {.cache = json_object(), .keys = json_array(), .params = json_object()};
  ht_status s = c.cache && c.keys && c.params ? ht_store_each_eval(st, f, kt_row, &c)
                                             : ht_error(HT_ERR_NOMEM, "out of memory");
  if (!s && c.error) s = c.error;
  if (!s && json_object_size(c.cache) == 0)
    s = ht_error(HT_ERR_NOTFOUND, "%s: no evaluations to export%s", st->path,
                 f && (f->kernel_name || f->device_id || f->problem) ? " (none match the filter)" : "");
  if (!s) s = hts_export_done(st, out, kt_write(&c, out), "Kernel Tuner cache");
  json_decref(c.cache);
  json_decref(c.keys);
  json_decref(c.params);
  free(c.kernel);
  free(c.device_id);
  free(c.device_name);
  free(c.problem);
  return s;
}
