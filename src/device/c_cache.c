/* The C backend's cache entries: <key>.so, the compiled kernel, and <key>.deps, its manifest: the
 * .so's size and hash when it was written, and the content hash of every file the compiler read
 * (its -MD dependency list). A lookup hashes those files again, so a header edit rebuilds; and it
 * loads the .so only while it is the one written, so a damaged or replaced binary is rebuilt,
 * never run. */
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "device/backend.h"

/* <key>.ext for the entry <key>.so */
static char *entry_file(const char *sofile, const char *ext) {
  size_t n = strlen(sofile);
  if (n > 3 && strcmp(sofile + n - 3, ".so") == 0) n -= 3;
  return ht_strfmt("%.*s.%s", (int)n, sofile, ext);
}

/* The hash of a .so, checked on every load: eight bytes a step, where FNV-1a (ht_hash64), a byte
 * a step, took tens of microseconds per config. */
static uint64_t binary_hash(const void *data, size_t n) {
  const unsigned char *p = data;
  uint64_t h = 0x9e3779b97f4a7c15ULL ^ (n * 0xff51afd7ed558ccdULL), w;
  for (; n >= 8; p += 8, n -= 8) {
    memcpy(&w, p, 8);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 31;
  }
  w = 0;
  memcpy(&w, p, n);
  h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
  return h ^ (h >> 29);
}

static ht_status file_hash(const char *path, uint64_t *h) {
  char *text = NULL;
  size_t len = 0;
  ht_status s = ht_read_file(path, &text, &len);
  if (!s) *h = ht_hash64(text, len, 0);
  free(text);
  return s;
}

/* The hashes of the files a kernel read (system headers mostly: dozens per kernel), remembered
 * while their status stays the same, so each cached lookup costs a stat per file, not a read and
 * a hash (0.6 ms per config before). A file that changes changes its size, times or inode.
 *
 * A system header (under /usr, not /usr/local) changes only when a package is upgraded, so its
 * status is read again only once HT_SYSTEM_FILE_RECHECK_S has passed since the last read: a
 * kernel that includes <stdint.h> reads 30 such files, and a stat each per config was a third of
 * a cached config's lookup and load. A kernel's own headers are read on every lookup: an edit
 * rebuilds at once. */
enum { MEMO_SLOTS = 512 };
typedef struct memo_entry {
  char *path;
  dev_t dev;
  ino_t ino;
  off_t size;
  struct timespec mtime, ctime;
  uint64_t hash;
  double read_at; /* ht_now() of the last stat */
} memo_entry;
static memo_entry memo[MEMO_SLOTS];
static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;

double ht_c_file_recheck_s(const char *path) {
  int system = strncmp(path, "/usr/", 5) == 0 && strncmp(path, "/usr/local/", 11) != 0 && !strstr(path, "/../");
  return system ? HT_SYSTEM_FILE_RECHECK_S : 0;
}

static int same_status(const memo_entry *m, const struct stat *st) {
  return m->dev == st->st_dev && m->ino == st->st_ino && m->size == st->st_size &&
         m->mtime.tv_sec == st->st_mtim.tv_sec && m->mtime.tv_nsec == st->st_mtim.tv_nsec &&
         m->ctime.tv_sec == st->st_ctim.tv_sec && m->ctime.tv_nsec == st->st_ctim.tv_nsec;
}

/* The hash m remembers for path, while its recheck time has not passed since its last stat. */
static int memo_recent(memo_entry *m, const char *path, double now, uint64_t *h) {
  pthread_mutex_lock(&memo_lock);
  int hit = m->path && strcmp(m->path, path) == 0 && now - m->read_at < ht_c_file_recheck_s(path);
  if (hit) *h = m->hash;
  pthread_mutex_unlock(&memo_lock);
  return hit;
}

ht_status ht_c_file_hash(const char *path, uint64_t *h) {
  double now = ht_now();
  memo_entry *m = &memo[ht_hash_str(path, 0) % MEMO_SLOTS];
  if (memo_recent(m, path, now, h)) return HT_OK;
  struct stat st;
  if (stat(path, &st) != 0) return ht_error(HT_ERR_IO, "%s: %s", path, strerror(errno));
  pthread_mutex_lock(&memo_lock);
  int hit = m->path && strcmp(m->path, path) == 0 && same_status(m, &st);
  if (hit) {
    *h = m->hash;
    m->read_at = now;
  }
  pthread_mutex_unlock(&memo_lock);
  if (hit) return HT_OK;
  ht_status s = file_hash(path, h);
  if (s) return s;
  pthread_mutex_lock(&memo_lock);
  free(m->path);
  *m = (memo_entry){ht_strdup(path), st.st_dev, st.st_ino, st.st_size, st.st_mtim, st.st_ctim, *h, now};
  pthread_mutex_unlock(&memo_lock);
  return HT_OK;
}

/* ---- the compiler's dependency list ---- */

/* The next path of a make rule as gcc and clang write it (-MD): blanks separate, backslash-newline
 * continues, "\ " is a space, "\#" a '#', "$$" a '$'. 0 at the end, -1 for a path too long. */
static int next_path(const char **pp, char *out, size_t cap) {
  const char *p = *pp;
  for (;;) {
    p += strspn(p, " \t\r\n");
    if (p[0] != '\\' || (p[1] != '\n' && p[1] != '\r')) break;
    p += 2;
  }
  if (!*p) return 0;
  size_t n = 0;
  while (*p && !strchr(" \t\r\n", *p) && !(p[0] == '\\' && (p[1] == '\n' || p[1] == '\r'))) {
    char c = *p++;
    if ((c == '\\' && (*p == ' ' || *p == '#')) || (c == '$' && *p == '$')) c = *p++;
    if (n + 1 >= cap) return -1;
    out[n++] = c;
  }
  out[n] = '\0';
  *pp = p;
  return 1;
}

/* "dep <hash> <real path>" for each file of the rule in depfile but cfile (the temporary copy of
 * the source, gone after the build). 0 when the list was read. */
static int append_deps(ht_buf *m, const char *depfile, const char *cfile) {
  char *text = NULL, path[PATH_MAX], real[PATH_MAX], hex[17];
  if (ht_read_file(depfile, &text, NULL)) {
    ht_error_clear();
    return -1;
  }
  const char *p = text;
  int rc, in_deps = 0, n = 0;
  while ((rc = next_path(&p, path, sizeof path)) > 0) {
    size_t len = strlen(path);
    if (!in_deps) {
      in_deps = len && path[len - 1] == ':'; /* the target, "x.so:" */
      continue;
    }
    uint64_t h;
    if (strcmp(path, cfile) == 0 || !realpath(path, real) || strchr(real, '\n')) continue;
    if (file_hash(real, &h)) {
      rc = -1;
      break;
    }
    ht_hash_hex(h, hex);
    ht_buf_appendf(m, "dep %s %s\n", hex, real);
    n++;
  }
  free(text);
  ht_error_clear();
  return rc < 0 || !in_deps ? -1 : 0;
}

/* ---- one builder at a time ---- */

ht_status ht_c_cache_lock(const char *sofile, int *fd) {
  char *path = entry_file(sofile, "lock");
  if (!path) return ht_error(HT_ERR_NOMEM, "out of memory");
  *fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  int rc = *fd < 0 ? -1 : 0;
  while (!rc && flock(*fd, LOCK_EX) != 0)
    if (errno != EINTR) rc = -1;
  ht_status s = rc ? ht_error(HT_ERR_IO, "%s: cannot lock: %s", path, strerror(errno)) : HT_OK;
  if (s && *fd >= 0) close(*fd);
  free(path);
  return s;
}

void ht_c_cache_unlock(int fd) { close(fd); /* releases the flock */ }

/* ---- writing an entry ---- */

static ht_status hash_so(const char *path, c_cache_entry *e) {
  char *bin = NULL;
  ht_status s = ht_read_file(path, &bin, &e->size);
  if (!s) e->hash = binary_hash(bin, e->size);
  free(bin);
  return s;
}

ht_status ht_c_cache_record(const char *tmp_so, const char *sofile, const char *depfile, const char *cfile,
                            const ht_source *src, c_cache_entry *e) {
  /* The linker makes the .so as the umask says; in the cache it is private like its folder. */
  if (chmod(tmp_so, 0700) != 0) return ht_error(HT_ERR_IO, "%s: %s", tmp_so, strerror(errno));
  ht_status s = hash_so(tmp_so, e);
  if (s) return s;
  char hex[17], *mpath = entry_file(sofile, "deps");
  ht_buf m = {0};
  ht_hash_hex(e->hash, hex);
  ht_buf_appendf(&m, "so %zu %s\n", e->size, hex);
  /* A compiler without a dependency list: the #include directives, scanned. */
  if (append_deps(&m, depfile, cfile)) {
    ht_hash_hex(ht_include_hash(src->text, src->path, src->flags, 0), hex);
    ht_buf_appendf(&m, "scan %s\n", hex);
  }
  if (!mpath || m.failed) s = ht_error(HT_ERR_NOMEM, "out of memory");
  if (!s && rename(tmp_so, sofile) != 0) s = ht_error(HT_ERR_IO, "%s: cannot rename: %s", sofile, strerror(errno));
  /* Without its manifest the entry is only rebuilt next time: not worth failing this compile. */
  if (!s && ht_cache_put(mpath, m.data, m.len)) {
    ht_log(2, "c: cannot record the cache entry: %s", ht_last_error());
    ht_error_clear();
  }
  ht_buf_free(&m);
  free(mpath);
  return s;
}

/* ---- looking an entry up ---- */

/* A "dep <hash> <path>" line: the file at path still has that hash. Parsed by hand: a manifest
 * has a line per header, and a lookup per config reads one. */
static ht_status check_dep(const char *line, const char *sofile) {
  const char *hex = line + 4;
  char file[PATH_MAX], *after = NULL;
  uint64_t want = isxdigit((unsigned char)hex[0]) ? strtoull(hex, &after, 16) : 0, h = 0;
  if (after != hex + 16 || *after != ' ')
    return ht_error(HT_ERR_NOTFOUND, "%s: damaged manifest line '%.60s'", sofile, line);
  const char *path = after + 1, *end = strchr(path, '\n');
  size_t len = end ? (size_t)(end - path) : strlen(path);
  if (len == 0 || len >= sizeof file) return ht_error(HT_ERR_NOTFOUND, "%s: damaged manifest line '%.60s'", sofile, line);
  memcpy(file, path, len);
  file[len] = '\0';
  if (ht_c_file_hash(file, &h)) return ht_error(HT_ERR_NOTFOUND, "%s: %s is gone", sofile, file);
  return h == want ? HT_OK : ht_error(HT_ERR_NOTFOUND, "%s: %s changed since it was built", sofile, file);
}

static ht_status check_line(const char *line, const ht_source *src, const char *sofile, c_cache_entry *e) {
  char want[17], hex[17];
  if (strncmp(line, "dep ", 4) == 0) return check_dep(line, sofile);
  if (sscanf(line, "so %zu %16s", &e->size, want) == 2) return HT_OK;
  if (sscanf(line, "scan %16s", want) == 1) {
    ht_hash_hex(ht_include_hash(src->text, src->path, src->flags, 0), hex);
    return strcmp(hex, want) == 0 ? HT_OK : ht_error(HT_ERR_NOTFOUND, "%s: an included file changed", sofile);
  }
  return ht_error(HT_ERR_NOTFOUND, "%s: damaged manifest line '%.60s'", sofile, line);
}

ht_status ht_c_cache_lookup(const char *sofile, const ht_source *src, c_cache_entry *e) {
  char *mpath = entry_file(sofile, "deps"), *text = NULL, want[17] = "";
  ht_status s = mpath ? ht_cache_get(mpath, &text, NULL) : ht_error(HT_ERR_NOMEM, "out of memory");
  free(mpath);
  if (s) return s;
  memset(e, 0, sizeof *e);
  if (sscanf(text, "so %zu %16s", &e->size, want) != 2 || strlen(want) != 16)
    s = ht_error(HT_ERR_NOTFOUND, "%s: damaged manifest", sofile);
  e->hash = strtoull(want, NULL, 16);
  for (const char *line = text; !s && *line;) {
    s = check_line(line, src, sofile, e);
    const char *nl = strchr(line, '\n');
    if (!nl) break;
    line = nl + 1;
  }
  free(text);
  return s;
}

/* Reads the open file whole and hashes it; -1 when it is not size bytes long. */
static int hash_fd(int fd, size_t size, uint64_t *h) {
  char *buf = malloc(size + 1);
  size_t n = 0;
  while (buf && n <= size) {
    ssize_t k = read(fd, buf + n, size + 1 - n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    n += (size_t)k;
  }
  int ok = buf && n == size;
  if (ok) *h = binary_hash(buf, size);
  free(buf);
  return ok ? 0 : -1;
}

/* The file at path is still the one open as fd: after dlopen() by path, nobody renamed another
 * build over it meanwhile (the one hashed, still open, cannot be linked there again). */
static int still_at(const char *path, int fd) {
  struct stat a, b;
  return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

ht_status ht_c_cache_dlopen(const char *sofile, const c_cache_entry *e, void **handle) {
  int fd = open(sofile, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return ht_error(HT_ERR_NOTFOUND, "cannot open %s: %s", sofile, strerror(errno));
  struct stat st;
  uint64_t h = 0;
  ht_status s = HT_OK;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)))
    s = ht_error(HT_ERR_NOTFOUND, "%s: not a private file of yours", sofile);
  else if ((size_t)st.st_size != e->size || hash_fd(fd, e->size, &h) || h != e->hash)
    s = ht_error(HT_ERR_NOTFOUND, "%s: not the binary that was built (damaged or replaced)", sofile);
  /* By its path, not /proc/self/fd/N: dlopen() takes a name it has loaded before for the same
   * library, and descriptor numbers are reused. Nobody else can write the folder (ht_mkdir_p). */
  if (!s && !(*handle = dlopen(sofile, RTLD_NOW | RTLD_LOCAL)))
    s = ht_error(HT_ERR_NOTFOUND, "cannot load %s: %s", sofile, dlerror());
  if (!s && !still_at(sofile, fd)) {
    dlclose(*handle);
    *handle = NULL;
    s = ht_error(HT_ERR_NOTFOUND, "%s: replaced while it was loaded", sofile);
  }
  close(fd);
  return s;
}
