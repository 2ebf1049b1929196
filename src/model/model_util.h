/* What the models share: bounds-checked binary serialisation, input scaling, regularised least
 * squares and the registry's ops type. Internal to src/model/. */
#ifndef HETUNE_MODEL_UTIL_H
#define HETUNE_MODEL_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "hetune/model.h"

/* ---- serialisation: little-endian fixed-width values; a reader that runs past the end or
 * meets an implausible length sets failed and returns zeros, so load() checks once at the end. */
void mu_put_tag(ht_buf *b, const char *tag); /* up to 8 chars, padded: identifies the model kind */
void mu_put_i64(ht_buf *b, int64_t v);
void mu_put_f64(ht_buf *b, double v);
void mu_put_f64s(ht_buf *b, const double *v, int64_t n);
void mu_put_str(ht_buf *b, const char *s); /* NULL written as "" */
void mu_put_bytes(ht_buf *b, const void *data, int64_t n);

typedef struct mu_reader {
  const unsigned char *p;
  size_t len, pos;
  int failed;
} mu_reader;
void mu_reader_init(mu_reader *r, const char *data, size_t len);
int mu_get_tag(mu_reader *r, const char *tag); /* 1 when the next tag is this one */
int64_t mu_get_i64(mu_reader *r);
/* An i64 that must lie in [lo, hi] (a count or size): otherwise failed, returns lo. */
int64_t mu_get_count(mu_reader *r, int64_t lo, int64_t hi);
double mu_get_f64(mu_reader *r);
/* n doubles into a new array (NULL and failed when they are not all there). */
double *mu_get_f64s(mu_reader *r, int64_t n);
char *mu_get_str(mu_reader *r); /* malloc'ed */
/* n raw bytes: a pointer into the input (not copied), NULL and failed when short. */
const void *mu_get_bytes(mu_reader *r, int64_t n);
/* HT_OK when nothing failed and everything was read, else HT_ERR_PARSE naming the model kind. */
ht_status mu_reader_finish(const mu_reader *r, const char *kind);

/* ---- input scaling: out[j] = (x[j] - offset[j]) * scale[j]; constant columns map to 0 ---- */
typedef struct mu_scaler {
  int n;
  double *offset, *scale;
} mu_scaler;
typedef enum mu_scaling { MU_MINMAX = 0, MU_ZSCORE = 1 } mu_scaling;
ht_status mu_scaler_fit(mu_scaler *s, const ht_dataset *d, mu_scaling how);
void mu_scaler_apply(const mu_scaler *s, const double *x, double *out);
void mu_scaler_save(const mu_scaler *s, ht_buf *b);
int mu_scaler_load(mu_scaler *s, mu_reader *r); /* 0 on success */
void mu_scaler_free(mu_scaler *s);

/* ---- least squares: w (p) minimising |A w - y|^2 + lambda |w|^2 for row-major A (n x p);
 * lambda applies to every column (callers leave an intercept unpenalised by centring).
 * HT_ERR_INVALID when the system is singular. */
ht_status mu_ridge(const double *a, int n, int p, const double *y, double lambda, double *w);

/* Mean and standard deviation of y (sd 1 when y is constant): targets are standardised by models
 * that train with fixed step sizes. */
void mu_target_stats(const ht_dataset *d, double *mean, double *sd);

/* How many distinct problem sizes (work values) d has, counting stops at enough. */
int mu_distinct_work(const ht_dataset *d, int enough);

/* ---- numeric options, checked: a value that is not a whole number (or number) or lies outside
 * [lo, hi] is HT_ERR_INVALID naming the model and option; absent gives def. */
ht_status mu_opt_int(const ht_options *o, const char *kind, const char *key, int64_t def, int64_t lo, int64_t hi,
                     int64_t *out);
ht_status mu_opt_double(const ht_options *o, const char *kind, const char *key, double def, double lo, double hi,
                        double *out);

/* The same minimisation as mu_ridge, solved by a rank-revealing orthogonal factorisation (LAPACK
 * dgelsy on A stacked over sqrt(lambda) I) rather than the normal equations: twice the digits on
 * ill-conditioned designs (correlated size features), so exact laws are recovered to ~1e-10 and
 * extrapolate; rank-deficient columns get the minimum-norm answer. Slower: for small p. */
ht_status mu_lstsq(const double *a, int n, int p, const double *y, double lambda, double *w);

/* One of a fixed list of words: *out is its index (def's when absent); another word is
 * HT_ERR_INVALID listing the choices. choices ends with NULL. */
ht_status mu_opt_choice(const ht_options *o, const char *kind, const char *key, const char *def,
                        const char *const *choices, int *out);

/* ---- footprints: a row's version, i.e. the values of its param:* and device:* features (all that
 * is not size-dependent), as StarPU and reference 001 key their per-version models. ---- */
typedef struct mu_footprints {
  int n_cols;   /* footprint columns (indices into the feature vector) */
  int *cols;
  int n;        /* distinct footprints */
  double *keys; /* n x n_cols, sorted lexicographically so lookups are a binary search */
} mu_footprints;
/* Distinct footprints of d; row_fp (n_rows, may be NULL) receives each row's footprint index.
 * No param:/device: feature means one footprint holding every row. */
ht_status mu_footprints_fit(mu_footprints *f, const ht_dataset *d, int *row_fp);
/* Index of x's footprint, -1 when it was not seen in training. */
int mu_footprints_find(const mu_footprints *f, const double *x);
void mu_footprints_save(const mu_footprints *f, ht_buf *b);
/* n_features bounds the column indices; 0 on success. */
int mu_footprints_load(mu_footprints *f, mu_reader *r, int n_features);
void mu_footprints_free(mu_footprints *f);

#endif
