/* The CPU GEMM generator: every sampled variant of the schedule (random configs plus the corners of
 * the space) verified by the runner against the reference on shapes that are multiples of no
 * tile, both transposes, FP64, alpha/beta; the OpenBLAS and naive baselines; bad problems; the
 * `hetune gemm` command and its reuse of stored tuning. */
#define _GNU_SOURCE /* dlinfo */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <link.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hetune/gemm.h"
#include "hetune/measure.h"
#include "hetune/spec.h"
#include "hetune/store.h"
#include "spec/spec_struct.h" /* the generated source text */

static char root[512];

static char *out_dir(const char *name) {
  char *d = ht_strfmt("%s/%s", root, name);
  assert_non_null(d);
  return d;
}

static ht_gemm_problem problem(int64_t m, int64_t n, int64_t k, ht_dtype t, int ta, int tb, double alpha, double beta) {
  ht_gemm_problem p;
  ht_gemm_problem_default(&p, m, n, k);
  p.type = t;
  p.trans_a = ta;
  p.trans_b = tb;
  p.alpha = alpha;
  p.beta = beta;
  return p;
}

static ht_runner *runner_for(const char *spec_path, ht_spec **spec) {
  if (ht_spec_load(spec_path, spec)) fail_msg("%s", ht_last_error());
  ht_runner_options o;
  ht_runner_options_default(&o);
  o.min_runs = 2;
  o.max_runs = 2;
  o.max_time_s = 0.05;
  ht_runner *r;
  if (ht_runner_create(*spec, "c", &o, &r)) fail_msg("%s: %s", spec_path, ht_last_error());
  return r;
}

static void expect_ok(ht_runner *r, ht_space *space, const ht_config *c, const char *what) {
  ht_result res;
  if (ht_runner_evaluate(r, c, &res)) fail_msg("%s: %s", what, ht_last_error());
  char cfg[512];
  ht_config_format(space, c, cfg, sizeof cfg);
  if (res.status != HT_EVAL_OK)
    fail_msg("%s, config %s: %s: %s", what, cfg, ht_eval_status_name(res.status), res.message);
  assert_true(res.time_s > 0);
}

/* The valid config with every parameter at its first (first = 1) or last valid value, found by
 * scanning the enumeration for the lexicographic extreme. */
static int pick_extreme(const ht_config *c, void *ctx) {
  ht_config *best = ctx;
  if (best->n == 0) {
    *best = *c;
    return 0;
  }
  for (int i = 0; i < c->n; i++) {
    if (c->idx[i] == best->idx[i]) continue;
    if (c->idx[i] > best->idx[i]) *best = *c; /* keep the lexicographically largest */
    break;
  }
  return 0;
}

/* Samples n random configs and the corners of the generated space for p and checks each variant
 * on the problem sizes of p and of the other shapes (runtime sizes: same binaries). */
static void check_variants(const ht_gemm_problem *p, const char *name, int n_random, const int64_t (*shapes)[3],
                           int n_shapes) {
  char *dir = out_dir(name), *path;
  if (ht_gemm_generate(p, HT_GEMM_C, dir, &path)) fail_msg("%s", ht_last_error());
  ht_spec *spec;
  ht_runner *r = runner_for(path, &spec);
  ht_space *space;
  if (ht_spec_build_space(spec, ht_runner_device(r), &space)) fail_msg("%s", ht_last_error());
  uint64_t count;
  assert_int_equal(ht_space_count(space, &count), HT_OK);
  assert_true(count >= 200 && count <= ht_space_cartesian_size(space)); /* 944-29664 over test_simulated_cpus */
  ht_config cfgs[64];
  int got = 0;
  ht_rng rng;
  ht_rng_seed(&rng, 42);
  assert_int_equal(ht_space_sample(space, &rng, n_random, cfgs, &got), HT_OK);
  assert_int_equal(got, n_random);
  assert_int_equal(ht_space_get(space, 0, &cfgs[got++]), HT_OK);         /* smallest values */
  assert_int_equal(ht_space_get(space, count - 1, &cfgs[got++]), HT_OK); /* largest */
  ht_config last = {0};
  assert_int_equal(ht_space_enumerate(space, pick_extreme, &last), HT_OK);
  cfgs[got++] = last;
  for (int s = -1; s < n_shapes; s++) {
    ht_runner *rs = r;
    if (s >= 0) { /* the same spec at another size */
      char size[64];
      for (int d = 0; d < 3; d++) {
        snprintf(size, sizeof size, "%c=%lld", "MNK"[d], (long long)shapes[s][d]);
        assert_int_equal(ht_spec_set_size(spec, size), HT_OK);
      }
      ht_runner_options o;
      ht_runner_options_default(&o);
      o.min_runs = 2;
      o.max_runs = 2;
      o.max_time_s = 0.05;
      if (ht_runner_create(spec, "c", &o, &rs)) fail_msg("%s", ht_last_error());
    }
    char what[128];
    snprintf(what, sizeof what, "%s at %s", name, s < 0 ? "its size" : "another size");
    for (int i = 0; i < got; i++) expect_ok(rs, space, &cfgs[i], what);
    if (rs != r) ht_runner_destroy(rs);
  }
  ht_space_destroy(space);
  ht_runner_destroy(r);
  ht_spec_destroy(spec);
  free(path);
  free(dir);
}

static const int64_t odd_shapes[][3] = {{129, 1, 7}, {1, 1, 1}, {37, 50, 147}};

static void test_f32_nn_random_variants(void **state) {
  (void)state;
  ht_gemm_problem p = problem(67, 45, 33, HT_DTYPE_F32, 0, 0, 1.5, -0.5);
  check_variants(&p, "f32_nn", 30, odd_shapes, 3);
}

static void test_f32_transposes(void **state) {
  (void)state;
  ht_gemm_problem p = problem(67, 45, 147, HT_DTYPE_F32, 1, 1, -0.75, 0.25);
  check_variants(&p, "f32_tt", 8, odd_shapes, 1);
  p = problem(45, 67, 33, HT_DTYPE_F32, 1, 0, 1.0, 0.0);
  check_variants(&p, "f32_tn", 8, NULL, 0);
}

static void test_f64(void **state) {
  (void)state;
  ht_gemm_problem p = problem(67, 45, 147, HT_DTYPE_F64, 0, 1, 2.0, 1.0);
  check_variants(&p, "f64_nt", 10, odd_shapes, 1);
}

/* The largest register tile for each (PAR, PACKA), with the shallowest KC, smallest MC and NC
 * and the most threads: edge tiles in M and N and two K blocks at k = 129, several MC blocks. */
typedef struct tile_pick {
  ht_space *space;
  int n;
  ht_config best[4];
  double score[4];
} tile_pick;

static int pick_tiles(const ht_config *c, void *ctx) {
  tile_pick *t = ctx;
  ht_value v[HT_MAX_PARAMS];
  ht_config_values(t->space, c, v);
#define V(name) ((double)v[ht_space_param_index(t->space, name)].u.i)
  const int slot = (int)(V("PAR") * 2 + V("PACKA"));
  const double score = V("MR") * V("NV") * 1e9 - V("KC") * 1e6 - V("MC") * 1e3 - V("NC") + V("NTHREADS") * 0.1;
#undef V
  if (t->score[slot] == 0 || score > t->score[slot]) {
    t->score[slot] = score;
    t->best[slot] = *c;
  }
  return 0;
}

/* A larger odd shape: several MC/KC blocks and partial tiles, for this CPU and for a simulated
 * AVX-512 one (its kernel has 64-byte vectors, which the compiler splits where the CPU has none). */
static void test_blocks_and_edges(void **state) {
  (void)state;
  const ht_gemm_cpu avx512 = {64, 32, 48 * 1024, 1024 * 1024, 32 * 1024 * 1024, 2};
  for (int sim = 0; sim < 2; sim++) {
    ht_gemm_problem p = problem(1023, 517, 129, HT_DTYPE_F32, 0, 0, 1.0, 0.5);
    p.cpu = sim ? &avx512 : NULL;
    char *dir = out_dir(sim ? "blocks512" : "blocks"), *path;
    if (ht_gemm_generate(&p, HT_GEMM_C, dir, &path)) fail_msg("%s", ht_last_error());
    ht_spec *spec;
    ht_runner *r = runner_for(path, &spec);
    tile_pick t = {0};
    assert_int_equal(ht_spec_build_space(spec, ht_runner_device(r), &t.space), HT_OK);
    assert_int_equal(ht_space_enumerate(t.space, pick_tiles, &t), HT_OK);
    for (int i = 0; i < 4; i++) {
      char cfg[256];
      ht_config_format(t.space, &t.best[i], cfg, sizeof cfg);
      assert_true(t.score[i] > 0); /* every (PAR, PACKA) has a valid config */
      expect_ok(r, t.space, &t.best[i], cfg);
    }
    ht_space_destroy(t.space);
    ht_runner_destroy(r);
    ht_spec_destroy(spec);
    free(path);
    free(dir);
  }
}

/* The generated space and model config for a CPU: the space built from the spec file with a
 * device that reports nothing (the limits are all in the spec) is not empty, the model config is
 * one of its valid configs, and the kernel's vector width is the CPU's. Returns the model config. */
static void check_cpu(const ht_gemm_cpu *cpu, ht_dtype type, char *key, size_t cap) {
  ht_gemm_problem p = problem(301, 97, 147, type, 0, 0, 1.0, 0.0);
  p.cpu = cpu;
  char *dir = out_dir("simulated"), *path, what[160];
  snprintf(what, sizeof what, "%s, %d-byte vectors, %d registers, L1 %lld, L2 %lld, %d cores", ht_dtype_name(type),
           cpu->vec_bytes, cpu->registers, (long long)cpu->l1, (long long)cpu->l2, cpu->cores);
  if (ht_gemm_generate(&p, HT_GEMM_C, dir, &path)) fail_msg("%s: %s", what, ht_last_error());
  if (!ht_gemm_model_config(&p, HT_GEMM_C, key, cap)) fail_msg("%s: no model config", what);
  ht_spec *spec;
  if (ht_spec_load(path, &spec)) fail_msg("%s", ht_last_error());
  const ht_device_info nothing = {0};
  ht_space *space;
  assert_int_equal(ht_spec_build_space(spec, &nothing, &space), HT_OK);
  uint64_t count = 0;
  assert_int_equal(ht_space_count(space, &count), HT_OK);
  if (count == 0) fail_msg("%s: empty space", what);
  ht_config c;
  if (ht_config_parse(space, key, &c)) fail_msg("%s: %s: %s", what, key, ht_last_error());
  if (!ht_space_is_valid(space, &c)) fail_msg("%s: model config %s breaks a constraint", what, key);
  char want[32];
  snprintf(want, sizeof want, "#define VBYTES %d\n", cpu->vec_bytes);
  assert_non_null(strstr(spec->kernel.source_text, want));
  ht_space_destroy(space);
  ht_spec_destroy(spec);
  free(path);
  free(dir);
}

/* Simulated CPUs: every L1 / L2 / vector width / core count of the grid gives a space and a valid
 * model config, in both types. */
static void test_simulated_cpus(void **state) {
  (void)state;
  static const int64_t l1s[] = {32, 48, 64}, l2s[] = {512, 1024, 2048};
  static const int vecs[][2] = {{32, 16}, {64, 32}}, cores[] = {1, 2, 64, 256};
  char key[256];
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 3; b++)
      for (int v = 0; v < 2; v++)
        for (int c = 0; c < 4; c++)
          for (int t = 0; t < 2; t++) {
            const ht_gemm_cpu cpu = {vecs[v][0], vecs[v][1], l1s[a] * 1024, l2s[b] * 1024, 32 << 20, cores[c]};
            check_cpu(&cpu, t ? HT_DTYPE_F64 : HT_DTYPE_F32, key, sizeof key);
            char threads[32];
            snprintf(threads, sizeof threads, ",NTHREADS=%d", cores[c]);
            const size_t n = strlen(key), m = strlen(threads);
            assert_true(n > m && strcmp(key + n - m, threads) == 0); /* all the cores */
          }
}

/* The analytical choices on known CPUs: an AVX-512 Zen 5 (48 KiB L1d, 1 MiB L2) and an AVX2 Zen 3
 * (32 KiB, 512 KiB) keep the measured tiles (4 x 4 and 4 x 3 vectors) and the cache blocks of
 * BLIS's rules; a Zen 4 (AVX-512, 32 KiB L1d) has no KC for a 4 x 4 tile within L1, so 4 x 3;
 * one core: one thread, over ic. The model config verifies on the simulated AVX-512 CPUs too. */
static void test_model_config_known_cpus(void **state) {
  (void)state;
  const ht_gemm_cpu zen5 = {64, 32, 48 << 10, 1 << 20, 32 << 20, 2}, zen3 = {32, 16, 32 << 10, 512 << 10, 32 << 20, 2},
                    zen4 = {64, 32, 32 << 10, 1 << 20, 32 << 20, 2}, one = {32, 16, 32 << 10, 512 << 10, 8 << 20, 1};
  const struct {
    const ht_gemm_cpu *cpu;
    ht_dtype type;
    const char *want;
  } cases[] = {
      {&zen5, HT_DTYPE_F32, "MR=4,NV=4,MC=336,KC=128,NC=3072,KU=4,PAR=1,PACKA=1,NTHREADS=2"},
      {&zen5, HT_DTYPE_F64, "MR=4,NV=4,MC=336,KC=128,NC=3072,KU=4,PAR=1,PACKA=1,NTHREADS=2"},
      {&zen3, HT_DTYPE_F32, "MR=4,NV=3,MC=168,KC=256,NC=3072,KU=4,PAR=1,PACKA=1,NTHREADS=2"},
      {&zen4, HT_DTYPE_F32, "MR=4,NV=3,MC=336,KC=128,NC=3072,KU=4,PAR=1,PACKA=1,NTHREADS=2"},
      {&one, HT_DTYPE_F32, "MR=4,NV=3,MC=168,KC=256,NC=3072,KU=4,PAR=0,PACKA=1,NTHREADS=1"},
  };
  char key[256];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    check_cpu(cases[i].cpu, cases[i].type, key, sizeof key);
    if (strcmp(key, cases[i].want) != 0) fail_msg("case %zu: %s, expected %s", i, key, cases[i].want);
  }
  for (int i = 0; i < 2; i++) { /* the AVX-512 kernels run here too (split vectors on AVX2) */
    ht_gemm_problem p = problem(67, 45, 33, HT_DTYPE_F32, 1, 0, 1.5, -0.5);
    p.cpu = i ? &zen4 : &zen5;
    char *dir = out_dir(i ? "run_zen4" : "run_zen5"), *path;
    assert_int_equal(ht_gemm_model_config(&p, HT_GEMM_C, key, sizeof key), 1);
    assert_int_equal(ht_gemm_generate(&p, HT_GEMM_C, dir, &path), HT_OK);
    ht_spec *spec;
    ht_runner *r = runner_for(path, &spec);
    ht_space *space;
    assert_int_equal(ht_spec_build_space(spec, ht_runner_device(r), &space), HT_OK);
    ht_config c;
    assert_int_equal(ht_config_parse(space, key, &c), HT_OK);
    expect_ok(r, space, &c, key);
    ht_space_destroy(space);
    ht_runner_destroy(r);
    ht_spec_destroy(spec);
    free(path);
    free(dir);
  }
}

/* CPU limits out of range, or too small for any schedule, are one clear error. */
static void test_bad_cpu_limits(void **state) {
  (void)state;
  char *dir = out_dir("badcpu"), *path = (char *)1, key[256];
  ht_gemm_problem p = problem(64, 64, 64, HT_DTYPE_F32, 0, 0, 1, 0);
  ht_gemm_cpu cpu = {24, 16, 32 << 10, 512 << 10, 8 << 20, 2};
  p.cpu = &cpu;
  assert_int_equal(ht_gemm_generate(&p, HT_GEMM_C, dir, &path), HT_ERR_INVALID);
  assert_null(path);
  assert_non_null(strstr(ht_last_error(), "cpu.vec_bytes 24"));
  assert_int_equal(ht_gemm_model_config(&p, HT_GEMM_C, key, sizeof key), 0);
  cpu = (ht_gemm_cpu){32, 16, 32 << 10, 512 << 10, 8 << 20, 0};
  assert_int_equal(ht_gemm_generate_vendor(&p, HT_GEMM_C, dir, &path), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "cpu.cores 0"));
  cpu = (ht_gemm_cpu){32, 16, 2048, 4096, 0, 1}; /* no L2 half for the smallest A block */
  assert_int_equal(ht_gemm_generate(&p, HT_GEMM_C, dir, &path), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "no schedule fits the CPU"));
  assert_int_equal(ht_gemm_model_config(&p, HT_GEMM_C, key, sizeof key), 0);
  free(dir);
}

/* The model's config (BLIS's analytical choice) is a valid config of the generated space on this
 * machine, for both types, and verifies on an odd shape; OpenCL has no model (CUDA's is checked in
 * test_gemm_cuda). */
static void test_model_config(void **state) {
  (void)state;
  for (int t = 0; t < 2; t++) {
    ht_gemm_problem p = problem(301, 97, 147, t ? HT_DTYPE_F64 : HT_DTYPE_F32, t, 0, 1.0, 0.5);
    char key[256], *dir = out_dir(t ? "model64" : "model32"), *path;
    assert_int_equal(ht_gemm_model_config(&p, HT_GEMM_C, key, sizeof key), 1);
    assert_int_equal(ht_gemm_generate(&p, HT_GEMM_C, dir, &path), HT_OK);
    ht_spec *spec;
    ht_runner *r = runner_for(path, &spec);
    ht_space *space;
    assert_int_equal(ht_spec_build_space(spec, ht_runner_device(r), &space), HT_OK);
    ht_config c;
    if (ht_config_parse(space, key, &c)) fail_msg("%s: %s", key, ht_last_error());
    if (!ht_space_is_valid(space, &c)) fail_msg("model config %s breaks a constraint of %s", key, path);
    expect_ok(r, space, &c, key);
    ht_space_destroy(space);
    ht_runner_destroy(r);
    ht_spec_destroy(spec);
    free(path);
    free(dir);
    assert_int_equal(ht_gemm_model_config(&p, HT_GEMM_OPENCL, key, sizeof key), 0);
    assert_int_equal(ht_gemm_model_config(&p, HT_GEMM_C, key, 8), 0); /* too small: no partial key */
  }
}

/* The vendor source names the OpenBLAS build it measures (this process links OpenBLAS through
 * LAPACKE), so results from other kernels are another kernel in the store. */
static void test_openblas_build_in_source(void **state) {
  (void)state;
  int weak = -1;
  const char *build = ht_gemm_openblas_build(&weak);
  assert_non_null(build);
  assert_non_null(strstr(build, "OpenBLAS"));
  assert_true(weak == 0 || weak == 1);
  ht_gemm_problem p = problem(8, 8, 8, HT_DTYPE_F32, 0, 0, 1.0, 0.0);
  char *dir = out_dir("vendor_build"), *path;
  assert_int_equal(ht_gemm_generate_vendor(&p, HT_GEMM_C, dir, &path), HT_OK);
  char *src = ht_strfmt("%s/gemm_vendor_c.c", dir), *text = NULL;
  size_t len;
  assert_int_equal(ht_read_file(src, &text, &len), HT_OK);
  assert_non_null(strstr(text, build));
  free(text);
  free(src);
  free(path);
  free(dir);
}

/* OpenBLAS and the naive kernel verify too: same arguments, same reference. */
static void test_baselines(void **state) {
  (void)state;
  for (int t = 0; t < 2; t++) {
    ht_gemm_problem p = problem(67, 45, 33, t ? HT_DTYPE_F64 : HT_DTYPE_F32, t, !t, 1.5, -0.5);
    char *dir = out_dir(t ? "base64" : "base32"), *path;
    for (int which = 0; which < 2; which++) {
      ht_status st = which ? ht_gemm_generate_naive(&p, HT_GEMM_C, dir, &path)
                           : ht_gemm_generate_vendor(&p, HT_GEMM_C, dir, &path);
      if (st) fail_msg("%s", ht_last_error());
      ht_spec *spec;
      ht_runner *r = runner_for(path, &spec);
      ht_space *space;
      assert_int_equal(ht_spec_build_space(spec, ht_runner_device(r), &space), HT_OK);
      ht_config c;
      assert_int_equal(ht_space_get(space, 0, &c), HT_OK);
      expect_ok(r, space, &c, path);
      ht_space_destroy(space);
      ht_runner_destroy(r);
      ht_spec_destroy(spec);
      free(path);
    }
    free(dir);
  }
}

static void test_bad_problems(void **state) {
  (void)state;
  char *dir = out_dir("bad"), *path = (char *)1;
  ht_gemm_problem p = problem(0, 4, 4, HT_DTYPE_F32, 0, 0, 1, 0);
  assert_int_equal(ht_gemm_generate(&p, HT_GEMM_C, dir, &path), HT_ERR_INVALID);
  assert_null(path);
  assert_non_null(strstr(ht_last_error(), "0 x 4 x 4"));
  p = problem(4, -3, 4, HT_DTYPE_F32, 0, 0, 1, 0);
  assert_int_equal(ht_gemm_generate_vendor(&p, HT_GEMM_C, dir, &path), HT_ERR_INVALID);
  p = problem(4, 4, (int64_t)INT32_MAX + 1, HT_DTYPE_F32, 0, 0, 1, 0); /* sizes are passed as int */
  assert_int_equal(ht_gemm_generate(&p, HT_GEMM_C, dir, &path), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "2147483648"));
  p = problem(4, 4, 4, HT_DTYPE_I32, 0, 0, 1, 0);
  assert_int_equal(ht_gemm_generate(&p, HT_GEMM_C, dir, &path), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "int32"));
  p = problem(4, 4, 4, HT_DTYPE_F32, 2, 0, 1, 0);
  assert_int_equal(ht_gemm_generate(&p, HT_GEMM_C, dir, &path), HT_ERR_INVALID);
  p = problem(4, 4, 4, HT_DTYPE_F32, 0, 0, NAN, 0);
  assert_int_equal(ht_gemm_generate_naive(&p, HT_GEMM_C, dir, &path), HT_ERR_INVALID);
  p = problem(4, 4, 4, HT_DTYPE_F32, 0, 0, 1, 0);
  assert_int_equal(ht_gemm_generate(&p, (ht_gemm_target)7, dir, &path), HT_ERR_INVALID);
  assert_int_equal(ht_gemm_generate(NULL, HT_GEMM_C, dir, &path), HT_ERR_INVALID);
  assert_int_equal(ht_gemm_generate(&p, HT_GEMM_C, NULL, &path), HT_ERR_INVALID);
  assert_int_equal(ht_gemm_generate(&p, HT_GEMM_C, dir, NULL), HT_ERR_INVALID);
  assert_int_equal(ht_gemm_generate_vendor(&p, (ht_gemm_target)7, dir, &path), HT_ERR_INVALID);
  assert_int_equal(ht_gemm_generate(&p, HT_GEMM_C, "/proc/no/such/dir", &path), HT_ERR_IO);
  free(dir);
}

/* The valid configs of s's space on dev (NULL: the CPU generators' constraints need no device). */
static uint64_t space_size(const ht_spec *s, const ht_device_info *dev) {
  ht_space *space;
  uint64_t n = 0;
  if (ht_spec_build_space(s, dev, &space) || ht_space_count(space, &n)) fail_msg("%s: %s", s->name, ht_last_error());
  ht_space_destroy(space);
  return n;
}

/* The kernels are built in memory; the file written next to one loads to the same spec: identity,
 * parameters, constraints, space size. The identities are the ones the generators have always
 * given (stored tunings are looked up by them, the C kernel's for a given CPU): a kernel whose text
 * or fields change on purpose gets a new identity here, and stored results are not found for it. */
static void test_built_specs(void **state) {
  (void)state;
  const ht_gemm_cpu cpu = {.vec_bytes = 64, .registers = 32, .l1 = 48 * 1024, .l2 = 2 << 20, .l3 = 32 << 20, .cores = 16};
  ht_gemm_problem p = problem(128, 128, 128, HT_DTYPE_F32, 0, 0, 1, 0);
  p.cpu = &cpu;
  ht_device_info gpu = {.max_work_group_size = 1024, .max_work_item_sizes = {1024, 1024, 64},
                        .local_mem_bytes = 48 * 1024, .compute_units = 132, .warp_size = 32};
  const struct {
    ht_gemm_target t;
    ht_gemm_kind kind;
    const char *hash;
  } cases[] = {{HT_GEMM_C, HT_GEMM_TUNED, "c93faf059bf12dff"},      {HT_GEMM_C, HT_GEMM_NAIVE, "5f1ab943ba597a26"},
               {HT_GEMM_OPENCL, HT_GEMM_TUNED, "12b84952f8202459"}, {HT_GEMM_OPENCL, HT_GEMM_NAIVE, "667fcf67a7167a48"},
               {HT_GEMM_OPENCL, HT_GEMM_VENDOR, "0bb35f3281283300"}, {HT_GEMM_CUDA, HT_GEMM_TUNED, "09713f7a72044b2c"},
               {HT_GEMM_CUDA, HT_GEMM_NAIVE, "1c78497accc9fa52"},   {HT_GEMM_CUDA, HT_GEMM_VENDOR, "9615144d5530ad32"}};
  char *dir = out_dir("built");
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ht_spec *built = NULL, *loaded = NULL, *memory = NULL;
    if (ht_gemm_spec(&p, cases[i].t, cases[i].kind, dir, &built)) fail_msg("%s", ht_last_error());
    assert_non_null(built->path);
    assert_int_equal(strncmp(built->path, dir, strlen(dir)), 0);
    if (ht_spec_load(built->path, &loaded)) fail_msg("%s", ht_last_error());
    assert_string_equal(built->source_hash, cases[i].hash);
    assert_string_equal(loaded->source_hash, cases[i].hash);
    char *a = ht_spec_space_json(built), *b = ht_spec_space_json(loaded);
    assert_string_equal(a, b);
    free(a);
    free(b);
    assert_int_equal(built->n_constraints, loaded->n_constraints);
    for (int c = 0; c < built->n_constraints; c++) assert_string_equal(built->constraints[c], loaded->constraints[c]);
    const ht_device_info *dev = cases[i].t == HT_GEMM_C ? NULL : &gpu;
    assert_true(space_size(built, dev) > 0);
    assert_int_equal(space_size(built, dev), space_size(loaded, dev));
    /* without a folder nothing is written and the spec has no file, but the same identity */
    if (ht_gemm_spec(&p, cases[i].t, cases[i].kind, NULL, &memory)) fail_msg("%s", ht_last_error());
    assert_null(memory->path);
    assert_string_equal(memory->source_hash, cases[i].hash);
    ht_spec_destroy(built);
    ht_spec_destroy(loaded);
    ht_spec_destroy(memory);
  }
  ht_spec *s = (ht_spec *)1;
  assert_int_equal(ht_gemm_spec(&p, HT_GEMM_C, (ht_gemm_kind)9, NULL, &s), HT_ERR_INVALID);
  assert_null(s);
  assert_non_null(strstr(ht_last_error(), "kind 9"));
  free(dir);
}

/* Runs the CLI; returns its exit status and its stdout in out. */
static int cli(const char *args, char *out, size_t len) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", HT_CLI, args);
  FILE *f = popen(cmd, "r");
  assert_non_null(f);
  size_t n = fread(out, 1, len - 1, f);
  out[n] = 0;
  int rc = pclose(f);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* Evaluations in a store: how many, and how many under device_id. */
typedef struct eval_count {
  const char *device_id;
  int all, on_device;
} eval_count;

static int count_eval(const ht_eval_record *r, void *ctx) {
  eval_count *c = ctx;
  c->all++;
  c->on_device += strcmp(r->device_id, c->device_id) == 0;
  return 0;
}

static eval_count count_evals(const char *db, const char *kernel, const char *device_id) {
  ht_store *st;
  eval_count c = {device_id, 0, 0};
  if (ht_store_open(db, &st)) fail_msg("%s", ht_last_error());
  ht_eval_filter f = {.kernel_name = kernel};
  assert_int_equal(ht_store_each_eval(st, &f, count_eval, &c), HT_OK);
  ht_store_close(st);
  return c;
}

/* Lines of text that start with prefix. */
static int count_lines(const char *text, const char *prefix) {
  int n = 0;
  for (const char *s = text; s && *s; s = strchr(s, '\n') ? strchr(s, '\n') + 1 : NULL) n += strncmp(s, prefix, strlen(prefix)) == 0;
  return n;
}

/* --budget bounds the whole run: the warm start, OpenBLAS, the naive kernel and the search take 8
 * evaluations in all, all stored under c:0, with a progress line each when stderr is no terminal;
 * a second call reuses them all. */
static void test_cli_gemm_and_reuse(void **state) {
  (void)state;
  char out[16384], args[2048], db[600];
  snprintf(db, sizeof db, "%s/cli.db", root);
  snprintf(args, sizeof args, "gemm 45 37 147 --budget 8 --strategy random --db '%s' --out '%s/cli'", db, root);
  if (cli(args, out, sizeof out)) fail_msg("%s", out);
  assert_non_null(strstr(out, "tuned:"));
  assert_non_null(strstr(out, "GFLOP/s"));
  assert_non_null(strstr(out, "openblas:"));
  assert_non_null(strstr(out, "naive:"));
  assert_non_null(strstr(out, "(OpenBLAS ")); /* the build it measured */
  assert_non_null(strstr(out, "(warm start: the model's config MR="));
  assert_null(strstr(out, "nan ms"));
  assert_non_null(strstr(out, "8 of 8 evaluations"));
  assert_int_equal(count_lines(out, "hetune gemm: "), 8); /* a progress line per evaluation */
  eval_count c = count_evals(db, NULL, "c:0");
  assert_int_equal(c.all, 8);
  assert_int_equal(c.on_device, 8);
  int tuned = 0, measured = 0;
  const char *line = strstr(out, "configs evaluated (");
  assert_non_null(line);
  while (line > out && line[-1] != ',') line--;
  assert_int_equal(sscanf(line, " %d configs evaluated (%d measured", &tuned, &measured), 2);
  assert_int_equal(measured, tuned);
  assert_true(tuned >= 2); /* the model's config and at least one searched */
  strcat(args, " --quiet");
  if (cli(args, out, sizeof out)) fail_msg("%s", out);
  char reused[128];
  snprintf(reused, sizeof reused, "%d configs evaluated (0 measured, %d stored), 0 failed", tuned, tuned);
  if (!strstr(out, reused)) fail_msg("expected '%s' in %s", reused, out);
  assert_null(strstr(out, "hetune gemm: ")); /* --quiet */
  assert_int_equal(count_evals(db, NULL, "c:0").all, 8); /* nothing measured again */
  strcat(args, " --tune-vendor 3");
  if (cli(args, out, sizeof out)) fail_msg("%s", out);
  assert_non_null(strstr(out, "--tune-vendor ignored: OpenBLAS takes no tuning parameters"));
  assert_null(strstr(out, "stored best config")); /* no other size stored yet */
  /* Another size: the best config of 45 x 37 x 147 is measured too (warm start). */
  snprintf(args, sizeof args, "gemm 50 37 147 --budget 4 --strategy random --db '%s' --out '%s/cli2' --quiet", db, root);
  if (cli(args, out, sizeof out)) fail_msg("%s", out);
  assert_non_null(strstr(out, " and 1 stored best config of the nearest other sizes"));
  assert_int_equal(cli("gemm 0 4 4", out, sizeof out), 2);
  assert_non_null(strstr(out, "M 0"));
  assert_int_equal(cli("gemm 4 4", out, sizeof out), 2);
  assert_int_equal(cli("gemm 4 4 4 --device fpga", out, sizeof out), 2);
  assert_non_null(strstr(out, "--device fpga"));
  assert_int_equal(cli("gemm 4 4 4 --type f16", out, sizeof out), 2);
}

/* A small budget: each stage takes its share in order and leaves the search its evaluation; the
 * stages that get nothing say so. */
static void test_cli_gemm_budget(void **state) {
  (void)state;
  char out[16384], args[2048], db[600];
  snprintf(db, sizeof db, "%s/budget.db", root);
  snprintf(args, sizeof args, "gemm 33 31 29 --budget 3 --db '%s' --out '%s/budget' --quiet", db, root);
  if (cli(args, out, sizeof out)) fail_msg("%s", out);
  /* the model's config (1), OpenBLAS (1 of 2: one is left for the search), the search (1) */
  assert_non_null(strstr(out, "3 of 3 evaluations"));
  assert_non_null(strstr(out, "naive:    skipped (--budget spent"));
  assert_non_null(strstr(out, "2 configs evaluated (2 measured, 0 stored)"));
  assert_int_equal(count_evals(db, NULL, "c:0").all, 3);
  assert_int_equal(count_evals(db, "gemm_openblas_f32_nn", "c:0").all, 1);
  snprintf(args, sizeof args, "gemm 33 31 30 --budget 1 --db '%s' --out '%s/budget1' --quiet", db, root);
  if (cli(args, out, sizeof out)) fail_msg("%s", out);
  assert_non_null(strstr(out, "1 of 1 evaluations"));
  assert_non_null(strstr(out, "(warm start skipped by the budget: the model's config"));
  assert_non_null(strstr(out, "openblas: skipped (--budget spent"));
  assert_int_equal(count_evals(db, NULL, "c:0").all, 4);
}

/* `hetune gemm --device opencl`: the generated kernel on PoCL, and CLBlast measured from the host
 * device on the same OpenCL device, as installed and tuned (--tune-vendor), its evaluations stored
 * under that OpenCL device; --budget bounds them all, the naive kernel's work-group shapes too.
 * A negative --tune-vendor is a usage error. */
static void test_cli_gemm_opencl(void **state) {
  (void)state;
  char out[16384], args[2048], db[600], why[128];
  if (cli("devices", out, sizeof out) || !strstr(out, "opencl:0:0")) skip();
  snprintf(db, sizeof db, "%s/ocl.db", root);
  snprintf(args, sizeof args,
           "gemm 33 20 17 --device opencl --budget 7 --strategy random --no-warm --tune-vendor 1 "
           "--db '%s' --out '%s/ocl' --quiet",
           db, root);
  if (cli(args, out, sizeof out)) fail_msg("%s", out);
  if (!ht_gemm_vendor_available(HT_GEMM_OPENCL, why, sizeof why)) { /* the rest is CLBlast's */
    assert_non_null(strstr(out, "clblast:  not installed: libclblast.so.1 not found"));
    print_message("CLBlast is not installed here: its baseline is left out\n");
    skip();
  }
  const char *v = strstr(out, "clblast:");
  if (!v) fail_msg("no clblast line: %s", out);
  double gflops = 0;
  assert_int_equal(sscanf(v, "clblast: %lf GFLOP/s", &gflops), 1);
  assert_true(gflops > 0);
  assert_non_null(strstr(out, "(as installed)"));
  v = strstr(out, "clblast*:"); /* --tune-vendor 1: one config of CLBlast's Xgemm parameters */
  if (!v) fail_msg("no clblast* line: %s", out);
  assert_int_equal(sscanf(v, "clblast*: %lf GFLOP/s", &gflops), 1);
  assert_true(gflops > 0);
  assert_non_null(strstr(out, "tuned for this device by hetune: 1 configs, 0 failed"));
  assert_non_null(strstr(out, "tuned / vendor:"));
  /* CLBlast 1 + its tuning 1 + the naive kernel 2 (of its dozens of shapes) + the search 3 */
  assert_non_null(strstr(out, "7 of 7 evaluations"));
  eval_count c = count_evals(db, NULL, "opencl:0:0");
  assert_int_equal(c.all, 7);
  assert_int_equal(c.on_device, 7);
  assert_int_equal(count_evals(db, "gemm_clblast_f32_nn", "opencl:0:0").on_device, 2);
  assert_int_equal(count_evals(db, "gemm_naive_opencl_f32_nn", "opencl:0:0").on_device, 2);
  assert_int_equal(cli("gemm 4 4 4 --device opencl --tune-vendor -1", out, sizeof out), 2);
}

/* Without CLBlast, `hetune gemm --device opencl` says so on the baseline's line and gives its
 * budget to the search. Run where CLBlast is installed, with its file hidden in a mount namespace of
 * the command's own (root and unshare needed; skipped elsewhere). */
static void test_cli_gemm_clblast_missing(void **state) {
  (void)state;
  char out[16384], cmd[4096], why[128];
  void *lib = dlopen("libclblast.so.1", RTLD_LAZY | RTLD_LOCAL);
  struct link_map *map = NULL;
  if (!lib || dlinfo(lib, RTLD_DI_LINKMAP, &map) || !map || map->l_name[0] != '/' || geteuid() != 0 ||
      system("unshare -m --propagation private true 2>/dev/null") != 0 || cli("devices", out, sizeof out) ||
      !strstr(out, "opencl:0:0")) {
    if (lib) dlclose(lib);
    skip();
  }
  snprintf(cmd, sizeof cmd,
           "unshare -m --propagation private sh -c \"mount --bind /dev/null '%s' && "
           "'%s' gemm 33 20 17 --device opencl --budget 4 --no-warm --tune-vendor 1 --db '%s/nocl.db' "
           "--out '%s/nocl' --quiet\" 2>&1",
           map->l_name, HT_CLI, root, root);
  dlclose(lib);
  FILE *f = popen(cmd, "r");
  assert_non_null(f);
  size_t n = fread(out, 1, sizeof out - 1, f);
  out[n] = 0;
  if (pclose(f) != 0) fail_msg("%s", out);
  assert_non_null(strstr(out, "clblast:  not installed: libclblast.so.1 not found (Debian: apt-get install "
                              "libclblast1)"));
  assert_null(strstr(out, "clblast*:"));
  assert_non_null(strstr(out, "4 of 4 evaluations")); /* the naive kernel's 2 and the search's 2 */
  assert_true(ht_gemm_vendor_available(HT_GEMM_OPENCL, why, sizeof why)); /* outside, it is there */
}

int main(void) {
  snprintf(root, sizeof root, "%s/test-gemm-%d", HT_BINARY_DIR, (int)getpid());
  if (ht_mkdir_p(root)) return 1;
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_bad_problems),           cmocka_unit_test(test_baselines),
    cmocka_unit_test(test_built_specs),
    cmocka_unit_test(test_model_config),           cmocka_unit_test(test_openblas_build_in_source),
    cmocka_unit_test(test_blocks_and_edges),       cmocka_unit_test(test_f32_nn_random_variants),
    cmocka_unit_test(test_f32_transposes),         cmocka_unit_test(test_f64),
    cmocka_unit_test(test_simulated_cpus),         cmocka_unit_test(test_model_config_known_cpus),
    cmocka_unit_test(test_bad_cpu_limits),         cmocka_unit_test(test_cli_gemm_and_reuse),
    cmocka_unit_test(test_cli_gemm_budget),        cmocka_unit_test(test_cli_gemm_opencl),
    cmocka_unit_test(test_cli_gemm_clblast_missing),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  if (system(cmd)) rc = rc ? rc : 1;
  return rc;
}
