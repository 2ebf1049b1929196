/* Configs: equality, hashing, text form ("TX=16,TY=8"), binding values. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "space/config_text.h"
#include "space/space_internal.h"

int ht_config_equal(const ht_config *a, const ht_config *b) {
  if (a->n != b->n || a->n < 0 || a->n > HT_MAX_PARAMS) return 0;
  return memcmp(a->idx, b->idx, (size_t)a->n * sizeof a->idx[0]) == 0;
}

uint64_t ht_config_hash(const ht_config *c) {
  int n = c->n < 0 ? 0 : c->n > HT_MAX_PARAMS ? HT_MAX_PARAMS : c->n;
  uint64_t h = ht_hash64(&c->n, sizeof c->n, 0);
  h = ht_hash64(c->idx, (size_t)n * sizeof c->idx[0], h);
  return h ^ (h >> 29); /* FNV's low bits mix poorly; hash tables index by them */
}

void ht_config_values(const ht_space *s, const ht_config *c, ht_value *vars) {
  for (int p = 0; p < s->n_params && p < c->n; p++) vars[p] = ht_space_value(s, p, c->idx[p]);
}

/* Writes ch at buf[*k] when it fits (keeping buf terminated); *k counts what the whole text needs,
 * as snprintf does. */
static void put_char(char ch, char *buf, size_t len, size_t *k) {
  if (*k + 1 < len) {
    buf[*k] = ch;
    buf[*k + 1] = '\0';
  }
  ++*k;
}

/* Names and values go out with '\', ',' and '=' behind a backslash, so that a string value holding
 * a separator reads back as itself (ht_config_split); other texts are unchanged. */
static void put_escaped(const char *s, char *buf, size_t len, size_t *k) {
  for (; *s; s++) {
    if (*s == '\\' || *s == ',' || *s == '=') put_char('\\', buf, len, k);
    put_char(*s, buf, len, k);
  }
}

int ht_config_format(const ht_space *s, const ht_config *c, char *buf, size_t len) {
  size_t k = 0;
  char num[64]; /* %.17g and integers fit; strings go out whole, never through a fixed buffer */
  if (len) buf[0] = '\0';
  for (int p = 0; p < s->n_params && p < c->n; p++) {
    ht_value v = ht_space_value(s, p, c->idx[p]);
    if (v.kind != HT_VAL_STR) ht_value_format(v, num, sizeof num);
    if (p) put_char(',', buf, len, &k);
    put_escaped(s->params[p].name, buf, len, &k);
    put_char('=', buf, len, &k);
    put_escaped(v.kind == HT_VAL_STR ? v.u.s : num, buf, len, &k);
  }
  return (int)k;
}

char *ht_config_text(const ht_space *s, const ht_config *c) {
  size_t need = (size_t)ht_config_format(s, c, NULL, 0) + 1;
  char *t = malloc(need);
  if (t) ht_config_format(s, c, t, need);
  return t;
}

/* The first unescaped sep in t, or NULL. */
static char *find_unescaped(char *t, char sep) {
  for (; *t; t++) {
    if (*t == '\\' && t[1]) t++;
    else if (*t == sep) return t;
  }
  return NULL;
}

static void unescape(char *t) {
  char *w = t;
  for (; *t; t++) *w++ = *t == '\\' && t[1] ? *++t : *t;
  *w = '\0';
}

static int blank(const char *t) {
  while (isspace((unsigned char)*t)) t++;
  return !*t;
}

int ht_config_split(char *text, char **names, char **values, int max, char **bad) {
  int n = 0;
  for (char *item = text, *next; item; item = next) {
    char *comma = find_unescaped(item, ',');
    next = comma ? comma + 1 : NULL;
    if (comma) *comma = '\0';
    if (blank(item)) continue;
    char *eq = find_unescaped(item, '=');
    if (!eq || n == max) {
      *bad = item;
      return eq ? -2 : -1;
    }
    *eq = '\0';
    unescape(item);
    unescape(eq + 1);
    names[n] = item;
    values[n++] = eq + 1;
  }
  return n;
}

/* Trims in place; returns the start. */
static char *trim(char *t) {
  while (isspace((unsigned char)*t)) t++;
  size_t n = strlen(t);
  while (n && isspace((unsigned char)t[n - 1])) t[--n] = '\0';
  return t;
}

static int match_value(const ht_param *p, const char *text) {
  char buf[128];
  size_t n = strlen(text);
  for (int v = 0; v < p->n; v++) {
    ht_value_format(p->values[v], buf, sizeof buf);
    if (!strcmp(buf, text)) return v;
    /* 'float4' or "float4" names the string value too */
    if (p->values[v].kind == HT_VAL_STR && n >= 2 && (text[0] == '\'' || text[0] == '"') && text[n - 1] == text[0] &&
        strlen(p->values[v].u.s) == n - 2 && !strncmp(p->values[v].u.s, text + 1, n - 2))
      return v;
  }
  char *end;
  double d = strtod(text, &end);
  if (end == text || *end) return -1;
  for (int v = 0; v < p->n; v++)
    if (p->values[v].kind != HT_VAL_STR && ht_value_equal(p->values[v], ht_float(d))) return v;
  return -1;
}

static ht_status no_value(const ht_param *p, const char *text) {
  char list[256], buf[64];
  size_t k = 0;
  list[0] = '\0';
  for (int v = 0; v < p->n && k < sizeof list - 8; v++) {
    ht_value_format(p->values[v], buf, sizeof buf);
    int n = snprintf(list + k, sizeof list - k, "%s%s", v ? ", " : "", buf);
    if (n > 0) k += (size_t)n;
  }
  if (k >= sizeof list - 8) snprintf(list + sizeof list - 8, 8, ", ...");
  return ht_error(HT_ERR_INVALID, "value '%s' is not among the values of '%s' (%s)", text, p->name, list);
}

static ht_status parse_item(const ht_space *s, char *name_text, char *value_text, ht_config *out, int *seen) {
  char *name = trim(name_text), *value = trim(value_text);
  int p = ht_space_param_index(s, name);
  if (p < 0) return ht_error(HT_ERR_NOTFOUND, "unknown parameter '%s'", name);
  if (seen[p]) return ht_error(HT_ERR_INVALID, "parameter '%s' given twice", name);
  int v = match_value(&s->params[p], value);
  if (v < 0) return no_value(&s->params[p], value);
  seen[p] = 1;
  out->idx[p] = v;
  return HT_OK;
}

ht_status ht_config_parse(const ht_space *s, const char *text, ht_config *out) {
  if (!s || !text || !out) return ht_error(HT_ERR_INVALID, "ht_config_parse: bad arguments");
  char *copy = ht_strdup(text);
  if (!copy) return ht_error(HT_ERR_NOMEM, "out of memory");
  int seen[HT_MAX_PARAMS] = {0};
  ht_config c = {.n = s->n_params};
  ht_status st = HT_OK;
  char *names[HT_MAX_PARAMS], *values[HT_MAX_PARAMS];
  char *bad = NULL;
  int n = ht_config_split(copy, names, values, HT_MAX_PARAMS, &bad);
  if (n == -1) st = ht_error(HT_ERR_PARSE, "expected NAME=VALUE, found '%s'", trim(bad));
  if (n == -2) st = ht_error(HT_ERR_INVALID, "more than %d parameters", HT_MAX_PARAMS);
  for (int i = 0; i < n && !st; i++) st = parse_item(s, names[i], values[i], &c, seen);
  for (int p = 0; p < s->n_params && !st; p++)
    if (!seen[p]) st = ht_error(HT_ERR_INVALID, "parameter '%s' is missing", s->params[p].name);
  free(copy);
  if (st) return ht_error_prefix(st, "config '%s': ", text);
  *out = c;
  return HT_OK;
}
