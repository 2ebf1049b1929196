/* hetune best / show / export: read the store. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static int open_readonly(const cli_args *a, ht_store **st) {
  const char *db = cli_db_path(a);
  if (ht_store_open_readonly(db, st)) return cli_fail("");
  return CLI_OK;
}

/* ---- best ---- */

/* A config measured more than once (tune --no-reuse, several sessions) is judged by the median of
 * its measurements, not by its luckiest one: with noisy timings the minimum over repeats favours
 * whichever config was measured most often. */
typedef struct best_row {
  char *device, *config;
  double time;
  int64_t eval_id;
} best_row;

typedef struct best_ctx {
  const char *source_hash;
  best_row *rows;
  int n, cap, failed;
  int64_t want_id; /* second pass: the evaluation to print */
  ht_result result;
} best_ctx;

static int collect_rows(const ht_eval_record *rec, void *ctx) {
  best_ctx *b = ctx;
  if (strcmp(rec->source_hash, b->source_hash) != 0 || rec->result.status != HT_EVAL_OK) return 0;
  if (b->n == b->cap) {
    int cap = b->cap ? 2 * b->cap : 64;
    best_row *r = realloc(b->rows, (size_t)cap * sizeof *r);
    if (!r) return b->failed = 1;
    b->rows = r;
    b->cap = cap;
  }
  best_row *r = &b->rows[b->n];
  r->device = ht_strdup(rec->device_id);
  r->config = ht_strdup(rec->config_key);
  r->time = rec->result.time_s;
  r->eval_id = rec->eval_id;
  if (!r->device || !r->config) {
    free(r->device);
    free(r->config);
    return b->failed = 1;
  }
  b->n++;
  return 0;
}

static int fetch_result(const ht_eval_record *rec, void *ctx) {
  best_ctx *b = ctx;
  if (rec->eval_id != b->want_id) return 0;
  b->result = rec->result;
  return 1;
}

static int cmp_best_row(const void *x, const void *y) {
  const best_row *a = x, *b = y;
  int c = strcmp(a->device, b->device);
  if (!c) c = strcmp(a->config, b->config);
  if (!c) c = (a->time > b->time) - (a->time < b->time);
  return c;
}

/* The (device, config) with the lowest median time; *median, *count: its median and measurements;
 * returns the row closest to that median (the latest of equals), or NULL when there are no rows. */
static const best_row *best_of_rows(best_ctx *b, double *median, int *count) {
  qsort(b->rows, (size_t)b->n, sizeof *b->rows, cmp_best_row);
  const best_row *best = NULL;
  for (int s = 0, e; s < b->n; s = e) {
    for (e = s + 1; e < b->n && !strcmp(b->rows[e].device, b->rows[s].device) &&
                    !strcmp(b->rows[e].config, b->rows[s].config);)
      e++;
    int m = e - s; /* sorted by time: the middle one, or the mean of the middle two */
    double med = m % 2 ? b->rows[s + m / 2].time : 0.5 * (b->rows[s + m / 2 - 1].time + b->rows[s + m / 2].time);
    if (best && !(med < *median)) continue;
    const best_row *near = &b->rows[s];
    for (int i = s; i < e; i++)
      if (fabs(b->rows[i].time - med) < fabs(near->time - med) ||
          (fabs(b->rows[i].time - med) == fabs(near->time - med) && b->rows[i].eval_id > near->eval_id))
        near = &b->rows[i];
    best = near;
    *median = med;
    *count = m;
  }
  return best;
}

static void best_free(best_ctx *b) {
  for (int i = 0; i < b->n; i++) {
    free(b->rows[i].device);
    free(b->rows[i].config);
  }
  free(b->rows);
  free(b);
}

static void print_best(const best_row *r, const ht_result *res, double median, int count, const char *problem) {
  printf("%s\n", r->config);
  printf("  %.6g ms on %s for %s", median * 1e3, r->device, problem);
  if (count > 1) printf(" (median of %d measurements)", count);
  else printf(" (median of %d runs)", res->n_samples);
  for (int i = 0; i < res->n_metrics; i++) printf("  %s: %.4g", res->metrics[i].name, res->metrics[i].value);
  printf("\n");
}

int cmd_best(int argc, char **argv) {
  static const char *const known[] = {"device", "size", "db", NULL};
  if (cli_wants_help(argc, argv)) {
    puts("usage: hetune best SPEC [--device D] [--size K=V]... [--db FILE]\n\n"
         "Prints the fastest stored config of SPEC for its problem sizes (and device, if given). A config\n"
         "measured more than once (tune --no-reuse, several sessions) counts with the median of its\n"
         "measurements.");
    return CLI_OK;
  }
  cli_args a;
  int rc = cli_parse(argc, argv, NULL, &a);
  if (!rc) rc = cli_check_known(&a, "best", known);
  if (!rc && a.n_pos != 1) rc = cli_usage_error("best", "expected one SPEC file");
  if (rc) return rc;
  ht_spec *spec;
  ht_store *st;
  if ((rc = cli_load_spec(&a, a.pos[0], &spec))) return rc;
  if ((rc = open_readonly(&a, &st))) {
    ht_spec_destroy(spec);
    return rc;
  }
  char problem[512];
  ht_spec_problem_key(spec, problem, sizeof problem);
  ht_eval_filter f = {spec->name, cli_opt(&a, "device"), problem, 1};
  best_ctx *b = calloc(1, sizeof *b);
  double median = 0;
  int count = 0;
  const best_row *r = NULL;
  if (!b) rc = (ht_error(HT_ERR_NOMEM, "out of memory"), cli_fail("best"));
  else {
    b->source_hash = spec->source_hash;
    if (ht_store_each_eval(st, &f, collect_rows, b)) rc = cli_fail("best");
    else if (b->failed) rc = (ht_error(HT_ERR_NOMEM, "out of memory"), cli_fail("best"));
    else if (!(r = best_of_rows(b, &median, &count))) {
      fprintf(stderr, "hetune best: no successful evaluation of %s for %s%s%s in %s\n", spec->name, problem,
              f.device_id ? " on " : "", f.device_id ? f.device_id : "", cli_db_path(&a));
      rc = CLI_ERROR;
    } else {
      b->want_id = r->eval_id;
      if (ht_store_each_eval(st, &f, fetch_result, b)) rc = cli_fail("best");
      else print_best(r, &b->result, median, count, problem);
    }
    best_free(b);
  }
  ht_store_close(st);
  ht_spec_destroy(spec);
  return rc;
}

/* ---- show ---- */

static int print_session(const ht_session_record *s, void *ctx) {
  (void)ctx;
  char best[32] = "-";
  if (isfinite(s->best_time_s)) snprintf(best, sizeof best, "%.4g ms", s->best_time_s * 1e3);
  printf("%5lld  %-20s %-12s %-28s %-12s %-11s %6lld  %s\n", (long long)s->session_id, s->kernel_name, s->device_id,
         s->problem, s->strategy, s->status ? s->status : "running", (long long)s->n_evals, best);
  return 0;
}

typedef struct top_ctx {
  int n;
  struct {
    double t;
    char cfg[512], dev[64], problem[256];
  } top[10];
} top_ctx;

static int collect_top(const ht_eval_record *rec, void *ctx) {
  top_ctx *t = ctx;
  if (rec->result.status != HT_EVAL_OK) return 0;
  int pos = t->n < 10 ? t->n : 10;
  while (pos > 0 && t->top[pos - 1].t > rec->result.time_s) pos--;
  if (pos >= 10) return 0;
  memmove(&t->top[pos + 1], &t->top[pos], sizeof t->top[0] * (size_t)(9 - pos));
  t->top[pos].t = rec->result.time_s;
  snprintf(t->top[pos].cfg, sizeof t->top[pos].cfg, "%s", rec->config_key);
  snprintf(t->top[pos].dev, sizeof t->top[pos].dev, "%s", rec->device_id);
  snprintf(t->top[pos].problem, sizeof t->top[pos].problem, "%s", rec->problem);
  if (t->n < 10) t->n++;
  return 0;
}

int cmd_show(int argc, char **argv) {
  static const char *const known[] = {"db", "device", NULL};
  if (cli_wants_help(argc, argv)) {
    puts("usage: hetune show [KERNEL-NAME] [--device D] [--db FILE]\n\n"
         "Lists the tuning sessions in the database; with a kernel name, also its ten fastest configs.");
    return CLI_OK;
  }
  cli_args a;
  int rc = cli_parse(argc, argv, NULL, &a);
  if (!rc) rc = cli_check_known(&a, "show", known);
  if (!rc && a.n_pos > 1) rc = cli_usage_error("show", "expected at most one kernel name");
  ht_store *st;
  if (rc || (rc = open_readonly(&a, &st))) return rc;
  printf("%5s  %-20s %-12s %-28s %-12s %-11s %6s  %s\n", "id", "kernel", "device", "problem", "strategy", "status",
         "evals", "best");
  if (ht_store_each_session(st, print_session, NULL)) rc = cli_fail("show");
  if (!rc && a.n_pos == 1) {
    ht_eval_filter f = {a.pos[0], cli_opt(&a, "device"), NULL, 1};
    top_ctx *t = calloc(1, sizeof *t);
    if (ht_store_each_eval(st, &f, collect_top, t)) rc = cli_fail("show");
    printf("\nfastest configs of %s:\n", a.pos[0]);
    for (int i = 0; i < t->n; i++)
      printf("  %10.4g ms  %-12s %-24s %s\n", t->top[i].t * 1e3, t->top[i].dev, t->top[i].problem, t->top[i].cfg);
    if (!t->n) printf("  none\n");
    free(t);
  }
  ht_store_close(st);
  return rc;
}

/* ---- export ---- */

int cmd_export(int argc, char **argv) {
  static const char *const known[] = {"db", "format", "kernel", "device", "output", "ok", NULL};
  static const char *const flags[] = {"ok", NULL};
  if (cli_wants_help(argc, argv)) {
    puts("usage: hetune export --format csv|t4 [--kernel NAME] [--device D] [--ok] [--output FILE] [--db FILE]\n\n"
         "Writes the stored evaluations as CSV or as the T4 results JSON shared by Kernel Tuner, KTT and BAT.\n"
         "--ok keeps only successful evaluations. Default output: standard output.");
    return CLI_OK;
  }
  cli_args a;
  int rc = cli_parse(argc, argv, flags, &a);
  if (!rc) rc = cli_check_known(&a, "export", known);
  const char *format = cli_opt(&a, "format");
  if (!rc && (!format || (strcmp(format, "csv") && strcmp(format, "t4"))))
    rc = cli_usage_error("export", "--format must be csv or t4");
  if (!rc && a.n_pos) rc = cli_usage_error("export", "takes no positional arguments");
  ht_store *st;
  if (rc || (rc = open_readonly(&a, &st))) return rc;
  const char *path = cli_opt(&a, "output");
  FILE *out = path ? fopen(path, "w") : stdout;
  if (!out) {
    fprintf(stderr, "hetune export: %s: %s\n", path, strerror(errno));
    ht_store_close(st);
    return CLI_ERROR;
  }
  ht_eval_filter f = {cli_opt(&a, "kernel"), cli_opt(&a, "device"), NULL, cli_has(&a, "ok")};
  ht_status s = strcmp(format, "csv") == 0 ? ht_store_export_csv(st, &f, out) : ht_store_export_t4(st, &f, out);
  if (s) rc = cli_fail(path ? path : "export"); /* a write error names the output file */
  if (out != stdout && fclose(out) != 0 && !rc) {
    fprintf(stderr, "hetune export: %s: %s\n", path, strerror(errno));
    rc = CLI_ERROR;
  }
  ht_store_close(st);
  return rc;
}
