/* The space's insides, shared by space.c (building, enumeration) and space_sample.c. */
#ifndef HETUNE_SPACE_INTERNAL_H
#define HETUNE_SPACE_INTERNAL_H

#include "hetune/space.h"

typedef struct ht_param {
  char *name;
  ht_value *values; /* string values point at strdup'ed copies owned here */
  int n;
} ht_param;

typedef struct ht_constant {
  char *name;
  ht_value v;
  char *owned; /* the string of a string constant */
} ht_constant;

typedef struct ht_constraint {
  char *text;
  ht_expr *e;
  int level; /* the last parameter (add order) it reads; -1 when it reads only constants */
} ht_constraint;

struct ht_space {
  ht_param params[HT_MAX_PARAMS];
  int n_params;
  ht_constant *consts;
  int n_consts, cap_consts;
  ht_constraint *cons;
  int n_cons, cap_cons;

  /* The plan: constraints grouped by level, rebuilt when the space changes. */
  int planned;
  ht_expr **by_level;       /* n_cons entries, ordered by level */
  int level_start[HT_MAX_PARAMS + 1];
  int constant_ok;          /* the constant-only constraints hold */
  int tail_free;            /* levels >= tail_free have no constraints */
  ht_value *vars;           /* scratch: params then constants */

  /* Caches, dropped when the space changes. */
  int counted;
  uint64_t count;
  int listed;
  uint64_t n_list;
  uint8_t *list8;           /* n_list * n_params indices when every parameter has <= 256 values */
  int32_t *list32;          /* otherwise */
};

/* Builds the plan if needed. */
ht_status ht_space_plan(ht_space *s);
/* Checks the constraints of one level with vars bound up to that level. */
int ht_space_check_level(const ht_space *s, int level, const ht_value *vars);
/* Materialises the valid list (no-op when done). */
ht_status ht_space_materialise(ht_space *s);
void ht_space_list_get(const ht_space *s, uint64_t i, ht_config *out);

#endif
