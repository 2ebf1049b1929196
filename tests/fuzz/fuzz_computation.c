/* Computation files (hetune dispatch): load and check one, its variants on the c device over a
 * small spec written beside it (k.json), then decide a call. */
#include "fuzz.h"

static const char spec_text[] =
    "{\"name\": \"k\", \"language\": \"c\", \"source\": \"k.c\", \"entry\": \"k\", \"sizes\": {\"N\": 8},\n"
    " \"arguments\": [{\"name\": \"y\", \"type\": \"float\", \"buffer\": \"N\", \"access\": \"write\"},\n"
    "               {\"name\": \"n\", \"type\": \"int32\", \"value\": \"N\"}],\n"
    " \"parameters\": {\"T\": [1, 2]},\n"
    " \"reference\": {\"language\": \"c\", \"source\": \"k.c\", \"entry\": \"k\"}}\n";
static const char source_text[] = "void k(float *y, int n) { for (int i = 0; i < n; i++) y[i] = (float)i; }\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int ready;
  if (!ready) {
    fuzz_file("k.c", (const uint8_t *)source_text, sizeof source_text - 1);
    fuzz_file("k.json", (const uint8_t *)spec_text, sizeof spec_text - 1);
    ready = 1;
  }
  ht_computation *c;
  if (ht_computation_load(fuzz_file("comp.json", data, size), NULL, &c) == HT_OK) {
    int64_t n = 100;
    ht_decision d;
    (void)ht_computation_decide(c, &n, &d);
    ht_computation_destroy(c);
  }
  return 0;
}
