/* Running the hetune command from a test: its exit code, stdout and stderr, with a deadline, and
 * the one-error-line expectation of bad input. Included by the CLI tests (static functions). */
#ifndef HT_CLI_TEST_UTIL_H
#define HT_CLI_TEST_UTIL_H

#include <ftw.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RUN_TIMEOUT_S 120
#define NOBODY 65534

/* ---- running the command ---- */

typedef struct run_out {
  int rc; /* exit code, or 128 + signal */
  char cmd[1024];
  char out[16384], err[16384];
} run_out;

typedef struct run_opts {
  int as_nobody;    /* drop to uid/gid 65534: root ignores file permissions */
  rlim_t max_fsize; /* 0 = no limit; else writes past it fail with EFBIG */
} run_opts;

static void child_exec(const run_opts *o, int out_fd, int err_fd, char **argv) {
  dup2(out_fd, 1);
  dup2(err_fd, 2);
  if (o && o->max_fsize) {
    struct rlimit rl = {o->max_fsize, o->max_fsize};
    signal(SIGXFSZ, SIG_IGN);
    setrlimit(RLIMIT_FSIZE, &rl);
  }
  if (o && o->as_nobody && (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))) _exit(126);
  execv(argv[0], argv);
  _exit(127);
}

static void drain(int fd, char *buf, size_t cap, size_t *len, int *open_) {
  ssize_t n = read(fd, buf + *len, cap - 1 - *len);
  if (n <= 0) {
    *open_ = 0;
    return;
  }
  *len += (size_t)n;
  buf[*len] = '\0';
  if (*len == cap - 1) *len = 0; /* keep reading so the child never blocks; tests see the tail */
}

static void run_argv(run_out *r, const run_opts *o, char **argv) {
  int po[2], pe[2];
  assert_int_equal(pipe(po), 0);
  assert_int_equal(pipe(pe), 0);
  memset(r, 0, sizeof *r);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) child_exec(o, po[1], pe[1], argv);
  close(po[1]);
  close(pe[1]);
  size_t lo = 0, le = 0;
  int oo = 1, eo = 1;
  time_t deadline = time(NULL) + RUN_TIMEOUT_S;
  while ((oo || eo) && time(NULL) < deadline) {
    struct pollfd p[2] = {{oo ? po[0] : -1, POLLIN, 0}, {eo ? pe[0] : -1, POLLIN, 0}};
    if (poll(p, 2, 1000) <= 0) continue;
    if (p[0].revents) drain(po[0], r->out, sizeof r->out, &lo, &oo);
    if (p[1].revents) drain(pe[0], r->err, sizeof r->err, &le, &eo);
  }
  if (oo || eo) kill(pid, SIGKILL); /* hung: fail below, never hang the test */
  int status;
  waitpid(pid, &status, 0);
  close(po[0]);
  close(pe[0]);
  r->rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (oo || eo) fail_msg("%s timed out after %d s", argv[1], RUN_TIMEOUT_S);
}

/* Runs hetune with the NULL-terminated arguments. */
static void run_as(run_out *r, const run_opts *o, ...) {
  char *argv[32] = {HT_CLI};
  int n = 1;
  va_list ap;
  va_start(ap, o);
  for (char *a; n < 31 && (a = va_arg(ap, char *));) argv[n++] = a;
  va_end(ap);
  run_argv(r, o, argv);
  for (int i = 1; i < n; i++)
    snprintf(r->cmd + strlen(r->cmd), sizeof r->cmd - strlen(r->cmd), " %s", argv[i]);
}
#define run(r, ...) run_as(r, NULL, __VA_ARGS__, (char *)NULL)

/* HT_CLI_TEST_KEEP_GOING=1 reports every mismatch of a test instead of stopping at the first. */
#define mismatch(...)                                                                                \
  do {                                                                                               \
    if (!getenv("HT_CLI_TEST_KEEP_GOING")) fail_msg(__VA_ARGS__);                                   \
    print_message(__VA_ARGS__);                                                                      \
    print_message("\n");                                                                             \
    return;                                                                                          \
  } while (0)

/* One error line on stderr holding every needle, nothing on stdout, exit code rc. */
static void expect_error_v(const run_out *r, int rc, const char *const *needles) {
  if (getenv("HT_CLI_TEST_VERBOSE")) print_message("%s", r->err);
  if (r->rc != rc || r->out[0] || !strchr(r->err, '\n') || strchr(r->err, '\n')[1])
    mismatch("hetune%s: expected exit %d, one error line and no output; got exit %d\nstdout: %s\nstderr: %s",
             r->cmd, rc, r->rc, r->out, r->err);
  for (int i = 0; needles[i]; i++)
    if (!strstr(r->err, needles[i])) mismatch("hetune%s: error line lacks \"%s\": %s", r->cmd, needles[i], r->err);
}
#define expect_error(r, rc, ...) expect_error_v(r, rc, (const char *const[]){__VA_ARGS__, NULL})

/* Removes a test's folder and everything in it (not crossing into mounts). */
static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(p);
}

static inline void rm_tree(const char *dir) { nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT); }

#endif
