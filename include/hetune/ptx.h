/* Static PTX analysis: the instruction features of reference 003 (Equation (1) classes,
 * executed counts through loop trip counts, the data-dependency degree dpc of Equation (2))
 * and the resources ptxas reports (registers, shared memory).
 *
 * Typical use by the prediction code, per config of a CUDA spec:
 *
 *   char *ptx; ht_ptx_resources res[HT_PTX_MAX_RESOURCES]; int nres;
 *   ht_ptx_compile(src, "gemm.cu", defines, "sm_80", &ptx, res, HT_PTX_MAX_RESOURCES, &nres);
 *   ht_ptx_module *m; ht_ptx_parse(ptx, "gemm.ptx", &m);
 *   int k = ht_ptx_kernel_find(m, "gemm");
 *   double args[6] = {NAN, NAN, NAN, 1024, 1024, 1024};   (scalar kernel arguments, in order)
 *   ht_ptx_features f; ht_ptx_features_get(m, k, args, 6, NULL, &f);
 *   ht_ptx_features_set_resources(&f, res, nres, ht_ptx_kernel_name(m, k));
 *
 * or in one call: ht_ptx_features_from_source(src, name, defines, arch, kernel, args, n, &f).
 * Compilation results are cached on disk (ht_cache_dir()/ptx), so a repeated call with the same
 * source, defines and arch does not run nvcc again; parsing and counting take microseconds. */
#ifndef HETUNE_PTX_H
#define HETUNE_PTX_H

#include "hetune/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ht_ptx_module ht_ptx_module;

/* Instruction classes of Equation (1) of reference 003; see docs/ptx.md for the opcode table. */
typedef enum ht_ptx_class {
  HT_PTX_NONE = -1, /* not counted: ret, exit */
  HT_PTX_COMPUTE = 0,
  HT_PTX_GLOBAL_READ,
  HT_PTX_GLOBAL_WRITE,
  HT_PTX_SHARED_READ,
  HT_PTX_SHARED_WRITE,
  HT_PTX_SYNC,
  HT_PTX_DPU,
  HT_PTX_SFU,
  HT_PTX_CLASS_COUNT
} ht_ptx_class;

typedef struct ht_ptx_counts {
  double total; /* always the sum of the eight classes */
  double compute, global_read, global_write, shared_read, shared_write, sync, dpu, sfu;
} ht_ptx_counts;

typedef struct ht_ptx_resources {
  char kernel[128]; /* the (mangled) entry name ptxas printed */
  int registers;
  int shared_bytes;
  int local_bytes;  /* stack frame */
  int spill_bytes;  /* spill stores + spill loads */
} ht_ptx_resources;
#define HT_PTX_MAX_RESOURCES 64

/* Parses the text nvcc -ptx writes. Malformed input: HT_ERR_PARSE, "name:line:column: ...". */
ht_status ht_ptx_parse(const char *text, const char *source_name, ht_ptx_module **out);
void ht_ptx_free(ht_ptx_module *m);

int ht_ptx_kernel_count(const ht_ptx_module *m); /* .entry functions only */
const char *ht_ptx_kernel_name(const ht_ptx_module *m, int kernel);
/* Index of a kernel: an exact match of the (mangled) name first; otherwise the unique kernel
 * whose Itanium-mangled identifier (_Z<len><name>...) is `name`; otherwise the unique kernel whose
 * name contains `name` as a substring. -1 (with an error message) when none or several match. */
int ht_ptx_kernel_find(const ht_ptx_module *m, const char *name);
int ht_ptx_kernel_param_count(const ht_ptx_module *m, int kernel);
const char *ht_ptx_kernel_param_name(const ht_ptx_module *m, int kernel, int param);
int ht_ptx_instruction_count(const ht_ptx_module *m, int kernel); /* counted ones (no ret/exit) */

/* Class of one opcode with its modifiers ("ld.global.nc.v4.f32"). */
ht_ptx_class ht_ptx_classify(const char *opcode);
const char *ht_ptx_class_name(ht_ptx_class c);

/* Every counted instruction of the kernel once. */
ht_status ht_ptx_static_counts(const ht_ptx_module *m, int kernel, ht_ptx_counts *out);

typedef struct ht_ptx_exec_options {
  double default_trip; /* trip count of a loop not recognised or not evaluable (default 1) */
  int eval_branches;   /* 0 (default): both sides of a non-loop branch count once. 1: branches whose
                          predicate evaluates for thread 0 (constants, parameters, special registers
                          as 0, nothing varying in a loop around them) keep only the side taken */
} ht_ptx_exec_options;

typedef struct ht_ptx_exec_info {
  int loops;            /* natural loops found */
  int unresolved_loops; /* of them, those that used default_trip */
  double max_trip;      /* largest evaluated trip count */
  int decided_branches; /* with eval_branches: conditional branches whose side was decided */
} ht_ptx_exec_info;

/* Executed counts per thread. param_values[i] is the value of the i-th .param of the entry (NAN
 * for pointers or unknown); n may be smaller than the parameter count. Special registers (%tid,
 * %ctaid, ...) read as 0: the counts are those of thread 0 of block 0. opts and info may be NULL. */
ht_status ht_ptx_executed_counts(const ht_ptx_module *m, int kernel, const double *param_values, int n,
                                 const ht_ptx_exec_options *opts, ht_ptx_counts *out, ht_ptx_exec_info *info);

/* Equation (2): u[i] (1-based, 0 = no consumer) for i = 1..k, dpc = (1/k) sum 1/(u[i]-i). */
double ht_ptx_dpc_from_u(const int *u, int k);
/* dpc of a kernel's listing; NAN with an error when the kernel has no counted instruction. */
double ht_ptx_dpc(const ht_ptx_module *m, int kernel);
/* The U vector itself (1-based values), u must hold ht_ptx_instruction_count entries. */
ht_status ht_ptx_dpc_vector(const ht_ptx_module *m, int kernel, int *u, int k);

/* Finds nvcc: $HETUNE_NVCC, then PATH, then /usr/local/cuda/bin/nvcc. NULL if none. */
const char *ht_ptx_nvcc_path(void);

/* Compiles CUDA source with nvcc -ptx and -cubin --ptxas-options=-v (with -DNAME=VALUE for each
 * define, NULL-terminated, may be NULL) for arch ("sm_80"; NULL = sm_80). *ptx_out (malloc'ed)
 * gets the PTX; res[0..*n_res) the resources of each entry (res may be NULL). Cached on disk.
 * No nvcc: HT_ERR_UNSUPPORTED; compile errors: HT_ERR_COMPILE with nvcc's first error line. */
ht_status ht_ptx_compile(const char *source_text, const char *source_name, const char *const *defines,
                         const char *arch, char **ptx_out, ht_ptx_resources *res, int max_res, int *n_res);
/* Parses ptxas -v output ("Compiling entry function 'x'", "Used N registers, M bytes smem"). */
int ht_ptx_parse_ptxas_log(const char *log, ht_ptx_resources *res, int max_res);

typedef struct ht_ptx_features {
  ht_ptx_counts static_counts;
  ht_ptx_counts executed;
  ht_ptx_exec_info exec;
  double dpc;
  double alpha;        /* static: on-chip (compute, shared, sync, dpu, sfu) / global read+write; INFINITY if none */
  int registers;       /* -1 when unknown (no ptxas output) */
  int shared_words;    /* shared memory bytes / 4; -1 when unknown */
  int local_bytes, spill_bytes;
} ht_ptx_features;

/* Features of one kernel from parsed PTX; resources stay -1 (see ht_ptx_features_set_resources). */
ht_status ht_ptx_features_get(const ht_ptx_module *m, int kernel, const double *param_values, int n,
                              const ht_ptx_exec_options *opts, ht_ptx_features *out);
/* Copies the resources of the entry named `kernel` (exact name) into f; 0 if found, -1 if not. */
int ht_ptx_features_set_resources(ht_ptx_features *f, const ht_ptx_resources *res, int n_res, const char *kernel);
/* Compile (cached) + parse + find `kernel` (rule of ht_ptx_kernel_find) + features + resources. */
ht_status ht_ptx_features_from_source(const char *source_text, const char *source_name, const char *const *defines,
                                      const char *arch, const char *kernel, const double *param_values, int n,
                                      ht_ptx_features *out);

#ifdef __cplusplus
}
#endif
#endif
