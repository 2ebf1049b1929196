/* The expression compiler: text -> tokens -> recursive-descent parser -> postfix bytecode for the
 * stack machine in expr_eval.c. The stack depth is computed here, so evaluation never allocates. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/expr_internal.h"

#define MAX_NESTING 300 /* parser recursion guard: deep input must fail, not overflow the C stack */
#define MAX_ARGS 64
#define MAX_CHAIN 32 /* a < b < c < ... */
#define MAX_CODE 65536 /* instructions of one expression */

static const struct {
  const char *name;
  int min_args, max_args;
} funcs[] = {
  [F_MIN] = {"min", 2, MAX_ARGS}, [F_MAX] = {"max", 2, MAX_ARGS}, [F_ABS] = {"abs", 1, 1},
  [F_CEIL] = {"ceil", 1, 1},      [F_FLOOR] = {"floor", 1, 1},    [F_ROUND] = {"round", 1, 1},
  [F_SQRT] = {"sqrt", 1, 1},      [F_LOG] = {"log", 1, 1},        [F_LOG2] = {"log2", 1, 1},
  [F_EXP] = {"exp", 1, 1},        [F_POW] = {"pow", 2, 2},        [F_CEIL_DIV] = {"ceil_div", 2, 2},
  [F_INT] = {"int", 1, 1},        [F_FLOAT] = {"float", 1, 1},    [F_IS_POW2] = {"is_pow2", 1, 1},
};
#define N_FUNCS ((int)(sizeof funcs / sizeof funcs[0]))

/* ---- tokens ---- */
enum {
  T_END, T_INT, T_FLOAT, T_STR, T_IDENT, T_LP, T_RP, T_COMMA, T_QUEST, T_COLON,
  T_OR, T_AND, T_NOT, T_EQ, T_NE, T_LT, T_LE, T_GT, T_GE,
  T_PLUS, T_MINUS, T_STAR, T_SLASH, T_SLASH2, T_PERCENT, T_POW, T_BAD
};

typedef struct token {
  int kind;
  int start, len; /* byte span in the text; column = start + 1 */
  int64_t i;
  double f;
  int s_off; /* string literal: offset into the pool */
} token;

typedef struct parser {
  const char *src;
  int pos;
  token tok;
  const char *const *names;
  int n_names;
  int nesting;
  ht_status failed; /* first error; the message is already set */
  instr *code;
  int n_code, cap_code;
  ht_value *consts;
  int n_consts, cap_consts;
  char *pool;
  int pool_len;
  uint8_t *uses;
  int max_slot;
} parser;

static int is_ident_start(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int is_ident_char(int c) { return is_ident_start(c) || (c >= '0' && c <= '9') || c == '.'; }

/* Describes the current token for "found Y" in error messages. */
static void describe(const parser *p, char *buf, size_t len) {
  const token *t = &p->tok;
  if (t->kind == T_END) {
    snprintf(buf, len, "end of input");
    return;
  }
  int n = t->len > 24 ? 24 : t->len;
  snprintf(buf, len, "'%.*s%s'", n, p->src + t->start, t->len > n ? "..." : "");
}

static void fail_expected(parser *p, const char *what) {
  if (p->failed) return;
  char found[48];
  describe(p, found, sizeof found);
  p->failed = HT_ERR_PARSE;
  ht_error(HT_ERR_PARSE, "column %d: expected %s, found %s", p->tok.start + 1, what, found);
}

static void fail_at(parser *p, int start, const char *msg) {
  if (p->failed) return;
  p->failed = HT_ERR_PARSE;
  ht_error(HT_ERR_PARSE, "column %d: %s", start + 1, msg);
}

static int lex_number(parser *p, token *t) {
  const char *s = p->src + t->start;
  char *end;
  int is_float = 0;
  if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    errno = 0;
    unsigned long long v = strtoull(s, &end, 16);
    if (end == s + 2 || errno || v > INT64_MAX) return 0;
    t->kind = T_INT;
    t->i = (int64_t)v;
  } else {
    for (const char *q = s; *q && (is_ident_char((unsigned char)*q) || *q == '.'); q++)
      if (*q == '.' || *q == 'e' || *q == 'E') is_float = 1;
    errno = 0;
    long long v = is_float ? 0 : strtoll(s, &end, 10);
    if (is_float || errno == ERANGE) {
      t->f = strtod(s, &end); /* integers past int64 become doubles, as in C++ literals */
      t->kind = T_FLOAT;
    } else {
      t->kind = T_INT;
      t->i = v;
    }
    if (end == s) return 0;
  }
  t->len = (int)(end - s);
  /* A number glued to letters ("12abc") is one bad token, not two good ones. */
  if (is_ident_char((unsigned char)s[t->len])) return 0;
  return 1;
}

static int lex_string(parser *p, token *t) {
  const char *s = p->src + t->start;
  char q = s[0];
  int i = 1;
  t->s_off = p->pool_len;
  while (s[i] && s[i] != q) {
    char c = s[i++];
    if (c == '\\' && s[i]) {
      c = s[i++];
      if (c == 'n') c = '\n';
      else if (c == 't') c = '\t';
    }
    p->pool[p->pool_len++] = c;
  }
  if (!s[i]) return 0;
  p->pool[p->pool_len++] = '\0';
  t->kind = T_STR;
  t->len = i + 1;
  return 1;
}

static int keyword(const char *s, int len, const char *kw) { return (int)strlen(kw) == len && !memcmp(s, kw, len); }

static void lex_ident(parser *p, token *t) {
  const char *s = p->src + t->start;
  int n = 0;
  while (is_ident_char((unsigned char)s[n])) n++;
  t->len = n;
  t->kind = T_IDENT;
  if (keyword(s, n, "and")) t->kind = T_AND;
  else if (keyword(s, n, "or")) t->kind = T_OR;
  else if (keyword(s, n, "not")) t->kind = T_NOT;
  else if (keyword(s, n, "True") || keyword(s, n, "False")) {
    t->kind = T_INT;
    t->i = s[0] == 'T';
  }
}

static int lex_op(const char *s, int *len) {
  static const struct {
    const char *text;
    int kind;
  } ops[] = {
    {"**", T_POW}, {"//", T_SLASH2}, {"==", T_EQ}, {"!=", T_NE}, {"<=", T_LE}, {">=", T_GE}, {"&&", T_AND},
    {"||", T_OR},  {"<", T_LT},      {">", T_GT},  {"!", T_NOT}, {"+", T_PLUS}, {"-", T_MINUS}, {"*", T_STAR},
    {"/", T_SLASH}, {"%", T_PERCENT}, {"(", T_LP}, {")", T_RP},  {",", T_COMMA}, {"?", T_QUEST}, {":", T_COLON},
  };
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
    size_t n = strlen(ops[k].text);
    if (!strncmp(s, ops[k].text, n)) {
      *len = (int)n;
      return ops[k].kind;
    }
  }
  *len = 1;
  return T_BAD;
}

static void next(parser *p) {
  const char *s = p->src;
  while (s[p->pos] == ' ' || s[p->pos] == '\t' || s[p->pos] == '\n' || s[p->pos] == '\r') p->pos++;
  token *t = &p->tok;
  memset(t, 0, sizeof *t);
  t->start = p->pos;
  int c = (unsigned char)s[p->pos];
  if (!c) {
    t->kind = T_END;
    return;
  }
  if ((c >= '0' && c <= '9') || (c == '.' && s[p->pos + 1] >= '0' && s[p->pos + 1] <= '9')) {
    if (!lex_number(p, t)) {
      t->len = 1;
      while (is_ident_char((unsigned char)s[t->start + t->len])) t->len++;
      t->kind = T_BAD;
      fail_at(p, t->start, "malformed number");
    }
  } else if (c == '"' || c == '\'') {
    if (!lex_string(p, t)) {
      t->kind = T_BAD;
      t->len = 1;
      fail_at(p, t->start, "unterminated string");
    }
  } else if (is_ident_start(c)) {
    lex_ident(p, t);
  } else {
    t->kind = lex_op(s + p->pos, &t->len);
  }
  p->pos = t->start + t->len;
}

/* ---- code emission ---- */
static int emit(parser *p, int op, int a, int32_t b) {
  if (p->failed) return -1;
  if (p->n_code >= MAX_CODE) { /* chained comparisons copy their middle operands: nested, that doubles */
    p->failed = HT_ERR_PARSE;
    ht_error(HT_ERR_PARSE, "column %d: expression too large (over %d instructions)", p->tok.start + 1, MAX_CODE);
    return -1;
  }
  if (p->n_code == p->cap_code) {
    int cap = p->cap_code ? p->cap_code * 2 : 32;
    instr *c = realloc(p->code, (size_t)cap * sizeof *c);
    if (!c) {
      p->failed = HT_ERR_NOMEM;
      ht_error(HT_ERR_NOMEM, "out of memory compiling an expression");
      return -1;
    }
    p->code = c;
    p->cap_code = cap;
  }
  p->code[p->n_code] = (instr){(uint8_t)op, (uint8_t)a, b};
  return p->n_code++;
}

static void emit_const(parser *p, ht_value v) {
  if (p->failed) return;
  if (p->n_consts == p->cap_consts) {
    int cap = p->cap_consts ? p->cap_consts * 2 : 8;
    ht_value *c = realloc(p->consts, (size_t)cap * sizeof *c);
    if (!c) {
      p->failed = HT_ERR_NOMEM;
      ht_error(HT_ERR_NOMEM, "out of memory compiling an expression");
      return;
    }
    p->consts = c;
    p->cap_consts = cap;
  }
  p->consts[p->n_consts] = v;
  emit(p, OP_CONST, 0, p->n_consts++);
}

/* Points the jump at `at` to the current end of code. */
static void patch(parser *p, int at) {
  if (!p->failed && at >= 0) p->code[at].b = p->n_code - at;
}

/* Re-emits code[from..to): chained comparisons read their middle operand twice. Jumps are
 * relative, so the copy is position-independent. */
static void copy_code(parser *p, int from, int to) {
  for (int i = from; i < to && !p->failed; i++) {
    instr in = p->code[i];
    emit(p, in.op, in.a, in.b);
  }
}

/* ---- grammar ---- */
static void parse_expr(parser *p);
static void parse_unary(parser *p);

static int enter(parser *p) {
  if (++p->nesting > MAX_NESTING) fail_at(p, p->tok.start, "expression nested too deeply");
  return !p->failed;
}

static void expect(parser *p, int kind, const char *what) {
  if (p->tok.kind != kind) fail_expected(p, what);
  else next(p);
}

static void parse_name(parser *p) {
  const token t = p->tok;
  const char *s = p->src + t.start;
  next(p);
  for (int i = 0; i < p->n_names; i++)
    if (p->names[i] && (int)strlen(p->names[i]) == t.len && !memcmp(p->names[i], s, t.len)) {
      emit(p, OP_LOAD, 0, i);
      p->uses[i] = 1;
      if (i > p->max_slot) p->max_slot = i;
      return;
    }
  if (p->failed) return;
  char known[512];
  size_t k = 0;
  known[0] = '\0';
  for (int i = 0; i < p->n_names && k < sizeof known - 8; i++) {
    int n = snprintf(known + k, sizeof known - k, "%s%s", i ? ", " : "", p->names[i] ? p->names[i] : "?");
    k = n > 0 ? k + (size_t)n : k;
  }
  if (k >= sizeof known - 8) snprintf(known + sizeof known - 8, 8, ", ...");
  p->failed = HT_ERR_PARSE;
  ht_error(HT_ERR_PARSE, "column %d: unknown name '%.*s' (known: %s)", t.start + 1, t.len, s,
           p->n_names ? known : "none");
}

static void parse_call(parser *p) {
  const token t = p->tok;
  const char *s = p->src + t.start;
  int f = 0;
  while (f < N_FUNCS && !keyword(s, t.len, funcs[f].name)) f++;
  if (f == N_FUNCS) {
    char msg[160];
    snprintf(msg, sizeof msg, "unknown function '%.*s'", t.len > 40 ? 40 : t.len, s);
    fail_at(p, t.start, msg);
    return;
  }
  next(p); /* name */
  next(p); /* '(' */
  int nargs = 0;
  if (p->tok.kind != T_RP) {
    for (;;) {
      parse_expr(p);
      if (p->failed) return;
      if (++nargs > MAX_ARGS) return fail_at(p, p->tok.start, "too many arguments");
      if (p->tok.kind != T_COMMA) break;
      next(p);
    }
  }
  expect(p, T_RP, "',' or ')'");
  if (!p->failed && (nargs < funcs[f].min_args || nargs > funcs[f].max_args)) {
    char msg[128];
    snprintf(msg, sizeof msg, "%s() takes %d%s argument%s, got %d", funcs[f].name, funcs[f].min_args,
             funcs[f].max_args > funcs[f].min_args ? " or more" : "", funcs[f].min_args == 1 ? "" : "s", nargs);
    fail_at(p, t.start, msg);
  }
  emit(p, OP_CALL, f, nargs);
}

static void parse_atom(parser *p) {
  token t = p->tok;
  switch (t.kind) {
  case T_INT: emit_const(p, ht_int(t.i)); next(p); return;
  case T_FLOAT: emit_const(p, ht_float(t.f)); next(p); return;
  case T_STR: emit_const(p, ht_str(p->pool + t.s_off)); next(p); return;
  case T_LP:
    next(p);
    parse_expr(p);
    expect(p, T_RP, "')'");
    return;
  case T_IDENT: {
    /* Peek: a name followed by '(' is a call. */
    int q = p->pos;
    while (p->src[q] == ' ' || p->src[q] == '\t') q++;
    if (p->src[q] == '(') parse_call(p);
    else parse_name(p);
    return;
  }
  default: fail_expected(p, "a number, name, string or '('");
  }
}

static void parse_power(parser *p) {
  parse_atom(p);
  if (p->tok.kind == T_POW) {
    next(p);
    parse_unary(p); /* right-associative, and 2**-1 is legal */
    emit(p, OP_POW, 0, 0);
  }
}

static void parse_unary(parser *p) {
  if (!enter(p)) return;
  int k = p->tok.kind;
  if (k == T_MINUS || k == T_PLUS) {
    next(p);
    parse_unary(p);
    if (k == T_MINUS) emit(p, OP_NEG, 0, 0);
  } else {
    parse_power(p);
  }
  p->nesting--;
}

static void parse_binary(parser *p, int level);

/* Binary levels, lowest precedence first, above comparisons. */
static int binop(int level, int kind) {
  if (level == 0) return kind == T_PLUS ? OP_ADD : kind == T_MINUS ? OP_SUB : -1;
  switch (kind) {
  case T_STAR: return OP_MUL;
  case T_SLASH: return OP_DIV;
  case T_SLASH2: return OP_FDIV;
  case T_PERCENT: return OP_MOD;
  default: return -1;
  }
}

static void parse_binary(parser *p, int level) {
  if (level == 0) parse_binary(p, 1);
  else parse_unary(p);
  int op;
  while (!p->failed && (op = binop(level, p->tok.kind)) >= 0) {
    next(p);
    if (level == 0) parse_binary(p, 1);
    else parse_unary(p);
    emit(p, op, 0, 0);
  }
}

static int cmpop(int kind) {
  switch (kind) {
  case T_EQ: return OP_EQ;
  case T_NE: return OP_NE;
  case T_LT: return OP_LT;
  case T_LE: return OP_LE;
  case T_GT: return OP_GT;
  case T_GE: return OP_GE;
  default: return -1;
  }
}

/* a < b < c compiles as (a < b) and (b < c), b's code emitted twice, like Python. */
static void parse_cmp(parser *p) {
  int jumps[MAX_CHAIN], nj = 0;
  parse_binary(p, 0);
  int op = cmpop(p->tok.kind);
  if (op < 0) return;
  next(p);
  int from = p->n_code;
  parse_binary(p, 0);
  int to = p->n_code;
  emit(p, op, 0, 0);
  while (!p->failed && (op = cmpop(p->tok.kind)) >= 0) {
    if (nj == MAX_CHAIN) return fail_at(p, p->tok.start, "comparison chain too long");
    next(p);
    jumps[nj++] = emit(p, OP_ANDJ, 0, 0);
    copy_code(p, from, to);
    from = p->n_code;
    parse_binary(p, 0);
    to = p->n_code;
    emit(p, op, 0, 0);
  }
  for (int i = 0; i < nj; i++) patch(p, jumps[i]);
}

static void parse_not(parser *p) {
  if (!enter(p)) return;
  if (p->tok.kind == T_NOT) {
    next(p);
    parse_not(p);
    emit(p, OP_NOT, 0, 0);
  } else {
    parse_cmp(p);
  }
  p->nesting--;
}

/* and / or short-circuit, so "N > 0 and M % N == 0" never divides by zero. */
static void parse_logic(parser *p, int is_or) {
  if (is_or) parse_logic(p, 0);
  else parse_not(p);
  while (!p->failed && p->tok.kind == (is_or ? T_OR : T_AND)) {
    next(p);
    int j = emit(p, is_or ? OP_ORJ : OP_ANDJ, 0, 0);
    if (is_or) parse_logic(p, 0);
    else parse_not(p);
    emit(p, OP_BOOL, 0, 0);
    patch(p, j);
  }
}

static void parse_expr(parser *p) {
  if (!enter(p)) return;
  parse_logic(p, 1);
  if (p->tok.kind == T_QUEST) {
    next(p);
    int jz = emit(p, OP_JZ, 0, 0);
    parse_expr(p);
    expect(p, T_COLON, "':'");
    int jend = emit(p, OP_JMP, 0, 0);
    patch(p, jz);
    parse_expr(p);
    patch(p, jend);
  }
  p->nesting--;
}

/* Max stack depth by simulating the code; all jumps go forward and structured branches meet with
 * equal depths, so one pass suffices. Returns -1 on an internal inconsistency. */
static int stack_depth(const instr *code, int n) {
  int *at = malloc(((size_t)n + 1) * sizeof *at);
  if (!at) return -1;
  for (int i = 0; i <= n; i++) at[i] = -1;
  int d = 0, max = 0, reachable = 1;
  for (int pc = 0; pc < n; pc++) {
    if (!reachable) d = at[pc];
    reachable = 1;
    if (d < 0) break;
    const instr *in = &code[pc];
    switch (in->op) {
    case OP_CONST: case OP_LOAD: d++; break;
    case OP_NEG: case OP_NOT: case OP_BOOL: break;
    case OP_CALL: d += 1 - in->b; break;
    case OP_JZ: d--; at[pc + in->b] = d; break;
    case OP_ANDJ: case OP_ORJ: at[pc + in->b] = d; d--; break;
    case OP_JMP: at[pc + in->b] = d; reachable = 0; break;
    default: d--; break; /* binary operators */
    }
    if (d > max) max = d;
  }
  free(at);
  return d == 1 ? max : -1;
}

static void parser_free(parser *p) {
  free(p->code);
  free(p->consts);
  free(p->pool);
  free(p->uses);
}

static ht_status finish(parser *p, const char *text, ht_expr **out) {
  int depth = stack_depth(p->code, p->n_code);
  if (depth < 0) return ht_error(HT_ERR_INTERNAL, "expression compiler produced inconsistent code");
  if (depth > MAX_STACK) return ht_error(HT_ERR_PARSE, "column 1: expression too complex");
  ht_expr *e = calloc(1, sizeof *e);
  if (!e || !(e->text = ht_strdup(text))) {
    free(e);
    return ht_error(HT_ERR_NOMEM, "out of memory compiling an expression");
  }
  e->code = p->code;
  e->n_code = p->n_code;
  e->consts = p->consts;
  e->n_consts = p->n_consts;
  e->strpool = p->pool;
  e->uses = p->uses;
  e->n_names = p->n_names;
  e->max_slot = p->max_slot;
  e->max_depth = depth;
  memset(p, 0, sizeof *p); /* ownership moved */
  *out = e;
  return HT_OK;
}

ht_status ht_expr_compile(const char *text, const char *const *names, int n_names, ht_expr **out) {
  if (!out) return ht_error(HT_ERR_INVALID, "ht_expr_compile: out is NULL");
  *out = NULL;
  if (!text) return ht_error(HT_ERR_INVALID, "ht_expr_compile: text is NULL");
  if (n_names < 0 || (n_names > 0 && !names)) return ht_error(HT_ERR_INVALID, "ht_expr_compile: bad names");
  parser p = {.src = text, .names = names, .n_names = n_names, .max_slot = -1};
  p.pool = malloc(strlen(text) + 1);
  p.uses = calloc((size_t)n_names + 1, 1);
  if (!p.pool || !p.uses) {
    parser_free(&p);
    return ht_error(HT_ERR_NOMEM, "out of memory compiling an expression");
  }
  next(&p);
  if (!p.failed && p.tok.kind == T_END) fail_expected(&p, "an expression");
  parse_expr(&p);
  if (!p.failed && p.tok.kind != T_END) fail_expected(&p, "an operator or end of input");
  ht_status st = p.failed ? p.failed : finish(&p, text, out);
  parser_free(&p);
  return st;
}

void ht_expr_destroy(ht_expr *e) {
  if (!e) return;
  free(e->text);
  free(e->code);
  free(e->consts);
  free(e->strpool);
  free(e->uses);
  free(e);
}

int ht_expr_uses(const ht_expr *e, int slot) { return e && slot >= 0 && slot < e->n_names && e->uses[slot]; }
int ht_expr_max_slot(const ht_expr *e) { return e ? e->max_slot : -1; }
const char *ht_expr_text(const ht_expr *e) { return e ? e->text : ""; }
