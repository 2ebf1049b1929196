/* Reference outputs are kept on disk: a second runner for the same spec version and problem size
 * verifies against them without running the reference; another size, a damaged cache file or a
 * changed reference runs it again, and configs still verify. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hetune/hetune.h"

#define DATA HT_SOURCE_DIR "/tests/data/refcache/"

static char log_path[256];

static long runs_of_reference(void) {
  struct stat sb;
  return stat(log_path, &sb) == 0 ? (long)sb.st_size : 0;
}

/* One evaluation of the spec at size n; it must verify. */
static void evaluate_at(const char *n) {
  ht_spec *s;
  assert_int_equal(ht_spec_load(DATA "scale_c.json", &s), HT_OK);
  assert_int_equal(ht_spec_set_size(s, n), HT_OK);
  ht_runner_options o;
  ht_runner_options_default(&o);
  o.isolate = 0;
  o.max_runs = 3;
  ht_runner *r;
  assert_int_equal(ht_runner_create(s, "c", &o, &r), HT_OK);
  ht_config c = {.n = 1, .idx = {0}};
  ht_result *res = malloc(sizeof *res);
  assert_int_equal(ht_runner_evaluate(r, &c, res), HT_OK);
  if (res->status != HT_EVAL_OK) fail_msg("%s: %s", n, res->message);
  free(res);
  ht_runner_destroy(r);
  ht_spec_destroy(s);
}

/* Overwrites the middle of every file in the reference cache (remove: deletes them). */
static void damage_cache_or_remove(int remove_them);
static void damage_cache(void) { damage_cache_or_remove(0); }

static void damage_cache_or_remove(int remove_them) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s/ref", ht_cache_dir());
  DIR *d = opendir(dir);
  if (!d && remove_them) return;
  assert_non_null(d);
  int damaged = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (remove_them) {
      remove(path);
      continue;
    }
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    fseek(f, 100, SEEK_SET);
    fputs("damage", f);
    fclose(f);
    damaged++;
  }
  closedir(d);
  assert_true(remove_them || damaged > 0);
}

static void test_reference_runs_once_per_size(void **state) {
  (void)state;
  snprintf(log_path, sizeof log_path, "%s/ref-runs.log", ht_cache_dir());
  remove(log_path);
  damage_cache_or_remove(1); /* a fresh cache: the runs of an earlier test run do not count */
  setenv("HT_REF_LOG", log_path, 1);
  evaluate_at("N=1000");
  assert_int_equal(runs_of_reference(), 1);
  evaluate_at("N=1000"); /* a new runner, the same spec and size: from the cache */
  assert_int_equal(runs_of_reference(), 1);
  evaluate_at("N=1001"); /* another size: computed */
  assert_int_equal(runs_of_reference(), 2);
  damage_cache();
  evaluate_at("N=1000"); /* a damaged entry is ignored, computed again and rewritten */
  assert_int_equal(runs_of_reference(), 3);
  evaluate_at("N=1000");
  assert_int_equal(runs_of_reference(), 3);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_reference_runs_once_per_size)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
