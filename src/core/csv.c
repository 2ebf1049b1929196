/* The CSV reader (RFC 4180) shared by recorded spaces and prediction datasets. */
#include "core/csv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void row_clear(ht_csv_row *r) {
  for (int i = 0; i < r->n; i++) free(r->f[i]);
  r->n = 0;
}

static int row_push(ht_csv_row *r, const char *s, size_t len) {
  if (r->n == r->cap) {
    int cap = r->cap ? 2 * r->cap : 32;
    char **f = realloc(r->f, (size_t)cap * sizeof *f);
    if (!f) return 0;
    r->f = f;
    r->cap = cap;
  }
  char *v = malloc(len + 1);
  if (!v) return 0;
  memcpy(v, s, len);
  v[len] = '\0';
  r->f[r->n++] = v;
  return 1;
}

int ht_csv_next(const char *text, size_t *pos, ht_csv_row *r, char *scratch) {
  size_t i = *pos;
  row_clear(r);
  if (!text[i]) return 0;
  for (;;) {
    size_t len = 0;
    if (text[i] == '"') {
      for (i++;; i++) {
        if (!text[i]) return -1;
        if (text[i] == '"' && text[i + 1] == '"') scratch[len++] = text[i++];
        else if (text[i] == '"') break;
        else scratch[len++] = text[i];
      }
      i++;
    } else
      while (text[i] && text[i] != ',' && text[i] != '\n' && text[i] != '\r') scratch[len++] = text[i++];
    if (!row_push(r, scratch, len)) return -1;
    if (text[i] == ',') {
      i++;
      continue;
    }
    if (text[i] == '\r') i++;
    if (text[i] == '\n') i++;
    else if (text[i]) return -1;
    *pos = i;
    return 1;
  }
}

int ht_csv_col(const ht_csv_row *head, const char *name) {
  for (int i = 0; i < head->n; i++)
    if (strcmp(head->f[i], name) == 0) return i;
  return -1;
}

void ht_csv_row_free(ht_csv_row *r) {
  row_clear(r);
  free(r->f);
  r->f = NULL;
  r->cap = 0;
}

ht_status ht_lines_read(const char *path, const char *what, const char *header, const char *shown, ht_lines_row_fn row,
                        void *ctx) {
  /* A few hundred rows: a pipe, a device or a huge file is a wrong path. */
  ht_status st = ht_check_regular_file(path, (size_t)1 << 20);
  if (st) return ht_error_prefix(st, "%s: ", what);
  FILE *f = fopen(path, "r");
  if (!f) return ht_error(HT_ERR_IO, "%s %s: %s", what, path, strerror(errno));
  char text[512];
  int line = 0, has_header = 0;
  while (!st && fgets(text, sizeof text, f)) {
    line++;
    text[strcspn(text, "\r\n")] = '\0';
    if (text[0] == '#' || text[0] == '\0') continue;
    if (has_header) {
      st = row(path, line, text, ctx);
    } else if (strncmp(text, header, strlen(header)) == 0) {
      has_header = 1;
    } else {
      st = ht_error(HT_ERR_PARSE, "%s:%d: expected the header '%s'", path, line, shown);
    }
  }
  fclose(f);
  if (!st && !has_header) st = ht_error(HT_ERR_PARSE, "%s: no header '%s'", path, shown);
  return st;
}
