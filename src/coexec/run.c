/* Running a split call: one host thread per device, each running its chunks through the execution
 * layer on the caller's buffers, a join, then the chunks' times fed back to the computation (which
 * is not thread-safe, so feedback waits for the join). A device that fails has its chunks run again
 * on the fastest device that did not. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "coexec/coexec_internal.h"

/* One chunk run, and how it went. */
typedef struct htx_job {
  int pu, variant;
  const char *config; /* the config it ran (owned by the computation) */
  ht_variant *v;      /* the execution layer's object for it */
  htx_chunk k;
  ht_run_times t;
  ht_status st;
  char err[256];
} htx_job;

/* What every device's thread shares during one call. */
typedef struct htx_call {
  ht_coexec *x;
  const int64_t *sizes;
  const ht_host_arg *args;
  pthread_mutex_t lock;
  htx_job *jobs; /* chunks in the order they were taken */
  int n_jobs, cap_jobs;
  /* dynamic schedule */
  int64_t next;             /* the first row nobody took */
  double power[HT_COEXEC_MAX_PUS]; /* rows per second each device showed (or was predicted) */
  int taken[HT_COEXEC_MAX_PUS];
  int dead[HT_COEXEC_MAX_PUS];
} htx_call;

static double job_time(const htx_job *j) { return j->t.kernel_s + j->t.h2d_s + j->t.d2h_s; }

/* The job's config and variant object (compiled on first use), under the lock: the computation's
 * tables are not thread-safe. */
static void prepare_job(htx_call *call, htx_job *j) {
  ht_computation *c = call->x->c;
  int64_t cs[HTD_MAX_SIZES], rep[HTD_MAX_SIZES];
  htx_chunk_sizes(c, &call->x->split, call->sizes, &j->k, cs);
  pthread_mutex_lock(&call->lock);
  htd_bucket(c, cs, rep);
  j->config = htd_config_for(c, j->variant, rep);
  j->st = htd_variant_for(c, j->variant, j->config, &j->v);
  if (j->st) snprintf(j->err, sizeof j->err, "%s", ht_last_error());
  pthread_mutex_unlock(&call->lock);
}

/* Runs one chunk; callable from any thread. */
static void run_job(htx_call *call, htx_job *j) {
  ht_coexec *x = call->x;
  ht_computation *c = x->c;
  if (!j->v && !j->st) prepare_job(call, j);
  if (j->st) return;
  int64_t cs[HTD_MAX_SIZES];
  htx_chunk_sizes(c, &x->split, call->sizes, &j->k, cs);
  ht_host_arg a[c->spec0->n_args];
  htx_chunk_args(c, &x->split, call->sizes, &j->k, call->args, a);
  /* a halo means a chunk's run sees rows its neighbours own: on a host device it must work on
   * copies, else its writes to those rows would race theirs */
  ht_run_opts o = {.copy = x->split.halo > 0};
  if ((j->st = ht_variant_run(j->v, cs, a, &o, &j->t))) snprintf(j->err, sizeof j->err, "%s", ht_last_error());
}

static htx_job *add_job(htx_call *call, int pu, int variant, htx_chunk k) {
  if (call->n_jobs == call->cap_jobs) {
    int cap = call->cap_jobs ? 2 * call->cap_jobs : 16;
    htx_job *j = realloc(call->jobs, sizeof *j * (size_t)cap);
    if (!j) return NULL;
    call->jobs = j, call->cap_jobs = cap;
  }
  htx_job *j = &call->jobs[call->n_jobs++];
  *j = (htx_job){.pu = pu, .variant = variant, .k = k};
  return j;
}

/* ---- static: one chunk per device, as planned ---- */

typedef struct pu_thread {
  htx_call *call;
  int job;
} pu_thread;

static void *static_worker(void *arg) {
  pu_thread *t = arg;
  run_job(t->call, &t->call->jobs[t->job]);
  return NULL;
}

/* Starts a thread per job but the first, runs the first here, joins. */
static void run_jobs_at_once(htx_call *call, int first, int n) {
  pthread_t th[HT_COEXEC_MAX_PUS];
  pu_thread arg[HT_COEXEC_MAX_PUS];
  int started[HT_COEXEC_MAX_PUS] = {0};
  for (int i = 1; i < n; i++) {
    arg[i] = (pu_thread){call, first + i};
    started[i] = !pthread_create(&th[i], NULL, static_worker, &arg[i]);
    if (!started[i]) run_job(call, &call->jobs[first + i]);
  }
  if (n > 0) run_job(call, &call->jobs[first]);
  for (int i = 1; i < n; i++)
    if (started[i]) pthread_join(th[i], NULL);
}

/* ---- dynamic: devices take chunks on demand ---- */

static int pick_version(htx_call *call, int pu) {
  ht_coexec *x = call->x;
  int n = x->n_versions[pu], taken = call->taken[pu];
  if (taken < n) return x->versions[pu][taken]; /* each version measured once first */
  int best = x->versions[pu][0];
  double best_t = INFINITY;
  int64_t rep[HTD_MAX_SIZES];
  uint64_t key = htd_bucket(x->c, call->sizes, rep);
  for (int i = 0; i < n; i++) {
    htd_estimate e;
    htd_estimate_variant(x->c, x->versions[pu][i], rep, key, 0, &e);
    if (e.calibrated && e.total_s < best_t) best_t = e.total_s, best = x->versions[pu][i];
  }
  return best;
}

/* The next chunk for pu under the lock: HGuided's share of what is left, in granularities. */
static int take_chunk(htx_call *call, int pu) {
  ht_coexec *x = call->x;
  int64_t n = call->sizes[x->split.dim], left = n - call->next, g = x->split.granularity;
  if (left <= 0 || call->dead[pu]) return -1;
  double sum = 0;
  for (int i = 0; i < x->n_pus; i++)
    if (!call->dead[i]) sum += call->power[i];
  int64_t rows = ht_hguided_chunk(left, call->power[pu], sum, 2, x->min_chunk * g);
  rows = (rows + g - 1) / g * g;
  if (rows > left) rows = left;
  htx_chunk k = htx_chunk_at(&x->split, n, call->next, call->next + rows);
  htx_job *j = add_job(call, pu, pick_version(call, pu), k);
  if (!j) return -1;
  call->next += rows;
  call->taken[pu]++;
  return call->n_jobs - 1;
}

typedef struct dyn_thread {
  htx_call *call;
  int pu;
  int first; /* the job taken for it before the threads started (-1: none) */
} dyn_thread;

static void *dynamic_worker(void *arg) {
  dyn_thread *d = arg;
  htx_call *call = d->call;
  for (int ji = d->first;; ji = -1) {
    pthread_mutex_lock(&call->lock);
    if (ji < 0) ji = take_chunk(call, d->pu);
    htx_job j = ji >= 0 ? call->jobs[ji] : (htx_job){0};
    pthread_mutex_unlock(&call->lock);
    if (ji < 0) return NULL;
    run_job(call, &j); /* on a copy: the jobs array may move while it runs */
    pthread_mutex_lock(&call->lock);
    call->jobs[ji] = j;
    double t = job_time(&j);
    if (j.st) call->dead[d->pu] = 1;
    else if (t > 0) call->power[d->pu] = (double)(j.k.ub - j.k.lb) / t;
    pthread_mutex_unlock(&call->lock);
    if (j.st) return NULL;
  }
}

static void initial_power(htx_call *call) {
  ht_coexec *x = call->x;
  int64_t n = call->sizes[x->split.dim];
  int64_t rep[HTD_MAX_SIZES];
  uint64_t key = htd_bucket(x->c, call->sizes, rep);
  for (int i = 0; i < x->n_pus; i++) {
    htd_estimate e;
    htd_estimate_variant(x->c, x->versions[i][0], rep, key, 0, &e);
    call->power[i] = e.calibrated && e.total_s > 0 ? (double)n / e.total_s : 0;
  }
  double mean = 0;
  int known = 0;
  for (int i = 0; i < x->n_pus; i++)
    if (call->power[i] > 0) mean += call->power[i], known++;
  mean = known ? mean / known : 1;
  for (int i = 0; i < x->n_pus; i++)
    if (call->power[i] <= 0) call->power[i] = mean; /* unknown: assume average until measured */
}

/* ---- after the join ---- */

/* The device with the shortest measured chunk time per row among those that never failed. */
static int fastest_alive(const htx_call *call) {
  int best = -1;
  double best_rate = INFINITY;
  for (int i = 0; i < call->n_jobs; i++) {
    const htx_job *j = &call->jobs[i];
    if (j->st || call->dead[j->pu]) continue;
    double rate = job_time(j) / (double)(j->k.ub - j->k.lb);
    if (rate < best_rate) best_rate = rate, best = i;
  }
  return best;
}

/* Runs every failed chunk again on the fastest device that worked. */
static ht_status rerun_failed(htx_call *call, ht_coexec_report *r) {
  int n = call->n_jobs;
  for (int i = 0; i < n; i++)
    if (call->jobs[i].st) call->dead[call->jobs[i].pu] = 1;
  for (int i = 0; i < n; i++) {
    if (!call->jobs[i].st) continue;
    htx_job failed = call->jobs[i];
    int f = fastest_alive(call);
    if (f < 0)
      return ht_error(failed.st, "%s: every device failed; %s: %s", call->x->c->name,
                      ht_computation_variant_label(call->x->c, failed.variant), failed.err);
    htx_job *j = add_job(call, call->jobs[f].pu, call->jobs[f].variant, failed.k);
    if (!j) return ht_error(HT_ERR_NOMEM, "out of memory");
    run_job(call, j);
    if (j->st)
      return ht_error(j->st, "%s: rows [%lld, %lld) failed on %s (%s), then on %s: %s", call->x->c->name,
                      (long long)failed.k.lb, (long long)failed.k.ub,
                      ht_computation_variant_label(call->x->c, failed.variant), failed.err,
                      ht_computation_variant_label(call->x->c, j->variant), j->err);
    r->reruns++;
  }
  return HT_OK;
}

/* Per device: its chunks' times, summed; the call's makespan and imbalance; feedback. */
static void summarise(htx_call *call, ht_coexec_report *r) {
  ht_coexec *x = call->x;
  for (int i = 0; i < x->n_pus; i++) {
    ht_coexec_pu_report *u = &r->pu[i];
    u->kernel_s = u->transfer_s = u->time_s = 0;
    u->chunks = 0;
    u->rows = 0;
    u->status = HT_OK;
    u->error[0] = 0;
  }
  for (int i = 0; i < call->n_jobs; i++) {
    htx_job *j = &call->jobs[i];
    ht_coexec_pu_report *u = &r->pu[j->pu];
    if (j->st) {
      u->status = j->st;
      snprintf(u->error, sizeof u->error, "%s", j->err);
      continue;
    }
    u->chunks++;
    u->rows += j->k.ub - j->k.lb;
    u->config = j->config;
    u->kernel_s += j->t.kernel_s;
    u->transfer_s += j->t.h2d_s + j->t.d2h_s;
    u->time_s += job_time(j);
    int64_t cs[HTD_MAX_SIZES];
    htx_chunk_sizes(x->c, &x->split, call->sizes, &j->k, cs);
    htd_feedback(x->c, j->variant, cs, NULL, &j->t);
  }
  double hi = 0, lo = INFINITY;
  for (int i = 0; i < x->n_pus; i++) {
    if (!r->pu[i].chunks) continue;
    if (r->pu[i].time_s > hi) hi = r->pu[i].time_s;
    if (r->pu[i].time_s < lo) lo = r->pu[i].time_s;
  }
  r->makespan_s = hi;
  r->imbalance = hi > 0 ? (hi - lo) / hi : 0;
}

static ht_status finish(htx_call *call, ht_coexec_report *r) {
  ht_status st = rerun_failed(call, r);
  summarise(call, r);
  return st;
}

ht_status htx_run_static(ht_coexec *x, const int64_t *sizes, const ht_host_arg *args, ht_coexec_report *r) {
  htx_call call = {.x = x, .sizes = sizes, .args = args};
  pthread_mutex_init(&call.lock, NULL);
  ht_status st = HT_OK;
  int64_t n = sizes[x->split.dim];
  for (int i = 0; i < x->n_pus && !st; i++)
    if (r->pu[i].variant >= 0 && !add_job(&call, i, r->pu[i].variant, htx_chunk_at(&x->split, n, r->pu[i].lb, r->pu[i].ub)))
      st = ht_error(HT_ERR_NOMEM, "out of memory");
  for (int i = 0; i < call.n_jobs && !st; i++) prepare_job(&call, &call.jobs[i]); /* compiles, one at a time */
  if (!st) run_jobs_at_once(&call, 0, call.n_jobs);
  if (!st) st = finish(&call, r);
  pthread_mutex_destroy(&call.lock);
  free(call.jobs);
  return st;
}

ht_status htx_run_dynamic(ht_coexec *x, const int64_t *sizes, const ht_host_arg *args, ht_coexec_report *r) {
  htx_call call = {.x = x, .sizes = sizes, .args = args};
  pthread_mutex_init(&call.lock, NULL);
  initial_power(&call);
  pthread_t th[HT_COEXEC_MAX_PUS];
  dyn_thread d[HT_COEXEC_MAX_PUS];
  int started[HT_COEXEC_MAX_PUS] = {0};
  /* Every device's first chunk is taken before any thread starts: on a machine with few cores a
   * thread that starts late would otherwise find the rows gone and its device stay unmeasured. */
  for (int i = 0; i < x->n_pus; i++) d[i] = (dyn_thread){&call, i, take_chunk(&call, i)};
  for (int i = 1; i < x->n_pus; i++) started[i] = !pthread_create(&th[i], NULL, dynamic_worker, &d[i]);
  dynamic_worker(&d[0]);
  for (int i = 1; i < x->n_pus; i++) /* a device whose thread could not start runs its chunk here */
    if (started[i]) pthread_join(th[i], NULL);
    else dynamic_worker(&d[i]);
  ht_status st = HT_OK;
  if (call.next < sizes[x->split.dim]) { /* every thread stopped early: the rest runs here */
    int f = fastest_alive(&call);
    htx_job *j = add_job(&call, f >= 0 ? call.jobs[f].pu : 0, f >= 0 ? call.jobs[f].variant : x->versions[0][0],
                         htx_chunk_at(&x->split, sizes[x->split.dim], call.next, sizes[x->split.dim]));
    if (!j) st = ht_error(HT_ERR_NOMEM, "out of memory");
    else run_job(&call, j);
  }
  r->schedule = "dynamic";
  r->pred_makespan_s = NAN;
  for (int i = 0; i < x->n_pus; i++) {
    r->pu[i] = (ht_coexec_pu_report){.variant = -1, .pred_s = NAN, .lb = 0, .ub = 0};
    for (int k = 0; k < call.n_jobs; k++) /* the rows a device ran: first to last of its chunks */
      if (call.jobs[k].pu == i) {
        if (r->pu[i].variant < 0) r->pu[i].lb = call.jobs[k].k.lb, r->pu[i].variant = call.jobs[k].variant;
        r->pu[i].ub = call.jobs[k].k.ub;
      }
  }
  r->n_pus = x->n_pus;
  if (!st) st = finish(&call, r);
  pthread_mutex_destroy(&call.lock);
  free(call.jobs);
  return st;
}
