/* The labels' noise floor (ht_accuracy_floor): when every row was measured several times, half of
 * the measurements "predict" the other half and are scored like a model. On a noisy machine this
 * tells whether a model's penalty or Spearman is limited by the model or by the measurements. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hetune/model.h"

static void add_accuracy(ht_accuracy *sum, const ht_accuracy *a) {
  sum->mape_mean += a->mape_mean;
  sum->mape_max += a->mape_max;
  sum->r2 += a->r2;
  sum->spearman += a->spearman;
  sum->top1 += a->top1;
  sum->penalty_mean += a->penalty_mean;
  sum->penalty_max += a->penalty_max;
  sum->n_rows = a->n_rows;
  sum->n_groups = a->n_groups;
}

static void scale_accuracy(ht_accuracy *a, double f) {
  a->mape_mean *= f;
  a->mape_max *= f;
  a->r2 *= f;
  a->spearman *= f;
  a->top1 *= f;
  a->penalty_mean *= f;
  a->penalty_max *= f;
}

/* Row i's medians of the measurements in mask (into *in) and of the others among its first m. */
static void split_medians(const ht_dataset *d, int i, unsigned mask, int m, double *in, double *out) {
  double a[HT_DATASET_REPEATS], b[HT_DATASET_REPEATS];
  int na = 0, nb = 0;
  const double *t = d->repeats + (size_t)i * HT_DATASET_REPEATS;
  for (int k = 0; k < m; k++) {
    if (mask >> k & 1u) a[na++] = t[k];
    else b[nb++] = t[k];
  }
  *in = ht_stat_median(a, na);
  *out = ht_stat_median(b, nb);
}

static int fewest_repeats(const ht_dataset *d) {
  int m = HT_DATASET_REPEATS;
  for (int i = 0; i < d->n_rows; i++)
    if (d->n_repeats[i] < m) m = d->n_repeats[i];
  return m;
}

ht_status ht_accuracy_floor(const ht_dataset *d, ht_accuracy *out, int *m_out) {
  memset(out, 0, sizeof *out);
  *m_out = 0;
  int m = d->repeats && d->n_rows > 0 ? fewest_repeats(d) : 0;
  if (m < 2) return HT_OK;
  /* a copy of d whose labels become one half's medians, predicted by the other half's */
  int *rows = malloc((size_t)d->n_rows * sizeof *rows);
  double *pred = malloc((size_t)d->n_rows * sizeof *pred);
  ht_dataset *half = NULL;
  ht_status st = rows && pred ? HT_OK : ht_error(HT_ERR_NOMEM, "out of memory");
  for (int i = 0; !st && i < d->n_rows; i++) rows[i] = i;
  if (!st) st = ht_dataset_subset(d, rows, d->n_rows, &half);
  int splits = 0;
  for (unsigned mask = 1; !st && mask + 1 < 1u << m; mask++) {
    int k = __builtin_popcount(mask);
    if (k != m / 2 && k != m - m / 2) continue;
    for (int i = 0; i < d->n_rows; i++) split_medians(d, i, mask, m, &pred[i], &half->y[i]);
    ht_accuracy a;
    if (!(st = ht_accuracy_compute(half, pred, &a))) add_accuracy(out, &a);
    splits++;
  }
  if (!st && splits) {
    scale_accuracy(out, 1.0 / splits);
    *m_out = m;
  }
  ht_dataset_destroy(half);
  free(rows);
  free(pred);
  return st;
}
