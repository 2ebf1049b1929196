/* A deliberate layering fault for the test layers_upward_call_fails: code of the model layer
 * calling the tuning loop above it. Linked with the model layer and those below only, the
 * reference to ht_tune must stay undefined and the link fail. */
#include "hetune/tune.h"

ht_status model_layer_calling_up(const ht_spec *s, ht_store *st, ht_tune_summary *out) {
  return ht_tune(s, "c", st, NULL, NULL, out);
}
