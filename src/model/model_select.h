/* Model kind "auto" (select.c): the kind chosen on the training data, internal to src/model/. */
#ifndef HETUNE_MODEL_SELECT_H
#define HETUNE_MODEL_SELECT_H

#include "hetune/model.h"

/* Writes the best candidate kind into chosen and its validation error (mean %) into score. */
ht_status ht_model_select(const ht_dataset *d, const char *options, uint64_t seed, char *chosen, size_t len,
                          double *score);

#endif
