/* The OpenCL GEMM generator on PoCL: random and corner configs of the generated space, on shapes
 * that are multiples of no tile, with transposes, FP64 and alpha/beta, all verified by the runner
 * against the generated C reference; the naive kernel; the CLBlast baseline; the space's size; bad
 * problems. */
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

#define DEVICE "opencl:0:0"

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

static int have_opencl;

static int setup(void **state) {
  (void)state;
  if (make_tmpdir("/tmp/ht_gemm_ocl_XXXXXX")) return -1;
  have_opencl = device_in_child(DEVICE);
  if (!have_opencl) fprintf(stderr, "no OpenCL device %s: the kernel tests are skipped\n", DEVICE);
  return 0;
}

static void fast_options(ht_runner_options *o) {
  ht_runner_options_default(o);
  o->warmup = 0;
  o->min_runs = 2;
  o->max_runs = 2;
  o->max_time_s = 0.01;
  /* a config's first run includes PoCL's just-in-time compilation for its work-group size, which
   * on a busy 2-core machine took over 20 s (the largest tiles), and under AddressSanitizer more */
  o->timeout_s = SANITIZED ? 120 : 60;
}

/* Under AddressSanitizer every PoCL compile (LLVM, in the worker process) runs through ASan's
 * allocator and takes several times longer: this test took 500-590 s there against ~280 s in the
 * plain build. The plain build verifies every sampled config; the sanitizer build checks hetune's
 * own memory use, which is the same for any config, so it samples a quarter of the random configs
 * (the corners always run). */
#if defined(__SANITIZE_ADDRESS__)
#define RANDOM_CONFIGS(n) (((n) + 3) / 4)
#else
#define RANDOM_CONFIGS(n) (n)
#endif

/* Runs n random valid configs (seeded: the same ones for every shape of a variant, so each compiles
 * once) and n_corners given configs on one problem; every one must verify. The space is built
 * from the runner's device, so this process never opens the device. */
static void run_all(gen_fn gen, const ht_gemm_problem *p, const char *sub, int n, uint64_t seed,
                    const char *const *corners, int n_corners) {
  n = RANDOM_CONFIGS(n);
  ht_spec *s = generate(gen, p, sub);
  ht_runner_options o;
  fast_options(&o);
  ht_runner *r;
  if (ht_runner_create(s, DEVICE, &o, &r)) fail_msg("runner: %s", ht_last_error());
  ht_space *space;
  assert_int_equal(ht_spec_build_space(s, ht_runner_device(r), &space), HT_OK);
  ht_config cs[64];
  int got = 0;
  ht_rng rng;
  ht_rng_seed(&rng, seed);
  if (n > 0) assert_int_equal(ht_space_sample(space, &rng, n, cs, &got), HT_OK);
  assert_int_equal(got, n);
  for (int i = 0; i < n_corners && got < 64; i++, got++) {
    if (ht_config_parse(space, corners[i], &cs[got])) fail_msg("config %s: %s", corners[i], ht_last_error());
    assert_true(ht_space_is_valid(space, &cs[got]));
  }
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

/* The ladder's ends: the smallest tile, one work-item per element; local panels with padding,
 * staging and strided ownership; the widest vectors and largest tiles; a large register tile
 * without local memory (the region PoCL likes). */
static const char *const corners[] = {
    "MWG=16,WPTM=1,VT=1,NWG=32,WPTN=4,VW=1,KWG=16,UNROLL=1,LOCAL=0,PAD=0,STAGE=0",
    "MWG=16,WPTM=1,VT=1,NWG=32,WPTN=4,VW=4,KWG=16,UNROLL=1,LOCAL=1,PAD=1,STAGE=1",
    "MWG=64,WPTM=4,VT=2,NWG=64,WPTN=8,VW=2,KWG=16,UNROLL=4,LOCAL=1,PAD=1,STAGE=1",
    "MWG=128,WPTM=8,VT=2,NWG=256,WPTN=16,VW=8,KWG=32,UNROLL=4,LOCAL=1,PAD=0,STAGE=0",
    "MWG=32,WPTM=8,VT=1,NWG=128,WPTN=16,VW=8,KWG=16,UNROLL=1,LOCAL=0,PAD=0,STAGE=1",
    "MWG=16,WPTM=2,VT=2,NWG=32,WPTN=4,VW=2,KWG=16,UNROLL=4,LOCAL=0,PAD=0,STAGE=0",
    "MWG=64,WPTM=4,VT=1,NWG=128,WPTN=8,VW=4,KWG=32,UNROLL=4,LOCAL=1,PAD=1,STAGE=0",
    NULL};

static void test_space_and_bad_problems(void **state) {
  (void)state;
  ht_gemm_problem p = problem(1024, 1024, 1024, HT_DTYPE_F32, 0, 0, 1, 0);
  ht_spec *s = generate(gemm_generate_opencl, &p, "space");
  ht_device_info info;
  memset(&info, 0, sizeof info);
  info.max_work_group_size = 1024; /* a GPU-like device: 48 KiB local memory, warps of 32 */
  info.max_work_item_sizes[0] = info.max_work_item_sizes[1] = info.max_work_item_sizes[2] = 1024;
  info.local_mem_bytes = 48 * 1024;
  info.warp_size = 32;
  ht_space *space;
  assert_int_equal(ht_spec_build_space(s, &info, &space), HT_OK);
  uint64_t n = 0;
  assert_int_equal(ht_space_count(space, &n), HT_OK);
  fprintf(stderr, "valid configs (GPU-like limits): %llu of %llu\n", (unsigned long long)n,
          (unsigned long long)ht_space_cartesian_size(space));
  assert_true(n >= 300 && n <= 20000);
  /* every valid config respects the limits the brief names */
  ht_config c;
  for (uint64_t i = 0; i < n; i += 97) {
    assert_int_equal(ht_space_get(space, i, &c), HT_OK);
    ht_value v[HT_MAX_PARAMS];
    ht_config_values(space, &c, v);
#define P(name) (v[ht_space_param_index(space, name)].u.i)
    int64_t wg = (P("MWG") / P("WPTM")) * (P("NWG") / P("WPTN"));
    assert_true(wg <= 256 && wg >= 32);
    if (P("LOCAL")) assert_true(P("KWG") * (P("MWG") + P("PAD") + P("NWG") + P("PAD") * P("VW")) * 4 <= 48 * 1024);
    assert_true(P("WPTM") * P("WPTN") + P("STAGE") * (P("WPTM") + P("WPTN")) <= 256);
    assert_int_equal(P("WPTN") % P("VW"), 0);
#undef P
  }
  ht_space_destroy(space);
  ht_spec_destroy(s);

  char *path = NULL;
  ht_gemm_problem bad = problem(0, 4, 4, HT_DTYPE_F32, 0, 0, 1, 0);
  assert_int_equal(gemm_generate_opencl(&bad, tmpdir, &path), HT_ERR_INVALID);
  bad = problem(4, 4, 4, HT_DTYPE_I32, 0, 0, 1, 0);
  assert_int_equal(gemm_generate_opencl(&bad, tmpdir, &path), HT_ERR_INVALID);
  bad = problem(4, 4, 4, HT_DTYPE_F32, 0, 0, 1, 1.0 / 0.0);
  assert_int_equal(gemm_naive_opencl(&bad, tmpdir, &path), HT_ERR_INVALID);
  bad = problem(4, (int64_t)1 << 32, 4, HT_DTYPE_F32, 0, 0, 1, 0);
  assert_int_equal(gemm_generate_opencl(&bad, tmpdir, &path), HT_ERR_INVALID);
  assert_int_equal(gemm_generate_opencl(NULL, tmpdir, &path), HT_ERR_INVALID);
  assert_null(path);
}

/* FP32, no transposes: 16 random configs + the corners on shapes that fit no tile. The sizes are
 * run-time arguments, so each config compiles once for all four shapes. */
static void test_fp32_random_configs(void **state) {
  (void)state;
  if (!have_opencl) skip();
  const int nc = (int)(sizeof corners / sizeof corners[0]) - 1;
  ht_gemm_problem p = problem(67, 45, 33, HT_DTYPE_F32, 0, 0, 1, 0);
  run_all(gemm_generate_opencl, &p, "a", 16, 5, corners, nc);
  p = problem(129, 1, 7, HT_DTYPE_F32, 0, 0, 1, 0);
  run_all(gemm_generate_opencl, &p, "b", 16, 5, corners, nc);
  p = problem(1, 1, 1, HT_DTYPE_F32, 0, 0, 1, 0);
  run_all(gemm_generate_opencl, &p, "c", 16, 5, corners, nc);
  p = problem(33, 130, 147, HT_DTYPE_F32, 0, 0, 1, 0);
  run_all(gemm_generate_opencl, &p, "d", 16, 5, corners, nc);
}

/* Transposes and alpha/beta (C read and updated): each combination of transposes, k = 33 and 147. */
static void test_transposes_alpha_beta(void **state) {
  (void)state;
  if (!have_opencl) skip();
  const int tr[3][2] = {{1, 1}, {1, 0}, {0, 1}};
  for (int t = 0; t < 3; t++) {
    const int n = t == 0 ? 4 : 2, nc = t == 0 ? 2 : 1;
    char sub[16];
    ht_gemm_problem p = problem(67, 45, 33, HT_DTYPE_F32, tr[t][0], tr[t][1], -1.5, 0.5);
    snprintf(sub, sizeof sub, "t%d", t);
    run_all(gemm_generate_opencl, &p, sub, n, 11 + (uint64_t)t, corners + 1, nc);
    p = problem(31, 17, 147, HT_DTYPE_F32, tr[t][0], tr[t][1], 0.25, -2.0);
    snprintf(sub, sizeof sub, "u%d", t);
    run_all(gemm_generate_opencl, &p, sub, n, 11 + (uint64_t)t, corners + 1, nc);
  }
}

/* FP64 (cl_khr_fp64) with the double tolerances (rtol 1e-10). */
static void test_fp64(void **state) {
  (void)state;
  if (!have_opencl) skip();
  ht_gemm_problem p = problem(67, 45, 33, HT_DTYPE_F64, 0, 1, 2.0, -1.0);
  run_all(gemm_generate_opencl, &p, "f64", 3, 23, corners + 2, 2);
  p = problem(70, 9, 147, HT_DTYPE_F64, 0, 1, 1.0, 0.5);
  run_all(gemm_generate_opencl, &p, "f64b", 3, 23, corners + 2, 2);
}

/* The naive kernel: a few work-group shapes, with and without transposes and beta. */
static void test_naive(void **state) {
  (void)state;
  if (!have_opencl) skip();
  static const char *const shapes[] = {"TX=1,TY=1", "TX=16,TY=4", "TX=256,TY=1", "TX=8,TY=32"};
  ht_gemm_problem p = problem(67, 45, 33, HT_DTYPE_F32, 0, 0, 1, 0);
  run_all(gemm_naive_opencl, &p, "n1", 0, 1, shapes, 4);
  p = problem(17, 130, 7, HT_DTYPE_F64, 1, 1, 0.5, 3.0);
  run_all(gemm_naive_opencl, &p, "n2", 0, 1, shapes, 4);
}

/* The CLBlast baseline: a C kernel on the host device that runs CLBlast on the OpenCL device, as
 * installed and with its Xgemm kernel's parameters overridden by the config, with transposes,
 * alpha/beta and FP64, verified like every generated kernel. On the OpenCL device itself the runner
 * refuses it with a clear message (kernel language c). */
static ht_eval_status run_vendor(const ht_gemm_problem *p, const char *sub, const char *device, const char *config,
                                 ht_status *created) {
  ht_spec *s = generate(gemm_vendor_opencl, p, sub);
  ht_runner_options o;
  fast_options(&o);
  o.timeout_s = 300; /* the first call compiles CLBlast's kernels on PoCL */
  ht_runner *r;
  *created = ht_runner_create(s, device, &o, &r);
  ht_result res = {.status = HT_EVAL_OK};
  if (!*created) {
    ht_space *space;
    ht_config c;
    assert_int_equal(ht_spec_build_space(s, ht_runner_device(r), &space), HT_OK);
    if (ht_config_parse(space, config, &c)) fail_msg("config %s: %s", config, ht_last_error());
    assert_true(ht_space_is_valid(space, &c));
    assert_int_equal(ht_runner_evaluate(r, &c, &res), HT_OK);
    if (res.status != HT_EVAL_OK) fprintf(stderr, "%s: %s: %s\n", s->name, ht_eval_status_name(res.status), res.message);
    ht_space_destroy(space);
    ht_runner_destroy(r);
  }
  ht_spec_destroy(s);
  return res.status;
}

static void test_clblast_vendor(void **state) {
  (void)state;
  char why[128];
  if (!have_opencl) skip();
  if (!ht_gemm_vendor_available(HT_GEMM_OPENCL, why, sizeof why)) {
    print_message("%s: skipped\n", why);
    skip();
  }
  /* As installed (TUNE=0: the other values are the space's representative, unused), and Xgemm
   * tuned: register tiles with float8 vectors, and local-memory panels at the 32 KiB bound in FP64. */
  static const char *const installed = "TUNE=0,MWG=16,NWG=16,KWG=16,MDIMC=8,NDIMC=8,MDIMA=8,NDIMB=8,KWI=2,VWM=1,VWN=1,"
                                       "STRM=0,STRN=0,SA=0,SB=0";
  static const char *const vectors = "TUNE=1,MWG=64,NWG=64,KWG=32,MDIMC=8,NDIMC=8,MDIMA=8,NDIMB=8,KWI=2,VWM=8,VWN=8,"
                                     "STRM=0,STRN=0,SA=0,SB=0";
  static const char *const panels = "TUNE=1,MWG=64,NWG=64,KWG=32,MDIMC=16,NDIMC=16,MDIMA=16,NDIMB=16,KWI=2,VWM=2,"
                                    "VWN=2,STRM=0,STRN=0,SA=1,SB=1";
  ht_status created;
  ht_gemm_problem p = problem(67, 45, 33, HT_DTYPE_F32, 1, 0, -1.5, 0.5);
  assert_int_equal(run_vendor(&p, "v1", "c", installed, &created), HT_EVAL_OK);
  assert_int_equal(created, HT_OK);
  assert_int_equal(run_vendor(&p, "v1", "c", vectors, &created), HT_EVAL_OK);
  p = problem(70, 9, 147, HT_DTYPE_F64, 0, 1, 1.0, 0.0);
  assert_int_equal(run_vendor(&p, "v2", "c", installed, &created), HT_EVAL_OK);
  assert_int_equal(created, HT_OK);
  assert_int_equal(run_vendor(&p, "v2", "c", panels, &created), HT_EVAL_OK);
  run_vendor(&p, "v3", DEVICE, installed, &created);
  assert_int_equal(created, HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "kernel language c cannot run on device opencl:0:0"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_space_and_bad_problems),
      cmocka_unit_test(test_fp32_random_configs),
      cmocka_unit_test(test_transposes_alpha_beta),
      cmocka_unit_test(test_fp64),
      cmocka_unit_test(test_naive),
      cmocka_unit_test(test_clblast_vendor),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
