/* Looking into a compile cache from a test. */
#ifndef HT_CACHE_TEST_UTIL_H
#define HT_CACHE_TEST_UTIL_H

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "hetune/core.h"

/* Shared objects in <cache>/c: the C kernels built there. */
static inline int cached_objects(const char *cache) {
  char *dir = ht_strfmt("%s/c", cache);
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    n += len > 3 && strcmp(e->d_name + len - 3, ".so") == 0;
  }
  if (d) closedir(d);
  free(dir);
  return n;
}

#endif
