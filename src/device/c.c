/* The "c" backend: this CPU. Kernels are C functions compiled by the system compiler into a
 * cached shared object, loaded with dlopen and called with its arguments (c_call.h). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/cpus.h"
#include "core/memory.h"
#include "device/backend.h"
#include "device/c_call.h"
#include "hetune/stop.h"


/* Options every kernel is built with; part of the cache key. */
static const char *const base_flags[] = {"-O3", "-march=native", "-fopenmp", "-fPIC", "-shared"};
enum { N_BASE = (int)(sizeof base_flags / sizeof base_flags[0]) };

/* A tuning loads and unloads a kernel's .so per config: with its code in the segment of its
 * headers (-z noseparate-code) and no part made read-only after relocation (-z norelro, an
 * mprotect less), each has fewer mappings to make and undo, and the other cores fewer TLB
 * flushes to take: a third off loading and unloading (BENCHMARKS.md). gold knows neither option:
 * a build it refuses is run again without them, and the process stops asking. Part of the key. */
static const char *const link_flags[] = {"-Wl,-z,noseparate-code", "-Wl,-z,norelro"};
enum { N_LINK = (int)(sizeof link_flags / sizeof link_flags[0]) };
static atomic_int link_flags_refused;

/* 1 when a build that failed with link_flags in its argv failed for them: they are not asked
 * for again. */
static int refused_link_flags(const char *const *argv, const char *log) {
  int used = 0;
  for (int i = 0; argv[i]; i++) used |= strcmp(argv[i], link_flags[0]) == 0;
  if (!used || !log || (!strstr(log, "noseparate-code") && !strstr(log, "norelro"))) return 0;
  if (!atomic_exchange(&link_flags_refused, 1))
    ht_log(2, "c: the linker refuses -z noseparate-code or -z norelro; building without them");
  return 1;
}

typedef struct c_program {
  void *handle;
  void (*fn)(void);
  ht_c_call_desc call; /* its call described once (c_call.h) */
} c_program;

typedef struct c_buffer {
  ht_buf_ref ref; /* first: views share their root's memory */
  char *ptr;
  size_t bytes;
  int borrowed; /* buffer_wrap: the memory is the caller's */
} c_buffer;

/* ---- argument vectors ---- */

typedef struct argv_t {
  char **v;
  int n, cap;
  int failed;
} argv_t;

static void argv_push(argv_t *a, char *s) {
  if (!s) a->failed = 1;
  if (a->failed) {
    free(s);
    return;
  }
  if (a->n + 2 > a->cap) {
    int cap = a->cap ? a->cap * 2 : 32;
    char **v = realloc(a->v, sizeof *v * (size_t)cap);
    if (!v) {
      a->failed = 1;
      free(s);
      return;
    }
    a->v = v;
    a->cap = cap;
  }
  a->v[a->n++] = s;
  a->v[a->n] = NULL;
}

/* Splits on blanks (no quoting): compiler names like "ccache gcc" and flag strings. */
static void argv_split(argv_t *a, const char *s) {
  while (s && *s) {
    s += strspn(s, " \t\n");
    size_t len = strcspn(s, " \t\n");
    if (len) argv_push(a, ht_strfmt("%.*s", (int)len, s));
    s += len;
  }
}

static void argv_free(argv_t *a) {
  for (int i = 0; i < a->n; i++) free(a->v[i]);
  free(a->v);
  memset(a, 0, sizeof *a);
}

static const char *compiler(void) {
  const char *cc = getenv("HETUNE_CC");
  return cc && *cc ? cc : "cc";
}

/* The compiler, its output captured; a compiler that cannot start is a compile error. */
static ht_status run_capture(char *const argv[], char **log, int *exit_code) {
  ht_status st = ht_run_capture(argv, NULL, 0, log, exit_code);
  return st == HT_ERR_NOTFOUND ? ht_error_prefix(HT_ERR_COMPILE, "compiler: ") : st;
}

/* ---- probe ---- */

/* Value of the first "key : value" line of /proc/cpuinfo. */
static void cpuinfo_field(const char *key, char *out, size_t len) {
  out[0] = '\0';
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return;
  char line[1024];
  size_t klen = strlen(key);
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, key, klen) != 0 || (line[klen] != ' ' && line[klen] != '\t' && line[klen] != ':')) continue;
    char *colon = strchr(line, ':');
    if (!colon) continue;
    colon += 1 + strspn(colon + 1, " \t");
    colon[strcspn(colon, "\n")] = '\0';
    snprintf(out, len, "%s", colon);
    break;
  }
  fclose(f);
}

/* Physical cores: distinct (physical id, core id) pairs; hardware threads when unknown. */
static int count_cores(int threads) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return threads;
  enum { MAXC = 4096 };
  int pairs[MAXC][2], n = 0, phys = 0;
  char line[512];
  while (fgets(line, sizeof line, f) && n < MAXC) {
    int v;
    if (sscanf(line, "physical id : %d", &v) == 1) phys = v;
    else if (sscanf(line, "core id : %d", &v) == 1) {
      int seen = 0;
      for (int i = 0; i < n && !seen; i++) seen = pairs[i][0] == phys && pairs[i][1] == v;
      if (!seen) pairs[n][0] = phys, pairs[n++][1] = v;
    }
  }
  fclose(f);
  return n > 0 && n <= threads ? n : threads;
}

/* The first line of "<compiler> --version"; 0 when the compiler answered. */
static int run_compiler_version(char *out, size_t len) {
  argv_t a = {0};
  argv_split(&a, compiler());
  argv_push(&a, ht_strdup("--version"));
  char *log = NULL;
  int code, ok = !a.failed && a.n > 1 && run_capture(a.v, &log, &code) == HT_OK && code == 0 && log;
  if (ok) snprintf(out, len, "%.*s", (int)strcspn(log, "\n"), log);
  else snprintf(out, len, "%s (unknown version)", compiler());
  ht_error_clear();
  free(log);
  argv_free(&a);
  return ok ? 0 : -1;
}

/* Running the compiler takes milliseconds, paid by every process that opens the c device (each
 * worker too): its answer is kept in the private cache, under the command and the status of the
 * files it names (files: compiler_files; NULL when unknown, and then it always runs). */
static void compiler_version(const uint64_t *files, char *out, size_t len) {
  char *dir = NULL, *path = NULL, *text = NULL, hex[17];
  if (files && ht_cache_subdir("c", &dir) == HT_OK) {
    ht_hash_hex(ht_hash_str(compiler(), ht_hash64(files, sizeof *files, 0)), hex);
    path = ht_strfmt("%s/compiler-%s.version", dir, hex);
  }
  if (path && ht_cache_get(path, &text, NULL) == HT_OK && text[0] && !strchr(text, '\n') && strlen(text) < len)
    snprintf(out, len, "%s", text);
  else if (run_compiler_version(out, len) == 0 && path && ht_cache_put(path, out, strlen(out)))
    ht_log(2, "c: cannot keep the compiler's version: %s", ht_last_error());
  ht_error_clear();
  free(text);
  free(path);
  free(dir);
}

static void probe_device(ht_device_info *d, const uint64_t *files) {
  memset(d, 0, sizeof *d);
  ht_copy_field(d->backend, sizeof d->backend, "c");
  ht_copy_field(d->id, sizeof d->id, "c:0");
  cpuinfo_field("model name", d->name, sizeof d->name);
  if (!d->name[0]) ht_copy_field(d->name, sizeof d->name, "CPU");
  cpuinfo_field("vendor_id", d->vendor, sizeof d->vendor);
  snprintf(d->driver_version, sizeof d->driver_version, "glibc %s", gnu_get_libc_version());
  struct utsname u;
  char tmp[256];
  if (uname(&u) == 0) {
    snprintf(tmp, sizeof tmp, "%s %s", u.sysname, u.release);
    ht_copy_field(d->runtime_version, sizeof d->runtime_version, tmp);
  }
  compiler_version(files, d->compiler_version, sizeof d->compiler_version);
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  d->max_threads = online > 0 ? (int)online : 1; /* the host's: c_probe bounds it for this process */
  d->compute_units = count_cores(d->max_threads);
  d->warp_size = 1;
  char mhz[64];
  cpuinfo_field("cpu MHz", mhz, sizeof mhz);
  d->clock_mhz = atoi(mhz);
  d->global_mem_bytes = d->max_alloc_bytes = ht_memory_usable_at(0, NULL, NULL); /* the machine's */
  long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE);
  d->local_mem_bytes = l1 > 0 ? (uint64_t)l1 : 0;
  d->max_work_group_size = 1;
  for (int i = 0; i < 3; i++) d->max_work_item_sizes[i] = 1;
  ht_device_info_fingerprint(d);
}

/* The file a word of the compiler command names: as given with a '/', else found on $PATH. */
static int word_file(const char *word, size_t len, struct stat *st) {
  char path[PATH_MAX];
  if (memchr(word, '/', len))
    return len < sizeof path && snprintf(path, sizeof path, "%.*s", (int)len, word) > 0 ? stat(path, st) : -1;
  const char *dirs = getenv("PATH");
  for (const char *d = dirs ? dirs : "/usr/bin:/bin"; *d;) {
    size_t dl = strcspn(d, ":");
    if (dl + len + 3 <= sizeof path) { /* an empty entry is the current folder, as for execvp */
      snprintf(path, sizeof path, "%.*s/%.*s", dl ? (int)dl : 1, dl ? d : ".", (int)len, word);
      if (stat(path, st) == 0 && S_ISREG(st->st_mode) && access(path, X_OK) == 0) return 0;
    }
    d += dl + (d[dl] == ':');
  }
  return -1;
}

/* The status (device, inode, size, times) of every file the compiler command names, hashed: its
 * compiler, and a wrapper's script or the compiler it runs ("sh cc.sh", "ccache gcc"). -1 when the
 * command's first word names no file. */
static int compiler_files(uint64_t *sig) {
  const char *cmd = compiler();
  *sig = 0;
  for (int first = 1; *cmd; first = 0) {
    cmd += strspn(cmd, " \t");
    size_t len = strcspn(cmd, " \t");
    struct stat st;
    if (len && word_file(cmd, len, &st) == 0) {
      const int64_t f[] = {(int64_t)st.st_dev, (int64_t)st.st_ino, (int64_t)st.st_size, st.st_mtim.tv_sec,
                           st.st_mtim.tv_nsec, st.st_ctim.tv_sec, st.st_ctim.tv_nsec};
      *sig = ht_hash64(f, sizeof f, *sig);
    } else if (first) {
      return -1;
    }
    cmd += len;
  }
  return 0;
}

/* A process opens the c device many times (each tuning, each computation, a test suite), and a
 * probe reads /proc/cpuinfo four times and asks the compiler its version: its result is kept while
 * the compiler command and the files it names stay the same. */
/* Threads, cores and memory bounded by what this process may use now: pinned or in a container,
 * less than the host has (and a worker inherits its parent's remembered probe). The fingerprint
 * keeps the host's: the same machine is the same device in any container. */
static void bound_to_usable(ht_device_info *d) {
  const int cpus = ht_cpus_usable();
  if (cpus < d->max_threads) d->max_threads = cpus;
  if (d->compute_units > d->max_threads) d->compute_units = d->max_threads;
  const uint64_t memory = ht_memory_usable();
  if (memory && memory < d->global_mem_bytes) d->global_mem_bytes = d->max_alloc_bytes = memory;
}

static ht_status c_probe(ht_device_info *out, int max, int *n) {
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  static ht_device_info memo;
  static char memo_cmd[1024];
  static uint64_t memo_files;
  *n = 0;
  if (max < 1) return HT_OK;
  uint64_t files;
  int known = compiler_files(&files) == 0 && strlen(compiler()) < sizeof memo_cmd;
  pthread_mutex_lock(&lock);
  int hit = known && memo_cmd[0] && strcmp(memo_cmd, compiler()) == 0 && memo_files == files;
  if (hit) *out = memo;
  pthread_mutex_unlock(&lock);
  if (!hit) probe_device(out, known ? &files : NULL);
  if (!hit && known) {
    pthread_mutex_lock(&lock);
    memo = *out;
    memo_files = files;
    snprintf(memo_cmd, sizeof memo_cmd, "%s", compiler());
    pthread_mutex_unlock(&lock);
  }
  bound_to_usable(out);
  *n = 1;
  return HT_OK;
}

static ht_status c_open(ht_device *dev, int index) {
  if (index != 0) return ht_error(HT_ERR_NOTFOUND, "c backend has one device (c:0), not %d", index);
  dev->impl = NULL;
  return ht_cache_check("c");
}

static void c_close(ht_device *dev) { (void)dev; }

/* ---- compile ---- */

static uint64_t c_cache_key(const ht_device *dev, const ht_source *src, const ht_defines *defs) {
  uint64_t h = ht_hash_str("c-backend-v2", 0);
  h = ht_hash_str(src->text, h);
  h = ht_defines_hash(defs, h);
  h = ht_hash_str(src->flags, h);
  h = ht_hash_str(src->entry, h);
  h = ht_hash_str(compiler(), h);
  for (int i = 0; i < N_BASE; i++) h = ht_hash_str(base_flags[i], h);
  for (int i = 0; i < N_LINK && !atomic_load(&link_flags_refused); i++) h = ht_hash_str(link_flags[i], h);
  /* -march=native: the CPU model and compiler are part of what the binary is. */
  return ht_hash_str(dev->info.fingerprint, h);
}

static void build_argv(argv_t *a, const ht_source *src, const ht_defines *defs, const char *cfile,
                       const char *sofile, const char *depfile, const char *include_dir) {
  argv_split(a, compiler());
  for (int i = 0; i < N_BASE; i++) argv_push(a, ht_strdup(base_flags[i]));
  for (int i = 0; i < N_LINK && !atomic_load(&link_flags_refused); i++) argv_push(a, ht_strdup(link_flags[i]));
  /* The files the compiler reads, for the cache entry's manifest (c_cache.c). */
  argv_push(a, ht_strdup("-MD"));
  argv_push(a, ht_strdup("-MF"));
  argv_push(a, ht_strdup(depfile));
  char *dir = ht_source_dir(src);
  if (dir) argv_push(a, ht_strfmt("-I%s", dir));
  free(dir);
  argv_push(a, ht_strfmt("-I%s", include_dir));
  for (int i = 0; defs && i < defs->n; i++) argv_push(a, ht_strfmt("-D%s=%s", defs->names[i], defs->values[i]));
  argv_push(a, ht_strdup("-o"));
  argv_push(a, ht_strdup(sofile));
  argv_push(a, ht_strdup(cfile));
  /* After the source: with --as-needed (Debian's default) a -lfoo before it links nothing. */
  argv_split(a, src->flags);
}

/* Writes the source next to the cache entry under a unique name (mkstemps). */
static ht_status write_temp_source(const char *dir, const char *text, char **path) {
  *path = ht_strfmt("%s/src-XXXXXX.c", dir);
  if (!*path) return ht_error(HT_ERR_NOMEM, "out of memory");
  int fd = mkstemps(*path, 2);
  if (fd < 0) return ht_error(HT_ERR_IO, "%s: cannot create: %s", *path, strerror(errno));
  size_t len = strlen(text), done = 0;
  while (done < len) {
    ssize_t w = write(fd, text + done, len - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    done += (size_t)w;
  }
  close(fd);
  if (done != len) return ht_error(HT_ERR_IO, "%s: cannot write the kernel source", *path);
  return HT_OK;
}

static ht_status compile_failed(const ht_source *src, const char *log, int code) {
  char what[64];
  snprintf(what, sizeof what, "compile failed (exit %d)", code);
  return ht_compile_error(src->path, what, log);
}

/* A unique temporary file next to path (mkstemp), closed; NULL when it cannot be made. */
static char *temp_next_to(const char *path, const char *what) {
  char *tmp = ht_strfmt("%s.%s.%d.XXXXXX", path, what, (int)getpid());
  int fd = tmp ? mkstemp(tmp) : -1;
  if (fd >= 0) close(fd);
  else free(tmp);
  return fd >= 0 ? tmp : NULL;
}

/* Compiles into a unique temporary .so, then rename()s it to sofile: readers never see a
 * half-written object and concurrent compilers of the same key just overwrite each other. */
static ht_status run_compiler(const char *dir, const char *include_dir, const char *sofile, const ht_source *src,
                              const ht_defines *defs, ht_compile_info *info, c_cache_entry *e, int *again) {
  char *cfile = NULL, *tmp_so = temp_next_to(sofile, "tmp"), *depfile = temp_next_to(sofile, "d");
  if (!tmp_so || !depfile) {
    ht_status s = ht_error(HT_ERR_IO, "%s: cannot create a temporary file: %s", dir, strerror(errno));
    if (tmp_so) unlink(tmp_so);
    free(tmp_so);
    free(depfile);
    return s;
  }
  char *text = ht_source_with_line(src); /* the compiler reads a temporary copy */
  ht_status s = text ? write_temp_source(dir, text, &cfile) : ht_error(HT_ERR_NOMEM, "out of memory");
  free(text);
  argv_t a = {0};
  if (!s) build_argv(&a, src, defs, cfile, tmp_so, depfile, include_dir);
  if (!s && a.failed) s = ht_error(HT_ERR_NOMEM, "out of memory");
  int code = -1;
  char *log = NULL;
  if (!s) s = run_capture(a.v, &log, &code);
  if (!s && code != 0) {
    *again = refused_link_flags((const char *const *)a.v, log);
    s = compile_failed(src, log, code);
  }
  if (!s) s = ht_c_cache_record(tmp_so, sofile, depfile, cfile, src, e);
  if (s) unlink(tmp_so);
  unlink(depfile);
  if (cfile) unlink(cfile);
  if (log && *log) info->log = log;
  else free(log);
  argv_free(&a);
  free(cfile);
  free(tmp_so);
  free(depfile);
  return s;
}

/* Kernels built with -fopenmp pull in libgomp. Were it unloaded when the last kernel is
 * dlclose'd, its idle thread pool would run unmapped code and crash the process; pin it once. */
static void pin_openmp_runtime(void) {
  static int pinned;
  if (!pinned) pinned = dlopen("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE) != NULL;
}

static ht_status load_program(const char *sofile, const c_cache_entry *e, const char *entry, c_program **out) {
  pin_openmp_runtime();
  void *h = NULL;
  ht_status s = ht_c_cache_dlopen(sofile, e, &h);
  if (s) return HT_ERR_COMPILE; /* the message says why */
  void *sym = dlsym(h, entry);
  if (!sym) {
    dlclose(h);
    return ht_error(HT_ERR_COMPILE, "entry '%s' not found in %s", entry, sofile);
  }
  c_program *p = calloc(1, sizeof *p);
  if (!p) {
    dlclose(h);
    return ht_error(HT_ERR_NOMEM, "out of memory");
  }
  p->handle = h;
  ht_c_call_desc_init(&p->call);
  /* POSIX guarantees dlsym results convert to function pointers; memcpy avoids the pedantic cast. */
  memcpy(&p->fn, &sym, sizeof p->fn);
  *out = p;
  return HT_OK;
}

/* The .so path for this source, defines and compiler: <cache>/c/<hash>.so. */
static ht_status so_path(ht_device *dev, const ht_source *src, const ht_defines *defs, char **dir, char **sofile) {
  char hex[17];
  ht_status s = ht_cache_subdir("c", dir);
  if (s) return s;
  ht_hash_hex(c_cache_key(dev, src, defs), hex);
  *sofile = ht_strfmt("%s/%s.so", *dir, hex);
  return *sofile ? HT_OK : ht_error(HT_ERR_NOMEM, "out of memory");
}

/* The cached entry of sofile, looked up and loaded: 0 when it cannot be (missing, damaged, a
 * header edited since, replaced while loading). */
static int load_cached(const char *sofile, const ht_source *src, c_cache_entry *e, c_program **p) {
  return ht_c_cache_lookup(sofile, src, e) == HT_OK && load_program(sofile, e, src->entry, p) == HT_OK;
}

/* Under the builders' lock: the entry again (another process may have built it meanwhile), else
 * a new build. *again: the build failed for link_flags. */
static ht_status build_locked(const char *dir, const char *sofile, const ht_source *src, const ht_defines *defs,
                              ht_compile_info *info, c_cache_entry *e, c_program **p, int *again) {
  char *include_dir = NULL;
  int lock = -1;
  double t0 = ht_now();
  /* before the lookup: the manifest of an entry that includes <hetune/stop.h> checks it */
  ht_status s = ht_c_kernel_include_dir(&include_dir);
  if (!s) s = ht_c_cache_lock(sofile, &lock);
  if (!s && load_cached(sofile, src, e, p)) {
    info->cached = 1;
  } else if (!s) {
    ht_log(3, "c: building %s: %s", sofile, ht_last_error());
    ht_error_clear();
    s = run_compiler(dir, include_dir, sofile, src, defs, info, e, again);
    info->seconds = ht_now() - t0;
    if (!s) s = load_program(sofile, e, src->entry, p);
  }
  if (lock >= 0) ht_c_cache_unlock(lock);
  free(include_dir);
  return s;
}

/* The cached entry of src with defs, else a new build. An entry in the cache loads without the
 * lock: its .so and manifest are each renamed into place whole, the lookup checks one against
 * the other, and ht_c_cache_dlopen makes sure the file it loaded is the one it hashed. The lock,
 * the include folder's check and a second look come only when that fails: a tuning loads a
 * cached config in about half the system calls. */
static ht_status compile_once(ht_device *dev, const ht_source *src, const ht_defines *defs, ht_program **out,
                              ht_compile_info *info, int *again) {
  char *dir = NULL, *sofile = NULL;
  ht_status s = ht_flags_check(src->flags, src->path);
  if (!s) s = so_path(dev, src, defs, &dir, &sofile);
  c_cache_entry e;
  c_program *p = NULL;
  if (!s && load_cached(sofile, src, &e, &p)) {
    info->cached = 1;
  } else if (!s) {
    ht_error_clear(); /* the look under the lock says why, if it fails too */
    s = build_locked(dir, sofile, src, defs, info, &e, &p, again);
  }
  free(sofile);
  free(dir);
  if (!s) *out = (ht_program *)p;
  return s;
}

static ht_status c_compile(ht_device *dev, const ht_source *src, const ht_defines *defs, ht_program **out,
                           ht_compile_info *info) {
  ht_compile_info dummy;
  if (!info) info = &dummy;
  memset(info, 0, sizeof *info);
  if (!src || !src->text || !src->entry) return ht_error(HT_ERR_INVALID, "compile: source text and entry are required");
  int again = 0;
  ht_status s = compile_once(dev, src, defs, out, info, &again);
  if (s && again) {
    free(info->log);
    memset(info, 0, sizeof *info);
    ht_error_clear();
    s = compile_once(dev, src, defs, out, info, &again);
  }
  return s;
}

/* ---- checking a source without building it (the spec's prototype check) ---- */

uint64_t ht_c_toolchain_hash(uint64_t h) {
  char model[256];
  cpuinfo_field("model name", model, sizeof model);
  h = ht_hash_str(compiler(), h);
  for (int i = 0; i < N_BASE; i++) h = ht_hash_str(base_flags[i], h);
  return ht_hash_str(model, h); /* -march=native: the CPU decides which macros are predefined */
}

ht_status ht_c_check_compile(const ht_source *src, const ht_defines *defs, char **log, int *exit_code) {
  *log = NULL;
  *exit_code = -1;
  char *dir = NULL, *cfile = NULL, *include_dir = NULL;
  /* flags $HETUNE_ALLOWED_FLAGS refuses never reach a compiler, not even for this check */
  ht_status s = ht_flags_check(src->flags, src->path);
  if (!s) s = ht_cache_subdir("c", &dir);
  if (!s) s = ht_c_kernel_include_dir(&include_dir);
  if (!s) s = write_temp_source(dir, src->text, &cfile);
  argv_t a = {0};
  if (!s) {
    argv_split(&a, compiler());
    for (int i = 0; i < N_BASE; i++)
      if (strcmp(base_flags[i], "-shared") != 0) argv_push(&a, ht_strdup(base_flags[i]));
    argv_push(&a, ht_strdup("-fsyntax-only"));
    char *srcdir = ht_source_dir(src);
    if (srcdir) argv_push(&a, ht_strfmt("-I%s", srcdir));
    free(srcdir);
    argv_push(&a, ht_strfmt("-I%s", include_dir));
    for (int i = 0; defs && i < defs->n; i++) argv_push(&a, ht_strfmt("-D%s=%s", defs->names[i], defs->values[i]));
    argv_push(&a, ht_strdup(cfile));
    argv_split(&a, src->flags);
    if (a.failed) s = ht_error(HT_ERR_NOMEM, "out of memory");
  }
  if (!s) s = ht_run_capture(a.v, NULL, 120, log, exit_code);
  if (cfile) unlink(cfile);
  argv_free(&a);
  free(cfile);
  free(include_dir);
  free(dir);
  return s;
}

static void c_program_free(ht_device *dev, ht_program *prog) {
  (void)dev;
  c_program *p = (c_program *)prog;
  if (!p) return;
  if (p->handle) dlclose(p->handle);
  ht_c_call_desc_destroy(&p->call);
  free(p);
}

/* ---- launch ---- */

static void *host_of(ht_buffer *b) { return ((c_buffer *)b)->ptr; }

/* Checks the launch and fills the call's arguments (c_call.h). The global/local sizes mean nothing
 * to a C function: it gets only its arguments and does its own threading (OpenMP). Ids have no
 * offset to start from either, so an offset is refused rather than ignored. */
static ht_status prepare_call(ht_program *prog, const ht_launch *l, volatile int32_t *stop, ht_c_call *a) {
  c_program *p = (c_program *)prog;
  a->heap = NULL;
  if (!p || !p->fn) return ht_error(HT_ERR_INVALID, "launch: no program");
  ht_status s = ht_launch_check(l);
  if (!s) s = ht_launch_no_offset(l, "c");
  if (!s) s = ht_c_call_prepare(&p->call, l, host_of, stop, a);
  return s;
}

static ht_status c_launch(ht_device *dev, ht_program *prog, const ht_launch *l, double *kernel_s) {
  (void)dev;
  ht_stop_block stop; /* nobody can cancel a synchronous launch: the flag stays 0, no slots */
  ht_stop_block_init(&stop, 0);
  ht_c_call a; /* filled in: zeroing the whole struct cost more than a small call */
  ht_status s = prepare_call(prog, l, &stop.stop, &a);
  if (!s) {
    double t0 = kernel_s ? ht_now() : 0; /* NULL: not timed, no clock read */
    ht_c_call_run(((c_program *)prog)->fn, &a);
    if (kernel_s) *kernel_s = ht_now() - t0;
  }
  ht_c_call_free(&a);
  return s;
}

/* ---- asynchronous launch: the call runs on one of the backend's launch threads ---- */

typedef struct c_event {
  pthread_mutex_t mu;
  pthread_cond_t cv;      /* signalled when the call has returned */
  void (*fn)(void);
  ht_c_call args;
  ht_stop_block stop;     /* the launch's stop flag and signal slots, raised by c_cancel */
  int done;              /* set (atomically, under mu) when the call has returned */
  double kernel_s;
} c_event;

static void call_job(void *arg) {
  c_event *e = arg;
  double t0 = ht_now();
  ht_c_call_run(e->fn, &e->args);
  e->kernel_s = ht_now() - t0;
}

static void call_done(void *arg) {
  c_event *e = arg;
  pthread_mutex_lock(&e->mu);
  __atomic_store_n(&e->done, 1, __ATOMIC_RELEASE);
  pthread_cond_signal(&e->cv);
  pthread_mutex_unlock(&e->mu); /* the waiter may free e from here on */
}

static void c_event_free(c_event *e) {
  ht_c_call_free(&e->args);
  ht_stop_block_free(&e->stop);
  pthread_cond_destroy(&e->cv);
  pthread_mutex_destroy(&e->mu);
  free(e);
}

static ht_status c_launch_async(ht_device *dev, ht_program *prog, const ht_launch *l, ht_event **out) {
  (void)dev;
  c_event *e = calloc(1, sizeof *e);
  if (!e) return ht_error(HT_ERR_NOMEM, "out of memory");
  pthread_mutex_init(&e->mu, NULL);
  pthread_cond_init(&e->cv, NULL);
  ht_status s = ht_stop_block_init(&e->stop, ht_stop_default_slots());
  if (!s) s = prepare_call(prog, l, &e->stop.stop, &e->args);
  int err = 0;
  if (!s) {
    e->fn = ((c_program *)prog)->fn;
    if ((err = ht_c_worker_submit(call_job, call_done, e)) != 0)
      s = ht_error(HT_ERR_RUNTIME, "launch: cannot start a thread: %s", strerror(err));
  }
  if (s) {
    c_event_free(e);
    return s;
  }
  *out = (ht_event *)e;
  return HT_OK;
}

static ht_status c_wait(ht_device *dev, ht_event *ev, double *kernel_s) {
  (void)dev;
  c_event *e = (c_event *)ev;
  pthread_mutex_lock(&e->mu);
  while (!e->done) pthread_cond_wait(&e->cv, &e->mu);
  pthread_mutex_unlock(&e->mu);
  if (kernel_s) *kernel_s = e->kernel_s;
  c_event_free(e);
  return HT_OK;
}

static int c_poll(ht_device *dev, ht_event *ev) {
  (void)dev;
  return __atomic_load_n(&((c_event *)ev)->done, __ATOMIC_ACQUIRE);
}

static ht_status c_cancel(ht_device *dev, ht_event *ev) {
  (void)dev;
  ht_stop_block_raise(&((c_event *)ev)->stop);
  return HT_OK;
}

/* ---- buffers: 64-byte aligned host memory; views point into their root's ---- */

static ht_status c_buffer_new(ht_device *dev, size_t bytes, ht_buffer **out) {
  (void)dev;
  c_buffer *b = calloc(1, sizeof *b);
  size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0) rounded = 64;
  if (b) b->ptr = aligned_alloc(64, rounded);
  if (!b || !b->ptr) {
    free(b);
    return ht_error(HT_ERR_NOMEM, "cannot allocate a %zu-byte buffer", bytes);
  }
  ht_buf_ref_init(&b->ref);
  b->bytes = bytes;
  *out = (ht_buffer *)b;
  return HT_OK;
}

static ht_status c_buffer_view(ht_device *dev, ht_buffer *buf, size_t offset, size_t bytes, ht_buffer **out) {
  (void)dev;
  c_buffer *b = (c_buffer *)buf, *v = NULL;
  ht_status s = ht_buf_view_new(sizeof *v, b ? &b->ref : NULL, b ? b->bytes : 0, offset, bytes, (void **)&v);
  if (s) return s;
  v->ptr = b->ptr + offset;
  v->bytes = bytes;
  *out = (ht_buffer *)v;
  return HT_OK;
}

/* Copies between host memory and bytes at offset of the buffer (memcpy: this is host memory). */
static ht_status c_copy(c_buffer *b, size_t offset, void *host, size_t bytes, int write, double *seconds) {
  if (!b) return ht_error(HT_ERR_INVALID, "no buffer");
  ht_status s = ht_range_check(b->bytes, offset, bytes);
  if (s) return s;
  double t0 = ht_now();
  if (bytes && write) memcpy(b->ptr + offset, host, bytes);
  else if (bytes) memcpy(host, b->ptr + offset, bytes);
  if (seconds) *seconds = ht_now() - t0;
  return HT_OK;
}

static ht_status c_buffer_write(ht_device *dev, ht_buffer *buf, const void *host, size_t bytes, double *seconds) {
  (void)dev;
  /* The write path never modifies host; the shared helper just takes one pointer type. */
  return c_copy((c_buffer *)buf, 0, (void *)(uintptr_t)host, bytes, 1, seconds);
}

static ht_status c_buffer_read(ht_device *dev, ht_buffer *buf, void *host, size_t bytes, double *seconds) {
  (void)dev;
  return c_copy((c_buffer *)buf, 0, host, bytes, 0, seconds);
}

static ht_status c_buffer_write_at(ht_device *dev, ht_buffer *buf, size_t offset, const void *host, size_t bytes,
                                   double *seconds) {
  (void)dev;
  return c_copy((c_buffer *)buf, offset, (void *)(uintptr_t)host, bytes, 1, seconds);
}

static ht_status c_buffer_read_at(ht_device *dev, ht_buffer *buf, size_t offset, void *host, size_t bytes,
                                  double *seconds) {
  (void)dev;
  return c_copy((c_buffer *)buf, offset, host, bytes, 0, seconds);
}

static void c_buffer_free(ht_device *dev, ht_buffer *buf) {
  (void)dev;
  c_buffer *b = (c_buffer *)buf;
  if (!b) return;
  c_buffer *root = (c_buffer *)ht_buf_ref_drop(&b->ref);
  if (b->ref.root) free(b); /* a view: its record only */
  if (root) {
    if (!root->borrowed) free(root->ptr);
    free(root);
  }
}

/* Kernels on this device run on the host: the caller's memory is used in place. */
static ht_status c_buffer_wrap(ht_device *dev, void *host, size_t bytes, ht_buffer **out) {
  (void)dev;
  if (!host && bytes) return ht_error(HT_ERR_INVALID, "buffer_wrap: no memory");
  c_buffer *b = calloc(1, sizeof *b);
  if (!b) return ht_error(HT_ERR_NOMEM, "out of memory");
  ht_buf_ref_init(&b->ref);
  b->ptr = host;
  b->bytes = bytes;
  b->borrowed = 1;
  *out = (ht_buffer *)b;
  return HT_OK;
}

const ht_backend_ops ht_backend_c = {
    .name = "c",
    .probe = c_probe,
    .open = c_open,
    .close = c_close,
    .compile = c_compile,
    .program_free = c_program_free,
    .launch = c_launch,
    .buffer_new = c_buffer_new,
    .buffer_write = c_buffer_write,
    .buffer_read = c_buffer_read,
    .buffer_free = c_buffer_free,
    .caps = HT_CAP_ASYNC | HT_CAP_CANCEL | HT_CAP_VIEWS | HT_CAP_HOST_MEMORY | HT_CAP_PARALLEL_COMPILE,
    .launch_async = c_launch_async,
    .wait = c_wait,
    .poll = c_poll,
    .cancel = c_cancel,
    .buffer_view = c_buffer_view,
    .buffer_write_at = c_buffer_write_at,
    .buffer_read_at = c_buffer_read_at,
    .buffer_wrap = c_buffer_wrap,
};
