/* Datasets from measurements: hetune export CSV files or the store, turned into feature rows. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/csv.h"
#include "hetune/model.h"
#include "spec/spec_struct.h"

typedef struct builder {
  ht_feature_set *fs;
  const ht_spec *spec;
  const char *device_id; /* filter, may be NULL */
  int nf;
  double *x, *y, *work;
  int *group;
  int *source; /* the data source (file) of each measured row */
  int n, cap;
  int cur_source, n_sources;
  double *source_ratio; /* n_sources, see ht_dataset.source_ratio */
  int n_measured; /* rows before repeats were merged */
  int n_repeat_pairs;
  double repeat_diff_median, repeat_diff_p90;
  double *reps; /* kept rows x HT_DATASET_REPEATS measurements, for the dataset's repeats */
  int *n_reps, repeated;
  char **labels;
  int n_groups;
  int64_t *sizes;
  ht_value *params;
} builder;

static ht_status builder_init(builder *b, ht_feature_set *fs, const char *device_id) {
  memset(b, 0, sizeof *b);
  b->fs = fs;
  b->spec = ht_features_spec(fs);
  b->device_id = device_id && *device_id ? device_id : NULL;
  b->nf = ht_features_count(fs);
  b->sizes = calloc((size_t)b->spec->n_sizes + 1, sizeof *b->sizes);
  b->params = calloc((size_t)b->spec->n_params + 1, sizeof *b->params);
  return b->sizes && b->params ? HT_OK : ht_error(HT_ERR_NOMEM, "out of memory");
}

static void builder_free(builder *b) {
  free(b->x);
  free(b->y);
  free(b->work);
  free(b->group);
  free(b->source);
  free(b->source_ratio);
  free(b->reps);
  free(b->n_reps);
  for (int g = 0; g < b->n_groups; g++) free(b->labels[g]);
  free(b->labels);
  free(b->sizes);
  free(b->params);
}

static int find_group(builder *b, const char *label) {
  for (int g = b->n_groups - 1; g >= 0; g--)
    if (strcmp(b->labels[g], label) == 0) return g;
  char **l = realloc(b->labels, (size_t)(b->n_groups + 1) * sizeof *l);
  if (!l) return -1;
  b->labels = l;
  if (!(l[b->n_groups] = ht_strdup(label))) return -1;
  return b->n_groups++;
}

static ht_status grow(builder *b) {
  if (b->n < b->cap) return HT_OK;
  int cap = b->cap ? 2 * b->cap : 256;
  double *x = realloc(b->x, (size_t)cap * b->nf * sizeof *x);
  if (x) b->x = x;
  double *y = realloc(b->y, (size_t)cap * sizeof *y);
  if (y) b->y = y;
  double *w = realloc(b->work, (size_t)cap * sizeof *w);
  if (w) b->work = w;
  int *g = realloc(b->group, (size_t)cap * sizeof *g);
  if (g) b->group = g;
  int *src = realloc(b->source, (size_t)cap * sizeof *src);
  if (src) b->source = src;
  if (!x || !y || !w || !g || !src) return ht_error(HT_ERR_NOMEM, "out of memory for %d dataset rows", cap);
  b->cap = cap;
  return HT_OK;
}

/* One successful evaluation; where names it in messages. */
static ht_status builder_add(builder *b, const char *device, const char *problem, const char *config, double time,
                             const char *where) {
  if (b->device_id && strcmp(device, b->device_id) != 0) return HT_OK;
  if (!(time > 0) || !isfinite(time)) return ht_error(HT_ERR_INVALID, "%s: time %g is not a positive number", where, time);
  ht_status st = grow(b);
  if (!st) st = ht_features_parse_problem(b->spec, problem, b->sizes, where);
  if (!st) st = ht_features_parse_config(b->spec, config, b->params, where);
  if (!st) st = ht_features_compute(b->fs, b->sizes, b->params, b->x + (size_t)b->n * b->nf);
  if (st) return st;
  char *label = ht_strfmt("%s %s %s", b->spec->name, device, problem);
  int g = label ? find_group(b, label) : -1;
  free(label);
  if (g < 0) return ht_error(HT_ERR_NOMEM, "out of memory");
  double work = 1;
  for (int i = 0; i < b->spec->n_sizes; i++) work *= (double)b->sizes[i];
  b->y[b->n] = time;
  b->work[b->n] = work;
  b->group[b->n] = g;
  b->source[b->n] = b->cur_source;
  b->n++;
  return HT_OK;
}

/* ---- repeated measurements ---- */

typedef struct row_key {
  uint64_t hash; /* of the row's group and features */
  int row;
} row_key;

static int cmp_row_key(const void *a, const void *b) {
  const row_key *x = a, *y = b;
  if (x->hash != y->hash) return x->hash < y->hash ? -1 : 1;
  return (x->row > y->row) - (x->row < y->row);
}

static int same_row(const builder *b, int i, int j) {
  return b->group[i] == b->group[j] &&
         memcmp(b->x + (size_t)i * b->nf, b->x + (size_t)j * b->nf, (size_t)b->nf * sizeof(double)) == 0;
}

/* rep[i]: the first row measuring the same config at the same problem on the same device as row i
 * (same group, same features: the parameters are features, so equal features mean one config). */
static ht_status find_repeats(const builder *b, int *rep) {
  row_key *k = malloc((size_t)b->n * sizeof *k);
  if (!k) return ht_error(HT_ERR_NOMEM, "out of memory");
  for (int i = 0; i < b->n; i++) {
    k[i].hash = ht_hash64(b->x + (size_t)i * b->nf, (size_t)b->nf * sizeof(double), (uint64_t)b->group[i] + 1);
    k[i].row = i;
    rep[i] = -1;
  }
  qsort(k, (size_t)b->n, sizeof *k, cmp_row_key);
  for (int s = 0, e; s < b->n; s = e) { /* a run of equal hashes, rows ascending */
    for (e = s + 1; e < b->n && k[e].hash == k[s].hash;) e++;
    for (int i = s; i < e; i++) {
      if (rep[k[i].row] >= 0) continue;
      rep[k[i].row] = k[i].row;
      for (int j = i + 1; j < e; j++)
        if (rep[k[j].row] < 0 && same_row(b, k[i].row, k[j].row)) rep[k[j].row] = k[i].row;
    }
  }
  free(k);
  return HT_OK;
}

/* Each source's median ratio of its repeated measurements to their rows' medians. */
static ht_status source_medians(builder *b, ht_buf *ratios) {
  if (!(b->source_ratio = malloc((size_t)b->n_sources * sizeof *b->source_ratio)))
    return ht_error(HT_ERR_NOMEM, "out of memory");
  for (int k = 0; k < b->n_sources; k++) {
    int n = ratios[k].failed ? 0 : (int)(ratios[k].len / sizeof(double));
    b->source_ratio[k] = n ? ht_stat_median((const double *)ratios[k].data, n) : NAN;
  }
  return HT_OK;
}

/* Repeated measurements of one config at one problem (several recording passes, a tuning run
 * repeated) become one row with the median of their times: repeats left as separate rows would
 * fall on both sides of a cross-validation split and overstate a model's accuracy. */
static ht_status merge_repeats(builder *b) {
  int *rep = malloc((size_t)b->n * sizeof *rep), *next = malloc((size_t)b->n * sizeof *next);
  int *tail = malloc((size_t)b->n * sizeof *tail);
  double *times = malloc((size_t)b->n * sizeof *times);
  b->reps = malloc(((size_t)b->n + 1) * HT_DATASET_REPEATS * sizeof *b->reps);
  b->n_reps = malloc(((size_t)b->n + 1) * sizeof *b->n_reps);
  ht_status st = rep && next && tail && times && b->reps && b->n_reps ? find_repeats(b, rep)
                                                                      : ht_error(HT_ERR_NOMEM, "out of memory");
  for (int i = 0; !st && i < b->n; i++) { /* chain each row's repeats, ascending: rep[i] <= i */
    next[i] = -1;
    if (rep[i] != i) next[tail[rep[i]]] = i;
    tail[rep[i]] = i;
  }
  int kept = 0;
  ht_buf diffs = {0}; /* relative differences of the pairs of repeats, doubles */
  /* per source; without memory for them the dataset only lacks its drift figures */
  ht_buf *ratios = b->n_sources > 1 ? calloc((size_t)b->n_sources, sizeof *ratios) : NULL;
  for (int i = 0; !st && i < b->n; i++) {
    if (rep[i] != i) continue;
    int n_t = 0;
    for (int j = i; j >= 0; j = next[j]) times[n_t++] = b->y[j];
    for (int u = 0; u < n_t; u++)
      for (int v = u + 1; v < n_t; v++) {
        double d = fabs(times[u] - times[v]) / fmin(times[u], times[v]);
        ht_buf_append_bytes(&diffs, &d, sizeof d);
      }
    b->n_reps[kept] = n_t < HT_DATASET_REPEATS ? n_t : HT_DATASET_REPEATS;
    memcpy(b->reps + (size_t)kept * HT_DATASET_REPEATS, times, (size_t)b->n_reps[kept] * sizeof *times);
    b->repeated |= n_t > 1;
    memmove(b->x + (size_t)kept * b->nf, b->x + (size_t)i * b->nf, (size_t)b->nf * sizeof(double));
    b->y[kept] = ht_stat_median(times, n_t);
    for (int j = i, u = 0; ratios && n_t > 1 && j >= 0; j = next[j], u++) { /* times[u] is row j's */
      double r = times[u] / b->y[kept];
      ht_buf_append_bytes(&ratios[b->source[j]], &r, sizeof r);
    }
    b->work[kept] = b->work[i];
    b->group[kept++] = b->group[i];
  }
  if (!st) {
    b->n_measured = b->n;
    b->n = kept;
    int n_d = diffs.failed ? 0 : (int)(diffs.len / sizeof(double));
    double *d = (double *)diffs.data;
    if (n_d) qsort(d, (size_t)n_d, sizeof *d, ht_stat_cmp_double);
    b->n_repeat_pairs = n_d;
    b->repeat_diff_median = n_d ? ht_stat_median(d, n_d) : NAN;
    b->repeat_diff_p90 = n_d ? d[(int)(0.9 * (n_d - 1))] : NAN;
  }
  if (!st && ratios) st = source_medians(b, ratios);
  for (int k = 0; ratios && k < b->n_sources; k++) ht_buf_free(&ratios[k]);
  free(ratios);
  ht_buf_free(&diffs);
  free(rep);
  free(next);
  free(tail);
  free(times);
  return st;
}

static ht_status builder_finish(builder *b, const char *source, ht_dataset **out) {
  if (b->n == 0)
    return ht_error(HT_ERR_INVALID, "%s: no successful evaluation of kernel '%s'%s%s", source, b->spec->name,
                    b->device_id ? " on device " : "", b->device_id ? b->device_id : "");
  ht_status st = merge_repeats(b);
  if (st) return st;
  ht_dataset *d;
  if ((st = ht_dataset_create(b->n, b->nf, &d))) return st;
  d->n_measured = b->n_measured;
  d->n_repeat_pairs = b->n_repeat_pairs;
  d->repeat_diff_median = b->repeat_diff_median;
  d->repeat_diff_p90 = b->repeat_diff_p90;
  if (b->source_ratio) { /* the dataset takes it over */
    d->n_sources = b->n_sources;
    d->source_ratio = b->source_ratio;
    b->source_ratio = NULL;
  }
  if (b->repeated) { /* the dataset takes them over */
    d->repeats = b->reps;
    d->n_repeats = b->n_reps;
    b->reps = NULL;
    b->n_reps = NULL;
  }
  memcpy(d->x, b->x, (size_t)b->n * b->nf * sizeof(double));
  memcpy(d->y, b->y, (size_t)b->n * sizeof(double));
  memcpy(d->work, b->work, (size_t)b->n * sizeof(double));
  memcpy(d->group, b->group, (size_t)b->n * sizeof(int));
  for (int j = 0; j < b->nf && !st; j++)
    if (!(d->names[j] = ht_strdup(ht_features_name(b->fs, j)))) st = ht_error(HT_ERR_NOMEM, "out of memory");
  d->n_groups = b->n_groups;
  d->group_label = b->labels;
  b->labels = NULL;
  b->n_groups = 0;
  if (st) {
    ht_dataset_destroy(d);
    return st;
  }
  *out = d;
  return HT_OK;
}

/* ---- CSV ---- */

enum { C_KERNEL, C_DEVICE, C_PROBLEM, C_CONFIG, C_STATUS, C_TIME, C_COUNT };

static ht_status csv_columns(const ht_csv_row *head, int *c, const char *path) {
  static const char *const names[] = {"kernel", "device_id", "problem", "config", "status", "time_s"};
  for (int k = 0; k < C_COUNT; k++)
    if ((c[k] = ht_csv_col(head, names[k])) < 0)
      return ht_error(HT_ERR_PARSE, "%s: the CSV header has no '%s' column (write it with hetune export --format csv)",
                      path, names[k]);
  return HT_OK;
}

static ht_status csv_row_add(builder *b, const ht_csv_row *head, const ht_csv_row *r, const int *c, const char *path,
                             size_t line) {
  if (r->n == 1 && !r->f[0][0]) return HT_OK; /* blank line */
  if (r->n != head->n)
    return ht_error(HT_ERR_PARSE, "%s:%zu: %d fields, the header has %d", path, line, r->n, head->n);
  if (strcmp(r->f[c[C_KERNEL]], b->spec->name) != 0 || strcmp(r->f[c[C_STATUS]], "ok") != 0) return HT_OK;
  char where[600], *end;
  snprintf(where, sizeof where, "%s:%zu", path, line);
  double t = strtod(r->f[c[C_TIME]], &end);
  if (end == r->f[c[C_TIME]]) return ht_error(HT_ERR_PARSE, "%s: time_s '%s' is not a number", where, r->f[c[C_TIME]]);
  return builder_add(b, r->f[c[C_DEVICE]], r->f[c[C_PROBLEM]], r->f[c[C_CONFIG]], t, where);
}

static ht_status csv_file(builder *b, const char *path) {
  char *text;
  size_t len;
  ht_status st = ht_read_file(path, &text, &len);
  if (st) return st;
  char *scratch = malloc(len + 1);
  ht_csv_row head = {0}, r = {0};
  int c[C_COUNT];
  size_t pos = 0, line = 1;
  if (!scratch) st = ht_error(HT_ERR_NOMEM, "out of memory");
  else if (ht_csv_next(text, &pos, &head, scratch) != 1) st = ht_error(HT_ERR_PARSE, "%s: no CSV header", path);
  else st = csv_columns(&head, c, path);
  while (!st) {
    int got = ht_csv_next(text, &pos, &r, scratch);
    line++;
    if (got == 0) break;
    st = got < 0 ? ht_error(HT_ERR_PARSE, "%s:%zu: malformed CSV", path, line) : csv_row_add(b, &head, &r, c, path, line);
  }
  ht_csv_row_free(&head);
  ht_csv_row_free(&r);
  free(scratch);
  free(text);
  return st;
}

ht_status ht_dataset_from_csv(ht_feature_set *fs, const char *const *paths, int n_paths, const char *device_id,
                              ht_dataset **out) {
  *out = NULL;
  builder b;
  ht_status st = builder_init(&b, fs, device_id);
  b.n_sources = n_paths;
  for (int i = 0; i < n_paths && !st; i++) {
    b.cur_source = i;
    st = csv_file(&b, paths[i]);
  }
  if (!st) st = builder_finish(&b, n_paths == 1 ? paths[0] : "the data files", out);
  builder_free(&b);
  return st;
}

/* ---- store ---- */

typedef struct store_ctx {
  builder *b;
  ht_status st;
  const char *path;
} store_ctx;

static int store_visit(const ht_eval_record *rec, void *ctx) {
  store_ctx *c = ctx;
  char where[600];
  snprintf(where, sizeof where, "%s: evaluation %lld", c->path, (long long)rec->eval_id);
  c->st = builder_add(c->b, rec->device_id, rec->problem, rec->config_key, rec->result.time_s, where);
  return c->st != HT_OK;
}

ht_status ht_dataset_from_store(ht_feature_set *fs, ht_store *store, const char *device_id, ht_dataset **out) {
  *out = NULL;
  builder b;
  ht_status st = builder_init(&b, fs, device_id);
  store_ctx c = {&b, HT_OK, ht_store_path(store)};
  ht_eval_filter f = {.kernel_name = b.spec->name, .device_id = device_id, .only_ok = 1};
  if (!st) st = ht_store_each_eval(store, &f, store_visit, &c);
  if (!st) st = c.st;
  if (!st) st = builder_finish(&b, ht_store_path(store), out);
  builder_free(&b);
  return st;
}
