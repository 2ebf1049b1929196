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

/* A race (docs/race.md, 001 §5.1): the variants run at once, each on private copies of the
 * buffers the kernel writes, from one control thread each; the first to finish wins, the others
 * are stopped through their stop flag (a spec argument with "stop": true; a kernel without one
 * runs to its end) and joined, and only the winner's outputs are copied into the caller's buffers.
 * Everything runs in this process: a crash in a raced kernel ends the process. */
enum { HT_RACE_MAX = 32 };

typedef enum ht_race_outcome {
  HT_RACE_WON = 0,  /* finished first: its outputs are in the caller's buffers */
  HT_RACE_FINISHED, /* finished too, after the winner but before the stop reached it */
  HT_RACE_STOPPED,  /* stopped by the winner's finish (its time is a lower bound) */
  HT_RACE_FAILED    /* did not run: message says why */
} ht_race_outcome;

const char *ht_race_outcome_name(ht_race_outcome o);

typedef struct ht_race_participant {
  int variant;              /* index in the computation */
  ht_race_outcome outcome;
  ht_status status;         /* HT_OK unless it failed */
  double end_s;             /* from t0 until its control thread was done (the winner: t_win) */
  ht_run_times times;       /* as ht_run_wait gave them (a stopped run's kernel time is partial) */
  char message[256];        /* the error of a failed participant */
} ht_race_participant;

typedef struct ht_race_result {
  int winner;               /* variant index; -1 when every participant failed */
  double t_win;             /* seconds from t0 until the winner's outputs were on the host */
  double stop_delay;        /* t_last_joined - t_win: what stopping the others cost */
  double wall_s;            /* the whole call, joins and copies included */
  int n;
  ht_race_participant p[HT_RACE_MAX];
} ht_race_result;

/* Races variants[0..n) of c (NULL: all of them) at sizes on the caller's buffers (as
 * ht_variant_run takes them). The winner's time is recorded in c's history as a measurement and
 * each stopped loser's as a lower bound (ht_computation_record). Every participant failing is an
 * error naming each failure, and the caller's buffers are left untouched. out may be NULL. */
ht_status ht_race_run(ht_computation *c, const int64_t *sizes, const ht_host_arg *args, const int *variants, int n,
                      ht_race_result *out);

/* Dispatch with races (001 §5.1.5): decides as ht_computation_decide does; when the decision is
 * close, or a variant has no known time, races the expected winner, the runner-up and every
 * variant without a time, so one call calibrates them all; otherwise runs as ht_computation_run.
 * d: the decision (its variant: the winner when raced); race (may be NULL): the race's result,
 * race->n == 0 when none was run. t (may be NULL): the winner's times. */
ht_status ht_race_dispatch(ht_computation *c, const int64_t *sizes, const ht_host_arg *args, ht_decision *d,
                           ht_run_times *t, ht_race_result *race);

/* ---- co-execution ---- */

/* How a call splits: the size `dim` of the specs is cut into chunks [lb, ub), each run as the same
 * kernel on a smaller problem (dim = the chunk's rows) on the part of each split buffer holding
 * those rows. A split buffer holds `stride` elements per row of dim (an expression of the sizes),
 * rows outermost; a buffer not named is passed whole to every chunk and must not be written. halo:
 * rows a chunk reads on each side beyond its own (a stencil's radius); only its own rows are
 * written back. */
typedef struct ht_split_buffer {
  const char *name;   /* a buffer argument of the specs */
  const char *stride; /* elements per row of dim: "1", "K", "2*N" */
} ht_split_buffer;

typedef struct ht_split {
  const char *dim;         /* a size name of the specs */
  int64_t granularity;     /* chunk bounds are multiples of it (0: 1) */
  int64_t halo;            /* rows read beyond each side of a chunk */
  int n_buffers;
  const ht_split_buffer *buffers;
} ht_split;

typedef struct ht_coexec ht_coexec;

/* Co-executes c (borrowed; it must outlive x) split as *split. Each device of c's variants is a
 * processing unit, its variants on that device its versions. options (may be NULL):
 *   schedule=static     plan with predicted chunk times (001's Alg. 5.3), cached per size bucket;
 *                       a call whose variants are not all calibrated runs dynamic instead
 *   schedule=dynamic    devices take chunks on demand, shrinking as the call ends (HGuided)
 *   replan=0.05         drop a cached plan whose measured imbalance exceeded this
 *   min_chunk=N         the dynamic schedule's smallest chunk in rows (default 32 granularities)
 * and the partitioner's options (ht_partition_opts_parse), whose defaults here are eliminate=0.02
 * and refine=1 (chunk times include copies and latency, so small chunks are priced right). */
ht_status ht_coexec_create(ht_computation *c, const ht_split *split, const char *options, ht_coexec **out);
/* A computation file (docs/dispatch.md) with a "split" object (docs/coexec.md); x owns the
 * computation (ht_coexec_computation). st as ht_computation_load takes. */
ht_status ht_coexec_load(const char *path, ht_store *st, ht_coexec **out);
void ht_coexec_destroy(ht_coexec *x);
ht_computation *ht_coexec_computation(ht_coexec *x);
/* Active power of a device in watts, for the energy options (a file's "power_w" sets them too). */
ht_status ht_coexec_set_power(ht_coexec *x, const char *device_id, double watts);

/* Options as ht_coexec_create takes, over those set before (cached plans are dropped). */
ht_status ht_coexec_set_options(ht_coexec *x, const char *options);

/* The devices (processing units), in the order of the computation's first variant on each. */
int ht_coexec_pu_count(const ht_coexec *x);
const char *ht_coexec_pu_device(const ht_coexec *x, int pu);
/* The index of the split size among the specs' sizes. */
int ht_coexec_split_dim(const ht_coexec *x);
/* The device a variant of the computation runs on (-1: no such variant). */
int ht_coexec_pu_of(const ht_coexec *x, int variant);

typedef struct ht_coexec_pu_report {
  int variant;            /* the computation's variant its chunk ran (-1: not used) */
  const char *config;     /* valid while the computation lives */
  int64_t lb, ub;         /* its rows of dim (dynamic: from its first chunk's start to its last's end) */
  int64_t rows;           /* rows it ran (measured), or was planned */
  double pred_s;          /* predicted time (NAN when not planned) */
  double kernel_s, transfer_s, time_s; /* measured (modelled on simulated devices): time = kernel + copies */
  int chunks;             /* chunks it ran */
  ht_status status;       /* HT_OK, or why its chunk failed (it then ran on another device) */
  char error[256];        /* the failure's message */
} ht_coexec_pu_report;

typedef struct ht_coexec_report {
  int n_pus;
  ht_coexec_pu_report pu[HT_COEXEC_MAX_PUS];
  const char *schedule;   /* "static" or "dynamic" */
  int from_cache;         /* 1: the plan came from the plan cache */
  ht_partition plan;      /* the static plan (steps, plan_us, ...) */
  double pred_makespan_s; /* NAN for a dynamic schedule */
  double makespan_s;      /* the longest device's measured time */
  double imbalance;       /* (max - min) / max of the measured times of the devices used */
  double wall_s;          /* the whole call, planning included */
  int reruns;             /* chunks run again on another device after a failure */
} ht_coexec_report;

/* The plan for a call at sizes, run nothing (pu[].pred_s, lb, ub, variant). */
ht_status ht_coexec_plan(ht_coexec *x, const int64_t *sizes, ht_coexec_report *out);
/* Plans (or takes the cached plan), runs every device's chunk at once on the caller's buffers (as
 * ht_variant_run takes them), waits for all, and feeds each chunk's time back to the computation.
 * A device that fails has its chunk run again on the fastest device that succeeded; the call fails
 * only when that fails too. out may be NULL. */
ht_status ht_coexec_run(ht_coexec *x, const int64_t *sizes, const ht_host_arg *args, ht_coexec_report *out);

#ifdef __cplusplus
}
#endif
#endif
