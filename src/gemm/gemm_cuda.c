/* The CUDA GEMM generator: the same schedule as the OpenCL one (gemm_opencl.c) in CUDA C for NVRTC
 * (shared-memory panels, aligned vector loads through a struct, register tiles, unroll, strided
 * ownership), the naive kernel, and the cuBLAS baseline as a C spec that loads cuBLAS at run time.
 * See docs/gemm_gpu.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm/gemm_internal.h"

static const char cuda_template[] =
    "/* Schedule parameters (compile-time defines, one value per config), as in the OpenCL kernel:\n"
    " *   MWG, NWG  rows / columns of C per block             WPTM, WPTN  rows / columns per thread\n"
    " *   KWG       k step (panel depth)                      LOCAL       1: A/B panels in shared memory\n"
    " *   VW        vector width of loads (float2/float4, double2 through an aligned struct)\n"
    " *   STAGE     1: A/B fragments staged in registers before the rank-1 update\n"
    " *   UNROLL    unroll of the inner k loop                PAD         shared arrays padded (bank conflicts)\n"
    " *   VT        virtual threads (the thesis's vthread): a thread owns VT x VT sub-tiles, VT apart */\n"
    "#define VTM VT\n"
    "#define VTN VT\n"
    "#define TN (NWG / WPTN)\n"
    "#define TM (MWG / WPTM)\n"
    "#define NT (TN * TM)\n"
    "#define NVEC (WPTN / VW)\n"
    "#define CHM (WPTM / VTM)\n"
    "#define CHV (NVEC / VTN)\n"
    "#define PADA PAD\n"
    "#define PADB (PAD * VW)\n"
    "\n"
    "/* VW elements moved as one access: the struct's alignment makes nvcc emit ld/st.v2/.v4. */\n"
    "struct __align__(VW * sizeof(REAL)) vecv {\n"
    "  REAL v[VW];\n"
    "};\n"
    "__device__ __forceinline__ void ldv(REAL *d, const REAL *s)\n"
    "{\n"
    "  const vecv t = *reinterpret_cast<const vecv *>(s);\n"
    "#pragma unroll\n"
    "  for (int e = 0; e < VW; e++) d[e] = t.v[e];\n"
    "}\n"
    "__device__ __forceinline__ void stv(REAL *d, const REAL *s)\n"
    "{\n"
    "  vecv t;\n"
    "#pragma unroll\n"
    "  for (int e = 0; e < VW; e++) t.v[e] = s[e];\n"
    "  *reinterpret_cast<vecv *>(d) = t;\n"
    "}\n"
    "\n"
    "#if TRANS_A\n"
    "#define AIDX(i, p) ((IDX)(p) * m + (i))\n"
    "#else\n"
    "#define AIDX(i, p) ((IDX)(i) * k + (p))\n"
    "#endif\n"
    "#if TRANS_B\n"
    "#define BIDX(p, j) ((IDX)(j) * k + (p))\n"
    "#else\n"
    "#define BIDX(p, j) ((IDX)(p) * n + (j))\n"
    "#endif\n"
    "\n"
    "#define ROWM(tm, i) (((i) / CHM) * (MWG / VTM) + (tm) * CHM + (i) % CHM)\n"
    "#define COLN(tn, jv) (((jv) / CHV) * (NWG / VTN) + ((tn) * CHV + (jv) % CHV) * VW)\n"
    "\n"
    "/* Global-memory path: one rank-1 update at k index p; BLOAD(dst, p, jv) fills VW elements. */\n"
    "#define BVECTOR(dst, p, jv) ldv(dst, &B[BIDX(p, bcol[jv])])\n"
    "#define BGATHER(dst, p, jv)                                                                      \\\n"
    "  _Pragma(\"unroll\") for (int e = 0; e < VW; e++)(dst)[e] = B[BIDX(p, min(bcol[jv] + e, n - 1))]\n"
    "#if STAGE\n"
    "#define RANK1(p, BLOAD)                                                                          \\\n"
    "  {                                                                                              \\\n"
    "    REAL a_[WPTM], b_[WPTN];                                                                     \\\n"
    "    _Pragma(\"unroll\") for (int i = 0; i < WPTM; i++) a_[i] = A[AIDX(arow[i], p)];                \\\n"
    "    _Pragma(\"unroll\") for (int jv = 0; jv < NVEC; jv++) { BLOAD(b_ + jv * VW, p, jv); }          \\\n"
    "    _Pragma(\"unroll\") for (int i = 0; i < WPTM; i++)                                             \\\n"
    "      _Pragma(\"unroll\") for (int j = 0; j < WPTN; j++) acc[i][j] = fma(a_[i], b_[j], acc[i][j]); \\\n"
    "  }\n"
    "#else\n"
    "#define RANK1(p, BLOAD)                                                                          \\\n"
    "  {                                                                                              \\\n"
    "    _Pragma(\"unroll\") for (int jv = 0; jv < NVEC; jv++) {                                        \\\n"
    "      REAL b_[VW];                                                                               \\\n"
    "      BLOAD(b_, p, jv);                                                                          \\\n"
    "      _Pragma(\"unroll\") for (int i = 0; i < WPTM; i++)                                           \\\n"
    "        _Pragma(\"unroll\") for (int e = 0; e < VW; e++)                                           \\\n"
    "          acc[i][jv * VW + e] = fma(A[AIDX(arow[i], p)], b_[e], acc[i][jv * VW + e]);            \\\n"
    "    }                                                                                            \\\n"
    "  }\n"
    "#endif\n"
    "#define KLOOP(BLOAD)                                                                             \\\n"
    "  for (int kb = 0; kb < kfull; kb += KWG) {                                                      \\\n"
    "    _Pragma(\"unroll 1\") for (int ku = 0; ku < KWG; ku += UNROLL) {                               \\\n"
    "      _Pragma(\"unroll\") for (int u = 0; u < UNROLL; u++) RANK1(kb + ku + u, BLOAD)               \\\n"
    "    }                                                                                            \\\n"
    "  }                                                                                              \\\n"
    "  for (int p = kfull; p < k; p++) RANK1(p, BLOAD)\n"
    "\n"
    "extern \"C\" __global__ void __launch_bounds__(NT)\n"
    "gemm(REAL *__restrict__ C, const REAL *__restrict__ A, const REAL *__restrict__ B, const int m, const int n,\n"
    "     const int k, const REAL alpha, const REAL beta)\n"
    "{\n"
    "  const int tn = threadIdx.x;\n"
    "  const int tm = threadIdx.y;\n"
    "  const int col0 = blockIdx.x * NWG;\n"
    "  const int row0 = blockIdx.y * MWG;\n"
    "\n"
    "  REAL acc[WPTM][WPTN];\n"
    "#pragma unroll\n"
    "  for (int i = 0; i < WPTM; i++)\n"
    "#pragma unroll\n"
    "    for (int j = 0; j < WPTN; j++) acc[i][j] = 0;\n"
    "\n"
    "#if LOCAL\n"
    "  __shared__ __align__(16) REAL Als[KWG][MWG + PADA]; /* op(A) panel, k-major */\n"
    "  __shared__ __align__(16) REAL Bls[KWG][NWG + PADB]; /* op(B) panel */\n"
    "  const int tid = tm * TN + tn;\n"
    "  /* Vector loads need aligned addresses: rows of the stored matrix a multiple of VW long. */\n"
    "  const bool avec = (TRANS_A ? m : k) % VW == 0, bvec = (TRANS_B ? k : n) % VW == 0;\n"
    "  for (int kb = 0; kb < k; kb += KWG) {\n"
    "    const bool fullm = row0 + MWG <= m, fulln = col0 + NWG <= n, fullk = kb + KWG <= k;\n"
    "#if TRANS_A\n"
    "    for (int x = tid; x < KWG * (MWG / VW); x += NT) {\n"
    "      const int kk = x / (MWG / VW), r = (x % (MWG / VW)) * VW;\n"
    "      const int gk = kb + kk, gr = row0 + r;\n"
    "      REAL t[VW];\n"
    "      if (avec && ((fullm && fullk) || (gk < k && gr + VW <= m))) {\n"
    "        ldv(t, &A[AIDX(gr, gk)]);\n"
    "      } else {\n"
    "#pragma unroll\n"
    "        for (int e = 0; e < VW; e++) t[e] = (gk < k && gr + e < m) ? A[AIDX(gr + e, gk)] : (REAL)0;\n"
    "      }\n"
    "#pragma unroll\n"
    "      for (int e = 0; e < VW; e++) Als[kk][r + e] = t[e];\n"
    "    }\n"
    "#else\n"
    "    for (int x = tid; x < MWG * (KWG / VW); x += NT) {\n"
    "      const int r = x / (KWG / VW), kk = (x % (KWG / VW)) * VW;\n"
    "      const int gk = kb + kk, gr = row0 + r;\n"
    "      REAL t[VW];\n"
    "      if (avec && ((fullm && fullk) || (gr < m && gk + VW <= k))) {\n"
    "        ldv(t, &A[AIDX(gr, gk)]);\n"
    "      } else {\n"
    "#pragma unroll\n"
    "        for (int e = 0; e < VW; e++) t[e] = (gr < m && gk + e < k) ? A[AIDX(gr, gk + e)] : (REAL)0;\n"
    "      }\n"
    "#pragma unroll\n"
    "      for (int e = 0; e < VW; e++) Als[kk + e][r] = t[e];\n"
    "    }\n"
    "#endif\n"
    "#if TRANS_B\n"
    "    for (int x = tid; x < NWG * (KWG / VW); x += NT) {\n"
    "      const int c = x / (KWG / VW), kk = (x % (KWG / VW)) * VW;\n"
    "      const int gk = kb + kk, gc = col0 + c;\n"
    "      REAL t[VW];\n"
    "      if (bvec && ((fulln && fullk) || (gc < n && gk + VW <= k))) {\n"
    "        ldv(t, &B[BIDX(gk, gc)]);\n"
    "      } else {\n"
    "#pragma unroll\n"
    "        for (int e = 0; e < VW; e++) t[e] = (gc < n && gk + e < k) ? B[BIDX(gk + e, gc)] : (REAL)0;\n"
    "      }\n"
    "#pragma unroll\n"
    "      for (int e = 0; e < VW; e++) Bls[kk + e][c] = t[e];\n"
    "    }\n"
    "#else\n"
    "    for (int x = tid; x < KWG * (NWG / VW); x += NT) {\n"
    "      const int kk = x / (NWG / VW), c = (x % (NWG / VW)) * VW;\n"
    "      const int gk = kb + kk, gc = col0 + c;\n"
    "      REAL t[VW];\n"
    "      if (bvec && ((fulln && fullk) || (gk < k && gc + VW <= n))) {\n"
    "        ldv(t, &B[BIDX(gk, gc)]);\n"
    "      } else {\n"
    "#pragma unroll\n"
    "        for (int e = 0; e < VW; e++) t[e] = (gk < k && gc + e < n) ? B[BIDX(gk, gc + e)] : (REAL)0;\n"
    "      }\n"
    "      stv(&Bls[kk][c], t);\n"
    "    }\n"
    "#endif\n"
    "    __syncthreads();\n"
    "#pragma unroll 1\n"
    "    for (int ku = 0; ku < KWG; ku += UNROLL) {\n"
    "#pragma unroll\n"
    "      for (int u = 0; u < UNROLL; u++) {\n"
    "        const int kk = ku + u;\n"
    "#if STAGE\n"
    "        REAL a[WPTM], b[WPTN];\n"
    "#pragma unroll\n"
    "        for (int i = 0; i < WPTM; i++) a[i] = Als[kk][ROWM(tm, i)];\n"
    "#pragma unroll\n"
    "        for (int jv = 0; jv < NVEC; jv++) ldv(b + jv * VW, &Bls[kk][COLN(tn, jv)]);\n"
    "#pragma unroll\n"
    "        for (int i = 0; i < WPTM; i++)\n"
    "#pragma unroll\n"
    "          for (int j = 0; j < WPTN; j++) acc[i][j] = fma(a[i], b[j], acc[i][j]);\n"
    "#else\n"
    "#pragma unroll\n"
    "        for (int jv = 0; jv < NVEC; jv++) {\n"
    "          REAL b[VW];\n"
    "          ldv(b, &Bls[kk][COLN(tn, jv)]);\n"
    "#pragma unroll\n"
    "          for (int i = 0; i < WPTM; i++)\n"
    "#pragma unroll\n"
    "            for (int e = 0; e < VW; e++) acc[i][jv * VW + e] = fma(Als[kk][ROWM(tm, i)], b[e], acc[i][jv * VW + e]);\n"
    "        }\n"
    "#endif\n"
    "      }\n"
    "    }\n"
    "    __syncthreads();\n"
    "  }\n"
    "#else\n"
    "  /* Straight from global memory (the L1/L2 caches do the reuse). Rows and columns past the edge\n"
    "   * are clamped so every load stays in bounds; their results are never stored. */\n"
    "  IDX arow[WPTM];\n"
    "  int bcol[NVEC];\n"
    "#pragma unroll\n"
    "  for (int i = 0; i < WPTM; i++) arow[i] = min(row0 + ROWM(tm, i), m - 1);\n"
    "  const int kfull = k - k % KWG;\n"
    "#if TRANS_B\n"
    "#pragma unroll\n"
    "  for (int jv = 0; jv < NVEC; jv++) bcol[jv] = col0 + COLN(tn, jv);\n"
    "  KLOOP(BGATHER)\n"
    "#else\n"
    "  if (n % VW == 0) {\n"
    "#pragma unroll\n"
    "    for (int jv = 0; jv < NVEC; jv++) bcol[jv] = min(col0 + COLN(tn, jv), n - VW);\n"
    "    KLOOP(BVECTOR)\n"
    "  } else {\n"
    "#pragma unroll\n"
    "    for (int jv = 0; jv < NVEC; jv++) bcol[jv] = col0 + COLN(tn, jv);\n"
    "    KLOOP(BGATHER)\n"
    "  }\n"
    "#endif\n"
    "#endif\n"
    "\n"
    "  /* C = alpha * acc + beta * C, guarded at the edges; beta == 0 never reads C. */\n"
    "  const bool cvec = n % VW == 0;\n"
    "#pragma unroll\n"
    "  for (int i = 0; i < WPTM; i++) {\n"
    "    const int r = row0 + ROWM(tm, i);\n"
    "    if (r >= m) continue;\n"
    "#pragma unroll\n"
    "    for (int jv = 0; jv < NVEC; jv++) {\n"
    "      const int c = col0 + COLN(tn, jv);\n"
    "      REAL *cp = C + (IDX)r * n + c;\n"
    "      REAL v[VW];\n"
    "      if (cvec && c + VW <= n) {\n"
    "#if HAS_BETA\n"
    "        ldv(v, cp);\n"
    "#pragma unroll\n"
    "        for (int e = 0; e < VW; e++) v[e] = alpha * acc[i][jv * VW + e] + beta * v[e];\n"
    "#else\n"
    "#pragma unroll\n"
    "        for (int e = 0; e < VW; e++) v[e] = alpha * acc[i][jv * VW + e];\n"
    "#endif\n"
    "        stv(cp, v);\n"
    "      } else {\n"
    "#pragma unroll\n"
    "        for (int e = 0; e < VW; e++)\n"
    "          if (c + e < n) {\n"
    "#if HAS_BETA\n"
    "            cp[e] = alpha * acc[i][jv * VW + e] + beta * cp[e];\n"
    "#else\n"
    "            cp[e] = alpha * acc[i][jv * VW + e];\n"
    "#endif\n"
    "          }\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n";

/* The space: the OpenCL one with CUDA's limits (vector accesses up to 16 bytes, the register file:
 * 255 per thread and 64 K per block, estimated as accumulators + staging + 40 for addresses).
 * Without shared memory (LOCAL 0) every thread also keeps WPTM row addresses and its B columns,
 * and ptxas ran out of registers above 64 accumulator words: 4 of 9 sampled FP32 8 x 16 tiles and
 * an FP64 4 x 16 one spilled 16-296 bytes at 254-255 registers (bench_cuda_registers, nvcc 13.0,
 * sm_90), so those tiles need LOCAL 1. */
static void cuda_space(gemm_space_def *d, const ht_gemm_problem *p) {
  const int es = (int)ht_dtype_size(p->type), words = es / 4;
  gemm_gpu_tile_space(d, 1);
  gemm_space_add(d, "VW * %d <= 16", es);
  gemm_space_add(d, "LOCAL == 0 || KWG * (MWG + PAD + NWG + PAD * VW) * %d <= device.local_mem_size", es);
  gemm_space_add(d, "(WPTM * WPTN + STAGE * (WPTM + WPTN)) * %d <= 128", words);
  gemm_space_add(d, "LOCAL == 1 || WPTM * WPTN * %d <= 64", words);
  gemm_space_add(d, "(MWG/WPTM) * (NWG/WPTN) * ((WPTM * WPTN + STAGE * (WPTM + WPTN)) * %d + 40) <= 65536", words);
}

void gemm_cuda_h100_limits(ht_device_info *info) {
  memset(info, 0, sizeof *info);
  snprintf(info->backend, sizeof info->backend, "cuda");
  info->max_work_group_size = 1024;
  info->max_work_item_sizes[0] = info->max_work_item_sizes[1] = 1024;
  info->max_work_item_sizes[2] = 64;
  info->local_mem_bytes = 48 * 1024;
  info->warp_size = 32;
  info->compute_units = 132;
}

ht_status gemm_cuda_compile_config(const ht_spec *spec, ht_space *space, const ht_config *c, const char *arch,
                                   char **ptx, ht_ptx_resources *res) {
  ht_value v[HT_MAX_PARAMS];
  ht_config_values(space, c, v);
  char store[HT_MAX_PARAMS][64];
  const char *defs[HT_MAX_PARAMS + 1];
  const int n = ht_space_param_count(space);
  for (int i = 0; i < n; i++) {
    char val[32];
    ht_value_format(v[i], val, sizeof val);
    snprintf(store[i], sizeof store[i], "%s=%s", ht_space_param_name(space, i), val);
    defs[i] = store[i];
  }
  defs[n] = NULL;
  char *text = NULL;
  int nres = 0;
  ht_status st = ht_ptx_compile(spec->kernel.source_text, "gemm_cuda.cu", defs, arch, &text, res, 1, &nres);
  if (!st && nres < 1) st = ht_error(HT_ERR_PARSE, "%s: ptxas reported no kernel", spec->name);
  if (!st && ptx) *ptx = text;
  else free(text);
  return st;
}

/* The register-blocking rule of hand-written SIMT SGEMMs on recent NVIDIA GPUs: 256 threads, each
 * accumulating an 8 x 8 tile of a 128 x 128 block (64 FMAs per 16 shared-memory loads), 16-deep
 * shared panels filled with 16-byte loads, fragments staged in registers. FP64 halves the rows per
 * thread (4 x 8 of a 64 x 128 block, 8-byte-pair loads) to stay under the space's register bound.
 * The model's choice is the valid config nearest to it (log2 distance per parameter, the
 * parameters in this order of importance): the rule itself on any GPU that allows 256 threads
 * and 24 KiB of shared memory per block, the next best on a smaller one. */
enum { C_MWG, C_WPTM, C_VT, C_NWG, C_WPTN, C_VW, C_KWG, C_UNROLL, C_LOCAL, C_PAD, C_STAGE };
static const int cuda_rank[] = {C_LOCAL, C_STAGE, C_WPTM, C_WPTN, C_MWG, C_NWG, C_VW, C_KWG, C_UNROLL, C_VT, C_PAD};

static void cuda_prefs(const ht_value *v, const void *ctx, int64_t *k) {
  const int *target = ctx;
  for (int i = 0; i < GEMM_GPU_N_PARAMS; i++) k[i] = -gemm_log2_distance(v[cuda_rank[i]].u.i, target[cuda_rank[i]]);
}

int gemm_model_config_cuda(const ht_gemm_problem *p, char *key, size_t cap) {
  const int f64 = p->type == HT_DTYPE_F64;
  const int target[GEMM_GPU_N_PARAMS] = {[C_MWG] = f64 ? 64 : 128, [C_WPTM] = f64 ? 4 : 8, [C_VT] = 1, [C_NWG] = 128,
                                         [C_WPTN] = 8, [C_VW] = f64 ? 2 : 4, [C_KWG] = 16, [C_UNROLL] = 4,
                                         [C_LOCAL] = 1, [C_PAD] = 0, [C_STAGE] = 1};
  ht_device_info h100;
  gemm_cuda_h100_limits(&h100);
  gemm_space_def d;
  cuda_space(&d, p);
  return gemm_pick_from(&d, p, p->gpu ? p->gpu : &h100, cuda_prefs, target, key, cap);
}

ht_status gemm_def_cuda(const ht_gemm_problem *p, gemm_kernel_def *d) {
  gemm_gpu_def(p, d, "gemm_cuda", HT_LANG_CUDA, "gemm_cuda.cu", "gemm");
  gemm_gpu_problem_header(&d->text, p, 0);
  ht_buf_append(&d->text, cuda_template);
  gemm_gpu_tile_launch(d);
  cuda_space(&d->space, p);
  return HT_OK;
}

/* ---- the naive CUDA kernel: one thread per element of C ---- */

static const char cuda_naive[] =
    "#if TRANS_A\n#define AIDX(i, p) ((IDX)(p) * m + (i))\n#else\n#define AIDX(i, p) ((IDX)(i) * k + (p))\n#endif\n"
    "#if TRANS_B\n#define BIDX(p, j) ((IDX)(j) * k + (p))\n#else\n#define BIDX(p, j) ((IDX)(p) * n + (j))\n#endif\n\n"
    "extern \"C\" __global__ void gemm_naive(REAL *C, const REAL *A, const REAL *B, const int m, const int n,\n"
    "                                      const int k, const REAL alpha, const REAL beta)\n"
    "{\n"
    "  const int j = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  const int i = blockIdx.y * blockDim.y + threadIdx.y;\n"
    "  if (i >= m || j >= n) return; /* the grid is rounded up to whole blocks */\n"
    "  REAL acc = 0;\n"
    "  for (int p = 0; p < k; p++) acc += A[AIDX(i, p)] * B[BIDX(p, j)];\n"
    "#if HAS_BETA\n"
    "  C[(IDX)i * n + j] = alpha * acc + beta * C[(IDX)i * n + j];\n"
    "#else\n"
    "  C[(IDX)i * n + j] = alpha * acc;\n"
    "#endif\n"
    "}\n";

ht_status gemm_def_naive_cuda(const ht_gemm_problem *p, gemm_kernel_def *d) {
  return gemm_gpu_naive(p, 0, cuda_naive, HT_GEOM_GRID, (const char *const[]){"ceil_div(N, TX)", "ceil_div(M, TY)"}, d);
}

/* ---- the cuBLAS baseline ----
 * NVRTC cannot call cuBLAS from a kernel, so the baseline is a C-language spec: a host function
 * that loads the CUDA runtime and cuBLAS with dlopen (hetune itself never links them) and runs
 * cublas[SD]gemm on device copies it keeps between calls. The runner verifies the output of the
 * first call, which uploads A, B, C and downloads C; later calls with the same buffers only run
 * the GEMM and synchronise, so the timed runs measure the GEMM without transfers, as the runner
 * does for GPU kernels (their transfers are recorded apart). Any failure (no driver, no GPU, no
 * cuBLAS) fills C with NaN, so the evaluation fails verification, with the reason on stderr. */
static const char cublas_body[] =
    "#include <dlfcn.h>\n"
    "#include <math.h>\n"
    "#include <stddef.h>\n"
    "#include <stdio.h>\n"
    "#include <stdlib.h>\n\n"
    "typedef int (*malloc_fn)(void **, size_t);\n"
    "typedef int (*free_fn)(void *);\n"
    "typedef int (*memcpy_fn)(void *, const void *, size_t, int); /* kind 1: host to device, 2: back */\n"
    "typedef int (*sync_fn)(void);\n"
    "typedef int (*create_fn)(void **);\n"
    "typedef int (*destroy_fn)(void *);\n"
    "typedef int (*gemm_fn)(void *, int, int, int, int, int, const REAL *, const REAL *, int, const REAL *, int,\n"
    "                       const REAL *, REAL *, int);\n\n"
    "static struct {\n"
    "  malloc_fn dmalloc;\n  free_fn dfree;\n  memcpy_fn copy;\n  sync_fn sync;\n  create_fn create;\n"
    "  destroy_fn destroy;\n  gemm_fn gemm;\n  void *handle;\n"
    "  REAL *dA, *dB, *dC;\n  const void *hA, *hB, *hC;\n  int m, n, k;\n"
    "} S;\n\n"
    "static void *open_first(const char *const *names) {\n"
    "  for (int i = 0; names[i]; i++) {\n"
    "    void *h = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL);\n"
    "    if (h) return h;\n"
    "  }\n"
    "  return NULL;\n"
    "}\n\n"
    "static const char *load(void) {\n"
    "  static const char *const rt[] = {\"libcudart.so\", \"libcudart.so.13\", \"libcudart.so.12\", \"libcudart.so.11.0\",\n"
    "                                   \"/usr/local/cuda/lib64/libcudart.so\", NULL};\n"
    "  static const char *const bl[] = {\"libcublas.so\", \"libcublas.so.13\", \"libcublas.so.12\", \"libcublas.so.11\",\n"
    "                                   \"/usr/local/cuda/lib64/libcublas.so\", NULL};\n"
    "  if (S.handle) return NULL;\n"
    "  void *r = open_first(rt), *b = open_first(bl);\n"
    "  if (!r) return \"libcudart.so not found\";\n"
    "  if (!b) return \"libcublas.so not found\";\n"
    "  *(void **)&S.dmalloc = dlsym(r, \"cudaMalloc\");\n"
    "  *(void **)&S.dfree = dlsym(r, \"cudaFree\");\n"
    "  *(void **)&S.copy = dlsym(r, \"cudaMemcpy\");\n"
    "  *(void **)&S.sync = dlsym(r, \"cudaDeviceSynchronize\");\n"
    "  *(void **)&S.create = dlsym(b, \"cublasCreate_v2\");\n"
    "  *(void **)&S.destroy = dlsym(b, \"cublasDestroy_v2\");\n"
    "  *(void **)&S.gemm = dlsym(b, GEMM_SYMBOL);\n"
    "  if (!S.dmalloc || !S.dfree || !S.copy || !S.sync || !S.create || !S.destroy || !S.gemm)\n"
    "    return \"missing entry points in libcudart / libcublas\";\n"
    "  /* The GPU hetune gemm measures on (HETUNE_GEMM_DEVICE \"cuda:N\"; default the first). */\n"
    "  int (*set_device)(int) = NULL, ordinal = 0;\n"
    "  *(void **)&set_device = dlsym(r, \"cudaSetDevice\");\n"
    "  const char *id = getenv(\"HETUNE_GEMM_DEVICE\");\n"
    "  if (id && sscanf(id, \"cuda:%d\", &ordinal) == 1 && (!set_device || set_device(ordinal) != 0))\n"
    "    return \"cudaSetDevice failed for HETUNE_GEMM_DEVICE\";\n"
    "  if (S.create(&S.handle) != 0) {\n"
    "    S.handle = NULL;\n"
    "    return \"cublasCreate failed (no GPU or no driver?)\";\n"
    "  }\n"
    "  return NULL;\n"
    "}\n\n"
    "static void release(void) {\n"
    "  if (S.dA) S.dfree(S.dA);\n  if (S.dB) S.dfree(S.dB);\n  if (S.dC) S.dfree(S.dC);\n"
    "  S.dA = S.dB = S.dC = NULL;\n"
    "}\n\n"
    "/* The runner unloads this object after each config: free the GPU's memory and the handle. */\n"
    "__attribute__((destructor)) static void unload(void) {\n"
    "  if (!S.handle) return;\n"
    "  release();\n"
    "  S.destroy(S.handle);\n"
    "  S.handle = NULL;\n"
    "}\n\n"
    "static const char *upload(REAL *C, const REAL *A, const REAL *B, int m, int n, int k) {\n"
    "  const size_t sa = (size_t)m * k * sizeof(REAL), sb = (size_t)k * n * sizeof(REAL), sc = (size_t)m * n * sizeof(REAL);\n"
    "  release();\n"
    "  if (S.dmalloc((void **)&S.dA, sa) || S.dmalloc((void **)&S.dB, sb) || S.dmalloc((void **)&S.dC, sc))\n"
    "    return \"cudaMalloc failed\";\n"
    "  if (S.copy(S.dA, A, sa, 1) || S.copy(S.dB, B, sb, 1) || S.copy(S.dC, C, sc, 1)) return \"upload failed\";\n"
    "  S.hA = A, S.hB = B, S.hC = C, S.m = m, S.n = n, S.k = k;\n"
    "  return NULL;\n"
    "}\n\n"
    "static void poison(REAL *C, size_t n, const char *why) {\n"
    "  fprintf(stderr, \"gemm_cublas: %s\\n\", why);\n"
    "  for (size_t i = 0; i < n; i++) C[i] = (REAL)NAN;\n"
    "}\n\n"
    "/* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: B goes first. */\n"
    "void gemm_cublas(REAL *C, const REAL *A, const REAL *B, int m, int n, int k, REAL alpha, REAL beta)\n"
    "{\n"
    "  const char *err = load();\n"
    "  const int fresh = !S.dA || S.hA != A || S.hB != B || S.hC != C || S.m != m || S.n != n || S.k != k;\n"
    "  if (!err && fresh) err = upload(C, A, B, m, n, k);\n"
    "  if (!err && S.gemm(S.handle, TRANS_B ? 1 : 0, TRANS_A ? 1 : 0, n, m, k, &alpha, S.dB, TRANS_B ? k : n, S.dA,\n"
    "                     TRANS_A ? m : k, &beta, S.dC, n) != 0)\n"
    "    err = \"cublas gemm failed\";\n"
    "  if (!err && S.sync() != 0) err = \"cudaDeviceSynchronize failed\";\n"
    "  if (!err && fresh && S.copy(C, S.dC, (size_t)m * n * sizeof(REAL), 2)) err = \"download failed\";\n"
    "  if (err) poison(C, (size_t)m * n, err);\n"
    "}\n";

ht_status gemm_def_vendor_cuda(const ht_gemm_problem *p, gemm_kernel_def *d) {
  static const gemm_vendor_lib cublas = {"gemm_cublas", "cuBLAS", "cublasSgemm_v2", "cublasDgemm_v2", NULL,
                                         cublas_body, NULL};
  return gemm_gpu_vendor(p, &cublas, d);
}
