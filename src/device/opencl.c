/* The "opencl" backend over the ICD loader: every platform's devices, program binaries cached on
 * disk, kernel times from profiling events. */
#include <CL/cl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "device/backend.h"

#ifndef CL_DEVICE_WARP_SIZE_NV
#define CL_DEVICE_WARP_SIZE_NV 0x4003
#endif
#ifndef CL_DEVICE_WAVEFRONT_WIDTH_AMD
#define CL_DEVICE_WAVEFRONT_WIDTH_AMD 0x4043
#endif

enum { MAX_PLATFORMS = 16, MAX_PER_PLATFORM = 32 };

typedef struct cl_impl {
  cl_platform_id platform;
  cl_device_id device;
  cl_context ctx;
  cl_command_queue queue;   /* kernels and copies, in order, profiled */
  cl_command_queue control; /* stop flags: maps them, writes them while a kernel runs */
  int unified;              /* the device works in host memory: a mapped flag is the kernel's */
  size_t align;             /* CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes: where sub-buffers may start */
} cl_impl;

typedef struct cl_prog {
  cl_program program;
  cl_kernel kernel;
  pthread_mutex_t lock; /* a kernel's arguments are set and enqueued by one thread at a time */
} cl_prog;

typedef struct cl_buf {
  ht_buf_ref ref; /* first: a view keeps its root buffer */
  cl_mem mem;     /* a view's is a sub-buffer of its root's */
  size_t bytes;
  size_t origin;  /* a view's offset in its root */
} cl_buf;

static const char *cl_error_name(cl_int e) {
  static const struct {
    cl_int code;
    const char *name;
  } names[] = {
      {CL_SUCCESS, "CL_SUCCESS"},
      {CL_DEVICE_NOT_FOUND, "CL_DEVICE_NOT_FOUND"},
      {CL_DEVICE_NOT_AVAILABLE, "CL_DEVICE_NOT_AVAILABLE"},
      {CL_COMPILER_NOT_AVAILABLE, "CL_COMPILER_NOT_AVAILABLE"},
      {CL_MEM_OBJECT_ALLOCATION_FAILURE, "CL_MEM_OBJECT_ALLOCATION_FAILURE"},
      {CL_OUT_OF_RESOURCES, "CL_OUT_OF_RESOURCES"},
      {CL_OUT_OF_HOST_MEMORY, "CL_OUT_OF_HOST_MEMORY"},
      {CL_PROFILING_INFO_NOT_AVAILABLE, "CL_PROFILING_INFO_NOT_AVAILABLE"},
      {CL_MEM_COPY_OVERLAP, "CL_MEM_COPY_OVERLAP"},
      {CL_IMAGE_FORMAT_MISMATCH, "CL_IMAGE_FORMAT_MISMATCH"},
      {CL_IMAGE_FORMAT_NOT_SUPPORTED, "CL_IMAGE_FORMAT_NOT_SUPPORTED"},
      {CL_BUILD_PROGRAM_FAILURE, "CL_BUILD_PROGRAM_FAILURE"},
      {CL_MAP_FAILURE, "CL_MAP_FAILURE"},
      {CL_MISALIGNED_SUB_BUFFER_OFFSET, "CL_MISALIGNED_SUB_BUFFER_OFFSET"},
      {CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST"},
      {CL_COMPILE_PROGRAM_FAILURE, "CL_COMPILE_PROGRAM_FAILURE"},
      {CL_LINKER_NOT_AVAILABLE, "CL_LINKER_NOT_AVAILABLE"},
      {CL_LINK_PROGRAM_FAILURE, "CL_LINK_PROGRAM_FAILURE"},
      {CL_DEVICE_PARTITION_FAILED, "CL_DEVICE_PARTITION_FAILED"},
      {CL_KERNEL_ARG_INFO_NOT_AVAILABLE, "CL_KERNEL_ARG_INFO_NOT_AVAILABLE"},
      {CL_INVALID_VALUE, "CL_INVALID_VALUE"},
      {CL_INVALID_DEVICE_TYPE, "CL_INVALID_DEVICE_TYPE"},
      {CL_INVALID_PLATFORM, "CL_INVALID_PLATFORM"},
      {CL_INVALID_DEVICE, "CL_INVALID_DEVICE"},
      {CL_INVALID_CONTEXT, "CL_INVALID_CONTEXT"},
      {CL_INVALID_QUEUE_PROPERTIES, "CL_INVALID_QUEUE_PROPERTIES"},
      {CL_INVALID_COMMAND_QUEUE, "CL_INVALID_COMMAND_QUEUE"},
      {CL_INVALID_HOST_PTR, "CL_INVALID_HOST_PTR"},
      {CL_INVALID_MEM_OBJECT, "CL_INVALID_MEM_OBJECT"},
      {CL_INVALID_IMAGE_FORMAT_DESCRIPTOR, "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR"},
      {CL_INVALID_IMAGE_SIZE, "CL_INVALID_IMAGE_SIZE"},
      {CL_INVALID_SAMPLER, "CL_INVALID_SAMPLER"},
      {CL_INVALID_BINARY, "CL_INVALID_BINARY"},
      {CL_INVALID_BUILD_OPTIONS, "CL_INVALID_BUILD_OPTIONS"},
      {CL_INVALID_PROGRAM, "CL_INVALID_PROGRAM"},
      {CL_INVALID_PROGRAM_EXECUTABLE, "CL_INVALID_PROGRAM_EXECUTABLE"},
      {CL_INVALID_KERNEL_NAME, "CL_INVALID_KERNEL_NAME"},
      {CL_INVALID_KERNEL_DEFINITION, "CL_INVALID_KERNEL_DEFINITION"},
      {CL_INVALID_KERNEL, "CL_INVALID_KERNEL"},
      {CL_INVALID_ARG_INDEX, "CL_INVALID_ARG_INDEX"},
      {CL_INVALID_ARG_VALUE, "CL_INVALID_ARG_VALUE"},
      {CL_INVALID_ARG_SIZE, "CL_INVALID_ARG_SIZE"},
      {CL_INVALID_KERNEL_ARGS, "CL_INVALID_KERNEL_ARGS"},
      {CL_INVALID_WORK_DIMENSION, "CL_INVALID_WORK_DIMENSION"},
      {CL_INVALID_WORK_GROUP_SIZE, "CL_INVALID_WORK_GROUP_SIZE"},
      {CL_INVALID_WORK_ITEM_SIZE, "CL_INVALID_WORK_ITEM_SIZE"},
      {CL_INVALID_GLOBAL_OFFSET, "CL_INVALID_GLOBAL_OFFSET"},
      {CL_INVALID_EVENT_WAIT_LIST, "CL_INVALID_EVENT_WAIT_LIST"},
      {CL_INVALID_EVENT, "CL_INVALID_EVENT"},
      {CL_INVALID_OPERATION, "CL_INVALID_OPERATION"},
      {CL_INVALID_GL_OBJECT, "CL_INVALID_GL_OBJECT"},
      {CL_INVALID_BUFFER_SIZE, "CL_INVALID_BUFFER_SIZE"},
      {CL_INVALID_MIP_LEVEL, "CL_INVALID_MIP_LEVEL"},
      {CL_INVALID_GLOBAL_WORK_SIZE, "CL_INVALID_GLOBAL_WORK_SIZE"},
      {CL_INVALID_PROPERTY, "CL_INVALID_PROPERTY"},
      {CL_INVALID_IMAGE_DESCRIPTOR, "CL_INVALID_IMAGE_DESCRIPTOR"},
      {CL_INVALID_COMPILER_OPTIONS, "CL_INVALID_COMPILER_OPTIONS"},
      {CL_INVALID_LINKER_OPTIONS, "CL_INVALID_LINKER_OPTIONS"},
      {CL_INVALID_DEVICE_PARTITION_COUNT, "CL_INVALID_DEVICE_PARTITION_COUNT"},
      {-1001, "CL_PLATFORM_NOT_FOUND_KHR"},
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (names[i].code == e) return names[i].name;
  return "CL_UNKNOWN_ERROR";
}

static ht_status cl_fail(ht_status code, cl_int err, const char *what) {
  return ht_error(code, "%s failed: %s (%d)", what, cl_error_name(err), (int)err);
}

/* The process that initialised an OpenCL runtime (PoCL starts worker threads). Probing from any
 * other process goes through a forked child so the ICD and its drivers stay uninitialised here:
 * the tuner forks workers after probing, and driver threads do not survive fork(). */
static pid_t cl_owner_pid;

/* ---- probe ---- */

static void dev_str(cl_device_id d, cl_device_info what, char *out, size_t len) {
  char tmp[1024] = "";
  clGetDeviceInfo(d, what, sizeof tmp - 1, tmp, NULL);
  ht_copy_field(out, len, tmp);
}

static uint64_t dev_u64(cl_device_id d, cl_device_info what) {
  cl_ulong v = 0;
  return clGetDeviceInfo(d, what, sizeof v, &v, NULL) == CL_SUCCESS ? v : 0;
}

static uint32_t dev_u32(cl_device_id d, cl_device_info what) {
  cl_uint v = 0;
  return clGetDeviceInfo(d, what, sizeof v, &v, NULL) == CL_SUCCESS ? v : 0;
}

static size_t dev_size(cl_device_id d, cl_device_info what) {
  size_t v = 0;
  return clGetDeviceInfo(d, what, sizeof v, &v, NULL) == CL_SUCCESS ? v : 0;
}

static int warp_size(cl_device_id d) {
  char ext[8192] = "";
  clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, sizeof ext - 1, ext, NULL);
  if (strstr(ext, "cl_nv_device_attribute_query")) return (int)dev_u32(d, CL_DEVICE_WARP_SIZE_NV);
  if (strstr(ext, "cl_amd_device_attribute_query")) return (int)dev_u32(d, CL_DEVICE_WAVEFRONT_WIDTH_AMD);
  return 1;
}

static void fill_info(cl_platform_id p, cl_device_id d, int pi, int di, ht_device_info *o) {
  memset(o, 0, sizeof *o);
  ht_copy_field(o->backend, sizeof o->backend, "opencl");
  snprintf(o->id, sizeof o->id, "opencl:%d:%d", pi, di);
  dev_str(d, CL_DEVICE_NAME, o->name, sizeof o->name);
  dev_str(d, CL_DEVICE_VENDOR, o->vendor, sizeof o->vendor);
  dev_str(d, CL_DRIVER_VERSION, o->driver_version, sizeof o->driver_version);
  dev_str(d, CL_DEVICE_VERSION, o->runtime_version, sizeof o->runtime_version);
  char pname[256] = "", pver[256] = "", both[600];
  clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof pname - 1, pname, NULL);
  clGetPlatformInfo(p, CL_PLATFORM_VERSION, sizeof pver - 1, pver, NULL);
  snprintf(both, sizeof both, "%s %s", pname, pver);
  ht_copy_field(o->compiler_version, sizeof o->compiler_version, both);
  o->compute_units = (int)dev_u32(d, CL_DEVICE_MAX_COMPUTE_UNITS);
  o->max_work_group_size = dev_size(d, CL_DEVICE_MAX_WORK_GROUP_SIZE);
  o->max_threads = (int)((uint64_t)o->compute_units * o->max_work_group_size);
  o->warp_size = warp_size(d);
  o->clock_mhz = (int)dev_u32(d, CL_DEVICE_MAX_CLOCK_FREQUENCY);
  o->global_mem_bytes = dev_u64(d, CL_DEVICE_GLOBAL_MEM_SIZE);
  o->local_mem_bytes = dev_u64(d, CL_DEVICE_LOCAL_MEM_SIZE);
  o->max_alloc_bytes = dev_u64(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  size_t sizes[3] = {0, 0, 0};
  clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof sizes, sizes, NULL);
  for (int i = 0; i < 3; i++) o->max_work_item_sizes[i] = sizes[i];
  ht_device_info_fingerprint(o);
}

/* PoCL keeps the kernels it compiles (shared objects it loads and runs) in a cache of its own: by
 * default ~/.cache/pocl, or without HOME a folder under /tmp any user could have made. Inside
 * hetune's cache folder it gets the same checks (cl_compile), unless the user chose a folder. */
static void prefer_pocl_cache(void) {
  if (getenv("POCL_CACHE_DIR")) return;
  char *dir = ht_strfmt("%s/pocl", ht_cache_dir());
  if (dir) setenv("POCL_CACHE_DIR", dir, 0);
  free(dir);
}

static ht_status check_pocl_cache(void) {
  const char *dir = getenv("POCL_CACHE_DIR");
  if (!dir || !*dir) return HT_OK;
  ht_status s = ht_mkdir_p(dir);
  if (!s) s = ht_check_private_dir(dir);
  return s ? ht_error_prefix(s, "POCL_CACHE_DIR: ") : HT_OK;
}

/* PoCL's CPU device runs work-groups on a pool of threads the OS may move between cores; bound to
 * cores (POCL_AFFINITY=1) the same config measured in separate processes agrees much better:
 * pairwise differences mean 58% -> 33%, rank correlation 0.57 -> 0.75, medians 1-12% faster
 * (bench/pocl_affinity/ab.sh, BENCHMARKS.md). Set before PoCL reads it at its first call, unless
 * the user chose a value. Other OpenCL drivers ignore it. */
static void prefer_pocl_affinity(void) { setenv("POCL_AFFINITY", "1", 0); }

static ht_status get_platforms(cl_platform_id *ps, cl_uint *np) {
  *np = 0;
  prefer_pocl_affinity();
  prefer_pocl_cache();
  cl_int e = clGetPlatformIDs(MAX_PLATFORMS, ps, np);
  if (e == -1001 || (e == CL_SUCCESS && *np == 0))
    return ht_error(HT_ERR_UNSUPPORTED, "no OpenCL platform found (the ICD loader found no driver)");
  if (e != CL_SUCCESS) return cl_fail(HT_ERR_UNSUPPORTED, e, "clGetPlatformIDs");
  return HT_OK;
}

static cl_uint get_devices(cl_platform_id p, cl_device_id *ds) {
  cl_uint nd = 0;
  if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, MAX_PER_PLATFORM, ds, &nd) != CL_SUCCESS) return 0;
  return nd < MAX_PER_PLATFORM ? nd : MAX_PER_PLATFORM;
}

static ht_status probe_here(ht_device_info *out, int max, int *n) {
  cl_platform_id ps[MAX_PLATFORMS];
  cl_uint np;
  *n = 0;
  ht_status s = get_platforms(ps, &np);
  if (s) return s;
  for (cl_uint pi = 0; pi < np && pi < MAX_PLATFORMS; pi++) {
    cl_device_id ds[MAX_PER_PLATFORM];
    cl_uint nd = get_devices(ps[pi], ds);
    for (cl_uint di = 0; di < nd && *n < max; di++) fill_info(ps[pi], ds[di], (int)pi, (int)di, &out[(*n)++]);
  }
  return HT_OK;
}

static ht_status cl_probe(ht_device_info *out, int max, int *n) {
  if (cl_owner_pid == getpid()) return probe_here(out, max, n);
  return ht_probe_in_child(probe_here, out, max, n);
}

/* ---- open / close ---- */

/* The index-th device in probe order. */
static ht_status find_device(int index, cl_platform_id *pp, cl_device_id *dp) {
  cl_platform_id ps[MAX_PLATFORMS];
  cl_uint np;
  ht_status s = get_platforms(ps, &np);
  if (s) return s;
  int k = 0;
  for (cl_uint pi = 0; pi < np && pi < MAX_PLATFORMS; pi++) {
    cl_device_id ds[MAX_PER_PLATFORM];
    cl_uint nd = get_devices(ps[pi], ds);
    if (index < k + (int)nd) {
      *pp = ps[pi];
      *dp = ds[index - k];
      return HT_OK;
    }
    k += (int)nd;
  }
  return ht_error(HT_ERR_NOTFOUND, "no OpenCL device number %d", index);
}

static ht_status cl_open(ht_device *dev, int index) {
  cl_owner_pid = getpid();
  cl_impl *im = calloc(1, sizeof *im);
  if (!im) return ht_error(HT_ERR_NOMEM, "out of memory");
  ht_status s = find_device(index, &im->platform, &im->device);
  cl_int e = CL_SUCCESS;
  if (!s) {
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)im->platform, 0};
    im->ctx = clCreateContext(props, 1, &im->device, NULL, NULL, &e);
    if (!im->ctx) s = cl_fail(HT_ERR_DEVICE, e, "clCreateContext");
  }
  if (!s) {
    im->queue = clCreateCommandQueue(im->ctx, im->device, CL_QUEUE_PROFILING_ENABLE, &e);
    if (!im->queue) s = cl_fail(HT_ERR_DEVICE, e, "clCreateCommandQueue");
  }
  if (!s) {
    im->control = clCreateCommandQueue(im->ctx, im->device, 0, &e);
    if (!im->control) s = cl_fail(HT_ERR_DEVICE, e, "clCreateCommandQueue (control)");
  }
  if (!s) {
    im->unified = dev_u32(im->device, CL_DEVICE_HOST_UNIFIED_MEMORY) == CL_TRUE;
    im->align = dev_u32(im->device, CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8; /* reported in bits */
    if (im->align < 1) im->align = 1;
  }
  /* Binaries from the caches are loaded and run: an untrusted cache fails the device up front. */
  if (!s) s = ht_cache_check("opencl");
  if (!s) s = check_pocl_cache();
  if (s) {
    if (im->control) clReleaseCommandQueue(im->control);
    if (im->queue) clReleaseCommandQueue(im->queue);
    if (im->ctx) clReleaseContext(im->ctx);
    free(im);
    return s;
  }
  dev->impl = im;
  return HT_OK;
}

static void cl_close(ht_device *dev) {
  cl_impl *im = dev->impl;
  if (!im) return;
  clFinish(im->queue);
  clFinish(im->control);
  clReleaseCommandQueue(im->control);
  clReleaseCommandQueue(im->queue);
  clReleaseContext(im->ctx);
  free(im);
  dev->impl = NULL;
}

/* ---- compile ---- */

/* The spec's flags against the allow list, and the defines: the options reach the compiler as one
 * string it splits at blanks, so a define with a blank in it would smuggle in options of its own. */
static ht_status check_options(const ht_source *src, const ht_defines *defs) {
  for (int i = 0; defs && i < defs->n; i++)
    if (strpbrk(defs->names[i], " \t\n\r\v\f") || strpbrk(defs->values[i], " \t\n\r\v\f"))
      return ht_error(HT_ERR_COMPILE, "%s: define %s=\"%s\": OpenCL build options cannot carry blanks in a define",
                      src->path ? src->path : "kernel", defs->names[i], defs->values[i]);
  return ht_flags_check(src->flags, src->path);
}

static char *build_options(const ht_source *src, const ht_defines *defs) {
  ht_buf b = {0};
  ht_buf_append(&b, "");
  for (int i = 0; defs && i < defs->n; i++) ht_buf_appendf(&b, "-D%s=%s ", defs->names[i], defs->values[i]);
  char *dir = ht_source_dir(src);
  if (dir) ht_buf_appendf(&b, "-I%s ", dir);
  free(dir);
  if (src->flags) ht_buf_append(&b, src->flags);
  if (b.failed) {
    ht_buf_free(&b);
    return NULL;
  }
  return b.data;
}

static char *build_log(cl_program prog, cl_device_id d) {
  size_t len = 0;
  if (clGetProgramBuildInfo(prog, d, CL_PROGRAM_BUILD_LOG, 0, NULL, &len) != CL_SUCCESS || len == 0) return NULL;
  char *log = calloc(1, len + 1);
  if (log && clGetProgramBuildInfo(prog, d, CL_PROGRAM_BUILD_LOG, len, log, NULL) != CL_SUCCESS) log[0] = '\0';
  /* Drivers pad with blanks and newlines; an empty log is no log. */
  size_t n = log ? strlen(log) : 0;
  while (n && (log[n - 1] == '\n' || log[n - 1] == ' ' || log[n - 1] == '\r')) log[--n] = '\0';
  if (log && !n) {
    free(log);
    log = NULL;
  }
  return log;
}

/* Loads a cached binary; any failure (missing, damaged, other driver) just means "build again". */
static cl_program load_binary(cl_impl *im, const char *path, const char *options) {
  char *bin = NULL;
  size_t len = 0;
  if (ht_cache_get(path, &bin, &len) != HT_OK || len == 0) {
    ht_log(3, "opencl: building: %s", ht_last_error());
    free(bin);
    ht_error_clear();
    return NULL;
  }
  const unsigned char *bins[] = {(const unsigned char *)bin};
  cl_int st = CL_SUCCESS, e = CL_SUCCESS;
  cl_program prog = clCreateProgramWithBinary(im->ctx, 1, &im->device, &len, bins, &st, &e);
  free(bin);
  if (prog && (e != CL_SUCCESS || st != CL_SUCCESS || clBuildProgram(prog, 1, &im->device, options, NULL, NULL) != CL_SUCCESS)) {
    clReleaseProgram(prog);
    prog = NULL;
  }
  return prog;
}

static void save_binary(cl_program prog, const char *path) {
  size_t len = 0;
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof len, &len, NULL) != CL_SUCCESS || len == 0) return;
  unsigned char *bin = malloc(len);
  if (!bin) return;
  unsigned char *bins[] = {bin};
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof bins, bins, NULL) == CL_SUCCESS &&
      ht_cache_put(path, bin, len) != HT_OK)
    ht_log(2, "opencl: cannot cache the program binary: %s", ht_last_error());
  ht_error_clear();
  free(bin);
}

static ht_status build_source(cl_impl *im, const ht_source *src, const char *options, cl_program *out,
                              ht_compile_info *info) {
  cl_int e = CL_SUCCESS;
  char *lined = ht_source_with_line(src);
  if (!lined) return ht_error(HT_ERR_NOMEM, "out of memory");
  const char *text = lined;
  size_t len = strlen(text);
  cl_program prog = clCreateProgramWithSource(im->ctx, 1, &text, &len, &e);
  free(lined);
  if (!prog) return cl_fail(HT_ERR_COMPILE, e, "clCreateProgramWithSource");
  e = clBuildProgram(prog, 1, &im->device, options, NULL, NULL);
  info->log = build_log(prog, im->device);
  if (e != CL_SUCCESS) {
    char what[96];
    snprintf(what, sizeof what, "build failed (%s)", cl_error_name(e));
    clReleaseProgram(prog);
    return ht_compile_error(src->path, what, info->log);
  }
  *out = prog;
  return HT_OK;
}

/* The device, the source, the options and every header the source includes (PoCL reports no
 * dependency list, so the #include directives are scanned against the same -I folders). */
static uint64_t cl_cache_key(const ht_device *dev, const ht_source *src, const char *options) {
  uint64_t h = ht_hash_str("opencl-backend-v2", 0);
  h = ht_hash_str(dev->info.fingerprint, h);
  h = ht_hash_str(src->text, h);
  h = ht_include_hash(src->text, src->path, options, h);
  return ht_hash_str(options, h);
}

static ht_status make_kernel(cl_program prog, const ht_source *src, cl_prog **out) {
  cl_int e = CL_SUCCESS;
  cl_kernel k = clCreateKernel(prog, src->entry, &e);
  if (!k) {
    clReleaseProgram(prog);
    if (e == CL_INVALID_KERNEL_NAME)
      return ht_error(HT_ERR_COMPILE, "entry '%s' not found in %s", src->entry, src->path ? src->path : "the program");
    return cl_fail(HT_ERR_COMPILE, e, "clCreateKernel");
  }
  cl_prog *p = calloc(1, sizeof *p);
  if (!p) {
    clReleaseKernel(k);
    clReleaseProgram(prog);
    return ht_error(HT_ERR_NOMEM, "out of memory");
  }
  p->program = prog;
  p->kernel = k;
  pthread_mutex_init(&p->lock, NULL);
  *out = p;
  return HT_OK;
}

static ht_status cl_compile(ht_device *dev, const ht_source *src, const ht_defines *defs, ht_program **out,
                            ht_compile_info *info) {
  ht_compile_info dummy;
  if (!info) info = &dummy;
  memset(info, 0, sizeof *info);
  if (!src || !src->text || !src->entry) return ht_error(HT_ERR_INVALID, "compile: source text and entry are required");
  cl_impl *im = dev->impl;
  char *options = NULL, *dir = NULL, *path = NULL, hex[17];
  ht_status s = check_options(src, defs);
  if (!s && !(options = build_options(src, defs))) s = ht_error(HT_ERR_NOMEM, "out of memory");
  if (!s) s = ht_cache_subdir("opencl", &dir);
  if (!s) s = check_pocl_cache();
  if (!s) {
    ht_hash_hex(cl_cache_key(dev, src, options), hex);
    path = ht_strfmt("%s/%s.bin", dir, hex);
    if (!path) s = ht_error(HT_ERR_NOMEM, "out of memory");
  }
  cl_program prog = NULL;
  double t0 = ht_now();
  if (!s && (prog = load_binary(im, path, options))) {
    info->cached = 1;
  } else if (!s) {
    s = build_source(im, src, options, &prog, info);
    info->seconds = ht_now() - t0;
    if (!s) save_binary(prog, path);
  }
  cl_prog *p = NULL;
  if (!s) s = make_kernel(prog, src, &p);
  if (!s) *out = (ht_program *)p;
  free(options);
  free(dir);
  free(path);
  return s;
}

static void cl_program_free(ht_device *dev, ht_program *prog) {
  (void)dev;
  cl_prog *p = (cl_prog *)prog;
  if (!p) return;
  clReleaseKernel(p->kernel);
  clReleaseProgram(p->program);
  pthread_mutex_destroy(&p->lock);
  free(p);
}

/* ---- launch ---- */

/* A launch's stop flag: a 4-byte buffer of its own, 0 at the start. On a device working in host
 * memory (PoCL, integrated GPUs) it stays mapped while the kernel runs and cancel stores into it;
 * elsewhere cancel writes it through the control queue, which the driver may run beside the
 * kernel's queue (or, some drivers, only after it: the kernel then runs to its end). */
typedef struct cl_flag {
  cl_mem mem;      /* NULL: the launch has no stop flag */
  cl_int *mapped;  /* the flag in host memory, on unified devices */
  cl_int one;      /* what the control-queue write copies from */
  cl_event write;  /* that write, once enqueued */
} cl_flag;

static ht_status flag_new(cl_impl *im, cl_flag *f) {
  cl_int zero = 0, e = CL_SUCCESS;
  f->mem = clCreateBuffer(im->ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR | CL_MEM_COPY_HOST_PTR, sizeof zero,
                          &zero, &e);
  if (!f->mem) return cl_fail(HT_ERR_DEVICE, e, "clCreateBuffer (stop flag)");
  if (!im->unified) return HT_OK;
  f->mapped = clEnqueueMapBuffer(im->control, f->mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, sizeof zero, 0, NULL,
                                 NULL, &e);
  if (f->mapped) return HT_OK;
  clReleaseMemObject(f->mem);
  f->mem = NULL;
  return cl_fail(HT_ERR_DEVICE, e, "clEnqueueMapBuffer (stop flag)");
}

static ht_status flag_raise(cl_impl *im, cl_flag *f) {
  if (f->mapped) {
    __atomic_store_n(f->mapped, 1, __ATOMIC_SEQ_CST);
    return HT_OK;
  }
  if (!f->mem || f->write) return HT_OK; /* no flag, or raised already */
  f->one = 1;
  cl_int e = clEnqueueWriteBuffer(im->control, f->mem, CL_FALSE, 0, sizeof f->one, &f->one, 0, NULL, &f->write);
  if (e != CL_SUCCESS) {
    f->write = NULL;
    return cl_fail(HT_ERR_RUNTIME, e, "clEnqueueWriteBuffer (stop flag)");
  }
  clFlush(im->control);
  return HT_OK;
}

/* After the kernel: the flag's write and mapping are finished before its memory goes. */
static void flag_free(cl_impl *im, cl_flag *f) {
  if (!f->mem) return;
  if (f->write) {
    clWaitForEvents(1, &f->write);
    clReleaseEvent(f->write);
  }
  cl_event ev = NULL;
  if (f->mapped && clEnqueueUnmapMemObject(im->control, f->mem, f->mapped, 0, NULL, &ev) == CL_SUCCESS) {
    clWaitForEvents(1, &ev);
    clReleaseEvent(ev);
  }
  clReleaseMemObject(f->mem);
  memset(f, 0, sizeof *f);
}

static ht_status set_args(cl_kernel k, const ht_launch *l, cl_mem flag) {
  for (int i = 0; i < l->n_args; i++) {
    const ht_arg *a = &l->args[i];
    cl_int e;
    if (a->is_buffer || a->is_stop_flag) {
      e = clSetKernelArg(k, (cl_uint)i, sizeof(cl_mem), a->is_buffer ? &((cl_buf *)a->buf)->mem : &flag);
    } else {
      ht_scalar v;
      ht_status s = ht_scalar_convert(a->value, a->type, i, &v);
      if (s) return s;
      e = clSetKernelArg(k, (cl_uint)i, ht_dtype_size(a->type), &v);
    }
    if (e != CL_SUCCESS)
      return ht_error(HT_ERR_RUNTIME, "argument %d: clSetKernelArg failed: %s", i, cl_error_name(e));
  }
  return HT_OK;
}

/* Device time of a finished event; errors if the command itself failed. */
static ht_status event_seconds(cl_event ev, const char *what, double *seconds) {
  cl_int st = CL_COMPLETE;
  cl_int e = clWaitForEvents(1, &ev);
  clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
  if (e != CL_SUCCESS || st < 0)
    return ht_error(HT_ERR_RUNTIME, "%s failed: %s", what, cl_error_name(e != CL_SUCCESS ? e : st));
  cl_ulong t0 = 0, t1 = 0;
  if (clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL) != CL_SUCCESS ||
      clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL) != CL_SUCCESS)
    return ht_error(HT_ERR_RUNTIME, "%s: no profiling information", what);
  if (seconds) *seconds = t1 > t0 ? (double)(t1 - t0) * 1e-9 : 0.0;
  return HT_OK;
}

/* Sets the arguments and enqueues the kernel (with its global work offset, if any), after making
 * the launch's stop flag if it has one. *ev is the kernel's profiling event. */
static ht_status enqueue_kernel(cl_impl *im, cl_prog *p, const ht_launch *l, cl_flag *flag, cl_event *ev) {
  memset(flag, 0, sizeof *flag);
  if (!p) return ht_error(HT_ERR_INVALID, "launch: no program");
  ht_status s = ht_launch_check(l);
  if (!s && ht_launch_has_stop_flag(l)) s = flag_new(im, flag);
  if (s) return s;
  int any_local = 0;
  for (int i = 0; i < l->dims; i++) any_local |= l->local[i] != 0;
  pthread_mutex_lock(&p->lock);
  s = set_args(p->kernel, l, flag->mem);
  cl_int e = CL_SUCCESS;
  if (!s)
    e = clEnqueueNDRangeKernel(im->queue, p->kernel, (cl_uint)l->dims, ht_launch_has_offset(l) ? l->offset : NULL,
                               l->global, any_local ? l->local : NULL, 0, NULL, ev);
  pthread_mutex_unlock(&p->lock);
  if (!s && e != CL_SUCCESS) s = ht_error(HT_ERR_RUNTIME, "clEnqueueNDRangeKernel failed: %s", cl_error_name(e));
  if (s) flag_free(im, flag);
  return s;
}

static ht_status cl_launch(ht_device *dev, ht_program *prog, const ht_launch *l, double *kernel_s) {
  cl_impl *im = dev->impl;
  cl_flag flag;
  cl_event ev = NULL;
  ht_status s = enqueue_kernel(im, (cl_prog *)prog, l, &flag, &ev);
  if (s) return s;
  s = event_seconds(ev, "kernel", kernel_s);
  clReleaseEvent(ev);
  flag_free(im, &flag);
  return s;
}

/* ---- asynchronous launch: the kernel's event, polled or waited for ---- */

typedef struct cl_inflight {
  cl_event ev;
  cl_flag flag;
} cl_inflight;

static ht_status cl_launch_async(ht_device *dev, ht_program *prog, const ht_launch *l, ht_event **out) {
  cl_impl *im = dev->impl;
  cl_inflight *f = calloc(1, sizeof *f);
  if (!f) return ht_error(HT_ERR_NOMEM, "out of memory");
  ht_status s = enqueue_kernel(im, (cl_prog *)prog, l, &f->flag, &f->ev);
  if (s) {
    free(f);
    return s;
  }
  clFlush(im->queue); /* submitted now, not at the next blocking call */
  *out = (ht_event *)f;
  return HT_OK;
}

static ht_status cl_wait(ht_device *dev, ht_event *e, double *kernel_s) {
  cl_inflight *f = (cl_inflight *)e;
  ht_status s = event_seconds(f->ev, "kernel", kernel_s);
  clReleaseEvent(f->ev);
  flag_free(dev->impl, &f->flag);
  free(f);
  return s;
}

static int cl_poll(ht_device *dev, ht_event *e) {
  (void)dev;
  cl_int st = CL_COMPLETE;
  clGetEventInfo(((cl_inflight *)e)->ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
  return st <= CL_COMPLETE; /* complete, or failed (negative): wait says how */
}

static ht_status cl_cancel(ht_device *dev, ht_event *e) { return flag_raise(dev->impl, &((cl_inflight *)e)->flag); }

/* ---- buffers ---- */

static ht_status cl_buffer_new(ht_device *dev, size_t bytes, ht_buffer **out) {
  cl_impl *im = dev->impl;
  cl_buf *b = calloc(1, sizeof *b);
  if (!b) return ht_error(HT_ERR_NOMEM, "out of memory");
  cl_int e = CL_SUCCESS;
  /* OpenCL rejects 0-byte buffers; keep a 1-byte one so empty problems still run. */
  b->mem = clCreateBuffer(im->ctx, CL_MEM_READ_WRITE, bytes ? bytes : 1, NULL, &e);
  if (!b->mem) {
    free(b);
    return ht_error(HT_ERR_DEVICE, "clCreateBuffer(%zu bytes) failed: %s", bytes, cl_error_name(e));
  }
  ht_buf_ref_init(&b->ref);
  b->bytes = bytes;
  *out = (ht_buffer *)b;
  return HT_OK;
}

static void cl_buffer_free(ht_device *dev, ht_buffer *buf) {
  (void)dev;
  cl_buf *b = (cl_buf *)buf;
  if (!b) return;
  cl_buf *root = (cl_buf *)ht_buf_ref_drop(&b->ref);
  if (b->ref.root) { /* a view: its sub-buffer and record */
    if (b->mem) clReleaseMemObject(b->mem);
    free(b);
  }
  if (root) {
    clReleaseMemObject(root->mem);
    free(root);
  }
}

/* A sub-buffer of the root buffer. OpenCL wants its origin aligned to the device's base address
 * alignment; other offsets are HT_ERR_UNSUPPORTED, and the caller copies the range instead. */
static ht_status cl_buffer_view(ht_device *dev, ht_buffer *buf, size_t offset, size_t bytes, ht_buffer **out) {
  cl_impl *im = dev->impl;
  cl_buf *b = (cl_buf *)buf, *v = NULL;
  ht_status s = ht_buf_view_new(sizeof *v, b ? &b->ref : NULL, b ? b->bytes : 0, offset, bytes, (void **)&v);
  if (s) return s;
  v->origin = b->origin + offset;
  v->bytes = bytes;
  if (v->origin % im->align) {
    s = ht_error(HT_ERR_UNSUPPORTED,
                 "buffer view at byte %zu: OpenCL sub-buffers start at multiples of %zu bytes on %s; copy the "
                 "range instead",
                 v->origin, im->align, dev->info.id);
  } else {
    cl_buffer_region r = {v->origin, bytes};
    cl_int e = CL_SUCCESS;
    v->mem = clCreateSubBuffer(((cl_buf *)v->ref.root)->mem, 0, CL_BUFFER_CREATE_TYPE_REGION, &r, &e);
    if (!v->mem) s = cl_fail(HT_ERR_DEVICE, e, "clCreateSubBuffer");
  }
  if (s) {
    cl_buffer_free(dev, (ht_buffer *)v);
    return s;
  }
  *out = (ht_buffer *)v;
  return HT_OK;
}

static ht_status cl_transfer(ht_device *dev, ht_buffer *buf, size_t offset, void *host, size_t bytes, int write,
                             double *seconds) {
  cl_impl *im = dev->impl;
  cl_buf *b = (cl_buf *)buf;
  if (!b) return ht_error(HT_ERR_INVALID, "no buffer");
  ht_status s = ht_range_check(b->bytes, offset, bytes);
  if (s) return s;
  if (bytes == 0) {
    if (seconds) *seconds = 0;
    return HT_OK;
  }
  cl_event ev = NULL;
  cl_int e = write ? clEnqueueWriteBuffer(im->queue, b->mem, CL_TRUE, offset, bytes, host, 0, NULL, &ev)
                   : clEnqueueReadBuffer(im->queue, b->mem, CL_TRUE, offset, bytes, host, 0, NULL, &ev);
  if (e != CL_SUCCESS)
    return ht_error(HT_ERR_RUNTIME, "%s failed: %s", write ? "clEnqueueWriteBuffer" : "clEnqueueReadBuffer",
                    cl_error_name(e));
  s = event_seconds(ev, write ? "buffer write" : "buffer read", seconds);
  clReleaseEvent(ev);
  return s;
}

static ht_status cl_buffer_write(ht_device *dev, ht_buffer *b, const void *host, size_t bytes, double *seconds) {
  /* The write path never modifies host; the shared helper just takes one pointer type. */
  return cl_transfer(dev, b, 0, (void *)(uintptr_t)host, bytes, 1, seconds);
}

static ht_status cl_buffer_read(ht_device *dev, ht_buffer *b, void *host, size_t bytes, double *seconds) {
  return cl_transfer(dev, b, 0, host, bytes, 0, seconds);
}

static ht_status cl_buffer_write_at(ht_device *dev, ht_buffer *b, size_t offset, const void *host, size_t bytes,
                                    double *seconds) {
  return cl_transfer(dev, b, offset, (void *)(uintptr_t)host, bytes, 1, seconds);
}

static ht_status cl_buffer_read_at(ht_device *dev, ht_buffer *b, size_t offset, void *host, size_t bytes,
                                   double *seconds) {
  return cl_transfer(dev, b, offset, host, bytes, 0, seconds);
}

const ht_backend_ops ht_backend_opencl = {
    .name = "opencl",
    .probe = cl_probe,
    .open = cl_open,
    .close = cl_close,
    .compile = cl_compile,
    .program_free = cl_program_free,
    .launch = cl_launch,
    .buffer_new = cl_buffer_new,
    .buffer_write = cl_buffer_write,
    .buffer_read = cl_buffer_read,
    .buffer_free = cl_buffer_free,
    .caps = HT_CAP_ASYNC | HT_CAP_OFFSET | HT_CAP_CANCEL | HT_CAP_VIEWS | HT_CAP_COMPILES_AT_LAUNCH,
    .launch_async = cl_launch_async,
    .wait = cl_wait,
    .poll = cl_poll,
    .cancel = cl_cancel,
    .buffer_view = cl_buffer_view,
    .buffer_write_at = cl_buffer_write_at,
    .buffer_read_at = cl_buffer_read_at,
};
