/* The CPUs a process may use: its affinity mask, bounded by its control group's CPU quota. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "core/cpus.h"

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hetune/core.h"

static int affinity_cpus(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 && n < INT_MAX ? (int)n : 1;
}

/* CPUs a quota of `quota` microseconds per `period` allows, rounded up; 0 when unlimited or unreadable. */
static int quota_cpus(long long quota, long long period) {
  if (quota <= 0 || period <= 0) return 0;
  long long n = (quota + period - 1) / period;
  return n < INT_MAX ? (int)n : 0;
}

/* The quota set in one group folder (v2: cpu.max "max 100000" or "150000 100000"; v1: the two
 * cpu.cfs_* files): CPUs, or 0 for none. */
static int folder_quota(const char *dir, int v2) {
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

/* The tightest quota of the group at mount/group and of each parent up to mount itself. */
static int tightest_quota(const char *mount, const char *group, int v2) {
  char dir[PATH_MAX];
  if (snprintf(dir, sizeof dir, "%s%s", mount, group) >= (int)sizeof dir) return 0;
  size_t base = strlen(mount);
  int best = 0;
  for (;;) {
    size_t len = strlen(dir);
    while (len > base && dir[len - 1] == '/') dir[--len] = '\0';
    int q = folder_quota(dir, v2);
    if (q > 0 && (best == 0 || q < best)) best = q;
    char *slash = strrchr(dir + base, '/');
    if (!slash) break;
    *slash = '\0';
  }
  return best;
}

/* 1 when the comma-separated list names controller c. */
static int names_controller(const char *list, size_t len, const char *c) {
  size_t n = strlen(c);
  for (const char *p = list, *end = list + len; p < end;) {
    size_t w = strcspn(p, ",:");
    if (w == n && strncmp(p, c, n) == 0) return 1;
    p += w + 1;
  }
  return 0;
}

/* The quota of the groups /proc/self/cgroup names: v2's "0::/path", v1's "N:cpu,cpuacct:/path". */
static int cgroup_quota(const char *proc_cgroup, const char *root) {
  FILE *f = fopen(proc_cgroup, "r");
  if (!f) return 0;
  char line[PATH_MAX + 64], mount[PATH_MAX];
  int best = 0;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2 || c2[1] != '/') continue;
    int q = 0;
    if (c2 == c1 + 1) { /* v2: mounted on root, or on root/unified beside v1 (hybrid) */
      snprintf(mount, sizeof mount, "%s/cgroup.controllers", root);
      int on_root = access(mount, F_OK) == 0;
      if (snprintf(mount, sizeof mount, on_root ? "%s" : "%s/unified", root) < (int)sizeof mount)
        q = tightest_quota(mount, c2 + 1, 1);
    } else if (names_controller(c1 + 1, (size_t)(c2 - c1 - 1), "cpu")) {
      if (snprintf(mount, sizeof mount, "%s/%.*s", root, (int)(c2 - c1 - 1), c1 + 1) < (int)sizeof mount)
        q = tightest_quota(mount, c2 + 1, 0);
      if (!q && snprintf(mount, sizeof mount, "%s/cpu", root) < (int)sizeof mount) q = tightest_quota(mount, c2 + 1, 0);
    }
    if (q > 0 && (best == 0 || q < best)) best = q;
  }
  fclose(f);
  return best;
}

int ht_cpus_usable_at(int affinity, const char *proc_cgroup, const char *root) {
  int n = affinity > 0 ? affinity : affinity_cpus();
  int q = proc_cgroup && root ? cgroup_quota(proc_cgroup, root) : 0;
  return q > 0 && q < n ? q : n;
}

int ht_cpus_usable(void) { return ht_cpus_usable_at(0, "/proc/self/cgroup", "/sys/fs/cgroup"); }
