/* Shared between the co-execution files; not installed. */
#ifndef HETUNE_COEXEC_INTERNAL_H
#define HETUNE_COEXEC_INTERNAL_H

#include <stdint.h>

#include "dispatch/dispatch_internal.h"
#include "hetune/coexec.h"

/* A split checked against the computation's spec: argument indices and compiled strides. */
typedef struct htx_split {
  int dim;               /* index of the split size */
  int64_t granularity, halo;
  int n_args;
  ht_expr **stride; /* per argument: elements per row of a split buffer; NULL: passed whole */
} htx_split;

/* One chunk of a call: its own rows [lb, ub) and the rows [a, b) its run sees (the halo). */
typedef struct htx_chunk {
  int64_t lb, ub, a, b;
} htx_chunk;

typedef struct htx_plan_slot {
  uint64_t key; /* 0: empty */
  ht_partition plan;
  int variant[HT_COEXEC_MAX_PUS]; /* the computation's variant per PU */
} htx_plan_slot;

enum { HTX_PLAN_SLOTS = 64, HTX_MAX_VERSIONS = 8 };

struct ht_coexec {
  ht_computation *c;
  int owns_c;
  htx_split split;
  int n_pus;
  ht_exec *pu_ex[HT_COEXEC_MAX_PUS];
  int n_versions[HT_COEXEC_MAX_PUS];
  int versions[HT_COEXEC_MAX_PUS][HTX_MAX_VERSIONS]; /* variant indices */
  double power_w[HT_COEXEC_MAX_PUS];
  int dynamic;          /* schedule=dynamic */
  double replan;
  int64_t min_chunk;
  ht_partition_opts popts;
  int has_power;
  htx_plan_slot plans[HTX_PLAN_SLOTS];
};

/* ---- split.c ---- */
ht_status htx_split_compile(const ht_computation *c, const ht_split *in, htx_split *out);
void htx_split_free(htx_split *s);
/* The chunk [lb, ub) of a call whose split size is n, with its halo rows. */
htx_chunk htx_chunk_at(const htx_split *s, int64_t n, int64_t lb, int64_t ub);
/* The sizes a chunk runs at: sizes with the split size set to its rows. */
void htx_chunk_sizes(const ht_computation *c, const htx_split *s, const int64_t *sizes, const htx_chunk *k,
                     int64_t *out);
/* Checks the caller's buffers hold whole rows of dim at sizes. */
ht_status htx_check_call(const ht_computation *c, const htx_split *s, const int64_t *sizes, const ht_host_arg *args);
/* The caller's arguments as a chunk's run takes them: split buffers start at the chunk's first row
 * and copy back only its own rows; whole buffers pass as they are. */
void htx_chunk_args(const ht_computation *c, const htx_split *s, const int64_t *sizes, const htx_chunk *k,
                    const ht_host_arg *args, ht_host_arg *out);

/* ---- plan.c ---- */
ht_status htx_plan(ht_coexec *x, const int64_t *sizes, ht_coexec_report *out);
/* 1 when every version of every device has a time to plan with at these sizes. */
int htx_calibrated(ht_coexec *x, const int64_t *sizes);
void htx_plan_forget(ht_coexec *x, const int64_t *sizes);

/* ---- coexec_power.c ---- */
/* With an energy option on, the power of each device not given one, from ht_device_power; a
 * device without any: one error naming it and how to give its power. */
ht_status htx_fill_power(ht_coexec *x);

/* ---- run.c ---- */
ht_status htx_run_static(ht_coexec *x, const int64_t *sizes, const ht_host_arg *args, ht_coexec_report *r);
ht_status htx_run_dynamic(ht_coexec *x, const int64_t *sizes, const ht_host_arg *args, ht_coexec_report *r);

#endif
