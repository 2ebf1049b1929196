/* hetune beside StarPU 1.3 on one vector operation, c = a + b on float32 (examples/vadd), in one
 * process on the same buffers and sizes. StarPU runs a codelet with a CPU implementation and an
 * OpenCL one (the same examples/vadd/vadd.cl, same WG/WPT) under each policy (dmda, dmdas, eager),
 * with a history performance model calibrated first on every worker; hetune runs the vadd_c and
 * vadd_opencl variants directly (ht_variant_run) and through a computation of both
 * (ht_computation_run). Each time is one call as the application sees it: from submission until c
 * is back in the caller's buffer, median over repeated calls. Prints a markdown table.
 *
 * StarPU gets a private STARPU_HOME under /tmp (removed at the end) so ~/.starpu is never touched,
 * STARPU_SILENT=1, and STARPU_OPENCL_ON_CPUS=1 so that PoCL's CPU device becomes an OpenCL worker.
 * Usage: bench_starpu --help. Exits non-zero when any call fails or computes a wrong c. */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <starpu.h>

#include "hetune/hetune.h"

#define VADD HT_SOURCE_DIR "/examples/vadd/"
#define CAL_RUNS 12 /* per worker (or variant) and size: StarPU trusts a history entry after 10 */
#define CAL_ROUNDS 5
#define WARM_RUNS 5
#define MAX_POLICIES 8
#define MAX_BLOCKS 64
#define MAX_REPS 1001
#define MAX_VARIANTS 8

typedef struct variant_opt {
  char device[32], config[128], label[100];
} variant_opt;

typedef struct opts {
  int lo, hi;            /* sizes 2^lo .. 2^hi elements */
  int npolicies;
  char *policies[MAX_POLICIES];
  int blocks;            /* StarPU tasks per call, each on an equal part of the vectors */
  int ncpu, nopencl;     /* StarPU workers */
  int keep_inputs;       /* 1: StarPU may keep a and b on its OpenCL device between calls */
  char cl_config[128];   /* StarPU's OpenCL kernel */
  int nvariants;
  variant_opt variants[MAX_VARIANTS];
} opts;

typedef struct host {
  float *a, *b, *c;
} host;

typedef struct stat_row {
  double ms;
  long on_cpu, on_ocl; /* StarPU: the tasks that ran on each kind of worker */
  char chose[128];     /* hetune dispatch: the variant it ran most, and how often when not always */
} stat_row;

static int fail(const char *what, const char *msg) {
  fprintf(stderr, "bench_starpu: %s: %s\n", what, msg);
  return 1;
}

/* Calls per size: many at small sizes for a steady median, at least MIN_REPS, and no more once a
 * column has had BUDGET_S (a call slowed by a busy machine must not stall the run). */
#define MIN_REPS 15
#define BUDGET_S 1.0
static int more_reps(int done, size_t n, double start) {
  size_t want = ((size_t)1 << 24) / n;
  if (done < MIN_REPS) return 1;
  return done < MAX_REPS && (size_t)done < want && ht_now() - start < BUDGET_S;
}

/* Zeroes c, so an element a call forgot to write shows up in the check. */
static void clear_c(host *h, size_t n) { memset(h->c, 0, n * sizeof *h->c); }

static int check_c(const host *h, size_t n, const char *who) {
  for (size_t i = 0; i < n; i++)
    if (h->c[i] != h->a[i] + h->b[i]) {
      fprintf(stderr, "bench_starpu: %s at N=%zu: c[%zu] = %g, expected %g\n", who, n, i, h->c[i],
              h->a[i] + h->b[i]);
      return 1;
    }
  return 0;
}

/* ---------------------------------------------------------------- StarPU ---- */

static struct starpu_opencl_program sp_program;
static cl_kernel sp_kernels[STARPU_MAXOPENCLDEVS];
static int sp_wg, sp_wpt;
static atomic_long sp_ran_cpu, sp_ran_ocl;
static atomic_int sp_ocl_error; /* the first OpenCL error code a task met */

static void sp_cpu_vadd(void *buffers[], void *arg) {
  (void)arg;
  float *restrict c = (float *)STARPU_VECTOR_GET_PTR(buffers[0]);
  const float *restrict a = (const float *)STARPU_VECTOR_GET_PTR(buffers[1]);
  const float *restrict b = (const float *)STARPU_VECTOR_GET_PTR(buffers[2]);
  unsigned n = STARPU_VECTOR_GET_NX(buffers[0]);
  for (unsigned i = 0; i < n; i++) c[i] = a[i] + b[i];
  atomic_fetch_add(&sp_ran_cpu, 1);
}

static void sp_ocl_error_set(cl_int err) {
  int zero = 0;
  atomic_compare_exchange_strong(&sp_ocl_error, &zero, (int)err);
}

/* The kernel is made once per device and kept: one worker thread drives each device. */
static void sp_ocl_vadd(void *buffers[], void *arg) {
  (void)arg;
  int devid = starpu_worker_get_devid(starpu_worker_get_id());
  cl_command_queue queue;
  starpu_opencl_get_queue(devid, &queue);
  if (!sp_kernels[devid] && starpu_opencl_load_kernel(&sp_kernels[devid], &queue, &sp_program, "vadd", devid))
    return sp_ocl_error_set(CL_INVALID_KERNEL);
  cl_kernel k = sp_kernels[devid];
  cl_mem mem[3];
  for (int i = 0; i < 3; i++) {
    mem[i] = (cl_mem)STARPU_VECTOR_GET_DEV_HANDLE(buffers[i]);
    if (STARPU_VECTOR_GET_OFFSET(buffers[i])) return sp_ocl_error_set(CL_INVALID_VALUE); /* vadd.cl has none */
  }
  cl_int n = (cl_int)STARPU_VECTOR_GET_NX(buffers[0]);
  size_t local = (size_t)sp_wg, global = ((size_t)n + (size_t)(sp_wg * sp_wpt) - 1) / (size_t)(sp_wg * sp_wpt) * local;
  cl_int err = CL_SUCCESS;
  for (cl_uint i = 0; i < 3 && err == CL_SUCCESS; i++) err = clSetKernelArg(k, i, sizeof mem[i], &mem[i]);
  if (err == CL_SUCCESS) err = clSetKernelArg(k, 3, sizeof n, &n);
  if (err == CL_SUCCESS) err = clEnqueueNDRangeKernel(queue, k, 1, NULL, &global, &local, 0, NULL, NULL);
  if (err == CL_SUCCESS) err = clFinish(queue); /* a synchronous codelet: StarPU times it until here */
  if (err != CL_SUCCESS) return sp_ocl_error_set(err);
  atomic_fetch_add(&sp_ran_ocl, 1);
}

static struct starpu_perfmodel sp_model = {.type = STARPU_HISTORY_BASED, .symbol = "hetune_bench_vadd"};
static struct starpu_codelet sp_codelet = {
    .cpu_funcs = {sp_cpu_vadd},
    .opencl_funcs = {sp_ocl_vadd},
    .nbuffers = 3,
    .modes = {STARPU_W, STARPU_R, STARPU_R},
    .model = &sp_model,
    .name = "vadd",
};

/* "WG=64,WPT=4" -> "-DWG=64 -DWPT=4", the defines hetune's OpenCL backend passes too. */
static void config_defines(const char *config, char *out, size_t len) {
  size_t k = (size_t)snprintf(out, len, "-D");
  for (const char *p = config; *p && k + 4 < len; p++) {
    if (*p == ',') k += (size_t)snprintf(out + k, len - k, " -D");
    else out[k++] = *p;
  }
  out[k] = '\0';
}

static int config_value(const char *config, const char *name) {
  const char *p = strstr(config, name);
  return p ? atoi(p + strlen(name)) : 0;
}

static int sp_start(const opts *o, const char *policy, int calibrate) {
  struct starpu_conf conf;
  starpu_conf_init(&conf);
  conf.precedence_over_environment_variables = 1;
  conf.sched_policy_name = policy;
  conf.ncpus = o->ncpu;
  conf.nopencl = o->nopencl;
  conf.ncuda = 0;
  conf.calibrate = calibrate;
  int r = starpu_init(&conf);
  if (r) return fail("starpu_init", r == -ENODEV ? "no worker available" : strerror(-r));
  if (o->nopencl == 0) return 0;
  char defines[256];
  config_defines(o->cl_config, defines, sizeof defines);
  sp_wg = config_value(o->cl_config, "WG=");
  sp_wpt = config_value(o->cl_config, "WPT=");
  if (sp_wg <= 0 || sp_wpt <= 0) return starpu_shutdown(), fail("--cl-config", "needs WG=<n>,WPT=<n>");
  if (starpu_opencl_load_opencl_from_file(VADD "vadd.cl", &sp_program, defines))
    return starpu_shutdown(), fail(VADD "vadd.cl", "StarPU could not build it");
  return 0;
}

static void sp_stop(const opts *o) {
  for (int d = 0; d < STARPU_MAXOPENCLDEVS; d++)
    if (sp_kernels[d]) starpu_opencl_release_kernel(sp_kernels[d]), sp_kernels[d] = NULL;
  if (o->nopencl) starpu_opencl_unload_opencl(&sp_program);
  starpu_shutdown();
}

/* c, a, b of each block, registered once per measurement; the tasks are submitted repeatedly. */
typedef struct sp_data {
  starpu_data_handle_t h[3][MAX_BLOCKS];
  int blocks;
} sp_data;

static void sp_register(sp_data *d, host *h, size_t n, int blocks) {
  float *arr[3] = {h->c, h->a, h->b};
  size_t per = n / (size_t)blocks;
  d->blocks = blocks;
  for (int k = 0; k < blocks; k++) {
    size_t off = (size_t)k * per, len = k == blocks - 1 ? n - off : per;
    for (int j = 0; j < 3; j++)
      starpu_vector_data_register(&d->h[j][k], STARPU_MAIN_RAM, (uintptr_t)(arr[j] + off), (uint32_t)len,
                                  sizeof(float));
  }
}

static void sp_unregister(sp_data *d) {
  for (int k = 0; k < d->blocks; k++)
    for (int j = 0; j < 3; j++) starpu_data_unregister(d->h[j][k]);
}

/* One call: the inputs written by the host (unless kept), the tasks, c back on the host. worker
 * >= 0 forces every task there (calibration). Returns seconds, or -1. */
static double sp_call(sp_data *d, const opts *o, int worker) {
  double t0 = ht_now();
  for (int k = 0; !o->keep_inputs && k < d->blocks; k++)
    for (int j = 1; j < 3; j++) {
      starpu_data_acquire(d->h[j][k], STARPU_W); /* invalidates the device copies, moves nothing */
      starpu_data_release(d->h[j][k]);
    }
  for (int k = 0; k < d->blocks; k++) {
    struct starpu_task *t = starpu_task_create();
    t->cl = &sp_codelet;
    for (int j = 0; j < 3; j++) t->handles[j] = d->h[j][k];
    if (worker >= 0) t->execute_on_a_specific_worker = 1, t->workerid = (unsigned)worker;
    if (starpu_task_submit(t)) return fail("starpu_task_submit", "refused"), -1;
  }
  for (int k = 0; k < d->blocks; k++) {
    starpu_data_acquire(d->h[0][k], STARPU_R);
    starpu_data_release(d->h[0][k]);
  }
  return atomic_load(&sp_ocl_error) ? -1 : ht_now() - t0;
}

/* What StarPU's model predicts for one task of the first block on each worker, in ms (NAN: not
 * calibrated); returns how many workers have no prediction. */
static int sp_model_ms(sp_data *d, double *ms) {
  struct starpu_task *t = starpu_task_create();
  t->cl = &sp_codelet;
  for (int j = 0; j < 3; j++) t->handles[j] = d->h[j][0];
  t->destroy = 0;
  int missing = 0;
  for (unsigned w = 0; w < starpu_worker_get_count(); w++) {
    ms[w] = starpu_task_expected_length(t, starpu_worker_get_perf_archtype((int)w, 0), 0) / 1000;
    missing += isnan(ms[w]);
  }
  starpu_task_destroy(t);
  return missing;
}

static void sp_print_model(const double *ms, size_t n, int blocks, int rounds) {
  fprintf(stderr, "StarPU model after %d round%s, N=%zu, one task of %zu:", rounds, rounds > 1 ? "s" : "", n,
          n / (size_t)blocks);
  for (unsigned w = 0; w < starpu_worker_get_count(); w++) {
    char name[64];
    starpu_worker_get_name((int)w, name, sizeof name);
    fprintf(stderr, "  %s %.3g ms", name, ms[w]);
  }
  fprintf(stderr, "\n");
}

/* At every size, every worker runs CAL_RUNS calls under STARPU_CALIBRATE=1, again (up to
 * CAL_ROUNDS) while a worker has no prediction: StarPU drops a history entry whose samples deviate
 * by more than 50%, which a busy machine causes. The model is written to the private STARPU_HOME
 * at shutdown and read by every later session. */
static int sp_calibrate(const opts *o, host *h, char workers[64]) {
  if (sp_start(o, "dmda", 1)) return 1;
  snprintf(workers, 64, "%d CPU + %d OpenCL workers", starpu_worker_get_count_by_type(STARPU_CPU_WORKER),
           starpu_worker_get_count_by_type(STARPU_OPENCL_WORKER));
  int bad = 0;
  for (int e = o->lo; e <= o->hi && !bad; e++) {
    size_t n = (size_t)1 << e;
    double ms[STARPU_NMAXWORKERS];
    int rounds = 0;
    sp_data d;
    sp_register(&d, h, n, o->blocks);
    for (; !bad && rounds < CAL_ROUNDS && (rounds == 0 || sp_model_ms(&d, ms)); rounds++)
      for (unsigned w = 0; w < starpu_worker_get_count() && !bad; w++)
        for (int i = 0; i < CAL_RUNS && !bad; i++) bad = sp_call(&d, o, (int)w) < 0;
    if (!bad) sp_model_ms(&d, ms), sp_print_model(ms, n, o->blocks, rounds);
    sp_unregister(&d);
  }
  sp_stop(o);
  return bad ? fail("StarPU calibration", "a task failed") : 0;
}

/* One policy at one size, in a StarPU session of its own. */
static int sp_measure(const opts *o, const char *policy, host *h, size_t n, stat_row *row) {
  if (sp_start(o, policy, 0)) return 1;
  static double t[MAX_REPS];
  int reps = 0, bad = 0;
  sp_data d;
  sp_register(&d, h, n, o->blocks);
  for (int i = 0; i < WARM_RUNS && !bad; i++) bad = sp_call(&d, o, -1) < 0;
  for (int k = 0; k < d.blocks; k++) starpu_data_acquire(d.h[0][k], STARPU_W); /* c is StarPU's meanwhile */
  clear_c(h, n);
  for (int k = 0; k < d.blocks; k++) starpu_data_release(d.h[0][k]);
  atomic_store(&sp_ran_cpu, 0);
  atomic_store(&sp_ran_ocl, 0);
  for (double t0 = ht_now(); !bad && more_reps(reps, n, t0); reps++) bad = (t[reps] = sp_call(&d, o, -1)) < 0;
  sp_unregister(&d);
  sp_stop(o);
  if (bad) return fail(policy, "a StarPU task failed");
  row->ms = ht_stat_median(t, reps) * 1e3;
  row->on_cpu = atomic_load(&sp_ran_cpu);
  row->on_ocl = atomic_load(&sp_ran_ocl);
  return check_c(h, n, policy);
}

/* ---------------------------------------------------------------- hetune ---- */

/* The variants hetune runs, each directly and all in one computation. */
typedef struct ht_side {
  int n;
  ht_spec *spec[MAX_VARIANTS];
  ht_exec *ex[MAX_VARIANTS];
  ht_variant *v[MAX_VARIANTS];
  ht_computation *comp; /* the same variants behind dispatch */
} ht_side;

/* vadd_<backend>.json of the device id ("c", "opencl", "opencl:1", "cuda"). */
static int spec_path(const char *device, char *out, size_t len) {
  const char *backends[] = {"opencl", "cuda", "c"};
  for (int i = 0; i < 3; i++)
    if (!strncmp(device, backends[i], strlen(backends[i])))
      return snprintf(out, len, VADD "vadd_%s.json", backends[i]), 0;
  return fail(device, "no vadd spec for this device (c, opencl or cuda)");
}

static int ht_open_side(const opts *o, ht_side *s) {
  for (int i = 0; i < o->nvariants; i++, s->n++) {
    char path[512];
    const char *dev = o->variants[i].device;
    if (spec_path(dev, path, sizeof path)) return 1;
    if (ht_spec_load(path, &s->spec[i]) || ht_exec_open(dev, &s->ex[i]) ||
        ht_variant_create(s->ex[i], s->spec[i], o->variants[i].config, &s->v[i]))
      return fail(o->variants[i].label, ht_last_error());
  }
  return 0;
}

static int ht_open_computation(const opts *o, ht_side *s) {
  if (ht_computation_create("vadd", NULL, &s->comp)) return fail("ht_computation_create", ht_last_error());
  for (int i = 0; i < s->n; i++)
    if (ht_computation_add_variant(s->comp, s->spec[i], o->variants[i].device, o->variants[i].config, NULL))
      return fail(o->variants[i].label, ht_last_error());
  return ht_computation_finish(s->comp) ? fail("ht_computation_finish", ht_last_error()) : 0;
}

static void ht_close_side(ht_side *s) {
  if (s->comp) ht_computation_destroy(s->comp);
  for (int i = 0; i < s->n; i++) {
    if (s->v[i]) ht_variant_destroy(s->v[i]);
    if (s->ex[i]) ht_exec_close(s->ex[i]);
    if (s->spec[i]) ht_spec_destroy(s->spec[i]);
  }
}

static void host_args(host *h, size_t n, ht_host_arg args[4]) {
  memset(args, 0, 4 * sizeof *args);
  args[0] = (ht_host_arg){h->c, n, 0, 0};
  args[1] = (ht_host_arg){h->a, n, 0, 0};
  args[2] = (ht_host_arg){h->b, n, 0, 0};
}

/* One variant called directly: the floor dispatch should approach. */
static int ht_measure_direct(ht_variant *v, const char *name, host *h, size_t n, stat_row *row) {
  static double t[MAX_REPS];
  int64_t sizes[1] = {(int64_t)n};
  ht_host_arg args[4];
  host_args(h, n, args);
  int reps = 0;
  for (int i = 0; i < WARM_RUNS; i++)
    if (ht_variant_run(v, sizes, args, NULL, NULL)) return fail(name, ht_last_error());
  clear_c(h, n);
  for (double start = ht_now(); more_reps(reps, n, start); reps++) {
    double t0 = ht_now();
    if (ht_variant_run(v, sizes, args, NULL, NULL)) return fail(name, ht_last_error());
    t[reps] = ht_now() - t0;
  }
  row->ms = ht_stat_median(t, reps) * 1e3;
  return check_c(h, n, name);
}

/* What the computation now expects of each variant at sizes, beside StarPU's model. */
static int ht_print_estimates(const opts *o, ht_side *s, const int64_t *sizes) {
  ht_variant_estimate est[MAX_VARIANTS];
  if (ht_computation_estimate(s->comp, sizes, est)) return fail("ht_computation_estimate", ht_last_error());
  fprintf(stderr, "hetune estimates, N=%lld:", (long long)sizes[0]);
  for (int v = 0; v < s->n; v++) fprintf(stderr, "  %s %.3g ms", o->variants[v].label, est[v].total_s * 1e3);
  fprintf(stderr, "\n");
  return 0;
}

/* Every variant CAL_RUNS times at every size, as StarPU's calibration runs every worker. */
static int ht_calibrate(const opts *o, ht_side *s, host *h) {
  for (int e = o->lo; e <= o->hi; e++) {
    size_t n = (size_t)1 << e;
    int64_t sizes[1] = {(int64_t)n};
    ht_host_arg args[4];
    host_args(h, n, args);
    for (int v = 0; v < s->n; v++)
      for (int i = 0; i < CAL_RUNS; i++)
        if (ht_computation_run_variant(s->comp, v, sizes, args, NULL)) return fail(o->variants[v].label, ht_last_error());
    if (ht_print_estimates(o, s, sizes)) return 1;
  }
  return 0;
}

/* Calls through ht_computation_run: decide, run, learn. */
static int ht_measure_dispatch(const opts *o, ht_side *s, host *h, size_t n, stat_row *row) {
  static double t[MAX_REPS];
  int64_t sizes[1] = {(int64_t)n};
  ht_host_arg args[4];
  ht_decision d;
  int reps = 0, ran[MAX_VARIANTS] = {0}, most = 0;
  host_args(h, n, args);
  for (int i = 0; i < WARM_RUNS; i++)
    if (ht_computation_run(s->comp, sizes, args, &d, NULL)) return fail("ht_computation_run", ht_last_error());
  clear_c(h, n);
  for (double start = ht_now(); more_reps(reps, n, start); reps++) {
    double t0 = ht_now();
    if (ht_computation_run(s->comp, sizes, args, &d, NULL)) return fail("ht_computation_run", ht_last_error());
    t[reps] = ht_now() - t0;
    ran[d.variant]++;
  }
  for (int v = 1; v < s->n; v++) most = ran[v] > ran[most] ? v : most;
  row->ms = ht_stat_median(t, reps) * 1e3;
  if (ran[most] == reps) snprintf(row->chose, sizeof row->chose, "%s", o->variants[most].label);
  else snprintf(row->chose, sizeof row->chose, "%s %d%%", o->variants[most].label, 100 * ran[most] / reps);
  return check_c(h, n, "dispatch");
}

/* ----------------------------------------------------------------- table ---- */

/* "12.3 cpu", "3.21 ocl", or "5 cpu 40%" when the tasks went to both kinds (40% on the CPU). */
static void fmt_sp(const stat_row *r, char *out, size_t len) {
  long all = r->on_cpu + r->on_ocl;
  if (r->on_ocl == 0) snprintf(out, len, "%.3g cpu", r->ms);
  else if (r->on_cpu == 0) snprintf(out, len, "%.3g ocl", r->ms);
  else snprintf(out, len, "%.3g cpu %ld%%", r->ms, 100 * r->on_cpu / all);
}

static void print_header(const opts *o) {
  printf("| N |");
  for (int p = 0; p < o->npolicies; p++) printf(" StarPU %s ms |", o->policies[p]);
  printf(" hetune dispatch ms | chosen |");
  for (int i = 0; i < o->nvariants; i++) printf(" direct %s ms |", o->variants[i].label);
  printf(" dispatch / StarPU best | dispatch / direct best |\n|---|");
  for (int i = 0; i < o->npolicies + o->nvariants + 4; i++) printf("---|");
  printf("\n");
}

static double min_ms(const stat_row *r, int n) {
  double m = r[0].ms;
  for (int i = 1; i < n; i++) m = r[i].ms < m ? r[i].ms : m;
  return m;
}

static void print_row(const opts *o, size_t n, const stat_row *sp, const stat_row *disp, const stat_row *direct) {
  char cell[64];
  printf("| 2^%d |", __builtin_ctzll(n));
  for (int p = 0; p < o->npolicies; p++) {
    fmt_sp(&sp[p], cell, sizeof cell);
    printf(" %s |", cell);
  }
  printf(" %.3g | %s |", disp->ms, disp->chose);
  for (int i = 0; i < o->nvariants; i++) printf(" %.3g |", direct[i].ms);
  printf(" %.2f | %.2f |\n", disp->ms / min_ms(sp, o->npolicies), disp->ms / min_ms(direct, o->nvariants));
  fflush(stdout);
}

/* ------------------------------------------------------------------ main ---- */

static void usage(FILE *f) {
  fprintf(f, "usage: bench_starpu [--sizes LO:HI] [--policies dmda,dmdas,eager] [--blocks B] [--ncpu N]\n"
             "                    [--nopencl N] [--keep-inputs] [--cl-config C] [--variant CONFIG@DEVICE]...\n"
             "  --sizes LO:HI   N = 2^LO .. 2^HI elements (default 10:24)\n"
             "  --blocks B      StarPU tasks per call, on equal parts of the vectors (default 1)\n"
             "  --ncpu N        StarPU CPU workers (default: usable CPUs minus one per OpenCL worker)\n"
             "  --nopencl N     StarPU OpenCL workers (default 1: PoCL's CPU device)\n"
             "  --keep-inputs   let StarPU keep a and b on its OpenCL device between calls\n"
             "  --cl-config C   StarPU's OpenCL kernel (default: the first opencl variant's config)\n"
             "  --variant C@D   a hetune variant: examples/vadd's spec for device D with config C;\n"
             "                  repeatable (default: NTHREADS=1 and NTHREADS=<usable CPUs> on c,\n"
             "                  WG=64,WPT=4 on opencl)\n");
}

static int parse_policies(char *list, opts *o) {
  o->npolicies = 0;
  for (char *save = NULL, *p = strtok_r(list, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
    if (o->npolicies == MAX_POLICIES) return fail("--policies", "at most 8");
    o->policies[o->npolicies++] = p;
  }
  return o->npolicies ? 0 : fail("--policies", "empty list");
}

static int parse_int(const char *flag, const char *text, int lo, int hi, int *out) {
  char *end;
  long v = strtol(text, &end, 10);
  if (*text == '\0' || *end != '\0' || v < lo || v > hi) {
    fprintf(stderr, "bench_starpu: %s: '%s' is not an integer in [%d, %d]\n", flag, text, lo, hi);
    return 1;
  }
  *out = (int)v;
  return 0;
}

/* "NTHREADS=1,CHUNK=0@c": labelled "c NTHREADS=1" (the device and the config's first setting). */
static int add_variant(opts *o, const char *text) {
  const char *at = strrchr(text, '@');
  if (!at || at == text || !at[1]) return fail(text, "expected --variant CONFIG@DEVICE");
  if (o->nvariants == MAX_VARIANTS) return fail("--variant", "at most 8");
  variant_opt v;
  char first[64]; /* the config's first setting */
  snprintf(v.device, sizeof v.device, "%s", at + 1);
  snprintf(v.config, sizeof v.config, "%.*s", (int)(at - text), text);
  snprintf(first, sizeof first, "%.*s", (int)strcspn(v.config, ","), v.config);
  snprintf(v.label, sizeof v.label, "%s %s", v.device, first);
  o->variants[o->nvariants++] = v;
  return 0;
}

static int default_variants(opts *o, long cpus) {
  char c_many[64];
  snprintf(c_many, sizeof c_many, "NTHREADS=%ld,CHUNK=0,UNROLL=1@c", cpus);
  return add_variant(o, "NTHREADS=1,CHUNK=0,UNROLL=1@c") || (cpus > 1 && add_variant(o, c_many)) ||
         add_variant(o, "WG=64,WPT=4@opencl");
}

static int parse_option(opts *o, const char *a, char *v) {
  if (!strcmp(a, "--sizes")) {
    if (sscanf(v, "%d:%d", &o->lo, &o->hi) == 2 && o->lo >= 0 && o->hi <= 28 && o->lo <= o->hi) return 0;
    return fail(a, "expected LO:HI with 0 <= LO <= HI <= 28");
  }
  if (!strcmp(a, "--policies")) return parse_policies(v, o);
  if (!strcmp(a, "--blocks")) return parse_int(a, v, 1, MAX_BLOCKS, &o->blocks);
  if (!strcmp(a, "--ncpu")) return parse_int(a, v, 0, 1024, &o->ncpu);
  if (!strcmp(a, "--nopencl")) return parse_int(a, v, 0, STARPU_MAXOPENCLDEVS, &o->nopencl);
  if (!strcmp(a, "--variant")) return add_variant(o, v);
  if (!strcmp(a, "--cl-config")) return snprintf(o->cl_config, sizeof o->cl_config, "%s", v), 0;
  return usage(stderr), fail(a, "unknown option");
}

/* The CPUs this process may use (its affinity and CPU quota), as the c device counts them: more
 * threads than that, pinned or in a container, would only wait for each other. */
static long usable_cpus(void) {
  ht_device *dev;
  if (ht_device_open("c", &dev)) return 1;
  long cpus = ht_device_info_get(dev)->max_threads;
  ht_device_close(dev);
  return cpus > 0 ? cpus : 1;
}

static int parse_args(int argc, char **argv, opts *o) {
  static char default_policies[] = "dmda,dmdas,eager";
  long cpus = usable_cpus();
  memset(o, 0, sizeof *o);
  o->lo = 10, o->hi = 24, o->blocks = 1, o->nopencl = 1, o->ncpu = -1;
  if (parse_policies(default_policies, o)) return 1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help")) return usage(stdout), exit(0), 0;
    if (!strcmp(argv[i], "--keep-inputs")) { o->keep_inputs = 1; continue; }
    if (i + 1 == argc) return usage(stderr), fail(argv[i], "unknown option or missing value");
    if (parse_option(o, argv[i], argv[i + 1])) return 1;
    i++;
  }
  if (o->nvariants == 0 && default_variants(o, cpus)) return 1;
  for (int i = 0; i < o->nvariants && !o->cl_config[0]; i++)
    if (!strncmp(o->variants[i].device, "opencl", 6)) memcpy(o->cl_config, o->variants[i].config, sizeof o->cl_config);
  if (!o->cl_config[0]) snprintf(o->cl_config, sizeof o->cl_config, "WG=64,WPT=4");
  if (o->ncpu < 0) o->ncpu = cpus - o->nopencl > 1 ? (int)(cpus - o->nopencl) : 1;
  if (((size_t)1 << o->lo) < (size_t)o->blocks) return fail("--blocks", "more blocks than elements at the smallest size");
  return 0;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(path);
}

/* StarPU's settings for this process; its folder is private and new. */
static int starpu_env(char *home) {
  if (!mkdtemp(home)) return fail(home, strerror(errno));
  setenv("STARPU_HOME", home, 1);
  unsetenv("STARPU_PERF_MODEL_DIR");
  setenv("STARPU_SILENT", "1", 1);
  setenv("STARPU_OPENCL_ON_CPUS", "1", 1);
  return 0;
}

static int host_alloc(host *h, size_t n) {
  h->a = aligned_alloc(64, n * sizeof(float));
  h->b = aligned_alloc(64, n * sizeof(float));
  h->c = aligned_alloc(64, n * sizeof(float));
  if (!h->a || !h->b || !h->c) return fail("memory", "cannot allocate the vectors");
  ht_rng r;
  ht_rng_seed(&r, 42);
  for (size_t i = 0; i < n; i++) h->a[i] = (float)ht_rng_uniform(&r), h->b[i] = (float)ht_rng_uniform(&r);
  return 0;
}

/* Size by size, every column side by side, so the machine's drifts hit all alike. */
static int run_sizes(const opts *o, host *h, ht_side *s) {
  for (int e = o->lo; e <= o->hi; e++) {
    size_t n = (size_t)1 << e;
    stat_row sp[MAX_POLICIES] = {{0}}, direct[MAX_VARIANTS] = {{0}}, disp = {0};
    for (int p = 0; p < o->npolicies; p++)
      if (sp_measure(o, o->policies[p], h, n, &sp[p])) return 1;
    for (int i = 0; i < s->n; i++)
      if (ht_measure_direct(s->v[i], o->variants[i].label, h, n, &direct[i])) return 1;
    if (ht_measure_dispatch(o, s, h, n, &disp)) return 1;
    print_row(o, n, sp, &disp, direct);
  }
  return 0;
}

static void print_title(const opts *o, const char *workers) {
  int maj, min, rel;
  starpu_get_version(&maj, &min, &rel);
  printf("c = a + b, float32, median ms per call. StarPU %d.%d.%d: %s, %d task%s per call, OpenCL \"%s\"%s.\n",
         maj, min, rel, workers, o->blocks, o->blocks > 1 ? "s" : "", o->cl_config,
         o->keep_inputs ? ", a and b kept on the device" : "");
  for (int i = 0; i < o->nvariants; i++)
    printf("hetune variant %s: \"%s\" on %s\n", o->variants[i].label, o->variants[i].config, o->variants[i].device);
  printf("\n");
}

int main(int argc, char **argv) {
  opts o;
  if (parse_args(argc, argv, &o)) return 2;
  char home[] = "/tmp/hetune-starpu-XXXXXX";
  if (starpu_env(home)) return 1;
  host h = {0};
  ht_side s = {0};
  char workers[64];
  int bad = host_alloc(&h, (size_t)1 << o.hi) || ht_open_side(&o, &s) || ht_open_computation(&o, &s) ||
            sp_calibrate(&o, &h, workers) || ht_calibrate(&o, &s, &h);
  if (!bad) {
    print_title(&o, workers);
    print_header(&o);
    bad = run_sizes(&o, &h, &s);
  }
  ht_close_side(&s);
  free(h.a), free(h.b), free(h.c);
  nftw(home, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  return bad;
}
