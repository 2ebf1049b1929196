/* Serialisation, scaling and least squares shared by the models. */
#include "model/model_util.h"

#include <errno.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- writing ---- */

void mu_put_tag(ht_buf *b, const char *tag) {
  char t[8] = {0};
  size_t n = strlen(tag);
  memcpy(t, tag, n < 8 ? n : 8);
  ht_buf_append_bytes(b, t, 8);
}

void mu_put_i64(ht_buf *b, int64_t v) {
  unsigned char t[8];
  uint64_t u = (uint64_t)v;
  for (int i = 0; i < 8; i++) t[i] = (unsigned char)(u >> (8 * i));
  ht_buf_append_bytes(b, t, 8);
}

void mu_put_f64(ht_buf *b, double v) {
  int64_t bits;
  memcpy(&bits, &v, 8);
  mu_put_i64(b, bits);
}

void mu_put_f64s(ht_buf *b, const double *v, int64_t n) {
  for (int64_t i = 0; i < n; i++) mu_put_f64(b, v[i]);
}

void mu_put_bytes(ht_buf *b, const void *data, int64_t n) {
  mu_put_i64(b, n);
  ht_buf_append_bytes(b, data, (size_t)n);
}

void mu_put_str(ht_buf *b, const char *s) {
  if (!s) s = "";
  mu_put_bytes(b, s, (int64_t)strlen(s));
}

/* ---- reading ---- */

void mu_reader_init(mu_reader *r, const char *data, size_t len) {
  r->p = (const unsigned char *)data;
  r->len = data ? len : 0;
  r->pos = 0;
  r->failed = 0;
}

static const unsigned char *take(mu_reader *r, size_t n) {
  if (r->failed || n > r->len - r->pos) {
    r->failed = 1;
    return NULL;
  }
  const unsigned char *p = r->p + r->pos;
  r->pos += n;
  return p;
}

int mu_get_tag(mu_reader *r, const char *tag) {
  char t[8] = {0};
  size_t n = strlen(tag);
  memcpy(t, tag, n < 8 ? n : 8);
  const unsigned char *p = take(r, 8);
  if (!p || memcmp(p, t, 8) != 0) {
    r->failed = 1;
    return 0;
  }
  return 1;
}

int64_t mu_get_i64(mu_reader *r) {
  const unsigned char *p = take(r, 8);
  if (!p) return 0;
  uint64_t u = 0;
  for (int i = 0; i < 8; i++) u |= (uint64_t)p[i] << (8 * i);
  return (int64_t)u;
}

int64_t mu_get_count(mu_reader *r, int64_t lo, int64_t hi) {
  int64_t v = mu_get_i64(r);
  if (r->failed || v < lo || v > hi) {
    r->failed = 1;
    return lo;
  }
  return v;
}

double mu_get_f64(mu_reader *r) {
  int64_t bits = mu_get_i64(r);
  double v;
  memcpy(&v, &bits, 8);
  return v;
}

double *mu_get_f64s(mu_reader *r, int64_t n) {
  if (r->failed || n < 0 || (uint64_t)n > (r->len - r->pos) / 8) {
    r->failed = 1;
    return NULL;
  }
  double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
  if (!v) {
    r->failed = 1;
    return NULL;
  }
  for (int64_t i = 0; i < n; i++) v[i] = mu_get_f64(r);
  return v;
}

const void *mu_get_bytes(mu_reader *r, int64_t n) {
  if (n < 0) {
    r->failed = 1;
    return NULL;
  }
  return take(r, (size_t)n);
}

char *mu_get_str(mu_reader *r) {
  int64_t n = mu_get_count(r, 0, (int64_t)(r->len - r->pos));
  const void *p = mu_get_bytes(r, n);
  if (!p) return NULL;
  char *s = malloc((size_t)n + 1);
  if (!s) {
    r->failed = 1;
    return NULL;
  }
  memcpy(s, p, (size_t)n);
  s[n] = 0;
  return s;
}

ht_status mu_reader_finish(const mu_reader *r, const char *kind) {
  if (r->failed) return ht_error(HT_ERR_PARSE, "%s model: truncated or corrupt data", kind);
  if (r->pos != r->len)
    return ht_error(HT_ERR_PARSE, "%s model: %zu unexpected bytes after the model", kind, r->len - r->pos);
  return HT_OK;
}

/* ---- scaling ---- */

ht_status mu_scaler_fit(mu_scaler *s, const ht_dataset *d, mu_scaling how) {
  int p = d->n_features;
  s->n = p;
  s->offset = calloc((size_t)(p ? p : 1), sizeof(double));
  s->scale = calloc((size_t)(p ? p : 1), sizeof(double));
  if (!s->offset || !s->scale) {
    mu_scaler_free(s);
    return ht_error(HT_ERR_NOMEM, "out of memory scaling %d features", p);
  }
  for (int j = 0; j < p; j++) {
    double lo = INFINITY, hi = -INFINITY, sum = 0, sum2 = 0;
    for (int i = 0; i < d->n_rows; i++) {
      double v = d->x[(size_t)i * p + j];
      lo = fmin(lo, v);
      hi = fmax(hi, v);
      sum += v;
    }
    double mean = d->n_rows ? sum / d->n_rows : 0;
    for (int i = 0; i < d->n_rows; i++) {
      double e = d->x[(size_t)i * p + j] - mean;
      sum2 += e * e;
    }
    double sd = d->n_rows > 1 ? sqrt(sum2 / (d->n_rows - 1)) : 0;
    if (how == MU_ZSCORE) {
      s->offset[j] = mean;
      s->scale[j] = sd > 0 ? 1.0 / sd : 0;
    } else {
      s->offset[j] = d->n_rows ? lo : 0;
      s->scale[j] = hi > lo ? 1.0 / (hi - lo) : 0;
    }
  }
  return HT_OK;
}

void mu_scaler_apply(const mu_scaler *s, const double *x, double *out) {
  for (int j = 0; j < s->n; j++) out[j] = (x[j] - s->offset[j]) * s->scale[j];
}

void mu_scaler_save(const mu_scaler *s, ht_buf *b) {
  mu_put_i64(b, s->n);
  mu_put_f64s(b, s->offset, s->n);
  mu_put_f64s(b, s->scale, s->n);
}

int mu_scaler_load(mu_scaler *s, mu_reader *r) {
  s->n = (int)mu_get_count(r, 0, 1 << 20);
  s->offset = mu_get_f64s(r, s->n);
  s->scale = mu_get_f64s(r, s->n);
  if (r->failed) {
    mu_scaler_free(s);
    return -1;
  }
  return 0;
}

void mu_scaler_free(mu_scaler *s) {
  free(s->offset);
  free(s->scale);
  s->offset = s->scale = NULL;
  s->n = 0;
}

/* ---- least squares ---- */

/* Normal equations with a ridge term, solved by Cholesky: p is small (features or hidden units),
 * and the ridge keeps the system positive definite. */
ht_status mu_ridge(const double *a, int n, int p, const double *y, double lambda, double *w) {
  if (n < 1 || p < 1) return ht_error(HT_ERR_INVALID, "least squares on an empty system (%d x %d)", n, p);
  double *g = calloc((size_t)p * p, sizeof *g);
  if (!g) return ht_error(HT_ERR_NOMEM, "out of memory for a %d x %d system", p, p);
  for (int j = 0; j < p; j++) w[j] = 0;
  for (int i = 0; i < n; i++) {
    const double *row = a + (size_t)i * p;
    for (int j = 0; j < p; j++) {
      w[j] += row[j] * y[i];
      for (int k = 0; k <= j; k++) g[(size_t)j * p + k] += row[j] * row[k];
    }
  }
  double trace = 0;
  for (int j = 0; j < p; j++) trace += g[(size_t)j * p + j];
  /* A tiny relative jitter on top of lambda keeps exactly collinear columns solvable. */
  double jitter = 1e-12 * (trace > 0 ? trace / p : 1);
  for (int j = 0; j < p; j++) g[(size_t)j * p + j] += lambda + jitter;
  lapack_int info = LAPACKE_dposv(LAPACK_ROW_MAJOR, 'L', p, 1, g, p, w, 1);
  free(g);
  if (info != 0) return ht_error(HT_ERR_INVALID, "least squares: singular system (%d x %d, info %d)", n, p, (int)info);
  for (int j = 0; j < p; j++)
    if (!isfinite(w[j])) return ht_error(HT_ERR_INVALID, "least squares: non-finite solution");
  return HT_OK;
}

void mu_target_stats(const ht_dataset *d, double *mean, double *sd) {
  double s = 0, s2 = 0;
  for (int i = 0; i < d->n_rows; i++) s += d->y[i];
  double m = d->n_rows ? s / d->n_rows : 0;
  for (int i = 0; i < d->n_rows; i++) s2 += (d->y[i] - m) * (d->y[i] - m);
  double v = d->n_rows > 1 ? sqrt(s2 / (d->n_rows - 1)) : 0;
  *mean = m;
  *sd = v > 0 ? v : 1;
}

int mu_distinct_work(const ht_dataset *d, int enough) {
  int n = 0;
  for (int i = 0; i < d->n_rows && n < enough; i++) {
    int seen = 0;
    for (int j = 0; j < i && !seen; j++) seen = d->work[j] == d->work[i];
    n += !seen;
  }
  return n;
}

/* ---- checked options ---- */

ht_status mu_opt_int(const ht_options *o, const char *kind, const char *key, int64_t def, int64_t lo, int64_t hi,
                     int64_t *out) {
  const char *v = ht_options_str(o, key, NULL);
  *out = def;
  if (!v) return HT_OK;
  char *end = NULL;
  errno = 0;
  long long x = strtoll(v, &end, 10);
  if (end == v || *end || errno || x < lo || x > hi)
    return ht_error(HT_ERR_INVALID, "%s option %s=%s: expected a whole number in [%lld, %lld]", kind, key, v,
                    (long long)lo, (long long)hi);
  *out = x;
  return HT_OK;
}

ht_status mu_opt_double(const ht_options *o, const char *kind, const char *key, double def, double lo, double hi,
                        double *out) {
  const char *v = ht_options_str(o, key, NULL);
  *out = def;
  if (!v) return HT_OK;
  char *end = NULL;
  double x = strtod(v, &end);
  if (end == v || *end || !isfinite(x) || x < lo || x > hi)
    return ht_error(HT_ERR_INVALID, "%s option %s=%s: expected a number in [%g, %g]", kind, key, v, lo, hi);
  *out = x;
  return HT_OK;
}

/* ---- choices ---- */

ht_status mu_opt_choice(const ht_options *o, const char *kind, const char *key, const char *def,
                        const char *const *choices, int *out) {
  const char *v = ht_options_str(o, key, def);
  for (int i = 0; choices[i]; i++)
    if (strcmp(v, choices[i]) == 0) {
      *out = i;
      return HT_OK;
    }
  ht_buf b = {0};
  for (int i = 0; choices[i]; i++) ht_buf_appendf(&b, "%s%s", i ? ", " : "", choices[i]);
  ht_status st = ht_error(HT_ERR_INVALID, "%s option %s=%s: expected one of %s", kind, key, v, b.data ? b.data : "");
  ht_buf_free(&b);
  return st;
}

/* ---- footprints ---- */

static int is_footprint_name(const char *s) {
  return s && (strncmp(s, "param:", 6) == 0 || strncmp(s, "device:", 7) == 0);
}

static int key_cmp(const double *a, const double *b, int n) {
  for (int j = 0; j < n; j++)
    if (a[j] != b[j]) return a[j] < b[j] ? -1 : 1;
  return 0;
}

/* Row indices sorted by their footprint values (merge sort: no qsort_r in plain C11). */
static void sort_rows(int *idx, int *tmp, int n, const double *v, int nc) {
  if (n < 2) return;
  int h = n / 2;
  sort_rows(idx, tmp, h, v, nc);
  sort_rows(idx + h, tmp, n - h, v, nc);
  int i = 0, j = h, k = 0;
  while (i < h || j < n) {
    if (j >= n || (i < h && key_cmp(v + (size_t)idx[i] * nc, v + (size_t)idx[j] * nc, nc) <= 0)) tmp[k++] = idx[i++];
    else tmp[k++] = idx[j++];
  }
  memcpy(idx, tmp, (size_t)n * sizeof *idx);
}

static ht_status footprint_values(mu_footprints *f, const ht_dataset *d, double **vals) {
  f->cols = malloc((size_t)(d->n_features + 1) * sizeof *f->cols);
  if (!f->cols) return ht_error(HT_ERR_NOMEM, "out of memory");
  f->n_cols = 0;
  for (int j = 0; j < d->n_features; j++)
    if (is_footprint_name(d->names[j])) f->cols[f->n_cols++] = j;
  int nc = f->n_cols;
  *vals = malloc(((size_t)d->n_rows * nc + 1) * sizeof **vals);
  if (!*vals) return ht_error(HT_ERR_NOMEM, "out of memory");
  for (int i = 0; i < d->n_rows; i++)
    for (int c = 0; c < nc; c++) (*vals)[(size_t)i * nc + c] = d->x[(size_t)i * d->n_features + f->cols[c]];
  return HT_OK;
}

ht_status mu_footprints_fit(mu_footprints *f, const ht_dataset *d, int *row_fp) {
  memset(f, 0, sizeof *f);
  double *v = NULL;
  int n = d->n_rows, *idx = malloc((size_t)(n + 1) * sizeof *idx), *tmp = malloc((size_t)(n + 1) * sizeof *tmp);
  ht_status st = idx && tmp ? footprint_values(f, d, &v) : ht_error(HT_ERR_NOMEM, "out of memory");
  int nc = f->n_cols;
  if (!st && !(f->keys = malloc(((size_t)n * nc + 1) * sizeof *f->keys))) st = ht_error(HT_ERR_NOMEM, "out of memory");
  if (!st) {
    for (int i = 0; i < n; i++) idx[i] = i;
    sort_rows(idx, tmp, n, v, nc);
    for (int i = 0; i < n; i++) {
      const double *k = v + (size_t)idx[i] * nc;
      if (f->n == 0 || key_cmp(f->keys + (size_t)(f->n - 1) * nc, k, nc) != 0) {
        if (nc) memcpy(f->keys + (size_t)f->n * nc, k, (size_t)nc * sizeof *k);
        f->n++;
      }
      if (row_fp) row_fp[idx[i]] = f->n - 1;
    }
  }
  free(v);
  free(idx);
  free(tmp);
  if (st) mu_footprints_free(f);
  return st;
}

int mu_footprints_find(const mu_footprints *f, const double *x) {
  int nc = f->n_cols, lo = 0, hi = f->n - 1;
  double key[64];
  if (nc > 64) { /* long keys: linear scan rather than a buffer */
    for (int i = 0; i < f->n; i++) {
      int c = 0;
      while (c < nc && f->keys[(size_t)i * nc + c] == x[f->cols[c]]) c++;
      if (c == nc) return i;
    }
    return -1;
  }
  for (int c = 0; c < nc; c++) key[c] = x[f->cols[c]];
  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2, cmp = key_cmp(f->keys + (size_t)mid * nc, key, nc);
    if (cmp == 0) return mid;
    if (cmp < 0) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

void mu_footprints_save(const mu_footprints *f, ht_buf *b) {
  mu_put_i64(b, f->n_cols);
  for (int c = 0; c < f->n_cols; c++) mu_put_i64(b, f->cols[c]);
  mu_put_i64(b, f->n);
  mu_put_f64s(b, f->keys, (int64_t)f->n * f->n_cols);
}

int mu_footprints_load(mu_footprints *f, mu_reader *r, int n_features) {
  memset(f, 0, sizeof *f);
  f->n_cols = (int)mu_get_count(r, 0, n_features);
  f->cols = malloc((size_t)(f->n_cols + 1) * sizeof *f->cols);
  if (!f->cols) r->failed = 1;
  for (int c = 0; !r->failed && c < f->n_cols; c++) f->cols[c] = (int)mu_get_count(r, 0, n_features - 1);
  f->n = (int)mu_get_count(r, 1, 1 << 30);
  /* keys must be sorted for the binary search: corrupt order would only misroute, but reject it */
  if (!r->failed) f->keys = mu_get_f64s(r, (int64_t)f->n * f->n_cols);
  for (int i = 1; !r->failed && i < f->n; i++)
    if (key_cmp(f->keys + (size_t)(i - 1) * f->n_cols, f->keys + (size_t)i * f->n_cols, f->n_cols) >= 0) r->failed = 1;
  if (r->failed) {
    mu_footprints_free(f);
    return -1;
  }
  return 0;
}

void mu_footprints_free(mu_footprints *f) {
  free(f->cols);
  free(f->keys);
  memset(f, 0, sizeof *f);
}

/* ---- least squares by orthogonal factorisation ---- */

ht_status mu_lstsq(const double *a, int n, int p, const double *y, double lambda, double *w) {
  if (n < 1 || p < 1) return ht_error(HT_ERR_INVALID, "least squares on an empty system (%d x %d)", n, p);
  int rows = lambda > 0 ? n + p : n, m = rows > p ? rows : p;
  double *aa = calloc((size_t)rows * p, sizeof *aa), *b = calloc((size_t)m, sizeof *b);
  lapack_int *piv = calloc((size_t)p, sizeof *piv), rank = 0;
  if (!aa || !b || !piv) {
    free(aa);
    free(b);
    free(piv);
    return ht_error(HT_ERR_NOMEM, "out of memory for a %d x %d least squares", n, p);
  }
  memcpy(aa, a, (size_t)n * p * sizeof *aa);
  memcpy(b, y, (size_t)n * sizeof *b);
  for (int j = 0; lambda > 0 && j < p; j++) aa[(size_t)(n + j) * p + j] = sqrt(lambda);
  lapack_int info = LAPACKE_dgelsy(LAPACK_ROW_MAJOR, rows, p, 1, aa, p, b, 1, piv, 1e-12, &rank);
  for (int j = 0; j < p; j++) w[j] = b[j];
  free(aa);
  free(b);
  free(piv);
  if (info != 0) return ht_error(HT_ERR_INVALID, "least squares: LAPACK dgelsy failed (%d x %d, info %d)", n, p, (int)info);
  for (int j = 0; j < p; j++)
    if (!isfinite(w[j])) return ht_error(HT_ERR_INVALID, "least squares: non-finite solution");
  return HT_OK;
}
