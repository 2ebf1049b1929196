/* Hashing, files, strings, logging. */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hetune/core.h"

uint64_t ht_hash64(const void *data, size_t n, uint64_t seed) {
  uint64_t h = seed ? seed : 0xcbf29ce484222325ULL;
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

uint64_t ht_hash_str(const char *s, uint64_t seed) {
  /* Hash the terminator too, so ("ab","c") and ("a","bc") chain differently. */
  return s ? ht_hash64(s, strlen(s) + 1, seed) : ht_hash64("", 1, seed ^ 0x5bd1e995);
}

void ht_hash_hex(uint64_t h, char out[17]) { snprintf(out, 17, "%016llx", (unsigned long long)h); }

ht_status ht_read_file(const char *path, char **out, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return ht_error(HT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  ht_buf b = {0};
  char chunk[65536];
  size_t n;
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    if (b.len + n + 1 > b.cap) {
      size_t cap = (b.cap ? b.cap * 2 : 65536) + n;
      char *p = realloc(b.data, cap);
      if (!p) {
        fclose(f);
        free(b.data);
        return ht_error(HT_ERR_NOMEM, "%s: out of memory reading the file", path);
      }
      b.data = p;
      b.cap = cap;
    }
    memcpy(b.data + b.len, chunk, n);
    b.len += n;
  }
  int err = ferror(f);
  fclose(f);
  if (err) {
    free(b.data);
    return ht_error(HT_ERR_IO, "%s: read error", path);
  }
  if (!b.data) b.data = calloc(1, 1);
  else b.data[b.len] = '\0';
  if (!b.data) return ht_error(HT_ERR_NOMEM, "out of memory");
  *out = b.data;
  if (len) *len = b.len;
  return HT_OK;
}

/* A unique temporary (mkstemp) then rename: safe when threads or processes write the same path. */
ht_status ht_write_file_atomic(const char *path, const void *data, size_t len) {
  char *tmp = ht_strfmt("%s.tmp.XXXXXX", path);
  if (!tmp) return ht_error(HT_ERR_NOMEM, "out of memory");
  int fd = mkstemp(tmp);
  if (fd < 0) {
    ht_status s = ht_error(HT_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    free(tmp);
    return s;
  }
  int ok = ht_fd_write_all(fd, data, len) == 0;
  ok = (close(fd) == 0) && ok;
  if (!ok || rename(tmp, path) != 0) {
    ht_status s = ht_error(HT_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    unlink(tmp);
    free(tmp);
    return s;
  }
  free(tmp);
  return HT_OK;
}

int ht_fd_write_all(int fd, const void *data, size_t len) {
  const char *p = data;
  while (len) {
    ssize_t k = write(fd, p, len);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    p += k;
    len -= (size_t)k;
  }
  return 0;
}

int ht_fd_read_all(int fd, void *data, size_t len, double deadline) {
  char *p = data;
  while (len) {
    double left = deadline - ht_now();
    if (left <= 0) return -2;
    struct pollfd pfd = {fd, POLLIN, 0};
    int pr = poll(&pfd, 1, (int)(left * 1000) + 1);
    if (pr < 0 && errno == EINTR) continue;
    if (pr == 0) return -2;
    ssize_t k = read(fd, p, len);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    p += k;
    len -= (size_t)k;
  }
  return 0;
}

char *ht_strdup(const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (p) memcpy(p, s, n);
  return p;
}

char *ht_strfmt(const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *p = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (p) vsnprintf(p, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  return p;
}

ht_status ht_mkdir_p(const char *path) {
  char *p = ht_strdup(path);
  if (!p) return ht_error(HT_ERR_NOMEM, "out of memory");
  for (char *q = p + 1;; q++) {
    if (*q == '/' || *q == '\0') {
      char c = *q;
      *q = '\0';
      if (mkdir(p, 0755) != 0 && errno != EEXIST) {
        ht_status s = ht_error(HT_ERR_IO, "%s: cannot create folder: %s", p, strerror(errno));
        free(p);
        return s;
      }
      *q = c;
      if (c == '\0') break;
    }
  }
  free(p);
  return HT_OK;
}

const char *ht_cache_dir(void) {
  static _Thread_local char dir[4096];
  const char *env = getenv("HETUNE_CACHE_DIR");
  if (env && *env) snprintf(dir, sizeof dir, "%s", env);
  else if ((env = getenv("XDG_CACHE_HOME")) && *env) snprintf(dir, sizeof dir, "%s/hetune", env);
  else if ((env = getenv("HOME")) && *env) snprintf(dir, sizeof dir, "%s/.cache/hetune", env);
  else snprintf(dir, sizeof dir, "/tmp/hetune-cache-%d", (int)getuid());
  return dir;
}

static void buf_reserve(ht_buf *b, size_t extra) {
  if (b->failed || b->len + extra + 1 <= b->cap) return;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra + 1) cap *= 2;
  char *p = realloc(b->data, cap);
  if (!p) {
    b->failed = 1;
    return;
  }
  b->data = p;
  b->cap = cap;
}

void ht_buf_append(ht_buf *b, const char *s) {
  size_t n = strlen(s);
  buf_reserve(b, n);
  if (b->failed) return;
  memcpy(b->data + b->len, s, n + 1);
  b->len += n;
}

void ht_buf_append_bytes(ht_buf *b, const void *data, size_t n) {
  buf_reserve(b, n);
  if (b->failed) return;
  memcpy(b->data + b->len, data, n);
  b->len += n;
  b->data[b->len] = 0;
}

void ht_buf_appendf(ht_buf *b, const char *fmt, ...) {
  va_list ap, ap2;
  va_start(ap, fmt);
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n > 0) {
    buf_reserve(b, (size_t)n);
    if (!b->failed) {
      vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap2);
      b->len += (size_t)n;
    }
  }
  va_end(ap2);
}

void ht_buf_free(ht_buf *b) {
  free(b->data);
  memset(b, 0, sizeof *b);
}

void ht_log(int level, const char *fmt, ...) {
  const char *env = getenv("HETUNE_LOG");
  int max = env ? atoi(env) : 1;
  if (level > max) return;
  va_list ap;
  va_start(ap, fmt);
  fputs("hetune: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}
