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
  int compile_jobs;       /* ht_runner_precompile: compilers at once (default 0: one per CPU this
                           * process may use when the runner is created: its affinity mask,
                           * bounded by its CPU quota) */
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
/* As ht_runner_evaluate, with next queued to the worker behind cfg: a worker that finished cfg
 * clean goes on with next at once, so that next is compiled, loaded and measured while the caller
 * handles cfg's result (stores it, tells a strategy, reports it); evaluate next with the next
 * call. A worker that crashed, hung or left threads running in cfg never starts next. Any other
 * call first ends the worker with next in it and drops its measurement (a stopped tuning does not
 * wait for it). next may be NULL; in-process runners ignore it. */
ht_status ht_runner_evaluate_ahead(ht_runner *r, const ht_config *cfg, const ht_config *next, ht_result *out);
/* Compiles the kernels of configs about to be evaluated, up to opt->compile_jobs compilers at once,
 * into the device's compile cache, and keeps them loaded: the evaluations that follow run them
 * without looking them up again, measuring one after another as always, and each reports the time
 * its own build took (a config that failed to build, the compiler's message). Only where the device
 * compiles in parallel (HT_CAP_PARALLEL_COMPILE: c); elsewhere nothing changes. A later call drops
 * the kernels of the earlier one that were not evaluated. */
#define HT_MAX_PRECOMPILE 4096
ht_status ht_runner_precompile(ht_runner *r, const ht_config *cfgs, int n);
/* The compilers ht_runner_precompile runs at once: opt->compile_jobs, else one per CPU this process
 * may use (the CPUs of its affinity mask, fewer when its control group's CPU quota allows fewer:
 * a container given 2 CPUs of a 64-core host runs 2 compilers, not 64). */
int ht_runner_compile_jobs(const ht_runner *r);

/* Ends the worker process (if any) so that the next evaluation runs in a new one: a measurement
 * repeated in another process samples another of the device's process-level states (thread
 * placement, memory layout, PoCL's thread pool). No-op in-process. */
void ht_runner_new_worker(ht_runner *r);
/* Tells the worker process (if any) to end, without waiting for it: it frees its data and exits
 * while the caller goes on (commits, reports), and ht_runner_destroy finds it gone. A config sent
 * ahead is dropped; a later evaluation waits for it and starts a new one. No-op in-process. */
void ht_runner_release_worker(ht_runner *r);
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

/* ---- host<->device transfer times (src/measure/transfer.c) ---- */

/* How long copies between host memory and a device take, by size and direction: measured points
 * with strictly increasing bytes, piecewise affine between them. Dispatch adds these times to a
 * device's predicted kernel time. A device that works in host memory (the c backend) has an empty
 * table: nothing to copy. */
typedef enum ht_transfer_dir { HT_H2D = 0, HT_D2H = 1 } ht_transfer_dir;
#define HT_TRANSFER_MAX_POINTS 256
typedef struct ht_transfer_table {
  int n[2];                                /* points per direction */
  double bytes[2][HT_TRANSFER_MAX_POINTS]; /* strictly increasing */
  double seconds[2][HT_TRANSFER_MAX_POINTS];
} ht_transfer_table;

/* "h2d" or "d2h" ("?" for anything else). */
const char *ht_transfer_dir_name(ht_transfer_dir dir);
/* Seconds to copy `bytes` in direction dir: linear interpolation between measured points; below
 * the first point, the first point's time; beyond the last, the last segment's line (never below the
 * last point's time). 0 for an empty direction (a host device: nothing to copy). */
double ht_transfer_time(const ht_transfer_table *t, ht_transfer_dir dir, double bytes);

/* Called after each measured point (points: how many that direction has now), for progress output. */
typedef void (*ht_transfer_progress_fn)(ht_transfer_dir dir, double bytes, double seconds, int points, void *ctx);
typedef struct ht_transfer_options {
  double min_bytes, max_bytes; /* sizes measured (default 1 B to 256 MiB; the device's max allocation
                                * and global memory cap max_bytes) */
  int max_points;              /* per direction, 2..HT_TRANSFER_MAX_POINTS (default 200) */
  double tolerance;            /* a point within this relative distance of its segment's line
                                * continues the segment (default 0.10) */
  int min_runs, max_runs;      /* copies timed per point (default 5 and 50; max_runs <= HT_MAX_SAMPLES) */
  double rsd_target;           /* ...stopping once their stddev/mean is below this (default 0.05) */
  double max_time_s;           /* ...or once they add up to this many seconds (default 0.5) */
  ht_transfer_progress_fn progress; /* may be NULL */
  void *progress_ctx;
} ht_transfer_options;
void ht_transfer_options_default(ht_transfer_options *o);
/* Measures both directions on an open device. Sizes start at min_bytes with a stride of 64 bytes
 * (or min_bytes / 8 if larger);
 * each point's bandwidth (bytes / time) is compared with the least-squares line through the points
 * of the current segment: within `tolerance`, the point joins the segment and the stride doubles;
 * otherwise the stride is divided by 4 and a new segment starts from the last accepted point (the
 * rejected point stays in the table: it is a measurement like the others). max_bytes is measured
 * last. A point is the median of a series of timed copies (after one untimed copy) under the rsd
 * rule; times are the backend's buffer_write / buffer_read seconds (OpenCL profiling and
 * CUDA events; a simulated device's model). A host device (backend "c"), or a direction whose
 * copies take no time, gives an empty direction. Errors: bad options (naming the field), no
 * memory for the buffers, a failed copy. */
ht_status ht_transfer_measure(ht_device *dev, const ht_transfer_options *opt, ht_transfer_table *out);
/* CSV with the header "direction,bytes,seconds" (direction h2d|d2h, bytes increasing within a
 * direction; '#' lines are comments); a header alone is an empty table. Errors name file:line. */
ht_status ht_transfer_load(const char *path, ht_transfer_table *out);
/* Writes the table as that CSV (atomically), with `comment` as a first '#' line when not NULL. */
ht_status ht_transfer_save(const char *path, const ht_transfer_table *t, const char *comment);

#ifdef __cplusplus
}
#endif
#endif
