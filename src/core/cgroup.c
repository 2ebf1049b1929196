/* The tightest limit of a process's control groups (cgroup v2, v1 and hybrid mounts). */
#include "core/cgroup.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The tightest limit of the group at mount/group and of each parent up to mount itself. */
static uint64_t tightest_in(const char *mount, const char *group, int v2, ht_cgroup_limit_fn read) {
  char dir[PATH_MAX];
  if (snprintf(dir, sizeof dir, "%s%s", mount, group) >= (int)sizeof dir) return 0;
  size_t base = strlen(mount);
  uint64_t best = 0;
  for (;;) {
    size_t len = strlen(dir);
    while (len > base && dir[len - 1] == '/') dir[--len] = '\0';
    uint64_t q = read(dir, v2);
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

/* One line of /proc/self/cgroup: v2's "0::/path", v1's "N:cpu,cpuacct:/path". */
static uint64_t line_limit(char *line, const char *root, const char *controller, ht_cgroup_limit_fn read) {
  char mount[PATH_MAX];
  char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
  if (!c2 || c2[1] != '/') return 0;
  if (c2 == c1 + 1) { /* v2: mounted on root, or on root/unified beside v1 (hybrid) */
    snprintf(mount, sizeof mount, "%s/cgroup.controllers", root);
    int on_root = access(mount, F_OK) == 0;
    if (snprintf(mount, sizeof mount, on_root ? "%s" : "%s/unified", root) >= (int)sizeof mount) return 0;
    return tightest_in(mount, c2 + 1, 1, read);
  }
  if (!names_controller(c1 + 1, (size_t)(c2 - c1 - 1), controller)) return 0;
  uint64_t q = 0;
  if (snprintf(mount, sizeof mount, "%s/%.*s", root, (int)(c2 - c1 - 1), c1 + 1) < (int)sizeof mount)
    q = tightest_in(mount, c2 + 1, 0, read);
  if (!q && snprintf(mount, sizeof mount, "%s/%s", root, controller) < (int)sizeof mount)
    q = tightest_in(mount, c2 + 1, 0, read);
  return q;
}

uint64_t ht_cgroup_tightest(const char *proc_cgroup, const char *root, const char *controller, ht_cgroup_limit_fn read) {
  FILE *f = proc_cgroup && root ? fopen(proc_cgroup, "r") : NULL;
  if (!f) return 0;
  char line[PATH_MAX + 64];
  uint64_t best = 0;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    uint64_t q = line_limit(line, root, controller, read);
    if (q > 0 && (best == 0 || q < best)) best = q;
  }
  fclose(f);
  return best;
}
