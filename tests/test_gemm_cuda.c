/* The CUDA GEMM generator without a GPU: the generated sources of sampled and corner configs
 * compile with nvcc (skipped when nvcc is missing) and the resources ptxas reports agree with the
 * space's constraints; the cuBLAS baseline spec loads, and without a GPU it fails verification
 * (NaN output) instead of crashing. Running the kernels is test_gemm_cuda_gpu. */
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

static int setup(void **state) {
  (void)state;
  return make_tmpdir("/tmp/ht_gemm_cuda_XXXXXX");
}

static ht_device_info gpu_info(void) {
  ht_device_info info;
  gemm_cuda_h100_limits(&info);
  return info;
}

/* Compiles the spec's kernel for one config; checks the shared memory ptxas reports. */
static void compile_config(const ht_spec *s, ht_space *space, const ht_config *c, int es) {
  ht_value v[HT_MAX_PARAMS];
  ht_config_values(space, c, v);
  char *ptx = NULL;
  ht_ptx_resources res[1];
  ht_status st = gemm_cuda_compile_config(s, space, c, "sm_90", &ptx, res);
  char cfg[256];
  ht_config_format(space, c, cfg, sizeof cfg);
  if (st) fail_msg("%s: %s", cfg, ht_last_error());
  char entry[64];
  snprintf(entry, sizeof entry, ".entry %s(", s->kernel.entry);
  assert_non_null(strstr(ptx, entry));
  assert_true(res[0].registers > 0 && res[0].registers <= 255);
  /* Tiles beyond the register file spill hundreds of bytes; the space must not admit them. Small
   * global-memory tiles with VT 2 spill 8 bytes under nvcc 13.0, harmless. */
  if (res[0].spill_bytes > 16) fail_msg("%s: %d bytes spilled", cfg, res[0].spill_bytes);
  int idx = ht_space_param_index(space, "LOCAL");
  if (idx >= 0) { /* the tuned kernel: shared memory exactly as the constraint counts it */
#define P(name) (v[ht_space_param_index(space, name)].u.i)
    int64_t want = P("LOCAL") ? P("KWG") * (P("MWG") + P("PAD") + P("NWG") + P("PAD") * P("VW")) * es : 0;
#undef P
    if (res[0].shared_bytes != want) fail_msg("%s: %d bytes of shared memory, expected %lld", cfg, res[0].shared_bytes, (long long)want);
  }
  free(ptx);
}

static const char *const corners[] = {
    "MWG=16,WPTM=1,VT=1,NWG=32,WPTN=4,VW=1,KWG=16,UNROLL=1,LOCAL=0,PAD=0,STAGE=0",
    "MWG=64,WPTM=4,VT=2,NWG=64,WPTN=8,VW=2,KWG=16,UNROLL=4,LOCAL=1,PAD=1,STAGE=1",
    "MWG=128,WPTM=8,VT=2,NWG=128,WPTN=8,VW=4,KWG=16,UNROLL=4,LOCAL=1,PAD=0,STAGE=1",
    "MWG=64,WPTM=4,VT=1,NWG=128,WPTN=8,VW=4,KWG=32,UNROLL=4,LOCAL=0,PAD=0,STAGE=0",
    NULL};

static int nvcc_or_skip(void) {
  if (ht_ptx_nvcc_path()) return 1;
  fprintf(stderr, "nvcc not found: CUDA compile checks skipped\n");
  return 0;
}

/* n random configs (seeded) + the corners that are valid for this problem's space. */
static void compile_sampled(const ht_gemm_problem *p, const char *sub, int n, uint64_t seed) {
  ht_spec *s = generate(gemm_generate_cuda, p, sub);
  ht_device_info info = gpu_info();
  ht_space *space;
  assert_int_equal(ht_spec_build_space(s, &info, &space), HT_OK);
  ht_rng rng;
  ht_rng_seed(&rng, seed);
  ht_config cs[32];
  int got = 0;
  assert_int_equal(ht_space_sample(space, &rng, n, cs, &got), HT_OK);
  assert_int_equal(got, n);
  for (int i = 0; i < got; i++) compile_config(s, space, &cs[i], (int)ht_dtype_size(p->type));
  for (int i = 0; corners[i]; i++) {
    ht_config c;
    assert_int_equal(ht_config_parse(space, corners[i], &c), HT_OK);
    if (ht_space_is_valid(space, &c)) compile_config(s, space, &c, (int)ht_dtype_size(p->type));
  }
  ht_space_destroy(space);
  ht_spec_destroy(s);
}

static void test_space(void **state) {
  (void)state;
  ht_gemm_problem p = problem(4096, 4096, 4096, HT_DTYPE_F32, 0, 0, 1, 0);
  ht_spec *s = generate(gemm_generate_cuda, &p, "space");
  assert_string_equal(s->name, "gemm_cuda_f32_nn");
  ht_device_info info = gpu_info();
  ht_space *space;
  assert_int_equal(ht_spec_build_space(s, &info, &space), HT_OK);
  uint64_t n = 0;
  assert_int_equal(ht_space_count(space, &n), HT_OK);
  fprintf(stderr, "CUDA space (H100 limits): %llu valid configs\n", (unsigned long long)n);
  assert_true(n >= 300 && n <= 20000);
  ht_config c;
  /* 16-byte vectors at most: float4 yes, double4 no */
  assert_int_equal(ht_config_parse(space, "MWG=64,WPTM=4,VT=1,NWG=128,WPTN=8,VW=4,KWG=32,UNROLL=4,LOCAL=0,PAD=0,STAGE=0", &c), HT_OK);
  assert_true(ht_space_is_valid(space, &c));
  ht_space_destroy(space);
  ht_spec_destroy(s);
  p.type = HT_DTYPE_F64;
  s = generate(gemm_generate_cuda, &p, "space64");
  assert_int_equal(ht_spec_build_space(s, &info, &space), HT_OK);
  assert_int_equal(ht_config_parse(space, "MWG=64,WPTM=4,VT=1,NWG=128,WPTN=8,VW=4,KWG=32,UNROLL=4,LOCAL=0,PAD=0,STAGE=0", &c), HT_OK);
  assert_false(ht_space_is_valid(space, &c));
  ht_space_destroy(space);
  ht_spec_destroy(s);
  char *path = NULL;
  ht_gemm_problem bad = problem(5, 0, 5, HT_DTYPE_F32, 0, 0, 1, 0);
  assert_int_equal(gemm_generate_cuda(&bad, tmpdir, &path), HT_ERR_INVALID);
  assert_int_equal(gemm_naive_cuda(&bad, tmpdir, &path), HT_ERR_INVALID);
  assert_int_equal(gemm_vendor_cuda(&bad, tmpdir, &path), HT_ERR_INVALID);
  assert_null(path);
}

static void test_compile_fp32(void **state) {
  (void)state;
  if (!nvcc_or_skip()) skip();
  ht_gemm_problem p = problem(1023, 517, 129, HT_DTYPE_F32, 0, 0, 1, 0);
  compile_sampled(&p, "nn", 8, 3);
  p = problem(67, 45, 147, HT_DTYPE_F32, 1, 1, -1.5, 0.5);
  compile_sampled(&p, "tt", 3, 4);
}

/* The model's config (ht_gemm_model_config) for a GPU's limits is a valid config of the space built
 * with them; with an H100's it is the hand-written SGEMMs' rule itself and compiles without
 * spilling; on smaller GPUs (128 threads per block, 12 KiB of shared memory) it is the nearest
 * valid config. */
static void test_model_config(void **state) {
  (void)state;
  static const char *const rule[] = {"MWG=128,WPTM=8,VT=1,NWG=128,WPTN=8,VW=4,KWG=16,UNROLL=4,LOCAL=1,PAD=0,STAGE=1",
                                     "MWG=64,WPTM=4,VT=1,NWG=128,WPTN=8,VW=2,KWG=16,UNROLL=4,LOCAL=1,PAD=0,STAGE=1"};
  ht_device_info gpus[3];
  gpus[0] = gpus[1] = gpus[2] = gpu_info();
  gpus[1].max_work_group_size = 128;
  gpus[2].local_mem_bytes = 12 * 1024;
  for (int t = 0; t < 2; t++)
    for (int g = 0; g < 3; g++) {
      ht_gemm_problem p = problem(1023, 517, 129, t ? HT_DTYPE_F64 : HT_DTYPE_F32, t, 0, 1, 0);
      p.gpu = g ? &gpus[g] : NULL; /* NULL: an H100's limits */
      char key[256];
      assert_int_equal(ht_gemm_model_config(&p, HT_GEMM_CUDA, key, sizeof key), 1);
      if (g == 0) assert_string_equal(key, rule[t]);
      else assert_string_not_equal(key, rule[t]);
      ht_spec *s = generate(gemm_generate_cuda, &p, t ? "model64" : "model32");
      ht_space *space;
      assert_int_equal(ht_spec_build_space(s, &gpus[g], &space), HT_OK);
      ht_config c;
      if (ht_config_parse(space, key, &c)) fail_msg("%s: %s", key, ht_last_error());
      if (!ht_space_is_valid(space, &c)) fail_msg("model config %s breaks a constraint (GPU %d)", key, g);
      if (g == 0 && nvcc_or_skip()) compile_config(s, space, &c, (int)ht_dtype_size(p.type));
      ht_space_destroy(space);
      ht_spec_destroy(s);
    }
}

static void test_compile_fp64_and_naive(void **state) {
  (void)state;
  if (!nvcc_or_skip()) skip();
  ht_gemm_problem p = problem(67, 45, 33, HT_DTYPE_F64, 0, 1, 2.0, -1.0);
  compile_sampled(&p, "f64", 3, 5);
  ht_spec *s = generate(gemm_naive_cuda, &p, "naive");
  ht_device_info info = gpu_info();
  ht_space *space;
  assert_int_equal(ht_spec_build_space(s, &info, &space), HT_OK);
  ht_config c;
  assert_int_equal(ht_config_parse(space, "TX=32,TY=8", &c), HT_OK);
  compile_config(s, space, &c, 8);
  ht_space_destroy(space);
  ht_spec_destroy(s);
}

/* The cuBLAS baseline: a C spec without parameters. Without a GPU the call fails cleanly (C filled
 * with NaN, so verification reports it); with one it verifies. */
static void test_cublas_spec(void **state) {
  (void)state;
  ht_gemm_problem p = problem(33, 17, 9, HT_DTYPE_F32, 1, 0, 1.5, 0.5);
  ht_spec *s = generate(gemm_vendor_cuda, &p, "cublas");
  assert_string_equal(s->name, "gemm_cublas_f32_tn");
  assert_int_equal(s->n_params, 0);
  ht_runner_options o;
  ht_runner_options_default(&o);
  o.min_runs = o.max_runs = 2;
  o.timeout_s = 60;
  ht_runner *r;
  assert_int_equal(ht_runner_create(s, "c", &o, &r), HT_OK);
  ht_config c;
  memset(&c, 0, sizeof c);
  ht_result res;
  assert_int_equal(ht_runner_evaluate(r, &c, &res), HT_OK);
  const int gpu = device_in_child("cuda:0");
  fprintf(stderr, "cuBLAS spec on %s: %s %s\n", gpu ? "a GPU machine" : "no GPU", ht_eval_status_name(res.status),
          res.message);
  assert_int_equal(res.status, gpu ? HT_EVAL_OK : HT_EVAL_CORRECTNESS);
  ht_runner_destroy(r);
  ht_spec_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_space),
      cmocka_unit_test(test_compile_fp32),
      cmocka_unit_test(test_model_config), cmocka_unit_test(test_compile_fp64_and_naive),
      cmocka_unit_test(test_cublas_spec),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
