/* The model registry: adding a model is one file and one line here. */
#include <string.h>

#include "hetune/model.h"

extern const ht_model_ops ht_model_elm;
extern const ht_model_ops ht_model_gbt;
extern const ht_model_ops ht_model_gp;
extern const ht_model_ops ht_model_knn;
extern const ht_model_ops ht_model_linear;
extern const ht_model_ops ht_model_mlp;
extern const ht_model_ops ht_model_ranking;
extern const ht_model_ops ht_model_starpu;
extern const ht_model_ops ht_model_svr;

static const ht_model_ops *const kinds[] = {
  &ht_model_elm,
  &ht_model_gbt,
  &ht_model_gp,
  &ht_model_knn,
  &ht_model_linear,
  &ht_model_mlp,
  &ht_model_ranking,
  &ht_model_starpu,
  &ht_model_svr,
  NULL, /* keeps the table valid while it is empty; not counted */
};

int ht_model_kind_count(void) { return (int)(sizeof kinds / sizeof kinds[0]) - 1; }
const ht_model_ops *ht_model_kind_at(int i) { return i >= 0 && i < ht_model_kind_count() ? kinds[i] : NULL; }

const ht_model_ops *ht_model_kind_find(const char *name) {
  for (int i = 0; i < ht_model_kind_count(); i++)
    if (strcmp(kinds[i]->name, name) == 0) return kinds[i];
  return NULL;
}
