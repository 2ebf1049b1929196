/* replay: answers from a recorded space (every config measured once), without a device. Each
 * evaluation returns its recorded outcome and costs what it cost when recorded (compile + runs +
 * framework); results come back in the order submitted. */
#include <stdlib.h>
#include <string.h>

#include "tune/executor.h"

typedef struct replay_state {
  ht_recorded *rec;
  ht_exec_queue done;
  int waiting;
} replay_state;

static ht_status replay_create(void **state, const void *args) {
  if (!args) return ht_error(HT_ERR_INVALID, "replay executor: no recorded space");
  replay_state *s = calloc(1, sizeof *s);
  if (!s) return ht_error(HT_ERR_NOMEM, "out of memory");
  s->rec = (ht_recorded *)args;
  *state = s;
  return HT_OK;
}

static ht_status replay_submit(void *state, const ht_config *cfgs, int n) {
  replay_state *s = state;
  for (int i = 0; i < n; i++) {
    ht_result res;
    double cost = 0;
    if (!ht_recorded_lookup(s->rec, &cfgs[i], &res, &cost)) {
      char text[512];
      ht_config_format(ht_recorded_space(s->rec), &cfgs[i], text, sizeof text);
      return ht_error(HT_ERR_NOTFOUND, "%s was not recorded in %s", text, ht_recorded_name(s->rec));
    }
    ht_exec_done *d = ht_exec_queue_push(&s->done);
    if (!d) return HT_ERR_NOMEM;
    d->cfg = cfgs[i];
    d->result = res;
    d->cost_s = cost;
    s->waiting++;
  }
  return HT_OK;
}

static ht_status replay_poll(void *state, ht_exec_done *out, int max, int wait, int *got) {
  replay_state *s = state;
  (void)wait; /* recorded results are ready at once */
  *got = 0;
  for (ht_exec_done *d; *got < max && (d = ht_exec_queue_pop(&s->done));) {
    out[(*got)++] = *d;
    s->waiting--;
  }
  return HT_OK;
}

static int replay_pending(const void *state) { return ((const replay_state *)state)->waiting; }

static void replay_destroy(void *state) {
  replay_state *s = state;
  if (!s) return;
  ht_exec_queue_free(&s->done);
  free(s);
}

const ht_executor_ops ht_executor_replay = {"replay", replay_create, replay_submit, replay_poll, replay_pending,
                                            replay_destroy};
