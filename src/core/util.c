/* Hashing, files, strings, logging. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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

/* "64 MiB", "1000 bytes": a limit in the unit users think in. */
static void fmt_bytes(size_t n, char *out, size_t len) {
  if (n >= (1u << 20) && n % (1u << 20) == 0) snprintf(out, len, "%zu MiB", n >> 20);
  else snprintf(out, len, "%zu bytes", n);
}

/* Opens path for reading if it is a regular file of at most max bytes. O_NONBLOCK: opening a FIFO
 * must not wait for a writer before it can be refused. */
static ht_status open_regular(const char *path, size_t max, int *fd_out, size_t *size) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return ht_error(HT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  struct stat st;
  char lim[32];
  fmt_bytes(max, lim, sizeof lim);
  ht_status s = HT_OK;
  if (fstat(fd, &st) != 0) s = ht_error(HT_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
  else if (!S_ISREG(st.st_mode))
    s = ht_error(HT_ERR_IO, "%s: not a regular file (a %s): hetune reads only files", path,
                 S_ISDIR(st.st_mode)    ? "folder"
                 : S_ISFIFO(st.st_mode) ? "pipe"
                 : S_ISSOCK(st.st_mode) ? "socket"
                                        : "device");
  else if ((uintmax_t)st.st_size > (uintmax_t)max)
    s = ht_error(HT_ERR_IO, "%s: %lld bytes, more than the limit of %s", path, (long long)st.st_size, lim);
  if (s) {
    close(fd);
    return s;
  }
  *fd_out = fd;
  *size = (size_t)st.st_size;
  return HT_OK;
}

ht_status ht_read_file_max(const char *path, size_t max, char **out, size_t *len) {
  int fd;
  size_t size;
  ht_status s = open_regular(path, max, &fd, &size);
  if (s) return s;
  /* One byte more than the size: a file that grows while being read is caught, not cut short. */
  char *data = malloc(size + 2);
  size_t n = 0;
  if (!data) s = ht_error(HT_ERR_NOMEM, "%s: out of memory reading %zu bytes", path, size);
  while (!s && n < size + 1) {
    ssize_t k = read(fd, data + n, size + 1 - n);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (k < 0) s = ht_error(HT_ERR_IO, "%s: read error: %s", path, strerror(errno));
    if (k <= 0) break;
    n += (size_t)k;
  }
  close(fd);
  if (!s && n > size) s = ht_error(HT_ERR_IO, "%s: the file grew while being read", path);
  if (s) {
    free(data);
    return s;
  }
  data[n] = '\0';
  *out = data;
  if (len) *len = n;
  return HT_OK;
}

ht_status ht_read_file(const char *path, char **out, size_t *len) {
  return ht_read_file_max(path, HT_READ_FILE_MAX, out, len);
}

ht_status ht_check_regular_file(const char *path, size_t max) {
  int fd;
  size_t size;
  ht_status s = open_regular(path, max, &fd, &size);
  if (!s) close(fd);
  return s;
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

/* Length of the cache folder's path when path is that folder or inside it, else 0. */
static size_t in_cache(const char *path) {
  const char *root = ht_cache_dir();
  size_t n = strlen(root);
  return n && strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/') ? n : 0;
}

/* Inside the cache: created 0700 and checked, since hetune loads and runs what it finds there. */
static ht_status mkdir_one(const char *p, size_t cache_len) {
  if (mkdir(p, cache_len ? 0700 : 0755) != 0 && errno != EEXIST)
    return ht_error(HT_ERR_IO, "%s: cannot create folder: %s", p, strerror(errno));
  if (!cache_len) return HT_OK;
  return strlen(p) >= cache_len ? ht_check_private_dir(p) : ht_check_cache_ancestor(p);
}

ht_status ht_mkdir_p(const char *path) {
  char *p = ht_strdup(path);
  if (!p) return ht_error(HT_ERR_NOMEM, "out of memory");
  size_t cache_len = in_cache(path);
  ht_status s = *p ? HT_OK : ht_error(HT_ERR_INVALID, "cannot create a folder with an empty name");
  for (char *q = p + 1; !s; q++) {
    if (*q == '/' || *q == '\0') {
      char c = *q;
      *q = '\0';
      if (q[-1] != '/') s = mkdir_one(p, cache_len);
      *q = c;
      if (c == '\0') break;
    }
  }
  free(p);
  return s;
}

const char *ht_cache_dir(void) {
  static _Thread_local char dir[4096];
  const char *env = getenv("HETUNE_CACHE_DIR");
  if (env && *env) snprintf(dir, sizeof dir, "%s", env);
  else if ((env = getenv("XDG_CACHE_HOME")) && *env) snprintf(dir, sizeof dir, "%s/hetune", env);
  else if ((env = getenv("HOME")) && *env) snprintf(dir, sizeof dir, "%s/.cache/hetune", env);
  else snprintf(dir, sizeof dir, "/tmp/hetune-cache-%d", (int)geteuid());
  size_t n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/') dir[--n] = '\0'; /* "dir/" and "dir" are one cache */
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
