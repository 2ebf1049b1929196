/* Prediction bands: how far measured times fall from a model kind's out-of-sample predictions, as
 * ratios measured / predicted, so a prediction p comes with "between lo*p and hi*p, with the
 * stated coverage". Two bands, because a model errs more outside its training sizes than inside:
 * interpolation from k-fold cross-validation over rows, extrapolation from hold-outs of the
 * largest training sizes, one and two sizes beyond the rest (bench/prediction/bands.sh checks
 * both on held-out data; one step alone held 68% of the hold-out rows for an 80% band, pooling
 * one and two steps 80%). */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hetune/model.h"
#include "model/model_util.h"

enum { BAND_FOLDS = 5, BAND_MIN_SIZES = 3 };

ht_status ht_band_from_predictions(const double *y, const double *pred, int n, double coverage, ht_band *out) {
  memset(out, 0, sizeof *out);
  out->coverage = coverage;
  if (!(coverage > 0 && coverage < 1)) return ht_error(HT_ERR_INVALID, "band coverage %g: expected 0 < c < 1", coverage);
  double *r = malloc(((size_t)n + 1) * sizeof *r);
  if (!r) return ht_error(HT_ERR_NOMEM, "out of memory");
  int m = 0;
  for (int i = 0; i < n; i++)
    if (pred[i] > 0 && isfinite(pred[i]) && y[i] > 0) r[m++] = y[i] / pred[i];
  if (m > 0) {
    qsort(r, (size_t)m, sizeof *r, ht_stat_cmp_double);
    /* the order statistics around the two tails, no interpolation: with few rows the band widens
     * (the 1e-9 keeps 0.1 * 20 from flooring to 1 through rounding) */
    int lo = (int)floor((1 - coverage) / 2 * (m - 1) + 1e-9), hi = (int)ceil((1 + coverage) / 2 * (m - 1) - 1e-9);
    out->lo = r[lo];
    out->hi = r[hi];
    out->n = m;
  }
  free(r);
  return HT_OK;
}

static ht_status interpolation_band(const char *kind, const ht_dataset *d, const char *options, uint64_t seed,
                                    double coverage, ht_band *out) {
  memset(out, 0, sizeof *out);
  if (d->n_rows < 2 * BAND_FOLDS) return HT_OK;
  double *pred = malloc((size_t)d->n_rows * sizeof *pred);
  if (!pred) return ht_error(HT_ERR_NOMEM, "out of memory");
  ht_status st = ht_model_cross_validate(kind, d, options, BAND_FOLDS, seed, pred);
  if (!st) st = ht_band_from_predictions(d->y, pred, d->n_rows, coverage, out);
  free(pred);
  return st;
}

/* Appends to y and pred (room for d->n_rows more) the held-out rows of the n_largest largest
 * sizes, predicted by kind trained on the others. */
static ht_status extrapolate(const char *kind, const ht_dataset *d, const char *options, uint64_t seed, int n_largest,
                             double *y, double *pred, int *n) {
  int *train, *test, n_train, n_test;
  ht_status st = ht_dataset_split_largest(d, n_largest, &train, &n_train, &test, &n_test);
  if (!st) st = ht_model_holdout(kind, d, options, seed, train, n_train, test, n_test, pred + *n);
  for (int k = 0; !st && k < n_test; k++) y[(*n)++] = d->y[test[k]];
  free(train);
  free(test);
  return st;
}

/* Predicting the largest size from the others, and (with 4 sizes or more) the two largest: one
 * and two steps beyond the training sizes, pooled. */
static ht_status extrapolation_band(const char *kind, const ht_dataset *d, const char *options, uint64_t seed,
                                    double coverage, ht_band *out) {
  memset(out, 0, sizeof *out);
  int sizes = mu_distinct_work(d, BAND_MIN_SIZES + 1);
  if (sizes < BAND_MIN_SIZES) return HT_OK;
  double *y = malloc(2 * ((size_t)d->n_rows + 1) * sizeof *y), *pred = malloc(2 * ((size_t)d->n_rows + 1) * sizeof *pred);
  int n = 0;
  ht_status st = y && pred ? extrapolate(kind, d, options, seed, 1, y, pred, &n) : ht_error(HT_ERR_NOMEM, "out of memory");
  if (!st && sizes > BAND_MIN_SIZES) st = extrapolate(kind, d, options, seed, 2, y, pred, &n);
  if (!st) st = ht_band_from_predictions(y, pred, n, coverage, out);
  free(y);
  free(pred);
  return st;
}

ht_status ht_model_bands(const char *kind, const ht_dataset *d, const char *options, uint64_t seed, double coverage,
                         ht_band *interp, ht_band *extrap) {
  ht_status st = interpolation_band(kind, d, options, seed, coverage, interp);
  if (!st) st = extrapolation_band(kind, d, options, seed, coverage, extrap);
  return st;
}

/* ---- a stored model's bands, from its provenance ---- */

static void band_of(json_t *prov, const char *key, double coverage, ht_band *b) {
  json_t *r = json_object_get(prov, key);
  double lo = json_number_value(json_array_get(r, 0)), hi = json_number_value(json_array_get(r, 1));
  if (json_is_array(r) && json_array_size(r) == 2 && lo > 0 && hi >= lo && isfinite(hi))
    *b = (ht_band){coverage, lo, hi, 1};
}

static double number_or_nan(json_t *prov, const char *key) {
  json_t *v = json_object_get(prov, key);
  return json_is_number(v) ? json_number_value(v) : NAN;
}

ht_status ht_model_reach_parse(const char *provenance_json, ht_model_reach *out) {
  memset(out, 0, sizeof *out);
  out->work_min = out->work_max = NAN;
  if (!provenance_json || !*provenance_json) return HT_OK;
  json_error_t e;
  json_t *p = json_loads(provenance_json, 0, &e);
  if (!p) return ht_error(HT_ERR_PARSE, "model provenance: line %d: %s", e.line, e.text);
  out->work_min = number_or_nan(p, "work_min");
  out->work_max = number_or_nan(p, "work_max");
  double coverage = number_or_nan(p, "band_coverage");
  if (coverage > 0 && coverage < 1) {
    band_of(p, "band_interp", coverage, &out->interp);
    band_of(p, "band_extrap", coverage, &out->extrap);
  }
  json_decref(p);
  return HT_OK;
}

const ht_band *ht_model_reach_band(const ht_model_reach *r, double work, int *inside) {
  int in = work >= r->work_min && work <= r->work_max;
  if (inside) *inside = in;
  const ht_band *b = in ? &r->interp : &r->extrap;
  return b->n ? b : NULL;
}
