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

/* ---- co-execution ---- */

#ifdef __cplusplus
}
#endif
#endif
