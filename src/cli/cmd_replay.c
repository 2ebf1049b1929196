/* hetune replay / strategy-bench: strategies on recorded spaces, without a device. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"

/* A recorded space from a file, or from the store (--db with --kernel). */
static int load_record(const cli_args *a, const char *cmd, const char *path, ht_recorded **out) {
  if (path) return ht_recorded_load(path, out) ? cli_fail(cmd) : CLI_OK;
  const char *kernel = cli_opt(a, "kernel");
  if (!kernel) return cli_usage_error(cmd, "expected a RECORD file, or --kernel NAME with --db FILE");
  ht_store *st;
  if (ht_store_open_readonly(cli_db_path(a), &st)) return cli_fail(cmd);
  int rc = ht_recorded_from_store(st, kernel, cli_opt(a, "device"), cli_opt(a, "problem"), out) ? cli_fail(cmd) : CLI_OK;
  ht_store_close(st);
  return rc;
}

static void print_time(const char *label, double s) {
  if (s < 1e-3) printf("%s%.2f us", label, s * 1e6);
  else if (s < 1) printf("%s%.3f ms", label, s * 1e3);
  else printf("%s%.3f s", label, s);
}

/* ---- replay ---- */
static const char *replay_help =
  "usage: hetune replay RECORD [options]\n"
  "       hetune replay --db FILE --kernel NAME [--device D] [--problem P] [options]\n"
  "\n"
  "Runs a strategy against a recorded space (every config measured once) without a device: each\n"
  "evaluation costs the time it took when recorded, plus the strategy's own time. RECORD is a CSV\n"
  "written by 'hetune export --format csv' (data/spaces/*.csv), a T4 results file or a Kernel Tuner\n"
  "cache file.\n"
  "\n"
  "  --strategy S      strategy (default random; see 'hetune tune --help')\n"
  "  --options K=V,..  strategy options\n"
  "  --budget N        evaluations at most (default: until the space is exhausted)\n"
  "  --time S          simulated seconds at most\n"
  "  --seed N          strategy seed (default 1)\n"
  "  --trace           print every evaluation (time, value, best so far)\n";

static int replay_options(const cli_args *a, ht_replay_options *o) {
  long long n;
  const char *v;
  int rc = CLI_OK;
  ht_replay_options_default(o);
  if ((v = cli_opt(a, "strategy"))) o->strategy = v;
  o->strategy_options = cli_opt(a, "options");
  if (!rc && (v = cli_opt(a, "budget")) && !(rc = cli_integer("replay", "--budget", v, 1, &n))) o->budget_evals = n;
  if (!rc && (v = cli_opt(a, "seed")) && !(rc = cli_integer("replay", "--seed", v, 0, &n))) o->seed = (uint64_t)n;
  if (!rc && (v = cli_opt(a, "time"))) rc = cli_number("replay", "--time", v, 0, &o->budget_seconds);
  return rc;
}

static void print_replay(ht_recorded *r, const ht_replay_options *o, const ht_replay_trace *t, int trace) {
  ht_recorded_stats s;
  ht_recorded_stats_get(r, &s);
  if (trace)
    for (int i = 0; i < t->n; i++)
      printf("%d\t%.6g\t%.9g\t%.9g\n", i + 1, t->steps[i].t, t->steps[i].value, t->steps[i].best);
  printf("replayed %s (seed %llu) on %s: %d of %llu configs, %.1f s simulated\n", o->strategy,
         (unsigned long long)o->seed, ht_recorded_name(r), t->n, (unsigned long long)s.n,
         t->n ? t->steps[t->n - 1].t : 0.0);
  if (!t->found) {
    printf("  no config succeeded\n");
    return;
  }
  char cfg[1024];
  ht_config_format(ht_recorded_space(r), &t->best_config, cfg, sizeof cfg);
  printf("  best: %s\n", cfg);
  print_time("  time: ", t->steps[t->n - 1].best);
  print_time(" (optimum ", s.f_opt);
  printf(", %.1f%% slower)\n", 100.0 * (t->steps[t->n - 1].best / s.f_opt - 1));
  printf("  strategy time: %.3f ms per evaluation (slowest ask %.3f ms); brute force would take %.1f s\n",
         t->n ? 1e3 * t->strategy_s / t->n : 0.0, 1e3 * t->max_ask_s, s.total_cost_s);
}

int cmd_replay(int argc, char **argv) {
  static const char *const known[] = {"strategy", "options", "budget", "time", "seed", "trace",
                                      "db",       "kernel",  "device", "problem", NULL};
  static const char *const flags[] = {"trace", NULL};
  if (cli_wants_help(argc, argv)) {
    fputs(replay_help, stdout);
    return CLI_OK;
  }
  cli_args a;
  int rc = cli_parse(argc, argv, "replay", known, flags, &a);
  if (!rc && a.n_pos > 1) rc = cli_usage_error("replay", "expected one RECORD file");
  ht_replay_options o;
  if (!rc) rc = replay_options(&a, &o);
  ht_recorded *r = NULL;
  if (!rc) rc = load_record(&a, "replay", a.n_pos ? a.pos[0] : NULL, &r);
  if (rc) return rc;
  ht_replay_trace t;
  if (ht_replay(r, &o, &t)) rc = cli_fail("replay");
  else print_replay(r, &o, &t, cli_has(&a, "trace"));
  ht_replay_trace_free(&t);
  ht_recorded_destroy(r);
  return rc;
}

/* ---- strategy-bench ---- */
static const char *bench_help =
  "usage: hetune strategy-bench [RECORD...] [options]\n"
  "\n"
  "Scores strategies on recorded spaces with the methodology of Willemsen et al. (FGCS 2024):\n"
  "the baseline is random search without replacement, calculated exactly (the time at the\n"
  "expected rank of its best, (n+1)/(k+1) after k draws); the time budget runs from where that\n"
  "baseline reaches f_opt + (median - f_opt)(1 - start) to where it reaches f_opt + (median -\n"
  "f_opt)(1 - cutoff). At each time point the seeds' best times are combined in rank space (mean\n"
  "rank), and P(t) = (f(t) - f_random(t)) / (f_opt - f_random(t)) (0 = random search, 1 = the\n"
  "optimum); the score is the mean of P(t) over the budget, with a 95% bootstrap interval over\n"
  "the seeds; the summary averages the spaces. Time includes each evaluation's recorded compile\n"
  "and run time and the strategy's own time. Default RECORDs: data/spaces/*.csv.\n"
  "\n"
  "  --strategies A,B  strategies to score (default: every one but brute_force)\n"
  "  --seeds N         runs per strategy and space (default 20)\n"
  "  --first-seed N    seed of the first run; the runs use N, N+1, ... (default 1): another\n"
  "                    set of seeds checks that a difference between strategies is not luck\n"
  "  --cutoff P        end of the budget (default 0.96)\n"
  "  --start P         start of the budget (default 0.5)\n"
  "  --points N        time points in the budget (default 100)\n"
  "  --options K=V,..  options given to every strategy\n"
  "  --aggregate A     rank (default, the methodology's) or value: each run's P(t) averaged over\n"
  "                    runs, with the expected best time as baseline (heavy-tailed: one slow run\n"
  "                    can dominate)\n"
  "  --plot DIR        write the score curves P(t) overall and per space: NAME.svg (every strategy),\n"
  "                    NAME-panels.svg (a panel per strategy with its 95% band) and NAME.tsv\n"
  "  --no-strategy-time  leave the strategies' own time off the clock (deterministic scores)\n"
  "  --quiet           no progress on standard error\n";

typedef struct bench {
  ht_recorded *rec[16];
  ht_baseline base[16];
  int n_spaces;
  const char *strat[32];
  int n_strat;
  char strat_buf[1024];
  ht_score_options so;
  ht_score *score; /* [space][strategy] */
  const char *plot_dir;
  int quiet;
} bench;

static int bench_strategies(bench *b, const char *list) {
  if (!list) {
    for (int i = 0; i < ht_strategy_count() && b->n_strat < 32; i++)
      if (strcmp(ht_strategy_at(i)->name, "brute_force") != 0) b->strat[b->n_strat++] = ht_strategy_at(i)->name;
    return CLI_OK;
  }
  snprintf(b->strat_buf, sizeof b->strat_buf, "%s", list);
  for (char *save = NULL, *s = strtok_r(b->strat_buf, ",", &save); s && b->n_strat < 32; s = strtok_r(NULL, ",", &save)) {
    if (ht_strategy_check(s)) return cli_usage_error("strategy-bench", "%s", ht_last_error());
    b->strat[b->n_strat++] = s;
  }
  return b->n_strat ? CLI_OK : cli_usage_error("strategy-bench", "--strategies names none");
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The .csv files of data/spaces, sorted. */
static int default_records(bench *b) {
  DIR *d = opendir("data/spaces");
  char *names[16];
  int n = 0;
  if (!d) return cli_usage_error("strategy-bench", "no RECORD given and no data/spaces here");
  for (struct dirent *e; (e = readdir(d)) && n < 16;) {
    size_t len = strlen(e->d_name);
    if (len > 4 && strcmp(e->d_name + len - 4, ".csv") == 0) {
      names[n] = malloc(len + 13);
      if (names[n]) snprintf(names[n++], len + 13, "data/spaces/%s", e->d_name);
    }
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof *names, cmp_str);
  int rc = n ? CLI_OK : cli_usage_error("strategy-bench", "no .csv files in data/spaces");
  for (int i = 0; i < n; i++) {
    if (!rc && ht_recorded_load(names[i], &b->rec[b->n_spaces])) rc = cli_fail("strategy-bench");
    else if (!rc) b->n_spaces++;
    free(names[i]);
  }
  return rc;
}

static int bench_parse(int argc, char **argv, bench *b) {
  static const char *const known[] = {"strategies", "seeds", "first-seed", "cutoff", "start", "points", "options",
                                      "plot",       "aggregate", "no-strategy-time", "quiet", NULL};
  static const char *const flags[] = {"no-strategy-time", "quiet", NULL};
  cli_args a;
  int rc = cli_parse(argc, argv, "strategy-bench", known, flags, &a);
  if (rc) return rc;
  ht_score_options_default(&b->so);
  const char *v;
  long long n;
  if (!rc && (v = cli_opt(&a, "seeds")) && !(rc = cli_integer_in("strategy-bench", "--seeds", v, 1, 100000, &n))) b->so.seeds = (int)n;
  if (!rc && (v = cli_opt(&a, "first-seed")) && !(rc = cli_integer("strategy-bench", "--first-seed", v, 0, &n)))
    b->so.first_seed = (uint64_t)n;
  if (!rc && (v = cli_opt(&a, "points")) && !(rc = cli_integer_in("strategy-bench", "--points", v, 2, 100000, &n))) b->so.points = (int)n;
  if (!rc && (v = cli_opt(&a, "cutoff"))) rc = cli_number("strategy-bench", "--cutoff", v, 0, &b->so.p_cutoff);
  if (!rc && (v = cli_opt(&a, "start"))) rc = cli_number("strategy-bench", "--start", v, 0, &b->so.p_start);
  if (!rc && (b->so.p_cutoff >= 1 || b->so.p_start >= b->so.p_cutoff))
    rc = cli_usage_error("strategy-bench", "need 0 < --start < --cutoff < 1");
  if (!rc && (v = cli_opt(&a, "aggregate"))) {
    if (strcmp(v, "rank") == 0) b->so.aggregate = HT_AGGREGATE_RANK;
    else if (strcmp(v, "value") == 0) b->so.aggregate = HT_AGGREGATE_VALUE;
    else rc = cli_usage_error("strategy-bench", "--aggregate must be rank or value, not '%s'", v);
  }
  b->so.strategy_options = cli_opt(&a, "options");
  b->so.charge_strategy_time = !cli_has(&a, "no-strategy-time");
  b->plot_dir = cli_opt(&a, "plot");
  b->quiet = cli_has(&a, "quiet");
  if (!rc) rc = bench_strategies(b, cli_opt(&a, "strategies"));
  if (!rc && a.n_pos == 0) rc = default_records(b);
  for (int i = 0; !rc && i < a.n_pos; i++) {
    if (ht_recorded_load(a.pos[i], &b->rec[b->n_spaces])) rc = cli_fail("strategy-bench");
    else b->n_spaces++;
  }
  return rc;
}

static void print_space_header(const bench *b, int s) {
  ht_recorded_stats st;
  ht_recorded_stats_get(b->rec[s], &st);
  const ht_baseline *bl = &b->base[s];
  printf("\n%s: %llu configs (%llu ok), optimum %.4g ms, median %.4g ms, %.3f s per evaluation\n",
         ht_recorded_name(b->rec[s]), (unsigned long long)st.n, (unsigned long long)st.n_ok, st.f_opt * 1e3,
         st.f_median * 1e3, st.mean_cost_s);
  printf("  budget %.1f s .. %.1f s (random search: %.0f .. %.0f evaluations)\n", bl->t_start, bl->t_cutoff,
         bl->t_start / bl->mean_cost_s, bl->t_cutoff / bl->mean_cost_s);
  printf("  %-22s %8s %17s %8s %10s %10s\n", "strategy", "score", "95% interval", "run std", "evals", "overhead");
}

static void print_score_row(const char *name, const ht_score *sc) {
  printf("  %-22s %8.3f  [%6.3f, %6.3f] %8.3f %10.1f %9.3f%%\n", name, sc->mean, sc->lo, sc->hi, sc->std, sc->evals_mean,
         100 * sc->overhead_frac);
}

static int run_bench(bench *b) {
  b->score = calloc((size_t)b->n_spaces * (size_t)b->n_strat, sizeof *b->score);
  if (!b->score) return cli_fail("strategy-bench");
  for (int s = 0; s < b->n_spaces; s++) {
    if (ht_baseline_compute(b->rec[s], &b->so, &b->base[s])) return cli_fail("strategy-bench");
    print_space_header(b, s);
    for (int k = 0; k < b->n_strat; k++) {
      if (!b->quiet) fprintf(stderr, "strategy-bench: %s on %s ...\n", b->strat[k], ht_recorded_name(b->rec[s]));
      ht_score *sc = &b->score[s * b->n_strat + k];
      if (ht_score_strategy(b->rec[s], &b->base[s], b->strat[k], &b->so, sc)) return cli_fail(b->strat[k]);
      print_score_row(b->strat[k], sc);
      fflush(stdout);
    }
  }
  return CLI_OK;
}

/* The summary: mean over spaces, worst space, and the score per space. */
static void print_summary(const bench *b) {
  printf("\nscore (0 = random search, 1 = optimum), %d seeds per space, budget to cutoff %.2f\n", b->so.seeds,
         b->so.p_cutoff);
  printf("| strategy | mean | worst |");
  for (int s = 0; s < b->n_spaces; s++) printf(" %s |", ht_recorded_name(b->rec[s]));
  printf("\n|---|---|---|");
  for (int s = 0; s < b->n_spaces; s++) printf("---|");
  printf("\n");
  for (int k = 0; k < b->n_strat; k++) {
    double sum = 0, worst = INFINITY;
    for (int s = 0; s < b->n_spaces; s++) {
      double v = b->score[s * b->n_strat + k].mean;
      sum += v;
      worst = fmin(worst, v);
    }
    printf("| %s | %.3f | %.3f |", b->strat[k], sum / b->n_spaces, worst);
    for (int s = 0; s < b->n_spaces; s++) {
      const ht_score *sc = &b->score[s * b->n_strat + k];
      printf(" %.3f ± %.3f |", sc->mean, sc->ci95);
    }
    printf("\n");
  }
}

/* The curves of one space (s >= 0) or averaged over spaces (s < 0): each strategy's P(t) and the
 * half-width of its 95% interval, at the budget's points x. */
typedef struct curves {
  int S, P;
  double *x, *y, *half, *lo, *hi, ends[2];
  char names[32][48], title[256];
} curves;

static int curves_make(const bench *b, int s, curves *c) {
  int P = c->P = b->so.points, S = c->S = b->n_strat;
  c->x = malloc(sizeof(double) * (size_t)P);
  c->y = calloc((size_t)S * P, sizeof *c->y);
  c->half = calloc((size_t)S * P, sizeof *c->half);
  c->lo = malloc(sizeof(double) * (size_t)S * P);
  c->hi = malloc(sizeof(double) * (size_t)S * P);
  if (!c->x || !c->y || !c->half || !c->lo || !c->hi) return -1;
  const int lo = s < 0 ? 0 : s, hi = s < 0 ? b->n_spaces : s + 1;
  for (int k = 0; k < S; k++) {
    double mean = 0;
    for (int j = 0; j < P; j++) {
      for (int q = lo; q < hi; q++) {
        const ht_score *sc = &b->score[q * S + k];
        c->y[k * P + j] += sc->curve[j] / (hi - lo);
        c->half[k * P + j] += (sc->curve_hi[j] - sc->curve_lo[j]) / 2 / (hi - lo);
      }
      c->lo[k * P + j] = c->y[k * P + j] - c->half[k * P + j];
      c->hi[k * P + j] = c->y[k * P + j] + c->half[k * P + j];
      mean += c->y[k * P + j] / P;
    }
    snprintf(c->names[k], sizeof c->names[k], "%s (%.2f)", b->strat[k], mean); /* the score: P(t)'s mean */
  }
  const ht_baseline *bl = s >= 0 ? &b->base[s] : NULL;
  for (int j = 0; j < P; j++) c->x[j] = bl ? bl->t_start + j * (bl->t_cutoff - bl->t_start) / (P - 1) : (double)j / (P - 1);
  c->ends[0] = c->x[0], c->ends[1] = c->x[P - 1];
  snprintf(c->title, sizeof c->title, "%s: performance score P(t) of each strategy, %d seeds",
           s >= 0 ? ht_recorded_name(b->rec[s]) : "mean over spaces", b->so.seeds);
  return 0;
}

static void curves_free(curves *c) {
  free(c->x);
  free(c->y);
  free(c->half);
  free(c->lo);
  free(c->hi);
}

#define CURVES_NOTE "P = 0: random search; P = 1: the optimum. In brackets: the score (mean of P over the budget)."

/* The y range every panel shares: the curves' (not the bands'), with 0 and 1 in view. */
static void curves_range(const curves *c, plot_axis *y) {
  double lo = 0, hi = 1;
  for (int i = 0; i < c->S * c->P; i++) lo = fmin(lo, c->y[i]), hi = fmax(hi, c->y[i]);
  plot_nice_range(&lo, &hi, 0);
  y->lo = lo, y->hi = hi;
}

/* The note under the chart, naming strategies whose curves coincide (one hides the other). */
static void curves_note(const curves *c, const bench *b, char *note, size_t cap) {
  snprintf(note, cap, "%s", CURVES_NOTE);
  for (int k = 0; k < c->S; k++)
    for (int o = k + 1; o < c->S; o++) {
      int same = 1;
      for (int j = 0; j < c->P && same; j++) same = fabs(c->y[k * c->P + j] - c->y[o * c->P + j]) < 1e-9;
      size_t len = strlen(note);
      if (same && len + 64 < cap)
        snprintf(note + len, cap - len, "%s%s and %s coincide", strchr(note, '\n') ? "; " : "\n", b->strat[k],
                 b->strat[o]);
    }
}

/* One chart of every strategy's curve (colour, dash and marker apart), and small multiples: one
 * panel per strategy with its 95% band, the others in grey behind it. */
static int curves_write(const curves *c, const bench *b, int per_space, const char *svg, const char *svg_panels) {
  plot_series *all = calloc((size_t)c->S + 1, sizeof *all), *pan = calloc((size_t)c->S * (c->S + 1), sizeof *pan);
  plot_panel *panels = calloc((size_t)c->S, sizeof *panels);
  int rc = all && pan && panels ? 0 : -1;
  const char *xlabel = per_space ? "time (s): recorded compile + run + strategy" : "share of each space's time budget";
  plot_axis x = {xlabel, 0, c->ends[0], c->ends[1]}, y = {"performance score P(t)", 0, NAN, NAN};
  curves_range(c, &y);
  double zero[2] = {0, 0};
  for (int k = 0; !rc && k < c->S; k++)
    all[k] = (plot_series){c->names[k], PLOT_LINE, c->P, c->x, c->y + k * c->P, NULL, NULL, PLOT_AUTO, PLOT_AUTO, PLOT_AUTO, 0};
  if (!rc)
    all[c->S] = (plot_series){"random search", PLOT_LINE, 2, c->ends, zero, NULL, NULL, PLOT_GREY, 1, PLOT_NONE, 1.2};
  plot_panel one = {NULL, x, y, c->S + 1, all, 0, NULL, NULL};
  char note[512];
  curves_note(c, b, note, sizeof note);
  plot_figure fig = {c->title, note, 1, 1, &one, 0};
  if (!rc) rc = plot_write(svg, &fig);
  for (int k = 0; !rc && k < c->S; k++) { /* panel k: the others in grey, then strategy k over them */
    plot_series *ps = pan + k * (c->S + 1);
    int n = 0;
    for (int o = 0; o < c->S; o++)
      if (o != k) ps[n++] = (plot_series){NULL, PLOT_LINE, c->P, c->x, c->y + o * c->P, NULL, NULL, PLOT_GREY, 0, PLOT_NONE, 1};
    ps[n++] = (plot_series){NULL, PLOT_LINE, c->P, c->x, c->y + k * c->P, c->lo + k * c->P, c->hi + k * c->P, k, k,
                            PLOT_NONE, 2.2};
    panels[k] = (plot_panel){c->names[k], x, y, n, ps, 0, NULL, NULL};
  }
  plot_figure grid = {c->title, CURVES_NOTE "\nShaded: 95% interval over the seeds; grey: the other strategies.", c->S, c->S < 3 ? c->S : 3, panels, 0};
  if (!rc) rc = plot_write(svg_panels, &grid);
  free(all);
  free(pan);
  free(panels);
  return rc;
}

static int curves_tsv(const curves *c, const bench *b, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) return -1;
  fprintf(f, "t");
  for (int k = 0; k < c->S; k++) fprintf(f, "\t%s\t%s_ci95", b->strat[k], b->strat[k]);
  for (int j = 0; j < c->P; j++) {
    fprintf(f, "\n%.6g", c->x[j]);
    for (int k = 0; k < c->S; k++) fprintf(f, "\t%.5f\t%.5f", c->y[k * c->P + j], c->half[k * c->P + j]);
  }
  fprintf(f, "\n");
  return fclose(f) == 0 ? 0 : -1;
}

/* NAME.svg (every curve), NAME-panels.svg (one panel per strategy) and NAME.tsv of one space, or
 * of the mean over spaces (NAME overall). */
static int write_plot(const bench *b, int s) {
  curves c = {0};
  const char *name = s >= 0 ? ht_recorded_name(b->rec[s]) : "overall";
  char svg[1024], panels[1024], tsv[1024];
  snprintf(svg, sizeof svg, "%s/%s.svg", b->plot_dir, name);
  snprintf(panels, sizeof panels, "%s/%s-panels.svg", b->plot_dir, name);
  snprintf(tsv, sizeof tsv, "%s/%s.tsv", b->plot_dir, name);
  int rc = curves_make(b, s, &c);
  if (!rc) rc = curves_write(&c, b, s >= 0, svg, panels);
  if (!rc) rc = curves_tsv(&c, b, tsv);
  curves_free(&c);
  if (rc) fprintf(stderr, "hetune strategy-bench: cannot write %s/%s.*: %s\n", b->plot_dir, name, strerror(errno));
  return rc;
}

static int write_plots(const bench *b) {
  if (!b->plot_dir) return CLI_OK;
  if (mkdir(b->plot_dir, 0777) && errno != EEXIST) {
    fprintf(stderr, "hetune strategy-bench: cannot create %s: %s\n", b->plot_dir, strerror(errno));
    return CLI_ERROR;
  }
  for (int s = -1; s < b->n_spaces; s++)
    if (write_plot(b, s)) return CLI_ERROR;
  printf("\nplots: %s/overall.svg, overall-panels.svg and the same per space (with .tsv data)\n", b->plot_dir);
  return CLI_OK;
}

int cmd_strategy_bench(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    fputs(bench_help, stdout);
    return CLI_OK;
  }
  bench *b = calloc(1, sizeof *b);
  if (!b) return cli_fail("strategy-bench");
  int rc = bench_parse(argc, argv, b);
  if (!rc) rc = run_bench(b);
  if (!rc) print_summary(b);
  if (!rc) rc = write_plots(b);
  for (int i = 0; b->score && i < b->n_spaces * b->n_strat; i++) ht_score_free(&b->score[i]);
  for (int s = 0; s < b->n_spaces; s++) {
    ht_baseline_free(&b->base[s]);
    ht_recorded_destroy(b->rec[s]);
  }
  free(b->score);
  free(b);
  return rc;
}
