/* Running a tool (the C compiler, nvcc) with its output captured: posix_spawn, not system(), so
 * no shell and no quoting problems. The tool runs in its own process group: a deadline kills it
 * with every process it started (cc1, as, a wrapper's children), and whatever it leaves running
 * in its group is killed when it exits, so no tool outlives the call. */
#define _GNU_SOURCE /* posix_spawn_file_actions_addchdir_np */
#include "core/process.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hetune/core.h"

extern char **environ;

static _Thread_local double limit_deadline, limit_seconds; /* ht_run_capture_limit; 0: none */
static _Thread_local const char *limit_what;
static volatile sig_atomic_t running_tool; /* the tool's pid, which is its process group */

void ht_run_capture_limit(double seconds, const char *what) {
  limit_deadline = seconds > 0 ? ht_now() + seconds : 0;
  limit_seconds = seconds;
  limit_what = what;
}

void ht_run_capture_kill(void) {
  pid_t pid = running_tool;
  if (pid > 0) kill(-pid, SIGKILL);
}

int ht_child_exited(pid_t pid) {
  siginfo_t si;
  memset(&si, 0, sizeof si);
  if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0) return 1;
  return si.si_pid == pid;
}

int ht_child_wait_readable(int fd, pid_t pid, double deadline) {
  for (;;) {
    double left = deadline - ht_now();
    if (left <= 0) return -2;
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    int pr = poll(&pf, 1, left > 0.05 ? 50 : (int)(left * 1000) + 1); /* 50 ms: how soon an exit is seen */
    if (pr > 0) return 1;
    if (pr < 0 && errno != EINTR) return 0;
    if (pr == 0 && ht_child_exited(pid) && poll(&pf, 1, 0) == 0) return 0;
  }
}

/* A pidfd turns readable when its process exits; kernels before 5.3 have none: then we look every
 * millisecond. */
int ht_child_wait_exit(pid_t pid, double deadline) {
  int fd = -1;
#ifdef SYS_pidfd_open
  fd = (int)syscall(SYS_pidfd_open, pid, 0);
#endif
  int exited;
  for (;;) {
    exited = ht_child_exited(pid);
    double left = deadline - ht_now();
    if (exited || left <= 0) break;
    int ms = left > 1 ? 1000 : (int)(left * 1000) + 1;
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    if (fd >= 0) poll(&pf, 1, ms);
    else poll(NULL, 0, 1);
  }
  if (fd >= 0) close(fd);
  return exited;
}

int ht_child_kill_group(pid_t pid) {
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL); /* should it not lead a group of its own */
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

static ht_status spawn(char *const argv[], const char *dir, int out_fd, int close_fd, pid_t *pid) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
  posix_spawn_file_actions_adddup2(&fa, out_fd, 2);
  posix_spawn_file_actions_addclose(&fa, close_fd);
  posix_spawn_file_actions_addclose(&fa, out_fd);
  if (dir) posix_spawn_file_actions_addchdir_np(&fa, dir);
  /* Its own process group, default signal handling (a worker ignores SIGINT) and no blocked signals. */
  posix_spawnattr_t at;
  posix_spawnattr_init(&at);
  sigset_t none, dflt;
  sigemptyset(&none);
  sigemptyset(&dflt);
  sigaddset(&dflt, SIGINT);
  sigaddset(&dflt, SIGPIPE);
  sigaddset(&dflt, SIGTERM);
  posix_spawnattr_setpgroup(&at, 0);
  posix_spawnattr_setsigmask(&at, &none);
  posix_spawnattr_setsigdefault(&at, &dflt);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  int rc = posix_spawnp(pid, argv[0], &fa, &at, argv, environ);
  posix_spawnattr_destroy(&at);
  posix_spawn_file_actions_destroy(&fa);
  return rc ? ht_error(HT_ERR_NOTFOUND, "cannot run '%s': %s", argv[0], strerror(rc)) : HT_OK;
}

/* Reads the tool's output until it has exited and the pipe is drained, or until the deadline: 1
 * when the deadline passed. A process the tool left behind may hold the pipe: its exit ends it. */
static int drain(int fd, pid_t pid, double deadline, ht_buf *b) {
  for (;;) {
    int rc = ht_child_wait_readable(fd, pid, deadline);
    if (rc != 1) return rc == -2;
    char chunk[4096];
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    ht_buf_append_bytes(b, chunk, (size_t)n);
  }
  return !ht_child_wait_exit(pid, deadline); /* its output closed: now its exit */
}

ht_status ht_run_capture(char *const argv[], const char *dir, double timeout_s, char **log, int *exit_code) {
  int fds[2];
  *log = NULL;
  *exit_code = -1;
  if (pipe2(fds, O_CLOEXEC) != 0) return ht_error(HT_ERR_IO, "pipe: %s", strerror(errno));
  pid_t pid;
  ht_status st = spawn(argv, dir, fds[1], fds[0], &pid);
  close(fds[1]);
  if (st) {
    close(fds[0]);
    return st;
  }
  running_tool = pid;
  double deadline = timeout_s > 0 ? ht_now() + timeout_s : INFINITY;
  const int limited = limit_deadline > 0 && limit_deadline < deadline;
  if (limited) deadline = limit_deadline;
  ht_buf b = {0};
  int timed_out = drain(fds[0], pid, deadline, &b);
  close(fds[0]);
  int ws = ht_child_kill_group(pid); /* on a timeout the tool's tree, else what it left running */
  running_tool = 0;
  *log = b.data ? b.data : ht_strdup("");
  if (timed_out && limited)
    return ht_error(HT_ERR_TIMEOUT, "'%s' did not finish within %.3g s (the %s); it and the processes it started were killed",
                    argv[0], limit_seconds, limit_what);
  if (timed_out)
    return ht_error(HT_ERR_TIMEOUT, "'%s' ran longer than %.3g s; it and the processes it started were killed", argv[0],
                    timeout_s);
  *exit_code = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
  return HT_OK;
}
