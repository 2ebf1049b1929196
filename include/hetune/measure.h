/* The runner: one config on one device for one problem size -> a trustworthy ht_result.
 * compile (cached) -> verify against the reference once -> warm up -> timed runs until the
 * relative standard deviation is below the target or a cap is hit. Failures are results.
 * By default evaluations run in a worker process watched by a timeout, so a crash or hang in one
 * config is recorded and tuning goes on; the worker opens its own device context. The worker runs
 * in a process group of its own, killed with it, so nothing a kernel forked outlives it; a worker
 * in which a C kernel left threads or processes running is not used for another config. */
#ifndef HETUNE_MEASURE_H
#define HETUNE_MEASURE_H

#include "hetune/core.h"
#include "hetune/device.h"
#include "hetune/result.h"
#include "hetune/space.h"
#include "hetune/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ht_runner_options {
  int warmup;             /* untimed runs before timing, at least (default 1) */
  double warmup_s;        /* ...and until this many seconds of wall time have passed (default 0) */
  int min_runs;           /* timed runs at least (default 3, at least 2) */
  int max_runs;           /* timed runs at most (default 50, <= HT_MAX_SAMPLES) */
  double rsd_target;      /* stop when stddev/mean falls below (default 0.10) */
  double max_time_s;      /* stop timing once the timed runs add up to this (default 1.0) */
  double timeout_s;       /* a single kernel run longer than this is a hang (default 10) */
  double compile_timeout_s; /* compiling one config; the compiler is then killed (default 300) */
  double setup_timeout_s; /* opening the device, making the data, the reference (default 300) */
  int isolate;            /* 1: worker process (default); 0: in this process (no crash protection; a
                           * phase past its timeout ends the process with exit status 124, since
                           * a kernel running in it cannot be stopped; after a C kernel that left
                           * threads running, the next evaluation is an error) */
} ht_runner_options;

void ht_runner_options_default(ht_runner_options *o);

typedef struct ht_runner ht_runner;

/* Opens the device (in the worker when isolated), creates and fills the buffers and computes the
 * reference outputs. Errors: unknown device, reference that fails (how: its error, the signal that
 * ended the worker, or the setup timeout), bad sizes, a timeout that is not positive. */
ht_status ht_runner_create(const ht_spec *spec, const char *device_id, const ht_runner_options *opt,
                           ht_runner **out);
/* As ht_runner_create, but an isolated runner returns as soon as its worker has opened the device
 * (ht_runner_device is valid): the worker makes the data and computes the reference while the
 * caller goes on (builds the space, initialises a strategy), and the first ht_runner_evaluate
 * waits for it and returns the setup's errors. An in-process runner is ready on return. */
ht_status ht_runner_start(const ht_spec *spec, const char *device_id, const ht_runner_options *opt,
                          ht_runner **out);
void ht_runner_destroy(ht_runner *r);
const ht_device_info *ht_runner_device(const ht_runner *r);

/* Measures one config. Kernel failures (compile, runtime, timeout, correctness) are reported in
 * out->status with a message and return HT_OK; only failures of hetune itself return an error. */
ht_status ht_runner_evaluate(ht_runner *r, const ht_config *cfg, ht_result *out);

/* Ends the worker process (if any) so that the next evaluation runs in a new one: a measurement
 * repeated in another process samples another of the device's process-level states (thread
 * placement, memory layout, PoCL's thread pool). No-op in-process. */
void ht_runner_new_worker(ht_runner *r);
/* How many times the worker was (re)started; for tests and reports. */
int ht_runner_worker_starts(const ht_runner *r);

/* ---- memory bandwidth by working set (src/measure/bandwidth.c) ---- */

/* The read bandwidth a device reaches on a working set of a given size: points with strictly
 * increasing bytes. Between points it is interpolated in log-log; beyond them it is the end value
 * (past the last level of cache, memory bandwidth no longer changes with size). */
#define HT_BANDWIDTH_MAX_POINTS 64
typedef struct ht_bandwidth_curve {
  int n;
  double bytes[HT_BANDWIDTH_MAX_POINTS];
  double bytes_per_s[HT_BANDWIDTH_MAX_POINTS];
  int threads[HT_BANDWIDTH_MAX_POINTS]; /* the probe's fastest thread count there (0: unknown) */
} ht_bandwidth_curve;

/* Bytes per second at a working set of `bytes` (NAN for an empty curve). */
double ht_bandwidth_at(const ht_bandwidth_curve *c, double bytes);
/* CSV with a header line "bytes,gb_per_s[,threads]" ('#' lines are comments). Errors name the file
 * and line: missing file, bad number, bytes not increasing, bandwidth not positive, no rows. */
ht_status ht_bandwidth_load(const char *path, ht_bandwidth_curve *out);
/* Writes the curve as that CSV (atomically), with `comment` as a first '#' line when not NULL. */
ht_status ht_bandwidth_save(const char *path, const ht_bandwidth_curve *c, const char *comment);

/* Called after each measured working set of each sweep (1-based), for progress output. */
typedef void (*ht_bandwidth_progress_fn)(int sweep, double bytes, double bytes_per_s, int threads, void *ctx);
/* Measures a device's curve with a generated probe run through the runner: it sums a uint32 array
 * of each working set from min_bytes to max_bytes, doubling, verified against a reference sum, in
 * every config of its small space (C: every power-of-two thread count and the device's maximum;
 * OpenCL: work-group sizes, groups per compute unit, strided or contiguous shares, 4- or 16-wide
 * vectors; CUDA: block sizes and blocks per multiprocessor); a measurement is the fastest config's
 * median. The sizes are swept `sweeps` times, each working set in a new worker process,
 * and each point keeps its best sweep: the curve is an upper bound of what the device reads, and
 * a shared machine's load only ever slows a sweep down. opt NULL: at least 5 timed runs, rsd
 * target 2%. Probe files go into ht_cache_dir()/probes (written before the device is opened). A
 * device id of another backend gets HT_ERR_UNSUPPORTED. */
ht_status ht_bandwidth_measure(const char *device_id, double min_bytes, double max_bytes, int sweeps,
                               const ht_runner_options *opt, ht_bandwidth_progress_fn progress, void *ctx,
                               ht_bandwidth_curve *out);

#ifdef __cplusplus
}
#endif
#endif
