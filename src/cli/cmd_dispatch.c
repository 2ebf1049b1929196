/* hetune dispatch decide|run|bench|export-cache|explain COMP, and hetune explain COMP: per-call
 * dispatch of a computation file from the command line. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char *dispatch_help =
  "usage: hetune dispatch decide COMP [--size K=V ...] [--db F]\n"
  "       hetune dispatch run COMP [--size K=V ...] [--calls N] [--db F]\n"
  "       hetune dispatch bench COMP --sizes K=LO:HI [--points N] [--repeat R] [--db F]\n"
  "       hetune dispatch export-cache COMP --output F.h [--symbol NAME] [--sizes K=LO:HI --points N]\n"
  "       hetune dispatch explain COMP [--size K=V ...]   (also: hetune explain COMP)\n"
  "\n"
  "A computation file names one operation's variants (a spec on a device with a config, or \"best\")\n"
  "and how to choose among them (docs/dispatch.md). decide prints the variant chosen for a call's\n"
  "sizes; run makes data as the spec says and runs the call N times, deciding each time and\n"
  "learning from each time measured; bench goes up N sizes spread from LO to HI, measuring every\n"
  "variant at every other one and deciding each size between two measured ones before anything\n"
  "runs there (exploration off), then measuring it too, and scores the choices against the\n"
  "fastest measured there: accuracy and regret, beside always choosing the variant that wins\n"
  "most sizes; export-cache writes the decisions as a C header for the application;\n"
  "explain shows what each variant is expected to take, from what, and what was measured.\n"
  "\n"
  "  --size K=V       a call size (repeatable; default: the specs' sizes)\n"
  "  --sizes K=LO:HI  the size swept (bench, export-cache); other sizes as --size gives them\n"
  "  --points N       sizes in the sweep, spaced evenly in log (default 13)\n"
  "  --repeat R       calls per variant and size (bench; default 5)\n"
  "  --calls N        calls (run; default 1)\n"
  "  --output F.h     the header to write (export-cache)\n"
  "  --symbol NAME    the C name of its table (default: the computation's name)\n"
  "  --db FILE        database of tuned configs, models and the call log (default hetune.db or $HETUNE_DB)\n";

static const char *const known[] = {"size", "sizes", "points", "repeat", "calls", "output", "symbol", "db", NULL};

typedef struct dispatch_cli {
  cli_args a;
  ht_store *st;
  ht_computation *c;
  int n_sizes;
  int64_t sizes[16];
} dispatch_cli;

/* --size options over the spec's own sizes. */
static int read_sizes(dispatch_cli *d, const char *cmd) {
  d->n_sizes = ht_spec_size_count(ht_computation_spec(d->c));
  return cli_size_options(&d->a, ht_computation_spec(d->c), d->sizes, cmd);
}

static int open_all(dispatch_cli *d, const char *cmd) {
  if (d->a.n_pos < 2) return cli_usage_error(cmd, "expected a computation file");
  if (ht_store_open(cli_db_path(&d->a), &d->st)) return cli_fail(cmd);
  ht_status st = ht_computation_load(d->a.pos[1], d->st, &d->c);
  if (st) return cli_fail_device(cmd, st);
  const ht_spec *s = ht_computation_spec(d->c);
  if (ht_spec_size_count(s) > 16) return cli_usage_error(cmd, "%s has more than 16 sizes", ht_spec_name(s));
  for (int i = 0; i < ht_spec_size_count(s); i++) d->sizes[i] = ht_spec_size_value(s, i);
  return read_sizes(d, cmd);
}

static void sizes_text(const dispatch_cli *d, const int64_t *sizes, char *buf, size_t len) {
  const ht_spec *s = ht_computation_spec(d->c);
  size_t at = 0;
  buf[0] = 0;
  for (int i = 0; i < ht_spec_size_count(s) && at < len; i++)
    at += (size_t)snprintf(buf + at, len - at, "%s%s=%lld", i ? "," : "", ht_spec_size_name(s, i), (long long)sizes[i]);
}

/* ---- decide, run, explain ---- */

static void print_decision(const dispatch_cli *d, const ht_decision *x) {
  char sz[256];
  sizes_text(d, d->sizes, sz, sizeof sz);
  printf("%s %s: variant %d, %s (config %s)\n", ht_spec_name(ht_computation_spec(d->c)), sz, x->variant,
         ht_computation_variant_label(d->c, x->variant), *x->config ? x->config : "none");
  printf("  expected ");
  cli_print_seconds(x->pred_total_s);
  printf(", from %s%s", ht_decision_source_name(x->source), x->close ? " (close to the runner-up: may be explored)" : "");
  if (x->decide_ns > 0) printf("; decided in %.0f ns", x->decide_ns);
  printf("\n");
}

static int do_decide(dispatch_cli *d) {
  ht_decision x;
  if (ht_computation_decide(d->c, d->sizes, &x)) return cli_fail("dispatch decide");
  print_decision(d, &x);
  return CLI_OK;
}

static int do_run(dispatch_cli *d) {
  long long calls = 1;
  const char *v = cli_opt(&d->a, "calls");
  if (v && cli_integer_in("dispatch run", "--calls", v, 1, 100000000, &calls)) return CLI_USAGE;
  ht_host_arg *args;
  if (ht_computation_make_args(d->c, d->sizes, 1, &args)) return cli_fail("dispatch run");
  int rc = CLI_OK;
  for (long long i = 0; i < calls && !rc; i++) {
    ht_decision x;
    ht_run_times t;
    if (ht_computation_run(d->c, d->sizes, args, &x, &t)) {
      rc = cli_fail("dispatch run");
      break;
    }
    printf("call %lld: variant %d (%s) from %s: kernel ", i + 1, x.variant, ht_computation_variant_label(d->c, x.variant),
           ht_decision_source_name(x.source));
    cli_print_seconds(t.kernel_s);
    printf(", copies ");
    cli_print_seconds(t.h2d_s + t.d2h_s);
    printf(", expected ");
    cli_print_seconds(x.pred_total_s);
    printf("\n");
  }
  ht_computation_free_args(d->c, args);
  if (!rc && ht_computation_flush(d->c)) rc = cli_fail("dispatch run");
  return rc;
}

static int do_explain(dispatch_cli *d) {
  int n = ht_computation_variant_count(d->c);
  ht_variant_estimate *e = calloc((size_t)n, sizeof *e);
  ht_decision x;
  int rc = e && !ht_computation_estimate(d->c, d->sizes, e) && !ht_computation_decide(d->c, d->sizes, &x)
               ? CLI_OK
               : cli_fail("explain");
  if (!rc) print_decision(d, &x);
  for (int i = 0; !rc && i < n; i++) {
    printf("  %c%d %s\n      expected ", i == x.variant ? '*' : ' ', i, ht_computation_variant_label(d->c, i));
    if (!isfinite(e[i].total_s)) printf("nothing yet: no time measured or modelled; a call runs it to learn\n");
    if (!isfinite(e[i].total_s)) continue;
    cli_print_seconds(e[i].total_s);
    if (isfinite(e[i].band_lo)) {
      printf(" (band ");
      cli_print_seconds(e[i].band_lo);
      printf(" -");
      cli_print_seconds(e[i].band_hi);
      printf(")");
    }
    printf(" from %s", ht_decision_source_name(e[i].source));
    if (isfinite(e[i].kernel_s)) {
      printf(": kernel ");
      cli_print_seconds(e[i].kernel_s);
      printf(" + copies ");
      cli_print_seconds(e[i].transfer_s);
    }
    printf("\n      config %s; correction x%.3f; %d sizes measured; %s\n", *e[i].config ? e[i].config : "none",
           e[i].correction, e[i].n_sizes_measured, e[i].has_model ? "a stored model" : "no stored model");
    if (e[i].n_recent) printf("      measured here, newest last:");
    for (int k = 0; k < e[i].n_recent; k++) cli_print_seconds(e[i].recent[k]);
    if (e[i].n_recent) printf("\n");
  }
  free(e);
  return rc;
}

/* ---- sweeps: bench and export-cache ---- */

typedef struct sweep {
  int dim, n;
  int64_t *at; /* n sizes of dimension dim */
} sweep;

static int read_sweep(dispatch_cli *d, const char *cmd, sweep *sw) {
  const char *v = cli_opt(&d->a, "sizes"), *p = cli_opt(&d->a, "points");
  long long points = 13;
  if (p && cli_integer_in(cmd, "--points", p, 2, 1000, &points)) return CLI_USAGE;
  const ht_spec *s = ht_computation_spec(d->c);
  char name[64];
  long long lo, hi;
  int used = 0;
  if (!v || sscanf(v, "%63[^=]=%lld:%lld%n", name, &lo, &hi, &used) != 3 || v[used] || lo < 1 || hi <= lo)
    return cli_usage_error(cmd, "--sizes: expected K=LO:HI with 1 <= LO < HI, got '%s'", v ? v : "");
  sw->dim = -1;
  for (int i = 0; i < ht_spec_size_count(s); i++)
    if (!strcmp(ht_spec_size_name(s, i), name)) sw->dim = i;
  if (sw->dim < 0) return cli_usage_error(cmd, "--sizes: %s has no size '%s'", ht_spec_name(s), name);
  sw->n = (int)points;
  sw->at = calloc((size_t)sw->n, sizeof *sw->at);
  if (!sw->at) return cli_fail(cmd);
  for (int i = 0; i < sw->n; i++)
    sw->at[i] = llround(exp(log((double)lo) + (log((double)hi) - log((double)lo)) * i / (sw->n - 1)));
  return CLI_OK;
}

/* The median total of repeat calls of each variant at sizes (each fed back as a measurement),
 * the variants taking turns call by call: a slow moment of the machine (another program, an idle
 * vCPU waking) then falls on all of them alike instead of on one variant's calls. */
static int measure(dispatch_cli *d, int nv, const int64_t *sizes, int repeat, double *out) {
  ht_host_arg *args;
  if (ht_computation_make_args(d->c, sizes, 1, &args)) return cli_fail("dispatch bench");
  double (*t)[64] = calloc((size_t)nv, sizeof *t);
  int rc = t ? CLI_OK : cli_fail("dispatch bench");
  for (int r = 0; r < repeat && !rc; r++)
    for (int v = 0; v < nv && !rc; v++) {
      ht_run_times rt;
      if (ht_computation_run_variant(d->c, v, sizes, args, &rt)) rc = cli_fail("dispatch bench");
      t[v][r] = rt.kernel_s + rt.h2d_s + rt.d2h_s;
    }
  ht_computation_free_args(d->c, args);
  for (int v = 0; v < nv && !rc; v++) out[v] = ht_stat_median(t[v], repeat);
  free(t);
  return rc;
}

typedef struct score {
  int n, hits;
  double regret_sum, regret_max;
} score;

static void add_score(score *s, double chosen, double best) {
  double r = chosen / best - 1;
  s->n++;
  s->hits += r <= 0;
  s->regret_sum += r;
  s->regret_max = fmax(s->regret_max, r);
}

static void print_score(const char *what, const score *s) {
  printf("%-34s accuracy %5.1f%% (%d of %d), mean regret %6.2f%%, max regret %7.2f%%\n", what,
         s->n ? 100.0 * s->hits / s->n : 0, s->hits, s->n, s->n ? 100 * s->regret_sum / s->n : 0, 100 * s->regret_max);
}

/* Sizes in order: each odd point is decided once its two even neighbours are measured and before
 * anything runs there, then measured at once. Its history and its truth are then measured within a
 * moment of each other: a shared machine's speed drifts in phases of seconds (other tenants, an
 * idle vCPU), and a sweep measuring every history size first could score a decision made on one
 * phase's times against another phase's. */
static int bench_sizes(dispatch_cli *d, const sweep *sw, int repeat, int nv, double *t, ht_decision *chosen) {
  int64_t sizes[16];
  memcpy(sizes, d->sizes, sizeof sizes);
  sizes[sw->dim] = sw->at[0];
  int rc = measure(d, nv, sizes, repeat, t);
  for (int i = 1; i < sw->n && !rc; i += 2) {
    if (i + 1 < sw->n) { /* the even neighbour above: history */
      sizes[sw->dim] = sw->at[i + 1];
      rc = measure(d, nv, sizes, repeat, &t[(i + 1) * nv]);
    }
    sizes[sw->dim] = sw->at[i];
    if (!rc && ht_computation_decide(d->c, sizes, &chosen[i])) rc = cli_fail("dispatch bench");
    if (!rc) rc = measure(d, nv, sizes, repeat, &t[i * nv]);
  }
  return rc;
}

static int fastest(const double *t, int nv) {
  int b = 0;
  for (int v = 1; v < nv; v++)
    if (t[v] < t[b]) b = v;
  return b;
}

static void bench_report(dispatch_cli *d, const sweep *sw, int nv, const double *t, const ht_decision *chosen) {
  const ht_spec *s = ht_computation_spec(d->c);
  int wins[64] = {0};
  for (int i = 1; i < sw->n; i += 2) wins[fastest(&t[i * nv], nv)]++;
  int majority = 0;
  for (int v = 0; v < nv; v++)
    if (wins[v] > wins[majority]) majority = v;
  printf("%12s", ht_spec_size_name(s, sw->dim));
  for (int v = 0; v < nv; v++) printf("   variant %-2d", v);
  printf("  fastest chosen from\n");
  score sel = {0}, base = {0};
  for (int i = 0; i < sw->n; i++) {
    const double *ti = &t[i * nv];
    int best = fastest(ti, nv);
    printf("%12lld", (long long)sw->at[i]);
    for (int v = 0; v < nv; v++) printf("  "), cli_print_seconds(ti[v]);
    int c = chosen[i].variant;
    if (i % 2) printf("  %7d %6d %s%s\n", best, c, ht_decision_source_name(chosen[i].source), c == best ? "" : " *");
    else printf("  %7d   (measured)\n", best);
    if (i % 2) add_score(&sel, ti[c], ti[best]), add_score(&base, ti[majority], ti[best]);
  }
  for (int v = 0; v < nv; v++) printf("variant %d: %s\n", v, ht_computation_variant_label(d->c, v));
  printf("sizes never measured before deciding: %d\n", sel.n);
  print_score("selector:", &sel);
  char what[64];
  snprintf(what, sizeof what, "always variant %d (wins most):", majority);
  print_score(what, &base);
}

/* Each variant runs for a fifth of a second first, in a computation of its own whose times are
 * dropped: a process's first parallel calls can wait milliseconds for an idle core (a virtual
 * machine's idle vCPU), and the sweep would take that for the variant's speed. */
static int warm_up(dispatch_cli *d, const int64_t *sizes) {
  ht_computation *w;
  ht_host_arg *args = NULL;
  if (ht_computation_load(d->a.pos[1], NULL, &w) || ht_computation_make_args(w, sizes, 1, &args)) {
    ht_computation_destroy(w);
    return cli_fail("dispatch bench");
  }
  int rc = CLI_OK;
  for (int v = 0; v < ht_computation_variant_count(w) && !rc; v++)
    for (double t0 = ht_now(); ht_now() - t0 < 0.2 && !rc;)
      if (ht_computation_run_variant(w, v, sizes, args, NULL)) rc = cli_fail("dispatch bench");
  ht_computation_free_args(w, args);
  ht_computation_destroy(w);
  return rc;
}

static int do_bench(dispatch_cli *d) {
  long long repeat = 5;
  const char *r = cli_opt(&d->a, "repeat");
  if (r && cli_integer_in("dispatch bench", "--repeat", r, 1, 64, &repeat)) return CLI_USAGE;
  sweep sw = {0};
  int rc = read_sweep(d, "dispatch bench", &sw);
  int nv = ht_computation_variant_count(d->c);
  if (!rc && nv > 64) rc = cli_usage_error("dispatch bench", "more than 64 variants");
  double *t = rc ? NULL : calloc((size_t)(sw.n * nv), sizeof *t);
  ht_decision *chosen = rc ? NULL : calloc((size_t)sw.n, sizeof *chosen);
  if (!rc && (!t || !chosen)) rc = cli_fail("dispatch bench");
  /* The score is the selector's: its exploration would run a close runner-up on purpose. */
  if (!rc && ht_computation_set_options(d->c, "explore=0")) rc = cli_fail("dispatch bench");
  int64_t first[16];
  memcpy(first, d->sizes, sizeof first);
  if (!rc) first[sw.dim] = sw.at[0];
  if (!rc) rc = warm_up(d, first);
  if (!rc) rc = bench_sizes(d, &sw, (int)repeat, nv, t, chosen);
  if (!rc) bench_report(d, &sw, nv, t, chosen);
  if (!rc && ht_computation_flush(d->c)) rc = cli_fail("dispatch bench");
  free(t);
  free(chosen);
  free(sw.at);
  return rc;
}

static int do_export(dispatch_cli *d) {
  const char *path = cli_opt(&d->a, "output");
  if (!path) return cli_usage_error("dispatch export-cache", "expected --output F.h");
  char sym[128];
  snprintf(sym, sizeof sym, "%s", cli_opt(&d->a, "symbol") ? cli_opt(&d->a, "symbol") : ht_computation_name(d->c));
  sweep sw = {0};
  int rc = cli_opt(&d->a, "sizes") ? read_sweep(d, "dispatch export-cache", &sw) : CLI_OK;
  const int ns = ht_spec_size_count(ht_computation_spec(d->c));
  int64_t *all = rc ? NULL : calloc((size_t)(sw.n * ns + 1), sizeof *all);
  for (int i = 0; all && i < sw.n; i++) {
    memcpy(all + (size_t)i * ns, d->sizes, sizeof *all * (size_t)ns);
    all[(size_t)i * ns + sw.dim] = sw.at[i];
  }
  FILE *f = rc ? NULL : fopen(path, "w");
  if (!rc && (!all || !f)) {
    fprintf(stderr, "hetune: dispatch export-cache: cannot write %s\n", path);
    rc = CLI_ERROR;
  }
  if (!rc && ht_computation_export_cache(d->c, all, sw.n, sym, f)) rc = cli_fail("dispatch export-cache");
  if (f && fclose(f) && !rc) rc = cli_fail("dispatch export-cache");
  if (!rc) fprintf(stderr, "wrote %s\n", path);
  free(all);
  free(sw.at);
  return rc;
}

static const struct {
  const char *name;
  int (*fn)(dispatch_cli *d);
} subcommands[] = {{"decide", do_decide}, {"run", do_run},         {"bench", do_bench},
                   {"export-cache", do_export}, {"explain", do_explain}};

static int dispatch_main(int argc, char **argv, const char *sub) {
  if (cli_wants_help(argc, argv)) {
    fputs(dispatch_help, stdout);
    return CLI_OK;
  }
  dispatch_cli d = {0};
  int rc = cli_parse(argc, argv, "dispatch", known, NULL, &d.a);
  if (rc) return rc;
  if (!sub && d.a.n_pos < 1) return cli_usage_error("dispatch", "expected decide, run, bench, export-cache or explain");
  if (!sub) sub = d.a.pos[0];
  for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++) {
    if (strcmp(subcommands[i].name, sub)) continue;
    if (!(rc = open_all(&d, "dispatch"))) rc = subcommands[i].fn(&d);
    ht_computation_destroy(d.c);
    ht_store_close(d.st);
    return rc;
  }
  return cli_usage_error("dispatch", "unknown subcommand '%s' (decide, run, bench, export-cache, explain)", sub);
}

int cmd_dispatch(int argc, char **argv) { return dispatch_main(argc, argv, NULL); }

/* hetune explain COMP ...: the positional arguments shift by one (no subcommand word). */
int cmd_explain(int argc, char **argv) {
  char **shifted = calloc((size_t)argc + 2, sizeof *shifted);
  if (!shifted) return cli_fail("explain");
  shifted[0] = argv[0];
  shifted[1] = "explain";
  for (int i = 1; i < argc; i++) shifted[i + 1] = argv[i];
  int rc = dispatch_main(argc + 1, shifted, "explain");
  free(shifted);
  return rc;
}
