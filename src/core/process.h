/* Child processes, for the runner and the tool runner (process.c): waiting on a pipe while
 * watching the writer's exit, and bounding the tools a compilation runs. */
#ifndef HT_CORE_PROCESS_H
#define HT_CORE_PROCESS_H

#include <sys/types.h>

/* 1 once the child pid has exited (or is no longer ours to wait for); it is not reaped. */
int ht_child_exited(pid_t pid);
/* Waits until fd is readable (1), the child pid has exited with nothing left to read (0) or the
 * deadline (an ht_now() time) passes (-2). Watching the exit, not only the pipe, matters: a process
 * the child forked may hold the pipe open after the child died. */
int ht_child_wait_readable(int fd, pid_t pid, double deadline);
/* Waits until the child pid has exited (1; it is not reaped) or the deadline passes (0). Woken by
 * the exit itself (a pidfd), not by polling at intervals, so a short-lived tool costs no sleep. */
int ht_child_wait_exit(pid_t pid, double deadline);
/* Kills the process group of pid (SIGKILL) and reaps pid: its wait status. The group is killed
 * before pid is reaped, so the group id cannot have been reused by then. */
int ht_child_kill_group(pid_t pid);

/* Bounds every ht_run_capture of this thread from now on: after `seconds` (0: no bound) the tool
 * is killed with its process group, and the run fails with HT_ERR_TIMEOUT naming `what` (a static
 * string such as "compile timeout"). */
void ht_run_capture_limit(double seconds, const char *what);
/* Kills the tool ht_run_capture is running now, with its process group. Async-signal-safe. */
void ht_run_capture_kill(void);

#endif
