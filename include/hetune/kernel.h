/* Kernel objects: a spec built in code instead of read from a JSON file (docs/spec.md has every
 * field). A builder collects three parts, then ht_kernel_finish checks them together, with the
 * checks the JSON loader runs (the JSON loader is one more producer of this builder), and makes
 * the ht_spec that tuning (ht_tune), the runner and the execution layer (exec.h) take:
 *
 *   kernel:  source, entry, flags, defines, arguments (the signature), launch geometry,
 *            parameters, constraints, work and metrics
 *   problem: the named sizes and their default values (ht_spec_set_size, or ht_variant_run's
 *            sizes, give others per call)
 *   harness: initial data of the buffers, the reference, tolerances and the data seed
 *
 *   ht_kernel *k, *ref;  ht_spec *spec;
 *   ht_kernel_create("vadd", &k);
 *   ht_kernel_set_source(k, HT_LANG_OPENCL, text, NULL);
 *   ht_kernel_set_entry(k, "vadd");
 *   ht_kernel_add_size(k, "N", 1 << 20);
 *   ht_kernel_add_buffer(k, "c", HT_DTYPE_F32, "N", HT_ACCESS_WRITE);
 *   ht_kernel_add_buffer(k, "a", HT_DTYPE_F32, "N", HT_ACCESS_READ);
 *   ht_kernel_add_scalar(k, "n", HT_DTYPE_I32, "N");
 *   ht_kernel_set_geometry(k, HT_GEOM_GLOBAL, 1, (const char *[]){"N"});
 *   ht_kernel_set_geometry(k, HT_GEOM_LOCAL, 1, (const char *[]){"WG"});
 *   ht_kernel_add_param(k, "WG", (ht_value[]){ht_int(64), ht_int(128)}, 2);
 *   ht_kernel_reference(k, &ref);
 *   ht_kernel_set_source(ref, HT_LANG_C, NULL, "vadd_ref.c");
 *   ht_kernel_set_entry(ref, "vadd_ref");
 *   ht_kernel_finish(k, &spec);   // errors name the kernel and the field: kernel "vadd": ...
 *   ht_kernel_destroy(k);         // the spec stands alone
 *
 * Expressions (lengths, values, geometry, constraints, work, metrics) are text in the language of
 * docs/spec.md; they are compiled by ht_kernel_finish, when every name is known, so the calls may
 * come in any order. Setters check what they can at once (counts, ranges, tolerances) and return
 * HT_ERR_INVALID naming the field. */
#ifndef HETUNE_KERNEL_H
#define HETUNE_KERNEL_H

#include <stdint.h>

#include "hetune/core.h"
#include "hetune/spec.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ht_kernel ht_kernel;

/* name: the kernel's name in the store. */
ht_status ht_kernel_create(const char *name, ht_kernel **out);
/* Frees the builder (not the specs it finished). A reference handle is freed with its kernel. */
void ht_kernel_destroy(ht_kernel *k);
/* Relative paths (sources, init files) resolve against dir; by default against the current folder. */
ht_status ht_kernel_set_base_dir(ht_kernel *k, const char *dir);

/* ---- kernel ---- */

/* The source: its text, or with text NULL the file at path, read by ht_kernel_finish. A path given
 * with the text names the source in messages, and its folder is where #include "..." looks. */
ht_status ht_kernel_set_source(ht_kernel *k, ht_language lang, const char *text, const char *path);
ht_status ht_kernel_set_entry(ht_kernel *k, const char *entry);
ht_status ht_kernel_set_flags(ht_kernel *k, const char *flags);
/* A fixed -DNAME=VALUE of every compile. */
ht_status ht_kernel_add_define(ht_kernel *k, const char *name, const char *value);

/* Arguments, in the kernel's order. A buffer's length (elements) is an expression of sizes; a
 * scalar's value an expression of sizes and parameters. */
ht_status ht_kernel_add_buffer(ht_kernel *k, const char *name, ht_dtype type, const char *length, ht_access access);
ht_status ht_kernel_add_scalar(ht_kernel *k, const char *name, ht_dtype type, const char *value);
/* The stop flag of cooperative cancellation (an int32 the kernel polls; docs/spec.md). */
ht_status ht_kernel_add_stop_flag(ht_kernel *k, const char *name);

/* Launch geometry (OpenCL, CUDA; a C function takes none): the spec's "global", "grid",
 * "problem"+"grid_div", "local" and the multipliers, 1 to 3 expressions per form (0 to 3 for
 * local, grid_div and the multipliers; none for local: the runtime chooses). */
typedef enum ht_geometry {
  HT_GEOM_GLOBAL = 0, HT_GEOM_GRID, HT_GEOM_PROBLEM, HT_GEOM_GRID_DIV, HT_GEOM_LOCAL,
  HT_GEOM_GLOBAL_MUL, HT_GEOM_GLOBAL_DIV, HT_GEOM_LOCAL_MUL, HT_GEOM_LOCAL_DIV, HT_GEOM_COUNT
} ht_geometry;
ht_status ht_kernel_set_geometry(ht_kernel *k, ht_geometry form, int n, const char *const *exprs);

/* Tunable parameters, bound in the order added: a list of values (strings are copied), an
 * inclusive integer range with a step, or the powers of two from lo to hi. */
ht_status ht_kernel_add_param(ht_kernel *k, const char *name, const ht_value *values, int n);
ht_status ht_kernel_add_param_range(ht_kernel *k, const char *name, int64_t lo, int64_t hi, int64_t step);
ht_status ht_kernel_add_param_pow2(ht_kernel *k, const char *name, int64_t lo, int64_t hi);
ht_status ht_kernel_add_constraint(ht_kernel *k, const char *expr);
/* Floating-point operations and bytes one run moves (either may be NULL), for prediction. */
ht_status ht_kernel_set_work(ht_kernel *k, const char *flops, const char *bytes);
/* A reported metric: an expression that may also name time_s and time_ms. At most 8. */
ht_status ht_kernel_add_metric(ht_kernel *k, const char *name, const char *expr);
/* Whether the sizes are also -D defines of every compile (default 1). */
ht_status ht_kernel_set_size_defines(ht_kernel *k, int on);

/* ---- problem ---- */

ht_status ht_kernel_add_size(ht_kernel *k, const char *name, int64_t value);

/* ---- harness ---- */

/* A buffer's initial contents (by default random for a buffer the kernel reads, else zeros):
 * HT_INIT_RANDOM (uniform in [-1, 1) for floats, [0, 100) for integers), HT_INIT_ZEROS or
 * HT_INIT_RAMP; the others take their values through the calls below. */
ht_status ht_kernel_set_init(ht_kernel *k, const char *arg, ht_init_kind kind);
ht_status ht_kernel_set_init_random(ht_kernel *k, const char *arg, double lo, double hi);
ht_status ht_kernel_set_init_fill(ht_kernel *k, const char *arg, double value);
/* Raw binary of the buffer's length, read when data is made. */
ht_status ht_kernel_set_init_file(ht_kernel *k, const char *arg, const char *path);
/* The reference's builder, owned by k (made on the first call): it takes the kernel's arguments,
 * so only its source, entry, flags, defines and geometry are set on it. */
ht_status ht_kernel_reference(ht_kernel *k, ht_kernel **ref);
/* |out - ref| <= atol + rtol * |ref|; NAN keeps the default of the element type. */
ht_status ht_kernel_set_tolerance(ht_kernel *k, double rtol, double atol);
/* Seed of the random input data (default 1). */
ht_status ht_kernel_set_seed(ht_kernel *k, uint64_t seed);

/* Checks the three parts together (every expression compiled against the names, the geometry a
 * GPU kernel needs, a written buffer, a C kernel's argument list against its source) and makes a
 * spec that does not depend on k. Errors: HT_ERR_INVALID or HT_ERR_PARSE naming the kernel and
 * the field ('kernel "vadd": arguments.n.value: ...'), HT_ERR_IO for an unreadable source. */
ht_status ht_kernel_finish(ht_kernel *k, ht_spec **out);

/* Writes k as a spec file at path (docs/spec.md), after the checks of ht_kernel_finish (a kernel
 * that would not finish writes nothing and gets its error), so ht_spec_load(path) makes the spec
 * ht_kernel_finish makes. A source given as text is written to the file its path names (relative
 * to the base folder), or without a path to NAME.c (.cl, .cu; a reference's to NAME_reference.c)
 * there, replacing what was there.
 * Relative paths stay relative when path is in the base folder, else they are written absolute.
 * The file's identity (source_hash) is the built spec's when path is in the base folder and every
 * source has a path; a text source without one gets a path in the file, so an identity of its own.
 * Folders are created as needed. Errors: those of ht_kernel_finish ("not written: ..."), HT_ERR_IO. */
ht_status ht_kernel_write_json(const ht_kernel *k, const char *path);

#ifdef __cplusplus
}
#endif
#endif
