/* Expression compiler: precedence, int/float semantics, Python spellings, errors, fuzzing. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetune/expr.h"

static const char *names[] = {"a", "b", "c", "x", "s", "block_size_x", "tile_size_x", "device.max_wg"};
#define N_NAMES 8

static ht_value vars[N_NAMES];

static void setup_vars(void) {
  vars[0] = ht_int(7);
  vars[1] = ht_int(-3);
  vars[2] = ht_int(0);
  vars[3] = ht_float(2.5);
  vars[4] = ht_str("float4");
  vars[5] = ht_int(64);
  vars[6] = ht_int(8);
  vars[7] = ht_int(1024);
}

static ht_value ev(const char *text) {
  ht_value v;
  ht_status s = ht_expr_evaluate(text, names, vars, N_NAMES, &v);
  if (s) fail_msg("'%s' failed: %s", text, ht_last_error());
  return v;
}

static void check_int(const char *text, int64_t want) {
  ht_value v = ev(text);
  if (v.kind != HT_VAL_INT || v.u.i != want)
    fail_msg("'%s': want int %lld, got kind %d value %lld / %g", text, (long long)want, v.kind,
             (long long)v.u.i, v.u.f);
}

static void check_float(const char *text, double want) {
  ht_value v = ev(text);
  if (v.kind != HT_VAL_FLOAT || fabs(v.u.f - want) > 1e-12 * fmax(1, fabs(want)))
    fail_msg("'%s': want float %g, got kind %d value %g", text, want, v.kind, v.u.f);
}

static void check_error(const char *text, ht_status code, const char *substr) {
  ht_value v;
  ht_status s = ht_expr_evaluate(text, names, vars, N_NAMES, &v);
  if (s != code) fail_msg("'%s': want status %d, got %d (%s)", text, code, s, ht_last_error());
  if (substr && !strstr(ht_last_error(), substr))
    fail_msg("'%s': message '%s' lacks '%s'", text, ht_last_error(), substr);
}

static void test_precedence(void **state) {
  (void)state;
  setup_vars();
  check_int("1 + 2 * 3", 7);
  check_int("(1 + 2) * 3", 9);
  check_int("2 ** 3 ** 2", 512);
  check_int("-2 ** 2", -4);
  check_int("10 - 3 - 2", 5);
  check_int("100 / 10 / 5", 2);
  check_int("1 + 2 < 4", 1);
  check_int("1 < 2 == 1", 0); /* Python chain: 1 < 2 and 2 == 1 */
  check_int("a > 5 ? 10 : 20", 10);
  check_int("c ? 1 : b < 0 ? 2 : 3", 2);
  check_int("!c && a", 1);
  check_int("not c and a", 1);
  check_int("c or 0", 0);
  check_int("a or c", 1);
  check_int("not a == 7", 0);
  check_int("- - a", 7);
  check_int("+a", 7);
  check_int("0x10 + 1", 17);
  check_int("True + True", 2);
  check_int("False", 0);
  check_int("device.max_wg / 4", 256);
  check_float("2 ** -1", 0.5);
  check_float(".5 + 1e1", 10.5);
}

static void test_int_float(void **state) {
  (void)state;
  setup_vars();
  check_int("7 / 2", 3);
  check_int("-7 / 2", -3);
  check_int("-7 % 2", -1);
  check_int("7 % -2", 1);
  check_int("-7 // 2", -4);
  check_int("7 // -2", -4);
  check_int("6 // 3", 2);
  check_float("7 / 2.0", 3.5);
  check_float("-7.0 // 2", -4.0);
  check_float("x * 2", 5.0);
  check_float("7.5 % 2", 1.5);
  check_int("a * b", -21);
  check_int("2 ** 62", INT64_C(4611686018427387904));
  check_float("2 ** 64", 18446744073709551616.0);
  check_float("9223372036854775807 + 1", 9223372036854775808.0);
  check_float("-9223372036854775807 - 2", -9223372036854775809.0);
  check_float("4611686018427387904 * 4", 18446744073709551616.0);
  check_float("99999999999999999999", 1e20);
  check_int("min(a, b, 3)", -3);
  check_int("max(a, b, 3)", 7);
  check_float("max(1, 2.0)", 2.0);
  check_int("abs(b)", 3);
  check_int("ceil(7 / 2.0)", 4);
  check_int("floor(x)", 2);
  check_int("round(x)", 3);
  check_int("ceil_div(7, 2)", 4);
  check_int("ceil_div(-7, 2)", -3);
  check_int("ceil_div(8, 2)", 4);
  check_int("int(x)", 2);
  check_float("float(a)", 7.0);
  check_float("sqrt(16)", 4.0);
  check_float("log2(1024)", 10.0);
}

static void test_pow_int(void **state) {
  (void)state;
  setup_vars();
  ht_value v = ev("pow(2, 10)");
  assert_int_equal(v.kind, HT_VAL_INT);
  assert_int_equal(v.u.i, 1024);
  check_int("is_pow2(64)", 1);
  check_int("is_pow2(48)", 0);
  check_int("is_pow2(0)", 0);
  check_int("is_pow2(4.0)", 1);
  check_int("0 ** 0", 1);
  check_int("(-2) ** 3", -8);
}

static void test_python_restrictions(void **state) {
  (void)state;
  setup_vars();
  check_int("block_size_x*tile_size_x <= 2048 and 32 <= block_size_x", 1);
  check_int("block_size_x*tile_size_x <= 256 and 32 <= block_size_x", 0);
  check_int("32 <= block_size_x <= 128", 1);
  check_int("32 <= block_size_x <= 63", 0);
  check_int("1 < 2 < 3 < 4", 1);
  check_int("1 < 2 < 3 < 3", 0);
  check_int("1 < (2 < 3)", 0);
  check_int("c != 0 and a % c == 0", 0); /* short-circuit: no division by zero */
  check_int("c == 0 or a % c == 0", 1);
  check_int("c and 1 / c", 0);
  check_int("a == 7 and (b == -3 or c)", 1);
}

static void test_strings(void **state) {
  (void)state;
  setup_vars();
  check_int("s == 'float4'", 1);
  check_int("s != \"float4\"", 0);
  check_int("s == 4", 0);
  check_int("s != 4", 1);
  check_error("s + 1", HT_ERR_INVALID, "strings");
  check_error("s < 'a'", HT_ERR_INVALID, "strings");
  check_error("-s", HT_ERR_INVALID, NULL);
  check_error("not s", HT_ERR_INVALID, NULL);
  check_error("min(s, 1)", HT_ERR_INVALID, NULL);
}

static void test_division_by_zero(void **state) {
  (void)state;
  setup_vars();
  check_error("a / c", HT_ERR_INVALID, "division by zero in 'a / c'");
  check_error("a % c", HT_ERR_INVALID, "modulo by zero");
  check_error("a // c", HT_ERR_INVALID, "division by zero");
  check_error("x / 0.0", HT_ERR_INVALID, "division by zero");
  check_error("ceil_div(a, c)", HT_ERR_INVALID, "division by zero");
  check_int("-9223372036854775807 - 1 == -9223372036854775807 - 1", 1);
  check_float("(-9223372036854775807 - 1) / -1", 9223372036854775808.0);
  check_int("(-9223372036854775807 - 1) % -1", 0);
  check_float("-(-9223372036854775807 - 1)", 9223372036854775808.0);
  check_float("abs(-9223372036854775807 - 1)", 9223372036854775808.0);
}

static void test_parse_errors(void **state) {
  (void)state;
  setup_vars();
  check_error("", HT_ERR_PARSE, "column 1: expected an expression, found end of input");
  check_error("1 +", HT_ERR_PARSE, "column 4: expected");
  check_error("1 + * 2", HT_ERR_PARSE, "column 5: expected a number, name, string or '(', found '*'");
  check_error("(1 + 2", HT_ERR_PARSE, "column 7: expected ')', found end of input");
  check_error("1 2", HT_ERR_PARSE, "column 3: expected an operator or end of input, found '2'");
  check_error("a ? 1", HT_ERR_PARSE, "expected ':'");
  check_error("a @ b", HT_ERR_PARSE, "column 3");
  check_error("'abc", HT_ERR_PARSE, "column 1: unterminated string");
  check_error("12abc", HT_ERR_PARSE, "column 1: malformed number");
  check_error("foo + 1", HT_ERR_PARSE, "column 1: unknown name 'foo' (known: a, b, c, x, s, block_size_x");
  check_error("a + bar", HT_ERR_PARSE, "column 5: unknown name 'bar'");
  check_error("nope(1)", HT_ERR_PARSE, "unknown function 'nope'");
  check_error("min(1)", HT_ERR_PARSE, "min() takes 2 or more arguments");
  check_error("abs(1, 2)", HT_ERR_PARSE, "abs() takes 1 argument");
  check_error("min(1,)", HT_ERR_PARSE, "expected");
  char deep[4000];
  memset(deep, '(', 2000);
  deep[2000] = '1';
  memset(deep + 2001, ')', 1998);
  deep[3999] = '\0';
  check_error(deep, HT_ERR_PARSE, "nested too deeply");
  memset(deep, '-', 3000);
  strcpy(deep + 3000, "1");
  check_error(deep, HT_ERR_PARSE, "nested too deeply");
  /* a chained comparison's middle operand is compiled twice: nested 24 deep, 2^24 copies, unless
   * the code size is bounded (found by fuzzing: 2.7 KB of text took 80 ms and growing) */
  strcpy(deep, "a");
  for (int i = 0; i < 24; i++) {
    char inner[4000];
    memcpy(inner, deep, sizeof inner);
    if (snprintf(deep, sizeof deep, "1 < (%.3000s) < 2", inner) < 0) fail();
  }
  check_error(deep, HT_ERR_PARSE, "expression too large");
}

static void test_uses(void **state) {
  (void)state;
  ht_expr *e;
  assert_int_equal(ht_expr_compile("b * c > 3 or b", names, N_NAMES, &e), HT_OK);
  assert_int_equal(ht_expr_max_slot(e), 2);
  assert_true(ht_expr_uses(e, 1));
  assert_true(ht_expr_uses(e, 2));
  assert_false(ht_expr_uses(e, 0));
  assert_false(ht_expr_uses(e, 99));
  assert_string_equal(ht_expr_text(e), "b * c > 3 or b");
  ht_expr_destroy(e);
  assert_int_equal(ht_expr_compile("1 + 2", names, N_NAMES, &e), HT_OK);
  assert_int_equal(ht_expr_max_slot(e), -1);
  int64_t i;
  assert_int_equal(ht_expr_eval_int(e, NULL, &i), HT_OK);
  assert_int_equal(i, 3);
  ht_expr_destroy(e);
  assert_int_equal(ht_expr_compile("x * 3", names, N_NAMES, &e), HT_OK);
  setup_vars();
  assert_int_equal(ht_expr_eval_int(e, vars, &i), HT_OK);
  assert_int_equal(i, 7);
  double d;
  assert_int_equal(ht_expr_eval_double(e, vars, &d), HT_OK);
  assert_true(d == 7.5);
  int b;
  assert_int_equal(ht_expr_eval_bool(e, vars, &b), HT_OK);
  assert_int_equal(b, 1);
  ht_expr_destroy(e);
  assert_int_equal(ht_expr_compile("1e308 * 10", NULL, 0, &e), HT_OK);
  assert_int_equal(ht_expr_eval_int(e, NULL, &i), HT_ERR_INVALID);
  ht_expr_destroy(e);
}

/* Random bytes and random token soup must compile or fail cleanly, and evaluation of what
 * compiles must never crash (ASan/UBSan builds run this too). */
static void fuzz_one(const char *text) {
  ht_expr *e = NULL;
  ht_status s = ht_expr_compile(text, names, N_NAMES, &e);
  if (s == HT_OK) {
    ht_value v;
    ht_expr_eval(e, vars, &v);
    ht_expr_destroy(e);
  } else {
    assert_true(s == HT_ERR_PARSE);
    assert_null(e);
    assert_true(strlen(ht_last_error()) > 0);
  }
}

static void test_fuzz(void **state) {
  (void)state;
  setup_vars();
  static const char *soup[] = {"a", "b", "c", "x", "s", "1", "0", "-1", "2.5", "0x1f", "'str'", "(", ")", "+",
                               "-", "*", "/", "//", "%", "**", "<", "<=", ">", ">=", "==", "!=", "!", "and",
                               "or", "not", "&&", "||", "?", ":", ",", "min(", "max(", "abs(", "ceil_div(",
                               "pow(", "is_pow2(", "int(", "True", "False", "foo", "9223372036854775807", "1e400",
                               "\"", ".", "@", "block_size_x"};
  int n_soup = (int)(sizeof soup / sizeof soup[0]);
  ht_rng rng;
  ht_rng_seed(&rng, 42);
  char buf[512];
  for (int iter = 0; iter < 20000; iter++) {
    int len = (int)ht_rng_below(&rng, 64);
    for (int i = 0; i < len; i++) buf[i] = (char)(1 + ht_rng_below(&rng, 255));
    buf[len] = '\0';
    fuzz_one(buf);
  }
  for (int iter = 0; iter < 50000; iter++) {
    int n = (int)ht_rng_below(&rng, 24), k = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && k < 400; i++)
      k += snprintf(buf + k, sizeof buf - (size_t)k, "%s%s", soup[ht_rng_below(&rng, (uint64_t)n_soup)],
                    ht_rng_below(&rng, 3) ? " " : "");
    fuzz_one(buf);
  }
}

/* An error message may quote the one before it, as the last error itself: "outer: inner". */
static void test_error_quotes_last_error(void **state) {
  (void)state;
  ht_expr *e = NULL;
  assert_int_not_equal(ht_expr_compile("1 +", NULL, 0, &e), HT_OK);
  char inner[256];
  snprintf(inner, sizeof inner, "%s", ht_last_error());
  assert_true(inner[0] != '\0');
  ht_error(HT_ERR_PARSE, "wrapper: %s (and again: %s)", ht_last_error(), ht_last_error());
  char want[700];
  snprintf(want, sizeof want, "wrapper: %s (and again: %s)", inner, inner);
  assert_string_equal(ht_last_error(), want);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_precedence),     cmocka_unit_test(test_int_float),
    cmocka_unit_test(test_error_quotes_last_error),
    cmocka_unit_test(test_pow_int),        cmocka_unit_test(test_python_restrictions),
    cmocka_unit_test(test_strings),        cmocka_unit_test(test_division_by_zero),
    cmocka_unit_test(test_parse_errors),   cmocka_unit_test(test_uses),
    cmocka_unit_test(test_fuzz),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
