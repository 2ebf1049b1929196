/* The public reading of a spec (hetune/spec.h): ht_spec is opaque to users, these calls are how
 * the command, the examples and other programs see its name, sizes, arguments and parameters.
 * An index out of range gives NULL, 0 or -1 rather than reading past the arrays. */
#include <stdlib.h>
#include <string.h>

#include "spec/spec_struct.h"

const char *ht_spec_name(const ht_spec *s) { return s ? s->name : NULL; }

const char *ht_spec_path(const ht_spec *s) { return s ? s->path : NULL; }

const char *ht_spec_identity(const ht_spec *s) { return s ? s->source_hash : NULL; }

ht_language ht_spec_language(const ht_spec *s) { return s ? s->kernel.lang : HT_LANG_C; }

int ht_spec_size_count(const ht_spec *s) { return s ? s->n_sizes : 0; }

const char *ht_spec_size_name(const ht_spec *s, int i) {
  return s && i >= 0 && i < s->n_sizes ? s->size_names[i] : NULL;
}

int64_t ht_spec_size_value(const ht_spec *s, int i) {
  return s && i >= 0 && i < s->n_sizes ? s->size_values[i] : -1;
}

static const ht_spec_arg *arg_at(const ht_spec *s, int i) {
  return s && i >= 0 && i < s->n_args ? &s->args[i] : NULL;
}

int ht_spec_arg_count(const ht_spec *s) { return s ? s->n_args : 0; }

const char *ht_spec_arg_name(const ht_spec *s, int i) { return arg_at(s, i) ? arg_at(s, i)->name : NULL; }

ht_dtype ht_spec_arg_type(const ht_spec *s, int i) { return arg_at(s, i) ? arg_at(s, i)->type : HT_DTYPE_F32; }

int ht_spec_arg_is_buffer(const ht_spec *s, int i) { return arg_at(s, i) ? arg_at(s, i)->is_buffer : 0; }

int ht_spec_arg_is_stop_flag(const ht_spec *s, int i) { return arg_at(s, i) ? arg_at(s, i)->is_stop_flag : 0; }

void ht_spec_tolerance(const ht_spec *s, double *rtol, double *atol) {
  *rtol = s ? s->rtol : -1;
  *atol = s ? s->atol : -1;
}

ht_access ht_spec_arg_access(const ht_spec *s, int i) {
  return arg_at(s, i) ? arg_at(s, i)->access : HT_ACCESS_READ;
}

int ht_spec_param_count(const ht_spec *s) { return s ? s->n_params : 0; }

const char *ht_spec_param_name(const ht_spec *s, int i) {
  return s && i >= 0 && i < s->n_params ? s->params[i].name : NULL;
}

int ht_spec_param_value_count(const ht_spec *s, int i) {
  return s && i >= 0 && i < s->n_params ? s->params[i].n_values : 0;
}

ht_value ht_spec_param_value(const ht_spec *s, int i, int v) {
  if (v < 0 || v >= ht_spec_param_value_count(s, i)) return ht_int(0);
  return s->params[i].values[v];
}

int ht_spec_constraint_count(const ht_spec *s) { return s ? s->n_constraints : 0; }

const char *ht_spec_constraint_text(const ht_spec *s, int i) {
  return s && i >= 0 && i < s->n_constraints ? s->constraints[i] : NULL;
}

/* The text is compiled when a space is built, against the spec's names, like the file's own. */
ht_status ht_spec_add_constraint(ht_spec *s, const char *expr) {
  if (!s || !expr || !*expr) return ht_error(HT_ERR_INVALID, "ht_spec_add_constraint: no constraint given");
  char **grown = realloc(s->constraints, sizeof(char *) * (size_t)(s->n_constraints + 1));
  if (grown) s->constraints = grown;
  char *copy = grown ? ht_strdup(expr) : NULL;
  if (!copy) return ht_error(HT_ERR_NOMEM, "out of memory");
  s->constraints[s->n_constraints++] = copy;
  return HT_OK;
}

ht_status ht_spec_remove_constraint(ht_spec *s, int i) {
  if (!s || i < 0 || i >= s->n_constraints)
    return ht_error(HT_ERR_INVALID, "ht_spec_remove_constraint: no constraint %d (the spec has %d)", i,
                    s ? s->n_constraints : 0);
  free(s->constraints[i]);
  memmove(&s->constraints[i], &s->constraints[i + 1], sizeof(char *) * (size_t)(s->n_constraints - i - 1));
  s->n_constraints--;
  return HT_OK;
}
