/* hetune tune SPEC: the tuning loop with a progress line. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

static const char *help =
  "usage: hetune tune SPEC [options]\n"
  "\n"
  "Tunes the kernel of SPEC (see docs/spec.md), or of a BAT / Kernel Tuner T1 file (docs/interop.md),\n"
  "and stores every evaluation.\n"
  "Configs already in the database are reused, not measured again. Evaluations are committed 64 at\n"
  "a time, each first appended to a journal beside the database (DB-pending-PID-N): after kill -9,\n"
  "the next tuning stores what the journal holds.\n"
  "\n"
  "  --device D        device id: c, opencl, opencl:P:D, cuda, cuda:N (default: by the spec's language)\n"
  "  --strategy S      search strategy, listed below (default auto)\n"
  "  --options K=V,..  strategy options\n"
  "  --budget N|all    evaluate at most N configs (default: all for brute_force, 100 otherwise)\n"
  "  --time S          stop after S seconds\n"
  "  --seed N          strategy seed (default 1)\n"
  "  --batch N         ask the strategy for N configs at a time; they are measured one after\n"
  "                    another, and when --time is up those not measured yet are left out. On c, a\n"
  "                    batch's kernels are first compiled in parallel (--compile-jobs at once).\n"
  "                    Default: two per compile job for brute_force, random and auto on small\n"
  "                    spaces (their choices do not depend on it), twice the last, up to 32,\n"
  "                    after a batch with nothing to compile; else 1\n"
  "  --compile-jobs N  compilers at once for a batch (default: one per CPU this process may use)\n"
  "  --size K=V        override a problem size (repeatable)\n"
  "  --db FILE         database (default hetune.db or $HETUNE_DB)\n"
  "  --timeout S       a kernel run longer than S seconds is a hang (default 10)\n"
  "  --compile-timeout S\n"
  "                    compiling a config for longer fails it; the compiler is killed with the\n"
  "                    processes it started (default 300)\n"
  "  --setup-timeout S opening the device, making the data and the reference (default 300)\n"
  "  --warmup S        untimed runs for at least S seconds before timing (default 0: one run)\n"
  "  --min-runs N      timed runs at least (default 3)\n"
  "  --max-runs N      timed runs at most (default 50)\n"
  "  --rsd X           stop timing below this relative standard deviation (default 0.10)\n"
  "  --no-reuse        measure configs again even when stored\n"
  "  --confirm N       then measure the N fastest configs again, --confirm-runs times each (default\n"
  "                    2), every round in a fresh worker process; the best is the lowest median\n"
  "  --confirm-runs R  how often --confirm measures each config again (default 2)\n"
  "  --in-process      no worker process (faster, but a crashing kernel ends the run, and one past a\n"
  "                    timeout ends it with exit status 124, since a hung kernel cannot be stopped)\n"
  "  --allowed-flags L compile only if each of the spec's compiler flags matches a pattern of L\n"
  "                    (blank-separated globs; \"default\": flags that only tune code generation).\n"
  "                    For specs you did not write; also $HETUNE_ALLOWED_FLAGS (docs/spec.md)\n"
  "  -q, --quiet       no progress output\n"
  "  -v, --verbose     print each failed evaluation's whole reason (compiler output, mismatch, signal)\n"
  "\n"
  "Each failed evaluation's progress line carries the first line of its reason. Exit status: 0 when a\n"
  "config succeeded, 1 when none did or on an error, 2 for a bad command line or an unknown or\n"
  "unavailable device, 124 when --in-process met a timeout, 130 when stopped by Ctrl-C (143 by\n"
  "SIGTERM, 129 by SIGHUP): every finished evaluation is stored, and a second signal leaves at once.\n";

enum { DEFAULT_BUDGET = 100 };

typedef struct progress_ctx {
  int tty, quiet, verbose;
  const ht_spec *spec;
  int64_t by_status[HT_EVAL_CONSTRAINTS + 1]; /* evaluations seen, by status */
  char first_failure[2048];                   /* "config: status: first line of its reason" */
} progress_ctx;

static void fmt_time(double s, char *buf, size_t len) {
  if (!isfinite(s)) snprintf(buf, len, "-");
  else if (s < 1e-3) snprintf(buf, len, "%.2f us", s * 1e6);
  else if (s < 1) snprintf(buf, len, "%.3f ms", s * 1e3);
  else snprintf(buf, len, "%.3f s", s);
}

/* A failed evaluation's status and the first line of its reason: "compile: gemm.c:12: error: ...". */
static void fmt_failure(const ht_result *r, char *buf, size_t len) {
  size_t first = strcspn(r->message, "\n");
  snprintf(buf, len, "%s%s%.*s", ht_eval_status_name(r->status), first ? ": " : "", (int)first, r->message);
}

/* With -v a failure's whole reason follows its line, indented. */
static void print_reason(const ht_result *r) {
  const char *m = r->message;
  m += strcspn(m, "\n");
  while (*m == '\n') {
    m++;
    size_t n = strcspn(m, "\n");
    if (n) fprintf(stderr, "    %.*s\n", (int)n, m);
    m += n;
  }
}

static void show_progress(const ht_tune_progress *p, void *ctx) {
  progress_ctx *pc = ctx;
  const ht_result *r = p->last;
  char best[32], last[640], budget[32];
  pc->by_status[r->status]++;
  if (r->status == HT_EVAL_OK) fmt_time(r->time_s, last, sizeof last);
  else fmt_failure(r, last, sizeof last);
  if (r->status != HT_EVAL_OK && !pc->first_failure[0])
    snprintf(pc->first_failure, sizeof pc->first_failure, "%s: %s", p->last_config, last);
  if (pc->quiet) return;
  fmt_time(p->best_time_s, best, sizeof best);
  uint64_t size = p->space_size > INT64_MAX ? INT64_MAX : p->space_size;
  int64_t total = p->budget_evals > 0 && (uint64_t)p->budget_evals < size ? p->budget_evals : (int64_t)size;
  snprintf(budget, sizeof budget, "%s%lld", p->space_size_exact || total == p->budget_evals ? "" : "~",
           (long long)total);
  const char *clear = pc->tty ? "\r\033[K" : "";
  const int ok_line = !pc->tty && r->status == HT_EVAL_OK; /* a failure line is long enough */
  if (p->confirm_total > 0)
    fprintf(stderr, "%s[confirm %lld/%lld] %s: %s\n", clear, (long long)p->confirm_done, (long long)p->confirm_total,
            p->last_config, last);
  else if (!pc->tty || r->status != HT_EVAL_OK) /* on a terminal, failures keep their line */
    fprintf(stderr, "%s[%lld/%s] %s: %s%s%s%s%s\n", clear, (long long)p->done, budget, p->last_config, last,
            p->last_reused ? ", stored" : "", ok_line ? " (best " : "", ok_line ? best : "", ok_line ? ")" : "");
  if (pc->verbose && r->status != HT_EVAL_OK) print_reason(r);
  if (pc->tty && p->confirm_total == 0)
    fprintf(stderr, "[%lld/%s] best %s  failures %lld  reused %lld  %.0fs", (long long)p->done, budget, best,
            (long long)p->failures, (long long)p->reused, p->elapsed_s);
  fflush(stderr);
}

static int parse_runner_options(const cli_args *a, ht_runner_options *ro) {
  ht_runner_options_default(ro);
  const char *v;
  long long n;
  int rc = CLI_OK;
  if (!rc && (v = cli_opt(a, "timeout"))) rc = cli_number("tune", "--timeout", v, 0, &ro->timeout_s);
  if (!rc && (v = cli_opt(a, "compile-timeout")))
    rc = cli_number("tune", "--compile-timeout", v, 0, &ro->compile_timeout_s);
  if (!rc && (v = cli_opt(a, "setup-timeout"))) rc = cli_number("tune", "--setup-timeout", v, 0, &ro->setup_timeout_s);
  if (!rc && (v = cli_opt(a, "rsd"))) rc = cli_number("tune", "--rsd", v, 0, &ro->rsd_target);
  if (!rc && (v = cli_opt(a, "warmup")) && !(rc = cli_number("tune", "--warmup", v, -1e308, &ro->warmup_s)) &&
      ro->warmup_s < 0)
    rc = cli_usage_error("tune", "--warmup %s: expected seconds, 0 or more", v);
  if (!rc && (v = cli_opt(a, "min-runs")) && !(rc = cli_integer_in("tune", "--min-runs", v, 1, HT_MAX_SAMPLES, &n))) ro->min_runs = (int)n;
  if (!rc && (v = cli_opt(a, "max-runs")) && !(rc = cli_integer_in("tune", "--max-runs", v, 1, HT_MAX_SAMPLES, &n))) ro->max_runs = (int)n;
  if (!rc && (v = cli_opt(a, "compile-jobs")) && !(rc = cli_integer_in("tune", "--compile-jobs", v, 1, 256, &n)))
    ro->compile_jobs = (int)n;
  ro->isolate = !cli_has(a, "in-process");
  return rc;
}

static int parse_tune_options(const cli_args *a, ht_tune_options *o) {
  ht_tune_options_default(o);
  const char *v;
  long long n;
  int rc = CLI_OK;
  if ((v = cli_opt(a, "strategy")) && ht_strategy_check(v) == HT_ERR_UNSUPPORTED) {
    rc = cli_usage_error("tune", "--strategy %s: %s", v, ht_last_error());
  } else if (v && !ht_strategy_find(v)) {
    ht_buf names = {0};
    for (int i = 0; i < ht_strategy_count(); i++)
      ht_buf_appendf(&names, "%s%s", i ? ", " : "", ht_strategy_at(i)->name);
    rc = cli_usage_error("tune", "--strategy %s: unknown strategy (available: %s)", v, names.data ? names.data : "");
    ht_buf_free(&names);
  }
  if (v) o->strategy = v;
  o->strategy_options = cli_opt(a, "options");
  if (!rc && (v = cli_opt(a, "seed")) && !(rc = cli_integer("tune", "--seed", v, 0, &n))) o->seed = (uint64_t)n;
  if (!rc && (v = cli_opt(a, "batch")) && !(rc = cli_integer_in("tune", "--batch", v, 1, 4096, &n))) o->batch = (int)n;
  v = cli_opt(a, "budget");
  if (!rc && v && strcmp(v, "all") != 0 && !(rc = cli_integer("tune", "--budget", v, 1, &n))) o->budget_evals = n;
  if (!rc && (v = cli_opt(a, "time"))) rc = cli_number("tune", "--time", v, 0, &o->budget_seconds);
  /* Random search over a large space has no natural end: give it a default budget, not hours. */
  if (!cli_opt(a, "budget") && !cli_opt(a, "time") && strcmp(o->strategy, "brute_force") != 0)
    o->budget_evals = DEFAULT_BUDGET;
  o->no_reuse = cli_has(a, "no-reuse");
  if (!rc && (v = cli_opt(a, "confirm")) && !(rc = cli_integer("tune", "--confirm", v, 1, &n))) o->confirm = (int)n;
  if (!rc && (v = cli_opt(a, "confirm-runs")) && !(rc = cli_integer("tune", "--confirm-runs", v, 1, &n)))
    o->confirm_runs = (int)n;
  if (!rc && (o->confirm > 64 || o->confirm_runs > 64))
    rc = cli_usage_error("tune", "--confirm and --confirm-runs: at most 64 each");
  o->stop = &cli_stop_signal;
  return rc;
}

/* "5 compile, 2 correctness" */
static void fmt_failure_counts(const progress_ctx *pc, char *buf, size_t len) {
  size_t at = 0;
  buf[0] = '\0';
  for (int st = HT_EVAL_OK + 1; st <= HT_EVAL_CONSTRAINTS && at < len; st++)
    if (pc->by_status[st])
      at += (size_t)snprintf(buf + at, len - at, "%s%lld %s", at ? ", " : "", (long long)pc->by_status[st],
                             ht_eval_status_name((ht_eval_status)st));
}

static void print_summary(const ht_spec *spec, const ht_tune_summary *s, const progress_ctx *pc,
                          const ht_runner_options *ro, const char *db) {
  char t[32], fails[160];
  fmt_failure_counts(pc, fails, sizeof fails);
  printf("tuned %s on %s (%s) for %s\n", ht_spec_name(spec), s->device.id, s->device.name, s->problem);
  printf("  space: %s%llu valid configs; evaluated %lld (measured %lld, reused %lld), %lld failed%s%s%s, in %.1f s%s\n",
         s->space_size_exact ? "" : "about ", (unsigned long long)s->space_size,
         (long long)(s->measured + s->reused), (long long)s->measured,
         (long long)s->reused, (long long)s->failures, fails[0] ? " (" : "", fails, fails[0] ? ")" : "", s->elapsed_s,
         s->interrupted ? " (interrupted)" : "");
  if (s->confirmed) printf("  confirmed: %lld more measurements of the fastest configs\n", (long long)s->confirmed);
  if (!s->found) {
    printf("  no config succeeded\n");
    return;
  }
  fmt_time(s->best.time_s, t, sizeof t);
  printf("  best: %s\n", s->best_config);
  if (s->best_measurements > 1)
    printf("  time: %s (median of %d measurements, each in its own worker process)", t, s->best_measurements);
  else printf("  time: %s (median of %d runs, rsd %.1f%%)", t, s->best.n_samples, s->best.rsd * 100);
  for (int i = 0; i < s->best.n_metrics; i++) printf("  %s: %.4g", s->best.metrics[i].name, s->best.metrics[i].value);
  printf("\n");
  if (s->best_measurements <= 1 && s->best.rsd > ro->rsd_target)
    printf("  warning: the best time's rsd %.1f%% stayed above the %.0f%% target (noisy device, or too few runs):\n"
           "           rank it again with --confirm 3, or raise --max-runs\n",
           s->best.rsd * 100, ro->rsd_target * 100);
  printf("  stored in %s (session %lld)\n", db, (long long)s->session_id);
}

/* 0: a config succeeded; 1: none did, or an error; 2: an unknown or unavailable device; 130: stopped
 * by Ctrl-C (what was measured is stored). */
static int tune_exit_code(ht_status st, const ht_tune_summary *sum, const progress_ctx *pc, const char *spec_path) {
  if (cli_stop_signal) return 128 + cli_stop_signal; /* 130 after Ctrl-C */
  if (st) return cli_fail_device(spec_path, st);
  if (sum->found) return CLI_OK;
  if (pc->first_failure[0])
    fprintf(stderr, "hetune tune: no config succeeded; the first failure was %s%s\n", pc->first_failure,
            pc->verbose ? "" : " (-v prints each failure's whole reason; hetune export has them all)");
  else fprintf(stderr, "hetune tune: no config was evaluated\n");
  return CLI_ERROR;
}

int cmd_tune(int argc, char **argv) {
  static const char *const flags[] = {"no-reuse", "in-process", "quiet", "verbose", NULL};
  static const char *const known[] = {"device",  "strategy", "options", "budget",   "time",         "seed",
                                      "size",    "db",       "timeout", "warmup",   "min-runs",     "max-runs",
                                      "rsd",     "confirm",  "no-reuse", "quiet",   "confirm-runs", "in-process",
                                      "verbose", "compile-timeout", "setup-timeout", "allowed-flags", "batch",
                                      "compile-jobs", NULL};
  if (cli_wants_help(argc, argv)) {
    fputs(help, stdout);
    puts("\nstrategies (options and defaults: docs/strategies.md):");
    for (int i = 0; i < ht_strategy_count(); i++)
      printf("  %-20s %s\n", ht_strategy_at(i)->name, ht_strategy_at(i)->summary);
    return CLI_OK;
  }
  cli_args a;
  ht_tune_options to;
  ht_runner_options ro;
  int rc = cli_parse(argc, argv, "tune", known, flags, &a);
  if (!rc && a.n_pos != 1) rc = cli_usage_error("tune", "expected one SPEC file (see hetune tune --help)");
  if (!rc) rc = parse_tune_options(&a, &to);
  if (!rc) rc = parse_runner_options(&a, &ro);
  if (rc) return rc;
  /* The backends check every compile against it, workers included (they inherit it). */
  if (cli_opt(&a, "allowed-flags")) setenv("HETUNE_ALLOWED_FLAGS", cli_opt(&a, "allowed-flags"), 1);
  ht_spec *spec;
  if ((rc = cli_load_spec(&a, a.pos[0], &spec))) return rc;
  ht_store *store;
  const char *db = cli_db_path(&a);
  if (ht_store_open(db, &store)) {
    ht_spec_destroy(spec);
    return cli_fail("");
  }
  progress_ctx pc = {.tty = isatty(2), .quiet = cli_has(&a, "quiet"), .verbose = cli_has(&a, "verbose"), .spec = spec};
  to.progress = show_progress;
  to.progress_ctx = &pc;
  cli_catch_stop_signals(); /* the run stops after the config in hand; the session is stored as interrupted */
  const char *device = cli_opt(&a, "device") ? cli_opt(&a, "device") : cli_default_device(spec);
  ht_tune_summary *sum = malloc(sizeof *sum);
  ht_status st = sum ? ht_tune(spec, device, store, &to, &ro, sum) : ht_error(HT_ERR_NOMEM, "out of memory");
  if (pc.tty && !pc.quiet) fputc('\n', stderr);
  if (!st) print_summary(spec, sum, &pc, &ro, db);
  rc = tune_exit_code(st, sum, &pc, a.pos[0]);
  free(sum);
  ht_store_close(store);
  ht_spec_destroy(spec);
  return rc;
}
