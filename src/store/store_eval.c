/* Evaluations and session queries: writing a result (a committed transaction each, or grouped:
 * store_pending.c), reading it back bit-exactly, and iterating for show/export. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/store_internal.h"

/* ---- JSON columns ---- */

/* %.17g round-trips every double through strtod; JSON has no NaN or Inf, so those become null. */
static char *samples_json(const ht_result *r) {
  ht_buf b = {0};
  int n = r->n_samples < 0 ? 0 : r->n_samples > HT_MAX_SAMPLES ? HT_MAX_SAMPLES : r->n_samples;
  ht_buf_append(&b, "[");
  for (int i = 0; i < n; i++) {
    if (i) ht_buf_append(&b, ",");
    if (isfinite(r->samples[i])) ht_buf_appendf(&b, "%.17g", r->samples[i]);
    else ht_buf_append(&b, "null");
  }
  ht_buf_append(&b, "]");
  if (b.failed) {
    ht_buf_free(&b);
    return NULL;
  }
  return b.data;
}

/* {"name": value, ...}; NULL when there are no metrics. *oom set on allocation failure. */
static char *metrics_json(const ht_result *r, int *oom) {
  *oom = 0;
  if (r->n_metrics <= 0) return NULL;
  json_t *o = json_object();
  int n = r->n_metrics > HT_MAX_METRICS ? HT_MAX_METRICS : r->n_metrics;
  for (int i = 0; o && i < n; i++) {
    char name[sizeof r->metrics[i].name];
    snprintf(name, sizeof name, "%.*s", (int)sizeof name - 1, r->metrics[i].name);
    double v = r->metrics[i].value;
    json_object_set_new(o, name, isfinite(v) ? json_real(v) : json_null());
  }
  char *text = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
  json_decref(o);
  *oom = text == NULL;
  return text;
}

static void parse_samples(const char *text, ht_result *r) {
  json_t *a = text ? json_loads(text, JSON_DECODE_ANY, NULL) : NULL;
  size_t n = json_is_array(a) ? json_array_size(a) : 0;
  if (n > HT_MAX_SAMPLES) n = HT_MAX_SAMPLES;
  for (size_t i = 0; i < n; i++) {
    json_t *v = json_array_get(a, i);
    r->samples[i] = json_is_number(v) ? json_number_value(v) : NAN;
  }
  r->n_samples = (int)n;
  json_decref(a);
}

static void parse_metrics(const char *text, ht_result *r) {
  json_t *o = text && *text ? json_loads(text, 0, NULL) : NULL;
  r->n_metrics = 0;
  if (json_is_object(o)) {
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
      if (r->n_metrics == HT_MAX_METRICS) break;
      ht_metric *m = &r->metrics[r->n_metrics++];
      snprintf(m->name, sizeof m->name, "%s", key);
      m->value = json_is_number(v) ? json_number_value(v) : NAN;
    }
  }
  json_decref(o);
}

/* ---- rows ---- */

double hts_col_double(sqlite3_stmt *s, int col) {
  return sqlite3_column_type(s, col) == SQLITE_NULL ? NAN : sqlite3_column_double(s, col);
}

const char *hts_col_text(sqlite3_stmt *s, int col) {
  const char *t = (const char *)sqlite3_column_text(s, col);
  return t ? t : "";
}

static ht_eval_status status_from_name(const char *name) {
  for (int i = HT_EVAL_OK; i <= HT_EVAL_CONSTRAINTS; i++)
    if (strcmp(name, ht_eval_status_name((ht_eval_status)i)) == 0) return (ht_eval_status)i;
  return HT_EVAL_RUNTIME; /* a status a later hetune invented: not usable as a time */
}

void hts_row_result(sqlite3_stmt *s, int c, ht_result *r) {
  ht_result_init(r);
  r->status = status_from_name(hts_col_text(s, c + 0));
  r->time_s = hts_col_double(s, c + 1);
  r->mean_s = hts_col_double(s, c + 2);
  r->stddev_s = hts_col_double(s, c + 3);
  r->min_s = hts_col_double(s, c + 4);
  r->max_s = hts_col_double(s, c + 5);
  r->rsd = hts_col_double(s, c + 6);
  parse_samples((const char *)sqlite3_column_text(s, c + 8), r);
  r->compile_s = hts_col_double(s, c + 9);
  r->compile_cached = sqlite3_column_int(s, c + 10);
  r->verify_s = hts_col_double(s, c + 11);
  r->h2d_s = hts_col_double(s, c + 12);
  r->d2h_s = hts_col_double(s, c + 13);
  r->framework_s = hts_col_double(s, c + 14);
  r->wall_s = hts_col_double(s, c + 15);
  r->timestamp = hts_col_double(s, c + 16);
  parse_metrics((const char *)sqlite3_column_text(s, c + 17), r);
  snprintf(r->message, sizeof r->message, "%s", hts_col_text(s, c + 18));
}

void hts_iso8601(double t, char out[40]) {
  long long ms = isfinite(t) && t > 0 ? llround(t * 1000.0) : 0;
  time_t sec = (time_t)(ms / 1000);
  struct tm tm;
  if (!gmtime_r(&sec, &tm)) {
    sec = 0;
    gmtime_r(&sec, &tm);
  }
  char date[32];
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(out, 40, "%s.%03dZ", date, (int)(ms % 1000));
}

/* ---- writing ---- */

/* An evaluation's row: the parameters of HTS_PUT_EVAL in order, with the type of each ('i'
 * integer, 'd' double, 't' text; any may be null). A double is a string in C's hexadecimal
 * notation ("0x1.0624dd2f1a9fcp-10", "inf"): exact, and several times faster to write than the
 * 17 decimal digits that keep it exact, for the dozen doubles of every evaluation; NaN (stored as
 * NULL, as SQLite stores a NaN) is null. */
static const char row_types[] = "iiiittt" "dddddd" "it" "di" "ddddd" "d" "tt";
enum { ROW_SESSION, ROW_KERNEL, ROW_DEVICE, ROW_PROBLEM, ROW_CONFIG_KEY, ROW_STATUS = 6, ROW_TIME, ROW_TIMESTAMP = 22 };

static json_t *row_double(double v) {
  if (isnan(v)) return json_null();
  char text[40];
  snprintf(text, sizeof text, "%a", v);
  return json_string(text);
}

/* -1 when v is not a double of a row. */
static int row_get_double(json_t *v, double *out) {
  const char *text = json_string_value(v);
  char *end = NULL;
  if (!text || !*text) return -1;
  *out = strtod(text, &end);
  return *end || isnan(*out) ? -1 : 0;
}

static json_t *row_text(const char *v) { return v ? json_string(v) : json_null(); }

static json_t *eval_row(int64_t session_id, const ht_eval_key *k, const ht_result *r, const char *samples,
                        const char *metrics) {
  int n = r->n_samples < 0 ? 0 : r->n_samples > HT_MAX_SAMPLES ? HT_MAX_SAMPLES : r->n_samples;
  char msg[sizeof r->message];
  snprintf(msg, sizeof msg, "%.*s", (int)sizeof msg - 1, r->message);
  json_t *row = json_array();
  json_t *v[] = {session_id > 0 ? json_integer(session_id) : json_null(), json_integer(k->kernel_id),
                 json_integer(k->device_id), json_integer(k->problem_id), row_text(k->config_key),
                 row_text(k->config_json ? k->config_json : "{}"), row_text(ht_eval_status_name(r->status)),
                 row_double(r->time_s), row_double(r->mean_s), row_double(r->stddev_s), row_double(r->min_s),
                 row_double(r->max_s), row_double(r->rsd), json_integer(n), row_text(samples),
                 row_double(r->compile_s), json_integer(r->compile_cached != 0), row_double(r->verify_s),
                 row_double(r->h2d_s), row_double(r->d2h_s), row_double(r->framework_s), row_double(r->wall_s),
                 row_double(r->timestamp > 0 ? r->timestamp : ht_wall_time()), row_text(metrics),
                 msg[0] ? json_string(msg) : json_null()};
  int bad = !row;
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    bad |= !v[i] || (row && json_array_append_new(row, v[i]) != 0);
  if (!bad) return row;
  json_decref(row);
  return NULL;
}

int hts_eval_row_valid(json_t *row) {
  if (!json_is_array(row) || json_array_size(row) != sizeof row_types - 1) return 0;
  for (size_t i = 0; i < sizeof row_types - 1; i++) {
    json_t *v = json_array_get(row, i);
    double d;
    char type = row_types[i];
    int ok = json_is_null(v) || (type == 'i' && json_is_integer(v)) || (type == 't' && json_is_string(v)) ||
             (type == 'd' && row_get_double(v, &d) == 0);
    if (!ok) return 0;
  }
  return json_is_integer(json_array_get(row, ROW_KERNEL)) && json_is_string(json_array_get(row, ROW_CONFIG_KEY));
}

/* The row is valid (hts_eval_row_valid, or built by eval_row). */
static int bind_row_value(sqlite3_stmt *s, int i, char type, json_t *v) {
  double d = 0;
  if (json_is_null(v)) return sqlite3_bind_null(s, i);
  if (type == 'i') return sqlite3_bind_int64(s, i, json_integer_value(v));
  if (type == 't') return sqlite3_bind_text(s, i, json_string_value(v), -1, SQLITE_STATIC);
  row_get_double(v, &d);
  return sqlite3_bind_double(s, i, d);
}

/* The row, and its session's tally. */
ht_status hts_insert_eval_row(ht_store *st, json_t *row) {
  sqlite3_stmt *s = NULL;
  ht_status e = hts_stmt(st, HTS_PUT_EVAL, &s);
  if (e) return e;
  int rc = SQLITE_OK;
  for (size_t i = 0; i < sizeof row_types - 1; i++)
    rc |= bind_row_value(s, (int)i + 1, row_types[i], json_array_get(row, i));
  if (rc != SQLITE_OK) return hts_fail(st, rc, "bind evaluation");
  if ((e = hts_step_id(st, s, "store evaluation", NULL))) return e;
  json_t *session = json_array_get(row, ROW_SESSION), *time = json_array_get(row, ROW_TIME);
  if (!json_is_integer(session)) return HT_OK;
  if ((e = hts_stmt(st, HTS_SESSION_TALLY, &s))) return e;
  rc = sqlite3_bind_int64(s, 1, json_integer_value(session));
  const char *status = json_string_value(json_array_get(row, ROW_STATUS));
  int ok = status && strcmp(status, ht_eval_status_name(HT_EVAL_OK)) == 0;
  rc |= ok ? bind_row_value(s, 2, 'd', time) : sqlite3_bind_null(s, 2);
  if (rc != SQLITE_OK) return hts_fail(st, rc, "bind session tally");
  return hts_step_id(st, s, "update session", NULL);
}

int hts_eval_row_matches(json_t *row, const ht_eval_key *k) {
  const char *key = json_string_value(json_array_get(row, ROW_CONFIG_KEY));
  return json_integer_value(json_array_get(row, ROW_KERNEL)) == k->kernel_id &&
         json_integer_value(json_array_get(row, ROW_DEVICE)) == k->device_id &&
         json_integer_value(json_array_get(row, ROW_PROBLEM)) == k->problem_id && key &&
         strcmp(key, k->config_key) == 0;
}

ht_status hts_eval_row_stored(ht_store *st, json_t *row, int *stored) {
  sqlite3_stmt *s = NULL;
  ht_status e = hts_stmt(st, HTS_EVAL_STORED, &s);
  if (e) return e;
  int rc = SQLITE_OK;
  for (int i = ROW_KERNEL; i <= ROW_CONFIG_KEY; i++) rc |= bind_row_value(s, i, row_types[i], json_array_get(row, i));
  rc |= bind_row_value(s, 5, 'd', json_array_get(row, ROW_TIMESTAMP));
  if (rc != SQLITE_OK) return hts_fail(st, rc, "bind query");
  rc = sqlite3_step(s);
  *stored = rc == SQLITE_ROW;
  sqlite3_reset(s);
  return rc == SQLITE_ROW || rc == SQLITE_DONE ? HT_OK : hts_fail(st, rc, "look up a pending evaluation");
}

/* With grouping on (ht_store_group_evals), the row is journaled and committed with its group;
 * otherwise committed here, with its session tally, in one transaction. */
ht_status ht_store_put_eval(ht_store *st, int64_t session_id, const ht_eval_key *k, const ht_result *r,
                            int64_t *eval_id) {
  if (!st) return ht_error(HT_ERR_INVALID, "store is NULL");
  if (st->readonly) return hts_writable(st, "store an evaluation");
  if (!k || !r || !k->config_key) return ht_error(HT_ERR_INVALID, "%s: evaluation without key or result", st->path);
  int oom, kept = 0;
  char *samples = samples_json(r), *metrics = metrics_json(r, &oom);
  json_t *row = samples && !oom ? eval_row(session_id, k, r, samples, metrics) : NULL;
  ht_status e = row ? HT_OK : ht_error(HT_ERR_NOMEM, "out of memory");
  /* An id is known only once the row is in: asked for, it is committed now. */
  if (!e && !eval_id) e = hts_pending_put(st, row, &kept);
  if (!e && !kept) e = hts_settle(st);
  if (!e && !kept) {
    e = hts_exec(st, "BEGIN IMMEDIATE", "begin evaluation");
    if (!e) e = hts_insert_eval_row(st, row);
    if (!e) {
      if (eval_id) *eval_id = sqlite3_last_insert_rowid(st->db);
      e = hts_exec(st, "COMMIT", "commit evaluation");
    }
    if (e) sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
  }
  json_decref(row);
  free(samples);
  free(metrics);
  return e;
}

/* ---- reading ---- */

static ht_status bind_kdp(ht_store *st, sqlite3_stmt *s, int64_t kernel, int64_t device, int64_t problem) {
  int rc = sqlite3_bind_int64(s, 1, kernel) | sqlite3_bind_int64(s, 2, device) | sqlite3_bind_int64(s, 3, problem);
  return rc == SQLITE_OK ? HT_OK : hts_fail(st, rc, "bind query");
}

static ht_status bind_config(ht_store *st, sqlite3_stmt *s, const ht_eval_key *k) {
  ht_status e = bind_kdp(st, s, k->kernel_id, k->device_id, k->problem_id);
  return !e && hts_bind_text(s, 4, k->config_key) != SQLITE_OK ? hts_fail(st, SQLITE_ERROR, "bind query") : e;
}

/* A config's OK evaluations judged together: the median of their times and the middle row (of
 * an even count, the later of the two middle rows, so two evaluations give the latest). */
typedef struct median_pick {
  int64_t id; /* 0: no OK evaluation */
  double median;
  char *config_key;
} median_pick;

typedef struct time_group {
  int64_t *ids;
  double *times; /* ascending: the statement sorts them */
  int n, cap;
} time_group;

static int group_add(time_group *g, int64_t id, double t) {
  if (g->n == g->cap) {
    int cap = g->cap ? 2 * g->cap : 16;
    int64_t *ids = realloc(g->ids, (size_t)cap * sizeof *ids);
    if (ids) g->ids = ids;
    double *times = ids ? realloc(g->times, (size_t)cap * sizeof *times) : NULL;
    if (!times) return -1;
    g->times = times;
    g->cap = cap;
  }
  g->ids[g->n] = id;
  g->times[g->n++] = t;
  return 0;
}

/* Ends a config's group: keeps it in *best when its median is the lowest so far. */
static ht_status group_close(time_group *g, const char *key, median_pick *best) {
  if (g->n == 0) return HT_OK;
  int m = g->n / 2, near = g->n % 2 || g->ids[m] > g->ids[m - 1] ? m : m - 1;
  double med = ht_stat_median(g->times, g->n);
  g->n = 0;
  if (best->id && med >= best->median) return HT_OK;
  char *copy = strdup(key);
  if (!copy) return ht_error(HT_ERR_NOMEM, "out of memory");
  free(best->config_key);
  *best = (median_pick){g->ids[near], med, copy};
  return HT_OK;
}

/* Steps s (rows: id, config_key, time_s, grouped by config, sorted by time within one) and picks
 * the config with the lowest median. */
static ht_status lowest_median(ht_store *st, sqlite3_stmt *s, median_pick *best) {
  time_group g = {0};
  char *key = NULL;
  ht_status e = HT_OK;
  int rc;
  while (!e && (rc = sqlite3_step(s)) == SQLITE_ROW) {
    const char *k = hts_col_text(s, 1);
    if (key && strcmp(key, k) != 0) e = group_close(&g, key, best);
    if (!e && (!key || g.n == 0)) {
      free(key);
      if (!(key = strdup(k))) e = ht_error(HT_ERR_NOMEM, "out of memory");
    }
    if (!e && group_add(&g, sqlite3_column_int64(s, 0), sqlite3_column_double(s, 2)))
      e = ht_error(HT_ERR_NOMEM, "out of memory");
  }
  if (!e && rc != SQLITE_DONE) e = hts_fail(st, rc, "read evaluations");
  if (!e && key) e = group_close(&g, key, best);
  sqlite3_reset(s);
  free(key);
  free(g.ids);
  free(g.times);
  return e;
}

/* Steps s (HTS_GET_EVAL or HTS_EVAL_BY_ID, bound) and reads its row into out. */
static ht_status read_row(ht_store *st, sqlite3_stmt *s, ht_result *out, int *found) {
  int rc = sqlite3_step(s);
  ht_status e = HT_OK;
  if (rc == SQLITE_ROW) {
    hts_row_result(s, 1, out);
    *found = 1;
  } else if (rc != SQLITE_DONE) {
    e = hts_fail(st, rc, "read evaluation");
  }
  sqlite3_reset(s);
  return e;
}

/* The picked row, with time_s the median of its config's evaluations. */
static ht_status read_pick(ht_store *st, const median_pick *p, ht_result *out, int *found) {
  sqlite3_stmt *s = NULL;
  ht_status e = hts_stmt(st, HTS_EVAL_BY_ID, &s);
  if (e) return e;
  if (sqlite3_bind_int64(s, 1, p->id) != SQLITE_OK) return hts_fail(st, SQLITE_ERROR, "bind query");
  e = read_row(st, s, out, found);
  if (!e && *found) out->time_s = p->median;
  return e;
}

ht_status ht_store_get_eval(ht_store *st, const ht_eval_key *k, ht_result *out, int *found) {
  if (!st || !k || !k->config_key || !out || !found) return ht_error(HT_ERR_INVALID, "store_get_eval: NULL argument");
  *found = 0;
  sqlite3_stmt *s = NULL;
  median_pick pick = {0};
  /* A config's lookup leaves other configs' rows pending: it runs before every evaluation. */
  ht_status e = hts_pending_has(st, k) ? hts_settle(st) : HT_OK;
  /* The latest evaluation first: most lookups of a tuning find none, and one query says so. */
  if (!e) e = hts_stmt(st, HTS_GET_EVAL, &s);
  if (!e) e = bind_config(st, s, k);
  if (!e) e = read_row(st, s, out, found);
  if (e || !*found) return e;
  /* Measured OK at least once: the median of those; else the latest failure, read above, stands. */
  e = hts_stmt(st, HTS_OK_TIMES_CONFIG, &s);
  if (!e) e = bind_config(st, s, k);
  if (!e) e = lowest_median(st, s, &pick);
  free(pick.config_key);
  return e || !pick.id ? e : read_pick(st, &pick, out, found);
}

ht_status ht_store_best(ht_store *st, int64_t kernel_id, int64_t device_id, int64_t problem_id, ht_result *out,
                        char *key_buf, size_t key_len, int *found) {
  if (!st || !out || !found) return ht_error(HT_ERR_INVALID, "store_best: NULL argument");
  *found = 0;
  sqlite3_stmt *s = NULL;
  median_pick pick = {0};
  ht_status e = hts_settle(st);
  if (!e) e = hts_stmt(st, HTS_OK_TIMES, &s);
  if (!e) e = bind_kdp(st, s, kernel_id, device_id, problem_id);
  if (!e) e = lowest_median(st, s, &pick);
  if (!e && pick.id) e = read_pick(st, &pick, out, found);
  if (!e && *found && key_buf && key_len) snprintf(key_buf, key_len, "%s", pick.config_key);
  free(pick.config_key);
  return e;
}

static ht_status query_evals(ht_store *st, const ht_eval_filter *f, sqlite3_stmt **out) {
  static const char sql[] =
      "SELECT e.id, e.session_id, k.name, k.language, k.source_hash, d.device_id, d.name, d.fingerprint,"
      " p.sizes, e.config_key, e.config_json, " HTS_EVAL_COLS
      " FROM evaluations e JOIN kernels k ON k.id = e.kernel_id JOIN devices d ON d.id = e.device_id"
      " JOIN problems p ON p.id = e.problem_id"
      " WHERE (?1 IS NULL OR k.name = ?1) AND (?2 IS NULL OR d.device_id = ?2)"
      " AND (?3 IS NULL OR p.sizes = ?3) AND (?4 = 0 OR e.status = 'ok') ORDER BY e.id";
  ht_eval_filter none = {0};
  if (!f) f = &none;
  ht_status e = hts_prepare(st, sql, out);
  if (e) return e;
  int rc = hts_bind_text(*out, 1, f->kernel_name) | hts_bind_text(*out, 2, f->device_id);
  rc |= hts_bind_text(*out, 3, f->problem) | sqlite3_bind_int(*out, 4, f->only_ok != 0);
  if (rc == SQLITE_OK) return HT_OK;
  sqlite3_finalize(*out);
  *out = NULL;
  return hts_fail(st, rc, "bind filter");
}

static void row_record(sqlite3_stmt *s, ht_eval_record *rec) {
  rec->eval_id = sqlite3_column_int64(s, 0);
  rec->session_id = sqlite3_column_int64(s, 1);
  const char **txt[] = {&rec->kernel_name, &rec->language, &rec->source_hash, &rec->device_id,
                        &rec->device_name, &rec->device_fingerprint, &rec->problem, &rec->config_key,
                        &rec->config_json};
  for (int i = 0; i < 9; i++) *txt[i] = hts_col_text(s, 2 + i);
  hts_row_result(s, 11, &rec->result);
}

ht_status ht_store_each_eval(ht_store *st, const ht_eval_filter *f, ht_eval_visit_fn fn, void *ctx) {
  if (!st || !fn) return ht_error(HT_ERR_INVALID, "store_each_eval: NULL argument");
  sqlite3_stmt *s = NULL;
  ht_status e = query_evals(st, f, &s);
  if (e) return e;
  /* Large (a whole ht_result); on the heap to keep the caller's stack small. */
  ht_eval_record *rec = malloc(sizeof *rec);
  int rc = rec ? SQLITE_ROW : SQLITE_NOMEM;
  while (rc == SQLITE_ROW && (rc = sqlite3_step(s)) == SQLITE_ROW) {
    row_record(s, rec);
    if (fn(rec, ctx)) rc = SQLITE_DONE;
  }
  if (rc != SQLITE_DONE) e = hts_fail(st, rc, "read evaluations");
  free(rec);
  sqlite3_finalize(s);
  return e;
}

ht_status ht_store_each_session(ht_store *st, ht_session_visit_fn fn, void *ctx) {
  static const char sql[] =
      "SELECT s.id, k.name, d.device_id, p.sizes, s.strategy, s.status, s.seed, s.n_evals, s.budget_evals,"
      " s.budget_seconds, s.started, s.ended, s.best_time FROM sessions s"
      " LEFT JOIN kernels k ON k.id = s.kernel_id LEFT JOIN devices d ON d.id = s.device_id"
      " LEFT JOIN problems p ON p.id = s.problem_id ORDER BY s.id";
  if (!st || !fn) return ht_error(HT_ERR_INVALID, "store_each_session: NULL argument");
  sqlite3_stmt *s = NULL;
  ht_status e = hts_prepare(st, sql, &s);
  if (e) return e;
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    ht_session_record r = {.session_id = sqlite3_column_int64(s, 0)};
    r.kernel_name = hts_col_text(s, 1);
    r.device_id = hts_col_text(s, 2);
    r.problem = hts_col_text(s, 3);
    r.strategy = hts_col_text(s, 4);
    r.status = hts_col_text(s, 5);
    r.seed = (uint64_t)sqlite3_column_int64(s, 6);
    r.n_evals = sqlite3_column_int64(s, 7);
    r.budget_evals = sqlite3_column_int64(s, 8);
    r.budget_seconds = sqlite3_column_double(s, 9);
    r.started = hts_col_double(s, 10);
    r.ended = hts_col_double(s, 11);
    r.best_time_s = hts_col_double(s, 12);
    if (fn(&r, ctx)) {
      rc = SQLITE_DONE;
      break;
    }
  }
  if (rc != SQLITE_DONE) e = hts_fail(st, rc, "read sessions");
  sqlite3_finalize(s);
  return e;
}
