/* Strategy options: "key=value,key=value". */
#include <stdlib.h>
#include <string.h>

#include "hetune/tune.h"

#define MAX_OPTIONS 32

struct ht_options {
  int n;
  char *key[MAX_OPTIONS], *value[MAX_OPTIONS];
  int used[MAX_OPTIONS];
};

ht_status ht_options_parse(const char *text, ht_options **out) {
  ht_options *o = calloc(1, sizeof *o);
  if (!o) return ht_error(HT_ERR_NOMEM, "out of memory");
  char *copy = ht_strdup(text ? text : ""), *save = NULL;
  for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(tok, '=');
    if (!eq || eq == tok || o->n == MAX_OPTIONS) {
      ht_status st = ht_error(HT_ERR_INVALID, "strategy option '%s': expected key=value", tok);
      free(copy);
      ht_options_destroy(o);
      return st;
    }
    *eq = '\0';
    o->key[o->n] = ht_strdup(tok);
    o->value[o->n++] = ht_strdup(eq + 1);
  }
  free(copy);
  *out = o;
  return HT_OK;
}

void ht_options_destroy(ht_options *o) {
  if (!o) return;
  for (int i = 0; i < o->n; i++) {
    free(o->key[i]);
    free(o->value[i]);
  }
  free(o);
}

static const char *find(const ht_options *o, const char *key) {
  for (int i = 0; o && i < o->n; i++)
    if (strcmp(o->key[i], key) == 0) {
      ((ht_options *)o)->used[i] = 1; /* bookkeeping only: reports unknown keys */
      return o->value[i];
    }
  return NULL;
}

int64_t ht_options_int(const ht_options *o, const char *key, int64_t def) {
  const char *v = find(o, key);
  return v ? strtoll(v, NULL, 10) : def;
}

double ht_options_double(const ht_options *o, const char *key, double def) {
  const char *v = find(o, key);
  return v ? strtod(v, NULL) : def;
}

const char *ht_options_str(const ht_options *o, const char *key, const char *def) {
  const char *v = find(o, key);
  return v ? v : def;
}

char *ht_options_unused(const ht_options *o) {
  ht_buf b = {0};
  for (int i = 0; o && i < o->n; i++)
    if (!o->used[i]) ht_buf_appendf(&b, "%s%s", b.len ? ", " : "", o->key[i]);
  return b.data;
}
