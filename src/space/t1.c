/* Reading the T1 input format (BAT, Kernel Tuner): ConfigurationSpace.TuningParameters become
 * parameters, ConfigurationSpace.Conditions become constraints. */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "space/space_internal.h"

#define MAX_LIST 1000000

typedef struct vlist {
  ht_value *v;
  int n, cap;
  char **strs; /* the strings the values point at */
  int n_strs;
} vlist;

static void vlist_free(vlist *l) {
  for (int i = 0; i < l->n_strs; i++) free(l->strs[i]);
  free(l->strs);
  free(l->v);
}

static ht_status vlist_push(vlist *l, ht_value v, const char *owned_src, size_t len) {
  if (l->n >= MAX_LIST) return ht_error(HT_ERR_INVALID, "more than %d values", MAX_LIST);
  if (l->n == l->cap) {
    int cap = l->cap ? l->cap * 2 : 16;
    ht_value *nv = realloc(l->v, (size_t)cap * sizeof *nv);
    char **ns = realloc(l->strs, (size_t)cap * sizeof *ns);
    if (nv) l->v = nv;
    if (ns) l->strs = ns;
    if (!nv || !ns) return ht_error(HT_ERR_NOMEM, "out of memory");
    l->cap = cap;
  }
  if (owned_src) {
    char *s = malloc(len + 1);
    if (!s) return ht_error(HT_ERR_NOMEM, "out of memory");
    memcpy(s, owned_src, len);
    s[len] = '\0';
    l->strs[l->n_strs++] = s;
    v = ht_str(s);
  }
  l->v[l->n++] = v;
  return HT_OK;
}

/* ---- Python list literals: "[16, 32, 64]", "['float', 'float4']", "range(1, 9, 2)" ---- */
typedef struct pyscan {
  const char *s;
  int pos;
} pyscan;

static void py_skip(pyscan *p) {
  while (isspace((unsigned char)p->s[p->pos])) p->pos++;
}

static ht_status py_expected(pyscan *p, const char *what) {
  char found[32];
  if (!p->s[p->pos]) snprintf(found, sizeof found, "end of text");
  else snprintf(found, sizeof found, "'%.12s'", p->s + p->pos);
  return ht_error(HT_ERR_PARSE, "column %d: expected %s, found %s", p->pos + 1, what, found);
}

static ht_status py_number(pyscan *p, ht_value *out) {
  const char *start = p->s + p->pos;
  char *end;
  errno = 0;
  long long i = strtoll(start, &end, 10);
  if (end != start && errno == 0 && *end != '.' && *end != 'e' && *end != 'E') {
    *out = ht_int(i);
  } else {
    double d = strtod(start, &end);
    if (end == start) return py_expected(p, "a number or a string");
    *out = ht_float(d);
  }
  p->pos += (int)(end - start);
  return HT_OK;
}

static ht_status py_item(pyscan *p, vlist *l) {
  py_skip(p);
  const char *s = p->s + p->pos;
  if (*s == '\'' || *s == '"') {
    const char *q = strchr(s + 1, *s);
    if (!q) return ht_error(HT_ERR_PARSE, "column %d: unterminated string", p->pos + 1);
    p->pos += (int)(q - s) + 1;
    return vlist_push(l, ht_int(0), s + 1, (size_t)(q - s - 1));
  }
  if (!strncmp(s, "True", 4) || !strncmp(s, "False", 5)) {
    p->pos += *s == 'T' ? 4 : 5;
    return vlist_push(l, ht_int(*s == 'T'), NULL, 0);
  }
  ht_value v;
  ht_status st = py_number(p, &v);
  return st ? st : vlist_push(l, v, NULL, 0);
}

static ht_status py_range(pyscan *p, vlist *l) {
  int64_t a[3] = {0, 0, 1};
  int n = 0;
  p->pos += 5; /* "range" */
  py_skip(p);
  if (p->s[p->pos] != '(') return py_expected(p, "'('");
  p->pos++;
  for (;;) {
    py_skip(p);
    ht_value v;
    ht_status st = py_number(p, &v);
    if (st) return st;
    if (v.kind != HT_VAL_INT || n == 3) return py_expected(p, "at most 3 integer arguments");
    a[n++] = v.u.i;
    py_skip(p);
    if (p->s[p->pos] == ',') p->pos++;
    else break;
  }
  if (p->s[p->pos] != ')') return py_expected(p, "')'");
  p->pos++;
  if (n == 1) a[1] = a[0], a[0] = 0;
  if (a[2] == 0) return ht_error(HT_ERR_PARSE, "range() step is zero");
  for (int64_t x = a[0]; a[2] > 0 ? x < a[1] : x > a[1];) {
    ht_status st = vlist_push(l, ht_int(x), NULL, 0);
    if (st) return st;
    if (__builtin_add_overflow(x, a[2], &x)) break; /* the next value is past INT64_MIN/MAX: done */
  }
  return HT_OK;
}

static ht_status parse_py_list(const char *text, vlist *l) {
  pyscan p = {text, 0};
  py_skip(&p);
  int wrapped = !strncmp(text + p.pos, "list(", 5);
  if (wrapped) p.pos += 5;
  py_skip(&p);
  ht_status st;
  if (!strncmp(text + p.pos, "range", 5)) {
    st = py_range(&p, l);
  } else {
    char open = text[p.pos], close = open == '[' ? ']' : ')';
    if (open != '[' && open != '(') return py_expected(&p, "'['");
    p.pos++;
    py_skip(&p);
    st = HT_OK;
    while (!st && text[p.pos] != close) {
      st = py_item(&p, l);
      py_skip(&p);
      if (!st && text[p.pos] == ',') p.pos++, py_skip(&p);
      else if (!st && text[p.pos] != close) st = py_expected(&p, "',' or the end of the list");
    }
    if (!st) p.pos++;
  }
  if (!st && wrapped) {
    py_skip(&p);
    if (text[p.pos] != ')') return py_expected(&p, "')'");
    p.pos++;
  }
  py_skip(&p);
  if (!st && text[p.pos]) st = py_expected(&p, "end of text");
  return st;
}

static ht_status json_list(const json_t *arr, vlist *l) {
  size_t i;
  json_t *it;
  json_array_foreach(arr, i, it) {
    ht_status st;
    if (json_is_integer(it)) st = vlist_push(l, ht_int(json_integer_value(it)), NULL, 0);
    else if (json_is_real(it)) st = vlist_push(l, ht_float(json_real_value(it)), NULL, 0);
    else if (json_is_boolean(it)) st = vlist_push(l, ht_int(json_is_true(it)), NULL, 0);
    else if (json_is_string(it))
      st = vlist_push(l, ht_int(0), json_string_value(it), strlen(json_string_value(it)));
    else st = ht_error(HT_ERR_INVALID, "value %zu is not a number or string", i);
    if (st) return st;
  }
  return HT_OK;
}

/* Applies the declared Type: ints must be integral, floats become doubles, strings stay text. */
static ht_status apply_type(const char *type, vlist *l) {
  int is_int = !strcmp(type, "int") || !strcmp(type, "uint") || !strcmp(type, "bool");
  int is_float = !strcmp(type, "float") || !strcmp(type, "double");
  if (!is_int && !is_float && strcmp(type, "string"))
    return ht_error(HT_ERR_INVALID, "Type '%s' is not int, uint, float, bool or string", type);
  for (int i = 0; i < l->n; i++) {
    ht_value *v = &l->v[i];
    if (is_int && v->kind == HT_VAL_FLOAT) {
      /* in range before the cast: converting a double outside int64_t's range is undefined */
      if (!(v->u.f >= -0x1p63 && v->u.f < 0x1p63) || v->u.f != (double)(int64_t)v->u.f)
        return ht_error(HT_ERR_INVALID, "value %g is not an integer of 64 bits", v->u.f);
      *v = ht_int((int64_t)v->u.f);
    } else if (is_float && v->kind == HT_VAL_INT) {
      *v = ht_float((double)v->u.i);
    } else if ((is_int || is_float) && v->kind == HT_VAL_STR) {
      return ht_error(HT_ERR_INVALID, "value '%s' is not a number", v->u.s);
    }
  }
  return HT_OK;
}

static ht_status load_param(ht_space *s, const json_t *jp, size_t k) {
  const char *name = json_string_value(json_object_get(jp, "Name"));
  if (!json_is_object(jp) || !name) return ht_error(HT_ERR_INVALID, "TuningParameters[%zu]: no \"Name\"", k);
  const json_t *values = json_object_get(jp, "Values");
  const char *type = json_string_value(json_object_get(jp, "Type"));
  vlist l = {0};
  ht_status st;
  if (json_is_string(values)) st = parse_py_list(json_string_value(values), &l);
  else if (json_is_array(values)) st = json_list(values, &l);
  else st = ht_error(HT_ERR_INVALID, "no \"Values\" (a list, or a string holding a Python list)");
  if (!st && type) st = apply_type(type, &l);
  if (!st) st = ht_space_add_param(s, name, l.v, l.n);
  vlist_free(&l);
  if (st) ht_error_prefix(st, "parameter '%s': ", name);
  return st;
}

/* Constants conditions may name: scalar kernel arguments (Name -> FillValue) and the problem
 * size given as an object of names. Parameters win over constants of the same name. */
static void set_const_json(ht_space *s, const char *name, const json_t *v) {
  if (!name || ht_space_param_index(s, name) >= 0) return;
  if (json_is_integer(v)) ht_space_set_constant(s, name, ht_int(json_integer_value(v)));
  else if (json_is_real(v)) ht_space_set_constant(s, name, ht_float(json_real_value(v)));
  else if (json_is_string(v)) {
    char *end;
    const char *t = json_string_value(v);
    long long i = strtoll(t, &end, 10);
    if (end != t && !*end) ht_space_set_constant(s, name, ht_int(i));
  }
}

static void load_constants(ht_space *s, const json_t *spec) {
  if (!json_is_object(spec)) return;
  const char *key;
  json_t *v;
  json_object_foreach((json_t *)json_object_get(spec, "ProblemSize"), key, v) set_const_json(s, key, v);
  json_object_foreach((json_t *)json_object_get(spec, "Constants"), key, v) set_const_json(s, key, v);
  size_t i;
  json_array_foreach(json_object_get(spec, "Arguments"), i, v) {
    const char *mem = json_string_value(json_object_get(v, "MemoryType"));
    if (mem && !strcmp(mem, "Scalar"))
      set_const_json(s, json_string_value(json_object_get(v, "Name")), json_object_get(v, "FillValue"));
  }
}

/* Python's '/' is true division; ours truncates on ints like C. "a / b" becomes "a / 1.0 / b",
 * which is exact and keeps precedence and left associativity. */
static char *python_division(const char *e) {
  ht_buf b = {0};
  char one[2] = {0, 0};
  ht_buf_append(&b, "");
  for (const char *c = e; *c; c++) {
    if (*c == '/' && c[1] == '/') {
      ht_buf_append(&b, "//");
      c++;
      continue;
    }
    one[0] = *c;
    ht_buf_append(&b, *c == '/' ? "/ 1.0 /" : one);
  }
  if (b.failed) {
    ht_buf_free(&b);
    return NULL;
  }
  return b.data;
}

static ht_status load_condition(ht_space *s, const json_t *jc, size_t k) {
  const char *text = json_string_value(json_object_get(jc, "Expression"));
  if (!text) return ht_error(HT_ERR_INVALID, "Conditions[%zu]: no \"Expression\"", k);
  /* Compile the original first so syntax errors carry the user's columns. */
  ht_status st = ht_space_add_constraint(s, text);
  if (st) return ht_error_prefix(st, "Conditions[%zu]: ", k);
  if (!strchr(text, '/')) return HT_OK;
  char *py = python_division(text);
  if (!py) return ht_error(HT_ERR_NOMEM, "out of memory");
  /* Swap in the true-division form: the last constraint added is the one just compiled. */
  ht_expr *e;
  const char **names = malloc(((size_t)s->n_params + (size_t)s->n_consts + 1) * sizeof *names);
  if (!names) {
    free(py);
    return ht_error(HT_ERR_NOMEM, "out of memory");
  }
  for (int p = 0; p < s->n_params; p++) names[p] = s->params[p].name;
  for (int c = 0; c < s->n_consts; c++) names[s->n_params + c] = s->consts[c].name;
  st = ht_expr_compile(py, names, s->n_params + s->n_consts, &e);
  free(names);
  if (st) {
    free(py);
    return ht_error_prefix(st, "Conditions[%zu]: ", k);
  }
  ht_constraint *c = &s->cons[s->n_cons - 1];
  ht_expr_destroy(c->e);
  free(c->text);
  c->e = e;
  c->text = py;
  return HT_OK;
}

static ht_status load_root(ht_space *s, const json_t *root) {
  if (!json_is_object(root)) return ht_error(HT_ERR_INVALID, "the top level must be an object");
  const json_t *cs = json_object_get(root, "ConfigurationSpace");
  const json_t *params = json_object_get(cs, "TuningParameters");
  if (!json_is_object(cs) || !json_is_array(params))
    return ht_error(HT_ERR_INVALID, "no \"ConfigurationSpace\" object with a \"TuningParameters\" array");
  size_t i;
  json_t *v;
  json_array_foreach(params, i, v) {
    ht_status st = load_param(s, v, i);
    if (st) return st;
  }
  load_constants(s, json_object_get(root, "KernelSpecification"));
  const json_t *conds = json_object_get(cs, "Conditions");
  if (conds && !json_is_array(conds)) return ht_error(HT_ERR_INVALID, "\"Conditions\" must be an array");
  json_array_foreach(conds, i, v) {
    ht_status st = load_condition(s, v, i);
    if (st) return st;
  }
  return HT_OK;
}

ht_status ht_space_load_t1(const char *path, ht_space **out) {
  if (!path || !out) return ht_error(HT_ERR_INVALID, "ht_space_load_t1: bad arguments");
  *out = NULL;
  char *text = NULL;
  size_t len = 0;
  ht_status rs = ht_read_file(path, &text, &len); /* a regular file of bounded size, not a pipe */
  if (rs) return rs;
  json_error_t jerr;
  json_t *root = json_loadb(text, len, 0, &jerr);
  free(text);
  if (!root) return ht_error(HT_ERR_PARSE, "%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
  ht_space *s;
  ht_status st = ht_space_create(&s);
  if (!st) st = load_root(s, root);
  json_decref(root);
  if (st) {
    ht_space_destroy(s);
    return ht_error_prefix(st, "%s: ", path);
  }
  *out = s;
  return HT_OK;
}
