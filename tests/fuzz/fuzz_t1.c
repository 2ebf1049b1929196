/* T1 files (BAT / Kernel Tuner input format): load, count a bounded space, draw configs. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *path = fuzz_file("t1.json", data, size);
  ht_space *space = NULL;
  if (ht_space_load_t1(path, &space) == HT_OK) {
    if (ht_space_cartesian_size(space) <= 4096) {
      uint64_t n;
      (void)ht_space_count(space, &n);
    }
    ht_rng rng;
    ht_rng_seed(&rng, 1);
    ht_config cfg[2];
    int got = 0;
    (void)ht_space_sample(space, &rng, 2, cfg, &got);
  }
  ht_space_destroy(space);
  return 0;
}
