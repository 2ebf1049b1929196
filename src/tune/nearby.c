/* Seed configs from other problem sizes: what was fastest for the nearest other sizes of the same
 * kernel is a better first guess for a new size than a random config (the GEMM warm start). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetune/tune.h"
#include "spec/spec_struct.h"

enum { MAX_PROBLEMS = 256, MAX_SIZES = 16 };

typedef struct near_problem {
  char problem[128], key[1024];
  double time_s, dist;
} near_problem;

typedef struct near_ctx {
  const ht_spec *spec;
  char problem[512];
  char names[MAX_SIZES][32];
  double logs[MAX_SIZES];  /* log of this problem's sizes */
  int n_sizes;
  near_problem p[MAX_PROBLEMS];
  int n;
} near_ctx;

/* Calls fn(name, value) for each "name=value" of a problem text "M=1024,N=512". */
static void each_size(const char *problem, void (*fn)(const char *name, size_t len, double v, void *ctx), void *ctx) {
  for (const char *s = problem; *s;) {
    size_t len = strcspn(s, "=,");
    double v = 0;
    if (s[len] == '=' && sscanf(s + len + 1, "%lf", &v) == 1 && v > 0) fn(s, len, v, ctx);
    const char *comma = strchr(s, ',');
    if (!comma) break;
    s = comma + 1;
  }
}

static void add_own_size(const char *name, size_t len, double v, void *ctx) {
  near_ctx *c = ctx;
  if (c->n_sizes == MAX_SIZES || len >= sizeof c->names[0]) return;
  memcpy(c->names[c->n_sizes], name, len);
  c->names[c->n_sizes][len] = 0;
  c->logs[c->n_sizes++] = log(v);
}

typedef struct other_sizes {
  const near_ctx *c;
  double logs[MAX_SIZES]; /* 0 (a size of 1) where the other problem lacks one */
} other_sizes;

static void add_other_size(const char *name, size_t len, double v, void *ctx) {
  other_sizes *o = ctx;
  for (int i = 0; i < o->c->n_sizes; i++)
    if (strlen(o->c->names[i]) == len && strncmp(o->c->names[i], name, len) == 0) o->logs[i] = log(v);
}

/* Distance between problems: the sum over this problem's sizes of |log ratio|. */
static double problem_dist(const near_ctx *c, const char *problem) {
  other_sizes o = {c, {0}};
  each_size(problem, add_other_size, &o);
  double d = 0;
  for (int i = 0; i < c->n_sizes; i++) d += fabs(c->logs[i] - o.logs[i]);
  return d;
}

/* Keeps the fastest successful config of each other problem of the same kernel source. */
static int visit(const ht_eval_record *r, void *ctx) {
  near_ctx *c = ctx;
  if (strcmp(r->source_hash, c->spec->source_hash) != 0 || strcmp(r->problem, c->problem) == 0) return 0;
  if (r->result.status != HT_EVAL_OK || !(r->result.time_s > 0) || strlen(r->config_key) >= sizeof c->p[0].key) return 0;
  int i = 0;
  while (i < c->n && strcmp(c->p[i].problem, r->problem) != 0) i++;
  if (i == c->n) {
    if (c->n == MAX_PROBLEMS || strlen(r->problem) >= sizeof c->p[0].problem) return 0;
    snprintf(c->p[c->n].problem, sizeof c->p[0].problem, "%s", r->problem);
    c->p[c->n].time_s = INFINITY;
    c->p[c->n++].dist = problem_dist(c, r->problem);
  }
  if (r->result.time_s < c->p[i].time_s) {
    c->p[i].time_s = r->result.time_s;
    snprintf(c->p[i].key, sizeof c->p[i].key, "%s", r->config_key);
  }
  return 0;
}

static int by_dist(const void *a, const void *b) {
  double x = ((const near_problem *)a)->dist, y = ((const near_problem *)b)->dist;
  return x < y ? -1 : x > y;
}

void ht_tune_configs_free(char **configs, int n) {
  for (int i = 0; configs && i < n; i++) free(configs[i]);
  free(configs);
}

/* The distinct keys of the nearest problems, up to max. */
static ht_status pick(const near_ctx *c, int max, char ***configs, int *n) {
  char **out = max > 0 && c->n > 0 ? calloc((size_t)(max < c->n ? max : c->n), sizeof *out) : NULL;
  if (max > 0 && c->n > 0 && !out) return ht_error(HT_ERR_NOMEM, "out of memory");
  for (int i = 0; i < c->n && *n < max; i++) {
    int dup = 0;
    for (int j = 0; j < *n; j++) dup |= strcmp(out[j], c->p[i].key) == 0;
    if (dup) continue;
    if (!(out[*n] = ht_strdup(c->p[i].key))) {
      ht_tune_configs_free(out, *n);
      *n = 0;
      return ht_error(HT_ERR_NOMEM, "out of memory");
    }
    ++*n;
  }
  *configs = out;
  return HT_OK;
}

ht_status ht_tune_nearby_bests(ht_store *st, const ht_spec *spec, int max, char ***configs, int *n) {
  *configs = NULL;
  *n = 0;
  if (!st || !spec) return ht_error(HT_ERR_INVALID, "ht_tune_nearby_bests: store and spec are needed");
  near_ctx *c = calloc(1, sizeof *c);
  if (!c) return ht_error(HT_ERR_NOMEM, "out of memory");
  c->spec = spec;
  ht_spec_problem_key(spec, c->problem, sizeof c->problem);
  each_size(c->problem, add_own_size, c);
  ht_eval_filter f = {.kernel_name = spec->name, .only_ok = 1};
  ht_status s = ht_store_each_eval(st, &f, visit, c);
  if (!s) {
    qsort(c->p, (size_t)c->n, sizeof c->p[0], by_dist);
    s = pick(c, max, configs, n);
  }
  free(c);
  return s;
}
