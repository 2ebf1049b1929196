/* Recorded spaces: hetune's CSV export, T4 results JSON, Kernel Tuner cache JSON (the first byte
 * of the input picks the file name's suffix). Load, then look every config of a small space up. */
#include "fuzz.h"

static int lookup(const ht_config *c, void *ctx) {
  ht_result res;
  double cost;
  (void)ht_recorded_lookup(ctx, c, &res, &cost);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const char *path = fuzz_file(data[0] & 1 ? "rec.json" : "rec.csv", data + 1, size - 1);
  ht_recorded *r = NULL;
  if (ht_recorded_load(path, &r) == HT_OK) {
    ht_recorded_stats st;
    ht_recorded_stats_get(r, &st);
    ht_space *space = ht_recorded_space(r);
    if (ht_space_cartesian_size(space) <= 4096) (void)ht_space_enumerate(space, lookup, r);
  }
  ht_recorded_destroy(r);
  return 0;
}
