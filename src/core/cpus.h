/* How many CPUs this process may use (cpus.c): what sizes its own parallel work (compilers built
 * at once, generated GEMM's threads), where the machine's count would oversubscribe a process
 * pinned to a few cores or a container given a share of a large host. */
#ifndef HT_CORE_CPUS_H
#define HT_CORE_CPUS_H

/* The CPUs of this process's affinity mask, or fewer when its control group's CPU quota allows
 * fewer (cgroup v2 cpu.max, v1 cpu.cfs_quota_us over cpu.cfs_period_us, rounded up; the tightest
 * of the group and its parents). At least 1. */
int ht_cpus_usable(void);
/* The same from given sources, for tests of other machines: affinity (< 1: this process's mask),
 * proc_cgroup a file like /proc/self/cgroup, root the folder cgroups are mounted on. */
int ht_cpus_usable_at(int affinity, const char *proc_cgroup, const char *root);

#endif
