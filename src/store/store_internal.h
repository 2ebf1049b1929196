/* Shared between the store's files (store.c, store_schema.c, store_eval.c, store_export.c); not
 * installed, not part of the public API. */
#ifndef HETUNE_STORE_INTERNAL_H
#define HETUNE_STORE_INTERNAL_H

#include <jansson.h>
#include <sys/types.h>
#include <sqlite3.h>

#include "hetune/store.h"

/* PRAGMA application_id of every hetune database: "HTun" in ASCII. A different non-zero id, or
 * tables without our id, marks a file as someone else's and we never touch it. */
#define HTS_APP_ID 0x4854756e
/* PRAGMA user_version written by the newest migration this build knows. */
#define HTS_SCHEMA_VERSION 7

/* Hot-path statements, prepared once and kept for the life of the store. Queries whose callbacks
 * may re-enter the store (each_eval, each_session, exports) prepare their own statements. */
enum {
  HTS_PUT_DEVICE,
  HTS_PUT_KERNEL,
  HTS_PUT_PROBLEM,
  HTS_SESSION_BEGIN,
  HTS_SESSION_END,
  HTS_PUT_EVAL,
  HTS_SESSION_TALLY,
  HTS_GET_EVAL,
  HTS_OK_TIMES,
  HTS_OK_TIMES_CONFIG,
  HTS_EVAL_BY_ID,
  HTS_EVAL_STORED,
  HTS_NSTMT
};

struct ht_store {
  sqlite3 *db;
  char *path;
  int readonly;
  double lock_wait_since; /* the busy handler's first try */
  int lock_warned;
  sqlite3_stmt *stmt[HTS_NSTMT];
  /* Evaluations grouped (store_pending.c): rows not yet committed, kept in the journal. */
#define HTS_MAX_PENDING 256
  int max_pending; /* 0 or 1: each evaluation committed on its own */
  int n_pending;
  json_t *pending[HTS_MAX_PENDING];
  double pending_since;
  int journal_fd; /* -1: none yet */
  char *journal_path;
  off_t journal_header_len; /* its first line, naming the database; kept when it is emptied */
};

/* The result columns every evaluation query selects, in the order hts_row_result reads them. */
#define HTS_EVAL_COLS                                                                              \
  "e.status, e.time_s, e.mean_s, e.stddev_s, e.min_s, e.max_s, e.rsd, e.n_samples, e.samples_json, " \
  "e.compile_s, e.compile_cached, e.verify_s, e.h2d_s, e.d2h_s, e.framework_s, e.wall_s, "         \
  "e.timestamp, e.metrics_json, e.message"

/* Maps an SQLite failure to an ht_status with "PATH: what: reason". */
ht_status hts_fail(ht_store *st, int rc, const char *what);
/* HT_OK, or the "database is read-only" error when the store was opened for reading. */
ht_status hts_writable(ht_store *st, const char *what);
/* The cached statement id, reset and with bindings cleared. */
ht_status hts_stmt(ht_store *st, int id, sqlite3_stmt **out);
/* A one-off statement (caller finalizes). */
ht_status hts_prepare(ht_store *st, const char *sql, sqlite3_stmt **out);
ht_status hts_exec(ht_store *st, const char *sql, const char *what);
/* Steps a write to completion (the autocommit transaction commits there), reading a RETURNING id. */
ht_status hts_step_id(ht_store *st, sqlite3_stmt *s, const char *what, int64_t *id);

static inline int hts_bind_text(sqlite3_stmt *s, int i, const char *v) {
  /* Static: every caller steps the statement before its strings go away. */
  return v ? sqlite3_bind_text(s, i, v, -1, SQLITE_STATIC) : sqlite3_bind_null(s, i);
}
/* 0 means "none": NULL keeps the foreign keys satisfied. */
static inline int hts_bind_id(sqlite3_stmt *s, int i, int64_t id) {
  return id > 0 ? sqlite3_bind_int64(s, i, id) : sqlite3_bind_null(s, i);
}

/* Evaluation rows (store_eval.c): a JSON array of the INSERT's parameters. */
ht_status hts_insert_eval_row(ht_store *st, json_t *row);
/* 1 when the row has the columns and types of an evaluation. */
int hts_eval_row_valid(json_t *row);
int hts_eval_row_matches(json_t *row, const ht_eval_key *k);
/* *stored = 1 when an evaluation with the row's key and timestamp is in the database. */
ht_status hts_eval_row_stored(ht_store *st, json_t *row, int *stored);

/* Grouped evaluations (store_pending.c). */
/* Commits the pending rows; every query and write but a config's own lookup calls it first. */
ht_status hts_settle(ht_store *st);
/* Journals the row and keeps it pending (*kept = 1), committing the group when it is full or old;
 * *kept = 0 when grouping is off: the caller commits the row itself. */
ht_status hts_pending_put(ht_store *st, json_t *row, int *kept);
int hts_pending_has(const ht_store *st, const ht_eval_key *k);
/* Settles and removes the journal (left for recovery when the commit fails). */
ht_status hts_pending_close(ht_store *st);
/* Puts in the rows of journals whose process is gone, and removes those journals; a read-only
 * store only says that they are there. */
ht_status hts_recover_journals(ht_store *st);

/* Schema (store_schema.c). */
typedef struct hts_inspect {
  int app_id, user_version, n_tables;
  char missing[32]; /* a table the schema version has and the file lacks ("" when none) */
} hts_inspect;
/* Checks the file's first bytes before SQLite sees it: magic and truncation. */
ht_status hts_check_header(const char *path, long long file_size);
/* Reads application_id, user_version, the table count and the first missing table, and runs
 * quick_check on a file about to be written, or a small one. */
ht_status hts_inspect_db(sqlite3 *db, const char *path, long long file_size, int for_writing, hts_inspect *out);
/* Judges the inspection: a foreign, newer or unusable database is an error. */
ht_status hts_judge(const char *path, const hts_inspect *in, int readonly);
/* Runs every migration above the file's user_version, each in its own transaction. */
ht_status hts_migrate(ht_store *st);
/* 1 when the file has the table: an older file opened read-only is not migrated, and readers of
 * a table it lacks see it empty. */
int hts_has_table(ht_store *st, const char *name);

/* Rows (store_eval.c). */
double hts_col_double(sqlite3_stmt *s, int col); /* NULL -> NAN */
const char *hts_col_text(sqlite3_stmt *s, int col); /* NULL -> "" */
void hts_row_result(sqlite3_stmt *s, int col, ht_result *r);
/* "2024-05-01T12:34:56.789Z" (UTC). */
void hts_iso8601(double t, char out[40]);
/* Exports holding one kernel (device, problem): the first value of the field is kept in *have;
 * another is an error in *error naming both and the option that chooses one. 1 on error. */
int hts_export_one(char **have, const char *now, const char *what, const char *option, const char *format,
                   ht_status *error);
/* s, or a write error on out ("WHAT export: write error") once it is flushed. */
ht_status hts_export_done(ht_store *st, FILE *out, ht_status s, const char *what);

#endif
