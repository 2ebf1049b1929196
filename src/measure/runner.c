/* The runner: evaluations in a watched worker process (default) or in this process.
 *
 * Worker protocol over two pipes. Parent -> worker: a ht_config to measure. Worker -> parent:
 * one tag byte then its payload: 'I' device info (after setup), 'E' setup error, 'C' compiled,
 * 'H' a kernel run finished (heartbeat), 'R' the ht_result. The parent waits on each message with
 * a deadline: the compile timeout until 'C', the per-run timeout after it. A worker that dies or
 * misses a deadline is killed, its config recorded as failed, and a new worker starts on demand.
 * The parent never opens a device itself, so no OpenCL or CUDA state crosses fork(). */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "measure/evaluator.h"

struct ht_runner {
  const ht_spec *spec;
  char *device_id;
  ht_runner_options opt;
  ht_device_info info;
  ht_evaluator *local; /* in-process mode */
  pid_t pid;           /* worker, 0 when none */
  int to_worker, from_worker;
  int starts;
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
  o->isolate = 1;
}

const ht_device_info *ht_runner_device(const ht_runner *r) { return &r->info; }
int ht_runner_worker_starts(const ht_runner *r) { return r->starts; }

/* ---- the worker side ---- */

static void worker_progress(char phase, void *ctx) { ht_fd_write_all(*(int *)ctx, &phase, 1); }

static void worker_main(const ht_spec *spec, const char *device_id, const ht_runner_options *opt, int in, int out) {
  prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive a tuner killed with -9 */
  signal(SIGINT, SIG_IGN);          /* Ctrl-C stops the tuner after this config, not the config */
  /* A crashing kernel must kill the worker, whatever handlers the host application installed. */
  static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS};
  for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++) signal(fatal[i], SIG_DFL);
  ht_evaluator *ev;
  ht_status st = ht_evaluator_create(spec, device_id, opt, &ev);
  if (st != HT_OK) {
    char msg[2048];
    snprintf(msg, sizeof msg, "%s", ht_last_error());
    ht_fd_write_all(out, "E", 1);
    ht_fd_write_all(out, &st, sizeof st);
    ht_fd_write_all(out, msg, sizeof msg);
    _exit(1);
  }
  ht_fd_write_all(out, "I", 1);
  ht_fd_write_all(out, ht_evaluator_device(ev), sizeof(ht_device_info));
  ht_config cfg;
  static ht_result res; /* large: keep it off the stack */
  while (ht_fd_read_all(in, &cfg, sizeof cfg, ht_now() + 1e9) == 0) {
    ht_evaluator_run(ev, &cfg, &res, worker_progress, &out);
    if (ht_fd_write_all(out, "R", 1) || ht_fd_write_all(out, &res, sizeof res)) break;
  }
  ht_evaluator_destroy(ev);
  _exit(0);
}

/* ---- the parent side ---- */

/* Closes the pipes (a live worker then exits), optionally kills, and waits: the wait status. */
static int reap_worker(ht_runner *r, int kill_it) {
  int status = 0;
  if (!r->pid) return status;
  close(r->to_worker);
  close(r->from_worker);
  if (kill_it) kill(r->pid, SIGKILL);
  while (waitpid(r->pid, &status, 0) < 0 && errno == EINTR) {
  }
  r->pid = 0;
  return status;
}

static ht_status start_worker(ht_runner *r) {
  int down[2], up[2];
  if (pipe(down) || pipe(up)) return ht_error(HT_ERR_INTERNAL, "cannot create pipes: %s", strerror(errno));
  fflush(NULL); /* the child must not flush the parent's buffered output twice */
  pid_t pid = fork();
  if (pid < 0) return ht_error(HT_ERR_INTERNAL, "cannot start a worker process: %s", strerror(errno));
  if (pid == 0) {
    close(down[1]);
    close(up[0]);
    worker_main(r->spec, r->device_id, &r->opt, down[0], up[1]);
  }
  close(down[0]);
  close(up[1]);
  r->pid = pid;
  r->to_worker = down[1];
  r->from_worker = up[0];
  r->starts++;
  char tag = 0;
  double deadline = ht_now() + r->opt.compile_timeout_s;
  int rc = ht_fd_read_all(r->from_worker, &tag, 1, deadline);
  if (rc == 0 && tag == 'I' && ht_fd_read_all(r->from_worker, &r->info, sizeof r->info, deadline) == 0) return HT_OK;
  char msg[2048] = "the worker process died during setup";
  ht_status code = HT_ERR_DEVICE;
  if (rc == 0 && tag == 'E' && ht_fd_read_all(r->from_worker, &code, sizeof code, deadline) == 0)
    ht_fd_read_all(r->from_worker, msg, sizeof msg, deadline);
  if (rc == -2) snprintf(msg, sizeof msg, "setup (device, data, reference) took over %.0f s", r->opt.compile_timeout_s);
  msg[sizeof msg - 1] = '\0';
  reap_worker(r, 1);
  return ht_error(code, "%s", msg);
}

void ht_runner_new_worker(ht_runner *r) {
  if (r && r->opt.isolate) reap_worker(r, 0); /* its input closes: it exits after its current config */
}

static void describe_death(ht_runner *r, ht_result *res, int compiled, int timed_out) {
  int status = reap_worker(r, 1);
  if (timed_out) {
    res->status = compiled ? HT_EVAL_TIMEOUT : HT_EVAL_COMPILE;
    snprintf(res->message, sizeof res->message, "%s did not finish within %.3g s; worker killed",
             compiled ? "a kernel run" : "compilation", compiled ? r->opt.timeout_s : r->opt.compile_timeout_s);
  } else {
    res->status = compiled ? HT_EVAL_RUNTIME : HT_EVAL_COMPILE;
    if (WIFSIGNALED(status))
      snprintf(res->message, sizeof res->message, "worker crashed with signal %d (%s) during %s", WTERMSIG(status),
               strsignal(WTERMSIG(status)), compiled ? "a kernel run" : "compilation");
    else
      snprintf(res->message, sizeof res->message, "worker exited with status %d during %s",
               WIFEXITED(status) ? WEXITSTATUS(status) : -1, compiled ? "a kernel run" : "compilation");
  }
}

static ht_status evaluate_isolated(ht_runner *r, const ht_config *cfg, ht_result *out) {
  if (!r->pid) {
    ht_status st = start_worker(r);
    if (st) return st;
  }
  double t0 = ht_now();
  ht_result_init(out);
  if (ht_fd_write_all(r->to_worker, cfg, sizeof *cfg)) {
    describe_death(r, out, 0, 0);
    return HT_OK;
  }
  int compiled = 0;
  for (;;) {
    char tag;
    double deadline = ht_now() + (compiled ? r->opt.timeout_s : r->opt.compile_timeout_s);
    int rc = ht_fd_read_all(r->from_worker, &tag, 1, deadline);
    if (rc == 0 && tag == 'C') compiled = 1;
    else if (rc == 0 && tag == 'R') rc = ht_fd_read_all(r->from_worker, out, sizeof *out, deadline);
    if (rc != 0) {
      describe_death(r, out, compiled, rc == -2);
      out->wall_s = ht_now() - t0;
      out->timestamp = ht_wall_time();
      out->time_s = NAN;
      return HT_OK;
    }
    if (tag == 'R') break;
  }
  /* Count the pipe round trip as framework cost too. */
  double wall = ht_now() - t0;
  out->framework_s += wall - out->wall_s;
  out->wall_s = wall;
  return HT_OK;
}

ht_status ht_runner_create(const ht_spec *spec, const char *device_id, const ht_runner_options *opt,
                           ht_runner **out) {
  ht_runner *r = calloc(1, sizeof *r);
  if (!r) return ht_error(HT_ERR_NOMEM, "out of memory");
  r->spec = spec;
  r->device_id = ht_strdup(device_id ? device_id : "c");
  if (opt) r->opt = *opt;
  else ht_runner_options_default(&r->opt);
  if (r->opt.min_runs < 2) r->opt.min_runs = 2;
  if (r->opt.max_runs > HT_MAX_SAMPLES) r->opt.max_runs = HT_MAX_SAMPLES;
  if (r->opt.max_runs < r->opt.min_runs) r->opt.max_runs = r->opt.min_runs;
  ht_status st;
  if (r->opt.isolate) {
    signal(SIGPIPE, SIG_IGN); /* a dead worker must give EPIPE, not kill the tuner */
    st = start_worker(r);
  } else {
    st = ht_evaluator_create(spec, r->device_id, &r->opt, &r->local);
    if (!st) r->info = *ht_evaluator_device(r->local);
  }
  if (st) {
    ht_runner_destroy(r);
    return st;
  }
  *out = r;
  return HT_OK;
}

ht_status ht_runner_evaluate(ht_runner *r, const ht_config *cfg, ht_result *out) {
  if (r->local) {
    ht_evaluator_run(r->local, cfg, out, NULL, NULL);
    return HT_OK;
  }
  return evaluate_isolated(r, cfg, out);
}

void ht_runner_destroy(ht_runner *r) {
  if (!r) return;
  reap_worker(r, 0);
  ht_evaluator_destroy(r->local);
  free(r->device_id);
  free(r);
}
