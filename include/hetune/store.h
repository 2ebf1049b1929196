/* The store: SQLite (WAL mode) persistence of devices, kernels, problems, configs, evaluations and
 * tuning sessions; import/export. Each evaluation is committed on its own, or journaled and
 * committed with a group (ht_store_group_evals), so `kill -9` loses no finished evaluation. */
#ifndef HETUNE_STORE_H
#define HETUNE_STORE_H

#include <stdio.h>

#include "hetune/core.h"
#include "hetune/device.h"
#include "hetune/measure.h"
#include "hetune/result.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ht_store ht_store;

#define HT_STORE_DEFAULT_PATH "hetune.db"

/* Opens or creates. A file that is not a hetune database (foreign SQLite schema, not SQLite at
 * all, corrupt, newer schema version) -> HT_ERR_STORE "PATH: ..." and the file is left untouched.
 * A read-only file or folder opens for reading; writes then fail with a clear error. */
ht_status ht_store_open(const char *path, ht_store **out);
/* Never creates or writes. Missing file -> HT_ERR_IO. */
ht_status ht_store_open_readonly(const char *path, ht_store **out);
void ht_store_close(ht_store *st);
const char *ht_store_path(const ht_store *st);

/* Upserts, returning the row id. */
ht_status ht_store_put_device(ht_store *st, const ht_device_info *info, int64_t *id);
/* A kernel is identified by name + source_hash (hash of source text and everything in the spec
 * that changes what is measured). space_json describes its parameters: {"TX":[8,16],...}. */
ht_status ht_store_put_kernel(ht_store *st, const char *name, const char *language, const char *source_hash,
                              const char *spec_path, const char *space_json, int64_t *id);
/* A problem: one assignment of the kernel's problem sizes, canonical text "M=1024,N=512". */
ht_status ht_store_put_problem(ht_store *st, int64_t kernel_id, const char *sizes, int64_t *id);

typedef struct ht_session_info {
  int64_t kernel_id, device_id, problem_id;
  const char *strategy;
  uint64_t seed;
  int64_t budget_evals;   /* 0 = none */
  double budget_seconds;  /* 0 = none */
  const char *options_json; /* may be NULL */
} ht_session_info;
ht_status ht_store_session_begin(ht_store *st, const ht_session_info *s, int64_t *session_id);
/* status: "finished", "interrupted", "failed". */
ht_status ht_store_session_end(ht_store *st, int64_t session_id, const char *status, int64_t n_evals,
                               double best_time_s);

/* One evaluation. config_key is canonical "TX=16,TY=8"; config_json is {"TX":16,"TY":8}.
 * Committed before returning, or with grouping on and eval_id NULL, appended to this store's
 * journal before returning and committed with its group. */
typedef struct ht_eval_key {
  int64_t kernel_id, device_id, problem_id;
  const char *config_key;
  const char *config_json;
} ht_eval_key;
ht_status ht_store_put_eval(ht_store *st, int64_t session_id, const ht_eval_key *k, const ht_result *r,
                            int64_t *eval_id);
/* Grouped commits: from now on, evaluations stored without asking for their id are appended to a
 * journal file beside the database file (DB-pending-PID-N, beside the file a symbolic link names,
 * as SQLite's -wal; locked while this store is open) and
 * committed together, max_evals at a time or at the first one stored half a second after the
 * group began. Any other read or write of this store commits the group first, as does a lookup of
 * a config that is in it, so this store reads what it wrote; other connections see a group once
 * it is committed. ht_store_close commits what is left. A journal whose process died (kill -9, a
 * crash) is put into the database by the next writable open, by any process, and removed.
 * max_evals 0 or 1 turns grouping off after committing the group. With HETUNE_DB_SYNC=full, or a
 * read-only store, it stays off. Errors: the group's commit failing (its rows stay pending). */
ht_status ht_store_group_evals(ht_store *st, int max_evals);
/* A config measured several times is judged by the median of its OK evaluations, not by its
 * luckiest or latest one. get_eval: the config's middle OK evaluation by time (of an even count,
 * the later of the two middle ones) with time_s set to the median; when none is OK, its latest
 * failure; *found = 0 when it was never evaluated. */
ht_status ht_store_get_eval(ht_store *st, const ht_eval_key *k, ht_result *out, int *found);
/* The config with the lowest median time for (kernel, device, problem), read as get_eval reads
 * it; its config_key is copied into key_buf. */
ht_status ht_store_best(ht_store *st, int64_t kernel_id, int64_t device_id, int64_t problem_id, ht_result *out,
                        char *key_buf, size_t key_len, int *found);

/* Queries for show/export. NULL or 0 fields match everything. */
typedef struct ht_eval_filter {
  const char *kernel_name;
  const char *device_id;  /* "opencl:0:0" */
  const char *problem;    /* canonical sizes text */
  int only_ok;
} ht_eval_filter;

typedef struct ht_eval_record {
  int64_t eval_id, session_id;
  const char *kernel_name, *language, *source_hash;
  const char *device_id, *device_name, *device_fingerprint;
  const char *problem;
  const char *config_key, *config_json;
  ht_result result;
} ht_eval_record;
/* Calls fn for each evaluation (oldest first). fn returns nonzero to stop. Strings live until fn returns. */
typedef int (*ht_eval_visit_fn)(const ht_eval_record *rec, void *ctx);
ht_status ht_store_each_eval(ht_store *st, const ht_eval_filter *f, ht_eval_visit_fn fn, void *ctx);

typedef struct ht_session_record {
  int64_t session_id;
  const char *kernel_name, *device_id, *problem, *strategy, *status;
  uint64_t seed;
  int64_t n_evals, budget_evals;
  double budget_seconds, started, ended, best_time_s;
} ht_session_record;
typedef int (*ht_session_visit_fn)(const ht_session_record *rec, void *ctx);
ht_status ht_store_each_session(ht_store *st, ht_session_visit_fn fn, void *ctx);

/* Prediction models (include/hetune/model.h) with where their training data came from. */
typedef struct ht_model_record {
  int64_t id;
  const char *name, *kind, *options;
  const char *kernel_name, *source_hash, *device_id, *spec_path;
  int64_t n_rows;
  const char *provenance_json; /* data sources, sizes, rows, training accuracy */
  const void *blob;            /* ht_model_save() bytes */
  size_t blob_len;
  double created;
} ht_model_record;
/* Stores a new version (name may repeat; nothing is overwritten). */
ht_status ht_store_put_model(ht_store *st, const ht_model_record *rec, int64_t *id);
/* Calls fn for each model, newest first; name and kernel_name (NULL = any) filter. A database
 * older than the models table has none. fn returns nonzero to stop. */
typedef int (*ht_model_visit_fn)(const ht_model_record *rec, void *ctx);
ht_status ht_store_each_model(ht_store *st, const char *name, const char *kernel_name, ht_model_visit_fn fn, void *ctx);

/* The log of per-call dispatch (include/hetune/dispatch.h): one row per run of calls alike (same
 * variant, config, sizes and decision source; at most 64), with the times of its median call.
 * variant_key identifies the variant across programs (its kernel identity, device fingerprint and
 * config). */
typedef struct ht_dispatch_record {
  const char *computation, *variant, *variant_key;
  const char *config, *sizes; /* sizes: canonical "N=1024,M=8" */
  const char *source;         /* the decision's source ("measured", "explore", ...) */
  double predicted_s;         /* the decision's expected total (NAN: none) */
  int64_t calls;              /* calls the row stands for (>= 1) */
  double kernel_s, h2d_s, d2h_s; /* of the median call */
  double timestamp;           /* of the first call */
  int censored;               /* 1: the times are lower bounds (a race's loser, stopped), not measurements */
} ht_dispatch_record;
/* Appends n records in one transaction. */
ht_status ht_store_put_dispatch_log(ht_store *st, const ht_dispatch_record *recs, int n);
/* Calls fn for the newest `newest` records of a computation (0: all), oldest of them first. A
 * database older than the log has none. fn returns nonzero to stop. */
typedef int (*ht_dispatch_visit_fn)(const ht_dispatch_record *rec, void *ctx);
ht_status ht_store_each_dispatch_log(ht_store *st, const char *computation, int64_t newest, ht_dispatch_visit_fn fn,
                                     void *ctx);

/* Host<->device transfer tables (ht_transfer_table, hetune/measure.h), keyed by the device's
 * fingerprint. put replaces the device's previous table (and stores the device) in one
 * transaction; a table with no points (a host device) leaves no rows. get: *found = 0 when the
 * device has no points, as in a database older than the transfers table. */
ht_status ht_store_put_transfers(ht_store *st, const ht_device_info *info, const ht_transfer_table *t);
ht_status ht_store_get_transfers(ht_store *st, const ht_device_info *info, ht_transfer_table *out, int *found);

/* A device's power figures (ht_device_power), keyed by its fingerprint: put replaces the device's
 * earlier ones (and stores the device). get: *found = 0 when there are none (as in a database
 * older than the table); *measured_at (may be NULL) is when they were stored, Unix seconds. */
ht_status ht_store_put_power(ht_store *st, const ht_device_info *info, const ht_device_power_info *p);
ht_status ht_store_get_power(ht_store *st, const ht_device_info *info, ht_device_power_info *out, double *measured_at,
                             int *found);

/* Exports. CSV: one row per evaluation, a header row, parameters as columns when one kernel is
 * selected. T4: the results JSON schema shared by Kernel Tuner, KTT and BAT
 * (schema_version, results[] with timestamp, configuration, times, compile_time, invalidity, ...). */
ht_status ht_store_export_csv(ht_store *st, const ht_eval_filter *f, FILE *out);
ht_status ht_store_export_t4(ht_store *st, const ht_eval_filter *f, FILE *out);
/* Kernel Tuner's cache file (tune_kernel(cache=...), replayed by its simulation mode), times in
 * milliseconds. The filtered evaluations must be of one kernel, device and problem (else an error
 * naming two of them); a config measured more than once keeps its latest result. */
ht_status ht_store_export_kt_cache(ht_store *st, const ht_eval_filter *f, FILE *out);
/* A StarPU 1.3 history-based performance model file (docs/interop.md): one entry per problem size,
 * the samples of its fastest successful config, in microseconds. The filtered evaluations must be
 * of one kernel and one c, opencl or cuda device (else an error naming two of them, or the device). */
ht_status ht_store_export_starpu_perfmodel(ht_store *st, const ht_eval_filter *f, FILE *out);

#ifdef __cplusplus
}
#endif
#endif
