/* The model registry: adding a model is one file and one line here. Kinds whose library the
 * build left out are absent from the table and named in `missing`, so asking for one says why. */
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
#ifdef HT_HAVE_XGBOOST
  &ht_model_gbt,
#endif
  &ht_model_gp,
  &ht_model_knn,
  &ht_model_linear,
  &ht_model_mlp,
  &ht_model_ranking,
  &ht_model_starpu,
#ifdef HT_HAVE_LIBSVM
  &ht_model_svr,
#endif
  NULL, /* keeps the table valid while it is empty; not counted */
};

int ht_model_kind_count(void) { return (int)(sizeof kinds / sizeof kinds[0]) - 1; }
const ht_model_ops *ht_model_kind_at(int i) { return i >= 0 && i < ht_model_kind_count() ? kinds[i] : NULL; }

const ht_model_ops *ht_model_kind_find(const char *name) {
  for (int i = 0; i < ht_model_kind_count(); i++)
    if (strcmp(kinds[i]->name, name) == 0) return kinds[i];
  return NULL;
}

/* A kind this build has not, and the library and option it would need. */
static const struct missing {
  const char *kind, *library, *option;
} missing[] = {
#ifndef HT_HAVE_XGBOOST
  {"gbt", "XGBoost", "HETUNE_WITH_XGBOOST"},
#endif
#ifndef HT_HAVE_LIBSVM
  {"svr", "libsvm", "HETUNE_WITH_LIBSVM"},
#endif
  {NULL, NULL, NULL},
};

ht_status ht_model_kind_check(const char *name) {
  if (!name) return ht_error(HT_ERR_INVALID, "no model kind given");
  if (ht_model_kind_find(name) || strcmp(name, "auto") == 0) return HT_OK;
  for (const struct missing *m = missing; m->kind; m++)
    if (strcmp(m->kind, name) == 0)
      return ht_error(HT_ERR_UNSUPPORTED, "model kind '%s' is not in this build: hetune was built without %s (%s=OFF)",
                      name, m->library, m->option);
  return ht_error(HT_ERR_NOTFOUND, "unknown model kind '%s' (hetune model kinds lists them)", name);
}
