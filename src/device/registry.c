/* The backend registry: one row per backend; opening devices by id; listing; device constants. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/backend.h"

static const ht_backend_ops *const backends[] = {
    &ht_backend_c,
    &ht_backend_opencl,
    &ht_backend_cuda,
    &ht_backend_sim,
};

enum { N_BACKENDS = (int)(sizeof backends / sizeof backends[0]), MAX_DEVICES = 64 };

int ht_backend_count(void) { return N_BACKENDS; }

const ht_backend_ops *ht_backend_at(int i) { return i >= 0 && i < N_BACKENDS ? backends[i] : NULL; }

const ht_backend_ops *ht_backend_find(const char *name) {
  if (!name) return NULL;
  for (int i = 0; i < N_BACKENDS; i++)
    if (strcmp(backends[i]->name, name) == 0) return backends[i];
  return NULL;
}

static const char *const lang_names[] = {"c", "opencl", "cuda"};

const char *ht_language_name(ht_language l) {
  return (unsigned)l < sizeof lang_names / sizeof lang_names[0] ? lang_names[l] : "?";
}

ht_status ht_language_parse(const char *s, ht_language *out) {
  for (unsigned i = 0; s && i < sizeof lang_names / sizeof lang_names[0]; i++)
    if (strcmp(s, lang_names[i]) == 0) {
      *out = (ht_language)i;
      return HT_OK;
    }
  return ht_error(HT_ERR_INVALID, "unknown language '%s' (expected c, opencl or cuda)", s ? s : "(null)");
}

/* Appends "backend: reason" lines for backends that cannot run, and the ids of all devices. */
ht_status ht_device_list(ht_device_info **infos, int *n, ht_buf *notes) {
  ht_device_info *all = calloc((size_t)N_BACKENDS * MAX_DEVICES, sizeof *all);
  if (!all) return ht_error(HT_ERR_NOMEM, "out of memory");
  int total = 0;
  for (int i = 0; i < N_BACKENDS; i++) {
    int k = 0;
    ht_status s = backends[i]->probe(all + total, MAX_DEVICES, &k);
    if (s) {
      if (notes) ht_buf_appendf(notes, "%s: %s\n", backends[i]->name, ht_last_error());
      continue;
    }
    total += k;
  }
  ht_error_clear();
  *infos = all;
  *n = total;
  return HT_OK;
}

/* "c:0, opencl:0:0" for error messages. */
static void available_ids(char *out, size_t len) {
  ht_device_info *infos = NULL;
  int n = 0;
  out[0] = '\0';
  if (ht_device_list(&infos, &n, NULL)) return;
  size_t used = 0;
  for (int i = 0; i < n && used < len; i++)
    used += (size_t)snprintf(out + used, len - used, "%s%s", i ? ", " : "", infos[i].id);
  free(infos);
  if (!n) snprintf(out, len, "none");
}

static ht_status not_found(const char *id) {
  char ids[1024];
  available_ids(ids, sizeof ids);
  return ht_error(HT_ERR_NOTFOUND, "device '%s' not found; available devices: %s", id, ids);
}

/* Index of the device named id among infos: exact id, or a prefix ("opencl:0" -> "opencl:0:0"),
 * or the first device when id names only the backend. */
static int match_device(const char *id, const ht_device_info *infos, int n) {
  if (!strchr(id, ':')) return n > 0 ? 0 : -1;
  for (int i = 0; i < n; i++)
    if (strcmp(infos[i].id, id) == 0) return i;
  size_t len = strlen(id);
  for (int i = 0; i < n; i++)
    if (strncmp(infos[i].id, id, len) == 0 && infos[i].id[len] == ':') return i;
  return -1;
}

static ht_status open_index(const ht_backend_ops *ops, const ht_device_info *info, int index, ht_device **out) {
  ht_device *dev = calloc(1, sizeof *dev);
  if (!dev) return ht_error(HT_ERR_NOMEM, "out of memory");
  dev->ops = ops;
  dev->info = *info;
  dev->index = index;
  ht_status s = ops->open(dev, index);
  if (s) {
    free(dev);
    return ht_error_prefix(s, "%s: ", info->id);
  }
  *out = dev;
  return HT_OK;
}

ht_status ht_device_open(const char *id, ht_device **out) {
  if (!id || !out) return ht_error(HT_ERR_INVALID, "ht_device_open: no device id");
  *out = NULL;
  char name[32];
  size_t len = strcspn(id, ":");
  snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), id);
  const ht_backend_ops *ops = ht_backend_find(name);
  if (!ops) return not_found(id);
  ht_device_info *infos = calloc(MAX_DEVICES, sizeof *infos);
  if (!infos) return ht_error(HT_ERR_NOMEM, "out of memory");
  int n = 0;
  ht_status s = ops->probe(infos, MAX_DEVICES, &n);
  if (s) {
    free(infos);
    /* The backend exists but cannot run here: keep its reason (UNSUPPORTED, "no driver"). */
    return ht_error_prefix(s, "device '%s': %s: ", id, name);
  }
  int i = match_device(id, infos, n);
  if (i < 0) {
    free(infos);
    return not_found(id);
  }
  s = open_index(ops, &infos[i], i, out);
  free(infos);
  return s;
}

void ht_device_close(ht_device *dev) {
  if (!dev) return;
  if (dev->ops && dev->ops->close) dev->ops->close(dev);
  free(dev);
}

int ht_device_constants(const ht_device_info *info, const char **names, ht_value *values, int max) {
  const struct {
    const char *name;
    int64_t value;
  } c[] = {
      {"device.compute_units", info->compute_units},
      {"device.max_threads", info->max_threads},
      {"device.warp_size", info->warp_size},
      {"device.max_work_group_size", (int64_t)info->max_work_group_size},
      {"device.local_mem_size", (int64_t)info->local_mem_bytes},
      {"device.global_mem_size", (int64_t)info->global_mem_bytes},
      {"device.max_work_item_size_x", (int64_t)info->max_work_item_sizes[0]},
      {"device.max_work_item_size_y", (int64_t)info->max_work_item_sizes[1]},
      {"device.max_work_item_size_z", (int64_t)info->max_work_item_sizes[2]},
  };
  int n = 0;
  for (size_t i = 0; i < sizeof c / sizeof c[0] && n < max; i++, n++) {
    names[n] = c[i].name;
    values[n] = ht_int(c[i].value);
  }
  return n;
}

void ht_device_info_fingerprint(ht_device_info *info) {
  uint64_t h = ht_hash_str(info->backend, 0);
  h = ht_hash_str(info->name, h);
  h = ht_hash_str(info->vendor, h);
  h = ht_hash_str(info->driver_version, h);
  h = ht_hash_str(info->runtime_version, h);
  h = ht_hash_str(info->compiler_version, h);
  ht_hash_hex(h, info->fingerprint);
}

/* ---- launches in flight: the backend's own, or a finished one for synchronous backends ---- */

typedef struct done_event {
  double kernel_s;
} done_event;

unsigned ht_device_caps(const ht_device *dev) { return dev && dev->ops ? dev->ops->caps | dev->caps_extra : 0; }

/* The backend's events (launch_async, wait and poll together), or the finished-launch fallback. */
static int native_async(const ht_device *dev) {
  return dev->ops->launch_async && dev->ops->wait && dev->ops->poll;
}

ht_status ht_device_launch_async(ht_device *dev, ht_program *p, const ht_launch *l, ht_event **out) {
  if (!dev || !out) return ht_error(HT_ERR_INVALID, "ht_device_launch_async: bad arguments");
  *out = NULL;
  if (native_async(dev)) return dev->ops->launch_async(dev, p, l, out);
  done_event *e = calloc(1, sizeof *e);
  if (!e) return ht_error(HT_ERR_NOMEM, "out of memory");
  ht_status s = dev->ops->launch(dev, p, l, &e->kernel_s);
  if (s) {
    free(e);
    return s;
  }
  *out = (ht_event *)e;
  return HT_OK;
}

ht_status ht_device_wait(ht_device *dev, ht_event *e, double *kernel_s) {
  if (!dev || !e) return ht_error(HT_ERR_INVALID, "ht_device_wait: bad arguments");
  if (native_async(dev)) return dev->ops->wait(dev, e, kernel_s);
  if (kernel_s) *kernel_s = ((done_event *)e)->kernel_s;
  free(e);
  return HT_OK;
}

int ht_device_poll(ht_device *dev, ht_event *e) {
  if (!dev || !e) return -1;
  return native_async(dev) ? dev->ops->poll(dev, e) : 1;
}

ht_status ht_device_cancel(ht_device *dev, ht_event *e) {
  if (!dev || !e) return ht_error(HT_ERR_INVALID, "ht_device_cancel: bad arguments");
  if (!(ht_device_caps(dev) & HT_CAP_CANCEL) || !dev->ops->cancel || !native_async(dev))
    return ht_error(HT_ERR_UNSUPPORTED, "device %s cannot stop a running kernel", dev->info.id);
  return dev->ops->cancel(dev, e);
}
