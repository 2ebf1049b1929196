/* The partitioner's parts shared by partition.c (Alg. 5.3 on one version combination) and
 * partition_versions.c (combinations, the recursive energy variant, the public call). */
#ifndef HT_COEXEC_PARTITION_INTERNAL_H
#define HT_COEXEC_PARTITION_INTERNAL_H

#include "hetune/coexec.h"

/* The options with their defaults filled in, and the problem they apply to. */
typedef struct htp_problem {
  int n;
  int64_t lb, ub;
  ht_chunk_time_fn time;
  void *ctx;
  int max_steps;
  double eliminate, converge;
  int64_t granularity;
  int remainder_pu;
  int n_versions[HT_COEXEC_MAX_PUS];
  const double *power_w;
  double eliminate_energy, idle_power_w;
  int recursive, refine;
} htp_problem;

/* Checks opts for n PUs: HT_ERR_INVALID naming the field and its key in the options text. */
ht_status htp_check_opts(const ht_partition_opts *o, int n);
/* Checks n, the range and opts and fills p. */
ht_status htp_problem_init(htp_problem *p, int n, int64_t lb, int64_t ub, ht_chunk_time_fn time, void *ctx,
                           const ht_partition_opts *opts);

/* One run of Alg. 5.3 with each PU's version fixed. eliminated_at[i] != 0 on entry keeps PU i
 * out (a PU an earlier run dropped); rules = 0 turns the elimination rules off. HT_ERR_INVALID
 * when no PU can run. */
ht_status htp_alg53(const htp_problem *p, const int *version, const int *eliminated_at, int rules, ht_partition *out);

/* Predicted energy of a plan: sum P_i T_i + P_idle sum (makespan - T_i) over all PUs. */
double htp_energy(const htp_problem *p, const ht_partition *r);

/* The refinement by bisection on the common finish time (partition_refine.c). */
void htp_refine(const htp_problem *p, ht_partition *r);

#endif
