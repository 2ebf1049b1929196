/* The feature layout of one spec on one device; shared by features.c and features_static.c. */
#ifndef HETUNE_FEATURES_INTERNAL_H
#define HETUNE_FEATURES_INTERNAL_H

#include "hetune/model.h"
#include "spec/spec_struct.h"

struct ht_feature_set {
  const ht_spec *spec;
  ht_device_info dev;
  int has_device;
  int n;
  char **names;
  ht_value *vars; /* expression variables, as ht_spec_bind lays them out */
  int first_param, first_launch, first_device, first_static;
  void *static_state; /* features_static.c's */
};

/* Static code features (ptx:* for CUDA kernels): names appended to fs, values computed per row
 * into x[fs->first_static ...] once fs->vars is bound and the other features of x are filled. */
ht_status ht_features_static_layout(ht_feature_set *fs);
ht_status ht_features_static(ht_feature_set *fs, double *x);
void ht_features_static_free(ht_feature_set *fs);

#endif
