/* Running a tool (the C compiler, nvcc) with its output captured: posix_spawn, not system(), so
 * no shell and no quoting problems; an optional deadline kills a tool that hangs. */
#define _GNU_SOURCE /* posix_spawn_file_actions_addchdir_np */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hetune/core.h"

extern char **environ;

static ht_status spawn(char *const argv[], const char *dir, int out_fd, int close_fd, pid_t *pid) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
  posix_spawn_file_actions_adddup2(&fa, out_fd, 2);
  posix_spawn_file_actions_addclose(&fa, close_fd);
  posix_spawn_file_actions_addclose(&fa, out_fd);
  if (dir) posix_spawn_file_actions_addchdir_np(&fa, dir);
  int rc = posix_spawnp(pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  return rc ? ht_error(HT_ERR_NOTFOUND, "cannot run '%s': %s", argv[0], strerror(rc)) : HT_OK;
}

/* Reads the pipe until EOF or the deadline (<= 0: none); 1 when the deadline passed. */
static int drain(int fd, double deadline, ht_buf *b) {
  for (;;) {
    double left = deadline > 0 ? deadline - ht_now() : 1e9;
    if (left <= 0) return 1;
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    int pr = poll(&pf, 1, left > 1e6 ? -1 : (int)(left * 1000) + 1);
    if (pr <= 0) continue; /* EINTR, or a timeout the next turn notices */
    char chunk[4096];
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return 0;
    ht_buf_append_bytes(b, chunk, (size_t)n);
  }
}

ht_status ht_run_capture(char *const argv[], const char *dir, double timeout_s, char **log, int *exit_code) {
  int fds[2];
  *log = NULL;
  *exit_code = -1;
  if (pipe(fds) != 0) return ht_error(HT_ERR_IO, "pipe: %s", strerror(errno));
  pid_t pid;
  ht_status st = spawn(argv, dir, fds[1], fds[0], &pid);
  close(fds[1]);
  if (st) {
    close(fds[0]);
    return st;
  }
  ht_buf b = {0};
  int timed_out = drain(fds[0], timeout_s > 0 ? ht_now() + timeout_s : 0, &b);
  if (timed_out) kill(pid, SIGKILL);
  close(fds[0]);
  int ws = 0;
  while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
  }
  *log = b.data ? b.data : ht_strdup("");
  if (timed_out) return ht_error(HT_ERR_TIMEOUT, "'%s' ran longer than %.0f s", argv[0], timeout_s);
  *exit_code = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
  return HT_OK;
}
