/* How well the CUDA GEMM space's register estimate matches ptxas, without a GPU: samples configs
 * of the generated FP32/FP64 space (an H100's limits, as test_gemm_cuda uses), compiles each for
 * sm_90 with nvcc, and prints per config the estimate the constraints use (accumulators + staged
 * fragments, in 32-bit words, + 40 for addresses) next to the registers and spill bytes ptxas
 * reports, then a summary. Configs that spill are wasted evaluations on a GPU: the summary says
 * how many the constraints let through.
 *
 *   bench_cuda_registers [N (default 60)] [f32|f64] [seed] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm/gemm_internal.h"
#include "hetune/hetune.h"

static long param(ht_space *space, const ht_value *v, const char *name) {
  int i = ht_space_param_index(space, name);
  return i >= 0 ? (long)v[i].u.i : 0;
}

/* The constraint's estimate: (WPTM*WPTN + STAGE*(WPTM+WPTN)) * words + 40. */
static long estimate(ht_space *space, const ht_value *v, int words) {
  long wm = param(space, v, "WPTM"), wn = param(space, v, "WPTN"), st = param(space, v, "STAGE");
  return (wm * wn + st * (wm + wn)) * words + 40;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 60;
  const int f64 = argc > 2 && strcmp(argv[2], "f64") == 0, words = f64 ? 2 : 1;
  const uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 10) : 1;
  if (n < 1 || n > 4096) return fprintf(stderr, "bench_cuda_registers: N must be 1..4096\n"), 2;
  if (!ht_ptx_nvcc_path()) return fprintf(stderr, "bench_cuda_registers: nvcc not found\n"), 2;
  ht_gemm_problem p;
  ht_gemm_problem_default(&p, 4096, 4096, 4096);
  p.type = f64 ? HT_DTYPE_F64 : HT_DTYPE_F32;
  char dir[] = "/tmp/ht_cuda_regs_XXXXXX", *path = NULL;
  ht_spec *s = NULL;
  ht_space *space = NULL;
  ht_device_info info;
  gemm_cuda_h100_limits(&info);
  if (!mkdtemp(dir) || ht_gemm_generate(&p, HT_GEMM_CUDA, dir, &path) || ht_spec_load(path, &s) ||
      ht_spec_build_space(s, &info, &space))
    return fprintf(stderr, "bench_cuda_registers: %s\n", ht_last_error()), 1;
  uint64_t count = 0;
  ht_space_count(space, &count);
  ht_config *cs = calloc((size_t)n, sizeof *cs);
  int got = 0;
  ht_rng rng;
  ht_rng_seed(&rng, seed);
  if (!cs || ht_space_sample(space, &rng, n, cs, &got)) return fprintf(stderr, "bench_cuda_registers: sampling failed\n"), 1;
  printf("# %s, %llu valid configs (H100 limits), %d sampled (seed %llu), sm_90\n", ht_spec_name(s),
         (unsigned long long)count, got, (unsigned long long)seed);
  printf("config\testimate\tregisters\tspill_bytes\n");
  int spills = 0, at_cap = 0, under = 0, failed = 0;
  for (int i = 0; i < got; i++) {
    ht_ptx_resources res;
    char cfg[256];
    ht_config_format(space, &cs[i], cfg, sizeof cfg);
    if (gemm_cuda_compile_config(s, space, &cs[i], "sm_90", NULL, &res)) {
      printf("%s\tcompile failed: %s\n", cfg, ht_last_error());
      failed++;
      continue;
    }
    ht_value v[HT_MAX_PARAMS];
    ht_config_values(space, &cs[i], v);
    const long est = estimate(space, v, words);
    printf("%s\t%ld\t%d\t%d\n", cfg, est, res.registers, res.spill_bytes);
    fflush(stdout);
    spills += res.spill_bytes > 0;
    at_cap += res.registers >= 255;
    under += res.registers > est;
  }
  printf("# summary: %d compiled, %d failed; %d spill, %d use all 255 registers, %d use more than estimated\n",
         got - failed, failed, spills, at_cap, under);
  free(cs);
  ht_space_destroy(space);
  ht_spec_destroy(s);
  free(path);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : 1;
}
