/* The runner: one config on one device for one problem size -> a trustworthy ht_result.
 * compile (cached) -> verify against the reference once -> warm up -> timed runs until the
 * relative standard deviation is below the target or a cap is hit. Failures are results.
 * By default evaluations run in a worker process watched by a timeout, so a crash or hang in one
 * config is recorded and tuning goes on; the worker opens its own device context. */
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
  double compile_timeout_s; /* setup, reference and compilation (default 300) */
  int isolate;            /* 1: worker process (default); 0: in this process (no crash protection) */
} ht_runner_options;

void ht_runner_options_default(ht_runner_options *o);

typedef struct ht_runner ht_runner;

/* Opens the device (in the worker when isolated), creates and fills the buffers and computes the
 * reference outputs. Errors: unknown device, reference that fails, bad sizes. */
ht_status ht_runner_create(const ht_spec *spec, const char *device_id, const ht_runner_options *opt,
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

#ifdef __cplusplus
}
#endif
#endif
