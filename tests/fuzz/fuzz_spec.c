/* Kernel spec files: load, then build the space for a CPU-like device and draw a few configs. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int ready;
  if (!ready) { /* the sources a spec may name */
    /* no compiler: the C argument check (a compiler run per new spec) is skipped, the parser fuzzed */
    setenv("HETUNE_CC", "/nonexistent/hetune-fuzz-cc", 1);
    static const char k[] = "void k(float *o, const float *a, int n) { for (int i = 0; i < n; i++) o[i] = a[i]; }\n";
    fuzz_file("k.c", (const uint8_t *)k, sizeof k - 1);
    static const char cl[] = "__kernel void k(__global float *o) { o[0] = 1; }\n";
    fuzz_file("k.cl", (const uint8_t *)cl, sizeof cl - 1);
    static const char cu[] = "extern \"C\" __global__ void k(float *o) { o[0] = 1; }\n";
    fuzz_file("k.cu", (const uint8_t *)cu, sizeof cu - 1);
    ready = 1;
  }
  const char *path = fuzz_file("spec.json", data, size);
  ht_spec *spec = NULL;
  if (ht_spec_load(path, &spec) == HT_OK) {
    ht_device_info dev;
    memset(&dev, 0, sizeof dev);
    dev.compute_units = 4;
    dev.max_work_group_size = 1024;
    ht_space *space = NULL;
    if (ht_spec_build_space(spec, &dev, &space) == HT_OK) {
      ht_rng rng;
      ht_rng_seed(&rng, 1);
      ht_config cfg[4];
      int got = 0;
      (void)ht_space_sample(space, &rng, 4, cfg, &got);
      for (int i = 0; i < got; i++) free(ht_spec_config_json(spec, space, &cfg[i]));
    }
    free(ht_spec_space_json(spec));
    ht_space_destroy(space);
  }
  ht_spec_destroy(spec);
  return 0;
}
