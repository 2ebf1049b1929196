/* A small RFC 4180 CSV reader (quoted fields may hold commas, quotes and newlines), internal. */
#ifndef HETUNE_CSV_H
#define HETUNE_CSV_H

#include <stddef.h>

#include "hetune/core.h"

typedef struct ht_csv_row {
  char **f;
  int n, cap;
} ht_csv_row;

/* Reads the record at *pos of text into r. scratch must hold strlen(text) + 1 bytes.
 * Returns 1 for a record, 0 at the end of the text, -1 on a malformed field or out of memory. */
int ht_csv_next(const char *text, size_t *pos, ht_csv_row *r, char *scratch);
/* Index of the header field called name, -1 when absent. */
int ht_csv_col(const ht_csv_row *head, const char *name);
void ht_csv_row_free(ht_csv_row *r);

/* Small files of simple rows (bandwidth curves, transfer tables): each data row, its 1-based line
 * number and its text without the line end; an error it returns ends the reading. */
typedef ht_status (*ht_lines_row_fn)(const char *path, int line, char *text, void *ctx);
/* Reads path, a regular file of at most 1 MiB, line by line (lines up to 511 characters): blank
 * and '#' lines are skipped, the first other line must begin with header (else "PATH:LINE:
 * expected the header 'shown'", and a file without one "PATH: no header 'shown'"), and each
 * later line goes to row. what names the file in I/O errors ("bandwidth curve"). */
ht_status ht_lines_read(const char *path, const char *what, const char *header, const char *shown, ht_lines_row_fn row,
                        void *ctx);

#endif
