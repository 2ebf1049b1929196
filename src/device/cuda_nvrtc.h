/* Internal: the CUDA backend's NVRTC step, exposed so host-only tests can compile kernels to PTX
 * without a GPU. */
#ifndef HETUNE_DEVICE_CUDA_NVRTC_H
#define HETUNE_DEVICE_CUDA_NVRTC_H

#include "hetune/device.h"

/* Compiles src (CUDA C++) with the defines to PTX for arch ("compute_90"; NULL = the lowest
 * architecture this NVRTC supports, at least compute_75). *ptx and *log are malloc'ed (either
 * may be set on failure; caller frees). HT_ERR_UNSUPPORTED when NVRTC cannot be loaded,
 * HT_ERR_COMPILE with the log when the source does not compile. */
ht_status ht_cuda_compile_ptx(const ht_source *src, const ht_defines *defs, const char *arch, char **ptx,
                              char **log);

/* The PTX cache key of src: NVRTC version, arch, source, defines, flags and the contents of every
 * header the source includes (ht_include_hash), so a header edit compiles again. */
uint64_t ht_cuda_cache_key(const ht_source *src, const ht_defines *defs, const char *arch, const char *nvrtc_version);

/* NVRTC's version as "NVRTC 13.0"; HT_ERR_UNSUPPORTED when NVRTC cannot be loaded. */
ht_status ht_cuda_nvrtc_version(char *out, size_t len);

/* The "compute_XY" NVRTC should target for a device of compute capability cc (major*10+minor;
 * 0 = no device): cc itself when supported, else the newest supported below it (PTX is
 * forward-compatible), else the oldest supported. */
ht_status ht_cuda_arch(int cc, char *out, size_t len);

#endif
