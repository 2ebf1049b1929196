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
  "library (OpenBLAS on c, CLBlast on opencl, cuBLAS on cuda) and the naive kernel in the same run. Prints GFLOP/s\n"
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
  "  --tune-vendor N also tune the vendor library's own GEMM kernel on this device with N evaluations,\n"
  "                  where it takes tuning parameters (CLBlast's Xgemm), and report it next to the\n"
  "                  library as installed\n"
  "  --naive         measure the naive kernel even when 2*M*N*K > 1e10 (slow)\n"
  "  --no-naive      do not measure the naive kernel\n"
  "  --no-warm       no warm start (by default the generator's model config, on c and cuda, and the best\n"
  "                  stored configs of the nearest other sizes are measured too, after the search)\n"
  "  --tsv           end with one tab-separated line: m n k tuned vendor naive GFLOP/s, tuning s, best,\n"
  "                  tuned vendor GFLOP/s (nan without --tune-vendor); on c, a line vendor_build before it\n"
  "                  (openblas_get_config: version and the kernels it picked)\n"
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
  int quiet, tsv, vendor, naive, warm;
  long long tune_vendor; /* evaluations to tune the vendor library's own kernel (CLBlast), 0: none */
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

static void progress(const ht_tune_progress *p, void *ctx) {
  const char *what = ctx;
  fprintf(stderr, "\r\033[K%s [%lld] best %.3g ms, %lld failed, %lld reused, %.0f s", what, (long long)p->done,
          p->best_time_s * 1e3, (long long)p->failures, (long long)p->reused, p->elapsed_s);
  fflush(stderr);
}

/* One spec generated by gen, tuned on the device; the summary's best is the result. */
typedef ht_status (*gen_fn)(const ht_gemm_problem *, ht_gemm_target, const char *, char **);

static ht_status tune_one(const gemm_cli *g, gen_fn gen, const char *what, const char *device, const ht_tune_options *to,
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
  s = ht_tune(spec, device, st, &o, ro, sum);
  if (o.progress) fputs("\r\033[K", stderr);
  ht_spec_destroy(spec);
  return s;
}

static double gflops(const gemm_cli *g, const ht_tune_summary *s) {
  if (!s->found || !(s->best.time_s > 0)) return NAN;
  return 2.0 * (double)g->p.m * (double)g->p.n * (double)g->p.k / s->best.time_s / 1e9;
}

/* ---- warm start: the best stored configs of this kernel at other sizes ---- */

enum { MAX_SEEDS = 4, MAX_SEED_PROBLEMS = 256 };

typedef struct seed_problem {
  char problem[128], key[1024];
  double time_s, dist;
} seed_problem;

typedef struct seed_ctx {
  const ht_spec *spec;
  char problem[512];
  double lm, ln, lk;
  seed_problem p[MAX_SEED_PROBLEMS];
  int n;
} seed_ctx;

/* Distance between shapes: sum of |log ratio| of the three sides. */
static double shape_dist(const seed_ctx *c, const char *problem) {
  double v[3] = {0, 0, 0};
  const char *s = problem;
  while (*s) {
    char name;
    double x;
    if (sscanf(s, "%c=%lf", &name, &x) == 2 && x > 0) v[name == 'M' ? 0 : name == 'N' ? 1 : 2] = log(x);
    const char *comma = strchr(s, ',');
    if (!comma) break;
    s = comma + 1;
  }
  return fabs(v[0] - c->lm) + fabs(v[1] - c->ln) + fabs(v[2] - c->lk);
}

static int seed_visit(const ht_eval_record *r, void *ctx) {
  seed_ctx *c = ctx;
  if (strcmp(r->source_hash, c->spec->source_hash) != 0 || strcmp(r->problem, c->problem) == 0) return 0;
  if (r->result.status != HT_EVAL_OK || !(r->result.time_s > 0) || strlen(r->config_key) >= sizeof c->p[0].key) return 0;
  int i = 0;
  while (i < c->n && strcmp(c->p[i].problem, r->problem) != 0) i++;
  if (i == c->n) {
    if (c->n == MAX_SEED_PROBLEMS || strlen(r->problem) >= sizeof c->p[0].problem) return 0;
    snprintf(c->p[c->n].problem, sizeof c->p[0].problem, "%s", r->problem);
    c->p[c->n].time_s = INFINITY;
    c->p[c->n++].dist = shape_dist(c, r->problem);
  }
  if (r->result.time_s < c->p[i].time_s) {
    c->p[i].time_s = r->result.time_s;
    snprintf(c->p[i].key, sizeof c->p[i].key, "%s", r->config_key);
  }
  return 0;
}

static int by_dist(const void *a, const void *b) {
  double x = ((const seed_problem *)a)->dist, y = ((const seed_problem *)b)->dist;
  return x < y ? -1 : x > y;
}

/* "MR=14,NV=2" -> "(MR == 14 && NV == 2)" appended to b. */
static void key_to_constraint(ht_buf *b, const char *key) {
  ht_buf_append(b, "(");
  for (const char *s = key; *s; s++) {
    if (*s == ',') ht_buf_append(b, " && ");
    else if (*s == '=') ht_buf_append(b, " == ");
    else ht_buf_append_bytes(b, s, 1);
  }
  ht_buf_append(b, ")");
}

/* The constraint admitting only the best configs of the nearest other sizes and the model's config
 * (model_key, "" for none), or NULL. */
static char *seed_constraint(ht_store *st, const ht_spec *spec, const ht_gemm_problem *p, const char *model_key,
                             int *n_seeds) {
  seed_ctx *c = calloc(1, sizeof *c);
  *n_seeds = 0;
  if (!c) return NULL;
  c->spec = spec;
  c->lm = log((double)p->m), c->ln = log((double)p->n), c->lk = log((double)p->k);
  ht_spec_problem_key(spec, c->problem, sizeof c->problem);
  ht_eval_filter f = {.kernel_name = spec->name, .only_ok = 1};
  if (ht_store_each_eval(st, &f, seed_visit, c)) ht_error_clear();
  qsort(c->p, (size_t)c->n, sizeof c->p[0], by_dist);
  ht_buf b = {0};
  for (int i = 0; i < c->n && *n_seeds < MAX_SEEDS; i++) {
    int dup = 0;
    for (int j = 0; j < i; j++) dup |= strcmp(c->p[j].key, c->p[i].key) == 0;
    if (dup) continue;
    if (*n_seeds) ht_buf_append(&b, " || ");
    key_to_constraint(&b, c->p[i].key);
    ++*n_seeds;
  }
  free(c);
  if (*model_key) { /* may repeat a stored seed: the constraint admits it once all the same */
    if (*n_seeds) ht_buf_append(&b, " || ");
    key_to_constraint(&b, model_key);
  }
  if (b.failed || (!*n_seeds && !*model_key)) {
    ht_buf_free(&b);
    *n_seeds = 0;
    return NULL;
  }
  return b.data;
}

/* Tunes the loaded spec with one more constraint (taken over: malloc'ed), whose configs are stored
 * as evaluations of the spec like any other. */
static ht_status tune_restricted(ht_spec *spec, char *constraint, const char *device, ht_store *st,
                                 const ht_tune_options *o, const ht_runner_options *ro, ht_tune_summary *sum) {
  char **grown = constraint ? realloc(spec->constraints, sizeof(char *) * (size_t)(spec->n_constraints + 1)) : NULL;
  if (!grown) {
    free(constraint);
    return ht_error(HT_ERR_NOMEM, "out of memory");
  }
  spec->constraints = grown;
  spec->constraints[spec->n_constraints++] = constraint;
  return ht_tune(spec, device, st, o, ro, sum);
}

static void brute_force_options(ht_tune_options *o) {
  ht_tune_options_default(o);
  o->strategy = "brute_force";
  o->stop = &stop_requested;
}

/* Measures the seeds (a brute-force session on the spec restricted to them): the generator's model
 * config and the best stored configs of the nearest other sizes. They are stored as evaluations of
 * this problem like any other, so the report's best may come from them. */
static ht_status warm_start(const gemm_cli *g, const char *spec_path, ht_store *st, const ht_runner_options *ro,
                            ht_tune_summary *sum, int *n_seeds, char *model_key, size_t model_cap) {
  ht_spec *spec;
  *n_seeds = 0;
  if (!ht_gemm_model_config(&g->p, g->target, model_key, model_cap)) model_key[0] = 0;
  ht_status s = ht_spec_load(spec_path, &spec);
  if (s) return s;
  char *cons = seed_constraint(st, spec, &g->p, model_key, n_seeds);
  if (cons) {
    ht_tune_options o;
    brute_force_options(&o);
    s = tune_restricted(spec, cons, g->device, st, &o, ro, sum);
  }
  ht_spec_destroy(spec);
  return s;
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
  ht_tune_summary tuned, vendor, vendor_tuned, naive, warm;
  int n_seeds;             /* stored configs of other sizes in the warm start */
  char model_key[256];     /* the generator's model config in the warm start, "" for none */
  const char *vendor_note, *naive_note;
  char *spec_path;
} gemm_runs;

/* The seeds count as tuning: their time and evaluations are added, and the best of both wins. */
static void merge_warm(gemm_runs *r) {
  if (!r->n_seeds && !r->model_key[0]) return;
  ht_tune_summary *t = &r->tuned, *w = &r->warm;
  t->elapsed_s += w->elapsed_s;
  t->measured += w->measured;
  t->reused += w->reused;
  t->failures += w->failures;
  if (w->found && (!t->found || w->best.time_s < t->best.time_s)) {
    t->found = 1;
    t->best = w->best;
    memcpy(t->best_config, w->best_config, sizeof t->best_config);
  }
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
  printf("  spec:     %s\n", r->spec_path);
  print_line("tuned:", g, &r->tuned, NULL);
  if (r->n_seeds || r->model_key[0]) {
    printf("  (warm start:");
    if (r->model_key[0]) printf(" the model's config %s%s", r->model_key, r->n_seeds ? " and" : "");
    if (r->n_seeds)
      printf(" %d stored best config%s of the nearest other sizes", r->n_seeds, r->n_seeds > 1 ? "s" : "");
    printf(", best %.3f ms%s)\n", r->warm.found ? r->warm.best.time_s * 1e3 : NAN,
           r->warm.found && r->warm.best.time_s <= r->tuned.best.time_s ? ", kept" : "");
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

/* The vendor library's spec has a parameter TUNE when the library can take tuning parameters
 * (CLBlast): TUNE 0 is the library as installed, TUNE 1 its kernel with the config's parameters. */
static int has_tune_parameter(const ht_spec *spec) {
  for (int i = 0; i < spec->n_params; i++)
    if (strcmp(spec->params[i].name, "TUNE") == 0) return 1;
  return 0;
}

/* The vendor baselines are C kernels that reach their device themselves (cuBLAS, CLBlast): they
 * run on the host device and learn which OpenCL device from the environment. Their first call may
 * compile the library's kernels (CLBlast on PoCL: seconds), hence the timeout. Every config of the
 * library's own space is measured (OpenBLAS's thread counts), or, for a tunable library, the
 * library as installed, and with --tune-vendor N its own kernel tuned with N evaluations. */
static ht_status measure_vendor(const gemm_cli *g, ht_store *st, const ht_runner_options *ro, gemm_runs *r) {
  setenv("HETUNE_GEMM_DEVICE", g->device, 1);
  ht_runner_options vo = *ro;
  vo.timeout_s = 300;
  char *path = NULL;
  ht_status s = ht_gemm_generate_vendor(&g->p, g->target, g->out, &path);
  ht_spec *spec = NULL;
  if (!s) s = ht_spec_load(path, &spec);
  const int tunable = !s && has_tune_parameter(spec);
  ht_tune_options o;
  brute_force_options(&o);
  if (!s)
    s = tunable ? tune_restricted(spec, ht_strdup("TUNE == 0"), "c", st, &o, &vo, &r->vendor)
                : ht_tune(spec, "c", st, &o, &vo, &r->vendor);
  ht_spec_destroy(spec);
  if (!s && tunable) snprintf(r->vendor.best_config, sizeof r->vendor.best_config, "(as installed)");
  if (!s && !tunable && g->tune_vendor > 0)
    fprintf(stderr, "hetune gemm: --tune-vendor ignored: %s takes no tuning parameters\n",
            g->target == HT_GEMM_CUDA ? "cuBLAS" : "OpenBLAS");
  if (!s && tunable && g->tune_vendor > 0 && !(s = ht_spec_load(path, &spec))) {
    o = g->to;
    o.budget_evals = g->tune_vendor;
    if (!g->quiet && isatty(2)) {
      o.progress = progress;
      o.progress_ctx = (void *)"vendor tuning";
    }
    s = tune_restricted(spec, ht_strdup("TUNE == 1"), "c", st, &o, &vo, &r->vendor_tuned);
    if (o.progress) fputs("\r\033[K", stderr);
    ht_spec_destroy(spec);
  }
  free(path);
  return s;
}

static int run_all(gemm_cli *g, ht_store *st, gemm_runs *r) {
  ht_runner_options ro;
  ht_runner_options_default(&ro);
  if (tune_one(g, ht_gemm_generate, "tuning", g->device, &g->to, &ro, st, &r->tuned, &r->spec_path))
    return cli_fail("gemm");
  if (g->warm && warm_start(g, r->spec_path, st, &ro, &r->warm, &r->n_seeds, r->model_key, sizeof r->model_key))
    return cli_fail("gemm: warm start");
  merge_warm(r);
  if (!g->vendor) r->vendor_note = "skipped (--no-vendor)";
  else if (measure_vendor(g, st, &ro, r)) return cli_fail("gemm: vendor baseline");
  /* The naive kernel: every config of its (small) space of work-group shapes. */
  ht_tune_options bo;
  brute_force_options(&bo);
  char *path = NULL;
  ro.timeout_s = 600; /* the naive kernel is slow by design */
  ro.min_runs = 2;
  if (!g->naive) r->naive_note = "skipped";
  else if (g->naive < 0) r->naive_note = "skipped (2*M*N*K > 1e10 would take minutes; --naive forces it)";
  else if (tune_one(g, ht_gemm_generate_naive, "naive", g->device, &bo, &ro, st, &r->naive, &path))
    return free(path), cli_fail("gemm: naive kernel");
  free(path);
  return CLI_OK;
}

int cmd_gemm(int argc, char **argv) {
  static const char *const flags[] = {"trans-a", "trans-b", "no-vendor", "naive", "no-naive", "no-warm", "tsv", "quiet",
                                      NULL};
  static const char *const known[] = {"device", "type",      "trans-a", "trans-b", "alpha",    "beta", "strategy",
                                      "options", "budget",   "time",    "seed",    "db",       "out",  "no-vendor",
                                      "naive",   "no-naive", "tsv",     "quiet",   "no-warm", "tune-vendor", NULL};
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
  gemm_runs *r = calloc(1, sizeof *r);
  rc = r ? run_all(&g, st, r) : cli_fail("gemm: out of memory");
  if (!rc) print_report(&g, r);
  if (r) free(r->spec_path);
  free(r);
  ht_store_close(st);
  free(out);
  return rc;
}
