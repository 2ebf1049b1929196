/* The store on damaged files and under contention: a file missing a table or corrupt (also past
 * 64 MiB) is refused before anything is written to it; a reader leaves no -wal or -shm behind; a
 * writer waits for another process's lock instead of failing after 5 s. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "hetune/hetune.h"

static char dir[64];

static const char *path_in(const char *name) {
  static char p[4][256];
  static int k;
  k = (k + 1) % 4;
  snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
  return p[k];
}

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/ht_store_damage_XXXXXX");
  return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  return system(cmd) == 0 ? 0 : -1;
}

static void exec_sql(const char *db, const char *sql) {
  sqlite3 *h;
  assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
  char *err = NULL;
  if (sqlite3_exec(h, sql, NULL, NULL, &err) != SQLITE_OK) fail_msg("%s: %s", sql, err);
  sqlite3_close(h);
}

/* A fresh hetune database with one device, kernel, problem and session. */
static void make_db(const char *db) {
  ht_store *st;
  assert_int_equal(ht_store_open(db, &st), HT_OK);
  ht_device_info d;
  memset(&d, 0, sizeof d);
  snprintf(d.backend, sizeof d.backend, "c");
  snprintf(d.id, sizeof d.id, "c:0");
  snprintf(d.name, sizeof d.name, "cpu");
  snprintf(d.fingerprint, sizeof d.fingerprint, "fp-damage");
  int64_t dev, ker, prob, sess;
  assert_int_equal(ht_store_put_device(st, &d, &dev), HT_OK);
  assert_int_equal(ht_store_put_kernel(st, "k", "c", "0123456789abcdef", "k.json", "{}", &ker), HT_OK);
  assert_int_equal(ht_store_put_problem(st, ker, "N=1", &prob), HT_OK);
  ht_session_info si = {ker, dev, prob, "random", 1, 1, 0, "{}"};
  assert_int_equal(ht_store_session_begin(st, &si, &sess), HT_OK);
  assert_int_equal(ht_store_session_end(st, sess, "finished", 0, 0.001), HT_OK);
  ht_store_close(st);
}

static uint64_t file_hash(const char *path, off_t *size) {
  char *data = NULL;
  size_t len = 0;
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  struct stat sb;
  assert_int_equal(fstat(fileno(f), &sb), 0);
  data = malloc((size_t)sb.st_size + 1);
  len = fread(data, 1, (size_t)sb.st_size, f);
  fclose(f);
  uint64_t h = ht_hash64(data, len, 0);
  free(data);
  *size = sb.st_size;
  return h;
}

static int exists(const char *path) { return access(path, F_OK) == 0; }

/* A dropped table: refused, naming the table; the file is left byte for byte as it was. */
static void test_dropped_table(void **state) {
  (void)state;
  const char *db = path_in("dropped.db");
  make_db(db);
  exec_sql(db, "PRAGMA journal_mode = DELETE; DROP TABLE evaluations;");
  off_t size0, size1;
  uint64_t h0 = file_hash(db, &size0);
  ht_store *st = NULL;
  assert_int_equal(ht_store_open(db, &st), HT_ERR_STORE);
  assert_null(st);
  if (!strstr(ht_last_error(), "table 'evaluations'") || !strstr(ht_last_error(), db))
    fail_msg("error: %s", ht_last_error());
  assert_int_equal(ht_store_open_readonly(db, &st), HT_ERR_STORE);
  assert_int_equal(file_hash(db, &size1), h0);
  assert_int_equal(size1, size0);
  assert_false(exists(path_in("dropped.db-wal")));
}

/* A corrupt page in a file over 64 MiB: opening for writing checks it whole and refuses it. */
static void test_corrupt_large_file(void **state) {
  (void)state;
  const char *db = path_in("large.db");
  make_db(db);
  /* 70 MiB of model blobs, then a damaged page in the middle of the file */
  exec_sql(db, "PRAGMA journal_mode = DELETE; WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
               "WHERE i < 70) INSERT INTO models (name, kind, kernel_name, provenance_json, blob, created) "
               "SELECT 'm' || i, 'linear', 'k', '{}', zeroblob(1048576), 0 FROM n;"
               "CREATE TABLE filler (x); INSERT INTO filler VALUES (1);");
  off_t size0, size1;
  file_hash(db, &size0);
  assert_true(size0 > (64 << 20));
  FILE *f = fopen(db, "r+b");
  assert_non_null(f);
  /* the btree page of the last table created sits at the end of the file: damage its header */
  assert_int_equal(fseeko(f, size0 - 4096, SEEK_SET), 0);
  static const char junk[64] = "this is not a b-tree page header, nor any cell of one, at all";
  assert_int_equal(fwrite(junk, 1, sizeof junk, f), sizeof junk);
  assert_int_equal(fclose(f), 0);
  uint64_t h0 = file_hash(db, &size0);
  ht_store *st = NULL;
  assert_int_equal(ht_store_open(db, &st), HT_ERR_STORE);
  if (!strstr(ht_last_error(), "corrupt")) fail_msg("error: %s", ht_last_error());
  assert_int_equal(file_hash(db, &size1), h0);
}

static int count_session(const ht_session_record *r, void *ctx) {
  (void)r;
  ++*(int *)ctx;
  return 0;
}

/* Reading a writable WAL database leaves no -wal or -shm file behind. */
static void test_reader_leaves_no_side_files(void **state) {
  (void)state;
  const char *db = path_in("clean.db");
  make_db(db);
  assert_false(exists(path_in("clean.db-wal")));
  ht_store *st = NULL;
  assert_int_equal(ht_store_open_readonly(db, &st), HT_OK);
  int n = 0;
  assert_int_equal(ht_store_each_session(st, count_session, &n), HT_OK);
  assert_int_equal(n, 1);
  int64_t id;
  assert_int_equal(ht_store_put_problem(st, 1, "N=2", &id), HT_ERR_STORE); /* a reader cannot write */
  ht_store_close(st);
  assert_false(exists(path_in("clean.db-wal")));
  assert_false(exists(path_in("clean.db-shm")));
}

/* Another process holds the write lock for 2 s: a writer waits for it (default: up to 600 s), or
 * with HETUNE_DB_LOCK_TIMEOUT=0.3 fails with "locked", the file intact. */
static void hold_lock(const char *db, int seconds, int ready_fd) {
  sqlite3 *h;
  if (sqlite3_open(db, &h) != SQLITE_OK || sqlite3_exec(h, "BEGIN EXCLUSIVE", NULL, NULL, NULL) != SQLITE_OK) _exit(1);
  if (write(ready_fd, "x", 1) != 1) _exit(1);
  sleep((unsigned)seconds);
  sqlite3_exec(h, "COMMIT", NULL, NULL, NULL);
  sqlite3_close(h);
  _exit(0);
}

static pid_t locker(const char *db, int seconds) {
  int p[2];
  assert_int_equal(pipe(p), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) hold_lock(db, seconds, p[1]);
  char c;
  assert_int_equal(read(p[0], &c, 1), 1);
  close(p[0]);
  close(p[1]);
  return pid;
}

static void test_waits_for_lock(void **state) {
  (void)state;
  const char *db = path_in("locked.db");
  make_db(db);
  ht_store *st = NULL;
  assert_int_equal(ht_store_open(db, &st), HT_OK);
  pid_t pid = locker(db, 2);
  int64_t id;
  assert_int_equal(ht_store_put_problem(st, 1, "N=3", &id), HT_OK); /* waited ~2 s */
  int status;
  waitpid(pid, &status, 0);
  setenv("HETUNE_DB_LOCK_TIMEOUT", "0.3", 1);
  pid = locker(db, 2);
  ht_status s = ht_store_put_problem(st, 1, "N=4", &id);
  unsetenv("HETUNE_DB_LOCK_TIMEOUT");
  waitpid(pid, &status, 0);
  assert_int_equal(s, HT_ERR_STORE);
  assert_non_null(strstr(ht_last_error(), "locked"));
  assert_int_equal(ht_store_put_problem(st, 1, "N=4", &id), HT_OK);
  ht_store_close(st);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_dropped_table),
    cmocka_unit_test(test_corrupt_large_file),
    cmocka_unit_test(test_reader_leaves_no_side_files),
    cmocka_unit_test(test_waits_for_lock),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
