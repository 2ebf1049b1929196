/* What launching a spec's kernel takes, shared by the execution layer and the evaluator (one way
 * to launch): which kernel runs on a device, its geometry, buffer lengths, arguments and work. */
#ifndef HETUNE_EXEC_INTERNAL_H
#define HETUNE_EXEC_INTERNAL_H

#include "hetune/exec.h"
#include "device/backend.h"
#include "spec/spec_struct.h"

/* The kernel that runs on dev: the spec's own, or on a simulated device its C reference when the
 * kernel is not C. A kernel of another language than the device's is an error saying so. */
ht_status ht_exec_kernel_for(const ht_spec *spec, const ht_device *dev, const ht_spec_kernel **out);
/* The launch geometry of k under vars, then the part opts asks for (NULL: all); 1 with msg on error
 * (the launch's arguments are left to the caller). */
int ht_exec_geometry(const ht_spec_kernel *k, const ht_value *vars, const ht_run_opts *opts, ht_launch *l, char *msg,
                     size_t len);
/* Each buffer argument's length in elements under vars (0 for scalars). */
ht_status ht_exec_lengths(const ht_spec *s, const ht_value *vars, size_t *len);
/* The launch arguments: buffers from bufs, scalars evaluated, the stop flag marked; 1 with msg on
 * error. */
int ht_exec_args(const ht_spec *s, const ht_value *vars, ht_buffer *const *bufs, ht_arg *args, char *msg, size_t len);
/* The launch's flops and bytes from the spec's "work" (0 where it has none). */
void ht_exec_work(const ht_spec *s, const ht_value *vars, ht_launch *l);
/* Copies bytes between host and buffer b at byte offset (to_device: host -> b), adding the
 * transfer's seconds to *seconds. A backend without copies at an offset copies at offset 0 only. */
ht_status ht_exec_copy(ht_device *dev, ht_buffer *b, size_t offset, void *host, size_t bytes, int to_device,
                       double *seconds);

#endif
