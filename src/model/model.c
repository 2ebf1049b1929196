/* The model wrapper: target transform, routing by decade of problem size (reference 000's one
 * network per order of magnitude), feature names and serialisation around one registered model.
 *
 * Targets: "log" fits log(time); "rate" fits log(time / work), so a model that cannot extrapolate
 * (trees, neighbours) still predicts constant throughput beyond the sizes it saw; "time" fits
 * seconds. Routing: route=decade fits one sub-model per decade of the "work" feature, merging
 * neighbouring decades until each has route_min rows (default 20).
 * Predictions stay near the training targets' range (bounded()), and never below the roofline floor
 * when the training dataset had a bandwidth curve (roofline.c).
 * Inputs: unless the model asks for raw values, features that are non-negative and span more than
 * a factor 4 in training reach the model as log10(1 + v) (inputs=raw turns this off). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_select.h"
#include "model/model_util.h"
#include "model/roofline.h"

typedef enum target { TARGET_TIME = 0, TARGET_LOG = 1, TARGET_RATE = 2 } target;

typedef struct route {
  double lo_decade; /* rows with floor(log10(work)) >= lo_decade (and below the next route) */
  double y_lo, y_hi; /* the training targets' range: predictions are kept near it */
  void *state;
} route;

struct ht_model {
  const ht_model_ops *ops;
  char *options;
  target tgt;
  int n_features;
  char **names;
  int work_index; /* -1 when there is no "work" feature */
  unsigned char *logged; /* n_features flags: the model sees log10(1 + v) of this feature */
  int n_routes;
  route *routes;
  roofline roof; /* bytes_index -1: no floor */
};

/* An empty model: no routes, no roofline floor (NULL when out of memory). */
static ht_model *model_new(void) {
  ht_model *m = calloc(1, sizeof *m);
  if (m) m->roof.bytes_index = -1;
  return m;
}

static ht_status parse_target(const char *s, target *t) {
  if (strcmp(s, "log") == 0) *t = TARGET_LOG;
  else if (strcmp(s, "rate") == 0) *t = TARGET_RATE;
  else if (strcmp(s, "time") == 0) *t = TARGET_TIME;
  else return ht_error(HT_ERR_INVALID, "model option target=%s: expected log, rate or time", s);
  return HT_OK;
}

static double work_of(const ht_model *m, const double *x) { return m->work_index >= 0 ? x[m->work_index] : 1; }

static double decade_of(double work) { return work > 0 ? floor(log10(work)) : 0; }

static double to_target(target t, double time, double work) {
  switch (t) {
  case TARGET_LOG: return log(time);
  case TARGET_RATE: return log(time / (work > 0 ? work : 1));
  default: return time;
  }
}

static double from_target(target t, double v, double work) {
  switch (t) {
  case TARGET_LOG: return exp(v);
  case TARGET_RATE: return exp(v) * (work > 0 ? work : 1);
  default: return v;
  }
}

static void model_free_routes(ht_model *m) {
  for (int r = 0; r < m->n_routes; r++)
    if (m->routes[r].state) m->ops->destroy(m->routes[r].state);
  free(m->routes);
  m->routes = NULL;
  m->n_routes = 0;
}

void ht_model_destroy(ht_model *m) {
  if (!m) return;
  if (m->ops) model_free_routes(m);
  for (int j = 0; m->names && j < m->n_features; j++) free(m->names[j]);
  free(m->names);
  free(m->logged);
  free(m->options);
  free(m);
}

static ht_status copy_feature_names(ht_model *m, char **names, int n) {
  m->n_features = n;
  m->names = calloc((size_t)n + 1, sizeof *m->names);
  if (!m->names) return ht_error(HT_ERR_NOMEM, "out of memory");
  m->work_index = -1;
  for (int j = 0; j < n; j++) {
    m->names[j] = ht_strdup(names[j] ? names[j] : "");
    if (!m->names[j]) return ht_error(HT_ERR_NOMEM, "out of memory");
    if (strcmp(m->names[j], "work") == 0) m->work_index = j;
  }
  return HT_OK;
}

/* Decade boundaries: walk decades upwards, closing a route once it holds min_rows rows; a short
 * last route joins the previous one. */
static int plan_routes(const ht_dataset *d, int min_rows, double *lo, int max_routes) {
  double *dec = malloc((size_t)(d->n_rows + 1) * sizeof *dec);
  if (!dec) return -1;
  for (int i = 0; i < d->n_rows; i++) dec[i] = decade_of(d->work[i]);
  double cur = INFINITY;
  for (int i = 0; i < d->n_rows; i++) cur = fmin(cur, dec[i]);
  int n = 0;
  while (isfinite(cur) && n < max_routes) {
    int count = 0;
    double next = cur;
    lo[n] = cur;
    for (;;) {
      double nxt = INFINITY;
      for (int i = 0; i < d->n_rows; i++) {
        if (dec[i] == next) count++;
        if (dec[i] > next) nxt = fmin(nxt, dec[i]);
      }
      next = nxt;
      if (count >= min_rows || !isfinite(next)) break;
    }
    if (count < min_rows && n > 0) break; /* too few at the top: the previous route takes them */
    n++;
    cur = next;
  }
  free(dec);
  return n ? n : 1;
}

/* Which features the model sees in log form (see the header comment). */
static ht_status choose_logged(ht_model *m, const ht_dataset *d, int raw) {
  m->logged = calloc((size_t)m->n_features + 1, 1);
  if (!m->logged) return ht_error(HT_ERR_NOMEM, "out of memory");
  for (int j = 0; j < m->n_features && !raw; j++) {
    double lo = INFINITY, hi = 0;
    for (int i = 0; i < d->n_rows; i++) {
      double v = d->x[(size_t)i * d->n_features + j];
      lo = fmin(lo, v);
      hi = fmax(hi, v);
    }
    m->logged[j] = lo >= 0 && hi >= 4 * fmax(lo, 1);
  }
  return HT_OK;
}

static void transform_inputs(const ht_model *m, const double *x, double *out) {
  for (int j = 0; j < m->n_features; j++) out[j] = m->logged[j] ? log10(1 + fmax(x[j], 0)) : x[j];
}

static ht_status fit_route(ht_model *m, const ht_dataset *d, double lo, double hi, const ht_options *opt,
                           uint64_t seed, route *rt) {
  int *rows = malloc((size_t)(d->n_rows + 1) * sizeof *rows), n = 0;
  if (!rows) return ht_error(HT_ERR_NOMEM, "out of memory");
  for (int i = 0; i < d->n_rows; i++) {
    double dec = decade_of(d->work[i]);
    if (dec >= lo && dec < hi) rows[n++] = i;
  }
  ht_dataset *sub;
  ht_status st = ht_dataset_subset(d, rows, n, &sub);
  free(rows);
  if (st) return st;
  rt->y_lo = INFINITY;
  rt->y_hi = -INFINITY;
  for (int i = 0; i < sub->n_rows; i++) {
    sub->y[i] = to_target(m->tgt, sub->y[i], sub->work[i]);
    rt->y_lo = fmin(rt->y_lo, sub->y[i]);
    rt->y_hi = fmax(rt->y_hi, sub->y[i]);
    double *x = sub->x + (size_t)i * sub->n_features;
    transform_inputs(m, x, x);
  }
  st = m->ops->fit(&rt->state, sub, opt, seed);
  ht_dataset_destroy(sub);
  return st;
}

static ht_status check_training_data(const char *kind, const ht_dataset *d) {
  if (d->n_rows < 1) return ht_error(HT_ERR_INVALID, "%s: no training rows", kind);
  if (d->n_features > HT_MODEL_MAX_FEATURES)
    return ht_error(HT_ERR_INVALID, "%s: %d features (at most %d)", kind, d->n_features, HT_MODEL_MAX_FEATURES);
  for (int i = 0; i < d->n_rows; i++)
    if (!(d->y[i] > 0) || !isfinite(d->y[i]))
      return ht_error(HT_ERR_INVALID, "%s: training row %d has time %g (must be a positive number)", kind, i, d->y[i]);
  return HT_OK;
}

static ht_status fit_all(ht_model *m, const ht_dataset *train, const ht_options *opt, uint64_t seed) {
  int routed = strcmp(ht_options_str(opt, "route", "none"), "decade") == 0;
  if (!routed && strcmp(ht_options_str(opt, "route", "none"), "none") != 0)
    return ht_error(HT_ERR_INVALID, "model option route=%s: expected none or decade", ht_options_str(opt, "route", ""));
  int min_rows = (int)ht_options_int(opt, "route_min", 20);
  if ((routed || m->tgt == TARGET_RATE) && m->work_index < 0)
    return ht_error(HT_ERR_INVALID, "%s: route=decade and target=rate need a feature named \"work\"", m->ops->name);
  double lo[64];
  int n = routed ? plan_routes(train, min_rows < 1 ? 1 : min_rows, lo, 64) : 1;
  if (n < 0) return ht_error(HT_ERR_NOMEM, "out of memory");
  if (!routed) lo[0] = -INFINITY;
  m->routes = calloc((size_t)n, sizeof *m->routes);
  if (!m->routes) return ht_error(HT_ERR_NOMEM, "out of memory");
  m->n_routes = n;
  for (int r = 0; r < n; r++) {
    m->routes[r].lo_decade = r == 0 ? -INFINITY : lo[r];
    double hi = r + 1 < n ? lo[r + 1] : INFINITY;
    ht_status st = fit_route(m, train, m->routes[r].lo_decade, hi, opt, seed + (uint64_t)r, &m->routes[r]);
    if (st) return ht_error_prefix(st, "%s%s: ", m->ops->name, routed ? " (one decade's model)" : "");
  }
  return HT_OK;
}

/* Kind "auto": the candidate with the lowest validation error, fitted with its defaults. */
static ht_status fit_auto(const ht_dataset *train, const char *options, uint64_t seed, ht_model **out) {
  char chosen[64];
  double score;
  ht_status st = ht_model_select(train, options, seed, chosen, sizeof chosen, &score);
  if (!st) st = ht_model_fit(chosen, train, NULL, seed, out);
  if (st) return st;
  free((*out)->options);
  (*out)->options = ht_strfmt("auto: %s (validation error %.2f%%)", chosen, score);
  return (*out)->options ? HT_OK : ht_error(HT_ERR_NOMEM, "out of memory");
}

ht_status ht_model_fit(const char *kind, const ht_dataset *train, const char *options, uint64_t seed,
                       ht_model **out) {
  *out = NULL;
  if (strcmp(kind, "auto") == 0) {
    ht_status st = check_training_data(kind, train);
    return st ? st : fit_auto(train, options, seed, out);
  }
  const ht_model_ops *ops = ht_model_kind_find(kind);
  if (!ops) return ht_model_kind_check(kind);
  ht_status st = check_training_data(kind, train);
  if (st) return st;
  ht_options *opt;
  if ((st = ht_options_parse(options, &opt))) return ht_error_prefix(st, "model options: ");
  ht_model *m = model_new();
  if (!m) {
    ht_options_destroy(opt);
    return ht_error(HT_ERR_NOMEM, "out of memory");
  }
  m->ops = ops;
  m->options = ht_strdup(options ? options : "");
  st = copy_feature_names(m, train->names, train->n_features);
  /* A model's default "rate" needs a work feature; without one (a dataset not built by features.c)
   * its default falls back to log time. An explicit target=rate still requires it. */
  const char *def = strcmp(ops->default_target, "rate") == 0 && m->work_index < 0 ? "log" : ops->default_target;
  if (!st) st = parse_target(ht_options_str(opt, "target", def), &m->tgt);
  const char *inputs = ht_options_str(opt, "inputs", ops->raw_inputs ? "raw" : "log");
  if (!st && strcmp(inputs, "raw") != 0 && strcmp(inputs, "log") != 0)
    st = ht_error(HT_ERR_INVALID, "model option inputs=%s: expected log or raw", inputs);
  if (!st) st = choose_logged(m, train, strcmp(inputs, "raw") == 0);
  if (!st) st = fit_all(m, train, opt, seed);
  if (!st) st = ht_options_check(opt, "model", kind);
  if (!st) roofline_fit(&m->roof, train);
  ht_options_destroy(opt);
  if (st) {
    ht_model_destroy(m);
    return st;
  }
  *out = m;
  return HT_OK;
}

/* A model far outside its data (a linear model extrapolated on a feature it weights heavily)
 * can return any number. A rate (time per unit of work) stays within a factor 10 of the rates
 * seen; a log time within the training range widened by that range again (larger problems take
 * longer); a time stays positive. */
static double bounded(const ht_model *m, const route *rt, double v) {
  if (!isfinite(v)) v = v > 0 ? rt->y_hi : rt->y_lo;
  if (m->tgt == TARGET_TIME) return fmax(v, 1e-3 * rt->y_lo);
  double margin = m->tgt == TARGET_RATE ? log(10) : fmax(rt->y_hi - rt->y_lo, log(10));
  return fmin(fmax(v, rt->y_lo - margin), rt->y_hi + margin);
}

/* The route that predicts a problem of this work. */
static const route *route_of(const ht_model *m, double work) {
  int r = 0;
  if (m->n_routes > 1) {
    double dec = decade_of(work);
    while (r + 1 < m->n_routes && dec >= m->routes[r + 1].lo_decade) r++;
  }
  return &m->routes[r];
}

/* The time of target value v, kept near the route's range and above the roofline floor. */
static double time_of(const ht_model *m, const route *rt, double v, const double *x, double work) {
  return fmax(from_target(m->tgt, bounded(m, rt, v), work), roofline_floor(&m->roof, x));
}

double ht_model_predict(const ht_model *m, const double *x) {
  double work = work_of(m, x), t[HT_MODEL_MAX_FEATURES];
  transform_inputs(m, x, t);
  const route *rt = route_of(m, work);
  return time_of(m, rt, m->ops->predict(rt->state, t), x, work);
}

int ht_model_has_sd(const ht_model *m) { return m->ops->predict_sd != NULL; }

ht_status ht_model_predict_interval(const ht_model *m, const double *x, double z, double *time, double *lo,
                                    double *hi) {
  if (!m->ops->predict_sd)
    return ht_error(HT_ERR_UNSUPPORTED, "model kind %s gives no standard deviation (gp does)", m->ops->name);
  if (!(z >= 0) || !isfinite(z)) return ht_error(HT_ERR_INVALID, "prediction interval: z = %g (must be >= 0)", z);
  double work = work_of(m, x), t[HT_MODEL_MAX_FEATURES];
  transform_inputs(m, x, t);
  const route *rt = route_of(m, work);
  double v = m->ops->predict(rt->state, t), sd = m->ops->predict_sd(rt->state, t);
  if (!(sd >= 0)) sd = 0;
  *time = time_of(m, rt, v, x, work);
  *lo = time_of(m, rt, v - z * sd, x, work);
  *hi = time_of(m, rt, v + z * sd, x, work);
  return HT_OK;
}

double ht_model_roofline_floor(const ht_model *m, const double *x) { return roofline_floor(&m->roof, x); }

int ht_model_roofline(const ht_model *m, double *k, int *points) {
  if (m->roof.bytes_index < 0) return 0;
  if (k) *k = m->roof.k;
  if (points) *points = m->roof.curve.n;
  return 1;
}

const char *ht_model_kind(const ht_model *m) { return m->ops->name; }
const char *ht_model_options(const ht_model *m) { return m->options; }
int ht_model_n_features(const ht_model *m) { return m->n_features; }
const char *ht_model_feature_name(const ht_model *m, int i) {
  return i >= 0 && i < m->n_features ? m->names[i] : NULL;
}

ht_status ht_model_save(const ht_model *m, ht_buf *out) {
  mu_put_tag(out, "HTMODEL3");
  mu_put_str(out, m->ops->name);
  mu_put_str(out, m->options);
  mu_put_i64(out, m->tgt);
  mu_put_i64(out, m->n_features);
  for (int j = 0; j < m->n_features; j++) mu_put_str(out, m->names[j]);
  ht_buf_append_bytes(out, m->logged, (size_t)m->n_features);
  mu_put_i64(out, m->n_routes);
  for (int r = 0; r < m->n_routes; r++) {
    ht_buf sub = {0};
    ht_status st = m->ops->save(m->routes[r].state, &sub);
    if (!st && sub.failed) st = ht_error(HT_ERR_NOMEM, "out of memory saving a model");
    if (st) {
      ht_buf_free(&sub);
      return st;
    }
    mu_put_f64(out, m->routes[r].lo_decade);
    mu_put_f64(out, m->routes[r].y_lo);
    mu_put_f64(out, m->routes[r].y_hi);
    mu_put_bytes(out, sub.data ? sub.data : "", (int64_t)sub.len);
    ht_buf_free(&sub);
  }
  roofline_save(&m->roof, out);
  return out->failed ? ht_error(HT_ERR_NOMEM, "out of memory saving a model") : HT_OK;
}

/* Version 3 added the roofline floor; version 2 models (stored before it) load without one. */
static int model_version(mu_reader *r) {
  if (r->len - r->pos >= 8 && memcmp(r->p + r->pos, "HTMODEL2", 8) == 0) return mu_get_tag(r, "HTMODEL2") ? 2 : 0;
  return mu_get_tag(r, "HTMODEL3") ? 3 : 0;
}

static ht_status load_header(mu_reader *r, ht_model *m, int *version) {
  if (!(*version = model_version(r))) return ht_error(HT_ERR_PARSE, "not a hetune model of this version (bad magic)");
  char *kind = mu_get_str(r);
  m->ops = kind ? ht_model_kind_find(kind) : NULL;
  ht_status st = HT_OK;
  if (kind && !m->ops) st = ht_error_prefix(ht_model_kind_check(kind), "saved model: ");
  free(kind);
  if (st) return st;
  m->options = mu_get_str(r);
  m->tgt = (target)mu_get_count(r, TARGET_TIME, TARGET_RATE);
  int n = (int)mu_get_count(r, 0, HT_MODEL_MAX_FEATURES);
  char **names = calloc((size_t)n + 1, sizeof *names);
  if (!names) return ht_error(HT_ERR_NOMEM, "out of memory");
  for (int j = 0; j < n; j++) names[j] = mu_get_str(r);
  st = r->failed ? ht_error(HT_ERR_PARSE, "saved model: truncated header") : copy_feature_names(m, names, n);
  const unsigned char *flags = st ? NULL : mu_get_bytes(r, n);
  if (!st && !flags) st = ht_error(HT_ERR_PARSE, "saved model: truncated header");
  if (!st && !(m->logged = calloc((size_t)n + 1, 1))) st = ht_error(HT_ERR_NOMEM, "out of memory");
  if (!st) memcpy(m->logged, flags, (size_t)n);
  for (int j = 0; j < n; j++) free(names[j]);
  free(names);
  return st;
}

ht_status ht_model_load(const char *data, size_t len, ht_model **out) {
  *out = NULL;
  mu_reader r;
  mu_reader_init(&r, data, len);
  ht_model *m = model_new();
  if (!m) return ht_error(HT_ERR_NOMEM, "out of memory");
  int version;
  ht_status st = load_header(&r, m, &version);
  int n = st ? 0 : (int)mu_get_count(&r, 1, 64);
  if (!st && r.failed) st = ht_error(HT_ERR_PARSE, "saved model: bad route count");
  if (!st && !(m->routes = calloc((size_t)n, sizeof *m->routes))) st = ht_error(HT_ERR_NOMEM, "out of memory");
  for (int i = 0; !st && i < n; i++) {
    m->n_routes = i + 1;
    m->routes[i].lo_decade = mu_get_f64(&r);
    m->routes[i].y_lo = mu_get_f64(&r);
    m->routes[i].y_hi = mu_get_f64(&r);
    int64_t blen = mu_get_count(&r, 0, (int64_t)len);
    const void *blob = mu_get_bytes(&r, blen);
    if (!blob) st = ht_error(HT_ERR_PARSE, "saved %s model: truncated", m->ops->name);
    else st = m->ops->load(&m->routes[i].state, blob, (size_t)blen);
  }
  if (!st && version >= 3) st = roofline_load(&m->roof, &r, m->n_features);
  if (!st) st = mu_reader_finish(&r, m->ops->name);
  if (st) {
    ht_model_destroy(m);
    return st;
  }
  *out = m;
  return HT_OK;
}
