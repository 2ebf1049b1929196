/* A small RFC 4180 CSV reader (quoted fields may hold commas, quotes and newlines), internal. */
#ifndef HETUNE_CSV_H
#define HETUNE_CSV_H

#include <stddef.h>

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

#endif
