/* The expression compiler: constraints, size expressions, scalar arguments, metrics.
 *
 * Grammar (C-like, with Python spellings accepted so T1 / Kernel Tuner restrictions parse):
 *   expr    := cond
 *   cond    := or ('?' expr ':' expr)?
 *   or      := and (('||' | 'or') and)*
 *   and     := not (('&&' | 'and') not)*
 *   not     := ('!' | 'not') not | cmp
 *   cmp     := add (('==' | '!=' | '<' | '<=' | '>' | '>=') add)*   (chained like Python: a<b<c)
 *   add     := mul (('+' | '-') mul)*
 *   mul     := unary (('*' | '/' | '//' | '%') unary)*
 *   unary   := ('-' | '+') unary | power
 *   power   := atom ('**' unary)?
 *   atom    := number | string | ident | ident '(' args ')' | '(' expr ')' | 'True' | 'False'
 *   ident   := [A-Za-z_][A-Za-z0-9_.]*    (dots allowed: device.max_work_group_size)
 * Values are int64, double or string. int op int stays int ('/' truncates like C, '//' floors),
 * any double makes the result double. Strings support only == and !=.
 * Functions: min, max (2+ args), abs, ceil, floor, round, sqrt, log, log2, exp, pow,
 *            ceil_div(a, b), int(x), float(x), is_pow2(x).
 * Division or modulo by zero is an evaluation error, never a crash. */
#ifndef HETUNE_EXPR_H
#define HETUNE_EXPR_H

#include "hetune/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ht_expr ht_expr;

/* Compiles text. Identifiers must be among names[0..n_names); identifier i reads vars[i]
 * at evaluation. On error: HT_ERR_PARSE with a message "column C: expected X, found Y"
 * (or "column C: unknown name 'foo' (known: a, b, ...)"); callers prefix file/field. */
ht_status ht_expr_compile(const char *text, const char *const *names, int n_names, ht_expr **out);
void ht_expr_destroy(ht_expr *e);

/* Evaluates with vars[i] bound to names[i]. Errors: HT_ERR_INVALID "division by zero in 'text'". */
ht_status ht_expr_eval(const ht_expr *e, const ht_value *vars, ht_value *out);
/* Evaluates and converts: to bool (nonzero), to int64 (floats truncated, error if not finite), to double. */
ht_status ht_expr_eval_bool(const ht_expr *e, const ht_value *vars, int *out);
ht_status ht_expr_eval_int(const ht_expr *e, const ht_value *vars, int64_t *out);
ht_status ht_expr_eval_double(const ht_expr *e, const ht_value *vars, double *out);

/* Which names the expression reads: 1 if names[slot] appears. Used to schedule constraint checks. */
int ht_expr_uses(const ht_expr *e, int slot);
/* Highest slot read, or -1 when the expression is constant. */
int ht_expr_max_slot(const ht_expr *e);
const char *ht_expr_text(const ht_expr *e);

/* One-shot helper: compile + eval. */
ht_status ht_expr_evaluate(const char *text, const char *const *names, const ht_value *vars, int n_names,
                           ht_value *out);

#ifdef __cplusplus
}
#endif
#endif
