/* Power figures of the devices for the energy options: a device whose power was not given (the
 * file's "power_w", ht_coexec_set_power) takes its active power less its idle power from
 * ht_device_power, the planner's P_i. Only when an energy option is on: measuring a CPU's power
 * runs a reference load on every core for a moment, which a plan by time alone need not pay. */
#include <stdio.h>

#include "coexec/coexec_internal.h"

static int wants_energy(const ht_partition_opts *o) {
  return o->eliminate_energy > 0 || o->recursive || o->idle_power_w > 0;
}

ht_status htx_fill_power(ht_coexec *x) {
  if (x->has_power || !wants_energy(&x->popts)) return HT_OK;
  for (int i = 0; i < x->n_pus; i++) {
    if (x->power_w[i] > 0) continue;
    const char *id = ht_coexec_pu_device(x, i);
    ht_device_power_info p;
    ht_status st = ht_device_power(ht_exec_device(x->pu_ex[i]), NULL, &p);
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
