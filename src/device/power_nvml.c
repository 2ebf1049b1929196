/* NVML (libnvidia-ml, loaded with dlopen like the CUDA driver, so that one binary runs without
 * it): the enforced power limit of an NVIDIA GPU as its active power, the power it draws now as
 * its idle power (read before any load of ours runs). */
#include <dlfcn.h>
#include <stdio.h>

#include "device/backend.h"
#include "device/power.h"

typedef void *nvml_device;
typedef int (*nvml_init_fn)(void);
typedef int (*nvml_handle_fn)(unsigned index, nvml_device *out);
typedef int (*nvml_bus_handle_fn)(const char *pci_bus_id, nvml_device *out);
typedef int (*nvml_milliwatts_fn)(nvml_device dev, unsigned *mw);
typedef const char *(*nvml_error_fn)(int code);

typedef struct nvml_api {
  nvml_init_fn init, shutdown;
  nvml_handle_fn handle;
  nvml_bus_handle_fn bus_handle; /* may be NULL */
  nvml_milliwatts_fn usage, limit;
  nvml_error_fn error_string;
} nvml_api;

static ht_status nvml_fail(const char *id, const nvml_api *a, const char *call, int code) {
  return ht_error(HT_ERR_UNSUPPORTED, "no power reading for device %s: %s failed: %s", id, call,
                  a->error_string ? a->error_string(code) : "NVML error");
}

/* By PCI bus where known: NVML counts devices in bus order, CUDA fastest first. */
static int device_handle(const nvml_api *a, int index, const char *bus, nvml_device *d, const char **call) {
  if (bus && *bus && a->bus_handle) {
    *call = "nvmlDeviceGetHandleByPciBusId_v2";
    return a->bus_handle(bus, d);
  }
  *call = "nvmlDeviceGetHandleByIndex_v2";
  return a->handle((unsigned)index, d);
}

static ht_status nvml_read(const char *id, const nvml_api *a, int index, const char *bus, ht_device_power_info *out) {
  int rc = a->init();
  if (rc) return nvml_fail(id, a, "nvmlInit_v2", rc);
  nvml_device d;
  unsigned idle_mw = 0, limit_mw = 0;
  const char *call = "";
  ht_status st = HT_OK;
  if ((rc = device_handle(a, index, bus, &d, &call))) st = nvml_fail(id, a, call, rc);
  else if ((rc = a->usage(d, &idle_mw))) st = nvml_fail(id, a, "nvmlDeviceGetPowerUsage", rc);
  else if ((rc = a->limit(d, &limit_mw))) st = nvml_fail(id, a, "nvmlDeviceGetEnforcedPowerLimit", rc);
  a->shutdown();
  if (st) return st;
  out->active_w = limit_mw * 1e-3;
  out->idle_w = idle_mw * 1e-3;
  ht_copy_field(out->source, sizeof out->source, "nvml");
  if (bus && *bus && a->bus_handle)
    snprintf(out->detail, sizeof out->detail, "NVML device at PCI %s: enforced power limit, power drawn now", bus);
  else
    snprintf(out->detail, sizeof out->detail, "NVML device %d: enforced power limit, power drawn now", index);
  return HT_OK;
}

ht_status ht_power_nvml(const char *id, const char *lib, int index, const char *pci_bus_id, ht_device_power_info *out) {
  const char *name = lib ? lib : "libnvidia-ml.so.1";
  void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!h) return ht_error(HT_ERR_UNSUPPORTED, "no power reading for device %s: %s not found (%s)", id, name, dlerror());
  nvml_api a = {
      (nvml_init_fn)dlsym(h, "nvmlInit_v2"),
      (nvml_init_fn)dlsym(h, "nvmlShutdown"),
      (nvml_handle_fn)dlsym(h, "nvmlDeviceGetHandleByIndex_v2"),
      (nvml_bus_handle_fn)dlsym(h, "nvmlDeviceGetHandleByPciBusId_v2"),
      (nvml_milliwatts_fn)dlsym(h, "nvmlDeviceGetPowerUsage"),
      (nvml_milliwatts_fn)dlsym(h, "nvmlDeviceGetEnforcedPowerLimit"),
      (nvml_error_fn)dlsym(h, "nvmlErrorString"),
  };
  ht_status st = a.init && a.shutdown && a.handle && a.usage && a.limit
                     ? nvml_read(id, &a, index, pci_bus_id, out)
                     : ht_error(HT_ERR_UNSUPPORTED, "no power reading for device %s: %s lacks the NVML power calls",
                                id, name);
  dlclose(h);
  return st;
}
