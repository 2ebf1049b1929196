/* The CUDA GEMM generator on a GPU (ctest label gpu; skipped without one): random and corner
 * configs on shapes that fit no tile, transposes, FP64, alpha/beta, the naive kernel and the
 * cuBLAS baseline, every one verified by the runner against the generated C reference. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gemm_test_util.h"

#define DEVICE "cuda:0"

static int have_gpu;

static int setup(void **state) {
  (void)state;
  if (make_tmpdir("/tmp/ht_gemm_cugpu_XXXXXX")) return -1;
  have_gpu = device_in_child(DEVICE);
  if (!have_gpu) fprintf(stderr, "no CUDA device: the GPU GEMM tests are skipped\n");
  return 0;
}

/* Runs n random configs (seeded) plus the valid corners on one problem; all must verify. */
static void run_sampled(gen_fn gen, const ht_gemm_problem *p, const char *sub, const char *device, int n,
                        uint64_t seed, const char *const *corners) {
  ht_spec *s = generate(gen, p, sub);
  ht_runner_options o;
  ht_runner_options_default(&o);
  o.warmup = 0;
  o.min_runs = o.max_runs = 2;
  o.max_time_s = 0.01;
  ht_runner *r;
  if (ht_runner_create(s, device, &o, &r)) fail_msg("runner: %s", ht_last_error());
  ht_space *space;
  assert_int_equal(ht_spec_build_space(s, ht_runner_device(r), &space), HT_OK);
  ht_config cs[64];
  int got = 0;
  ht_rng rng;
  ht_rng_seed(&rng, seed);
  if (n > 0) assert_int_equal(ht_space_sample(space, &rng, n, cs, &got), HT_OK);
  if (ht_space_param_count(space) == 0) { /* the cuBLAS spec: one config, no parameters */
    memset(&cs[0], 0, sizeof cs[0]);
    got = 1;
    corners = NULL;
  }
  for (int i = 0; corners && corners[i] && got < 64; i++)
    if (!ht_config_parse(space, corners[i], &cs[got]) && ht_space_is_valid(space, &cs[got])) got++;
  int bad = 0;
  for (int i = 0; i < got; i++) {
    ht_result res;
    assert_int_equal(ht_runner_evaluate(r, &cs[i], &res), HT_OK);
    if (res.status != HT_EVAL_OK) {
      char cfg[256];
      ht_config_format(space, &cs[i], cfg, sizeof cfg);
      fprintf(stderr, "%s %lldx%lldx%lld: %s: %s: %s\n", s->name, (long long)p->m, (long long)p->n, (long long)p->k,
              cfg, ht_eval_status_name(res.status), res.message);
      bad++;
    }
  }
  ht_space_destroy(space);
  ht_runner_destroy(r);
  ht_spec_destroy(s);
  assert_int_equal(bad, 0);
}

static const char *const corners[] = {
    "MWG=16,WPTM=1,VT=1,NWG=32,WPTN=4,VW=1,KWG=16,UNROLL=1,LOCAL=0,PAD=0,STAGE=0",
    "MWG=64,WPTM=4,VT=2,NWG=64,WPTN=8,VW=2,KWG=16,UNROLL=4,LOCAL=1,PAD=1,STAGE=1",
    "MWG=128,WPTM=8,VT=2,NWG=128,WPTN=8,VW=4,KWG=16,UNROLL=4,LOCAL=1,PAD=0,STAGE=1",
    "MWG=64,WPTM=4,VT=1,NWG=128,WPTN=8,VW=4,KWG=32,UNROLL=4,LOCAL=0,PAD=0,STAGE=0",
    NULL};

static void test_fp32(void **state) {
  (void)state;
  if (!have_gpu) skip();
  ht_gemm_problem p = problem(1023, 517, 129, HT_DTYPE_F32, 0, 0, 1, 0);
  run_sampled(gemm_generate_cuda, &p, "a", DEVICE, 30, 1, corners);
  p = problem(129, 1, 7, HT_DTYPE_F32, 0, 0, 1, 0);
  run_sampled(gemm_generate_cuda, &p, "b", DEVICE, 10, 2, corners);
  p = problem(1, 1, 1, HT_DTYPE_F32, 0, 0, 1, 0);
  run_sampled(gemm_generate_cuda, &p, "c", DEVICE, 10, 3, corners);
}

static void test_transposes_fp64(void **state) {
  (void)state;
  if (!have_gpu) skip();
  const int tr[3][2] = {{1, 1}, {1, 0}, {0, 1}};
  for (int t = 0; t < 3; t++) {
    ht_gemm_problem p = problem(67, 45, 147, HT_DTYPE_F32, tr[t][0], tr[t][1], -1.5, 0.5);
    run_sampled(gemm_generate_cuda, &p, t == 0 ? "t0" : t == 1 ? "t1" : "t2", DEVICE, 10, 10 + (uint64_t)t, corners);
  }
  ht_gemm_problem p = problem(67, 45, 33, HT_DTYPE_F64, 0, 1, 2.0, -1.0);
  run_sampled(gemm_generate_cuda, &p, "f64", DEVICE, 10, 20, corners);
}

static void test_baselines(void **state) {
  (void)state;
  if (!have_gpu) skip();
  static const char *const shapes[] = {"TX=32,TY=8", "TX=1,TY=1", "TX=256,TY=1", NULL};
  ht_gemm_problem p = problem(67, 45, 33, HT_DTYPE_F32, 1, 1, 0.5, 2.0);
  run_sampled(gemm_naive_cuda, &p, "naive", DEVICE, 0, 1, shapes);
  run_sampled(gemm_vendor_cuda, &p, "cublas", "c", 0, 1, NULL);
  p = problem(129, 65, 147, HT_DTYPE_F64, 0, 0, 1, 0);
  run_sampled(gemm_vendor_cuda, &p, "cublas64", "c", 0, 1, NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fp32),
      cmocka_unit_test(test_transposes_fp64),
      cmocka_unit_test(test_baselines),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
