/* How much memory this process may use (memory.c): what a c device offers kernels and transfer
 * probes, where the machine's physical memory would overstate a container's share of a host. */
#ifndef HT_CORE_MEMORY_H
#define HT_CORE_MEMORY_H

#include <stdint.h>

/* The machine's physical memory, or less when the process's control group limits it (cgroup v2
 * memory.max, v1 memory.limit_in_bytes; the tightest of the group and its parents), in bytes. */
uint64_t ht_memory_usable(void);
/* The same from given sources, for tests of other machines: physical bytes (0: this machine's),
 * proc_cgroup a file like /proc/self/cgroup, root the folder cgroups are mounted on. */
uint64_t ht_memory_usable_at(uint64_t physical, const char *proc_cgroup, const char *root);

#endif
