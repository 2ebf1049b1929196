/* The data-dependency degree dpc of Equation (2) of reference 003: how soon, on average, an
 * instruction's result is used by a later one in the listing. */
#include <math.h>
#include <stdlib.h>

#include "ptx/ptx_internal.h"

double ht_ptx_dpc_from_u(const int *u, int k) {
  if (!u || k <= 0) return NAN;
  double s = 0;
  for (int i = 1; i <= k; i++)
    if (u[i - 1] > i) s += 1.0 / (u[i - 1] - i);
  return s / k;
}

/* U[i]: the first later counted instruction that reads a register i wrote, before that register
 * is written again (a redefinition means i's value is never used). Computed backwards with the
 * next reader of every register, so it is linear in the listing. */
ht_status ht_ptx_dpc_vector(const ht_ptx_module *m, int kernel, int *u, int k_out) {
  const ptx_kernel *k = ptx_entry(m, kernel);
  if (!k || !u) return ht_error(HT_ERR_INVALID, "ht_ptx_dpc_vector: no kernel %d", kernel);
  int n = 0;
  for (int i = 0; i < k->n_insns; i++) n += k->insns[i].label < 0 && k->insns[i].cls != HT_PTX_NONE;
  if (n != k_out) return ht_error(HT_ERR_INVALID, "ht_ptx_dpc_vector: the kernel has %d counted instructions, not %d", n, k_out);
  int *next_read = calloc((size_t)k->n_regnames + 1, sizeof(int)); /* 1-based position, 0 = none */
  if (!next_read) return ht_error(HT_ERR_NOMEM, "out of memory");
  int pos = n;
  for (int i = k->n_insns - 1; i >= 0; i--) {
    const ptx_insn *in = &k->insns[i];
    if (in->label >= 0 || in->cls == HT_PTX_NONE) continue;
    int dst[8], nd = ptx_insn_dests(in, dst, 8), src[64], ns = ptx_insn_srcs(in, src, 64);
    int best = 0;
    for (int d = 0; d < nd; d++)
      if (next_read[dst[d]] && (!best || next_read[dst[d]] < best)) best = next_read[dst[d]];
    u[pos - 1] = best;
    for (int d = 0; d < nd; d++) next_read[dst[d]] = 0; /* earlier values of these are dead here */
    for (int s = 0; s < ns; s++) next_read[src[s]] = pos; /* reads happen before the write */
    pos--;
  }
  free(next_read);
  return HT_OK;
}

double ht_ptx_dpc(const ht_ptx_module *m, int kernel) {
  int k = ht_ptx_instruction_count(m, kernel);
  if (k <= 0) {
    ht_error(HT_ERR_INVALID, "dpc: kernel %d has no instructions", kernel);
    return NAN;
  }
  int *u = calloc((size_t)k, sizeof(int));
  if (!u) {
    ht_error(HT_ERR_NOMEM, "out of memory");
    return NAN;
  }
  double d = ht_ptx_dpc_vector(m, kernel, u, k) ? NAN : ht_ptx_dpc_from_u(u, k);
  free(u);
  return d;
}
