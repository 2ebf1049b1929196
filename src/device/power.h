/* The power readers behind ht_device_power (power.c): one source per file, for the device layer
 * and its tests. Internal. */
#ifndef HETUNE_DEVICE_POWER_H
#define HETUNE_DEVICE_POWER_H

#include "hetune/device.h"

/* Time and the reference load, as the RAPL reader sees them: the real clock and spinning threads,
 * or a test's scripted ones (fake counters advancing as the test decides). */
typedef struct ht_power_clock {
  double (*now)(void *ctx);           /* seconds, monotonic */
  void (*sleep)(void *ctx, double s); /* waits s seconds */
  ht_status (*load)(void *ctx, int on, int threads); /* starts (on = 1) or stops the reference load */
  void *ctx;
} ht_power_clock;

/* Options with every 0 field replaced by its default (threads: default_threads, at least 1). */
ht_device_power_options ht_power_defaults(const ht_device_power_options *opt, int default_threads);

/* RAPL package domains under root (NULL: $HETUNE_POWERCAP_DIR, else /sys/class/powercap): idle =
 * the average over o->idle_s, active = the highest of the windows of o->window_s while the load
 * runs for o->load_s. clk NULL: the real clock and load. id names the device in messages. */
ht_status ht_power_rapl(const char *id, const char *root, const ht_device_power_options *o,
                        const ht_power_clock *clk, ht_device_power_info *out);

/* NVML from library lib (NULL: "libnvidia-ml.so.1") for the CUDA device of index: active = the
 * enforced power limit, idle = the power drawn now. */
ht_status ht_power_nvml(const char *id, const char *lib, int index, const char *pci_bus_id, ht_device_power_info *out);

#endif
