/* The memory a process may use: the machine's, bounded by its control group's memory limit. */
#include "core/memory.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/cgroup.h"

static uint64_t physical_bytes(void) {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}

/* The limit one group folder sets (v2: memory.max, "max" for none; v1: memory.limit_in_bytes,
 * where "none" is a number larger than any machine's memory), in bytes, or 0. */
static uint64_t folder_limit(const char *dir, int v2) {
  char path[PATH_MAX], word[32];
  snprintf(path, sizeof path, "%s/%s", dir, v2 ? "memory.max" : "memory.limit_in_bytes");
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  int ok = fscanf(f, "%31s", word) == 1;
  fclose(f);
  if (!ok || !isdigit((unsigned char)word[0])) return 0;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(word, &end, 10);
  return *end || errno ? 0 : (uint64_t)v;
}

uint64_t ht_memory_usable_at(uint64_t physical, const char *proc_cgroup, const char *root) {
  uint64_t m = physical ? physical : physical_bytes();
  uint64_t limit = ht_cgroup_tightest(proc_cgroup, root, "memory", folder_limit);
  return limit > 0 && (m == 0 || limit < m) ? limit : m;
}

uint64_t ht_memory_usable(void) { return ht_memory_usable_at(0, "/proc/self/cgroup", "/sys/fs/cgroup"); }
