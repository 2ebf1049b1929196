/* PTX parser: the subset nvcc -ptx writes. Module directives are skipped, functions (.entry and
 * .func with a body) are kept with their parameters, labels and instructions. Every read is
 * bounds-checked against the terminating NUL, so truncated or mutated text gets an error naming
 * line and column, never a crash. */
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx/ptx_internal.h"

typedef struct lexer {
  const char *p, *line_start;
  int line;
  const char *name;
  ht_ptx_module *m;
  int *regmap; /* open-addressing table of register ids for the current kernel */
  int regmap_cap;
  int nest; /* vector-in-memory-operand nesting: bounded so hostile input cannot exhaust the stack */
} lexer;

#define MAX_WORD 512

static ht_status perr(lexer *lx, const char *what) {
  return ht_error(HT_ERR_PARSE, "%s:%d:%d: %s", lx->name, lx->line, (int)(lx->p - lx->line_start) + 1, what);
}

static int is_word_start(char c) { return isalpha((unsigned char)c) || c == '_' || c == '$' || c == '%' || c == '.'; }
static int is_word_char(char c) { return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '.' || c == '%'; }

static void advance(lexer *lx) {
  if (*lx->p == '\n') {
    lx->line++;
    lx->line_start = lx->p + 1;
  }
  lx->p++;
}

/* Skips white space and comments; an unterminated block comment is an error. */
static ht_status skip_ws(lexer *lx) {
  for (;;) {
    char c = *lx->p;
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v') {
      advance(lx);
    } else if (c == '/' && lx->p[1] == '/') {
      while (*lx->p && *lx->p != '\n') lx->p++;
    } else if (c == '/' && lx->p[1] == '*') {
      lexer open = *lx; /* errors point at the opening, not at the end of the input */
      advance(lx);
      advance(lx);
      while (*lx->p && !(lx->p[0] == '*' && lx->p[1] == '/')) advance(lx);
      if (!*lx->p) return perr(&open, "unterminated /* comment");
      lx->p += 2;
    } else {
      return HT_OK;
    }
  }
}

/* Reads a word (directive, opcode, identifier, register) into w. */
static ht_status read_word(lexer *lx, char *w, const char *expected) {
  w[0] = '\0';
  if (!is_word_start(*lx->p)) return perr(lx, expected);
  size_t n = 0;
  while (is_word_char(*lx->p)) {
    if (n + 1 >= MAX_WORD) return perr(lx, "identifier too long");
    w[n++] = *lx->p++;
  }
  w[n] = '\0';
  return HT_OK;
}

/* Skips a string literal ("..."), used by .pragma and .file. */
static ht_status skip_string(lexer *lx) {
  advance(lx);
  while (*lx->p && *lx->p != '"' && *lx->p != '\n') lx->p += (*lx->p == '\\' && lx->p[1]) ? 2 : 1;
  if (*lx->p != '"') return perr(lx, "unterminated string");
  lx->p++;
  return HT_OK;
}

/* Skips to the ';' that ends a declaration, over balanced braces (initialisers) and strings. */
static ht_status skip_statement(lexer *lx) {
  int depth = 0;
  for (;;) {
    ht_status st = skip_ws(lx);
    if (st) return st;
    char c = *lx->p;
    if (!c) return perr(lx, "expected ';' before end of input");
    if (c == '"') {
      if ((st = skip_string(lx))) return st;
      continue;
    }
    if (c == '{') depth++;
    if (c == '}' && --depth < 0) return perr(lx, "unbalanced '}'");
    advance(lx);
    if (c == ';' && depth == 0) return HT_OK;
  }
}

static void skip_line(lexer *lx) {
  while (*lx->p && *lx->p != '\n') lx->p++;
}

/* ---- growth helpers ---- */

static int grow(void **arr, int *cap, int need, size_t elem) {
  if (need <= *cap) return 0;
  int nc = *cap ? *cap * 2 : 16;
  while (nc < need) nc *= 2;
  void *p = realloc(*arr, (size_t)nc * elem);
  if (!p) return -1;
  memset((char *)p + (size_t)*cap * elem, 0, (size_t)(nc - *cap) * elem);
  *arr = p;
  *cap = nc;
  return 0;
}

static uint32_t name_hash(const char *s) { return (uint32_t)ht_hash_str(s, 0); }

/* Id of an already interned register, or -1. */
static int reg_find(const lexer *lx, const ptx_kernel *k, const char *name) {
  if (!lx->regmap_cap) return -1;
  uint32_t mask = (uint32_t)(lx->regmap_cap - 1), h = name_hash(name) & mask;
  for (; lx->regmap[h] >= 0; h = (h + 1) & mask)
    if (strcmp(k->regnames[lx->regmap[h]], name) == 0) return lx->regmap[h];
  return -1;
}

/* Interns a register name in the current kernel: its id, or -1 on OOM. */
static int reg_id(lexer *lx, ptx_kernel *k, const char *name) {
  if (k->n_regnames * 2 >= lx->regmap_cap) {
    int nc = lx->regmap_cap ? lx->regmap_cap * 2 : 256;
    int *t = malloc((size_t)nc * sizeof *t);
    if (!t) return -1;
    for (int i = 0; i < nc; i++) t[i] = -1;
    for (int r = 0; r < k->n_regnames; r++) {
      uint32_t h = name_hash(k->regnames[r]) & (uint32_t)(nc - 1);
      while (t[h] >= 0) h = (h + 1) & (uint32_t)(nc - 1);
      t[h] = r;
    }
    free(lx->regmap);
    lx->regmap = t;
    lx->regmap_cap = nc;
  }
  uint32_t mask = (uint32_t)(lx->regmap_cap - 1), h = name_hash(name) & mask;
  while (lx->regmap[h] >= 0) {
    if (strcmp(k->regnames[lx->regmap[h]], name) == 0) return lx->regmap[h];
    h = (h + 1) & mask;
  }
  if (grow((void **)&k->regnames, &k->cap_regnames, k->n_regnames + 1, sizeof(char *))) return -1;
  char *copy = ht_strdup(name);
  if (!copy) return -1;
  k->regnames[k->n_regnames] = copy;
  lx->regmap[h] = k->n_regnames;
  return k->n_regnames++;
}

/* ---- operands ---- */

/* A numeric literal: decimal or floating, 0x hex, 0f/0d hex bit patterns of float/double. */
static ht_status read_number(lexer *lx, double *out) {
  const char *s = lx->p;
  int neg = 0;
  if (*s == '-') {
    neg = 1;
    s++;
  }
  if (s[0] == '0' && (s[1] == 'f' || s[1] == 'F' || s[1] == 'd' || s[1] == 'D')) {
    int is_f = s[1] == 'f' || s[1] == 'F', want = is_f ? 8 : 16;
    uint64_t bits = 0;
    int i = 0;
    for (; i < want && isxdigit((unsigned char)s[2 + i]); i++) {
      char c = s[2 + i];
      bits = bits * 16 + (uint64_t)(isdigit((unsigned char)c) ? c - '0' : (tolower((unsigned char)c) - 'a' + 10));
    }
    if (i != want) return perr(lx, is_f ? "expected 8 hex digits after 0f" : "expected 16 hex digits after 0d");
    if (is_f) {
      uint32_t b32 = (uint32_t)bits;
      float f;
      memcpy(&f, &b32, sizeof f);
      *out = f;
    } else {
      double d;
      memcpy(&d, &bits, sizeof d);
      *out = d;
    }
    lx->p = s + 2 + want;
  } else if (isdigit((unsigned char)*s)) {
    char *end;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
      *out = (double)strtoull(s, &end, 16);
    } else {
      *out = strtod(s, &end);
    }
    if (end == s) return perr(lx, "expected a number");
    lx->p = end;
    if (*lx->p == 'U' || *lx->p == 'u') lx->p++;
  } else {
    return perr(lx, "expected an operand");
  }
  if (neg) *out = -*out;
  return HT_OK;
}

static ht_status add_reg(lexer *lx, ptx_kernel *k, ptx_operand *op, const char *name) {
  int id = reg_id(lx, k, name);
  if (id < 0) return ht_error(HT_ERR_NOMEM, "out of memory parsing %s", lx->name);
  if (op->n_regs < (int)(sizeof op->regs / sizeof op->regs[0])) op->regs[op->n_regs++] = id;
  return HT_OK;
}

/* One element: register (also p|q), symbol, number, or '_' (sink); with an optional +/-offset. */
static ht_status read_group(lexer *lx, ptx_kernel *k, ptx_operand *op, char close);

static ht_status read_element(lexer *lx, ptx_kernel *k, ptx_operand *op, int composite) {
  char w[MAX_WORD];
  ht_status st;
  if (*lx->p == '!') lx->p++;
  if (*lx->p == '-' || isdigit((unsigned char)*lx->p)) {
    double v;
    if ((st = read_number(lx, &v))) return st;
    if (!composite) op->kind = OP_IMM;
    op->imm = v;
    return HT_OK;
  }
  if (*lx->p == '{' && composite) { /* a vector inside a memory operand: [tex, {%f1, %f2}] */
    if (lx->nest >= 4) return perr(lx, "operands nested too deeply");
    lx->p++;
    lx->nest++;
    st = read_group(lx, k, op, '}');
    lx->nest--;
    return st;
  }
  if ((st = read_word(lx, w, "expected an operand"))) return st;
  if (w[0] == '%' || reg_find(lx, k, w) >= 0) { /* %names, and names declared by .reg (inline asm) */
    if ((st = add_reg(lx, k, op, w))) return st;
    if (!composite) op->kind = OP_REG;
  } else {
    if (!op->sym && !(op->sym = ht_strdup(w))) return ht_error(HT_ERR_NOMEM, "out of memory");
    if (!composite) op->kind = OP_SYM;
  }
  return HT_OK;
}

/* Reads elements separated by `sep` up to `close` ('\0' = a single element). */
static ht_status read_group(lexer *lx, ptx_kernel *k, ptx_operand *op, char close) {
  ht_status st;
  for (;;) {
    if ((st = skip_ws(lx))) return st;
    if (close && *lx->p == close) break;
    if ((st = read_element(lx, k, op, close != '\0'))) return st;
    if ((st = skip_ws(lx))) return st;
    if (*lx->p == '+' || (*lx->p == '-' && close == ']')) {
      int minus = *lx->p == '-';
      lx->p++;
      if ((st = skip_ws(lx))) return st;
      double v;
      if ((st = read_number(lx, &v))) return st;
      op->imm = minus ? -v : v;
      if ((st = skip_ws(lx))) return st;
    }
    if (*lx->p == '|' || (close && *lx->p == ',')) {
      lx->p++;
      continue;
    }
    break;
  }
  if (close) {
    if (*lx->p != close) {
      char msg[64];
      snprintf(msg, sizeof msg, "expected '%c'", close);
      return perr(lx, msg);
    }
    lx->p++;
  }
  return HT_OK;
}

static ht_status read_operand(lexer *lx, ptx_kernel *k, ptx_operand *op) {
  char c = *lx->p;
  if (c == '[') {
    op->kind = OP_MEM;
    lx->p++;
    return read_group(lx, k, op, ']');
  }
  if (c == '{') {
    op->kind = OP_VEC;
    lx->p++;
    return read_group(lx, k, op, '}');
  }
  if (c == '(') {
    op->kind = OP_OTHER;
    lx->p++;
    return read_group(lx, k, op, ')');
  }
  return read_group(lx, k, op, '\0');
}

/* ---- instructions and functions ---- */

static ht_status new_insn(lexer *lx, ptx_kernel *k, ptx_insn **out) {
  if (grow((void **)&k->insns, &k->cap_insns, k->n_insns + 1, sizeof(ptx_insn)))
    return ht_error(HT_ERR_NOMEM, "out of memory parsing %s", lx->name);
  ptx_insn *in = &k->insns[k->n_insns++];
  memset(in, 0, sizeof *in);
  in->line = lx->line;
  in->col = (int)(lx->p - lx->line_start) + 1;
  in->guard = -1;
  in->label = -1;
  *out = in;
  return HT_OK;
}

static ht_status parse_instruction(lexer *lx, ptx_kernel *k, const char *first) {
  char w[MAX_WORD];
  ht_status st;
  ptx_insn *in = NULL;
  if ((st = new_insn(lx, k, &in))) return st;
  if (first[0] == '@') {
    lx->p++;
    if (*lx->p == '!') {
      in->guard_neg = 1;
      lx->p++;
    }
    if ((st = read_word(lx, w, "expected a predicate register after '@'"))) return st;
    if (w[0] == '.') return perr(lx, "expected a predicate register after '@'");
    if ((in->guard = reg_id(lx, k, w)) < 0) return ht_error(HT_ERR_NOMEM, "out of memory");
    if ((st = skip_ws(lx))) return st;
    if ((st = read_word(lx, w, "expected an opcode after the guard"))) return st;
    first = w;
  }
  if (first[0] == '.' || first[0] == '%') return perr(lx, "expected an opcode");
  if (!(in->opcode = ht_strdup(first))) return ht_error(HT_ERR_NOMEM, "out of memory");
  int cap = 0;
  for (;;) {
    if ((st = skip_ws(lx))) return st;
    if (*lx->p == ';') break;
    if (!*lx->p) return perr(lx, "expected ';' before end of input");
    if (in->n_ops > 0) {
      if (*lx->p != ',') return perr(lx, "expected ',' or ';' after operand");
      lx->p++;
      if ((st = skip_ws(lx))) return st;
    }
    if (grow((void **)&in->ops, &cap, in->n_ops + 1, sizeof(ptx_operand))) return ht_error(HT_ERR_NOMEM, "out of memory");
    if ((st = read_operand(lx, k, &in->ops[in->n_ops++]))) return st;
  }
  lx->p++;
  in->cls = ht_ptx_classify(in->opcode);
  in->no_dest = ptx_writes_nothing(in->opcode);
  return HT_OK;
}

static ht_status add_label(lexer *lx, ptx_kernel *k, const char *name) {
  if (ptx_find_label(k, name) >= 0) return perr(lx, "duplicate label");
  ptx_insn *in = NULL;
  ht_status st = new_insn(lx, k, &in);
  if (st) return st;
  if (grow((void **)&k->labels, &k->cap_labels, k->n_labels + 1, sizeof(char *))) return ht_error(HT_ERR_NOMEM, "out of memory");
  int *lp = realloc(k->label_pos, (size_t)k->cap_labels * sizeof *lp);
  if (!lp) return ht_error(HT_ERR_NOMEM, "out of memory");
  k->label_pos = lp;
  if (!(k->labels[k->n_labels] = ht_strdup(name))) return ht_error(HT_ERR_NOMEM, "out of memory");
  k->label_pos[k->n_labels] = k->n_insns - 1;
  in->label = k->n_labels++;
  return HT_OK;
}

/* .reg .type name, name<N>, ...; names without '%' (inline asm) are interned so operands
 * spelled like symbols are known to be registers. */
static ht_status parse_reg_decl(lexer *lx, ptx_kernel *k) {
  char w[MAX_WORD];
  ht_status st;
  for (;;) {
    if ((st = skip_ws(lx))) return st;
    char c = *lx->p;
    if (c == ';') {
      lx->p++;
      return HT_OK;
    }
    if (c == ',' || c == '>') {
      lx->p++;
    } else if (c == '<') {
      lx->p++;
      while (isdigit((unsigned char)*lx->p)) lx->p++;
    } else if (isdigit((unsigned char)c)) { /* .align 4 */
      double v;
      if ((st = read_number(lx, &v))) return st;
    } else {
      if ((st = read_word(lx, w, "expected a register name or ';'"))) return st;
      if (w[0] != '.' && w[0] != '%' && reg_id(lx, k, w) < 0) return ht_error(HT_ERR_NOMEM, "out of memory");
    }
  }
}

/* Statements of a body up to its closing brace (nested { } scopes included). */
static ht_status parse_body(lexer *lx, ptx_kernel *k) {
  char w[MAX_WORD];
  int depth = 1;
  ht_status st;
  while (depth > 0) {
    if ((st = skip_ws(lx))) return st;
    char c = *lx->p;
    if (!c) return perr(lx, "expected '}' before end of input");
    if (c == '{' || c == '}') {
      depth += c == '{' ? 1 : -1;
      lx->p++;
      continue;
    }
    if (c == '@') {
      w[0] = '@';
      w[1] = '\0';
      if ((st = parse_instruction(lx, k, w))) return st;
      continue;
    }
    if ((st = read_word(lx, w, "expected an instruction, label or directive"))) return st;
    if (strcmp(w, ".reg") == 0) {
      if ((st = parse_reg_decl(lx, k))) return st;
      continue;
    }
    if (w[0] == '.') {
      if (strcmp(w, ".loc") == 0 || strcmp(w, ".file") == 0) {
        skip_line(lx);
        continue;
      }
      if ((st = skip_statement(lx))) return st;
      continue;
    }
    if ((st = skip_ws(lx))) return st;
    if (*lx->p == ':') {
      lx->p++;
      if ((st = add_label(lx, k, w))) return st;
      continue;
    }
    if ((st = parse_instruction(lx, k, w))) return st;
  }
  return HT_OK;
}

/* ( .param .u64 name, ... ): the last identifier of each parameter is its name. */
static ht_status parse_params(lexer *lx, ptx_kernel *k, int keep) {
  char w[MAX_WORD], last[MAX_WORD];
  ht_status st;
  lx->p++;
  last[0] = '\0';
  for (;;) {
    if ((st = skip_ws(lx))) return st;
    char c = *lx->p;
    if (!c) return perr(lx, "expected ')' before end of input");
    if (c == ')' || c == ',') {
      if (keep && last[0]) {
        char **np = realloc(k->params, (size_t)(k->n_params + 1) * sizeof(char *));
        if (!np) return ht_error(HT_ERR_NOMEM, "out of memory");
        k->params = np;
        if (!(k->params[k->n_params] = ht_strdup(last))) return ht_error(HT_ERR_NOMEM, "out of memory");
        k->n_params++;
      } else if (c == ',' && !last[0]) {
        return perr(lx, "expected a parameter name");
      }
      last[0] = '\0';
      lx->p++;
      if (c == ')') return HT_OK;
      continue;
    }
    if (c == '[' || c == ']' || c == '<' || c == '>') {
      lx->p++;
      if (c == '[' || c == '<')
        while (isdigit((unsigned char)*lx->p)) lx->p++;
      continue;
    }
    if (isdigit((unsigned char)c)) {
      double v;
      if ((st = read_number(lx, &v))) return st;
      continue;
    }
    if ((st = read_word(lx, w, "expected a parameter declaration"))) return st;
    if (w[0] != '.') snprintf(last, sizeof last, "%s", w);
  }
}

static ht_status parse_function(lexer *lx, int is_entry) {
  char w[MAX_WORD];
  ht_status st;
  ht_ptx_module *m = lx->m;
  if (grow((void **)&m->kernels, &m->cap_kernels, m->n_kernels + 1, sizeof(ptx_kernel))) return ht_error(HT_ERR_NOMEM, "out of memory");
  ptx_kernel *k = &m->kernels[m->n_kernels++];
  memset(k, 0, sizeof *k);
  k->is_entry = is_entry;
  free(lx->regmap);
  lx->regmap = NULL;
  lx->regmap_cap = 0;
  if ((st = skip_ws(lx))) return st;
  if (*lx->p == '(' && !is_entry && (st = parse_params(lx, k, 0))) return st; /* return value */
  if ((st = skip_ws(lx))) return st;
  if ((st = read_word(lx, w, "expected a function name"))) return st;
  if (w[0] == '.' || w[0] == '%') return perr(lx, "expected a function name");
  if (!(k->name = ht_strdup(w))) return ht_error(HT_ERR_NOMEM, "out of memory");
  if ((st = skip_ws(lx))) return st;
  if (*lx->p == '(' && (st = parse_params(lx, k, 1))) return st;
  for (;;) { /* performance directives (.maxntid 256, 1, 1 ...) up to the body or ';' */
    if ((st = skip_ws(lx))) return st;
    char c = *lx->p;
    if (c == '{') {
      lx->p++;
      return parse_body(lx, k);
    }
    if (c == ';') { /* a prototype: nothing to analyse */
      lx->p++;
      return HT_OK;
    }
    if (c == ',') {
      lx->p++;
    } else if (isdigit((unsigned char)c)) {
      double v;
      if ((st = read_number(lx, &v))) return st;
    } else if (c == '"') {
      if ((st = skip_string(lx))) return st;
    } else if ((st = read_word(lx, w, "expected '{' to open the function body"))) {
      return st;
    } else if (w[0] != '.') {
      return perr(lx, "expected '{' to open the function body");
    }
  }
}

static ht_status parse_module(lexer *lx) {
  char w[MAX_WORD];
  ht_status st;
  for (;;) {
    if ((st = skip_ws(lx))) return st;
    if (!*lx->p) return HT_OK;
    lexer at = *lx;
    if ((st = read_word(lx, w, "expected a directive"))) return st;
    if (strcmp(w, ".version") == 0 || strcmp(w, ".target") == 0 || strcmp(w, ".address_size") == 0 ||
        strcmp(w, ".file") == 0 || strcmp(w, ".loc") == 0) {
      skip_line(lx);
    } else if (strcmp(w, ".visible") == 0 || strcmp(w, ".extern") == 0 || strcmp(w, ".weak") == 0 ||
               strcmp(w, ".common") == 0) {
      continue; /* linkage: the declaration follows */
    } else if (strcmp(w, ".entry") == 0 || strcmp(w, ".func") == 0) {
      if ((st = parse_function(lx, strcmp(w, ".entry") == 0))) return st;
    } else if (w[0] == '.') {
      if ((st = skip_statement(lx))) return st; /* .global/.const/.shared variables, .section, .pragma */
    } else {
      return perr(&at, "expected a directive");
    }
  }
}

ht_status ht_ptx_parse(const char *text, const char *source_name, ht_ptx_module **out) {
  if (!text || !out) return ht_error(HT_ERR_INVALID, "ht_ptx_parse: NULL argument");
  *out = NULL;
  ht_ptx_module *m = calloc(1, sizeof *m);
  if (!m) return ht_error(HT_ERR_NOMEM, "out of memory");
  m->source_name = ht_strdup(source_name ? source_name : "<ptx>");
  lexer lx = {.p = text, .line_start = text, .line = 1, .name = m->source_name ? m->source_name : "<ptx>", .m = m};
  ht_status st = parse_module(&lx);
  free(lx.regmap);
  if (st) {
    ht_ptx_free(m);
    return st;
  }
  *out = m;
  return HT_OK;
}

void ht_ptx_free(ht_ptx_module *m) {
  if (!m) return;
  for (int i = 0; i < m->n_kernels; i++) {
    ptx_kernel *k = &m->kernels[i];
    free(k->name);
    for (int j = 0; j < k->n_params; j++) free(k->params[j]);
    free(k->params);
    for (int j = 0; j < k->n_insns; j++) {
      for (int o = 0; o < k->insns[j].n_ops; o++) free(k->insns[j].ops[o].sym);
      free(k->insns[j].ops);
      free(k->insns[j].opcode);
    }
    free(k->insns);
    for (int j = 0; j < k->n_labels; j++) free(k->labels[j]);
    free(k->labels);
    free(k->label_pos);
    for (int j = 0; j < k->n_regnames; j++) free(k->regnames[j]);
    free(k->regnames);
  }
  free(m->kernels);
  free(m->source_name);
  free(m);
}
