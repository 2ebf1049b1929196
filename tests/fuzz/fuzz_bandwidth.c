/* Bandwidth curves (hetune bandwidth --output): load, then read the curve between its points. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_file("bw.csv", data, size);
  ht_bandwidth_curve c;
  if (ht_bandwidth_load(path, &c) == HT_OK)
    for (double b = 1; b < 1e12; b *= 7) (void)ht_bandwidth_at(&c, b);
  return 0;
}
