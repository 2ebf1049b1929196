/* The public calls on an open device (hetune/device.h): ht_device is opaque to users, and these
 * reach its backend's table. They check what a backend would crash on (no device, an optional
 * operation the backend lacks) and let the time and compile-log outputs be NULL. */
#include <stdlib.h>

#include "device/backend.h"

static ht_status no_device(const char *call) { return ht_error(HT_ERR_INVALID, "%s: no device", call); }

const ht_device_info *ht_device_info_get(const ht_device *dev) { return dev ? &dev->info : NULL; }

ht_status ht_device_compile(ht_device *dev, const ht_source *src, const ht_defines *defs, ht_program **out,
                            ht_compile_info *info) {
  if (!dev || !src || !out) return ht_error(HT_ERR_INVALID, "ht_device_compile: bad arguments");
  ht_compile_info own = {0};
  ht_status s = dev->ops->compile(dev, src, defs, out, info ? info : &own);
  free(own.log); /* the caller did not ask for the log; the message keeps its first error line */
  return s;
}

void ht_device_program_free(ht_device *dev, ht_program *p) {
  if (dev && p) dev->ops->program_free(dev, p);
}

ht_status ht_device_launch(ht_device *dev, ht_program *p, const ht_launch *l, double *kernel_s) {
  if (!dev) return no_device("ht_device_launch");
  double t = 0;
  ht_status s = dev->ops->launch(dev, p, l, &t);
  if (kernel_s) *kernel_s = t;
  return s;
}

ht_status ht_device_buffer_new(ht_device *dev, size_t bytes, ht_buffer **out) {
  if (!dev || !out) return ht_error(HT_ERR_INVALID, "ht_device_buffer_new: bad arguments");
  return dev->ops->buffer_new(dev, bytes, out);
}

void ht_device_buffer_free(ht_device *dev, ht_buffer *b) {
  if (dev && b) dev->ops->buffer_free(dev, b);
}

ht_status ht_device_buffer_write(ht_device *dev, ht_buffer *b, const void *host, size_t bytes, double *seconds) {
  if (!dev) return no_device("ht_device_buffer_write");
  double t = 0;
  ht_status s = dev->ops->buffer_write(dev, b, host, bytes, &t);
  if (seconds) *seconds = t;
  return s;
}

ht_status ht_device_buffer_read(ht_device *dev, ht_buffer *b, void *host, size_t bytes, double *seconds) {
  if (!dev) return no_device("ht_device_buffer_read");
  double t = 0;
  ht_status s = dev->ops->buffer_read(dev, b, host, bytes, &t);
  if (seconds) *seconds = t;
  return s;
}

/* A backend without copies at an offset still copies at offset 0: its whole-buffer copy. */
ht_status ht_device_buffer_write_at(ht_device *dev, ht_buffer *b, size_t offset, const void *host, size_t bytes,
                                    double *seconds) {
  if (!dev) return no_device("ht_device_buffer_write_at");
  if (!dev->ops->buffer_write_at && offset == 0) return ht_device_buffer_write(dev, b, host, bytes, seconds);
  if (!dev->ops->buffer_write_at) return ht_error(HT_ERR_UNSUPPORTED, "device %s cannot copy at an offset", dev->info.id);
  double t = 0;
  ht_status s = dev->ops->buffer_write_at(dev, b, offset, host, bytes, &t);
  if (seconds) *seconds = t;
  return s;
}

ht_status ht_device_buffer_read_at(ht_device *dev, ht_buffer *b, size_t offset, void *host, size_t bytes,
                                   double *seconds) {
  if (!dev) return no_device("ht_device_buffer_read_at");
  if (!dev->ops->buffer_read_at && offset == 0) return ht_device_buffer_read(dev, b, host, bytes, seconds);
  if (!dev->ops->buffer_read_at) return ht_error(HT_ERR_UNSUPPORTED, "device %s cannot copy at an offset", dev->info.id);
  double t = 0;
  ht_status s = dev->ops->buffer_read_at(dev, b, offset, host, bytes, &t);
  if (seconds) *seconds = t;
  return s;
}

ht_status ht_device_buffer_view(ht_device *dev, ht_buffer *b, size_t offset, size_t bytes, ht_buffer **out) {
  if (!dev || !b || !out) return ht_error(HT_ERR_INVALID, "ht_device_buffer_view: bad arguments");
  if (!(dev->ops->caps & HT_CAP_VIEWS) || !dev->ops->buffer_view)
    return ht_error(HT_ERR_UNSUPPORTED, "device %s cannot make buffer views", dev->info.id);
  return dev->ops->buffer_view(dev, b, offset, bytes, out);
}
