/* Static code features. CUDA kernels get reference 003's PTX features (src/ptx/): per-thread
 * executed instruction counts by class, the data-dependency degree dpc, the static arithmetic
 * intensity alpha, registers and shared memory; plus the executed total over all threads. The
 * kernel is compiled (nvcc, cached on disk) with the defines the runner would pass, so loops whose
 * bounds are sizes or parameters are counted with their trip counts. Other languages have none.
 * The PTX target is $HETUNE_PTX_ARCH, else sm_80. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hetune/ptx.h"
#include "model/features_internal.h"

static const char *const ptx_names[] = {"ptx:l",     "ptx:l_c",   "ptx:l_mr",   "ptx:l_mw",  "ptx:l_shr",
                                        "ptx:l_shw", "ptx:l_s",   "ptx:l_dpu",  "ptx:l_sfu", "ptx:dpc",
                                        "ptx:alpha", "ptx:regs",  "ptx:shmem_words", "ptx:log_exec_total", NULL};

static int uses_ptx(const ht_feature_set *fs) { return fs->spec->kernel.lang == HT_LANG_CUDA; }

ht_status ht_features_static_layout(ht_feature_set *fs) {
  if (!uses_ptx(fs)) return HT_OK;
  for (int i = 0; ptx_names[i]; i++) {
    char *name = ht_strdup(ptx_names[i]);
    if (!name) return ht_error(HT_ERR_NOMEM, "out of memory");
    fs->names[fs->n++] = name;
  }
  return HT_OK;
}

enum { MAX_DEFINES = 160 };

typedef struct define_list {
  const char *items[MAX_DEFINES + 1];
  char text[MAX_DEFINES][96];
  int n;
} define_list;

/* The defines the runner passes: the spec's fixed ones, the parameters, and the sizes when the
 * spec says size_defines. fs->vars holds the bound values. */
static void build_defines(const ht_feature_set *fs, define_list *d) {
  const ht_spec *s = fs->spec;
  d->n = 0;
  for (int i = 0; i < s->kernel.n_defines && d->n < MAX_DEFINES; i++, d->n++)
    snprintf(d->text[d->n], sizeof d->text[0], "%s=%s", s->kernel.define_names[i], s->kernel.define_values[i]);
  int to = s->size_defines ? s->first_device : s->first_size;
  for (int i = 0; i < to && d->n < MAX_DEFINES; i++, d->n++) {
    char v[64];
    ht_value_format(fs->vars[i], v, sizeof v);
    snprintf(d->text[d->n], sizeof d->text[0], "%s=%s", s->names[i], v);
  }
  for (int i = 0; i < d->n; i++) d->items[i] = d->text[i];
  d->items[d->n] = NULL;
}

/* The kernel's arguments as the PTX entry sees them: scalars by value, buffers unknown. */
static ht_status argument_values(const ht_feature_set *fs, double *args) {
  for (int i = 0; i < fs->spec->n_args; i++) {
    const ht_spec_arg *a = &fs->spec->args[i];
    args[i] = NAN;
    if (a->is_buffer || !a->value) continue;
    ht_status st = ht_expr_eval_double(a->value, fs->vars, &args[i]);
    if (st) return ht_error_prefix(st, "%s: argument %s: ", fs->spec->path, a->name);
  }
  return HT_OK;
}

ht_status ht_features_static(ht_feature_set *fs, double *x) {
  if (!uses_ptx(fs)) return HT_OK;
  double items = fs->spec->kernel.dims > 0 ? x[fs->first_launch] : 1; /* launch:work_items */
  define_list defs;
  build_defines(fs, &defs);
  double args[64];
  if (fs->spec->n_args > 64) return ht_error(HT_ERR_INVALID, "%s: more than 64 kernel arguments", fs->spec->path);
  ht_status st = argument_values(fs, args);
  const char *arch = getenv("HETUNE_PTX_ARCH");
  ht_ptx_features f;
  if (!st)
    st = ht_ptx_features_from_source(fs->spec->kernel.source_text, fs->spec->kernel.source_path, defs.items,
                                     arch && *arch ? arch : "sm_80", fs->spec->kernel.entry, args, fs->spec->n_args, &f);
  if (st) return ht_error_prefix(st, "%s: PTX features: ", fs->spec->path);
  const ht_ptx_counts *e = &f.executed;
  double v[] = {e->total, e->compute, e->global_read, e->global_write, e->shared_read, e->shared_write, e->sync, e->dpu,
                e->sfu, f.dpc, isfinite(f.alpha) ? f.alpha : 1e6, f.registers, f.shared_words,
                log10(1 + e->total * items)};
  memcpy(x + fs->first_static, v, sizeof v);
  return HT_OK;
}

void ht_features_static_free(ht_feature_set *fs) { (void)fs; }
