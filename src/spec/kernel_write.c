/* ht_kernel_write_json: a builder as a spec file. The file is kb_describe's JSON (the JSON a built
 * kernel's identity is computed from), so it loads to the spec ht_kernel_finish makes, with the
 * same identity; only the paths are adjusted to the file's folder. */
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "spec/kernel_internal.h"

static ht_status nomem(void) { return ht_error(HT_ERR_NOMEM, "out of memory"); }

/* How the file names a path given to the builder: relative paths resolve against the builder's
 * base folder and a spec file's against its own folder, so where the two differ a relative path
 * is written absolute (abs_base: the base folder's absolute path, NULL when they are the same). */
static json_t *path_json(const char *abs_base, const char *path) {
  if (!abs_base || path[0] == '/') return json_string(path);
  char *full = kb_resolve(abs_base, path);
  json_t *j = full ? json_string(full) : NULL;
  free(full);
  return j;
}

/* Writes kk's source text (when it has one) where ht_kernel_finish says it is, and names that file
 * under "source" in o, the kernel's or the reference's object of the description. */
static ht_status write_source(const ht_kernel *kk, const ht_kernel *root, const char *abs_base, json_t *o) {
  if (!kk->has_source) return HT_OK;
  char *name = kb_source_file(kk, root), *file = name ? kb_resolve(root->base_dir, name) : NULL;
  ht_status st = file ? HT_OK : nomem();
  if (!st && kk->text) st = ht_write_file_atomic(file, kk->text, strlen(kk->text));
  if (!st && json_object_set_new(o, "source", path_json(abs_base, name))) st = nomem();
  free(file);
  free(name);
  return st;
}

/* The files of buffers' initial data, named from the spec's folder. */
static ht_status init_files(const ht_kernel *k, const char *abs_base, json_t *desc) {
  json_t *args = json_object_get(desc, "arguments");
  for (int i = 0; i < k->n_args; i++) {
    if (!k->args[i].init_set || k->args[i].init != HT_INIT_FILE) continue;
    json_t *init = json_object_get(json_array_get(args, (size_t)i), "init");
    if (json_object_set_new(init, "file", path_json(abs_base, k->args[i].file))) return nomem();
  }
  return HT_OK;
}

/* The absolute path of dir (NULL: the current folder), created if missing, into out (PATH_MAX). */
static ht_status absolute_dir(const char *dir, char *out) {
  ht_status st = ht_mkdir_p(dir ? dir : ".");
  if (st) return st;
  if (!realpath(dir ? dir : ".", out)) return ht_error(HT_ERR_IO, "%s: cannot resolve the folder", dir ? dir : ".");
  return HT_OK;
}

/* kb_describe's JSON with the paths as the file at path names them; sources given as text written. */
static ht_status describe_for(const ht_kernel *k, const char *path, json_t **out) {
  char *copy = ht_strdup(path);
  if (!copy) return nomem();
  char spec_dir[PATH_MAX], base[PATH_MAX];
  ht_status st = absolute_dir(dirname(copy), spec_dir);
  free(copy);
  if (!st) st = absolute_dir(k->base_dir, base);
  if (st) return st;
  const char *abs_base = strcmp(spec_dir, base) == 0 ? NULL : base;
  json_t *desc = kb_describe(k);
  if (!desc) return nomem();
  st = write_source(k, k, abs_base, desc);
  json_t *ref = json_object_get(desc, "reference");
  if (!st && k->reference) st = write_source(k->reference, k, abs_base, ref);
  if (!st) st = init_files(k, abs_base, desc);
  if (st) json_decref(desc);
  else *out = desc;
  return st;
}

ht_status ht_kernel_write_json(const ht_kernel *k, const char *path) {
  if (!k || k->parent || !path || !*path)
    return kb_misuse(NULL, "ht_kernel_write_json", "give the kernel (not NULL, not its reference) and a path");
  /* The checks of ht_kernel_finish first, so no file is written that would not load. Finishing
   * leaves the builder as it was (a failure clears the error it records). */
  ht_spec *check = NULL;
  ht_status st = ht_kernel_finish((ht_kernel *)k, &check);
  ht_spec_destroy(check);
  if (st) return ht_error_prefix(st, "not written: ");
  json_t *desc = NULL;
  if ((st = describe_for(k, path, &desc))) return ht_error_prefix(st, "kernel \"%s\": %s: ", k->name, path);
  char *text = json_dumps(desc, JSON_INDENT(2));
  json_decref(desc);
  char *file = text ? ht_strfmt("%s\n", text) : NULL;
  st = file ? ht_write_file_atomic(path, file, strlen(file)) : nomem();
  free(file);
  free(text);
  return st;
}
