/* Shared between the dispatch layer's files; not installed. */
#ifndef HETUNE_DISPATCH_INTERNAL_H
#define HETUNE_DISPATCH_INTERNAL_H

#include <stdint.h>

#include "device/backend.h"
#include "hetune/dispatch.h"
#include "hetune/expr.h"
#include "hetune/measure.h"
#include "hetune/model.h"
#include "spec/spec_struct.h"

enum { HTD_MAX_VARIANTS = 32, HTD_WINDOW_MAX = 64, HTD_MAX_SIZES = 8 };

/* Measured times of one variant at one call size (the size's bucket representative): the newest
 * samples in a ring, their median kept up to date. */
typedef struct htd_point {
  double work;     /* the call's work (the spec's flops, or the product of the sizes) */
  uint64_t bucket; /* hash of the bucketed sizes */
  int64_t rep[HTD_MAX_SIZES]; /* the bucket's representative sizes */
  int n, next;     /* samples held (<= window), next slot to write */
  double samples[HTD_WINDOW_MAX]; /* in arrival order, a ring */
  double sorted[HTD_WINDOW_MAX];  /* the same, in increasing order: the median without a sort */
  double median;
  int from_store;  /* 1: kernel times of tuning runs (+ modelled transfers), 0: calls measured here */
  int censored;    /* 1: only lower bounds (a race's stopped loser): the first measurement replaces them */
  /* re-probing a variant that lost here (decide.c, maybe_reprobe_loser) */
  int64_t probed_at;  /* the computation's call count when it last ran here */
  int reprobe_every;  /* calls between re-probes (0: HTD_REPROBE), doubling while they find it slower */
  int reprobing;      /* calls of a re-probe still to run here (HTD_REPROBE_CALLS: none run yet; 0: none) */
  double reprobe_bar; /* the winner's time when the re-probe was decided */
  double reprobe_best; /* the fastest of the re-probe's calls so far */
} htd_point;

/* What a variant is known to take: its measured points, sorted by work. */
typedef struct htd_history {
  int n, cap;
  htd_point *pts;
} htd_history;

/* The concrete configs a "best" variant has run with (one ht_variant each). */
typedef struct htd_config_run {
  char *config;
  ht_variant *run;
} htd_config_run;

/* A config tuned for one size (from the store): what a "best" variant runs near that size. */
typedef struct htd_tuned {
  double work;
  char *config;
} htd_tuned;

/* A "best" variant's model-chosen config for one size bucket. */
typedef struct htd_argmin_entry {
  uint64_t key;
  char *config;
} htd_argmin_entry;

typedef struct htd_variant {
  const ht_spec *spec;
  ht_spec *owned_spec;   /* loaded from a computation file */
  char *device_id, *config; /* config: as given ("best" or a config text) */
  int best;              /* config "best": the stored best config for the call's size */
  ht_exec *ex;           /* shared by the variants of one device (owned by the computation) */
  char label[192];
  char key[128];         /* the variant across programs: kernel identity/device fingerprint/config */
  htd_history hist;
  htd_config_run *runs;
  int n_runs;
  char *fixed_config;    /* best: the config used when the store knows none for the size */
  htd_tuned *tuned;      /* best: the tuned configs by size */
  int n_tuned;
  htd_argmin_entry *argmin; /* best, nothing tuned, a model: its fastest config per bucket */
  int n_argmin;
  /* drift: the last ratios measured / expected */
  double ratio[8];
  int n_ratio, next_ratio;
  int explored;          /* times run as an exploration */
  double drift_f;        /* the factor drift rescaled its history by, in all (1: none) */
  int64_t probed_at;     /* the computation's call count when it was last run or re-probed */
  int reprobe_every;     /* calls between re-probes: doubles while they find it slow */
  double correction;     /* bias factor applied to predictions that are not measurements (1: none) */
  ht_transfer_table *transfers; /* copies to and from its device by size (NULL: none to add) */
  ht_model *model;       /* a stored model of this kernel on this device (NULL: none) */
  void *model_fs;        /* its feature set (ht_feature_set *) */
  ht_model_reach model_reach; /* its training sizes and prediction bands, when recorded */
} htd_variant;

/* One decision cache slot. */
typedef struct htd_slot {
  uint64_t key; /* 0: empty */
  ht_decision d;
  /* Sampled feedback of short calls (htd_feedback_skip): one call of this decision in sample_every
   * is fed back; sample_left counts down to it. 0: not settled yet (every call is fed back). */
  int sample_every, sample_left;
  int64_t reprobe_at; /* the first call at which a losing variant may be due a re-probe here (0: unknown) */
  uint32_t gen;       /* the cache's generation when it was written: held while the two are equal */
} htd_slot;

typedef struct htd_cache {
  htd_slot *slots;
  uint32_t cap, used; /* cap: a power of two */
  uint32_t changes;   /* bumped by every put, drop and clear: a slot pointer kept is valid while it holds */
  uint32_t gen;       /* bumped by every clear: the slots of earlier generations are empty */
} htd_cache;

/* The previous call, repeated without deciding again (decide.c) while nothing it rests on has
 * changed: the cache (changes), the open log entries (log_changes) and the standing decision. */
typedef struct htd_repeat {
  int armed;
  int64_t sizes[HTD_MAX_SIZES];
  int64_t rep[HTD_MAX_SIZES]; /* their bucket's representative sizes, and its key */
  uint64_t key;
  htd_slot *slot;     /* the cached decision it follows */
  ht_variant *run;    /* the execution layer's object that runs it */
  int entry;          /* the open log entry its skipped calls count in; -1: no store */
  uint32_t cache_changes, log_changes;
  int64_t reprobe_at; /* repeated only while calls is below it */
} htd_repeat;

typedef enum htd_bucket_kind { HTD_BUCKET_EXACT = 0, HTD_BUCKET_LOG2, HTD_BUCKET_DECADE } htd_bucket_kind;

/* A selector: estimates every variant's time for a call and picks one (one per file, registered in
 * selector.c). */
typedef struct htd_estimate {
  double kernel_s, transfer_s, total_s, lo, hi; /* NAN when unknown */
  ht_decision_source source;
  int calibrated; /* 0: nothing is known of the variant's time */
  int bound;      /* 1: total_s is only a lower bound here (a race's stopped loser) */
} htd_estimate;

typedef struct htd_selector_ops {
  const char *name;
  const char *summary;
  /* Fills est[i] for every variant at sizes (the bucket representative); returns the chosen index,
   * or -1 with an error set. A selector that needs no estimates may leave them unknown. */
  int (*choose)(ht_computation *c, const int64_t *sizes, htd_estimate *est);
} htd_selector_ops;

const htd_selector_ops *htd_selector_find(const char *name);
/* "history, model, rule" for messages */
const char *htd_selector_names(void);

/* Logged calls: a run of calls alike (same variant, config, sizes and decision source), written
 * to the store as one row in batches. */
enum { HTD_LOG_GROUP = 64 };
/* Log entries open at once: calls alternating between a few sizes (or variants) still group, each
 * kind with its own entry, instead of one row per call. */
enum { HTD_OPEN_GROUPS = 8 };
typedef struct htd_log_group {
  int entry;                     /* index in log, -1: this slot is free */
  double t[3][HTD_LOG_GROUP];    /* its calls' kernel, h2d and d2h times */
} htd_log_group;
typedef struct htd_log_entry {
  int variant, calls;
  int64_t skipped;    /* calls alike run but not fed back (sampled feedback): counted, not timed */
  char source;
  uint64_t bucket;
  int64_t sizes[HTD_MAX_SIZES];
  double pred_total_s, kernel_s, h2d_s, d2h_s, when;
  const char *config; /* owned by the variant's runs */
  int censored;       /* the times are lower bounds (a race's stopped loser) */
} htd_log_entry;

struct ht_computation {
  char *name;
  ht_store *st;
  int finished;
  int n_variants;
  htd_variant v[HTD_MAX_VARIANTS];
  int n_ex;
  ht_exec *ex[HTD_MAX_VARIANTS];
  const ht_spec *spec0; /* the first variant's spec: sizes and arguments every variant shares */
  /* options */
  const htd_selector_ops *selector;
  htd_bucket_kind bucket;
  int window;
  double drift, explore, regret_cap;
  double sample_below_s; /* calls settled at a median under this are fed back in samples (0: every call) */
  ht_expr *rule; /* selector "rule": an expression of the sizes giving a variant index */
  char *rule_text;
  uint64_t seed;
  ht_rng rng;
  uint64_t identity; /* hash of the name, variants and device fingerprints */
  htd_cache cache;
  const ht_static_entry *statics;
  int n_statics;
  /* the log */
  htd_log_entry *log;
  int n_log, cap_log;
  htd_log_group open[HTD_OPEN_GROUPS]; /* entries still taking calls alike */
  uint32_t log_changes;  /* bumped when an open log entry is closed or the log is written */
  htd_repeat repeat;
  int64_t calls;         /* calls run */
  int n_drifted;         /* variants whose history drift slowed (drift_f > 1) */
  /* A layer above (coexec's race) keeps its state here: destroy calls race_free(race). */
  void *race;
  void (*race_free)(void *race);
};

/* The calls a variant needs at a size before its median there is trusted: as the time a decision
 * compares, and as the yardstick drift compares calls with. A first call often pays once for what
 * later calls do not (threads started, pages touched); taken alone for the variant's time, it kept
 * a variant that would have won from ever running again. */
enum { HTD_TRUSTED_CALLS = 3 };

/* A variant whose history drift slowed is run again where it would win or come within the regret
 * cap at its speed before the drift, after HTD_REPROBE calls, then twice as many each time it is
 * still slow (up to HTD_REPROBE_MAX): a stall taken for a change of speed does not lock it out,
 * and a real slowdown costs a call in hundreds. */
enum { HTD_REPROBE = 16, HTD_REPROBE_MAX = 1024 };

/* A variant trusted slower than the winner at a size is run there again, HTD_REPROBE_CALLS calls in
 * a row, after HTD_REPROBE_CALLS * HTD_REPROBE calls times how much slower it was at its fastest
 * there (its fastest time / the winner's - 1, at least 1), then twice as many each time it is still
 * slower (up to HTD_REPROBE_MAX times that); a re-probe whose fastest call beats the winner's time
 * starts its calls there anew. Its first trusted calls may have come in a slow phase of the machine
 * (another program, a lower clock, a thread pool starting), and nothing else would ever run it
 * again. At its fastest time, the k-th re-probe costs 1 / (HTD_REPROBE * 2^k) of the winner's time
 * since the one before: 6% of the first calls, under 0.4% from the fifth re-probe on, however slow
 * the variant is. Exploration (the option explore = 0) turns it off. */
enum { HTD_REPROBE_CALLS = 2 };

/* Feeding a call back (history, drift ratios, log line) costs about 150 ns: 10% of a 1.5 us call.
 * A decision taken from the cache at a size whose window of times is full is fed back once in
 * ceil(sample_below / median) calls (at most HTD_SAMPLE_MAX), so the feedback stays near 1% of
 * calls of any length; a drift shows after that many times more calls. The count is kept in the
 * decision's cache slot: calls alternating between sizes are sampled each at its own size. */
enum { HTD_SAMPLE_MAX = 64 };

/* ---- computation.c ---- */
int64_t htd_bucket_rep(int kind, int64_t n);
/* vars (spec->n_names) with only the sizes bound, the rest 0: what buffer lengths and work read. */
void htd_size_vars(const ht_spec *spec, const int64_t *sizes, ht_value *vars);
/* The bucketed sizes into rep (the bucket's representative) and its hash. */
uint64_t htd_bucket(const ht_computation *c, const int64_t *sizes, int64_t *rep);
/* The call's work at sizes: the spec's flops expression, or the product of the sizes. */
double htd_work(const ht_spec *spec, const int64_t *sizes);
/* The product of the sizes: a model's measure of problem size (ht_dataset.work). */
double htd_problem_work(const ht_spec *spec, const int64_t *sizes);
/* Seconds to copy the buffers a variant reads in and writes out at sizes (0 on host devices). */
double htd_transfer_s(const ht_computation *c, int v, const int64_t *sizes);

/* ---- history.c ---- */
void htd_history_free(htd_history *h);
/* Adds a measured time at (work, bucket); window: samples kept. Returns the point. */
htd_point *htd_history_add(htd_history *h, double work, uint64_t bucket, const int64_t *rep, double seconds, int window,
                           int from_store);
htd_point *htd_history_find(const htd_history *h, uint64_t bucket);
/* One more measured time at an existing point. */
void htd_point_add(htd_point *p, double seconds, int window);
/* 1: times measured here by calls (not a tuning's median from the store, not a race's bound), fewer
 * than HTD_TRUSTED_CALLS of them: not yet a time to decide on or to compare calls with. */
int htd_point_untrusted(const htd_point *p);
/* Raises every sample of p below bound to bound (a censored time: at least bound). */
void htd_point_raise(htd_point *p, double bound);
/* After p->samples changed other than through htd_point_add: sorts them again, and the median. */
void htd_point_resort(htd_point *p);
/* Keeps only the sample s: the point's calls start anew (untrusted until HTD_TRUSTED_CALLS). */
void htd_point_restart(htd_point *p, double s, int window);
/* The time at work, interpolated in log-log between the nearest points (extrapolated along the
 * nearest two; one point scales by work). *exact: 1 when a point of this bucket answered. NAN
 * when there is no point. lo/hi: the band from the neighbours' sample spread. */
double htd_history_estimate(const htd_history *h, double work, uint64_t bucket, int *exact, double *lo, double *hi);
/* Multiplies every sample by f (a device that became faster or slower). */
void htd_history_scale(htd_history *h, double f);

/* ---- cache.c ---- */
void htd_cache_free(htd_cache *c);
htd_slot *htd_cache_slot(htd_cache *c, uint64_t key); /* the slot of key, or NULL */
ht_status htd_cache_put(htd_cache *c, uint64_t key, const ht_decision *d);
void htd_cache_drop(htd_cache *c, uint64_t key);
void htd_cache_clear(htd_cache *c);

/* ---- decide.c ---- */
/* The estimate of variant v at sizes from what is measured (history) or modelled, with transfers. */
void htd_estimate_variant(ht_computation *c, int v, const int64_t *sizes, uint64_t bucket, int prefer_model,
                          htd_estimate *out);
/* Estimates every variant (est[i]) and picks the fastest; an uncalibrated variant is picked first,
 * to be measured (source HT_SRC_EXPLORE). prefer_model: a model answers before interpolation. */
int htd_choose_fastest(ht_computation *c, const int64_t *sizes, int prefer_model, htd_estimate *est);
/* The config variant v runs at sizes (its own, or the best known for the size). */
const char *htd_config_for(ht_computation *c, int v, const int64_t *sizes);
int htd_argmin(const htd_estimate *est, int n, int *runner_up);
/* The execution layer's object for variant v with config (made, and compiled, on first use). */
ht_status htd_variant_for(ht_computation *c, int v, const char *config, ht_variant **out);

/* ---- tuned.c ---- */
/* Checks a variant's config on its device and puts it in canonical form; sets label and key. */
ht_status htd_variant_prepare(ht_computation *c, int v);
const char *htd_model_argmin(ht_computation *c, int v, const int64_t *rep, uint64_t key);
/* The store's tuned configs, measured kernel times and models of every variant. */
ht_status htd_tuned_load(ht_computation *c);

/* ---- feedback.c ---- */
void htd_log_init(ht_computation *c); /* no log entry open */
/* Records a run of variant v (what the decision expected in d, NULL for calibration runs). */
void htd_feedback(ht_computation *c, int v, const int64_t *sizes, const ht_decision *d, const ht_run_times *t);
/* The same with the call's bucket (key, rep) already computed. */
void htd_feedback_at(ht_computation *c, int v, const int64_t *sizes, uint64_t key, const int64_t *rep,
                     const ht_decision *d, const ht_run_times *t);
/* 1 when this call of decision d, taken from cache slot s (NULL: not from the cache), need not be
 * fed back (sampled feedback of short calls, HTD_SAMPLE_MAX): it is counted in the log all the same,
 * in entry *entry (-1: the computation has no store). */
int htd_feedback_skip(ht_computation *c, htd_slot *s, const int64_t *sizes, const ht_decision *d, int *entry);
/* The open log entry that cached calls of d at sizes are counted in (*entry; -1: the computation
 * has no store); 0 when it has a store and no such entry is open. */
int htd_log_entry_of(ht_computation *c, const int64_t *sizes, const ht_decision *d, int *entry);
/* A lower bound on variant v's time at sizes (a stopped race loser): the bucket's estimate is
 * raised to at least t's total, never lowered; logged as censored. */
void htd_feedback_censored(ht_computation *c, int v, const int64_t *sizes, const ht_run_times *t);
/* Reads earlier runs of the computation's variants from the store into their histories. */
ht_status htd_history_load(ht_computation *c);

#endif
