/* Evaluations committed in groups. A tuning of short kernels would otherwise pay a whole SQLite
 * transaction (the B-tree pages of the row, its two indexes and the session tally, written to the
 * WAL) for every evaluation. With grouping on, each evaluation is first appended, as one line, to
 * a journal file of this store and process, and the rows go into the database together, every
 * few evaluations or after a fraction of a second. The journal keeps the promise a commit per
 * evaluation made: an evaluation stored before a kill -9 is not lost. The next writable open of
 * the database (by any process) puts a dead process's journal rows in and removes the file; a
 * write lock held by the journal's owner tells a live journal from a dead one. The lock is a POSIX
 * record lock, not a flock: a child forked by the owner (a worker) does not inherit it, so a
 * killed tuner's journal is not kept alive by a worker that outlives it by a moment.
 *
 * Rows are JSON arrays holding the INSERT's parameters in order (store_eval.c builds them), so a
 * normal group commit and the recovery after a crash bind the same values the same way. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store_internal.h"

#define PENDING_MAX_AGE_S 0.5 /* a group is committed at the first put after this long */
#define JOURNAL_TAG "-pending-"

/* 0 when this process now holds the file's write lock (its owner, if any, is gone). */
static int lock_file(int fd) {
  struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
  return fcntl(fd, F_SETLK, &l);
}

static void journal_drop(ht_store *st) {
  if (st->journal_fd >= 0) close(st->journal_fd);
  st->journal_fd = -1;
  free(st->journal_path);
  st->journal_path = NULL;
}

/* The database's creation time (hetune_meta), which a journal's first line names, so that a
 * journal is never put into another database of the same name. */
static char *database_identity(ht_store *st) {
  sqlite3_stmt *q = NULL;
  char *id = NULL;
  if (sqlite3_prepare_v2(st->db, "SELECT value FROM hetune_meta WHERE key = 'created'", -1, &q, NULL) == SQLITE_OK &&
      sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0))
    id = ht_strdup((const char *)sqlite3_column_text(q, 0));
  sqlite3_finalize(q);
  return id ? id : ht_strdup("");
}

static char *journal_header(ht_store *st) {
  char *id = database_identity(st);
  json_t *h = id ? json_pack("{s:i, s:s}", "hetune journal", 1, "database", id) : NULL;
  char *text = h ? json_dumps(h, JSON_COMPACT) : NULL;
  char *line = text ? ht_strfmt("%s\n", text) : NULL;
  json_decref(h);
  free(text);
  free(id);
  return line;
}

static int write_header(ht_store *st, int fd) {
  char *line = journal_header(st);
  size_t len = line ? strlen(line) : 0;
  int ok = line && write(fd, line, len) == (ssize_t)len;
  st->journal_header_len = ok ? (off_t)len : 0;
  free(line);
  return ok ? 0 : -1;
}

/* The database file as SQLite names it, symbolic links resolved: journals lie beside the file
 * itself, as its -wal does, so that a writer finds them whichever name it opened it by. */
static const char *database_file(const ht_store *st) {
  const char *name = sqlite3_db_filename(st->db, "main");
  return name && *name ? name : st->path;
}

/* <db>-pending-<pid>-<n>: created exclusively and locked for as long as this store keeps it. */
static int journal_create(ht_store *st) {
  static int counter;
  for (int tries = 0; tries < 100; tries++) {
    int n = __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
    char *path = ht_strfmt("%s" JOURNAL_TAG "%ld-%d", database_file(st), (long)getpid(), n);
    if (!path) return -1;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0 && lock_file(fd) == 0 && write_header(st, fd) == 0) {
      st->journal_fd = fd;
      st->journal_path = path;
      return 0;
    }
    int again = fd < 0 && errno == EEXIST;
    if (fd >= 0) {
      close(fd);
      unlink(path);
    }
    free(path);
    if (!again) return -1;
  }
  return -1;
}

static ht_status write_all(ht_store *st, const char *text, size_t len) {
  while (len > 0) {
    ssize_t w = write(st->journal_fd, text, len);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      return ht_error(HT_ERR_IO, "%s: cannot write the journal of pending evaluations: %s", st->journal_path,
                      w < 0 ? strerror(errno) : "nothing written");
    text += w;
    len -= (size_t)w;
  }
  return HT_OK;
}

static void pending_clear(ht_store *st) {
  for (int i = 0; i < st->n_pending; i++) json_decref(st->pending[i]);
  st->n_pending = 0;
}

static ht_status insert_rows(ht_store *st, json_t *const *rows, int n) {
  ht_status e = hts_exec(st, "BEGIN IMMEDIATE", "begin evaluations");
  for (int i = 0; !e && i < n; i++) e = hts_insert_eval_row(st, rows[i]);
  if (!e) e = hts_exec(st, "COMMIT", "commit evaluations");
  if (e) sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
  return e;
}

ht_status hts_settle(ht_store *st) {
  if (!st || st->n_pending == 0) return HT_OK;
  ht_status e = insert_rows(st, st->pending, st->n_pending);
  if (e) return e; /* the rows stay pending, and in the journal */
  pending_clear(st);
  if (st->journal_fd >= 0 && ftruncate(st->journal_fd, st->journal_header_len) != 0) {
    /* Harmless: recovery skips rows already stored. Start a new journal instead. */
    unlink(st->journal_path);
    journal_drop(st);
  }
  return HT_OK;
}

ht_status hts_pending_put(ht_store *st, json_t *row, int *kept) {
  *kept = 0;
  if (st->max_pending <= 1) return HT_OK;
  if (st->journal_fd < 0 && journal_create(st) != 0) {
    ht_log(2, "%s: no journal for pending evaluations (%s): committing each one", st->path, strerror(errno));
    st->max_pending = 0;
    return HT_OK;
  }
  /* A group whose commit failed (disk full, locked too long) stays pending: it is tried again
   * at every store, and no row is journaled while the list is full. */
  ht_status e = st->n_pending < HTS_MAX_PENDING ? HT_OK : hts_settle(st);
  if (e) return e;
  char *line = json_dumps(row, JSON_COMPACT | JSON_REAL_PRECISION(17));
  if (!line) return ht_error(HT_ERR_NOMEM, "out of memory");
  size_t len = strlen(line);
  line[len] = '\n'; /* json_dumps' terminator: written, never read as a string */
  e = write_all(st, line, len + 1);
  free(line);
  if (e) return e;
  json_incref(row);
  st->pending[st->n_pending++] = row;
  *kept = 1;
  if (st->n_pending == 1) st->pending_since = ht_now();
  if (st->n_pending >= st->max_pending || ht_now() - st->pending_since >= PENDING_MAX_AGE_S) return hts_settle(st);
  return HT_OK;
}

ht_status ht_store_group_evals(ht_store *st, int max_evals) {
  if (!st) return ht_error(HT_ERR_INVALID, "store is NULL");
  ht_status e = hts_settle(st);
  if (e) return e;
  const char *sync = getenv("HETUNE_DB_SYNC");
  /* Power-loss safety (HETUNE_DB_SYNC=full) syncs every commit; an unsynced journal would undo it. */
  if (st->readonly || (sync && strcmp(sync, "full") == 0)) max_evals = 0;
  st->max_pending = max_evals < 0 ? 0 : max_evals > HTS_MAX_PENDING ? HTS_MAX_PENDING : max_evals;
  return HT_OK;
}

int hts_pending_has(const ht_store *st, const ht_eval_key *k) {
  for (int i = 0; i < st->n_pending; i++)
    if (hts_eval_row_matches(st->pending[i], k)) return 1;
  return 0;
}

ht_status hts_pending_close(ht_store *st) {
  ht_status e = hts_settle(st);
  if (!e && st->journal_path) unlink(st->journal_path);
  pending_clear(st);
  journal_drop(st); /* on failure the file stays, unlocked, for the next open to recover */
  return e;
}

/* ---- recovery ---- */

/* The rows of a dead process's journal, after its header line; a line that is not a row (cut
 * short by the kill) is counted and skipped. *foreign: the header names another database. */
static int read_rows(ht_store *st, FILE *f, json_t ***rows, int *n, int *bad, int *foreign) {
  char *line = NULL, *id = database_identity(st);
  size_t cap = 0;
  int cap_rows = 0, first = 1, failed = !id;
  ssize_t len;
  while (!failed && (len = getline(&line, &cap, f)) > 0) {
    json_t *row = json_loadb(line, (size_t)len, JSON_DISABLE_EOF_CHECK, NULL);
    if (first && json_is_object(row)) {
      const char *db = json_string_value(json_object_get(row, "database"));
      *foreign = !db || strcmp(db, id) != 0;
      first = 0;
      json_decref(row);
      if (*foreign) break;
      continue;
    }
    first = 0;
    if (!row || !hts_eval_row_valid(row)) {
      json_decref(row);
      ++*bad;
      continue;
    }
    if (*n == cap_rows) {
      cap_rows = cap_rows ? 2 * cap_rows : 16;
      json_t **grown = realloc(*rows, (size_t)cap_rows * sizeof *grown);
      if (!grown) {
        json_decref(row);
        failed = 1;
        break;
      }
      *rows = grown;
    }
    (*rows)[(*n)++] = row;
  }
  free(line);
  free(id);
  return failed ? -1 : 0;
}

/* The rows not stored yet, in one transaction; a row the database refuses (it names a session or
 * kernel the database does not have) is counted in *refused and left out. */
static ht_status restore_rows(ht_store *st, json_t *const *rows, int n, int *restored, int *refused) {
  ht_status e = hts_exec(st, "BEGIN IMMEDIATE", "restore evaluations");
  for (int i = 0; !e && i < n; i++) {
    int present = 0;
    e = hts_eval_row_stored(st, rows[i], &present);
    if (!e && !present) e = hts_insert_eval_row(st, rows[i]);
    if (e == HT_ERR_INVALID) {
      ++*refused;
      ht_error_clear();
      e = HT_OK;
    } else if (!e && !present) {
      ++*restored;
    }
  }
  if (!e) e = hts_exec(st, "COMMIT", "restore evaluations");
  if (e) sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
  return e;
}

static void report(ht_store *st, const char *path, int restored, int bad, int refused) {
  if (restored)
    ht_log(1, "%s: restored %d evaluation%s of a process that ended before committing them", st->path, restored,
           restored == 1 ? "" : "s");
  if (bad) /* a line cut short by the kill */
    ht_log(1, "%s: skipped %d unreadable line%s of %s, the journal of a process that ended", st->path, bad,
           bad == 1 ? "" : "s", path);
  if (refused)
    ht_log(1, "%s: skipped %d evaluation%s of %s naming a session, kernel or device the database does not hold",
           st->path, refused, refused == 1 ? "" : "s", path);
}

/* Recovery never fails the open: a journal that cannot be put in now stays for a later one. */
static ht_status recover_one(ht_store *st, const char *path) {
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return HT_OK; /* recovered by another process meanwhile */
  FILE *f = lock_file(fd) == 0 ? fdopen(fd, "r") : NULL; /* locked: its owner is alive */
  if (!f) {
    close(fd);
    return HT_OK;
  }
  json_t **rows = NULL;
  int n = 0, bad = 0, foreign = 0, restored = 0, refused = 0;
  ht_status e = read_rows(st, f, &rows, &n, &bad, &foreign) ? ht_error(HT_ERR_NOMEM, "out of memory") : HT_OK;
  if (!e && foreign)
    ht_log(1, "%s: %s is the journal of another database of this name; left as it is", st->path, path);
  else if (!e && n)
    e = restore_rows(st, rows, n, &restored, &refused);
  if (!e && !foreign) {
    report(st, path, restored, bad, refused);
    unlink(path);
  } else if (e) {
    ht_log(1, "%s: cannot restore the evaluations in %s now (%s); they stay there", st->path, path, ht_last_error());
    ht_error_clear();
  }
  for (int i = 0; i < n; i++) json_decref(rows[i]);
  free(rows);
  fclose(f); /* releases the lock */
  return HT_OK;
}

/* A reader takes no lock: it asks whether anyone holds one. Then it counts the lines. */
static ht_status note_one(ht_store *st, const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
  if (fd < 0 || fcntl(fd, F_GETLK, &l) != 0 || l.l_type != F_UNLCK) {
    if (fd >= 0) close(fd);
    return HT_OK;
  }
  FILE *f = fdopen(fd, "r");
  int lines = -1, c; /* the header is no evaluation */
  while (f && (c = getc(f)) != EOF) lines += c == '\n';
  if (f) fclose(f);
  else close(fd);
  if (lines > 0)
    ht_log(1, "%s: %d evaluation%s of a process that ended wait in %s; the next command that writes to the database "
              "(hetune tune) stores them", st->path, lines, lines == 1 ? "" : "s", path);
  return HT_OK;
}

/* 1 when name is exactly "PID-N" (what follows a journal's prefix): nothing else in the folder,
 * not even another database whose name begins like this one's journals, is taken for one. */
static int journal_pid(const char *name, long *pid) {
  char *end = NULL;
  if (!isdigit((unsigned char)name[0])) return 0;
  *pid = strtol(name, &end, 10);
  if (*end != '-' || !isdigit((unsigned char)end[1])) return 0;
  strtol(end + 1, &end, 10);
  return *end == '\0';
}

/* Calls fn for each journal of this database but this process's own (alive, and unlocked to it). */
static ht_status each_journal(ht_store *st, ht_status (*fn)(ht_store *, const char *)) {
  const char *file = database_file(st), *slash = strrchr(file, '/');
  char *dir = slash ? ht_strfmt("%.*s", slash == file ? 1 : (int)(slash - file), file) : ht_strdup(".");
  char *prefix = ht_strfmt("%s" JOURNAL_TAG, slash ? slash + 1 : file);
  DIR *d = dir && prefix ? opendir(dir) : NULL;
  ht_status e = dir && prefix ? HT_OK : ht_error(HT_ERR_NOMEM, "out of memory");
  size_t plen = prefix ? strlen(prefix) : 0;
  struct dirent *ent;
  long pid;
  while (d && !e && (ent = readdir(d)))
    if (strncmp(ent->d_name, prefix, plen) == 0 && journal_pid(ent->d_name + plen, &pid) && pid != (long)getpid()) {
      char *path = ht_strfmt("%s/%s", dir, ent->d_name);
      e = path ? fn(st, path) : ht_error(HT_ERR_NOMEM, "out of memory");
      free(path);
    }
  if (d) closedir(d);
  free(dir);
  free(prefix);
  return e;
}

ht_status hts_recover_journals(ht_store *st) { return each_journal(st, st->readonly ? note_one : recover_one); }
