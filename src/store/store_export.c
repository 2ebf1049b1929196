/* Exports: CSV (RFC 4180) and the T4 results JSON shared by Kernel Tuner, KTT and BAT.
 *
 * The T4 layout follows results-schema.json of the T4 1.0.0 schema as shipped in Kernel Tuner
 * (kernel_tuner/schema/T4/1.0.0/results-schema.json, from odgaard/TuningSchema): a top-level
 * {"schema_version", "results"}; each result has "timestamp", "configuration", "objectives",
 * "times" {"compilation_time", "runtimes", "framework", "search_algorithm", "validation"},
 * "invalidity" (timeout|compile|runtime|correctness|constraints|correct), "correctness" and
 * "measurements" [{"name", "value", "unit"}]. Kernel Tuner's own writer says "compilation" where
 * the schema says "compilation_time"; we follow the schema. The schema allows extra properties,
 * so each result also carries a "hetune" object with the provenance T4 has no field for, and the
 * file a "metadata": {"timeunit": "seconds"}, where Kernel Tuner 1.5 says the unit of its times
 * ("milliseconds"); every time here is in seconds, the measurements say "s". */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_internal.h"

/* ---- CSV ---- */

static const char *const csv_fixed_head[] = {"eval_id", "session_id", "kernel", "device_id", "device_name",
                                             "problem", "config"};
static const char *const csv_fixed_tail[] = {"status",    "time_s",         "mean_s",   "stddev_s",
                                             "min_s",     "n_samples",      "compile_s", "compile_cached",
                                             "verify_s",  "framework_s",    "wall_s",    "timestamp",
                                             "message"};
#define N_HEAD (int)(sizeof csv_fixed_head / sizeof csv_fixed_head[0])
#define N_TAIL (int)(sizeof csv_fixed_tail / sizeof csv_fixed_tail[0])

typedef struct name_list {
  char **v;
  int n, cap;
} name_list;

static int list_find(const name_list *l, const char *s) {
  for (int i = 0; i < l->n; i++)
    if (strcmp(l->v[i], s) == 0) return i;
  return -1;
}

static int list_add(name_list *l, const char *s) {
  if (list_find(l, s) >= 0) return 0;
  if (l->n == l->cap) {
    int cap = l->cap ? l->cap * 2 : 8;
    char **v = realloc(l->v, (size_t)cap * sizeof *v);
    if (!v) return -1;
    l->v = v;
    l->cap = cap;
  }
  if (!(l->v[l->n] = ht_strdup(s))) return -1;
  l->n++;
  return 0;
}

static void list_free(name_list *l) {
  for (int i = 0; i < l->n; i++) free(l->v[i]);
  free(l->v);
}

typedef struct csv_ctx {
  FILE *out;
  int with_params; /* one kernel selected: its parameters get columns */
  name_list params, metrics;
  int oom;
} csv_ctx;

static int csv_collect(const ht_eval_record *rec, void *p) {
  csv_ctx *c = p;
  for (int i = 0; i < rec->result.n_metrics && !c->oom; i++)
    c->oom = list_add(&c->metrics, rec->result.metrics[i].name) != 0;
  if (!c->with_params) return c->oom;
  json_t *cfg = json_loads(rec->config_json, 0, NULL);
  if (json_is_object(cfg)) {
    const char *key;
    json_t *v;
    json_object_foreach(cfg, key, v) {
      if (!c->oom) c->oom = list_add(&c->params, key) != 0;
    }
  }
  json_decref(cfg);
  return c->oom;
}

static void csv_field(FILE *out, const char *s) {
  if (!strpbrk(s, ",\"\r\n")) {
    fputs(s, out);
    return;
  }
  fputc('"', out);
  for (; *s; s++) {
    if (*s == '"') fputc('"', out);
    fputc(*s, out);
  }
  fputc('"', out);
}

static void csv_sep(FILE *out, int *first) {
  if (!*first) fputc(',', out);
  *first = 0;
}

static void csv_text(FILE *out, int *first, const char *s) {
  csv_sep(out, first);
  csv_field(out, s);
}

static void csv_num(FILE *out, int *first, double v) {
  csv_sep(out, first);
  if (isfinite(v)) fprintf(out, "%.17g", v);
}

/* A column name that collides with a fixed column gets a prefix, so headers stay unique. */
static int fixed_name(const char *s) {
  for (int i = 0; i < N_HEAD; i++)
    if (!strcmp(s, csv_fixed_head[i])) return 1;
  for (int i = 0; i < N_TAIL; i++)
    if (!strcmp(s, csv_fixed_tail[i])) return 1;
  return 0;
}

static void csv_header(csv_ctx *c) {
  int first = 1;
  char name[512];
  for (int i = 0; i < N_HEAD; i++) csv_text(c->out, &first, csv_fixed_head[i]);
  for (int i = 0; i < c->params.n; i++) {
    snprintf(name, sizeof name, "%s%s", fixed_name(c->params.v[i]) ? "param_" : "", c->params.v[i]);
    csv_text(c->out, &first, name);
  }
  for (int i = 0; i < N_TAIL; i++) csv_text(c->out, &first, csv_fixed_tail[i]);
  for (int i = 0; i < c->metrics.n; i++) {
    int clash = fixed_name(c->metrics.v[i]) || list_find(&c->params, c->metrics.v[i]) >= 0;
    snprintf(name, sizeof name, "%s%s", clash ? "metric_" : "", c->metrics.v[i]);
    csv_text(c->out, &first, name);
  }
  fputs("\r\n", c->out);
}

static void csv_param(FILE *out, int *first, json_t *cfg, const char *name) {
  json_t *v = json_object_get(cfg, name);
  if (json_is_string(v)) {
    csv_text(out, first, json_string_value(v));
  } else if (json_is_number(v)) {
    csv_num(out, first, json_number_value(v));
  } else {
    char *text = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    csv_text(out, first, text ? text : "");
    free(text);
  }
}

static void csv_metric(FILE *out, int *first, const ht_result *r, const char *name) {
  for (int i = 0; i < r->n_metrics; i++)
    if (!strcmp(r->metrics[i].name, name)) {
      csv_num(out, first, r->metrics[i].value);
      return;
    }
  csv_sep(out, first);
}

static int csv_row(const ht_eval_record *rec, void *p) {
  csv_ctx *c = p;
  const ht_result *r = &rec->result;
  int first = 1;
  char num[32], ts[40];
  snprintf(num, sizeof num, "%lld", (long long)rec->eval_id);
  csv_text(c->out, &first, num);
  snprintf(num, sizeof num, "%lld", (long long)rec->session_id);
  csv_text(c->out, &first, rec->session_id ? num : "");
  const char *head[] = {rec->kernel_name, rec->device_id, rec->device_name, rec->problem, rec->config_key};
  for (int i = 0; i < 5; i++) csv_text(c->out, &first, head[i]);
  json_t *cfg = c->params.n ? json_loads(rec->config_json, 0, NULL) : NULL;
  for (int i = 0; i < c->params.n; i++) csv_param(c->out, &first, cfg, c->params.v[i]);
  json_decref(cfg);
  csv_text(c->out, &first, ht_eval_status_name(r->status));
  const double t[] = {r->time_s, r->mean_s, r->stddev_s, r->min_s, (double)r->n_samples, r->compile_s,
                      (double)r->compile_cached, r->verify_s, r->framework_s, r->wall_s};
  for (int i = 0; i < 10; i++) csv_num(c->out, &first, t[i]);
  hts_iso8601(r->timestamp, ts);
  csv_text(c->out, &first, ts);
  csv_text(c->out, &first, r->message);
  for (int i = 0; i < c->metrics.n; i++) csv_metric(c->out, &first, r, c->metrics.v[i]);
  fputs("\r\n", c->out);
  return ferror(c->out) != 0;
}

int hts_export_one(char **have, const char *now, const char *what, const char *option, const char *format,
                   ht_status *error) {
  if (!*have) {
    *have = ht_strdup(now);
    if (!*have) *error = ht_error(HT_ERR_NOMEM, "out of memory");
    return *have == NULL;
  }
  if (strcmp(*have, now) == 0) return 0;
  *error = ht_error(HT_ERR_INVALID, "%s export: the evaluations are of more than one %s ('%s' and '%s'); the file "
                    "holds one: choose it with --%s",
                    format, what, *have, now, option);
  return 1;
}

ht_status hts_export_done(ht_store *st, FILE *out, ht_status s, const char *what) {
  if (s) return s;
  if (fflush(out) != 0 || ferror(out))
    return ht_error(HT_ERR_IO, "%s: %s export: write error (disk full?)", st->path, what);
  return HT_OK;
}

ht_status ht_store_export_csv(ht_store *st, const ht_eval_filter *f, FILE *out) {
  if (!st || !out) return ht_error(HT_ERR_INVALID, "export_csv: NULL argument");
  csv_ctx c = {.out = out, .with_params = f && f->kernel_name};
  /* Two passes: the header must name every metric (and parameter) before the first row. */
  ht_status s = ht_store_each_eval(st, f, csv_collect, &c);
  if (!s && c.oom) s = ht_error(HT_ERR_NOMEM, "out of memory");
  if (!s) {
    csv_header(&c);
    s = ht_store_each_eval(st, f, csv_row, &c);
  }
  list_free(&c.params);
  list_free(&c.metrics);
  return hts_export_done(st, out, s, "CSV");
}

/* ---- T4 ---- */

static json_t *t4_num(double v) { return json_real(isfinite(v) ? v : 0.0); }

static json_t *t4_times(const ht_result *r) {
  json_t *runtimes = json_array();
  for (int i = 0; i < r->n_samples; i++)
    json_array_append_new(runtimes, isfinite(r->samples[i]) ? json_real(r->samples[i]) : json_null());
  /* hetune has no per-config strategy time yet, so search_algorithm is 0 as the schema expects a number. */
  return json_pack("{s:o, s:o, s:o, s:i, s:o}", "compilation_time", t4_num(r->compile_s), "runtimes", runtimes,
                   "framework", t4_num(r->framework_s), "search_algorithm", 0, "validation", t4_num(r->verify_s));
}

static json_t *t4_measurements(const ht_result *r) {
  json_t *m = json_array();
  if (isfinite(r->time_s)) json_array_append_new(m, json_pack("{s:s, s:f, s:s}", "name", "time", "value", r->time_s, "unit", "s"));
  /* A metric that has no value is left out: the schema's values are numbers, strings or arrays. */
  for (int i = 0; i < r->n_metrics; i++)
    if (isfinite(r->metrics[i].value))
      json_array_append_new(m, json_pack("{s:s, s:f, s:s}", "name", r->metrics[i].name, "value", r->metrics[i].value,
                                         "unit", ""));
  return m;
}

static json_t *t4_record(const ht_eval_record *rec) {
  const ht_result *r = &rec->result;
  char ts[40];
  hts_iso8601(r->timestamp, ts);
  json_t *cfg = json_loads(rec->config_json, 0, NULL);
  if (!json_is_object(cfg)) {
    json_decref(cfg);
    cfg = json_object();
  }
  json_t *prov = json_pack("{s:I, s:I, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "eval_id", (json_int_t)rec->eval_id,
                           "session_id", (json_int_t)rec->session_id, "kernel", rec->kernel_name, "source_hash",
                           rec->source_hash, "device_id", rec->device_id, "device_name", rec->device_name,
                           "problem", rec->problem, "config_key", rec->config_key, "message", r->message);
  /* correctness: 0 only when verification failed; a config that never ran was not wrong (as in
   * Kernel Tuner, which writes 1 for compile/runtime failures). */
  return json_pack("{s:s, s:o, s:[s], s:o, s:s, s:i, s:o, s:o}", "timestamp", ts, "configuration", cfg,
                   "objectives", "time", "times", t4_times(r), "invalidity", ht_eval_status_t4(r->status),
                   "correctness", r->status == HT_EVAL_CORRECTNESS ? 0 : 1, "measurements", t4_measurements(r),
                   "hetune", prov);
}

typedef struct t4_ctx {
  FILE *out;
  int n, oom;
} t4_ctx;

static int t4_row(const ht_eval_record *rec, void *p) {
  t4_ctx *c = p;
  json_t *o = t4_record(rec);
  if (!o) return c->oom = 1;
  /* Streamed record by record: a large store never has to fit in memory as one JSON tree. */
  fputs(c->n++ ? ",\n  " : "\n  ", c->out);
  int rc = json_dumpf(o, c->out, JSON_COMPACT | JSON_REAL_PRECISION(17));
  json_decref(o);
  return rc != 0 || ferror(c->out);
}

ht_status ht_store_export_t4(ht_store *st, const ht_eval_filter *f, FILE *out) {
  if (!st || !out) return ht_error(HT_ERR_INVALID, "export_t4: NULL argument");
  t4_ctx c = {.out = out};
  /* Kernel Tuner (1.5) reads the unit of "times" from metadata.timeunit; ours are seconds. */
  fputs("{\"schema_version\": \"1.0.0\", \"metadata\": {\"timeunit\": \"seconds\"}, \"results\": [", out);
  ht_status s = ht_store_each_eval(st, f, t4_row, &c);
  if (!s && c.oom) s = ht_error(HT_ERR_NOMEM, "%s: T4 export: cannot build a record", st->path);
  fputs(c.n ? "\n]}\n" : "]}\n", out);
  return hts_export_done(st, out, s, "T4");
}
