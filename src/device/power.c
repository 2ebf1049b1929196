/* ht_device_power: a device's active and idle power, from the reader of its backend (one line per
 * backend in the table below; a backend not listed has no power figure). */
#include <string.h>

#include "device/backend.h"
#include "device/power.h"
#include "device/sim.h"

/* The model's figures of a simulated device: "power_w" and "idle_w" of its entry in $HETUNE_SIM. */
static ht_status power_sim(ht_device *dev, const ht_device_power_options *o, ht_device_power_info *out) {
  (void)o;
  ht_sim_usage u;
  if (ht_sim_usage_get(dev, &u)) return ht_error(HT_ERR_INVALID, "%s: not a simulated device", dev->info.id);
  if (!(u.power_w > 0))
    return ht_error(HT_ERR_UNSUPPORTED, "no power reading for device %s: its entry in $HETUNE_SIM has no \"power_w\"",
                    dev->info.id);
  out->active_w = u.power_w;
  out->idle_w = u.idle_w;
  ht_copy_field(out->source, sizeof out->source, "sim model");
  ht_copy_field(out->detail, sizeof out->detail, dev->info.name);
  return HT_OK;
}

static ht_status power_c(ht_device *dev, const ht_device_power_options *o, ht_device_power_info *out) {
  return ht_power_rapl(dev->info.id, NULL, o, NULL, out);
}

static ht_status power_cuda(ht_device *dev, const ht_device_power_options *o, ht_device_power_info *out) {
  (void)o;
  return ht_power_nvml(dev->info.id, NULL, dev->index, dev->pci_bus_id, out);
}

static const struct {
  const char *backend;
  ht_status (*read)(ht_device *dev, const ht_device_power_options *o, ht_device_power_info *out);
} readers[] = {
    {"sim", power_sim},
    {"c", power_c},
    {"cuda", power_cuda},
};

ht_device_power_options ht_power_defaults(const ht_device_power_options *opt, int default_threads) {
  ht_device_power_options o = opt ? *opt : (ht_device_power_options){0};
  if (!(o.idle_s > 0)) o.idle_s = 0.1;
  if (!(o.load_s > 0)) o.load_s = 0.3;
  if (!(o.window_s > 0)) o.window_s = 0.05;
  if (o.window_s > o.load_s) o.window_s = o.load_s;
  if (o.threads < 1) o.threads = default_threads > 0 ? default_threads : 1;
  return o;
}

ht_status ht_device_power(ht_device *dev, const ht_device_power_options *opt, ht_device_power_info *out) {
  if (!dev || !out) return ht_error(HT_ERR_INVALID, "ht_device_power: bad arguments");
  memset(out, 0, sizeof *out);
  ht_device_power_options o = ht_power_defaults(opt, dev->info.max_threads);
  for (size_t i = 0; i < sizeof readers / sizeof readers[0]; i++)
    if (!strcmp(readers[i].backend, dev->ops->name)) return readers[i].read(dev, &o, out);
  return ht_error(HT_ERR_UNSUPPORTED, "no power reading for device %s: the %s backend reads no power counters",
                  dev->info.id, dev->ops->name);
}
