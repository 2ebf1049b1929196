/* Co-execution objects: the devices of a computation as processing units, the options, planning
 * and running a split call. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coexec/coexec_internal.h"

static const char *const own_keys[] = {"schedule", "replan", "min_chunk", NULL};

static int is_own_key(const char *item) {
  size_t n = strcspn(item, "=,");
  for (int i = 0; own_keys[i]; i++)
    if (strlen(own_keys[i]) == n && !strncmp(item, own_keys[i], n)) return 1;
  return 0;
}

/* The option text in two: co-execution's own keys and the partitioner's. */
static ht_status split_options(const char *text, ht_buf *own, ht_buf *part) {
  for (const char *p = text ? text : ""; *p;) {
    size_t n = strcspn(p, ",");
    ht_buf *b = is_own_key(p) ? own : part;
    ht_buf_appendf(b, "%s%.*s", b->len ? "," : "", (int)n, p);
    p += n + (p[n] == ',');
  }
  return own->failed || part->failed ? ht_error(HT_ERR_NOMEM, "out of memory") : HT_OK;
}

static ht_status read_own(ht_coexec *x, const char *text) {
  ht_options *o;
  ht_status st = ht_options_parse(text, &o);
  if (st) return st;
  const char *schedule = ht_options_str(o, "schedule", "static");
  x->replan = ht_options_double(o, "replan", 0.05);
  x->min_chunk = ht_options_int(o, "min_chunk", 32);
  st = ht_options_check(o, "co-execution", x->c->name);
  if (!st && strcmp(schedule, "static") && strcmp(schedule, "dynamic"))
    st = ht_error(HT_ERR_INVALID, "%s: schedule '%s': expected static or dynamic", x->c->name, schedule);
  if (!st && !(x->replan > 0)) st = ht_error(HT_ERR_INVALID, "%s: replan %g: expected a share above 0", x->c->name, x->replan);
  if (!st && x->min_chunk < 1) st = ht_error(HT_ERR_INVALID, "%s: min_chunk must be 1 or more", x->c->name);
  x->dynamic = !st && !strcmp(schedule, "dynamic");
  ht_options_destroy(o);
  return st;
}

static ht_status set_options(ht_coexec *x, const char *text) {
  ht_buf own = {0}, part = {0};
  ht_status st = split_options(text, &own, &part);
  if (!st) st = read_own(x, own.len ? own.data : "");
  if (!st) st = ht_partition_opts_parse(part.len ? part.data : "", &x->popts);
  ht_buf_free(&own);
  ht_buf_free(&part);
  return st ? ht_error_prefix(st, "%s: options: ", x->c->name) : HT_OK;
}

/* Each device of the computation is a processing unit; its variants there are its versions. */
static ht_status find_pus(ht_coexec *x) {
  ht_computation *c = x->c;
  for (int v = 0; v < c->n_variants; v++) {
    int pu = 0;
    while (pu < x->n_pus && x->pu_ex[pu] != c->v[v].ex) pu++;
    if (pu == x->n_pus) {
      if (pu == HT_COEXEC_MAX_PUS)
        return ht_error(HT_ERR_INVALID, "%s: more than %d devices", c->name, HT_COEXEC_MAX_PUS);
      x->pu_ex[x->n_pus++] = c->v[v].ex;
    }
    if (x->n_versions[pu] == HTX_MAX_VERSIONS)
      return ht_error(HT_ERR_INVALID, "%s: more than %d variants on %s", c->name, HTX_MAX_VERSIONS, c->v[v].device_id);
    x->versions[pu][x->n_versions[pu]++] = v;
  }
  return HT_OK;
}

ht_status ht_coexec_create(ht_computation *c, const ht_split *split, const char *options, ht_coexec **out) {
  if (!c || !out) return ht_error(HT_ERR_INVALID, "ht_coexec_create: bad arguments");
  *out = NULL;
  ht_status st = c->finished ? HT_OK : ht_computation_finish(c);
  if (st) return st;
  ht_coexec *x = calloc(1, sizeof *x);
  if (!x) return ht_error(HT_ERR_NOMEM, "out of memory");
  x->c = c;
  /* Chunk times here include copies and launch latency, so a small chunk is predicted at its true
   * cost: a device is dropped only below 2% of the largest chunk (001's 10% guards against costs
   * its model left out), and the bounds are refined to a common finish time. */
  x->popts = (ht_partition_opts){.eliminate = 0.02, .refine = 1};
  st = htx_split_compile(c, split, &x->split);
  if (st) st = ht_error_prefix(st, "%s: ", c->name);
  else if (!(st = find_pus(x))) st = set_options(x, options);
  if (st) {
    ht_coexec_destroy(x);
    return st;
  }
  *out = x;
  return HT_OK;
}

void ht_coexec_destroy(ht_coexec *x) {
  if (!x) return;
  htx_split_free(&x->split);
  if (x->owns_c) ht_computation_destroy(x->c);
  free(x);
}

ht_computation *ht_coexec_computation(ht_coexec *x) { return x ? x->c : NULL; }

ht_status ht_coexec_set_options(ht_coexec *x, const char *options) {
  if (!x) return ht_error(HT_ERR_INVALID, "ht_coexec_set_options: no co-execution");
  ht_coexec saved = *x; /* a bad option changes nothing */
  ht_status st = set_options(x, options);
  if (st) {
    x->dynamic = saved.dynamic, x->replan = saved.replan, x->min_chunk = saved.min_chunk, x->popts = saved.popts;
    return st;
  }
  memset(x->plans, 0, sizeof x->plans);
  return HT_OK;
}

int ht_coexec_pu_count(const ht_coexec *x) { return x ? x->n_pus : 0; }

int ht_coexec_split_dim(const ht_coexec *x) { return x ? x->split.dim : -1; }

int ht_coexec_pu_of(const ht_coexec *x, int variant) {
  for (int i = 0; x && i < x->n_pus; i++)
    for (int j = 0; j < x->n_versions[i]; j++)
      if (x->versions[i][j] == variant) return i;
  return -1;
}

const char *ht_coexec_pu_device(const ht_coexec *x, int pu) {
  return x && pu >= 0 && pu < x->n_pus ? x->c->v[x->versions[pu][0]].device_id : NULL;
}

ht_status ht_coexec_set_power(ht_coexec *x, const char *device_id, double watts) {
  if (!x || !device_id) return ht_error(HT_ERR_INVALID, "ht_coexec_set_power: bad arguments");
  if (!(watts > 0)) return ht_error(HT_ERR_INVALID, "%s: power of %s: %g W, expected above 0", x->c->name, device_id, watts);
  for (int i = 0; i < x->n_pus; i++)
    if (!strcmp(ht_coexec_pu_device(x, i), device_id)) {
      x->power_w[i] = watts;
      x->has_power = 1;
      for (int k = 0; k < x->n_pus; k++)
        if (!(x->power_w[k] > 0)) x->has_power = 0; /* energy needs every device's power */
      memset(x->plans, 0, sizeof x->plans);
      return HT_OK;
    }
  return ht_error(HT_ERR_INVALID, "%s: no variant runs on device '%s'", x->c->name, device_id);
}

static ht_status check_sizes(ht_coexec *x, const int64_t *sizes, const ht_host_arg *args) {
  if (!sizes) return ht_error(HT_ERR_INVALID, "%s: no sizes", x->c->name);
  ht_status st = htx_check_call(x->c, &x->split, sizes, args);
  return st ? ht_error_prefix(st, "%s: ", x->c->name) : HT_OK;
}

ht_status ht_coexec_plan(ht_coexec *x, const int64_t *sizes, ht_coexec_report *out) {
  if (!x || !out) return ht_error(HT_ERR_INVALID, "ht_coexec_plan: bad arguments");
  memset(out, 0, sizeof *out);
  ht_status st = check_sizes(x, sizes, NULL);
  if (!st && !htx_calibrated(x, sizes))
    st = ht_error(HT_ERR_INVALID, "%s: nothing predicts the time of every variant at these sizes: run it (a dynamic "
                  "schedule measures them) or calibrate each variant",
                  x->c->name);
  return st ? st : htx_plan(x, sizes, out);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

ht_status ht_coexec_run(ht_coexec *x, const int64_t *sizes, const ht_host_arg *args, ht_coexec_report *out) {
  ht_coexec_report local;
  ht_coexec_report *r = out ? out : &local;
  if (!x || !args) return ht_error(HT_ERR_INVALID, "ht_coexec_run: bad arguments");
  memset(r, 0, sizeof *r);
  double t0 = now_s();
  ht_status st = check_sizes(x, sizes, args);
  if (st) return st;
  int dynamic = x->dynamic || !htx_calibrated(x, sizes);
  if (dynamic) st = htx_run_dynamic(x, sizes, args, r);
  else if (!(st = htx_plan(x, sizes, r))) st = htx_run_static(x, sizes, args, r);
  if (!dynamic && !st && r->imbalance > x->replan) htx_plan_forget(x, sizes); /* the times fed back now differ */
  r->wall_s = now_s() - t0;
  return st;
}
