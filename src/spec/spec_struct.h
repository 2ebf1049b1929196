/* The spec's fields, for the library's own layers (src/) and its tests: a user of the installed
 * library sees the opaque ht_spec of hetune/spec.h and reads it through its calls. */
#ifndef HT_SPEC_STRUCT_H
#define HT_SPEC_STRUCT_H

#include <stdint.h>

#include "hetune/spec.h"

typedef struct ht_spec_arg {
  char *name;
  int is_buffer;
  int is_stop_flag; /* "stop": true: the cancellation flag the kernel polls (no buffer, no value) */
  ht_dtype type;
  ht_expr *length; /* buffers: elements, an expression of sizes */
  ht_expr *value;  /* scalars: expression of sizes and parameters */
  ht_init_kind init;
  double lo, hi;   /* random range */
  double fill;
  char *file;      /* HT_INIT_FILE: resolved path */
  ht_access access;
} ht_spec_arg;

/* A launchable kernel: the tuned one or the reference. */
typedef struct ht_spec_kernel {
  ht_language lang;
  char *source_path; /* resolved */
  char *source_text;
  char *entry;
  char *flags;
  int dims;                        /* 0 for c */
  ht_expr *global[3];              /* total work-items (already combined from grid/grid_div/mul/div) */
  ht_expr *local[3];               /* NULL = runtime chooses */
  int n_defines;
  char **define_names, **define_values; /* fixed defines */
} ht_spec_kernel;

typedef struct ht_spec_param {
  char *name;
  int n_values;
  ht_value *values; /* strings owned by the spec */
} ht_spec_param;

struct ht_spec {
  char *path;       /* the spec file */
  char *name;
  ht_spec_kernel kernel;
  int has_reference;
  ht_spec_kernel reference;
  double rtol, atol; /* < 0: default by element type */
  int size_defines;
  uint64_t seed;
  int n_sizes;
  char **size_names;
  int64_t *size_values;
  int n_args;
  ht_spec_arg *args;
  int n_params;
  ht_spec_param *params;
  int n_constraints;
  char **constraints;
  int n_metrics;
  char **metric_names;
  ht_expr **metrics;
  ht_expr *work_flops, *work_bytes; /* "work": what one run computes and moves (NULL when not given) */
  /* The variable table every expression of the spec is compiled against:
   * [params..., sizes..., device constants..., time_s, time_ms]. */
  int n_names;
  const char **names;
  int first_size, first_device, slot_time_s, slot_time_ms;
  char source_hash[17]; /* hash of sources + everything that changes what is measured */
};

/* The -D defines a compile of kernel k (the spec's or its reference) gets: k's fixed defines,
 * then the parameters' values (with_params), then the sizes unless size_defines is false; vars as
 * ht_spec_bind fills them. The names and values point into s and into d itself. */
typedef struct ht_spec_defines {
  int n;
  const char *names[HT_MAX_PARAMS + 96];
  const char *values[HT_MAX_PARAMS + 96];
  char text[HT_MAX_PARAMS + 96][64]; /* numbers formatted; string values point into the spec */
} ht_spec_defines;
void ht_spec_defines_fill(const ht_spec *s, const ht_spec_kernel *k, const ht_value *vars, int with_params,
                          ht_spec_defines *d);

/* Fills vars (n_names values) with the config's parameters, the sizes and the device constants;
 * time slots are set to NAN. */
void ht_spec_bind(const ht_spec *s, const ht_space *space, const ht_config *cfg, const ht_device_info *dev,
                  ht_value *vars);

#endif
