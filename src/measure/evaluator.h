/* In-process evaluation: the device, the data, the reference and the measurement of one config.
 * The isolated runner runs this inside its worker process; the in-process runner runs it directly. */
#ifndef HT_EVALUATOR_H
#define HT_EVALUATOR_H

#include "hetune/measure.h"

typedef struct ht_evaluator ht_evaluator;

/* Progress callback: phase 'C' after compilation, 'H' after each kernel run. */
typedef void (*ht_progress_fn)(char phase, void *ctx);

/* Opens the device, creates buffers, fills inputs and computes the reference outputs. */
ht_status ht_evaluator_create(const ht_spec *spec, const char *device_id, const ht_runner_options *opt,
                              ht_evaluator **out);
void ht_evaluator_destroy(ht_evaluator *ev);
const ht_device_info *ht_evaluator_device(const ht_evaluator *ev);
/* Measures one config (indices into the spec's parameter lists). Never fails: failures are results. */
void ht_evaluator_run(ht_evaluator *ev, const ht_config *cfg, ht_result *out, ht_progress_fn progress, void *ctx);

/* Element-wise comparison (verify.c): 0 = pass; else message filled. An element the reference
 * changed from its initial contents (init, when not NULL) but out did not fails too. */
int ht_verify_buffer(const char *name, ht_dtype type, const void *out, const void *ref, const void *init, size_t n,
                     double rtol, double atol, char *message, size_t len);
int ht_check_finite(const char *name, ht_dtype type, const void *out, size_t n, char *message, size_t len);
/* Fills a host buffer per the argument's init rule (deterministic in seed). */
ht_status ht_fill_buffer(const ht_spec_arg *a, void *data, size_t n, uint64_t seed);

#endif
