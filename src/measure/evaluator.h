/* In-process evaluation: the device, the data, the reference and the measurement of one config.
 * The isolated runner runs this inside its worker process; the in-process runner runs it directly. */
#ifndef HT_EVALUATOR_H
#define HT_EVALUATOR_H

#include <sys/types.h>

#include "hetune/measure.h"
#include "spec/spec_struct.h"

typedef struct ht_evaluator ht_evaluator;

/* Progress callback. Setup: 'D' after opening the device, 'A' after creating the data (the
 * reference comes next), 'F' after compiling the reference (running it comes next). A config: 'C'
 * after compilation, 'H' before a kernel run when the last 'C' or 'H' is ht_heartbeat_gap() old or
 * older (a beat per run would wake the waiter every run: at 1 ms kernels that cost more than the
 * rest of the framework). A waiter's run deadline is therefore the last 'C' or 'H' plus the run
 * timeout plus the gap: every run still gets its whole timeout. */
typedef void (*ht_progress_fn)(char phase, void *ctx);
double ht_heartbeat_gap(double timeout_s);

/* Opens the device, creates buffers, fills inputs and computes the reference outputs. Tools it runs
 * (the reference's compiler) are bounded by opt->setup_timeout_s. */
ht_status ht_evaluator_create(const ht_spec *spec, const char *device_id, const ht_runner_options *opt,
                              ht_progress_fn progress, void *ctx, ht_evaluator **out);
/* The same in two steps, so a worker can report its device before the data and the reference are
 * ready: open the device, then prepare (on failure the caller destroys the evaluator). */
ht_status ht_evaluator_open(const ht_spec *spec, const char *device_id, const ht_runner_options *opt,
                            ht_evaluator **out);
ht_status ht_evaluator_prepare(ht_evaluator *ev, ht_progress_fn progress, void *ctx);
void ht_evaluator_destroy(ht_evaluator *ev);
const ht_device_info *ht_evaluator_device(const ht_evaluator *ev);
/* Measures one config (indices into the spec's parameter lists). Never fails: failures are results.
 * The compiler it runs is bounded by opt->compile_timeout_s. Returns 1 when this process is as
 * clean as before; 0 when a C kernel left threads or (in a worker, opt->isolate) child processes
 * running: the kernel is then left loaded, since its code may still run, and a worker must not be
 * used again. */
int ht_evaluator_run(ht_evaluator *ev, const ht_config *cfg, ht_result *out, ht_progress_fn progress, void *ctx);
/* ht_runner_precompile in this process: jobs threads (ht_runner_compile_jobs), each
 * compiler bounded by opt->compile_timeout_s. The build times are kept for ht_evaluator_run of the
 * same configs. */
void ht_evaluator_precompile(ht_evaluator *ev, const ht_config *cfgs, int n, int jobs);

/* Threads of this process (leftovers.c). */
typedef struct ht_threads {
  int n, cap;
  pid_t *tid;
} ht_threads;
ht_status ht_threads_list(ht_threads *t);
void ht_threads_free(ht_threads *t);
/* 1 when, within settle_s, no thread outside `baseline` runs (OpenMP's pools are released first)
 * and, with `children`, no child process; else 0, with what still runs in msg. Either way the
 * threads running now become the baseline. */
int ht_leftovers_gone(ht_threads *baseline, int children, double settle_s, char *msg, size_t len);

/* Element-wise comparison (verify.c): 0 = pass; else message filled. An element the reference
 * changed from its initial contents (init, when not NULL) but out did not fails too. */
int ht_verify_buffer(const char *name, ht_dtype type, const void *out, const void *ref, const void *init, size_t n,
                     double rtol, double atol, char *message, size_t len);
int ht_check_finite(const char *name, ht_dtype type, const void *out, size_t n, char *message, size_t len);
/* Fills a host buffer per the argument's init rule (deterministic in seed). */
ht_status ht_fill_buffer(const ht_spec_arg *a, void *data, size_t n, uint64_t seed);

/* Reference outputs on disk (refcache.c), keyed by the spec's version, its current problem sizes
 * and the device the reference runs on (and, for C, the compiler). get fills bufs[0..n) of
 * bytes[i] each and returns 1 when a matching, intact entry exists; put stores them (a failure
 * only costs a recomputation). */
uint64_t ht_refcache_key(const ht_spec *s, const ht_device_info *ref_dev);
int ht_refcache_get(uint64_t key, void *const *bufs, const size_t *bytes, int n);
void ht_refcache_put(uint64_t key, void *const *bufs, const size_t *bytes, int n);

#endif
