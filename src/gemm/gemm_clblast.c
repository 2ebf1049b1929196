/* The OpenCL vendor baseline: CLBlast, the tuned OpenCL BLAS (its kernels are tuned with CLTune), called from a C
 * kernel on the same OpenCL device as the generated kernel. CLBlast is loaded with dlopen, so a
 * machine without it still builds everything and gets a clear message in the measurement. */
#include <dlfcn.h>
#include <stdio.h>

#include "gemm/gemm_internal.h"

#define CLBLAST_LIB "libclblast.so.1"
#define CLBLAST_MISSING CLBLAST_LIB " not found (Debian: apt-get install libclblast1)"

/* The generated source after its defines (REAL, TRANS_A, TRANS_B, GEMM_SYMBOL; the config's TUNE
 * and CLBlast's Xgemm parameters come as -D defines). The matrices live in device buffers kept
 * between calls (uploaded again only when the host arrays or sizes change), so the timed calls
 * measure CLBlast's enqueue and kernels up to clFinish, as a user calling it on resident data
 * would see them. The device is HETUNE_GEMM_DEVICE ("opencl:P:D", set by hetune gemm; default
 * platform 0, device 0), the numbering of `hetune devices`.
 * TUNE 0 is CLBlast as installed (its database's parameters, or its defaults for a device it does
 * not know). TUNE 1 overrides the parameters of its main GEMM kernel, Xgemm, with the config's
 * (CLBlastOverrideParameters, as CLBlast's own tuner would store them) and makes CLBlast use that
 * kernel at every size (XGEMM_MIN_INDIRECT_SIZE 0; by default small sizes take XgemmDirect):
 * CLBlast tuned for this device by hetune. */
static const char clblast_body[] =
    "#define CL_TARGET_OPENCL_VERSION 120\n"
    "#include <CL/cl.h>\n"
    "#include <dlfcn.h>\n"
    "#include <math.h>\n"
    "#include <stdio.h>\n"
    "#include <stdlib.h>\n\n"
    "enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 }; /* clblast_c.h's CLBlastLayout, CLBlastTranspose */\n"
    "typedef int (*gemm_fn)(int, int, int, size_t, size_t, size_t, REAL, cl_mem, size_t, size_t, cl_mem, size_t,\n"
    "                       size_t, REAL, cl_mem, size_t, size_t, cl_command_queue *, cl_event *);\n"
    "typedef int (*override_fn)(cl_device_id, const char *, int, size_t, const char **, const size_t *);\n\n"
    "static struct {\n"
    "  gemm_fn gemm;\n  override_fn override;\n  cl_context ctx;\n  cl_command_queue queue;\n  cl_mem dA, dB, dC;\n"
    "  const void *hA, *hB, *hC;\n  int m, n, k;\n"
    "} S;\n\n"
    "static cl_device_id pick_device(const char **err) {\n"
    "  int pi = 0, di = 0;\n"
    "  const char *id = getenv(\"HETUNE_GEMM_DEVICE\");\n"
    "  if (id && sscanf(id, \"opencl:%d:%d\", &pi, &di) < 1) pi = di = 0;\n"
    "  cl_platform_id ps[16];\n  cl_device_id ds[64];\n  cl_uint np = 0, nd = 0;\n"
    "  if (clGetPlatformIDs(16, ps, &np) != CL_SUCCESS || pi < 0 || (cl_uint)pi >= np) return *err = \"no such OpenCL platform\", NULL;\n"
    "  if (clGetDeviceIDs(ps[pi], CL_DEVICE_TYPE_ALL, 64, ds, &nd) != CL_SUCCESS || di < 0 || (cl_uint)di >= nd)\n"
    "    return *err = \"no such OpenCL device\", NULL;\n"
    "  return ds[di];\n"
    "}\n\n"
    "/* TUNE 1: this config's Xgemm parameters (kernel 0: GEMMK 0, KREG 1), used at every size. */\n"
    "static const char *tune(cl_device_id dev) {\n"
    "#if TUNE\n"
    "  static const char *names[] = {\"GEMMK\", \"KREG\", \"KWG\", \"KWI\", \"MDIMA\", \"MDIMC\", \"MWG\", \"NDIMB\",\n"
    "                                \"NDIMC\", \"NWG\", \"SA\", \"SB\", \"STRM\", \"STRN\", \"VWM\", \"VWN\"};\n"
    "  static const size_t values[] = {0, 1, KWG, KWI, MDIMA, MDIMC, MWG, NDIMB, NDIMC, NWG, SA, SB, STRM, STRN, VWM, VWN};\n"
    "  static const char *routine[] = {\"XGEMM_MIN_INDIRECT_SIZE\"};\n"
    "  static const size_t always[] = {0};\n"
    "  const int precision = sizeof(REAL) == 8 ? 64 : 32; /* CLBlastPrecisionDouble, Single */\n"
    "  if (S.override(dev, \"Xgemm\", precision, 16, names, values) != 0 ||\n"
    "      S.override(dev, \"GemmRoutine\", precision, 1, routine, always) != 0)\n"
    "    return \"CLBlastOverrideParameters refused the parameters\";\n"
    "#else\n"
    "  (void)dev;\n"
    "#endif\n"
    "  return NULL;\n"
    "}\n\n"
    "static const char *load(void) {\n"
    "  if (S.queue) return NULL;\n"
    "  void *lib = dlopen(\"" CLBLAST_LIB "\", RTLD_NOW);\n"
    "  if (!lib) lib = dlopen(\"libclblast.so\", RTLD_NOW);\n"
    "  if (!lib) return \"" CLBLAST_MISSING "\";\n"
    "  *(void **)&S.gemm = dlsym(lib, GEMM_SYMBOL);\n"
    "  *(void **)&S.override = dlsym(lib, \"CLBlastOverrideParameters\");\n"
    "  if (!S.gemm || !S.override) return \"missing entry points (\" GEMM_SYMBOL \", CLBlastOverrideParameters) in libclblast\";\n"
    "  setenv(\"POCL_AFFINITY\", \"1\", 0); /* as hetune's OpenCL backend: PoCL's threads bound to cores */\n"
    "  const char *err = NULL;\n"
    "  cl_device_id dev = pick_device(&err);\n"
    "  if (!dev || (err = tune(dev))) return err;\n"
    "  cl_int e;\n"
    "  S.ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &e);\n"
    "  if (!S.ctx) return \"clCreateContext failed\";\n"
    "  S.queue = clCreateCommandQueue(S.ctx, dev, 0, &e);\n"
    "  return S.queue ? NULL : \"clCreateCommandQueue failed\";\n"
    "}\n\n"
    "static void release(void) {\n"
    "  if (S.dA) clReleaseMemObject(S.dA);\n  if (S.dB) clReleaseMemObject(S.dB);\n"
    "  if (S.dC) clReleaseMemObject(S.dC);\n"
    "  S.dA = S.dB = S.dC = NULL;\n"
    "}\n\n"
    "/* The runner unloads this object after each config: free the buffers, the queue and the context. */\n"
    "__attribute__((destructor)) static void unload(void) {\n"
    "  release();\n"
    "  if (S.queue) clReleaseCommandQueue(S.queue);\n  if (S.ctx) clReleaseContext(S.ctx);\n"
    "  S.queue = NULL, S.ctx = NULL;\n"
    "}\n\n"
    "static cl_mem buffer(size_t bytes, const void *host) {\n"
    "  cl_int e;\n"
    "  cl_mem m = clCreateBuffer(S.ctx, CL_MEM_READ_WRITE, bytes, NULL, &e);\n"
    "  if (m && clEnqueueWriteBuffer(S.queue, m, CL_TRUE, 0, bytes, host, 0, NULL, NULL) != CL_SUCCESS) {\n"
    "    clReleaseMemObject(m);\n    m = NULL;\n  }\n"
    "  return m;\n"
    "}\n\n"
    "static const char *upload(REAL *C, const REAL *A, const REAL *B, int m, int n, int k) {\n"
    "  release();\n"
    "  S.dA = buffer((size_t)m * k * sizeof(REAL), A);\n"
    "  S.dB = buffer((size_t)k * n * sizeof(REAL), B);\n"
    "  S.dC = buffer((size_t)m * n * sizeof(REAL), C);\n"
    "  if (!S.dA || !S.dB || !S.dC) return \"device buffers: allocation or upload failed\";\n"
    "  S.hA = A, S.hB = B, S.hC = C, S.m = m, S.n = n, S.k = k;\n"
    "  return NULL;\n"
    "}\n\n"
    "static void poison(REAL *C, size_t n, const char *why) {\n"
    "  fprintf(stderr, \"gemm_clblast: %s\\n\", why);\n"
    "  for (size_t i = 0; i < n; i++) C[i] = (REAL)NAN;\n"
    "}\n\n"
    "void gemm_clblast(REAL *C, const REAL *A, const REAL *B, int m, int n, int k, REAL alpha, REAL beta)\n"
    "{\n"
    "  const char *err = load();\n"
    "  const int fresh = !S.dA || S.hA != A || S.hB != B || S.hC != C || S.m != m || S.n != n || S.k != k;\n"
    "  if (!err && fresh) err = upload(C, A, B, m, n, k);\n"
    "  if (!err && S.gemm(ROW_MAJOR, TRANS_A ? TRANS : NO_TRANS, TRANS_B ? TRANS : NO_TRANS, m, n, k, alpha, S.dA, 0,\n"
    "                     TRANS_A ? m : k, S.dB, 0, TRANS_B ? k : n, beta, S.dC, 0, n, &S.queue, NULL) != 0)\n"
    "    err = \"CLBlast gemm failed\";\n"
    "  if (!err && clFinish(S.queue) != CL_SUCCESS) err = \"clFinish failed\";\n"
    "  if (!err && fresh &&\n"
    "      clEnqueueReadBuffer(S.queue, S.dC, CL_TRUE, 0, (size_t)m * n * sizeof(REAL), C, 0, NULL, NULL) != CL_SUCCESS)\n"
    "    err = \"download failed\";\n"
    "  if (err) poison(C, (size_t)m * n, err);\n"
    "}\n";

/* Xgemm's parameters as CLBlast's tuner (src/tuning/kernels/xgemm) defines them, kernel 0 without
 * its KREG/GEMMK variant and without strided access. TUNE 0 (CLBlast as installed) takes the first
 * value of each, so it is one config. The work-group and local-memory bounds are OpenCL's usual
 * ones: the vendor spec runs on the host device, which does not know the OpenCL device's limits;
 * a config the device refuses fails its measurement with CLBlast's message. */
static const gemm_param clblast_params[] = {
    {"TUNE", 2, {0, 1}},         {"MWG", 4, {16, 32, 64, 128}}, {"NWG", 4, {16, 32, 64, 128}}, {"KWG", 2, {16, 32}},
    {"MDIMC", 3, {8, 16, 32}},   {"NDIMC", 3, {8, 16, 32}},     {"MDIMA", 3, {8, 16, 32}},     {"NDIMB", 3, {8, 16, 32}},
    {"KWI", 1, {2}},             {"VWM", 4, {1, 2, 4, 8}},      {"VWN", 4, {1, 2, 4, 8}},      {"STRM", 1, {0}},
    {"STRN", 1, {0}},            {"SA", 2, {0, 1}},             {"SB", 2, {0, 1}}};

static void clblast_space(gemm_space_def *d, const ht_gemm_problem *p) {
  static const char *const fixed[] = {
      ("TUNE == 1 || (MWG == 16 && NWG == 16 && KWG == 16 && MDIMC == 8 && NDIMC == 8 && MDIMA == 8 && NDIMB == 8 && "
       "VWM == 1 && VWN == 1 && SA == 0 && SB == 0)"),
      "KWG % KWI == 0",
      "MWG % (MDIMC * VWM) == 0",
      "NWG % (NDIMC * VWN) == 0",
      "MWG % (MDIMA * VWM) == 0",
      "NWG % (NDIMB * VWN) == 0",
      "KWG % ((MDIMC * NDIMC) / MDIMA) == 0",
      "KWG % ((MDIMC * NDIMC) / NDIMB) == 0",
      "MDIMC * NDIMC <= 256"};
  gemm_space_init(d, clblast_params, (int)(sizeof clblast_params / sizeof clblast_params[0]));
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) gemm_space_add(d, "%s", fixed[i]);
  gemm_space_add(d, "(SA * KWG * MWG + SB * KWG * NWG) * %d <= 32768", (int)ht_dtype_size(p->type));
}

/* The OpenCL API is linked (hetune needs the ICD loader anyway); CLBlast is dlopen'ed. */
ht_status gemm_def_vendor_opencl(const ht_gemm_problem *p, gemm_kernel_def *d) {
  static const gemm_vendor_lib clblast = {"gemm_clblast",  "CLBlast",     "CLBlastSgemm", "CLBlastDgemm",
                                          "-Wl,--no-as-needed -lOpenCL", clblast_body, clblast_space};
  return gemm_gpu_vendor(p, &clblast, d);
}

/* Looked for by the names its baseline's kernel loads, and let go: nothing of OpenCL starts here. */
int ht_gemm_vendor_available(ht_gemm_target target, char *why, size_t cap) {
  if (cap) why[0] = '\0';
  if (target != HT_GEMM_OPENCL) return 1;
  void *lib = dlopen(CLBLAST_LIB, RTLD_LAZY | RTLD_LOCAL);
  if (!lib) lib = dlopen("libclblast.so", RTLD_LAZY | RTLD_LOCAL);
  if (lib) return dlclose(lib), 1;
  if (cap) snprintf(why, cap, "%s", CLBLAST_MISSING);
  return 0;
}
