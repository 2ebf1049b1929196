/* The store's schema: what a hetune database looks like, how a file is judged before anything is
 * written to it, and the migrations that bring an older file up to date. */
#include <stdio.h>
#include <string.h>

#include "store/store_internal.h"

/* Migration N takes a database from user_version N-1 to N. Append new versions; never edit a
 * released one, since files in the field were created by it. Later work (models, dispatch
 * decisions, co-execution plans) adds its tables as new migrations. */
static const char *const migrations[] = {
    /* 1: devices, kernels, problems, sessions, evaluations. */
    "CREATE TABLE hetune_meta (key TEXT PRIMARY KEY, value TEXT);"
    "CREATE TABLE schema_history (version INTEGER PRIMARY KEY, applied REAL NOT NULL);"
    "CREATE TABLE devices ("
    " id INTEGER PRIMARY KEY, backend TEXT NOT NULL, device_id TEXT NOT NULL, name TEXT NOT NULL,"
    " vendor TEXT, driver_version TEXT, runtime_version TEXT, compiler_version TEXT,"
    " compute_units INTEGER, max_threads INTEGER, warp_size INTEGER, clock_mhz INTEGER,"
    " global_mem_bytes INTEGER, local_mem_bytes INTEGER, max_alloc_bytes INTEGER,"
    " max_work_group_size INTEGER, max_work_item_x INTEGER, max_work_item_y INTEGER,"
    " max_work_item_z INTEGER, fingerprint TEXT NOT NULL UNIQUE, first_seen REAL, last_seen REAL);"
    "CREATE TABLE kernels ("
    " id INTEGER PRIMARY KEY, name TEXT NOT NULL, language TEXT, source_hash TEXT NOT NULL,"
    " spec_path TEXT, space_json TEXT, created REAL NOT NULL, UNIQUE (name, source_hash));"
    "CREATE TABLE problems ("
    " id INTEGER PRIMARY KEY, kernel_id INTEGER NOT NULL REFERENCES kernels(id), sizes TEXT NOT NULL,"
    " UNIQUE (kernel_id, sizes));"
    "CREATE TABLE sessions ("
    " id INTEGER PRIMARY KEY, kernel_id INTEGER REFERENCES kernels(id),"
    " device_id INTEGER REFERENCES devices(id), problem_id INTEGER REFERENCES problems(id),"
    " strategy TEXT NOT NULL, seed INTEGER, budget_evals INTEGER, budget_seconds REAL,"
    " options_json TEXT, host TEXT, started REAL NOT NULL, ended REAL,"
    " status TEXT NOT NULL DEFAULT 'running', n_evals INTEGER NOT NULL DEFAULT 0, best_time REAL);"
    "CREATE TABLE evaluations ("
    " id INTEGER PRIMARY KEY, session_id INTEGER REFERENCES sessions(id),"
    " kernel_id INTEGER NOT NULL REFERENCES kernels(id),"
    " device_id INTEGER NOT NULL REFERENCES devices(id),"
    " problem_id INTEGER NOT NULL REFERENCES problems(id),"
    " config_key TEXT NOT NULL, config_json TEXT NOT NULL, status TEXT NOT NULL,"
    " time_s REAL, mean_s REAL, stddev_s REAL, min_s REAL, max_s REAL, rsd REAL,"
    " n_samples INTEGER NOT NULL, samples_json TEXT NOT NULL,"
    " compile_s REAL, compile_cached INTEGER, verify_s REAL, h2d_s REAL, d2h_s REAL,"
    " framework_s REAL, wall_s REAL, timestamp REAL NOT NULL, metrics_json TEXT, message TEXT);"
    "CREATE INDEX evaluations_key ON evaluations (kernel_id, device_id, problem_id, config_key);"
    "CREATE INDEX evaluations_session ON evaluations (session_id);"
    "CREATE INDEX sessions_kdp ON sessions (kernel_id, device_id, problem_id);",
    /* 2: prediction models with their training data's provenance; a name may be trained again,
     * every version is kept and the newest answers. */
    "CREATE TABLE models ("
    " id INTEGER PRIMARY KEY, name TEXT NOT NULL, kind TEXT NOT NULL, options TEXT,"
    " kernel_name TEXT NOT NULL, source_hash TEXT, device_id TEXT, spec_path TEXT,"
    " n_rows INTEGER, provenance_json TEXT NOT NULL, blob BLOB NOT NULL, created REAL NOT NULL);"
    "CREATE INDEX models_name ON models (name, id);"
    "CREATE INDEX models_kernel ON models (kernel_name, id);",
    /* 3: the process of a running session (pid and its start time), so a session whose process
     * died without ending it (kill -9, a lost node) is marked interrupted by the next opener. */
    ("ALTER TABLE sessions ADD COLUMN pid INTEGER;"
     "ALTER TABLE sessions ADD COLUMN pid_start INTEGER;"),
    /* 4: host<->device transfer times (ht_transfer_table), one row per measured point; a
     * device's table is replaced whole when measured again. */
    ("CREATE TABLE transfers ("
     " id INTEGER PRIMARY KEY, device_id INTEGER NOT NULL REFERENCES devices(id),"
     " direction TEXT NOT NULL CHECK (direction IN ('h2d', 'd2h')), bytes REAL NOT NULL,"
     " seconds REAL NOT NULL, measured REAL NOT NULL, UNIQUE (device_id, direction, bytes));"),
    /* 5: every call a computation ran (per-call dispatch): what was decided, expected and measured,
     * so a program learns from the runs of the ones before it. */
    "CREATE TABLE dispatch_log ("
    " id INTEGER PRIMARY KEY, computation TEXT NOT NULL, variant TEXT NOT NULL, variant_key TEXT NOT NULL,"
    " config TEXT NOT NULL, sizes TEXT NOT NULL, source TEXT NOT NULL, predicted_s REAL, calls INTEGER NOT NULL,"
    " kernel_s REAL NOT NULL, h2d_s REAL NOT NULL, d2h_s REAL NOT NULL, timestamp REAL NOT NULL);"
    "CREATE INDEX dispatch_log_computation ON dispatch_log (computation, id);",
    /* 6: a race's losers: their time is a lower bound (stopped when the winner finished), not a
     * measurement; rows from before read as measurements. */
    "ALTER TABLE dispatch_log ADD COLUMN censored INTEGER NOT NULL DEFAULT 0;",
    /* 7: a device's power figures (ht_device_power), so a program does not load every core to
     * measure a CPU's power again; replaced when measured again. */
    ("CREATE TABLE device_power ("
     " device_id INTEGER PRIMARY KEY REFERENCES devices(id), active_w REAL NOT NULL, idle_w REAL NOT NULL,"
     " source TEXT NOT NULL, detail TEXT NOT NULL, measured REAL NOT NULL);"),
};

/* The tables each schema version has, in the version that added them: a file missing one is
 * damaged (a dropped table), and is refused before anything is written to it. */
static const struct {
  int version;
  const char *table;
} required_tables[] = {{1, "hetune_meta"}, {1, "schema_history"}, {1, "devices"},  {1, "kernels"},
                       {1, "problems"},    {1, "sessions"},       {1, "evaluations"}, {2, "models"},
                       {4, "transfers"}, {5, "dispatch_log"}, {7, "device_power"}};
#define N_MIGRATIONS ((int)(sizeof migrations / sizeof migrations[0]))
_Static_assert(N_MIGRATIONS == HTS_SCHEMA_VERSION, "one migration per schema version");

static unsigned be16(const unsigned char *p) { return (unsigned)p[0] << 8 | p[1]; }
static unsigned long be32(const unsigned char *p) {
  return (unsigned long)p[0] << 24 | (unsigned long)p[1] << 16 | (unsigned long)p[2] << 8 | p[3];
}

/* SQLite would read a truncated file happily until a query touched a missing page, so the size the
 * header promises is checked against the real size before anything else. */
ht_status hts_check_header(const char *path, long long file_size) {
  unsigned char h[100];
  if (file_size == 0) return HT_OK;
  FILE *f = fopen(path, "rb");
  if (!f) return ht_error(HT_ERR_IO, "%s: cannot read the database file", path);
  size_t n = fread(h, 1, sizeof h, f);
  fclose(f);
  if (n < sizeof h || memcmp(h, "SQLite format 3", 16) != 0)
    return ht_error(HT_ERR_STORE, "%s: not a SQLite database (no SQLite header)", path);
  unsigned long page = be16(h + 16) == 1 ? 65536 : be16(h + 16);
  if (page < 512 || (page & (page - 1)))
    return ht_error(HT_ERR_STORE, "%s: corrupt database header (page size %lu)", path, page);
  /* The in-header page count is valid when version-valid-for matches the change counter. */
  unsigned long pages = be32(h + 28);
  if (pages && be32(h + 92) == be32(h + 24) && (long long)pages * (long long)page > file_size)
    return ht_error(HT_ERR_STORE, "%s: database is truncated (%lld bytes, header says %lld)", path,
                    file_size, (long long)pages * (long long)page);
  return HT_OK;
}

static ht_status pragma_int(sqlite3 *db, const char *path, const char *sql, int *out) {
  sqlite3_stmt *s = NULL;
  int rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) {
    *out = sqlite3_column_int(s, 0);
    rc = SQLITE_OK;
  }
  sqlite3_finalize(s);
  if (rc == SQLITE_OK || rc == SQLITE_DONE) return HT_OK;
  int prim = rc & 0xff;
  if (prim == SQLITE_NOTADB) return ht_error(HT_ERR_STORE, "%s: not a SQLite database", path);
  if (prim == SQLITE_CORRUPT) return ht_error(HT_ERR_STORE, "%s: database is corrupt (%s)", path, sqlite3_errmsg(db));
  if (prim == SQLITE_BUSY || prim == SQLITE_LOCKED) /* after waiting HETUNE_DB_LOCK_TIMEOUT */
    return ht_error(HT_ERR_TIMEOUT, "%s: database is locked by another process", path);
  /* On a read-only connection, READONLY here means the WAL index could not be set up (no -shm in a
   * read-only folder): the caller retries as immutable. */
  if (prim == SQLITE_CANTOPEN || prim == SQLITE_IOERR || prim == SQLITE_READONLY)
    return ht_error(HT_ERR_IO, "%s: cannot read the database (%s)", path, sqlite3_errmsg(db));
  return ht_error(HT_ERR_STORE, "%s: cannot read the database (%s)", path, sqlite3_errmsg(db));
}

/* quick_check reads every page, so it only runs where that is cheap; the header check above and
 * SQLite's own page checks cover larger files. */
#define QUICK_CHECK_MAX_BYTES (64ll << 20)

static ht_status quick_check(sqlite3 *db, const char *path) {
  sqlite3_stmt *s = NULL;
  int rc = sqlite3_prepare_v2(db, "PRAGMA quick_check(1)", -1, &s, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_step(s);
  ht_status st = HT_OK;
  if (rc == SQLITE_ROW) {
    const char *r = (const char *)sqlite3_column_text(s, 0);
    if (!r || strcmp(r, "ok") != 0) st = ht_error(HT_ERR_STORE, "%s: database is corrupt (%s)", path, r ? r : "?");
  } else {
    st = ht_error(HT_ERR_STORE, "%s: database is corrupt (%s)", path, sqlite3_errmsg(db));
  }
  sqlite3_finalize(s);
  return st;
}

/* The first table the file's schema version should have and does not, into out->missing. */
static ht_status find_missing_table(sqlite3 *db, const char *path, hts_inspect *out) {
  for (size_t i = 0; i < sizeof required_tables / sizeof required_tables[0]; i++) {
    if (required_tables[i].version > out->user_version) continue;
    char sql[160];
    int n = 0;
    snprintf(sql, sizeof sql, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '%s'",
             required_tables[i].table);
    ht_status s = pragma_int(db, path, sql, &n);
    if (s) return s;
    if (!n) {
      snprintf(out->missing, sizeof out->missing, "%s", required_tables[i].table);
      return HT_OK;
    }
  }
  return HT_OK;
}

ht_status hts_inspect_db(sqlite3 *db, const char *path, long long file_size, int for_writing, hts_inspect *out) {
  memset(out, 0, sizeof *out);
  /* One read transaction: the header and the tables of one moment, not an id read before and a
   * table count read after another process created the schema. */
  int in_txn = sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK;
  ht_status s = pragma_int(db, path, "PRAGMA application_id", &out->app_id);
  if (!s) s = pragma_int(db, path, "PRAGMA user_version", &out->user_version);
  if (!s) s = pragma_int(db, path, "SELECT count(*) FROM sqlite_master", &out->n_tables);
  if (!s && out->app_id == HTS_APP_ID) s = find_missing_table(db, path, out);
  /* A file about to be written is checked whole, whatever its size: SQLite would write pages
   * before it met the damaged one. Reading cannot make damage worse, so large files skip it. */
  if (!s && file_size > 0 && (for_writing || file_size <= QUICK_CHECK_MAX_BYTES)) s = quick_check(db, path);
  if (in_txn) sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
  return s;
}

ht_status hts_judge(const char *path, const hts_inspect *in, int readonly) {
  int fresh = in->app_id == 0 && in->n_tables == 0 && in->user_version == 0;
  if (fresh) {
    if (readonly) return ht_error(HT_ERR_STORE, "%s: empty database (no hetune schema) and it is read-only", path);
    return HT_OK;
  }
  if (in->app_id != HTS_APP_ID)
    return ht_error(HT_ERR_STORE, "%s: not a hetune database (application_id 0x%08x, %d schema objects)", path,
                    (unsigned)in->app_id, in->n_tables);
  if (in->user_version > HTS_SCHEMA_VERSION)
    return ht_error(HT_ERR_STORE, "%s: schema version %d is newer than this hetune supports (%d); upgrade hetune",
                    path, in->user_version, HTS_SCHEMA_VERSION);
  if (in->missing[0])
    return ht_error(HT_ERR_STORE, "%s: database is damaged: table '%s' of schema version %d is missing", path,
                    in->missing, in->user_version);
  /* An older file opened read-only is read as it is: migrations only add tables, and readers of
   * a table a file lacks (models) see it empty. */
  (void)readonly;
  return HT_OK;
}

int hts_has_table(ht_store *st, const char *name) {
  sqlite3_stmt *s;
  if (hts_prepare(st, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", &s)) return 0;
  hts_bind_text(s, 1, name);
  int found = sqlite3_step(s) == SQLITE_ROW;
  sqlite3_finalize(s);
  return found;
}

static ht_status migrate_one(ht_store *st, int version) {
  ht_status s = hts_exec(st, "BEGIN IMMEDIATE", "begin migration");
  if (s) return s;
  /* Another process may have migrated between our check and taking the write lock. */
  int current = 0;
  s = pragma_int(st->db, st->path, "PRAGMA user_version", &current);
  if (!s && current < version) {
    char sql[160];
    s = hts_exec(st, migrations[version - 1], "create schema");
    snprintf(sql, sizeof sql, "INSERT INTO schema_history VALUES (%d, %.17g)", version, ht_wall_time());
    if (!s) s = hts_exec(st, sql, "record migration");
    snprintf(sql, sizeof sql, "PRAGMA application_id = %d; PRAGMA user_version = %d", HTS_APP_ID, version);
    if (!s) s = hts_exec(st, sql, "set schema version");
    if (!s && version == 1) {
      snprintf(sql, sizeof sql, "INSERT INTO hetune_meta VALUES ('created', '%.17g')", ht_wall_time());
      s = hts_exec(st, sql, "record creation");
    }
  }
  if (s) {
    sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
    return ht_error_prefix(s, "migrating to schema %d: ", version);
  }
  return hts_exec(st, "COMMIT", "commit migration");
}

ht_status hts_migrate(ht_store *st) {
  int current = 0;
  ht_status s = pragma_int(st->db, st->path, "PRAGMA user_version", &current);
  for (int v = current + 1; !s && v <= HTS_SCHEMA_VERSION; v++) s = migrate_one(st, v);
  return s;
}
