/* The dispatch log: every call a computation ran, written in batches. */
#include <math.h>
#include <stdio.h>

#include "store/store_internal.h"

static ht_status put_one(ht_store *st, sqlite3_stmt *s, const ht_dispatch_record *r) {
  sqlite3_reset(s);
  sqlite3_clear_bindings(s);
  hts_bind_text(s, 1, r->computation);
  hts_bind_text(s, 2, r->variant);
  hts_bind_text(s, 3, r->variant_key);
  hts_bind_text(s, 4, r->config ? r->config : "");
  hts_bind_text(s, 5, r->sizes);
  hts_bind_text(s, 6, r->source);
  sqlite3_bind_double(s, 7, r->predicted_s); /* NaN binds as NULL */
  sqlite3_bind_int64(s, 8, r->calls);
  sqlite3_bind_double(s, 9, r->kernel_s);
  sqlite3_bind_double(s, 10, r->h2d_s);
  sqlite3_bind_double(s, 11, r->d2h_s);
  sqlite3_bind_double(s, 12, r->timestamp);
  sqlite3_bind_int(s, 13, r->censored != 0);
  int rc = sqlite3_step(s);
  return rc == SQLITE_DONE ? HT_OK : hts_fail(st, rc, "log a dispatched call");
}

static ht_status check_record(const ht_dispatch_record *r, int i) {
  if (!r->computation || !r->variant || !r->variant_key || !r->sizes || !r->source)
    return ht_error(HT_ERR_INVALID, "log a dispatched call: record %d lacks a name, variant, sizes or source", i);
  if (r->calls < 1) return ht_error(HT_ERR_INVALID, "log a dispatched call: record %d stands for %lld calls", i,
                                    (long long)r->calls);
  if (!isfinite(r->kernel_s) || !isfinite(r->h2d_s) || !isfinite(r->d2h_s))
    return ht_error(HT_ERR_INVALID, "log a dispatched call: record %d has a time that is not a number", i);
  return HT_OK;
}

ht_status ht_store_put_dispatch_log(ht_store *st, const ht_dispatch_record *recs, int n) {
  ht_status r = hts_writable(st, "log dispatched calls");
  for (int i = 0; !r && i < n; i++) r = check_record(&recs[i], i);
  if (r || n <= 0) return r;
  sqlite3_stmt *s;
  if ((r = hts_prepare(st,
                       "INSERT INTO dispatch_log (computation, variant, variant_key, config, sizes, source, predicted_s,"
                       " calls, kernel_s, h2d_s, d2h_s, timestamp, censored) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                       &s)))
    return r;
  r = hts_exec(st, "BEGIN IMMEDIATE", "log dispatched calls");
  for (int i = 0; !r && i < n; i++) r = put_one(st, s, &recs[i]);
  sqlite3_finalize(s);
  if (!r) return hts_exec(st, "COMMIT", "log dispatched calls");
  hts_exec(st, "ROLLBACK", "log dispatched calls");
  return r;
}

static int has_censored(ht_store *st) {
  sqlite3_stmt *s = NULL;
  int ok = sqlite3_prepare_v2(st->db, "SELECT censored FROM dispatch_log LIMIT 0", -1, &s, NULL) == SQLITE_OK;
  sqlite3_finalize(s);
  return ok;
}

ht_status ht_store_each_dispatch_log(ht_store *st, const char *computation, int64_t newest, ht_dispatch_visit_fn fn,
                                     void *ctx) {
  if (!computation || !fn) return ht_error(HT_ERR_INVALID, "read the dispatch log: no computation or visitor");
  if (!hts_has_table(st, "dispatch_log")) return HT_OK;
  sqlite3_stmt *s;
  char sql[400];
  /* A database of schema 5 opened for reading (not migrated) has no censored column. */
  snprintf(sql, sizeof sql,
           "SELECT * FROM (SELECT computation, variant, variant_key, config, sizes, source, predicted_s,"
           " calls, kernel_s, h2d_s, d2h_s, timestamp, id, %s FROM dispatch_log WHERE computation = ?"
           " ORDER BY id DESC LIMIT ?) ORDER BY id",
           has_censored(st) ? "censored" : "0");
  ht_status r = hts_prepare(st, sql, &s);
  if (r) return r;
  hts_bind_text(s, 1, computation);
  sqlite3_bind_int64(s, 2, newest > 0 ? newest : -1);
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    ht_dispatch_record rec = {hts_col_text(s, 0),     hts_col_text(s, 1),     hts_col_text(s, 2),
                              hts_col_text(s, 3),     hts_col_text(s, 4),     hts_col_text(s, 5),
                              hts_col_double(s, 6),   sqlite3_column_int64(s, 7), hts_col_double(s, 8),
                              hts_col_double(s, 9),   hts_col_double(s, 10),  hts_col_double(s, 11),
                              sqlite3_column_int(s, 13)};
    if (fn(&rec, ctx)) break;
  }
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) r = hts_fail(st, rc, "read the dispatch log");
  sqlite3_finalize(s);
  return r;
}
