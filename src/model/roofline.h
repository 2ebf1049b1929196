/* The roofline floor of a model (roofline.c), internal to src/model/. */
#ifndef HETUNE_MODEL_ROOFLINE_H
#define HETUNE_MODEL_ROOFLINE_H

#include "hetune/model.h"
#include "model/model_util.h"

typedef struct roofline {
  int bytes_index; /* the "bytes" feature; -1: no floor */
  double k;        /* >= 1: how much faster than the curve the fastest training row read its bytes */
  ht_bandwidth_curve curve;
} roofline;

/* The floor of train: its bandwidth curve and "bytes" feature (bytes_index -1 when either is
 * missing). */
void roofline_fit(roofline *r, const ht_dataset *train);
/* Seconds below which no prediction for x goes (0 without a floor). */
double roofline_floor(const roofline *r, const double *x);
/* Serialised after a model's routes (a flag, then the floor when there is one). */
void roofline_save(const roofline *r, ht_buf *out);
ht_status roofline_load(roofline *r, mu_reader *rd, int n_features);

#endif
