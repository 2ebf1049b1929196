/* The store: round trips, persistence, upserts, refusing files that are not ours (untouched),
 * read-only access, crash safety under kill -9, and the CSV and T4 exports. */
#define _GNU_SOURCE /* nftw, open_memstream */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hetune/store.h"
#include "store/store_internal.h" /* the disk-full test caps the file through st->db */

/* ---- fixtures ---- */

typedef struct fix {
  char dir[64];
  char db[128];
} fix;

static int setup(void **state) {
  fix *f = calloc(1, sizeof *f);
  snprintf(f->dir, sizeof f->dir, "/tmp/ht_store_XXXXXX");
  if (!f || !mkdtemp(f->dir)) return -1;
  snprintf(f->db, sizeof f->db, "%s/hetune.db", f->dir);
  *state = f;
  return 0;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(p);
}

static int teardown(void **state) {
  fix *f = *state;
  nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  free(f);
  return 0;
}

static char *slurp(const char *path, size_t *len) {
  char *data = NULL;
  assert_int_equal(ht_read_file(path, &data, len), HT_OK);
  return data;
}

static void write_bytes(const char *path, const void *data, size_t len) {
  FILE *fp = fopen(path, "wb");
  assert_non_null(fp);
  assert_int_equal(fwrite(data, 1, len, fp), len);
  fclose(fp);
}

static void make_device(ht_device_info *d, int n) {
  memset(d, 0, sizeof *d);
  snprintf(d->backend, sizeof d->backend, "c");
  snprintf(d->id, sizeof d->id, "c:%d", n);
  snprintf(d->name, sizeof d->name, "Test CPU %d", n);
  snprintf(d->vendor, sizeof d->vendor, "Acme");
  snprintf(d->compiler_version, sizeof d->compiler_version, "cc 12.2");
  d->compute_units = 8;
  d->warp_size = 1;
  d->global_mem_bytes = 1ull << 34;
  d->max_work_item_sizes[0] = 1024;
  snprintf(d->fingerprint, sizeof d->fingerprint, "%016x", 0xabc0 + n);
}

typedef struct ids {
  int64_t kernel, device, problem, session;
} ids;

static ids populate(ht_store *st) {
  ids x = {0};
  ht_device_info d;
  make_device(&d, 0);
  assert_int_equal(ht_store_put_device(st, &d, &x.device), HT_OK);
  assert_int_equal(ht_store_put_kernel(st, "vadd", "c", "0123456789abcdef", "vadd.json", "{\"TX\":[8,16]}", &x.kernel),
                   HT_OK);
  assert_int_equal(ht_store_put_problem(st, x.kernel, "N=1024", &x.problem), HT_OK);
  ht_session_info si = {x.kernel, x.device, x.problem, "random", 42, 10, 0, "{\"rsd\":0.1}"};
  assert_int_equal(ht_store_session_begin(st, &si, &x.session), HT_OK);
  assert_true(x.kernel > 0 && x.device > 0 && x.problem > 0 && x.session > 0);
  return x;
}

/* Samples chosen so that anything short of 17 significant digits would change them. */
static void make_result(ht_result *r, double scale) {
  ht_result_init(r);
  r->status = HT_EVAL_OK;
  r->n_samples = 6;
  const double s[] = {1.0 / 3.0, M_PI * 1e-7, 0.1, 2.5e-300, 123456789.123456789, 1e-5};
  for (int i = 0; i < 6; i++) r->samples[i] = s[i] * scale;
  ht_result_summarise(r);
  r->compile_s = 0.25;
  r->verify_s = 0.01;
  r->h2d_s = 1e-4;
  r->d2h_s = 2e-4;
  r->framework_s = 0.003;
  r->wall_s = 0.5;
  r->timestamp = 1714567890.125;
  r->n_metrics = 2;
  snprintf(r->metrics[0].name, sizeof r->metrics[0].name, "gflops");
  r->metrics[0].value = 12.5 * scale;
  snprintf(r->metrics[1].name, sizeof r->metrics[1].name, "bandwidth_gbs");
  r->metrics[1].value = 0.1 / scale;
}

static void assert_same_double(double a, double b) {
  if (isnan(a) && isnan(b)) return;
  assert_memory_equal(&a, &b, sizeof a);
}

static void assert_same_result(const ht_result *a, const ht_result *b) {
  assert_int_equal(a->status, b->status);
  assert_int_equal(a->n_samples, b->n_samples);
  for (int i = 0; i < a->n_samples; i++) assert_same_double(a->samples[i], b->samples[i]);
  const double x[] = {a->time_s, a->mean_s, a->stddev_s, a->min_s, a->max_s, a->rsd, a->compile_s, a->verify_s,
                      a->h2d_s, a->d2h_s, a->framework_s, a->wall_s, a->timestamp};
  const double y[] = {b->time_s, b->mean_s, b->stddev_s, b->min_s, b->max_s, b->rsd, b->compile_s, b->verify_s,
                      b->h2d_s, b->d2h_s, b->framework_s, b->wall_s, b->timestamp};
  for (int i = 0; i < 13; i++) assert_same_double(x[i], y[i]);
  assert_int_equal(a->compile_cached, b->compile_cached);
  assert_int_equal(a->n_metrics, b->n_metrics);
  for (int i = 0; i < a->n_metrics; i++) {
    assert_string_equal(a->metrics[i].name, b->metrics[i].name);
    assert_same_double(a->metrics[i].value, b->metrics[i].value);
  }
  assert_string_equal(a->message, b->message);
}

static ht_eval_key key_of(ids x, const char *ck, const char *cj) {
  ht_eval_key k = {x.kernel, x.device, x.problem, ck, cj};
  return k;
}

/* Three evaluations: TX=8 (slow, then re-measured faster), TX=16 fastest but failed to compile. */
static void put_three(ht_store *st, ids x, ht_result rs[3]) {
  ht_eval_key k8 = key_of(x, "TX=8", "{\"TX\":8}"), k16 = key_of(x, "TX=16", "{\"TX\":16}");
  make_result(&rs[0], 2.0);
  make_result(&rs[1], 1.0);
  make_result(&rs[2], 0.5);
  rs[1].samples[2] = NAN; /* a lost sample is stored as null and comes back as NaN */
  rs[2].status = HT_EVAL_COMPILE;
  rs[2].time_s = NAN;
  rs[2].n_samples = 0;
  rs[2].n_metrics = 0;
  snprintf(rs[2].message, sizeof rs[2].message, "error: \"TX\" too big, line 3\nsecond line");
  int64_t id[3];
  assert_int_equal(ht_store_put_eval(st, x.session, &k8, &rs[0], &id[0]), HT_OK);
  assert_int_equal(ht_store_put_eval(st, x.session, &k8, &rs[1], &id[1]), HT_OK);
  assert_int_equal(ht_store_put_eval(st, x.session, &k16, &rs[2], &id[2]), HT_OK);
  assert_true(id[0] < id[1] && id[1] < id[2]);
}

/* ---- round trips ---- */

typedef struct visit {
  int n;
  int64_t last_id;
  ht_result r[8];
  char keys[8][32];
} visit;

static int count_eval(const ht_eval_record *rec, void *p) {
  visit *v = p;
  assert_true(rec->eval_id > v->last_id); /* oldest first */
  v->last_id = rec->eval_id;
  assert_string_equal(rec->kernel_name, "vadd");
  assert_string_equal(rec->device_id, "c:0");
  assert_string_equal(rec->problem, "N=1024");
  assert_string_equal(rec->source_hash, "0123456789abcdef");
  if (v->n < 8) {
    v->r[v->n] = rec->result;
    snprintf(v->keys[v->n], sizeof v->keys[0], "%s", rec->config_key);
  }
  v->n++;
  return 0;
}

static void check_queries(ht_store *st, ids x, const ht_result rs[3]) {
  ht_eval_key k8 = key_of(x, "TX=8", NULL), k16 = key_of(x, "TX=16", NULL), k32 = key_of(x, "TX=32", NULL);
  ht_result got;
  int found = -1;
  /* TX=8 was measured twice: the later of the two middle rows, timed as their median */
  ht_result tx8 = rs[1];
  tx8.time_s = 0.5 * (rs[0].time_s + rs[1].time_s);
  assert_int_equal(ht_store_get_eval(st, &k8, &got, &found), HT_OK);
  assert_int_equal(found, 1);
  assert_same_result(&got, &tx8);
  assert_int_equal(ht_store_get_eval(st, &k16, &got, &found), HT_OK);
  assert_int_equal(found, 1);
  assert_same_result(&got, &rs[2]);
  assert_int_equal(ht_store_get_eval(st, &k32, &got, &found), HT_OK);
  assert_int_equal(found, 0);

  char key[32];
  assert_int_equal(ht_store_best(st, x.kernel, x.device, x.problem, &got, key, sizeof key, &found), HT_OK);
  assert_int_equal(found, 1);
  assert_string_equal(key, "TX=8"); /* TX=16 is faster on paper but did not compile */
  assert_same_result(&got, &tx8);
  assert_int_equal(ht_store_best(st, x.kernel, x.device, x.problem + 99, &got, key, sizeof key, &found), HT_OK);
  assert_int_equal(found, 0);

  visit v = {0};
  assert_int_equal(ht_store_each_eval(st, NULL, count_eval, &v), HT_OK);
  assert_int_equal(v.n, 3);
  for (int i = 0; i < 3; i++) assert_same_result(&v.r[i], &rs[i]);
  ht_eval_filter only_ok = {.kernel_name = "vadd", .device_id = "c:0", .problem = "N=1024", .only_ok = 1};
  memset(&v, 0, sizeof v);
  assert_int_equal(ht_store_each_eval(st, &only_ok, count_eval, &v), HT_OK);
  assert_int_equal(v.n, 2);
  ht_eval_filter other = {.kernel_name = "gemm"};
  memset(&v, 0, sizeof v);
  assert_int_equal(ht_store_each_eval(st, &other, count_eval, &v), HT_OK);
  assert_int_equal(v.n, 0);
}

static int stop_first(const ht_eval_record *rec, void *p) {
  (void)rec;
  ++*(int *)p;
  return 1;
}

typedef struct sess_visit {
  int n;
  ht_session_record last;
  char status[32], strategy[32];
} sess_visit;

static int count_session(const ht_session_record *r, void *p) {
  sess_visit *v = p;
  v->n++;
  v->last = *r;
  snprintf(v->status, sizeof v->status, "%s", r->status);
  snprintf(v->strategy, sizeof v->strategy, "%s", r->strategy);
  assert_string_equal(r->kernel_name, "vadd");
  assert_string_equal(r->device_id, "c:0");
  assert_string_equal(r->problem, "N=1024");
  return 0;
}

static void test_roundtrip(void **state) {
  fix *f = *state;
  ht_store *st = NULL;
  assert_int_equal(ht_store_open(f->db, &st), HT_OK);
  assert_string_equal(ht_store_path(st), f->db);
  ids x = populate(st);
  ht_result rs[3];
  put_three(st, x, rs);
  check_queries(st, x, rs);
  int n = 0;
  assert_int_equal(ht_store_each_eval(st, NULL, stop_first, &n), HT_OK);
  assert_int_equal(n, 1);

  sess_visit sv = {0};
  assert_int_equal(ht_store_each_session(st, count_session, &sv), HT_OK);
  assert_int_equal(sv.n, 1);
  assert_string_equal(sv.status, "running");
  assert_int_equal(sv.last.n_evals, 3); /* kept current while running */
  assert_same_double(sv.last.best_time_s, rs[1].time_s);
  assert_true(isnan(sv.last.ended));
  assert_int_equal(ht_store_session_end(st, x.session, "finished", 3, rs[1].time_s), HT_OK);
  assert_int_equal(ht_store_session_end(st, x.session + 7, "finished", 3, 1.0), HT_ERR_NOTFOUND);
  assert_int_equal(ht_store_session_end(st, x.session, "bogus", 3, 1.0), HT_ERR_INVALID);
  ht_store_close(st);

  /* Everything persists across a reopen. */
  assert_int_equal(ht_store_open(f->db, &st), HT_OK);
  check_queries(st, x, rs);
  memset(&sv, 0, sizeof sv);
  assert_int_equal(ht_store_each_session(st, count_session, &sv), HT_OK);
  assert_int_equal(sv.n, 1);
  assert_string_equal(sv.status, "finished");
  assert_string_equal(sv.strategy, "random");
  assert_int_equal(sv.last.seed, 42);
  assert_int_equal(sv.last.budget_evals, 10);
  assert_false(isnan(sv.last.ended));
  ht_store_close(st);
}

/* Repeats are judged by their median: a config with one lucky evaluation among slow ones loses to
 * a steadily faster one, and a failure after OK evaluations does not hide them. */
static void test_median_of_repeats(void **state) {
  fix *f = *state;
  ht_store *st = NULL;
  assert_int_equal(ht_store_open(f->db, &st), HT_OK);
  ids x = populate(st);
  ht_eval_key ka = key_of(x, "TX=8", "{\"TX\":8}"), kb = key_of(x, "TX=16", "{\"TX\":16}");
  ht_result a[4], b;
  const double scale_a[] = {10.0, 1.0, 9.0};
  for (int i = 0; i < 3; i++) make_result(&a[i], scale_a[i]);
  make_result(&a[3], 1.0);
  a[3].status = HT_EVAL_TIMEOUT;
  a[3].time_s = NAN;
  make_result(&b, 5.0);
  for (int i = 0; i < 4; i++) assert_int_equal(ht_store_put_eval(st, x.session, &ka, &a[i], NULL), HT_OK);
  assert_int_equal(ht_store_put_eval(st, x.session, &kb, &b, NULL), HT_OK);

  ht_result got;
  int found = 0;
  assert_int_equal(ht_store_get_eval(st, &ka, &got, &found), HT_OK);
  assert_int_equal(found, 1);
  assert_same_result(&got, &a[2]); /* the middle of 1, 9, 10 (x scale); the timeout is not counted */
  char key[32];
  assert_int_equal(ht_store_best(st, x.kernel, x.device, x.problem, &got, key, sizeof key, &found), HT_OK);
  assert_int_equal(found, 1);
  assert_string_equal(key, "TX=16"); /* median 5 beats TX=8's median 9, though TX=8 once took 1 */
  assert_same_result(&got, &b);
  ht_store_close(st);
}

static void test_upsert_idempotent(void **state) {
  fix *f = *state;
  ht_store *st = NULL;
  assert_int_equal(ht_store_open(f->db, &st), HT_OK);
  ids a = populate(st), b = populate(st);
  assert_int_equal(a.kernel, b.kernel);
  assert_int_equal(a.device, b.device);
  assert_int_equal(a.problem, b.problem);
  assert_int_not_equal(a.session, b.session); /* sessions are events, not entities */
  ht_device_info d;
  make_device(&d, 1);
  int64_t other;
  assert_int_equal(ht_store_put_device(st, &d, &other), HT_OK);
  assert_int_not_equal(other, a.device);
  int64_t k2;
  assert_int_equal(ht_store_put_kernel(st, "vadd", "c", "fedcba9876543210", NULL, NULL, &k2), HT_OK);
  assert_int_not_equal(k2, a.kernel); /* a changed source is a different kernel */
  d.fingerprint[0] = '\0';
  assert_int_equal(ht_store_put_device(st, &d, &other), HT_ERR_INVALID);
  ht_store_close(st);
  /* ...and across processes' reopen. */
  assert_int_equal(ht_store_open(f->db, &st), HT_OK);
  ids c = populate(st);
  assert_int_equal(a.kernel, c.kernel);
  assert_int_equal(a.device, c.device);
  assert_int_equal(a.problem, c.problem);
  ht_store_close(st);
}

static void test_bad_ids(void **state) {
  fix *f = *state;
  ht_store *st = NULL;
  assert_int_equal(ht_store_open(f->db, &st), HT_OK);
  ids x = populate(st);
  ht_result r;
  make_result(&r, 1);
  ht_eval_key k = key_of(x, "TX=8", "{\"TX\":8}");
  k.kernel_id = 999;
  assert_int_equal(ht_store_put_eval(st, x.session, &k, &r, NULL), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), f->db));
  assert_non_null(strstr(ht_last_error(), "not stored"));
  int64_t pid;
  assert_int_equal(ht_store_put_problem(st, 999, "N=1", &pid), HT_ERR_INVALID);
  /* The failed write left nothing behind, and the store still works. */
  k.kernel_id = x.kernel;
  assert_int_equal(ht_store_put_eval(st, 0, &k, &r, NULL), HT_OK); /* session 0 = none */
  visit v = {0};
  assert_int_equal(ht_store_each_eval(st, NULL, count_eval, &v), HT_OK);
  assert_int_equal(v.n, 1);
  ht_store_close(st);
}

/* ---- files that are not ours ---- */

static void assert_refused(const char *path, const char *why) {
  size_t n0, n1;
  char *before = slurp(path, &n0);
  ht_store *st = (ht_store *)1;
  assert_int_equal(ht_store_open(path, &st), HT_ERR_STORE);
  assert_null(st);
  assert_non_null(strstr(ht_last_error(), path));
  if (why && !strstr(ht_last_error(), why)) fail_msg("message '%s' lacks '%s'", ht_last_error(), why);
  assert_int_equal(ht_store_open_readonly(path, &st), HT_ERR_STORE);
  char *after = slurp(path, &n1);
  assert_int_equal(n0, n1);
  assert_memory_equal(before, after, n0);
  free(before);
  free(after);
  char side[256];
  snprintf(side, sizeof side, "%s-wal", path);
  assert_int_not_equal(access(side, F_OK), 0);
  snprintf(side, sizeof side, "%s-shm", path);
  assert_int_not_equal(access(side, F_OK), 0);
}

static void test_not_sqlite(void **state) {
  fix *f = *state;
  unsigned char junk[4096];
  ht_rng rng;
  ht_rng_seed(&rng, 7);
  for (size_t i = 0; i < sizeof junk; i++) junk[i] = (unsigned char)ht_rng_next(&rng);
  write_bytes(f->db, junk, sizeof junk);
  assert_refused(f->db, "not a SQLite database");
  write_bytes(f->db, "hello\n", 6);
  assert_refused(f->db, NULL);
}

/* A real database with enough rows to span many pages. */
static void make_big_db(const char *path) {
  ht_store *st = NULL;
  assert_int_equal(ht_store_open(path, &st), HT_OK);
  ids x = populate(st);
  ht_result r;
  make_result(&r, 1);
  r.n_samples = 100;
  for (int i = 0; i < 200; i++) {
    char ck[32], cj[32];
    snprintf(ck, sizeof ck, "TX=%d", i);
    snprintf(cj, sizeof cj, "{\"TX\":%d}", i);
    ht_eval_key k = key_of(x, ck, cj);
    assert_int_equal(ht_store_put_eval(st, x.session, &k, &r, NULL), HT_OK);
  }
  ht_store_close(st);
}

static void test_corrupt(void **state) {
  fix *f = *state;
  char good[160];
  snprintf(good, sizeof good, "%s/good.db", f->dir);
  make_big_db(good);
  size_t n;
  char *data = slurp(good, &n);
  assert_true(n > 32768);
  /* A truncated copy, as from an interrupted scp. */
  write_bytes(f->db, data, n / 2);
  assert_refused(f->db, "truncated");
  /* A copy with garbage over its middle pages. */
  for (size_t i = n / 3; i < n / 3 + 8192; i++) data[i] = (char)(i * 131);
  write_bytes(f->db, data, n);
  assert_refused(f->db, "corrupt");
  free(data);
  /* The original is still fine. */
  ht_store *st = NULL;
  assert_int_equal(ht_store_open(good, &st), HT_OK);
  ht_store_close(st);
}

static void sql_exec(const char *path, const char *sql) {
  sqlite3 *db = NULL;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  char *err = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) fail_msg("%s: %s", sql, err);
  sqlite3_close(db);
}

static void test_foreign(void **state) {
  fix *f = *state;
  sql_exec(f->db, "CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO photos VALUES (1, 'cat');");
  assert_refused(f->db, "not a hetune database");
  remove(f->db);
  /* Someone else's application id, even without tables. */
  sql_exec(f->db, "PRAGMA application_id = 1234; CREATE TABLE t(x); DROP TABLE t;");
  assert_refused(f->db, "not a hetune database");
}

static void test_newer_schema(void **state) {
  fix *f = *state;
  ht_store *st = NULL;
  assert_int_equal(ht_store_open(f->db, &st), HT_OK);
  populate(st);
  ht_store_close(st);
  sql_exec(f->db, "PRAGMA user_version = 99");
  assert_refused(f->db, "newer");
}

static void test_empty_file(void **state) {
  fix *f = *state;
  write_bytes(f->db, "", 0);
  ht_store *st = NULL;
  assert_int_equal(ht_store_open_readonly(f->db, &st), HT_ERR_STORE);
  assert_int_equal(ht_store_open(f->db, &st), HT_OK); /* an empty file becomes a new store */
  populate(st);
  ht_store_close(st);
}

/* ---- read-only ---- */

/* Runs in a child without write permission; plain checks and an exit code, not cmocka asserts. */
static int readonly_child(const char *path, ids x, const ht_result *want) {
  ht_store *st = NULL;
  if (access(path, W_OK) == 0) return 10;
  if (ht_store_open(path, &st) != HT_OK) {
    fprintf(stderr, "readonly open: %s\n", ht_last_error());
    return 1;
  }
  ht_eval_key k = key_of(x, "TX=8", "{}");
  ht_result got;
  int found = 0, rc = 0;
  if (ht_store_get_eval(st, &k, &got, &found) != HT_OK || !found) rc = 2;
  else if (memcmp(got.samples, want->samples, sizeof got.samples[0] * 2) != 0) rc = 3;
  else if (ht_store_put_eval(st, x.session, &k, want, NULL) != HT_ERR_STORE) rc = 4;
  else if (!strstr(ht_last_error(), "database is read-only")) rc = 5;
  ht_store_close(st);
  return rc;
}

/* Permission bits bind only non-root users, so as root the check runs in a child that drops to
 * nobody: for it, both the file and the folder are read-only. */
static void run_readonly_child(fix *f, ids x, const ht_result rs[3]) {
  int root = geteuid() == 0;
  chmod(f->db, root ? 0644 : 0444);
  chmod(f->dir, root ? 0755 : 0555);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    if (root && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(10);
    _exit(readonly_child(f->db, x, &rs[1]));
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  chmod(f->dir, 0700);
  chmod(f->db, 0644);
  assert_true(WIFEXITED(status));
  if (WEXITSTATUS(status) == 10) skip(); /* no unprivileged user to become */
  assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_readonly(void **state) {
  fix *f = *state;
  ht_store *st = NULL;
  assert_int_equal(ht_store_open_readonly(f->db, &st), HT_ERR_IO); /* never creates */
  assert_int_not_equal(access(f->db, F_OK), 0);
  assert_int_equal(ht_store_open(f->db, &st), HT_OK);
  ids x = populate(st);
  ht_result rs[3];
  put_three(st, x, rs);
  ht_store_close(st);

  assert_int_equal(ht_store_open_readonly(f->db, &st), HT_OK);
  check_queries(st, x, rs);
  ht_eval_key k = key_of(x, "TX=4", "{\"TX\":4}");
  assert_int_equal(ht_store_put_eval(st, x.session, &k, &rs[0], NULL), HT_ERR_STORE);
  assert_non_null(strstr(ht_last_error(), f->db));
  assert_non_null(strstr(ht_last_error(), "database is read-only"));
  ht_device_info d;
  make_device(&d, 3);
  int64_t id;
  assert_int_equal(ht_store_put_device(st, &d, &id), HT_ERR_STORE);
  assert_int_equal(ht_store_session_end(st, x.session, "finished", 1, 1.0), HT_ERR_STORE);
  ht_store_close(st);

  /* With the -shm left by the read-only opens above, then without any (a clean close removes
   * them), which forces SQLite's immutable mode. */
  run_readonly_child(f, x, rs);
  assert_int_equal(ht_store_open(f->db, &st), HT_OK);
  ht_store_close(st);
  char shm[160];
  snprintf(shm, sizeof shm, "%s-shm", f->db);
  assert_int_not_equal(access(shm, F_OK), 0);
  run_readonly_child(f, x, rs);
}

static void test_two_handles(void **state) {
  fix *f = *state;
  ht_store *a = NULL, *b = NULL;
  assert_int_equal(ht_store_open(f->db, &a), HT_OK);
  assert_int_equal(ht_store_open(f->db, &b), HT_OK);
  ids x = populate(a);
  ht_result r;
  make_result(&r, 1);
  ht_eval_key k = key_of(x, "TX=8", "{\"TX\":8}");
  assert_int_equal(ht_store_put_eval(a, x.session, &k, &r, NULL), HT_OK);
  ht_result got;
  int found = 0;
  assert_int_equal(ht_store_get_eval(b, &k, &got, &found), HT_OK); /* WAL: the other handle sees it */
  assert_int_equal(found, 1);
  assert_same_result(&got, &r);
  ht_store_close(a);
  ht_store_close(b);
}

/* A full disk, simulated by capping the database at its current page count. */
static void test_disk_full(void **state) {
  fix *f = *state;
  ht_store *st = NULL;
  assert_int_equal(ht_store_open(f->db, &st), HT_OK);
  ids x = populate(st);
  assert_int_equal(sqlite3_exec(st->db, "PRAGMA max_page_count = 1", NULL, NULL, NULL), SQLITE_OK);
  ht_result r;
  make_result(&r, 1);
  r.n_samples = HT_MAX_SAMPLES;
  for (int i = 6; i < HT_MAX_SAMPLES; i++) r.samples[i] = i * 1.1e-6;
  ht_status s = HT_OK;
  int stored = 0;
  for (int i = 0; i < 1000 && !s; i++) {
    char ck[32];
    snprintf(ck, sizeof ck, "TX=%d", i);
    ht_eval_key k = key_of(x, ck, "{}");
    s = ht_store_put_eval(st, x.session, &k, &r, NULL);
    stored += s == HT_OK;
  }
  assert_int_equal(s, HT_ERR_IO);
  assert_non_null(strstr(ht_last_error(), "disk full"));
  assert_non_null(strstr(ht_last_error(), f->db));
  /* Everything that was reported stored is there, and nothing half-written. */
  visit v = {0};
  assert_int_equal(ht_store_each_eval(st, NULL, count_eval, &v), HT_OK);
  assert_int_equal(v.n, stored);
  ht_store_close(st);
}

/* ---- crash safety ---- */

static void test_kill9(void **state) {
  fix *f = *state;
  const int k = 7;
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    /* The child never returns into cmocka: it dies by SIGKILL with the store open. */
    ht_store *st = NULL;
    if (ht_store_open(f->db, &st) != HT_OK) _exit(2);
    ids x = populate(st);
    ht_result r;
    make_result(&r, 1);
    for (int i = 0; i < k; i++) {
      char ck[32];
      snprintf(ck, sizeof ck, "TX=%d", i);
      ht_eval_key key = key_of(x, ck, "{}");
      if (ht_store_put_eval(st, x.session, &key, &r, NULL) != HT_OK) _exit(3);
    }
    raise(SIGKILL);
    _exit(4);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  ht_store *st = NULL;
  assert_int_equal(ht_store_open(f->db, &st), HT_OK);
  visit v = {0};
  assert_int_equal(ht_store_each_eval(st, NULL, count_eval, &v), HT_OK);
  assert_int_equal(v.n, k);
  sess_visit sv = {0};
  assert_int_equal(ht_store_each_session(st, count_session, &sv), HT_OK);
  assert_int_equal(sv.n, 1);
  /* never ended, its process gone: the next opener marks it interrupted, its tally kept */
  assert_string_equal(sv.status, "interrupted");
  assert_int_equal(sv.last.n_evals, k);
  /* a session of a living process (this one) stays running when another handle opens the file */
  ids x = populate(st);
  ht_store *other = NULL;
  assert_int_equal(ht_store_open(f->db, &other), HT_OK);
  sess_visit sv2 = {0};
  assert_int_equal(ht_store_each_session(other, count_session, &sv2), HT_OK);
  assert_int_equal(sv2.n, 2);
  assert_string_equal(sv2.status, "running");
  assert_int_equal(sv2.last.session_id, x.session);
  ht_store_close(other);
  ht_store_close(st);
}

/* Processes that open (and so create) one new database at the same moment all succeed: the one
 * creating it holds locks for a moment, the others wait for them. */
static void test_created_by_several_at_once(void **state) {
  fix *f = *state;
  enum { ROUNDS = 8, PROCS = 3 };
  for (int round = 0; round < ROUNDS; round++) {
    char db[160];
    snprintf(db, sizeof db, "%s/race%d.db", f->dir, round);
    int go[2];
    assert_int_equal(pipe(go), 0);
    pid_t pids[PROCS];
    for (int i = 0; i < PROCS; i++) {
      pids[i] = fork();
      assert_true(pids[i] >= 0);
      if (pids[i] == 0) {
        char c;
        close(go[1]);
        if (read(go[0], &c, 1) != 0) _exit(5); /* released together when the pipe closes */
        ht_store *st = NULL;
        if (ht_store_open(db, &st) != HT_OK) {
          fprintf(stderr, "%s\n", ht_last_error());
          _exit(2);
        }
        ht_device_info d;
        make_device(&d, i);
        int64_t id;
        int rc = ht_store_put_device(st, &d, &id) == HT_OK ? 0 : 3;
        ht_store_close(st);
        _exit(rc);
      }
    }
    close(go[0]);
    close(go[1]);
    for (int i = 0; i < PROCS; i++) {
      int status = 0;
      assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
      assert_true(WIFEXITED(status));
      assert_int_equal(WEXITSTATUS(status), 0);
    }
  }
}

/* ---- grouped commits ---- */

static int count_all(ht_store *st) {
  visit v = {0};
  assert_int_equal(ht_store_each_eval(st, NULL, count_eval, &v), HT_OK);
  return v.n;
}

static int journals(const fix *f) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "ls %s | grep -c -- '-pending-'", f->dir);
  FILE *p = popen(cmd, "r");
  int n = -1;
  assert_non_null(p);
  assert_int_equal(fscanf(p, "%d", &n), 1);
  pclose(p);
  return n;
}

/* Results that JSON cannot hold as numbers, and a message it must escape. */
static void awkward_results(ht_result rs[4]) {
  for (int i = 0; i < 4; i++) make_result(&rs[i], 1.0 + i);
  rs[1].max_s = INFINITY;
  rs[1].samples[3] = NAN;
  rs[2].status = HT_EVAL_RUNTIME;
  rs[2].time_s = NAN;
  rs[2].min_s = -INFINITY;
  snprintf(rs[2].message, sizeof rs[2].message, "crashed: \"SIGSEGV\"\n\tat line 3 \\ done");
  rs[3].compile_cached = 1;
}

/* Stores r as config TX=i, without asking for its id (so it may be grouped). */
static ht_status put_config(ht_store *st, ids x, int i, const ht_result *r) {
  char ck[32];
  snprintf(ck, sizeof ck, "TX=%d", i);
  ht_eval_key k = key_of(x, ck, "{}");
  return ht_store_put_eval(st, x.session, &k, r, NULL);
}

static void put_grouped(ht_store *st, ids x, const ht_result *rs, int n) {
  for (int i = 0; i < n; i++) assert_int_equal(put_config(st, x, i, &rs[i]), HT_OK);
}

/* A group is invisible to other connections until committed; this store reads it at once. */
static void test_grouped_reads(void **state) {
  fix *f = *state;
  ht_store *st = NULL, *other = NULL;
  assert_int_equal(ht_store_open(f->db, &st), HT_OK);
  ids x = populate(st);
  assert_int_equal(ht_store_group_evals(st, 16), HT_OK);
  ht_result rs[4];
  awkward_results(rs);
  put_grouped(st, x, rs, 4);
  assert_int_equal(journals(f), 1);
  assert_int_equal(ht_store_open_readonly(f->db, &other), HT_OK);
  assert_int_equal(count_all(other), 0);
  ht_store *second = NULL; /* a writable open in the same process takes the journal for alive */
  assert_int_equal(ht_store_open(f->db, &second), HT_OK);
  assert_int_equal(count_all(second), 0);
  ht_store_close(second);
  assert_int_equal(journals(f), 1);
  /* a lookup of another config leaves the group pending; one of a config in it commits it */
  ht_eval_key absent = key_of(x, "TX=99", NULL), tx1 = key_of(x, "TX=1", NULL);
  ht_result got;
  int found = -1;
  assert_int_equal(ht_store_get_eval(st, &absent, &got, &found), HT_OK);
  assert_int_equal(found, 0);
  assert_int_equal(count_all(other), 0);
  assert_int_equal(ht_store_get_eval(st, &tx1, &got, &found), HT_OK);
  assert_int_equal(found, 1);
  assert_same_result(&got, &rs[1]);
  assert_int_equal(count_all(other), 4);
  /* the next group: committed by any other query of this store, and at the latest by close */
  put_grouped(st, x, rs, 2);
  assert_int_equal(count_all(other), 4);
  sess_visit sv = {0};
  assert_int_equal(ht_store_each_session(st, count_session, &sv), HT_OK);
  assert_int_equal(sv.last.n_evals, 6);
  assert_int_equal(count_all(other), 6);
  put_grouped(st, x, rs, 1);
  ht_store_close(st);
  assert_int_equal(count_all(other), 7);
  assert_int_equal(journals(f), 0);
  ht_store_close(other);
}

/* Full groups are committed without being asked; grouping off commits each one again. */
static void test_grouped_limits(void **state) {
  fix *f = *state;
  ht_store *st = NULL, *other = NULL;
  assert_int_equal(ht_store_open(f->db, &st), HT_OK);
  ids x = populate(st);
  assert_int_equal(ht_store_open_readonly(f->db, &other), HT_OK);
  assert_int_equal(ht_store_group_evals(st, 3), HT_OK);
  ht_result rs[4];
  awkward_results(rs);
  put_grouped(st, x, rs, 4);
  assert_int_equal(count_all(other), 3);
  assert_int_equal(ht_store_group_evals(st, 0), HT_OK);
  assert_int_equal(count_all(other), 4);
  put_grouped(st, x, rs, 1);
  assert_int_equal(count_all(other), 5);
  ht_store_close(other);
  ht_store_close(st);
}

/* A group whose commit fails (another process holds the write lock too long) stays pending,
 * retried at every store, and is committed whole once it can be; no more rows are taken while
 * the list is full. */
static void test_grouped_commit_fails(void **state) {
  fix *f = *state;
  ht_store *st = NULL;
  assert_int_equal(ht_store_open(f->db, &st), HT_OK);
  ids x = populate(st);
  assert_int_equal(ht_store_group_evals(st, 4), HT_OK);
  sqlite3 *blocker = NULL;
  assert_int_equal(sqlite3_open(f->db, &blocker), SQLITE_OK);
  assert_int_equal(sqlite3_exec(blocker, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
  setenv("HETUNE_DB_LOCK_TIMEOUT", "0.01", 1);
  ht_result r;
  make_result(&r, 1.0);
  int failed = 0;
  for (int i = 0; i < HTS_MAX_PENDING + 8; i++) failed += put_config(st, x, i, &r) != HT_OK;
  unsetenv("HETUNE_DB_LOCK_TIMEOUT");
  assert_int_equal(failed, HTS_MAX_PENDING + 8 - 3);
  assert_int_equal(st->n_pending, HTS_MAX_PENDING);
  assert_int_equal(sqlite3_exec(blocker, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(blocker);
  ht_store_close(st);
  assert_int_equal(ht_store_open(f->db, &st), HT_OK);
  assert_int_equal(count_all(st), HTS_MAX_PENDING);
  ht_store_close(st);
}

/* kill -9 with a group pending: the next writable open puts the journal's rows in, bit for bit,
 * with the session's tally, and removes the journal; a read-only open changes nothing. */
static void test_grouped_kill9(void **state) {
  fix *f = *state;
  ht_result rs[4];
  awkward_results(rs);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    ht_store *st = NULL;
    if (ht_store_open(f->db, &st) != HT_OK) _exit(2);
    ids x = populate(st);
    if (ht_store_group_evals(st, 16) != HT_OK) _exit(3);
    put_grouped(st, x, rs, 4);
    raise(SIGKILL);
    _exit(4);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  assert_int_equal(journals(f), 1);
  ht_store *st = NULL;
  /* a reader says what waits in the journal (on stderr), and leaves it */
  char log[160];
  snprintf(log, sizeof log, "%s/stderr.txt", f->dir);
  fflush(stderr);
  int saved = dup(2), fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true(saved >= 0 && fd >= 0);
  dup2(fd, 2);
  close(fd);
  ht_status opened = ht_store_open_readonly(f->db, &st);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  assert_int_equal(opened, HT_OK);
  char *said = slurp(log, NULL);
  assert_non_null(strstr(said, "4 evaluations of a process that ended wait in"));
  free(said);
  assert_int_equal(count_all(st), 0);
  ht_store_close(st);
  assert_int_equal(journals(f), 1);
  assert_int_equal(ht_store_open(f->db, &st), HT_OK);
  assert_int_equal(journals(f), 0);
  visit v = {0};
  assert_int_equal(ht_store_each_eval(st, NULL, count_eval, &v), HT_OK);
  assert_int_equal(v.n, 4);
  for (int i = 0; i < 4; i++) {
    char ck[32];
    snprintf(ck, sizeof ck, "TX=%d", i);
    assert_string_equal(v.keys[i], ck);
    assert_same_result(&v.r[i], &rs[i]);
  }
  sess_visit sv = {0};
  assert_int_equal(ht_store_each_session(st, count_session, &sv), HT_OK);
  assert_string_equal(sv.status, "interrupted");
  assert_int_equal(sv.last.n_evals, 4);
  ht_store_close(st);
  assert_int_equal(ht_store_open(f->db, &st), HT_OK); /* again: nothing more */
  assert_int_equal(count_all(st), 4);
  ht_store_close(st);
}

/* A kill between a group's commit and the journal's truncation leaves rows already stored (put
 * in once, not twice), and a kill in a write leaves a partial line (skipped). */
static void test_grouped_journal_after_commit(void **state) {
  fix *f = *state;
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    ht_store *st = NULL;
    if (ht_store_open(f->db, &st) != HT_OK) _exit(2);
    ids x = populate(st);
    ht_result rs[4];
    awkward_results(rs);
    if (ht_store_group_evals(st, 16) != HT_OK) _exit(3);
    put_grouped(st, x, rs, 3);
    char *path = strdup(st->journal_path), *text = NULL;
    size_t len = 0;
    if (ht_read_file(path, &text, &len) != HT_OK || ht_store_group_evals(st, 0) != HT_OK) _exit(5);
    FILE *fp = fopen(path, "w");
    if (!fp || fwrite(text, 1, len, fp) != len || fputs("[1,2,3,\"TX=", fp) < 0 || fclose(fp)) _exit(6);
    raise(SIGKILL);
    _exit(4);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  assert_int_equal(journals(f), 1);
  ht_store *st = NULL;
  assert_int_equal(ht_store_open(f->db, &st), HT_OK);
  assert_int_equal(count_all(st), 3);
  assert_int_equal(journals(f), 0);
  ht_store_close(st);
}

/* A child that dies by kill -9 with four evaluations pending in the store it opened at db;
 * returns its journal's path. */
static char *killed_with_pending_at(const char *db) {
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    ht_store *st = NULL;
    ht_result rs[4];
    awkward_results(rs);
    if (ht_store_open(db, &st) != HT_OK) _exit(2);
    ids x = populate(st);
    if (ht_store_group_evals(st, 16) != HT_OK) _exit(3);
    put_grouped(st, x, rs, 4);
    size_t len = strlen(st->journal_path);
    if (write(fds[1], st->journal_path, len) != (ssize_t)len) _exit(4);
    raise(SIGKILL);
  }
  close(fds[1]);
  char buf[256] = "";
  ssize_t n = read(fds[0], buf, sizeof buf - 1);
  close(fds[0]);
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFSIGNALED(status) && n > 0);
  buf[n] = '\0';
  return strdup(buf);
}

static char *killed_with_pending(const fix *f) { return killed_with_pending_at(f->db); }

/* A database opened through a symbolic link in another folder keeps its journal beside the file
 * itself, named after it, as SQLite keeps its -wal: whichever name the next writer opens it by,
 * it finds the journal. */
static void test_grouped_journal_through_link(void **state) {
  fix *f = *state;
  char other[96], alias[160];
  snprintf(other, sizeof other, "%s/other", f->dir);
  snprintf(alias, sizeof alias, "%s/alias.db", other);
  assert_int_equal(mkdir(other, 0700), 0);
  assert_int_equal(symlink(f->db, alias), 0);
  char *journal = killed_with_pending_at(alias);
  assert_int_equal(strncmp(journal, f->db, strlen(f->db)), 0);
  assert_int_equal(journals(f), 1);
  ht_store *st = NULL;
  assert_int_equal(ht_store_open(f->db, &st), HT_OK);
  assert_int_equal(count_all(st), 4);
  ht_store_close(st);
  assert_int_equal(journals(f), 0);
  free(journal);
  journal = killed_with_pending_at(f->db); /* and the other way round: the same four rows again, */
  assert_int_equal(journals(f), 1);         /* known as stored once the journal is found */
  assert_int_equal(ht_store_open(alias, &st), HT_OK);
  assert_int_equal(journals(f), 0);
  assert_int_equal(count_all(st), 4);
  ht_store_close(st);
  free(journal);
}

/* A journal names its database: one left beside a new database of the same name is not put into
 * it; and a row the database refuses (it names a session the file lacks) is left out alone. */
static void test_grouped_journal_of_other_database(void **state) {
  fix *f = *state;
  char *journal = killed_with_pending(f);
  char side[160];
  unlink(f->db);
  snprintf(side, sizeof side, "%s-wal", f->db);
  unlink(side);
  snprintf(side, sizeof side, "%s-shm", f->db);
  unlink(side);
  usleep(2000); /* the new database's creation time differs */
  ht_store *st = NULL;
  assert_int_equal(ht_store_open(f->db, &st), HT_OK);
  assert_int_equal(count_all(st), 0);
  ht_store_close(st);
  assert_int_equal(access(journal, F_OK), 0);
  unlink(journal);
  free(journal);

  nftw(f->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  assert_int_equal(mkdir(f->dir, 0700), 0);
  journal = killed_with_pending(f);
  size_t len = 0;
  char *text = slurp(journal, &len), *last = text + len - 1;
  while (last > text && last[-1] != '\n') last--;
  json_t *row = json_loads(last, 0, NULL);
  assert_non_null(row);
  json_array_set_new(row, 0, json_integer(999));
  json_array_set_new(row, 4, json_string("TX=orphan"));
  char *orphan = json_dumps(row, JSON_COMPACT);
  FILE *fp = fopen(journal, "a");
  assert_non_null(fp);
  fprintf(fp, "%s\n", orphan);
  fclose(fp);
  assert_int_equal(ht_store_open(f->db, &st), HT_OK);
  assert_int_equal(count_all(st), 4);
  ht_store_close(st);
  assert_int_equal(access(journal, F_OK), -1);
  free(orphan);
  json_decref(row);
  free(text);
  free(journal);
}

/* A journal whose owner (another process) holds its lock is alive: left alone until the lock is
 * gone. */
static void test_grouped_live_journal_untouched(void **state) {
  fix *f = *state;
  ht_store *st = NULL;
  assert_int_equal(ht_store_open(f->db, &st), HT_OK);
  ht_store_close(st);
  char path[256];
  snprintf(path, sizeof path, "%s-pending-1-0", f->db);
  write_bytes(path, "not a row\n", 10);
  int locked[2], release[2];
  assert_int_equal(pipe(locked), 0);
  assert_int_equal(pipe(release), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    int fd = open(path, O_RDWR);
    char c = fd >= 0 && fcntl(fd, F_SETLK, &l) == 0 ? 'y' : 'n';
    if (write(locked[1], &c, 1) != 1 || read(release[0], &c, 1) != 1) _exit(1);
    _exit(0);
  }
  char c = 0;
  assert_int_equal(read(locked[0], &c, 1), 1);
  assert_int_equal(c, 'y');
  assert_int_equal(ht_store_open(f->db, &st), HT_OK);
  ht_store_close(st);
  assert_int_equal(access(path, F_OK), 0);
  assert_int_equal(write(release[1], &c, 1), 1);
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  for (int i = 0; i < 2; i++) close(locked[i]), close(release[i]);
  assert_int_equal(ht_store_open(f->db, &st), HT_OK);
  assert_int_equal(count_all(st), 0);
  ht_store_close(st);
  assert_int_equal(access(path, F_OK), -1);
  /* files that only begin like a journal's name are not journals: another database, its WAL */
  const char *others[] = {"-pending-1.db", "-pending-1-0-wal", "-pending-1-0.bak", "-pending-x-0"};
  for (int i = 0; i < 4; i++) {
    snprintf(path, sizeof path, "%s%s", f->db, others[i]);
    write_bytes(path, "not a row\n", 10);
  }
  assert_int_equal(ht_store_open(f->db, &st), HT_OK);
  ht_store_close(st);
  for (int i = 0; i < 4; i++) {
    snprintf(path, sizeof path, "%s%s", f->db, others[i]);
    assert_int_equal(access(path, F_OK), 0);
  }
}

/* ---- exports ---- */

/* A minimal RFC 4180 reader: rows of fields, quotes doubled inside quoted fields. */
typedef struct csv {
  int rows, cols[16];
  char *cell[16][40];
} csv;

static void csv_parse(const char *s, csv *c) {
  memset(c, 0, sizeof *c);
  ht_buf field = {0};
  int in_quotes = 0, col = 0, quoted = 0;
  for (;; s++) {
    if (in_quotes) {
      assert_true(*s != '\0');
      if (*s == '"' && s[1] == '"') {
        ht_buf_append(&field, "\"");
        s++;
      } else if (*s == '"') {
        in_quotes = 0;
      } else {
        ht_buf_appendf(&field, "%c", *s);
      }
      continue;
    }
    int end_row = *s == '\r' || *s == '\0';
    if (*s == '"') {
      in_quotes = quoted = 1;
    } else if (*s == ',' || end_row) {
      if (*s == '\0' && col == 0 && !field.len && !quoted) break;
      assert_true(c->rows < 16 && col < 40);
      c->cell[c->rows][col++] = ht_strdup(field.data ? field.data : "");
      ht_buf_free(&field);
      memset(&field, 0, sizeof field);
      quoted = 0;
      if (end_row) {
        c->cols[c->rows++] = col;
        col = 0;
        if (*s == '\0') break;
        assert_int_equal(s[1], '\n'); /* RFC 4180 line ends */
        s++;
      }
    } else {
      ht_buf_appendf(&field, "%c", *s);
    }
  }
  ht_buf_free(&field);
}

static void csv_free(csv *c) {
  for (int r = 0; r < 16; r++)
    for (int i = 0; i < 40; i++) free(c->cell[r][i]);
}

static int csv_col(const csv *c, const char *name) {
  for (int i = 0; i < c->cols[0]; i++)
    if (!strcmp(c->cell[0][i], name)) return i;
  fail_msg("no column %s", name);
  return -1;
}

static char *export_text(ht_store *st, const ht_eval_filter *flt, int t4) {
  char *buf = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&buf, &len);
  assert_non_null(mem);
  assert_int_equal(t4 ? ht_store_export_t4(st, flt, mem) : ht_store_export_csv(st, flt, mem), HT_OK);
  fclose(mem);
  return buf;
}

static void test_export_csv(void **state) {
  fix *f = *state;
  ht_store *st = NULL;
  assert_int_equal(ht_store_open(f->db, &st), HT_OK);
  ids x = populate(st);
  ht_result rs[3];
  put_three(st, x, rs);
  ht_eval_filter one = {.kernel_name = "vadd"};
  char *text = export_text(st, &one, 0);
  csv c;
  csv_parse(text, &c);
  assert_int_equal(c.rows, 4);
  for (int r = 1; r < 4; r++) assert_int_equal(c.cols[r], c.cols[0]);
  const char *expect[] = {"eval_id", "session_id", "kernel", "device_id", "device_name", "problem", "config",
                          "TX", "status", "time_s", "mean_s", "stddev_s", "min_s", "n_samples", "compile_s",
                          "compile_cached", "verify_s", "framework_s", "wall_s", "timestamp", "message", "gflops",
                          "bandwidth_gbs"};
  assert_int_equal(c.cols[0], 23);
  for (int i = 0; i < 23; i++) assert_string_equal(c.cell[0][i], expect[i]);
  assert_string_equal(c.cell[1][csv_col(&c, "config")], "TX=8");
  assert_string_equal(c.cell[3][csv_col(&c, "TX")], "16");
  assert_string_equal(c.cell[3][csv_col(&c, "status")], "compile");
  assert_string_equal(c.cell[3][csv_col(&c, "message")], rs[2].message); /* quotes, comma, newline */
  assert_string_equal(c.cell[3][csv_col(&c, "time_s")], "");
  assert_string_equal(c.cell[3][csv_col(&c, "gflops")], "");
  assert_same_double(strtod(c.cell[2][csv_col(&c, "time_s")], NULL), rs[1].time_s);
  assert_same_double(strtod(c.cell[2][csv_col(&c, "gflops")], NULL), rs[1].metrics[0].value);
  assert_string_equal(c.cell[1][csv_col(&c, "timestamp")], "2024-05-01T12:51:30.125Z");
  csv_free(&c);
  free(text);

  /* Without a kernel selected there are no parameter columns. */
  text = export_text(st, NULL, 0);
  csv_parse(text, &c);
  assert_int_equal(c.rows, 4);
  assert_int_equal(c.cols[0], 22);
  csv_free(&c);
  free(text);
  ht_store_close(st);
}

static void test_export_t4(void **state) {
  fix *f = *state;
  ht_store *st = NULL;
  assert_int_equal(ht_store_open(f->db, &st), HT_OK);
  ids x = populate(st);
  ht_result rs[3];
  put_three(st, x, rs);
  char *text = export_text(st, NULL, 1);
  json_error_t err;
  json_t *doc = json_loads(text, 0, &err);
  if (!doc) fail_msg("T4 output does not parse: %s (line %d)", err.text, err.line);
  assert_string_equal(json_string_value(json_object_get(doc, "schema_version")), "1.0.0");
  json_t *results = json_object_get(doc, "results");
  assert_int_equal(json_array_size(results), 3);
  for (size_t i = 0; i < 3; i++) {
    json_t *r = json_array_get(results, i);
    const char *need[] = {"timestamp", "configuration", "times", "invalidity", "correctness", "measurements"};
    for (int j = 0; j < 6; j++) assert_non_null(json_object_get(r, need[j]));
    json_t *runtimes = json_object_get(json_object_get(r, "times"), "runtimes");
    assert_int_equal(json_array_size(runtimes), rs[i].n_samples);
    for (int j = 0; j < rs[i].n_samples; j++) {
      json_t *v = json_array_get(runtimes, j);
      assert_same_double(json_is_null(v) ? NAN : json_number_value(v), rs[i].samples[j]);
    }
  }
  json_t *r1 = json_array_get(results, 1), *r2 = json_array_get(results, 2);
  assert_int_equal(json_integer_value(json_object_get(json_object_get(r1, "configuration"), "TX")), 8);
  assert_string_equal(json_string_value(json_object_get(r1, "invalidity")), "correct");
  assert_string_equal(json_string_value(json_object_get(r2, "invalidity")), "compile");
  assert_int_equal(json_integer_value(json_object_get(r1, "correctness")), 1);
  assert_string_equal(json_string_value(json_object_get(r1, "timestamp")), "2024-05-01T12:51:30.125Z");
  json_t *times = json_object_get(r1, "times");
  assert_same_double(json_number_value(json_object_get(times, "compilation_time")), 0.25);
  assert_same_double(json_number_value(json_object_get(times, "validation")), 0.01);
  json_t *m0 = json_array_get(json_object_get(r1, "measurements"), 0);
  assert_string_equal(json_string_value(json_object_get(m0, "name")), "time");
  assert_string_equal(json_string_value(json_object_get(m0, "unit")), "s");
  assert_same_double(json_number_value(json_object_get(m0, "value")), rs[1].time_s);
  assert_int_equal(json_array_size(json_object_get(r1, "measurements")), 3);
  assert_int_equal(json_array_size(json_object_get(r2, "measurements")), 0);
  json_decref(doc);
  free(text);

  ht_eval_filter none = {.kernel_name = "nope"};
  text = export_text(st, &none, 1);
  doc = json_loads(text, 0, &err);
  assert_non_null(doc);
  assert_int_equal(json_array_size(json_object_get(doc, "results")), 0);
  json_decref(doc);
  free(text);
  ht_store_close(st);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_roundtrip, setup, teardown),
      cmocka_unit_test_setup_teardown(test_median_of_repeats, setup, teardown),
      cmocka_unit_test_setup_teardown(test_upsert_idempotent, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bad_ids, setup, teardown),
      cmocka_unit_test_setup_teardown(test_not_sqlite, setup, teardown),
      cmocka_unit_test_setup_teardown(test_corrupt, setup, teardown),
      cmocka_unit_test_setup_teardown(test_foreign, setup, teardown),
      cmocka_unit_test_setup_teardown(test_newer_schema, setup, teardown),
      cmocka_unit_test_setup_teardown(test_empty_file, setup, teardown),
      cmocka_unit_test_setup_teardown(test_readonly, setup, teardown),
      cmocka_unit_test_setup_teardown(test_two_handles, setup, teardown),
      cmocka_unit_test_setup_teardown(test_disk_full, setup, teardown),
      cmocka_unit_test_setup_teardown(test_kill9, setup, teardown),
      cmocka_unit_test_setup_teardown(test_created_by_several_at_once, setup, teardown),
      cmocka_unit_test_setup_teardown(test_grouped_reads, setup, teardown),
      cmocka_unit_test_setup_teardown(test_grouped_limits, setup, teardown),
      cmocka_unit_test_setup_teardown(test_grouped_commit_fails, setup, teardown),
      cmocka_unit_test_setup_teardown(test_grouped_kill9, setup, teardown),
      cmocka_unit_test_setup_teardown(test_grouped_journal_after_commit, setup, teardown),
      cmocka_unit_test_setup_teardown(test_grouped_live_journal_untouched, setup, teardown),
      cmocka_unit_test_setup_teardown(test_grouped_journal_through_link, setup, teardown),
      cmocka_unit_test_setup_teardown(test_grouped_journal_of_other_database, setup, teardown),
      cmocka_unit_test_setup_teardown(test_export_csv, setup, teardown),
      cmocka_unit_test_setup_teardown(test_export_t4, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
