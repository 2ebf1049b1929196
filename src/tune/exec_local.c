/* local: evaluates on this machine with the runner (one worker: one config at a time), storing
 * every measurement; with reuse, a config the store already has is answered from it instead. */
#include <stdlib.h>
#include <string.h>

#include "tune/executor.h"

typedef struct local_state {
  ht_local_args a;
  ht_exec_queue queue; /* submitted, not yet evaluated */
  int queued;
} local_state;

static ht_status local_create(void **state, const void *args) {
  const ht_local_args *a = args;
  if (!a || !a->spec || !a->space || !a->store || !a->runner)
    return ht_error(HT_ERR_INVALID, "local executor: spec, space, store and runner are needed");
  local_state *s = calloc(1, sizeof *s);
  if (!s) return ht_error(HT_ERR_NOMEM, "out of memory");
  s->a = *a;
  *state = s;
  return HT_OK;
}

ht_status ht_local_evaluate(void *state, const ht_config *cfg, const ht_config *next, int reuse, ht_result *res,
                            int *reused) {
  local_state *s = state;
  char *key = ht_config_text(s->a.space, cfg); /* the whole text: it keys the store */
  char *json = key ? ht_spec_config_json(s->a.spec, s->a.space, cfg) : NULL;
  if (!key) return ht_error(HT_ERR_NOMEM, "out of memory");
  ht_eval_key k = s->a.key;
  k.config_key = key;
  k.config_json = json ? json : "{}";
  int found = 0;
  ht_status st = reuse ? ht_store_get_eval(s->a.store, &k, res, &found) : HT_OK;
  *reused = found;
  if (!st && !found) {
    st = ht_runner_evaluate_ahead(s->a.runner, cfg, next, res);
    if (!st) st = ht_store_put_eval(s->a.store, s->a.session_id, &k, res, NULL);
  }
  free(json);
  free(key);
  return st;
}

/* 1 when the store answers cfg (reuse): nothing to build for it; -1 when it could not say. */
static int stored(local_state *s, const ht_config *cfg) {
  ht_result res;
  char *key = ht_config_text(s->a.space, cfg);
  ht_eval_key k = s->a.key;
  k.config_key = key;
  int found = 0;
  if (!key || ht_store_get_eval(s->a.store, &k, &res, &found)) {
    ht_error_clear();
    found = -1;
  }
  free(key);
  return found;
}

static int earlier_in_batch(const ht_config *cfgs, int i) {
  for (int j = 0; j < i; j++)
    if (ht_config_equal(&cfgs[j], &cfgs[i])) return 1;
  return 0;
}

/* A batch's kernels are built at once, on as many cores (ht_runner_precompile), before its
 * configs are measured one after another. unstored[i]: the store was asked for cfgs[i] and had
 * none, so its evaluation need not ask again. */
static ht_status precompile(local_state *s, const ht_config *cfgs, int n, unsigned char *unstored) {
  ht_config *todo = n > 1 ? malloc(sizeof *todo * (size_t)n) : NULL;
  int m = 0;
  for (int i = 0; todo && i < n; i++) {
    int found = s->a.reuse ? stored(s, &cfgs[i]) : 0;
    /* a config asked twice is looked up again: its first evaluation may answer it */
    unstored[i] = s->a.reuse && found == 0 && !earlier_in_batch(cfgs, i);
    if (found != 1) todo[m++] = cfgs[i];
  }
  ht_status st = HT_OK;
  for (int i = 0; i < m && !st; i += HT_MAX_PRECOMPILE)
    st = ht_runner_precompile(s->a.runner, todo + i, m - i < HT_MAX_PRECOMPILE ? m - i : HT_MAX_PRECOMPILE);
  free(todo);
  return st;
}

static ht_status local_submit(void *state, const ht_config *cfgs, int n) {
  local_state *s = state;
  unsigned char *unstored = calloc((size_t)(n > 0 ? n : 1), 1);
  ht_status st = unstored ? precompile(s, cfgs, n, unstored) : ht_error(HT_ERR_NOMEM, "out of memory");
  for (int i = 0; i < n && !st; i++) {
    ht_exec_done *d = ht_exec_queue_push(&s->queue);
    if (!d) st = HT_ERR_NOMEM;
    else {
      d->cfg = cfgs[i];
      d->unstored = unstored[i];
      s->queued++;
    }
  }
  free(unstored);
  return st;
}

/* Nothing runs in the background: a waiting poll evaluates the next config in line. */
static ht_status local_poll(void *state, ht_exec_done *out, int max, int wait, int *got) {
  local_state *s = state;
  *got = 0;
  if (!wait || max < 1) return HT_OK;
  ht_exec_done *next = ht_exec_queue_pop(&s->queue);
  if (!next) return HT_OK;
  s->queued--;
  out->cfg = next->cfg;
  double t0 = ht_now();
  /* The config after it, when it is sure to be measured, goes to the worker ahead. */
  const ht_exec_done *after = ht_exec_queue_peek(&s->queue);
  const ht_config *ahead = after && (!s->a.reuse || after->unstored) ? &after->cfg : NULL;
  ht_status st = ht_local_evaluate(s, &out->cfg, ahead, s->a.reuse && !next->unstored, &out->result, &out->reused);
  out->cost_s = ht_now() - t0;
  if (!st) *got = 1;
  return st;
}

static int local_pending(const void *state) { return ((const local_state *)state)->queued; }

static void local_destroy(void *state) {
  local_state *s = state;
  if (!s) return;
  ht_exec_queue_free(&s->queue);
  free(s);
}

const ht_executor_ops ht_executor_local = {"local", local_create, local_submit, local_poll, local_pending,
                                           local_destroy};
