/* The execution layer: run one variant (a spec's kernel with one config, on one device) in this
 * process, on the caller's host buffers, synchronously or in flight. What dispatch, races and
 * co-execution launch through.
 *
 *   ht_exec *ex;  ht_variant *v;  ht_run_times t;
 *   ht_exec_open("opencl", &ex);
 *   ht_variant_create(ex, spec, "WG=64,WPT=4", &v);          // compiles now (cached on disk)
 *   ht_host_arg args[4] = {{c, n}, {a, n}, {b, n}, {0}};    // one per spec argument, in order
 *   int64_t sizes[1] = {n};                                 // the spec's sizes, in its order
 *   ht_variant_run(v, sizes, args, NULL, &t);               // uploads, runs, downloads into c
 *
 * Device buffers are kept across calls and grow with the sizes. One ht_exec serves one call at a
 * time (a second waits for the first); calls on different ht_exec objects run concurrently. */
#ifndef HETUNE_EXEC_H
#define HETUNE_EXEC_H

#include "hetune/core.h"
#include "hetune/device.h"
#include "hetune/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ht_exec ht_exec;
typedef struct ht_variant ht_variant;
typedef struct ht_run ht_run; /* a call in flight */

/* Opens a device (an id as ht_device_open takes) for running variants. */
ht_status ht_exec_open(const char *device_id, ht_exec **out);
/* Runs variants on dev, which stays the caller's (close the ht_exec first). */
ht_status ht_exec_wrap(ht_device *dev, ht_exec **out);
void ht_exec_close(ht_exec *ex);
ht_device *ht_exec_device(ht_exec *ex);

/* The spec's kernel with config ("A=1,B=x", every parameter named; "" or NULL for a spec without
 * parameters) on ex. The config must satisfy the spec's constraints on this device. A simulated
 * device runs the kernel's C reference (or a C kernel itself). The spec must outlive the variant. */
ht_status ht_variant_create(ht_exec *ex, const ht_spec *spec, const char *config, ht_variant **out);
void ht_variant_destroy(ht_variant *v);

/* The caller's data for one spec argument. Buffers: data holds count elements of the argument's
 * type; [lo, hi) are the elements to copy in (if the kernel reads them) and out (if it writes
 * them); lo = hi = 0 means all the buffer's elements. Scalars and the stop flag: nothing (their
 * values come from the spec's expressions and the runtime). */
typedef struct ht_host_arg {
  void *data;
  size_t count;
  size_t lo, hi;
} ht_host_arg;

/* Part of the work to launch: the work-items [offset, offset + count) of each dimension (count 0:
 * the whole geometry). A device without HT_CAP_OFFSET only runs offset 0. */
typedef struct ht_run_opts {
  size_t offset[3], count[3];
  /* On a device whose kernels use host memory (HT_CAP_HOST_MEMORY: c), a call works in the
   * caller's buffers in place, copying nothing, so a cancelled run may have written some of them.
   * copy = 1 copies as other devices do: a run that may be stopped (a race) leaves them alone. */
  int copy;
} ht_run_opts;

typedef struct ht_run_times {
  double kernel_s;     /* from device events (or the clock around a C call; modelled on sim devices) */
  double h2d_s, d2h_s; /* the copies in and out */
  double wall_s;       /* the whole call as the caller saw it */
} ht_run_times;

/* sizes: the spec's problem sizes in its order (NULL: the spec's own). Each buffer's length comes
 * from its spec expression at these sizes; the caller's count must hold it. out NULL: the call is
 * not timed (on c and sim no clock is read: four reads were half of a small call). */
ht_status ht_variant_run(ht_variant *v, const int64_t *sizes, const ht_host_arg *args, const ht_run_opts *opts,
                         ht_run_times *out);
/* Builds (or loads from the cache) the program a call at sizes runs, which the first such call
 * does otherwise: for a caller that times calls from their start, as a race does. */
ht_status ht_variant_prepare(ht_variant *v, const int64_t *sizes);
/* The same, returning once the kernel runs (after the copies in); ht_run_wait copies out. */
ht_status ht_variant_start(ht_variant *v, const int64_t *sizes, const ht_host_arg *args, const ht_run_opts *opts,
                           ht_run **out);
int ht_run_poll(ht_run *r); /* 1: the kernel finished, 0: it runs */
/* Raises the stop flag (the spec's "stop" argument) of the kernel; HT_ERR_UNSUPPORTED when the
 * device cannot (no HT_CAP_CANCEL) or the spec has no stop flag. ht_run_wait must still follow. */
ht_status ht_run_cancel(ht_run *r);
/* Waits, copies the written buffers out (none when cancelled; in place, see ht_run_opts.copy), frees r. */
ht_status ht_run_wait(ht_run *r, ht_run_times *out);

#ifdef __cplusplus
}
#endif
#endif
