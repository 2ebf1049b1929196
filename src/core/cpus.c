/* The CPUs a process may use: its affinity mask, bounded by its control group's CPU quota. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "core/cpus.h"

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/cgroup.h"
#include "hetune/core.h"

static int affinity_cpus(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 && n < INT_MAX ? (int)n : 1;
}

/* CPUs a quota of `quota` microseconds per `period` allows, rounded up; 0 when unlimited or unreadable. */
static uint64_t quota_cpus(long long quota, long long period) {
  if (quota <= 0 || period <= 0) return 0;
  long long n = (quota + period - 1) / period;
  return n < INT_MAX ? (uint64_t)n : 0;
}

/* The quota set in one group folder (v2: cpu.max "max 100000" or "150000 100000"; v1: the two
 * cpu.cfs_* files): CPUs, or 0 for none. */
static uint64_t folder_quota(const char *dir, int v2) {
  char path[PATH_MAX], word[32];
  long long quota = 0, period = 0;
  FILE *f;
  if (v2) {
    snprintf(path, sizeof path, "%s/cpu.max", dir);
    if (!(f = fopen(path, "r"))) return 0;
    int ok = fscanf(f, "%31s %lld", word, &period) == 2 && strcmp(word, "max") != 0;
    fclose(f);
    return ok ? quota_cpus(strtoll(word, NULL, 10), period) : 0;
  }
  snprintf(path, sizeof path, "%s/cpu.cfs_quota_us", dir);
  if (!(f = fopen(path, "r"))) return 0;
  int ok = fscanf(f, "%lld", &quota) == 1;
  fclose(f);
  snprintf(path, sizeof path, "%s/cpu.cfs_period_us", dir);
  if (!ok || !(f = fopen(path, "r"))) return 0;
  ok = fscanf(f, "%lld", &period) == 1;
  fclose(f);
  return ok ? quota_cpus(quota, period) : 0;
}

int ht_cpus_usable_at(int affinity, const char *proc_cgroup, const char *root) {
  int n = affinity > 0 ? affinity : affinity_cpus();
  uint64_t q = ht_cgroup_tightest(proc_cgroup, root, "cpu", folder_quota);
  return q > 0 && q < (uint64_t)n ? (int)q : n;
}

int ht_cpus_usable(void) { return ht_cpus_usable_at(0, "/proc/self/cgroup", "/sys/fs/cgroup"); }
