/* Internal: the few CUDA driver and NVRTC entry points the cuda backend uses, as function-pointer
 * tables filled with dlsym. Declared here (not taken from cuda.h) so the backend builds and runs
 * identically with or without the CUDA toolkit; every type is ABI-compatible with the real one
 * (enums are int, handles are pointers, CUdeviceptr is 64-bit). */
#ifndef HETUNE_DEVICE_CUDA_API_H
#define HETUNE_DEVICE_CUDA_API_H

#include <stddef.h>

typedef int cu_result;                 /* CUresult, 0 = CUDA_SUCCESS */
typedef int cu_device;                 /* CUdevice */
typedef void *cu_handle;               /* CUcontext, CUmodule, CUfunction, CUevent, CUstream */
typedef unsigned long long cu_devptr;  /* CUdeviceptr */

enum {
  CU_ATTR_MAX_THREADS_PER_BLOCK = 1,
  CU_ATTR_MAX_BLOCK_DIM_X = 2,
  CU_ATTR_MAX_BLOCK_DIM_Y = 3,
  CU_ATTR_MAX_BLOCK_DIM_Z = 4,
  CU_ATTR_MAX_SHARED_MEMORY_PER_BLOCK = 8,
  CU_ATTR_WARP_SIZE = 10,
  CU_ATTR_CLOCK_RATE = 13,
  CU_ATTR_MULTIPROCESSOR_COUNT = 16,
  CU_ATTR_CC_MAJOR = 75,
  CU_ATTR_CC_MINOR = 76,
  CU_JIT_OPT_ERROR_LOG_BUFFER = 5,
  CU_JIT_OPT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
  CU_EVENT_FLAG_DEFAULT = 0,
  CU_STREAM_FLAG_DEFAULT = 0, /* synchronises with the NULL stream, as an in-order queue would */
  CU_STREAM_FLAG_NON_BLOCKING = 1, /* runs beside the NULL stream's work */
  CU_ERROR_NOT_READY = 600,
};

typedef struct cu_api {
  void *lib;
  cu_result (*Init)(unsigned flags);
  cu_result (*DriverGetVersion)(int *v);
  cu_result (*DeviceGetCount)(int *n);
  cu_result (*DeviceGet)(cu_device *d, int ordinal);
  cu_result (*DeviceGetName)(char *name, int len, cu_device d);
  cu_result (*DeviceTotalMem)(size_t *bytes, cu_device d);
  cu_result (*DeviceGetAttribute)(int *v, int attr, cu_device d);
  cu_result (*DevicePrimaryCtxRetain)(cu_handle *ctx, cu_device d);
  cu_result (*DevicePrimaryCtxRelease)(cu_device d);
  cu_result (*CtxSetCurrent)(cu_handle ctx);
  cu_result (*CtxSynchronize)(void);
  cu_result (*ModuleLoadDataEx)(cu_handle *mod, const void *image, unsigned n, int *opts, void **vals);
  cu_result (*ModuleUnload)(cu_handle mod);
  cu_result (*ModuleGetFunction)(cu_handle *fn, cu_handle mod, const char *name);
  cu_result (*LaunchKernel)(cu_handle f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                            unsigned bz, unsigned shared, cu_handle stream, void **params, void **extra);
  cu_result (*MemAlloc)(cu_devptr *p, size_t bytes);
  cu_result (*MemFree)(cu_devptr p);
  cu_result (*MemcpyHtoD)(cu_devptr dst, const void *src, size_t bytes);
  cu_result (*MemcpyDtoH)(void *dst, cu_devptr src, size_t bytes);
  cu_result (*MemcpyHtoDAsync)(cu_devptr dst, const void *src, size_t bytes, cu_handle stream);
  cu_result (*EventCreate)(cu_handle *ev, unsigned flags);
  cu_result (*EventRecord)(cu_handle ev, cu_handle stream);
  cu_result (*EventSynchronize)(cu_handle ev);
  cu_result (*EventElapsedTime)(float *ms, cu_handle start, cu_handle end);
  cu_result (*EventDestroy)(cu_handle ev);
  cu_result (*EventQuery)(cu_handle ev);
  cu_result (*StreamCreate)(cu_handle *stream, unsigned flags);
  cu_result (*StreamDestroy)(cu_handle stream);
  cu_result (*StreamSynchronize)(cu_handle stream);
  cu_result (*GetErrorName)(cu_result r, const char **name);
  cu_result (*DeviceGetPCIBusId)(char *id, int len, cu_device d); /* optional: NULL when absent */
} cu_api;

typedef int nvrtc_result; /* nvrtcResult, 0 = NVRTC_SUCCESS */

typedef struct nvrtc_api {
  void *lib;
  nvrtc_result (*Version)(int *major, int *minor);
  nvrtc_result (*GetNumSupportedArchs)(int *n);
  nvrtc_result (*GetSupportedArchs)(int *archs);
  nvrtc_result (*CreateProgram)(void **prog, const char *src, const char *name, int n_headers,
                                const char *const *headers, const char *const *include_names);
  nvrtc_result (*CompileProgram)(void *prog, int n_options, const char *const *options);
  nvrtc_result (*GetProgramLogSize)(void *prog, size_t *size);
  nvrtc_result (*GetProgramLog)(void *prog, char *log);
  nvrtc_result (*GetPTXSize)(void *prog, size_t *size);
  nvrtc_result (*GetPTX)(void *prog, char *ptx);
  nvrtc_result (*DestroyProgram)(void **prog);
  const char *(*GetErrorString)(nvrtc_result r);
} nvrtc_api;

#endif
