/* placeholder until the opencl backend lands */
#include "device/backend.h"
static ht_status stub_probe(ht_device_info *out, int max, int *n) {
  (void)out; (void)max; *n = 0;
  return ht_error(HT_ERR_UNSUPPORTED, "not implemented yet");
}
const ht_backend_ops ht_backend_opencl = {.name = "opencl", .probe = stub_probe};
