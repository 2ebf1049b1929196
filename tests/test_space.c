/* Search spaces: enumeration against brute force, sampling, neighbours, text form, T1 loading. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetune/space.h"

#ifdef HT_BINARY_DIR
#define HT_BINARY_DIR_OR_TMP HT_BINARY_DIR
#else
#define HT_BINARY_DIR_OR_TMP "/tmp"
#endif

static ht_space *new_space(void) {
  ht_space *s;
  assert_int_equal(ht_space_create(&s), HT_OK);
  return s;
}

static void add_ints(ht_space *s, const char *name, const int64_t *v, int n) {
  ht_value vals[64];
  for (int i = 0; i < n; i++) vals[i] = ht_int(v[i]);
  if (ht_space_add_param(s, name, vals, n)) fail_msg("add %s: %s", name, ht_last_error());
}

static void add_constraint(ht_space *s, const char *text) {
  if (ht_space_add_constraint(s, text)) fail_msg("constraint %s: %s", text, ht_last_error());
}

static uint64_t count_of(ht_space *s) {
  uint64_t n;
  assert_int_equal(ht_space_count(s, &n), HT_OK);
  return n;
}

static void test_build_errors(void **state) {
  (void)state;
  ht_space *s = new_space();
  int64_t v[] = {1, 2, 4};
  add_ints(s, "TX", v, 3);
  ht_value vals[3] = {ht_int(1), ht_float(2.0), ht_int(2)};
  assert_int_equal(ht_space_add_param(s, "TX", vals, 1), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "duplicate parameter 'TX'"));
  assert_int_equal(ht_space_add_param(s, "TY", vals, 0), HT_ERR_INVALID);
  assert_int_equal(ht_space_add_param(s, "TY", vals, 3), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "duplicate value 2"));
  assert_int_equal(ht_space_add_param_range(s, "TY", 1, 64, 0), HT_OK);
  assert_int_equal(ht_space_value_count(s, 1), 7);
  assert_int_equal(ht_space_value(s, 1, 6).u.i, 64);
  assert_int_equal(ht_space_add_param_range(s, "TZ", 0, 10, 5), HT_OK);
  assert_int_equal(ht_space_value_count(s, 2), 3);
  assert_int_equal(ht_space_cartesian_size(s), 3 * 7 * 3);
  assert_int_equal(ht_space_param_index(s, "TZ"), 2);
  assert_int_equal(ht_space_param_index(s, "nope"), -1);
  assert_int_equal(ht_space_add_constraint(s, "TX * TQ < 4"), HT_ERR_PARSE);
  assert_non_null(strstr(ht_last_error(), "unknown name 'TQ'"));
  assert_int_equal(ht_space_add_constraint(s, "TX * < 4"), HT_ERR_PARSE);
  assert_non_null(strstr(ht_last_error(), "column 6"));
  assert_int_equal(ht_space_constraint_count(s), 0);
  assert_int_equal(ht_space_set_constant(s, "TX", ht_int(1)), HT_ERR_INVALID);
  char name[16];
  for (int p = 3; p < HT_MAX_PARAMS; p++) {
    snprintf(name, sizeof name, "p%d", p);
    assert_int_equal(ht_space_add_param(s, name, vals, 1), HT_OK);
  }
  assert_int_equal(ht_space_add_param(s, "one_too_many", vals, 1), HT_ERR_INVALID);
  ht_space_destroy(s);
}

/* ---- brute force reference ---- */
typedef struct collect {
  ht_config *c;
  int n, cap;
} collect;

static int collect_visit(const ht_config *c, void *ctx) {
  collect *col = ctx;
  if (col->n < col->cap) col->c[col->n] = *c;
  col->n++;
  return 0;
}

/* Valid configs by walking the Cartesian product and evaluating every constraint on full
 * bindings: independent of the enumerator's pruning. */
static int brute_force(ht_space *s, const char **cons, int n_cons, const char **cnames, const ht_value *cvals,
                       int n_const, ht_config *out, int cap) {
  int P = ht_space_param_count(s), n = 0;
  const char *names[HT_MAX_PARAMS + 8];
  ht_value vars[HT_MAX_PARAMS + 8];
  for (int p = 0; p < P; p++) names[p] = ht_space_param_name(s, p);
  for (int c = 0; c < n_const; c++) {
    names[P + c] = cnames[c];
    vars[P + c] = cvals[c];
  }
  ht_config c = {.n = P};
  uint64_t total = ht_space_cartesian_size(s);
  for (uint64_t k = 0; k < total; k++) {
    uint64_t r = k;
    for (int p = P - 1; p >= 0; p--) {
      int nv = ht_space_value_count(s, p);
      c.idx[p] = (int32_t)(r % (uint64_t)nv);
      r /= (uint64_t)nv;
    }
    ht_config_values(s, &c, vars);
    int ok = 1;
    for (int i = 0; i < n_cons && ok; i++) {
      ht_value v;
      if (ht_expr_evaluate(cons[i], names, vars, P + n_const, &v) || v.kind == HT_VAL_STR ||
          ht_value_as_double(v) == 0)
        ok = 0;
    }
    if (ok) {
      if (n < cap) out[n] = c;
      n++;
    }
  }
  return n;
}

static void test_random_spaces_vs_brute_force(void **state) {
  (void)state;
  static const char *templates[] = {"%s * %s <= 12", "%s + %s > 5", "%s %% %s == 0", "%s != %s",
                                    "ceil_div(%s, 3) < %s", "%s // 2 == %s // 3 or %s > N", "%s - %s < N",
                                    "%s < N", "%s >= 2 and %s < 5", "N > 3"};
  int n_templates = (int)(sizeof templates / sizeof templates[0]);
  ht_rng rng;
  ht_rng_seed(&rng, 7);
  ht_config *a = malloc(20000 * sizeof *a), *b = malloc(20000 * sizeof *b);
  for (int iter = 0; iter < 300; iter++) {
    ht_space *s = new_space();
    const char *cnames[1] = {"N"};
    ht_value cvals[1] = {ht_int((int64_t)ht_rng_below(&rng, 8))};
    assert_int_equal(ht_space_set_constant(s, "N", cvals[0]), HT_OK);
    int P = 1 + (int)ht_rng_below(&rng, 5);
    char name[16];
    for (int p = 0; p < P; p++) {
      int64_t v[8];
      int nv = 1 + (int)ht_rng_below(&rng, 6);
      for (int k = 0; k < nv; k++) v[k] = k * 2 + (int64_t)ht_rng_below(&rng, 2) - 1; /* distinct, may be 0 */
      snprintf(name, sizeof name, "p%d", p);
      add_ints(s, name, v, nv);
    }
    char cons[6][96];
    const char *cptr[6];
    int n_cons = (int)ht_rng_below(&rng, 6);
    for (int i = 0; i < n_cons; i++) {
      char x[16], y[16];
      snprintf(x, sizeof x, "p%d", (int)ht_rng_below(&rng, (uint64_t)P));
      snprintf(y, sizeof y, "p%d", (int)ht_rng_below(&rng, (uint64_t)P));
      snprintf(cons[i], sizeof cons[i], templates[ht_rng_below(&rng, (uint64_t)n_templates)], x, y, x);
      cptr[i] = cons[i];
      add_constraint(s, cons[i]);
    }
    int want = brute_force(s, cptr, n_cons, cnames, cvals, 1, a, 20000);
    assert_int_equal(count_of(s), (uint64_t)want);
    collect col = {b, 0, 20000};
    assert_int_equal(ht_space_enumerate(s, collect_visit, &col), HT_OK);
    assert_int_equal(col.n, want);
    for (int k = 0; k < want; k++) {
      assert_true(ht_config_equal(&a[k], &b[k]));
      assert_true(ht_space_is_valid(s, &a[k]));
      ht_config g;
      assert_int_equal(ht_space_get(s, (uint64_t)k, &g), HT_OK);
      assert_true(ht_config_equal(&g, &a[k]));
    }
    ht_config g;
    assert_int_equal(ht_space_get(s, (uint64_t)want, &g), HT_ERR_NOTFOUND);
    /* The cursor walks the same configs in the same order, interleaved with validity checks. */
    ht_space_cursor cur = {0};
    int found = 1, k = 0;
    for (; ht_space_next(s, &cur, &g, &found) == HT_OK && found; k++) {
      assert_true(k < want);
      assert_true(ht_config_equal(&g, &a[k]));
      assert_true(ht_space_is_valid(s, &a[(k * 7) % want]));
    }
    assert_int_equal(k, want);
    /* Changing a constant drops the cache. */
    cvals[0] = ht_int(cvals[0].u.i + 3);
    assert_int_equal(ht_space_set_constant(s, "N", cvals[0]), HT_OK);
    want = brute_force(s, cptr, n_cons, cnames, cvals, 1, a, 20000);
    assert_int_equal(count_of(s), (uint64_t)want);
    ht_space_destroy(s);
  }
  free(a);
  free(b);
}

/* 8 parameters x 10 values = 1e8 configs; pairwise constraints leave about 1e5. */
static const char *big_constraints[] = {"p0 * p1 <= 12", "p2 + p3 <= 7", "p4 % 2 == 0 and p5 < 4",
                                        "p6 <= p7 and p6 + p7 <= 8", "p1 != p3 or p0 > 1"};

static ht_space *big_space(void) {
  ht_space *s = new_space();
  int64_t v[10];
  char name[16];
  for (int k = 0; k < 10; k++) v[k] = k + 1;
  for (int p = 0; p < 8; p++) {
    snprintf(name, sizeof name, "p%d", p);
    add_ints(s, name, v, 10);
  }
  for (size_t i = 0; i < sizeof big_constraints / sizeof big_constraints[0]; i++) add_constraint(s, big_constraints[i]);
  return s;
}

static int big_ok(const int *p) {
  return p[0] * p[1] <= 12 && p[2] + p[3] <= 7 && (p[4] % 2 == 0 && p[5] < 4) && p[6] <= p[7] && p[6] + p[7] <= 8 &&
         (p[1] != p[3] || p[0] > 1);
}

static void test_big_space_count(void **state) {
  (void)state;
  uint64_t want = 0;
  int p[8];
  for (p[0] = 1; p[0] <= 10; p[0]++)
    for (p[1] = 1; p[1] <= 10; p[1]++)
      for (p[2] = 1; p[2] <= 10; p[2]++)
        for (p[3] = 1; p[3] <= 10; p[3]++)
          for (p[4] = 1; p[4] <= 10; p[4]++)
            for (p[5] = 1; p[5] <= 10; p[5]++)
              for (p[6] = 1; p[6] <= 10; p[6]++)
                for (p[7] = 1; p[7] <= 10; p[7]++) want += (uint64_t)big_ok(p);
  ht_space *s = big_space();
  assert_int_equal(ht_space_cartesian_size(s), 100000000);
  assert_true(want > 50000 && want < 500000);
  assert_int_equal(count_of(s), want);
  assert_int_equal(count_of(s), want); /* cached */
  ht_config c;
  assert_int_equal(ht_space_get(s, want - 1, &c), HT_OK);
  assert_true(ht_space_is_valid(s, &c));
  ht_space_destroy(s);
}

static void check_sample(ht_space *s, ht_rng *rng, int n, int want_got) {
  ht_config out[512];
  int got = -1;
  assert_true(n <= 512);
  assert_int_equal(ht_space_sample(s, rng, n, out, &got), HT_OK);
  assert_int_equal(got, want_got);
  for (int i = 0; i < got; i++) {
    assert_true(ht_space_is_valid(s, &out[i]));
    for (int j = 0; j < i; j++) assert_false(ht_config_equal(&out[i], &out[j]));
  }
}

/* Three 4096-value ranges (6.9e10 configs, a seventh valid): ht_space_size gives up counting within
 * its step budget and estimates; tuning starts at once from such an estimate. A small space is
 * counted exactly; counting with a progress callback can be stopped. */
static int stop_at_once(double done, uint64_t valid, void *ctx) {
  (void)valid;
  *(double *)ctx = done;
  return 1;
}

static void test_huge_space_size(void **state) {
  (void)state;
  ht_space *s = new_space();
  for (int p = 0; p < 3; p++) {
    char name[8];
    snprintf(name, sizeof name, "%c", 'A' + p);
    assert_int_equal(ht_space_add_param_range(s, name, 1, 4096, 1), HT_OK);
  }
  add_constraint(s, "(A + B + C) % 7 == 1");
  uint64_t n;
  int exact;
  assert_int_equal(ht_space_size(s, HT_SPACE_COUNT_STEPS, &n, &exact), HT_OK);
  assert_int_equal(exact, 0);
  double want = 4096.0 * 4096 * 4096 / 7;
  if (fabs((double)n / want - 1) > 0.05) fail_msg("estimate %llu, about %.0f valid", (unsigned long long)n, want);
  double done = -1;
  assert_int_equal(ht_space_count_progress(s, stop_at_once, &done, &n), HT_ERR_TIMEOUT);
  assert_true(done >= 0 && done < 0.01 && n > 0);
  ht_space_cursor cur = {0};
  ht_config c;
  int found;
  assert_int_equal(ht_space_next(s, &cur, &c, &found), HT_OK); /* the first valid config, at once */
  assert_true(found && ht_space_is_valid(s, &c));
  ht_space_destroy(s);
  s = big_space();
  assert_int_equal(ht_space_size(s, 0, &n, &exact), HT_OK);
  assert_int_equal(exact, 1);
  assert_int_equal(n, count_of(s));
  ht_space_destroy(s);
}

static void test_sampling(void **state) {
  (void)state;
  ht_rng rng;
  ht_rng_seed(&rng, 1);
  ht_space *s = big_space();
  check_sample(s, &rng, 200, 200); /* by rejection, before any count */
  uint64_t n = count_of(s);
  (void)n;
  check_sample(s, &rng, 500, 500);
  ht_space_destroy(s);

  /* 1e12 Cartesian, a rare valid set: rejection gives up and counting takes over. */
  s = new_space();
  int64_t v[10];
  char name[16];
  for (int k = 0; k < 10; k++) v[k] = k;
  for (int p = 0; p < 12; p++) {
    snprintf(name, sizeof name, "q%d", p);
    add_ints(s, name, v, 10);
  }
  add_constraint(s, "q0 == 0 and q1 == 0");
  add_constraint(s, "q2 + q3 == 1");
  add_constraint(s, "q4 == q5");
  add_constraint(s, "q6 == 9 and q7 == 9 and q8 == 9");
  add_constraint(s, "q9 == 1 and q10 < 2 and q11 < 3");
  check_sample(s, &rng, 100, 100); /* 2 * 10 * 2 * 3 = 120 valid */
  assert_int_equal(count_of(s), 120);
  check_sample(s, &rng, 200, 120);
  ht_space_destroy(s);

  /* Uniformity: 6 valid configs drawn one at a time. */
  s = new_space();
  int64_t w[] = {1, 2, 3, 4, 5, 6};
  add_ints(s, "a", w, 6);
  add_ints(s, "b", w, 6);
  add_constraint(s, "a * b == 12 or a == b * 5 or a + b == 3");
  int hist[36] = {0};
  for (int i = 0; i < 6000; i++) {
    ht_config c;
    int got;
    assert_int_equal(ht_space_sample(s, &rng, 1, &c, &got), HT_OK);
    assert_int_equal(got, 1);
    hist[c.idx[0] * 6 + c.idx[1]]++;
  }
  uint64_t valid = count_of(s);
  assert_int_equal(valid, 7);
  for (int k = 0; k < 36; k++) assert_true(hist[k] == 0 || (hist[k] > 6000 / 7 * 0.8 && hist[k] < 6000 / 7 * 1.2));
  ht_space_destroy(s);
}

static void test_zero_and_one_valid(void **state) {
  (void)state;
  ht_rng rng;
  ht_rng_seed(&rng, 3);
  ht_space *s = big_space();
  add_constraint(s, "p0 + p1 > 100");
  assert_int_equal(count_of(s), 0);
  check_sample(s, &rng, 10, 0);
  ht_config c;
  assert_int_equal(ht_space_get(s, 0, &c), HT_ERR_NOTFOUND);
  collect col = {NULL, 0, 0};
  assert_int_equal(ht_space_enumerate(s, collect_visit, &col), HT_OK);
  assert_int_equal(col.n, 0);
  ht_space_destroy(s);

  s = big_space();
  add_constraint(s, "p0 == 3 and p1 == 4 and p2 == 3 and p3 == 4 and p4 == 2 and p5 == 3 and p6 == 4 and p7 == 4");
  assert_int_equal(count_of(s), 1);
  check_sample(s, &rng, 10, 1);
  ht_space_destroy(s);

  /* Constant-only constraints and errors in evaluation. */
  s = new_space();
  int64_t v[] = {0, 1, 2, 3};
  add_ints(s, "a", v, 4);
  assert_int_equal(ht_space_set_constant(s, "N", ht_int(10)), HT_OK);
  add_constraint(s, "N > 5");
  add_constraint(s, "N % a == 0"); /* a == 0 divides by zero: invalid, not fatal */
  assert_int_equal(count_of(s), 2);
  assert_int_equal(ht_space_set_constant(s, "N", ht_int(3)), HT_OK);
  assert_int_equal(count_of(s), 0);
  check_sample(s, &rng, 4, 0);
  ht_space_destroy(s);
}

static void test_neighbours(void **state) {
  (void)state;
  ht_space *s = new_space();
  int64_t v[] = {1, 2, 4, 8, 16};
  add_ints(s, "x", v, 5);
  add_ints(s, "y", v, 5);
  add_ints(s, "z", v, 3);
  add_constraint(s, "x * y <= 32");
  ht_config c, out[64];
  int n;
  assert_int_equal(ht_config_parse(s, "x=4,y=4,z=2", &c), HT_OK);
  assert_int_equal(ht_space_neighbours(s, &c, HT_NEIGH_HAMMING, out, 64, &n), HT_OK);
  /* x in {1,2,8} (8*4=32 ok, 16*4 no), y in {1,2,8}, z in {1,4} */
  assert_int_equal(n, 3 + 3 + 2);
  for (int i = 0; i < n; i++) {
    assert_true(ht_space_is_valid(s, &out[i]));
    int diff = 0;
    for (int p = 0; p < 3; p++) diff += out[i].idx[p] != c.idx[p];
    assert_int_equal(diff, 1);
  }
  assert_int_equal(ht_space_neighbours(s, &c, HT_NEIGH_ADJACENT, out, 64, &n), HT_OK);
  assert_int_equal(n, 6);
  for (int i = 0; i < n; i++) {
    int dist = 0;
    for (int p = 0; p < 3; p++) dist += abs(out[i].idx[p] - c.idx[p]);
    assert_int_equal(dist, 1);
  }
  assert_int_equal(ht_space_neighbours(s, &c, HT_NEIGH_HAMMING, out, 2, &n), HT_OK);
  assert_int_equal(n, 2);
  assert_int_equal(ht_config_parse(s, "x=16,y=2,z=1", &c), HT_OK);
  assert_int_equal(ht_space_neighbours(s, &c, HT_NEIGH_ADJACENT, out, 64, &n), HT_OK);
  assert_int_equal(n, 3); /* x=8; y=1 (y=4 gives 64); z=2 */
  ht_space_destroy(s);
}

static void test_format_parse(void **state) {
  (void)state;
  ht_space *s = new_space();
  int64_t v[] = {8, 16, 32};
  add_ints(s, "TX", v, 3);
  ht_value vec[] = {ht_str("float"), ht_str("float4")};
  assert_int_equal(ht_space_add_param(s, "VEC", vec, 2), HT_OK);
  ht_value f[] = {ht_float(0.5), ht_float(1e-6)};
  assert_int_equal(ht_space_add_param(s, "ALPHA", f, 2), HT_OK);
  ht_rng rng;
  ht_rng_seed(&rng, 5);
  ht_config all[12];
  int got;
  assert_int_equal(ht_space_sample(s, &rng, 12, all, &got), HT_OK);
  assert_int_equal(got, 12);
  char buf[256];
  for (int i = 0; i < got; i++) {
    ht_config back;
    int len = ht_config_format(s, &all[i], buf, sizeof buf);
    assert_int_equal(len, (int)strlen(buf));
    assert_int_equal(ht_config_parse(s, buf, &back), HT_OK);
    assert_true(ht_config_equal(&back, &all[i]));
    assert_int_equal(ht_config_hash(&back), ht_config_hash(&all[i]));
  }
  ht_config c;
  assert_int_equal(ht_config_parse(s, " VEC = 'float4' , TX=16.0, ALPHA=1e-06 ", &c), HT_OK);
  ht_config_format(s, &c, buf, sizeof buf);
  assert_string_equal(buf, "TX=16,VEC=float4,ALPHA=1e-06");
  assert_int_equal(ht_config_format(s, &c, buf, 5), (int)strlen("TX=16,VEC=float4,ALPHA=1e-06"));
  assert_string_equal(buf, "TX=1");
  ht_value vars[3];
  ht_config_values(s, &c, vars);
  assert_int_equal(vars[0].u.i, 16);
  assert_string_equal(vars[1].u.s, "float4");
  assert_int_equal(ht_config_parse(s, "TX=16,VEC=float,ALPHA=0.5,TZ=1", &c), HT_ERR_NOTFOUND);
  assert_non_null(strstr(ht_last_error(), "unknown parameter 'TZ'"));
  assert_int_equal(ht_config_parse(s, "TX=12,VEC=float,ALPHA=0.5", &c), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "value '12' is not among the values of 'TX' (8, 16, 32)"));
  assert_int_equal(ht_config_parse(s, "TX=16,VEC=float", &c), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "'ALPHA' is missing"));
  assert_int_equal(ht_config_parse(s, "TX=16,TX=8,VEC=float,ALPHA=0.5", &c), HT_ERR_INVALID);
  assert_int_equal(ht_config_parse(s, "TX16", &c), HT_ERR_PARSE);
  ht_space_destroy(s);
}

/* ---- T1 ---- */
static void test_t1_good(void **state) {
  (void)state;
  ht_space *s;
  const char *path = HT_SOURCE_DIR "/tests/data/t1/gemm.json";
  if (ht_space_load_t1(path, &s)) fail_msg("%s", ht_last_error());
  assert_int_equal(ht_space_param_count(s), 8);
  assert_int_equal(ht_space_param_index(s, "MWG"), 0);
  assert_int_equal(ht_space_value_count(s, 0), 4);
  assert_true(ht_space_constraint_count(s) >= 3);
  uint64_t n = count_of(s);
  assert_true(n > 0 && n < ht_space_cartesian_size(s));
  /* Check the count against brute force with the same expressions. */
  const char *cons[16];
  int nc = ht_space_constraint_count(s);
  for (int i = 0; i < nc; i++) cons[i] = ht_space_constraint_text(s, i);
  const char *cnames[] = {"M", "N", "K"};
  ht_value cvals[] = {ht_int(1024), ht_int(1024), ht_int(512)};
  ht_config *tmp = malloc(1 * sizeof *tmp);
  assert_int_equal(brute_force(s, cons, nc, cnames, cvals, 3, tmp, 0), (int)n);
  free(tmp);
  ht_space_destroy(s);

  path = HT_SOURCE_DIR "/tests/data/t1/convolution.json";
  if (ht_space_load_t1(path, &s)) fail_msg("%s", ht_last_error());
  int vw = ht_space_param_index(s, "VECTOR_TYPE");
  assert_true(vw >= 0);
  assert_int_equal(ht_space_value(s, vw, 0).kind, HT_VAL_STR);
  assert_true(count_of(s) > 0);
  ht_space_destroy(s);
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void expect_t1_error(const char *json, const char *substr) {
  char path[512];
  snprintf(path, sizeof path, "%s/t1_bad_%d.json", HT_BINARY_DIR_OR_TMP, (int)(ht_hash_str(json, 0) & 0xffff));
  write_file(path, json);
  ht_space *s = NULL;
  ht_status st = ht_space_load_t1(path, &s);
  if (st == HT_OK) fail_msg("loaded bad T1 '%s'", json);
  assert_null(s);
  if (!strstr(ht_last_error(), path)) fail_msg("error '%s' does not name the file", ht_last_error());
  if (!strstr(ht_last_error(), substr)) fail_msg("error '%s' lacks '%s'", ht_last_error(), substr);
  remove(path);
}

static void test_t1_bad(void **state) {
  (void)state;
  ht_space *s = NULL;
  assert_int_equal(ht_space_load_t1("/nonexistent/t1.json", &s), HT_ERR_IO);
  assert_non_null(strstr(ht_last_error(), "/nonexistent/t1.json"));
  expect_t1_error("{\"ConfigurationSpace\": {\n  \"TuningParameters\": [ }", "2:");
  expect_t1_error("{}", "ConfigurationSpace");
  expect_t1_error("{\"ConfigurationSpace\": {\"TuningParameters\": [{\"Name\": \"A\", \"Type\": \"int\"}]}}",
                  "Values");
  expect_t1_error("{\"ConfigurationSpace\": {\"TuningParameters\": [{\"Name\": \"A\", \"Type\": \"int\", "
                  "\"Values\": \"[1, 2,\"}]}}",
                  "'A'");
  expect_t1_error("{\"ConfigurationSpace\": {\"TuningParameters\": [{\"Name\": \"A\", \"Type\": \"int\", "
                  "\"Values\": \"[1, 2]\"}], \"Conditions\": [{\"Parameters\": [\"A\"], \"Expression\": "
                  "\"A < SIZE\"}]}}",
                  "unknown name 'SIZE'");
  expect_t1_error("{\"ConfigurationSpace\": {\"TuningParameters\": [{\"Name\": \"A\", \"Type\": \"int\", "
                  "\"Values\": \"[1, 2]\"}], \"Conditions\": [{\"Parameters\": [\"A\"], \"Expression\": "
                  "\"A < \"}]}}",
                  "column");
  expect_t1_error("{\"ConfigurationSpace\": {\"TuningParameters\": [{\"Name\": \"A\", \"Type\": \"int\", "
                  "\"Values\": \"[1, 1]\"}]}}",
                  "duplicate");
  expect_t1_error("[1, 2]", "object");
  /* a float far outside int64_t's range is not cast (undefined behaviour), it is refused */
  expect_t1_error("{\"ConfigurationSpace\": {\"TuningParameters\": [{\"Name\": \"A\", \"Type\": \"int\", "
                  "\"Values\": \"[1e30, 2]\"}]}}",
                  "not an integer");
  /* range() up to INT64_MAX stops where the next step would overflow */
  char path[512];
  snprintf(path, sizeof path, "%s/t1_range_max.json", HT_BINARY_DIR_OR_TMP);
  write_file(path, "{\"ConfigurationSpace\": {\"TuningParameters\": [{\"Name\": \"A\", \"Type\": \"int\", "
                   "\"Values\": \"range(9223372036854775800, 9223372036854775807, 5)\"}]}}");
  ht_space *s2 = NULL;
  if (ht_space_load_t1(path, &s2)) fail_msg("%s", ht_last_error());
  assert_int_equal(ht_space_value_count(s2, 0), 2);
  assert_int_equal(ht_space_value(s2, 0, 1).u.i, INT64_C(9223372036854775805));
  ht_space_destroy(s2);
  remove(path);
}

/* A filter (replay's "was recorded") composes with constraints in count, get, sample, is_valid and
 * neighbours. */
static int every_third(const ht_config *c, void *ctx) {
  (*(int *)ctx)++;
  return (c->idx[0] + 2 * c->idx[1] + c->idx[2]) % 3 == 0;
}

static void test_filter(void **state) {
  (void)state;
  ht_space *s = new_space();
  int64_t v[] = {1, 2, 3, 4, 5, 6, 7, 8};
  add_ints(s, "a", v, 8);
  add_ints(s, "b", v, 8);
  add_ints(s, "c", v, 8);
  add_constraint(s, "a + b > 4");
  int calls = 0;
  uint64_t unfiltered = count_of(s);
  assert_int_equal(ht_space_set_filter(s, every_third, &calls), HT_OK);
  int want = 0;
  ht_config c = {.n = 3};
  for (c.idx[0] = 0; c.idx[0] < 8; c.idx[0]++)
    for (c.idx[1] = 0; c.idx[1] < 8; c.idx[1]++)
      for (c.idx[2] = 0; c.idx[2] < 8; c.idx[2]++)
        if (c.idx[0] + c.idx[1] + 2 > 4 && (c.idx[0] + 2 * c.idx[1] + c.idx[2]) % 3 == 0) want++;
  assert_int_equal(count_of(s), (uint64_t)want);
  assert_true(calls > 0);
  for (uint64_t k = 0; k < (uint64_t)want; k++) {
    assert_int_equal(ht_space_get(s, k, &c), HT_OK);
    assert_true(ht_space_is_valid(s, &c));
  }
  ht_rng rng;
  ht_rng_seed(&rng, 3);
  ht_config out[64];
  int got = 0;
  assert_int_equal(ht_space_sample(s, &rng, 64, out, &got), HT_OK);
  assert_int_equal(got, 64);
  for (int k = 0; k < got; k++) assert_true(ht_space_is_valid(s, &out[k]));
  int n = 0;
  assert_int_equal(ht_space_neighbours(s, &out[0], HT_NEIGH_HAMMING, out + 1, 63, &n), HT_OK);
  for (int k = 1; k <= n; k++) assert_true(ht_space_is_valid(s, &out[k]));
  assert_int_equal(ht_space_set_filter(s, NULL, NULL), HT_OK);
  assert_int_equal(count_of(s), unfiltered);
  ht_space_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_build_errors),   cmocka_unit_test(test_random_spaces_vs_brute_force),
    cmocka_unit_test(test_big_space_count), cmocka_unit_test(test_huge_space_size), cmocka_unit_test(test_sampling),
    cmocka_unit_test(test_zero_and_one_valid), cmocka_unit_test(test_neighbours),
    cmocka_unit_test(test_format_parse),   cmocka_unit_test(test_t1_good),
    cmocka_unit_test(test_t1_bad),         cmocka_unit_test(test_filter),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
