/* Prediction: datasets of measured times with their feature vectors, predictors behind one
 * interface (one file each in src/model/, one row in the registry), and their evaluation
 * (docs/prediction.md). */
#ifndef HETUNE_MODEL_H
#define HETUNE_MODEL_H

#include <stdint.h>

#include "hetune/core.h"
#include "hetune/device.h"
#include "hetune/spec.h"
#include "hetune/store.h"
#include "hetune/measure.h" /* ht_bandwidth_curve */
#include "hetune/options.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most features a dataset or model may have. */
#define HT_MODEL_MAX_FEATURES 128

/* ---- datasets ---- */

/* Rows of (features -> measured time). Rows measured for the same problem (one kernel, device and
 * assignment of problem sizes) share a group: ranking metrics compare the configs of one group. */
typedef struct ht_dataset {
  int n_rows, n_features;
  char **names;      /* n_features feature names ("size:N", "work", "param:TX", "ptx:l_mr", ...) */
  double *x;         /* n_rows x n_features, row-major */
  double *y;         /* measured time in seconds, > 0 */
  int *group;        /* 0 .. n_groups-1 */
  int n_groups;
  double *work;      /* the row's problem size as one number (product of the problem sizes) */
  char **group_label; /* n_groups texts "kernel device problem" (may be NULL) */
  int n_measured;    /* measurements read: more than n_rows where repeats were merged into their median */
  /* Label noise seen in the repeats: |a - b| / min(a, b) over every pair of measurements of one
   * row, median and 90th percentile (NaN without repeats). No model beats its labels' agreement. */
  int n_repeat_pairs;
  double repeat_diff_median, repeat_diff_p90;
  /* Row i's first n_repeats[i] (<= HT_DATASET_REPEATS) measurements in the order read; NULL when
   * no row was measured twice. ht_accuracy_floor splits them. */
  double *repeats; /* n_rows x HT_DATASET_REPEATS */
  int *n_repeats;
  /* Per data source (each CSV file, in the order given), when there are several: the median over
   * its measurements of repeated rows of time / the row's median (NaN when it has none). A
   * recording made while the machine ran slower or faster as a whole (drift between hours) stands
   * away from 1; the merged medians then mix two states of the machine. NULL for one source. */
  int n_sources;
  double *source_ratio;
  /* The device's read bandwidth by working set (n = 0: unknown). When known, models fitted on the
   * dataset keep a roofline floor: no prediction is faster than the row's "bytes" feature read at
   * that bandwidth (docs/prediction.md, "The roofline floor"). Subsets copy it. */
  ht_bandwidth_curve bandwidth;
} ht_dataset;
#define HT_DATASET_REPEATS 16

/* An empty dataset with room for n_rows x n_features (names NULL, values 0). */
ht_status ht_dataset_create(int n_rows, int n_features, ht_dataset **out);
void ht_dataset_destroy(ht_dataset *d);
/* The rows listed (in that order), groups renumbered densely. */
ht_status ht_dataset_subset(const ht_dataset *d, const int *rows, int n, ht_dataset **out);
/* Index of a feature by name, -1 when absent. */
int ht_dataset_feature(const ht_dataset *d, const char *name);

/* ---- features (docs/prediction.md lists them) ---- */

/* The feature layout of one spec on one device (dev may be NULL: no device:* features). The spec
 * must outlive the set. */
typedef struct ht_feature_set ht_feature_set;
ht_status ht_features_create(const ht_spec *spec, const ht_device_info *dev, ht_feature_set **out);
void ht_features_destroy(ht_feature_set *fs);
int ht_features_count(const ht_feature_set *fs);
const ht_spec *ht_features_spec(const ht_feature_set *fs);
const char *ht_features_name(const ht_feature_set *fs, int i);
/* x (ht_features_count values) for problem sizes (spec order) and parameter values (spec order). */
ht_status ht_features_compute(ht_feature_set *fs, const int64_t *sizes, const ht_value *params, double *x);
/* "M=1024,N=512" -> sizes (unnamed sizes keep the spec's values); "TX=16,TY=8" -> params (every
 * parameter must be given). where names the text in messages. */
ht_status ht_features_parse_problem(const ht_spec *s, const char *text, int64_t *sizes, const char *where);
ht_status ht_features_parse_config(const ht_spec *s, const char *text, ht_value *params, const char *where);

/* ---- building datasets from measurements ---- */

/* Successful evaluations of the spec's kernel (matched by name) from hetune export CSV files or a
 * store, optionally of one device id only, as feature rows; one group per (device, problem).
 * Rows of other kernels are skipped; a file with no usable row is an error naming it. */
ht_status ht_dataset_from_csv(ht_feature_set *fs, const char *const *paths, int n_paths, const char *device_id,
                              ht_dataset **out);
ht_status ht_dataset_from_store(ht_feature_set *fs, ht_store *st, const char *device_id, ht_dataset **out);

/* ---- models ---- */

/* A predictor of one number from a feature vector. The wrapper (ht_model_*) chooses what the
 * number is (log time by default) and feeds the model a dataset whose y holds it; models never
 * see the transform. fit must not keep pointers into the dataset. A model that cannot be fitted
 * to the data (too few rows, singular system) returns HT_ERR_INVALID with a reason. */
typedef struct ht_model_ops {
  const char *name;    /* "linear", "knn", "mlp", "elm", "svr", "gbt", "gp", "starpu", "ranking", ... */
  const char *summary; /* one line for --help */
  /* The target the wrapper uses unless told otherwise: "log" (log time), "rate" (log of time per
   * unit of work) or "time" (seconds). */
  const char *default_target;
  ht_status (*fit)(void **state, const ht_dataset *train, const ht_options *opt, uint64_t seed);
  double (*predict)(const void *state, const double *x);
  /* Serialisation for the store: bytes the same build's load() turns back into the model.
   * load() of truncated or corrupt bytes returns HT_ERR_PARSE, never crashes. */
  ht_status (*save)(const void *state, ht_buf *out);
  ht_status (*load)(void **state, const char *data, size_t len);
  void (*destroy)(void *state);
  /* 0: the wrapper hands the model log10(1 + v) of every feature that is non-negative and spans
   * at least a factor 4 in training (sizes, work, bytes, tile sizes), so inputs scaled linearly still
   * extrapolate to larger problems; 1: the model gets raw values (it models sizes itself). */
  int raw_inputs;
  /* Optional (NULL for most kinds): the model's own uncertainty about its prediction at x, as a
   * standard deviation of the predicted number (same units). A surrogate that a search strategy
   * consults (gp) has one; ht_model_predict_interval turns it into times. */
  double (*predict_sd)(const void *state, const double *x);
} ht_model_ops;

int ht_model_kind_count(void);
const ht_model_ops *ht_model_kind_at(int i);
const ht_model_ops *ht_model_kind_find(const char *name);
/* HT_OK for a kind of this build or "auto"; HT_ERR_UNSUPPORTED naming the library and build option
 * for a kind this build left out (gbt without XGBoost, svr without libsvm); HT_ERR_NOTFOUND else. */
ht_status ht_model_kind_check(const char *name);

/* A fitted model with its target transform and routing (one sub-model per decade of work when
 * fitted with route=decade). Options are the wrapper's (target=log|rate|time, route=none|decade,
 * route_min=N) plus the model's own; an option nobody knows is an error. */
typedef struct ht_model ht_model;
/* kind "auto" picks the kind with the lowest error on an inner validation of train (the largest
 * problem size held out, or 5-fold CV; option candidates=gbt+linear+...) and fits it; the
 * model's kind is then the chosen one and its options say so. */
ht_status ht_model_fit(const char *kind, const ht_dataset *train, const char *options, uint64_t seed,
                       ht_model **out);
/* Predicted time in seconds for one feature vector laid out as the training dataset's; never below
 * the model's roofline floor (ht_model_roofline_floor) when it has one. */
double ht_model_predict(const ht_model *m, const double *x);
/* The prediction with the model's own uncertainty, for kinds that have one (predict_sd: gp): *time
 * as ht_model_predict gives it, *lo and *hi the times z standard deviations below and above it in
 * the model's target (log time or log rate: lo = time e^(-z sd), hi = time e^(z sd)), none below
 * the roofline floor. HT_ERR_UNSUPPORTED for a kind without (ht_model_has_sd says which). Unlike
 * ht_model_bands, which measures how far out-of-sample predictions fell, this is the model's
 * belief, cheap enough for a search strategy to ask per candidate. */
int ht_model_has_sd(const ht_model *m);
ht_status ht_model_predict_interval(const ht_model *m, const double *x, double z, double *time, double *lo,
                                    double *hi);
const char *ht_model_kind(const ht_model *m);
const char *ht_model_options(const ht_model *m);
int ht_model_n_features(const ht_model *m);
const char *ht_model_feature_name(const ht_model *m, int i);
/* 1 when the model keeps a roofline floor (its training dataset had a bandwidth curve and a
 * "bytes" feature), with the floor's k (>= 1) and the curve's points; 0 otherwise. */
int ht_model_roofline(const ht_model *m, double *k, int *points);
/* The floor's seconds for x (0 without a floor); ht_model_predict never returns less. */
double ht_model_roofline_floor(const ht_model *m, const double *x);
/* Bytes that ht_model_load() turns back into the model (feature names included). */
ht_status ht_model_save(const ht_model *m, ht_buf *out);
ht_status ht_model_load(const char *data, size_t len, ht_model **out);
void ht_model_destroy(ht_model *m);

/* ---- evaluation ---- */

/* Accuracy of predictions pred[i] of d->y[i]. Ranking metrics compare the rows of each group
 * (the configs of one problem); groups with fewer than 2 rows are skipped there. */
typedef struct ht_accuracy {
  int n_rows, n_groups;          /* rows scored; groups used by the ranking metrics */
  double mape_mean, mape_max;    /* 100 |pred - y| / y */
  double r2;                     /* coefficient of determination on log time */
  double spearman;               /* mean over groups of the rank correlation of pred and y */
  double top1;                   /* fraction of groups whose predicted-fastest row is the fastest */
  double penalty_mean, penalty_max; /* 100 (y of the predicted-fastest row / fastest y - 1) */
} ht_accuracy;
ht_status ht_accuracy_compute(const ht_dataset *d, const double *pred, ht_accuracy *out);
/* The labels' own floor: the median of half of each row's repeated measurements taken as the
 * prediction of the median of the other half, scored as ht_accuracy_compute scores a model, every
 * field averaged over every split of the first m measurements into m/2 and m - m/2, both ways (m:
 * the fewest any row has, at most HT_DATASET_REPEATS): how well the measurements agree with
 * themselves. A model judged by the median of all m faces steadier labels and may score better;
 * one far worse is limited by itself, not by the measurements. *m = 0 and out zeroed when some
 * row was measured only once. */
ht_status ht_accuracy_floor(const ht_dataset *d, ht_accuracy *out, int *m);

/* Out-of-fold predictions of k-fold cross-validation over rows shuffled by seed (pred: n_rows). */
ht_status ht_model_cross_validate(const char *kind, const ht_dataset *d, const char *options, int folds,
                                  uint64_t seed, double *pred);
/* Rows whose work is among the n_largest largest distinct work values (test, extrapolation)
 * and the rest (train); malloc'ed index arrays. */
ht_status ht_dataset_split_largest(const ht_dataset *d, int n_largest, int **train, int *n_train, int **test,
                                   int *n_test);
/* Fits on the train rows and predicts the test rows into pred (n_test). */
ht_status ht_model_holdout(const char *kind, const ht_dataset *d, const char *options, uint64_t seed,
                           const int *train, int n_train, const int *test, int n_test, double *pred);
/* A prediction band: a measured time falls between lo and hi times the prediction for the stated
 * share (coverage) of the n out-of-sample rows it was estimated on; n = 0: no band. */
typedef struct ht_band {
  double coverage, lo, hi;
  int n;
} ht_band;
/* The band of out-of-sample predictions pred of y (rows with a non-positive prediction skipped). */
ht_status ht_band_from_predictions(const double *y, const double *pred, int n, double coverage, ht_band *out);
/* The bands of kind on d: interp from 5-fold cross-validation over rows (sizes seen in training),
 * extrap from predicting the largest size from the others and, with 4 sizes or more, the two
 * largest from the others, pooled (sizes beyond the training range). A band left with n = 0 needs
 * more data: 10 rows, or 3 distinct sizes. */
ht_status ht_model_bands(const char *kind, const ht_dataset *d, const char *options, uint64_t seed, double coverage,
                         ht_band *interp, ht_band *extrap);
/* Where a stored model is reliable, as `hetune model train` records it in the model's provenance
 * (JSON keys work_min, work_max, band_coverage, band_interp, band_extrap): the training problems'
 * range of work (the product of the problem sizes) and the two bands of ht_model_bands. */
typedef struct ht_model_reach {
  double work_min, work_max; /* NAN when not recorded */
  ht_band interp, extrap;    /* n = 0 when not recorded */
} ht_model_reach;
/* Reads the reach from a provenance text; a text without those keys (or NULL: a model stored
 * without provenance) gives no range and no bands. HT_ERR_PARSE for text that is not JSON. */
ht_status ht_model_reach_parse(const char *provenance_json, ht_model_reach *out);
/* The band for a problem of this work: interp inside the training range, extrap beyond (*inside
 * says which; may be NULL). NULL when that band was not recorded. */
const ht_band *ht_model_reach_band(const ht_model_reach *r, double work, int *inside);
/* Median nanoseconds per ht_model_predict over calls calls cycling through d's rows. */
double ht_model_latency_ns(const ht_model *m, const ht_dataset *d, int calls);

/* Minimum-redundancy maximum-relevance ranking (reference 003): features and y discretised into
 * bins equal-frequency bins, greedy MID (relevance minus mean redundancy, mutual information in
 * bits). order[k] is the k-th feature chosen, score[k] its criterion; constant features last. */
ht_status ht_mrmr_rank(const ht_dataset *d, int bins, int *order, double *score);

#ifdef __cplusplus
}
#endif
#endif
