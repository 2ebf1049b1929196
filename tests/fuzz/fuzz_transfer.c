/* Transfer tables (hetune bandwidth --transfers --output): load, then read the table between,
 * below and beyond its points in both directions. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_file("tr.csv", data, size);
  static ht_transfer_table t;
  if (ht_transfer_load(path, &t) == HT_OK)
    for (double b = 0.5; b < 1e12; b *= 7) (void)(ht_transfer_time(&t, HT_H2D, b) + ht_transfer_time(&t, HT_D2H, b));
  return 0;
}
