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
  ht_space_filter_fn filter; /* checked on complete configs, after the constraints */
  void *filter_ctx;

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
  uint64_t uncounted_steps; /* ht_space_size gave up counting within this many steps... */
  uint64_t estimate;        /* ...and estimated this instead */
  int listed;
  uint64_t n_list;
  uint8_t *list8;           /* n_list * n_params indices when every parameter has <= 256 values */
  int32_t *list32;          /* otherwise */
};

/* Builds the plan if needed. */
ht_status ht_space_plan(ht_space *s);
/* Checks the constraints of one level with vars bound up to that level. */
int ht_space_check_level(const ht_space *s, int level, const ht_value *vars);
/* The filter (if any) accepts the complete config c. */
static inline int ht_space_filter_ok(const ht_space *s, const ht_config *c) {
  return !s->filter || s->filter(c, s->filter_ctx);
}
/* Materialises the valid list (no-op when done). */
ht_status ht_space_materialise(ht_space *s);
void ht_space_list_get(const ht_space *s, uint64_t i, ht_config *out);

#endif
