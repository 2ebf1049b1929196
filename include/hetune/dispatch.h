/* Per-call dispatch (docs/dispatch.md): a computation is one named operation with several variants
 * (a kernel spec on a device with a config, or "best": the stored best for the call's size). At
 * each call it decides which variant will finish first, transfers included, runs it on the
 * caller's buffers through the execution layer and learns from the time it measured.
 *
 *   ht_computation *c;  ht_decision d;
 *   ht_computation_load("examples/dispatch/scale.json", st, &c);   // st: a store, or NULL
 *   int64_t n = 1 << 16;                                          // the variants' sizes, in order
 *   ht_host_arg args[3] = {{y, n}, {x, n}, {0}};                  // one per argument, in order
 *   ht_computation_run(c, &n, args, &d, NULL);                    // decides, runs, learns
 *
 * One ht_computation serves one thread at a time. */
#ifndef HETUNE_DISPATCH_H
#define HETUNE_DISPATCH_H

#include <stdint.h>
#include <stdio.h>

#include "hetune/core.h"
#include "hetune/exec.h"
#include "hetune/spec.h"
#include "hetune/store.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ht_computation ht_computation;

/* Where a decision came from. */
typedef enum ht_decision_source {
  HT_SRC_STATIC = 0, /* the static cache (ht_computation_set_static_cache) */
  HT_SRC_CACHED,     /* the in-memory cache of earlier decisions */
  HT_SRC_MEASURED,   /* times measured at this very size */
  HT_SRC_HISTORY,    /* times measured at other sizes, interpolated */
  HT_SRC_MODEL,      /* a stored prediction model */
  HT_SRC_RULE,       /* the computation's fixed rule */
  HT_SRC_EXPLORE     /* a variant tried to learn its time (uncalibrated, or close to the winner) */
} ht_decision_source;

const char *ht_decision_source_name(ht_decision_source s);

typedef struct ht_decision {
  int variant;           /* index in the computation's variants */
  const char *config;    /* the config run ("" without parameters); valid while the computation lives */
  double pred_kernel_s;  /* predicted kernel time (NAN when unknown) */
  double pred_transfer_s; /* predicted copies in and out (0 on host devices) */
  double pred_total_s;   /* kernel + transfers, after bias correction */
  double band_lo, band_hi; /* the total's 80% band (NAN when unknown) */
  int close;             /* 1: the runner-up's band overlaps the winner's */
  int runner_up;         /* the second-best variant (-1 with one variant) */
  double runner_up_total_s; /* its predicted total (NAN when none) */
  ht_decision_source source;
  double decide_ns;      /* how long a decision by the selector took; 0 for a cache hit (not timed:
                          * tens of nanoseconds, bench/bench_dispatch measures them) */
} ht_decision;

/* ---- building ---- */

/* A computation file (docs/dispatch.md):
 *   {"name": "scale",
 *    "variants": [{"spec": "scale_c.json", "device": "c", "config": "NTHREADS=1"},
 *                 {"spec": "scale_c.json", "device": "c", "config": "best"}],
 *    "selector": "history", "bucket": "exact",
 *    "feedback": {"window": 16, "drift": 1.25, "explore": 0.05}}
 * Paths are relative to the file. Every variant's spec must have the same sizes and the same
 * arguments (names, types, buffer or scalar, access), checked here with an error naming the first
 * difference. st (may be NULL) supplies tuned configs, models and measured times, and receives
 * the log of every run; it must outlive the computation. */
ht_status ht_computation_load(const char *path, ht_store *st, ht_computation **out);

/* The same, built in code: create, add variants, then ht_computation_finish checks them. */
ht_status ht_computation_create(const char *name, ht_store *st, ht_computation **out);
/* spec is borrowed (must outlive the computation); device_id as ht_exec_open takes; config as
 * ht_variant_create takes, or "best". Returns the variant's index in *index (may be NULL). */
ht_status ht_computation_add_variant(ht_computation *c, const ht_spec *spec, const char *device_id,
                                     const char *config, int *index);
/* Options as in the file, as text:
 * "selector=history,bucket=log2,window=16,drift=1.25,explore=0.05,sample_below_us=16,seed=1". */
ht_status ht_computation_set_options(ht_computation *c, const char *options);
ht_status ht_computation_finish(ht_computation *c);
void ht_computation_destroy(ht_computation *c);

const char *ht_computation_name(const ht_computation *c);
int ht_computation_variant_count(const ht_computation *c);
/* "scale_c NTHREADS=1 on c" */
const char *ht_computation_variant_label(const ht_computation *c, int variant);
const ht_spec *ht_computation_spec(const ht_computation *c);

/* ---- deciding and running ---- */

/* sizes: the specs' problem sizes, in their order. */
ht_status ht_computation_decide(ht_computation *c, const int64_t *sizes, ht_decision *out);
/* Decides, runs the chosen variant on the caller's buffers (as ht_variant_run takes them), and
 * feeds the measured time back. times may be NULL. */
ht_status ht_computation_run(ht_computation *c, const int64_t *sizes, const ht_host_arg *args, ht_decision *out,
                             ht_run_times *times);
/* Runs one given variant (no decision) and records its time as run does: for calibration. */
ht_status ht_computation_run_variant(ht_computation *c, int variant, const int64_t *sizes, const ht_host_arg *args,
                                     ht_run_times *times);
/* Records a time of variant at sizes measured elsewhere (a race, docs/race.md). censored 0: a
 * measurement, learnt as run learns it. censored 1: a lower bound (the variant was stopped after
 * t's total): its expected time at that size bucket is raised to at least the bound, never lowered,
 * and the store's log marks the row censored. */
ht_status ht_computation_record(ht_computation *c, int variant, const int64_t *sizes, const ht_run_times *t,
                                int censored);
/* Writes the logged runs to the store now (run writes them in batches, and destroy writes the rest). */
ht_status ht_computation_flush(ht_computation *c);

/* What the computation knows of one variant at sizes, as the selector weighs it: for explanations. */
typedef struct ht_variant_estimate {
  const char *config;          /* the config it would run */
  double kernel_s, transfer_s; /* a model's prediction and the copies' (NAN when not from a model) */
  double total_s, band_lo, band_hi; /* what the selector compares (NAN: unknown) */
  ht_decision_source source;   /* measured, history or model; explore when nothing is known */
  double correction;           /* the bias factor predictions are multiplied by (1: none) */
  int n_sizes_measured;        /* sizes with measured times */
  int n_recent;                /* the newest times measured at this size, oldest first */
  double recent[8];
  int has_model;               /* a stored model of its kernel on its device */
} ht_variant_estimate;
/* out: one per variant. Deciding nothing, changing nothing. */
ht_status ht_computation_estimate(ht_computation *c, const int64_t *sizes, ht_variant_estimate *out);

/* Host buffers for a call at sizes, one per argument, made and filled as the first variant's spec
 * says ("init": random data from seed, zeros, ...): for tools, tests and benchmarks. */
ht_status ht_computation_make_args(const ht_computation *c, const int64_t *sizes, uint64_t seed, ht_host_arg **out);
void ht_computation_free_args(const ht_computation *c, ht_host_arg *args);

/* ---- static cache: decisions compiled into the application ---- */

typedef struct ht_static_entry {
  uint64_t key;       /* ht_computation_size_key of the sizes */
  int variant;
  const char *config;
  int64_t time_ns;    /* the time the decision expects */
  char source;        /* 'M' measured, 'P' predicted */
} ht_static_entry;

/* The key of a call's sizes: the computation's identity (name, variants, device fingerprints)
 * hashed with the size bucket. */
uint64_t ht_computation_size_key(const ht_computation *c, const int64_t *sizes);
/* Entries sorted by key (as the exported header holds them); borrowed. A lookup that finds the key
 * decides with no store and no prediction. */
ht_status ht_computation_set_static_cache(ht_computation *c, const ht_static_entry *entries, int n);
/* Writes a C header (docs/dispatch.md) holding the decision at every size bucket with measured
 * times and at each of the n extra sizes (n_sizes values each, the spec's order), sorted by key,
 * with SYMBOL_lookup(sizes) that finds one without hetune and the entries as SYMBOL_cache for
 * ht_computation_set_static_cache. symbol: a C identifier. */
ht_status ht_computation_export_cache(ht_computation *c, const int64_t *sizes, int n, const char *symbol, FILE *out);

#ifdef __cplusplus
}
#endif
#endif
