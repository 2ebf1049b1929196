/* Host<->device transfer tables in the store: one row per measured point, per device. */
#include <math.h>
#include <string.h>

#include "store/store_internal.h"

static ht_status insert_points(ht_store *st, int64_t device_id, const ht_transfer_table *t) {
  sqlite3_stmt *s;
  ht_status r = hts_prepare(st, "INSERT INTO transfers (device_id, direction, bytes, seconds, measured)"
                                " VALUES (?, ?, ?, ?, ?)", &s);
  double now = ht_wall_time();
  for (int d = 0; d < 2 && !r; d++) {
    for (int i = 0; i < t->n[d] && !r; i++) {
      sqlite3_reset(s);
      int rc = sqlite3_bind_int64(s, 1, device_id) | hts_bind_text(s, 2, ht_transfer_dir_name((ht_transfer_dir)d));
      rc |= sqlite3_bind_double(s, 3, t->bytes[d][i]) | sqlite3_bind_double(s, 4, t->seconds[d][i]);
      rc |= sqlite3_bind_double(s, 5, now);
      if (rc == SQLITE_OK) rc = sqlite3_step(s);
      if (rc != SQLITE_DONE) r = hts_fail(st, rc, "store a transfer point");
    }
  }
  sqlite3_finalize(s);
  return r;
}

/* The table's own checks, so that what is stored reads back as a table. */
static ht_status check_table(const ht_store *st, const ht_transfer_table *t) {
  for (int d = 0; d < 2; d++) {
    if (t->n[d] < 0 || t->n[d] > HT_TRANSFER_MAX_POINTS)
      return ht_error(HT_ERR_INVALID, "%s: transfer table with %d %s points", st->path, t->n[d],
                      ht_transfer_dir_name((ht_transfer_dir)d));
    for (int i = 0; i < t->n[d]; i++)
      if (!(t->bytes[d][i] > (i ? t->bytes[d][i - 1] : 0)) || !(t->seconds[d][i] >= 0) ||
          !isfinite(t->bytes[d][i]) || !isfinite(t->seconds[d][i]))
        return ht_error(HT_ERR_INVALID, "%s: transfer table, %s point %d (%g bytes, %g s): bytes must increase and "
                                        "times be >= 0", st->path, ht_transfer_dir_name((ht_transfer_dir)d), i,
                        t->bytes[d][i], t->seconds[d][i]);
  }
  return HT_OK;
}

ht_status ht_store_put_transfers(ht_store *st, const ht_device_info *info, const ht_transfer_table *t) {
  ht_status r = hts_writable(st, "store a transfer table");
  if (!r && !t) r = ht_error(HT_ERR_INVALID, "%s: no transfer table to store", st->path);
  if (!r) r = check_table(st, t);
  if (!r) r = hts_exec(st, "BEGIN IMMEDIATE", "begin transfer table");
  if (r) return r;
  int64_t device_id = 0;
  sqlite3_stmt *s = NULL;
  r = ht_store_put_device(st, info, &device_id);
  if (!r) r = hts_prepare(st, "DELETE FROM transfers WHERE device_id = ?", &s);
  if (!r) {
    sqlite3_bind_int64(s, 1, device_id);
    int rc = sqlite3_step(s);
    if (rc != SQLITE_DONE) r = hts_fail(st, rc, "replace the transfer table");
  }
  sqlite3_finalize(s);
  if (!r) r = insert_points(st, device_id, t);
  if (!r) r = hts_exec(st, "COMMIT", "commit transfer table");
  if (r) sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
  return r;
}

ht_status ht_store_get_transfers(ht_store *st, const ht_device_info *info, ht_transfer_table *out, int *found) {
  memset(out, 0, sizeof *out);
  *found = 0;
  if (!st || !info) return ht_error(HT_ERR_INVALID, "store and device are required");
  if (!hts_has_table(st, "transfers")) return HT_OK; /* a database older than the table, opened read-only */
  sqlite3_stmt *s;
  ht_status r = hts_prepare(st, "SELECT t.direction, t.bytes, t.seconds FROM transfers t"
                                " JOIN devices d ON d.id = t.device_id WHERE d.fingerprint = ?"
                                " ORDER BY t.bytes", &s);
  if (r) return r;
  hts_bind_text(s, 1, info->fingerprint);
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    int d = strcmp(hts_col_text(s, 0), "d2h") == 0 ? HT_D2H : HT_H2D;
    if (out->n[d] >= HT_TRANSFER_MAX_POINTS) continue; /* written by put, which allows no more */
    out->bytes[d][out->n[d]] = sqlite3_column_double(s, 1);
    out->seconds[d][out->n[d]++] = sqlite3_column_double(s, 2);
  }
  r = rc == SQLITE_DONE ? HT_OK : hts_fail(st, rc, "read the transfer table");
  sqlite3_finalize(s);
  if (r) memset(out, 0, sizeof *out);
  *found = !r && out->n[0] + out->n[1] > 0;
  return r;
}
