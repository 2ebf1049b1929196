/* What a simulated device (the "sim" backend, sim.c) has done so far on its virtual clock: for
 * the layers that weigh devices against each other (time, energy) and for tests. Internal. */
#ifndef HETUNE_DEVICE_SIM_H
#define HETUNE_DEVICE_SIM_H

#include <stdint.h>

#include "hetune/device.h"

typedef struct ht_sim_usage {
  uint64_t launches, transfers; /* since the device was opened */
  double kernel_s;              /* modelled time of every launch (latency included) */
  double transfer_s;            /* modelled time of every buffer write and read */
  double energy_j;              /* power_w while kernels run, idle_w while transfers run */
  double power_w, idle_w;       /* from the file: idle time between calls is the caller's to count */
} ht_sim_usage;

/* The usage of dev; HT_ERR_INVALID when dev is not a sim device. */
ht_status ht_sim_usage_get(const ht_device *dev, ht_sim_usage *out);

/* From now on, dev's modelled kernel times are multiplied by factor (> 0; 1 restores the file's
 * speed): a device slowed down or sped up while it runs, for drift tests. It replaces the factor
 * of an earlier call and combines with the file's "speed_change". HT_ERR_INVALID when dev is not
 * a sim device or factor is not a finite number > 0. */
ht_status ht_sim_set_speed(ht_device *dev, double factor);

#endif
