/* The expression evaluator: a stack machine over the bytecode of expr.c. Constraints are
 * evaluated millions of times while a space is enumerated, so nothing here allocates. */
#include <math.h>
#include <stdlib.h>

#include "core/expr_internal.h"

/* ---- evaluation ---- */
static ht_status eval_fail(const ht_expr *e, const char *what) {
  return ht_error(HT_ERR_INVALID, "%s in '%s'", what, e->text);
}

static double num(ht_value v) { return v.kind == HT_VAL_INT ? (double)v.u.i : v.u.f; }

static int truthy(ht_value v) { return v.kind == HT_VAL_INT ? v.u.i != 0 : v.u.f != 0.0; }

/* Integer power by squaring; 0 on overflow so the caller can fall back to double. */
static int ipow(int64_t b, int64_t e, int64_t *r) {
  int64_t acc = 1;
  while (e) {
    if ((e & 1) && __builtin_mul_overflow(acc, b, &acc)) return 0;
    e >>= 1;
    if (e && __builtin_mul_overflow(b, b, &b)) return 0;
  }
  *r = acc;
  return 1;
}

static ht_status arith_int(const ht_expr *e, int op, int64_t a, int64_t b, ht_value *r) {
  int64_t x;
  switch (op) {
  case OP_ADD: *r = __builtin_add_overflow(a, b, &x) ? ht_float((double)a + (double)b) : ht_int(x); return HT_OK;
  case OP_SUB: *r = __builtin_sub_overflow(a, b, &x) ? ht_float((double)a - (double)b) : ht_int(x); return HT_OK;
  case OP_MUL: *r = __builtin_mul_overflow(a, b, &x) ? ht_float((double)a * (double)b) : ht_int(x); return HT_OK;
  case OP_POW:
    if (b < 0) *r = ht_float(pow((double)a, (double)b));
    else *r = ipow(a, b, &x) ? ht_int(x) : ht_float(pow((double)a, (double)b));
    return HT_OK;
  default: break;
  }
  if (b == 0) return eval_fail(e, op == OP_MOD ? "modulo by zero" : "division by zero");
  if (a == INT64_MIN && b == -1) { /* the one quotient that overflows */
    *r = op == OP_MOD ? ht_int(0) : ht_float(-(double)a);
    return HT_OK;
  }
  if (op == OP_DIV) *r = ht_int(a / b);
  else if (op == OP_MOD) *r = ht_int(a % b);
  else *r = ht_int(a / b - ((a % b != 0) && ((a < 0) != (b < 0))));
  return HT_OK;
}

static ht_status arith_float(const ht_expr *e, int op, double a, double b, ht_value *r) {
  switch (op) {
  case OP_ADD: *r = ht_float(a + b); return HT_OK;
  case OP_SUB: *r = ht_float(a - b); return HT_OK;
  case OP_MUL: *r = ht_float(a * b); return HT_OK;
  case OP_POW: *r = ht_float(pow(a, b)); return HT_OK;
  default: break;
  }
  if (b == 0.0) return eval_fail(e, op == OP_MOD ? "modulo by zero" : "division by zero");
  if (op == OP_DIV) *r = ht_float(a / b);
  else if (op == OP_MOD) *r = ht_float(fmod(a, b));
  else *r = ht_float(floor(a / b));
  return HT_OK;
}

static int compare(int op, int c) {
  switch (op) {
  case OP_EQ: return c == 0;
  case OP_NE: return c != 0;
  case OP_LT: return c < 0;
  case OP_LE: return c <= 0;
  case OP_GT: return c > 0;
  default: return c >= 0;
  }
}

static ht_status binary(const ht_expr *e, int op, ht_value a, ht_value b, ht_value *r) {
  if (a.kind == HT_VAL_STR || b.kind == HT_VAL_STR) {
    if (op == OP_EQ || op == OP_NE) {
      *r = ht_int(ht_value_equal(a, b) == (op == OP_EQ));
      return HT_OK;
    }
    return eval_fail(e, "strings support only == and !=");
  }
  if (op >= OP_EQ) {
    int c;
    if (a.kind == HT_VAL_INT && b.kind == HT_VAL_INT) c = (a.u.i > b.u.i) - (a.u.i < b.u.i);
    else {
      double x = num(a), y = num(b);
      if (isnan(x) || isnan(y)) { /* NaN compares unequal to everything */
        *r = ht_int(op == OP_NE);
        return HT_OK;
      }
      c = (x > y) - (x < y);
    }
    *r = ht_int(compare(op, c));
    return HT_OK;
  }
  if (a.kind == HT_VAL_INT && b.kind == HT_VAL_INT) return arith_int(e, op, a.u.i, b.u.i, r);
  return arith_float(e, op, num(a), num(b), r);
}

/* Floats that hold an integral value in range become ints: ceil(N / 4.0) is a size. */
static ht_value integral(double x) {
  if (isfinite(x) && x >= -9.2e18 && x <= 9.2e18) return ht_int((int64_t)x);
  return ht_float(x);
}

static void call_minmax(int f, const ht_value *args, int n, ht_value *r) {
  ht_value best = args[0];
  for (int i = 1; i < n; i++) {
    double x = num(args[i]), y = num(best);
    int better = args[i].kind == HT_VAL_INT && best.kind == HT_VAL_INT
                   ? (f == F_MIN ? args[i].u.i < best.u.i : args[i].u.i > best.u.i)
                   : (f == F_MIN ? x < y : x > y);
    if (better) best = args[i];
  }
  /* Any float argument makes a float result, like arithmetic does. */
  for (int i = 0; i < n; i++)
    if (args[i].kind == HT_VAL_FLOAT) best = ht_float(num(best));
  *r = best;
}

static ht_status call(const ht_expr *e, int f, const ht_value *args, int n, ht_value *r) {
  for (int i = 0; i < n; i++)
    if (args[i].kind == HT_VAL_STR) return eval_fail(e, "function arguments must be numbers");
  ht_value a = args[0];
  int is_int = a.kind == HT_VAL_INT;
  double x = num(a);
  switch (f) {
  case F_MIN: case F_MAX: call_minmax(f, args, n, r); return HT_OK;
  case F_ABS:
    if (is_int) *r = a.u.i == INT64_MIN ? ht_float(-(double)a.u.i) : ht_int(a.u.i < 0 ? -a.u.i : a.u.i);
    else *r = ht_float(fabs(x));
    return HT_OK;
  case F_CEIL: *r = is_int ? a : integral(ceil(x)); return HT_OK;
  case F_FLOOR: *r = is_int ? a : integral(floor(x)); return HT_OK;
  case F_ROUND: *r = is_int ? a : integral(round(x)); return HT_OK;
  case F_SQRT: *r = ht_float(sqrt(x)); return HT_OK;
  case F_LOG: *r = ht_float(log(x)); return HT_OK;
  case F_LOG2: *r = ht_float(log2(x)); return HT_OK;
  case F_EXP: *r = ht_float(exp(x)); return HT_OK;
  case F_POW: return binary(e, OP_POW, a, args[1], r);
  case F_CEIL_DIV: {
    ht_value b = args[1], q = ht_int(0), neg;
    if (!is_int || b.kind != HT_VAL_INT) {
      if (num(b) == 0.0) return eval_fail(e, "division by zero");
      *r = ht_float(ceil(x / num(b)));
      return HT_OK;
    }
    if (a.u.i == INT64_MIN) return binary(e, OP_DIV, a, b, r);
    ht_status st = arith_int(e, OP_FDIV, -a.u.i, b.u.i, &q); /* ceil(a/b) = -floor(-a/b) */
    if (st) return st;
    if (q.kind == HT_VAL_INT && q.u.i != INT64_MIN) neg = ht_int(-q.u.i);
    else neg = ht_float(-num(q));
    *r = neg;
    return HT_OK;
  }
  case F_INT:
    if (!is_int && !(isfinite(x) && x > -9.2e18 && x < 9.2e18)) return eval_fail(e, "int() of a non-finite value");
    *r = is_int ? a : ht_int((int64_t)x);
    return HT_OK;
  case F_FLOAT: *r = ht_float(x); return HT_OK;
  case F_IS_POW2: {
    if (!is_int && (x != floor(x) || !(fabs(x) < 9.2e18))) {
      *r = ht_int(0);
      return HT_OK;
    }
    int64_t v = is_int ? a.u.i : (int64_t)x;
    *r = ht_int(v > 0 && (v & (v - 1)) == 0);
    return HT_OK;
  }
  default: return ht_error(HT_ERR_INTERNAL, "bad function %d", f);
  }
}

/* The hot path of constraint checks: int op int without overflow or division. 0 = take the slow path. */
static inline int int_fast(int op, int64_t *a, int64_t b) {
  int64_t x = *a, r;
  switch (op) {
  case OP_ADD: return __builtin_add_overflow(x, b, &r) ? 0 : (*a = r, 1); /* *a intact for the slow path */
  case OP_SUB: return __builtin_sub_overflow(x, b, &r) ? 0 : (*a = r, 1);
  case OP_MUL: return __builtin_mul_overflow(x, b, &r) ? 0 : (*a = r, 1);
  case OP_EQ: *a = x == b; return 1;
  case OP_NE: *a = x != b; return 1;
  case OP_LT: *a = x < b; return 1;
  case OP_LE: *a = x <= b; return 1;
  case OP_GT: *a = x > b; return 1;
  case OP_GE: *a = x >= b; return 1;
  case OP_MOD:
    if (b <= 0 || x < 0) return 0;
    *a = x % b;
    return 1;
  default: return 0;
  }
}

static int is_truthy(const ht_expr *e, ht_value v, ht_status *st) {
  if (v.kind == HT_VAL_STR) {
    *st = eval_fail(e, "a string used as a condition");
    return 0;
  }
  return truthy(v);
}

ht_status ht_expr_eval(const ht_expr *e, const ht_value *vars, ht_value *out) {
  if (!e || !out || (e->max_slot >= 0 && !vars)) return ht_error(HT_ERR_INVALID, "ht_expr_eval: bad arguments");
  ht_value st[MAX_STACK + 1];
  int sp = 0;
  ht_status s = HT_OK;
  const instr *code = e->code;
  for (int pc = 0; pc < e->n_code; pc++) {
    const instr *in = &code[pc];
    switch (in->op) {
    case OP_CONST: st[sp++] = e->consts[in->b]; break;
    case OP_LOAD: st[sp++] = vars[in->b]; break;
    case OP_NEG: {
      ht_value *v = &st[sp - 1];
      if (v->kind == HT_VAL_STR) return eval_fail(e, "strings support only == and !=");
      if (v->kind == HT_VAL_FLOAT) v->u.f = -v->u.f;
      else if (v->u.i == INT64_MIN) *v = ht_float(-(double)v->u.i);
      else v->u.i = -v->u.i;
      break;
    }
    case OP_NOT: st[sp - 1] = ht_int(!is_truthy(e, st[sp - 1], &s)); break;
    case OP_BOOL: st[sp - 1] = ht_int(is_truthy(e, st[sp - 1], &s)); break;
    case OP_JZ:
      if (!is_truthy(e, st[--sp], &s) && !s) pc += in->b - 1;
      break;
    case OP_ANDJ:
    case OP_ORJ: {
      int t = is_truthy(e, st[--sp], &s);
      if (!s && t == (in->op == OP_ORJ)) {
        st[sp++] = ht_int(t);
        pc += in->b - 1;
      }
      break;
    }
    case OP_JMP: pc += in->b - 1; break;
    case OP_CALL:
      sp -= in->b;
      s = call(e, in->a, &st[sp], in->b, &st[sp]);
      sp++;
      break;
    default: {
      ht_value *a = &st[sp - 2], b = st[sp - 1];
      sp--;
      if (!(a->kind == HT_VAL_INT && b.kind == HT_VAL_INT && int_fast(in->op, &a->u.i, b.u.i)))
        s = binary(e, in->op, *a, b, a);
    }
    }
    if (s) return s;
  }
  *out = st[0];
  return HT_OK;
}

ht_status ht_expr_eval_bool(const ht_expr *e, const ht_value *vars, int *out) {
  ht_value v = ht_int(0);
  ht_status s = ht_expr_eval(e, vars, &v);
  if (s) return s;
  *out = is_truthy(e, v, &s);
  return s;
}

ht_status ht_expr_eval_int(const ht_expr *e, const ht_value *vars, int64_t *out) {
  ht_value v = ht_int(0);
  ht_status s = ht_expr_eval(e, vars, &v);
  if (s) return s;
  if (v.kind == HT_VAL_STR) return eval_fail(e, "expected a number, got a string");
  if (v.kind == HT_VAL_FLOAT) {
    if (!(isfinite(v.u.f) && v.u.f > -9.2e18 && v.u.f < 9.2e18)) return eval_fail(e, "non-finite or huge value");
    *out = (int64_t)v.u.f;
  } else {
    *out = v.u.i;
  }
  return HT_OK;
}

ht_status ht_expr_eval_double(const ht_expr *e, const ht_value *vars, double *out) {
  ht_value v = ht_int(0);
  ht_status s = ht_expr_eval(e, vars, &v);
  if (s) return s;
  if (v.kind == HT_VAL_STR) return eval_fail(e, "expected a number, got a string");
  *out = num(v);
  return HT_OK;
}

ht_status ht_expr_evaluate(const char *text, const char *const *names, const ht_value *vars, int n_names,
                           ht_value *out) {
  ht_expr *e;
  ht_status s = ht_expr_compile(text, names, n_names, &e);
  if (s) return s;
  s = ht_expr_eval(e, vars, out);
  ht_expr_destroy(e);
  return s;
}
