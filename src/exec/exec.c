/* The execution layer (include/hetune/exec.h): variants run in this process on the caller's
 * buffers. One ht_exec is one device with a "busy" flag, so one call runs at a time on it while
 * calls on other devices go on; the flag (not a mutex) lets ht_run_wait come from another thread
 * than ht_variant_start. */
#include <pthread.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec_internal.h"

enum { MAX_PROGRAMS = 4 }; /* sizes compiled in (size_defines) make one program per size */

struct ht_exec {
  ht_device *dev;
  int owned;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int busy;
};

typedef struct program_slot {
  uint64_t key; /* the defines' hash */
  ht_program *prog;
} program_slot;

struct ht_variant {
  ht_exec *ex;
  const ht_spec *spec;
  const ht_spec_kernel *k; /* the kernel, or the C reference on a simulated device */
  ht_value *vars;          /* the spec's variable table: config, sizes, device constants */
  ht_buffer **bufs;        /* per argument, kept across calls */
  size_t *caps;            /* their bytes */
  program_slot progs[MAX_PROGRAMS];
  int n_progs, next_evict;
  ht_program *last;     /* the program of the last call... */
  int64_t *last_sizes;  /* ...at these sizes: the same sizes need no defines formatted again */
  /* The last call's geometry, work and buffer lengths when it had no run options: a pure function
   * of the sizes, evaluated again (about a tenth of a microsecond call) only when they change. */
  int frame_ok;
  ht_launch last_launch;
  size_t *last_len;
  /* On a device whose kernels use host memory: per argument, the caller's memory wrapped by an
   * earlier call, kept while calls pass the same memory (a wrap and its free were a sixth of a
   * small call's time), and the block of a synchronous run, kept for the next one. */
  ht_buffer **wraps;
  void **wrap_data;
  size_t *wrap_bytes;
  ht_run *spare_run;
};

struct ht_run {
  ht_variant *v;
  ht_event *ev;
  ht_host_arg *args;
  size_t *len; /* elements of each buffer at this call's sizes */
  ht_arg *largs;
  ht_buffer **bufs; /* the launch's buffers: the variant's, or the caller's memory wrapped */
  int wrapped;      /* bufs wrap host memory (HT_CAP_HOST_MEMORY): nothing is copied */
  ht_launch launch;
  double t0, h2d;
  int cancelled;
};

/* ---- devices ---- */

static ht_status exec_new(ht_device *dev, int owned, ht_exec **out) {
  ht_exec *ex = calloc(1, sizeof *ex);
  if (!ex) return ht_error(HT_ERR_NOMEM, "out of memory");
  ex->dev = dev;
  ex->owned = owned;
  pthread_mutex_init(&ex->mu, NULL);
  pthread_cond_init(&ex->cv, NULL);
  *out = ex;
  return HT_OK;
}

ht_status ht_exec_open(const char *device_id, ht_exec **out) {
  if (!out) return ht_error(HT_ERR_INVALID, "ht_exec_open: out is NULL");
  *out = NULL;
  ht_device *dev;
  ht_status st = ht_device_open(device_id, &dev);
  if (!st && (st = exec_new(dev, 1, out))) ht_device_close(dev);
  return st;
}

ht_status ht_exec_wrap(ht_device *dev, ht_exec **out) {
  if (!dev || !out) return ht_error(HT_ERR_INVALID, "ht_exec_wrap: bad arguments");
  return exec_new(dev, 0, out);
}

void ht_exec_close(ht_exec *ex) {
  if (!ex) return;
  if (ex->owned) ht_device_close(ex->dev);
  pthread_mutex_destroy(&ex->mu);
  pthread_cond_destroy(&ex->cv);
  free(ex);
}

ht_device *ht_exec_device(ht_exec *ex) { return ex ? ex->dev : NULL; }

static void acquire(ht_exec *ex) {
  pthread_mutex_lock(&ex->mu);
  while (ex->busy) pthread_cond_wait(&ex->cv, &ex->mu);
  ex->busy = 1;
  pthread_mutex_unlock(&ex->mu);
}

static void release(ht_exec *ex) {
  pthread_mutex_lock(&ex->mu);
  ex->busy = 0;
  pthread_cond_signal(&ex->cv);
  pthread_mutex_unlock(&ex->mu);
}

/* ---- variants ---- */

/* Binds config text into vars; the config must satisfy the constraints on this device. */
static ht_status bind_config(const ht_spec *spec, const ht_device_info *info, const char *config, ht_value *vars) {
  ht_space *space = NULL;
  ht_config cfg;
  ht_status st = ht_spec_build_space(spec, info, &space);
  if (!st) st = ht_config_parse(space, config ? config : "", &cfg);
  if (!st && !ht_space_is_valid(space, &cfg))
    st = ht_error(HT_ERR_INVALID, "%s: config %s breaks a constraint on %s", spec->name, config, info->id);
  if (!st) ht_spec_bind(spec, space, &cfg, info, vars);
  ht_space_destroy(space);
  return st;
}

ht_status ht_variant_create(ht_exec *ex, const ht_spec *spec, const char *config, ht_variant **out) {
  if (!ex || !spec || !out) return ht_error(HT_ERR_INVALID, "ht_variant_create: bad arguments");
  *out = NULL;
  const ht_spec_kernel *k;
  ht_status st = ht_exec_kernel_for(spec, ex->dev, &k);
  if (st) return st;
  ht_variant *v = calloc(1, sizeof *v);
  if (!v) return ht_error(HT_ERR_NOMEM, "out of memory");
  v->ex = ex;
  v->spec = spec;
  v->k = k;
  v->vars = calloc((size_t)spec->n_names, sizeof *v->vars);
  v->bufs = calloc((size_t)spec->n_args + 1, sizeof *v->bufs);
  v->caps = calloc((size_t)spec->n_args + 1, sizeof *v->caps);
  v->last_sizes = calloc((size_t)spec->n_sizes + 1, sizeof *v->last_sizes);
  v->last_len = calloc((size_t)spec->n_args + 1, sizeof *v->last_len);
  v->wraps = calloc((size_t)spec->n_args + 1, sizeof *v->wraps);
  v->wrap_data = calloc((size_t)spec->n_args + 1, sizeof *v->wrap_data);
  v->wrap_bytes = calloc((size_t)spec->n_args + 1, sizeof *v->wrap_bytes);
  int allocated =
      v->vars && v->bufs && v->caps && v->last_sizes && v->last_len && v->wraps && v->wrap_data && v->wrap_bytes;
  st = allocated ? bind_config(spec, &ex->dev->info, config, v->vars) : ht_error(HT_ERR_NOMEM, "out of memory");
  if (st) {
    ht_variant_destroy(v);
    return st;
  }
  *out = v;
  return HT_OK;
}

void ht_variant_destroy(ht_variant *v) {
  if (!v) return;
  ht_device *dev = v->ex->dev;
  for (int i = 0; i < v->n_progs; i++) dev->ops->program_free(dev, v->progs[i].prog);
  for (int i = 0; v->bufs && i < v->spec->n_args; i++)
    if (v->bufs[i]) dev->ops->buffer_free(dev, v->bufs[i]);
  for (int i = 0; v->wraps && i < v->spec->n_args; i++)
    if (v->wraps[i]) dev->ops->buffer_free(dev, v->wraps[i]);
  free(v->wraps);
  free(v->wrap_data);
  free(v->wrap_bytes);
  free(v->spare_run);
  free(v->bufs);
  free(v->caps);
  free(v->last_sizes);
  free(v->last_len);
  free(v->vars);
  free(v);
}

static int same_sizes_as_last(const ht_variant *v) {
  const ht_spec *s = v->spec;
  if (!v->last) return 0;
  for (int i = 0; i < s->n_sizes; i++)
    if (v->last_sizes[i] != v->vars[s->first_size + i].u.i) return 0;
  return 1;
}

static void remember_last(ht_variant *v, ht_program *prog) {
  const ht_spec *s = v->spec;
  for (int i = 0; i < s->n_sizes; i++) v->last_sizes[i] = v->vars[s->first_size + i].u.i;
  v->last = prog;
  v->frame_ok = 0; /* the frame kept was for other sizes */
}

static ht_status compile_for(ht_variant *v, ht_program **prog);

/* The program for the defines of this call (sizes may be among them), compiled on first use. */
static ht_status program_for(ht_variant *v, ht_program **prog) {
  if (same_sizes_as_last(v)) return *prog = v->last, HT_OK;
  ht_status st = compile_for(v, prog);
  if (!st) remember_last(v, *prog);
  return st;
}

static ht_status compile_for(ht_variant *v, ht_program **prog) {
  ht_spec_defines defs; /* a reference standing in for the kernel is built as a reference: no parameters */
  ht_spec_defines_fill(v->spec, v->k, v->vars, v->k == &v->spec->kernel, &defs);
  uint64_t key = 0x6578656320;
  for (int i = 0; i < defs.n; i++) key = ht_hash_str(defs.values[i], ht_hash_str(defs.names[i], key));
  for (int i = 0; i < v->n_progs; i++)
    if (v->progs[i].key == key) return *prog = v->progs[i].prog, HT_OK;
  ht_device *dev = v->ex->dev;
  ht_source src = {v->k->lang, v->k->source_text, v->k->source_path, v->k->entry, v->k->flags};
  ht_defines d = {defs.n, defs.names, defs.values};
  ht_compile_info info = {0};
  ht_status st = dev->ops->compile(dev, &src, &d, prog, &info);
  free(info.log);
  if (st) return st;
  int slot = v->n_progs < MAX_PROGRAMS ? v->n_progs++ : v->next_evict++ % MAX_PROGRAMS;
  if (slot < v->n_progs && v->progs[slot].prog && v->progs[slot].key != key)
    dev->ops->program_free(dev, v->progs[slot].prog);
  v->progs[slot] = (program_slot){key, *prog};
  return HT_OK;
}

/* ---- one call ---- */

static ht_status bind_sizes(ht_variant *v, const int64_t *sizes) {
  const ht_spec *s = v->spec;
  for (int i = 0; i < s->n_sizes; i++) {
    int64_t n = sizes ? sizes[i] : s->size_values[i];
    if (n < 0) return ht_error(HT_ERR_INVALID, "%s: size %s = %lld is negative", s->name, s->size_names[i], (long long)n);
    v->vars[s->first_size + i] = ht_int(n);
  }
  return HT_OK;
}

ht_status ht_variant_prepare(ht_variant *v, const int64_t *sizes) {
  if (!v) return ht_error(HT_ERR_INVALID, "ht_variant_prepare: no variant");
  acquire(v->ex);
  ht_program *prog;
  ht_status st = bind_sizes(v, sizes);
  if (!st) st = program_for(v, &prog);
  release(v->ex);
  return st;
}

/* Device buffer i holds at least bytes (grown, contents dropped, when the sizes grew). */
static ht_status reserve(ht_variant *v, int i, size_t bytes) {
  ht_device *dev = v->ex->dev;
  if (v->bufs[i] && v->caps[i] >= bytes) return HT_OK;
  if (v->bufs[i]) dev->ops->buffer_free(dev, v->bufs[i]);
  v->bufs[i] = NULL;
  v->caps[i] = 0;
  ht_status st = dev->ops->buffer_new(dev, bytes ? bytes : 1, &v->bufs[i]);
  if (st) return ht_error_prefix(st, "%s: argument %s (%zu bytes): ", v->spec->name, v->spec->args[i].name, bytes);
  v->caps[i] = bytes;
  return HT_OK;
}

/* The elements [lo, hi) of argument i that a call copies, checked against its length n. */
static ht_status arg_range(const ht_variant *v, int i, const ht_host_arg *a, size_t n, size_t *lo, size_t *hi) {
  const char *name = v->spec->args[i].name;
  *lo = a->lo;
  *hi = a->lo == 0 && a->hi == 0 ? n : a->hi;
  if (!a->data && n) return ht_error(HT_ERR_INVALID, "%s: argument %s: no host data", v->spec->name, name);
  if (a->count < n)
    return ht_error(HT_ERR_INVALID, "%s: argument %s holds %zu elements, the kernel needs %zu at these sizes",
                    v->spec->name, name, a->count, n);
  if (*lo > *hi || *hi > n)
    return ht_error(HT_ERR_INVALID, "%s: argument %s: range [%zu, %zu) is not inside its %zu elements",
                    v->spec->name, name, *lo, *hi, n);
  return HT_OK;
}

/* On a device whose kernels use host memory, the caller's buffers themselves: wrapped once, and
 * the wrap kept while the calls pass the same memory (the variant owns it; a run only borrows it,
 * and the exec runs one call at a time). */
static ht_status wrap_in(ht_run *r) {
  ht_variant *v = r->v;
  const ht_spec *s = v->spec;
  ht_device *dev = v->ex->dev;
  for (int i = 0; i < s->n_args; i++) {
    const ht_spec_arg *a = &s->args[i];
    if (!a->is_buffer) continue;
    size_t lo, hi, esz = ht_dtype_size(a->type), bytes = r->len[i] * esz;
    ht_status st = arg_range(v, i, &r->args[i], r->len[i], &lo, &hi);
    if (st) return st;
    if (!v->wraps[i] || v->wrap_data[i] != r->args[i].data || v->wrap_bytes[i] != bytes) {
      if (v->wraps[i]) dev->ops->buffer_free(dev, v->wraps[i]);
      v->wraps[i] = NULL;
      if ((st = dev->ops->buffer_wrap(dev, r->args[i].data, bytes, &v->wraps[i]))) return st;
      v->wrap_data[i] = r->args[i].data;
      v->wrap_bytes[i] = bytes;
    }
    r->bufs[i] = v->wraps[i];
  }
  return HT_OK;
}

static ht_status copy_in(ht_run *r) {
  ht_variant *v = r->v;
  const ht_spec *s = v->spec;
  if (r->wrapped) return wrap_in(r);
  for (int i = 0; i < s->n_args; i++) {
    const ht_spec_arg *a = &s->args[i];
    if (!a->is_buffer) continue;
    size_t esz = ht_dtype_size(a->type), lo, hi;
    ht_status st = arg_range(v, i, &r->args[i], r->len[i], &lo, &hi);
    if (!st) st = reserve(v, i, r->len[i] * esz);
    r->bufs[i] = v->bufs[i];
    if (!st && (a->access & HT_ACCESS_READ) && hi > lo)
      st = ht_exec_copy(v->ex->dev, v->bufs[i], lo * esz, (char *)r->args[i].data + lo * esz, (hi - lo) * esz, 1,
                        &r->h2d);
    if (st) return st;
  }
  return HT_OK;
}

static ht_status copy_out(ht_run *r, double *seconds) {
  ht_variant *v = r->v;
  const ht_spec *s = v->spec;
  *seconds = 0;
  for (int i = 0; i < s->n_args && !r->wrapped; i++) {
    const ht_spec_arg *a = &s->args[i];
    if (!a->is_buffer || !(a->access & HT_ACCESS_WRITE)) continue;
    size_t esz = ht_dtype_size(a->type), lo, hi;
    ht_status st = arg_range(v, i, &r->args[i], r->len[i], &lo, &hi);
    if (!st && hi > lo)
      st = ht_exec_copy(v->ex->dev, v->bufs[i], lo * esz, (char *)r->args[i].data + lo * esz, (hi - lo) * esz, 0,
                        seconds);
    if (st) return st;
  }
  return HT_OK;
}

static void run_free(ht_run *r) {
  free(r); /* its arrays are in the same block (run_alloc); wrapped buffers are the variant's */
}

/* The call's geometry, work and buffer lengths, kept for the next call when it has no options. */
static ht_status frame(ht_variant *v, const ht_run_opts *opts, ht_run *r) {
  const ht_spec *s = v->spec;
  char msg[512];
  if (ht_exec_geometry(v->k, v->vars, opts, &r->launch, msg, sizeof msg))
    return ht_error(HT_ERR_INVALID, "%s: %s", s->name, msg);
  int offset = r->launch.offset[0] || r->launch.offset[1] || r->launch.offset[2];
  if (offset && !(ht_device_caps(v->ex->dev) & HT_CAP_OFFSET))
    return ht_error(HT_ERR_UNSUPPORTED, "%s: device %s cannot launch at a work offset", s->name, v->ex->dev->info.id);
  ht_status st = ht_exec_lengths(s, v->vars, r->len);
  if (st) return st;
  ht_exec_work(s, v->vars, &r->launch);
  if (!opts) {
    v->last_launch = r->launch;
    memcpy(v->last_len, r->len, sizeof *r->len * (size_t)s->n_args);
    v->frame_ok = 1;
  }
  return HT_OK;
}

/* Everything before the launch: sizes, program, geometry, lengths, copies in, arguments. */
static ht_status prepare(ht_run *r, const int64_t *sizes, const ht_run_opts *opts, ht_program **prog) {
  ht_variant *v = r->v;
  const ht_spec *s = v->spec;
  char msg[512];
  ht_status st = bind_sizes(v, sizes);
  if (!st) st = program_for(v, prog);
  if (!st && !opts && v->frame_ok) { /* program_for kept the last sizes: so is the frame */
    r->launch = v->last_launch;
    memcpy(r->len, v->last_len, sizeof *r->len * (size_t)s->n_args);
  } else if (!st) {
    st = frame(v, opts, r);
  }
  if (!st) st = copy_in(r);
  if (!st && ht_exec_args(s, v->vars, r->bufs, r->largs, msg, sizeof msg)) st = ht_error(HT_ERR_INVALID, "%s", msg);
  r->launch.n_args = s->n_args;
  r->launch.args = r->largs;
  return st;
}

static size_t aligned(size_t n) {
  const size_t a = _Alignof(max_align_t);
  return (n + a - 1) / a * a;
}

/* The run and its per-argument arrays in one block: a call of a microsecond kernel paid about a
 * tenth of its time in the five allocations and frees it made before. */
static ht_run *run_alloc(int n_args) {
  const size_t k = (size_t)n_args + 1, at_args = aligned(sizeof(ht_run)),
               at_len = at_args + aligned(k * sizeof(ht_host_arg)), at_largs = at_len + aligned(k * sizeof(size_t)),
               at_bufs = at_largs + aligned(k * sizeof(ht_arg));
  char *m = calloc(1, at_bufs + k * sizeof(ht_buffer *));
  if (!m) return NULL;
  ht_run *r = (ht_run *)m;
  r->args = (ht_host_arg *)(m + at_args);
  r->len = (size_t *)(m + at_len);
  r->largs = (ht_arg *)(m + at_largs);
  r->bufs = (ht_buffer **)(m + at_bufs);
  return r;
}

/* A run's state before its launch, started at t0; freed by run_free. spare: the caller holds the
 * exec and may take the variant's spare block (a synchronous run, which gives it back). */
static ht_status run_new(ht_variant *v, const ht_host_arg *args, const ht_run_opts *opts, int spare, double t0,
                         ht_run **out) {
  const int n = v->spec->n_args;
  ht_run *r = spare && v->spare_run ? v->spare_run : run_alloc(n);
  if (!r) return ht_error(HT_ERR_NOMEM, "out of memory");
  if (r == v->spare_run) { /* what a run sets along the way: the rest is set again before its launch */
    v->spare_run = NULL;
    r->ev = NULL;
    r->h2d = 0;
    r->cancelled = 0;
  }
  memcpy(r->args, args, sizeof *r->args * (size_t)n);
  r->v = v;
  r->wrapped = (ht_device_caps(v->ex->dev) & HT_CAP_HOST_MEMORY) && v->ex->dev->ops->buffer_wrap && !(opts && opts->copy);
  r->t0 = t0;
  *out = r;
  return HT_OK;
}

ht_status ht_variant_start(ht_variant *v, const int64_t *sizes, const ht_host_arg *args, const ht_run_opts *opts,
                           ht_run **out) {
  if (!v || !args || !out) return ht_error(HT_ERR_INVALID, "ht_variant_start: bad arguments");
  *out = NULL;
  ht_run *r;
  ht_status st = run_new(v, args, opts, 0, ht_now(), &r);
  if (st) return st;
  acquire(v->ex);
  ht_program *prog = NULL;
  st = prepare(r, sizes, opts, &prog);
  if (!st) st = ht_device_launch_async(v->ex->dev, prog, &r->launch, &r->ev);
  if (st) {
    release(v->ex);
    run_free(r);
    return st;
  }
  *out = r;
  return HT_OK;
}

int ht_run_poll(ht_run *r) { return r ? ht_device_poll(r->v->ex->dev, r->ev) : -1; }

ht_status ht_run_cancel(ht_run *r) {
  if (!r) return ht_error(HT_ERR_INVALID, "ht_run_cancel: no run");
  int has_flag = 0;
  for (int i = 0; i < r->v->spec->n_args; i++) has_flag |= r->v->spec->args[i].is_stop_flag;
  if (!has_flag)
    return ht_error(HT_ERR_UNSUPPORTED, "%s: the spec has no stop flag (an argument with \"stop\": true)",
                    r->v->spec->name);
  ht_status st = ht_device_cancel(r->v->ex->dev, r->ev);
  if (!st) r->cancelled = 1;
  return st;
}

ht_status ht_run_wait(ht_run *r, ht_run_times *out) {
  if (!r) return ht_error(HT_ERR_INVALID, "ht_run_wait: no run");
  ht_run_times t = {0};
  ht_status st = ht_device_wait(r->v->ex->dev, r->ev, &t.kernel_s);
  if (!st && !r->cancelled) st = copy_out(r, &t.d2h_s);
  t.h2d_s = r->h2d;
  t.wall_s = ht_now() - r->t0;
  release(r->v->ex);
  run_free(r);
  if (out) *out = t;
  return st;
}

/* Runs in the caller's thread with the device's synchronous launch: no thread to start, and on
 * "c" the caller's OpenMP thread pool serves every call instead of a new one per launch. */
ht_status ht_variant_run(ht_variant *v, const int64_t *sizes, const ht_host_arg *args, const ht_run_opts *opts,
                         ht_run_times *out) {
  if (!v || !args) return ht_error(HT_ERR_INVALID, "ht_variant_run: bad arguments");
  const double t0 = out ? ht_now() : 0;
  ht_run *r;
  acquire(v->ex);
  ht_status st = run_new(v, args, opts, 1, t0, &r);
  if (st) {
    release(v->ex);
    return st;
  }
  ht_program *prog = NULL;
  ht_run_times t = {0};
  st = prepare(r, sizes, opts, &prog);
  if (!st) st = v->ex->dev->ops->launch(v->ex->dev, prog, &r->launch, out ? &t.kernel_s : NULL);
  if (!st) st = copy_out(r, &t.d2h_s);
  t.h2d_s = r->h2d;
  if (out) t.wall_s = ht_now() - r->t0;
  if (!v->spare_run) v->spare_run = r; /* for the next synchronous run */
  else run_free(r);
  release(v->ex);
  if (out) *out = t;
  return st;
}
