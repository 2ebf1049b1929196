/* Datasets: allocation, subsets and lookup. Building them from measurements is in features.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hetune/model.h"

ht_status ht_dataset_create(int n_rows, int n_features, ht_dataset **out) {
  *out = NULL;
  if (n_rows < 0 || n_features < 0) return ht_error(HT_ERR_INVALID, "dataset of %d x %d", n_rows, n_features);
  ht_dataset *d = calloc(1, sizeof *d);
  size_t cells = (size_t)n_rows * (size_t)n_features;
  if (d) {
    d->n_rows = n_rows;
    d->n_measured = n_rows;
    d->repeat_diff_median = d->repeat_diff_p90 = NAN;
    d->n_features = n_features;
    d->names = calloc((size_t)n_features + 1, sizeof *d->names);
    d->x = calloc(cells + 1, sizeof *d->x);
    d->y = calloc((size_t)n_rows + 1, sizeof *d->y);
    d->group = calloc((size_t)n_rows + 1, sizeof *d->group);
    d->work = calloc((size_t)n_rows + 1, sizeof *d->work);
  }
  if (!d || !d->names || !d->x || !d->y || !d->group || !d->work) {
    ht_dataset_destroy(d);
    return ht_error(HT_ERR_NOMEM, "out of memory for a dataset of %d x %d", n_rows, n_features);
  }
  *out = d;
  return HT_OK;
}

void ht_dataset_destroy(ht_dataset *d) {
  if (!d) return;
  if (d->names)
    for (int j = 0; j < d->n_features; j++) free(d->names[j]);
  if (d->group_label)
    for (int g = 0; g < d->n_groups; g++) free(d->group_label[g]);
  free(d->names);
  free(d->group_label);
  free(d->x);
  free(d->y);
  free(d->group);
  free(d->work);
  free(d->repeats);
  free(d->n_repeats);
  free(d->source_ratio);
  free(d);
}

int ht_dataset_feature(const ht_dataset *d, const char *name) {
  for (int j = 0; j < d->n_features; j++)
    if (d->names[j] && strcmp(d->names[j], name) == 0) return j;
  return -1;
}

static ht_status copy_names(const ht_dataset *d, ht_dataset *s) {
  for (int j = 0; j < d->n_features; j++)
    if (d->names[j] && !(s->names[j] = ht_strdup(d->names[j]))) return ht_error(HT_ERR_NOMEM, "out of memory");
  return HT_OK;
}

/* Groups renumbered in order of first appearance, labels carried over. */
static ht_status renumber_groups(const ht_dataset *d, ht_dataset *s) {
  int *map = malloc((size_t)(d->n_groups + 1) * sizeof *map);
  if (!map) return ht_error(HT_ERR_NOMEM, "out of memory");
  for (int g = 0; g < d->n_groups; g++) map[g] = -1;
  s->n_groups = 0;
  for (int i = 0; i < s->n_rows; i++) {
    int g = s->group[i];
    if (g < 0 || g >= d->n_groups) continue;
    if (map[g] < 0) map[g] = s->n_groups++;
    s->group[i] = map[g];
  }
  ht_status st = HT_OK;
  if (d->group_label) {
    s->group_label = calloc((size_t)s->n_groups + 1, sizeof *s->group_label);
    if (!s->group_label) st = ht_error(HT_ERR_NOMEM, "out of memory");
    for (int g = 0; g < d->n_groups && !st; g++)
      if (map[g] >= 0 && d->group_label[g]) s->group_label[map[g]] = ht_strdup(d->group_label[g]);
  }
  free(map);
  return st;
}

/* The repeated measurements of the rows listed, when d has them. */
static ht_status copy_repeats(const ht_dataset *d, const int *rows, ht_dataset *s) {
  if (!d->repeats) return HT_OK;
  s->repeats = malloc(((size_t)s->n_rows + 1) * HT_DATASET_REPEATS * sizeof *s->repeats);
  s->n_repeats = malloc(((size_t)s->n_rows + 1) * sizeof *s->n_repeats);
  if (!s->repeats || !s->n_repeats) return ht_error(HT_ERR_NOMEM, "out of memory");
  for (int k = 0; k < s->n_rows; k++) {
    memcpy(s->repeats + (size_t)k * HT_DATASET_REPEATS, d->repeats + (size_t)rows[k] * HT_DATASET_REPEATS,
           HT_DATASET_REPEATS * sizeof *s->repeats);
    s->n_repeats[k] = d->n_repeats[rows[k]];
  }
  return HT_OK;
}

ht_status ht_dataset_subset(const ht_dataset *d, const int *rows, int n, ht_dataset **out) {
  ht_dataset *s;
  ht_status st = ht_dataset_create(n, d->n_features, &s);
  if (st) return st;
  for (int k = 0; k < n; k++) {
    int i = rows[k];
    if (i < 0 || i >= d->n_rows) {
      ht_dataset_destroy(s);
      return ht_error(HT_ERR_INVALID, "dataset subset: row %d of %d", i, d->n_rows);
    }
    memcpy(s->x + (size_t)k * d->n_features, d->x + (size_t)i * d->n_features, (size_t)d->n_features * sizeof(double));
    s->y[k] = d->y[i];
    s->group[k] = d->group[i];
    s->work[k] = d->work[i];
  }
  s->bandwidth = d->bandwidth;
  if ((st = copy_names(d, s)) || (st = renumber_groups(d, s)) || (st = copy_repeats(d, rows, s))) {
    ht_dataset_destroy(s);
    return st;
  }
  *out = s;
  return HT_OK;
}
