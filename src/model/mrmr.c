/* Minimum-redundancy maximum-relevance feature ranking (Peng et al.'s MID criterion), as
 * reference 003 uses it: to say which features drive execution time, not to remove any. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hetune/model.h"

typedef struct vk {
  double v;
  int i;
} vk;

static int vk_cmp(const void *a, const void *b) {
  double x = ((const vk *)a)->v, y = ((const vk *)b)->v;
  return x < y ? -1 : x > y;
}

/* Equal-frequency bins by rank; equal values share a bin. Returns the number of bins used. */
static int discretise(const double *v, int stride, int n, int bins, vk *tmp, int *out) {
  for (int i = 0; i < n; i++) tmp[i] = (vk){v[(size_t)i * stride], i};
  qsort(tmp, (size_t)n, sizeof *tmp, vk_cmp);
  int used = 0;
  for (int a = 0; a < n;) {
    int b = a;
    while (b + 1 < n && tmp[b + 1].v == tmp[a].v) b++;
    int bin = (int)((double)a * bins / n);
    for (int k = a; k <= b; k++) out[tmp[k].i] = bin;
    used = bin + 1;
    a = b + 1;
  }
  return used;
}

/* Mutual information in bits of two discretised variables. joint holds bins * (bins + 2) doubles:
 * the joint distribution, then the two marginals. */
static double mutual_info(const int *a, const int *b, int n, int bins, double *joint) {
  double *pa = joint + bins * bins, *pb = pa + bins;
  memset(joint, 0, (size_t)bins * (bins + 2) * sizeof *joint);
  for (int i = 0; i < n; i++) {
    joint[a[i] * bins + b[i]] += 1.0 / n;
    pa[a[i]] += 1.0 / n;
    pb[b[i]] += 1.0 / n;
  }
  double mi = 0;
  for (int x = 0; x < bins; x++)
    for (int y = 0; y < bins; y++) {
      double pxy = joint[x * bins + y];
      if (pxy > 0) mi += pxy * log2(pxy / (pa[x] * pb[y]));
    }
  return mi;
}

typedef struct mrmr_ctx {
  int n, p, bins;
  int *disc;      /* p x n */
  int *used;      /* bins used per feature: 1 = constant */
  double *rel;    /* relevance per feature */
  double *red;    /* summed redundancy with the chosen features */
  char *chosen;
  double *joint;
} mrmr_ctx;

static int pick_next(const mrmr_ctx *c, int k, double *score) {
  int best = -1;
  double best_v = -INFINITY;
  for (int j = 0; j < c->p; j++) {
    if (c->chosen[j] || c->used[j] < 2) continue;
    double v = c->rel[j] - (k ? c->red[j] / k : 0);
    if (v > best_v) best_v = v, best = j;
  }
  *score = best_v;
  return best;
}

static void rank_all(mrmr_ctx *c, int *order, double *score) {
  int k = 0;
  for (; k < c->p; k++) {
    int j = pick_next(c, k, &score[k]);
    if (j < 0) break;
    order[k] = j;
    c->chosen[j] = 1;
    for (int f = 0; f < c->p; f++)
      if (!c->chosen[f] && c->used[f] > 1)
        c->red[f] += mutual_info(c->disc + (size_t)f * c->n, c->disc + (size_t)j * c->n, c->n, c->bins, c->joint);
  }
  for (int j = 0; j < c->p; j++) /* constant features carry no information */
    if (!c->chosen[j]) order[k] = j, score[k++] = 0;
}

ht_status ht_mrmr_rank(const ht_dataset *d, int bins, int *order, double *score) {
  int n = d->n_rows, p = d->n_features;
  if (n < 2 || bins < 2) return ht_error(HT_ERR_INVALID, "MRMR needs at least 2 rows and 2 bins");
  mrmr_ctx c = {n, p, bins, malloc((size_t)p * n * sizeof(int)), malloc((size_t)(p + 1) * sizeof(int)),
                calloc((size_t)p + 1, sizeof(double)), calloc((size_t)p + 1, sizeof(double)), calloc((size_t)p + 1, 1),
                malloc((size_t)bins * (bins + 2) * sizeof(double))};
  int *ybin = malloc((size_t)n * sizeof *ybin);
  vk *tmp = malloc((size_t)n * sizeof *tmp);
  ht_status st = HT_OK;
  if (!c.disc || !c.used || !c.rel || !c.red || !c.chosen || !c.joint || !ybin || !tmp)
    st = ht_error(HT_ERR_NOMEM, "out of memory");
  if (!st) {
    discretise(d->y, 1, n, bins, tmp, ybin);
    for (int j = 0; j < p; j++) {
      c.used[j] = discretise(d->x + j, p, n, bins, tmp, c.disc + (size_t)j * n);
      c.rel[j] = mutual_info(c.disc + (size_t)j * n, ybin, n, bins, c.joint);
    }
    rank_all(&c, order, score);
  }
  free(c.disc);
  free(c.used);
  free(c.rel);
  free(c.red);
  free(c.chosen);
  free(c.joint);
  free(ybin);
  free(tmp);
  return st;
}
