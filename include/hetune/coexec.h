/* Using every device for one call (docs/coexec.md): a race that runs a computation's variants at
 * once and keeps the first to finish, and co-execution, which splits one data-parallel call
 * across devices so that all finish together.
 *
 *   ht_race_result r;
 *   int both[2] = {0, 1};
 *   ht_race_run(c, sizes, args, both, 2, &r);        // the winner's results land in args
 *
 *   ht_coexec *x;  ht_coexec_report rep;
 *   ht_coexec_create(c, NULL, &x);                   // c's file declares its "split"
 *   ht_coexec_run(x, sizes, args, &rep);             // plans (cached per size bucket), runs, joins
 */
#ifndef HETUNE_COEXEC_H
#define HETUNE_COEXEC_H

#include <stdint.h>

#include "hetune/core.h"
#include "hetune/dispatch.h"
#include "hetune/exec.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { HT_COEXEC_MAX_PUS = 16 };

/* ---- partitioning: 001's Alg. 5.3 over predicted chunk times ---- */

/* The predicted time in seconds of PU pu running code version `version` on the chunk [lb, ub),
 * copies included. A value <= 0 or NAN says the PU cannot run that chunk. */
typedef double (*ht_chunk_time_fn)(void *ctx, int pu, int version, int64_t lb, int64_t ub);

/* Options of ht_partition_plan; all zero (or a NULL pointer) gives the defaults. */
typedef struct ht_partition_opts {
  int max_steps;           /* refinement steps at most; 0: 15 */
  double eliminate;        /* a PU whose chunk is below this share of the largest is dropped; 0: 0.10, < 0: never */
  double converge;         /* stop once every T_i is within this share of their mean; 0: 0.02 */
  int64_t granularity;     /* chunk bounds are lb + multiples of it (except the range's end); 0: 1 */
  int remainder_pu;        /* the PU given rounding leftovers (0: the first, as 001 gives them to the
                            * CPU it lists first); -1: the one with the largest chunk */
  const int *n_versions;   /* versions per PU (NULL: one each); every combination is planned (at most
                            * 64; beyond that greedy descent one PU at a time), the lowest predicted
                            * makespan kept */
  const double *power_w;   /* active power per PU in W (NULL: no energy) */
  double eliminate_energy; /* drop a PU whose iterations per watt are below this share of the best
                            * PU's; 0: off (needs power_w) */
  double idle_power_w;     /* a waiting PU's power in the energy estimate (default 0) */
  int recursive;           /* after an elimination, also plan the reduced set afresh and all PUs
                            * without elimination; keep the lowest predicted energy (needs power_w) */
  int refine;              /* after the steps, move chunk bounds by bisection on the common finish
                            * time (not in 001; off by default) */
} ht_partition_opts;

typedef struct ht_partition {
  int n_pus;
  int64_t lb[HT_COEXEC_MAX_PUS], ub[HT_COEXEC_MAX_PUS]; /* PU i's chunk; lb == ub: PU not used */
  int version[HT_COEXEC_MAX_PUS];                       /* the version each PU runs */
  double time_s[HT_COEXEC_MAX_PUS];                     /* predicted T_i (0 when not used) */
  int eliminated_at[HT_COEXEC_MAX_PUS]; /* step that dropped PU i (from 1); 0: kept; -1: it cannot run */
  double makespan_s, energy_j;          /* predicted max T_i; energy NAN without power_w */
  int steps, best_step, combinations;   /* steps taken, the step kept, version combinations planned */
  double plan_us;                       /* the planner's own time */
} ht_partition;

/* Splits [lb, ub) into contiguous chunks, one per PU in PU order, so that their predicted times
 * are equal (001's Alg. 5.3, docs/coexec.md). HT_ERR_INVALID for n_pus outside 1 to
 * HT_COEXEC_MAX_PUS, ub < lb, bad options, or when no PU can run. */
ht_status ht_partition_plan(int n_pus, int64_t lb, int64_t ub, ht_chunk_time_fn time, void *ctx,
                            const ht_partition_opts *opts, ht_partition *out);
/* Reads "steps=15,eliminate=0.1,converge=0.02,granularity=64,remainder=largest|N,energy=0.25,
 * idle_power=5,recursive=1,refine=1" into o; keys not in text leave o's fields as they are. An
 * unknown key or a bad value is HT_ERR_INVALID. */
ht_status ht_partition_opts_parse(const char *text, ht_partition_opts *o);


/* Dynamic scheduling (HGuided, for when nothing predicts times): the size of the next chunk for a
 * PU of relative power `power` (e.g. 1 / its time per iteration) out of power_sum, with
 * `remaining` iterations left: max(min_chunk, ceil(remaining * power / (k * power_sum))), at most
 * remaining. k: 0 means 2. */
int64_t ht_hguided_chunk(int64_t remaining, double power, double power_sum, double k, int64_t min_chunk);

/* ---- race ---- */

/* ---- co-execution ---- */

#ifdef __cplusplus
}
#endif
#endif
