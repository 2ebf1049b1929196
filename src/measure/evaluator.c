/* In-process evaluation of configs: data, reference, compile, verify, time. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "core/process.h"
#include "exec/exec_internal.h"
#include "measure/evaluator.h"

/* How long threads and processes that a C kernel started get to end after it returned. */
#define LEFTOVER_SETTLE_S 0.1

/* Every buffer the runner allocates is GUARD_BYTES longer than asked, its tail filled with a
 * pattern no kernel writes by chance; after the verified run, a changed tail is a write past the
 * end (which on a host buffer would otherwise corrupt the heap unseen). */
#define GUARD_BYTES 64
static unsigned char guard_byte(size_t i) { return (unsigned char)(0xA5 ^ (i * 37)); }

/* A config whose kernel was built ahead (ht_evaluator_precompile): its program, kept loaded so
 * the evaluation neither looks it up nor loads it again, the time the build took and, when it
 * failed, why (its evaluation reports that instead of building again). */
typedef struct prebuilt {
  ht_config cfg;
  ht_program *prog;
  double seconds; /* < 0: not built ahead (it was in the cache already) */
  char *error;
} prebuilt;


typedef struct arg_data {
  size_t n, bytes;
  void *init;  /* initial contents (inputs and outputs alike, so every config starts equal), then the guard */
  void *out;   /* read-back of written buffers, guard included */
  void *ref;   /* reference output of written buffers */
  ht_buffer *buf;
} arg_data;

struct ht_evaluator {
  const ht_spec *spec;
  ht_runner_options opt;
  ht_device *dev;
  ht_value *vars;
  arg_data *args;
  int has_ref;
  const ht_spec_kernel *run; /* the kernel the device runs: the spec's, or its C reference (sim) */
  int watch;           /* what a kernel may leave running: 0 nothing (OpenCL, CUDA), 1 threads, 2 also processes */
  ht_threads baseline; /* the threads that ran when the config started */
  int baseline_before_batch; /* baseline listed before the batch built ahead was loaded */
  prebuilt *pre;       /* configs ht_evaluator_precompile built, with their build times */
  int n_pre;
  int pre_all_cached; /* the last batch built ahead was all in the cache */
};

const ht_device_info *ht_evaluator_device(const ht_evaluator *ev) { return &ev->dev->info; }

static void drop_prebuilt(ht_evaluator *ev) {
  for (int i = 0; i < ev->n_pre; i++) {
    free(ev->pre[i].error);
    if (ev->pre[i].prog) ev->dev->ops->program_free(ev->dev, ev->pre[i].prog); /* never run */
  }
  free(ev->pre);
  ev->pre = NULL;
  ev->n_pre = 0;
}

/* ---- helpers shared by the reference and the tuned kernel ---- */

/* The launch arguments over the evaluator's buffers (the execution layer builds them). */
static int build_args(const ht_spec *s, arg_data *data, const ht_value *vars, ht_arg *args, char *msg, size_t len) {
  ht_buffer **bufs = malloc(sizeof *bufs * ((size_t)s->n_args + 1));
  if (!bufs) return snprintf(msg, len, "out of memory"), 1;
  for (int i = 0; i < s->n_args; i++) bufs[i] = data[i].buf;
  int bad = ht_exec_args(s, vars, bufs, args, msg, len);
  free(bufs);
  return bad;
}

static ht_status upload(ht_device *dev, const ht_spec *s, arg_data *data, double *seconds) {
  *seconds = 0;
  for (int i = 0; i < s->n_args; i++) {
    if (!s->args[i].is_buffer) continue;
    double t = 0;
    ht_status st = dev->ops->buffer_write(dev, data[i].buf, data[i].init, data[i].bytes + GUARD_BYTES, &t);
    if (st) return st;
    *seconds += t;
  }
  return HT_OK;
}

static ht_status download(ht_device *dev, const ht_spec *s, arg_data *data, int to_ref, double *seconds) {
  *seconds = 0;
  for (int i = 0; i < s->n_args; i++) {
    if (!s->args[i].is_buffer || !(s->args[i].access & HT_ACCESS_WRITE)) continue;
    double t = 0;
    ht_status st = to_ref ? dev->ops->buffer_read(dev, data[i].buf, data[i].ref, data[i].bytes, &t)
                          : dev->ops->buffer_read(dev, data[i].buf, data[i].out, data[i].bytes + GUARD_BYTES, &t);
    if (st) return st;
    *seconds += t;
  }
  return HT_OK;
}

static ht_status alloc_buffers(ht_device *dev, const ht_spec *s, arg_data *data) {
  for (int i = 0; i < s->n_args; i++) {
    if (!s->args[i].is_buffer) continue;
    ht_status st = dev->ops->buffer_new(dev, data[i].bytes + GUARD_BYTES, &data[i].buf);
    if (st) return ht_error_prefix(st, "argument %s (%zu bytes): ", s->args[i].name, data[i].bytes);
  }
  return HT_OK;
}

static void free_buffers(ht_device *dev, const ht_spec *s, arg_data *data) {
  for (int i = 0; i < s->n_args; i++)
    if (data[i].buf) {
      dev->ops->buffer_free(dev, data[i].buf);
      data[i].buf = NULL;
    }
}

static ht_source source_of(const ht_spec_kernel *k) {
  ht_source src = {k->lang, k->source_text, k->source_path, k->entry, k->flags};
  return src;
}

/* ---- setup ---- */

static ht_status make_host_data(ht_evaluator *ev) {
  const ht_spec *s = ev->spec;
  ev->args = calloc((size_t)s->n_args + 1, sizeof(arg_data));
  if (!ev->args) return ht_error(HT_ERR_NOMEM, "out of memory");
  for (int i = 0; i < s->n_args; i++) {
    const ht_spec_arg *a = &s->args[i];
    if (!a->is_buffer) continue;
    int64_t n;
    if (ht_expr_eval_int(a->length, ev->vars, &n)) return ht_error_prefix(HT_ERR_INVALID, "argument %s: ", a->name);
    if (n < 0) return ht_error(HT_ERR_INVALID, "argument %s: length %lld is negative", a->name, (long long)n);
    arg_data *d = &ev->args[i];
    d->n = (size_t)n;
    d->bytes = d->n * ht_dtype_size(a->type);
    d->init = malloc(d->bytes + GUARD_BYTES);
    int written = a->access & HT_ACCESS_WRITE;
    d->out = written ? malloc(d->bytes + GUARD_BYTES) : NULL;
    d->ref = written ? malloc(d->bytes ? d->bytes : 1) : NULL;
    if (!d->init || (written && (!d->out || !d->ref)))
      return ht_error(HT_ERR_NOMEM, "argument %s: cannot allocate %zu bytes", a->name, d->bytes);
    ht_status st = ht_fill_buffer(a, d->init, d->n, s->seed * 1000003ULL + (uint64_t)i);
    if (st) return st;
    for (size_t g = 0; g < GUARD_BYTES; g++) ((unsigned char *)d->init)[d->bytes + g] = guard_byte(g);
  }
  return HT_OK;
}

/* Runs the reference once on its device (the CPU for a C reference) and keeps its outputs. */
static ht_status run_reference(ht_evaluator *ev, ht_progress_fn progress, void *ctx) {
  const ht_spec *s = ev->spec;
  const ht_spec_kernel *k = &s->reference;
  ht_device *dev = ev->dev;
  ht_status st = HT_OK;
  if (k->lang == HT_LANG_C && strcmp(ev->dev->ops->name, "c") != 0) st = ht_device_open("c", &dev);
  if (st) return ht_error_prefix(st, "reference: ");
  arg_data *data = calloc((size_t)s->n_args + 1, sizeof(arg_data));
  if (!data) st = ht_error(HT_ERR_NOMEM, "out of memory");
  for (int i = 0; i < s->n_args && !st; i++) data[i] = ev->args[i], data[i].buf = NULL;
  ht_spec_defines defs;
  ht_spec_defines_fill(s, k, ev->vars, 0, &defs);
  ht_defines d = {defs.n, defs.names, defs.values};
  ht_source src = source_of(k);
  ht_program *prog = NULL;
  ht_compile_info info = {0};
  ht_launch l;
  ht_arg *args = calloc((size_t)s->n_args + 1, sizeof(ht_arg));
  char msg[512] = "";
  double t, kt;
  if (!st && !args) st = ht_error(HT_ERR_NOMEM, "out of memory");
  if (!st) st = alloc_buffers(dev, s, data);
  if (!st) st = dev->ops->compile(dev, &src, &d, &prog, &info);
  if (!st && progress) progress('F', ctx);
  if (!st && (ht_exec_geometry(k, ev->vars, NULL, &l, msg, sizeof msg) || build_args(s, data, ev->vars, args, msg, sizeof msg)))
    st = ht_error(HT_ERR_INVALID, "%s", msg);
  if (!st) ht_exec_work(s, ev->vars, &l);
  if (!st) st = upload(dev, s, data, &t);
  l.n_args = s->n_args;
  l.args = args;
  if (!st) st = dev->ops->launch(dev, prog, &l, &kt);
  if (!st) st = download(dev, s, data, 1, &t);
  if (st) ht_error_prefix(st, "reference %s (%s): ", k->entry, k->source_path);
  if (prog) dev->ops->program_free(dev, prog);
  free(info.log);
  free(args);
  if (data) free_buffers(dev, s, data);
  free(data);
  if (dev != ev->dev) ht_device_close(dev);
  return st;
}

/* The reference's outputs: from the disk cache when this spec version, problem size and reference
 * device produced them before, else computed (and kept for next time). */
static ht_status compute_reference(ht_evaluator *ev, ht_progress_fn progress, void *ctx) {
  const ht_spec *s = ev->spec;
  void **bufs = calloc((size_t)s->n_args + 1, sizeof *bufs);
  size_t *bytes = calloc((size_t)s->n_args + 1, sizeof *bytes);
  if (!bufs || !bytes) {
    free(bufs);
    free(bytes);
    return ht_error(HT_ERR_NOMEM, "out of memory");
  }
  int n = 0;
  for (int i = 0; i < s->n_args; i++)
    if (s->args[i].is_buffer && (s->args[i].access & HT_ACCESS_WRITE)) {
      bufs[n] = ev->args[i].ref;
      bytes[n++] = ev->args[i].bytes;
    }
  ht_device_info c_ref = {.fingerprint = "c"}; /* a C reference runs on this CPU: its compiler is in the key */
  uint64_t key = ht_refcache_key(s, s->reference.lang == HT_LANG_C ? &c_ref : &ev->dev->info);
  ht_status st = HT_OK;
  if (!ht_refcache_get(key, bufs, bytes, n)) {
    st = run_reference(ev, progress, ctx);
    if (!st) ht_refcache_put(key, bufs, bytes, n);
  }
  free(bufs);
  free(bytes);
  return st;
}

/* C kernels (on c and sim devices) can start threads and processes, OpenCL and CUDA kernels
 * cannot: for C, the threads that run now are the baseline a config must leave behind. A worker is a child subreaper, so the
 * orphans of what a kernel forked stay its children, visible to the check. */
static ht_status watch_leftovers(ht_evaluator *ev) {
  if (strcmp(ev->dev->ops->name, "c") != 0 && !(ht_device_caps(ev->dev) & HT_CAP_SIMULATED)) return HT_OK;
  ev->watch = ev->opt.isolate ? 2 : 1;
  if (ev->opt.isolate) prctl(PR_SET_CHILD_SUBREAPER, 1);
  char msg[160];
  ht_status st = ht_threads_list(&ev->baseline);
  if (!st) ht_leftovers_gone(&ev->baseline, 0, 0, msg, sizeof msg); /* releases the reference's OpenMP pool */
  return st;
}

static ht_status prepare(ht_evaluator *ev, ht_progress_fn progress, void *ctx) {
  const ht_spec *spec = ev->spec;
  ht_status st = ht_exec_kernel_for(spec, ev->dev, &ev->run);
  if (!st) {
    ev->vars = calloc((size_t)spec->n_names, sizeof(ht_value));
    if (!ev->vars) st = ht_error(HT_ERR_NOMEM, "out of memory");
  }
  if (!st) {
    ht_spec_bind(spec, NULL, NULL, &ev->dev->info, ev->vars);
    st = make_host_data(ev);
  }
  if (!st) st = alloc_buffers(ev->dev, spec, ev->args);
  if (!st && progress) progress('A', ctx);
  if (!st && spec->has_reference) {
    st = compute_reference(ev, progress, ctx);
    ev->has_ref = st == HT_OK;
  }
  if (!st) st = watch_leftovers(ev);
  return st;
}

ht_status ht_evaluator_open(const ht_spec *spec, const char *device_id, const ht_runner_options *opt,
                            ht_evaluator **out) {
  ht_evaluator *ev = calloc(1, sizeof *ev);
  if (!ev) return ht_error(HT_ERR_NOMEM, "out of memory");
  ev->spec = spec;
  ev->opt = *opt;
  ht_run_capture_limit(opt->setup_timeout_s, "setup timeout");
  ht_status st = ht_device_open(device_id, &ev->dev);
  ht_run_capture_limit(0, NULL);
  if (st) {
    ht_evaluator_destroy(ev);
    return st;
  }
  *out = ev;
  return HT_OK;
}

ht_status ht_evaluator_prepare(ht_evaluator *ev, ht_progress_fn progress, void *ctx) {
  ht_run_capture_limit(ev->opt.setup_timeout_s, "setup timeout");
  ht_status st = prepare(ev, progress, ctx);
  ht_run_capture_limit(0, NULL);
  return st;
}

ht_status ht_evaluator_create(const ht_spec *spec, const char *device_id, const ht_runner_options *opt,
                              ht_progress_fn progress, void *ctx, ht_evaluator **out) {
  ht_status st = ht_evaluator_open(spec, device_id, opt, out);
  if (!st && progress) progress('D', ctx);
  if (!st && (st = ht_evaluator_prepare(*out, progress, ctx))) {
    ht_evaluator_destroy(*out);
    *out = NULL;
  }
  return st;
}

void ht_evaluator_destroy(ht_evaluator *ev) {
  if (!ev) return;
  if (ev->args && ev->dev) free_buffers(ev->dev, ev->spec, ev->args);
  for (int i = 0; ev->args && i < ev->spec->n_args; i++) {
    free(ev->args[i].init);
    free(ev->args[i].out);
    free(ev->args[i].ref);
  }
  free(ev->args);
  free(ev->vars);
  drop_prebuilt(ev);
  ht_threads_free(&ev->baseline);
  ht_device_close(ev->dev);
  free(ev);
}

/* ---- one config ---- */

static void fail(ht_result *r, ht_eval_status status, const char *fmt, const char *detail) {
  r->status = status;
  snprintf(r->message, sizeof r->message, fmt, detail);
}

/* 1 (with the message) when the kernel wrote into the guard after a's last element. */
static int overran(const ht_spec_arg *a, const arg_data *d, char *msg, size_t len) {
  const unsigned char *tail = (const unsigned char *)d->out + d->bytes;
  for (size_t g = 0; g < GUARD_BYTES; g++)
    if (tail[g] != guard_byte(g)) {
      size_t elem = ht_dtype_size(a->type);
      snprintf(msg, len, "%s[%zu]: written past the end of the buffer (%zu elements; byte %zu after it changed)",
               a->name, d->n + g / elem, d->n, g);
      return 1;
    }
  return 0;
}

static int verify_outputs(ht_evaluator *ev, ht_result *r) {
  const ht_spec *s = ev->spec;
  double t0 = ht_now();
  int bad = 0;
  for (int i = 0; i < s->n_args && !bad; i++) {
    const ht_spec_arg *a = &s->args[i];
    if (!a->is_buffer || !(a->access & HT_ACCESS_WRITE)) continue;
    arg_data *d = &ev->args[i];
    bad = overran(a, d, r->message, sizeof r->message);
    if (!bad)
      bad = ev->has_ref ? ht_verify_buffer(a->name, a->type, d->out, d->ref, d->init, d->n, s->rtol, s->atol,
                                         r->message, sizeof r->message)
                      : ht_check_finite(a->name, a->type, d->out, d->n, r->message, sizeof r->message);
  }
  r->verify_s = ht_now() - t0;
  if (bad) r->status = HT_EVAL_CORRECTNESS;
  return bad;
}

typedef struct run_state {
  ht_evaluator *ev;
  const ht_config *cfg;
  ht_program *prog;
  ht_launch launch;
  ht_progress_fn progress;
  void *ctx;
  double launch_wall; /* host time spent inside launches: the kernel's share of the evaluation */
  double last_beat;   /* when the last 'C' or 'H' went out */
} run_state;

double ht_heartbeat_gap(double timeout_s) { return fmin(timeout_s / 8, 0.05); }

/* 'H' goes out at most once per heartbeat gap; force sends it anyway (a phase change). */
static void beat_at(run_state *rs, char phase, int force) {
  if (!rs->progress) return;
  double now = ht_now();
  if (phase == 'H' && !force && now - rs->last_beat < ht_heartbeat_gap(rs->ev->opt.timeout_s)) return;
  rs->progress(phase, rs->ctx);
  rs->last_beat = now;
}

static void beat(run_state *rs, char phase) { beat_at(rs, phase, 0); }

static int launch_once(run_state *rs, ht_result *r, double *kernel_s) {
  ht_device *dev = rs->ev->dev;
  beat(rs, 'H');
  double t0 = ht_now();
  ht_status st = dev->ops->launch(dev, rs->prog, &rs->launch, kernel_s);
  rs->launch_wall += ht_now() - t0;
  if (st) fail(r, HT_EVAL_RUNTIME, "%s", ht_last_error());
  return st != HT_OK;
}

static int enough_samples(const ht_runner_options *o, ht_result *r, double timed) {
  if (r->n_samples >= o->max_runs || r->n_samples >= HT_MAX_SAMPLES) return 1;
  if (r->n_samples < 2) return 0;
  if (timed >= o->max_time_s) return 1;
  if (r->n_samples < o->min_runs) return 0;
  double m = ht_stat_mean(r->samples, r->n_samples);
  return m > 0 && ht_stat_stddev(r->samples, r->n_samples) / m < o->rsd_target;
}

static void measure(run_state *rs, ht_result *r) {
  const ht_runner_options *o = &rs->ev->opt;
  double k, t0 = ht_now();
  for (int i = 0; i < o->warmup || ht_now() - t0 < o->warmup_s; i++)
    if (launch_once(rs, r, &k)) return;
  double timed = 0;
  while (!enough_samples(o, r, timed)) {
    if (launch_once(rs, r, &k)) return;
    r->samples[r->n_samples++] = k;
    timed += k;
  }
  ht_result_summarise(r);
}

static void compute_metrics(ht_evaluator *ev, ht_result *r) {
  const ht_spec *s = ev->spec;
  ev->vars[s->slot_time_s] = ht_float(r->time_s);
  ev->vars[s->slot_time_ms] = ht_float(r->time_s * 1e3);
  for (int i = 0; i < s->n_metrics && i < HT_MAX_METRICS; i++) {
    double v = NAN;
    if (ht_expr_eval_double(s->metrics[i], ev->vars, &v)) v = NAN;
    snprintf(r->metrics[i].name, sizeof r->metrics[i].name, "%s", s->metric_names[i]);
    r->metrics[i].value = v;
    r->n_metrics = i + 1;
  }
}

/* cfg's build ahead, taken out of the list: 0 when it was not built ahead. A build ahead is this
 * evaluation's build: its time is the evaluation's compile time. */
static int take_prebuilt(ht_evaluator *ev, const ht_config *cfg, prebuilt *out) {
  for (int i = 0; i < ev->n_pre; i++)
    if (ht_config_equal(&ev->pre[i].cfg, cfg)) {
      *out = ev->pre[i];
      ev->pre[i] = ev->pre[--ev->n_pre];
      return 1;
    }
  return 0;
}

static void run_config(run_state *rs, ht_result *r) {
  ht_evaluator *ev = rs->ev;
  const ht_spec *s = ev->spec;
  ht_device *dev = ev->dev;
  ht_spec_defines defs; /* a reference standing in for the kernel is built as a reference: no parameters */
  ht_spec_defines_fill(s, ev->run, ev->vars, ev->run == &s->kernel, &defs);
  ht_defines d = {defs.n, defs.names, defs.values};
  ht_source src = source_of(ev->run);
  ht_compile_info info = {0};
  prebuilt pre = {.seconds = -1};
  int ahead = take_prebuilt(ev, rs->cfg, &pre);
  if (ahead && pre.error) {
    r->compile_s = pre.seconds;
    beat(rs, 'C');
    fail(r, HT_EVAL_COMPILE, "%s", pre.error);
    return free(pre.error);
  }
  ht_status st = HT_OK;
  if (ahead) {
    rs->prog = pre.prog;
    r->compile_cached = pre.seconds < 0;
    r->compile_s = r->compile_cached ? 0 : pre.seconds;
  } else {
    double t0 = ht_now();
    ht_run_capture_limit(ev->opt.compile_timeout_s, "compile timeout");
    st = dev->ops->compile(dev, &src, &d, &rs->prog, &info);
    ht_run_capture_limit(0, NULL);
    r->compile_s = info.cached ? 0 : ht_now() - t0;
    r->compile_cached = info.cached;
    free(info.log);
  }
  beat(rs, 'C');
  if (st) return fail(r, HT_EVAL_COMPILE, "%s", ht_last_error());
  ht_arg args[64 + 1];
  if (s->n_args > 64) return fail(r, HT_EVAL_RUNTIME, "%s", "more than 64 arguments");
  if (ht_exec_geometry(&s->kernel, ev->vars, NULL, &rs->launch, r->message, sizeof r->message) ||
      build_args(s, ev->args, ev->vars, args, r->message, sizeof r->message)) {
    r->status = HT_EVAL_RUNTIME;
    return;
  }
  ht_exec_work(s, ev->vars, &rs->launch);
  rs->launch.n_args = s->n_args;
  rs->launch.args = args;
  if (upload(dev, s, ev->args, &r->h2d_s)) return fail(r, HT_EVAL_RUNTIME, "upload: %s", ht_last_error());
  double k;
  /* A device that compiles at the first launch gets the compile timeout for it, not the run's. */
  int lazy = (ht_device_caps(dev) & HT_CAP_COMPILES_AT_LAUNCH) != 0;
  if (lazy) beat_at(rs, 'L', 1);
  if (launch_once(rs, r, &k)) return;
  if (lazy) beat_at(rs, 'H', 1);
  if (download(dev, s, ev->args, 0, &r->d2h_s)) return fail(r, HT_EVAL_RUNTIME, "download: %s", ht_last_error());
  if (verify_outputs(ev, r)) return;
  measure(rs, r);
  if (r->status == HT_EVAL_OK) compute_metrics(ev, r);
}

/* A failed listing leaves a short baseline: the check after the run then blames the config, never
 * lets a leftover pass. */
static void list_baseline(ht_evaluator *ev) {
  if (ht_threads_list(&ev->baseline)) ht_error_clear();
}

int ht_evaluator_run(ht_evaluator *ev, const ht_config *cfg, ht_result *out, ht_progress_fn progress, void *ctx) {
  ht_result_init(out);
  double t0 = ht_now();
  ht_spec_bind(ev->spec, NULL, cfg, &ev->dev->info, ev->vars);
  run_state rs = {.ev = ev, .cfg = cfg, .progress = progress, .ctx = ctx};
  /* Listed now, not at the end of the config before: in this process the tuner may start threads
   * between configs (OpenBLAS's pool, for a strategy's Gaussian process), and they are not this
   * kernel's. Unless a batch was just built ahead: then the list from before its kernels were
   * loaded stands, so that what they started when loaded is seen. */
  if (ev->watch && !ev->baseline_before_batch) list_baseline(ev);
  ev->baseline_before_batch = 0;
  run_config(&rs, out);
  char left[160];
  int clean = !ev->watch || ht_leftovers_gone(&ev->baseline, ev->watch == 2, LEFTOVER_SETTLE_S, left, sizeof left);
  if (rs.prog && clean) ev->dev->ops->program_free(ev->dev, rs.prog); /* never unload code that may still run */
  if (out->status != HT_EVAL_OK) out->time_s = NAN;
  out->wall_s = ht_now() - t0;
  out->framework_s = out->wall_s - out->compile_s - rs.launch_wall;
  out->timestamp = ht_wall_time();
  return clean;
}

/* ---- building a batch ahead ---- */

typedef struct precompile_job {
  ht_evaluator *ev;
  const ht_config *cfgs;
  int n, next; /* next: the first config no thread has taken */
  pthread_mutex_t mu;
  prebuilt *built; /* n */
} precompile_job;

/* Builds cfg's program into the device's cache and loads it: what ht_evaluator_run runs. */
static prebuilt build_one(ht_evaluator *ev, const ht_config *cfg, ht_value *vars) {
  const ht_spec *s = ev->spec;
  ht_spec_bind(s, NULL, cfg, &ev->dev->info, vars);
  ht_spec_defines defs;
  ht_spec_defines_fill(s, ev->run, vars, ev->run == &s->kernel, &defs);
  ht_defines d = {defs.n, defs.names, defs.values};
  ht_source src = source_of(ev->run);
  ht_compile_info info = {0};
  ht_program *prog = NULL;
  double t0 = ht_now();
  ht_status st = ev->dev->ops->compile(ev->dev, &src, &d, &prog, &info);
  prebuilt b = {*cfg, st ? NULL : prog, info.cached ? -1 : ht_now() - t0, st ? ht_strdup(ht_last_error()) : NULL};
  free(info.log);
  ht_error_clear();
  return b;
}

/* Builds the job's configs not taken yet, one after another; with until_compile, stops after the
 * first that had to be compiled (it was not in the cache). 1 when it stopped so. */
static int build_queued(precompile_job *j, int until_compile) {
  ht_value *vars = calloc((size_t)j->ev->spec->n_names, sizeof *vars);
  int compiled = 0;
  ht_run_capture_limit(j->ev->opt.compile_timeout_s, "compile timeout");
  while (vars && !compiled) {
    pthread_mutex_lock(&j->mu);
    int i = j->next++;
    pthread_mutex_unlock(&j->mu);
    if (i >= j->n) break;
    j->built[i] = build_one(j->ev, &j->cfgs[i], vars);
    compiled = until_compile && j->built[i].seconds >= 0;
  }
  ht_run_capture_limit(0, NULL);
  free(vars);
  return compiled;
}

static void *precompile_thread(void *arg) {
  build_queued(arg, 0);
  return NULL;
}

/* Keeps the configs built (or failed) here, replacing an earlier batch's that were never evaluated. */
static void keep_prebuilt(ht_evaluator *ev, prebuilt *built, int n) {
  drop_prebuilt(ev);
  ev->pre = malloc(sizeof *ev->pre * (size_t)(n > 0 ? n : 1));
  for (int i = 0; i < n; i++)
    if (ev->pre && (built[i].prog || built[i].error)) ev->pre[ev->n_pre++] = built[i];
    else {
      free(built[i].error);
      if (built[i].prog) ev->dev->ops->program_free(ev->dev, built[i].prog);
    }
}

/* Threads pay only when something compiles: four cached kernels took 0.7 ms to look up and load
 * in two threads (their start, the loader's lock) and 0.5 ms on this one. So after a batch that
 * was all in the cache, the next is built here until a kernel has to be compiled; then the
 * threads start for the rest. */
void ht_evaluator_precompile(ht_evaluator *ev, const ht_config *cfgs, int n, int jobs) {
  if (n < 2 || !(ht_device_caps(ev->dev) & HT_CAP_PARALLEL_COMPILE)) return;
  if (ev->watch) list_baseline(ev);
  ev->baseline_before_batch = ev->watch != 0;
  if (jobs < 1) jobs = 1;
  if (jobs > n) jobs = n;
  enum { MAX_JOBS = 256 };
  pthread_t th[MAX_JOBS];
  precompile_job j = {ev, cfgs, n, 0, PTHREAD_MUTEX_INITIALIZER, calloc((size_t)n, sizeof(prebuilt))};
  for (int i = 0; j.built && i < n; i++) j.built[i].seconds = -1;
  int started = 0, threads = j.built && (!ev->pre_all_cached || build_queued(&j, 1));
  for (; threads && started < jobs && started < MAX_JOBS && j.next < n; started++)
    if (pthread_create(&th[started], NULL, precompile_thread, &j) != 0) break;
  if (j.built && started == 0) build_queued(&j, 0); /* no thread could start: build here */
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
  ev->pre_all_cached = j.built != NULL;
  for (int i = 0; j.built && i < n; i++) ev->pre_all_cached &= j.built[i].prog && j.built[i].seconds < 0;
  if (j.built) keep_prebuilt(ev, j.built, n);
  free(j.built);
  pthread_mutex_destroy(&j.mu);
}
