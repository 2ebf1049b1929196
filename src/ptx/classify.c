/* Instruction classes of Equation (1) (reference 003), static counts, kernel lookup, and the
 * def/use of an instruction's registers (for dpc.c and loops.c). The class table is documented
 * in docs/ptx.md. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ptx/ptx_internal.h"

const ptx_kernel *ptx_entry(const ht_ptx_module *m, int kernel) {
  if (!m || kernel < 0) return NULL;
  for (int i = 0, e = 0; i < m->n_kernels; i++)
    if (m->kernels[i].is_entry && e++ == kernel) return &m->kernels[i];
  return NULL;
}

int ptx_find_label(const ptx_kernel *k, const char *name) {
  for (int i = 0; i < k->n_labels; i++)
    if (strcmp(k->labels[i], name) == 0) return i;
  return -1;
}

int ptx_is_special_reg(const char *name) {
  static const char *const sp[] = {"%tid", "%ntid", "%ctaid", "%nctaid", "%laneid", "%warpid", "%nwarpid", "%smid",
                                   "%nsmid", "%gridid", "%clock", "%clock64", "%globaltimer", "%lanemask",
                                   "%clusterid", "%nclusterid", "%cluster_ctaid", "%cluster_nctaid", "%dynamic_smem_size",
                                   "%total_smem_size", "%envreg", "%pm"};
  for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++) {
    size_t n = strlen(sp[i]);
    if (strncmp(name, sp[i], n) == 0 && (name[n] == '\0' || name[n] == '.' || name[n] == '_' || (name[n] >= '0' && name[n] <= '9')))
      return 1;
  }
  return 0;
}

/* ---- classification ---- */

static int has_mod(const char *opcode, const char *mod) {
  size_t n = strlen(mod);
  for (const char *p = strchr(opcode, '.'); p; p = strchr(p + 1, '.'))
    if (strncmp(p + 1, mod, n) == 0 && (p[1 + n] == '\0' || p[1 + n] == '.' || p[1 + n] == ':')) return 1;
  return 0;
}

static int root_is(const char *opcode, const char *root) {
  size_t n = strlen(root);
  return strncmp(opcode, root, n) == 0 && (opcode[n] == '\0' || opcode[n] == '.');
}

static int root_in(const char *opcode, const char *const *roots) {
  for (int i = 0; roots[i]; i++)
    if (root_is(opcode, roots[i])) return 1;
  return 0;
}

/* The state space of a memory instruction decides its class; generic addresses (no space) are
 * counted as global, because nvcc emits them for pointers it cannot prove to be elsewhere and
 * those are global buffers in the kernels analysed; .local (stack, spills) is off-chip too. */
static ht_ptx_class memory_class(const char *op, int is_write) {
  if (has_mod(op, "shared")) return is_write ? HT_PTX_SHARED_WRITE : HT_PTX_SHARED_READ;
  if (has_mod(op, "param") || has_mod(op, "const")) return HT_PTX_COMPUTE;
  return is_write ? HT_PTX_GLOBAL_WRITE : HT_PTX_GLOBAL_READ;
}

ht_ptx_class ht_ptx_classify(const char *op) {
  static const char *const not_counted[] = {"ret", "exit", NULL};
  static const char *const reads[] = {"ld", "ldu", "tex", "tld4", "suld", "prefetch", NULL};
  static const char *const writes[] = {"st", "atom", "red", "sust", "sured", NULL};
  static const char *const syncs[] = {"bar", "barrier", "membar", "fence", "mbarrier", "cp.async.wait_group",
                                      "cp.async.wait_all", "cp.async.commit_group", NULL};
  static const char *const sfu[] = {"sqrt", "rsqrt", "sin", "cos", "ex2", "lg2", "rcp", "tanh", NULL};
  static const char *const moves[] = {"mov", "ld", "st", "cvta", NULL};
  if (!op || !*op) return HT_PTX_NONE;
  if (root_in(op, not_counted)) return HT_PTX_NONE;
  if (root_in(op, syncs)) return HT_PTX_SYNC; /* before reads: cp.async.wait_* are barriers */
  if (root_is(op, "cp")) return HT_PTX_GLOBAL_READ; /* cp.async[.bulk]: global -> shared, the read is off-chip */
  if (root_is(op, "ldmatrix")) return HT_PTX_SHARED_READ;
  if (root_is(op, "stmatrix")) return HT_PTX_SHARED_WRITE;
  if (root_in(op, reads)) return root_is(op, "tex") || root_is(op, "tld4") ? HT_PTX_GLOBAL_READ : memory_class(op, 0);
  if (root_in(op, writes)) return memory_class(op, 1);
  /* Double-precision arithmetic runs on the DP units, single-precision transcendentals on the
   * SFUs; f64 sqrt/rcp are DP sequences, so .f64 wins over the SFU opcode. */
  if (has_mod(op, "f64") && !root_in(op, moves)) return HT_PTX_DPU;
  if (root_in(op, sfu)) return HT_PTX_SFU;
  return HT_PTX_COMPUTE;
}

const char *ht_ptx_class_name(ht_ptx_class c) {
  static const char *const names[] = {"compute", "global_read", "global_write", "shared_read",
                                      "shared_write", "sync", "dpu", "sfu"};
  return c >= 0 && c < HT_PTX_CLASS_COUNT ? names[c] : "none";
}

/* ---- kernels ---- */

int ht_ptx_kernel_count(const ht_ptx_module *m) {
  int n = 0;
  for (int i = 0; m && i < m->n_kernels; i++) n += m->kernels[i].is_entry;
  return n;
}

const char *ht_ptx_kernel_name(const ht_ptx_module *m, int kernel) {
  const ptx_kernel *k = ptx_entry(m, kernel);
  return k ? k->name : NULL;
}

int ht_ptx_kernel_param_count(const ht_ptx_module *m, int kernel) {
  const ptx_kernel *k = ptx_entry(m, kernel);
  return k ? k->n_params : -1;
}

const char *ht_ptx_kernel_param_name(const ht_ptx_module *m, int kernel, int param) {
  const ptx_kernel *k = ptx_entry(m, kernel);
  return k && param >= 0 && param < k->n_params ? k->params[param] : NULL;
}

int ht_ptx_instruction_count(const ht_ptx_module *m, int kernel) {
  const ptx_kernel *k = ptx_entry(m, kernel);
  if (!k) return -1;
  int n = 0;
  for (int i = 0; i < k->n_insns; i++) n += k->insns[i].label < 0 && k->insns[i].cls != HT_PTX_NONE;
  return n;
}

/* "_Z4gemmPfPKfS1_iii" -> is the identifier after _Z<len> equal to name? */
static int mangled_is(const char *mangled, const char *name) {
  if (strncmp(mangled, "_Z", 2) != 0) return 0;
  const char *p = mangled + 2;
  if (*p == 'N') return 0; /* nested names (namespaces): fall back to the substring rule */
  char *end;
  long len = strtol(p, &end, 10);
  return end != p && len == (long)strlen(name) && strncmp(end, name, (size_t)len) == 0;
}

int ht_ptx_kernel_find(const ht_ptx_module *m, const char *name) {
  int n = ht_ptx_kernel_count(m);
  if (!name) {
    ht_error(HT_ERR_INVALID, "no kernel name");
    return -1;
  }
  for (int rule = 0; rule < 3; rule++) {
    int found = -1, count = 0;
    for (int i = 0; i < n; i++) {
      const char *kn = ht_ptx_kernel_name(m, i);
      int hit = rule == 0 ? strcmp(kn, name) == 0 : rule == 1 ? mangled_is(kn, name) : strstr(kn, name) != NULL;
      if (hit && count++ == 0) found = i;
    }
    if (count == 1) return found;
    if (count > 1) {
      ht_error(HT_ERR_NOTFOUND, "kernel name '%s' is ambiguous (%d kernels match)", name, count);
      return -1;
    }
  }
  ht_error(HT_ERR_NOTFOUND, "no kernel '%s' in %s (%d kernels)", name, m ? m->source_name : "?", n);
  return -1;
}

/* ---- counts ---- */

static void counts_add(ht_ptx_counts *c, ht_ptx_class cls, double w) {
  double *slot[] = {&c->compute, &c->global_read, &c->global_write, &c->shared_read,
                    &c->shared_write, &c->sync, &c->dpu, &c->sfu};
  if (cls < 0 || cls >= HT_PTX_CLASS_COUNT) return;
  *slot[cls] += w;
  c->total += w;
}

ht_status ht_ptx_static_counts(const ht_ptx_module *m, int kernel, ht_ptx_counts *out) {
  const ptx_kernel *k = ptx_entry(m, kernel);
  if (!k || !out) return ht_error(HT_ERR_INVALID, "ht_ptx_static_counts: no kernel %d", kernel);
  memset(out, 0, sizeof *out);
  for (int i = 0; i < k->n_insns; i++)
    if (k->insns[i].label < 0) counts_add(out, k->insns[i].cls, 1.0);
  return HT_OK;
}

/* Shared with loops.c through this weak coupling: counts weighted per instruction. */
void ptx_counts_weighted(const ptx_kernel *k, const double *weight, ht_ptx_counts *out) {
  memset(out, 0, sizeof *out);
  for (int i = 0; i < k->n_insns; i++)
    if (k->insns[i].label < 0) counts_add(out, k->insns[i].cls, weight[i]);
}

/* ---- def/use ---- */

/* Instructions whose first operand is read, not written (stores, branches, barriers...). */
int ptx_writes_nothing(const char *op) {
  static const char *const roots[] = {"st", "red", "bra", "brx", "bar", "barrier", "membar", "fence", "prefetch",
                                      "prefetchu", "cp", "call", "ret", "exit", "trap", "sust", "sured", "stmatrix",
                                      "mbarrier", "pmevent", "brkpt", "griddepcontrol", NULL};
  if (root_is(op, "mbarrier")) return !has_mod(op, "try_wait") && !has_mod(op, "test_wait") && !has_mod(op, "arrive");
  return root_in(op, roots);
}

int ptx_insn_dests(const ptx_insn *in, int *dst, int max) {
  if (in->label >= 0 || in->n_ops == 0 || in->no_dest) return 0;
  const ptx_operand *o = &in->ops[0];
  if (o->kind == OP_MEM) return 0;
  int n = 0;
  for (int r = 0; r < o->n_regs && n < max; r++) dst[n++] = o->regs[r];
  return n;
}

int ptx_insn_srcs(const ptx_insn *in, int *src, int max) {
  int n = 0;
  if (in->label >= 0) return 0;
  if (in->guard >= 0 && n < max) src[n++] = in->guard;
  int first = (in->n_ops > 0 && in->ops[0].kind != OP_MEM && !in->no_dest) ? 1 : 0;
  for (int o = first; o < in->n_ops; o++)
    for (int r = 0; r < in->ops[o].n_regs && n < max; r++) src[n++] = in->ops[o].regs[r];
  return n;
}
