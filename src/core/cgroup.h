/* Control groups (cgroup.c): the tightest limit a process's groups set, walking each group and its
 * parents, for cgroup v2 (unified), v1 (one hierarchy per controller) and hybrid mounts. The
 * CPU quota (cpus.c) and the memory limit (memory.c) read their own files through it. */
#ifndef HT_CORE_CGROUP_H
#define HT_CORE_CGROUP_H

#include <stdint.h>

/* The limit one group folder sets (v2: a folder of the unified hierarchy), or 0 for none. */
typedef uint64_t (*ht_cgroup_limit_fn)(const char *dir, int v2);

/* The smallest non-zero limit that `read` finds in the groups proc_cgroup (a file like
 * /proc/self/cgroup) names and in their parents, cgroups mounted on root (/sys/fs/cgroup); in v1
 * only the hierarchy of `controller` ("cpu", "memory") is read. 0 when none is set or readable. */
uint64_t ht_cgroup_tightest(const char *proc_cgroup, const char *root, const char *controller, ht_cgroup_limit_fn read);

#endif
