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

/* A folder of this process's own under /tmp, created once. */
static inline const char *fuzz_dir(void) {
  static char dir[64];
  if (!dir[0]) {
    snprintf(dir, sizeof dir, "/tmp/hetune-fuzz-%d", (int)getpid());
    if (ht_mkdir_p(dir)) abort();
  }
  return dir;
}

/* Writes data to NAME in fuzz_dir() and returns its path (static storage). */
static inline const char *fuzz_file(const char *name, const uint8_t *data, size_t size) {
  static char path[128];
  snprintf(path, sizeof path, "%s/%s", fuzz_dir(), name);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, size, f) != size || fclose(f)) abort();
  return path;
}

#endif
