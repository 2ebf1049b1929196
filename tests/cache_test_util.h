/* Looking into a compile cache from a test. */
#ifndef HT_CACHE_TEST_UTIL_H
#define HT_CACHE_TEST_UTIL_H

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hetune/core.h"

/* Shared objects in <cache>/c: the C kernels built there; with remove, they are deleted. */
static inline int each_cached_object(const char *cache, int remove) {
  char *dir = ht_strfmt("%s/c", cache);
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (len <= 3 || strcmp(e->d_name + len - 3, ".so") != 0) continue;
    n++;
    char *path = remove ? ht_strfmt("%s/%s", dir, e->d_name) : NULL;
    if (path) unlink(path);
    free(path);
  }
  if (d) closedir(d);
  free(dir);
  return n;
}

static inline int cached_objects(const char *cache) { return each_cached_object(cache, 0); }

#endif
