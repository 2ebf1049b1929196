/* Prediction models in the store: every trained version is kept with its provenance. */
#include <string.h>

#include "store/store_internal.h"

ht_status ht_store_put_model(ht_store *st, const ht_model_record *rec, int64_t *id) {
  ht_status r = hts_writable(st, "store a model");
  if (r) return r;
  if (!rec->name || !*rec->name || !rec->kind || !rec->kernel_name || !rec->blob || !rec->blob_len)
    return ht_error(HT_ERR_INVALID, "store a model: name, kind, kernel and model bytes are required");
  sqlite3_stmt *s;
  if ((r = hts_prepare(st,
                       "INSERT INTO models (name, kind, options, kernel_name, source_hash, device_id, spec_path,"
                       " n_rows, provenance_json, blob, created) VALUES (?,?,?,?,?,?,?,?,?,?,?) RETURNING id",
                       &s)))
    return r;
  hts_bind_text(s, 1, rec->name);
  hts_bind_text(s, 2, rec->kind);
  hts_bind_text(s, 3, rec->options);
  hts_bind_text(s, 4, rec->kernel_name);
  hts_bind_text(s, 5, rec->source_hash);
  hts_bind_text(s, 6, rec->device_id);
  hts_bind_text(s, 7, rec->spec_path);
  sqlite3_bind_int64(s, 8, rec->n_rows);
  hts_bind_text(s, 9, rec->provenance_json ? rec->provenance_json : "{}");
  sqlite3_bind_blob(s, 10, rec->blob, (int)rec->blob_len, SQLITE_STATIC);
  sqlite3_bind_double(s, 11, ht_wall_time());
  r = hts_step_id(st, s, "store a model", id);
  sqlite3_finalize(s);
  return r;
}

static const char *col_text(sqlite3_stmt *s, int i) { return (const char *)sqlite3_column_text(s, i); }

static void read_record(sqlite3_stmt *s, ht_model_record *rec) {
  memset(rec, 0, sizeof *rec);
  rec->id = sqlite3_column_int64(s, 0);
  rec->name = col_text(s, 1);
  rec->kind = col_text(s, 2);
  rec->options = col_text(s, 3);
  rec->kernel_name = col_text(s, 4);
  rec->source_hash = col_text(s, 5);
  rec->device_id = col_text(s, 6);
  rec->spec_path = col_text(s, 7);
  rec->n_rows = sqlite3_column_int64(s, 8);
  rec->provenance_json = col_text(s, 9);
  rec->blob = sqlite3_column_blob(s, 10);
  rec->blob_len = (size_t)sqlite3_column_bytes(s, 10);
  rec->created = sqlite3_column_double(s, 11);
}

ht_status ht_store_each_model(ht_store *st, const char *name, const char *kernel_name, ht_model_visit_fn fn,
                              void *ctx) {
  if (!hts_has_table(st, "models")) return HT_OK;
  sqlite3_stmt *s;
  ht_status r = hts_prepare(st,
                            "SELECT id, name, kind, options, kernel_name, source_hash, device_id, spec_path, n_rows,"
                            " provenance_json, blob, created FROM models"
                            " WHERE (?1 IS NULL OR name = ?1) AND (?2 IS NULL OR kernel_name = ?2) ORDER BY id DESC",
                            &s);
  if (r) return r;
  hts_bind_text(s, 1, name);
  hts_bind_text(s, 2, kernel_name);
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    ht_model_record rec;
    read_record(s, &rec);
    if (fn(&rec, ctx)) {
      rc = SQLITE_DONE;
      break;
    }
  }
  r = rc == SQLITE_DONE ? HT_OK : hts_fail(st, rc, "read models");
  sqlite3_finalize(s);
  return r;
}
