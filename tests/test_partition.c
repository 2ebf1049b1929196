/* The co-execution planner (001's Alg. 5.3, src/coexec/partition*.c) with PUs whose chunk times
 * are closures: linear, affine (a copy's latency plus bytes over a bandwidth), and a GPU whose
 * time per iteration is a sawtooth (whole waves of blocks); versions, energy, options, the
 * comparison with Boyer et al. (001 §5.3.1.1), and HGuided's chunk rule. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "hetune/coexec.h"

enum { MAX_V = 4 };

/* T = latency + per_iter * work + size * bytes_per_iter / bandwidth, with work = size rounded up
 * to whole waves of `wave` iterations (0: size itself). */
typedef struct pu_model {
  double per_iter, latency, bytes_per_iter, bandwidth;
  int64_t wave;
  int cannot_run;
} pu_model;

typedef struct pus {
  pu_model m[HT_COEXEC_MAX_PUS][MAX_V];
  int fixed[HT_COEXEC_MAX_PUS]; /* with use_fixed: the version each PU runs, whatever is asked */
  int use_fixed;
  int calls;
} pus;

static double model_time(const pu_model *m, int64_t size) {
  if (m->cannot_run) return NAN;
  int64_t work = m->wave ? (size + m->wave - 1) / m->wave * m->wave : size;
  double copy = m->bandwidth > 0 ? (double)size * m->bytes_per_iter / m->bandwidth : 0;
  return m->latency + m->per_iter * (double)work + copy;
}

static double pu_time(void *ctx, int pu, int version, int64_t lb, int64_t ub) {
  pus *p = ctx;
  p->calls++;
  return model_time(&p->m[pu][p->use_fixed ? p->fixed[pu] : version], ub - lb);
}

static pu_model linear(double per_iter) { return (pu_model){.per_iter = per_iter}; }

/* Chunks contiguous in PU order, covering [lb, ub) exactly; every used PU's time is its model's. */
static void check_cover(const ht_partition *r, int n, int64_t lb, int64_t ub) {
  assert_int_equal(r->n_pus, n);
  int64_t at = lb;
  for (int i = 0; i < n; i++) {
    assert_int_equal(r->lb[i], at);
    assert_true(r->ub[i] >= r->lb[i]);
    at = r->ub[i];
  }
  assert_int_equal(at, ub);
}

static void plan(pus *p, int n, int64_t lb, int64_t ub, const ht_partition_opts *o, ht_partition *r) {
  if (ht_partition_plan(n, lb, ub, pu_time, p, o, r)) fail_msg("%s", ht_last_error());
  check_cover(r, n, lb, ub);
}

static int64_t size_of(const ht_partition *r, int i) { return r->ub[i] - r->lb[i]; }

/* C8 test 1: rates 1 : 3 give sizes 1 : 3 and a makespan within 1% of total / (r0 + r1). */
static void test_linear_one_to_three(void **state) {
  (void)state;
  pus p = {.m = {{linear(3e-9)}, {linear(1e-9)}}};
  ht_partition r;
  plan(&p, 2, 0, 1000000, NULL, &r);
  assert_true(fabs((double)size_of(&r, 1) / (double)size_of(&r, 0) - 3) < 0.03);
  double optimal = 1e6 / (1 / 3e-9 + 1 / 1e-9);
  assert_true(r.makespan_s <= 1.01 * optimal);
  assert_true(r.steps <= 15 && r.best_step >= 1 && r.best_step <= r.steps);
  assert_int_equal(r.combinations, 1);
  assert_true(isnan(r.energy_j));
  assert_true(r.plan_us > 0);
}

/* C8 test 2 (Fig 5.12b, gesummv): a PU 12x slower gets 1/13 < 10% of the largest chunk at step 1
 * and is dropped there; with eliminate < 0 it keeps its chunk. */
static void test_slow_pu_eliminated_at_step_one(void **state) {
  (void)state;
  pus p = {.m = {{linear(1e-9)}, {linear(12e-9)}}};
  ht_partition r;
  plan(&p, 2, 0, 500000, NULL, &r);
  assert_int_equal(r.eliminated_at[1], 1);
  assert_int_equal(r.eliminated_at[0], 0);
  assert_int_equal(size_of(&r, 0), 500000);
  assert_int_equal(size_of(&r, 1), 0);
  assert_true(r.time_s[1] == 0 && fabs(r.makespan_s - 500000 * 1e-9) < 1e-12);
  ht_partition_opts keep = {.eliminate = -1};
  plan(&p, 2, 0, 500000, &keep, &r);
  assert_int_equal(r.eliminated_at[1], 0);
  assert_true(size_of(&r, 1) > 0);
  assert_true(r.makespan_s < 500000 * 1e-9);
}

/* A GEMM-like pair (Fig 5.12a): CPU at 1 ns per iteration, GPU 8x faster behind a copy of
 * 20 us + 0.05 bytes per iteration (a row of A per 1024 iterations) at 12 GB/s; converges in at most 6 steps. */
static pus gemm_like(void) {
  pus p = {0};
  p.m[0][0] = linear(1e-9);
  p.m[1][0] = (pu_model){.per_iter = 1.25e-10, .latency = 2e-5, .bytes_per_iter = 0.05, .bandwidth = 12e9};
  return p;
}

static void test_gemm_like_converges_in_six_steps(void **state) {
  (void)state;
  pus p = gemm_like();
  ht_partition r;
  plan(&p, 2, 0, 4000000, NULL, &r);
  assert_true(r.steps <= 6);
  assert_true(size_of(&r, 1) > 2 * size_of(&r, 0)); /* the GPU takes far more for about the same time */
  assert_true(fabs(r.time_s[0] - r.time_s[1]) / r.makespan_s < 0.04);
}

static double brute_force_two(pus *p, int64_t total) {
  double best = INFINITY;
  for (int64_t s = 0; s <= total; s++) {
    double t0 = s ? pu_time(p, 0, 0, 0, s) : 0, t1 = s < total ? pu_time(p, 1, 0, s, total) : 0;
    best = fmin(best, fmax(t0, t1));
  }
  return best;
}

/* C8 test 3: a GPU whose time per iteration is a sawtooth (whole waves of 4096 iterations) plus
 * an affine copy, beside a linear CPU: within 5% of the best split over every split point. */
static void test_sawtooth_within_five_percent_of_brute_force(void **state) {
  (void)state;
  pus p = {0};
  p.m[0][0] = linear(2e-9);
  p.m[1][0] = (pu_model){.per_iter = 2.5e-10, .latency = 1e-5, .bytes_per_iter = 16, .bandwidth = 10e9, .wave = 4096};
  const int64_t total = 300000;
  double best = brute_force_two(&p, total);
  ht_partition r;
  plan(&p, 2, 0, total, NULL, &r);
  assert_true(r.makespan_s <= 1.05 * best);
  ht_partition_opts refine = {.refine = 1};
  ht_partition rr;
  plan(&p, 2, 0, total, &refine, &rr);
  assert_true(rr.makespan_s <= r.makespan_s && rr.makespan_s <= 1.05 * best);
}

/* C8 test 4: the rounding leftover goes to remainder_pu (PU 0 by default, 001's CPU). */
static void test_remainder_goes_to_chosen_pu(void **state) {
  (void)state;
  pus p = {.m = {{linear(1e-9)}, {linear(1e-9)}, {linear(1e-9)}}};
  ht_partition r;
  ht_partition_opts o = {.remainder_pu = 2};
  plan(&p, 3, 0, 100, &o, &r);
  assert_int_equal(size_of(&r, 0), 33);
  assert_int_equal(size_of(&r, 1), 33);
  assert_int_equal(size_of(&r, 2), 34);
  plan(&p, 3, 0, 100, NULL, &r);
  assert_int_equal(size_of(&r, 0), 34);
  /* largest: PU 1 (twice as fast) has the largest chunk, and takes the leftover */
  p.m[1][0] = linear(0.5e-9);
  o.remainder_pu = -1;
  plan(&p, 3, 0, 101, &o, &r);
  assert_int_equal(size_of(&r, 0), 25);
  assert_int_equal(size_of(&r, 1), 51);
  assert_int_equal(size_of(&r, 2), 25);
  /* a remainder PU that was dropped passes the leftover to the largest chunk (the first of equals) */
  p.m[1][0] = linear(12e-9);
  o.remainder_pu = 1;
  plan(&p, 3, 0, 1001, &o, &r);
  assert_int_equal(r.eliminated_at[1], 1);
  assert_int_equal(size_of(&r, 0), 501);
  assert_int_equal(size_of(&r, 2), 500);
}

/* Inner bounds are lb + multiples of the granularity; only the range's end is not. */
static void test_granularity(void **state) {
  (void)state;
  pus p = {.m = {{linear(1e-9)}, {linear(0.3e-9)}, {linear(0.7e-9)}}};
  ht_partition_opts o = {.granularity = 64};
  ht_partition r;
  const int64_t lb = 5, ub = 5 + 64 * 150 + 37;
  plan(&p, 3, lb, ub, &o, &r);
  for (int i = 0; i < 3; i++) {
    assert_true(size_of(&r, i) > 0);
    assert_int_equal((r.lb[i] - lb) % 64, 0);
    if (r.ub[i] != ub) assert_int_equal((r.ub[i] - lb) % 64, 0);
  }
  /* fewer granules than PUs: some PUs get none, the cover stays exact */
  plan(&p, 3, 0, 100, &o, &r);
  for (int i = 0; i < 3; i++)
    if (r.ub[i] != 100) assert_int_equal(r.ub[i] % 64, 0);
}

/* C8 test 5: equal rates, 64 W against 365 W: iterations per watt 64/365 = 0.18 of the best, so
 * the 365 W PU goes under eliminate_energy = 0.25 and stays under the time rule alone. */
static void test_energy_elimination(void **state) {
  (void)state;
  pus p = {.m = {{linear(1e-9)}, {linear(1e-9)}}};
  const double watts[2] = {64, 365};
  ht_partition_opts o = {.power_w = watts};
  ht_partition r;
  plan(&p, 2, 0, 1000000, &o, &r);
  assert_true(size_of(&r, 0) == 500000 && size_of(&r, 1) == 500000);
  assert_true(fabs(r.energy_j - (64 + 365) * 5e-4) < 1e-9);
  o.eliminate_energy = 0.25;
  plan(&p, 2, 0, 1000000, &o, &r);
  assert_int_equal(r.eliminated_at[1], 1);
  assert_int_equal(size_of(&r, 0), 1000000);
  assert_true(fabs(r.energy_j - 64 * 1e-3) < 1e-9);
}

/* C8 test 6: dropping a PU does not always save energy: the remaining PU runs twice as long while
 * the dropped one waits at idle power. `recursive` compares and keeps the lower E. */
static void test_recursive_keeps_lower_energy(void **state) {
  (void)state;
  pus p = {.m = {{linear(1e-9)}, {linear(1e-9)}}};
  const double watts[2] = {64, 100};
  ht_partition_opts o = {.power_w = watts, .eliminate_energy = 0.7, .idle_power_w = 30};
  ht_partition plain, rec;
  plan(&p, 2, 0, 1000000, &o, &plain);
  assert_int_equal(plain.eliminated_at[1], 1);
  assert_true(fabs(plain.energy_j - (64 + 30) * 1e-3) < 1e-9); /* 94 mJ */
  o.recursive = 1;
  plan(&p, 2, 0, 1000000, &o, &rec);
  assert_true(size_of(&rec, 1) > 0);
  assert_true(fabs(rec.energy_j - (64 + 100) * 5e-4) < 1e-9); /* 82 mJ */
  /* without idle power, dropping the expensive PU is the lower energy: recursive drops it too */
  o.idle_power_w = 0;
  plan(&p, 2, 0, 1000000, &o, &rec);
  assert_int_equal(size_of(&rec, 1), 0);
  assert_true(fabs(rec.energy_j - 64e-3) < 1e-9);
}

/* C5: 3 x 3 versions; the best pair is not each PU's fastest alone: the GPU's version 2 computes
 * fastest but pays a large latency, which a co-executed chunk cannot amortise. */
static void test_version_pairs(void **state) {
  (void)state;
  pus p = {0};
  p.m[0][0] = linear(2e-9), p.m[0][1] = linear(1.5e-9), p.m[0][2] = linear(3e-9);
  p.m[1][0] = (pu_model){.per_iter = 4e-10, .latency = 1e-5};
  p.m[1][1] = (pu_model){.per_iter = 3e-10, .latency = 2e-5};
  p.m[1][2] = (pu_model){.per_iter = 1e-10, .latency = 3e-4};
  const int nv[2] = {3, 3};
  ht_partition_opts o = {.n_versions = nv};
  ht_partition r, one;
  plan(&p, 2, 0, 1000000, &o, &r);
  assert_int_equal(r.combinations, 9);
  double best = INFINITY;
  int bv[2] = {-1, -1};
  p.use_fixed = 1;
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 3; b++) {
      p.fixed[0] = a, p.fixed[1] = b;
      plan(&p, 2, 0, 1000000, NULL, &one);
      if (one.makespan_s < best) best = one.makespan_s, bv[0] = a, bv[1] = b;
    }
  assert_int_equal(bv[0], 1);
  assert_int_equal(bv[1], 1);
  assert_int_equal(r.version[0], 1);
  assert_int_equal(r.version[1], 1);
  assert_true(fabs(r.makespan_s - best) < 1e-12);
}

/* 3^4 = 81 > 64 combinations: greedy descent, within 1% of the exhaustive best. */
static void test_greedy_beyond_64(void **state) {
  (void)state;
  pus p = {0};
  for (int i = 0; i < 4; i++)
    for (int v = 0; v < 3; v++)
      p.m[i][v] = (pu_model){.per_iter = 1e-9 * (1 + 0.5 * i) * (1 + 0.3 * ((v + i) % 3)), .latency = 1e-5 * v * v};
  const int nv[4] = {3, 3, 3, 3};
  ht_partition_opts o = {.n_versions = nv};
  ht_partition r, one;
  plan(&p, 4, 0, 2000000, &o, &r);
  assert_true(r.combinations > 1 && r.combinations < 81);
  double best = INFINITY;
  p.use_fixed = 1;
  for (int c = 0; c < 81; c++) {
    for (int i = 0, k = c; i < 4; i++, k /= 3) p.fixed[i] = k % 3;
    plan(&p, 4, 0, 2000000, NULL, &one);
    best = fmin(best, one.makespan_s);
  }
  assert_true(r.makespan_s <= 1.01 * best);
}

/* A PU whose time function says it cannot run leaves (eliminated_at -1); the others share. */
static void test_pu_that_cannot_run(void **state) {
  (void)state;
  pus p = {.m = {{linear(1e-9)}, {{.cannot_run = 1}}, {linear(1e-9)}}};
  ht_partition r;
  plan(&p, 3, 0, 1000, NULL, &r);
  assert_int_equal(r.eliminated_at[1], -1);
  assert_int_equal(size_of(&r, 1), 0);
  assert_int_equal(size_of(&r, 0), 500);
  assert_int_equal(size_of(&r, 2), 500);
}

static void test_empty_range(void **state) {
  (void)state;
  pus p = {.m = {{linear(1e-9)}, {linear(1e-9)}}};
  ht_partition r;
  plan(&p, 2, 7, 7, NULL, &r);
  assert_true(r.makespan_s == 0);
  assert_int_equal(p.calls, 0);
}

static void expect_invalid(int n, int64_t lb, int64_t ub, pus *p, const ht_partition_opts *o, const char *what) {
  ht_partition r;
  assert_int_equal(ht_partition_plan(n, lb, ub, pu_time, p, o, &r), HT_ERR_INVALID);
  if (!strstr(ht_last_error(), what)) fail_msg("expected '%s' in: %s", what, ht_last_error());
}

static void test_bad_input(void **state) {
  (void)state;
  pus p = {.m = {{linear(1e-9)}, {linear(1e-9)}}};
  expect_invalid(0, 0, 10, &p, NULL, "n_pus 0");
  expect_invalid(HT_COEXEC_MAX_PUS + 1, 0, 10, &p, NULL, "n_pus 17");
  expect_invalid(2, 10, 5, &p, NULL, "ub is below lb");
  expect_invalid(2, INT64_MIN, INT64_MAX, &p, NULL, "at most 2^53");
  assert_int_equal(ht_partition_plan(2, 0, 10, NULL, &p, NULL, &(ht_partition){0}), HT_ERR_INVALID);
  expect_invalid(2, 0, 10, &p, &(ht_partition_opts){.converge = -1}, "converge");
  expect_invalid(2, 0, 10, &p, &(ht_partition_opts){.granularity = -2}, "granularity");
  expect_invalid(2, 0, 10, &p, &(ht_partition_opts){.remainder_pu = 2}, "remainder_pu");
  expect_invalid(2, 0, 10, &p, &(ht_partition_opts){.eliminate = 1.5}, "eliminate");
  expect_invalid(2, 0, 10, &p, &(ht_partition_opts){.max_steps = -1}, "max_steps");
  expect_invalid(2, 0, 10, &p, &(ht_partition_opts){.n_versions = (const int[]){1, 0}}, "n_versions[1]");
  expect_invalid(2, 0, 10, &p, &(ht_partition_opts){.power_w = (const double[]){5, -1}}, "power_w[1]");
  expect_invalid(2, 0, 10, &p, &(ht_partition_opts){.eliminate_energy = 0.3}, "need power_w");
  expect_invalid(2, 0, 10, &p, &(ht_partition_opts){.recursive = 1}, "need power_w");
  expect_invalid(2, 0, 10, &p, &(ht_partition_opts){.refine = 2}, "refine");
  p.m[0][0].cannot_run = p.m[1][0].cannot_run = 1;
  expect_invalid(2, 0, 10, &p, NULL, "no PU can run");
}

static void test_options_text(void **state) {
  (void)state;
  ht_partition_opts o = {0};
  assert_int_equal(ht_partition_opts_parse("steps=9,eliminate=0.2,converge=0.01,granularity=64,remainder=largest,"
                                           "energy=0.25,idle_power=5,recursive=1,refine=1",
                                           &o),
                   HT_OK);
  assert_int_equal(o.max_steps, 9);
  assert_true(o.eliminate == 0.2 && o.converge == 0.01 && o.eliminate_energy == 0.25 && o.idle_power_w == 5);
  assert_int_equal(o.granularity, 64);
  assert_int_equal(o.remainder_pu, -1);
  assert_true(o.recursive == 1 && o.refine == 1);
  assert_int_equal(ht_partition_opts_parse("remainder=3", &o), HT_OK);
  assert_int_equal(o.remainder_pu, 3);
  assert_int_equal(o.max_steps, 9); /* keys not given stay */
  ht_partition_opts before = o;
  assert_int_equal(ht_partition_opts_parse("stepz=3", &o), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "did you mean 'steps'"));
  assert_int_equal(ht_partition_opts_parse("steps=abc", &o), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "steps=abc"));
  assert_int_equal(ht_partition_opts_parse("remainder=cpu", &o), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "remainder=cpu"));
  assert_int_equal(ht_partition_opts_parse("converge=2", &o), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "converge"));
  assert_int_equal(ht_partition_opts_parse("bogus=1", &o), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "known:"));
  assert_memory_equal(&o, &before, sizeof o); /* a failed parse changes nothing */
}

/* 001 §5.3.1.1: gemm 512x512x1024 in 32x16 blocks (512 x 1024 iterations each), two PUs. After
 * Boyer et al.'s growing training chunks, the B_rem = 251 remaining blocks are split inversely to
 * the predicted times of the PUs' pending work: PU 0 an even half of B_rem at its reference rate,
 * PU 1 its B_PU1 + B_ref0 blocks at its rate (the reading of the thesis's arithmetic that gives
 * both of its printed figures). */
enum { B_ALL = 512, B_REM = 251 };
static const double ITER_PER_BLOCK = 512.0 * 1024, E_REF1 = 0.061345e-9;

static double boyer_share0(double e0, double e1) {
  int b_ref0 = (int)ceil(0.07 * 1.5 * B_ALL), b_pu1 = b_ref0 * 3 / 2;
  double t0 = e0 * ITER_PER_BLOCK * B_REM / 2, t1 = e1 * ITER_PER_BLOCK * (b_pu1 + b_ref0);
  return t1 / (t0 + t1);
}

/* PU 1 owes the blocks Boyer's arithmetic charges it beyond an even half of B_rem */
static double boyer_time(void *ctx, int pu, int version, int64_t lb, int64_t ub) {
  (void)ctx, (void)version;
  double owed = 54 + 81 - B_REM / 2.0;
  return pu == 0 ? 0.052e-9 * ITER_PER_BLOCK * (double)(ub - lb) : E_REF1 * ITER_PER_BLOCK * ((double)(ub - lb) + owed);
}

static void test_boyer_comparison(void **state) {
  (void)state;
  assert_int_equal((int)ceil(0.07 * 1.5 * B_ALL), 54);
  double s0 = boyer_share0(0.063616e-9, E_REF1);
  assert_true(fabs(100 * s0 - 50.92) < 0.01);
  assert_true(fabs(100 * (1 - s0) - 49.08) < 0.01);
  /* with PU 0's true 0.052 ns per iteration the right split is 56% / 44% */
  assert_true(fabs(100 * boyer_share0(0.052e-9, E_REF1) - 56) < 0.5);
  /* Alg. 5.3 fed the true times: its first step from even halves is the same division, and it
   * converges to the same 56% / 44% (to the printed precision) */
  ht_partition r;
  ht_partition_opts one = {.max_steps = 1};
  assert_int_equal(ht_partition_plan(2, 0, B_REM, boyer_time, NULL, &one, &r), HT_OK);
  assert_true(fabs((double)r.ub[0] - boyer_share0(0.052e-9, E_REF1) * B_REM) <= 1); /* + the leftover block */
  assert_int_equal(ht_partition_plan(2, 0, B_REM, boyer_time, NULL, NULL, &r), HT_OK);
  assert_true(fabs(100.0 * (double)r.ub[0] / B_REM - 56) < 0.5);
}

/* HGuided: chunks shrink as work runs out, never below the minimum nor above what remains. */
static void test_hguided_chunks(void **state) {
  (void)state;
  int64_t remaining = 100000, prev = INT64_MAX, n = 0;
  while (remaining > 0) {
    int64_t c = ht_hguided_chunk(remaining, 3, 4, 2, 64);
    assert_true(c <= prev && c >= 1 && c <= remaining);
    if (c < remaining) assert_true(c >= 64);
    prev = c, remaining -= c, n++;
  }
  assert_int_equal(ht_hguided_chunk(100000, 3, 4, 0, 1), 37500); /* k 0 means 2: 100000 * 3 / 8 */
  assert_int_equal(ht_hguided_chunk(100, 1, 1000, 2, 32), 32);   /* the minimum */
  assert_int_equal(ht_hguided_chunk(20, 1, 1, 2, 32), 20);       /* what remains */
  assert_int_equal(ht_hguided_chunk(0, 1, 1, 2, 32), 0);
  assert_true(n > 10);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_linear_one_to_three),
      cmocka_unit_test(test_slow_pu_eliminated_at_step_one),
      cmocka_unit_test(test_gemm_like_converges_in_six_steps),
      cmocka_unit_test(test_sawtooth_within_five_percent_of_brute_force),
      cmocka_unit_test(test_remainder_goes_to_chosen_pu),
      cmocka_unit_test(test_granularity),
      cmocka_unit_test(test_energy_elimination),
      cmocka_unit_test(test_recursive_keeps_lower_energy),
      cmocka_unit_test(test_version_pairs),
      cmocka_unit_test(test_greedy_beyond_64),
      cmocka_unit_test(test_pu_that_cannot_run),
      cmocka_unit_test(test_empty_range),
      cmocka_unit_test(test_bad_input),
      cmocka_unit_test(test_options_text),
      cmocka_unit_test(test_boyer_comparison),
      cmocka_unit_test(test_hguided_chunks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
