/* One generator per target (gemm_c.c, gemm_opencl.c, gemm_cuda.c); gemm.c dispatches. */
#ifndef HETUNE_GEMM_INTERNAL_H
#define HETUNE_GEMM_INTERNAL_H

#include "hetune/gemm.h"

/* Each writes its spec + source into dir (existing) and returns the spec path (malloc'ed). */
ht_status gemm_generate_c(const ht_gemm_problem *p, const char *dir, char **spec_path);
ht_status gemm_generate_opencl(const ht_gemm_problem *p, const char *dir, char **spec_path);
ht_status gemm_generate_cuda(const ht_gemm_problem *p, const char *dir, char **spec_path);
ht_status gemm_vendor_c(const ht_gemm_problem *p, const char *dir, char **spec_path);     /* OpenBLAS */
ht_status gemm_vendor_cuda(const ht_gemm_problem *p, const char *dir, char **spec_path);  /* cuBLAS */
ht_status gemm_naive(const ht_gemm_problem *p, ht_gemm_target t, const char *dir, char **spec_path);
/* The naive GPU kernels (one work-item / thread per C element); gemm_naive dispatches to them. */
ht_status gemm_naive_opencl(const ht_gemm_problem *p, const char *dir, char **spec_path);
ht_status gemm_naive_cuda(const ht_gemm_problem *p, const char *dir, char **spec_path);

#endif
