/* Helpers shared by the generated-GEMM tests of the OpenCL and CUDA targets (one test executable
 * each, so these are static): a scratch folder, the device probe in a child process, problems and
 * generated specs. Include after cmocka.h. */
#ifndef HT_GEMM_TEST_UTIL_H
#define HT_GEMM_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gemm/gemm_internal.h"
#include "hetune/hetune.h"

static char tmpdir[256];

/* Whether the device opens, asked in a child process: this process must not start the OpenCL or
 * GPU runtime itself, since the runner forks its worker from it (runtime threads and state do not
 * survive fork). */
static int device_in_child(const char *id) {
  pid_t pid = fork();
  if (pid == 0) {
    ht_device *d;
    _exit(ht_device_open(id, &d) == HT_OK ? 0 : 1);
  }
  int status = 0;
  return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* Creates tmpdir from a mkdtemp pattern ("/tmp/ht_gemm_ocl_XXXXXX"): 0, or -1. */
static int make_tmpdir(const char *pattern) {
  snprintf(tmpdir, sizeof tmpdir, "%s", pattern);
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  return system(cmd) == 0 ? 0 : -1;
}

static ht_gemm_problem problem(int64_t m, int64_t n, int64_t k, ht_dtype t, int ta, int tb, double alpha, double beta) {
  ht_gemm_problem p = {.m = m, .n = n, .k = k, .type = t, .trans_a = ta, .trans_b = tb, .alpha = alpha, .beta = beta};
  return p;
}

typedef ht_status (*gen_fn)(const ht_gemm_problem *, const char *, char **);

/* The generated spec of p, written into tmpdir/sub and loaded. */
static ht_spec *generate(gen_fn gen, const ht_gemm_problem *p, const char *sub) {
  char dir[512];
  snprintf(dir, sizeof dir, "%s/%s", tmpdir, sub);
  char *path = NULL;
  if (gen(p, dir, &path)) fail_msg("generate: %s", ht_last_error());
  ht_spec *s = NULL;
  if (ht_spec_load(path, &s)) fail_msg("%s: %s", path, ht_last_error());
  free(path);
  return s;
}

#endif
