/* Search spaces: tunable parameters, constraints over parameters and constants (problem sizes,
 * device limits), enumeration with early pruning, sampling, neighbourhoods. */
#ifndef HETUNE_SPACE_H
#define HETUNE_SPACE_H

#include "hetune/core.h"
#include "hetune/expr.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HT_MAX_PARAMS 48

/* One point of a space: for each parameter, the index of its value in that parameter's list.
 * Plain data: copy with =, compare with ht_config_equal. */
typedef struct ht_config {
  int n;
  int32_t idx[HT_MAX_PARAMS];
} ht_config;

int ht_config_equal(const ht_config *a, const ht_config *b);
uint64_t ht_config_hash(const ht_config *c);

typedef struct ht_space ht_space;

ht_status ht_space_create(ht_space **out);
void ht_space_destroy(ht_space *s);

/* Adds a parameter with an explicit list of values (copied; strings duplicated). Order matters:
 * enumeration binds parameters in the order added, so add the most constrained first when you can.
 * Errors: duplicate name, empty list, more than HT_MAX_PARAMS, duplicate values. */
ht_status ht_space_add_param(ht_space *s, const char *name, const ht_value *values, int n);
/* Integer range lo..hi inclusive with step (>0), or powers of two when step == 0. */
ht_status ht_space_add_param_range(ht_space *s, const char *name, int64_t lo, int64_t hi, int64_t step);

/* Constants: names visible to constraints (problem sizes "N", device limits
 * "device.max_work_group_size"). Set before adding a constraint that names them; their values
 * may be changed later (the enumeration cache is then dropped). */
ht_status ht_space_set_constant(ht_space *s, const char *name, ht_value v);

/* Adds a constraint; compiled now. Unknown names or syntax errors -> HT_ERR_PARSE with column. */
ht_status ht_space_add_constraint(ht_space *s, const char *expr_text);

/* A whole-config filter checked after the constraints, e.g. "this config was recorded" when a
 * strategy replays a recorded space. ctx must outlive the space. NULL removes the filter. */
typedef int (*ht_space_filter_fn)(const ht_config *c, void *ctx);
ht_status ht_space_set_filter(ht_space *s, ht_space_filter_fn fn, void *ctx);

int ht_space_param_count(const ht_space *s);
const char *ht_space_param_name(const ht_space *s, int p);
int ht_space_param_index(const ht_space *s, const char *name); /* -1 if absent */
int ht_space_value_count(const ht_space *s, int p);
ht_value ht_space_value(const ht_space *s, int p, int v);
int ht_space_constraint_count(const ht_space *s);
const char *ht_space_constraint_text(const ht_space *s, int c);
/* Product of value counts (saturates at UINT64_MAX). */
uint64_t ht_space_cartesian_size(const ht_space *s);

/* Valid: every constraint holds (evaluation errors such as division by zero count as invalid). */
int ht_space_is_valid(ht_space *s, const ht_config *c);

/* Enumerates the valid configs in lexicographic order of indices, checking each constraint as soon
 * as the last parameter it names is bound. The callback returns 0 to go on, nonzero to stop. */
typedef int (*ht_space_visit_fn)(const ht_config *c, void *ctx);
ht_status ht_space_enumerate(ht_space *s, ht_space_visit_fn fn, void *ctx);

/* Number of valid configs (enumerates once, cached until the space changes). */
ht_status ht_space_count(ht_space *s, uint64_t *count);
/* The same, calling fn(share of the Cartesian product walked, valid configs so far, ctx) about every
 * million steps of the enumeration; fn returns nonzero to stop, which gives HT_ERR_TIMEOUT with
 * the partial count in *count. For spaces whose count takes long (`hetune space count`). */
typedef int (*ht_space_progress_fn)(double done, uint64_t valid_so_far, void *ctx);
ht_status ht_space_count_progress(ht_space *s, ht_space_progress_fn fn, void *ctx, uint64_t *count);
/* The number of valid configs if counting them takes at most max_steps steps of the pruned
 * enumeration (0: no limit), *exact = 1, and cached; otherwise an estimate from 20000 uniform draws
 * (the valid share times the Cartesian size; 0 when no draw was valid), *exact = 0. What tuning
 * uses, so a huge space starts at once instead of being counted first. */
#define HT_SPACE_COUNT_STEPS (UINT64_C(1) << 24)
ht_status ht_space_size(ht_space *s, uint64_t max_steps, uint64_t *count, int *exact);
/* Walks the valid configs one at a time in enumeration order (the order of ht_space_get) without
 * counting or listing them. Start from a zeroed cursor; *found = 0 at the end. */
typedef struct ht_space_cursor {
  ht_config at;
  int level, started, done;
} ht_space_cursor;
ht_status ht_space_next(ht_space *s, ht_space_cursor *cur, ht_config *out, int *found);
/* The i-th valid config in enumeration order (materialises the valid list on first use). */
ht_status ht_space_get(ht_space *s, uint64_t i, ht_config *out);

/* Up to n distinct valid configs drawn uniformly at random. *got < n only when the space has fewer
 * valid configs. Works for huge spaces without materialising (rejection from the pruned tree). */
ht_status ht_space_sample(ht_space *s, ht_rng *rng, int n, ht_config *out, int *got);

/* Neighbours of c that are valid.
 *  HT_NEIGH_HAMMING: change exactly one parameter to any other value;
 *  HT_NEIGH_ADJACENT: change one parameter to the previous/next value in its list. */
typedef enum { HT_NEIGH_HAMMING = 0, HT_NEIGH_ADJACENT = 1 } ht_neighbour_kind;
ht_status ht_space_neighbours(ht_space *s, const ht_config *c, ht_neighbour_kind kind, ht_config *out, int max,
                              int *n);

/* "TX=16,TY=8,VEC=float4"; a ',', '=' or '\' inside a name or value is escaped with '\', so the
 * text reads back as the same config. Returns the length of the whole text (as snprintf does):
 * a text of len or more characters was cut. */
int ht_config_format(const ht_space *s, const ht_config *c, char *buf, size_t len);
/* The whole text of ht_config_format, however long (malloc'ed; NULL when out of memory): what
 * keys configs in the store, so two configs never share a key. */
char *ht_config_text(const ht_space *s, const ht_config *c);
/* Parses "TX=16,TY=8" (all parameters must be named, values must be in the lists). */
ht_status ht_config_parse(const ht_space *s, const char *text, ht_config *out);
/* Binds parameter values into vars[0..n_params) (order of ht_space_param_name). */
void ht_config_values(const ht_space *s, const ht_config *c, ht_value *vars);

/* Reads a T1 input file (the BAT / Kernel Tuner shared format): its ConfigurationSpace's
 * TuningParameters and Conditions become parameters and constraints; problem sizes and other
 * constants named by conditions are set from its KernelSpecification where given. */
ht_status ht_space_load_t1(const char *path, ht_space **out);

#ifdef __cplusplus
}
#endif
#endif
