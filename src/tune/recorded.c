/* Recorded spaces: loading a space measured exhaustively (hetune CSV, T4 JSON, Kernel Tuner cache
 * JSON, or the store) into a space whose filter admits exactly the recorded configs, and looking
 * configs up in it. Rows arrive as (parameter names, value texts, outcome); values are typed per
 * parameter (all integers -> int, all numbers -> float, else strings) and sorted, so a config's
 * indices follow the natural order of the values. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetune/replay.h"
#include "space/config_text.h"
#include "tune/recorded_internal.h"

/* ---- building ---- */
void rec_builder_init(rec_builder *b, const char *source) {
  memset(b, 0, sizeof *b);
  snprintf(b->source, sizeof b->source, "%s", source);
}

void rec_builder_free(rec_builder *b) {
  for (int p = 0; p < b->n_params; p++) free(b->names[p]);
  for (size_t i = 0; b->texts && i < b->n_rows * (size_t)b->n_params; i++) free(b->texts[i]);
  free(b->texts);
  free(b->rows);
  for (int i = 0; i < 3; i++) free(b->ident[i]);
  memset(b, 0, sizeof *b);
}

/* The first row fixes the parameter names (in its order); later rows must name the same set. */
static ht_status set_names(rec_builder *b, int n, const char *const *names, size_t row) {
  if (b->n_rows == 0 && b->n_params == 0) {
    if (n <= 0 || n > HT_MAX_PARAMS) return ht_error(HT_ERR_PARSE, "%s: row %zu: %d parameters", b->source, row, n);
    for (int p = 0; p < n; p++)
      if (!(b->names[p] = ht_strdup(names[p]))) return ht_error(HT_ERR_NOMEM, "out of memory");
    b->n_params = n;
    return HT_OK;
  }
  if (n != b->n_params) return ht_error(HT_ERR_PARSE, "%s: row %zu names %d parameters, not %d", b->source, row, n, b->n_params);
  return HT_OK;
}

static int name_slot(const rec_builder *b, const char *name) {
  for (int p = 0; p < b->n_params; p++)
    if (strcmp(b->names[p], name) == 0) return p;
  return -1;
}

/* Checks that every row comes from one kernel, device and problem (NULL/empty: not known). */
static ht_status check_ident(rec_builder *b, int which, const char *value, size_t row) {
  static const char *const what[] = {"kernel", "device", "problem"};
  if (!value || !*value) return HT_OK;
  if (!b->ident[which]) return (b->ident[which] = ht_strdup(value)) ? HT_OK : ht_error(HT_ERR_NOMEM, "out of memory");
  if (strcmp(b->ident[which], value) != 0)
    return ht_error(HT_ERR_INVALID, "%s: row %zu is for %s '%s', earlier rows for '%s' (export one kernel, device and problem)",
                    b->source, row, what[which], value, b->ident[which]);
  return HT_OK;
}

/* A NaN equals nothing, itself included: no config could name the value, and typed as a number it
 * would sort and compare as equal to any other (taking another config's time). */
static ht_status check_not_nan(const rec_builder *b, int n, const char *const *names, const char *const *texts,
                               size_t row) {
  for (int i = 0; i < n; i++) {
    char *end;
    double d = strtod(texts[i], &end);
    if (end != texts[i] && !*end && isnan(d))
      return ht_error(HT_ERR_PARSE, "%s: row %zu: parameter '%s' is '%s', which names no value (NaN equals nothing)",
                      b->source, row, names[i], texts[i]);
  }
  return HT_OK;
}

ht_status rec_builder_add(rec_builder *b, int n, const char *const *names, const char *const *texts,
                          const rec_outcome *o, const char *const ident[3], size_t row) {
  ht_status st = set_names(b, n, names, row);
  if (!st) st = check_not_nan(b, n, names, texts, row);
  for (int i = 0; !st && i < 3; i++) st = check_ident(b, i, ident ? ident[i] : NULL, row);
  if (st) return st;
  if (b->n_rows == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 256;
    rec_outcome *rows = realloc(b->rows, cap * sizeof *rows);
    if (rows) b->rows = rows;
    char **t = realloc(b->texts, cap * (size_t)b->n_params * sizeof *t);
    if (!rows || !t) return ht_error(HT_ERR_NOMEM, "out of memory");
    b->texts = t;
    b->cap = cap;
  }
  char **slot = b->texts + b->n_rows * (size_t)b->n_params;
  for (int p = 0; p < b->n_params; p++) slot[p] = NULL;
  for (int i = 0; i < n; i++) {
    int p = name_slot(b, names[i]);
    if (p < 0 || slot[p]) {
      for (int q = 0; q < b->n_params; q++) free(slot[q]);
      return ht_error(HT_ERR_PARSE, "%s: row %zu: parameter '%s' %s", b->source, row, names[i],
                      p < 0 ? "is not in the first row" : "appears twice");
    }
    if (!(slot[p] = ht_strdup(texts[i]))) return ht_error(HT_ERR_NOMEM, "out of memory");
  }
  b->rows[b->n_rows++] = *o;
  return HT_OK;
}

/* ---- typing and sorting the values of one parameter ---- */
typedef struct typed {
  ht_value *v;
  char **owned; /* strings */
  int n;
} typed;

static int is_int(const char *s, int64_t *out) {
  char *end;
  long long v = strtoll(s, &end, 10);
  if (end == s || *end) return 0;
  *out = v;
  return 1;
}

static int is_num(const char *s, double *out) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || *end) return 0;
  *out = v;
  return 1;
}

static int cmp_value(const void *a, const void *b) {
  const ht_value *x = a, *y = b;
  if (x->kind == HT_VAL_STR) return strcmp(x->u.s, y->u.s);
  double u = ht_value_as_double(*x), w = ht_value_as_double(*y);
  return (u > w) - (u < w);
}

static ht_value parse_as(const char *t, ht_value_kind kind) {
  int64_t i = 0;
  double d = 0;
  if (kind == HT_VAL_INT && is_int(t, &i)) return ht_int(i);
  if (kind == HT_VAL_FLOAT && is_num(t, &d)) return ht_float(d);
  return ht_str(t);
}

/* The distinct values of column p, typed and sorted. Strings point into the builder's texts. */
static ht_status column_values(const rec_builder *b, int p, typed *out) {
  ht_value_kind kind = HT_VAL_INT;
  for (size_t r = 0; r < b->n_rows; r++) {
    const char *t = b->texts[r * (size_t)b->n_params + (size_t)p];
    int64_t i;
    double d;
    if (!t) return ht_error(HT_ERR_PARSE, "%s: row %zu has no value for '%s'", b->source, r + 1, b->names[p]);
    if (kind == HT_VAL_INT && !is_int(t, &i)) kind = HT_VAL_FLOAT;
    if (kind == HT_VAL_FLOAT && !is_num(t, &d)) kind = HT_VAL_STR;
  }
  out->v = malloc((b->n_rows + 1) * sizeof *out->v);
  if (!out->v) return ht_error(HT_ERR_NOMEM, "out of memory");
  out->n = 0;
  for (size_t r = 0; r < b->n_rows; r++) out->v[out->n++] = parse_as(b->texts[r * (size_t)b->n_params + (size_t)p], kind);
  qsort(out->v, (size_t)out->n, sizeof *out->v, cmp_value);
  int w = 0;
  for (int i = 0; i < out->n; i++)
    if (w == 0 || cmp_value(&out->v[w - 1], &out->v[i]) != 0) out->v[w++] = out->v[i];
  out->n = w;
  return HT_OK;
}

static int find_value(const typed *t, ht_value v) {
  int lo = 0, hi = t->n - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2, c = cmp_value(&t->v[mid], &v);
    if (c == 0) return mid;
    if (c < 0) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/* ---- the recorded space ---- */
static uint64_t table_find(const ht_recorded *r, const ht_config *c) {
  uint64_t i = ht_config_hash(c) & r->mask;
  while (r->slot[i] >= 0 && !ht_config_equal(&r->e[r->slot[i]].c, c)) i = (i + 1) & r->mask;
  return i;
}

static int recorded_filter(const ht_config *c, void *ctx) {
  const ht_recorded *r = ctx;
  return r->slot[table_find(r, c)] >= 0;
}

static ht_status compute_stats(ht_recorded *r) {
  ht_recorded_stats *s = &r->stats;
  memset(s, 0, sizeof *s);
  s->n = r->n;
  r->sorted = malloc((r->n + 1) * sizeof *r->sorted);
  if (!r->sorted) return ht_error(HT_ERR_NOMEM, "out of memory");
  for (uint64_t i = 0; i < r->n; i++) {
    s->total_cost_s += r->e[i].cost_s;
    if (r->e[i].status == HT_EVAL_OK) r->sorted[s->n_ok++] = r->e[i].time_s;
  }
  if (s->n_ok == 0) return ht_error(HT_ERR_INVALID, "%s: no recorded config succeeded", r->name);
  qsort(r->sorted, s->n_ok, sizeof *r->sorted, ht_stat_cmp_double);
  s->f_opt = r->sorted[0];
  s->f_worst = r->sorted[s->n_ok - 1];
  s->f_median = s->n_ok % 2 ? r->sorted[s->n_ok / 2] : 0.5 * (r->sorted[s->n_ok / 2 - 1] + r->sorted[s->n_ok / 2]);
  s->mean_cost_s = s->total_cost_s / (double)r->n;
  return HT_OK;
}

static ht_status add_params(ht_recorded *r, const rec_builder *b, typed *cols) {
  ht_status st = HT_OK;
  for (int p = 0; !st && p < b->n_params; p++) {
    st = column_values(b, p, &cols[p]);
    if (!st) st = ht_space_add_param(r->space, b->names[p], cols[p].v, cols[p].n);
  }
  return st;
}

/* A config recorded several times counts with the median of its successful times, as the store
 * judges repeats, and the mean of its rows' costs; with no success, its last row. rows_of lists
 * each entry's rows (entry i: rows_of[first[i] .. first[i+1]-1]). */
static ht_status merge_repeats(ht_recorded *r, const rec_builder *b, const size_t *rows_of, const size_t *first) {
  double *t = malloc((b->n_rows + 1) * sizeof *t);
  if (!t) return ht_error(HT_ERR_NOMEM, "out of memory");
  for (uint64_t i = 0; i < r->n; i++) {
    size_t n = first[i + 1] - first[i], n_ok = 0;
    if (n < 2) continue;
    double cost = 0;
    for (size_t k = first[i]; k < first[i + 1]; k++) {
      const rec_outcome *o = &b->rows[rows_of[k]];
      cost += o->cost_s > 0 && isfinite(o->cost_s) ? o->cost_s : 0.0;
      if (o->status == HT_EVAL_OK) t[n_ok++] = o->time_s;
    }
    r->e[i].cost_s = cost / (double)n;
    if (n_ok == 0) continue;
    r->e[i].status = HT_EVAL_OK;
    r->e[i].time_s = ht_stat_median(t, (int)n_ok);
  }
  free(t);
  return HT_OK;
}

/* Each row's entry, then the rows grouped by entry (a counting sort), for merge_repeats. */
static ht_status group_repeats(ht_recorded *r, const rec_builder *b, const uint64_t *entry_of) {
  size_t *first = calloc(r->n + 2, sizeof *first), *rows_of = malloc((b->n_rows + 1) * sizeof *rows_of);
  size_t *fill = malloc((r->n + 1) * sizeof *fill);
  if (!first || !rows_of || !fill) {
    free(first);
    free(rows_of);
    free(fill);
    return ht_error(HT_ERR_NOMEM, "out of memory");
  }
  for (size_t row = 0; row < b->n_rows; row++) first[entry_of[row] + 1]++;
  for (uint64_t i = 0; i < r->n; i++) first[i + 1] += first[i];
  memcpy(fill, first, r->n * sizeof *fill);
  for (size_t row = 0; row < b->n_rows; row++) rows_of[fill[entry_of[row]]++] = row;
  ht_status st = merge_repeats(r, b, rows_of, first);
  free(first);
  free(rows_of);
  free(fill);
  return st;
}

/* Maps each row to its config (repeats: merge_repeats). */
static ht_status add_entries(ht_recorded *r, const rec_builder *b, const typed *cols) {
  uint64_t cap = 16;
  while (cap < 2 * b->n_rows + 2) cap *= 2;
  r->e = malloc((b->n_rows + 1) * sizeof *r->e);
  r->slot = malloc(cap * sizeof *r->slot);
  uint64_t *entry_of = malloc((b->n_rows + 1) * sizeof *entry_of);
  if (!r->e || !r->slot || !entry_of) {
    free(entry_of);
    return ht_error(HT_ERR_NOMEM, "out of memory");
  }
  memset(r->slot, -1, cap * sizeof *r->slot);
  r->mask = cap - 1;
  int repeats = 0;
  for (size_t row = 0; row < b->n_rows; row++) {
    rec_entry e = {.c = {.n = b->n_params}};
    for (int p = 0; p < b->n_params; p++) {
      ht_value v = parse_as(b->texts[row * (size_t)b->n_params + (size_t)p], cols[p].v[0].kind);
      e.c.idx[p] = find_value(&cols[p], v);
    }
    e.status = b->rows[row].status;
    e.time_s = e.status == HT_EVAL_OK ? b->rows[row].time_s : INFINITY;
    e.cost_s = b->rows[row].cost_s > 0 && isfinite(b->rows[row].cost_s) ? b->rows[row].cost_s : 0.0;
    if (e.status == HT_EVAL_OK && !(e.time_s > 0 && isfinite(e.time_s))) {
      free(entry_of);
      return ht_error(HT_ERR_PARSE, "%s: row %zu: a successful config without a positive time", b->source, row + 1);
    }
    uint64_t i = table_find(r, &e.c);
    if (r->slot[i] >= 0) {
      r->e[r->slot[i]] = e;
      repeats = 1;
    } else {
      r->slot[i] = (int64_t)r->n;
      r->e[r->n++] = e;
    }
    entry_of[row] = (uint64_t)r->slot[i];
  }
  ht_status st = repeats ? group_repeats(r, b, entry_of) : HT_OK;
  free(entry_of);
  return st;
}

ht_status rec_builder_finish(rec_builder *b, const char *name, ht_recorded **out) {
  if (b->n_rows == 0) return ht_error(HT_ERR_INVALID, "%s: no recorded evaluations", b->source);
  ht_recorded *r = calloc(1, sizeof *r);
  typed cols[HT_MAX_PARAMS] = {{0}};
  if (!r) return ht_error(HT_ERR_NOMEM, "out of memory");
  snprintf(r->name, sizeof r->name, "%s", name);
  /* The space keeps pointers to string values: give it the texts to own. */
  r->texts = b->texts;
  r->n_texts = b->n_rows * (size_t)b->n_params;
  b->texts = NULL;
  rec_builder tmp = *b;
  tmp.texts = r->texts;
  ht_status st = ht_space_create(&r->space);
  if (!st) st = add_params(r, &tmp, cols);
  if (!st) st = add_entries(r, &tmp, cols);
  if (!st) st = ht_space_set_filter(r->space, recorded_filter, r);
  if (!st) st = compute_stats(r);
  /* Materialise the valid list now: sampling takes another path once it exists, and every replay
   * of a seed must see the same space whatever ran before it. */
  ht_config first;
  if (!st) st = ht_space_get(r->space, 0, &first);
  for (int p = 0; p < HT_MAX_PARAMS; p++) free(cols[p].v);
  if (st) {
    ht_recorded_destroy(r);
    return st;
  }
  *out = r;
  return HT_OK;
}

void ht_recorded_destroy(ht_recorded *r) {
  if (!r) return;
  ht_space_destroy(r->space);
  for (size_t i = 0; i < r->n_texts; i++) free(r->texts[i]);
  free(r->texts);
  free(r->e);
  free(r->slot);
  free(r->sorted);
  free(r);
}

const char *ht_recorded_name(const ht_recorded *r) { return r ? r->name : ""; }
ht_space *ht_recorded_space(ht_recorded *r) { return r ? r->space : NULL; }
uint64_t ht_recorded_size(const ht_recorded *r) { return r ? r->n : 0; }

void ht_recorded_stats_get(const ht_recorded *r, ht_recorded_stats *out) { *out = r->stats; }

int ht_recorded_lookup(const ht_recorded *r, const ht_config *c, ht_result *res, double *cost_s) {
  int64_t k = r->slot[table_find(r, c)];
  if (k < 0) return 0;
  const rec_entry *e = &r->e[k];
  ht_result_init(res);
  res->status = e->status;
  if (e->status == HT_EVAL_OK) {
    res->n_samples = 1;
    res->samples[0] = e->time_s;
    ht_result_summarise(res);
  }
  res->wall_s = e->cost_s;
  if (cost_s) *cost_s = e->cost_s;
  return 1;
}

/* ---- the store ---- */
typedef struct store_ctx {
  rec_builder *b;
  ht_status st;
  size_t row;
} store_ctx;

static int store_row(const ht_eval_record *rec, void *p) {
  store_ctx *c = p;
  c->row++;
  const ht_result *r = &rec->result;
  rec_outcome o = {r->status, r->time_s, r->wall_s};
  const char *ident[3] = {rec->kernel_name, rec->device_id, rec->problem};
  c->st = rec_add_config_text(c->b, rec->config_key, &o, ident, c->row);
  return c->st != HT_OK;
}

ht_status ht_recorded_from_store(ht_store *st, const char *kernel, const char *device_id, const char *problem,
                                 ht_recorded **out) {
  if (!st || !kernel || !out) return ht_error(HT_ERR_INVALID, "ht_recorded_from_store: bad arguments");
  rec_builder b;
  rec_builder_init(&b, kernel);
  ht_eval_filter f = {.kernel_name = kernel, .device_id = device_id, .problem = problem};
  store_ctx c = {&b, HT_OK, 0};
  ht_status s = ht_store_each_eval(st, &f, store_row, &c);
  if (!s) s = c.st;
  if (!s) s = rec_builder_finish(&b, kernel, out);
  rec_builder_free(&b);
  return s;
}

/* "A=1,B=x" (escaped as ht_config_format writes it) -> names and texts. */
ht_status rec_add_config_text(rec_builder *b, const char *text, const rec_outcome *o, const char *const ident[3],
                              size_t row) {
  char *copy = ht_strdup(text ? text : "");
  char *names[HT_MAX_PARAMS], *texts[HT_MAX_PARAMS], *bad = NULL;
  if (!copy) return ht_error(HT_ERR_NOMEM, "out of memory");
  int n = ht_config_split(copy, names, texts, HT_MAX_PARAMS, &bad);
  ht_status st = n < 0 ? ht_error(HT_ERR_PARSE, "%s: row %zu: config '%s' is not NAME=VALUE,...", b->source, row, text)
                       : rec_builder_add(b, n, (const char *const *)names, (const char *const *)texts, o, ident, row);
  free(copy);
  return st;
}
