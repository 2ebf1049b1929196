/* hetune core: status codes, thread-local errors, values, rng, clocks, statistics, hashing. */
#ifndef HETUNE_CORE_H
#define HETUNE_CORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every fallible call returns ht_status (0 = OK) and sets a message readable with
 * ht_last_error() in the calling thread (the libgit2 model). */
typedef enum ht_status {
  HT_OK = 0,
  HT_ERR_INVALID = 1,     /* bad argument or bad input (spec, expression, value) */
  HT_ERR_PARSE = 2,       /* malformed text: message names file:line:column */
  HT_ERR_IO = 3,          /* file missing, unreadable, disk full, read-only */
  HT_ERR_NOMEM = 4,
  HT_ERR_NOTFOUND = 5,    /* unknown device, parameter, strategy, record */
  HT_ERR_UNSUPPORTED = 6, /* backend or feature unavailable here (e.g. no CUDA driver) */
  HT_ERR_DEVICE = 7,      /* a backend call failed */
  HT_ERR_COMPILE = 8,     /* kernel source did not compile */
  HT_ERR_RUNTIME = 9,     /* kernel launch or execution failed */
  HT_ERR_STORE = 10,      /* database error: corrupt, foreign, locked */
  HT_ERR_TIMEOUT = 11,
  HT_ERR_INTERNAL = 12
} ht_status;

/* The message of the last failed call in this thread ("" when none). */
const char *ht_last_error(void);
/* Sets the message (printf format) and returns code, so callers can `return ht_error(...)`. */
ht_status ht_error(ht_status code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prepends context ("spec.json: ") to the current message, returns code. */
ht_status ht_error_prefix(ht_status code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ht_error_clear(void);
const char *ht_status_name(ht_status s);

/* ---- values: what parameters, sizes and expressions hold ---- */
typedef enum ht_value_kind { HT_VAL_INT = 0, HT_VAL_FLOAT = 1, HT_VAL_STR = 2 } ht_value_kind;
typedef struct ht_value {
  ht_value_kind kind;
  union {
    int64_t i;
    double f;
    const char *s; /* owned by whoever made the value (space, spec); never freed through ht_value */
  } u;
} ht_value;

static inline ht_value ht_int(int64_t i) { ht_value v; v.kind = HT_VAL_INT; v.u.i = i; return v; }
static inline ht_value ht_float(double f) { ht_value v; v.kind = HT_VAL_FLOAT; v.u.f = f; return v; }
static inline ht_value ht_str(const char *s) { ht_value v; v.kind = HT_VAL_STR; v.u.s = s; return v; }
double ht_value_as_double(ht_value v);          /* STR -> NAN */
int ht_value_equal(ht_value a, ht_value b);     /* 1 if same kind-insensitive number or same string */
/* Formats like a C literal: 16, 0.5, 1e-06 (%.17g trimmed), strings verbatim. Returns chars written. */
int ht_value_format(ht_value v, char *buf, size_t len);

/* ---- element types of kernel arguments ---- */
typedef enum ht_dtype {
  HT_DTYPE_F32 = 0, HT_DTYPE_F64, HT_DTYPE_I32, HT_DTYPE_U32, HT_DTYPE_I64, HT_DTYPE_U64,
  HT_DTYPE_I8, HT_DTYPE_U8, HT_DTYPE_COUNT
} ht_dtype;
size_t ht_dtype_size(ht_dtype t);
const char *ht_dtype_name(ht_dtype t);               /* "float", "double", "int32", ... */
ht_status ht_dtype_parse(const char *name, ht_dtype *out); /* accepts float/f32/float32, double/f64, int/int32, ... */
int ht_dtype_is_float(ht_dtype t);

/* ---- random numbers: xoshiro256**, seeded by splitmix64; reproducible across platforms ---- */
typedef struct ht_rng { uint64_t s[4]; } ht_rng;
void ht_rng_seed(ht_rng *r, uint64_t seed);
uint64_t ht_rng_next(ht_rng *r);
uint64_t ht_rng_below(ht_rng *r, uint64_t n); /* uniform in [0, n), unbiased; n > 0 */
double ht_rng_uniform(ht_rng *r);             /* [0, 1) */

/* ---- clocks ---- */
double ht_now(void);          /* CLOCK_MONOTONIC seconds */
int64_t ht_now_ns(void);
double ht_wall_time(void);    /* CLOCK_REALTIME seconds since the epoch */

/* ---- statistics on samples (not modified) ---- */
/* qsort comparator: ascending doubles (NaN-free input). */
int ht_stat_cmp_double(const void *a, const void *b);
double ht_stat_median(const double *x, int n);
double ht_stat_mean(const double *x, int n);
double ht_stat_stddev(const double *x, int n); /* sample standard deviation (n-1); 0 when n < 2 */
double ht_stat_min(const double *x, int n);
double ht_stat_max(const double *x, int n);

/* ---- hashing: FNV-1a 64-bit, chainable; hex is 16 chars + NUL ---- */
uint64_t ht_hash64(const void *data, size_t n, uint64_t seed); /* seed 0 = the FNV offset basis */
uint64_t ht_hash_str(const char *s, uint64_t seed);
void ht_hash_hex(uint64_t h, char out[17]);
/* Chains onto seed the contents of every file text #includes, found as a C preprocessor finds it:
 * "name" in the including file's folder first, then (and <name>) in the folder of path and the
 * -I, -iquote, -isystem and --include-path folders of flags; recursively, each file once. A name
 * found nowhere (a system header) adds nothing, nor does #include MACRO (not followed); with no
 * header found the result is seed. A header edit changes the hash, so the kernel's identity and
 * cache keys change with it. */
uint64_t ht_include_hash(const char *text, const char *path, const char *flags, uint64_t seed);

/* ---- small utilities ---- */
/* The most ht_read_file reads: spec, source, recorded and dataset files are far smaller; the limit
 * keeps a wrong path (a disk image, /dev/zero) from eating the memory. */
#define HT_READ_FILE_MAX ((size_t)256 << 20)
/* Reads a whole regular file (NUL-terminated) of at most HT_READ_FILE_MAX bytes. A folder, pipe,
 * socket or device, or a larger file, is an HT_ERR_IO error naming the path (and the limit). */
ht_status ht_read_file(const char *path, char **out, size_t *len);
/* The same with a limit of max bytes. */
ht_status ht_read_file_max(const char *path, size_t max, char **out, size_t *len);
/* HT_OK when path is a regular file of at most max bytes, else the error ht_read_file_max gives:
 * for readers that stream a file rather than load it whole. */
ht_status ht_check_regular_file(const char *path, size_t max);
/* Writes atomically through a unique temporary file and rename(): concurrent writers of one path
 * (cache entries) never leave a torn file. */
ht_status ht_write_file_atomic(const char *path, const void *data, size_t len);
char *ht_strdup(const char *s);          /* NULL on NULL or OOM */
char *ht_strfmt(const char *fmt, ...) __attribute__((format(printf, 1, 2))); /* malloc'ed */
/* Writes all len bytes to fd, retrying on EINTR and short writes: 0, or -1 on error. */
int ht_fd_write_all(int fd, const void *data, size_t len);
/* Reads exactly len bytes from fd before deadline (an ht_now() time): 0, -1 on EOF or error,
 * -2 when the deadline passed. */
int ht_fd_read_all(int fd, void *data, size_t len, double deadline);
/* Runs argv[0] (searched in PATH) in dir (NULL: here) with stdin from /dev/null and stdout+stderr
 * captured into *log (malloc'ed); *exit_code is its exit status, -1 when killed by a signal.
 * Cannot start it: HT_ERR_NOTFOUND "cannot run 'x': reason". timeout_s > 0: killed after that
 * long, HT_ERR_TIMEOUT (the log so far is kept). */
ht_status ht_run_capture(char *const argv[], const char *dir, double timeout_s, char **log, int *exit_code);
/* mkdir -p. Folders in the compile cache (ht_cache_dir() and below) are created 0700 and must be
 * the user's own and writable by nobody else (ht_check_private_dir); the folders above it must not
 * be writable by everyone without the sticky bit. Otherwise HT_ERR_IO says which folder and why. */
ht_status ht_mkdir_p(const char *path);
/* The compile cache folder: $HETUNE_CACHE_DIR, else $XDG_CACHE_HOME/hetune, else
 * ~/.cache/hetune, else /tmp/hetune-cache-<uid>. Create it (and sub folders) with ht_mkdir_p, which
 * refuses a folder another user could write: hetune runs the code it finds there. */
const char *ht_cache_dir(void);
/* HT_OK when dir is a folder owned by the effective user and not writable by group or others. */
ht_status ht_check_private_dir(const char *dir);
/* HT_OK unless dir is writable by everyone without the sticky bit (as /tmp has). */
ht_status ht_check_cache_ancestor(const char *dir);
/* A spec's compiler flags against $HETUNE_ALLOWED_FLAGS: blank-separated glob patterns (fnmatch),
 * where the word "default" stands for hetune's list of code-generation flags (-O*, -march=*,
 * -ffast-math, -D*, -I*, -cl-*, --use_fast_math, ...). Unset or empty: every flag is allowed. A
 * flag no pattern matches is HT_ERR_INVALID naming where (the source) and the flag. */
ht_status ht_flags_check(const char *flags, const char *where);

/* A growable string buffer. */
typedef struct ht_buf { char *data; size_t len, cap; int failed; } ht_buf;
void ht_buf_append(ht_buf *b, const char *s);
void ht_buf_append_bytes(ht_buf *b, const void *data, size_t n); /* may hold NULs; stays NUL-terminated */
void ht_buf_appendf(ht_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ht_buf_free(ht_buf *b);

/* Logging to stderr for the library (never stdout). Level from $HETUNE_LOG (0 quiet .. 3 debug). */
void ht_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif
#endif
