/* The "sim" backend: devices described in a JSON file ($HETUNE_SIM, docs/runtime.md) whose
 * times are modelled, not measured. The code itself runs on the host through a private "c"
 * device, so results are real and verifiable; launches and transfers report the file's model
 * (roofline or time per unit of work, latencies, bandwidths, seeded noise) on a virtual clock,
 * or also sleep for it with "real": true. Two runs of a scenario give the same times. */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/json_text.h"
#include "device/backend.h"
#include "device/sim.h"

typedef struct sim_rate {
  double latency_s, bytes_per_s; /* bytes_per_s 0: the link was not given, transfers take no time */
} sim_rate;

/* A copy of up to step_bytes bytes (all of them when step_bytes is 0) at `below`, a larger one at
 * `above`: a protocol change, such as pinned staging buffers above some size. */
typedef struct sim_link {
  sim_rate below;
  double step_bytes;
  sim_rate above;
} sim_link;

/* From launch after_launches + 1 on, kernel times are multiplied by factor (0: no change). */
typedef struct sim_speed_change {
  double after_launches, factor;
} sim_speed_change;

/* One device of the file. Every number is a double so one table (num_rules) reads and hashes them. */
typedef struct sim_model {
  char name[128];
  double flops_per_s, bytes_per_s, seconds_per_unit; /* 0: not given */
  double launch_latency_s, noise_rsd, seed, power_w, idle_w, memory_bytes;
  double compute_units, max_threads, warp_size, clock_mhz, max_work_group_size, local_mem_bytes;
  sim_link h2d, d2h;
  sim_speed_change speed_change;
  int real;
  int realtime; /* launches take their modelled wall time, asynchronously, and can be stopped */
} sim_model;

typedef struct num_rule {
  const char *key;
  size_t off;  /* of a double in sim_model (or the nested struct being read) */
  double lo;   /* least value... */
  int lo_open; /* ...itself excluded */
  double hi;
  int whole;   /* a whole number */
} num_rule;

#define BIG 9007199254740992.0 /* 2^53: whole numbers above it are not exact in a double */
#define RULE(k, lo, open, hi, whole) {#k, offsetof(sim_model, k), lo, open, hi, whole}
static const num_rule num_rules[] = {
    RULE(flops_per_s, 0, 1, HUGE_VAL, 0),       RULE(bytes_per_s, 0, 1, HUGE_VAL, 0),
    RULE(seconds_per_unit, 0, 1, HUGE_VAL, 0),  RULE(launch_latency_s, 0, 0, HUGE_VAL, 0),
    RULE(noise_rsd, 0, 0, 1, 0),                RULE(seed, 0, 0, BIG, 1),
    RULE(power_w, 0, 0, HUGE_VAL, 0),           RULE(idle_w, 0, 0, HUGE_VAL, 0),
    RULE(memory_bytes, 0, 1, BIG, 1),           RULE(compute_units, 1, 0, 1e9, 1),
    RULE(max_threads, 1, 0, 1e12, 1),           RULE(warp_size, 1, 0, 1e6, 1),
    RULE(clock_mhz, 0, 0, 1e9, 1),              RULE(max_work_group_size, 1, 0, 1e12, 1),
    RULE(local_mem_bytes, 0, 0, BIG, 1),
};
#undef RULE
static const num_rule link_rules[] = {
    {"latency_s", offsetof(sim_rate, latency_s), 0, 0, HUGE_VAL, 0},
    {"bytes_per_s", offsetof(sim_rate, bytes_per_s), 0, 1, HUGE_VAL, 0},
};
static const num_rule step_rule = {"step_bytes", offsetof(sim_link, step_bytes), 0, 1, BIG, 1};
static const num_rule speed_rules[] = {
    {"after_launches", offsetof(sim_speed_change, after_launches), 0, 0, BIG, 1},
    {"factor", offsetof(sim_speed_change, factor), 0, 1, HUGE_VAL, 0},
};
enum { N_NUM = sizeof num_rules / sizeof num_rules[0], N_LINK = sizeof link_rules / sizeof link_rules[0] };

static const char *const device_keys[] = {
    "name",          "_source",     "flops_per_s",   "bytes_per_s",     "seconds_per_unit", "launch_latency_s",
    "h2d",           "d2h",         "noise_rsd",     "seed",            "power_w",          "idle_w",
    "memory_bytes",  "real",        "compute_units", "max_threads",     "warp_size",        "clock_mhz",
    "max_work_group_size", "local_mem_bytes", "speed_change", "realtime", NULL};
static const char *const link_keys[] = {"latency_s", "bytes_per_s", "step_bytes", "above", NULL};
static const char *const rate_keys[] = {"latency_s", "bytes_per_s", NULL};
static const char *const speed_keys[] = {"after_launches", "factor", NULL};
static const char *const top_keys[] = {"devices", "_source", NULL};

/* ---- reading the file ---- */

/* An object of the file being read, for messages that point into it. */
typedef struct sim_obj {
  const char *path, *text; /* the file */
  json_t *obj;
  const char *at;          /* the object's text (its '{') */
  char where[64];          /* "devices[0]", "devices[0].h2d", "devices[0].h2d.above" */
} sim_obj;

/* "path:line:col: where.key: msg", at key's value (want_value) or key, else at the object. */
static ht_status obj_fail(const sim_obj *o, const char *key, int want_value, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static ht_status obj_fail(const sim_obj *o, const char *key, int want_value, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const char *at = key ? ht_json_member(o->at, key, want_value) : NULL;
  return ht_text_fail_at(o->path, o->text, at ? at : o->at, HT_ERR_INVALID, "%s%s%s: %s", o->where, key ? "." : "",
                         key ? key : "", msg);
}

static ht_status read_number(const sim_obj *o, const num_rule *r, void *base) {
  json_t *v = json_object_get(o->obj, r->key);
  if (!v) return HT_OK;
  double x = json_is_number(v) ? json_number_value(v) : NAN;
  int low = r->lo_open ? !(x > r->lo) : !(x >= r->lo);
  if (!isfinite(x) || low || x > r->hi || (r->whole && x != floor(x))) {
    char *shown = json_dumps(v, JSON_ENCODE_ANY);
    char hi[32] = "";
    if (r->hi <= 1e6) snprintf(hi, sizeof hi, " and <= %g", r->hi);
    ht_status st = obj_fail(o, r->key, 1, "expected a %snumber %s %g%s, got %s", r->whole ? "whole " : "",
                            r->lo_open ? ">" : ">=", r->lo, hi, shown ? shown : "?");
    free(shown);
    return st;
  }
  *(double *)((char *)base + r->off) = x;
  return HT_OK;
}

/* The member key of parent as an object of its own (o->obj NULL when absent), its keys checked. */
static ht_status sub_object(const sim_obj *parent, const char *key, const char *const *keys, const char *shape,
                            sim_obj *o) {
  json_t *v = json_object_get(parent->obj, key);
  *o = (sim_obj){parent->path, parent->text, NULL, NULL, ""};
  if (!v) return HT_OK;
  if (!json_is_object(v)) return obj_fail(parent, key, 1, "expected %s", shape);
  o->obj = v;
  o->at = ht_json_member(parent->at, key, 1);
  snprintf(o->where, sizeof o->where, "%.40s.%.16s", parent->where, key);
  return ht_json_check_keys(o->path, o->text, v, o->at, o->where, keys);
}

/* {"latency_s": s, "bytes_per_s": b} of o, bytes_per_s required. */
static ht_status read_rate(const sim_obj *o, sim_rate *rate) {
  ht_status st = HT_OK;
  for (int i = 0; i < N_LINK && !st; i++) st = read_number(o, &link_rules[i], rate);
  if (!st && !json_object_get(o->obj, "bytes_per_s")) st = obj_fail(o, NULL, 0, "\"bytes_per_s\" is required");
  return st;
}

static ht_status read_link(const sim_obj *dev, const char *key, sim_link *link) {
  static const char shape[] = "{\"latency_s\": seconds, \"bytes_per_s\": bandwidth}";
  sim_obj o, above;
  ht_status st = sub_object(dev, key, link_keys, shape, &o);
  if (st || !o.obj) return st;
  st = read_rate(&o, &link->below);
  if (!st) st = read_number(&o, &step_rule, link);
  if (!st) st = sub_object(&o, "above", rate_keys, shape, &above);
  if (!st && above.obj) st = read_rate(&above, &link->above);
  if (!st && !link->step_bytes != !above.obj)
    st = obj_fail(&o, link->step_bytes ? "step_bytes" : "above", 0,
                  "\"step_bytes\" and \"above\" go together: copies of more than step_bytes bytes use above");
  return st;
}

static ht_status read_speed_change(const sim_obj *dev, sim_speed_change *sc) {
  sim_obj o;
  ht_status st = sub_object(dev, "speed_change", speed_keys, "{\"after_launches\": N, \"factor\": F}", &o);
  for (int i = 0; i < 2 && !st && o.obj; i++) {
    if (!json_object_get(o.obj, speed_rules[i].key))
      return obj_fail(&o, NULL, 0, "\"%s\" is required", speed_rules[i].key);
    st = read_number(&o, &speed_rules[i], sc);
  }
  return st;
}

static ht_status read_strings(const sim_obj *o, sim_model *m) {
  json_t *name = json_object_get(o->obj, "name"), *src = json_object_get(o->obj, "_source");
  json_t *real = json_object_get(o->obj, "real"), *realtime = json_object_get(o->obj, "realtime");
  if (!name) return obj_fail(o, NULL, 0, "\"name\" is required");
  if (!json_is_string(name) || !json_string_length(name) || json_string_length(name) >= sizeof m->name)
    return obj_fail(o, "name", 1, "expected a name of 1 to %zu characters", sizeof m->name - 1);
  ht_copy_field(m->name, sizeof m->name, json_string_value(name));
  if (src && !json_is_string(src)) return obj_fail(o, "_source", 1, "expected a string (where the figures come from)");
  if (real && !json_is_boolean(real)) return obj_fail(o, "real", 1, "expected true or false");
  if (realtime && !json_is_boolean(realtime)) return obj_fail(o, "realtime", 1, "expected true or false");
  m->realtime = realtime && json_is_true(realtime);
  m->real = (real && json_is_true(real)) || m->realtime; /* a realtime device's transfers take real time too */
  return HT_OK;
}

static ht_status read_device(const sim_obj *o, sim_model *m) {
  memset(m, 0, sizeof *m);
  m->compute_units = m->warp_size = 1;
  m->max_work_group_size = 1024;
  m->local_mem_bytes = 65536;
  ht_status st = ht_json_check_keys(o->path, o->text, o->obj, o->at, o->where, device_keys);
  if (!st) st = read_strings(o, m);
  for (int i = 0; i < N_NUM && !st; i++) st = read_number(o, &num_rules[i], m);
  if (!st) st = read_link(o, "h2d", &m->h2d);
  if (!st) st = read_link(o, "d2h", &m->d2h);
  if (!st) st = read_speed_change(o, &m->speed_change);
  if (st) return st;
  if (!m->flops_per_s && !m->bytes_per_s && !m->seconds_per_unit)
    return obj_fail(o, NULL, 0, "no throughput: give \"flops_per_s\" and/or \"bytes_per_s\" (a roofline), "
                                "or \"seconds_per_unit\"");
  if (!m->memory_bytes) return obj_fail(o, NULL, 0, "\"memory_bytes\" is required");
  if (json_object_get(o->obj, "power_w") && m->idle_w > m->power_w)
    return obj_fail(o, "idle_w", 1, "idle power %g W is above the active power_w %g W", m->idle_w, m->power_w);
  if (!m->max_threads) m->max_threads = m->compute_units * m->max_work_group_size;
  return HT_OK;
}

static ht_status read_devices(const sim_obj *top, sim_model *out, int max, int *n) {
  json_t *list = json_object_get(top->obj, "devices");
  if (!list) return obj_fail(top, NULL, 0, "no \"devices\" list");
  if (!json_is_array(list)) return obj_fail(top, "devices", 1, "expected a list of device objects");
  const char *list_at = ht_json_member(top->at, "devices", 1);
  if ((int)json_array_size(list) > max)
    return obj_fail(top, "devices", 1, "%zu devices, at most %d", json_array_size(list), max);
  for (size_t i = 0; i < json_array_size(list); i++) {
    sim_obj o = {top->path, top->text, json_array_get(list, i), ht_json_element(list_at, i), ""};
    snprintf(o.where, sizeof o.where, "devices[%zu]", i);
    if (!json_is_object(o.obj)) return obj_fail(&o, NULL, 0, "expected a device object");
    ht_status st = read_device(&o, &out[i]);
    if (st) return st;
  }
  *n = (int)json_array_size(list);
  return HT_OK;
}

/* The devices of $HETUNE_SIM, at most max; none when it is unset or empty. */
static ht_status sim_load(sim_model *out, int max, int *n) {
  *n = 0;
  const char *path = getenv("HETUNE_SIM");
  if (!path || !*path) return HT_OK;
  char *text = NULL;
  ht_status st = ht_read_file(path, &text, NULL);
  if (st) return ht_error_prefix(st, "HETUNE_SIM: ");
  json_error_t jerr;
  json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
  if (!root) st = ht_error(HT_ERR_PARSE, "%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
  sim_obj top = {path, text, root, ht_json_skip_ws(text), ""};
  if (!st && !json_is_object(root)) st = ht_text_fail_at(path, text, top.at, HT_ERR_INVALID, "expected {\"devices\": [...]}");
  if (!st) st = ht_json_check_keys(path, text, root, top.at, "", top_keys);
  if (!st) st = read_devices(&top, out, max, n);
  json_decref(root);
  free(text);
  return st;
}

/* ---- device info ---- */

/* A hash of everything the file says of the device: a changed number is another device. */
static uint64_t model_hash(const sim_model *m) {
  uint64_t h = ht_hash_str(m->name, ht_hash_str("sim-model-v1", 0));
  for (int i = 0; i < N_NUM; i++) h = ht_hash64((const char *)m + num_rules[i].off, sizeof(double), h);
  const sim_link *links[] = {&m->h2d, &m->d2h};
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < N_LINK; i++) h = ht_hash64((const char *)&links[k]->below + link_rules[i].off, sizeof(double), h);
  h = ht_hash64(&m->real, sizeof m->real, h);
  /* Keys added later are hashed only when given, so the devices of older files keep their
   * fingerprints (and their stored results). */
  for (int k = 0; k < 2; k++)
    if (links[k]->step_bytes) {
      h = ht_hash64(&links[k]->step_bytes, sizeof(double), ht_hash64(&k, sizeof k, h));
      h = ht_hash64(&links[k]->above, sizeof links[k]->above, h);
    }
  if (m->speed_change.factor) h = ht_hash64(&m->speed_change, sizeof m->speed_change, ht_hash_str("speed", h));
  if (m->realtime) h = ht_hash_str("realtime", h);
  return h;
}

static void fill_info(const sim_model *m, int index, ht_device_info *d) {
  memset(d, 0, sizeof *d);
  ht_copy_field(d->backend, sizeof d->backend, "sim");
  snprintf(d->id, sizeof d->id, "sim:%d", index);
  ht_copy_field(d->name, sizeof d->name, m->name);
  ht_copy_field(d->vendor, sizeof d->vendor, "hetune sim");
  char hex[17];
  ht_hash_hex(model_hash(m), hex);
  snprintf(d->driver_version, sizeof d->driver_version, "model %s", hex);
  ht_copy_field(d->runtime_version, sizeof d->runtime_version, m->real ? "real time" : "virtual clock");
  ht_copy_field(d->compiler_version, sizeof d->compiler_version, "the host's C compiler (c:0)");
  d->compute_units = (int)m->compute_units;
  d->max_threads = m->max_threads > 2e9 ? 2000000000 : (int)m->max_threads;
  d->warp_size = (int)m->warp_size;
  d->clock_mhz = (int)m->clock_mhz;
  d->global_mem_bytes = d->max_alloc_bytes = (uint64_t)m->memory_bytes;
  d->local_mem_bytes = (uint64_t)m->local_mem_bytes;
  d->max_work_group_size = (uint64_t)m->max_work_group_size;
  for (int i = 0; i < 3; i++) d->max_work_item_sizes[i] = d->max_work_group_size;
  ht_device_info_fingerprint(d);
}

enum { MAX_SIM_DEVICES = 64 };

static ht_status sim_probe(ht_device_info *out, int max, int *n) {
  *n = 0;
  sim_model *m = calloc(MAX_SIM_DEVICES, sizeof *m);
  if (!m) return ht_error(HT_ERR_NOMEM, "out of memory");
  int k = 0;
  ht_status st = sim_load(m, MAX_SIM_DEVICES, &k);
  for (int i = 0; !st && i < k && i < max; i++) fill_info(&m[i], i, &out[(*n)++]);
  free(m);
  return st;
}

/* ---- open devices ---- */

typedef struct sim_dev {
  sim_model m;
  ht_device *host;      /* the private c device that compiles and runs the code */
  pthread_mutex_t lock; /* guards what follows: launches on one device may come from several threads */
  uint64_t counter;     /* launches so far: with the seed, what draws each launch's noise */
  double speed;         /* ht_sim_set_speed's factor on kernel times (1 at open) */
  double allocated;     /* bytes of live buffers */
  ht_sim_usage usage;
} sim_dev;

typedef struct sim_buffer {
  ht_buffer *host;
  size_t bytes;
} sim_buffer;

static ht_status sim_open(ht_device *dev, int index) {
  sim_model *all = calloc(MAX_SIM_DEVICES, sizeof *all);
  sim_dev *d = calloc(1, sizeof *d);
  int n = 0;
  ht_status st = all && d ? sim_load(all, MAX_SIM_DEVICES, &n) : ht_error(HT_ERR_NOMEM, "out of memory");
  if (!st && (index < 0 || index >= n)) st = ht_error(HT_ERR_NOTFOUND, "no sim device %d ($HETUNE_SIM has %d)", index, n);
  if (!st) st = ht_device_open("c:0", &d->host);
  if (!st) {
    d->m = all[index];
    d->usage.power_w = d->m.power_w;
    d->usage.idle_w = d->m.idle_w;
    d->speed = 1;
    pthread_mutex_init(&d->lock, NULL);
    dev->impl = d;
    if (d->m.realtime) dev->caps_extra = HT_CAP_ASYNC | HT_CAP_CANCEL;
  } else {
    free(d);
  }
  free(all);
  return st;
}

static void sim_close(ht_device *dev) {
  sim_dev *d = dev->impl;
  if (!d) return;
  ht_device_close(d->host);
  pthread_mutex_destroy(&d->lock);
  free(d);
  dev->impl = NULL;
}

/* dev's state, or NULL with an HT_ERR_INVALID error when dev is not an open sim device. */
static sim_dev *sim_of(const ht_device *dev) {
  if (dev && dev->ops && strcmp(dev->ops->name, "sim") == 0 && dev->impl) return dev->impl;
  ht_error(HT_ERR_INVALID, "%s is not a simulated device", dev ? dev->info.id : "(null)");
  return NULL;
}

ht_status ht_sim_usage_get(const ht_device *dev, ht_sim_usage *out) {
  sim_dev *d = sim_of(dev);
  if (!d) return HT_ERR_INVALID;
  pthread_mutex_lock(&d->lock);
  *out = d->usage;
  pthread_mutex_unlock(&d->lock);
  return HT_OK;
}

ht_status ht_sim_set_speed(ht_device *dev, double factor) {
  sim_dev *d = sim_of(dev);
  if (!d) return HT_ERR_INVALID;
  if (!(factor > 0) || !isfinite(factor))
    return ht_error(HT_ERR_INVALID, "%s: speed factor %g: expected a finite number > 0", dev->info.id, factor);
  pthread_mutex_lock(&d->lock);
  d->speed = factor;
  pthread_mutex_unlock(&d->lock);
  return HT_OK;
}

/* ---- the model ---- */

/* The launch's work in the units of seconds_per_unit: flops, else bytes, else work-items. */
static double work_units(const ht_launch *l) {
  if (l->work_flops > 0) return l->work_flops;
  if (l->work_bytes > 0) return l->work_bytes;
  double items = 1;
  for (int i = 0; i < l->dims && i < 3; i++) items *= (double)l->global[i];
  return items;
}

/* Kernel time without noise: latency plus the roofline of the launch's work where the device has
 * a peak for what the launch carries, else seconds_per_unit per unit of work. */
static ht_status model_kernel(const ht_device *dev, const sim_model *m, const ht_launch *l, double *t) {
  int flops = l->work_flops > 0 && m->flops_per_s > 0, bytes = l->work_bytes > 0 && m->bytes_per_s > 0;
  if (flops || bytes) {
    double tf = flops ? l->work_flops / m->flops_per_s : 0, tb = bytes ? l->work_bytes / m->bytes_per_s : 0;
    *t = m->launch_latency_s + (tf > tb ? tf : tb);
    return HT_OK;
  }
  if (m->seconds_per_unit > 0) {
    *t = m->launch_latency_s + m->seconds_per_unit * work_units(l);
    return HT_OK;
  }
  return ht_error(HT_ERR_RUNTIME,
                  "%s (%s) has only a roofline (flops_per_s, bytes_per_s) and the launch carries no work it covers "
                  "(flops %g, bytes %g): give the spec a \"work\" entry or the device \"seconds_per_unit\"",
                  dev->info.id, m->name, l->work_flops, l->work_bytes);
}

/* Launch n's noise: a normal draw of relative deviation noise_rsd from (seed, n), so a scenario
 * replayed launch by launch draws the same. Kept above 5% of the time: times stay positive. */
static double noise_factor(const sim_model *m, uint64_t n) {
  if (m->noise_rsd <= 0) return 1;
  ht_rng r;
  ht_rng_seed(&r, ht_hash64(&n, sizeof n, (uint64_t)m->seed ^ 0x5349cafe0001ULL));
  double u1 = 1.0 - ht_rng_uniform(&r), u2 = ht_rng_uniform(&r);
  double f = 1 + m->noise_rsd * sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
  return f < 0.05 ? 0.05 : f;
}

static double transfer_time(const sim_link *link, size_t bytes) {
  const sim_rate *r = link->step_bytes && (double)bytes > link->step_bytes ? &link->above : &link->below;
  return r->bytes_per_s > 0 ? r->latency_s + (double)bytes / r->bytes_per_s : 0;
}

/* Launch n's (0-based) factor on kernel time: the file's speed change from launch after_launches
 * + 1 on, times ht_sim_set_speed's. Depends only on n and calls made, so runs stay reproducible. */
static double speed_factor(const sim_dev *d, uint64_t n) {
  const sim_speed_change *sc = &d->m.speed_change;
  return d->speed * (sc->factor && (double)n >= sc->after_launches ? sc->factor : 1);
}

/* "real": true: waits until the modelled time has passed since t0 (the host's own work counts). */
static void sleep_until(const sim_model *m, double t0, double modelled) {
  if (!m->real) return;
  for (double left; (left = t0 + modelled - ht_now()) > 0;) {
    struct timespec ts = {(time_t)left, (long)((left - floor(left)) * 1e9)};
    nanosleep(&ts, NULL);
  }
}

/* ---- compile and launch: the host's c device does the work ---- */

static ht_status sim_compile(ht_device *dev, const ht_source *src, const ht_defines *defs, ht_program **out,
                             ht_compile_info *info) {
  sim_dev *d = dev->impl;
  if (info) memset(info, 0, sizeof *info);
  if (src && src->lang != HT_LANG_C)
    return ht_error(HT_ERR_COMPILE, "%s: %s is %s: a simulated device runs C sources on the host", dev->info.id,
                    src->path ? src->path : "the source", ht_language_name(src->lang));
  return ht_backend_c.compile(d->host, src, defs, out, info);
}

static void sim_program_free(ht_device *dev, ht_program *p) {
  sim_dev *d = dev->impl;
  ht_backend_c.program_free(d->host, p);
}

/* The launch's modelled time (noise-free) and l's arguments with the host's buffers in *args. */
static ht_status host_launch(ht_device *dev, const ht_launch *l, double *t, ht_arg **args, ht_launch *hl) {
  sim_dev *d = dev->impl;
  ht_status st = ht_launch_check(l);
  if (!st) st = model_kernel(dev, &d->m, l, t);
  *args = st ? NULL : calloc((size_t)l->n_args + 1, sizeof **args);
  if (!st && !*args) st = ht_error(HT_ERR_NOMEM, "out of memory");
  if (st) return st;
  for (int i = 0; i < l->n_args; i++) { /* the same arguments, with the host's buffers */
    (*args)[i] = l->args[i];
    if ((*args)[i].is_buffer) (*args)[i].buf = ((sim_buffer *)(*args)[i].buf)->host;
  }
  *hl = *l;
  hl->args = *args;
  return HT_OK;
}

/* Counts a launch of modelled time t (before noise and speed); returns its time. */
static double account_launch(sim_dev *d, double t) {
  pthread_mutex_lock(&d->lock);
  t *= speed_factor(d, d->counter) * noise_factor(&d->m, d->counter);
  d->counter++;
  d->usage.launches++;
  d->usage.kernel_s += t;
  d->usage.energy_j += t * d->m.power_w;
  pthread_mutex_unlock(&d->lock);
  return t;
}

static ht_status sim_launch(ht_device *dev, ht_program *p, const ht_launch *l, double *kernel_s) {
  sim_dev *d = dev->impl;
  double t = 0;
  ht_arg *args;
  ht_launch hl;
  ht_status st = host_launch(dev, l, &t, &args, &hl);
  if (st) return st;
  double t0 = ht_now();
  st = ht_backend_c.launch(d->host, p, &hl, NULL);
  free(args);
  if (st) return st;
  t = account_launch(d, t);
  sleep_until(&d->m, t0, t);
  if (kernel_s) *kernel_s = t;
  return HT_OK;
}

/* ---- asynchronous launch (realtime devices): the code runs on the host c device's thread, then
 * the launch lasts until its modelled time has passed, unless it is stopped ---- */

typedef struct sim_event {
  ht_event *host;  /* the c launch (NULL: a launch already finished, on devices not realtime) */
  ht_arg *args;
  double t0, t;    /* start, modelled seconds */
  int stop;        /* set (atomically) by sim_cancel */
} sim_event;

static ht_status sim_launch_async(ht_device *dev, ht_program *p, const ht_launch *l, ht_event **out) {
  sim_dev *d = dev->impl;
  sim_event *e = calloc(1, sizeof *e);
  if (!e) return ht_error(HT_ERR_NOMEM, "out of memory");
  ht_status st;
  if (!d->m.realtime) { /* as the synchronous launch: run to the end now */
    st = sim_launch(dev, p, l, &e->t);
  } else {
    ht_launch hl;
    st = host_launch(dev, l, &e->t, &e->args, &hl);
    e->t0 = ht_now();
    if (!st) st = ht_device_launch_async(d->host, p, &hl, &e->host);
    if (!st) e->t = account_launch(d, e->t);
  }
  if (st) {
    free(e->args);
    free(e);
    return st;
  }
  *out = (ht_event *)e;
  return HT_OK;
}

static int sim_poll(ht_device *dev, ht_event *ev) {
  sim_dev *d = dev->impl;
  sim_event *e = (sim_event *)ev;
  if (!e->host) return 1;
  if (!ht_device_poll(d->host, e->host)) return 0;
  return __atomic_load_n(&e->stop, __ATOMIC_ACQUIRE) || ht_now() >= e->t0 + e->t;
}

static ht_status sim_wait(ht_device *dev, ht_event *ev, double *kernel_s) {
  sim_dev *d = dev->impl;
  sim_event *e = (sim_event *)ev;
  ht_status st = e->host ? ht_device_wait(d->host, e->host, NULL) : HT_OK;
  double left, t = e->t;
  /* the rest of the modelled time, in slices of at most 1 ms so that a stop is seen soon */
  while (e->host && !__atomic_load_n(&e->stop, __ATOMIC_ACQUIRE) && (left = e->t0 + e->t - ht_now()) > 0) {
    double nap = left < 1e-3 ? left : 1e-3;
    nanosleep(&(struct timespec){0, (long)(nap * 1e9)}, NULL);
  }
  if (e->host && __atomic_load_n(&e->stop, __ATOMIC_ACQUIRE) && ht_now() - e->t0 < t) t = ht_now() - e->t0;
  free(e->args);
  free(e);
  if (kernel_s) *kernel_s = t;
  return st;
}

static ht_status sim_cancel(ht_device *dev, ht_event *ev) {
  sim_dev *d = dev->impl;
  sim_event *e = (sim_event *)ev;
  __atomic_store_n(&e->stop, 1, __ATOMIC_RELEASE);
  return e->host ? ht_device_cancel(d->host, e->host) : HT_OK;
}

/* ---- buffers: the host's, counted against memory_bytes ---- */

static ht_status sim_buffer_new(ht_device *dev, size_t bytes, ht_buffer **out) {
  sim_dev *d = dev->impl;
  sim_buffer *b = calloc(1, sizeof *b);
  if (!b) return ht_error(HT_ERR_NOMEM, "out of memory");
  pthread_mutex_lock(&d->lock);
  double used = d->allocated;
  int fits = used + (double)bytes <= d->m.memory_bytes;
  if (fits) d->allocated += (double)bytes;
  pthread_mutex_unlock(&d->lock);
  if (!fits) {
    free(b);
    return ht_error(HT_ERR_DEVICE, "%s (%s): out of device memory: %zu bytes asked, %.0f of its %.0f bytes in use",
                    dev->info.id, d->m.name, bytes, used, d->m.memory_bytes);
  }
  ht_status st = ht_backend_c.buffer_new(d->host, bytes, &b->host);
  if (st) {
    pthread_mutex_lock(&d->lock);
    d->allocated -= (double)bytes;
    pthread_mutex_unlock(&d->lock);
    free(b);
    return st;
  }
  b->bytes = bytes;
  *out = (ht_buffer *)b;
  return HT_OK;
}

static void sim_buffer_free(ht_device *dev, ht_buffer *buf) {
  sim_dev *d = dev->impl;
  sim_buffer *b = (sim_buffer *)buf;
  if (!b) return;
  ht_backend_c.buffer_free(d->host, b->host);
  pthread_mutex_lock(&d->lock);
  d->allocated -= (double)b->bytes;
  pthread_mutex_unlock(&d->lock);
  free(b);
}

/* Counts a transfer of bytes over link, started at t0, and sleeps for it when real. */
static void account_transfer(sim_dev *d, const sim_link *link, size_t bytes, double t0, double *seconds) {
  double t = transfer_time(link, bytes);
  pthread_mutex_lock(&d->lock);
  d->usage.transfers++;
  d->usage.transfer_s += t;
  d->usage.energy_j += t * d->m.idle_w;
  pthread_mutex_unlock(&d->lock);
  sleep_until(&d->m, t0, t);
  if (seconds) *seconds = t;
}

static ht_status sim_buffer_write(ht_device *dev, ht_buffer *buf, const void *host, size_t bytes, double *seconds) {
  sim_dev *d = dev->impl;
  double t0 = ht_now();
  ht_status st = buf ? ht_backend_c.buffer_write(d->host, ((sim_buffer *)buf)->host, host, bytes, NULL)
                     : ht_error(HT_ERR_INVALID, "no buffer");
  if (!st) account_transfer(d, &d->m.h2d, bytes, t0, seconds);
  return st;
}

static ht_status sim_buffer_read(ht_device *dev, ht_buffer *buf, void *host, size_t bytes, double *seconds) {
  sim_dev *d = dev->impl;
  double t0 = ht_now();
  ht_status st = buf ? ht_backend_c.buffer_read(d->host, ((sim_buffer *)buf)->host, host, bytes, NULL)
                     : ht_error(HT_ERR_INVALID, "no buffer");
  if (!st) account_transfer(d, &d->m.d2h, bytes, t0, seconds);
  return st;
}

/* Copies of part of a buffer (a split call's own rows): the host's, timed as copies of that size. */
static ht_status sim_buffer_write_at(ht_device *dev, ht_buffer *buf, size_t offset, const void *host, size_t bytes,
                                     double *seconds) {
  sim_dev *d = dev->impl;
  double t0 = ht_now();
  ht_status st = buf ? ht_backend_c.buffer_write_at(d->host, ((sim_buffer *)buf)->host, offset, host, bytes, NULL)
                     : ht_error(HT_ERR_INVALID, "no buffer");
  if (!st) account_transfer(d, &d->m.h2d, bytes, t0, seconds);
  return st;
}

static ht_status sim_buffer_read_at(ht_device *dev, ht_buffer *buf, size_t offset, void *host, size_t bytes,
                                    double *seconds) {
  sim_dev *d = dev->impl;
  double t0 = ht_now();
  ht_status st = buf ? ht_backend_c.buffer_read_at(d->host, ((sim_buffer *)buf)->host, offset, host, bytes, NULL)
                     : ht_error(HT_ERR_INVALID, "no buffer");
  if (!st) account_transfer(d, &d->m.d2h, bytes, t0, seconds);
  return st;
}

const ht_backend_ops ht_backend_sim = {
    .name = "sim",
    .probe = sim_probe,
    .open = sim_open,
    .close = sim_close,
    .compile = sim_compile,
    .program_free = sim_program_free,
    .launch = sim_launch,
    .buffer_new = sim_buffer_new,
    .buffer_write = sim_buffer_write,
    .buffer_read = sim_buffer_read,
    .buffer_write_at = sim_buffer_write_at,
    .buffer_read_at = sim_buffer_read_at,
    .buffer_free = sim_buffer_free,
    .caps = HT_CAP_SIMULATED, /* a realtime device adds HT_CAP_ASYNC | HT_CAP_CANCEL (caps_extra) */
    .launch_async = sim_launch_async,
    .wait = sim_wait,
    .poll = sim_poll,
    .cancel = sim_cancel,
};
