/* PTX text: parse, then the static features of every kernel. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_text(data, size);
  ht_ptx_module *m = NULL;
  if (ht_ptx_parse(text, "fuzz.ptx", &m) == HT_OK) {
    for (int k = 0; k < ht_ptx_kernel_count(m); k++) {
      const double params[4] = {1024, 512, 7, 0};
      ht_ptx_features f;
      (void)ht_ptx_features_get(m, k, params, ht_ptx_kernel_param_count(m, k) < 4 ? ht_ptx_kernel_param_count(m, k) : 4,
                                NULL, &f);
    }
  }
  ht_ptx_free(m);
  free(text);
  return 0;
}
