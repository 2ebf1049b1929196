/* Executed instruction counts per thread: basic blocks from labels and branches, dominators,
 * natural loops (back edges), and trip counts of loops whose exit test compares an induction
 * register (v += constant) with a loop-invariant bound. Values come from evaluating the PTX
 * data flow backwards with the caller's kernel parameter values (ld.param), constants, and 0
 * for special registers (thread 0 of block 0). Every block outside loops counts once, whichever
 * side of a branch it is on. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ptx/ptx_internal.h"

typedef struct cfg {
  const ptx_kernel *k;
  int nb;
  int *start, *end;  /* [start, end) in insns */
  int *block_of;     /* per insn */
  int *succ;         /* 2 per block, -1 = none */
  int *pred_at, *pred; /* predecessors of b: pred[pred_at[b] .. pred_at[b+1]) */
  int *def_at, *def_pos; /* instructions writing register r, ascending: def_pos[def_at[r] .. def_at[r+1]) */
  uint64_t *dom;     /* nb x words bitsets */
  int words;
  char *reach;
} cfg;

typedef struct eval_ctx {
  const ptx_kernel *k;
  const double *pv;
  int n;
  int *budget; /* register look-ups left: operands fan out, so depth alone does not bound the work */
  const struct cfg *g;
  const char *forbid; /* blocks whose definitions vary (loops around a branch): values through them are unknown */
} eval_ctx;

#define EVAL_BUDGET 4096
#define MAX_BLOCKS 16384

static int is_branch(const ptx_insn *in) { return in->label < 0 && (strncmp(in->opcode, "bra", 3) == 0 || strncmp(in->opcode, "brx", 3) == 0); }
static int is_return(const ptx_insn *in) { return in->label < 0 && (strcmp(in->opcode, "ret") == 0 || strncmp(in->opcode, "ret.", 4) == 0 || strcmp(in->opcode, "exit") == 0); }

static void cfg_free(cfg *g) {
  free(g->start);
  free(g->end);
  free(g->block_of);
  free(g->succ);
  free(g->pred_at);
  free(g->pred);
  free(g->def_at);
  free(g->def_pos);
  free(g->dom);
  free(g->reach);
}

/* Block of a branch target, -1 when the label is unknown or the operand is not a label. */
static int target_block(const cfg *g, const ptx_insn *in) {
  if (in->n_ops < 1 || in->ops[in->n_ops - 1].kind != OP_SYM || !in->ops[in->n_ops - 1].sym) return -1;
  int l = ptx_find_label(g->k, in->ops[in->n_ops - 1].sym);
  return l < 0 ? -1 : g->block_of[g->k->label_pos[l]];
}

/* Where each register is written, so value look-ups are a binary search, not a scan. */
static ht_status def_index(cfg *g) {
  const ptx_kernel *k = g->k;
  int nr = k->n_regnames, total = 0;
  g->def_at = calloc((size_t)nr + 2, sizeof(int));
  if (!g->def_at) return ht_error(HT_ERR_NOMEM, "out of memory");
  for (int i = 0; i < k->n_insns; i++) {
    int d[8], nd = ptx_insn_dests(&k->insns[i], d, 8);
    for (int j = 0; j < nd; j++, total++) g->def_at[d[j] + 2]++;
  }
  for (int r = 0; r < nr; r++) g->def_at[r + 2] += g->def_at[r + 1];
  g->def_pos = malloc(sizeof(int) * ((size_t)total + 1));
  if (!g->def_pos) return ht_error(HT_ERR_NOMEM, "out of memory");
  for (int i = 0; i < k->n_insns; i++) {
    int d[8], nd = ptx_insn_dests(&k->insns[i], d, 8);
    for (int j = 0; j < nd; j++) g->def_pos[g->def_at[d[j] + 1]++] = i;
  }
  return HT_OK;
}

static ht_status cfg_blocks(cfg *g) {
  const ptx_kernel *k = g->k;
  int n = k->n_insns;
  g->block_of = calloc((size_t)n + 1, sizeof(int));
  g->start = calloc((size_t)n + 1, sizeof(int));
  g->end = calloc((size_t)n + 1, sizeof(int));
  if (!g->block_of || !g->start || !g->end) return ht_error(HT_ERR_NOMEM, "out of memory");
  g->nb = 0;
  for (int i = 0; i < n; i++) {
    const ptx_insn *prev = i > 0 ? &k->insns[i - 1] : NULL;
    int leader = i == 0 || k->insns[i].label >= 0 || (prev && (is_branch(prev) || is_return(prev)));
    /* consecutive labels share one block */
    if (leader && prev && prev->label >= 0 && k->insns[i].label >= 0) leader = 0;
    if (leader) {
      if (g->nb > 0) g->end[g->nb - 1] = i;
      g->start[g->nb++] = i;
    }
    g->block_of[i] = g->nb - 1;
  }
  if (g->nb > 0) g->end[g->nb - 1] = n;
  g->succ = malloc(sizeof(int) * 2 * (size_t)(g->nb + 1));
  if (!g->succ) return ht_error(HT_ERR_NOMEM, "out of memory");
  for (int b = 0; b < g->nb; b++) {
    const ptx_insn *last = &k->insns[g->end[b] - 1];
    int fall = b + 1 < g->nb ? b + 1 : -1, tgt = -1;
    if (is_branch(last)) {
      tgt = strncmp(last->opcode, "brx", 3) == 0 ? -1 : target_block(g, last);
      if (last->guard < 0 && strncmp(last->opcode, "brx", 3) != 0) fall = -1;
    } else if (is_return(last) && last->guard < 0) {
      fall = -1;
    }
    g->succ[2 * (size_t)b] = fall;
    g->succ[2 * (size_t)b + 1] = tgt == fall ? -1 : tgt; /* one edge, counted once */
  }
  g->pred_at = calloc((size_t)g->nb + 2, sizeof(int));
  g->pred = malloc(sizeof(int) * (2 * (size_t)g->nb + 1));
  if (!g->pred_at || !g->pred) return ht_error(HT_ERR_NOMEM, "out of memory");
  for (int e = 0; e < 2 * g->nb; e++)
    if (g->succ[e] >= 0) g->pred_at[g->succ[e] + 2]++;
  for (int b = 0; b < g->nb; b++) g->pred_at[b + 2] += g->pred_at[b + 1];
  for (int e = 0; e < 2 * g->nb; e++)
    if (g->succ[e] >= 0) g->pred[g->pred_at[g->succ[e] + 1]++] = e / 2;
  return def_index(g);
}

static int dom_has(const cfg *g, int b, int d) { return (int)((g->dom[(size_t)b * (size_t)g->words + (size_t)(d / 64)] >> (d % 64)) & 1); }

/* Iterative dominators over reachable blocks (Cooper-Harvey-Kennedy style with bitsets). */
static ht_status cfg_dominators(cfg *g) {
  int nb = g->nb, w = (nb + 63) / 64 + 1; /* +1: never a zero-size allocation */
  if (nb > MAX_BLOCKS) /* the bitsets are nb^2 bits: 32 MiB at the limit */
    return ht_error(HT_ERR_UNSUPPORTED, "kernel %s has %d basic blocks; loop analysis handles at most %d", g->k->name, nb, MAX_BLOCKS);
  g->words = w;
  g->reach = calloc((size_t)nb + 1, 1);
  g->dom = malloc(sizeof(uint64_t) * (size_t)w * (size_t)(nb + 1));
  int *stack = malloc(sizeof(int) * (size_t)(2 * nb + 1));
  uint64_t *tmp = malloc(sizeof(uint64_t) * (size_t)w);
  if (!g->reach || !g->dom || !stack || !tmp) {
    free(stack);
    free(tmp);
    return ht_error(HT_ERR_NOMEM, "out of memory");
  }
  int sp = 0;
  if (nb > 0) {
    stack[sp++] = 0;
    g->reach[0] = 1;
  }
  while (sp > 0) {
    int b = stack[--sp];
    for (int s = 0; s < 2; s++) {
      int t = g->succ[2 * b + s];
      if (t >= 0 && !g->reach[t]) {
        g->reach[t] = 1;
        stack[sp++] = t;
      }
    }
  }
  for (int b = 0; b < nb; b++) {
    uint64_t *d = &g->dom[(size_t)b * (size_t)w];
    memset(d, b == 0 ? 0 : 0xff, sizeof(uint64_t) * (size_t)w);
    if (b == 0) d[0] = 1;
  }
  for (int changed = 1; changed;) {
    changed = 0;
    for (int b = 1; b < nb; b++) {
      if (!g->reach[b]) continue;
      memset(tmp, 0xff, sizeof(uint64_t) * (size_t)w);
      for (int e = g->pred_at[b]; e < g->pred_at[b + 1]; e++) {
        int p = g->pred[e];
        if (!g->reach[p]) continue;
        for (int x = 0; x < w; x++) tmp[x] &= g->dom[(size_t)p * (size_t)w + (size_t)x];
      }
      tmp[b / 64] |= 1ull << (b % 64);
      uint64_t *d = &g->dom[(size_t)b * (size_t)w];
      if (memcmp(d, tmp, sizeof(uint64_t) * (size_t)w) != 0) {
        memcpy(d, tmp, sizeof(uint64_t) * (size_t)w);
        changed = 1;
      }
    }
  }
  free(stack);
  free(tmp);
  return HT_OK;
}

/* ---- evaluation of register values ---- */

static double eval_reg(const eval_ctx *c, int reg, int before, int depth);
static int cmp_code(const char *op);

/* a CMP b as 1/0 (cmp codes of cmp_code), NAN when unknown. */
static double compare(int cmp, double a, double b) {
  if (isnan(a) || isnan(b)) return NAN;
  switch (cmp) {
  case -2: return a < b;
  case -1: return a <= b;
  case 1: return a >= b;
  case 2: return a > b;
  case 3: return a == b;
  case 4: return a != b;
  default: return NAN;
  }
}

/* The last instruction before `before` (in listing order) that writes reg, or -1. */
static int last_def(const cfg *g, int reg, int before) {
  int lo = g->def_at[reg], hi = g->def_at[reg + 1]; /* first position >= before in [lo, hi) */
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (g->def_pos[mid] < before) lo = mid + 1;
    else hi = mid;
  }
  return lo > g->def_at[reg] ? g->def_pos[lo - 1] : -1;
}

static double eval_operand(const eval_ctx *c, const ptx_operand *o, int at, int depth) {
  if (o->kind == OP_IMM) return o->imm;
  if (o->kind == OP_REG && o->n_regs == 1) return eval_reg(c, o->regs[0], at, depth + 1);
  return NAN;
}

static int param_index(const ptx_kernel *k, const char *sym) {
  for (int i = 0; sym && i < k->n_params; i++)
    if (strcmp(k->params[i], sym) == 0) return i;
  return -1;
}

static int op_is(const char *op, const char *root) {
  size_t n = strlen(root);
  return strncmp(op, root, n) == 0 && (op[n] == '\0' || op[n] == '.');
}

/* The value instruction i writes, from its operands; NAN when not a recognised computation. */
static double eval_insn(const eval_ctx *c, int i, int reg, int depth) {
  const ptx_insn *in = &c->k->insns[i];
  if (depth > 24 || in->guard >= 0) return NAN; /* a predicated def may or may not happen */
  const char *op = in->opcode;
  if (op_is(op, "ld") && strstr(op, ".param") && in->n_ops == 2 && in->ops[1].kind == OP_MEM) {
    int p = param_index(c->k, in->ops[1].sym);
    return p >= 0 && p < c->n && in->ops[1].imm == 0 && in->ops[1].n_regs == 0 ? c->pv[p] : NAN;
  }
  if (in->n_ops < 2) return NAN;
  double a = eval_operand(c, &in->ops[1], i, depth);
  if (op_is(op, "mov") || op_is(op, "cvt") || op_is(op, "cvta")) return a;
  if (op_is(op, "neg")) return -a;
  if (op_is(op, "not") && strstr(op, ".pred")) return isnan(a) ? NAN : a == 0;
  if (in->n_ops < 3) return NAN;
  double b = eval_operand(c, &in->ops[2], i, depth);
  if (op_is(op, "add")) return a + b;
  if (op_is(op, "sub")) return a - b;
  if (op_is(op, "mul")) return a * b;
  if (op_is(op, "shl")) return isfinite(b) && b >= 0 && b < 63 ? a * ldexp(1.0, (int)b) : NAN;
  if (op_is(op, "shr")) return isfinite(b) && b >= 0 && b < 63 ? floor(a / ldexp(1.0, (int)b)) : NAN;
  if (op_is(op, "div")) return b != 0 ? trunc(a / b) : NAN;
  if (op_is(op, "rem")) return b != 0 ? fmod(a, b) : NAN;
  if (op_is(op, "min")) return fmin(a, b);
  if (op_is(op, "max")) return fmax(a, b);
  if (op_is(op, "and") || op_is(op, "or") || op_is(op, "xor")) { /* two's complement, as the hardware */
    if (!(fabs(a) < 4.0e15 && fabs(b) < 4.0e15) || a != floor(a) || b != floor(b)) return NAN;
    int64_t x = (int64_t)a, y = (int64_t)b;
    return (double)(op[0] == 'a' ? x & y : op[0] == 'o' ? x | y : x ^ y);
  }
  if (op_is(op, "mad") && in->n_ops == 4) return a * b + eval_operand(c, &in->ops[3], i, depth);
  if (op_is(op, "setp") && in->n_ops == 3) { /* predicates as 1/0; the q of p|q is the complement */
    double v = compare(cmp_code(op), a, b);
    return in->ops[0].n_regs == 2 && in->ops[0].regs[1] == reg && !isnan(v) ? 1 - v : v;
  }
  return NAN;
}

static int varies(const eval_ctx *c, int reg) {
  for (int j = c->g->def_at[reg]; c->forbid && j < c->g->def_at[reg + 1]; j++)
    if (c->forbid[c->g->block_of[c->g->def_pos[j]]]) return 1;
  return 0;
}

static double eval_reg(const eval_ctx *c, int reg, int before, int depth) {
  if (depth > 24 || reg < 0 || reg >= c->k->n_regnames || --*c->budget < 0) return NAN;
  if (ptx_is_special_reg(c->k->regnames[reg])) return 0.0;
  int d = last_def(c->g, reg, before);
  /* A definition earlier in the user's own block always reaches it; otherwise any definition in
   * a loop around the branch may be the one that reaches it (another iteration or path). */
  if (c->forbid && !(d >= 0 && before < c->k->n_insns && c->g->block_of[d] == c->g->block_of[before]) && varies(c, reg))
    return NAN;
  return d < 0 ? NAN : eval_insn(c, d, reg, depth + 1);
}

/* ---- loops ---- */

typedef struct loop {
  int header;
  char *body; /* per block */
} loop;

static int in_loop(const cfg *g, const loop *L, int insn) { return L->body[g->block_of[insn]]; }

/* Number of defs of reg inside the loop; *where = the last one. */
static int defs_in_loop(const cfg *g, const loop *L, int reg, int *where) {
  int n = 0;
  for (int j = g->def_at[reg]; j < g->def_at[reg + 1]; j++)
    if (in_loop(g, L, g->def_pos[j])) {
      n++;
      *where = g->def_pos[j];
    }
  return n;
}

/* Maps a setp comparison to -2 lt, -1 le, 1 ge, 2 gt, 3 eq, 4 ne; 0 if unknown. */
static int cmp_code(const char *op) {
  static const struct { const char *m; int c; } t[] = {{"lt", -2}, {"lo", -2}, {"ltu", -2}, {"le", -1}, {"ls", -1}, {"leu", -1},
                                                       {"ge", 1},  {"hs", 1},  {"geu", 1},  {"gt", 2},  {"hi", 2},  {"gtu", 2},
                                                       {"eq", 3},  {"equ", 3}, {"ne", 4},   {"neu", 4}};
  const char *p = strchr(op, '.');
  if (!p) return 0;
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    size_t n = strlen(t[i].m);
    if (strncmp(p + 1, t[i].m, n) == 0 && (p[1 + n] == '.' || p[1 + n] == '\0')) return t[i].c;
  }
  return 0;
}

static int cmp_negate(int c) { return c == 3 ? 4 : c == 4 ? 3 : c == -2 ? 1 : c == -1 ? 2 : c == 1 ? -2 : -1; }
static int cmp_swap(int c) { return c == 3 || c == 4 ? c : -c; }

/* Iterations of a loop that continues while (v0 + (t-1+post)*s) CMP b, tested after each
 * iteration t = 1, 2, ...: the first t where the test fails. A count below 1 means the loop
 * would fail its test before the first iteration: nvcc guards every rotated loop with that
 * same test (for (k = 0; k < K; ...) with K <= 0), so it is not entered: 0. */
static double solve_trip(int cmp, double v0, double s, double b, int post) {
  if (!isfinite(v0) || !isfinite(s) || !isfinite(b) || s == 0) return NAN;
  if (cmp == 2 || cmp == 1) { /* x > b  ==  -x < -b */
    v0 = -v0;
    s = -s;
    b = -b;
    cmp = -cmp;
  }
  if (cmp == -1) { /* x <= b  ==  x < b + 1 for integers */
    b += 1;
    cmp = -2;
  }
  if (cmp == -2) {
    if (s < 0) return NAN; /* runs away from the bound: not a counted loop */
    double t = ceil((b - v0) / s) + 1 - post;
    return t < 1 ? 0 : t;
  }
  if (cmp == 4) {
    double t = (b - v0) / s + 1 - post;
    return t >= 0 && t == floor(t) ? t : NAN;
  }
  if (cmp == 3) return v0 + post * s == b ? NAN : 1;
  return NAN;
}

/* The one conditional branch leaving the loop; -1 if none or several. *stay_true: whether the
 * loop continues when the guard predicate (as written, negation applied) is true. */
static int exit_branch(const cfg *g, const loop *L, int *stay_true) {
  int found = -1;
  for (int b = 0; b < g->nb; b++) {
    if (!L->body[b]) continue;
    for (int s = 0; s < 2; s++) {
      int t = g->succ[2 * b + s];
      if (t >= 0 && L->body[t]) continue;
      if (t < 0 && s == 1) continue;
      int last = g->end[b] - 1;
      const ptx_insn *in = &g->k->insns[last];
      if (t < 0 && !is_return(in)) continue; /* falls off the end of the listing */
      if (!is_branch(in) || in->guard < 0 || (found >= 0 && found != last)) return -1;
      found = last;
      *stay_true = s == 0; /* leaving by the fall-through: the branch (taken = true) stays */
    }
  }
  return found;
}

/* An in-loop increment "r = r +/- step" of register r: its instruction index, or -1. */
static int self_increment(const cfg *g, const loop *L, int r, const ptx_operand **step, double *sign) {
  int at = -1;
  if (defs_in_loop(g, L, r, &at) != 1) return -1;
  const ptx_insn *in = &g->k->insns[at];
  if ((!op_is(in->opcode, "add") && !op_is(in->opcode, "sub")) || in->n_ops != 3 || in->guard >= 0) return -1;
  int self = in->ops[1].kind == OP_REG && in->ops[1].regs[0] == r ? 1 : 2;
  if (in->ops[self].kind != OP_REG || in->ops[self].regs[0] != r || (self == 2 && op_is(in->opcode, "sub"))) return -1;
  *step = &in->ops[3 - self];
  *sign = op_is(in->opcode, "sub") ? -1 : 1;
  return at;
}

/* The induction register behind x, the register a setp compares. Three shapes nvcc writes:
 * "x = x + C"; "t = x + C; ...; mov x, t" (x changes at the mov); and "x = i + C; ...; mov i, x"
 * (x is the incremented copy of the induction register i, so the test sees the new value); and
 * "x = inv + i" with i incremented elsewhere (nvcc's unrolled main loops: remainder - n + k). */
static int find_induction(const cfg *g, const loop *L, int x, int setp_at, int *ivreg, const ptx_operand **step,
                          double *sign, int *post, const ptx_operand **offset) {
  int at = -1;
  *offset = NULL;
  if (defs_in_loop(g, L, x, &at) != 1) return 0;
  const ptx_insn *in = &g->k->insns[at];
  *ivreg = x;
  if (self_increment(g, L, x, step, sign) >= 0) {
    *post = at < setp_at;
    return 1;
  }
  if (in->guard >= 0 || in->n_ops < 2 || in->ops[1].kind != OP_REG) return 0;
  int y = in->ops[1].regs[0], y_at = -1;
  if (op_is(in->opcode, "mov") && in->n_ops == 2) { /* mov x, t with t = x + C */
    int t_at = -1;
    if (defs_in_loop(g, L, y, &t_at) != 1) return 0;
    const ptx_insn *t = &g->k->insns[t_at];
    if ((!op_is(t->opcode, "add") && !op_is(t->opcode, "sub")) || t->n_ops != 3 || t->guard >= 0) return 0;
    if (t->ops[1].kind != OP_REG || t->ops[1].regs[0] != x) return 0;
    *step = &t->ops[2];
    *sign = op_is(t->opcode, "sub") ? -1 : 1;
    *post = at < setp_at;
    return 1;
  }
  if (op_is(in->opcode, "add") && in->n_ops == 3 && in->ops[2].kind == OP_REG) { /* x = inv + i, i += C */
    for (int side = 1; side <= 2; side++) {
      int i = in->ops[side].regs[0], i_at = self_increment(g, L, i, step, sign), tmp;
      const ptx_operand *inv = &in->ops[3 - side];
      if (i_at < 0 || i == x || (inv->kind == OP_REG && defs_in_loop(g, L, inv->regs[0], &tmp) > 0)) continue;
      *ivreg = i;
      *offset = inv;
      *post = i_at < at;
      return at < setp_at;
    }
  }
  if ((op_is(in->opcode, "add") || op_is(in->opcode, "sub")) && in->n_ops == 3 && at < setp_at &&
      defs_in_loop(g, L, y, &y_at) == 1) { /* x = i + C, mov i, x */
    const ptx_insn *mv = &g->k->insns[y_at];
    if (!op_is(mv->opcode, "mov") || mv->n_ops != 2 || mv->ops[1].kind != OP_REG || mv->ops[1].regs[0] != x) return 0;
    *ivreg = y;
    *step = &in->ops[2];
    *sign = op_is(in->opcode, "sub") ? -1 : 1;
    *post = 1;
    return 1;
  }
  return 0;
}

/* Trip count of one loop with the given parameter values, NAN when not recognised. */
static double loop_trip(const cfg *g, const loop *L, const eval_ctx *c) {
  int stay_true = 0, br = exit_branch(g, L, &stay_true);
  if (br < 0) return NAN;
  const ptx_insn *bi = &g->k->insns[br];
  int setp_at = -1;
  if (defs_in_loop(g, L, bi->guard, &setp_at) != 1) return NAN;
  const ptx_insn *sp = &g->k->insns[setp_at];
  if (!op_is(sp->opcode, "setp") || sp->n_ops != 3 || sp->ops[0].n_regs < 1) return NAN;
  int cmp = cmp_code(sp->opcode);
  if (!cmp) return NAN;
  if (sp->ops[0].regs[0] != bi->guard) cmp = cmp_negate(cmp); /* the q of p|q is the complement */
  if (bi->guard_neg) stay_true = !stay_true;
  if (!stay_true) cmp = cmp_negate(cmp);
  for (int side = 1; side <= 2; side++) {
    const ptx_operand *x = &sp->ops[side], *bound = &sp->ops[3 - side], *stp, *off;
    int ivreg, post, tmp;
    double sign;
    if (x->kind != OP_REG || x->n_regs != 1) continue;
    if (!find_induction(g, L, x->regs[0], setp_at, &ivreg, &stp, &sign, &post, &off)) continue;
    if (bound->kind == OP_REG && defs_in_loop(g, L, bound->regs[0], &tmp) > 0) continue;
    if (stp->kind == OP_REG && defs_in_loop(g, L, stp->regs[0], &tmp) > 0) continue;
    int header_at = g->start[L->header];
    double s = eval_operand(c, stp, header_at, 0) * sign;
    double b = eval_operand(c, bound, header_at, 0);
    double v0 = eval_reg(c, ivreg, header_at, 0) + (off ? eval_operand(c, off, header_at, 0) : 0.0);
    return solve_trip(side == 1 ? cmp : cmp_swap(cmp), v0, s, b, post);
  }
  return NAN;
}

/* Natural loops, one per header (back edges to one header merged). */
static ht_status find_loops(const cfg *g, loop **out, int *n_out) {
  *out = NULL;
  *n_out = 0;
  int n = 0;
  loop *loops = NULL;
  int *stack = malloc(sizeof(int) * (size_t)(g->nb + 1));
  if (!stack) return ht_error(HT_ERR_NOMEM, "out of memory");
  for (int h = 0; h < g->nb; h++) {
    if (!g->reach[h]) continue;
    loop *L = NULL;
    for (int e = g->pred_at[h]; e < g->pred_at[h + 1]; e++) {
      int u = g->pred[e];
      if (!g->reach[u] || !dom_has(g, u, h)) continue;
      if (!L) {
        loop *nl = realloc(loops, sizeof(loop) * (size_t)(n + 1));
        char *body = calloc((size_t)g->nb, 1);
        if (!nl || !body) {
          free(body);
          free(nl ? nl : loops);
          free(stack);
          return ht_error(HT_ERR_NOMEM, "out of memory");
        }
        loops = nl;
        L = &loops[n++];
        L->header = h;
        L->body = body;
        body[h] = 1;
      }
      int sp = 0; /* blocks reaching u without passing through h */
      if (!L->body[u]) {
        L->body[u] = 1;
        stack[sp++] = u;
      }
      while (sp > 0) {
        int x = stack[--sp];
        for (int e2 = g->pred_at[x]; e2 < g->pred_at[x + 1]; e2++) {
          int p = g->pred[e2];
          if (g->reach[p] && !L->body[p]) {
            L->body[p] = 1;
            stack[sp++] = p;
          }
        }
      }
    }
  }
  free(stack);
  *out = loops;
  *n_out = n;
  return HT_OK;
}

/* With opts->eval_branches: a conditional branch whose predicate evaluates (constants, parameter
 * values, thread 0's special registers, nothing that changes in a loop around it) keeps only the
 * side it takes; blocks no longer reachable from the entry count 0. Returns how many decided. */
static int decide_branches(const cfg *g, const loop *loops, int nl, eval_ctx *c, char *alive) {
  int decided = 0;
  char *forbid = calloc((size_t)g->nb + 1, 1), *live = malloc(2 * (size_t)g->nb + 1);
  int *stack = malloc(sizeof(int) * ((size_t)g->nb + 1));
  if (!forbid || !live || !stack) {
    memset(alive, 1, (size_t)g->nb);
    free(forbid);
    free(live);
    free(stack);
    return 0;
  }
  for (int e = 0; e < 2 * g->nb; e++) live[e] = g->succ[e] >= 0;
  for (int b = 0; b < g->nb; b++) {
    const ptx_insn *in = &g->k->insns[g->end[b] - 1];
    if (!is_branch(in) || in->guard < 0 || strncmp(in->opcode, "brx", 3) == 0) continue;
    for (int x = 0; x < g->nb; x++) {
      forbid[x] = 0;
      for (int l = 0; l < nl; l++) forbid[x] |= loops[l].body[b] && loops[l].body[x];
    }
    int budget = EVAL_BUDGET;
    c->budget = &budget;
    c->forbid = forbid;
    double v = eval_reg(c, in->guard, g->end[b] - 1, 0);
    if (isnan(v)) continue;
    int taken = (v != 0) != in->guard_neg;
    live[2 * (size_t)b + (taken ? 0 : 1)] = 0;
    decided++;
  }
  c->forbid = NULL;
  memset(alive, 0, (size_t)g->nb);
  int sp = 0;
  alive[0] = 1;
  stack[sp++] = 0;
  while (sp > 0) {
    int b = stack[--sp];
    for (int s = 0; s < 2; s++) {
      int t = g->succ[2 * b + s];
      if (t >= 0 && live[2 * b + s] && !alive[t]) {
        alive[t] = 1;
        stack[sp++] = t;
      }
    }
  }
  free(forbid);
  free(live);
  free(stack);
  return decided;
}

ht_status ht_ptx_executed_counts(const ht_ptx_module *m, int kernel, const double *param_values, int n,
                                 const ht_ptx_exec_options *opts, ht_ptx_counts *out, ht_ptx_exec_info *info) {
  const ptx_kernel *k = ptx_entry(m, kernel);
  if (!k || !out) return ht_error(HT_ERR_INVALID, "ht_ptx_executed_counts: no kernel %d", kernel);
  double def_trip = opts && opts->default_trip > 0 ? opts->default_trip : 1.0;
  ht_ptx_exec_info inf = {0};
  memset(out, 0, sizeof *out);
  if (k->n_insns == 0) {
    if (info) *info = inf;
    return HT_OK;
  }
  cfg g = {.k = k};
  loop *loops = NULL;
  int nl = 0;
  double *w = NULL, *bw = NULL;
  ht_status st = cfg_blocks(&g);
  if (!st) st = cfg_dominators(&g);
  if (!st) st = find_loops(&g, &loops, &nl);
  if (!st) {
    w = malloc(sizeof(double) * (size_t)k->n_insns);
    bw = calloc((size_t)g.nb + 1, sizeof(double));
  }
  if (!st && (!w || !bw)) st = ht_error(HT_ERR_NOMEM, "out of memory");
  if (!st && w && bw) {
    int budget = 0;
    eval_ctx c = {k, param_values, param_values ? n : 0, &budget, &g, NULL};
    for (int b = 0; b < g.nb; b++) bw[b] = 1.0;
    for (int l = 0; l < nl; l++) {
      budget = EVAL_BUDGET;
      double t = loop_trip(&g, &loops[l], &c);
      if (!isfinite(t) || t < 0) {
        t = def_trip;
        inf.unresolved_loops++;
      } else if (t > inf.max_trip) {
        inf.max_trip = t;
      }
      for (int b = 0; b < g.nb; b++)
        if (loops[l].body[b]) bw[b] *= t; /* nested loops multiply */
    }
    char *alive = opts && opts->eval_branches ? malloc((size_t)g.nb + 1) : NULL;
    if (alive) {
      inf.decided_branches = decide_branches(&g, loops, nl, &c, alive);
      for (int b = 0; b < g.nb; b++)
        if (!alive[b]) bw[b] = 0;
      free(alive);
    }
    for (int i = 0; i < k->n_insns; i++) w[i] = bw[g.block_of[i]];
    ptx_counts_weighted(k, w, out);
    inf.loops = nl;
  }
  for (int l = 0; l < nl; l++) free(loops[l].body);
  free(loops);
  free(w);
  free(bw);
  cfg_free(&g);
  if (info) *info = inf;
  return st;
}
