/* Kernel spec files (JSON, docs/spec.md): what to tune, how to launch and check it. */
#ifndef HETUNE_SPEC_H
#define HETUNE_SPEC_H

#include "hetune/core.h"
#include "hetune/device.h"
#include "hetune/expr.h"
#include "hetune/space.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ht_init_kind {
  HT_INIT_RANDOM = 0, HT_INIT_ZEROS, HT_INIT_RAMP, HT_INIT_FILL, HT_INIT_FILE
} ht_init_kind;

typedef enum ht_access { HT_ACCESS_READ = 1, HT_ACCESS_WRITE = 2, HT_ACCESS_READWRITE = 3 } ht_access;

typedef struct ht_spec ht_spec; /* a loaded or built spec (opaque: read it with the calls below) */

/* Loads and checks a spec. Errors name file:line:column (JSON) or file: field: column (expressions).
 * A T1 file (BAT / Kernel Tuner input, a top level with "ConfigurationSpace") is read as the
 * kernel its KernelSpecification names (docs/interop.md). */
ht_status ht_spec_load(const char *path, ht_spec **out);
void ht_spec_destroy(ht_spec *s);

/* Overrides a problem size from "N=4096". Unknown name or bad value -> HT_ERR_INVALID. */
ht_status ht_spec_set_size(ht_spec *s, const char *assignment);
/* Canonical problem text "M=1024,N=512" (spec order). Returns chars written. */
int ht_spec_problem_key(const ht_spec *s, char *buf, size_t len);

/* ---- reading a spec: an index out of range gives NULL, 0 or -1 ---- */

/* The kernel's name in the store ("name" of the file, or ht_kernel_create's). */
const char *ht_spec_name(const ht_spec *s);
/* The spec file it was loaded from; NULL for a spec built in code. */
const char *ht_spec_path(const ht_spec *s);
/* The identity (16 hex digits): a hash of the sources, the headers they include and everything that
 * changes what is measured; the store keys evaluations by it. */
const char *ht_spec_identity(const ht_spec *s);
/* The language of the tuned kernel (its reference may differ). */
ht_language ht_spec_language(const ht_spec *s);
/* Problem sizes in the spec's order: how many, the name and current value (-1 out of range) of one. */
int ht_spec_size_count(const ht_spec *s);
const char *ht_spec_size_name(const ht_spec *s, int i);
int64_t ht_spec_size_value(const ht_spec *s, int i);
/* Kernel arguments in the kernel's order: how many, and argument i's name, type (a buffer's element
 * type), whether it is a buffer or the stop flag, and how the kernel uses it. */
int ht_spec_arg_count(const ht_spec *s);
const char *ht_spec_arg_name(const ht_spec *s, int i);
ht_dtype ht_spec_arg_type(const ht_spec *s, int i);
int ht_spec_arg_is_buffer(const ht_spec *s, int i);
int ht_spec_arg_is_stop_flag(const ht_spec *s, int i);
ht_access ht_spec_arg_access(const ht_spec *s, int i);
/* The spec's tolerance for outputs, |out - ref| <= atol + rtol * |ref|; a value below 0: the
 * spec gives none, and the element type's default applies (docs/spec.md). */
void ht_spec_tolerance(const ht_spec *s, double *rtol, double *atol);
/* Tunable parameters in the order of ht_config.idx: how many, parameter i's name, its number of
 * values and value v (strings owned by the spec). */
int ht_spec_param_count(const ht_spec *s);
const char *ht_spec_param_name(const ht_spec *s, int i);
int ht_spec_param_value_count(const ht_spec *s, int i);
ht_value ht_spec_param_value(const ht_spec *s, int i, int v);
/* Constraints as text, in order. */
int ht_spec_constraint_count(const ht_spec *s);
const char *ht_spec_constraint_text(const ht_spec *s, int i);
/* Appends a constraint, compiled (and its errors reported) when a space is built: it restricts the
 * spaces built from s from then on; the identity does not change. */
ht_status ht_spec_add_constraint(ht_spec *s, const char *expr);
/* Removes constraint i (HT_ERR_INVALID when there is none). */
ht_status ht_spec_remove_constraint(ht_spec *s, int i);

/* Builds the search space for a device (its limits are constants of the constraints). */
ht_status ht_spec_build_space(const ht_spec *s, const ht_device_info *dev, ht_space **out);

/* The space as JSON {"TX":[8,16],...} (malloc'ed), for the store. */
char *ht_spec_space_json(const ht_spec *s);
/* A config as JSON {"TX":16,...} (malloc'ed). */
char *ht_spec_config_json(const ht_spec *s, const ht_space *space, const ht_config *cfg);

#ifdef __cplusplus
}
#endif
#endif
