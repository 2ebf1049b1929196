/* NVRTC, loaded with dlopen: CUDA C++ -> PTX. Needs no GPU and no driver, so host-only machines
 * can compile and check CUDA kernels. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/backend.h"
#include "device/cuda_api.h"
#include "device/cuda_nvrtc.h"

/* Loaded once per process and never unloaded: NVRTC holds no driver state, so this table is safe
 * across fork() (unlike a CUDA context). */
static nvrtc_api nvrtc;
static char nvrtc_err[256];
static pthread_once_t nvrtc_once = PTHREAD_ONCE_INIT;

static void *sym(void *lib, const char *name, int *missing) {
  void *p = dlsym(lib, name);
  if (!p) *missing = 1;
  return p;
}

static void nvrtc_load(void) {
  static const char *const names[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11",
                                      "/usr/local/cuda/lib64/libnvrtc.so"};
  void *lib = NULL;
  for (size_t i = 0; !lib && i < sizeof names / sizeof names[0]; i++) lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(nvrtc_err, sizeof nvrtc_err, "libnvrtc.so not found (no CUDA toolkit)");
    return;
  }
  int missing = 0;
  nvrtc_api a = {.lib = lib};
  *(void **)&a.Version = sym(lib, "nvrtcVersion", &missing);
  *(void **)&a.GetNumSupportedArchs = sym(lib, "nvrtcGetNumSupportedArchs", &missing);
  *(void **)&a.GetSupportedArchs = sym(lib, "nvrtcGetSupportedArchs", &missing);
  *(void **)&a.CreateProgram = sym(lib, "nvrtcCreateProgram", &missing);
  *(void **)&a.CompileProgram = sym(lib, "nvrtcCompileProgram", &missing);
  *(void **)&a.GetProgramLogSize = sym(lib, "nvrtcGetProgramLogSize", &missing);
  *(void **)&a.GetProgramLog = sym(lib, "nvrtcGetProgramLog", &missing);
  *(void **)&a.GetPTXSize = sym(lib, "nvrtcGetPTXSize", &missing);
  *(void **)&a.GetPTX = sym(lib, "nvrtcGetPTX", &missing);
  *(void **)&a.DestroyProgram = sym(lib, "nvrtcDestroyProgram", &missing);
  *(void **)&a.GetErrorString = sym(lib, "nvrtcGetErrorString", &missing);
  if (missing) {
    snprintf(nvrtc_err, sizeof nvrtc_err, "libnvrtc.so is too old (missing entry points)");
    return;
  }
  nvrtc = a;
}

static ht_status nvrtc_get(const nvrtc_api **out) {
  pthread_once(&nvrtc_once, nvrtc_load);
  if (!nvrtc.lib) return ht_error(HT_ERR_UNSUPPORTED, "%s", nvrtc_err);
  *out = &nvrtc;
  return HT_OK;
}

ht_status ht_cuda_nvrtc_version(char *out, size_t len) {
  const nvrtc_api *nv;
  ht_status s = nvrtc_get(&nv);
  if (s) return s;
  int major = 0, minor = 0;
  nv->Version(&major, &minor);
  snprintf(out, len, "NVRTC %d.%d", major, minor);
  return HT_OK;
}

ht_status ht_cuda_arch(int cc, char *out, size_t len) {
  const nvrtc_api *nv;
  ht_status s = nvrtc_get(&nv);
  if (s) return s;
  int n = 0, pick = 0;
  if (nv->GetNumSupportedArchs(&n) != 0 || n <= 0 || n > 256) {
    snprintf(out, len, "compute_%d", cc ? cc : 75);
    return HT_OK;
  }
  int archs[256];
  nv->GetSupportedArchs(archs);
  int lowest = archs[0];
  for (int i = 0; i < n; i++) {
    if (archs[i] < lowest) lowest = archs[i];
    if (cc && archs[i] <= cc && archs[i] > pick) pick = archs[i];
  }
  /* No device: the oldest target NVRTC has, at least 7.5 (what current drivers still run). */
  if (!pick) pick = cc ? lowest : (lowest > 75 ? lowest : 75);
  snprintf(out, len, "compute_%d", pick);
  return HT_OK;
}

static void push_split(const char **opts, char **owned, int *n, int max, const char *s) {
  while (s && *s && *n < max) {
    s += strspn(s, " \t\n");
    size_t len = strcspn(s, " \t\n");
    if (len) {
      owned[*n] = ht_strfmt("%.*s", (int)len, s);
      opts[*n] = owned[*n];
      (*n)++;
    }
    s += len;
  }
}

/* Options: arch, defines, include folder, user flags, -default-device. */
static int build_options(const ht_source *src, const ht_defines *defs, const char *arch, const char **opts,
                         char **owned, int max) {
  int n = 0;
  owned[n] = ht_strfmt("--gpu-architecture=%s", arch);
  opts[n] = owned[n];
  n++;
  for (int i = 0; defs && i < defs->n && n < max - 3; i++, n++) {
    owned[n] = ht_strfmt("-D%s=%s", defs->names[i], defs->values[i]);
    opts[n] = owned[n];
  }
  char *dir = ht_source_dir(src);
  if (dir) {
    owned[n] = ht_strfmt("-I%s", dir);
    opts[n] = owned[n];
    n++;
    free(dir);
  }
  push_split(opts, owned, &n, max - 1, src->flags);
  owned[n] = NULL;
  opts[n++] = "-default-device";
  return n;
}

static char *program_log(const nvrtc_api *nv, void *prog) {
  size_t len = 0;
  if (nv->GetProgramLogSize(prog, &len) != 0 || len <= 1) return NULL;
  char *log = calloc(1, len + 1);
  if (log) nv->GetProgramLog(prog, log);
  return log;
}

static char *program_ptx(const nvrtc_api *nv, void *prog) {
  size_t len = 0;
  if (nv->GetPTXSize(prog, &len) != 0 || len == 0) return NULL;
  char *ptx = calloc(1, len + 1);
  if (ptx && nv->GetPTX(prog, ptx) != 0) {
    free(ptx);
    return NULL;
  }
  return ptx;
}

/* NVRTC reports no dependency list: the #include directives are scanned against the source's
 * folder and the -I / --include-path folders of the flags, as NVRTC searches them. */
uint64_t ht_cuda_cache_key(const ht_source *src, const ht_defines *defs, const char *arch, const char *nvrtc_version) {
  uint64_t h = ht_hash_str("cuda-backend-v2", 0);
  h = ht_hash_str(nvrtc_version, h);
  h = ht_hash_str(arch, h);
  h = ht_hash_str(src->text, h);
  h = ht_defines_hash(defs, h);
  h = ht_hash_str(src->flags, h);
  char *sdir = ht_source_dir(src);
  h = ht_hash_str(sdir, h);
  free(sdir);
  return ht_include_hash(src->text, src->path, src->flags, h);
}

ht_status ht_cuda_compile_ptx(const ht_source *src, const ht_defines *defs, const char *arch, char **ptx,
                              char **log) {
  *ptx = NULL;
  *log = NULL;
  if (!src || !src->text) return ht_error(HT_ERR_INVALID, "compile: no source text");
  const nvrtc_api *nv;
  char def_arch[32];
  ht_status s = ht_flags_check(src->flags, src->path);
  if (!s) s = nvrtc_get(&nv);
  if (!s && !arch) s = ht_cuda_arch(0, def_arch, sizeof def_arch), arch = def_arch;
  if (s) return s;
  enum { MAXOPT = 512 };
  const char *opts[MAXOPT];
  char *owned[MAXOPT];
  int n = build_options(src, defs, arch, opts, owned, MAXOPT);
  const char *name = src->path ? src->path : "kernel.cu";
  void *prog = NULL;
  nvrtc_result r = nv->CreateProgram(&prog, src->text, name, 0, NULL, NULL);
  if (r != 0) s = ht_error(HT_ERR_COMPILE, "nvrtcCreateProgram failed: %s", nv->GetErrorString(r));
  if (!s) {
    r = nv->CompileProgram(prog, n, opts);
    *log = program_log(nv, prog);
    if (r != 0) {
      char what[96];
      snprintf(what, sizeof what, "compile failed (%s)", nv->GetErrorString(r));
      s = ht_compile_error(name, what, *log);
    }
  }
  if (!s && !(*ptx = program_ptx(nv, prog))) s = ht_error(HT_ERR_COMPILE, "%s: NVRTC produced no PTX", name);
  if (prog) nv->DestroyProgram(&prog);
  for (int i = 0; i < n; i++) free(owned[i]);
  return s;
}
