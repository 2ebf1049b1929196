/* Stored models: load a blob of any kind, then predict from a few feature vectors; the same bytes
 * as a model's provenance, whose recorded range and bands dispatch reads. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ht_model *m = NULL;
  if (ht_model_load((const char *)data, size, &m) == HT_OK) {
    double x[64];
    int n = ht_model_n_features(m);
    for (int i = 0; i < 64; i++) x[i] = i % 3 ? 1.0 + i : 1e6;
    if (n <= 64) (void)ht_model_predict(m, x);
  }
  ht_model_destroy(m);
  char *text = fuzz_text(data, size);
  ht_model_reach r;
  if (ht_model_reach_parse(text, &r) == HT_OK) {
    static const double works[] = {0, 1, 1e3, 1e9, -1, 1e308};
    for (int i = 0; i < 6; i++) {
      const ht_band *b = ht_model_reach_band(&r, works[i], NULL);
      if (b && !(b->lo > 0 && b->hi >= b->lo)) abort(); /* a band is a positive range */
    }
  }
  free(text);
  return 0;
}
