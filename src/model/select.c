/* Model kind "auto": picks, on the training data alone, the kind whose predictions of an inner
 * validation set have the lowest mean absolute percentage error, then fits it on all the data.
 * The validation set is the largest problem size when the data has at least 4 distinct sizes (the
 * extrapolation the dispatcher meets when a program grows), else 5-fold cross-validation.
 *   candidates=a+b+...   kinds to try (default gbt+linear+starpu+ranking+mlp+knn)
 *   by=error|penalty     what "best" means on the validation set: the lowest mean error (default),
 *                        or the lowest best-config penalty (ties: the lower error), for a model
 *                        whose use is choosing the config
 *   validate=last|two    the largest size alone (default), or the mean over the largest and the
 *                        second largest, each predicted from the sizes below it (two extrapolation
 *                        steps, as the hold-out of the two largest sizes asks; at least 5 sizes)
 * No other option is accepted: each candidate runs with its own defaults. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hetune/model.h"
#include "model/model_select.h"
#include "model/model_util.h"

typedef struct validation {
  double error, penalty; /* mean APE and mean best-config penalty, %; INFINITY when not fitted */
} validation;

/* The validation rows' best-config penalty (their groups' configs ranked by pred): the rows test
 * of d, or all of d when test is NULL (cross-validation predicted every row). */
static double penalty_of(const ht_dataset *d, const int *test, int n_test, const double *pred) {
  ht_dataset *sub = NULL;
  ht_accuracy a;
  if (test && ht_dataset_subset(d, test, n_test, &sub)) return INFINITY;
  double pen = ht_accuracy_compute(sub ? sub : d, pred, &a) ? INFINITY : a.penalty_mean;
  ht_dataset_destroy(sub);
  return pen;
}

/* Mean APE (and, when asked, penalty) of kind fitted on train and predicting test (NULL: 5-fold
 * cross-validation over all rows); INFINITY when it cannot be fitted. */
static validation score_fold(const char *kind, const ht_dataset *d, uint64_t seed, const int *train, int n_train,
                             const int *test, int n_test, int want_penalty) {
  validation v = {INFINITY, INFINITY};
  double *pred = malloc((size_t)d->n_rows * sizeof *pred);
  if (!pred) return v;
  ht_status st;
  if (test) st = ht_model_holdout(kind, d, "", seed, train, n_train, test, n_test, pred);
  else st = d->n_rows >= 5 ? ht_model_cross_validate(kind, d, "", 5, seed, pred) : HT_ERR_INVALID;
  if (!st) {
    double sum = 0;
    for (int k = 0; k < n_test; k++) {
      int i = test ? test[k] : k;
      sum += fabs(pred[k] - d->y[i]) / d->y[i];
    }
    v.error = isfinite(sum) ? 100 * sum / n_test : INFINITY;
    if (want_penalty && isfinite(v.error)) v.penalty = penalty_of(d, test, n_test, pred);
  }
  free(pred);
  return v;
}

/* The validation folds, split once for every candidate: the largest size predicted from the
 * others, and with validate=two the second largest from the sizes below it; none (5-fold
 * cross-validation) with fewer than 4 sizes. */
typedef struct folds {
  int *train1, *test1, n_train1, n_test1; /* test1 NULL: cross-validation */
  int *train2, *test2, n_train2, n_test2; /* test2 NULL: no second fold */
} folds;

static void folds_free(folds *f) {
  free(f->train1), free(f->test1), free(f->train2), free(f->test2);
}

static ht_status folds_make(const ht_dataset *d, int two, folds *f) {
  *f = (folds){0};
  int sizes = mu_distinct_work(d, 5);
  if (sizes < 4) return HT_OK;
  ht_status st = ht_dataset_split_largest(d, 1, &f->train1, &f->n_train1, &f->test1, &f->n_test1);
  if (st || !two || sizes < 5) return st;
  /* The two largest sizes minus the largest's rows: the second largest. */
  st = ht_dataset_split_largest(d, 2, &f->train2, &f->n_train2, &f->test2, &f->n_test2);
  char *largest = st ? NULL : calloc((size_t)d->n_rows, 1);
  if (!st && !largest) st = ht_error(HT_ERR_NOMEM, "out of memory");
  if (!st) {
    for (int k = 0; k < f->n_test1; k++) largest[f->test1[k]] = 1;
    int n = 0;
    for (int k = 0; k < f->n_test2; k++)
      if (!largest[f->test2[k]]) f->test2[n++] = f->test2[k];
    f->n_test2 = n;
  }
  free(largest);
  return st;
}

/* One kind on the folds (the mean over them); the penalty only when asked. */
static validation validate(const char *kind, const ht_dataset *d, uint64_t seed, int want_penalty, const folds *f) {
  int n_test = f->test1 ? f->n_test1 : d->n_rows;
  validation v = score_fold(kind, d, seed, f->train1, f->n_train1, f->test1, n_test, want_penalty);
  if (f->test2 && isfinite(v.error)) {
    validation w = score_fold(kind, d, seed, f->train2, f->n_train2, f->test2, f->n_test2, want_penalty);
    v.error = (v.error + w.error) / 2;
    v.penalty = (v.penalty + w.penalty) / 2;
  }
  return v;
}

/* a better than b under the criterion: lower penalty (ties: lower error), or lower error. */
static int better(validation a, validation b, int by_penalty) {
  if (!isfinite(a.error)) return 0;
  if (!by_penalty || a.penalty == b.penalty) return a.error < b.error;
  return a.penalty < b.penalty;
}

ht_status ht_model_select(const ht_dataset *d, const char *options, uint64_t seed, char *chosen, size_t len,
                          double *score) {
  ht_options *opt;
  ht_status st = ht_options_parse(options, &opt);
  if (st) return ht_error_prefix(st, "model auto: ");
  char list[512];
  snprintf(list, sizeof list, "%s", ht_options_str(opt, "candidates", "gbt+linear+starpu+ranking+mlp+knn"));
  int asked = ht_options_str(opt, "candidates", NULL) != NULL; /* a kind skipped from the user's list is a warning */
  const char *by = ht_options_str(opt, "by", "error"), *how = ht_options_str(opt, "validate", "last");
  int by_penalty = strcmp(by, "penalty") == 0, two = strcmp(how, "two") == 0;
  if (!by_penalty && strcmp(by, "error") != 0)
    st = ht_error(HT_ERR_INVALID, "model auto: by=%s: expected by=error or by=penalty", by);
  else if (!two && strcmp(how, "last") != 0)
    st = ht_error(HT_ERR_INVALID, "model auto: validate=%s: expected validate=last or validate=two", how);
  if (st) {
    ht_options_destroy(opt);
    return st;
  }
  char *unused = ht_options_unused(opt);
  ht_options_destroy(opt);
  if (unused) {
    st = ht_error(HT_ERR_INVALID, "model auto: unknown option(s) %s (only candidates=a+b+..., by=error|penalty and "
                  "validate=last|two)",
                  unused);
    free(unused);
    return st;
  }
  *score = INFINITY;
  chosen[0] = 0;
  folds f;
  if ((st = folds_make(d, two, &f))) return folds_free(&f), ht_error_prefix(st, "model auto: ");
  validation best = {INFINITY, INFINITY};
  char *save = NULL;
  for (char *k = strtok_r(list, "+", &save); k; k = strtok_r(NULL, "+", &save)) {
    if (!ht_model_kind_find(k)) {
      st = ht_model_kind_check(k);
      if (st == HT_ERR_UNSUPPORTED) { /* left out of this build: the others compete */
        ht_log(asked ? 1 : 2, "model auto: skipped %s: %s", k, ht_last_error());
        continue;
      }
      folds_free(&f);
      return ht_error(HT_ERR_NOTFOUND, "model auto: unknown candidate '%s'", k);
    }
    validation v = validate(k, d, seed, by_penalty, &f);
    ht_log(2, "model auto: %s validation error %.2f%%, penalty %.2f%%", k, v.error, v.penalty); /* inf: not asked */
    if (better(v, best, by_penalty)) {
      best = v;
      *score = v.error;
      snprintf(chosen, len, "%s", k);
    }
  }
  folds_free(&f);
  if (!chosen[0]) return ht_error(HT_ERR_INVALID, "model auto: no candidate could be fitted to %d rows", d->n_rows);
  return HT_OK;
}
