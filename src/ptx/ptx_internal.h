/* PTX analysis: the parsed representation shared by parse.c, classify.c, loops.c, features.c. */
#ifndef HT_PTX_INTERNAL_H
#define HT_PTX_INTERNAL_H

#include "hetune/ptx.h"

typedef enum ptx_opkind { OP_REG, OP_IMM, OP_SYM, OP_MEM, OP_VEC, OP_OTHER } ptx_opkind;

/* One operand. Registers are interned per kernel as small integers (regs[]). */
typedef struct ptx_operand {
  ptx_opkind kind;
  int n_regs;
  int regs[8];    /* registers named in the operand (vector elements, memory base, p|q pairs) */
  double imm;     /* OP_IMM; OP_MEM: the +offset */
  char *sym;      /* OP_SYM: label/symbol name; OP_MEM: base symbol or NULL */
} ptx_operand;

typedef struct ptx_insn {
  int line, col;
  char *opcode;   /* with modifiers: "ld.global.nc.v4.f32" */
  int guard;      /* predicate register or -1 */
  int guard_neg;
  int n_ops;
  ptx_operand *ops;
  int label;      /* >= 0: this entry is a label (index into kernel labels), not an instruction */
  ht_ptx_class cls;
  int no_dest;    /* the first operand is read, not written (stores, branches, barriers...) */
} ptx_insn;

typedef struct ptx_kernel {
  char *name;
  int is_entry;
  int n_params;
  char **params;
  int n_insns, cap_insns;
  ptx_insn *insns;   /* labels and instructions in listing order */
  int n_labels, cap_labels;
  char **labels;
  int *label_pos;    /* index in insns of each label */
  int n_regnames, cap_regnames;
  char **regnames;   /* interned register names */
} ptx_kernel;

struct ht_ptx_module {
  char *source_name;
  int n_kernels, cap_kernels;
  ptx_kernel *kernels; /* entries and funcs with bodies */
};

/* Index of the kernels[] element of entry number `kernel`, or -1. */
const ptx_kernel *ptx_entry(const ht_ptx_module *m, int kernel);
int ptx_find_label(const ptx_kernel *k, const char *name);
int ptx_is_special_reg(const char *name);
/* Whether an opcode's first operand is a source (set once per instruction by the parser). */
int ptx_writes_nothing(const char *opcode);
/* Number of registers written by an instruction (its first operand's, or none). */
int ptx_insn_dests(const ptx_insn *in, int *dst, int max);
/* Registers read by an instruction (guard included). */
int ptx_insn_srcs(const ptx_insn *in, int *src, int max);

/* Class counts with a weight per insns[] entry (labels ignored). */
void ptx_counts_weighted(const ptx_kernel *k, const double *weight, ht_ptx_counts *out);

#endif
