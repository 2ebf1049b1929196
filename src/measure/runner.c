/* The runner: evaluations in a watched worker process (default) or in this process.
 *
 * Worker protocol over two pipes. Parent -> worker: 'M' and a ht_config to measure, or 'P', an int
 * n and n configs to build ahead (answered with 'P' once built). Worker -> parent:
 * one tag byte then its payload. Setup: 'I' and the device info once the device is open, then 'A',
 * 'F' (steps done, see ht_progress_fn) and 'S' when the data and the reference are ready; 'E' and
 * the error instead, whenever setup fails. The parent reads the device info at once and waits for
 * 'S' only before the first config, so the worker makes its data and reference while the strategy
 * initialises. A config: 'C' compiled, 'L' a first launch that may compile (HT_CAP_COMPILES_AT_LAUNCH:
 * PoCL builds a kernel for its work-group size there) begins, 'H' a kernel run finished (heartbeat),
 * 'R' the ht_result and one byte, 1 when the worker is still clean. The parent waits on each
 * message with a deadline: the setup timeout until 'I', the compile timeout until 'C' and from 'L' to
 * the next 'H', the run
 * timeout (plus the heartbeat gap) after each 'C' or 'H'; it watches the worker's exit too, since a process the kernel
 * forked may hold the pipe open. A worker that dies or misses a deadline is killed, its config
 * recorded as failed, and a new worker starts on demand; so does one that is no longer clean.
 *
 * The worker leads a process group of its own: killing the group ends whatever its kernels forked,
 * and the group ends with the tuner even when the tuner is killed. The parent never opens a
 * device itself, so no OpenCL or CUDA state crosses fork(). */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/cpus.h"
#include "core/process.h"
#include "device/backend.h"
#include "measure/evaluator.h"

/* The parent waits this much longer than the compile and setup timeouts: the worker kills a hung
 * compiler itself at the timeout (removing its files) and reports it. */
#define GRACE_S 5.0
/* How long a worker told to end gets to exit before it is killed. */
#define EXIT_WAIT_S 5.0

typedef struct watchdog watchdog;

struct ht_runner {
  const ht_spec *spec;
  char *device_id;
  ht_runner_options opt;
  ht_device_info info;
  ht_evaluator *local; /* in-process mode */
  watchdog *wd;        /* in-process mode */
  char left[640];      /* in-process: the config that left threads running (later results are suspect) */
  pid_t pid;           /* worker, 0 when none */
  int ready;           /* the worker has its data and reference ('S') */
  double setup_deadline;
  int to_worker, from_worker;
  int starts;
  /* A config sent to the worker ahead of its evaluation (ht_runner_evaluate_ahead). */
  int in_flight;
  ht_config flight;
  double flight_sent;
};

void ht_runner_options_default(ht_runner_options *o) {
  o->warmup = 1;
  o->warmup_s = 0;
  o->min_runs = 3;
  o->max_runs = 50;
  o->rsd_target = 0.10;
  o->max_time_s = 1.0;
  o->timeout_s = 10;
  o->compile_timeout_s = 300;
  o->setup_timeout_s = 300;
  o->isolate = 1;
  o->compile_jobs = 0;
}

const ht_device_info *ht_runner_device(const ht_runner *r) { return &r->info; }

/* opt->compile_jobs, else one per CPU this process may use (not the device's threads: a GPU's
 * compile nothing). */
static int compile_jobs(const ht_runner_options *o) {
  if (o->compile_jobs > 0) return o->compile_jobs;
  const int cpus = ht_cpus_usable();
  return cpus < 2048 ? cpus : 2048;
}

int ht_runner_compile_jobs(const ht_runner *r) { return compile_jobs(&r->opt); }
int ht_runner_worker_starts(const ht_runner *r) { return r->starts; }

/* "MODE=2 WG=64": for messages. */
static void format_config(const ht_spec *s, const ht_config *cfg, char *buf, size_t len) {
  size_t at = 0;
  buf[0] = '\0';
  for (int i = 0; i < s->n_params && i < cfg->n && at < len; i++) {
    char v[64] = "?";
    if (cfg->idx[i] >= 0 && cfg->idx[i] < s->params[i].n_values) ht_value_format(s->params[i].values[cfg->idx[i]], v, sizeof v);
    at += (size_t)snprintf(buf + at, len - at, "%s%s=%s", i ? " " : "", s->params[i].name, v);
  }
}

/* ---- the worker side ---- */

/* A message: its tag and parts in one write, so that the reader wakes once for it. */
static int send_message(int fd, char tag, const void *a, size_t alen, const void *b, size_t blen) {
  char small[8192], *buf = 1 + alen + blen <= sizeof small ? small : malloc(1 + alen + blen);
  if (!buf) return -1;
  buf[0] = tag;
  if (alen) memcpy(buf + 1, a, alen);
  if (blen) memcpy(buf + 1 + alen, b, blen);
  int rc = ht_fd_write_all(fd, buf, 1 + alen + blen);
  if (buf != small) free(buf);
  return rc;
}

static void worker_progress(char phase, void *ctx) { ht_fd_write_all(*(int *)ctx, &phase, 1); }

/* Ends the worker's process group, and the compiler it runs (a group of its own). */
static void end_worker_group(int sig) {
  (void)sig;
  ht_run_capture_kill();
  kill(0, SIGKILL);
}

static void worker_setup_failed(int out, ht_status st) {
  char msg[2048];
  snprintf(msg, sizeof msg, "%s", ht_last_error());
  ht_fd_write_all(out, "E", 1);
  ht_fd_write_all(out, &st, sizeof st);
  ht_fd_write_all(out, msg, sizeof msg);
  _exit(1);
}

/* Reads len bytes from the parent, however long it takes: 0, or -1 when the pipe closed. */
static int worker_read(int in, void *data, size_t len) {
  int rc;
  while ((rc = ht_fd_read_all(in, data, len, ht_now() + 3600)) == -2) {
  }
  return rc;
}

/* 'P': n configs to build ahead. */
static int worker_precompile(ht_evaluator *ev, int in, int jobs) {
  int n = 0;
  if (worker_read(in, &n, sizeof n) || n < 0 || n > HT_MAX_PRECOMPILE) return -1;
  ht_config *cfgs = malloc(sizeof *cfgs * (size_t)(n > 0 ? n : 1));
  int rc = !cfgs || worker_read(in, cfgs, sizeof *cfgs * (size_t)n) ? -1 : 0;
  if (!rc) ht_evaluator_precompile(ev, cfgs, n, jobs);
  free(cfgs);
  return rc;
}

static void worker_main(const ht_spec *spec, const char *device_id, const ht_runner_options *opt, int in, int out,
                        pid_t parent) {
  setpgid(0, 0);
  signal(SIGTERM, end_worker_group);
  prctl(PR_SET_PDEATHSIG, SIGTERM); /* never outlive a tuner killed with -9, nor let the group */
  if (getppid() != parent) end_worker_group(0);
  signal(SIGINT, SIG_IGN); /* Ctrl-C stops the tuner after this config, not the config */
  /* A crashing kernel must kill the worker, whatever handlers the host application installed. */
  static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS};
  for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++) signal(fatal[i], SIG_DFL);
  ht_evaluator *ev;
  ht_status st = ht_evaluator_open(spec, device_id, opt, &ev);
  if (st != HT_OK) worker_setup_failed(out, st);
  ht_fd_write_all(out, "I", 1);
  ht_fd_write_all(out, ht_evaluator_device(ev), sizeof(ht_device_info));
  if ((st = ht_evaluator_prepare(ev, worker_progress, &out))) worker_setup_failed(out, st);
  ht_fd_write_all(out, "S", 1);
  ht_config cfg;
  static ht_result res; /* large: keep it off the stack */
  for (;;) {
    char kind = 0;
    if (worker_read(in, &kind, 1)) break;
    if (kind == 'P') {
      if (worker_precompile(ev, in, compile_jobs(opt)) || ht_fd_write_all(out, "P", 1)) break;
      continue;
    }
    if (kind != 'M' || worker_read(in, &cfg, sizeof cfg)) break;
    char clean = (char)ht_evaluator_run(ev, &cfg, &res, worker_progress, &out);
    if (send_message(out, 'R', &res, sizeof res, &clean, 1)) break;
    if (!clean) _exit(0); /* what the kernel left may run its code: no unloading; the parent kills the group */
  }
  ht_evaluator_destroy(ev);
  _exit(0);
}

/* ---- the parent side ---- */

/* Reads len bytes from the worker before the deadline: 0; -1 the worker ended; -2 the deadline. */
static int read_worker(ht_runner *r, void *data, size_t len, double deadline) {
  char *p = data;
  while (len) {
    int rc = ht_child_wait_readable(r->from_worker, r->pid, deadline);
    if (rc != 1) return rc == -2 ? -2 : -1;
    ssize_t k = read(r->from_worker, p, len);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    p += k;
    len -= (size_t)k;
  }
  return 0;
}

/* Closes the pipes (a worker at rest then exits; kill_it: it is killed), kills its process group
 * and reaps it: the wait status. */
static int reap_worker(ht_runner *r, int kill_it) {
  if (!r->pid) return 0;
  if (r->to_worker >= 0) close(r->to_worker);
  close(r->from_worker);
  if (!kill_it) ht_child_wait_exit(r->pid, ht_now() + EXIT_WAIT_S);
  int status = ht_child_kill_group(r->pid);
  r->pid = 0;
  return status;
}

/* A config sent ahead and then not asked for: its worker is ended, the measurement dropped. */
static void drop_flight(ht_runner *r) {
  if (!r->in_flight) return;
  r->in_flight = 0;
  reap_worker(r, 1);
}

/* "crashed with signal 11 (Segmentation fault)": how a worker ended. */
static void how_it_ended(int status, char *buf, size_t len) {
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
    snprintf(buf, len, "was killed by signal %d (%s; the system does this when it runs out of memory)", SIGKILL,
             strsignal(SIGKILL));
  else if (WIFSIGNALED(status))
    snprintf(buf, len, "crashed with signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
  else snprintf(buf, len, "exited with status %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/* What setup was doing after the last step the worker reported. */
static void setup_step(const ht_runner *r, char step, char *buf, size_t len) {
  const ht_spec_kernel *ref = &r->spec->reference;
  if (step == 'I') snprintf(buf, len, "making the data");
  else if (step == 'A' && r->spec->has_reference) snprintf(buf, len, "compiling the reference %s (%s)", ref->entry, ref->source_path);
  else if (step == 'F') snprintf(buf, len, "running the reference %s (%s)", ref->entry, ref->source_path);
  else if (step == 'A') snprintf(buf, len, "finishing setup");
  else snprintf(buf, len, "opening device %s", r->device_id);
}

/* Reads setup messages up to `want` ('I' with the device info, or 'S'); step: the last step done. */
static ht_status await_setup(ht_runner *r, char want, char step) {
  double deadline = r->setup_deadline;
  char tag = 0;
  int rc;
  while ((rc = read_worker(r, &tag, 1, deadline)) == 0 && tag != want && tag != 'E') step = tag;
  if (rc == 0 && tag == want && (want != 'I' || (rc = read_worker(r, &r->info, sizeof r->info, deadline)) == 0)) {
    r->ready = want == 'S';
    return HT_OK;
  }
  ht_status code = HT_ERR_DEVICE;
  char msg[2048], what[1024], how[160];
  if (rc == 0 && tag == 'E' && read_worker(r, &code, sizeof code, deadline) == 0 &&
      read_worker(r, msg, sizeof msg, deadline) == 0) {
    reap_worker(r, 1);
    msg[sizeof msg - 1] = '\0';
    return ht_error(code, "%s", msg);
  }
  setup_step(r, step, what, sizeof what);
  int status = reap_worker(r, 1);
  if (rc == -2)
    return ht_error(HT_ERR_TIMEOUT, "setup did not finish within %.3g s (the setup timeout) while %s; worker killed",
                    r->opt.setup_timeout_s, what);
  how_it_ended(status, how, sizeof how);
  return ht_error(step == 'A' || step == 'F' ? HT_ERR_RUNTIME : HT_ERR_DEVICE, "the worker process %s while %s", how,
                  what);
}

static ht_status start_worker(ht_runner *r) {
  int down[2], up[2];
  /* Close-on-exec: the compiler a worker runs must not hold the pipes. */
  if (pipe2(down, O_CLOEXEC)) return ht_error(HT_ERR_INTERNAL, "cannot create pipes: %s", strerror(errno));
  if (pipe2(up, O_CLOEXEC)) {
    close(down[0]);
    close(down[1]);
    return ht_error(HT_ERR_INTERNAL, "cannot create pipes: %s", strerror(errno));
  }
  fflush(NULL); /* the child must not flush the parent's buffered output twice */
  r->setup_deadline = ht_now() + r->opt.setup_timeout_s + GRACE_S;
  pid_t parent = getpid(), pid = fork();
  if (pid == 0) {
    close(down[1]);
    close(up[0]);
    worker_main(r->spec, r->device_id, &r->opt, down[0], up[1], parent);
  }
  close(down[0]);
  close(up[1]);
  if (pid < 0) {
    close(down[1]);
    close(up[0]);
    return ht_error(HT_ERR_INTERNAL, "cannot start a worker process: %s", strerror(errno));
  }
  setpgid(pid, pid); /* as the worker does: whichever runs first, its group exists from now on */
  r->pid = pid;
  r->to_worker = down[1];
  r->from_worker = up[0];
  r->starts++;
  r->ready = 0;
  return await_setup(r, 'I', 0);
}

void ht_runner_new_worker(ht_runner *r) {
  if (r && r->opt.isolate) {
    drop_flight(r);
    reap_worker(r, 0);
  }
}

void ht_runner_release_worker(ht_runner *r) {
  if (!r || !r->opt.isolate) return;
  drop_flight(r);
  if (!r->pid || r->to_worker < 0) return;
  close(r->to_worker); /* the end of its input: it frees what it holds and exits */
  r->to_worker = -1;
}

/* A worker that ended between configs (not the next config's doing), or was released, is reaped
 * before anything is sent. */
static void reap_ended_worker(ht_runner *r) {
  if (r->pid && r->to_worker < 0) reap_worker(r, 0);
  else if (r->pid && ht_child_exited(r->pid)) reap_worker(r, 1);
}

/* What a config's worker was doing: compiling (until 'C'), in a first launch that may compile
 * (between 'L' and the next 'H': PoCL builds the kernel for the launch's work-group size), or
 * running kernels. */
typedef enum { PHASE_COMPILE, PHASE_FIRST_LAUNCH, PHASE_RUN } config_phase;

static double phase_timeout(const ht_runner *r, config_phase ph) {
  return ph == PHASE_RUN ? r->opt.timeout_s : r->opt.compile_timeout_s;
}

static void describe_death(ht_runner *r, ht_result *res, config_phase ph, int timed_out) {
  int status = reap_worker(r, 1);
  static const char first_launch[] = "the first kernel run (where the device compiles the kernel for its launch)";
  static const char *const during[] = {"compilation", first_launch, "a kernel run"};
  static const char *const limit[] = {"compile", "compile", "run"};
  if (timed_out) {
    res->status = ph == PHASE_COMPILE ? HT_EVAL_COMPILE : HT_EVAL_TIMEOUT;
    snprintf(res->message, sizeof res->message, "%s did not finish within %.3g s (the %s timeout); worker killed",
             during[ph], phase_timeout(r, ph), limit[ph]);
  } else {
    char how[160];
    how_it_ended(status, how, sizeof how);
    res->status = ph == PHASE_COMPILE ? HT_EVAL_COMPILE : HT_EVAL_RUNTIME;
    snprintf(res->message, sizeof res->message, "worker %s during %s", how, during[ph]);
  }
}

/* Sends cfg to a worker that is up (starting one if needed): it is then in flight. */
static ht_status send_config(ht_runner *r, const ht_config *cfg) {
  reap_ended_worker(r);
  if (!r->pid) {
    ht_status st = start_worker(r);
    if (st) return st;
  }
  if (!r->ready) {
    ht_status st = await_setup(r, 'S', 'I');
    if (st) return st;
  }
  r->in_flight = 1;
  r->flight = *cfg;
  r->flight_sent = ht_now();
  /* A failed write means the worker is gone: reading its answer says how. */
  send_message(r->to_worker, 'M', cfg, sizeof *cfg, NULL, 0);
  return HT_OK;
}

/* The in-flight config's result; 1 when its worker may take the next config. */
static int await_result(ht_runner *r, int sent_ahead, ht_result *out) {
  ht_result_init(out);
  r->in_flight = 0;
  /* Sent ahead, it ran while the caller was busy: only the wait from now is this config's. */
  const double since = sent_ahead ? ht_now() : r->flight_sent;
  config_phase ph = PHASE_COMPILE;
  char tag = 0, clean = 1;
  int rc = 0;
  while (rc == 0 && tag != 'R') {
    double deadline = ht_now() + (ph == PHASE_RUN ? r->opt.timeout_s + ht_heartbeat_gap(r->opt.timeout_s)
                                                  : r->opt.compile_timeout_s + GRACE_S);
    rc = read_worker(r, &tag, 1, deadline);
    if (rc == 0 && (tag == 'C' || tag == 'H')) ph = PHASE_RUN;
    else if (rc == 0 && tag == 'L') ph = PHASE_FIRST_LAUNCH;
    else if (rc == 0 && tag == 'R' && !(rc = read_worker(r, out, sizeof *out, deadline)))
      rc = read_worker(r, &clean, 1, deadline);
  }
  if (rc != 0) {
    describe_death(r, out, ph, rc == -2);
    out->wall_s = ht_now() - r->flight_sent;
    out->timestamp = ht_wall_time();
    out->time_s = NAN;
    return 0;
  }
  if (!clean) reap_worker(r, 1); /* what the kernel left may still run: the next config gets a new worker */
  /* Count the pipe round trip as framework cost too. */
  double wall = ht_now() - since;
  if (wall > out->wall_s) {
    out->framework_s += wall - out->wall_s;
    out->wall_s = wall;
  }
  return clean;
}

static ht_status evaluate_isolated(ht_runner *r, const ht_config *cfg, const ht_config *next, ht_result *out) {
  if (r->in_flight && !ht_config_equal(&r->flight, cfg)) drop_flight(r);
  const int sent_ahead = r->in_flight;
  if (!sent_ahead) {
    ht_status st = send_config(r, cfg);
    if (st) return st;
  }
  /* next waits in the pipe, so that the worker starts it as soon as this config is done, while
   * the caller stores and reports this one: the worker never waits for the caller. It reads it
   * only once this config finished clean: one that crashed, hung or left threads running ends
   * the worker (its pid then 0), and next with it. A worker gone: its result says how. */
  const int queued = next && r->pid;
  const double queued_at = ht_now();
  if (queued) send_message(r->to_worker, 'M', next, sizeof *next, NULL, 0);
  if (await_result(r, sent_ahead, out) && queued && r->pid) { /* the worker goes on with next */
    r->in_flight = 1;
    r->flight = *next;
    r->flight_sent = queued_at;
  }
  return HT_OK;
}

/* ---- in this process: a watchdog thread ---- */

/* A kernel that hangs in this process cannot be stopped: past a phase's deadline, the watchdog
 * ends the process with a message, instead of letting it hang for ever. */
struct watchdog {
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  double deadline, limit_s; /* deadline 0: disarmed */
  double wake_at;           /* when the thread wakes by itself */
  const char *what, *limit;
  char config[512];
  int stop;
};

static void watchdog_fire(const watchdog *w) {
  char msg[2048];
  int n = snprintf(msg, sizeof msg,
                   "hetune: %s%s%s%s did not finish within %.3g s (the %s) and cannot be stopped in-process: ending "
                   "the process (exit status 124). Finished evaluations are stored; in a worker process (without "
                   "--in-process) a hang is recorded as a failure and tuning goes on.\n",
                   w->what, w->config[0] ? " (" : "", w->config, w->config[0] ? ")" : "", w->limit_s, w->limit);
  if (n > 0) ht_fd_write_all(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
  _exit(124);
}

static void *watchdog_main(void *arg) {
  watchdog *w = arg;
  pthread_mutex_lock(&w->mu);
  while (!w->stop) {
    double now = ht_now(), until = w->deadline > 0 ? w->deadline : now + 3600;
    if (w->deadline > 0 && now >= w->deadline) watchdog_fire(w);
    struct timespec ts = {(time_t)until, (long)((until - floor(until)) * 1e9)};
    w->wake_at = until;
    pthread_cond_timedwait(&w->cv, &w->mu, &ts);
  }
  pthread_mutex_unlock(&w->mu);
  return NULL;
}

/* Arms the watchdog for `seconds` plus `slack` from now (0: disarms it); what and limit name the
 * phase, whose limit is `seconds`. */
static void watchdog_arm(watchdog *w, double seconds, double slack, const char *what, const char *limit) {
  pthread_mutex_lock(&w->mu);
  w->deadline = seconds > 0 ? ht_now() + fmin(seconds + slack, 1e9) : 0;
  w->limit_s = seconds;
  w->what = what;
  w->limit = limit;
  /* Waking the thread at every kernel run would cost a context switch each time; it needs waking
   * only to keep an earlier deadline than the one it sleeps until (later ones it finds itself). */
  if (w->deadline > 0 && w->deadline < w->wake_at) pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

static ht_status watchdog_start(watchdog **out) {
  watchdog *w = calloc(1, sizeof *w);
  if (!w) return ht_error(HT_ERR_NOMEM, "out of memory");
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* ht_now()'s clock */
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, &ca);
  pthread_condattr_destroy(&ca);
  int rc = pthread_create(&w->thread, NULL, watchdog_main, w);
  if (rc) {
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
    return ht_error(HT_ERR_INTERNAL, "cannot start the watchdog thread: %s", strerror(rc));
  }
  *out = w;
  return HT_OK;
}

static void watchdog_stop(watchdog *w) {
  if (!w) return;
  pthread_mutex_lock(&w->mu);
  w->stop = 1;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
  pthread_join(w->thread, NULL);
  pthread_cond_destroy(&w->cv);
  pthread_mutex_destroy(&w->mu);
  free(w);
}

static void local_progress(char phase, void *ctx) {
  ht_runner *r = ctx;
  if (phase == 'C' || phase == 'H')
    watchdog_arm(r->wd, r->opt.timeout_s, ht_heartbeat_gap(r->opt.timeout_s), "a kernel run", "run timeout");
  else if (phase == 'L')
    watchdog_arm(r->wd, r->opt.compile_timeout_s, GRACE_S,
                 "the first kernel run (where the device compiles the kernel for its launch)", "compile timeout");
}

static ht_status create_local(ht_runner *r) {
  ht_status st = watchdog_start(&r->wd); /* first: its thread belongs to the evaluator's baseline */
  if (st) return st;
  watchdog_arm(r->wd, r->opt.setup_timeout_s, GRACE_S, "setup (device, data, reference)", "setup timeout");
  st = ht_evaluator_create(r->spec, r->device_id, &r->opt, NULL, NULL, &r->local);
  watchdog_arm(r->wd, 0, 0, NULL, NULL);
  if (!st) r->info = *ht_evaluator_device(r->local);
  return st;
}

/* A config that leaves threads running here keeps its result, but what runs may disturb any later
 * config, and no worker can be discarded: the next evaluation is an error instead. */
static ht_status evaluate_local(ht_runner *r, const ht_config *cfg, ht_result *out) {
  if (r->left[0])
    return ht_error(HT_ERR_RUNTIME, "%s left threads running after its kernel returned; in-process, later measurements "
                    "could be disturbed by them (run in a worker process, without --in-process)", r->left);
  char config[512];
  format_config(r->spec, cfg, config, sizeof config);
  pthread_mutex_lock(&r->wd->mu);
  snprintf(r->wd->config, sizeof r->wd->config, "%s", config);
  pthread_mutex_unlock(&r->wd->mu);
  watchdog_arm(r->wd, r->opt.compile_timeout_s, GRACE_S, "compilation", "compile timeout");
  int clean = ht_evaluator_run(r->local, cfg, out, local_progress, r); /* a kernel left running is never unloaded */
  watchdog_arm(r->wd, 0, 0, NULL, NULL);
  if (!clean) snprintf(r->left, sizeof r->left, "config %s", config);
  return HT_OK;
}

/* ---- the runner ---- */

static ht_status check_timeouts(const ht_runner_options *o) {
  const double t[] = {o->timeout_s, o->compile_timeout_s, o->setup_timeout_s};
  static const char *const name[] = {"timeout_s", "compile_timeout_s", "setup_timeout_s"};
  for (int i = 0; i < 3; i++)
    if (!(t[i] > 0)) return ht_error(HT_ERR_INVALID, "runner options: %s is %g; a timeout must be positive", name[i], t[i]);
  return HT_OK;
}

ht_status ht_runner_create(const ht_spec *spec, const char *device_id, const ht_runner_options *opt,
                           ht_runner **out) {
  ht_status st = ht_runner_start(spec, device_id, opt, out);
  if (!st && (*out)->pid && !(*out)->ready && (st = await_setup(*out, 'S', 'I'))) {
    ht_runner_destroy(*out);
    *out = NULL;
  }
  return st;
}

ht_status ht_runner_start(const ht_spec *spec, const char *device_id, const ht_runner_options *opt,
                          ht_runner **out) {
  *out = NULL;
  ht_status st = opt ? check_timeouts(opt) : HT_OK;
  if (st) return st;
  ht_runner *r = calloc(1, sizeof *r);
  if (!r) return ht_error(HT_ERR_NOMEM, "out of memory");
  r->spec = spec;
  r->device_id = ht_strdup(device_id ? device_id : "c");
  if (opt) r->opt = *opt;
  else ht_runner_options_default(&r->opt);
  if (r->opt.min_runs < 2) r->opt.min_runs = 2;
  if (r->opt.max_runs > HT_MAX_SAMPLES) r->opt.max_runs = HT_MAX_SAMPLES;
  if (r->opt.max_runs < r->opt.min_runs) r->opt.max_runs = r->opt.min_runs;
  r->opt.compile_jobs = compile_jobs(&r->opt); /* once: every batch asked the control group's files again */
  if (r->opt.isolate) {
    signal(SIGPIPE, SIG_IGN); /* a dead worker must give EPIPE, not kill the tuner */
    st = start_worker(r);
  } else {
    st = create_local(r);
  }
  if (st) {
    ht_runner_destroy(r);
    return st;
  }
  *out = r;
  return HT_OK;
}

/* A config must name one value of each of the spec's parameters: an index out of range would
 * read past the parameter's values. */
static ht_status check_config(const ht_spec *s, const ht_config *cfg) {
  if (!cfg || cfg->n != s->n_params)
    return ht_error(HT_ERR_INVALID, "%s: a config of %d values for %d parameters", s->name, cfg ? cfg->n : 0,
                    s->n_params);
  for (int i = 0; i < cfg->n; i++)
    if (cfg->idx[i] < 0 || cfg->idx[i] >= s->params[i].n_values)
      return ht_error(HT_ERR_INVALID, "%s: parameter %s has %d values, not a value %d", s->name, s->params[i].name,
                      s->params[i].n_values, cfg->idx[i]);
  return HT_OK;
}

ht_status ht_runner_evaluate_ahead(ht_runner *r, const ht_config *cfg, const ht_config *next, ht_result *out) {
  ht_status st = check_config(r->spec, cfg);
  if (!st && next) st = check_config(r->spec, next);
  if (st) return st;
  return r->local ? evaluate_local(r, cfg, out) : evaluate_isolated(r, cfg, next, out);
}

ht_status ht_runner_evaluate(ht_runner *r, const ht_config *cfg, ht_result *out) {
  return ht_runner_evaluate_ahead(r, cfg, NULL, out);
}

/* How long building n configs ahead may take: a compile timeout per round of compile_jobs. */
static double precompile_limit(const ht_runner *r, int n) {
  const int jobs = compile_jobs(&r->opt);
  return r->opt.compile_timeout_s * ((n + jobs - 1) / jobs);
}

/* The worker builds them. One that dies or overruns is ended: the configs are then built when
 * evaluated, by a new worker. */
static void precompile_isolated(ht_runner *r, const ht_config *cfgs, int n) {
  drop_flight(r);
  reap_ended_worker(r);
  if ((!r->pid && start_worker(r)) || (!r->ready && await_setup(r, 'S', 'I'))) {
    ht_error_clear(); /* the evaluation that follows starts a worker and reports why it cannot */
    return;
  }
  const ht_backend_ops *b = ht_backend_find(r->info.backend);
  if (!b || !(b->caps & HT_CAP_PARALLEL_COMPILE)) return; /* the worker would build nothing */
  double deadline = ht_now() + precompile_limit(r, n) + GRACE_S;
  char tag = 0;
  int rc = send_message(r->to_worker, 'P', &n, sizeof n, cfgs, sizeof *cfgs * (size_t)n)
               ? -1
               : read_worker(r, &tag, 1, deadline);
  if (rc != 0 || tag != 'P') reap_worker(r, 1);
}

ht_status ht_runner_precompile(ht_runner *r, const ht_config *cfgs, int n) {
  if (n < 2) return HT_OK; /* one config: its evaluation builds it as fast */
  if (n > HT_MAX_PRECOMPILE)
    return ht_error(HT_ERR_INVALID, "precompile: %d configs, at most %d at once", n, HT_MAX_PRECOMPILE);
  for (int i = 0; i < n; i++) {
    ht_status st = check_config(r->spec, &cfgs[i]);
    if (st) return st;
  }
  if (!r->local) {
    precompile_isolated(r, cfgs, n);
    return HT_OK;
  }
  pthread_mutex_lock(&r->wd->mu);
  snprintf(r->wd->config, sizeof r->wd->config, "%d configs", n);
  pthread_mutex_unlock(&r->wd->mu);
  watchdog_arm(r->wd, precompile_limit(r, n), GRACE_S, "compilation ahead", "compile timeout");
  ht_evaluator_precompile(r->local, cfgs, n, compile_jobs(&r->opt));
  watchdog_arm(r->wd, 0, 0, NULL, NULL);
  return HT_OK;
}

void ht_runner_destroy(ht_runner *r) {
  if (!r) return;
  drop_flight(r); /* a tuning stopped with a config sent ahead: not waited for */
  reap_worker(r, 0);
  ht_evaluator_destroy(r->local);
  watchdog_stop(r->wd);
  free(r->device_id);
  free(r);
}
