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
typedef int (*nvml_milliwatts_fn)(nvml_device dev, unsigned *mw);
typedef const char *(*nvml_error_fn)(int code);

typedef struct nvml_api {
  nvml_init_fn init, shutdown;
  nvml_handle_fn handle;
  nvml_milliwatts_fn usage, limit;
  nvml_error_fn error_string;
} nvml_api;

static ht_status nvml_fail(const char *id, const nvml_api *a, const char *call, int code) {
  return ht_error(HT_ERR_UNSUPPORTED, "no power reading for device %s: %s failed: %s", id, call,
                  a->error_string ? a->error_string(code) : "NVML error");
}

static ht_status nvml_read(const char *id, const nvml_api *a, int index, ht_device_power_info *out) {
  int rc = a->init();
  if (rc) return nvml_fail(id, a, "nvmlInit_v2", rc);
  nvml_device d;
  unsigned idle_mw = 0, limit_mw = 0;
  ht_status st = HT_OK;
  if ((rc = a->handle((unsigned)index, &d))) st = nvml_fail(id, a, "nvmlDeviceGetHandleByIndex_v2", rc);
  else if ((rc = a->usage(d, &idle_mw))) st = nvml_fail(id, a, "nvmlDeviceGetPowerUsage", rc);
  else if ((rc = a->limit(d, &limit_mw))) st = nvml_fail(id, a, "nvmlDeviceGetEnforcedPowerLimit", rc);
  a->shutdown();
  if (st) return st;
  out->active_w = limit_mw * 1e-3;
  out->idle_w = idle_mw * 1e-3;
  ht_copy_field(out->source, sizeof out->source, "nvml");
  snprintf(out->detail, sizeof out->detail, "NVML device %d: enforced power limit, power drawn now", index);
  return HT_OK;
}

ht_status ht_power_nvml(const char *id, const char *lib, int index, ht_device_power_info *out) {
  const char *name = lib ? lib : "libnvidia-ml.so.1";
  void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!h) return ht_error(HT_ERR_UNSUPPORTED, "no power reading for device %s: %s not found (%s)", id, name, dlerror());
  nvml_api a = {
      (nvml_init_fn)dlsym(h, "nvmlInit_v2"),
      (nvml_init_fn)dlsym(h, "nvmlShutdown"),
      (nvml_handle_fn)dlsym(h, "nvmlDeviceGetHandleByIndex_v2"),
      (nvml_milliwatts_fn)dlsym(h, "nvmlDeviceGetPowerUsage"),
      (nvml_milliwatts_fn)dlsym(h, "nvmlDeviceGetEnforcedPowerLimit"),
      (nvml_error_fn)dlsym(h, "nvmlErrorString"),
  };
  ht_status st = a.init && a.shutdown && a.handle && a.usage && a.limit
                     ? nvml_read(id, &a, index, out)
                     : ht_error(HT_ERR_UNSUPPORTED, "no power reading for device %s: %s lacks the NVML power calls",
                                id, name);
  dlclose(h);
  return st;
}
