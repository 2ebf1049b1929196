/* Search spaces: parameters, constants, constraints, and enumeration with early pruning. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "space/space_internal.h"

#define MAX_RANGE_VALUES 10000000 /* a parameter with more values than this is a mistake */

ht_status ht_space_create(ht_space **out) {
  if (!out) return ht_error(HT_ERR_INVALID, "ht_space_create: out is NULL");
  *out = calloc(1, sizeof **out);
  return *out ? HT_OK : ht_error(HT_ERR_NOMEM, "out of memory creating a space");
}

static void param_free(ht_param *p) {
  for (int v = 0; v < p->n; v++)
    if (p->values[v].kind == HT_VAL_STR) free((char *)p->values[v].u.s);
  free(p->values);
  free(p->name);
}

/* Drops the plan and the caches: called on every change. */
static void invalidate(ht_space *s) {
  free(s->by_level);
  free(s->vars);
  free(s->list8);
  free(s->list32);
  s->by_level = NULL;
  s->vars = NULL;
  s->list8 = NULL;
  s->list32 = NULL;
  s->planned = s->counted = s->listed = 0;
  s->n_list = 0;
  s->uncounted_steps = 0;
}

void ht_space_destroy(ht_space *s) {
  if (!s) return;
  invalidate(s);
  for (int p = 0; p < s->n_params; p++) param_free(&s->params[p]);
  for (int c = 0; c < s->n_consts; c++) {
    free(s->consts[c].name);
    free(s->consts[c].owned);
  }
  for (int c = 0; c < s->n_cons; c++) {
    free(s->cons[c].text);
    ht_expr_destroy(s->cons[c].e);
  }
  free(s->consts);
  free(s->cons);
  free(s);
}

static int const_index(const ht_space *s, const char *name) {
  for (int c = 0; c < s->n_consts; c++)
    if (!strcmp(s->consts[c].name, name)) return c;
  return -1;
}

int ht_space_param_index(const ht_space *s, const char *name) {
  for (int p = 0; s && name && p < s->n_params; p++)
    if (!strcmp(s->params[p].name, name)) return p;
  return -1;
}

/* Slot names for the compiler: parameters first, then constants. */
static const char **slot_names(const ht_space *s) {
  const char **names = malloc(((size_t)s->n_params + (size_t)s->n_consts + 1) * sizeof *names);
  if (!names) return NULL;
  for (int p = 0; p < s->n_params; p++) names[p] = s->params[p].name;
  for (int c = 0; c < s->n_consts; c++) names[s->n_params + c] = s->consts[c].name;
  return names;
}

static ht_status compile_constraint(const ht_space *s, const char *text, ht_expr **out) {
  const char **names = slot_names(s);
  if (!names) return ht_error(HT_ERR_NOMEM, "out of memory");
  ht_status st = ht_expr_compile(text, names, s->n_params + s->n_consts, out);
  free(names);
  if (st) ht_error_prefix(st, "constraint '%s': ", text);
  return st;
}

/* Adding a parameter shifts the constants' slots, so constraints are compiled again. */
static ht_status recompile_all(ht_space *s) {
  for (int c = 0; c < s->n_cons; c++) {
    ht_expr *e;
    ht_status st = compile_constraint(s, s->cons[c].text, &e);
    if (st) return st;
    ht_expr_destroy(s->cons[c].e);
    s->cons[c].e = e;
  }
  return HT_OK;
}

static uint64_t value_hash(ht_value v) {
  if (v.kind == HT_VAL_STR) return ht_hash_str(v.u.s, 7);
  double d = ht_value_as_double(v) + 0.0; /* folds -0.0 into 0.0 */
  return ht_hash64(&d, sizeof d, 0);
}

/* Duplicate check in O(n) with an open-addressing table of value indices. */
static int find_duplicate(const ht_value *values, int n) {
  size_t cap = 16;
  while (cap < (size_t)n * 2) cap *= 2;
  int *table = malloc(cap * sizeof *table);
  if (!table) return -2;
  memset(table, -1, cap * sizeof *table);
  int dup = -1;
  for (int i = 0; i < n && dup < 0; i++) {
    size_t h = (size_t)value_hash(values[i]) & (cap - 1);
    for (; table[h] >= 0; h = (h + 1) & (cap - 1))
      if (ht_value_equal(values[table[h]], values[i])) {
        dup = i;
        break;
      }
    if (dup < 0) table[h] = i;
  }
  free(table);
  return dup;
}

static ht_status check_new_name(const ht_space *s, const char *name) {
  if (!name || !*name) return ht_error(HT_ERR_INVALID, "a parameter needs a name");
  if (ht_space_param_index(s, name) >= 0) return ht_error(HT_ERR_INVALID, "duplicate parameter '%s'", name);
  if (const_index(s, name) >= 0)
    return ht_error(HT_ERR_INVALID, "parameter '%s' has the name of a constant", name);
  if (s->n_params >= HT_MAX_PARAMS)
    return ht_error(HT_ERR_INVALID, "parameter '%s': a space holds at most %d parameters", name, HT_MAX_PARAMS);
  return HT_OK;
}

static ht_status copy_values(const char *name, const ht_value *values, int n, ht_param *p) {
  p->values = calloc((size_t)n, sizeof *p->values);
  p->name = ht_strdup(name);
  if (!p->values || !p->name) return ht_error(HT_ERR_NOMEM, "out of memory");
  for (int v = 0; v < n; v++) {
    p->values[v] = values[v];
    if (values[v].kind == HT_VAL_STR) {
      char *c = ht_strdup(values[v].u.s ? values[v].u.s : "");
      if (!c) return ht_error(HT_ERR_NOMEM, "out of memory");
      p->values[v].u.s = c;
    } else if (values[v].kind != HT_VAL_INT && values[v].kind != HT_VAL_FLOAT) {
      return ht_error(HT_ERR_INVALID, "parameter '%s': value %d has an unknown kind", name, v);
    }
    p->n = v + 1;
  }
  return HT_OK;
}

ht_status ht_space_add_param(ht_space *s, const char *name, const ht_value *values, int n) {
  if (!s) return ht_error(HT_ERR_INVALID, "ht_space_add_param: space is NULL");
  ht_status st = check_new_name(s, name);
  if (st) return st;
  if (n <= 0 || !values) return ht_error(HT_ERR_INVALID, "parameter '%s' has no values", name);
  ht_param p = {0};
  st = copy_values(name, values, n, &p);
  int dup = st ? -1 : find_duplicate(p.values, p.n);
  if (!st && dup == -2) st = ht_error(HT_ERR_NOMEM, "out of memory");
  if (!st && dup >= 0) {
    char buf[64];
    ht_value_format(p.values[dup], buf, sizeof buf);
    st = ht_error(HT_ERR_INVALID, "parameter '%s': duplicate value %s", name, buf);
  }
  if (st) {
    param_free(&p);
    return st;
  }
  invalidate(s);
  s->params[s->n_params++] = p;
  st = recompile_all(s);
  if (st) { /* cannot happen with fresh names, but never leave constraints half-compiled */
    param_free(&s->params[--s->n_params]);
    recompile_all(s);
  }
  return st;
}

ht_status ht_space_add_param_range(ht_space *s, const char *name, int64_t lo, int64_t hi, int64_t step) {
  if (step < 0 || hi < lo) return ht_error(HT_ERR_INVALID, "parameter '%s': bad range %lld..%lld step %lld",
                                           name ? name : "?", (long long)lo, (long long)hi, (long long)step);
  ht_value *v = malloc(64 * sizeof *v);
  int n = 0;
  if (step == 0) {
    for (int k = 0; k < 63 && v; k++) {
      int64_t x = INT64_C(1) << k;
      if (x >= lo && x <= hi) v[n++] = ht_int(x);
    }
  } else {
    uint64_t count = ((uint64_t)hi - (uint64_t)lo) / (uint64_t)step + 1;
    if (count > MAX_RANGE_VALUES) {
      free(v);
      return ht_error(HT_ERR_INVALID, "parameter '%s': range has %llu values (at most %d)", name ? name : "?",
                      (unsigned long long)count, MAX_RANGE_VALUES);
    }
    free(v);
    v = malloc(count * sizeof *v);
    for (uint64_t k = 0; v && k < count; k++) v[n++] = ht_int(lo + (int64_t)(k * (uint64_t)step));
  }
  if (!v) return ht_error(HT_ERR_NOMEM, "out of memory");
  ht_status st = n ? ht_space_add_param(s, name, v, n)
                   : ht_error(HT_ERR_INVALID, "parameter '%s': no power of two in %lld..%lld", name ? name : "?",
                              (long long)lo, (long long)hi);
  free(v);
  return st;
}

ht_status ht_space_set_constant(ht_space *s, const char *name, ht_value v) {
  if (!s || !name || !*name) return ht_error(HT_ERR_INVALID, "ht_space_set_constant: bad arguments");
  if (ht_space_param_index(s, name) >= 0)
    return ht_error(HT_ERR_INVALID, "constant '%s' has the name of a parameter", name);
  char *owned = NULL;
  if (v.kind == HT_VAL_STR && !(owned = ht_strdup(v.u.s ? v.u.s : "")))
    return ht_error(HT_ERR_NOMEM, "out of memory");
  if (owned) v.u.s = owned;
  int c = const_index(s, name);
  if (c < 0) {
    if (s->n_consts == s->cap_consts) {
      int cap = s->cap_consts ? s->cap_consts * 2 : 8;
      ht_constant *n = realloc(s->consts, (size_t)cap * sizeof *n);
      if (!n) {
        free(owned);
        return ht_error(HT_ERR_NOMEM, "out of memory");
      }
      s->consts = n;
      s->cap_consts = cap;
    }
    c = s->n_consts;
    s->consts[c] = (ht_constant){ht_strdup(name), v, owned};
    if (!s->consts[c].name) {
      free(owned);
      return ht_error(HT_ERR_NOMEM, "out of memory");
    }
    s->n_consts++; /* new slots come last, so compiled constraints stay valid */
  } else {
    free(s->consts[c].owned);
    s->consts[c].v = v;
    s->consts[c].owned = owned;
  }
  invalidate(s);
  return HT_OK;
}

ht_status ht_space_add_constraint(ht_space *s, const char *expr_text) {
  if (!s || !expr_text) return ht_error(HT_ERR_INVALID, "ht_space_add_constraint: bad arguments");
  ht_expr *e;
  ht_status st = compile_constraint(s, expr_text, &e);
  if (st) return st;
  if (s->n_cons == s->cap_cons) {
    int cap = s->cap_cons ? s->cap_cons * 2 : 8;
    ht_constraint *n = realloc(s->cons, (size_t)cap * sizeof *n);
    if (!n) {
      ht_expr_destroy(e);
      return ht_error(HT_ERR_NOMEM, "out of memory");
    }
    s->cons = n;
    s->cap_cons = cap;
  }
  char *text = ht_strdup(expr_text);
  if (!text) {
    ht_expr_destroy(e);
    return ht_error(HT_ERR_NOMEM, "out of memory");
  }
  s->cons[s->n_cons++] = (ht_constraint){text, e, -1};
  invalidate(s);
  return HT_OK;
}

ht_status ht_space_set_filter(ht_space *s, ht_space_filter_fn fn, void *ctx) {
  if (!s) return ht_error(HT_ERR_INVALID, "ht_space_set_filter: space is NULL");
  s->filter = fn;
  s->filter_ctx = ctx;
  invalidate(s);
  return HT_OK;
}

int ht_space_param_count(const ht_space *s) { return s ? s->n_params : 0; }
const char *ht_space_param_name(const ht_space *s, int p) {
  return s && p >= 0 && p < s->n_params ? s->params[p].name : NULL;
}
int ht_space_value_count(const ht_space *s, int p) { return s && p >= 0 && p < s->n_params ? s->params[p].n : 0; }
ht_value ht_space_value(const ht_space *s, int p, int v) {
  if (!s || p < 0 || p >= s->n_params || v < 0 || v >= s->params[p].n) return ht_int(0);
  return s->params[p].values[v];
}
int ht_space_constraint_count(const ht_space *s) { return s ? s->n_cons : 0; }
const char *ht_space_constraint_text(const ht_space *s, int c) {
  return s && c >= 0 && c < s->n_cons ? s->cons[c].text : NULL;
}

uint64_t ht_space_cartesian_size(const ht_space *s) {
  uint64_t n = 1;
  for (int p = 0; s && p < s->n_params; p++)
    if (__builtin_mul_overflow(n, (uint64_t)s->params[p].n, &n)) return UINT64_MAX;
  return n;
}

/* ---- the plan ---- */
static int constraint_level(const ht_space *s, const ht_expr *e) {
  for (int p = s->n_params - 1; p >= 0; p--)
    if (ht_expr_uses(e, p)) return p;
  return -1;
}

ht_status ht_space_plan(ht_space *s) {
  if (s->planned) return HT_OK;
  int nv = s->n_params + s->n_consts;
  s->vars = calloc((size_t)nv + 1, sizeof *s->vars);
  s->by_level = malloc(((size_t)s->n_cons + 1) * sizeof *s->by_level);
  if (!s->vars || !s->by_level) {
    invalidate(s);
    return ht_error(HT_ERR_NOMEM, "out of memory");
  }
  for (int c = 0; c < s->n_consts; c++) s->vars[s->n_params + c] = s->consts[c].v;
  for (int c = 0; c < s->n_cons; c++) s->cons[c].level = constraint_level(s, s->cons[c].e);
  /* Counting sort by level: the enumerator walks one contiguous run per level. */
  int k = 0;
  s->constant_ok = 1;
  s->tail_free = 0;
  for (int c = 0; c < s->n_cons; c++)
    if (s->cons[c].level < 0) {
      int ok = 0;
      if (ht_expr_eval_bool(s->cons[c].e, s->vars, &ok) || !ok) s->constant_ok = 0;
    }
  for (int p = 0; p < s->n_params; p++) {
    s->level_start[p] = k;
    for (int c = 0; c < s->n_cons; c++)
      if (s->cons[c].level == p) s->by_level[k++] = s->cons[c].e;
    if (k > s->level_start[p]) s->tail_free = p + 1;
  }
  if (s->filter) s->tail_free = s->n_params + 1; /* counting must reach every complete config */
  s->level_start[s->n_params] = k;
  s->planned = 1;
  return HT_OK;
}

int ht_space_check_level(const ht_space *s, int level, const ht_value *vars) {
  for (int k = s->level_start[level]; k < s->level_start[level + 1]; k++) {
    int ok;
    if (ht_expr_eval_bool(s->by_level[k], vars, &ok) || !ok) return 0; /* errors are invalid */
  }
  return 1;
}

int ht_space_is_valid(ht_space *s, const ht_config *c) {
  if (!s || !c || c->n != s->n_params || ht_space_plan(s)) return 0;
  if (!s->constant_ok) return 0;
  for (int p = 0; p < s->n_params; p++) {
    if (c->idx[p] < 0 || c->idx[p] >= s->params[p].n) return 0;
    s->vars[p] = s->params[p].values[c->idx[p]];
  }
  for (int p = 0; p < s->n_params; p++)
    if (!ht_space_check_level(s, p, s->vars)) return 0;
  return ht_space_filter_ok(s, c);
}

/* ---- enumeration ---- */
typedef struct walk {
  ht_space_visit_fn fn; /* NULL: only count */
  void *ctx;
  uint64_t count;
  int stopped;
  uint64_t steps, max_steps;         /* values tried so far; stop (cut) past max_steps, 0: no limit */
  int cut;                           /* stopped by max_steps or the progress callback: count is partial */
  ht_space_progress_fn progress;     /* called every PROGRESS_STEPS steps */
  void *progress_ctx;
} walk;

#define PROGRESS_STEPS (UINT64_C(1) << 20)

static uint64_t sat_add(uint64_t a, uint64_t b) { return a + b < a ? UINT64_MAX : a + b; }

/* The share of the Cartesian product the walk has passed, from the indices it stands at. */
static double walked_share(const ht_space *s, const ht_config *c, int p) {
  double share = 0, width = 1;
  for (int q = 0; q <= p; q++) {
    width /= s->params[q].n;
    share += width * (c->idx[q] < 0 ? 0 : c->idx[q]);
  }
  return share;
}

/* Counts a step; 1 when the walk must stop here (step budget spent, or the progress callback
 * said stop). */
static int step_cut(const ht_space *s, walk *w, const ht_config *c, int p) {
  w->steps++;
  if (w->max_steps && w->steps > w->max_steps) return w->cut = 1;
  if (w->progress && w->steps % PROGRESS_STEPS == 0 && w->progress(walked_share(s, c, p), w->count, w->progress_ctx))
    return w->cut = 1;
  return 0;
}

/* Depth-first over the parameters in add order; a level's constraints prune its whole subtree.
 * When only counting, a constraint-free tail contributes its Cartesian size without a walk. */
static void walk_tree(ht_space *s, walk *w, ht_value *vars) {
  int P = s->n_params;
  ht_config c = {.n = P};
  uint64_t tail = 1;
  for (int p = s->tail_free; p < P; p++)
    if (__builtin_mul_overflow(tail, (uint64_t)s->params[p].n, &tail)) tail = UINT64_MAX;
  if (!w->fn && s->tail_free == 0) {
    w->count = tail;
    return;
  }
  if (P == 0) { /* one empty config */
    w->count = 1;
    if (w->fn) w->stopped = w->fn(&c, w->ctx) != 0;
    return;
  }
  int p = 0;
  c.idx[0] = -1;
  while (p >= 0) {
    if (++c.idx[p] >= s->params[p].n) {
      p--;
      continue;
    }
    if (step_cut(s, w, &c, p)) return;
    vars[p] = s->params[p].values[c.idx[p]];
    if (!ht_space_check_level(s, p, vars)) continue;
    if (!w->fn && p + 1 == s->tail_free) {
      w->count = sat_add(w->count, tail);
      continue;
    }
    if (p == P - 1) {
      if (!ht_space_filter_ok(s, &c)) continue;
      w->count++;
      if (w->fn && w->fn(&c, w->ctx)) {
        w->stopped = 1;
        return;
      }
      continue;
    }
    c.idx[++p] = -1;
  }
}

static ht_status run_walk(ht_space *s, walk *w) {
  if (!s) return ht_error(HT_ERR_INVALID, "space is NULL");
  ht_status st = ht_space_plan(s);
  if (st) return st;
  if (!s->constant_ok) return HT_OK;
  /* A private copy of the bindings: the callback may call ht_space_is_valid, which uses s->vars. */
  size_t nv = (size_t)s->n_params + (size_t)s->n_consts + 1;
  ht_value *vars = malloc(nv * sizeof *vars);
  if (!vars) return ht_error(HT_ERR_NOMEM, "out of memory");
  memcpy(vars, s->vars, nv * sizeof *vars);
  walk_tree(s, w, vars);
  free(vars);
  return HT_OK;
}

ht_status ht_space_enumerate(ht_space *s, ht_space_visit_fn fn, void *ctx) {
  if (!fn) return ht_error(HT_ERR_INVALID, "ht_space_enumerate: callback is NULL");
  walk w = {.fn = fn, .ctx = ctx};
  return run_walk(s, &w);
}

ht_status ht_space_count_progress(ht_space *s, ht_space_progress_fn fn, void *ctx, uint64_t *count) {
  if (!s || !count) return ht_error(HT_ERR_INVALID, "ht_space_count: bad arguments");
  if (!s->counted || !s->planned) {
    walk w = {.progress = fn, .progress_ctx = ctx};
    ht_status st = run_walk(s, &w);
    if (st) return st;
    if (w.cut) {
      *count = w.count;
      return ht_error(HT_ERR_TIMEOUT, "counting stopped after %llu valid configs",
                      (unsigned long long)w.count);
    }
    s->count = w.count;
    s->counted = 1;
  }
  *count = s->count;
  return HT_OK;
}

ht_status ht_space_count(ht_space *s, uint64_t *count) { return ht_space_count_progress(s, NULL, NULL, count); }

/* The valid share of ESTIMATE_DRAWS uniform draws from the Cartesian product, times its size; at
 * least 1 when some draw was valid. */
#define ESTIMATE_DRAWS 20000
static uint64_t estimate_count(ht_space *s) {
  ht_rng rng;
  ht_rng_seed(&rng, 0x5eed);
  int valid = 0;
  ht_config c;
  for (int d = 0; d < ESTIMATE_DRAWS; d++) {
    c.n = s->n_params;
    for (int p = 0; p < s->n_params; p++) c.idx[p] = (int32_t)ht_rng_below(&rng, (uint64_t)s->params[p].n);
    valid += ht_space_is_valid(s, &c);
  }
  double est = (double)ht_space_cartesian_size(s) * valid / ESTIMATE_DRAWS;
  return est >= 1.8e19 ? UINT64_MAX : valid && est < 1 ? 1 : (uint64_t)est;
}

ht_status ht_space_size(ht_space *s, uint64_t max_steps, uint64_t *count, int *exact) {
  if (!s || !count || !exact) return ht_error(HT_ERR_INVALID, "ht_space_size: bad arguments");
  ht_status st = ht_space_plan(s);
  if (st) return st;
  *exact = 1;
  if (s->counted) {
    *count = s->count;
    return HT_OK;
  }
  if (!s->uncounted_steps || (max_steps && max_steps > s->uncounted_steps) || !max_steps) {
    walk w = {.max_steps = max_steps};
    if ((st = run_walk(s, &w))) return st;
    if (!w.cut) {
      s->count = *count = w.count;
      s->counted = 1;
      return HT_OK;
    }
    s->uncounted_steps = max_steps;
    s->estimate = s->constant_ok ? estimate_count(s) : 0;
  }
  *exact = 0;
  *count = s->estimate;
  return HT_OK;
}

/* ---- a cursor: the valid configs one at a time, in enumeration order, without a count ---- */

ht_status ht_space_next(ht_space *s, ht_space_cursor *cur, ht_config *out, int *found) {
  if (!s || !cur || !out || !found) return ht_error(HT_ERR_INVALID, "ht_space_next: bad arguments");
  *found = 0;
  ht_status st = ht_space_plan(s);
  if (st || cur->done || !s->constant_ok) return st;
  int P = s->n_params, p = cur->level;
  ht_config *c = &cur->at;
  if (!cur->started) {
    cur->started = 1;
    c->n = P;
    c->idx[0] = -1;
    p = 0;
    if (P == 0) { /* one empty config */
      cur->done = 1;
      *out = *c;
      *found = 1;
      return HT_OK;
    }
  }
  for (int q = 0; q < p; q++) s->vars[q] = s->params[q].values[c->idx[q]]; /* rebind the levels above */
  while (p >= 0) {
    if (++c->idx[p] >= s->params[p].n) {
      p--;
      continue;
    }
    s->vars[p] = s->params[p].values[c->idx[p]];
    if (!ht_space_check_level(s, p, s->vars)) continue;
    if (p < P - 1) {
      c->idx[++p] = -1;
      continue;
    }
    if (!ht_space_filter_ok(s, c)) continue;
    cur->level = p;
    *out = *c;
    *found = 1;
    return HT_OK;
  }
  cur->done = 1;
  return HT_OK;
}

/* ---- the materialised list ---- */
typedef struct lister {
  ht_space *s;
  uint64_t cap;
  int failed;
} lister;

static int list_visit(const ht_config *c, void *ctx) {
  lister *l = ctx;
  ht_space *s = l->s;
  int P = s->n_params, small = s->list8 != NULL;
  if (s->n_list == l->cap) {
    uint64_t cap = l->cap * 2;
    void *n = realloc(small ? (void *)s->list8 : (void *)s->list32, cap * (uint64_t)P * (small ? 1 : 4));
    if (!n) {
      l->failed = 1;
      return 1;
    }
    if (small) s->list8 = n;
    else s->list32 = n;
    l->cap = cap;
  }
  uint64_t at = s->n_list++ * (uint64_t)P;
  for (int p = 0; p < P; p++) {
    if (small) s->list8[at + (uint64_t)p] = (uint8_t)c->idx[p];
    else s->list32[at + (uint64_t)p] = c->idx[p];
  }
  return 0;
}

ht_status ht_space_materialise(ht_space *s) {
  ht_status st = ht_space_plan(s);
  if (st || s->listed) return st;
  int small = 1;
  for (int p = 0; p < s->n_params; p++)
    if (s->params[p].n > 256) small = 0;
  lister l = {s, 64, 0};
  size_t row = (size_t)(s->n_params & 0xff) * (small ? 1 : 4) + 1; /* n_params <= HT_MAX_PARAMS */
  void *buf = malloc(64 * row);
  if (!buf) return ht_error(HT_ERR_NOMEM, "out of memory listing the space");
  if (small) s->list8 = buf;
  else s->list32 = buf;
  s->n_list = 0;
  st = ht_space_enumerate(s, list_visit, &l);
  if (!st && l.failed) st = ht_error(HT_ERR_NOMEM, "out of memory listing %llu configs", (unsigned long long)s->n_list);
  if (st) {
    free(s->list8);
    free(s->list32);
    s->list8 = NULL;
    s->list32 = NULL;
    s->n_list = 0;
    return st;
  }
  s->listed = 1;
  s->count = s->n_list;
  s->counted = 1;
  return HT_OK;
}

void ht_space_list_get(const ht_space *s, uint64_t i, ht_config *out) {
  int P = s->n_params;
  out->n = P;
  uint64_t at = i * (uint64_t)P;
  for (int p = 0; p < P; p++) out->idx[p] = s->list8 ? s->list8[at + (uint64_t)p] : s->list32[at + (uint64_t)p];
}

ht_status ht_space_get(ht_space *s, uint64_t i, ht_config *out) {
  if (!s || !out) return ht_error(HT_ERR_INVALID, "ht_space_get: bad arguments");
  ht_status st = ht_space_materialise(s);
  if (st) return st;
  if (i >= s->n_list)
    return ht_error(HT_ERR_NOTFOUND, "config %llu is past the end of the space (%llu valid)", (unsigned long long)i,
                    (unsigned long long)s->n_list);
  ht_space_list_get(s, i, out);
  return HT_OK;
}
