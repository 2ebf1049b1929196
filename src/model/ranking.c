/* ranking: reference 001's ranking tables (Dollinger, ch. 4.4-4.5). Per code version (footprint:
 * the values of the param:* and device:* features) a table over the grid size, holding at each
 * measured grid size a linear regression of the time per iteration in a sequential parameter;
 * a prediction evaluates the two regressions around the requested grid size at the requested
 * sequential value and interpolates linearly between them (etime() in the reference).
 *
 * Fit: rows are grouped by footprint, then by exact grid value; at each grid point y = alpha +
 * beta * seq by least squares when the rows there have at least two distinct seq values, else
 * alpha = their mean and beta = 0 (also when seq is not set). The target is "rate" by default:
 * log(time / work), the reference's time per statement iteration (which it multiplies back by the
 * domain size), in log so that interpolation and noise are relative.
 *
 * Outside the measured grid sizes (the reference does not say; its profiler covers 1..65535
 * blocks so it never needs to): option outside=clamp (default) holds the nearest table entry,
 * i.e. constant time per iteration beyond the largest grid measured, which is what a saturated
 * device does; outside=linear continues the line through the two nearest grid points, which
 * follows a trend but can run away far from the data.
 *
 * A footprint not seen in training takes the table of the nearest seen footprint, distance
 * measured on the footprint features z-scored over the distinct footprints (each version counts
 * once, however many rows it has); ties go to the first in footprint order. The reference has no
 * such case: it profiles every version it can select.
 *
 * Options:
 *   grid=FEATURE        (default launch:work_groups, or work when the dataset has no such
 *                       feature) the parallel dimension: the reference's number of blocks.
 *   seq=FEATURE         (default none) the sequential parameter of the per-grid-point lines.
 *   outside=clamp|linear (default clamp) see above.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_util.h"

enum { MAX_ENTRIES = 1 << 28 };

typedef struct ranking {
  int p, grid_col, seq_col; /* seq_col -1: none */
  int linear_outside;
  mu_footprints fp;
  double *fp_off, *fp_scale; /* z-scoring of the footprint columns, for unseen footprints */
  int *start;                /* fp.n + 1: footprint f's entries are [start[f], start[f+1]) */
  int n_entries;
  double *g, *alpha, *beta; /* entries: grid value (ascending within a footprint), line */
} ranking;

static void ranking_destroy(void *state) {
  ranking *m = state;
  if (!m) return;
  mu_footprints_free(&m->fp);
  free(m->fp_off);
  free(m->fp_scale);
  free(m->start);
  free(m->g);
  free(m->alpha);
  free(m->beta);
  free(m);
}

/* ---- fit ---- */

typedef struct row3 {
  int fp;
  double g, s, y;
} row3;

static int cmp_row(const void *x, const void *y) {
  const row3 *a = x, *b = y;
  if (a->fp != b->fp) return a->fp < b->fp ? -1 : 1;
  return a->g < b->g ? -1 : a->g > b->g;
}

/* The line of rows [i, j) (same footprint and grid value) into entry e. */
static void fit_line(ranking *m, const row3 *r, int i, int j, int e) {
  double n = j - i, ms = 0, my = 0, sss = 0, ssy = 0;
  for (int k = i; k < j; k++) ms += r[k].s / n, my += r[k].y / n;
  for (int k = i; k < j; k++) sss += (r[k].s - ms) * (r[k].s - ms), ssy += (r[k].s - ms) * (r[k].y - my);
  double beta = sss > 0 ? ssy / sss : 0;
  if (!isfinite(beta)) beta = 0;
  m->g[e] = r[i].g;
  m->beta[e] = beta;
  m->alpha[e] = my - beta * ms;
}

static ht_status build_table(ranking *m, const ht_dataset *d, const int *row_fp) {
  int n = d->n_rows, p = d->n_features;
  row3 *r = malloc((size_t)(n + 1) * sizeof *r);
  m->g = malloc((size_t)(n + 1) * sizeof *m->g);
  m->alpha = malloc((size_t)(n + 1) * sizeof *m->alpha);
  m->beta = malloc((size_t)(n + 1) * sizeof *m->beta);
  m->start = calloc((size_t)m->fp.n + 1, sizeof *m->start);
  if (!r || !m->g || !m->alpha || !m->beta || !m->start) {
    free(r);
    return ht_error(HT_ERR_NOMEM, "ranking: out of memory");
  }
  for (int i = 0; i < n; i++) {
    const double *x = d->x + (size_t)i * p;
    r[i] = (row3){row_fp[i], x[m->grid_col], m->seq_col >= 0 ? x[m->seq_col] : 0, d->y[i]};
  }
  qsort(r, (size_t)n, sizeof *r, cmp_row);
  m->n_entries = 0;
  for (int i = 0; i < n;) {
    int j = i;
    while (j < n && r[j].fp == r[i].fp && r[j].g == r[i].g) j++;
    fit_line(m, r, i, j, m->n_entries++);
    m->start[r[i].fp + 1] = m->n_entries;
    i = j;
  }
  free(r);
  return HT_OK;
}

/* Mean and 1/sd of each footprint column over the distinct footprints (scale 0 if constant). */
static ht_status footprint_scaling(ranking *m) {
  int nc = m->fp.n_cols, nf = m->fp.n;
  m->fp_off = calloc((size_t)nc + 1, sizeof *m->fp_off);
  m->fp_scale = calloc((size_t)nc + 1, sizeof *m->fp_scale);
  if (!m->fp_off || !m->fp_scale) return ht_error(HT_ERR_NOMEM, "ranking: out of memory");
  for (int c = 0; c < nc; c++) {
    double s = 0, s2 = 0;
    for (int f = 0; f < nf; f++) s += m->fp.keys[(size_t)f * nc + c] / nf;
    for (int f = 0; f < nf; f++) s2 += pow(m->fp.keys[(size_t)f * nc + c] - s, 2);
    double sd = nf > 1 ? sqrt(s2 / (nf - 1)) : 0;
    m->fp_off[c] = s;
    m->fp_scale[c] = sd > 0 && isfinite(sd) ? 1 / sd : 0;
  }
  return HT_OK;
}

static ht_status pick_columns(ranking *m, const ht_dataset *d, const ht_options *opt) {
  static const char *const outside[] = {"clamp", "linear", NULL};
  const char *grid = ht_options_str(opt, "grid", NULL), *seq = ht_options_str(opt, "seq", NULL);
  ht_status st = mu_opt_choice(opt, "ranking", "outside", "clamp", outside, &m->linear_outside);
  if (st) return st;
  if (grid) m->grid_col = ht_dataset_feature(d, grid);
  else if ((m->grid_col = ht_dataset_feature(d, "launch:work_groups")) < 0) m->grid_col = ht_dataset_feature(d, "work");
  if (m->grid_col < 0)
    return ht_error(HT_ERR_INVALID, "ranking: no grid feature (option grid=%s; default launch:work_groups or work)",
                    grid ? grid : "");
  m->seq_col = seq ? ht_dataset_feature(d, seq) : -1;
  if (seq && m->seq_col < 0) return ht_error(HT_ERR_INVALID, "ranking option seq=%s: no such feature", seq);
  return HT_OK;
}

static ht_status ranking_fit(void **state, const ht_dataset *train, const ht_options *opt, uint64_t seed) {
  (void)seed;
  *state = NULL;
  ranking *m = calloc(1, sizeof *m);
  int *row_fp = malloc((size_t)(train->n_rows + 1) * sizeof *row_fp);
  ht_status st = m && row_fp ? HT_OK : ht_error(HT_ERR_NOMEM, "ranking: out of memory");
  if (!st) {
    m->p = train->n_features;
    st = pick_columns(m, train, opt);
  }
  if (!st) st = mu_footprints_fit(&m->fp, train, row_fp);
  if (!st) st = build_table(m, train, row_fp);
  if (!st) st = footprint_scaling(m);
  free(row_fp);
  if (st) {
    ranking_destroy(m);
    return st;
  }
  *state = m;
  return HT_OK;
}

/* ---- predict ---- */

static int nearest_footprint(const ranking *m, const double *x) {
  int nc = m->fp.n_cols, best = 0;
  double bd = INFINITY;
  for (int f = 0; f < m->fp.n; f++) {
    double d = 0;
    for (int c = 0; c < nc; c++) {
      double zx = (x[m->fp.cols[c]] - m->fp_off[c]) * m->fp_scale[c];
      double zf = (m->fp.keys[(size_t)f * nc + c] - m->fp_off[c]) * m->fp_scale[c];
      d += (zx - zf) * (zx - zf);
    }
    if (d < bd) bd = d, best = f;
  }
  return best;
}

static double line_at(const ranking *m, int e, double s) { return m->alpha[e] + m->beta[e] * s; }

/* Interpolation between the entries lo and lo + 1 (also used to extrapolate with them). */
static double between(const ranking *m, int lo, double g, double s) {
  double a = line_at(m, lo, s), b = line_at(m, lo + 1, s);
  return a + (b - a) * (g - m->g[lo]) / (m->g[lo + 1] - m->g[lo]);
}

static double ranking_predict(const void *state, const double *x) {
  const ranking *m = state;
  int f = mu_footprints_find(&m->fp, x);
  if (f < 0) f = nearest_footprint(m, x);
  int lo = m->start[f], hi = m->start[f + 1] - 1;
  double g = x[m->grid_col], s = m->seq_col >= 0 ? x[m->seq_col] : 0, v;
  if (!isfinite(s)) s = 0;
  if (lo == hi || !isfinite(g)) v = line_at(m, g >= m->g[hi] ? hi : lo, s);
  else if (g <= m->g[lo]) v = m->linear_outside ? between(m, lo, g, s) : line_at(m, lo, s);
  else if (g >= m->g[hi]) v = m->linear_outside ? between(m, hi - 1, g, s) : line_at(m, hi, s);
  else {
    while (hi - lo > 1) { /* binary search for g[lo] <= g < g[hi] */
      int mid = lo + (hi - lo) / 2;
      if (m->g[mid] <= g) lo = mid;
      else hi = mid;
    }
    v = between(m, lo, g, s);
  }
  return isfinite(v) ? v : m->alpha[m->start[f]];
}

/* ---- serialisation ---- */

static ht_status ranking_save(const void *state, ht_buf *out) {
  const ranking *m = state;
  mu_put_tag(out, "ranking");
  mu_put_i64(out, m->p);
  mu_put_i64(out, m->grid_col);
  mu_put_i64(out, m->seq_col);
  mu_put_i64(out, m->linear_outside);
  mu_footprints_save(&m->fp, out);
  mu_put_f64s(out, m->fp_off, m->fp.n_cols);
  mu_put_f64s(out, m->fp_scale, m->fp.n_cols);
  for (int f = 0; f <= m->fp.n; f++) mu_put_i64(out, m->start[f]);
  mu_put_f64s(out, m->g, m->n_entries);
  mu_put_f64s(out, m->alpha, m->n_entries);
  mu_put_f64s(out, m->beta, m->n_entries);
  return HT_OK;
}

/* Every footprint has at least one entry, grid values ascend within it, all numbers finite. */
static int table_valid(const ranking *m) {
  if (m->start[0] != 0 || m->start[m->fp.n] != m->n_entries) return 0;
  for (int f = 0; f < m->fp.n; f++) /* every offset in range before any entry is read */
    if (m->start[f + 1] <= m->start[f] || m->start[f + 1] > m->n_entries) return 0;
  for (int f = 0; f < m->fp.n; f++) {
    for (int e = m->start[f] + 1; e < m->start[f + 1]; e++)
      if (!(m->g[e] > m->g[e - 1])) return 0;
  }
  for (int e = 0; e < m->n_entries; e++)
    if (!isfinite(m->g[e]) || !isfinite(m->alpha[e]) || !isfinite(m->beta[e])) return 0;
  for (int c = 0; c < m->fp.n_cols; c++)
    if (!isfinite(m->fp_off[c]) || !isfinite(m->fp_scale[c])) return 0;
  return 1;
}

static void load_table(ranking *m, mu_reader *r) {
  m->fp_off = mu_get_f64s(r, m->fp.n_cols);
  m->fp_scale = mu_get_f64s(r, m->fp.n_cols);
  if (r->failed || (size_t)m->fp.n + 1 > (r->len - r->pos) / 8 || !(m->start = malloc(((size_t)m->fp.n + 1) * sizeof *m->start))) {
    r->failed = 1;
    return;
  }
  for (int f = 0; f <= m->fp.n; f++) m->start[f] = (int)mu_get_count(r, 0, MAX_ENTRIES);
  m->n_entries = m->start[m->fp.n];
  m->g = mu_get_f64s(r, m->n_entries);
  m->alpha = mu_get_f64s(r, m->n_entries);
  m->beta = mu_get_f64s(r, m->n_entries);
  if (!r->failed && !table_valid(m)) r->failed = 1;
}

static ht_status ranking_load(void **state, const char *data, size_t len) {
  *state = NULL;
  ranking *m = calloc(1, sizeof *m);
  if (!m) return ht_error(HT_ERR_NOMEM, "ranking: out of memory");
  mu_reader r;
  mu_reader_init(&r, data, len);
  mu_get_tag(&r, "ranking");
  m->p = (int)mu_get_count(&r, 1, 1 << 20);
  m->grid_col = (int)mu_get_count(&r, 0, m->p - 1);
  m->seq_col = (int)mu_get_count(&r, -1, m->p - 1);
  m->linear_outside = (int)mu_get_count(&r, 0, 1);
  if (r.failed || mu_footprints_load(&m->fp, &r, m->p) != 0) r.failed = 1;
  if (!r.failed) load_table(m, &r);
  ht_status st = mu_reader_finish(&r, "ranking");
  if (st) {
    ranking_destroy(m);
    return st;
  }
  *state = m;
  return HT_OK;
}

const ht_model_ops ht_model_ranking = {
  .name = "ranking",
  .summary = "the ranking tables of [001] (docs/bibliography.md): per version, lines in a sequential parameter at each grid size, interpolated",
  .default_target = "rate",
  .fit = ranking_fit,
  .predict = ranking_predict,
  .save = ranking_save,
  .load = ranking_load,
  .destroy = ranking_destroy,
  .raw_inputs = 1, /* n, the grid size and the footprint values are used as they are */
};
