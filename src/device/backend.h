/* The backend interface behind the opaque ht_device of hetune/device.h, for the library's own
 * layers (src/) and its tests: struct ht_device, the backends' table of operations and the
 * registry, then the helpers the backends share. A user of the installed library calls the
 * ht_device_* functions instead. */
#ifndef HETUNE_DEVICE_BACKEND_H
#define HETUNE_DEVICE_BACKEND_H

#include <stdint.h>

#include "hetune/device.h"

typedef struct ht_backend_ops {
  const char *name;
  /* Lists this backend's devices (up to max) into out. Zero devices is not an error. A backend
   * that cannot run here (no driver) returns HT_ERR_UNSUPPORTED with the reason. */
  ht_status (*probe)(ht_device_info *out, int max, int *n);
  /* Opens device number index of probe's list: creates its context/queue; fills dev->impl. */
  ht_status (*open)(ht_device *dev, int index);
  void (*close)(ht_device *dev);
  /* Compiles (or loads from the on-disk cache, keyed by source, defines, flags and compiler). A
   * source that does not compile returns HT_ERR_COMPILE with the compiler log in info->log. */
  ht_status (*compile)(ht_device *dev, const ht_source *src, const ht_defines *defs, ht_program **out,
                       ht_compile_info *info);
  void (*program_free)(ht_device *dev, ht_program *p);
  /* Runs the kernel once, synchronously. *kernel_s: device time from events (OpenCL profiling,
   * CUDA events) or CLOCK_MONOTONIC around the call (c); NULL: not wanted (c reads no clock). */
  ht_status (*launch)(ht_device *dev, ht_program *p, const ht_launch *l, double *kernel_s);
  ht_status (*buffer_new)(ht_device *dev, size_t bytes, ht_buffer **out);
  ht_status (*buffer_write)(ht_device *dev, ht_buffer *b, const void *host, size_t bytes, double *seconds);
  ht_status (*buffer_read)(ht_device *dev, ht_buffer *b, void *host, size_t bytes, double *seconds);
  void (*buffer_free)(ht_device *dev, ht_buffer *b);
  /* ---- optional (NULL when absent; the ht_device_* calls of hetune/device.h fall back or say so) ---- */
  unsigned caps; /* HT_CAP_* */
  /* Starts the kernel and returns; *out is waited for exactly once (and polled any number of times
   * before). Buffers and the program must live until the wait. */
  ht_status (*launch_async)(ht_device *dev, ht_program *p, const ht_launch *l, ht_event **out);
  /* Waits for the launch, frees the event; *kernel_s as launch gives it. */
  ht_status (*wait)(ht_device *dev, ht_event *e, double *kernel_s);
  int (*poll)(ht_device *dev, ht_event *e); /* 1: finished (wait returns at once), 0: running */
  ht_status (*cancel)(ht_device *dev, ht_event *e); /* raises the launch's stop flag; wait still follows */
  /* bytes at byte offset of buffer b, as a buffer of its own (freed with buffer_free, before b; a b
   * freed first is kept until its last view goes). A view of a view is a view of the same buffer.
   * HT_ERR_INVALID outside b or empty; HT_ERR_UNSUPPORTED when this offset cannot be one
   * (OpenCL's base-address alignment): copy the range instead. */
  ht_status (*buffer_view)(ht_device *dev, ht_buffer *b, size_t offset, size_t bytes, ht_buffer **out);
  /* Copies between host memory and bytes at byte offset of b. */
  ht_status (*buffer_write_at)(ht_device *dev, ht_buffer *b, size_t offset, const void *host, size_t bytes,
                               double *seconds);
  ht_status (*buffer_read_at)(ht_device *dev, ht_buffer *b, size_t offset, void *host, size_t bytes,
                              double *seconds);
  /* (HT_CAP_HOST_MEMORY) The caller's bytes at host as a buffer, not copied: kernels read and write
   * them in place. buffer_free leaves the memory to its owner. The execution layer keeps a wrap for
   * the next calls on the same memory: it must hold no copy of the contents. */
  ht_status (*buffer_wrap)(ht_device *dev, void *host, size_t bytes, ht_buffer **out);
} ht_backend_ops;

/* An open device: the handle (opaque to users) every backend call goes through. */
struct ht_device {
  const ht_backend_ops *ops;
  ht_device_info info;
  int index;  /* in the backend's probe list */
  void *impl; /* backend state */
  unsigned caps_extra; /* HT_CAP_* this device has beyond its backend's (a realtime sim device) */
  char pci_bus_id[32];  /* "0000:3b:00.0" where the backend knows it (cuda), else "" */
};

/* The registry (registry.c): the backends in their table's order, or by name (NULL when none). */
int ht_backend_count(void);
const ht_backend_ops *ht_backend_at(int i);
const ht_backend_ops *ht_backend_find(const char *name);

extern const ht_backend_ops ht_backend_c;
extern const ht_backend_ops ht_backend_opencl;
extern const ht_backend_ops ht_backend_cuda;
extern const ht_backend_ops ht_backend_sim;

/* A scalar kernel argument converted to its C type; launch passes a pointer to it. */
typedef union ht_scalar {
  float f32;
  double f64;
  int32_t i32;
  uint32_t u32;
  int64_t i64;
  uint64_t u64;
  int8_t i8;
  uint8_t u8;
} ht_scalar;

/* Converts v to type t. Strings, NaN and out-of-range numbers for integer types are errors
 * (HT_ERR_INVALID naming argument number arg). */
ht_status ht_scalar_convert(ht_value v, ht_dtype t, int arg, ht_scalar *out);

/* Checks dims in 1..3 and the argument array (a stop flag is an i32 and no buffer); shared by
 * every launch. */
ht_status ht_launch_check(const ht_launch *l);
/* 1 when l asks for a global work offset (a nonzero offset in its dims). */
int ht_launch_has_offset(const ht_launch *l);
/* For backends without HT_CAP_OFFSET: HT_ERR_UNSUPPORTED when l asks for an offset, which
 * ignoring would run the wrong work-items. */
ht_status ht_launch_no_offset(const ht_launch *l, const char *backend);
/* 1 when an argument of l is a stop flag (the launch needs a flag of its own). */
int ht_launch_has_stop_flag(const ht_launch *l);
/* bytes at offset within a size-byte buffer, else HT_ERR_INVALID saying so (overflow-safe). */
ht_status ht_range_check(size_t size, size_t offset, size_t bytes);

/* Buffers and their views (buffer_view), first member of each backend's buffer. A view holds a
 * reference on its root buffer (a view of a view on the same root), so a root freed before its
 * views (a misuse) keeps its memory until the last view goes instead of leaving them dangling. */
typedef struct ht_buf_ref {
  struct ht_buf_ref *root; /* NULL for a buffer of its own */
  int refs;                /* a root's: itself (until freed) and its live views */
} ht_buf_ref;
void ht_buf_ref_init(ht_buf_ref *r);
/* A zeroed backend record of record bytes (starting with its ht_buf_ref) for a view of bytes at
 * offset of the buffer of (size bytes long): checks the range (HT_ERR_INVALID when outside or
 * empty) and takes a reference on the root. The backend fills in the rest. */
ht_status ht_buf_view_new(size_t record, ht_buf_ref *of, size_t size, size_t offset, size_t bytes, void **out);
/* Drops b's reference (buffer_free): returns the root when its memory is to be released now, else
 * NULL. A view's own record is the caller's to free either way. */
ht_buf_ref *ht_buf_ref_drop(ht_buf_ref *b);

/* Hash of the defines (names and values, in order), chainable. */
uint64_t ht_defines_hash(const ht_defines *defs, uint64_t seed);

/* Folder of src->path ("." when the path has none); NULL when src->path is NULL. malloc'ed. */
char *ht_source_dir(const ht_source *src);

/* <cache>/<sub>, created 0700 and checked to be the user's own and writable by nobody else
 * (ht_mkdir_p): backends load and run what they find there. malloc'ed into *out. */
ht_status ht_cache_subdir(const char *sub, char **out);
/* The same, for a backend's open(): a cache that cannot be trusted fails the device up front,
 * rather than each compile (which tuning would store as the configs' failures). */
ht_status ht_cache_check(const char *sub);

/* A cache entry: data behind a header recording its length and hash when written (atomically),
 * the hash seeded with the file's name so that one entry copied over another is no match. */
ht_status ht_cache_put(const char *path, const void *data, size_t len);
/* Reads an entry ht_cache_put wrote, NUL-terminated (malloc'ed). Missing, truncated or altered
 * (the hash differs): HT_ERR_NOTFOUND saying which, and the caller builds it again. */
ht_status ht_cache_get(const char *path, char **data, size_t *len);

/* Stopping C kernels by signal (c_stop.c, include/hetune/stop.h). A launch's stop block: the flag
 * and n_slots thread slots (0: the flag only, for a launch nobody can stop). */
struct ht_stop_block;
ht_status ht_stop_block_init(struct ht_stop_block *b, int n_slots);
void ht_stop_block_free(struct ht_stop_block *b);
/* Raises the flag, then sends every thread inside an HT_PAR_BEGIN region the signal that ends it. */
void ht_stop_block_raise(struct ht_stop_block *b);
/* Slots of a launch that can be stopped: twice the CPUs, at least 8. */
int ht_stop_default_slots(void);
/* Unblocks the stop signal in the calling thread (a launch's thread, whose OpenMP threads inherit). */
void ht_stop_signal_unblock(void);
/* Runs run(arg), then done(arg), on one of the c backend's launch threads (c_workers.c), which
 * stay between launches so that a kernel's OpenMP team does too. 0, or the errno of a thread that
 * could not start. */
int ht_c_worker_submit(void (*run)(void *arg), void (*done)(void *arg), void *arg);
/* The folder to put on a C compiler's include path for #include <hetune/stop.h> (in the cache,
 * written from ht_kernel_stop_h, the header's text embedded at build time). */
ht_status ht_c_kernel_include_dir(char **out);
extern const char ht_kernel_stop_h[];

/* The C backend's cache entries (c_cache.c): <key>.so and its manifest <key>.deps. */
typedef struct c_cache_entry {
  size_t size;   /* of the .so when it was written */
  uint64_t hash; /* of its bytes */
} c_cache_entry;
/* Waits until no other thread or process builds sofile's entry and holds it (flock on <key>.lock):
 * looking up, building, recording and loading under the lock, no builder loads a binary another
 * has just replaced with its own (builds differ: each compiles its own copy of the source). */
ht_status ht_c_cache_lock(const char *sofile, int *fd);
void ht_c_cache_unlock(int fd);
/* After a build of cfile into tmp_so with the compiler's -MD list in depfile: moves tmp_so to
 * sofile and records its manifest (the .so's hash, every file the compiler read; without a list,
 * ht_include_hash of src). *e describes the new .so. */
ht_status ht_c_cache_record(const char *tmp_so, const char *sofile, const char *depfile, const char *cfile,
                            const ht_source *src, c_cache_entry *e);
/* The entry of sofile while every file its manifest lists is unchanged; else HT_ERR_NOTFOUND
 * saying why (missing, damaged, a header edited), and the caller builds again. */
ht_status ht_c_cache_lookup(const char *sofile, const ht_source *src, c_cache_entry *e);
/* dlopen()s sofile only if it is a private file of the user's with the size and hash of e, and
 * still the file hashed once loaded; HT_ERR_NOTFOUND saying why otherwise. */
ht_status ht_c_cache_dlopen(const char *sofile, const c_cache_entry *e, void **handle);
/* The content hash of the file at path, remembered while its status (size, times, inode) stays
 * the same: a stat, not a read, for a file hashed before; for a system file, not even a stat
 * until ht_c_file_recheck_s(path) has passed since the last. */
ht_status ht_c_file_hash(const char *path, uint64_t *h);
/* How long the remembered status of path is trusted without a stat: HT_SYSTEM_FILE_RECHECK_S for
 * a system file (under /usr but not /usr/local: a package upgrade changes it), 0 otherwise. */
#define HT_SYSTEM_FILE_RECHECK_S 1.0
double ht_c_file_recheck_s(const char *path);

/* The first line of log that mentions "error" (else the first non-empty line), copied into out. */
void ht_first_error_line(const char *log, char *out, size_t len);
/* src's text behind a #line directive naming src->path (malloc'ed; NULL when out of memory), so a
 * compiler reading it from a copy or from memory names the user's file in its messages. A path
 * that would need escaping in a C string is left out. */
char *ht_source_with_line(const ht_source *src);
/* HT_ERR_COMPILE with the message "path: what: <first error line of log>", then the whole log on
 * the following lines: one line for a progress display, the rest for who wants it (tune -v). */
ht_status ht_compile_error(const char *path, const char *what, const char *log);

/* Runs probe in a forked child and copies its results back. Driver runtimes (CUDA, PoCL) keep
 * process-wide state once initialised and do not survive fork(); probing in a child keeps the
 * caller's process clean for the tuner's forked workers. On fork failure probes in-process. */
ht_status ht_probe_in_child(ht_status (*probe)(ht_device_info *, int, int *), ht_device_info *out,
                            int max, int *n);

/* The C backend's source check (c.c), for the spec's prototype check: compiles src as a kernel
 * compile would (compiler, flags, defines, include folder) but checks syntax and types only.
 * *log gets the compiler's output (malloc'ed), *exit_code its status. HT_ERR_NOTFOUND when the
 * compiler cannot be started, HT_ERR_TIMEOUT when it runs past two minutes. */
ht_status ht_c_check_compile(const ht_source *src, const ht_defines *defs, char **log, int *exit_code);
/* Chains into h what such a compile depends on besides its source, defines and flags: the
 * compiler, the base flags and the CPU model. */
uint64_t ht_c_toolchain_hash(uint64_t h);

/* Copies s into a fixed-size field, truncating. */
void ht_copy_field(char *dst, size_t len, const char *s);

#endif
