/* T1 files (the input format of BAT and Kernel Tuner) as kernel specs: ht_spec_load reads a file
 * whose top level has "ConfigurationSpace" with this producer of the kernel builder. The search
 * space (parameters, Python conditions) comes from the space layer's T1 reader; the kernel from
 * "KernelSpecification":
 *   Language      OpenCL, CUDA (or C, hetune's own): the kernel's language, so its device
 *   KernelName    the entry point, and the kernel's name in the store
 *   KernelFile    the source, relative to the T1 file
 *   CompilerOptions  a list of flags
 *   ProblemSize   an object of named sizes {"N": 4096} (a list has no names: refused)
 *   GlobalSize, LocalSize  {"X", "Y", "Z"}: integers or expressions of sizes and parameters;
 *                 GlobalSizeType (default: the language's) says whether GlobalSize counts threads
 *                 (OpenCL) or blocks (CUDA)
 *   Arguments     in the kernel's order: Name, Type, MemoryType Vector (Size elements, AccessType
 *                 ReadOnly|WriteOnly|ReadWrite, FillType Constant|Random|BinaryRaw with FillValue
 *                 or DataSource) or Scalar (FillValue); a scalar with an integer FillValue is also a
 *                 size of that name, so conditions can name it as Kernel Tuner lets them
 * Anything else is an error at its line:column: an unknown key, SharedMemory or Stream (not
 * supported), another Language or FillType. A T1 file has no reference: outputs are not compared
 * (guard zones, NaN and crashes still are checked). Sizes are not -D defines (Kernel Tuner defines
 * only the parameters). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "spec/kernel_internal.h"
#include "spec/spec_internal.h"

static const char *const axes[] = {"X", "Y", "Z"};

/* The language of "Language"; the default geometry form follows it. */
static ht_status t1_language(spec_ctx *c, json_t *ks, ht_language *lang) {
  const char *s = json_string_value(json_object_get(ks, "Language"));
  if (!s) return spec_fail(c, "Language", NULL, HT_ERR_INVALID, "KernelSpecification needs \"Language\" (OpenCL, CUDA or C)");
  if (!strcmp(s, "OpenCL")) *lang = HT_LANG_OPENCL;
  else if (!strcmp(s, "CUDA")) *lang = HT_LANG_CUDA;
  else if (!strcmp(s, "C")) *lang = HT_LANG_C;
  else return spec_fail(c, "Language", s, HT_ERR_UNSUPPORTED, "Language \"%s\" is not supported (OpenCL, CUDA or C)", s);
  return HT_OK;
}

/* KernelName, KernelFile (which must exist), CompilerOptions. */
static ht_status t1_source(spec_ctx *c, json_t *ks, ht_language lang) {
  const char *entry, *file;
  ht_status st;
  if ((st = spec_string(c, ks, "KernelName", 1, &entry)) || (st = spec_string(c, ks, "KernelFile", 1, &file))) return st;
  char *path = file[0] == '/' ? ht_strdup(file) : ht_strfmt("%s/%s", c->dir, file);
  struct stat sb;
  int missing = !path || stat(path, &sb) != 0 || !S_ISREG(sb.st_mode);
  free(path);
  if (missing) return spec_fail(c, "KernelFile", file, HT_ERR_IO, "KernelFile \"%s\": no such file next to the T1 file", file);
  if ((st = ht_kernel_set_source(c->k, lang, NULL, file)) || (st = ht_kernel_set_entry(c->k, entry))) return st;
  json_t *opts = json_object_get(ks, "CompilerOptions");
  if (!opts) return HT_OK;
  ht_buf flags = {0};
  size_t i;
  json_t *o;
  json_array_foreach(opts, i, o) {
    if (!json_is_string(o)) break;
    ht_buf_appendf(&flags, "%s%s", i ? " " : "", json_string_value(o));
  }
  if (!json_is_array(opts) || i < json_array_size(opts))
    st = spec_fail(c, "CompilerOptions", NULL, HT_ERR_INVALID, "\"CompilerOptions\" must be a list of strings");
  else if (flags.data)
    st = ht_kernel_set_flags(c->k, flags.data);
  ht_buf_free(&flags);
  return st;
}

static ht_status t1_sizes(spec_ctx *c, json_t *ks) {
  json_t *ps = json_object_get(ks, "ProblemSize"), *v;
  if (!ps) return HT_OK;
  if (!json_is_object(ps))
    return spec_fail(c, "ProblemSize", NULL, HT_ERR_UNSUPPORTED,
                     "\"ProblemSize\" must be an object of named sizes ({\"N\": 4096}): hetune names its sizes");
  const char *name;
  json_object_foreach(ps, name, v) {
    if (!json_is_integer(v))
      return spec_fail(c, name, NULL, HT_ERR_INVALID, "ProblemSize \"%s\" must be an integer", name);
    ht_status st = ht_kernel_add_size(c->k, name, json_integer_value(v));
    if (st) return st;
  }
  return HT_OK;
}

/* One of GlobalSize, LocalSize: {"X": .., "Y": .., "Z": ..} into a geometry form. */
static ht_status t1_dims(spec_ctx *c, json_t *ks, const char *key, ht_geometry form, ht_language lang) {
  json_t *g = json_object_get(ks, key);
  if (!g) return HT_OK;
  if (lang == HT_LANG_C) return spec_fail(c, key, NULL, HT_ERR_INVALID, "a C kernel takes no \"%s\"", key);
  if (!json_is_object(g)) return spec_fail(c, key, NULL, HT_ERR_INVALID, "\"%s\" must be an object {\"X\": ..}", key);
  const char *outer = spec_enter(c, key);
  static const char *const known[] = {"X", "Y", "Z", NULL};
  ht_status st = spec_check_keys(c, g, c->obj, key, known);
  char bufs[3][64];
  const char *exprs[3];
  int n = 0;
  for (; !st && n < 3 && json_object_get(g, axes[n]); n++)
    st = spec_expr_text(c, json_object_get(g, axes[n]), axes[n], bufs[n], &exprs[n]);
  if (!st && (size_t)n != json_object_size(g))
    st = spec_fail_at(c, c->obj, HT_ERR_INVALID, "\"%s\": give X, then Y, then Z", key);
  if (!st) st = ht_kernel_set_geometry(c->k, form, n, exprs);
  c->obj = outer;
  return st;
}

static ht_status t1_geometry(spec_ctx *c, json_t *ks, ht_language lang) {
  const char *type = NULL;
  ht_status st = spec_string(c, ks, "GlobalSizeType", 0, &type);
  if (!type) type = lang == HT_LANG_CUDA ? "CUDA" : "OpenCL"; /* the language's own */
  if (!st && strcmp(type, "CUDA") && strcmp(type, "OpenCL"))
    st = spec_fail(c, "GlobalSizeType", type, HT_ERR_INVALID, "\"GlobalSizeType\" must be \"OpenCL\" or \"CUDA\"");
  ht_geometry global = !strcmp(type, "CUDA") ? HT_GEOM_GRID : HT_GEOM_GLOBAL;
  if (!st) st = t1_dims(c, ks, "GlobalSize", global, lang);
  if (!st) st = t1_dims(c, ks, "LocalSize", HT_GEOM_LOCAL, lang);
  return st;
}

/* A scalar: its FillValue; an integer one is also a size, so conditions and sizes can name it. */
static ht_status t1_scalar(spec_ctx *c, json_t *a, const char *name, ht_dtype type, json_t *sizes) {
  json_t *v = json_object_get(a, "FillValue");
  if (!v) return spec_fail_at(c, c->obj, HT_ERR_INVALID, "scalar \"%s\" needs a \"FillValue\"", name);
  if (json_is_integer(v) && !json_object_get(sizes, name)) {
    ht_status st = ht_kernel_add_size(c->k, name, json_integer_value(v));
    return st ? st : ht_kernel_add_scalar(c->k, name, type, name);
  }
  char buf[64];
  const char *text;
  ht_status st = spec_expr_text(c, v, "FillValue", buf, &text);
  return st ? st : ht_kernel_add_scalar(c->k, name, type, text);
}

/* A vector's initial data from FillType. */
static ht_status t1_fill(spec_ctx *c, json_t *a, const char *name) {
  const char *fill = NULL;
  ht_status st = spec_string(c, a, "FillType", 0, &fill);
  json_t *v = json_object_get(a, "FillValue");
  if (st) return st;
  if (!fill) fill = "Random";
  if (!strcmp(fill, "Random"))
    return json_is_number(v) ? ht_kernel_set_init_random(c->k, name, 0, json_number_value(v)) : HT_OK;
  if (!strcmp(fill, "Constant"))
    return ht_kernel_set_init_fill(c->k, name, json_is_number(v) ? json_number_value(v) : 0);
  if (!strcmp(fill, "BinaryRaw")) {
    const char *data;
    return (st = spec_string(c, a, "DataSource", 1, &data)) ? st : ht_kernel_set_init_file(c->k, name, data);
  }
  return spec_fail(c, "FillType", fill, HT_ERR_UNSUPPORTED,
                   "FillType \"%s\" is not supported (Constant, Random or BinaryRaw)", fill);
}

static ht_status t1_vector(spec_ctx *c, json_t *a, const char *name, ht_dtype type) {
  static const char *const modes[] = {"ReadOnly", "WriteOnly", "ReadWrite", NULL};
  const char *acc = NULL, *len;
  char buf[64];
  ht_status st = spec_string(c, a, "AccessType", 0, &acc);
  if (!acc) acc = "ReadWrite";
  int m = 0;
  while (!st && modes[m] && strcmp(acc, modes[m])) m++;
  if (!st && !modes[m])
    st = spec_fail(c, "AccessType", acc, HT_ERR_INVALID, "AccessType \"%s\": expected ReadOnly, WriteOnly or ReadWrite", acc);
  if (!st && !json_object_get(a, "Size"))
    st = spec_fail_at(c, c->obj, HT_ERR_INVALID, "vector \"%s\" needs a \"Size\" (elements)", name);
  if (!st) st = spec_expr_text(c, json_object_get(a, "Size"), "Size", buf, &len);
  if (!st) st = ht_kernel_add_buffer(c->k, name, type, len, (ht_access)(m + 1));
  return st ? st : t1_fill(c, a, name);
}

static ht_status t1_arg(spec_ctx *c, json_t *a, json_t *sizes) {
  static const char *const known[] = {"Name", "Type", "MemoryType", "AccessType", "FillType", "FillValue",
                                      "Size", "DataSource", NULL};
  if (!json_is_object(a)) return spec_fail_at(c, c->obj, HT_ERR_INVALID, "an argument must be an object");
  const char *name, *tname, *mem;
  ht_dtype type;
  char where[32];
  snprintf(where, sizeof where, "Arguments[%d]", c->arg_index);
  ht_status st = spec_check_keys(c, a, c->obj, where, known);
  if (!st) st = spec_string(c, a, "Name", 1, &name);
  if (!st) st = spec_string(c, a, "Type", 1, &tname);
  if (!st) st = spec_string(c, a, "MemoryType", 1, &mem);
  if (!st && ht_dtype_parse(tname, &type))
    st = spec_fail(c, "Type", tname, HT_ERR_UNSUPPORTED, "Type \"%s\" is not supported (float, double, int32, ...)", tname);
  if (st) return st;
  if (!strcmp(mem, "Scalar")) return t1_scalar(c, a, name, type, sizes);
  if (!strcmp(mem, "Vector")) return t1_vector(c, a, name, type);
  return spec_fail(c, "MemoryType", mem, HT_ERR_UNSUPPORTED, "MemoryType \"%s\" is not supported (Vector or Scalar)", mem);
}

static ht_status t1_args(spec_ctx *c, json_t *ks) {
  json_t *args = json_object_get(ks, "Arguments");
  if (!json_is_array(args))
    return spec_fail(c, "Arguments", NULL, HT_ERR_INVALID, "KernelSpecification needs \"Arguments\", a list");
  const char *outer = spec_enter(c, "Arguments"), *text = c->obj;
  ht_status st = HT_OK;
  for (size_t i = 0; !st && i < json_array_size(args); i++) {
    c->obj = spec_text_element(text, i);
    c->arg_index = (int)i;
    st = t1_arg(c, json_array_get(args, i), json_object_get(ks, "ProblemSize"));
  }
  c->obj = outer;
  return st;
}

/* Keys hetune reads but cannot honour. */
static ht_status t1_unsupported(spec_ctx *c, json_t *ks) {
  static const char *const keys[] = {"SharedMemory", "Stream"};
  for (int i = 0; i < 2; i++) {
    json_t *v = json_object_get(ks, keys[i]);
    if (v && !json_is_null(v) && !(json_is_integer(v) && json_integer_value(v) == 0))
      return spec_fail(c, keys[i], NULL, HT_ERR_UNSUPPORTED, "\"%s\" is not supported by hetune", keys[i]);
  }
  return HT_OK;
}

/* The parameters and conditions of the space the T1 reader made. */
static ht_status t1_space(spec_ctx *c) {
  ht_space *s = NULL;
  ht_status st = ht_space_load_t1(c->path, &s);
  for (int p = 0; !st && p < ht_space_param_count(s); p++) {
    int n = ht_space_value_count(s, p);
    ht_value *v = malloc(sizeof *v * (size_t)(n ? n : 1));
    if (!v) st = ht_error(HT_ERR_NOMEM, "out of memory");
    for (int i = 0; !st && i < n; i++) v[i] = ht_space_value(s, p, i);
    if (!st) st = ht_kernel_add_param(c->k, ht_space_param_name(s, p), v, n);
    free(v);
  }
  for (int i = 0; !st && i < ht_space_constraint_count(s); i++)
    st = ht_kernel_add_constraint(c->k, ht_space_constraint_text(s, i));
  if (s) ht_space_destroy(s);
  return st;
}

/* The builder's errors (checks of the kernel as a whole) at the T1 key the field came from. */
static ht_status t1_locate(void *ctx, const spec_where *w, ht_status code, const char *msg) {
  static const char *const keys[][2] = {{"global", "GlobalSize"}, {"grid", "GlobalSize"}, {"local", "LocalSize"},
                                        {"buffer", "Size"},       {"value", "FillValue"},  {"source", "KernelFile"},
                                        {"entry", "KernelName"},  {"flags", "CompilerOptions"}};
  spec_ctx *c = ctx;
  const char *ks = spec_text_member(spec_text_root(c), "KernelSpecification", 1), *key = NULL;
  c->obj = w->area == SPEC_AT_ARG ? spec_text_element(spec_text_member(ks, "Arguments", 1), (size_t)w->index) : ks;
  for (size_t i = 0; w->key && i < sizeof keys / sizeof keys[0]; i++)
    if (!strcmp(w->key, keys[i][0])) key = keys[i][1];
  if (!key) return spec_fail_at(c, c->obj ? c->obj : spec_text_root(c), code, "%s", msg);
  return spec_fail(c, key, NULL, code, "%s", msg);
}

ht_status spec_parse_t1(spec_ctx *c, json_t *root, ht_spec **out) {
  static const char *const top[] = {"General", "ConfigurationSpace", "KernelSpecification", "Budget", NULL};
  static const char *const ks_keys[] = {"Language", "CompilerOptions", "BenchmarkName", "KernelName", "KernelFile",
                                        "GlobalSizeType", "GlobalSize", "LocalSize", "ProblemSize", "SharedMemory",
                                        "Stream", "Arguments", NULL};
  ht_status st = spec_check_keys(c, root, spec_text_root(c), "", top);
  json_t *ks = json_object_get(root, "KernelSpecification");
  if (!st && !json_is_object(ks))
    st = spec_fail_at(c, spec_text_root(c), HT_ERR_INVALID, "a T1 file to tune needs a \"KernelSpecification\" object");
  if (st) return st;
  c->obj = spec_text_member(spec_text_root(c), "KernelSpecification", 1);
  const char *name;
  ht_language lang = HT_LANG_OPENCL;
  if ((st = spec_check_keys(c, ks, c->obj, "KernelSpecification", ks_keys)) || (st = t1_unsupported(c, ks)) ||
      (st = t1_language(c, ks, &lang)) || (st = spec_string(c, ks, "KernelName", 1, &name)))
    return st;
  if ((st = ht_kernel_create(name, &c->k))) return st;
  kb_set_locator(c->k, t1_locate, c);
  if ((st = ht_kernel_set_base_dir(c->k, c->dir)) ||
      (st = ht_kernel_set_size_defines(c->k, 0)))
    return st;
  if ((st = t1_source(c, ks, lang)) || (st = t1_sizes(c, ks)) || (st = t1_args(c, ks)) ||
      (st = t1_geometry(c, ks, lang)) || (st = t1_space(c)))
    return st;
  c->obj = NULL;
  return kb_finish(c->k, c->path, NULL, out);
}
