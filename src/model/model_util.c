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
