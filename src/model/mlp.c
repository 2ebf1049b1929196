/* mlp: a multilayer perceptron (fully connected, one linear output) trained with Adam.
 *
 * Algorithm: inputs are z-scored and the target standardised, so one learning rate suits every
 * dataset. Weights start Glorot-uniform (tanh) or He-uniform (relu) from ht_rng seeded with the
 * fit's seed, biases at 0. A random fraction `val` of the rows is held out; the rest is shuffled
 * each epoch and fed in mini-batches of `batch` rows to Adam on the mean squared error plus
 * l2 |W|^2 (biases are not penalised). After each epoch the held-out error is measured and the best
 * weights kept; training stops after `patience` epochs without improvement, or after `epochs`,
 * and the best weights are the model. With fewer than 20 rows nothing is held out and the
 * training error plays that role. One thread, fixed order: a seed gives bit-identical weights.
 * Reference 000 used a 10-7-1 network trained by Adam on normalised inputs (hidden=7 here).
 *
 * Options (defaults measured on a synthetic smooth problem with irrelevant features, 800 x 8 and
 * 3000 x 30 rows; held-out mean relative error of the time, fit time on a shared core):
 *   hidden=16x16   hidden layer sizes ("7", "32x32"; up to 8 layers of 1..4096). 16x16: 1.5% / 2.1%,
 *                  0.5 s / 1 s, ~1 us per prediction; 7 (reference 000): 2.4% / 2.1%; 16: 4.7% /
 *                  1.3%; 32x32: 2.0% on 3000 rows but 3 s and ~4 us per prediction
 *   act=tanh       tanh | relu: tanh is smooth, like time surfaces; relu was within noise
 *   lr=0.003       Adam step size (> 0): 0.001 is no better on average and trains 2-3x longer,
 *                  0.01 is worse (2.9%)
 *   epochs=400     most passes over the training rows (early stopping usually ends sooner)
 *   batch=32       rows per Adam step (>= 1)
 *   l2=1e-5        weight decay on the standardised problem (>= 0)
 *   val=0.15       fraction of rows held out for early stopping (0 <= val <= 0.9; 0 = none)
 *   patience=30    epochs without a better held-out error before stopping (>= 1)
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_util.h"

#define MAX_HIDDEN 8
#define MAX_WIDTH 4096
#define STACK_WIDTH 256

enum { ACT_TANH = 0, ACT_RELU = 1 };

typedef struct mlp {
  int act, n_layers;        /* weight layers: hidden layers + 1 */
  int size[MAX_HIDDEN + 2]; /* size[0] inputs ... size[n_layers] = 1 */
  int n_params, width;      /* width: the largest layer */
  double ymean, ysd;
  mu_scaler sc;
  double *w; /* per layer l: W (size[l+1] x size[l], row-major) then b (size[l+1]) */
} mlp;

typedef struct mlp_opts {
  int act, n_hidden, hidden[MAX_HIDDEN];
  int64_t epochs, batch, patience;
  double lr, l2, val;
} mlp_opts;

static void mlp_destroy(void *state) {
  mlp *m = state;
  if (!m) return;
  mu_scaler_free(&m->sc);
  free(m->w);
  free(m);
}

/* ---- options ---- */

static ht_status parse_hidden(const char *s, mlp_opts *o) {
  o->n_hidden = 0;
  const char *p = s;
  for (;;) {
    char *end;
    long v = (*p >= '0' && *p <= '9') ? strtol(p, &end, 10) : -1;
    if (v < 1 || v > MAX_WIDTH || o->n_hidden == MAX_HIDDEN || (*end && *end != 'x'))
      return ht_error(HT_ERR_INVALID, "mlp option hidden=%s: expected layer sizes like 7 or 32x32 (1..%d, at most %d)",
                      s, MAX_WIDTH, MAX_HIDDEN);
    o->hidden[o->n_hidden++] = (int)v;
    if (!*end) return HT_OK;
    p = end + 1;
  }
}

static ht_status read_opts(const ht_options *opt, mlp_opts *o) {
  const char *act = ht_options_str(opt, "act", "tanh");
  if (strcmp(act, "tanh") == 0)
    o->act = ACT_TANH;
  else if (strcmp(act, "relu") == 0)
    o->act = ACT_RELU;
  else
    return ht_error(HT_ERR_INVALID, "mlp option act=%s: expected tanh or relu", act);
  ht_status st;
  if ((st = parse_hidden(ht_options_str(opt, "hidden", "16x16"), o)) ||
      (st = mu_opt_double(opt, "mlp", "lr", 0.003, 1e-9, 10, &o->lr)) ||
      (st = mu_opt_int(opt, "mlp", "epochs", 400, 1, 1000000, &o->epochs)) ||
      (st = mu_opt_int(opt, "mlp", "batch", 32, 1, 1 << 20, &o->batch)) ||
      (st = mu_opt_double(opt, "mlp", "l2", 1e-5, 0, 1e3, &o->l2)) ||
      (st = mu_opt_double(opt, "mlp", "val", 0.15, 0, 0.9, &o->val)) ||
      (st = mu_opt_int(opt, "mlp", "patience", 30, 1, 1000000, &o->patience)))
    return st;
  return HT_OK;
}

/* ---- the network ---- */

/* Sizes, parameter count and widest layer from size[0..n_layers]; -1 when a size is out of range. */
static int layout(mlp *m) {
  int64_t n = 0;
  m->width = 0;
  for (int l = 0; l <= m->n_layers; l++) {
    if (m->size[l] < 1 || m->size[l] > (l == 0 ? (1 << 20) : MAX_WIDTH)) return -1;
    if (m->size[l] > m->width) m->width = m->size[l];
    if (l < m->n_layers) n += (int64_t)m->size[l + 1] * (m->size[l] + 1);
  }
  if (m->size[m->n_layers] != 1 || n > (1 << 28)) return -1;
  m->n_params = (int)n;
  return 0;
}

static double activate(int act, double v) { return act == ACT_TANH ? tanh(v) : (v > 0 ? v : 0); }

/* Forward pass from z (the scaled input). With a (sum of layer sizes) every layer's output is
 * kept for backpropagation; without, two width-sized buffers alternate. Returns the output. */
static double forward(const mlp *m, const double *w, const double *z, double *a, double *buf0, double *buf1) {
  const double *in = z;
  for (int l = 0; l < m->n_layers; l++) {
    int ni = m->size[l], no = m->size[l + 1], last = l + 1 == m->n_layers;
    double *out = a ? a : (l % 2 ? buf1 : buf0);
    const double *b = w + (size_t)no * ni;
    for (int i = 0; i < no; i++) {
      const double *row = w + (size_t)i * ni;
      double s = b[i];
      for (int j = 0; j < ni; j++) s += row[j] * in[j];
      out[i] = last ? s : activate(m->act, s);
    }
    w += (size_t)no * (ni + 1);
    in = out;
    if (a) a += no;
  }
  return in[0];
}

/* Adds this row's gradient of 0.5 (out - y)^2 to g; a holds the layer outputs of forward(), d
 * and dn are width-sized scratch. */
static void backward(const mlp *m, const double *w, const double *z, const double *a, double err, double *g, double *d,
                     double *dn) {
  size_t off[MAX_HIDDEN + 2], aoff[MAX_HIDDEN + 2];
  off[0] = aoff[0] = 0;
  for (int l = 0; l < m->n_layers; l++) {
    off[l + 1] = off[l] + (size_t)m->size[l + 1] * (m->size[l] + 1);
    aoff[l + 1] = aoff[l] + (size_t)m->size[l + 1];
  }
  d[0] = err;
  for (int l = m->n_layers - 1; l >= 0; l--) {
    int ni = m->size[l], no = m->size[l + 1];
    const double *in = l ? a + aoff[l - 1] : z, *wl = w + off[l];
    double *gl = g + off[l], *gb = gl + (size_t)no * ni;
    for (int i = 0; i < no; i++) {
      double *gr = gl + (size_t)i * ni;
      for (int j = 0; j < ni; j++) gr[j] += d[i] * in[j];
      gb[i] += d[i];
    }
    if (l == 0) break;
    for (int j = 0; j < ni; j++) dn[j] = 0;
    for (int i = 0; i < no; i++) {
      const double *row = wl + (size_t)i * ni;
      for (int j = 0; j < ni; j++) dn[j] += row[j] * d[i];
    }
    for (int j = 0; j < ni; j++) /* in[] is the activation's output */
      dn[j] *= m->act == ACT_TANH ? 1 - in[j] * in[j] : (in[j] > 0 ? 1 : 0);
    memcpy(d, dn, (size_t)ni * sizeof *d);
  }
}

static void init_weights(mlp *m, ht_rng *r) {
  double *w = m->w;
  for (int l = 0; l < m->n_layers; l++) {
    int ni = m->size[l], no = m->size[l + 1];
    double lim = m->act == ACT_RELU ? sqrt(6.0 / ni) : sqrt(6.0 / (ni + no));
    for (size_t k = 0; k < (size_t)no * ni; k++) w[k] = lim * (2 * ht_rng_uniform(r) - 1);
    for (int i = 0; i < no; i++) w[(size_t)no * ni + i] = 0;
    w += (size_t)no * (ni + 1);
  }
}

/* ---- training ---- */

typedef struct trainer {
  mlp *m;
  const mlp_opts *o;
  int n, p, n_train, n_val;
  double *z, *y; /* scaled rows and standardised targets */
  int *order;    /* rows: training first, then held out */
  double *g, *mom, *vel, *best, *acts, *d, *dn;
  int64_t step;
} trainer;

static double mean_error(trainer *t, int from, int count) {
  double s = 0, *b0 = t->d, *b1 = t->dn;
  for (int k = from; k < from + count; k++) {
    int i = t->order[k];
    double e = forward(t->m, t->m->w, t->z + (size_t)i * t->p, NULL, b0, b1) - t->y[i];
    s += e * e;
  }
  return count ? s / count : 0;
}

/* One Adam step on the rows order[from .. from+count). */
static void adam_step(trainer *t, int from, int count) {
  mlp *m = t->m;
  int np = m->n_params;
  memset(t->g, 0, (size_t)np * sizeof *t->g);
  for (int k = from; k < from + count; k++) {
    int i = t->order[k];
    const double *z = t->z + (size_t)i * t->p;
    double out = forward(m, m->w, z, t->acts, NULL, NULL);
    backward(m, m->w, z, t->acts, out - t->y[i], t->g, t->d, t->dn);
  }
  const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
  t->step++;
  double c1 = 1 - pow(b1, (double)t->step), c2 = 1 - pow(b2, (double)t->step);
  size_t off = 0;
  for (int l = 0; l < m->n_layers; l++) {
    size_t nw = (size_t)m->size[l + 1] * m->size[l], nb = (size_t)m->size[l + 1];
    for (size_t k = off; k < off + nw + nb; k++) {
      double g = t->g[k] / count + (k < off + nw ? 2 * t->o->l2 * m->w[k] : 0);
      t->mom[k] = b1 * t->mom[k] + (1 - b1) * g;
      t->vel[k] = b2 * t->vel[k] + (1 - b2) * g * g;
      m->w[k] -= t->o->lr * (t->mom[k] / c1) / (sqrt(t->vel[k] / c2) + eps);
    }
    off += nw + nb;
  }
}

static void shuffle(int *v, int n, ht_rng *r) {
  for (int i = n - 1; i > 0; i--) {
    int j = (int)ht_rng_below(r, (uint64_t)i + 1), tmp = v[i];
    v[i] = v[j];
    v[j] = tmp;
  }
}

static ht_status run_epochs(trainer *t, ht_rng *r) {
  mlp *m = t->m;
  double best = INFINITY;
  int64_t since = 0;
  for (int64_t e = 0; e < t->o->epochs && since < t->o->patience; e++) {
    shuffle(t->order, t->n_train, r);
    for (int from = 0; from < t->n_train; from += (int)t->o->batch) {
      int count = t->n_train - from < t->o->batch ? t->n_train - from : (int)t->o->batch;
      adam_step(t, from, count);
    }
    double err = t->n_val ? mean_error(t, t->n_train, t->n_val) : mean_error(t, 0, t->n_train);
    if (!isfinite(err)) break; /* diverged: keep the best weights so far */
    if (err < best) {
      best = err;
      since = 0;
      memcpy(t->best, m->w, (size_t)m->n_params * sizeof *m->w);
    } else {
      since++;
    }
  }
  if (!isfinite(best)) return ht_error(HT_ERR_INVALID, "mlp: training diverged (try a smaller lr)");
  memcpy(m->w, t->best, (size_t)m->n_params * sizeof *m->w);
  return HT_OK;
}

static ht_status train(mlp *m, const ht_dataset *d, const mlp_opts *o, uint64_t seed) {
  trainer t = {.m = m, .o = o, .n = d->n_rows, .p = d->n_features};
  size_t np = (size_t)m->n_params, na = 0;
  for (int l = 1; l <= m->n_layers; l++) na += (size_t)m->size[l];
  t.z = malloc((size_t)t.n * t.p * sizeof *t.z + 1);
  t.y = malloc((size_t)t.n * sizeof *t.y + 1);
  t.order = malloc((size_t)t.n * sizeof *t.order + 1);
  t.g = calloc(np, sizeof *t.g);
  t.mom = calloc(np, sizeof *t.mom);
  t.vel = calloc(np, sizeof *t.vel);
  t.best = calloc(np, sizeof *t.best);
  t.acts = calloc(na, sizeof *t.acts);
  t.d = calloc((size_t)m->width, sizeof *t.d);
  t.dn = calloc((size_t)m->width, sizeof *t.dn);
  ht_status st = HT_OK;
  if (!t.z || !t.y || !t.order || !t.g || !t.mom || !t.vel || !t.best || !t.acts || !t.d || !t.dn)
    st = ht_error(HT_ERR_NOMEM, "mlp: out of memory for %d rows and %zu weights", t.n, np);
  if (!st) {
    ht_rng r;
    ht_rng_seed(&r, seed);
    init_weights(m, &r);
    for (int i = 0; i < t.n; i++) {
      mu_scaler_apply(&m->sc, d->x + (size_t)i * t.p, t.z + (size_t)i * t.p);
      t.y[i] = (d->y[i] - m->ymean) / m->ysd;
      t.order[i] = i;
    }
    shuffle(t.order, t.n, &r);
    t.n_val = t.n >= 20 ? (int)(o->val * t.n) : 0;
    t.n_train = t.n - t.n_val;
    st = run_epochs(&t, &r);
  }
  free(t.z);
  free(t.y);
  free(t.order);
  free(t.g);
  free(t.mom);
  free(t.vel);
  free(t.best);
  free(t.acts);
  free(t.d);
  free(t.dn);
  return st;
}

static ht_status mlp_fit(void **state, const ht_dataset *d, const ht_options *opt, uint64_t seed) {
  *state = NULL;
  mlp_opts o;
  ht_status st = read_opts(opt, &o);
  if (st) return st;
  if (d->n_rows < 1 || d->n_features < 1)
    return ht_error(HT_ERR_INVALID, "mlp: needs at least one row and one feature (got %d x %d)", d->n_rows,
                    d->n_features);
  mlp *m = calloc(1, sizeof *m);
  if (!m) return ht_error(HT_ERR_NOMEM, "out of memory");
  m->act = o.act;
  m->n_layers = o.n_hidden + 1;
  m->size[0] = d->n_features;
  for (int l = 0; l < o.n_hidden; l++) m->size[l + 1] = o.hidden[l];
  m->size[m->n_layers] = 1;
  if (layout(m)) st = ht_error(HT_ERR_INVALID, "mlp: network too large for %d features", d->n_features);
  if (!st && !(m->w = calloc((size_t)m->n_params, sizeof *m->w))) st = ht_error(HT_ERR_NOMEM, "out of memory");
  mu_target_stats(d, &m->ymean, &m->ysd);
  if (!st) st = mu_scaler_fit(&m->sc, d, MU_ZSCORE);
  if (!st) st = train(m, d, &o, seed);
  if (st) {
    mlp_destroy(m);
    return st;
  }
  *state = m;
  return HT_OK;
}

static double mlp_predict(const void *state, const double *x) {
  const mlp *m = state;
  int p = m->size[0];
  double stack[3 * STACK_WIDTH], *buf = stack;
  if (p > STACK_WIDTH || m->width > STACK_WIDTH) {
    buf = malloc(((size_t)p + 2 * (size_t)m->width) * sizeof *buf);
    if (!buf) return m->ymean; /* out of memory on a very wide network: the mean is the safe answer */
  }
  size_t zs = buf == stack ? STACK_WIDTH : (size_t)p, ws = buf == stack ? STACK_WIDTH : (size_t)m->width;
  double *z = buf, *b0 = buf + zs, *b1 = b0 + ws;
  mu_scaler_apply(&m->sc, x, z);
  double out = forward(m, m->w, z, NULL, b0, b1);
  if (buf != stack) free(buf);
  return m->ymean + m->ysd * out;
}

/* ---- serialisation ---- */

static ht_status mlp_save(const void *state, ht_buf *out) {
  const mlp *m = state;
  mu_put_tag(out, "mlp1");
  mu_put_i64(out, m->act);
  mu_put_i64(out, m->n_layers);
  for (int l = 0; l <= m->n_layers; l++) mu_put_i64(out, m->size[l]);
  mu_put_f64(out, m->ymean);
  mu_put_f64(out, m->ysd);
  mu_scaler_save(&m->sc, out);
  mu_put_i64(out, m->n_params);
  mu_put_f64s(out, m->w, m->n_params);
  return HT_OK;
}

static int all_finite(const double *v, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (!isfinite(v[i])) return 0;
  return 1;
}

static ht_status mlp_load(void **state, const char *data, size_t len) {
  *state = NULL;
  mu_reader r;
  mu_reader_init(&r, data, len);
  mlp *m = calloc(1, sizeof *m);
  if (!m) return ht_error(HT_ERR_NOMEM, "out of memory");
  mu_get_tag(&r, "mlp1");
  m->act = (int)mu_get_count(&r, ACT_TANH, ACT_RELU);
  m->n_layers = (int)mu_get_count(&r, 1, MAX_HIDDEN + 1);
  for (int l = 0; l <= m->n_layers; l++) m->size[l] = (int)mu_get_count(&r, 1, 1 << 20);
  m->ymean = mu_get_f64(&r);
  m->ysd = mu_get_f64(&r);
  if (!r.failed && (layout(m) || !isfinite(m->ymean) || !isfinite(m->ysd))) r.failed = 1;
  if (!r.failed && mu_scaler_load(&m->sc, &r) == 0) {
    if (m->sc.n != m->size[0] || !all_finite(m->sc.offset, m->sc.n) || !all_finite(m->sc.scale, m->sc.n)) r.failed = 1;
    if (mu_get_count(&r, m->n_params, m->n_params) != m->n_params) r.failed = 1;
    if (!r.failed) m->w = mu_get_f64s(&r, m->n_params);
    if (!r.failed && !all_finite(m->w, m->n_params)) r.failed = 1;
  }
  ht_status st = mu_reader_finish(&r, "mlp");
  if (st) {
    mlp_destroy(m);
    return st;
  }
  *state = m;
  return HT_OK;
}

const ht_model_ops ht_model_mlp = {
  .name = "mlp",
  .summary = "multilayer perceptron (tanh/relu, Adam, early stopping on held-out rows)",
  .default_target = "rate",
  .fit = mlp_fit,
  .predict = mlp_predict,
  .save = mlp_save,
  .load = mlp_load,
  .destroy = mlp_destroy,
};
