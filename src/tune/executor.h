/* Executors: who evaluates the configs a tuning session hands out (internal).
 *
 * An executor takes batches of configs (submit) and gives back finished evaluations (poll), in
 * whatever order they finish; how many it runs at once is its own business. A driver asks its
 * session for a batch, submits it, and tells the session each result as it is polled. Adding an
 * executor is one file and one line in executor.c. */
#ifndef HETUNE_EXECUTOR_H
#define HETUNE_EXECUTOR_H

#include "hetune/replay.h"
#include "hetune/tune.h"

typedef struct ht_exec_done {
  ht_config cfg;
  ht_result result;
  double cost_s; /* what the evaluation cost the tuner: its recorded cost (replay), its wall time (local) */
  int reused;    /* taken from the store instead of measured */
  int unstored;  /* local: the store did not have it when it was submitted (no second look-up) */
} ht_exec_done;

typedef struct ht_executor_ops {
  const char *name;
  /* args: the executor's own arguments (ht_local_args, ht_recorded) */
  ht_status (*create)(void **state, const void *args);
  ht_status (*submit)(void *state, const ht_config *cfgs, int n);
  /* Up to max finished evaluations into out, each returned once. wait: while any submitted config
   * is not returned yet, block until at least one is finished; otherwise return what is finished
   * (possibly none). */
  ht_status (*poll)(void *state, ht_exec_done *out, int max, int wait, int *got);
  int (*pending)(const void *state); /* submitted and not yet returned by poll */
  void (*destroy)(void *state);
} ht_executor_ops;

typedef struct ht_executor {
  const ht_executor_ops *ops;
  void *state;
} ht_executor;

const ht_executor_ops *ht_executor_find(const char *name);
ht_status ht_executor_open(const char *name, const void *args, ht_executor *out);
ht_status ht_executor_submit(ht_executor *e, const ht_config *cfgs, int n);
ht_status ht_executor_poll(ht_executor *e, ht_exec_done *out, int max, int wait, int *got);
int ht_executor_pending(const ht_executor *e);
void ht_executor_close(ht_executor *e);

/* A first-in first-out queue of evaluations, for executors that keep submitted configs or
 * finished results in order. A zeroed struct is empty. */
typedef struct ht_exec_queue {
  ht_exec_done *item;
  int head, n, cap;
} ht_exec_queue;
/* A new slot at the back (zeroed), or NULL when out of memory (the error is set). */
ht_exec_done *ht_exec_queue_push(ht_exec_queue *q);
/* The front item, or NULL when empty; valid until the next push. */
ht_exec_done *ht_exec_queue_pop(ht_exec_queue *q);
/* The item pop would return next, left in the queue; NULL when empty. */
const ht_exec_done *ht_exec_queue_peek(const ht_exec_queue *q);
void ht_exec_queue_free(ht_exec_queue *q);

/* ---- local: the runner measures, the store records and (reuse) answers what it already has ---- */
typedef struct ht_local_args {
  const ht_spec *spec;
  ht_space *space;
  ht_store *store;
  ht_runner *runner;  /* one worker: submitted configs are measured one after another */
  ht_eval_key key;    /* kernel, device and problem ids the evaluations are stored under */
  int64_t session_id;
  int reuse;          /* take a config the store has instead of measuring it */
} ht_local_args;

/* One evaluation outside the queue, with reuse chosen per call (the confirmation's measurements).
 * state: a local executor's. next: the config to be measured right after it, sent to the worker
 * ahead (ht_runner_evaluate_ahead), or NULL. */
ht_status ht_local_evaluate(void *state, const ht_config *cfg, const ht_config *next, int reuse, ht_result *res,
                            int *reused);

/* ---- replay: answers from a recorded space, charging each evaluation its recorded cost ---- */
/* args: the ht_recorded. A config that was not recorded fails submit with HT_ERR_NOTFOUND. */

#endif
