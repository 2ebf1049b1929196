/* Shared by the fuzz harnesses: each defines LLVMFuzzerTestOneInput over one parser. Built with
 * clang's libFuzzer (-DHETUNE_FUZZ=ON) they search for inputs that crash or trip the sanitizers;
 * built with any compiler against replay_main.c they replay a corpus folder, so every input that
 * once failed stays a regression test. */
#ifndef HT_FUZZ_H
#define HT_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hetune/hetune.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* data as a NUL-terminated string (malloc'ed). */
static inline char *fuzz_text(const uint8_t *data, size_t size) {
  char *t = malloc(size + 1);
  if (!t) abort();
  memcpy(t, data, size);
  t[size] = '\0';
  return t;
}

/* The folder of this process's own and the files written in it, removed at exit. */
static char fuzz_dir_path[64];
static char fuzz_names[8][32];
static int fuzz_n_names;

static inline void fuzz_cleanup(void) {
  char path[512];
  for (int i = 0; i < fuzz_n_names; i++) {
    snprintf(path, sizeof path, "%s/%s", fuzz_dir_path, fuzz_names[i]);
    unlink(path);
  }
  rmdir(fuzz_dir_path);
}

/* A folder of this process's own, created once: in /dev/shm where there is one (a file written per
 * input on a disk left the harnesses waiting on it most of the time), else in /tmp. */
static inline const char *fuzz_dir(void) {
  if (!fuzz_dir_path[0]) {
    const char *base = access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(fuzz_dir_path, sizeof fuzz_dir_path, "%s/hetune-fuzz-%d", base, (int)getpid());
    if (ht_mkdir_p(fuzz_dir_path)) abort();
    atexit(fuzz_cleanup);
  }
  return fuzz_dir_path;
}

/* Writes data to NAME in fuzz_dir() and returns its path (static storage). */
static inline const char *fuzz_file(const char *name, const uint8_t *data, size_t size) {
  static char path[128];
  snprintf(path, sizeof path, "%s/%s", fuzz_dir(), name);
  int known = 0;
  for (int i = 0; i < fuzz_n_names; i++) known |= !strcmp(fuzz_names[i], name);
  if (!known && fuzz_n_names < 8) snprintf(fuzz_names[fuzz_n_names++], sizeof fuzz_names[0], "%s", name);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, size, f) != size || fclose(f)) abort();
  return path;
}

#endif
