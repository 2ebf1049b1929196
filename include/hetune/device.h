/* Devices, one interface over the backends: "c" (system compiler + dlopen + libffi), "opencl" (any
 * ICD), "cuda" (driver API + NVRTC loaded with dlopen), "sim" (simulated devices from a JSON file).
 * An open device is an opaque ht_device used through the ht_device_* calls (docs/runtime.md). */
#ifndef HETUNE_DEVICE_H
#define HETUNE_DEVICE_H

#include "hetune/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ht_language { HT_LANG_C = 0, HT_LANG_OPENCL = 1, HT_LANG_CUDA = 2 } ht_language;
const char *ht_language_name(ht_language l);
ht_status ht_language_parse(const char *s, ht_language *out);

/* What `hetune devices` prints and what constraints may read as device.* constants. */
typedef struct ht_device_info {
  char backend[16];            /* "c", "opencl", "cuda" */
  char id[32];                 /* "c:0", "opencl:0:0" (platform:device), "cuda:0" */
  char name[128];
  char vendor[64];
  char driver_version[64];     /* OpenCL driver / CUDA driver version / libc for c */
  char runtime_version[64];    /* OpenCL version / CUDA runtime (NVRTC) version */
  char compiler_version[128];  /* first line of `cc --version`, "PoCL x.y", "NVRTC 13.0" */
  int compute_units;           /* cores / compute units / SMs */
  int max_threads;             /* CPUs this process may use (c), CUs*max wg (others) */
  int warp_size;               /* 1 on CPUs, 32 on NVIDIA */
  int clock_mhz;
  uint64_t global_mem_bytes;
  uint64_t local_mem_bytes;    /* local / shared memory per group; L1d size for c */
  uint64_t max_alloc_bytes;
  uint64_t max_work_group_size;
  uint64_t max_work_item_sizes[3];
  char fingerprint[17];        /* hash of backend, name, vendor, driver, runtime, compiler */
} ht_device_info;

/* Fills names/values with the device.* constants constraints may use:
 * device.compute_units, device.max_threads, device.warp_size, device.max_work_group_size,
 * device.local_mem_size, device.global_mem_size, device.max_work_item_size_x/_y/_z.
 * Returns how many (<= max). Names are static strings. */
int ht_device_constants(const ht_device_info *info, const char **names, ht_value *values, int max);
/* Computes info->fingerprint from the other fields. */
void ht_device_info_fingerprint(ht_device_info *info);

typedef struct ht_program ht_program; /* backend-defined */
typedef struct ht_buffer ht_buffer;   /* backend-defined */

typedef struct ht_source {
  ht_language lang;
  const char *text;  /* the whole source */
  const char *path;  /* for messages; its folder is on the include path */
  const char *entry; /* function (c) or kernel name */
  const char *flags; /* extra compiler flags, may be NULL */
} ht_source;

/* -DNAME=VALUE pairs: the config's parameters (and problem sizes) seen by the compiler. */
typedef struct ht_defines {
  int n;
  const char *const *names;
  const char *const *values;
} ht_defines;

typedef struct ht_compile_info {
  double seconds; /* wall time of compilation (0 when cached) */
  int cached;     /* 1 when the binary came from the on-disk cache */
  char *log;      /* malloc'ed compiler output (warnings or errors), may be NULL; caller frees */
} ht_compile_info;

typedef struct ht_arg {
  int is_buffer;
  ht_buffer *buf; /* when is_buffer */
  ht_dtype type;  /* scalar type, or element type of the buffer */
  ht_value value; /* scalar value, converted to type at launch */
  /* The stop flag of cooperative cancellation (type HT_DTYPE_I32, no buffer): the backend passes a
   * pointer to a 32-bit flag of the launch's own that is 0 while the kernel may go on and becomes
   * nonzero when ht_device_cancel is called. The kernel polls it and returns early. C:
   * `volatile int32_t *` (a field of the launch's event); OpenCL: `__global volatile int *` (a
   * buffer of its own, mapped on devices that share host memory, else written through a second,
   * control queue); CUDA: `volatile int *` (host-mapped pinned memory). A synchronous launch
   * passes a flag that stays 0. Examples: docs/runtime.md, "Stopping a running kernel". */
  int is_stop_flag;
} ht_arg;

typedef struct ht_launch {
  int dims;          /* 1..3 */
  size_t global[3];  /* total work-items per dimension (a multiple of local) */
  size_t local[3];   /* work-group / block size; all 0 = let the runtime choose (OpenCL only) */
  size_t offset[3];  /* global work offset: ids start here (HT_CAP_OFFSET; without it a nonzero
                      * offset is HT_ERR_UNSUPPORTED); all 0 when unused */
  int n_args;
  const ht_arg *args;
  double work_flops, work_bytes; /* what the launch computes and moves (0: unknown): a simulated
                                  * device's time comes from them */
} ht_launch;

/* What a device can do besides compiling and running synchronously (ht_device_caps). A call that
 * needs a capability the device lacks returns HT_ERR_UNSUPPORTED, never crashes. */
enum {
  HT_CAP_ASYNC = 1u << 0,     /* ht_device_launch_async returns while the kernel runs */
  HT_CAP_OFFSET = 1u << 1,    /* ht_launch.offset is honoured */
  HT_CAP_CANCEL = 1u << 2,    /* ht_device_cancel raises the stop flag of a launch in flight */
  HT_CAP_VIEWS = 1u << 3,     /* ht_device_buffer_view gives sub-ranges usable as kernel arguments */
  HT_CAP_SIMULATED = 1u << 4, /* times are modelled, not measured (the sim backend) */
  HT_CAP_HOST_MEMORY = 1u << 5, /* kernels use host memory itself: nothing to copy (the c backend) */
  HT_CAP_COMPILES_AT_LAUNCH = 1u << 6, /* a program's first launch may compile it for that launch's
                                        * geometry (PoCL): tuning gives it the compile timeout */
  HT_CAP_PARALLEL_COMPILE = 1u << 7,   /* ht_device_compile may run in several threads at once, each
                                        * build a compiler process of its own (the c backend) */
};

typedef struct ht_event ht_event; /* one launch in flight; backend-defined */

typedef struct ht_device ht_device; /* an open device (opaque: used through the calls below) */

/* Opens a device by id: "c", "c:0", "opencl" (first), "opencl:0:0", "cuda", "cuda:0".
 * Unknown backend or device -> HT_ERR_NOTFOUND naming the id and listing what exists. */
ht_status ht_device_open(const char *id, ht_device **out);
void ht_device_close(ht_device *dev);
/* Probes every backend; infos malloc'ed (caller frees). notes (optional) gets one line per backend
 * that could not run, e.g. "cuda: libcuda.so.1 not found". */
ht_status ht_device_list(ht_device_info **infos, int *n, ht_buf *notes);

/* What ht_device_list gives for this device: its id, name, limits and fingerprint. */
const ht_device_info *ht_device_info_get(const ht_device *dev);
/* The device's HT_CAP_* bits. */
unsigned ht_device_caps(const ht_device *dev);

/* ---- programs and launches ---- */

/* Compiles src with the -D defines defs (may be NULL), or loads it from the on-disk cache (keyed by
 * source, defines, flags and compiler). A source that does not compile: HT_ERR_COMPILE, the first
 * error line in the message and the whole log in info->log. info may be NULL; the caller frees
 * info->log. */
ht_status ht_device_compile(ht_device *dev, const ht_source *src, const ht_defines *defs, ht_program **out,
                            ht_compile_info *info);
void ht_device_program_free(ht_device *dev, ht_program *p);
/* Runs the kernel once and waits for it. *kernel_s (kernel_s may be NULL): device time from events
 * (OpenCL profiling, CUDA events), the modelled time (sim), or CLOCK_MONOTONIC around the call (c). */
ht_status ht_device_launch(ht_device *dev, ht_program *p, const ht_launch *l, double *kernel_s);

/* ---- buffers: seconds (may be NULL) gets the copy's time ---- */

ht_status ht_device_buffer_new(ht_device *dev, size_t bytes, ht_buffer **out);
/* Frees a buffer or a view (a view before its buffer; a buffer freed first is kept until its
 * last view goes). */
void ht_device_buffer_free(ht_device *dev, ht_buffer *b);
/* Copies bytes from host to the start of b, or from the start of b to host. */
ht_status ht_device_buffer_write(ht_device *dev, ht_buffer *b, const void *host, size_t bytes, double *seconds);
ht_status ht_device_buffer_read(ht_device *dev, ht_buffer *b, void *host, size_t bytes, double *seconds);
/* The same at byte offset of b; HT_ERR_INVALID outside b, HT_ERR_UNSUPPORTED for a nonzero offset
 * on a device that cannot copy at one. */
ht_status ht_device_buffer_write_at(ht_device *dev, ht_buffer *b, size_t offset, const void *host, size_t bytes,
                                    double *seconds);
ht_status ht_device_buffer_read_at(ht_device *dev, ht_buffer *b, size_t offset, void *host, size_t bytes,
                                   double *seconds);
/* bytes at byte offset of b as a buffer of its own, usable as a kernel argument (HT_CAP_VIEWS); a
 * view of a view is a view of the same buffer. HT_ERR_INVALID outside b or empty;
 * HT_ERR_UNSUPPORTED without views or where this offset cannot be one (OpenCL's base-address
 * alignment): copy the range instead. */
ht_status ht_device_buffer_view(ht_device *dev, ht_buffer *b, size_t offset, size_t bytes, ht_buffer **out);

/* ---- launches in flight ---- */

/* Launches without waiting where the backend can (HT_CAP_ASYNC); elsewhere runs the kernel to the
 * end first, so the wait that must follow returns at once. */
ht_status ht_device_launch_async(ht_device *dev, ht_program *p, const ht_launch *l, ht_event **out);
/* Waits for the launch and frees its event; *kernel_s as launch gives it. */
ht_status ht_device_wait(ht_device *dev, ht_event *e, double *kernel_s);
/* 1: finished (the wait returns at once), 0: running, -1: no device or event. */
int ht_device_poll(ht_device *dev, ht_event *e);
/* Raises the stop flag of a launch in flight (HT_ERR_UNSUPPORTED without HT_CAP_CANCEL). Call it
 * before the launch's wait returns (the wait frees the event); on a launch that has finished or
 * has no stop-flag argument it does nothing. */
ht_status ht_device_cancel(ht_device *dev, ht_event *e);

/* ---- power ---- */

/* A device's power figures, for energy-aware co-execution (docs/runtime.md, "Power"). */
typedef struct ht_device_power_info {
  double active_w;  /* while the device computes: the model's power_w (sim), the peak over short
                     * windows of a reference load on every core (rapl), the enforced power limit (nvml) */
  double idle_w;    /* while it waits: the model's idle_w, or the average over a quiet interval */
  char source[16];  /* "sim model", "rapl", "nvml" */
  char detail[192]; /* what was read: the RAPL package domains, the NVML device */
} ht_device_power_info;

/* How a measured figure is taken (0 in a field: its default). */
typedef struct ht_device_power_options {
  double idle_s;   /* quiet interval the idle power is averaged over (default 0.1 s) */
  double load_s;   /* how long the reference load runs (default 0.3 s) */
  double window_s; /* the windows whose highest power is the active figure (default 0.05 s) */
  int threads;     /* spinning threads of the CPU's reference load (default: the device's max_threads) */
} ht_device_power_options;

/* The power of dev: from a simulated device's model, from RAPL energy counters for the c backend
 * (under $HETUNE_POWERCAP_DIR, default /sys/class/powercap; it runs a reference load of about
 * idle_s + load_s), from NVML for cuda. opt may be NULL (defaults). No figure here (no counters,
 * counters only root may read, no NVML, an OpenCL device, a sim device without "power_w"):
 * HT_ERR_UNSUPPORTED, "no power reading for device ID: why". */
ht_status ht_device_power(ht_device *dev, const ht_device_power_options *opt, ht_device_power_info *out);

#ifdef __cplusplus
}
#endif
#endif
