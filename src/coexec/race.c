/* The race (001 §5.1.3, docs/race.md): a computation's variants run at once, the first to finish
 * wins, the others are stopped. Each participant has its own ht_exec (one serves one call at a
 * time, and two participants may share a device) and private host copies of every buffer the
 * kernel writes, so a loser, stopped or finished, never touches the caller's memory: only the
 * winner's copies are copied back, by its own control thread, after it won the compare-exchange.
 *
 * One control thread per participant starts its variant (ht_variant_start), polls it, cancels it
 * when the stop is raised and waits for it. Polling from the thread that waits is what the
 * execution layer asks (a cancel must come before the wait returns); a participant that cannot be
 * stopped (no stop flag, or a device without HT_CAP_CANCEL) just waits. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dispatch/dispatch_internal.h"
#include "hetune/coexec.h"

/* ---- private execs, cached on the computation ---- */

enum { RACE_MAX_ARGS = 64 };

typedef struct race_slot {
  ht_exec *ex;
  ht_variant *v;
  char *config; /* the config v runs ("best" variants change it with the size) */
  /* per argument: the private copy of a written buffer, kept between races (a fresh one would
   * cost its page faults at every race) */
  void *priv[RACE_MAX_ARGS];
  size_t priv_bytes[RACE_MAX_ARGS];
} race_slot;

typedef struct race_state {
  race_slot s[HTD_MAX_VARIANTS];
} race_state;

static void race_state_free(void *p) {
  race_state *rs = p;
  for (int i = 0; rs && i < HTD_MAX_VARIANTS; i++) {
    ht_variant_destroy(rs->s[i].v);
    ht_exec_close(rs->s[i].ex);
    free(rs->s[i].config);
    for (int k = 0; k < RACE_MAX_ARGS; k++) free(rs->s[i].priv[k]);
  }
  free(rs);
}

/* Variant vi's private ht_variant for the config it runs at rep: opened and compiled on the first
 * race, before any clock starts, then kept until the computation is destroyed. */
static ht_status slot_variant(ht_computation *c, int vi, const int64_t *rep, ht_variant **out, ht_exec **ex,
                              race_slot **slot) {
  if (!c->race) {
    if (!(c->race = calloc(1, sizeof(race_state)))) return ht_error(HT_ERR_NOMEM, "out of memory");
    c->race_free = race_state_free;
  }
  race_slot *s = *slot = &((race_state *)c->race)->s[vi];
  const char *config = htd_config_for(c, vi, rep);
  if (s->v && !strcmp(s->config, config)) return *out = s->v, *ex = s->ex, HT_OK;
  ht_variant_destroy(s->v);
  free(s->config);
  s->v = NULL;
  s->config = NULL;
  ht_status st = s->ex ? HT_OK : ht_exec_open(c->v[vi].device_id, &s->ex);
  if (!st) st = ht_variant_create(s->ex, c->v[vi].spec, config, &s->v);
  if (!st && !(s->config = ht_strdup(config))) st = ht_error(HT_ERR_NOMEM, "out of memory");
  if (st) return ht_error_prefix(st, "variant %d (%s): ", vi, c->v[vi].label);
  *out = s->v;
  *ex = s->ex;
  return HT_OK;
}

/* ---- one race ---- */

typedef struct race race;

typedef struct runner {
  race *r;
  int index;         /* in the result's participants */
  ht_variant *v;
  ht_host_arg *args; /* the caller's, with private copies of the written buffers */
  int stoppable;
  ht_race_participant *out;
} runner;

struct race {
  atomic_int winner; /* participant index; -1 until one finishes */
  atomic_int stop;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int go; /* the start gate: every control thread starts at t0 */
  double t0, t_win;
  const int64_t *sizes;
  const ht_spec *spec;
  const ht_host_arg *caller;
  runner run[HT_RACE_MAX];
};

const char *ht_race_outcome_name(ht_race_outcome o) {
  static const char *const names[] = {"won", "finished", "stopped", "failed"};
  return o >= HT_RACE_WON && o <= HT_RACE_FAILED ? names[o] : "?";
}

static void raise_stop(race *r) {
  pthread_mutex_lock(&r->mu);
  atomic_store(&r->stop, 1);
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
}

/* Sleeps at most nap seconds or until the stop is raised; returns the stop. */
static int nap_or_stop(race *r, double nap) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  long ns = ts.tv_nsec + (long)(nap * 1e9);
  ts.tv_sec += ns / 1000000000L;
  ts.tv_nsec = ns % 1000000000L;
  pthread_mutex_lock(&r->mu);
  if (!atomic_load(&r->stop)) pthread_cond_timedwait(&r->cv, &r->mu, &ts);
  int stop = atomic_load(&r->stop);
  pthread_mutex_unlock(&r->mu);
  return stop;
}

/* Until the run finishes (0) or the stop reaches it and it is cancelled (1). The naps grow from
 * 20 us to 200 us: a short kernel is seen finishing soon, a long one costs few wakeups; the stop
 * itself wakes the thread at once. */
static int watch(race *r, ht_run *run) {
  double nap = 20e-6;
  for (;;) {
    if (ht_run_poll(run) != 0) return 0;
    if (atomic_load(&r->stop)) return ht_run_cancel(run) == HT_OK; /* cannot: it runs to its end */
    nap_or_stop(r, nap);
    nap = nap < 100e-6 ? 2 * nap : 200e-6;
  }
}

static void fail(runner *u, ht_status st) {
  u->out->outcome = HT_RACE_FAILED;
  u->out->status = st;
  snprintf(u->out->message, sizeof u->out->message, "%s", ht_last_error());
}

/* The winner's private copies of the written buffers into the caller's. */
static void copy_back(race *r, const runner *u) {
  for (int i = 0; i < r->spec->n_args; i++) {
    const ht_spec_arg *a = &r->spec->args[i];
    if (a->is_buffer && (a->access & HT_ACCESS_WRITE) && r->caller[i].data)
      memcpy(r->caller[i].data, u->args[i].data, r->caller[i].count * ht_dtype_size(a->type));
  }
}

static void *control(void *arg) {
  runner *u = arg;
  race *r = u->r;
  pthread_mutex_lock(&r->mu);
  while (!r->go) pthread_cond_wait(&r->cv, &r->mu);
  pthread_mutex_unlock(&r->mu);
  ht_run *run = NULL;
  ht_status st = ht_variant_start(u->v, r->sizes, u->args, NULL, &run);
  int cancelled = !st && u->stoppable ? watch(r, run) : 0;
  if (!st) st = ht_run_wait(run, &u->out->times);
  if (st) fail(u, st);
  else if (cancelled) u->out->outcome = HT_RACE_STOPPED;
  else {
    int none = -1;
    if (atomic_compare_exchange_strong(&r->winner, &none, u->index)) {
      r->t_win = ht_now() - r->t0;
      raise_stop(r);
      copy_back(r, u);
      u->out->outcome = HT_RACE_WON;
    } else {
      u->out->outcome = HT_RACE_FINISHED;
    }
  }
  u->out->end_s = u->out->outcome == HT_RACE_WON ? r->t_win : ht_now() - r->t0;
  return NULL;
}

/* ---- setting a race up ---- */

static int can_stop(const ht_computation *c, int vi, ht_exec *ex) {
  const ht_spec *s = c->v[vi].spec;
  int flag = 0;
  for (int i = 0; i < s->n_args; i++) flag |= s->args[i].is_stop_flag;
  return flag && (ht_device_caps(ht_exec_device(ex)) & HT_CAP_CANCEL);
}

/* The caller's arguments with each written buffer replaced by the slot's private copy of it (its
 * whole count, so elements the kernel leaves alone come back unchanged). */
static ht_status private_args(const ht_spec *s, const ht_host_arg *caller, race_slot *slot, ht_host_arg **out) {
  if (s->n_args > RACE_MAX_ARGS) return ht_error(HT_ERR_INVALID, "%s: %d arguments, a race takes at most %d", s->name,
                                              s->n_args, RACE_MAX_ARGS);
  ht_host_arg *a = calloc((size_t)s->n_args + 1, sizeof *a);
  if (!a) return ht_error(HT_ERR_NOMEM, "out of memory");
  memcpy(a, caller, sizeof *a * (size_t)s->n_args);
  for (int i = 0; i < s->n_args; i++) {
    const ht_spec_arg *sa = &s->args[i];
    if (!sa->is_buffer || !(sa->access & HT_ACCESS_WRITE) || !caller[i].data || !caller[i].count) continue;
    size_t bytes = caller[i].count * ht_dtype_size(sa->type);
    if (slot->priv_bytes[i] < bytes) {
      free(slot->priv[i]);
      slot->priv_bytes[i] = 0;
      if (!(slot->priv[i] = aligned_alloc(64, (bytes + 63) / 64 * 64))) {
        free(a);
        return ht_error(HT_ERR_NOMEM, "out of memory for a private copy of %s (%zu bytes)", sa->name, bytes);
      }
      slot->priv_bytes[i] = bytes;
    }
    a[i].data = slot->priv[i];
    memcpy(a[i].data, caller[i].data, bytes);
  }
  *out = a;
  return HT_OK;
}

static ht_status check_variants(const ht_computation *c, const int *variants, int n) {
  if (n < 1 || n > HT_RACE_MAX) return ht_error(HT_ERR_INVALID, "%s: a race of %d variants (1 to %d)", c->name, n, HT_RACE_MAX);
  for (int i = 0; i < n; i++) {
    if (variants[i] < 0 || variants[i] >= c->n_variants)
      return ht_error(HT_ERR_INVALID, "%s: no variant %d (it has %d)", c->name, variants[i], c->n_variants);
    for (int k = 0; k < i; k++)
      if (variants[k] == variants[i]) return ht_error(HT_ERR_INVALID, "%s: variant %d is raced twice", c->name, variants[i]);
  }
  return HT_OK;
}

/* Private variants (built for these sizes) and buffers for every participant, before the clock
 * starts. */
static ht_status prepare(ht_computation *c, race *r, const int *variants, int n, ht_race_result *res) {
  int64_t rep[HTD_MAX_SIZES];
  htd_bucket(c, r->sizes, rep);
  ht_status st = HT_OK;
  for (int i = 0; i < n && !st; i++) {
    runner *u = &r->run[i];
    *u = (runner){.r = r, .index = i, .out = &res->p[i]};
    res->p[i] = (ht_race_participant){.variant = variants[i], .outcome = HT_RACE_FAILED};
    ht_exec *ex = NULL;
    race_slot *slot = NULL;
    st = slot_variant(c, variants[i], rep, &u->v, &ex, &slot);
    if (!st) st = ht_variant_prepare(u->v, r->sizes); /* compiles happen before t0, not in the race */
    if (!st) st = private_args(r->spec, r->caller, slot, &u->args);
    if (!st) u->stoppable = can_stop(c, variants[i], ex);
  }
  return st ? ht_error_prefix(st, "%s: preparing a race: ", c->name) : HT_OK;
}

/* ---- after the race ---- */

static ht_status all_failed(const ht_computation *c, const ht_race_result *res) {
  char msg[2048];
  size_t at = (size_t)snprintf(msg, sizeof msg, "%s: every variant of the race failed:", c->name);
  for (int i = 0; i < res->n && at < sizeof msg; i++)
    at += (size_t)snprintf(msg + at, sizeof msg - at, "%s variant %d (%s): %s", i ? ";" : "", res->p[i].variant,
                           c->v[res->p[i].variant].label, res->p[i].message);
  return ht_error(res->p[0].status, "%s", msg);
}

static double total(const ht_run_times *t) { return t->kernel_s + t->h2d_s + t->d2h_s; }

/* The winner's and finished losers' times are measurements; a stopped loser took at least what the
 * winner took (censored). */
static void learn(ht_computation *c, const int64_t *sizes, const ht_race_result *res) {
  const ht_run_times *won = &res->p[0].times;
  for (int i = 0; i < res->n; i++)
    if (res->p[i].outcome == HT_RACE_WON) won = &res->p[i].times;
  ht_run_times bound = {.kernel_s = total(won)};
  for (int i = 0; i < res->n; i++) {
    const ht_race_participant *p = &res->p[i];
    ht_status st = HT_OK;
    if (p->outcome == HT_RACE_WON || p->outcome == HT_RACE_FINISHED) st = ht_computation_record(c, p->variant, sizes, &p->times, 0);
    if (p->outcome == HT_RACE_STOPPED) st = ht_computation_record(c, p->variant, sizes, &bound, 1);
    if (st) ht_log(2, "%s: variant %d's race time not learnt: %s", c->name, p->variant, ht_last_error());
  }
}

static ht_status check_call(const ht_computation *c, const int64_t *sizes, const ht_host_arg *args) {
  if (!c || !sizes || !args) return ht_error(HT_ERR_INVALID, "ht_race_run: bad arguments (computation, sizes, args)");
  if (!c->finished) return ht_error(HT_ERR_INVALID, "%s: call ht_computation_finish before racing", c->name);
  return HT_OK;
}

static ht_status run_race(ht_computation *c, race *r, int n, ht_race_result *res) {
  pthread_t th[HT_RACE_MAX];
  int started = 0;
  ht_status st = HT_OK;
  for (; started < n; started++)
    if (pthread_create(&th[started], NULL, control, &r->run[started])) break;
  if (started < n) { /* those started run, stopped at once; no result stands */
    st = ht_error(HT_ERR_RUNTIME, "%s: cannot start the race's control threads", c->name);
    atomic_store(&r->winner, HT_RACE_MAX); /* nobody wins: the caller's buffers stay as they are */
  }
  pthread_mutex_lock(&r->mu);
  r->t0 = ht_now();
  r->go = 1;
  if (st) atomic_store(&r->stop, 1);
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
  if (st) return st;
  double last = 0;
  for (int i = 0; i < n; i++) last = res->p[i].end_s > last ? res->p[i].end_s : last;
  int w = atomic_load(&r->winner);
  res->winner = w >= 0 ? res->p[w].variant : -1;
  res->t_win = w >= 0 ? r->t_win : NAN;
  res->stop_delay = w >= 0 ? last - r->t_win : NAN;
  return st;
}

ht_status ht_race_run(ht_computation *c, const int64_t *sizes, const ht_host_arg *args, const int *variants, int n,
                      ht_race_result *out) {
  ht_status st = check_call(c, sizes, args);
  if (st) return st;
  int all[HTD_MAX_VARIANTS];
  if (!variants) {
    for (int i = 0; i < c->n_variants; i++) all[i] = i;
    variants = all;
    n = c->n_variants;
  }
  if ((st = check_variants(c, variants, n))) return st;
  ht_race_result *res = calloc(1, sizeof *res);
  race *r = calloc(1, sizeof *r);
  if (!res || !r) {
    free(res);
    free(r);
    return ht_error(HT_ERR_NOMEM, "out of memory");
  }
  double t0 = ht_now();
  atomic_init(&r->winner, -1);
  atomic_init(&r->stop, 0);
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->cv, NULL);
  r->sizes = sizes;
  r->spec = c->spec0;
  r->caller = args;
  res->n = n;
  st = prepare(c, r, variants, n, res);
  if (!st) st = run_race(c, r, n, res);
  for (int i = 0; i < n; i++) free(r->run[i].args);
  pthread_mutex_destroy(&r->mu);
  pthread_cond_destroy(&r->cv);
  free(r);
  res->wall_s = ht_now() - t0;
  if (!st && res->winner < 0) st = all_failed(c, res);
  if (!st) learn(c, sizes, res);
  if (out) *out = *res;
  free(res);
  return st;
}

/* ---- racing as a way to dispatch ---- */

/* The participants of a race dispatch: the calibrated fastest and runner-up and every variant
 * without a time. Returns how many; *unknown: variants without a time. */
static int pick_racers(const ht_computation *c, const ht_variant_estimate *est, int *ids, int *unknown) {
  int best = -1, second = -1, n = 0;
  *unknown = 0;
  for (int i = 0; i < c->n_variants; i++) {
    if (est[i].source == HT_SRC_EXPLORE || !isfinite(est[i].total_s)) {
      if (n < HT_RACE_MAX) ids[n++] = i;
      ++*unknown;
    } else if (best < 0 || est[i].total_s < est[best].total_s) {
      second = best;
      best = i;
    } else if (second < 0 || est[i].total_s < est[second].total_s) {
      second = i;
    }
  }
  if (best >= 0 && n < HT_RACE_MAX) ids[n++] = best;
  if (second >= 0 && n < HT_RACE_MAX) ids[n++] = second;
  return n;
}

ht_status ht_race_dispatch(ht_computation *c, const int64_t *sizes, const ht_host_arg *args, ht_decision *d,
                           ht_run_times *t, ht_race_result *race_out) {
  ht_decision x;
  ht_variant_estimate est[HTD_MAX_VARIANTS];
  int ids[HT_RACE_MAX], unknown;
  if (race_out) race_out->n = 0;
  ht_status st = check_call(c, sizes, args);
  if (!st) st = ht_computation_decide(c, sizes, &x);
  if (!st) st = ht_computation_estimate(c, sizes, est);
  if (st) return st;
  int n = pick_racers(c, est, ids, &unknown);
  if (n < 2 || (!x.close && !unknown)) return ht_computation_run(c, sizes, args, d, t);
  ht_race_result *r = calloc(1, sizeof *r);
  if (!r) return ht_error(HT_ERR_NOMEM, "out of memory");
  st = ht_race_run(c, sizes, args, ids, n, r);
  if (!st) {
    int64_t rep[HTD_MAX_SIZES];
    htd_bucket(c, sizes, rep);
    c->calls++;
    c->v[r->winner].probed_at = c->calls;
    x.variant = r->winner;
    x.config = htd_config_for(c, r->winner, rep);
    for (int i = 0; i < r->n; i++)
      if (t && r->p[i].variant == r->winner) *t = r->p[i].times;
    if (d) *d = x;
    if (race_out) *race_out = *r;
  }
  free(r);
  return st;
}
