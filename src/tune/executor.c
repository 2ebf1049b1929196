/* The executor registry: adding an executor is one file and one line here. */
#include <stdlib.h>
#include <string.h>

#include "tune/executor.h"

extern const ht_executor_ops ht_executor_local;
extern const ht_executor_ops ht_executor_replay;

static const ht_executor_ops *const executors[] = {
  &ht_executor_local,
  &ht_executor_replay,
};

const ht_executor_ops *ht_executor_find(const char *name) {
  for (size_t i = 0; i < sizeof executors / sizeof executors[0]; i++)
    if (strcmp(executors[i]->name, name) == 0) return executors[i];
  return NULL;
}

ht_status ht_executor_open(const char *name, const void *args, ht_executor *out) {
  memset(out, 0, sizeof *out);
  const ht_executor_ops *ops = ht_executor_find(name);
  if (!ops) return ht_error(HT_ERR_NOTFOUND, "unknown executor '%s'", name);
  ht_status st = ops->create(&out->state, args);
  if (!st) out->ops = ops;
  return st;
}

ht_status ht_executor_submit(ht_executor *e, const ht_config *cfgs, int n) {
  return n > 0 ? e->ops->submit(e->state, cfgs, n) : HT_OK;
}

ht_status ht_executor_poll(ht_executor *e, ht_exec_done *out, int max, int wait, int *got) {
  *got = 0;
  return max > 0 ? e->ops->poll(e->state, out, max, wait, got) : HT_OK;
}

int ht_executor_pending(const ht_executor *e) { return e->ops ? e->ops->pending(e->state) : 0; }

void ht_executor_close(ht_executor *e) {
  if (e->ops) e->ops->destroy(e->state);
  memset(e, 0, sizeof *e);
}

/* ---- the queue ---- */

ht_exec_done *ht_exec_queue_push(ht_exec_queue *q) {
  if (q->head > 0 && q->head == q->n) q->head = q->n = 0; /* drained: start over at the front */
  if (q->n == q->cap) {
    if (q->head > 0) { /* room at the front: move the rest there */
      memmove(q->item, q->item + q->head, sizeof *q->item * (size_t)(q->n - q->head));
      q->n -= q->head;
      q->head = 0;
    } else {
      int cap = q->cap ? 2 * q->cap : 4;
      ht_exec_done *grown = realloc(q->item, sizeof *grown * (size_t)cap);
      if (!grown) return ht_error(HT_ERR_NOMEM, "out of memory"), NULL;
      q->item = grown;
      q->cap = cap;
    }
  }
  ht_exec_done *d = &q->item[q->n++];
  memset(d, 0, sizeof *d);
  return d;
}

ht_exec_done *ht_exec_queue_pop(ht_exec_queue *q) { return q->head < q->n ? &q->item[q->head++] : NULL; }

const ht_exec_done *ht_exec_queue_peek(const ht_exec_queue *q) { return q->head < q->n ? &q->item[q->head] : NULL; }

void ht_exec_queue_free(ht_exec_queue *q) {
  free(q->item);
  memset(q, 0, sizeof *q);
}
