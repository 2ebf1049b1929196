/* RAPL: the CPU's energy counters in the powercap tree (/sys/class/powercap, or
 * $HETUNE_POWERCAP_DIR). Each package domain ("intel-rapl:N", also on AMD CPUs; "amd-rapl:N")
 * counts microjoules in energy_uj and wraps at max_energy_range_uj. The idle figure is the average
 * power over a quiet interval, the active one the highest power of short windows while spinning
 * threads load every core. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/cpus.h"
#include "device/backend.h"
#include "device/power.h"

enum { RAPL_MAX = 64 };

typedef struct rapl_domain {
  char dir[PATH_MAX];
  uint64_t range, last; /* wrap-around point and the last reading, in microjoules */
} rapl_domain;

typedef struct rapl {
  const char *id, *root;
  int n;
  rapl_domain d[RAPL_MAX];
} rapl;

static const char *const package_prefixes[] = {"intel-rapl:", "amd-rapl:", NULL};

/* A counter file: one unsigned decimal number. A file this user may not read is named with the
 * reason: recent kernels let only root read energy_uj. */
static ht_status read_counter(const rapl *r, const char *dir, const char *file, uint64_t *out) {
  char path[PATH_MAX + 32], text[64];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  ssize_t n = fd < 0 ? -1 : read(fd, text, sizeof text - 1);
  int err = errno;
  if (fd >= 0) close(fd);
  if (n < 0)
    return ht_error(HT_ERR_UNSUPPORTED, "no power reading for device %s: %s: %s%s", r->id, path, strerror(err),
                    err == EACCES || err == EPERM ? " (the energy counters are readable by root only here)" : "");
  text[n] = 0;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  while (isspace((unsigned char)*end)) end++;
  if (!isdigit((unsigned char)text[0]) || *end || errno)
    return ht_error(HT_ERR_UNSUPPORTED, "no power reading for device %s: %s: '%.20s' is not an energy counter",
                    r->id, path, text);
  *out = v;
  return HT_OK;
}

/* "intel-rapl:0" is a package domain, "intel-rapl:0:1" (a core or dram part) and "psys" are not. */
static int is_package(const char *root, const char *name) {
  for (int i = 0; package_prefixes[i]; i++) {
    size_t p = strlen(package_prefixes[i]);
    if (strncmp(name, package_prefixes[i], p) || !name[p] || strspn(name + p, "0123456789") != strlen(name + p))
      continue;
    char path[PATH_MAX + 32], kind[32] = "";
    snprintf(path, sizeof path, "%s/%s/name", root, name);
    FILE *f = fopen(path, "r");
    if (!f) return 1; /* no name file: the numbering alone says package */
    int ok = fgets(kind, sizeof kind, f) && !strncmp(kind, "package", 7);
    fclose(f);
    return ok;
  }
  return 0;
}

static int by_dir(const void *a, const void *b) {
  return strcmp(((const rapl_domain *)a)->dir, ((const rapl_domain *)b)->dir);
}

static ht_status no_package(const rapl *r, const char *why) {
  return ht_error(HT_ERR_UNSUPPORTED,
                  "no power reading for device %s: %s has no RAPL package domain (not readable here%s%s)", r->id, r->root, why ? ": " : "", why ? why : "");
}

/* The package domains under r->root, each with its range and first reading. */
static ht_status find_domains(rapl *r) {
  DIR *d = opendir(r->root);
  if (!d) return no_package(r, strerror(errno));
  for (struct dirent *e; (e = readdir(d)) && r->n < RAPL_MAX;)
    if (is_package(r->root, e->d_name)) snprintf(r->d[r->n++].dir, sizeof r->d[0].dir, "%s/%s", r->root, e->d_name);
  closedir(d);
  if (!r->n) return no_package(r, NULL);
  qsort(r->d, (size_t)r->n, sizeof r->d[0], by_dir);
  for (int i = 0; i < r->n; i++) {
    ht_status st = read_counter(r, r->d[i].dir, "max_energy_range_uj", &r->d[i].range);
    if (!st) st = read_counter(r, r->d[i].dir, "energy_uj", &r->d[i].last);
    if (st) return st;
  }
  return HT_OK;
}

/* Joules counted by every package since the last sample; a counter below its last reading has
 * wrapped around at its range. */
static ht_status sample(rapl *r, double *joules) {
  uint64_t uj = 0;
  for (int i = 0; i < r->n; i++) {
    uint64_t now;
    ht_status st = read_counter(r, r->d[i].dir, "energy_uj", &now);
    if (st) return st;
    rapl_domain *d = &r->d[i];
    uj += now >= d->last ? now - d->last : (d->range > d->last ? d->range - d->last : 0) + now;
    d->last = now;
  }
  *joules = (double)uj * 1e-6;
  return HT_OK;
}

/* Average watts over one wait of s seconds. */
static ht_status watts_over(rapl *r, const ht_power_clock *c, double s, double *w) {
  double t0 = c->now(c->ctx), j;
  c->sleep(c->ctx, s);
  ht_status st = sample(r, &j);
  double dt = c->now(c->ctx) - t0;
  *w = dt > 0 ? j / dt : 0;
  return st;
}

static ht_status measure(rapl *r, const ht_device_power_options *o, const ht_power_clock *c,
                         ht_device_power_info *out) {
  double j;
  ht_status st = sample(r, &j); /* the counters from here on */
  if (!st) st = watts_over(r, c, o->idle_s, &out->idle_w);
  if (st || (st = c->load(c->ctx, 1, o->threads))) return st;
  double t0 = c->now(c->ctx), w;
  if (!(st = sample(r, &j))) /* the energy of starting the threads is no window's */
    do {
      st = watts_over(r, c, o->window_s, &w);
      if (!st && w > out->active_w) out->active_w = w;
    } while (!st && c->now(c->ctx) - t0 < o->load_s);
  c->load(c->ctx, 0, o->threads);
  if (!st && !(out->active_w > 0))
    st = ht_error(HT_ERR_UNSUPPORTED, "no power reading for device %s: the RAPL counters under %s did not advance",
                  r->id, r->root);
  return st;
}

/* ---- the real clock and reference load ---- */

typedef struct spin_load {
  atomic_int stop;
  int n;
  pthread_t *t;
} spin_load;

static double real_now(void *ctx) {
  (void)ctx;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void real_sleep(void *ctx, double s) {
  (void)ctx;
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) && errno == EINTR) {}
}

static void *spin(void *arg) {
  spin_load *l = arg;
  volatile double x = 1;
  while (!atomic_load_explicit(&l->stop, memory_order_relaxed)) x = x * 1.0000001 + 1e-9;
  return NULL;
}

static ht_status real_load(void *ctx, int on, int threads) {
  spin_load *l = ctx;
  if (!on) {
    atomic_store(&l->stop, 1);
    for (int i = 0; i < l->n; i++) pthread_join(l->t[i], NULL);
    free(l->t);
    l->t = NULL, l->n = 0;
    return HT_OK;
  }
  atomic_store(&l->stop, 0);
  if (!(l->t = calloc((size_t)threads, sizeof *l->t))) return ht_error(HT_ERR_NOMEM, "out of memory");
  while (l->n < threads && !pthread_create(&l->t[l->n], NULL, spin, l)) l->n++;
  if (l->n) return HT_OK; /* fewer threads than asked still load the CPU */
  free(l->t);
  l->t = NULL;
  return ht_error(HT_ERR_INTERNAL, "power: cannot start the reference load's threads");
}

static void describe(const rapl *r, ht_device_power_info *out) {
  ht_buf b = {0};
  ht_buf_appendf(&b, "package domain%s", r->n > 1 ? "s" : "");
  for (int i = 0; i < r->n; i++) ht_buf_appendf(&b, "%s %s", i ? "," : "", strrchr(r->d[i].dir, '/') + 1);
  ht_buf_appendf(&b, " under %s", r->root);
  ht_copy_field(out->detail, sizeof out->detail, b.data ? b.data : "");
  ht_buf_free(&b);
}

ht_status ht_power_rapl(const char *id, const char *root, const ht_device_power_options *opt,
                        const ht_power_clock *clk, ht_device_power_info *out) {
  rapl *r = calloc(1, sizeof *r);
  if (!r) return ht_error(HT_ERR_NOMEM, "out of memory");
  const char *env = getenv("HETUNE_POWERCAP_DIR");
  r->id = id;
  r->root = root ? root : env && *env ? env : "/sys/class/powercap";
  spin_load load = {0};
  ht_power_clock real = {real_now, real_sleep, real_load, &load};
  ht_device_power_options o = ht_power_defaults(opt, ht_cpus_usable()); /* load only the CPUs we may use */
  memset(out, 0, sizeof *out);
  ht_status st = find_domains(r);
  if (!st) st = measure(r, &o, clk ? clk : &real, out);
  if (!st) {
    ht_copy_field(out->source, sizeof out->source, "rapl");
    describe(r, out);
  }
  free(r);
  return st;
}
