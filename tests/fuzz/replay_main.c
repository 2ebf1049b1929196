/* Runs a fuzz harness over files and folders given as arguments (a corpus), without libFuzzer:
 * what the ctest "fuzz_corpus_*" tests run in every build. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int replay_file(const char *path) {
  char *data = NULL;
  size_t len = 0;
  if (ht_read_file(path, &data, &len)) {
    fprintf(stderr, "%s\n", ht_last_error());
    return 1;
  }
  LLVMFuzzerTestOneInput((const uint8_t *)data, len);
  free(data);
  return 0;
}

static int replay(const char *path, int *n) {
  struct stat sb;
  if (stat(path, &sb)) {
    perror(path);
    return 1;
  }
  if (!S_ISDIR(sb.st_mode)) return ++*n, replay_file(path);
  DIR *d = opendir(path);
  if (!d) return perror(path), 1;
  int rc = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char child[4096];
    snprintf(child, sizeof child, "%s/%s", path, e->d_name);
    rc |= replay(child, n);
  }
  closedir(d);
  return rc;
}

int main(int argc, char **argv) {
  int rc = 0, n = 0;
  for (int i = 1; i < argc; i++) rc |= replay(argv[i], &n);
  printf("replayed %d inputs\n", n);
  return rc || n == 0;
}
