/* The CPUs and memory a process may use, on simulated machines: control-group files of cgroup v1
 * and v2 in a temporary folder, with limits in the group itself or in a parent, and files that say
 * nothing. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/cpus.h"
#include "core/memory.h"
#include "hetune/core.h"

static char root[] = "/tmp/hetune-cpus-XXXXXX";

/* Writes text to root/rel, making its folders. */
static void put(const char *rel, const char *text) {
  char *path = ht_strfmt("%s/%s", root, rel), *slash = strrchr(path, '/');
  *slash = '\0';
  assert_int_equal(ht_mkdir_p(path), HT_OK);
  *slash = '/';
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  free(path);
}

/* A simulated machine's sources: /proc/self/cgroup saying proc_cgroup_text (paths[0]), cgroups
 * mounted on root/fs (paths[1]; a v2 mount: root/fs/cgroup.controllers, written by the v2 test)
 * or on root/hybrid. The paths live until the next call. */
static const char *const *machine(const char *fs, const char *proc_cgroup_text) {
  static char *paths[2];
  put("proc_cgroup", proc_cgroup_text);
  free(paths[0]);
  free(paths[1]);
  paths[0] = ht_strfmt("%s/proc_cgroup", root);
  paths[1] = ht_strfmt("%s/%s", root, fs);
  return (const char *const *)paths;
}

/* ht_cpus_usable_at on that machine. */
static int usable_on(const char *fs, int affinity, const char *proc_cgroup_text) {
  const char *const *m = machine(fs, proc_cgroup_text);
  return ht_cpus_usable_at(affinity, m[0], m[1]);
}

static int usable(int affinity, const char *proc_cgroup_text) { return usable_on("fs", affinity, proc_cgroup_text); }

static int setup(void **state) {
  (void)state;
  return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char *cmd = ht_strfmt("rm -rf '%s'", root);
  int rc = system(cmd);
  free(cmd);
  return rc;
}

/* cgroup v2: cpu.max in the group, or a tighter one in a parent; "max" is no quota; a quota of
 * 1.5 CPUs allows 2; the affinity mask bounds it too. */
static void test_v2_quota(void **state) {
  (void)state;
  put("fs/cgroup.controllers", "cpu memory\n");
  put("fs/app/job/cpu.max", "150000 100000\n");
  assert_int_equal(usable(64, "0::/app/job\n"), 2);
  assert_int_equal(usable(1, "0::/app/job\n"), 1);
  put("fs/app/cpu.max", "100000 100000\n");
  assert_int_equal(usable(64, "0::/app/job\n"), 1);
  put("fs/app/cpu.max", "max 100000\n");
  put("fs/app/job/cpu.max", "max 100000\n");
  assert_int_equal(usable(64, "0::/app/job\n"), 64);
  put("fs/cpu.max", "800000 100000\n"); /* a container's own root */
  assert_int_equal(usable(64, "0::/\n"), 8);
  assert_int_equal(usable(4, "0::/\n"), 4);
  put("hybrid/unified/side/cpu.max", "300000 100000\n"); /* v2 beside v1 */
  assert_int_equal(usable_on("hybrid", 64, "0::/side\n"), 3);
}

/* cgroup v1: the cpu controller's folder (named as in the list, "cpu,cpuacct", or "cpu"), quota
 * -1 for none; other controllers' lines are not read. */
static void test_v1_quota(void **state) {
  (void)state;
  put("fs/cpu,cpuacct/batch/cpu.cfs_quota_us", "250000\n");
  put("fs/cpu,cpuacct/batch/cpu.cfs_period_us", "100000\n");
  assert_int_equal(usable(16, "4:memory:/batch\n3:cpu,cpuacct:/batch\n1:name=systemd:/\n"), 3);
  put("fs/cpu/solo/cpu.cfs_quota_us", "-1\n");
  put("fs/cpu/solo/cpu.cfs_period_us", "100000\n");
  assert_int_equal(usable(16, "2:cpu:/solo\n"), 16);
  put("fs/memory/mem/cpu.cfs_quota_us", "100000\n"); /* not the cpu controller's */
  put("fs/memory/mem/cpu.cfs_period_us", "100000\n");
  assert_int_equal(usable(16, "4:memory:/mem\n"), 16);
}

/* Missing, empty or malformed files leave the affinity mask's count. */
static void test_no_quota(void **state) {
  (void)state;
  assert_int_equal(usable(6, ""), 6);
  assert_int_equal(usable(6, "garbage without colons\n0::relative\n"), 6);
  put("fs/bad/cpu.max", "lots of cpus\n");
  assert_int_equal(usable(6, "0::/bad\n"), 6);
  put("fs/zero/cpu.max", "0 100000\n");
  assert_int_equal(usable(6, "0::/zero\n"), 6);
  put("fs/cpu/v1bad/cpu.cfs_quota_us", "100000\n"); /* no period file */
  assert_int_equal(usable(6, "2:cpu:/v1bad\n"), 6);
  char *nowhere = ht_strfmt("%s/none", root);
  assert_int_equal(ht_cpus_usable_at(6, nowhere, nowhere), 6);
  free(nowhere);
}

/* This process: at least one CPU, never more than its affinity mask has. */
static void test_this_process(void **state) {
  (void)state;
  cpu_set_t set;
  assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
  int n = ht_cpus_usable();
  assert_true(n >= 1 && n <= CPU_COUNT(&set));
}

/* ht_memory_usable_at on that machine, with `physical` bytes. */
static uint64_t memory_on(const char *fs, uint64_t physical, const char *proc_cgroup_text) {
  const char *const *m = machine(fs, proc_cgroup_text);
  return ht_memory_usable_at(physical, m[0], m[1]);
}

enum { GIB = 1 << 30 };

/* cgroup v2 memory.max in the group or a tighter parent, "max" for none; v1 memory.limit_in_bytes
 * of the memory controller's folder, its "no limit" a number beyond any machine; limits above the
 * machine's memory and unreadable files leave the machine's. */
static void test_memory_limits(void **state) {
  (void)state;
  const uint64_t host = 512ULL * GIB;
  put("fs/cgroup.controllers", "cpu memory\n");
  put("fs/pod/box/memory.max", "8589934592\n");
  assert_int_equal(memory_on("fs", host, "0::/pod/box\n"), 8ULL * GIB);
  put("fs/pod/memory.max", "4294967296\n");
  assert_int_equal(memory_on("fs", host, "0::/pod/box\n"), 4ULL * GIB);
  put("fs/pod/memory.max", "max\n");
  put("fs/pod/box/memory.max", "max\n");
  assert_int_equal(memory_on("fs", host, "0::/pod/box\n"), host);
  assert_int_equal(memory_on("fs", 2ULL * GIB, "0::/pod\n"), 2ULL * GIB);
  put("hybrid/memory/job/memory.limit_in_bytes", "1073741824\n");
  assert_int_equal(memory_on("hybrid", host, "4:memory:/job\n1:cpu:/job\n0::/\n"), 1ULL * GIB);
  put("hybrid/memory/free/memory.limit_in_bytes", "9223372036854771712\n");
  assert_int_equal(memory_on("hybrid", host, "4:memory:/free\n"), host);
  put("hybrid/cpu/job/memory.limit_in_bytes", "1048576\n"); /* not the memory controller's */
  assert_int_equal(memory_on("hybrid", host, "1:cpu:/job\n"), host);
  put("fs/bad/memory.max", "lots\n");
  assert_int_equal(memory_on("fs", host, "0::/bad\n"), host);
  put("fs/neg/memory.max", "-5\n");
  assert_int_equal(memory_on("fs", host, "0::/neg\n"), host);
  assert_int_equal(memory_on("fs", host, ""), host);
  assert_true(ht_memory_usable() > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_v2_quota),
      cmocka_unit_test(test_v1_quota),
      cmocka_unit_test(test_no_quota),
      cmocka_unit_test(test_this_process),
      cmocka_unit_test(test_memory_limits),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
