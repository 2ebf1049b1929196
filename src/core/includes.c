/* The files a kernel source #includes, hashed by content: a header edit must change the kernel's
 * identity and its cache keys, or old results and binaries would be reused. Compilers that run
 * in-process (PoCL, NVRTC) report no dependency list, so the directives are scanned here. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "hetune/core.h"

enum { MAX_FILES = 4096, MAX_DIRS = 256 };

typedef struct inc_ctx {
  char *dirs[MAX_DIRS]; /* search folders: the source's, then those of the flags */
  int n_dirs;
  char **seen; /* real paths of the files hashed so far: each once, and no cycles */
  int n_seen;
  uint64_t h;
} inc_ctx;

static void add_dir(inc_ctx *c, char *dir) {
  if (!dir || c->n_dirs == MAX_DIRS) {
    free(dir);
    return;
  }
  c->dirs[c->n_dirs++] = dir;
}

static const char blanks[] = " \t\n\r\v\f";

/* -Idir, -I dir, -iquote dir, -isystem dir, --include-path=dir, --include-path dir. */
static void flag_dirs(inc_ctx *c, const char *flags) {
  static const char *const opts[] = {"--include-path=", "--include-path", "-iquote", "-isystem", "-I"};
  int want_next = 0;
  for (const char *p = flags; p && *p;) {
    p += strspn(p, blanks);
    size_t n = strcspn(p, blanks);
    if (!n) break;
    if (want_next) add_dir(c, ht_strfmt("%.*s", (int)n, p));
    want_next = 0;
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++) {
      size_t k = strlen(opts[i]);
      if (n < k || strncmp(p, opts[i], k) != 0) continue;
      if (n == k) want_next = 1;
      else add_dir(c, ht_strfmt("%.*s", (int)(n - k), p + k));
      break;
    }
    p += n;
  }
}

static char *folder_of(const char *path) {
  const char *slash = path ? strrchr(path, '/') : NULL;
  if (!slash) return ht_strdup(".");
  return slash == path ? ht_strdup("/") : ht_strfmt("%.*s", (int)(slash - path), path);
}

/* The name of an #include "name" or <name> directive at line, else NULL; *quoted says which. */
static const char *directive(const char *line, size_t *len, int *quoted) {
  const char *p = line + strspn(line, " \t");
  if (*p != '#') return NULL;
  p += 1 + strspn(p + 1, " \t");
  if (strncmp(p, "include", 7) != 0) return NULL;
  p += 7 + strspn(p + 7, " \t");
  char close = *p == '"' ? '"' : *p == '<' ? '>' : 0;
  if (!close) return NULL; /* #include MACRO: not resolvable without preprocessing */
  const char *end = strpbrk(p + 1, close == '"' ? "\"\n" : ">\n");
  if (!end || *end != close || end == p + 1) return NULL;
  *quoted = close == '"';
  *len = (size_t)(end - p - 1);
  return p + 1;
}

static int seen_before(inc_ctx *c, const char *real) {
  for (int i = 0; i < c->n_seen; i++)
    if (strcmp(c->seen[i], real) == 0) return 1;
  return 0;
}

static void scan(inc_ctx *c, const char *text, const char *dir);

/* Hashes the file at path (and what it includes) if it exists; 1 when it did. The name as written,
 * not the path, goes into the hash: moving a project keeps its kernels' identity. */
static int visit(inc_ctx *c, const char *path, const char *name) {
  char real[PATH_MAX], *text = NULL;
  size_t len = 0;
  if (!realpath(path, real)) return 0;
  if (seen_before(c, real)) return 1;
  if (c->n_seen == MAX_FILES || ht_read_file(real, &text, &len)) {
    ht_error_clear();
    return 0;
  }
  char **grown = realloc(c->seen, sizeof *grown * (size_t)(c->n_seen + 1));
  char *copy = ht_strdup(real), *dir = folder_of(real);
  if (grown) c->seen = grown;
  if (grown && copy) c->seen[c->n_seen++] = copy;
  else free(copy);
  c->h = ht_hash64(text, len, ht_hash_str(name, c->h));
  if (dir) scan(c, text, dir);
  free(dir);
  free(text);
  return 1;
}

/* A name found nowhere is a system header, or a missing one the compiler will report: its name is
 * in the including text, already hashed. */
static void resolve(inc_ctx *c, const char *name, int quoted, const char *dir) {
  if (name[0] == '/') {
    visit(c, name, name);
    return;
  }
  int found = 0;
  char *path = quoted ? ht_strfmt("%s/%s", dir, name) : NULL;
  if (path) found = visit(c, path, name);
  for (int i = 0; !found && i < c->n_dirs; i++) {
    free(path);
    if ((path = ht_strfmt("%s/%s", c->dirs[i], name))) found = visit(c, path, name);
  }
  free(path);
}

static void scan(inc_ctx *c, const char *text, const char *dir) {
  char name[PATH_MAX];
  for (const char *line = text; line && *line;) {
    size_t len;
    int quoted;
    const char *n = directive(line, &len, &quoted);
    if (n && len < sizeof name) {
      memcpy(name, n, len);
      name[len] = '\0';
      resolve(c, name, quoted, dir);
    }
    line = strchr(line, '\n');
    if (line) line++;
  }
}

uint64_t ht_include_hash(const char *text, const char *path, const char *flags, uint64_t seed) {
  inc_ctx c = {.h = seed}; /* no header found: seed unchanged, so existing identities stay */
  char *dir = folder_of(path);
  if (path) add_dir(&c, ht_strdup(dir));
  flag_dirs(&c, flags);
  if (dir) scan(&c, text, dir);
  free(dir);
  for (int i = 0; i < c.n_dirs; i++) free(c.dirs[i]);
  for (int i = 0; i < c.n_seen; i++) free(c.seen[i]);
  free(c.seen);
  return c.h;
}
