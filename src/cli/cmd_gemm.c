/* hetune gemm M N K: generate the GEMM kernel for a device, tune it (or reuse stored tuning), and
 * measure the vendor library and the naive kernel in the same run. */
#include <errno.h>
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
  "library (OpenBLAS on c, CLBlast on opencl, cuBLAS on cuda) and the naive kernel in the same run. Prints GFLOP/s\n"
  "of each, the best config and the tuning time. docs/gemm.md describes the generators. Without CLBlast\n"
  "installed, its line says so and its share of --budget goes to the search.\n"
  "\n"
  "  --device D      c, opencl[:P:D] or cuda[:N] (default c)\n"
  "  --type T        f32 or f64 (default f32)\n"
  "  --trans-a       A is stored K x M and used transposed\n"
  "  --trans-b       B is stored N x K and used transposed\n"
  "  --alpha X       (default 1)\n"
  "  --beta X        (default 0)\n"
  "  --strategy S    search strategy (default auto; see hetune tune --help)\n"
  "  --options K=V   strategy options\n"
  "  --budget N      evaluate at most N configs in the whole run (default 60), stored ones included.\n"
  "                  The stages run in this order and take, each leaving one evaluation for the\n"
  "                  search: the warm start its seeds (up to 5), the vendor library up to 2 configs,\n"
  "                  --tune-vendor its N, the naive kernel up to 2; the search gets the rest\n"
  "  --time S        end the whole run after about S seconds: the stages before the search stop at\n"
  "                  S/2, the search at S (an evaluation under way finishes; a vendor library's or\n"
  "                  the naive kernel's run is cut off at its stage's end)\n"
  "  --seed N        strategy seed (default 1)\n"
  "  --db FILE       database (default hetune.db or $HETUNE_DB)\n"
  "  --out DIR       where the generated specs and sources go (default: the cache folder)\n"
  "  --no-vendor     do not measure the vendor library\n"
  "  --tune-vendor N also tune the vendor library's own GEMM kernel on this device with N evaluations,\n"
  "                  where it takes tuning parameters (CLBlast's Xgemm), and report it next to the\n"
  "                  library as installed\n"
  "  --naive         measure the naive kernel even when 2*M*N*K > 1e10 (slow)\n"
  "  --no-naive      do not measure the naive kernel\n"
  "  --no-warm       no warm start (by default the generator's model config, on c and cuda, and the best\n"
  "                  stored configs of the nearest other sizes are measured too, before the search)\n"
  "  --tsv           end with one tab-separated line: m n k tuned vendor naive GFLOP/s, tuning s, best,\n"
  "                  tuned vendor GFLOP/s (nan without --tune-vendor); on c, a line vendor_build before it\n"
  "                  (openblas_get_config: version and the kernels it picked)\n"
  "  --plot FILE.svg a bar chart of the GFLOP/s of the tuned kernel, the vendor library and the naive\n"
  "                  kernel (bench/gemm/report.py draws many shapes)\n"
  "  --quiet         no progress output (otherwise a line per evaluation on stderr, or one updated\n"
  "                  line on a terminal)\n"
  "\n"
  "Evaluations are stored under the device they ran on: the vendor libraries are C functions on the\n"
  "host, but CLBlast's and cuBLAS's GEMMs run on the OpenCL or CUDA device, so they are stored\n"
  "under that device, next to the generated kernel they are compared with.\n";

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
  int quiet, tsv, vendor, naive, warm;
  long long tune_vendor; /* evaluations to tune the vendor library's own kernel (CLBlast), 0: none */
  ht_tune_options to;
  int64_t evals_left;    /* --budget less what the stages so far took */
  double t0;             /* when the run started, for --time */
  ht_device_info dev;    /* GPU targets: the device (its limits, where the vendor library runs) */
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
  if (ht_strategy_check(o->strategy) == HT_ERR_UNSUPPORTED)
    return cli_usage_error("gemm", "--strategy %s: %s", o->strategy, ht_last_error());
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
  if (!rc && (v = cli_opt(a, "tune-vendor"))) rc = cli_integer("gemm", "--tune-vendor", v, 0, &g->tune_vendor);
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

/* ---- progress and the run's budget ---- */

typedef struct progress_ctx {
  const char *what; /* the stage: "tuning", "openblas", ... */
  int tty;
} progress_ctx;

/* On a terminal one line, updated; elsewhere (a log, a pipe) a line per evaluation. */
static void progress(const ht_tune_progress *p, void *ctx) {
  const progress_ctx *pc = ctx;
  const char *what = p->last_seed ? "warm start" : pc->what;
  const int64_t total =
      p->budget_evals > 0 && (uint64_t)p->budget_evals < p->space_size ? p->budget_evals : (int64_t)p->space_size;
  char best[64] = "none yet";
  if (isfinite(p->best_time_s)) snprintf(best, sizeof best, "%.3f ms", p->best_time_s * 1e3);
  if (pc->tty) {
    fprintf(stderr, "\r\033[K%s [%lld/%lld] best %s, %lld failed, %lld reused, %.0f s", what, (long long)p->done,
            (long long)total, best, (long long)p->failures, (long long)p->reused, p->elapsed_s);
  } else {
    char last[64];
    if (p->last->status == HT_EVAL_OK) snprintf(last, sizeof last, "%.3f ms", p->last->time_s * 1e3);
    else snprintf(last, sizeof last, "%s", ht_eval_status_name(p->last->status));
    fprintf(stderr, "hetune gemm: %s [%lld/%lld] %s: %s%s (best %s)\n", what, (long long)p->done,
            (long long)total, p->last_config[0] ? p->last_config : "(no parameters)", last,
            p->last_reused ? ", stored" : "", best);
  }
  fflush(stderr);
}

/* The options of a stage: brute force over its (restricted) space unless the caller changes it,
 * the run's stop flag, progress unless --quiet. */
static void stage_options(const gemm_cli *g, const char *what, ht_tune_options *o, ht_runner_options *ro,
                          progress_ctx *pc) {
  ht_tune_options_default(o);
  o->strategy = "brute_force";
  o->stop = &stop_requested;
  ht_runner_options_default(ro);
  *pc = (progress_ctx){what, isatty(2)};
  if (!g->quiet) {
    o->progress = progress;
    o->progress_ctx = pc;
  }
}

/* The next stage's share of the run's budget: up to want evaluations, leaving one for the search
 * (the search, last: all that is left); with --time, until half of it (the search: all of it).
 * A baseline's (ro not NULL) kernel runs are cut off there too: their long timeouts (a vendor
 * library compiling its kernels in its first call, the naive kernel) would overrun the budget.
 * The tuned kernel keeps its runs' usual 10 s timeout and compiles are never cut short: a config
 * stored as failed is not measured again. NULL, or why the stage gets nothing. */
static const char *stage_share(const gemm_cli *g, int64_t want, int search, ht_tune_options *o,
                               ht_runner_options *ro) {
  const int64_t left = g->evals_left - (search ? 0 : 1);
  o->budget_evals = want < left ? want : left;
  o->budget_seconds = 0;
  if (stop_requested && !search) return "skipped (interrupted)";
  if (o->budget_evals <= 0) return "skipped (--budget spent; the search keeps the last evaluation)";
  if (!(g->to.budget_seconds > 0)) return NULL;
  const double s = g->t0 + g->to.budget_seconds * (search ? 1.0 : 0.5) - ht_now();
  if (s <= 0 && !search) return "skipped (--time: the stages before the search have used half of it)";
  o->budget_seconds = s > 0 ? s : 1e-9; /* a spent search still reports the device and space */
  if (ro && ro->timeout_s > o->budget_seconds) ro->timeout_s = o->budget_seconds;
  return NULL;
}

/* Adds cons (when not NULL) to spec's constraints for one stage; drop_constraint takes it back. */
static ht_status add_constraint(ht_spec *spec, const char *cons) {
  return cons ? ht_spec_add_constraint(spec, cons) : HT_OK;
}

static void drop_constraint(ht_spec *spec, const char *cons) {
  if (cons) ht_spec_remove_constraint(spec, ht_spec_constraint_count(spec) - 1);
}

/* Tunes spec, restricted by cons when not NULL, within the stage's share, and takes its
 * evaluations off the budget. A baseline whose stored evaluations all failed is measured again
 * once (they may have been cut short by --time, or the library installed since). */
static ht_status run_stage(gemm_cli *g, ht_spec *spec, const char *cons, const char *device, ht_tune_options *o,
                           const ht_runner_options *ro, int baseline, ht_store *st, ht_tune_summary *sum) {
  ht_status s = add_constraint(spec, cons);
  if (s) return s;
  s = ht_tune(spec, device, st, o, ro, sum);
  if (!s) g->evals_left -= sum->measured + sum->reused;
  if (!s && baseline && !sum->found && sum->measured == 0 && sum->reused > 0) {
    ht_tune_options again = *o;
    ht_runner_options rr = *ro;
    again.no_reuse = 1;
    if (!stage_share(g, sum->reused, 0, &again, &rr) && !(s = ht_tune(spec, device, st, &again, &rr, sum)))
      g->evals_left -= sum->measured;
  }
  if (o->progress && isatty(2)) fputs("\r\033[K", stderr);
  drop_constraint(spec, cons);
  return s;
}

static double gflops(const gemm_cli *g, const ht_tune_summary *s) {
  if (!s->found || !(s->best.time_s > 0)) return NAN;
  return 2.0 * (double)g->p.m * (double)g->p.n * (double)g->p.k / s->best.time_s / 1e9;
}

/* ---- warm start: the model's config and the best stored configs of the nearest other sizes ---- */

enum { MAX_SEEDS = 4 };

typedef struct gemm_runs {
  ht_tune_summary tuned, vendor, vendor_tuned, naive;
  int n_seeds;             /* stored configs of other sizes in the warm start */
  char model_key[256];     /* the generator's model config in the warm start, "" for none */
  char **seeds;            /* the warm start's configs: the model's, then the stored ones */
  int n_seed_configs;
  int64_t warm_share;      /* evaluations the budget gave the seeds (0: the warm start was skipped) */
  const char *vendor_note, *naive_note;
  char vendor_missing[192]; /* the vendor_note of a library that is not installed */
  ht_spec *spec;           /* the generated kernel's, its file written in --out */
} gemm_runs;

/* Adds text to the seeds unless it is there already (the model may pick a stored seed). */
static void add_seed(gemm_runs *r, const char *text) {
  for (int i = 0; i < r->n_seed_configs; i++)
    if (strcmp(r->seeds[i], text) == 0) return;
  char *copy = ht_strdup(text);
  if (copy) r->seeds[r->n_seed_configs++] = copy;
}

/* The seeds of the search (ht_tune_options.seed_configs), measured before the strategy's own
 * configs: the generator's model config and the best stored configs of the nearest other sizes.
 * Their share of the budget is taken now, before the vendor library's and the naive kernel's, and
 * handed to the search. Stored as evaluations of this problem like any other, so the report's
 * best may come from them. */
static ht_status warm_start(gemm_cli *g, ht_store *st, gemm_runs *r) {
  if (!ht_gemm_model_config(&g->p, g->target, r->model_key, sizeof r->model_key)) r->model_key[0] = 0;
  char **stored = NULL;
  ht_status s = HT_OK;
  if (ht_tune_nearby_bests(st, r->spec, MAX_SEEDS, &stored, &r->n_seeds)) ht_error_clear(); /* then none */
  r->seeds = calloc((size_t)r->n_seeds + 1, sizeof *r->seeds);
  if (!r->seeds) s = ht_error(HT_ERR_NOMEM, "out of memory");
  if (!s && r->model_key[0]) add_seed(r, r->model_key);
  for (int i = 0; !s && i < r->n_seeds; i++) add_seed(r, stored[i]);
  ht_tune_configs_free(stored, r->n_seeds);
  ht_tune_options o;
  ht_tune_options_default(&o);
  if (!s && r->n_seed_configs && !stage_share(g, r->n_seed_configs, 0, &o, NULL)) {
    r->warm_share = o.budget_evals;
    g->evals_left -= r->warm_share; /* the search gets it back */
  }
  return s;
}

static void print_line(const char *label, const gemm_cli *g, const ht_tune_summary *s, const char *note) {
  if (note) {
    printf("  %-9s %s\n", label, note);
    return;
  }
  if (!s->found && s->measured + s->reused == 0) { /* its share of --time went before its first evaluation */
    printf("  %-9s not measured (%s)\n", label, s->interrupted ? "interrupted" : "--time spent");
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

static void print_openblas_build(const char *build, int weak) {
  if (!build) return;
  printf("  (%s)\n", build);
  if (!weak) return;
  const char *forced = getenv("OPENBLAS_CORETYPE");
  printf("  (this CPU has AVX-512 but OpenBLAS runs older kernels%s%s%s: OPENBLAS_CORETYPE=SkylakeX\n"
         "   in hetune's environment selects its AVX-512 kernels, a stronger baseline)\n",
         forced && *forced ? ", as OPENBLAS_CORETYPE=" : "", forced && *forced ? forced : "",
         forced && *forced ? " asks" : "");
}

static void print_report(const gemm_cli *g, const gemm_runs *r) {
  const ht_gemm_problem *p = &g->p;
  printf("gemm %lld x %lld x %lld %s%s%s, alpha %g beta %g, on %s (%s)\n", (long long)p->m, (long long)p->n,
         (long long)p->k, p->type == HT_DTYPE_F64 ? "f64" : "f32", p->trans_a ? " A^T" : "", p->trans_b ? " B^T" : "",
         p->alpha, p->beta, r->tuned.device.id, r->tuned.device.name);
  printf("  spec:     %s\n", ht_spec_path(r->spec));
  print_line("tuned:", g, &r->tuned, NULL);
  if (r->n_seeds || r->model_key[0]) {
    const int warmed = r->warm_share > 0, found = isfinite(r->tuned.seed_best_time_s);
    printf("  (warm start%s:", warmed ? "" : " skipped by the budget");
    if (r->model_key[0]) printf(" the model's config %s%s", r->model_key, r->n_seeds ? " and" : "");
    if (r->n_seeds)
      printf(" %d stored best config%s of the nearest other sizes", r->n_seeds, r->n_seeds > 1 ? "s" : "");
    if (found)
      printf(", best %.3f ms%s", r->tuned.seed_best_time_s * 1e3,
             r->tuned.seed_best_time_s <= r->tuned.best.time_s ? ", kept" : "");
    else if (warmed)
      printf(", none succeeded: %lld failed", (long long)r->tuned.seed_failures);
    printf(")\n");
  }
  static const char *const vendor_label[] = {"openblas:", "clblast:", "cublas:"};
  print_line(vendor_label[g->target], g, &r->vendor, r->vendor_note);
  int weak = 0;
  const char *build = g->target == HT_GEMM_C && !r->vendor_note ? ht_gemm_openblas_build(&weak) : NULL;
  print_openblas_build(build, weak);
  const ht_tune_summary *vt = &r->vendor_tuned;
  if (vt->measured + vt->reused + vt->failures > 0) {
    print_line("clblast*:", g, vt, NULL);
    printf("  (clblast*: CLBlast's Xgemm kernel tuned for this device by hetune: %lld configs, %lld failed, %.1f s)\n",
           (long long)(vt->measured + vt->reused), (long long)vt->failures, vt->elapsed_s);
  }
  print_line("naive:", g, &r->naive, r->naive_note);
  printf("  tuning:   %.1f s, %lld configs evaluated (%lld measured, %lld stored), %lld failed, of %llu valid%s\n",
         r->tuned.elapsed_s, (long long)(r->tuned.measured + r->tuned.reused), (long long)r->tuned.measured,
         (long long)r->tuned.reused, (long long)r->tuned.failures, (unsigned long long)r->tuned.space_size,
         r->tuned.interrupted ? " (interrupted)" : "");
  printf("  run:      %.1f s, %lld of %lld evaluations (--budget)\n", ht_now() - g->t0,
         (long long)(g->to.budget_evals - g->evals_left), (long long)g->to.budget_evals);
  double t = gflops(g, &r->tuned), v = r->vendor_note ? NAN : gflops(g, &r->vendor),
         nv = r->naive_note ? NAN : gflops(g, &r->naive);
  const double vtg = gflops(g, vt);
  if (isfinite(t) && isfinite(v)) printf("  tuned / vendor: %.2fx\n", t / v);
  if (isfinite(t) && isfinite(vtg)) printf("  tuned / vendor tuned: %.2fx\n", t / vtg);
  if (isfinite(t) && isfinite(nv)) printf("  tuned / naive:  %.1fx\n", t / nv);
  if (g->tsv && build) printf("vendor_build\t%s\n", build);
  if (g->tsv)
    printf("result\t%lld\t%lld\t%lld\t%.3f\t%.3f\t%.3f\t%.2f\t%s\t%.3f\n", (long long)p->m, (long long)p->n,
           (long long)p->k, t, v, nv, r->tuned.elapsed_s, r->tuned.found ? r->tuned.best_config : "-", vtg);
}

/* --plot: the shape's GFLOP/s, one bar per kernel measured (a log axis when the naive kernel is
 * far below the others). */
static int plot_gemm(const char *path, const gemm_cli *g, const gemm_runs *r) {
  static const char *const vendor[] = {"OpenBLAS", "CLBlast", "cuBLAS"};
  const ht_gemm_problem *p = &g->p;
  double v[4] = {gflops(g, &r->tuned), r->vendor_note ? NAN : gflops(g, &r->vendor), gflops(g, &r->vendor_tuned),
                 r->naive_note ? NAN : gflops(g, &r->naive)};
  const char *names[4] = {"hetune (tuned)", vendor[g->target], "CLBlast tuned by hetune", "naive"};
  plot_series s[4];
  int n = 0;
  double lo = INFINITY, hi = 0;
  for (int i = 0; i < 4; i++)
    if (isfinite(v[i])) {
      s[n++] = (plot_series){names[i], PLOT_BARS, 1, NULL, &v[i], NULL, NULL, i, PLOT_AUTO, PLOT_NONE, 0};
      lo = fmin(lo, v[i]), hi = fmax(hi, v[i]);
    }
  char shape[96], title[256];
  snprintf(shape, sizeof shape, "%lld×%lld×%lld", (long long)p->m, (long long)p->n, (long long)p->k);
  snprintf(title, sizeof title, "GEMM %s %s%s%s on %s", shape, p->type == HT_DTYPE_F64 ? "f64" : "f32",
           p->trans_a ? " Aᵀ" : "", p->trans_b ? " Bᵀ" : "", r->tuned.device.name);
  const char *cats[] = {shape};
  const int log = n && hi > 30 * lo;
  plot_panel pan = {NULL, {"shape (M×N×K)", 0, NAN, NAN}, {log ? "GFLOP/s (log scale)" : "GFLOP/s", log, NAN, NAN}, n, s,
                    1, cats, NULL};
  plot_figure fig = {title, NULL, 1, 1, &pan, 0};
  if (!n) return fprintf(stderr, "hetune gemm: --plot: nothing was measured\n"), CLI_ERROR;
  if (plot_write(path, &fig)) return fprintf(stderr, "hetune gemm: cannot write %s: %s\n", path, strerror(errno)), CLI_ERROR;
  printf("  plot:     %s\n", path);
  return CLI_OK;
}

/* The vendor library's spec has a parameter TUNE when the library can take tuning parameters
 * (CLBlast): TUNE 0 is the library as installed, TUNE 1 its kernel with the config's parameters. */
static int has_tune_parameter(const ht_spec *spec) {
  for (int i = 0; i < ht_spec_param_count(spec); i++)
    if (strcmp(ht_spec_param_name(spec, i), "TUNE") == 0) return 1;
  return 0;
}

/* The vendor baselines are C kernels that reach their device themselves (cuBLAS, CLBlast): they
 * run on the host device, learn which GPU or OpenCL device from the environment, and are stored
 * under that device, where their GEMM ran. Their first call may compile the library's kernels
 * (CLBlast on PoCL: seconds), hence the long timeout. The library's own space is measured
 * (OpenBLAS's thread counts, most first), or, for a tunable library, the library as installed. */
static ht_status measure_vendor(gemm_cli *g, ht_store *st, gemm_runs *r, ht_spec *spec) {
  ht_tune_options o;
  ht_runner_options ro;
  progress_ctx pc;
  stage_options(g, g->target == HT_GEMM_C ? "openblas" : g->target == HT_GEMM_OPENCL ? "clblast" : "cublas", &o, &ro,
                &pc);
  ro.timeout_s = 300;
  if (g->target != HT_GEMM_C) o.store_device = &g->dev;
  ht_status s = HT_OK;
  const int tunable = has_tune_parameter(spec);
  if (!(r->vendor_note = stage_share(g, 2, 0, &o, &ro))) {
    s = run_stage(g, spec, tunable ? "TUNE == 0" : NULL, "c", &o, &ro, 1, st, &r->vendor);
    if (!s && tunable) snprintf(r->vendor.best_config, sizeof r->vendor.best_config, "(as installed)");
  }
  if (!s && !tunable && g->tune_vendor > 0)
    fprintf(stderr, "hetune gemm: --tune-vendor ignored: %s takes no tuning parameters\n",
            g->target == HT_GEMM_CUDA ? "cuBLAS" : "OpenBLAS");
  if (s || !tunable || g->tune_vendor <= 0) return s;
  /* --tune-vendor N: the library's own kernel with N configs of its space, by the run's strategy */
  stage_options(g, "vendor tuning", &o, &ro, &pc);
  o.strategy = g->to.strategy;
  o.strategy_options = g->to.strategy_options;
  o.seed = g->to.seed;
  ro.timeout_s = 300;
  o.store_device = &g->dev;
  if (stage_share(g, g->tune_vendor, 0, &o, &ro)) return HT_OK; /* nothing left: no clblast* line */
  return run_stage(g, spec, "TUNE == 1", "c", &o, &ro, 0, st, &r->vendor_tuned);
}

static ht_status measure_naive(gemm_cli *g, ht_store *st, gemm_runs *r) {
  if (!g->naive) r->naive_note = "skipped";
  else if (g->naive < 0) r->naive_note = "skipped (2*M*N*K > 1e10 would take minutes; --naive forces it)";
  ht_tune_options o;
  ht_runner_options ro;
  progress_ctx pc;
  stage_options(g, "naive", &o, &ro, &pc);
  ro.timeout_s = 600; /* the naive kernel is slow by design */
  ro.min_runs = 2;
  if (r->naive_note || (r->naive_note = stage_share(g, 2, 0, &o, &ro))) return HT_OK;
  ht_spec *spec = NULL;
  ht_status s = ht_gemm_spec(&g->p, g->target, HT_GEMM_NAIVE, g->out, &spec);
  if (!s) s = run_stage(g, spec, NULL, g->device, &o, &ro, 1, st, &r->naive);
  ht_spec_destroy(spec);
  return s;
}

/* The search, last: the rest of the budget, by the run's strategy. */
static ht_status search(gemm_cli *g, ht_store *st, gemm_runs *r) {
  ht_tune_options o;
  ht_runner_options ro;
  progress_ctx pc;
  stage_options(g, "tuning", &o, &ro, &pc);
  const ht_tune_options *u = &g->to;
  o.strategy = u->strategy;
  o.strategy_options = u->strategy_options;
  o.seed = u->seed;
  o.seed_configs = (const char *const *)r->seeds;
  o.n_seed_configs = (int)r->warm_share;
  g->evals_left += r->warm_share;
  stage_share(g, g->evals_left, 1, &o, NULL);
  return run_stage(g, r->spec, NULL, g->device, &o, &ro, 0, st, &r->tuned);
}

/* The device's limits as its worker reports them, without starting its runtime in this process
 * (the runner forks its workers from it): a runner on the generated spec at 1 x 1 x 1. */
static ht_status probe_device(const gemm_cli *g, ht_spec *spec, ht_device_info *info) {
  ht_runner *run = NULL;
  static const char *const one[] = {"M=1", "N=1", "K=1"}, *const names[] = {"M", "N", "K"};
  ht_status s = HT_OK;
  for (int i = 0; i < 3 && !s; i++) s = ht_spec_set_size(spec, one[i]);
  ht_runner_options ro;
  ht_runner_options_default(&ro);
  if (!s) s = ht_runner_create(spec, g->device, &ro, &run);
  if (!s) *info = *ht_runner_device(run);
  ht_runner_destroy(run);
  const int64_t sizes[] = {g->p.m, g->p.n, g->p.k};
  for (int i = 0; i < 3 && !s; i++) {
    char back[64];
    snprintf(back, sizeof back, "%s=%lld", names[i], (long long)sizes[i]);
    s = ht_spec_set_size(spec, back);
  }
  return s;
}

/* The stages, in the order they share the budget (see --budget in the help): the warm start, the
 * vendor library (and its tuning), the naive kernel, then the search with what is left. */
static int run_all(gemm_cli *g, ht_store *st, gemm_runs *r) {
  if (ht_gemm_spec(&g->p, g->target, HT_GEMM_TUNED, g->out, &r->spec)) return cli_fail("gemm");
  if (g->target != HT_GEMM_C) {
    if (probe_device(g, r->spec, &g->dev)) return cli_fail("gemm");
    g->p.gpu = &g->dev; /* the CUDA model config picks within this device's limits */
  }
  if (g->warm && warm_start(g, st, r)) return cli_fail("gemm: warm start");
  setenv("HETUNE_GEMM_DEVICE", g->device, 1);
  ht_spec *vendor = NULL;
  char why[128];
  if (!g->vendor) {
    r->vendor_note = "skipped (--no-vendor)";
  } else if (!ht_gemm_vendor_available(g->target, why, sizeof why)) { /* its budget goes to the search */
    snprintf(r->vendor_missing, sizeof r->vendor_missing, "not installed: %s", why);
    r->vendor_note = r->vendor_missing;
  } else if (ht_gemm_spec(&g->p, g->target, HT_GEMM_VENDOR, g->out, &vendor) || measure_vendor(g, st, r, vendor)) {
    return ht_spec_destroy(vendor), cli_fail("gemm: vendor baseline");
  }
  ht_spec_destroy(vendor);
  if (measure_naive(g, st, r)) return cli_fail("gemm: naive kernel");
  if (search(g, st, r)) return cli_fail("gemm");
  return CLI_OK;
}

int cmd_gemm(int argc, char **argv) {
  static const char *const flags[] = {"trans-a", "trans-b", "no-vendor", "naive", "no-naive", "no-warm", "tsv", "quiet",
                                      NULL};
  static const char *const known[] = {"device", "type",      "trans-a", "trans-b", "alpha",    "beta", "strategy",
                                      "options", "budget",   "time",    "seed",    "db",       "out",  "no-vendor",
                                      "naive",   "no-naive", "tsv",     "quiet",   "no-warm", "tune-vendor", "plot", NULL};
  if (cli_wants_help(argc, argv)) return fputs(help, stdout), CLI_OK;
  cli_args a;
  gemm_cli g = {0};
  int rc = cli_parse(argc, argv, "gemm", known, flags, &a);
  if (!rc) rc = parse_problem(&a, &g);
  if (!rc) rc = parse_tuning(&a, &g);
  if (rc) return rc;
  g.quiet = cli_has(&a, "quiet");
  g.tsv = cli_has(&a, "tsv");
  g.vendor = !cli_has(&a, "no-vendor");
  g.warm = !cli_has(&a, "no-warm");
  double flops = 2.0 * (double)g.p.m * (double)g.p.n * (double)g.p.k;
  g.naive = cli_has(&a, "no-naive") ? 0 : cli_has(&a, "naive") || flops <= NAIVE_MAX_FLOPS ? 1 : -1;
  g.db = cli_db_path(&a);
  char *out = cli_opt(&a, "out") ? ht_strdup(cli_opt(&a, "out")) : default_out(&g);
  if (!out) return cli_fail("gemm");
  g.out = out;
  ht_store *st;
  if (ht_store_open(g.db, &st)) return free(out), cli_fail("gemm");
  signal(SIGINT, on_sigint);
  g.evals_left = g.to.budget_evals;
  g.t0 = ht_now();
  gemm_runs *r = calloc(1, sizeof *r);
  rc = r ? run_all(&g, st, r) : cli_fail("gemm: out of memory");
  if (!rc) print_report(&g, r);
  if (!rc && cli_opt(&a, "plot")) rc = plot_gemm(cli_opt(&a, "plot"), &g, r);
  if (r) {
    ht_spec_destroy(r->spec);
    ht_tune_configs_free(r->seeds, r->n_seed_configs);
  }
  free(r);
  ht_store_close(st);
  free(out);
  return rc;
}
