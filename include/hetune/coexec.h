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

#ifdef __cplusplus
}
#endif
#endif
