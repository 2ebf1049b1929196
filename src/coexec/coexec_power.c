/* Power figures of the devices for the energy options: a device whose power was not given (the
 * file's "power_w", ht_coexec_set_power) takes its active power less its idle power from
 * ht_device_power, the planner's P_i. Only when an energy option is on: measuring a CPU's power
 * runs a reference load on every core for a moment, which a plan by time alone need not pay, and
 * which a store spares the programs that come after. */
#include <stdio.h>
#include <string.h>

#include "coexec/coexec_internal.h"

static int wants_energy(const ht_partition_opts *o) {
  return o->eliminate_energy > 0 || o->recursive || o->idle_power_w > 0;
}

static int is_measured(const ht_device_power_info *p) { return strcmp(p->source, "rapl") == 0; }

/* A figure measured under load (RAPL: every core busy for a moment) is kept in the computation's
 * store and read back by later programs; a model's or the driver's (sim, NVML) costs nothing to
 * read again, and stays as current as its file or driver. */
static ht_status device_power(ht_coexec *x, int pu, ht_device_power_info *p) {
  ht_store *st = x->c->st;
  const ht_device_info *info = &ht_exec_device(x->pu_ex[pu])->info;
  int found = 0;
  double when = 0;
  if (st && ht_store_get_power(st, info, p, &when, &found) == HT_OK && found && is_measured(p)) {
    ht_log(2, "%s: power of %s from the store (measured %.0f s ago)", x->c->name, info->id, ht_wall_time() - when);
    return HT_OK;
  }
  ht_error_clear();
  ht_status s = ht_device_power(ht_exec_device(x->pu_ex[pu]), NULL, p);
  if (!s && st && is_measured(p) && ht_store_put_power(st, info, p)) {
    ht_log(1, "%s: the power of %s could not be stored: %s", x->c->name, info->id, ht_last_error());
    ht_error_clear();
  }
  return s;
}

ht_status htx_fill_power(ht_coexec *x) {
  if (x->has_power || !wants_energy(&x->popts)) return HT_OK;
  for (int i = 0; i < x->n_pus; i++) {
    if (x->power_w[i] > 0) continue;
    const char *id = ht_coexec_pu_device(x, i);
    ht_device_power_info p;
    ht_status st = device_power(x, i, &p);
    double watts = p.active_w - p.idle_w; /* the planner's power: busy, less what it draws anyway */
    if (!st && !(watts > 0))
      st = ht_error(HT_ERR_UNSUPPORTED, "no power reading for device %s: active %g W is not above idle %g W", id,
                    p.active_w, p.idle_w);
    if (st) {
      char why[1024];
      snprintf(why, sizeof why, "%s", ht_last_error());
      return ht_error(st, "%s: energy options: %s; give the device's power as the split's \"power_w\": "
                          "{\"%s\": WATTS} or with ht_coexec_set_power",
                      x->c->name, why, id);
    }
    if ((st = ht_coexec_set_power(x, id, watts))) return st;
  }
  return HT_OK;
}
