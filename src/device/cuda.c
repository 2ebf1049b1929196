/* The "cuda" backend: the driver API and NVRTC, both loaded with dlopen at run time so one binary
 * runs with or without an NVIDIA driver. Kernels must be extern "C" (their names unmangled). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "device/backend.h"
#include "device/cuda_api.h"
#include "device/cuda_nvrtc.h"

typedef struct cuda_impl {
  cu_api api;
  cu_device dev;
  cu_handle ctx;
  cu_handle ev_start, ev_end;
  cu_handle stream; /* asynchronous launches; the NULL stream's copies wait for them */
  cu_handle control; /* raises stop flags while a launch runs */
  int cc;           /* compute capability, major*10+minor */
} cuda_impl;

typedef struct cuda_prog {
  cu_handle module;
  cu_handle fn;
} cuda_prog;

typedef struct cuda_buf {
  ht_buf_ref ref; /* first: views share their root's memory */
  cu_devptr ptr;
  size_t bytes;
} cuda_buf;

/* The process that initialised the driver (cuInit). Any other process probes in a forked child:
 * a driver initialised before fork() cannot be used by the tuner's forked workers. */
static pid_t cuda_owner_pid;

static const char *cu_name(const cu_api *a, cu_result r) {
  const char *name = NULL;
  if (a->GetErrorName && a->GetErrorName(r, &name) == 0 && name) return name;
  return "CUDA_ERROR_UNKNOWN";
}

static ht_status cu_fail(const cu_api *a, ht_status code, cu_result r, const char *what) {
  return ht_error(code, "%s failed: %s (%d)", what, cu_name(a, r), r);
}

/* ---- loading the driver ---- */

static void *load_sym(void *lib, const char *name, const char *fallback, int *missing) {
  void *p = dlsym(lib, name);
  if (!p && fallback) p = dlsym(lib, fallback);
  if (!p) *missing = 1;
  return p;
}

#define LOAD(field, name, fallback) (*(void **)&a->field = load_sym(lib, name, fallback, &missing))

/* The driver stays loaded (RTLD_NODELETE): unloading libcuda while a context may exist is unsafe. */
static ht_status cu_load(cu_api *a) {
  memset(a, 0, sizeof *a);
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!lib) return ht_error(HT_ERR_UNSUPPORTED, "libcuda.so.1 not found (no NVIDIA driver)");
  int missing = 0;
  LOAD(Init, "cuInit", NULL);
  LOAD(DriverGetVersion, "cuDriverGetVersion", NULL);
  LOAD(DeviceGetCount, "cuDeviceGetCount", NULL);
  LOAD(DeviceGet, "cuDeviceGet", NULL);
  LOAD(DeviceGetName, "cuDeviceGetName", NULL);
  LOAD(DeviceTotalMem, "cuDeviceTotalMem_v2", NULL);
  LOAD(DeviceGetAttribute, "cuDeviceGetAttribute", NULL);
  LOAD(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", NULL);
  LOAD(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease");
  LOAD(CtxSetCurrent, "cuCtxSetCurrent", NULL);
  LOAD(CtxSynchronize, "cuCtxSynchronize", NULL);
  LOAD(ModuleLoadDataEx, "cuModuleLoadDataEx", NULL);
  LOAD(ModuleUnload, "cuModuleUnload", NULL);
  LOAD(ModuleGetFunction, "cuModuleGetFunction", NULL);
  LOAD(LaunchKernel, "cuLaunchKernel", NULL);
  LOAD(MemAlloc, "cuMemAlloc_v2", NULL);
  LOAD(MemFree, "cuMemFree_v2", NULL);
  LOAD(MemcpyHtoD, "cuMemcpyHtoD_v2", NULL);
  LOAD(MemcpyDtoH, "cuMemcpyDtoH_v2", NULL);
  LOAD(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", NULL);
  LOAD(EventCreate, "cuEventCreate", NULL);
  LOAD(EventRecord, "cuEventRecord", NULL);
  LOAD(EventSynchronize, "cuEventSynchronize", NULL);
  LOAD(EventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime");
  LOAD(EventDestroy, "cuEventDestroy_v2", NULL);
  LOAD(EventQuery, "cuEventQuery", NULL);
  LOAD(StreamCreate, "cuStreamCreate", NULL);
  LOAD(StreamDestroy, "cuStreamDestroy_v2", NULL);
  LOAD(StreamSynchronize, "cuStreamSynchronize", NULL);
  LOAD(GetErrorName, "cuGetErrorName", NULL);
  if (missing) return ht_error(HT_ERR_UNSUPPORTED, "libcuda.so.1 is too old (missing entry points)");
  *(void **)&a->DeviceGetPCIBusId = dlsym(lib, "cuDeviceGetPCIBusId"); /* for NVML, which counts by bus */
  a->lib = lib;
  return HT_OK;
}

#undef LOAD

static ht_status cu_start(cu_api *a) {
  ht_status s = cu_load(a);
  if (s) return s;
  cu_result r = a->Init(0);
  if (r != 0) return ht_error(HT_ERR_UNSUPPORTED, "cuInit failed: %s (%d)", cu_name(a, r), r);
  return HT_OK;
}

/* ---- probe ---- */

static int attr(const cu_api *a, cu_device d, int which) {
  int v = 0;
  return a->DeviceGetAttribute(&v, which, d) == 0 ? v : 0;
}

static void fill_info(const cu_api *a, int index, cu_device d, ht_device_info *o) {
  memset(o, 0, sizeof *o);
  ht_copy_field(o->backend, sizeof o->backend, "cuda");
  snprintf(o->id, sizeof o->id, "cuda:%d", index);
  a->DeviceGetName(o->name, (int)sizeof o->name, d);
  ht_copy_field(o->vendor, sizeof o->vendor, "NVIDIA Corporation");
  int v = 0;
  a->DriverGetVersion(&v);
  snprintf(o->driver_version, sizeof o->driver_version, "CUDA %d.%d", v / 1000, v % 1000 / 10);
  if (ht_cuda_nvrtc_version(o->runtime_version, sizeof o->runtime_version))
    ht_copy_field(o->runtime_version, sizeof o->runtime_version, "NVRTC not found");
  snprintf(o->compiler_version, sizeof o->compiler_version, "%s sm_%d%d", o->runtime_version,
           attr(a, d, CU_ATTR_CC_MAJOR), attr(a, d, CU_ATTR_CC_MINOR));
  o->compute_units = attr(a, d, CU_ATTR_MULTIPROCESSOR_COUNT);
  o->max_work_group_size = (uint64_t)attr(a, d, CU_ATTR_MAX_THREADS_PER_BLOCK);
  o->max_threads = (int)((uint64_t)o->compute_units * o->max_work_group_size);
  o->warp_size = attr(a, d, CU_ATTR_WARP_SIZE);
  o->clock_mhz = attr(a, d, CU_ATTR_CLOCK_RATE) / 1000;
  size_t mem = 0;
  a->DeviceTotalMem(&mem, d);
  o->global_mem_bytes = mem;
  o->max_alloc_bytes = mem;
  o->local_mem_bytes = (uint64_t)attr(a, d, CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK);
  o->max_work_item_sizes[0] = (uint64_t)attr(a, d, CU_ATTR_MAX_BLOCK_DIM_X);
  o->max_work_item_sizes[1] = (uint64_t)attr(a, d, CU_ATTR_MAX_BLOCK_DIM_Y);
  o->max_work_item_sizes[2] = (uint64_t)attr(a, d, CU_ATTR_MAX_BLOCK_DIM_Z);
  ht_device_info_fingerprint(o);
}

static ht_status probe_here(ht_device_info *out, int max, int *n) {
  cu_api a;
  *n = 0;
  ht_status s = cu_start(&a);
  if (s) return s;
  int count = 0;
  cu_result r = a.DeviceGetCount(&count);
  if (r != 0) return cu_fail(&a, HT_ERR_UNSUPPORTED, r, "cuDeviceGetCount");
  for (int i = 0; i < count && *n < max; i++) {
    cu_device d;
    if (a.DeviceGet(&d, i) == 0) fill_info(&a, i, d, &out[(*n)++]);
  }
  return HT_OK;
}

/* Whether something in this process (the application, another library, an OpenCL driver) has
 * already initialised CUDA: the device count is refused until cuInit has run. A child forked
 * after that cannot initialise CUDA again (CUDA_ERROR_NOT_INITIALIZED), so the probe runs here,
 * where it adds no state that is not there already. */
static int cuda_initialised_here(void) {
  cu_api a;
  int count = 0;
  return cu_load(&a) == HT_OK && a.DeviceGetCount(&count) == 0;
}

static ht_status cuda_probe(ht_device_info *out, int max, int *n) {
  if (cuda_owner_pid == getpid()) return probe_here(out, max, n);
  /* Without a driver there is nothing to initialise: answer here, without forking. Loading the
   * library (no cuInit) creates no driver state. */
  if (!dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL | RTLD_NODELETE)) {
    *n = 0;
    return ht_error(HT_ERR_UNSUPPORTED, "libcuda.so.1 not found (no NVIDIA driver)");
  }
  if (cuda_initialised_here()) return probe_here(out, max, n);
  return ht_probe_in_child(probe_here, out, max, n);
}

/* ---- open / close ---- */

static ht_status open_ctx(cuda_impl *im, int index) {
  cu_api *a = &im->api;
  cu_result r = a->DeviceGet(&im->dev, index);
  if (r != 0) return cu_fail(a, HT_ERR_NOTFOUND, r, "cuDeviceGet");
  im->cc = attr(a, im->dev, CU_ATTR_CC_MAJOR) * 10 + attr(a, im->dev, CU_ATTR_CC_MINOR);
  if ((r = a->DevicePrimaryCtxRetain(&im->ctx, im->dev)) != 0) return cu_fail(a, HT_ERR_DEVICE, r, "cuDevicePrimaryCtxRetain");
  if ((r = a->CtxSetCurrent(im->ctx)) != 0) return cu_fail(a, HT_ERR_DEVICE, r, "cuCtxSetCurrent");
  if ((r = a->EventCreate(&im->ev_start, CU_EVENT_FLAG_DEFAULT)) != 0 ||
      (r = a->EventCreate(&im->ev_end, CU_EVENT_FLAG_DEFAULT)) != 0)
    return cu_fail(a, HT_ERR_DEVICE, r, "cuEventCreate");
  if ((r = a->StreamCreate(&im->stream, CU_STREAM_FLAG_DEFAULT)) != 0 ||
      (r = a->StreamCreate(&im->control, CU_STREAM_FLAG_NON_BLOCKING)) != 0)
    return cu_fail(a, HT_ERR_DEVICE, r, "cuStreamCreate");
  return HT_OK;
}

static void release(cuda_impl *im) {
  cu_api *a = &im->api;
  if (im->ctx) a->CtxSetCurrent(im->ctx);
  if (im->ev_start) a->EventDestroy(im->ev_start);
  if (im->ev_end) a->EventDestroy(im->ev_end);
  if (im->stream) a->StreamDestroy(im->stream);
  if (im->control) a->StreamDestroy(im->control);
  if (im->ctx) a->DevicePrimaryCtxRelease(im->dev);
  free(im);
}

static ht_status cuda_open(ht_device *dev, int index) {
  cuda_impl *im = calloc(1, sizeof *im);
  if (!im) return ht_error(HT_ERR_NOMEM, "out of memory");
  ht_status s = cu_start(&im->api);
  if (!s) {
    cuda_owner_pid = getpid();
    s = open_ctx(im, index);
  }
  if (!s) s = ht_cache_check("cuda"); /* PTX from there is loaded and run */
  if (s) {
    if (im->api.lib) release(im);
    else free(im);
    return s;
  }
  dev->impl = im;
  /* CUDA numbers devices fastest first, NVML by PCI bus: power readings find the device by bus. */
  if (im->api.DeviceGetPCIBusId && im->api.DeviceGetPCIBusId(dev->pci_bus_id, (int)sizeof dev->pci_bus_id, im->dev))
    dev->pci_bus_id[0] = '\0';
  return HT_OK;
}

static void cuda_close(ht_device *dev) {
  if (dev->impl) release(dev->impl);
  dev->impl = NULL;
}

/* The primary context must be current in whichever thread calls; setting it is cheap. */
static ht_status make_current(cuda_impl *im) {
  cu_result r = im->api.CtxSetCurrent(im->ctx);
  return r ? cu_fail(&im->api, HT_ERR_DEVICE, r, "cuCtxSetCurrent") : HT_OK;
}

/* ---- compile: NVRTC -> PTX (cached on disk) -> module ---- */

/* PTX from the cache, or (fresh, or not cached) from NVRTC. */
static ht_status get_ptx(cuda_impl *im, const ht_source *src, const ht_defines *defs, int fresh, char **ptx,
                         ht_compile_info *info) {
  char arch[32], ver[64] = "", *dir = NULL, *path = NULL, hex[17];
  ht_status s = ht_cuda_arch(im->cc, arch, sizeof arch);
  if (!s) s = ht_cuda_nvrtc_version(ver, sizeof ver);
  if (!s) s = ht_cache_subdir("cuda", &dir);
  if (s) return s;
  ht_hash_hex(ht_cuda_cache_key(src, defs, arch, ver), hex);
  path = ht_strfmt("%s/%s.ptx", dir, hex);
  free(dir);
  if (!path) return ht_error(HT_ERR_NOMEM, "out of memory");
  double t0 = ht_now();
  if (!fresh && ht_cache_get(path, ptx, NULL) == HT_OK) {
    info->cached = 1;
  } else {
    ht_error_clear();
    s = ht_cuda_compile_ptx(src, defs, arch, ptx, &info->log);
    info->seconds = ht_now() - t0;
    if (!s && ht_cache_put(path, *ptx, strlen(*ptx)) != HT_OK) ht_log(2, "cuda: cannot cache PTX: %s", ht_last_error());
  }
  free(path);
  return s;
}

static ht_status load_module(cuda_impl *im, const ht_source *src, const char *ptx, cuda_prog *p,
                             ht_compile_info *info) {
  cu_api *a = &im->api;
  char jit_log[8192] = "";
  int opts[] = {CU_JIT_OPT_ERROR_LOG_BUFFER, CU_JIT_OPT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *vals[] = {jit_log, (void *)(uintptr_t)sizeof jit_log};
  cu_result r = a->ModuleLoadDataEx(&p->module, ptx, 2, opts, vals);
  const char *where = src->path ? src->path : "kernel";
  if (r != 0) {
    if (jit_log[0] && !info->log) info->log = ht_strdup(jit_log);
    return ht_error(HT_ERR_COMPILE, "%s: PTX load failed: %s: %s", where, cu_name(a, r), jit_log);
  }
  if (a->ModuleGetFunction(&p->fn, p->module, src->entry) != 0) {
    a->ModuleUnload(p->module);
    return ht_error(HT_ERR_COMPILE, "entry '%s' not found in %s (CUDA kernels must be extern \"C\")", src->entry,
                    where);
  }
  return HT_OK;
}

static ht_status cuda_compile(ht_device *dev, const ht_source *src, const ht_defines *defs, ht_program **out,
                              ht_compile_info *info) {
  ht_compile_info dummy;
  if (!info) info = &dummy;
  memset(info, 0, sizeof *info);
  if (!src || !src->text || !src->entry) return ht_error(HT_ERR_INVALID, "compile: source text and entry are required");
  cuda_impl *im = dev->impl;
  char *ptx = NULL;
  ht_status s = make_current(im);
  if (!s) s = get_ptx(im, src, defs, 0, &ptx, info);
  cuda_prog *p = calloc(1, sizeof *p);
  if (!p) {
    free(ptx);
    return ht_error(HT_ERR_NOMEM, "out of memory");
  }
  if (!s) s = load_module(im, src, ptx, p, info);
  /* Cached PTX the driver refuses (damaged, or from an older toolkit): build it again. */
  if (s == HT_ERR_COMPILE && info->cached) {
    free(ptx);
    ptx = NULL;
    free(info->log);
    memset(info, 0, sizeof *info);
    s = get_ptx(im, src, defs, 1, &ptx, info);
    if (!s) s = load_module(im, src, ptx, p, info);
  }
  free(ptx);
  if (s) {
    free(p);
    return s;
  }
  *out = (ht_program *)p;
  return HT_OK;
}

static void cuda_program_free(ht_device *dev, ht_program *prog) {
  cuda_impl *im = dev->impl;
  cuda_prog *p = (cuda_prog *)prog;
  if (!p) return;
  if (make_current(im) == HT_OK) im->api.ModuleUnload(p->module);
  free(p);
}

/* ---- launch ---- */

static ht_status grid_of(const ht_launch *l, unsigned grid[3], unsigned block[3]) {
  for (int i = 0; i < 3; i++) {
    size_t g = i < l->dims ? l->global[i] : 1, b = i < l->dims ? l->local[i] : 1;
    if (b == 0) return ht_error(HT_ERR_INVALID, "launch: CUDA needs a block size (local[%d] is 0)", i);
    if (g % b) return ht_error(HT_ERR_INVALID, "launch: global[%d]=%zu is not a multiple of local[%d]=%zu", i, g, i, b);
    if (g / b > 0xffffffffu || b > 0xffffffffu) return ht_error(HT_ERR_INVALID, "launch: grid too large in dimension %d", i);
    grid[i] = (unsigned)(g / b);
    block[i] = (unsigned)b;
  }
  return HT_OK;
}

typedef struct kparams {
  void **ptrs;
  ht_scalar *vals;
  cu_devptr *dptrs;
} kparams;

static void kparams_free(kparams *k) {
  free(k->ptrs);
  free(k->vals);
  free(k->dptrs);
}

/* The kernel's parameters; a stop-flag argument gets the flag's device pointer. */
static ht_status kparams_fill(const ht_launch *l, cu_devptr flag, kparams *k) {
  size_t n = l->n_args > 0 ? (size_t)l->n_args : 1;
  k->ptrs = calloc(n, sizeof *k->ptrs);
  k->vals = calloc(n, sizeof *k->vals);
  k->dptrs = calloc(n, sizeof *k->dptrs);
  if (!k->ptrs || !k->vals || !k->dptrs) return ht_error(HT_ERR_NOMEM, "out of memory");
  for (int i = 0; i < l->n_args; i++) {
    const ht_arg *a = &l->args[i];
    if (a->is_buffer || a->is_stop_flag) {
      k->dptrs[i] = a->is_buffer ? ((cuda_buf *)a->buf)->ptr : flag;
      k->ptrs[i] = &k->dptrs[i];
      continue;
    }
    ht_status s = ht_scalar_convert(a->value, a->type, i, &k->vals[i]);
    if (s) return s;
    k->ptrs[i] = &k->vals[i];
  }
  return HT_OK;
}

/* A launch's stop flag: 4 bytes of device memory, set to 0 before the launch and to 1 by cancel,
 * both through the control stream, which runs beside the kernel (so the two writes land in the
 * order they were made, and the 0 before the kernel starts). Threads that poll it read the
 * device's memory: a flag in host memory mapped into the device is read across the bus by every
 * polling thread at once, and those reads queue (BENCHMARKS.md, the stop delay on an H200). */
typedef struct cu_flag {
  cu_devptr dev; /* 0: the launch has no stop flag */
  int raised;    /* cancel queued the write of 1 */
} cu_flag;

static const int32_t flag_down = 0, flag_up = 1;

static ht_status flag_new(cuda_impl *im, cu_flag *f) {
  cu_api *a = &im->api;
  cu_result r = a->MemAlloc(&f->dev, sizeof(int32_t));
  if (r) {
    f->dev = 0;
    return cu_fail(a, HT_ERR_DEVICE, r, "cuMemAlloc (stop flag)");
  }
  if ((r = a->MemcpyHtoDAsync(f->dev, &flag_down, sizeof flag_down, im->control)) != 0 ||
      (r = a->StreamSynchronize(im->control)) != 0) {
    a->MemFree(f->dev);
    f->dev = 0;
    return cu_fail(a, HT_ERR_DEVICE, r, "cuMemcpyHtoDAsync (stop flag)");
  }
  return HT_OK;
}

/* After the launch's kernel has ended; a raised flag's write may still be on its way. */
static void flag_free(cuda_impl *im, cu_flag *f) {
  if (!f->dev) return;
  if (f->raised) im->api.StreamSynchronize(im->control);
  im->api.MemFree(f->dev);
  f->dev = 0;
}

/* Checks l, makes its stop flag if it has one, and launches the kernel between events start and
 * end on stream. CUDA has no global work offset: a kernel that needs one takes it as an argument. */
static ht_status launch_between(cuda_impl *im, cuda_prog *p, const ht_launch *l, cu_handle stream, cu_handle start,
                                cu_handle end, cu_flag *flag) {
  memset(flag, 0, sizeof *flag);
  if (!p) return ht_error(HT_ERR_INVALID, "launch: no program");
  unsigned grid[3], block[3];
  ht_status s = ht_launch_check(l);
  if (!s) s = ht_launch_no_offset(l, "cuda");
  if (!s) s = grid_of(l, grid, block);
  if (!s) s = make_current(im);
  if (!s && ht_launch_has_stop_flag(l)) s = flag_new(im, flag);
  if (s) return s;
  kparams k = {0};
  s = kparams_fill(l, flag->dev, &k);
  cu_api *a = &im->api;
  cu_result r = 0;
  if (!s && (r = a->EventRecord(start, stream)) != 0) s = cu_fail(a, HT_ERR_RUNTIME, r, "cuEventRecord");
  if (!s && (r = a->LaunchKernel(p->fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], 0, stream, k.ptrs,
                                 NULL)) != 0)
    s = cu_fail(a, HT_ERR_RUNTIME, r, "cuLaunchKernel");
  if (!s && (r = a->EventRecord(end, stream)) != 0) s = cu_fail(a, HT_ERR_RUNTIME, r, "cuEventRecord");
  kparams_free(&k);
  if (s) flag_free(im, flag);
  return s;
}

/* Waits for event end; the device time since start. */
static ht_status elapsed(cuda_impl *im, cu_handle start, cu_handle end, const char *what, double *seconds) {
  cu_api *a = &im->api;
  cu_result r = a->EventSynchronize(end);
  if (r) return cu_fail(a, HT_ERR_RUNTIME, r, what);
  float ms = 0;
  if ((r = a->EventElapsedTime(&ms, start, end)) != 0) return cu_fail(a, HT_ERR_RUNTIME, r, "cuEventElapsedTime");
  if (seconds) *seconds = ms * 1e-3;
  return HT_OK;
}

/* Elapsed device time between the two events recorded around an operation. */
static ht_status timed_end(cuda_impl *im, const char *what, double *seconds) {
  cu_result r = im->api.EventRecord(im->ev_end, NULL);
  if (r) return cu_fail(&im->api, HT_ERR_RUNTIME, r, what);
  return elapsed(im, im->ev_start, im->ev_end, what, seconds);
}

static ht_status cuda_launch(ht_device *dev, ht_program *prog, const ht_launch *l, double *kernel_s) {
  cuda_impl *im = dev->impl;
  cu_flag flag;
  ht_status s = launch_between(im, (cuda_prog *)prog, l, NULL, im->ev_start, im->ev_end, &flag);
  if (!s) s = elapsed(im, im->ev_start, im->ev_end, "kernel", kernel_s);
  flag_free(im, &flag);
  return s;
}

/* ---- asynchronous launch: events of its own on the device's launch stream ---- */

typedef struct cuda_inflight {
  cu_handle start, end;
  cu_flag flag;
} cuda_inflight;

static void inflight_free(cuda_impl *im, cuda_inflight *f) {
  if (f->start) im->api.EventDestroy(f->start);
  if (f->end) im->api.EventDestroy(f->end);
  flag_free(im, &f->flag);
  free(f);
}

static ht_status cuda_launch_async(ht_device *dev, ht_program *prog, const ht_launch *l, ht_event **out) {
  cuda_impl *im = dev->impl;
  cuda_inflight *f = calloc(1, sizeof *f);
  if (!f) return ht_error(HT_ERR_NOMEM, "out of memory");
  cu_api *a = &im->api;
  cu_result r = 0;
  ht_status s = make_current(im);
  if (!s && ((r = a->EventCreate(&f->start, CU_EVENT_FLAG_DEFAULT)) != 0 ||
             (r = a->EventCreate(&f->end, CU_EVENT_FLAG_DEFAULT)) != 0))
    s = cu_fail(a, HT_ERR_DEVICE, r, "cuEventCreate");
  if (!s) s = launch_between(im, (cuda_prog *)prog, l, im->stream, f->start, f->end, &f->flag);
  if (s) {
    inflight_free(im, f);
    return s;
  }
  *out = (ht_event *)f;
  return HT_OK;
}

static ht_status cuda_wait(ht_device *dev, ht_event *e, double *kernel_s) {
  cuda_impl *im = dev->impl;
  cuda_inflight *f = (cuda_inflight *)e;
  ht_status s = make_current(im);
  if (!s) s = elapsed(im, f->start, f->end, "kernel", kernel_s);
  inflight_free(im, f);
  return s;
}

static int cuda_poll(ht_device *dev, ht_event *e) {
  cuda_impl *im = dev->impl;
  if (make_current(im) != HT_OK) return 1; /* wait will say what is wrong */
  return im->api.EventQuery(((cuda_inflight *)e)->end) != CU_ERROR_NOT_READY;
}

static ht_status cuda_cancel(ht_device *dev, ht_event *e) {
  cuda_impl *im = dev->impl;
  cuda_inflight *f = (cuda_inflight *)e;
  if (!f->flag.dev || f->flag.raised) return HT_OK;
  ht_status s = make_current(im); /* cancel may come from another thread than the launch */
  cu_result r = s ? 0 : im->api.MemcpyHtoDAsync(f->flag.dev, &flag_up, sizeof flag_up, im->control);
  if (!s && r) s = cu_fail(&im->api, HT_ERR_RUNTIME, r, "cuMemcpyHtoDAsync (stop flag)");
  if (!s) f->flag.raised = 1;
  return s;
}

/* ---- buffers; a view is its root's device pointer plus the offset ---- */

static ht_status cuda_buffer_new(ht_device *dev, size_t bytes, ht_buffer **out) {
  cuda_impl *im = dev->impl;
  ht_status s = make_current(im);
  if (s) return s;
  cuda_buf *b = calloc(1, sizeof *b);
  if (!b) return ht_error(HT_ERR_NOMEM, "out of memory");
  cu_result r = im->api.MemAlloc(&b->ptr, bytes ? bytes : 1);
  if (r) {
    free(b);
    return ht_error(HT_ERR_DEVICE, "cuMemAlloc(%zu bytes) failed: %s", bytes, cu_name(&im->api, r));
  }
  ht_buf_ref_init(&b->ref);
  b->bytes = bytes;
  *out = (ht_buffer *)b;
  return HT_OK;
}

static ht_status cuda_buffer_view(ht_device *dev, ht_buffer *buf, size_t offset, size_t bytes, ht_buffer **out) {
  (void)dev;
  cuda_buf *b = (cuda_buf *)buf, *v = NULL;
  ht_status s = ht_buf_view_new(sizeof *v, b ? &b->ref : NULL, b ? b->bytes : 0, offset, bytes, (void **)&v);
  if (s) return s;
  v->ptr = b->ptr + offset;
  v->bytes = bytes;
  *out = (ht_buffer *)v;
  return HT_OK;
}

static ht_status cuda_transfer(ht_device *dev, ht_buffer *buf, size_t offset, void *host, size_t bytes, int write,
                               double *seconds) {
  cuda_impl *im = dev->impl;
  cuda_buf *b = (cuda_buf *)buf;
  if (!b) return ht_error(HT_ERR_INVALID, "no buffer");
  ht_status s = ht_range_check(b->bytes, offset, bytes);
  if (!s) s = make_current(im);
  if (s) return s;
  cu_api *a = &im->api;
  cu_devptr at = b->ptr + offset;
  cu_result r = a->EventRecord(im->ev_start, NULL);
  if (!r && bytes) r = write ? a->MemcpyHtoD(at, host, bytes) : a->MemcpyDtoH(host, at, bytes);
  if (r) return cu_fail(a, HT_ERR_RUNTIME, r, write ? "cuMemcpyHtoD" : "cuMemcpyDtoH");
  return timed_end(im, write ? "buffer write" : "buffer read", seconds);
}

static ht_status cuda_buffer_write(ht_device *dev, ht_buffer *b, const void *host, size_t bytes, double *seconds) {
  /* The write path never modifies host; the shared helper just takes one pointer type. */
  return cuda_transfer(dev, b, 0, (void *)(uintptr_t)host, bytes, 1, seconds);
}

static ht_status cuda_buffer_read(ht_device *dev, ht_buffer *b, void *host, size_t bytes, double *seconds) {
  return cuda_transfer(dev, b, 0, host, bytes, 0, seconds);
}

static ht_status cuda_buffer_write_at(ht_device *dev, ht_buffer *b, size_t offset, const void *host, size_t bytes,
                                      double *seconds) {
  return cuda_transfer(dev, b, offset, (void *)(uintptr_t)host, bytes, 1, seconds);
}

static ht_status cuda_buffer_read_at(ht_device *dev, ht_buffer *b, size_t offset, void *host, size_t bytes,
                                     double *seconds) {
  return cuda_transfer(dev, b, offset, host, bytes, 0, seconds);
}

static void cuda_buffer_free(ht_device *dev, ht_buffer *buf) {
  cuda_impl *im = dev->impl;
  cuda_buf *b = (cuda_buf *)buf;
  if (!b) return;
  cuda_buf *root = (cuda_buf *)ht_buf_ref_drop(&b->ref);
  if (b->ref.root) free(b); /* a view: its record only */
  if (root) {
    if (make_current(im) == HT_OK) im->api.MemFree(root->ptr);
    free(root);
  }
}

const ht_backend_ops ht_backend_cuda = {
    .name = "cuda",
    .probe = cuda_probe,
    .open = cuda_open,
    .close = cuda_close,
    .compile = cuda_compile,
    .program_free = cuda_program_free,
    .launch = cuda_launch,
    .buffer_new = cuda_buffer_new,
    .buffer_write = cuda_buffer_write,
    .buffer_read = cuda_buffer_read,
    .buffer_free = cuda_buffer_free,
    /* No HT_CAP_OFFSET: CUDA grids start at block 0. */
    .caps = HT_CAP_ASYNC | HT_CAP_CANCEL | HT_CAP_VIEWS,
    .launch_async = cuda_launch_async,
    .wait = cuda_wait,
    .poll = cuda_poll,
    .cancel = cuda_cancel,
    .buffer_view = cuda_buffer_view,
    .buffer_write_at = cuda_buffer_write_at,
    .buffer_read_at = cuda_buffer_read_at,
};
