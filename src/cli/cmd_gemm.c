/* hetune gemm M N K: generate the GEMM kernel for a device, tune it (or reuse stored tuning), and
 * measure the vendor library and the naive kernel in the same run. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "hetune/gemm.h"

static const char *help =
  "usage: hetune gemm M N K [options]\n"
  "\n"
  "Generates the GEMM C = alpha*op(A)*op(B) + beta*C (row-major) for a device, tunes its schedule\n"
  "(configs already stored are reused, so a second call is instant), and measures the vendor\n"
  "library (OpenBLAS on c, cuBLAS on cuda) and the naive kernel in the same run. Prints GFLOP/s\n"
  "of each, the best config and the tuning time. docs/gemm.md describes the generators.\n"
  "\n"
  "  --device D      c, opencl[:P:D] or cuda[:N] (default c)\n"
  "  --type T        f32 or f64 (default f32)\n"
  "  --trans-a       A is stored K x M and used transposed\n"
  "  --trans-b       B is stored N x K and used transposed\n"
  "  --alpha X       (default 1)\n"
  "  --beta X        (default 0)\n"
  "  --strategy S    search strategy (default auto; see hetune tune --help)\n"
  "  --options K=V   strategy options\n"
  "  --budget N      evaluate at most N configs (default 60)\n"
  "  --time S        stop tuning after S seconds\n"
  "  --seed N        strategy seed (default 1)\n"
  "  --db FILE       database (default hetune.db or $HETUNE_DB)\n"
  "  --out DIR       where the generated specs and sources go (default: the cache folder)\n"
  "  --no-vendor     do not measure the vendor library\n"
  "  --naive         measure the naive kernel even when 2*M*N*K > 1e10 (slow)\n"
  "  --no-naive      do not measure the naive kernel\n"
  "  --tsv           end with one tab-separated line: m n k tuned vendor naive GFLOP/s, tuning s, best\n"
  "  --quiet         no progress output\n";

enum { DEFAULT_BUDGET = 60 };
#define NAIVE_MAX_FLOPS 1e10 /* above this the naive kernel takes minutes: skipped unless --naive */

static volatile sig_atomic_t stop_requested;
static void on_sigint(int sig) {
  (void)sig;
  if (stop_requested) _exit(130);
  stop_requested = 1;
}

typedef struct gemm_cli {
  ht_gemm_problem p;
  ht_gemm_target target;
  const char *device, *db, *out;
  int quiet, tsv, vendor, naive;
  ht_tune_options to;
} gemm_cli;

static int parse_target(const char *dev, ht_gemm_target *t) {
  if (strcmp(dev, "c") == 0 || strncmp(dev, "c:", 2) == 0) *t = HT_GEMM_C;
  else if (strncmp(dev, "opencl", 6) == 0 && (dev[6] == 0 || dev[6] == ':')) *t = HT_GEMM_OPENCL;
  else if (strncmp(dev, "cuda", 4) == 0 && (dev[4] == 0 || dev[4] == ':')) *t = HT_GEMM_CUDA;
  else return cli_usage_error("gemm", "--device %s: expected c, opencl[:P:D] or cuda[:N]", dev);
  return CLI_OK;
}

static int parse_sizes(const cli_args *a, gemm_cli *g) {
  if (a->n_pos != 3) return cli_usage_error("gemm", "expected three sizes M N K (see hetune gemm --help)");
  long long v[3];
  static const char *const names[] = {"M", "N", "K"};
  for (int i = 0; i < 3; i++)
    if (cli_integer("gemm", names[i], a->pos[i], 1, &v[i])) return CLI_USAGE;
  ht_gemm_problem_default(&g->p, v[0], v[1], v[2]);
  return CLI_OK;
}

static int parse_problem(const cli_args *a, gemm_cli *g) {
  int rc = parse_sizes(a, g);
  const char *v;
  if (!rc && (v = cli_opt(a, "type"))) {
    if (strcmp(v, "f32") == 0 || strcmp(v, "float") == 0) g->p.type = HT_DTYPE_F32;
    else if (strcmp(v, "f64") == 0 || strcmp(v, "double") == 0) g->p.type = HT_DTYPE_F64;
    else rc = cli_usage_error("gemm", "--type %s: expected f32 or f64", v);
  }
  g->p.trans_a = cli_has(a, "trans-a");
  g->p.trans_b = cli_has(a, "trans-b");
  if (!rc && (v = cli_opt(a, "alpha"))) rc = cli_number("gemm", "--alpha", v, -INFINITY, &g->p.alpha);
  if (!rc && (v = cli_opt(a, "beta"))) rc = cli_number("gemm", "--beta", v, -INFINITY, &g->p.beta);
  g->device = cli_opt(a, "device") ? cli_opt(a, "device") : "c";
  if (!rc) rc = parse_target(g->device, &g->target);
  return rc;
}

static int parse_tuning(const cli_args *a, gemm_cli *g) {
  ht_tune_options *o = &g->to;
  ht_tune_options_default(o);
  o->strategy = cli_opt(a, "strategy") ? cli_opt(a, "strategy") : "auto";
  if (!ht_strategy_find(o->strategy))
    return cli_usage_error("gemm", "--strategy %s: unknown strategy (see hetune tune --help)", o->strategy);
  o->strategy_options = cli_opt(a, "options");
  long long n;
  const char *v;
  int rc = CLI_OK;
  o->budget_evals = DEFAULT_BUDGET;
  if ((v = cli_opt(a, "budget")) && !(rc = cli_integer("gemm", "--budget", v, 1, &n))) o->budget_evals = n;
  if (!rc && (v = cli_opt(a, "time"))) rc = cli_number("gemm", "--time", v, 0, &o->budget_seconds);
  if (!rc && (v = cli_opt(a, "seed")) && !(rc = cli_integer("gemm", "--seed", v, 0, &n))) o->seed = (uint64_t)n;
  o->stop = &stop_requested;
  return rc;
}

/* <cache>/gemm/<target>_<type>_<m>x<n>x<k>_<nn|nt|tn|tt>_a<alpha>_b<beta> */
static char *default_out(const gemm_cli *g) {
  static const char *const tn[] = {"c", "opencl", "cuda"};
  const ht_gemm_problem *p = &g->p;
  return ht_strfmt("%s/gemm/%s_%s_%lldx%lldx%lld_%c%c_a%g_b%g", ht_cache_dir(), tn[g->target],
                   p->type == HT_DTYPE_F64 ? "f64" : "f32", (long long)p->m, (long long)p->n, (long long)p->k,
                   p->trans_a ? 't' : 'n', p->trans_b ? 't' : 'n', p->alpha, p->beta);
}

static void progress(const ht_tune_progress *p, void *ctx) {
  const char *what = ctx;
  fprintf(stderr, "\r\033[K%s [%lld] best %.3g ms, %lld failed, %lld reused, %.0f s", what, (long long)p->done,
          p->best_time_s * 1e3, (long long)p->failures, (long long)p->reused, p->elapsed_s);
  fflush(stderr);
}

/* One spec generated by gen, tuned on the device; the summary's best is the result. */
typedef ht_status (*gen_fn)(const ht_gemm_problem *, ht_gemm_target, const char *, char **);

static ht_status tune_one(const gemm_cli *g, gen_fn gen, const char *what, const ht_tune_options *to,
                          const ht_runner_options *ro, ht_store *st, ht_tune_summary *sum, char **spec_path) {
  ht_status s = gen(&g->p, g->target, g->out, spec_path);
  ht_spec *spec = NULL;
  if (!s) s = ht_spec_load(*spec_path, &spec);
  if (s) return s;
  ht_tune_options o = *to;
  if (!g->quiet && isatty(2)) {
    o.progress = progress;
    o.progress_ctx = (void *)what;
  }
  s = ht_tune(spec, g->device, st, &o, ro, sum);
  if (o.progress) fputs("\r\033[K", stderr);
  ht_spec_destroy(spec);
  return s;
}

static double gflops(const gemm_cli *g, const ht_tune_summary *s) {
  if (!s->found || !(s->best.time_s > 0)) return NAN;
  return 2.0 * (double)g->p.m * (double)g->p.n * (double)g->p.k / s->best.time_s / 1e9;
}

static void print_line(const char *label, const gemm_cli *g, const ht_tune_summary *s, const char *note) {
  if (note) {
    printf("  %-9s %s\n", label, note);
    return;
  }
  if (!s->found) {
    printf("  %-9s no config succeeded (%lld failed)\n", label, (long long)s->failures);
    return;
  }
  printf("  %-9s %9.2f GFLOP/s  %10.3f ms", label, gflops(g, s), s->best.time_s * 1e3);
  if (s->best_config[0]) printf("  %s", s->best_config);
  printf("\n");
}

typedef struct gemm_runs {
  ht_tune_summary tuned, vendor, naive;
  const char *vendor_note, *naive_note;
  char *spec_path;
} gemm_runs;

static void print_report(const gemm_cli *g, const gemm_runs *r) {
  const ht_gemm_problem *p = &g->p;
  printf("gemm %lld x %lld x %lld %s%s%s, alpha %g beta %g, on %s (%s)\n", (long long)p->m, (long long)p->n,
         (long long)p->k, p->type == HT_DTYPE_F64 ? "f64" : "f32", p->trans_a ? " A^T" : "", p->trans_b ? " B^T" : "",
         p->alpha, p->beta, r->tuned.device.id, r->tuned.device.name);
  printf("  spec:     %s\n", r->spec_path);
  print_line("tuned:", g, &r->tuned, NULL);
  print_line(g->target == HT_GEMM_CUDA ? "cublas:" : "openblas:", g, &r->vendor, r->vendor_note);
  print_line("naive:", g, &r->naive, r->naive_note);
  printf("  tuning:   %.1f s, %lld configs evaluated (%lld measured, %lld stored), %lld failed, of %llu valid%s\n",
         r->tuned.elapsed_s, (long long)(r->tuned.measured + r->tuned.reused), (long long)r->tuned.measured,
         (long long)r->tuned.reused, (long long)r->tuned.failures, (unsigned long long)r->tuned.space_size,
         r->tuned.interrupted ? " (interrupted)" : "");
  double t = gflops(g, &r->tuned), v = r->vendor_note ? NAN : gflops(g, &r->vendor),
         nv = r->naive_note ? NAN : gflops(g, &r->naive);
  if (isfinite(t) && isfinite(v)) printf("  tuned / vendor: %.2fx\n", t / v);
  if (isfinite(t) && isfinite(nv)) printf("  tuned / naive:  %.1fx\n", t / nv);
  if (g->tsv)
    printf("result\t%lld\t%lld\t%lld\t%.3f\t%.3f\t%.3f\t%.2f\t%s\n", (long long)p->m, (long long)p->n, (long long)p->k, t,
           v, nv, r->tuned.elapsed_s, r->tuned.found ? r->tuned.best_config : "-");
}

static int run_all(gemm_cli *g, ht_store *st, gemm_runs *r) {
  ht_runner_options ro;
  ht_runner_options_default(&ro);
  if (tune_one(g, ht_gemm_generate, "tuning", &g->to, &ro, st, &r->tuned, &r->spec_path)) return cli_fail("gemm");
  /* Baselines: every config of their (tiny) spaces, so OpenBLAS gets its best thread count. */
  ht_tune_options bo;
  ht_tune_options_default(&bo);
  bo.strategy = "brute_force";
  bo.stop = &stop_requested;
  char *path = NULL;
  ht_status s = HT_OK;
  if (!g->vendor) r->vendor_note = "skipped (--no-vendor)";
  else if ((s = tune_one(g, ht_gemm_generate_vendor, "vendor", &bo, &ro, st, &r->vendor, &path))) {
    if (s != HT_ERR_UNSUPPORTED) return free(path), cli_fail("gemm: vendor baseline");
    r->vendor_note = "none for this device";
  }
  free(path);
  path = NULL;
  ro.timeout_s = 600; /* the naive kernel is slow by design */
  ro.min_runs = 2;
  if (!g->naive) r->naive_note = "skipped";
  else if (g->naive < 0) r->naive_note = "skipped (2*M*N*K > 1e10 would take minutes; --naive forces it)";
  else if (tune_one(g, ht_gemm_generate_naive, "naive", &bo, &ro, st, &r->naive, &path))
    return free(path), cli_fail("gemm: naive kernel");
  free(path);
  return CLI_OK;
}

int cmd_gemm(int argc, char **argv) {
  static const char *const flags[] = {"trans-a", "trans-b", "no-vendor", "naive", "no-naive", "tsv", "quiet", NULL};
  static const char *const known[] = {"device", "type",      "trans-a", "trans-b", "alpha",    "beta", "strategy",
                                      "options", "budget",   "time",    "seed",    "db",       "out",  "no-vendor",
                                      "naive",   "no-naive", "tsv",     "quiet",   NULL};
  if (cli_wants_help(argc, argv)) return fputs(help, stdout), CLI_OK;
  cli_args a;
  gemm_cli g = {0};
  int rc = cli_parse(argc, argv, flags, &a);
  if (!rc) rc = cli_check_known(&a, "gemm", known);
  if (!rc) rc = parse_problem(&a, &g);
  if (!rc) rc = parse_tuning(&a, &g);
  if (rc) return rc;
  g.quiet = cli_has(&a, "quiet");
  g.tsv = cli_has(&a, "tsv");
  g.vendor = !cli_has(&a, "no-vendor");
  double flops = 2.0 * (double)g.p.m * (double)g.p.n * (double)g.p.k;
  g.naive = cli_has(&a, "no-naive") ? 0 : cli_has(&a, "naive") || flops <= NAIVE_MAX_FLOPS ? 1 : -1;
  g.db = cli_db_path(&a);
  char *out = cli_opt(&a, "out") ? ht_strdup(cli_opt(&a, "out")) : default_out(&g);
  if (!out) return cli_fail("gemm");
  g.out = out;
  ht_store *st;
  if (ht_store_open(g.db, &st)) return free(out), cli_fail("gemm");
  signal(SIGINT, on_sigint);
  gemm_runs *r = calloc(1, sizeof *r);
  rc = r ? run_all(&g, st, r) : cli_fail("gemm: out of memory");
  if (!rc) print_report(&g, r);
  if (r) free(r->spec_path);
  free(r);
  ht_store_close(st);
  free(out);
  return rc;
}
