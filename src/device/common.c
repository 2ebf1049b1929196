/* Helpers shared by the device backends: scalar conversion, cache files, child-process probing. */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "device/backend.h"

void ht_copy_field(char *dst, size_t len, const char *s) { snprintf(dst, len, "%s", s ? s : ""); }

static ht_status scalar_int(ht_value v, ht_dtype t, int arg, int64_t lo, uint64_t hi, ht_scalar *out) {
  int64_t i = 0;
  uint64_t u = 0;
  int neg = 0;
  if (v.kind == HT_VAL_INT) {
    i = v.u.i;
    neg = i < 0;
    u = (uint64_t)i;
  } else {
    double d = trunc(v.u.f);
    /* Range-check before casting: an out-of-range float-to-int cast is undefined behaviour. */
    if (!isfinite(d) || d < -9223372036854775808.0 || d >= 18446744073709551616.0)
      return ht_error(HT_ERR_INVALID, "argument %d: %g does not fit %s", arg, v.u.f, ht_dtype_name(t));
    neg = d < 0;
    if (neg) i = (int64_t)d;
    else u = (uint64_t)d, i = (int64_t)u;
  }
  if ((neg && i < lo) || (!neg && u > hi))
    return ht_error(HT_ERR_INVALID, "argument %d: value out of range for %s", arg, ht_dtype_name(t));
  switch (t) {
  case HT_DTYPE_I32: out->i32 = (int32_t)i; break;
  case HT_DTYPE_U32: out->u32 = (uint32_t)u; break;
  case HT_DTYPE_I64: out->i64 = i; break;
  case HT_DTYPE_U64: out->u64 = u; break;
  case HT_DTYPE_I8: out->i8 = (int8_t)i; break;
  case HT_DTYPE_U8: out->u8 = (uint8_t)u; break;
  default: return ht_error(HT_ERR_INVALID, "argument %d: bad type", arg);
  }
  return HT_OK;
}

ht_status ht_scalar_convert(ht_value v, ht_dtype t, int arg, ht_scalar *out) {
  memset(out, 0, sizeof *out);
  if (v.kind == HT_VAL_STR)
    return ht_error(HT_ERR_INVALID, "argument %d: string '%s' given for a %s scalar", arg,
                    v.u.s ? v.u.s : "", ht_dtype_name(t));
  switch (t) {
  case HT_DTYPE_F32: out->f32 = (float)ht_value_as_double(v); return HT_OK;
  case HT_DTYPE_F64: out->f64 = ht_value_as_double(v); return HT_OK;
  case HT_DTYPE_I32: return scalar_int(v, t, arg, INT32_MIN, INT32_MAX, out);
  case HT_DTYPE_U32: return scalar_int(v, t, arg, 0, UINT32_MAX, out);
  case HT_DTYPE_I64: return scalar_int(v, t, arg, INT64_MIN, INT64_MAX, out);
  case HT_DTYPE_U64: return scalar_int(v, t, arg, 0, UINT64_MAX, out);
  case HT_DTYPE_I8: return scalar_int(v, t, arg, INT8_MIN, INT8_MAX, out);
  case HT_DTYPE_U8: return scalar_int(v, t, arg, 0, UINT8_MAX, out);
  default: return ht_error(HT_ERR_INVALID, "argument %d: unknown scalar type %d", arg, (int)t);
  }
}

ht_status ht_launch_check(const ht_launch *l) {
  if (!l) return ht_error(HT_ERR_INVALID, "launch: no launch description");
  if (l->dims < 1 || l->dims > 3) return ht_error(HT_ERR_INVALID, "launch: dims must be 1..3, got %d", l->dims);
  if (l->n_args < 0 || (l->n_args > 0 && !l->args))
    return ht_error(HT_ERR_INVALID, "launch: bad argument list (%d arguments)", l->n_args);
  for (int i = 0; i < l->n_args; i++) {
    const ht_arg *a = &l->args[i];
    if (a->is_buffer && !a->buf) return ht_error(HT_ERR_INVALID, "launch: argument %d is a buffer but has none", i);
    if (a->is_stop_flag && (a->is_buffer || a->type != HT_DTYPE_I32))
      return ht_error(HT_ERR_INVALID, "launch: argument %d is a stop flag: it must be an i32 and no buffer", i);
  }
  return HT_OK;
}

int ht_launch_has_offset(const ht_launch *l) {
  for (int i = 0; i < l->dims && i < 3; i++)
    if (l->offset[i]) return 1;
  return 0;
}

ht_status ht_launch_no_offset(const ht_launch *l, const char *backend) {
  if (!ht_launch_has_offset(l)) return HT_OK;
  return ht_error(HT_ERR_UNSUPPORTED, "launch: the %s backend has no global work offset (offset %zu,%zu,%zu)",
                  backend, l->offset[0], l->offset[1], l->offset[2]);
}

int ht_launch_has_stop_flag(const ht_launch *l) {
  for (int i = 0; i < l->n_args; i++)
    if (l->args[i].is_stop_flag) return 1;
  return 0;
}

ht_status ht_range_check(size_t size, size_t offset, size_t bytes) {
  if (offset == 0 && bytes <= size) return HT_OK;
  if (offset == 0) return ht_error(HT_ERR_INVALID, "%zu bytes do not fit a %zu-byte buffer", bytes, size);
  if (offset > size || bytes > size - offset)
    return ht_error(HT_ERR_INVALID, "%zu bytes at offset %zu do not fit a %zu-byte buffer", bytes, offset, size);
  return HT_OK;
}

/* ---- buffers and their views ---- */

void ht_buf_ref_init(ht_buf_ref *r) {
  r->root = NULL;
  r->refs = 1;
}

ht_status ht_buf_view_new(size_t record, ht_buf_ref *of, size_t size, size_t offset, size_t bytes, void **out) {
  if (!of) return ht_error(HT_ERR_INVALID, "buffer view: no buffer");
  if (bytes == 0) return ht_error(HT_ERR_INVALID, "buffer view: a view needs at least one byte");
  ht_status s = ht_range_check(size, offset, bytes);
  if (s) return ht_error_prefix(s, "buffer view: ");
  ht_buf_ref *view = calloc(1, record);
  if (!view) return ht_error(HT_ERR_NOMEM, "out of memory");
  view->root = of->root ? of->root : of;
  __atomic_add_fetch(&view->root->refs, 1, __ATOMIC_RELAXED);
  *out = view;
  return HT_OK;
}

ht_buf_ref *ht_buf_ref_drop(ht_buf_ref *b) {
  ht_buf_ref *root = b->root ? b->root : b;
  return __atomic_sub_fetch(&root->refs, 1, __ATOMIC_ACQ_REL) == 0 ? root : NULL;
}

uint64_t ht_defines_hash(const ht_defines *defs, uint64_t seed) {
  uint64_t h = ht_hash_str("defines", seed);
  if (!defs) return h;
  for (int i = 0; i < defs->n; i++) {
    h = ht_hash_str(defs->names[i], h);
    h = ht_hash_str(defs->values[i], h);
  }
  return h;
}

char *ht_source_dir(const ht_source *src) {
  if (!src || !src->path) return NULL;
  const char *slash = strrchr(src->path, '/');
  if (!slash) return ht_strdup(".");
  if (slash == src->path) return ht_strdup("/");
  return ht_strfmt("%.*s", (int)(slash - src->path), src->path);
}

/* The folders last created and checked, as they were then: a compile looks up its cache folder
 * and the kernels' include folder for every config, and creating and checking them path
 * component by path component is a dozen system calls each. The same folder (device and inode),
 * still ours and private, needs none of them: nobody else could have changed what is inside a
 * private folder whose ancestors passed. */
enum { CHECKED_SLOTS = 4 };
typedef struct checked_dir {
  char *path;
  dev_t dev;
  ino_t ino;
} checked_dir;
static checked_dir checked[CHECKED_SLOTS];
static int checked_next;
static pthread_mutex_t checked_lock = PTHREAD_MUTEX_INITIALIZER;

static int is_checked(const char *dir) {
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)))
    return 0;
  int hit = 0;
  pthread_mutex_lock(&checked_lock);
  for (int i = 0; i < CHECKED_SLOTS && !hit; i++)
    hit = checked[i].path && strcmp(checked[i].path, dir) == 0 && checked[i].dev == st.st_dev && checked[i].ino == st.st_ino;
  pthread_mutex_unlock(&checked_lock);
  return hit;
}

static void remember_checked(const char *dir) {
  struct stat st;
  char *copy = stat(dir, &st) == 0 ? ht_strdup(dir) : NULL;
  if (!copy) return;
  pthread_mutex_lock(&checked_lock);
  checked_dir *c = NULL;
  for (int i = 0; i < CHECKED_SLOTS && !c; i++)
    if (checked[i].path && strcmp(checked[i].path, dir) == 0) c = &checked[i];
  if (!c) c = &checked[checked_next++ % CHECKED_SLOTS];
  free(c->path);
  *c = (checked_dir){copy, st.st_dev, st.st_ino};
  pthread_mutex_unlock(&checked_lock);
}

ht_status ht_cache_subdir(const char *sub, char **out) {
  char *dir = ht_strfmt("%s/%s", ht_cache_dir(), sub);
  if (!dir) return ht_error(HT_ERR_NOMEM, "out of memory");
  if (!is_checked(dir)) {
    ht_status s = ht_mkdir_p(dir);
    if (s) {
      free(dir);
      return s;
    }
    remember_checked(dir);
  }
  *out = dir;
  return HT_OK;
}

/* ---- checked cache entries ---- */

/* The header of every entry: the payload's length and hash, recorded when it was written. */
static const char cache_magic[] = "hetune-cache-1";

/* Seeded with the entry's file name (its key): another entry copied in its place, whole and
 * consistent as it is, does not pass for this one. */
static uint64_t entry_hash(const char *path, const void *data, size_t len) {
  const char *base = strrchr(path, '/');
  return ht_hash64(data, len, ht_hash_str(base ? base + 1 : path, 0));
}

ht_status ht_cache_put(const char *path, const void *data, size_t len) {
  char hex[17];
  ht_hash_hex(entry_hash(path, data, len), hex);
  ht_buf b = {0};
  ht_buf_appendf(&b, "%s %zu %s\n", cache_magic, len, hex);
  ht_buf_append_bytes(&b, data, len);
  ht_status s = b.failed ? ht_error(HT_ERR_NOMEM, "out of memory") : ht_write_file_atomic(path, b.data, b.len);
  ht_buf_free(&b);
  return s;
}

ht_status ht_cache_get(const char *path, char **data, size_t *len) {
  char *raw = NULL, hex[17], want[17];
  size_t n = 0, size = 0;
  *data = NULL;
  if (access(path, F_OK) != 0) return ht_error(HT_ERR_NOTFOUND, "%s: not cached", path);
  ht_status s = ht_read_file(path, &raw, &n);
  if (s) return ht_error_prefix(HT_ERR_NOTFOUND, "damaged cache entry: ");
  char *nl = memchr(raw, '\n', n < 64 ? n : 64);
  if (!nl || sscanf(raw, "hetune-cache-1 %zu %16s", &size, want) != 2 || strncmp(raw, cache_magic, 14) != 0 ||
      size != n - (size_t)(nl + 1 - raw)) {
    free(raw);
    return ht_error(HT_ERR_NOTFOUND, "%s: damaged cache entry (bad header or truncated)", path);
  }
  ht_hash_hex(entry_hash(path, nl + 1, size), hex);
  if (strcmp(hex, want) != 0) {
    free(raw);
    return ht_error(HT_ERR_NOTFOUND, "%s: damaged cache entry (content hash %s, written as %s)", path, hex, want);
  }
  memmove(raw, nl + 1, size);
  raw[size] = '\0';
  *data = raw;
  if (len) *len = size;
  return HT_OK;
}

ht_status ht_cache_check(const char *sub) {
  char *dir = NULL;
  ht_status s = ht_cache_subdir(sub, &dir);
  free(dir);
  return s;
}

static int is_blank_line(const char *b, const char *e) {
  for (; b < e; b++)
    if (*b != ' ' && *b != '\t' && *b != '\r') return 0;
  return 1;
}

void ht_first_error_line(const char *log, char *out, size_t len) {
  if (!len) return;
  out[0] = '\0';
  if (!log) return;
  const char *first = NULL, *first_end = NULL;
  for (const char *p = log; *p;) {
    const char *e = strchr(p, '\n');
    if (!e) e = p + strlen(p);
    if (!first && !is_blank_line(p, e)) first = p, first_end = e;
    /* "error" in the text (gcc "error:", clang "error:", nvrtc "error:"), not a bare path. */
    const char *hit = strstr(p, "error");
    if (hit && hit < e) {
      snprintf(out, len, "%.*s", (int)(e - p), p);
      return;
    }
    p = *e ? e + 1 : e;
  }
  if (first) snprintf(out, len, "%.*s", (int)(first_end - first), first);
}

char *ht_source_with_line(const ht_source *src) {
  if (!src->path || strpbrk(src->path, "\"\\\n")) return ht_strdup(src->text);
  return ht_strfmt("#line 1 \"%s\"\n%s", src->path, src->text);
}

ht_status ht_compile_error(const char *path, const char *what, const char *log) {
  char first[512];
  ht_first_error_line(log, first, sizeof first);
  const char *rest = log && *log ? log : NULL;
  return ht_error(HT_ERR_COMPILE, "%s: %s: %s%s%s", path ? path : "kernel", what,
                  first[0] ? first : "no compiler output", rest ? "\n" : "", rest ? rest : "");
}

/* ---- probing in a child process ---- */

typedef struct probe_header {
  int status;
  int n;
  int msg_len;
} probe_header;

static void probe_child(int fd, ht_status (*probe)(ht_device_info *, int, int *), int max) {
  ht_device_info *infos = calloc(max > 0 ? (size_t)max : 1, sizeof *infos);
  int n = 0;
  ht_status s = infos ? probe(infos, max, &n) : ht_error(HT_ERR_NOMEM, "out of memory");
  if (s) n = 0;
  const char *msg = s ? ht_last_error() : "";
  probe_header h = {(int)s, n, (int)strlen(msg)};
  if (ht_fd_write_all(fd, &h, sizeof h) == 0 && ht_fd_write_all(fd, infos, sizeof *infos * (size_t)n) == 0)
    ht_fd_write_all(fd, msg, (size_t)h.msg_len);
  free(infos);
  close(fd);
  _exit(0); /* no atexit handlers: they belong to the parent */
}

static ht_status probe_parent(int fd, pid_t pid, ht_device_info *out, int max, int *n) {
  double deadline = ht_now() + 60; /* a probe that hangs (broken driver) must not hang hetune */
  probe_header h;
  ht_status s = HT_OK;
  if (ht_fd_read_all(fd, &h, sizeof h, deadline) || h.n < 0 || h.n > max || h.msg_len < 0 || h.msg_len > 4096) {
    s = ht_error(HT_ERR_DEVICE, "device probe process failed or timed out");
  } else if (ht_fd_read_all(fd, out, sizeof *out * (size_t)h.n, deadline)) {
    s = ht_error(HT_ERR_DEVICE, "device probe process died while reporting");
  } else {
    char msg[4097];
    if (ht_fd_read_all(fd, msg, (size_t)h.msg_len, deadline)) h.msg_len = 0;
    msg[h.msg_len] = '\0';
    *n = h.n;
    s = h.status ? ht_error((ht_status)h.status, "%s", msg) : HT_OK;
  }
  close(fd);
  if (s == HT_ERR_DEVICE) kill(pid, SIGKILL);
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
  }
  return s;
}

ht_status ht_probe_in_child(ht_status (*probe)(ht_device_info *, int, int *), ht_device_info *out,
                            int max, int *n) {
  *n = 0;
  int fds[2];
  if (pipe(fds) != 0) return probe(out, max, n);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return probe(out, max, n);
  }
  if (pid == 0) {
    close(fds[0]);
    probe_child(fds[1], probe, max);
  }
  close(fds[1]);
  return probe_parent(fds[0], pid, out, max, n);
}
