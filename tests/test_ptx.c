/* PTX analysis: Equation (1) classes, executed counts through loop trip counts, dpc (Equation (2)
 * golden value of reference 003), parse errors, a fuzz test, and nvcc (skipped without it). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hetune/ptx.h"

static char *read_data(const char *rel) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", HT_SOURCE_DIR, rel);
  char *text;
  size_t n;
  if (ht_read_file(path, &text, &n)) fail_msg("%s", ht_last_error());
  return text;
}

static ht_ptx_module *parse_data(const char *rel) {
  char *text = read_data(rel);
  ht_ptx_module *m;
  if (ht_ptx_parse(text, rel, &m)) fail_msg("%s", ht_last_error());
  free(text);
  return m;
}

static double sum(const ht_ptx_counts *c) {
  return c->compute + c->global_read + c->global_write + c->shared_read + c->shared_write + c->sync + c->dpu + c->sfu;
}

static void test_dpc_golden(void **state) {
  (void)state;
  /* Table 4 of reference 003 (Rodinia NN euclid): dpc = 0.5738 with k = 28. */
  static const int u[28] = {15, 16, 13, 22, 24, 9, 9, 9, 12, 12, 12, 13, 14, 0,
                            20, 18, 18, 28, 20, 21, 22, 26, 24, 25, 26, 27, 28, 0};
  double d = ht_ptx_dpc_from_u(u, 28);
  assert_true(fabs(d - 0.5738) < 5e-5);
  static const int v[3] = {2, 3, 0}; /* chain: (1/1 + 1/1 + 0) / 3 */
  assert_true(fabs(ht_ptx_dpc_from_u(v, 3) - 2.0 / 3.0) < 1e-12);
  assert_true(isnan(ht_ptx_dpc_from_u(u, 0)));
}

static void test_nn_euclid(void **state) {
  (void)state;
  ht_ptx_module *m = parse_data("tests/data/ptx/nn.ptx");
  assert_int_equal(ht_ptx_kernel_count(m), 1);
  int k = ht_ptx_kernel_find(m, "euclid");
  assert_int_equal(k, 0);
  assert_string_equal(ht_ptx_kernel_name(m, k), "_Z6euclidP7LatLongPfiff");
  assert_int_equal(ht_ptx_kernel_find(m, "_Z6euclidP7LatLongPfiff"), 0);
  assert_int_equal(ht_ptx_kernel_find(m, "gemm"), -1);
  assert_int_equal(ht_ptx_kernel_param_count(m, k), 5);
  ht_ptx_counts c;
  assert_int_equal(ht_ptx_static_counts(m, k, &c), HT_OK);
  assert_true(c.total == 28); /* the paper's count: label and ret excluded */
  assert_true(c.total == sum(&c));
  assert_true(c.global_read == 2 && c.global_write == 1 && c.sfu == 1 && c.compute == 24);
  assert_int_equal(ht_ptx_instruction_count(m, k), 28);
  /* No loop: executed = static (both sides of the guard counted once). */
  ht_ptx_exec_info info;
  ht_ptx_counts e;
  assert_int_equal(ht_ptx_executed_counts(m, k, NULL, 0, NULL, &e, &info), HT_OK);
  assert_true(e.total == 28 && info.loops == 0 && info.unresolved_loops == 0);
  /* The U vector of this listing: ld.param of lat (4th) is first read by sub.f32 (22nd). */
  int u[28];
  assert_int_equal(ht_ptx_dpc_vector(m, k, u, 28), HT_OK);
  assert_int_equal(u[3], 22);
  assert_int_equal(u[13], 0);  /* the branch writes nothing */
  assert_int_equal(u[27], 0);  /* the store */
  assert_int_equal(u[12], 14); /* setp -> the guarded bra reads the predicate */
  double d = ht_ptx_dpc(m, k);
  assert_true(fabs(d - ht_ptx_dpc_from_u(u, 28)) < 1e-12);
  assert_true(fabs(d - 0.5840) < 5e-4); /* the paper's listing (CUDA 9, sm_50) gives 0.5738 */
  ht_ptx_features f;
  assert_int_equal(ht_ptx_features_get(m, k, NULL, 0, NULL, &f), HT_OK);
  assert_true(fabs(f.alpha - 25.0 / 3.0) < 1e-12);
  assert_int_equal(f.registers, -1);
  ht_ptx_free(m);
}

static const char *snippet =
  "// every class\n"
  ".version 8.0\n.target sm_80\n.address_size 64\n"
  ".global .align 4 .b8 table[8] = {1, 2, 3, 4, 5, 6, 7, 8};\n"
  ".visible .entry all(.param .u64 all_param_0, .param .f64 all_param_1)\n"
  ".maxntid 128, 1, 1\n"
  "{\n"
  "  .reg .pred %p<3>; .reg .f32 %f<20>; .reg .b32 %r<9>; .reg .b64 %rd<9>; .reg .f64 %fd<5>;\n"
  "  .shared .align 4 .b8 sm[512];\n"
  "  ld.param.u64 %rd1, [all_param_0];            /* compute */\n"
  "  ld.global.nc.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1+16]; // global read\n"
  "  ldu.global.f32 %f5, [%rd1];                   // global read\n"
  "  ld.f32 %f6, [%rd1+-4];                        // generic: global read\n"
  "  st.global.v2.f32 [%rd1], {%f1, %f2};          // global write\n"
  "  atom.global.add.u32 %r1, [%rd1], 1;           // global write\n"
  "  red.shared.add.u32 [sm], 1;                   // shared write\n"
  "  ld.shared.f32 %f7, [sm+4];                    // shared read\n"
  "  st.shared.f32 [sm], %f7;                      // shared write\n"
  "  bar.sync 0;                                   // sync\n"
  "  membar.gl;                                    // sync\n"
  "  add.f64 %fd1, %fd2, %fd3;                     // dpu\n"
  "  sqrt.rn.f64 %fd4, %fd1;                       // dpu (f64)\n"
  "  sqrt.rn.f32 %f8, %f7;                         // sfu\n"
  "  rsqrt.approx.ftz.f32 %f9, %f8;                // sfu\n"
  "  ex2.approx.f32 %f10, %f9;                     // sfu\n"
  "  setp.lt.f32 %p1|%p2, %f10, 0f3F800000;        // compute\n"
  "  @!%p1 bra DONE;                               // compute\n"
  "  mov.f64 %fd2, 0d3FF0000000000000;             // compute (a move)\n"
  "DONE:\n"
  "  ret;\n"
  "}\n";

static void test_classes(void **state) {
  (void)state;
  ht_ptx_module *m;
  if (ht_ptx_parse(snippet, "snippet.ptx", &m)) fail_msg("%s", ht_last_error());
  ht_ptx_counts c;
  assert_int_equal(ht_ptx_static_counts(m, 0, &c), HT_OK);
  assert_true(c.total == 19 && c.total == sum(&c));
  assert_true(c.compute == 4);
  assert_true(c.global_read == 3);
  assert_true(c.global_write == 2);
  assert_true(c.shared_read == 1);
  assert_true(c.shared_write == 2);
  assert_true(c.sync == 2);
  assert_true(c.dpu == 2);
  assert_true(c.sfu == 3);
  assert_int_equal(ht_ptx_classify("ld.param.u32"), HT_PTX_COMPUTE);
  assert_int_equal(ht_ptx_classify("ld.const.f32"), HT_PTX_COMPUTE);
  assert_int_equal(ht_ptx_classify("ld.local.u32"), HT_PTX_GLOBAL_READ);
  assert_int_equal(ht_ptx_classify("st.local.u32"), HT_PTX_GLOBAL_WRITE);
  assert_int_equal(ht_ptx_classify("ld.shared::cta.f32"), HT_PTX_SHARED_READ);
  assert_int_equal(ht_ptx_classify("sin.approx.f32"), HT_PTX_SFU);
  assert_int_equal(ht_ptx_classify("rcp.rn.f32"), HT_PTX_SFU);
  assert_int_equal(ht_ptx_classify("fma.rn.f64"), HT_PTX_DPU);
  assert_int_equal(ht_ptx_classify("cvt.f64.f32"), HT_PTX_DPU);
  assert_int_equal(ht_ptx_classify("st.global.f64"), HT_PTX_GLOBAL_WRITE);
  assert_int_equal(ht_ptx_classify("barrier.sync.aligned"), HT_PTX_SYNC);
  assert_int_equal(ht_ptx_classify("bar.warp.sync"), HT_PTX_SYNC);
  assert_int_equal(ht_ptx_classify("cp.async.ca.shared.global"), HT_PTX_GLOBAL_READ);
  assert_int_equal(ht_ptx_classify("cp.async.wait_group"), HT_PTX_SYNC);
  assert_int_equal(ht_ptx_classify("ldmatrix.sync.aligned.m8n8.x4.shared.b16"), HT_PTX_SHARED_READ);
  assert_int_equal(ht_ptx_classify("red.global.add.f64"), HT_PTX_GLOBAL_WRITE);
  assert_int_equal(ht_ptx_classify("ld.volatile.shared.u32"), HT_PTX_SHARED_READ);
  assert_int_equal(ht_ptx_classify("ret"), HT_PTX_NONE);
  assert_int_equal(ht_ptx_classify("exit"), HT_PTX_NONE);
  assert_int_equal(ht_ptx_classify("bra.uni"), HT_PTX_COMPUTE);
  assert_string_equal(ht_ptx_class_name(HT_PTX_SFU), "sfu");
  /* p|q: both predicates are written; the guard reads %p1 at instruction 18 */
  int u[19];
  assert_int_equal(ht_ptx_dpc_vector(m, 0, u, 19), HT_OK);
  assert_int_equal(u[15], 17); /* ex2 -> setp */
  assert_int_equal(u[16], 18); /* setp -> @!%p1 bra */
  assert_int_equal(u[9], 0);   /* bar.sync writes nothing */
  ht_ptx_free(m);
}

static void test_loop_param_bound(void **state) {
  (void)state;
  ht_ptx_module *m = parse_data("tests/data/ptx/loops.ptx");
  assert_int_equal(ht_ptx_kernel_count(m), 3);
  int k = ht_ptx_kernel_find(m, "strided");
  assert_true(k >= 0);
  ht_ptx_counts c64, c128, st;
  ht_ptx_exec_info info;
  double p[3] = {NAN, NAN, 64};
  assert_int_equal(ht_ptx_executed_counts(m, k, p, 3, NULL, &c64, &info), HT_OK);
  assert_int_equal(info.loops, 1);
  assert_int_equal(info.unresolved_loops, 0);
  assert_true(info.max_trip == 16); /* for (k = 0; k < K; k += 4) */
  p[2] = 128;
  assert_int_equal(ht_ptx_executed_counts(m, k, p, 3, NULL, &c128, &info), HT_OK);
  assert_int_equal(ht_ptx_static_counts(m, k, &st), HT_OK);
  assert_true(c64.global_read == 16 && c128.global_read == 32);
  assert_true(c64.global_write == 1 && c128.global_write == 1);
  assert_true(c64.total == sum(&c64) && c128.total == sum(&c128));
  /* The 8-instruction loop body runs 16 more times: outside the loop counts stay once. */
  assert_true(c128.total - c64.total == 8 * 16);
  assert_true(c64.total == st.total - 8 + 8 * 16);
  /* K = 3: one iteration (ceil(3/4)); unknown K: the default trip, reported unresolved. */
  p[2] = 3;
  assert_int_equal(ht_ptx_executed_counts(m, k, p, 3, NULL, &c64, &info), HT_OK);
  assert_true(c64.global_read == 1);
  p[2] = 0; /* the guard skips the loop */
  assert_int_equal(ht_ptx_executed_counts(m, k, p, 3, NULL, &c64, &info), HT_OK);
  assert_true(c64.global_read == 0 && c64.global_write == 1);
  ht_ptx_exec_options o = {.default_trip = 7};
  assert_int_equal(ht_ptx_executed_counts(m, k, NULL, 0, &o, &c64, &info), HT_OK);
  assert_int_equal(info.unresolved_loops, 1);
  assert_true(c64.global_read == 7);
  ht_ptx_free(m);
}

static void test_nested_and_constant_loops(void **state) {
  (void)state;
  ht_ptx_module *m = parse_data("tests/data/ptx/loops.ptx");
  int k = ht_ptx_kernel_find(m, "nested");
  double p[4] = {NAN, NAN, 6, 10}; /* n = 6, m = 10 */
  ht_ptx_counts c;
  ht_ptx_exec_info info;
  assert_int_equal(ht_ptx_executed_counts(m, k, p, 4, NULL, &c, &info), HT_OK);
  assert_int_equal(info.loops, 2);
  assert_int_equal(info.unresolved_loops, 0);
  assert_true(c.global_read == 60); /* nested loops multiply */
  assert_true(c.sync == 6);
  assert_true(c.total == sum(&c));
  k = ht_ptx_kernel_find(m, "fixed"); /* for (i = 0; i < 10; i++), compared with != 10 */
  assert_int_equal(ht_ptx_executed_counts(m, k, NULL, 0, NULL, &c, &info), HT_OK);
  assert_int_equal(info.unresolved_loops, 0);
  assert_true(c.sfu == 10 && c.shared_read == 10 && c.dpu == 20 && c.shared_write == 1 && c.sync == 1);
  ht_ptx_free(m);
}

/* A hand-written count-down loop: i = n*2; do { ... i -= 3 } while (i > 0). */
static void test_countdown_loop(void **state) {
  (void)state;
  const char *text = ".version 8.0\n.target sm_80\n.address_size 64\n"
                     ".visible .entry down(.param .u32 down_param_0) {\n"
                     " .reg .b32 %r<5>; .reg .pred %p<2>;\n"
                     " ld.param.u32 %r1, [down_param_0];\n shl.b32 %r2, %r1, 1;\n"
                     "L1:\n sub.s32 %r2, %r2, 3;\n setp.gt.s32 %p1, %r2, 0;\n @%p1 bra.uni L1;\n ret;\n}\n";
  ht_ptx_module *m;
  if (ht_ptx_parse(text, "down.ptx", &m)) fail_msg("%s", ht_last_error());
  double p[1] = {10}; /* 20 -> 17 ... 2 -> -1: 7 iterations */
  ht_ptx_counts c;
  ht_ptx_exec_info info;
  assert_int_equal(ht_ptx_executed_counts(m, 0, p, 1, NULL, &c, &info), HT_OK);
  assert_int_equal(info.unresolved_loops, 0);
  assert_true(info.max_trip == 7);
  assert_true(c.total == 2 + 3 * 7);
  ht_ptx_free(m);
}

/* The other loop shapes: the incremented copy compared, the old value compared through a mov,
 * and a top-tested loop (exit from the header, back edge from an unconditional bra). */
static double trip_of(const char *body, double n) {
  char text[2048];
  snprintf(text, sizeof text,
           ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry cp(.param .u32 cp_param_0) {\n"
           " .reg .b32 %%r<5>; .reg .pred %%p<2>;\n ld.param.u32 %%r1, [cp_param_0];\n mov.u32 %%r2, 0;\n%s ret;\n}\n",
           body);
  ht_ptx_module *m;
  if (ht_ptx_parse(text, "shape.ptx", &m)) fail_msg("%s", ht_last_error());
  ht_ptx_counts c;
  ht_ptx_exec_info info;
  assert_int_equal(ht_ptx_executed_counts(m, 0, &n, 1, NULL, &c, &info), HT_OK);
  ht_ptx_free(m);
  assert_int_equal(info.loops, 1);
  return info.unresolved_loops ? -1 : info.max_trip;
}

static void test_loop_shapes(void **state) {
  (void)state;
  /* x = i + 2; test x < n; i = x: 2, 4, ... 10 -> 5 iterations */
  assert_true(trip_of("L1:\n add.s32 %r3, %r2, 2;\n setp.lt.s32 %p1, %r3, %r1;\n mov.u32 %r2, %r3;\n @%p1 bra L1;\n", 10) == 5);
  /* t = i + 2; test i < n (old value); i = t: 0, 2, ... 10 -> 6 iterations */
  assert_true(trip_of("L1:\n add.s32 %r3, %r2, 2;\n setp.lt.s32 %p1, %r2, %r1;\n mov.u32 %r2, %r3;\n @%p1 bra L1;\n", 10) == 6);
  /* while (i < n) i++; tested at the top: the header runs n + 1 times */
  assert_true(trip_of("L1:\n setp.ge.s32 %p1, %r2, %r1;\n @%p1 bra DONE;\n add.s32 %r2, %r2, 1;\n bra.uni L1;\nDONE:\n", 10) == 11);
  /* bound on the left, unsigned: n > i */
  assert_true(trip_of("L1:\n add.s32 %r2, %r2, 1;\n setp.hi.u32 %p1, %r1, %r2;\n @%p1 bra L1;\n", 7) == 7);
  /* bound through and with a negative mask (n & -4, two's complement): 23 & -4 = 20 */
  assert_true(trip_of(" and.b32 %r4, %r1, -4;\nL1:\n add.s32 %r2, %r2, 4;\n setp.lt.s32 %p1, %r2, %r4;\n @%p1 bra L1;\n", 23) == 5);
  /* a bound behind a doubling chain (each value read twice): evaluation stops, no hang */
  {
    char body[8192];
    int n = snprintf(body, sizeof body, " mov.u32 %%r3, %%r1;\n");
    for (int i = 0; i < 40; i++) n += snprintf(body + n, sizeof body - (size_t)n, " add.s32 %%r3, %%r3, %%r3;\n");
    snprintf(body + n, sizeof body - (size_t)n, "L1:\n add.s32 %%r2, %%r2, 1;\n setp.lt.s32 %%p1, %%r2, %%r3;\n @%%p1 bra L1;\n");
    assert_true(trip_of(body, 1) == -1);
  }
  /* the induction register also changes elsewhere in the loop: not recognised */
  assert_true(trip_of("L1:\n add.s32 %r2, %r2, 1;\n shl.b32 %r2, %r2, 1;\n setp.lt.s32 %p1, %r2, %r1;\n @%p1 bra L1;\n", 7) == -1);
}

/* gemm.cu with shared tiles (committed PTX, no nvcc needed): the k loop runs K/KWG times. */
static void test_gemm_trip_counts(void **state) {
  (void)state;
  ht_ptx_module *m = parse_data("tests/data/ptx/gemm_local.ptx");
  int k = ht_ptx_kernel_find(m, "gemm");
  assert_int_equal(k, 0);
  ht_ptx_counts c1, c2, st;
  ht_ptx_exec_info info;
  double p[6] = {NAN, NAN, NAN, 1024, 1024, 1024};
  assert_int_equal(ht_ptx_executed_counts(m, k, p, 6, NULL, &c1, &info), HT_OK);
  assert_int_equal(info.loops, 4);
  assert_int_equal(info.unresolved_loops, 0);
  assert_true(info.max_trip == 1024 / 16);
  p[5] = 4096;
  assert_int_equal(ht_ptx_executed_counts(m, k, p, 6, NULL, &c2, &info), HT_OK);
  assert_int_equal(ht_ptx_static_counts(m, k, &st), HT_OK);
  assert_true(st.sync == 2 && c1.sync == 2 * 64 && c2.sync == 2 * 256);
  assert_true(c1.shared_read == 64 * 2 * st.shared_read); /* KWG/UNROLL = 2 inner trips */
  assert_true(c2.shared_read == 4 * c1.shared_read);
  assert_true(c1.global_write == st.global_write && c2.global_write == st.global_write); /* C once */
  assert_true(c1.total == sum(&c1) && c2.total == sum(&c2));
  ht_ptx_free(m);
}

/* nvcc's default unrolling: main loop over n & -4 (compared through remainder - n + k), then
 * a count-down remainder loop of n % 4 iterations, entered only when n % 4 != 0. */
static void test_unrolled_remainder(void **state) {
  (void)state;
  ht_ptx_module *m = parse_data("tests/data/ptx/unrolled.ptx");
  static const double ns[] = {100, 103, 1, 0};
  for (int i = 0; i < 4; i++) {
    double p[3] = {NAN, NAN, ns[i]};
    ht_ptx_counts c;
    ht_ptx_exec_info info;
    assert_int_equal(ht_ptx_executed_counts(m, 0, p, 3, NULL, &c, &info), HT_OK);
    assert_int_equal(info.loops, 2);
    assert_int_equal(info.unresolved_loops, 0);
    assert_true(c.global_read == ns[i]); /* exact: one load per k */
  }
  ht_ptx_free(m);
}

/* Call sequences, inline asm scopes with named registers, a texture fetch through a vector
 * inside a memory operand, .extern and .func declarations (nvcc output, tests/data/ptx/misc.cu). */
static void test_misc_constructs(void **state) {
  (void)state;
  ht_ptx_module *m = parse_data("tests/data/ptx/misc.ptx");
  assert_int_equal(ht_ptx_kernel_count(m), 1); /* the .func twice is not an entry */
  int k = ht_ptx_kernel_find(m, "misc");
  assert_int_equal(k, 0);
  ht_ptx_counts c;
  assert_int_equal(ht_ptx_static_counts(m, k, &c), HT_OK);
  assert_true(c.total == sum(&c));
  assert_true(c.global_read == 1);  /* tex */
  assert_true(c.global_write == 2); /* st.local (printf's argument buffer) + st.global */
  assert_true(c.shared_read == 1 && c.shared_write == 1 && c.sync == 1);
  int n = ht_ptx_instruction_count(m, k);
  int *u = malloc(sizeof(int) * (size_t)n);
  assert_int_equal(ht_ptx_dpc_vector(m, k, u, n), HT_OK);
  /* inline asm: setp.ne.u32 p (6th) -> selp reads the named predicate p (7th) */
  assert_int_equal(u[5], 7);
  free(u);
  ht_ptx_free(m);
}

/* eval_branches: branches decidable for thread 0 keep one side; loop-carried ones keep both. */
static void test_eval_branches(void **state) {
  (void)state;
  ht_ptx_exec_options o = {.default_trip = 1, .eval_branches = 1};
  ht_ptx_counts c;
  ht_ptx_exec_info info;
  ht_ptx_module *m = parse_data("tests/data/ptx/nn.ptx");
  double p[5] = {NAN, NAN, 1000, 0.5, 0.5};
  assert_int_equal(ht_ptx_executed_counts(m, 0, p, 5, &o, &c, &info), HT_OK);
  assert_true(c.total == 28 && info.decided_branches == 1); /* thread 0 < numRecords: the paper's path */
  p[2] = 0;
  assert_int_equal(ht_ptx_executed_counts(m, 0, p, 5, &o, &c, &info), HT_OK);
  assert_true(c.total == 14 && c.global_read == 0 && c.sfu == 0); /* guard taken: straight to ret */
  ht_ptx_free(m);

  m = parse_data("tests/data/ptx/gemm_local.ptx");
  double g[6] = {NAN, NAN, NAN, 1024, 1024, 1024};
  assert_int_equal(ht_ptx_executed_counts(m, 0, g, 6, &o, &c, &info), HT_OK);
  /* per k block, thread 0 loads 64*16/256 = 4 elements of each tile: the peeled remainder
   * iterations of nvcc's x4 unrolled tile loops are skipped, not counted once each */
  assert_true(c.global_read == 64 * 8 && c.shared_write == 64 * 8 && c.sync == 128);
  ht_ptx_free(m);

  m = parse_data("tests/data/ptx/loops.ptx");
  int k = ht_ptx_kernel_find(m, "nested");
  double q[4] = {NAN, NAN, 6, 0}; /* m = 0: the inner loop's guard (inside the outer loop, on a parameter) */
  assert_int_equal(ht_ptx_executed_counts(m, k, q, 4, &o, &c, &info), HT_OK);
  assert_true(c.global_read == 0 && c.sync == 6);
  ht_ptx_free(m);

  /* a branch on the induction register inside the loop stays undecided: both sides count */
  const char *text = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry e(.param .u32 e_param_0) {\n"
                     " .reg .b32 %r<5>; .reg .pred %p<3>;\n ld.param.u32 %r1, [e_param_0];\n mov.u32 %r2, 0;\n"
                     "L1:\n setp.eq.s32 %p2, %r2, 0;\n @%p2 bra SKIP;\n add.s32 %r3, %r3, 1;\n"
                     "SKIP:\n add.s32 %r2, %r2, 1;\n setp.lt.s32 %p1, %r2, %r1;\n @%p1 bra L1;\n ret;\n}\n";
  if (ht_ptx_parse(text, "e.ptx", &m)) fail_msg("%s", ht_last_error());
  double n = 10;
  assert_int_equal(ht_ptx_executed_counts(m, 0, &n, 1, &o, &c, &info), HT_OK);
  assert_int_equal(info.decided_branches, 0);
  assert_true(c.total == 2 + 6 * 10);
  ht_ptx_free(m);
}

static void expect_error(const char *text, const char *want) {
  ht_ptx_module *m = NULL;
  ht_status st = ht_ptx_parse(text, "bad.ptx", &m);
  assert_int_equal(st, HT_ERR_PARSE);
  assert_null(m);
  if (!strstr(ht_last_error(), want)) fail_msg("error '%s' lacks '%s'", ht_last_error(), want);
}

static void test_parse_errors(void **state) {
  (void)state;
  expect_error(".version 8.0\n.entry k() {\n  add.s32 %r1, %r2, 1\n}\n", "bad.ptx:4:1: expected ',' or ';'");
  expect_error(".entry k() {\n  ld.global.f32 %f1, [%rd1;\n}\n", "bad.ptx:2:27: expected ']'");
  expect_error(".entry k() {\n  mov.u32 %r1, 1;\n", "expected '}' before end of input");
  expect_error("/* never closed\n.entry k() {}", "bad.ptx:1:1: unterminated /* comment");
  expect_error("garbage\n", "bad.ptx:1:1: expected a directive");
  expect_error(".entry k() {\n L: mov.u32 %r1, 1;\n L: ret;\n}\n", "bad.ptx:3:4: duplicate label");
  expect_error(".entry k() {\n @ bra L;\n}\n", "bad.ptx:2:3: expected a predicate register");
  expect_error(".entry k() {\n mov.f32 %f1, 0f3F80;\n}\n", "expected 8 hex digits after 0f");
  expect_error(".entry k() {\n mov.u32 %r1, #;\n}\n", "bad.ptx:2:15: expected an operand");
  static char deep[200000] = ".entry k() {\n tex.1d.v4.f32.s32 {%f1}, [%rd2, ";
  size_t n = strlen(deep);
  for (int i = 0; i < 100000 - 100; i++) deep[n++] = '{';
  deep[n] = '\0';
  expect_error(deep, "nested too deeply"); /* not a stack overflow */
  ht_ptx_module *m;
  assert_int_equal(ht_ptx_parse("", "empty.ptx", &m), HT_OK); /* nothing is not an error */
  assert_int_equal(ht_ptx_kernel_count(m), 0);
  assert_int_equal(ht_ptx_kernel_find(m, "x"), -1);
  ht_ptx_free(m);
}

/* Thousands of truncations and byte mutations of real PTX: errors or results, never a crash
 * (run under ASan by the sanitizer build). */
static void test_fuzz(void **state) {
  (void)state;
  const char *files[] = {"tests/data/ptx/nn.ptx", "tests/data/ptx/loops.ptx", "", "tests/data/ptx/gemm_local.ptx",
                         "tests/data/ptx/misc.ptx"};
  static const char alphabet[] = "{}[]();,.@!%|+-_:/*\"\n 0123456789abcfdxLr$";
  ht_rng rng;
  ht_rng_seed(&rng, 42);
  int ok = 0, errors = 0;
  for (int f = 0; f < 5; f++) {
    char *orig = f == 2 ? strdup(snippet) : read_data(files[f]);
    size_t n = strlen(orig);
    int iters = getenv("HT_PTX_FUZZ_ITERS") ? atoi(getenv("HT_PTX_FUZZ_ITERS")) : f == 3 ? 500 : 2000; /* longer by hand */
    for (int it = 0; it < iters; it++) {
      char *t = malloc(n + 1);
      memcpy(t, orig, n + 1);
      size_t len = it % 3 == 0 ? (size_t)ht_rng_below(&rng, n + 1) : n; /* truncate */
      t[len] = '\0';
      if (it % 5 == 1 && len > 2) { /* cut a span out: unbalanced braces, lost labels */
        size_t a = (size_t)ht_rng_below(&rng, len), b = a + (size_t)ht_rng_below(&rng, len - a);
        memmove(t + a, t + b, len - b + 1);
        len -= b - a;
      }
      int muts = (int)ht_rng_below(&rng, 8);
      for (int j = 0; j < muts && len > 0; j++) {
        size_t at = (size_t)ht_rng_below(&rng, len);
        t[at] = ht_rng_below(&rng, 4) == 0 ? (char)(1 + ht_rng_below(&rng, 255)) : alphabet[ht_rng_below(&rng, sizeof alphabet - 1)];
      }
      ht_ptx_module *m = NULL;
      if (ht_ptx_parse(t, "fuzz.ptx", &m) == HT_OK) {
        ok++;
        for (int k = 0; k < ht_ptx_kernel_count(m); k++) {
          ht_ptx_features feat;
          double p[5] = {NAN, NAN, 100, 7, 3};
          ht_ptx_exec_options eo = {.default_trip = 3, .eval_branches = it & 1};
          if (ht_ptx_features_get(m, k, p, 5, &eo, &feat) == HT_OK) {
            assert_true(feat.static_counts.total == sum(&feat.static_counts));
            assert_true(fabs(feat.executed.total - sum(&feat.executed)) <= 1e-9 * (1 + feat.executed.total));
          }
        }
        ht_ptx_free(m);
      } else {
        errors++;
        assert_non_null(strstr(ht_last_error(), "fuzz.ptx:"));
      }
      free(t);
    }
    free(orig);
  }
  assert_true(ok > 0 && errors > 0); /* both paths exercised */
}

static void test_ptxas_log(void **state) {
  (void)state;
  const char *log = "ptxas info    : 0 bytes gmem\n"
                    "ptxas info    : Compiling entry function 'gemm' for 'sm_80'\n"
                    "ptxas info    : Function properties for gemm\n"
                    "    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
                    "ptxas info    : Used 48 registers, used 1 barriers, 8192 bytes smem, 380 bytes cmem[0]\n"
                    "ptxas info    : Compiling entry function '_Z1kv' for 'sm_80'\n"
                    "ptxas info    : Used 12 registers, 356 bytes cmem[0]\n";
  ht_ptx_resources r[4];
  assert_int_equal(ht_ptx_parse_ptxas_log(log, r, 4), 2);
  assert_string_equal(r[0].kernel, "gemm");
  assert_int_equal(r[0].registers, 48);
  assert_int_equal(r[0].shared_bytes, 8192);
  assert_int_equal(r[0].local_bytes, 16);
  assert_int_equal(r[0].spill_bytes, 12);
  assert_string_equal(r[1].kernel, "_Z1kv");
  assert_int_equal(r[1].registers, 12);
  assert_int_equal(r[1].shared_bytes, 0);
  ht_ptx_features f = {0};
  assert_int_equal(ht_ptx_features_set_resources(&f, r, 2, "gemm"), 0);
  assert_int_equal(f.shared_words, 2048);
  assert_int_equal(ht_ptx_features_set_resources(&f, r, 2, "nope"), -1);
  /* numbers past an int are ignored, not overflowed (sscanf %d and atoi are undefined there) */
  const char *huge = "ptxas info    : Compiling entry function 'big' for 'sm_90'\n"
                     "    99999999999999999999 bytes stack frame, 2147483647 bytes spill stores, 9 bytes spill loads\n"
                     "ptxas info    : Used 99999999999 registers, 2147483648 bytes smem\n";
  assert_int_equal(ht_ptx_parse_ptxas_log(huge, r, 4), 1);
  assert_int_equal(r[0].registers, 0);
  assert_int_equal(r[0].shared_bytes, 0);
  assert_int_equal(r[0].local_bytes, 0);
  assert_int_equal(r[0].spill_bytes, 0);
}

#define SKIP_WITHOUT_NVCC()                                   \
  do {                                                        \
    if (!ht_ptx_nvcc_path()) {                                \
      print_message("nvcc not found: skipping (set HETUNE_NVCC)\n"); \
      skip();                                                 \
    }                                                         \
  } while (0)

static void test_compile_nn(void **state) {
  (void)state;
  SKIP_WITHOUT_NVCC();
  char *src = read_data("tests/data/ptx/nn.cu");
  char *ptx = NULL;
  ht_ptx_resources r[8];
  int n = 0;
  for (int round = 0; round < 2; round++) { /* the second comes from the cache */
    if (ht_ptx_compile(src, "nn.cu", NULL, "sm_80", &ptx, r, 8, &n)) fail_msg("%s", ht_last_error());
    assert_int_equal(n, 1);
    assert_string_equal(r[0].kernel, "_Z6euclidP7LatLongPfiff");
    assert_true(r[0].registers > 0 && r[0].registers < 64);
    assert_int_equal(r[0].shared_bytes, 0);
    ht_ptx_module *m;
    if (ht_ptx_parse(ptx, "nn.ptx", &m)) fail_msg("%s", ht_last_error());
    ht_ptx_counts c;
    assert_int_equal(ht_ptx_static_counts(m, ht_ptx_kernel_find(m, "euclid"), &c), HT_OK);
    assert_true(c.global_read == 2 && c.global_write == 1 && c.sfu == 1);
    ht_ptx_free(m);
    free(ptx);
  }
  const char *bad = "__global__ void k() { undefined_thing(); }\n";
  assert_int_equal(ht_ptx_compile(bad, "bad.cu", NULL, "sm_80", &ptx, r, 8, &n), HT_ERR_COMPILE);
  assert_non_null(strstr(ht_last_error(), "bad.cu"));
  free(src);
}

/* The examples' kernels: Equation (1) holds, and gemm's k loop follows K/KWG. */
static void features_of(const char *rel, const char *const *defs, const char *kernel, const double *p, int np,
                        ht_ptx_features *f) {
  char *src = read_data(rel);
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", HT_SOURCE_DIR, rel);
  if (ht_ptx_features_from_source(src, path, defs, "sm_80", kernel, p, np, f)) fail_msg("%s", ht_last_error());
  free(src);
  assert_true(f->static_counts.total == sum(&f->static_counts));
  assert_true(fabs(f->executed.total - sum(&f->executed)) <= 1e-9 * f->executed.total);
  assert_true(f->registers > 0);
}

static void test_examples(void **state) {
  (void)state;
  SKIP_WITHOUT_NVCC();
  const char *const local[] = {"MWG=64", "NWG=64", "KWG=16", "WPTM=4", "WPTN=4", "VW=2", "STRN=0", "USE_LOCAL=1", "UNROLL=8", NULL};
  ht_ptx_features a, b, c;
  double p[6] = {NAN, NAN, NAN, 1024, 1024, 1024};
  features_of("examples/gemm/gemm.cu", local, "gemm", p, 6, &a);
  p[5] = 2048;
  features_of("examples/gemm/gemm.cu", local, "gemm", p, 6, &b);
  assert_int_equal(a.exec.unresolved_loops, 0);
  assert_true(a.executed.sync == 2 * 1024 / 16); /* two barriers per k block */
  assert_true(b.executed.sync == 2 * 2048 / 16);
  /* inner loop: KWG/UNROLL = 2 iterations of 8 unrolled steps reading 2 B + 4 A values */
  assert_true(a.executed.shared_read == (1024 / 16) * 16 * 2);
  assert_true(b.executed.shared_read == 2 * a.executed.shared_read);
  assert_int_equal(a.shared_words, (64 + 64) * 16);
  const char *const global[] = {"MWG=32", "NWG=32", "KWG=16", "WPTM=2", "WPTN=2", "VW=1", "STRN=0", "USE_LOCAL=0", "UNROLL=1", NULL};
  features_of("examples/gemm/gemm.cu", global, "gemm", p, 6, &c);
  assert_int_equal(c.exec.unresolved_loops, 0);
  assert_true(c.executed.global_read == 2048 * (2 + 2)); /* K iterations, 2 A + 2 B loads */
  assert_true(c.static_counts.shared_read == 0 && c.static_counts.sync == 0);
  const char *const vdefs[] = {"BLOCK=256", "WPT=4", NULL};
  double vp[4] = {NAN, NAN, NAN, 1 << 20};
  features_of("examples/vadd/vadd.cu", vdefs, "vadd", vp, 4, &a);
  assert_int_equal(a.exec.loops, 0); /* fully unrolled by nvcc */
  assert_true(a.static_counts.global_read == 8 && a.static_counts.global_write == 4);
  const char *const sdefs[] = {"TX=32", "TY=4", "WPTY=4", NULL};
  double sp[4] = {NAN, NAN, 2048, 2048};
  features_of("examples/stencil/stencil.cu", sdefs, "stencil", sp, 4, &a);
  assert_true(a.static_counts.global_write > 0 && a.static_counts.global_read > 0);
}


static void test_nvcc_missing(void **state) {
  (void)state;
  char *saved = getenv("HETUNE_NVCC") ? strdup(getenv("HETUNE_NVCC")) : NULL;
  setenv("HETUNE_NVCC", "/nonexistent/nvcc", 1);
  char *ptx = NULL;
  assert_null(ht_ptx_nvcc_path());
  assert_int_equal(ht_ptx_compile("__global__ void k() {}", "k.cu", NULL, NULL, &ptx, NULL, 0, NULL), HT_ERR_UNSUPPORTED);
  assert_non_null(strstr(ht_last_error(), "nvcc not found"));
  assert_null(ptx);
  if (saved) setenv("HETUNE_NVCC", saved, 1);
  else unsetenv("HETUNE_NVCC");
  free(saved);
}

/* Runs the CLI; returns its exit code, output (stdout + stderr) in out. */
static int run_cli(const char *args, char *out, size_t len) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "cd %s && %s ptx %s 2>&1", HT_SOURCE_DIR, HT_CLI, args);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  size_t n = fread(out, 1, len - 1, p);
  out[n] = '\0';
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_cli(void **state) {
  (void)state;
  char out[8192];
  if (access(HT_CLI, X_OK) != 0) {
    print_message("%s not built: skipping\n", HT_CLI);
    skip();
  }
  assert_int_equal(run_cli("tests/data/ptx/loops.ptx --kernel nested --param 2=3 --param 3=4 --json", out, sizeof out), 0);
  assert_non_null(strstr(out, "\"kernel\": \"nested\""));
  assert_non_null(strstr(out, "\"global_read\": 12,")); /* executed: 3 x 4 */
  assert_non_null(strstr(out, "\"unresolved_loops\": 0"));
  assert_int_equal(run_cli("tests/data/ptx/nn.ptx", out, sizeof out), 0);
  assert_non_null(strstr(out, "_Z6euclidP7LatLongPfiff"));
  assert_non_null(strstr(out, "dpc 0.5840"));
  assert_int_equal(run_cli("tests/data/ptx/missing.ptx", out, sizeof out), 1);
  assert_non_null(strstr(out, "missing.ptx"));
  assert_int_equal(run_cli("tests/data/ptx/nn.cu.missing --kernel x", out, sizeof out), 1);
  assert_int_equal(run_cli("tests/data/ptx/nn.ptx --kernel nosuch", out, sizeof out), 1);
  assert_non_null(strstr(out, "no kernel 'nosuch'"));
  assert_int_equal(run_cli("tests/data/ptx/nn.ptx --param x", out, sizeof out), 2);
  assert_int_equal(run_cli("tests/data/ptx/loops.cu.bad", out, sizeof out), 1);
  char bad[1024];
  snprintf(bad, sizeof bad, "%s/test-ptx-bad.ptx", HT_BINARY_DIR);
  FILE *f = fopen(bad, "w");
  assert_non_null(f);
  fputs(".version 8.0\n.entry k() {\n  mov.u32 %r1 1;\n}\n", f);
  fclose(f);
  char args[1100];
  snprintf(args, sizeof args, "%s", bad);
  assert_int_equal(run_cli(args, out, sizeof out), 1);
  assert_non_null(strstr(out, "test-ptx-bad.ptx:3:15: expected ',' or ';'"));
  assert_null(strchr(strchr(out, '\n') + 1, '\n')); /* one line */
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_dpc_golden),     cmocka_unit_test(test_nn_euclid),
    cmocka_unit_test(test_classes),        cmocka_unit_test(test_loop_param_bound),
    cmocka_unit_test(test_nested_and_constant_loops), cmocka_unit_test(test_countdown_loop),
    cmocka_unit_test(test_parse_errors),   cmocka_unit_test(test_fuzz),
    cmocka_unit_test(test_ptxas_log),      cmocka_unit_test(test_compile_nn),
    cmocka_unit_test(test_examples),       cmocka_unit_test(test_nvcc_missing),
    cmocka_unit_test(test_cli),            cmocka_unit_test(test_loop_shapes),
    cmocka_unit_test(test_gemm_trip_counts), cmocka_unit_test(test_unrolled_remainder),
    cmocka_unit_test(test_misc_constructs), cmocka_unit_test(test_eval_branches),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
