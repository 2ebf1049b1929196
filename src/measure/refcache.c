/* Reference outputs kept on disk, so a tuning run, a restarted worker or the next `hetune gemm`
 * stage does not compute the reference again (at 2048^3 and above that costs seconds each time).
 * A file holds the written buffers of one (spec version, problem size, reference device) with a
 * hash of its contents; a file that does not match is ignored and rewritten. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/backend.h"
#include "measure/evaluator.h"

#define MAGIC "HTREF001"

/* <cache>/ref/<key>.bin (malloc'ed), or NULL when the cache folder is not usable. */
static char *ref_path(uint64_t key) {
  char *dir = NULL, hex[17];
  if (ht_cache_subdir("ref", &dir)) {
    ht_error_clear();
    return NULL;
  }
  ht_hash_hex(key, hex);
  char *p = ht_strfmt("%s/%s.bin", dir, hex);
  free(dir);
  return p;
}

uint64_t ht_refcache_key(const ht_spec *s, const ht_device_info *ref_dev) {
  char problem[1024];
  ht_spec_problem_key(s, problem, sizeof problem);
  uint64_t h = ht_hash_str(s->source_hash, ht_hash_str(MAGIC, 0));
  h = ht_hash_str(problem, h);
  h = ht_hash_str(ref_dev->fingerprint, h);
  return s->reference.lang == HT_LANG_C ? ht_c_toolchain_hash(h) : h;
}

static size_t expected_size(int n, const size_t *bytes) {
  size_t total = 8 + 8 * (size_t)n + 8;
  for (int i = 0; i < n; i++) total += bytes[i];
  return total;
}

int ht_refcache_get(uint64_t key, void *const *bufs, const size_t *bytes, int n) {
  char *path = ref_path(key), *data = NULL;
  size_t len = 0, want = expected_size(n, bytes);
  int ok = path && ht_read_file_max(path, want, &data, &len) == HT_OK && len == want &&
           memcmp(data, MAGIC, 8) == 0;
  for (int i = 0; ok && i < n; i++) {
    uint64_t b;
    memcpy(&b, data + 8 + 8 * (size_t)i, 8);
    ok = b == bytes[i];
  }
  uint64_t stored;
  if (ok) memcpy(&stored, data + len - 8, 8);
  ok = ok && stored == ht_hash64(data, len - 8, 0);
  for (size_t i = 0, at = 8 + 8 * (size_t)n; ok && i < (size_t)n; at += bytes[i++]) memcpy(bufs[i], data + at, bytes[i]);
  free(data);
  free(path);
  ht_error_clear();
  return ok;
}

void ht_refcache_put(uint64_t key, void *const *bufs, const size_t *bytes, int n) {
  char *path = ref_path(key);
  size_t len = expected_size(n, bytes), at = 8 + 8 * (size_t)n;
  char *data = path ? malloc(len) : NULL;
  if (data) {
    memcpy(data, MAGIC, 8);
    for (int i = 0; i < n; i++) {
      uint64_t b = bytes[i];
      memcpy(data + 8 + 8 * (size_t)i, &b, 8);
      memcpy(data + at, bufs[i], bytes[i]);
      at += bytes[i];
    }
    uint64_t h = ht_hash64(data, len - 8, 0);
    memcpy(data + len - 8, &h, 8);
    if (ht_write_file_atomic(path, data, len)) ht_log(2, "reference cache: %s", ht_last_error());
  }
  ht_error_clear(); /* a cache that cannot be written only costs a recomputation */
  free(data);
  free(path);
}
