/* Static code features. CUDA kernels get the PTX features of reference 003 (src/ptx/); other
 * languages have none yet. */
#include "model/features_internal.h"

ht_status ht_features_static_layout(ht_feature_set *fs) {
  (void)fs;
  return HT_OK;
}

ht_status ht_features_static(ht_feature_set *fs, const int64_t *sizes, const ht_value *params, double *x) {
  (void)fs;
  (void)sizes;
  (void)params;
  (void)x;
  return HT_OK;
}

void ht_features_static_free(ht_feature_set *fs) { (void)fs; }
