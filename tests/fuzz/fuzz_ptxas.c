/* ptxas -v output: registers, shared memory, spills per entry. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_text(data, size);
  ht_ptx_resources res[HT_PTX_MAX_RESOURCES];
  (void)ht_ptx_parse_ptxas_log(text, res, HT_PTX_MAX_RESOURCES);
  free(text);
  return 0;
}
