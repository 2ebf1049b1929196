/* hetune coexec plan|run|bench COMP: one call split across devices, from the command line. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char *coexec_help =
  "usage: hetune coexec plan COMP [--size K=V ...] [--options K=V,...] [--db F]\n"
  "       hetune coexec run COMP [--size K=V ...] [--calls N] [--options K=V,...] [--db F]\n"
  "       hetune coexec bench COMP [--size K=V ...] [--repeat R] [--options K=V,...] [--db F]\n"
  "\n"
  "COMP is a computation file with a \"split\" (docs/coexec.md): which size is cut into chunks and\n"
  "how each buffer's rows lie. Each device of its variants takes a chunk so that all finish\n"
  "together. plan prints each device's rows and predicted time; run makes data as the spec says\n"
  "and runs the call N times (a call whose variants are not all measured yet runs a dynamic\n"
  "schedule, which measures them; later calls plan); bench runs each device alone on the whole\n"
  "call, then split, checks the split call's results against the fastest device's, and reports\n"
  "speedup, efficiency (the ideal makespan, 1 / sum(1 / T_device), over the measured one) and\n"
  "imbalance. Times are the devices' own (kernel and copies; modelled on simulated devices).\n"
  "\n"
  "  --size K=V       a call size (repeatable; default: the specs' sizes)\n"
  "  --calls N        calls (run; default 1)\n"
  "  --repeat R       calls measured per device and split (bench; default 5, median kept)\n"
  "  --options K=V,.. co-execution options over the file's: schedule=static|dynamic, replan=S,\n"
  "                   min_chunk=N, and the partitioner's (docs/coexec.md)\n"
  "  --db FILE        database of measured times and models (default hetune.db or $HETUNE_DB)\n";

static const char *const known[] = {"size", "calls", "repeat", "options", "db", NULL};

typedef struct coexec_cli {
  cli_args a;
  ht_store *st;
  ht_coexec *x;
  ht_computation *c;
  int64_t sizes[16];
} coexec_cli;

static int open_all(coexec_cli *d) {
  if (d->a.n_pos < 2) return cli_usage_error("coexec", "expected a computation file");
  if (ht_store_open(cli_db_path(&d->a), &d->st)) return cli_fail("coexec");
  ht_status st = ht_coexec_load(d->a.pos[1], d->st, &d->x);
  if (st) return cli_fail_device("coexec", st);
  d->c = ht_coexec_computation(d->x);
  const ht_spec *s = ht_computation_spec(d->c);
  if (ht_spec_size_count(s) > 16) return cli_usage_error("coexec", "%s has more than 16 sizes", ht_spec_name(s));
  for (int i = 0; i < ht_spec_size_count(s); i++) d->sizes[i] = ht_spec_size_value(s, i);
  const char *o = cli_opt(&d->a, "options");
  if (o && ht_coexec_set_options(d->x, o)) return cli_usage_error("coexec", "--options: %s", ht_last_error());
  return cli_size_options(&d->a, s, d->sizes, "coexec");
}

static void print_report(const coexec_cli *d, const ht_coexec_report *r, int measured) {
  printf("%-3s %-28s %-22s %12s %7s %10s", "pu", "device", "config", "rows", "share", "predicted");
  if (measured) printf(" %10s %10s %6s", "measured", "copies", "chunks");
  printf("\n");
  int64_t total = 0;
  for (int i = 0; i < r->n_pus; i++) total += r->pu[i].rows;
  for (int i = 0; i < r->n_pus; i++) {
    const ht_coexec_pu_report *u = &r->pu[i];
    char rows[48];
    snprintf(rows, sizeof rows, "%lld-%lld", (long long)u->lb, (long long)u->ub);
    printf("%-3d %-28.28s %-22.22s %12s %6.1f%% ", i, ht_coexec_pu_device(d->x, i), u->variant < 0 ? "(not used)" : u->config,
           u->variant < 0 ? "-" : rows, total ? 100.0 * (double)u->rows / (double)total : 0);
    cli_print_seconds(u->variant < 0 ? NAN : u->pred_s);
    if (measured) {
      printf(" ");
      cli_print_seconds(u->chunks ? u->time_s : NAN);
      printf(" ");
      cli_print_seconds(u->chunks ? u->transfer_s : NAN);
      printf(" %6d", u->chunks);
      if (u->status) printf("\n    failed, its rows ran elsewhere: %s", u->error);
    }
    printf("\n");
  }
  printf("schedule %s%s", r->schedule, r->from_cache ? " (cached plan)" : "");
  if (!strcmp(r->schedule, "static") && !r->from_cache)
    printf(", %d steps, planned in %.1f us", r->plan.steps, r->plan.plan_us);
  printf("; predicted makespan ");
  cli_print_seconds(r->pred_makespan_s);
  if (measured) {
    printf(", measured ");
    cli_print_seconds(r->makespan_s);
    printf(", imbalance %.1f%%", 100 * r->imbalance);
    if (r->reruns) printf(", %d chunk(s) run again after a failure", r->reruns);
  }
  printf("\n");
}

static int do_plan(coexec_cli *d) {
  ht_coexec_report r;
  if (ht_coexec_plan(d->x, d->sizes, &r)) return cli_fail("coexec plan");
  print_report(d, &r, 0);
  return CLI_OK;
}

static int do_run(coexec_cli *d) {
  long long calls = 1;
  const char *v = cli_opt(&d->a, "calls");
  if (v && cli_integer_in("coexec run", "--calls", v, 1, 1000000, &calls)) return CLI_USAGE;
  ht_host_arg *args;
  if (ht_computation_make_args(d->c, d->sizes, 1, &args)) return cli_fail("coexec run");
  int rc = CLI_OK;
  for (long long i = 0; i < calls && !rc; i++) {
    ht_coexec_report r;
    if (ht_coexec_run(d->x, d->sizes, args, &r)) rc = cli_fail("coexec run");
    else {
      printf("call %lld:\n", i + 1);
      print_report(d, &r, 1);
    }
  }
  ht_computation_free_args(d->c, args);
  if (!rc && ht_computation_flush(d->c)) rc = cli_fail("coexec run");
  return rc;
}

/* ---- bench ---- */

static double run_seconds(const ht_run_times *t) { return t->kernel_s + t->h2d_s + t->d2h_s; }

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Each device alone on the whole call at sizes: the median of its fastest variant. */
static int bench_alone(coexec_cli *d, const int64_t *sizes, int repeat, double *alone, int *best_variant) {
  int nv = ht_computation_variant_count(d->c);
  ht_host_arg *args;
  if (ht_computation_make_args(d->c, sizes, 1, &args)) return cli_fail("coexec bench");
  for (int p = 0; p < ht_coexec_pu_count(d->x); p++) alone[p] = INFINITY, best_variant[p] = -1;
  int rc = CLI_OK;
  for (int v = 0; v < nv && !rc; v++) {
    double t[64];
    ht_run_times rt;
    for (int r = -1; r < repeat && !rc; r++) /* the first run warms up */
      if (ht_computation_run_variant(d->c, v, sizes, args, &rt)) rc = cli_fail("coexec bench");
      else if (r >= 0) t[r] = run_seconds(&rt);
    int p = ht_coexec_pu_of(d->x, v);
    double m = rc ? INFINITY : median(t, repeat);
    if (m < alone[p]) alone[p] = m, best_variant[p] = v;
  }
  ht_computation_free_args(d->c, args);
  return rc;
}

/* The ideal makespans: 1 / sum(1 / T_i), as if each device's time were proportional to its rows;
 * and, with each device's time fitted as fixed + per-row from the whole call and half of it (a
 * buffer every chunk copies whole, launch latency), the time T at which the devices together
 * finish all rows: sum over devices of (T - fixed_i) / per_row_i = rows. */
static void ideal_makespans(int n, const double *whole, const double *half, int64_t rows, double *proportional,
                            double *affine) {
  double inv = 0, fixed[HT_COEXEC_MAX_PUS], per_row[HT_COEXEC_MAX_PUS], hi = INFINITY;
  for (int p = 0; p < n; p++) {
    inv += 1 / whole[p];
    per_row[p] = fmax((whole[p] - half[p]) / ((double)rows - (double)(rows / 2)), 1e-300);
    fixed[p] = fmax(whole[p] - per_row[p] * (double)rows, 0);
    hi = fmin(hi, whole[p]);
  }
  *proportional = 1 / inv;
  double lo = 0;
  for (int it = 0; it < 200; it++) {
    double t = 0.5 * (lo + hi), done = 0;
    for (int p = 0; p < n; p++) done += fmax(0, (t - fixed[p]) / per_row[p]);
    if (done >= (double)rows) hi = t;
    else lo = t;
  }
  *affine = hi;
}

/* How far the split call's written buffers are from one device's, in units of the spec's
 * tolerance (docs/spec.md: |out - ref| <= atol + rtol * |ref|, defaults by element type): at
 * most 1 passes. Integers must be equal. */
static double element(ht_dtype t, const void *p, size_t k) {
  return t == HT_DTYPE_F32 ? ((const float *)p)[k] : ((const double *)p)[k];
}

static double buffer_error(const ht_spec *s, int i, const ht_host_arg *out, const ht_host_arg *ref) {
  ht_dtype t = ht_spec_arg_type(s, i);
  size_t es = ht_dtype_size(t), n = ref[i].count;
  if (t != HT_DTYPE_F32 && t != HT_DTYPE_F64) return memcmp(out[i].data, ref[i].data, n * es) ? INFINITY : 0;
  double rtol, atol, base = t == HT_DTYPE_F32 ? 1e-4 : 1e-10, max_ref = 0, worst = 0;
  ht_spec_tolerance(s, &rtol, &atol);
  for (size_t k = 0; k < n; k++) max_ref = fmax(max_ref, fabs(element(t, ref[i].data, k)));
  if (rtol < 0) rtol = base;
  if (atol < 0) atol = base * max_ref;
  for (size_t k = 0; k < n; k++) {
    double x = element(t, out[i].data, k), y = element(t, ref[i].data, k);
    double e = fabs(x - y) / (atol + rtol * fabs(y));
    if (!(e <= worst)) worst = isnan(e) || isinf(x) ? INFINITY : e;
  }
  return worst;
}

static double max_difference(const ht_computation *c, const ht_host_arg *out, const ht_host_arg *ref) {
  const ht_spec *s = ht_computation_spec(c);
  double worst = 0;
  for (int i = 0; i < ht_spec_arg_count(s); i++)
    if (ht_spec_arg_is_buffer(s, i) && (ht_spec_arg_access(s, i) & HT_ACCESS_WRITE))
      worst = fmax(worst, buffer_error(s, i, out, ref));
  return worst;
}

/* The split call on fresh data against the fastest device alone on the same data. */
static int bench_check(coexec_cli *d, int reference_variant, double *diff) {
  ht_host_arg *ref = NULL, *split = NULL;
  int rc = CLI_OK;
  if (ht_computation_make_args(d->c, d->sizes, 1, &ref) || ht_computation_make_args(d->c, d->sizes, 1, &split) ||
      ht_computation_run_variant(d->c, reference_variant, d->sizes, ref, NULL) ||
      ht_coexec_run(d->x, d->sizes, split, NULL))
    rc = cli_fail("coexec bench");
  if (!rc) *diff = max_difference(d->c, split, ref);
  if (ref) ht_computation_free_args(d->c, ref);
  if (split) ht_computation_free_args(d->c, split);
  return rc;
}

static int bench_split(coexec_cli *d, int repeat, ht_coexec_report *last, double *makespan, double *imbalance,
                       double *plan_us) {
  ht_host_arg *args;
  if (ht_computation_make_args(d->c, d->sizes, 1, &args)) return cli_fail("coexec bench");
  double m[64], im[64];
  int rc = CLI_OK;
  for (int r = -2; r < repeat && !rc; r++) /* two calls first: one may measure, one plans */
    if (ht_coexec_run(d->x, d->sizes, args, last)) rc = cli_fail("coexec bench");
    else {
      if (!last->from_cache && !strcmp(last->schedule, "static")) *plan_us = last->plan.plan_us;
      if (r >= 0) m[r] = last->makespan_s, im[r] = last->imbalance;
    }
  ht_computation_free_args(d->c, args);
  if (!rc) *makespan = median(m, repeat), *imbalance = median(im, repeat);
  return rc;
}

static int do_bench(coexec_cli *d) {
  long long repeat = 5;
  const char *v = cli_opt(&d->a, "repeat");
  if (v && cli_integer_in("coexec bench", "--repeat", v, 1, 64, &repeat)) return CLI_USAGE;
  int n = ht_coexec_pu_count(d->x), best[HT_COEXEC_MAX_PUS], unused[HT_COEXEC_MAX_PUS], fastest = 0, dim = ht_coexec_split_dim(d->x);
  double alone[HT_COEXEC_MAX_PUS], half[HT_COEXEC_MAX_PUS], makespan = NAN, imbalance = NAN, diff = INFINITY, plan_us = NAN;
  int64_t half_sizes[16];
  memcpy(half_sizes, d->sizes, sizeof half_sizes);
  half_sizes[dim] = d->sizes[dim] / 2;
  ht_coexec_report r;
  int rc = d->sizes[dim] < 2 ? cli_usage_error("coexec bench", "the split size must be 2 or more") : CLI_OK;
  if (!rc) rc = bench_alone(d, half_sizes, (int)repeat, half, unused);
  if (!rc) rc = bench_alone(d, d->sizes, (int)repeat, alone, best);
  for (int p = 0; p < n && !rc; p++)
    if (alone[p] < alone[fastest]) fastest = p;
  if (!rc) rc = bench_split(d, (int)repeat, &r, &makespan, &imbalance, &plan_us);
  if (!rc) rc = bench_check(d, best[fastest], &diff);
  if (rc) return rc;
  printf("each device alone (median of %lld):\n", repeat);
  for (int p = 0; p < n; p++) {
    printf("  %-28.28s ", ht_coexec_pu_device(d->x, p));
    cli_print_seconds(alone[p]);
    printf("  %s\n", ht_computation_variant_label(d->c, best[p]));
  }
  printf("split (median of %lld, the last call below):\n", repeat);
  print_report(d, &r, 1);
  double proportional, affine;
  ideal_makespans(n, alone, half, d->sizes[dim], &proportional, &affine);
  printf("makespan ");
  cli_print_seconds(makespan);
  printf("; speedup %.2fx over the fastest device alone; imbalance %.1f%%; planned in %.1f us\n", alone[fastest] / makespan,
         100 * imbalance, plan_us);
  printf("ideal    ");
  cli_print_seconds(proportional);
  printf(" (1 / sum(1 / T_device)): efficiency %.3f\n", proportional / makespan);
  printf("ideal    ");
  cli_print_seconds(affine);
  printf(" (devices' fixed costs counted): efficiency %.3f\n", affine / makespan);
  printf("results: %s (largest difference %.2g of the spec's tolerance from %s alone)\n", diff <= 1 ? "match" : "DIFFER",
         diff, ht_coexec_pu_device(d->x, fastest));
  return diff <= 1 ? CLI_OK : CLI_ERROR;
}

static const struct {
  const char *name;
  int (*fn)(coexec_cli *d);
} subcommands[] = {{"plan", do_plan}, {"run", do_run}, {"bench", do_bench}};

int cmd_coexec(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    fputs(coexec_help, stdout);
    return CLI_OK;
  }
  coexec_cli d = {0};
  int rc = cli_parse(argc, argv, "coexec", known, NULL, &d.a);
  if (rc) return rc;
  if (d.a.n_pos < 1) return cli_usage_error("coexec", "expected plan, run or bench");
  for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++) {
    if (strcmp(subcommands[i].name, d.a.pos[0])) continue;
    if (!(rc = open_all(&d))) rc = subcommands[i].fn(&d);
    ht_coexec_destroy(d.x);
    ht_store_close(d.st);
    return rc;
  }
  return cli_usage_error("coexec", "unknown subcommand '%s' (plan, run, bench)", d.a.pos[0]);
}
