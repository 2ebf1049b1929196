/* Stored models: load a blob of any kind, then predict from a few feature vectors. */
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
  return 0;
}
