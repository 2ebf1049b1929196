/* Simulated device files ($HETUNE_SIM): probe the sim backend on the file. */
#include "device/backend.h" /* the sim backend's probe */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  setenv("HETUNE_SIM", fuzz_file("sim.json", data, size), 1);
  const ht_backend_ops *sim = ht_backend_find("sim");
  if (!sim) abort();
  static ht_device_info infos[64];
  int n = 0;
  if (sim->probe(infos, 64, &n) == HT_OK && (n < 0 || n > 64)) abort();
  return 0;
}
