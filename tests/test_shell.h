/* Running the hetune command through the shell from a test, its output captured. */
#ifndef HT_TEST_SHELL_H
#define HT_TEST_SHELL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* Runs "hetune ARGS" in folder dir (NULL: here), stdout and stderr together into out; returns its
 * exit code (128 when it did not exit). */
static inline int run_shell(const char *dir, const char *args, char *out, size_t len) {
  size_t need = strlen(args) + strlen(HT_CLI) + (dir ? strlen(dir) : 0) + 32;
  char *cmd = malloc(need);
  if (!cmd) return 128;
  snprintf(cmd, need, "%s%s%s%s %s 2>&1", dir ? "cd '" : "", dir ? dir : "", dir ? "' && " : "", HT_CLI, args);
  FILE *p = popen(cmd, "r");
  free(cmd);
  size_t n = p ? fread(out, 1, len - 1, p) : 0;
  out[n] = 0;
  int rc = p ? pclose(p) : -1;
  return rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

#endif
