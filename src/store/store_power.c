/* Devices' power figures in the store: one row per device, replaced when measured again. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "store/store_internal.h"

static ht_status check_power(const ht_store *st, const ht_device_power_info *p) {
  if (!p) return ht_error(HT_ERR_INVALID, "%s: no power figures to store", st->path);
  if (!(p->active_w > 0) || !(p->idle_w >= 0) || !isfinite(p->active_w) || !isfinite(p->idle_w))
    return ht_error(HT_ERR_INVALID, "%s: power figures active %g W, idle %g W: expected active > 0, idle >= 0",
                    st->path, p->active_w, p->idle_w);
  return HT_OK;
}

ht_status ht_store_put_power(ht_store *st, const ht_device_info *info, const ht_device_power_info *p) {
  ht_status r = hts_writable(st, "store power figures");
  if (!r && !info) r = ht_error(HT_ERR_INVALID, "%s: no device for the power figures", st->path);
  if (!r) r = check_power(st, p);
  if (!r) r = hts_exec(st, "BEGIN IMMEDIATE", "begin power figures");
  if (r) return r;
  int64_t device_id = 0;
  sqlite3_stmt *s = NULL;
  r = ht_store_put_device(st, info, &device_id);
  if (!r) r = hts_prepare(st, "INSERT OR REPLACE INTO device_power (device_id, active_w, idle_w, source, detail, measured)"
                              " VALUES (?, ?, ?, ?, ?, ?)", &s);
  if (!r) {
    int rc = sqlite3_bind_int64(s, 1, device_id) | sqlite3_bind_double(s, 2, p->active_w);
    rc |= sqlite3_bind_double(s, 3, p->idle_w) | hts_bind_text(s, 4, p->source) | hts_bind_text(s, 5, p->detail);
    rc |= sqlite3_bind_double(s, 6, ht_wall_time());
    if (rc == SQLITE_OK) rc = sqlite3_step(s);
    if (rc != SQLITE_DONE) r = hts_fail(st, rc, "store power figures");
  }
  sqlite3_finalize(s);
  if (!r) r = hts_exec(st, "COMMIT", "commit power figures");
  if (r) sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
  return r;
}

ht_status ht_store_get_power(ht_store *st, const ht_device_info *info, ht_device_power_info *out, double *measured_at,
                             int *found) {
  memset(out, 0, sizeof *out);
  *found = 0;
  if (!st || !info) return ht_error(HT_ERR_INVALID, "store and device are required");
  if (!hts_has_table(st, "device_power")) return HT_OK; /* a database older than the table, opened read-only */
  sqlite3_stmt *s;
  ht_status r = hts_prepare(st, "SELECT p.active_w, p.idle_w, p.source, p.detail, p.measured FROM device_power p"
                                " JOIN devices d ON d.id = p.device_id WHERE d.fingerprint = ?", &s);
  if (r) return r;
  hts_bind_text(s, 1, info->fingerprint);
  int rc = sqlite3_step(s);
  if (rc == SQLITE_ROW) {
    out->active_w = sqlite3_column_double(s, 0);
    out->idle_w = sqlite3_column_double(s, 1);
    snprintf(out->source, sizeof out->source, "%s", hts_col_text(s, 2));
    snprintf(out->detail, sizeof out->detail, "%s", hts_col_text(s, 3));
    if (measured_at) *measured_at = sqlite3_column_double(s, 4);
    *found = 1;
  } else if (rc != SQLITE_DONE) {
    r = hts_fail(st, rc, "read power figures");
  }
  sqlite3_finalize(s);
  return r;
}
