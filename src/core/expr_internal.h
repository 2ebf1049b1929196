/* The expression compiler's bytecode, shared by the parser (expr.c) and the evaluator (expr_eval.c). */
#ifndef HETUNE_EXPR_INTERNAL_H
#define HETUNE_EXPR_INTERNAL_H

#include "hetune/expr.h"

#define MAX_STACK 256   /* evaluation stack slots; deeper expressions are refused at compile time */

/* ---- bytecode ---- */
enum {
  OP_CONST, OP_LOAD, OP_NEG, OP_NOT, OP_BOOL,
  OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_FDIV, OP_MOD, OP_POW,
  OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE,
  OP_JZ,      /* pop; jump when false (ternary) */
  OP_ANDJ,    /* pop; when false push 0 and jump (short-circuit 'and') */
  OP_ORJ,     /* pop; when true push 1 and jump (short-circuit 'or') */
  OP_JMP,
  OP_CALL     /* a = function, b = argument count */
};

typedef struct instr {
  uint8_t op, a;
  int32_t b; /* constant index, slot, relative jump offset or argument count */
} instr;

enum { F_MIN, F_MAX, F_ABS, F_CEIL, F_FLOOR, F_ROUND, F_SQRT, F_LOG, F_LOG2, F_EXP, F_POW, F_CEIL_DIV,
       F_INT, F_FLOAT, F_IS_POW2 };

struct ht_expr {
  char *text;
  instr *code;
  int n_code;
  ht_value *consts;
  int n_consts;
  char *strpool; /* string literals, unescaped; never larger than the text */
  int max_depth;
  int max_slot;
  int n_names;
  uint8_t *uses;
};

#endif
