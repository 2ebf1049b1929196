/* gbt: gradient-boosted regression trees, trained by XGBoost and evaluated by our own loop.
 *
 * Algorithm: XGBoost (gbtree, reg:squarederror, tree_method=exact, nthread=1 so training is
 * deterministic for a seed) fits `rounds` trees to the target; base_score is set to the target
 * mean. The trained booster is then exported once through its JSON model (split feature, float32
 * threshold, children, default direction for missing values, leaf value) into one flat node array,
 * and the booster is freed: prediction, save and load need no XGBoost. Prediction follows
 * XGBoost's rules exactly: the input is rounded to float32 like XGBoost's DMatrix, x < threshold
 * goes left, a missing (NaN) input follows the node's default direction, and the result is
 * base_score plus the sum of the leaves (a test checks equality with XGBoost's own prediction).
 * Inputs are not scaled: trees are invariant to monotone transforms.
 *
 * Options (defaults measured on a synthetic smooth problem, 3000 rows x 30 features of which 3
 * matter; held-out mean relative error of the time / prediction latency):
 *   rounds=150          boosting rounds (1..10000): 50 rounds 3.4% / 0.75 us, 150 rounds 2.7% /
 *                       ~2 us, 300 rounds 2.7% / 3.3 us: the error is flat past ~150
 *   depth=5             max tree depth (1..16): 3 gives 2.9%, 6 is no better than 5; deeper trees
 *                       overfit a few thousand rows and cost prediction time
 *   eta=0.1             learning rate (0 < eta <= 1), the usual rate for 100-300 rounds
 *   subsample=0.8       row fraction per tree (0 < s <= 1): 2.7% against 3.0% with 1
 *   min_child_weight=1  minimum hessian (rows, for squared error) in a leaf (>= 0), XGBoost's default
 *   lambda=1            L2 penalty on leaf values (>= 0), XGBoost's default
 * Prediction walks 8 trees at a time (see gbt_predict): ~2 us with the defaults.
 */
#include "model/model_util.h"
#include "model/surrogate.h"

#ifndef HT_HAVE_XGBOOST
/* Built without XGBoost (HETUNE_WITH_XGBOOST=OFF): no gbt kind in the registry, and the trainer
 * model_guided would call says why. */
ht_status ht_gbt_train(void **state, const ht_dataset *d, const ht_gbt_params *p, uint64_t seed, void **keep) {
  (void)d, (void)p, (void)seed;
  *state = NULL;
  if (keep) *keep = NULL;
  return ht_model_kind_check("gbt");
}
#else
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xgboost/c_api.h>

#define GBT_MAX_NODES (1 << 26)

/* A node: 16 bytes, four to a cache line. A leaf keeps feature 0 and points to
 * itself, so a walk can take a fixed number of steps without testing for
 * leaves; its value sits in thr. */
typedef struct gnode {
  float thr;        /* split threshold, or the leaf value at a leaf */
  uint32_t feat;    /* split feature; bit 31: a missing value goes left */
  int32_t child[2]; /* [1] left, [0] right: absolute indices after this node (a
                       leaf: itself) */
} gnode;

#define DLEFT 0x80000000u

typedef struct gbt {
  int n_features, n_trees, n_nodes;
  double base;
  int32_t *root;  /* n_trees */
  int32_t *depth; /* n_trees: steps from the root to the deepest leaf */
  gnode *node;    /* n_nodes */
} gbt;

static void gbt_destroy(void *state) {
  gbt *g = state;
  if (!g) return;
  free(g->root);
  free(g->depth);
  free(g->node);
  free(g);
}

static ht_status read_opts(const ht_options *o, ht_gbt_params *p) {
  *p = (ht_gbt_params){0};
  ht_status st;
  if ((st = mu_opt_int(o, "gbt", "rounds", 150, 1, 10000, &p->rounds)) ||
      (st = mu_opt_int(o, "gbt", "depth", 5, 1, 16, &p->depth)) ||
      (st = mu_opt_double(o, "gbt", "eta", 0.1, 1e-6, 1, &p->eta)) ||
      (st = mu_opt_double(o, "gbt", "subsample", 0.8, 1e-3, 1, &p->subsample)) ||
      (st = mu_opt_double(o, "gbt", "min_child_weight", 1, 0, 1e9, &p->min_child_weight)) ||
      (st = mu_opt_double(o, "gbt", "lambda", 1, 0, 1e9, &p->lambda)))
    return st;
  return HT_OK;
}

/* ---- export: XGBoost's JSON model -> flat nodes ----
 * The JSON text is scanned, not parsed into a document: only base_score and five arrays per tree
 * are needed, and building the whole document (every tree's statistics too) cost more than the
 * training itself for model_guided's small fits (gemm_c: 75% more strategy time than XGBoost's own
 * prediction). Each key occurs once per tree and the trees follow one another, so tree t's arrays
 * are the first occurrences of their keys after the farthest array read for tree t - 1. Numbers
 * are read by strtod, as a JSON parser would: thresholds and leaves are written as the shortest
 * text of a float32, so the cast back is exact. */

enum { A_LEFT, A_RIGHT, A_FEAT, A_THR, A_DLEFT, N_ARRAYS };
static const char *const array_key[N_ARRAYS] = {"\"left_children\":", "\"right_children\":", "\"split_indices\":",
                                               "\"split_conditions\":", "\"default_left\":"};

typedef struct tree_arrays {
  double *v[N_ARRAYS];
  size_t n, cap; /* nodes in this tree; room in each array */
} tree_arrays;

/* The text just after the first occurrence of key at or after p (text ends with a NUL), or NULL. */
static const char *after_key(const char *p, const char *key) {
  const char *k = strstr(p, key);
  return k ? k + strlen(key) : NULL;
}

/* Reads the number array at *pp ("[1,2E-1]") into a->v[which]; *pp moves past its ']'. The first
 * array of a tree sets a->n, the others must have as many numbers. 0 on a malformed array. */
static int read_array(const char **pp, tree_arrays *a, int which) {
  const char *p = *pp;
  if (*p++ != '[') return 0;
  size_t n = 0;
  while (*p != ']') {
    if (n == a->cap) {
      size_t nc = a->cap ? 2 * a->cap : 256;
      for (int k = 0; k < N_ARRAYS; k++) {
        double *q = realloc(a->v[k], nc * sizeof *q);
        if (!q) return 0;
        a->v[k] = q;
      }
      a->cap = nc;
    }
    char *e;
    a->v[which][n++] = strtod(p, &e);
    if (e == p || (*e != ',' && *e != ']')) return 0;
    p = *e == ',' ? e + 1 : e;
  }
  if (which == 0) a->n = n;
  *pp = p + 1;
  return n == a->n;
}

static void set_node(gnode *d, float thr, int feat, int left, int right, int dleft) {
  d->thr = thr;
  d->feat = (feat < 0 ? 0u : (uint32_t)feat) | (dleft ? DLEFT : 0u);
  d->child[1] = left;
  d->child[0] = right;
}

/* Appends one tree's nodes, checking the structure our predict loop relies on.
 */
static ht_status export_tree(gbt *g, const tree_arrays *a, int *cap) {
  size_t n = a->n;
  if (n == 0 || n > (size_t)(GBT_MAX_NODES - g->n_nodes))
    return ht_error(HT_ERR_INTERNAL, "gbt: unexpected tree layout in XGBoost's model");
  if (g->n_nodes + (int)n > *cap) {
    int nc = (*cap + (int)n) * 2;
    gnode *nn = realloc(g->node, (size_t)nc * sizeof *nn);
    if (!nn) return ht_error(HT_ERR_NOMEM, "out of memory exporting trees");
    g->node = nn;
    *cap = nc;
  }
  int base = g->n_nodes;
  for (size_t i = 0; i < n; i++) {
    double l = a->v[A_LEFT][i], r = a->v[A_RIGHT][i], f = a->v[A_FEAT][i];
    int leaf = l < 0;
    if (!leaf && !(l > (double)i && r > (double)i && l < (double)n && r < (double)n && f >= 0 && f < g->n_features &&
                   l == (int)l && r == (int)r && f == (int)f))
      return ht_error(HT_ERR_INTERNAL, "gbt: unexpected node %zu in XGBoost's tree", i);
    set_node(&g->node[base + (int)i], (float)a->v[A_THR][i], leaf ? -1 : (int)f, base + (leaf ? (int)i : (int)l),
             base + (leaf ? (int)i : (int)r), a->v[A_DLEFT][i] != 0);
  }
  g->n_nodes += (int)n;
  return HT_OK;
}

/* Reads the trees after base_score: tree t's five arrays, then tree t + 1's, to the last. */
static ht_status export_trees(gbt *g, const char *text) {
  g->n_trees = 0;
  for (const char *p = text; (p = after_key(p, array_key[A_LEFT])); p++) g->n_trees++;
  if (g->n_trees < 1) return ht_error(HT_ERR_INTERNAL, "gbt: XGBoost's model has no trees");
  if (!(g->root = malloc((size_t)g->n_trees * sizeof *g->root))) return ht_error(HT_ERR_NOMEM, "out of memory");
  tree_arrays a = {0};
  ht_status st = HT_OK;
  const char *from = text;
  int cap = 0;
  for (int t = 0; !st && t < g->n_trees; t++) {
    const char *farthest = from;
    for (int k = 0; !st && k < N_ARRAYS; k++) {
      const char *p = after_key(from, array_key[k]);
      if (!p || !read_array(&p, &a, k))
        st = ht_error(HT_ERR_INTERNAL, "gbt: tree %d of XGBoost's JSON model: bad %.*s array", t,
                      (int)strlen(array_key[k]) - 3, array_key[k] + 1);
      else if (p > farthest)
        farthest = p;
    }
    g->root[t] = g->n_nodes;
    if (!st) st = export_tree(g, &a, &cap);
    from = farthest;
  }
  for (int k = 0; k < N_ARRAYS; k++) free(a.v[k]);
  return st;
}

/* Each tree's depth, for the fixed-length walks of predict (children follow
 * their parents). */
static int tree_depths(gbt *g) {
  int32_t *d = calloc((size_t)g->n_nodes, sizeof *d);
  if (!(g->depth = calloc((size_t)g->n_trees, sizeof *g->depth)) || !d) {
    free(d);
    return -1;
  }
  for (int t = 0; t < g->n_trees; t++) {
    int end = t + 1 < g->n_trees ? g->root[t + 1] : g->n_nodes;
    for (int i = g->root[t]; i < end; i++) {
      const gnode *n = &g->node[i];
      if (n->child[1] == i) continue;
      /* the deepest path wins (only a corrupt tree has two parents for a node) */
      for (int k = 0; k < 2; k++)
        if (d[n->child[k]] < d[i] + 1) d[n->child[k]] = d[i] + 1;
      if (d[i] + 1 > g->depth[t]) g->depth[t] = d[i] + 1;
    }
  }
  free(d);
  return 0;
}

static ht_status export_model(gbt *g, BoosterHandle bst) {
  bst_ulong len = 0;
  const char *out = NULL;
  if (XGBoosterSaveModelToBuffer(bst, "{\"format\": \"json\"}", &len, &out))
    return ht_error(HT_ERR_INTERNAL, "gbt: XGBoost model export failed: %s", XGBGetLastError());
  char *text = malloc((size_t)len + 1); /* NUL-terminated for strstr and strtod */
  if (!text) return ht_error(HT_ERR_NOMEM, "out of memory exporting trees");
  memcpy(text, out, (size_t)len);
  text[len] = 0;
  /* base_score is a string ("5E-1") in XGBoost 1.x and may be a number in later versions */
  const char *b = after_key(text, "\"base_score\":");
  char *e = NULL;
  if (b) g->base = (float)strtod(b + (*b == '"'), &e);
  ht_status st = b && e != b + (*b == '"') ? HT_OK : ht_error(HT_ERR_INTERNAL, "gbt: no base_score in XGBoost's model");
  if (!st) st = export_trees(g, text);
  if (!st && tree_depths(g)) st = ht_error(HT_ERR_NOMEM, "out of memory");
  free(text);
  return st;
}

/* ---- training ---- */

/* The booster's parameters: the strings XGBoost takes, fixed settings first. */
static int set_params(BoosterHandle bst, const ht_gbt_params *p, uint64_t seed, double mean) {
  char buf[6][40], base[40];
  snprintf(buf[0], sizeof buf[0], "%d", (int)(seed & 0x7fffffff));
  snprintf(buf[1], sizeof buf[1], "%d", (int)p->depth);
  snprintf(buf[2], sizeof buf[2], "%.17g", p->eta);
  snprintf(buf[3], sizeof buf[3], "%.17g", p->subsample);
  snprintf(buf[4], sizeof buf[4], "%.17g", p->min_child_weight);
  snprintf(buf[5], sizeof buf[5], "%.17g", p->lambda);
  snprintf(base, sizeof base, "%.9g", mean);
  return XGBoosterSetParam(bst, "verbosity", "0") || XGBoosterSetParam(bst, "nthread", "1") ||
         XGBoosterSetParam(bst, "seed", buf[0]) || XGBoosterSetParam(bst, "booster", "gbtree") ||
         XGBoosterSetParam(bst, "tree_method", "exact") ||
         XGBoosterSetParam(bst, "objective", p->rank ? "rank:pairwise" : "reg:squarederror") ||
         XGBoosterSetParam(bst, "max_depth", buf[1]) || XGBoosterSetParam(bst, "eta", buf[2]) ||
         XGBoosterSetParam(bst, "subsample", buf[3]) || XGBoosterSetParam(bst, "min_child_weight", buf[4]) ||
         XGBoosterSetParam(bst, "lambda", buf[5]) || (!p->rank && XGBoosterSetParam(bst, "base_score", base));
}

/* The training matrix: features and labels as float32, the weights, and for ranking one group of
 * every row. */
static int make_matrix(const ht_dataset *d, const ht_gbt_params *p, float *x, float *y, DMatrixHandle *dm) {
  size_t n = (size_t)d->n_rows, nf = (size_t)d->n_features;
  for (size_t i = 0; i < n * nf; i++) x[i] = (float)d->x[i];
  for (size_t i = 0; i < n; i++) y[i] = (float)d->y[i];
  if (XGDMatrixCreateFromMat(x, (bst_ulong)n, (bst_ulong)nf, NAN, dm) ||
      XGDMatrixSetFloatInfo(*dm, "label", y, (bst_ulong)n))
    return 1;
  if (p->weight) {
    for (size_t i = 0; i < n; i++) y[i] = (float)p->weight[i];
    if (XGDMatrixSetFloatInfo(*dm, "weight", y, (bst_ulong)n)) return 1;
  }
  unsigned group = (unsigned)n;
  return p->rank && XGDMatrixSetUIntInfo(*dm, "group", &group, 1);
}

static ht_status train(gbt *g, const ht_dataset *d, const ht_gbt_params *p, uint64_t seed, BoosterHandle *out) {
  size_t n = (size_t)d->n_rows, nf = (size_t)d->n_features;
  float *x = malloc(n * nf * sizeof *x + 1), *y = malloc(n * sizeof *y + 1);
  if (!x || !y) {
    free(x);
    free(y);
    return ht_error(HT_ERR_NOMEM, "gbt: out of memory for %zu rows", n);
  }
  double mean = 0;
  for (size_t i = 0; i < n; i++) mean += d->y[i];
  mean /= (double)n;
  DMatrixHandle dm = NULL;
  BoosterHandle bst = NULL;
  int bad = make_matrix(d, p, x, y, &dm) || XGBoosterCreate(&dm, 1, &bst) || set_params(bst, p, seed, mean);
  for (int it = 0; !bad && it < p->rounds; it++) bad = XGBoosterUpdateOneIter(bst, it, dm) != 0;
  free(x);
  free(y);
  ht_status st = bad ? ht_error(HT_ERR_INTERNAL, "gbt: XGBoost training failed: %s", XGBGetLastError()) : HT_OK;
  if (!st) st = export_model(g, bst);
  if (dm) XGDMatrixFree(dm);
  if (out && !st)
    *out = bst;
  else if (bst)
    XGBoosterFree(bst);
  return st;
}

ht_status ht_gbt_train(void **state, const ht_dataset *d, const ht_gbt_params *p, uint64_t seed, void **keep) {
  *state = NULL;
  if (d->n_rows < 1 || d->n_features < 1)
    return ht_error(HT_ERR_INVALID, "gbt: needs at least one row and one feature (got %d x %d)", d->n_rows,
                    d->n_features);
  gbt *g = calloc(1, sizeof *g);
  if (!g) return ht_error(HT_ERR_NOMEM, "out of memory");
  g->n_features = d->n_features;
  ht_status st = train(g, d, p, seed, (BoosterHandle *)keep);
  if (st) {
    gbt_destroy(g);
    return st;
  }
  *state = g;
  return HT_OK;
}

static ht_status gbt_fit(void **state, const ht_dataset *d, const ht_options *opt, uint64_t seed) {
  *state = NULL;
  ht_gbt_params p;
  ht_status st = read_opts(opt, &p);
  return st ? st : ht_gbt_train(state, d, &p, seed, NULL);
}

/* ---- prediction ---- */

/* One step down: x < thr goes left; a missing value (NaN) goes the node's
 * default way. */
static inline const gnode *step(const gnode *nd, const gnode *n, const double *x) {
  float v = (float)x[n->feat & ~DLEFT]; /* XGBoost compares float32 inputs */
  int left = (v < n->thr) | ((v != v) & (int)(n->feat >> 31));
  return nd + n->child[left]; /* an indexed load, not a branch: the way is unpredictable */
}

#define LANES 8

/* Trees walked LANES at a time for the group's depth, leaves standing still:
 * the walks are independent chains of loads, so the CPU overlaps their
 * latencies (about 3x faster than one tree after another). Leaves are summed in
 * tree order in float32 from base_score, as XGBoost does. */
static double gbt_predict(const void *state, const double *x) {
  const gbt *g = state;
  const gnode *nd = g->node;
  float sum = (float)g->base;
  int t = 0;
  for (; t + LANES <= g->n_trees; t += LANES) {
    const gnode *n[LANES];
    int depth = 0;
    for (int k = 0; k < LANES; k++) {
      n[k] = nd + g->root[t + k];
      if (g->depth[t + k] > depth) depth = g->depth[t + k];
    }
    for (int s = 0; s < depth; s++)
      for (int k = 0; k < LANES; k++) n[k] = step(nd, n[k], x);
    for (int k = 0; k < LANES; k++) sum += n[k]->thr;
  }
  for (; t < g->n_trees; t++) {
    const gnode *n = nd + g->root[t];
    for (int s = 0; s < g->depth[t]; s++) n = step(nd, n, x);
    sum += n->thr;
  }
  return sum;
}

/* ---- serialisation ---- */

static ht_status gbt_save(const void *state, ht_buf *out) {
  const gbt *g = state;
  mu_put_tag(out, "gbt1");
  mu_put_i64(out, g->n_features);
  mu_put_f64(out, g->base);
  mu_put_i64(out, g->n_trees);
  mu_put_i64(out, g->n_nodes);
  for (int t = 0; t < g->n_trees; t++) mu_put_i64(out, g->root[t]);
  for (int i = 0; i < g->n_nodes; i++) {
    const gnode *n = &g->node[i];
    int leaf = n->child[1] == i;
    mu_put_f64(out, n->thr);
    mu_put_i64(out, leaf ? -1 : (int64_t)(n->feat & ~DLEFT));
    mu_put_i64(out, n->child[1]);
    mu_put_i64(out, n->child[0]);
    mu_put_i64(out, n->feat >> 31);
  }
  return HT_OK;
}

/* Children must lie after their node and inside their tree, so every walk ends
 * at a leaf within the tree's depth. */
static int load_nodes(gbt *g, mu_reader *r) {
  for (int t = 0; t < g->n_trees && !r->failed; t++) {
    int end = t + 1 < g->n_trees ? g->root[t + 1] : g->n_nodes;
    for (int i = g->root[t]; i < end && !r->failed; i++) {
      double thr = mu_get_f64(r);
      int feat = (int)mu_get_count(r, -1, g->n_features - 1);
      int lo = feat < 0 ? i : i + 1, hi = feat < 0 ? i : end - 1;
      int left = (int)mu_get_count(r, lo, hi), right = (int)mu_get_count(r, lo, hi);
      int dleft = (int)mu_get_count(r, 0, 1);
      if (!isfinite(thr) || (double)(float)thr != thr) r->failed = 1;
      set_node(&g->node[i], (float)thr, feat, left, right, dleft);
    }
  }
  return r->failed ? -1 : 0;
}

static ht_status gbt_load(void **state, const char *data, size_t len) {
  *state = NULL;
  mu_reader r;
  mu_reader_init(&r, data, len);
  gbt *g = calloc(1, sizeof *g);
  if (!g) return ht_error(HT_ERR_NOMEM, "out of memory");
  mu_get_tag(&r, "gbt1");
  g->n_features = (int)mu_get_count(&r, 1, 1 << 20);
  g->base = mu_get_f64(&r);
  g->n_trees = (int)mu_get_count(&r, 1, (int64_t)(len / 8));
  g->n_nodes = (int)mu_get_count(&r, 1, (int64_t)(len / 40));
  if (!r.failed && !isfinite(g->base)) r.failed = 1;
  if (!r.failed && (!(g->root = malloc((size_t)g->n_trees * sizeof *g->root)) ||
                    !(g->node = malloc((size_t)g->n_nodes * sizeof *g->node)))) {
    gbt_destroy(g);
    return ht_error(HT_ERR_NOMEM, "out of memory loading a gbt model");
  }
  /* roots: the first at 0, each after the previous, so trees are consecutive
   * non-empty ranges */
  for (int t = 0; t < g->n_trees && !r.failed; t++)
    g->root[t] = (int32_t)mu_get_count(&r, t ? g->root[t - 1] + 1 : 0, t ? g->n_nodes - 1 : 0);
  if (!r.failed) load_nodes(g, &r);
  ht_status st = mu_reader_finish(&r, "gbt");
  if (!st && tree_depths(g)) st = ht_error(HT_ERR_NOMEM, "out of memory loading a gbt model");
  if (st) {
    gbt_destroy(g);
    return st;
  }
  *state = g;
  return HT_OK;
}

const ht_model_ops ht_model_gbt = {
  .name = "gbt",
  .summary = "gradient-boosted trees (XGBoost training, own fast tree evaluation)",
  .default_target = "rate",
  .fit = gbt_fit,
  .predict = gbt_predict,
  .save = gbt_save,
  .load = gbt_load,
  .destroy = gbt_destroy,
};
#endif /* HT_HAVE_XGBOOST */
