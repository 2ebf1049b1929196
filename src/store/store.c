/* The store: opening (judging a file before anything is written to it), statements, errors, and the
 * upserts of devices, kernels, problems and sessions. Evaluations live in store_eval.c, the
 * schema in store_schema.c, exports in store_export.c. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store_internal.h"

static const char *const stmt_sql[HTS_NSTMT] = {
    [HTS_PUT_DEVICE] =
        "INSERT INTO devices (backend, device_id, name, vendor, driver_version, runtime_version,"
        " compiler_version, compute_units, max_threads, warp_size, clock_mhz, global_mem_bytes,"
        " local_mem_bytes, max_alloc_bytes, max_work_group_size, max_work_item_x, max_work_item_y,"
        " max_work_item_z, fingerprint, first_seen, last_seen)"
        " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?20)"
        " ON CONFLICT (fingerprint) DO UPDATE SET device_id = excluded.device_id,"
        " compute_units = excluded.compute_units, max_threads = excluded.max_threads,"
        " warp_size = excluded.warp_size, clock_mhz = excluded.clock_mhz,"
        " global_mem_bytes = excluded.global_mem_bytes, local_mem_bytes = excluded.local_mem_bytes,"
        " max_alloc_bytes = excluded.max_alloc_bytes, max_work_group_size = excluded.max_work_group_size,"
        " max_work_item_x = excluded.max_work_item_x, max_work_item_y = excluded.max_work_item_y,"
        " max_work_item_z = excluded.max_work_item_z, last_seen = excluded.last_seen RETURNING id",
    [HTS_PUT_KERNEL] =
        "INSERT INTO kernels (name, language, source_hash, spec_path, space_json, created)"
        " VALUES (?1,?2,?3,?4,?5,?6) ON CONFLICT (name, source_hash) DO UPDATE SET"
        " language = coalesce(excluded.language, language), spec_path = coalesce(excluded.spec_path, spec_path),"
        " space_json = coalesce(excluded.space_json, space_json) RETURNING id",
    /* The no-op update makes RETURNING give the id of an existing row too. */
    [HTS_PUT_PROBLEM] = "INSERT INTO problems (kernel_id, sizes) VALUES (?1, ?2)"
                        " ON CONFLICT (kernel_id, sizes) DO UPDATE SET sizes = excluded.sizes RETURNING id",
    [HTS_SESSION_BEGIN] =
        "INSERT INTO sessions (kernel_id, device_id, problem_id, strategy, seed, budget_evals,"
        " budget_seconds, options_json, host, started, status, n_evals, pid, pid_start)"
        " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,'running',0,?11,?12) RETURNING id",
    [HTS_SESSION_END] = "UPDATE sessions SET ended = ?2, status = ?3, n_evals = ?4, best_time = ?5 WHERE id = ?1",
    [HTS_PUT_EVAL] =
        "INSERT INTO evaluations (session_id, kernel_id, device_id, problem_id, config_key,"
        " config_json, status, time_s, mean_s, stddev_s, min_s, max_s, rsd, n_samples, samples_json,"
        " compile_s, compile_cached, verify_s, h2d_s, d2h_s, framework_s, wall_s, timestamp,"
        " metrics_json, message) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,"
        "?18,?19,?20,?21,?22,?23,?24,?25)",
    /* Kept current with every evaluation so a killed session still reports what it did. */
    [HTS_SESSION_TALLY] =
        "UPDATE sessions SET n_evals = n_evals + 1, best_time = CASE WHEN ?2 IS NOT NULL AND"
        " (best_time IS NULL OR ?2 < best_time) THEN ?2 ELSE best_time END WHERE id = ?1",
    [HTS_GET_EVAL] = "SELECT e.id, " HTS_EVAL_COLS " FROM evaluations e WHERE e.kernel_id = ?1 AND"
                     " e.device_id = ?2 AND e.problem_id = ?3 AND e.config_key = ?4 ORDER BY e.id DESC LIMIT 1",
    /* The OK times of a (kernel, device, problem), grouped by config and sorted within each:
     * what the median of a config's repeated evaluations is computed from. */
    [HTS_OK_TIMES] = "SELECT e.id, e.config_key, e.time_s FROM evaluations e WHERE e.kernel_id = ?1 AND"
                     " e.device_id = ?2 AND e.problem_id = ?3 AND e.status = 'ok' AND e.time_s IS NOT NULL"
                     " ORDER BY e.config_key, e.time_s, e.id",
    [HTS_OK_TIMES_CONFIG] = "SELECT e.id, e.config_key, e.time_s FROM evaluations e WHERE e.kernel_id = ?1 AND"
                            " e.device_id = ?2 AND e.problem_id = ?3 AND e.config_key = ?4 AND e.status = 'ok'"
                            " AND e.time_s IS NOT NULL ORDER BY e.time_s, e.id",
    [HTS_EVAL_BY_ID] = "SELECT e.id, " HTS_EVAL_COLS " FROM evaluations e WHERE e.id = ?1",
    [HTS_EVAL_STORED] = "SELECT 1 FROM evaluations WHERE kernel_id = ?1 AND device_id = ?2 AND problem_id = ?3"
                        " AND config_key = ?4 AND timestamp = ?5",
};

ht_status hts_fail(ht_store *st, int rc, const char *what) {
  const char *path = st->path, *msg = sqlite3_errmsg(st->db);
  switch (rc & 0xff) {
  case SQLITE_FULL: return ht_error(HT_ERR_IO, "%s: %s: disk full (%s)", path, what, msg);
  case SQLITE_READONLY: return ht_error(HT_ERR_STORE, "%s: database is read-only (%s: %s)", path, what, msg);
  case SQLITE_IOERR:
  case SQLITE_CANTOPEN:
    if (sqlite3_system_errno(st->db) == ENOSPC) return ht_error(HT_ERR_IO, "%s: %s: disk full (%s)", path, what, msg);
    return ht_error(HT_ERR_IO, "%s: %s: I/O error (%s)", path, what, msg);
  case SQLITE_NOMEM: return ht_error(HT_ERR_NOMEM, "%s: %s: out of memory", path, what);
  case SQLITE_BUSY:
  case SQLITE_LOCKED: return ht_error(HT_ERR_STORE, "%s: %s: database is locked by another process", path, what);
  case SQLITE_CORRUPT:
  case SQLITE_NOTADB: return ht_error(HT_ERR_STORE, "%s: %s: database is corrupt (%s)", path, what, msg);
  case SQLITE_CONSTRAINT:
    if (sqlite3_extended_errcode(st->db) == SQLITE_CONSTRAINT_FOREIGNKEY)
      return ht_error(HT_ERR_INVALID, "%s: %s: refers to a kernel, device, problem or session id that is not stored",
                      path, what);
    return ht_error(HT_ERR_INVALID, "%s: %s: %s", path, what, msg);
  default: return ht_error(HT_ERR_STORE, "%s: %s: %s", path, what, msg);
  }
}

ht_status hts_writable(ht_store *st, const char *what) {
  if (!st) return ht_error(HT_ERR_INVALID, "store is NULL");
  if (st->readonly) return ht_error(HT_ERR_STORE, "%s: database is read-only (cannot %s)", st->path, what);
  return hts_settle(st);
}

ht_status hts_stmt(ht_store *st, int id, sqlite3_stmt **out) {
  if (!st->stmt[id]) {
    int rc = sqlite3_prepare_v3(st->db, stmt_sql[id], -1, SQLITE_PREPARE_PERSISTENT, &st->stmt[id], NULL);
    if (rc != SQLITE_OK) return hts_fail(st, rc, "prepare statement");
  }
  sqlite3_reset(st->stmt[id]);
  sqlite3_clear_bindings(st->stmt[id]);
  *out = st->stmt[id];
  return HT_OK;
}

ht_status hts_prepare(ht_store *st, const char *sql, sqlite3_stmt **out) {
  ht_status e = hts_settle(st); /* one-off queries read what the pending rows would change */
  if (e) return e;
  int rc = sqlite3_prepare_v2(st->db, sql, -1, out, NULL);
  return rc == SQLITE_OK ? HT_OK : hts_fail(st, rc, "prepare query");
}

ht_status hts_exec(ht_store *st, const char *sql, const char *what) {
  int rc = sqlite3_exec(st->db, sql, NULL, NULL, NULL);
  return rc == SQLITE_OK ? HT_OK : hts_fail(st, rc, what);
}

ht_status hts_step_id(ht_store *st, sqlite3_stmt *s, const char *what, int64_t *id) {
  int rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) {
    if (id) *id = sqlite3_column_int64(s, 0);
    rc = sqlite3_step(s);
  }
  ht_status r = rc == SQLITE_DONE ? HT_OK : hts_fail(st, rc, what);
  sqlite3_reset(s);
  return r;
}

/* ---- opening ---- */

static char *dir_of(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return ht_strdup(".");
  if (slash == path) return ht_strdup("/");
  return ht_strfmt("%.*s", (int)(slash - path), path);
}

/* WAL needs the -wal and -shm files beside the database, so the folder must be writable too. */
static int dir_writable(const char *path) {
  char *dir = dir_of(path);
  int ok = dir && access(dir, W_OK | X_OK) == 0;
  free(dir);
  return ok;
}

/* A file: URI, so paths with '?' or '#' stay paths and immutable=1 can be asked for. */
static char *file_uri(const char *path, int immutable) {
  ht_buf b = {0};
  ht_buf_append(&b, "file:");
  for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
    if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("/-_.~", *p))
      ht_buf_appendf(&b, "%c", *p);
    else
      ht_buf_appendf(&b, "%%%02X", *p);
  }
  if (immutable) ht_buf_append(&b, "?immutable=1");
  if (b.failed) {
    ht_buf_free(&b);
    return NULL;
  }
  return b.data;
}

static double lock_timeout_s(void) {
  const char *env = getenv("HETUNE_DB_LOCK_TIMEOUT");
  return env && atof(env) > 0 ? atof(env) : 600;
}

static ht_status open_conn(const char *path, int flags, int immutable, sqlite3 **out) {
  *out = NULL;
  char *uri = file_uri(path, immutable);
  if (!uri) return ht_error(HT_ERR_NOMEM, "out of memory");
  sqlite3 *db = NULL;
  int rc = sqlite3_open_v2(uri, &db, flags | SQLITE_OPEN_URI, NULL);
  free(uri);
  if (rc != SQLITE_OK) {
    ht_status s = ht_error((rc & 0xff) == SQLITE_NOMEM ? HT_ERR_NOMEM : HT_ERR_IO, "%s: cannot open database (%s)",
                           path, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    sqlite3_close(db);
    return s;
  }
  /* The inspection's connection waits for a lock as the store's does (its busy handler, set in
   * configure, replaces this): a process creating the file holds one for a moment. */
  sqlite3_busy_timeout(db, (int)(lock_timeout_s() * 1000));
  *out = db;
  return HT_OK;
}

/* Another process holding the write lock (a second tuner, a long export) is waited for, with a
 * warning after 5 s, up to HETUNE_DB_LOCK_TIMEOUT seconds (default 600): giving up after 5 s
 * aborted a tuning run and lost the measurement in hand. */
static int wait_for_lock(void *ctx, int tries) {
  ht_store *st = ctx;
  double limit = lock_timeout_s(), now = ht_now();
  if (tries == 0) st->lock_wait_since = now;
  double waited = now - st->lock_wait_since;
  if (waited >= limit) return 0;
  if (waited >= 5 && !st->lock_warned) {
    st->lock_warned = 1;
    ht_log(1, "%s: database is locked by another process; waiting up to %.0f s (HETUNE_DB_LOCK_TIMEOUT)", st->path,
           limit);
  }
  usleep(tries < 10 ? 1000 * (useconds_t)(1 + tries) : 50000);
  return 1;
}

static int file_exists(const char *path) { return access(path, F_OK) == 0; }

/* Removes the empty -wal/-shm files that merely reading a WAL-format file created, so a rejected
 * file is left exactly as we found it. */
static void remove_side_files(const char *path, int had_wal, int had_shm) {
  const char *sfx[2] = {"-wal", "-shm"};
  const int had[2] = {had_wal, had_shm};
  for (int i = 0; i < 2; i++) {
    char *p = ht_strfmt("%s%s", path, sfx[i]);
    struct stat sb;
    if (p && !had[i] && stat(p, &sb) == 0 && (i == 1 || sb.st_size == 0)) unlink(p);
    free(p);
  }
}

/* Looks at an existing file through a read-only connection, so judging it writes nothing. A WAL
 * file in a read-only folder cannot get its -shm, and is then read as immutable. */
static ht_status inspect_file(const char *path, long long size, int readonly, int *immutable) {
  hts_inspect in = {0};
  ht_status s = hts_check_header(path, size);
  if (s) return s;
  char *wal = ht_strfmt("%s-wal", path), *shm = ht_strfmt("%s-shm", path);
  int had_wal = wal && file_exists(wal), had_shm = shm && file_exists(shm);
  free(wal);
  free(shm);
  for (*immutable = 0; *immutable < 2; ++*immutable) {
    sqlite3 *db = NULL;
    s = open_conn(path, SQLITE_OPEN_READONLY, *immutable, &db);
    if (!s) s = hts_inspect_db(db, path, size, !readonly, &in);
    sqlite3_close(db);
    if (s != HT_ERR_IO) break;
  }
  if (*immutable == 2) *immutable = 1;
  if (!s) s = hts_judge(path, &in, readonly);
  /* Not when it is locked: another process is using the file, and the side files are its own. */
  if (s && s != HT_ERR_TIMEOUT) remove_side_files(path, had_wal, had_shm);
  return s;
}

/* The start time of process pid (clock ticks after boot, /proc/PID/stat field 22), so a pid the
 * system has reused is not taken for the process that began a session; -1 when unknown. */
static long long process_start(pid_t pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
  long long start = -1;
  for (int field = 2; p && *p; p++)
    if (*p == ' ' && ++field == 22) {
      start = strtoll(p + 1, NULL, 10);
      break;
    }
  return start;
}

static int process_alive(pid_t pid, long long start) {
  if (pid <= 0) return 0;
  if (kill(pid, 0) != 0 && errno == ESRCH) return 0;
  long long now = process_start(pid);
  return start < 0 || now < 0 || now == start;
}

/* Sessions of this host still marked running whose process is gone (kill -9, a crash) are
 * marked interrupted; sessions of other hosts, or without a recorded process, are left alone. */
static ht_status mark_dead_sessions(ht_store *st) {
  char host[256] = "";
  if (gethostname(host, sizeof host - 1) != 0) return HT_OK;
  sqlite3_stmt *q = NULL;
  ht_status s = hts_prepare(st, "SELECT id, pid, pid_start FROM sessions WHERE status = 'running' AND host = ?1"
                                " AND pid IS NOT NULL", &q);
  if (s) return s;
  sqlite3_bind_text(q, 1, host, -1, SQLITE_STATIC);
  int64_t dead[64];
  int n = 0, rc;
  while (n < 64 && (rc = sqlite3_step(q)) == SQLITE_ROW)
    if (!process_alive((pid_t)sqlite3_column_int64(q, 1), sqlite3_column_int64(q, 2)))
      dead[n++] = sqlite3_column_int64(q, 0);
  sqlite3_finalize(q);
  for (int i = 0; i < n && !s; i++) {
    char sql[160];
    snprintf(sql, sizeof sql, "UPDATE sessions SET status = 'interrupted', ended = %.17g WHERE id = %lld",
             ht_wall_time(), (long long)dead[i]);
    s = hts_exec(st, sql, "mark an abandoned session interrupted");
  }
  return s;
}

/* Switching a new file to WAL needs it to itself; SQLite does not call the busy handler for it
 * when that could deadlock (two processes creating the file at once), so it is retried here. */
static ht_status enable_wal(ht_store *st) {
  for (int tries = 0;; tries++) {
    int rc = sqlite3_exec(st->db, "PRAGMA journal_mode = WAL", NULL, NULL, NULL);
    int busy = (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED;
    if (rc == SQLITE_OK) return HT_OK;
    if (!busy || !wait_for_lock(st, tries)) return hts_fail(st, rc, "enable WAL");
  }
}

static ht_status configure(ht_store *st) {
  sqlite3_busy_handler(st->db, wait_for_lock, st);
  ht_status s = hts_exec(st, "PRAGMA foreign_keys = ON", "enable foreign keys");
  /* A reader of a writable file holds a read-write connection that refuses writes: as the last
   * connection to close, it removes the -wal and -shm files a read-only connection would leave. */
  if (!s && st->readonly) s = hts_exec(st, "PRAGMA query_only = ON", "open for reading");
  if (s || st->readonly) return s ? s : hts_recover_journals(st);
  /* WAL: readers never block the tuner's writes. synchronous=NORMAL: a committed evaluation
   * survives kill -9 and crashes of the process (it is in the WAL before commit returns); only a
   * power loss may drop the last few. FULL costs an fsync (~5 ms here) per evaluation, more than
   * the rest of the framework together (BENCHMARKS.md); HETUNE_DB_SYNC=full asks for it. */
  s = enable_wal(st);
  const char *sync = getenv("HETUNE_DB_SYNC");
  int full = sync && strcmp(sync, "full") == 0;
  if (!s) s = hts_exec(st, full ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL", "set synchronous");
  if (!s) s = hts_migrate(st);
  if (!s) s = hts_recover_journals(st);
  if (!s) s = mark_dead_sessions(st);
  return s;
}

static ht_status check_new_file(const char *path) {
  char *dir = dir_of(path);
  struct stat sb;
  ht_status s = HT_OK;
  if (!dir) return ht_error(HT_ERR_NOMEM, "out of memory");
  if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
    s = ht_error(HT_ERR_IO, "%s: cannot create database: folder %s does not exist", path, dir);
  else if (access(dir, W_OK | X_OK) != 0)
    s = ht_error(HT_ERR_IO, "%s: cannot create database: folder %s is not writable", path, dir);
  free(dir);
  return s;
}

static ht_status open_impl(const char *path, int want_write, ht_store **out) {
  if (!out) return ht_error(HT_ERR_INVALID, "store: out is NULL");
  *out = NULL;
  if (!path || !*path) return ht_error(HT_ERR_INVALID, "store: empty database path");
  struct stat sb;
  int exists = stat(path, &sb) == 0;
  if (!exists && errno != ENOENT) return ht_error(HT_ERR_IO, "%s: %s", path, strerror(errno));
  if (!exists && !want_write) return ht_error(HT_ERR_IO, "%s: no such database", path);
  if (exists && !S_ISREG(sb.st_mode)) return ht_error(HT_ERR_IO, "%s: not a regular file", path);
  int readonly = !want_write || (exists && (access(path, W_OK) != 0 || !dir_writable(path)));
  int immutable = 0;
  ht_status s = exists ? inspect_file(path, (long long)sb.st_size, readonly, &immutable) : check_new_file(path);
  if (s) return s;

  ht_store *st = calloc(1, sizeof *st);
  if (!st || !(st->path = ht_strdup(path))) {
    free(st);
    return ht_error(HT_ERR_NOMEM, "out of memory");
  }
  st->readonly = readonly;
  st->journal_fd = -1;
  int writable = exists && access(path, W_OK) == 0 && dir_writable(path) && !immutable;
  int flags = !readonly ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
              : writable ? SQLITE_OPEN_READWRITE /* made query_only in configure */
                         : SQLITE_OPEN_READONLY;
  s = open_conn(path, flags, readonly && immutable, &st->db);
  if (!s) s = configure(st);
  if (s) {
    ht_store_close(st);
    return s;
  }
  *out = st;
  return HT_OK;
}

ht_status ht_store_open(const char *path, ht_store **out) { return open_impl(path, 1, out); }

ht_status ht_store_open_readonly(const char *path, ht_store **out) { return open_impl(path, 0, out); }

void ht_store_close(ht_store *st) {
  if (!st) return;
  if (hts_pending_close(st)) /* the journal stays: the next open puts its rows in */
    ht_log(1, "%s", ht_last_error());
  for (int i = 0; i < HTS_NSTMT; i++) sqlite3_finalize(st->stmt[i]);
  sqlite3_close(st->db);
  free(st->path);
  free(st);
}

const char *ht_store_path(const ht_store *st) { return st ? st->path : NULL; }

/* ---- devices, kernels, problems ---- */

static int bind_device(sqlite3_stmt *s, const ht_device_info *d) {
  int rc = hts_bind_text(s, 1, d->backend) | hts_bind_text(s, 2, d->id) | hts_bind_text(s, 3, d->name);
  rc |= hts_bind_text(s, 4, d->vendor) | hts_bind_text(s, 5, d->driver_version) | hts_bind_text(s, 6, d->runtime_version);
  rc |= hts_bind_text(s, 7, d->compiler_version) | sqlite3_bind_int(s, 8, d->compute_units);
  rc |= sqlite3_bind_int(s, 9, d->max_threads) | sqlite3_bind_int(s, 10, d->warp_size);
  rc |= sqlite3_bind_int(s, 11, d->clock_mhz) | sqlite3_bind_int64(s, 12, (sqlite3_int64)d->global_mem_bytes);
  rc |= sqlite3_bind_int64(s, 13, (sqlite3_int64)d->local_mem_bytes);
  rc |= sqlite3_bind_int64(s, 14, (sqlite3_int64)d->max_alloc_bytes);
  rc |= sqlite3_bind_int64(s, 15, (sqlite3_int64)d->max_work_group_size);
  for (int i = 0; i < 3; i++) rc |= sqlite3_bind_int64(s, 16 + i, (sqlite3_int64)d->max_work_item_sizes[i]);
  rc |= hts_bind_text(s, 19, d->fingerprint) | sqlite3_bind_double(s, 20, ht_wall_time());
  return rc;
}

ht_status ht_store_put_device(ht_store *st, const ht_device_info *info, int64_t *id) {
  ht_status r = hts_writable(st, "store a device");
  if (r) return r;
  if (!info || !info->fingerprint[0])
    return ht_error(HT_ERR_INVALID, "%s: device %s has no fingerprint", st->path, info ? info->id : "(null)");
  sqlite3_stmt *s = NULL;
  if ((r = hts_stmt(st, HTS_PUT_DEVICE, &s))) return r;
  if (bind_device(s, info) != SQLITE_OK) return hts_fail(st, SQLITE_ERROR, "bind device");
  return hts_step_id(st, s, "store device", id);
}

ht_status ht_store_put_kernel(ht_store *st, const char *name, const char *language, const char *source_hash,
                              const char *spec_path, const char *space_json, int64_t *id) {
  ht_status r = hts_writable(st, "store a kernel");
  if (r) return r;
  if (!name || !*name || !source_hash || !*source_hash)
    return ht_error(HT_ERR_INVALID, "%s: a kernel needs a name and a source hash", st->path);
  sqlite3_stmt *s = NULL;
  if ((r = hts_stmt(st, HTS_PUT_KERNEL, &s))) return r;
  int rc = hts_bind_text(s, 1, name) | hts_bind_text(s, 2, language) | hts_bind_text(s, 3, source_hash);
  rc |= hts_bind_text(s, 4, spec_path) | hts_bind_text(s, 5, space_json) | sqlite3_bind_double(s, 6, ht_wall_time());
  if (rc != SQLITE_OK) return hts_fail(st, rc, "bind kernel");
  return hts_step_id(st, s, "store kernel", id);
}

ht_status ht_store_put_problem(ht_store *st, int64_t kernel_id, const char *sizes, int64_t *id) {
  ht_status r = hts_writable(st, "store a problem");
  if (r) return r;
  if (!sizes) return ht_error(HT_ERR_INVALID, "%s: problem sizes are NULL", st->path);
  sqlite3_stmt *s = NULL;
  if ((r = hts_stmt(st, HTS_PUT_PROBLEM, &s))) return r;
  if ((sqlite3_bind_int64(s, 1, kernel_id) | hts_bind_text(s, 2, sizes)) != SQLITE_OK)
    return hts_fail(st, SQLITE_ERROR, "bind problem");
  return hts_step_id(st, s, "store problem", id);
}

/* ---- sessions ---- */

ht_status ht_store_session_begin(ht_store *st, const ht_session_info *si, int64_t *session_id) {
  ht_status r = hts_writable(st, "begin a session");
  if (r) return r;
  if (!si || !si->strategy) return ht_error(HT_ERR_INVALID, "%s: session has no strategy", st->path);
  char host[256] = "";
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  sqlite3_stmt *s = NULL;
  if ((r = hts_stmt(st, HTS_SESSION_BEGIN, &s))) return r;
  int rc = hts_bind_id(s, 1, si->kernel_id) | hts_bind_id(s, 2, si->device_id) | hts_bind_id(s, 3, si->problem_id);
  rc |= hts_bind_text(s, 4, si->strategy) | sqlite3_bind_int64(s, 5, (sqlite3_int64)si->seed);
  rc |= sqlite3_bind_int64(s, 6, si->budget_evals) | sqlite3_bind_double(s, 7, si->budget_seconds);
  rc |= hts_bind_text(s, 8, si->options_json) | hts_bind_text(s, 9, host) | sqlite3_bind_double(s, 10, ht_wall_time());
  rc |= sqlite3_bind_int64(s, 11, (sqlite3_int64)getpid()) | sqlite3_bind_int64(s, 12, process_start(getpid()));
  if (rc != SQLITE_OK) return hts_fail(st, rc, "bind session");
  return hts_step_id(st, s, "begin session", session_id);
}

ht_status ht_store_session_end(ht_store *st, int64_t session_id, const char *status, int64_t n_evals,
                               double best_time_s) {
  ht_status r = hts_writable(st, "end a session");
  if (r) return r;
  if (!status || (strcmp(status, "finished") && strcmp(status, "interrupted") && strcmp(status, "failed")))
    return ht_error(HT_ERR_INVALID, "%s: session status '%s' is not finished, interrupted or failed", st->path,
                    status ? status : "(null)");
  sqlite3_stmt *s = NULL;
  if ((r = hts_stmt(st, HTS_SESSION_END, &s))) return r;
  int rc = sqlite3_bind_int64(s, 1, session_id) | sqlite3_bind_double(s, 2, ht_wall_time());
  rc |= hts_bind_text(s, 3, status) | sqlite3_bind_int64(s, 4, n_evals);
  /* NaN binds as NULL: "no best time". */
  rc |= sqlite3_bind_double(s, 5, best_time_s);
  if (rc != SQLITE_OK) return hts_fail(st, rc, "bind session");
  if ((r = hts_step_id(st, s, "end session", NULL))) return r;
  if (sqlite3_changes(st->db) == 0)
    return ht_error(HT_ERR_NOTFOUND, "%s: no session %lld", st->path, (long long)session_id);
  return HT_OK;
}
