/* nvcc driver: CUDA source -> PTX (nvcc -ptx) and resources (ptxas -v on that PTX), cached on
 * disk under ht_cache_dir()/ptx keyed by source, defines, arch and compiler path. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ptx/ptx_internal.h"


#define NVCC_TIMEOUT_S 300.0

static int is_executable(const char *p) { return p && *p && access(p, X_OK) == 0; }

static int ends_with_cu(const char *s) {
  size_t n = strlen(s);
  return n >= 3 && strcmp(s + n - 3, ".cu") == 0;
}

const char *ht_ptx_nvcc_path(void) {
  static __thread char found[4096];
  const char *env = getenv("HETUNE_NVCC");
  if (env && *env) return is_executable(env) ? env : NULL;
  const char *path = getenv("PATH");
  while (path && *path) {
    size_t n = strcspn(path, ":");
    if (n > 0 && n + 6 < sizeof found) {
      snprintf(found, sizeof found, "%.*s/nvcc", (int)n, path);
      if (is_executable(found)) return found;
    }
    path += n + (path[n] == ':');
  }
  return is_executable("/usr/local/cuda/bin/nvcc") ? "/usr/local/cuda/bin/nvcc" : NULL;
}

/* nvcc with its output captured, killed after timeout_s; one that cannot start is unsupported. */
static ht_status run_tool(char *const *argv, const char *dir, char **log, int *exit_code, double timeout_s) {
  ht_status st = ht_run_capture(argv, dir, timeout_s, log, exit_code);
  return st == HT_ERR_NOTFOUND ? ht_error_prefix(HT_ERR_UNSUPPORTED, "nvcc: ") : st;
}

/* ---- ptxas -v log ---- */

static ht_ptx_resources *entry_for(ht_ptx_resources *res, int *n, int max, const char *name, size_t len) {
  for (int i = 0; i < *n; i++)
    if (strlen(res[i].kernel) == len && strncmp(res[i].kernel, name, len) == 0) return &res[i];
  if (*n >= max) return NULL;
  ht_ptx_resources *r = &res[(*n)++];
  memset(r, 0, sizeof *r);
  snprintf(r->kernel, sizeof r->kernel, "%.*s", (int)(len < sizeof r->kernel ? len : sizeof r->kernel - 1), name);
  return r;
}

/* A non-negative decimal count at p that fits an int (sscanf's %d and atoi are undefined on
 * overflow): 1 with *end after its digits, 0 when there is none or it is too large. */
static int count_at(const char *p, int *out, const char **end) {
  if (*p < '0' || *p > '9') return 0;
  long long v = 0;
  for (; *p >= '0' && *p <= '9'; p++)
    if ((v = v * 10 + (*p - '0')) > INT_MAX) return 0;
  *out = (int)v;
  *end = p;
  return 1;
}

int ht_ptx_parse_ptxas_log(const char *log, ht_ptx_resources *res, int max_res) {
  int n = 0;
  ht_ptx_resources *cur = NULL;
  for (const char *line = log; line && *line;) {
    const char *eol = strchr(line, '\n');
    size_t len = eol ? (size_t)(eol - line) : strlen(line);
    char buf[1024];
    snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf ? len : sizeof buf - 1), line);
    const char *q = strstr(buf, "entry function '");
    if (!q) q = strstr(buf, "Function properties for ");
    if (q) {
      const char *nm = strchr(q, '\'') ? strchr(q, '\'') + 1 : q + strlen("Function properties for ");
      size_t nl = strcspn(nm, "' \r");
      if (res) cur = entry_for(res, &n, max_res, nm, nl);
    }
    const char *u = strstr(buf, "Used ");
    if (cur && u) {
      const char *after;
      int v;
      if (count_at(u + 5, &v, &after) && strncmp(after, " registers", 10) == 0) cur->registers = v;
      const char *s = strstr(buf, " bytes smem");
      if (s) {
        while (s > buf && s[-1] >= '0' && s[-1] <= '9') s--;
        if (count_at(s, &v, &after)) cur->shared_bytes = v;
      }
    }
    const char *sf = strstr(buf, "bytes stack frame");
    if (cur && sf) {
      int frame, st, ld;
      const char *a = buf + strspn(buf, " \t");
      if (count_at(a, &frame, &a) && strncmp(a, " bytes stack frame, ", 20) == 0 && count_at(a + 20, &st, &a) &&
          strncmp(a, " bytes spill stores, ", 21) == 0 && count_at(a + 21, &ld, &a) &&
          strncmp(a, " bytes spill loads", 18) == 0) {
        cur->local_bytes = frame;
        cur->spill_bytes = st > INT_MAX - ld ? INT_MAX : st + ld;
      }
    }
    line = eol ? eol + 1 : NULL;
  }
  return n;
}

/* ---- compile with cache ---- */

static uint64_t cache_key(const char *src, const char *const *defines, const char *arch, const char *nvcc) {
  uint64_t h = ht_hash_str(src, 0x70747831);
  for (int i = 0; defines && defines[i]; i++) h = ht_hash_str(defines[i], h ^ 0x9e3779b97f4a7c15ull);
  h = ht_hash_str(arch, h);
  return ht_hash_str(nvcc, h);
}

static ht_status read_cached(const char *base, char **ptx, char **log) {
  char *pp = ht_strfmt("%s.ptx", base), *lp = ht_strfmt("%s.log", base);
  size_t n;
  ht_status st = pp && lp ? HT_OK : HT_ERR_NOMEM;
  if (!st && access(pp, R_OK) == 0 && access(lp, R_OK) == 0) {
    st = ht_read_file(pp, ptx, &n);
    if (!st && (st = ht_read_file(lp, log, &n))) {
      free(*ptx);
      *ptx = NULL;
    }
  } else if (!st) {
    st = HT_ERR_NOTFOUND;
  }
  free(pp);
  free(lp);
  return st;
}

/* One nvcc run in dir on file (relative, so messages name the user's file, not the temporary
 * folder): nvcc -arch=ARCH -I<source folder> -D... <mode...> file -o out. */
static ht_status nvcc_run(const char *nvcc, const char *dir, const char *file, const char *inc, const char *const *defines,
                          const char *arch, const char *mode1, const char *mode2, const char *out, char **log) {
  char *argv[300] = {0};
  int a = 0, code = -1;
  argv[a++] = ht_strdup(nvcc);
  argv[a++] = ht_strfmt("-arch=%s", arch);
  argv[a++] = ht_strfmt("-I%s", inc);
  for (int i = 0; defines && defines[i] && a < 290; i++) argv[a++] = ht_strfmt("-D%s", defines[i]);
  argv[a++] = ht_strdup(mode1);
  if (mode2) argv[a++] = ht_strdup(mode2);
  argv[a++] = ht_strdup(file);
  argv[a++] = ht_strdup("-o");
  argv[a++] = ht_strdup(out);
  ht_status st = HT_OK;
  for (int i = 0; i < a; i++)
    if (!argv[i]) st = ht_error(HT_ERR_NOMEM, "out of memory");
  if (!st) st = run_tool(argv, dir, log, &code, NVCC_TIMEOUT_S);
  if (!st && code != 0) {
    char first[512];
    const char *e = *log ? strstr(*log, "error") : NULL;
    while (e && e > *log && e[-1] != '\n') e--; /* the whole line: "gemm.cu(12): error: ..." */
    snprintf(first, sizeof first, "%.*s", e ? (int)strcspn(e, "\n") : 0, e ? e : "");
    st = ht_error(HT_ERR_COMPILE, "nvcc %s failed (exit %d): %s", mode1, code, first[0] ? first : "no error line");
  }
  for (int i = 0; i < a; i++) free(argv[i]);
  return st;
}

/* Compiles in a private temporary folder (concurrent calls never share files). */
static ht_status compile_uncached(const char *nvcc, const char *src, const char *source_name, const char *const *defines,
                                  const char *arch, char **ptx, char **log) {
  char tmpl[] = "/tmp/hetune-ptx-XXXXXX";
  if (!mkdtemp(tmpl)) return ht_error(HT_ERR_IO, "mkdtemp: %s", strerror(errno));
  const char *slash = strrchr(source_name, '/');
  const char *base = slash ? slash + 1 : source_name;
  char *srcdir = slash ? ht_strfmt("%.*s", (int)(slash - source_name), source_name) : ht_strdup(".");
  char *inc = srcdir ? realpath(srcdir, NULL) : NULL; /* nvcc runs elsewhere: absolute include path */
  char *file = ht_strfmt("%s%s", base, ends_with_cu(base) ? "" : ".cu");
  char *cu = file ? ht_strfmt("%s/%s", tmpl, file) : NULL;
  char *out = ht_strfmt("%s/k.ptx", tmpl), *cubin = ht_strfmt("%s/k.cubin", tmpl);
  ht_status st = cu && out && cubin && file ? ht_write_file_atomic(cu, src, strlen(src)) : HT_ERR_NOMEM;
  char *l1 = NULL;
  if (!st) st = nvcc_run(nvcc, tmpl, file, inc ? inc : ".", defines, arch, "-ptx", NULL, "k.ptx", &l1);
  if (!st) st = nvcc_run(nvcc, tmpl, file, inc ? inc : ".", defines, arch, "-cubin", "--ptxas-options=-v", "k.cubin", log);
  if (!st) {
    size_t n;
    st = ht_read_file(out, ptx, &n);
  }
  if (st) ht_error_prefix(st, "%s: ", source_name);
  free(l1);
  const char *paths[] = {cu, out, cubin};
  for (int i = 0; i < 3; i++)
    if (paths[i]) unlink(paths[i]);
  rmdir(tmpl);
  free(cu);
  free(out);
  free(cubin);
  free(file);
  free(srcdir);
  free(inc);
  return st;
}

ht_status ht_ptx_compile(const char *source_text, const char *source_name, const char *const *defines,
                         const char *arch, char **ptx_out, ht_ptx_resources *res, int max_res, int *n_res) {
  if (!source_text || !ptx_out) return ht_error(HT_ERR_INVALID, "ht_ptx_compile: NULL argument");
  *ptx_out = NULL;
  if (n_res) *n_res = 0;
  if (!arch) arch = "sm_80";
  if (!source_name) source_name = "<cuda>";
  const char *nvcc = ht_ptx_nvcc_path();
  if (!nvcc)
    return ht_error(HT_ERR_UNSUPPORTED, "nvcc not found (set HETUNE_NVCC, add it to PATH, or install the CUDA toolkit "
                                        "in /usr/local/cuda): PTX features of %s need it", source_name);
  char hex[17];
  ht_hash_hex(cache_key(source_text, defines, arch, nvcc), hex);
  char *dir = ht_strfmt("%s/ptx", ht_cache_dir()), *base = dir ? ht_strfmt("%s/%s", dir, hex) : NULL;
  if (!dir || !base) {
    free(dir);
    return ht_error(HT_ERR_NOMEM, "out of memory");
  }
  char *ptx = NULL, *log = NULL;
  ht_status st = read_cached(base, &ptx, &log);
  if (st) {
    st = compile_uncached(nvcc, source_text, source_name, defines, arch, &ptx, &log);
    /* Caching is an optimisation: a read-only cache folder must not fail the compile. */
    if (!st && ht_mkdir_p(dir) == HT_OK) {
      char *pp = ht_strfmt("%s.ptx", base), *lp = ht_strfmt("%s.log", base);
      if (pp && lp && log && ptx && ht_write_file_atomic(lp, log, strlen(log)) == HT_OK) ht_write_file_atomic(pp, ptx, strlen(ptx));
      free(pp);
      free(lp);
    }
  }
  if (!st) {
    int n = ht_ptx_parse_ptxas_log(log, res, res ? max_res : 0);
    if (n_res) *n_res = n;
    *ptx_out = ptx;
    ptx = NULL;
  }
  free(ptx);
  free(log);
  free(dir);
  free(base);
  return st;
}
