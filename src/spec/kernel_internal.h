/* The kernel builder's state, shared by its files (kernel.c: the setters, kernel_finish.c: the
 * checks that make a spec, kernel_describe.c: the builder's fields as a spec's JSON) and by its
 * producers' hooks: the JSON loader (spec.c, spec_kernel.c) turns the builder's errors into
 * file:line:column. */
#ifndef HT_KERNEL_INTERNAL_H
#define HT_KERNEL_INTERNAL_H

#include "hetune/kernel.h"
#include "spec/spec_internal.h"

/* Where an error is, in the words of the spec's fields: the object (the top level, the reference,
 * an argument, "parameters", "metrics", "work", "tolerance"), the key in it (NULL: the object
 * itself) and the value under that key when it is text. The JSON loader finds that place in its
 * file; a kernel built in code names the field in the message. */
typedef enum spec_area {
  SPEC_AT_TOP = 0, SPEC_AT_REFERENCE, SPEC_AT_ARG, SPEC_AT_PARAMS, SPEC_AT_METRICS, SPEC_AT_WORK, SPEC_AT_TOLERANCE
} spec_area;
typedef struct spec_where {
  spec_area area;
  int index; /* SPEC_AT_ARG: the argument */
  const char *key, *value;
} spec_where;
/* Sets the error for msg at w and returns code. */
typedef ht_status (*spec_locator)(void *ctx, const spec_where *w, ht_status code, const char *msg);

typedef enum kb_arg_kind { KB_BUFFER = 0, KB_SCALAR, KB_STOP } kb_arg_kind;
typedef struct kb_arg {
  char *name;
  ht_dtype type;
  kb_arg_kind kind;
  char *expr; /* length (buffer) or value (scalar) */
  ht_access access;
  int init_set, init_range; /* init given; HT_INIT_RANDOM with its own [lo, hi] */
  ht_init_kind init;
  double lo, hi, fill;
  char *file; /* as given */
} kb_arg;

typedef enum kb_param_form { KB_LIST = 0, KB_RANGE, KB_POW2 } kb_param_form;
typedef struct kb_param {
  char *name;
  kb_param_form form;
  int64_t lo, hi, step; /* ranges, for the JSON form */
  int has_step;
  int n;
  ht_value *values; /* strings owned */
} kb_param;

struct ht_kernel {
  char *name;
  char *base_dir;
  ht_kernel *parent;    /* the reference's builder: its kernel's */
  ht_kernel *reference; /* NULL: none */
  /* the source and its launch: the kernel's, or on parent's reference its own */
  int has_source;
  ht_language lang;
  char *text, *path; /* path as given */
  char *entry, *flags;
  int n_defines;
  char **define_names, **define_values;
  int geom_set[HT_GEOM_COUNT], geom_n[HT_GEOM_COUNT];
  char *geom[HT_GEOM_COUNT][3];
  /* the rest of the kernel, the problem and the harness */
  int n_args;
  kb_arg *args;
  int n_params;
  kb_param *params;
  int n_sizes;
  char **size_names;
  int64_t *size_values;
  int n_constraints;
  char **constraints;
  int n_metrics;
  char *metric_names[8], *metric_exprs[8];
  char *work[2]; /* flops, bytes */
  double rtol, atol; /* NAN: not given */
  int has_seed, has_size_defines, size_defines;
  uint64_t seed;
  char *first_error; /* a setter failed: finishing reports it rather than build a partial spec */
  spec_locator locate;
  void *locate_ctx;
};

extern const char *const kb_geometry_keys[HT_GEOM_COUNT]; /* "global", "grid", ... */

/* The error msg (printf) at w: through k's locator (its kernel's, for a reference), else
 * 'kernel "NAME": msg'. Returns code. */
ht_status kb_fail(const ht_kernel *k, spec_area area, int index, const char *key, const char *value, ht_status code,
                  const char *fmt, ...) __attribute__((format(printf, 7, 8)));

/* A call's own mistake (a NULL name, a reference given arguments): HT_ERR_INVALID "call: msg". */
ht_status kb_misuse(ht_kernel *k, const char *call, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- the JSON loader's hooks ---- */

/* Errors of k (setters and finish) go to fn. */
void kb_set_locator(ht_kernel *k, spec_locator fn, void *ctx);
/* ht_kernel_finish for a producer with a file: path is the spec's path; desc (borrowed, may be
 * NULL) the JSON its identity hash is computed from instead of the builder's fields, so a spec
 * file keeps the identity it has always had in the store. */
ht_status kb_finish(ht_kernel *k, const char *path, struct json_t *desc, ht_spec **out);

/* ---- kernel_describe.c ---- */

/* The builder's fields as a spec's JSON (relative paths as given). NULL when out of memory. */
struct json_t *kb_describe(const ht_kernel *k);

/* ---- kernel_finish.c ---- */

/* Compiles text as field (an expression of the spec's names; metrics: with times), errors at area. */
ht_status kb_compile(const ht_kernel *k, const ht_spec *s, spec_area area, int index, const char *text,
                     const char *field, int with_times, ht_expr **out);
/* The C prototype check of s's C kernels (spec_signature.c); errors through k. */
ht_status kb_check_signatures(const ht_kernel *k, ht_spec *s);
/* dir/file, or file when it is absolute or dir is NULL (malloc'ed). */
char *kb_resolve(const char *dir, const char *file);
/* The file of kk's source: its path, or for text without one a name after the kernel root, in its
 * base folder: NAME.c (.cl, .cu), the reference's NAME_reference.c, so neither overwrites the
 * other when written (malloc'ed, relative to the base folder unless the path was absolute). */
char *kb_source_file(const ht_kernel *kk, const ht_kernel *root);

#endif
