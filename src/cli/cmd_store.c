/* hetune best / show / export: read the store. */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
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
  char *device, *problem, *config;
  double time;
  int64_t eval_id;
} best_row;

typedef struct best_ctx {
  const char *source_hash; /* NULL: any version of the kernel */
  best_row *rows;
  int n, cap, failed;
  int64_t want_id; /* second pass: the evaluation to print */
  ht_result result;
  char *config_json; /* its config as JSON (malloc'ed) */
} best_ctx;

/* One (device, problem, config): its median time and its middle measurement (of an even count,
 * the later of the two middle ones). */
typedef struct row_group {
  const best_row *near;
  double median;
  int count;
} row_group;

static int collect_rows(const ht_eval_record *rec, void *ctx) {
  best_ctx *b = ctx;
  if (rec->result.status != HT_EVAL_OK || (b->source_hash && strcmp(rec->source_hash, b->source_hash) != 0)) return 0;
  if (b->n == b->cap) {
    int cap = b->cap ? 2 * b->cap : 64;
    best_row *r = realloc(b->rows, (size_t)cap * sizeof *r);
    if (!r) return b->failed = 1;
    b->rows = r;
    b->cap = cap;
  }
  best_row *r = &b->rows[b->n];
  r->device = ht_strdup(rec->device_id);
  r->problem = ht_strdup(rec->problem);
  r->config = ht_strdup(rec->config_key);
  r->time = rec->result.time_s;
  r->eval_id = rec->eval_id;
  if (!r->device || !r->problem || !r->config) {
    free(r->device);
    free(r->problem);
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
  free(b->config_json);
  b->config_json = ht_strdup(rec->config_json ? rec->config_json : "{}");
  return 1;
}

/* Orders rows by what they measured: device, problem, config. */
static int cmp_group_key(const best_row *a, const best_row *b) {
  int c = strcmp(a->device, b->device);
  if (!c) c = strcmp(a->problem, b->problem);
  return c ? c : strcmp(a->config, b->config);
}

static int cmp_best_row(const void *x, const void *y) {
  const best_row *a = x, *b = y;
  int c = cmp_group_key(a, b);
  return c ? c : (a->time > b->time) - (a->time < b->time);
}

static int cmp_group_median(const void *x, const void *y) {
  const row_group *a = x, *b = y;
  return (a->median > b->median) - (a->median < b->median);
}

/* The rows grouped by (device, problem, config), in that order; NULL when out of memory. */
static row_group *group_rows(best_ctx *b, int *n_groups) {
  if (b->n) qsort(b->rows, (size_t)b->n, sizeof *b->rows, cmp_best_row); /* rows is NULL when empty */
  row_group *g = malloc(((size_t)b->n + 1) * sizeof *g);
  *n_groups = 0;
  if (!g) return NULL;
  for (int s = 0, e; s < b->n; s = e) {
    for (e = s + 1; e < b->n && !cmp_group_key(&b->rows[e], &b->rows[s]);) e++;
    int m = e - s; /* sorted by time: the middle one, or the mean of the middle two */
    double med = m % 2 ? b->rows[s + m / 2].time : 0.5 * (b->rows[s + m / 2 - 1].time + b->rows[s + m / 2].time);
    const best_row *near = &b->rows[s + m / 2]; /* as ht_store_get_eval picks */
    if (m % 2 == 0 && near[-1].eval_id > near->eval_id) near--;
    g[(*n_groups)++] = (row_group){near, med, m};
  }
  return g;
}

static void best_free(best_ctx *b) {
  free(b->config_json);
  for (int i = 0; i < b->n; i++) {
    free(b->rows[i].device);
    free(b->rows[i].problem);
    free(b->rows[i].config);
  }
  free(b->rows);
  free(b);
}

typedef enum { BEST_TEXT, BEST_JSON, BEST_HEADER } best_format;

/* {"kernel": ..., "device": ..., "problem": ..., "config": {...}, "time_s": ..., ...} */
static void print_best_json(const char *kernel, const row_group *g, const best_ctx *b, int first) {
  json_error_t err;
  json_t *cfg = json_loads(b->config_json ? b->config_json : "{}", 0, &err), *m = json_object();
  for (int i = 0; i < b->result.n_metrics; i++)
    json_object_set_new(m, b->result.metrics[i].name, json_real(b->result.metrics[i].value));
  json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:o, s:f, s:i, s:o}", "kernel", kernel, "device", g->near->device,
                        "problem", g->near->problem, "config_key", g->near->config, "config", cfg ? cfg : json_object(),
                        "time_s", g->median, "measurements", g->count, "metrics", m);
  char *text = o ? json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
  printf("%s%s", first ? "[\n" : ",\n", text ? text : "{}");
  free(text);
  json_decref(o);
}

/* The best config as C preprocessor definitions, for a build that compiles the kernel itself. */
static void print_best_header(const char *kernel, const row_group *g, const best_ctx *b) {
  char guard[160];
  snprintf(guard, sizeof guard, "HETUNE_BEST_%s_H", kernel);
  for (char *p = guard; *p; p++) *p = (char)(isalnum((unsigned char)*p) ? toupper((unsigned char)*p) : '_');
  printf("/* The fastest config of %s stored by hetune: %.6g ms on %s for %s. */\n#ifndef %s\n#define %s\n", kernel,
         g->median * 1e3, g->near->device, g->near->problem, guard, guard);
  json_error_t err;
  json_t *cfg = json_loads(b->config_json ? b->config_json : "{}", 0, &err), *v;
  const char *key;
  json_object_foreach(cfg, key, v) {
    if (json_is_string(v)) printf("#define %s %s\n", key, json_string_value(v));
    else if (json_is_integer(v)) printf("#define %s %lld\n", key, (long long)json_integer_value(v));
    else if (json_is_number(v)) printf("#define %s %.17g\n", key, json_number_value(v));
  }
  json_decref(cfg);
  printf("#endif\n");
}

static void print_best(const row_group *g, const ht_result *res) {
  printf("%s\n", g->near->config);
  printf("  %.6g ms on %s for %s", g->median * 1e3, g->near->device, g->near->problem);
  if (g->count > 1) printf(" (median of %d measurements)", g->count);
  else printf(" (median of %d runs)", res->n_samples);
  for (int i = 0; i < res->n_metrics; i++) printf("  %s: %.4g", res->metrics[i].name, res->metrics[i].value);
  printf("\n");
}

/* Prints the fastest group of each problem (in first-seen order); 0 or CLI_ERROR. */
static int print_best_per_problem(ht_store *st, const ht_eval_filter *f, best_ctx *b, row_group *g, int n_groups,
                                  best_format fmt) {
  int printed = 0;
  for (int i = 0; i < n_groups; i++) {
    int first = 1, best = i;
    for (int j = 0; j < n_groups; j++)
      if (strcmp(g[j].near->problem, g[i].near->problem) == 0) {
        if (j < i) first = 0;
        if (g[j].median < g[best].median || (g[j].median == g[best].median && j < best)) best = j;
      }
    if (!first) continue;
    b->want_id = g[best].near->eval_id;
    if (ht_store_each_eval(st, f, fetch_result, b)) return cli_fail("best");
    if (fmt == BEST_HEADER && printed)
      return cli_usage_error("best", "--format header: %s has bests for several problem sizes; give the SPEC (and "
                             "--size) to choose one", f->kernel_name);
    if (fmt == BEST_JSON) print_best_json(f->kernel_name, &g[best], b, !printed);
    else if (fmt == BEST_HEADER) print_best_header(f->kernel_name, &g[best], b);
    else print_best(&g[best], &b->result);
    printed++;
  }
  if (fmt == BEST_JSON) printf("\n]\n");
  return CLI_OK;
}

int cmd_best(int argc, char **argv) {
  static const char *const known[] = {"device", "size", "db", "format", NULL};
  if (cli_wants_help(argc, argv)) {
    puts("usage: hetune best SPEC|KERNEL-NAME [--device D] [--size K=V]... [--format text|json|header] [--db FILE]\n\n"
         "Prints the fastest stored config of SPEC for its problem sizes (and device, if given), or of the\n"
         "kernel named KERNEL-NAME for each problem size stored. A config measured more than once (tune\n"
         "--no-reuse, several sessions) counts with the median of its measurements.\n"
         "--format json: a JSON list of {kernel, device, problem, config_key, config, time_s, measurements,\n"
         "metrics}; --format header: the config as C #defines for a build that compiles the kernel.");
    return CLI_OK;
  }
  cli_args a;
  int rc = cli_parse(argc, argv, "best", known, NULL, &a);
  if (!rc && a.n_pos != 1) rc = cli_usage_error("best", "expected one SPEC file or kernel name");
  const char *format = cli_opt(&a, "format") ? cli_opt(&a, "format") : "text";
  best_format fmt = strcmp(format, "json") == 0 ? BEST_JSON : strcmp(format, "header") == 0 ? BEST_HEADER : BEST_TEXT;
  if (!rc && fmt == BEST_TEXT && strcmp(format, "text") != 0)
    rc = cli_usage_error("best", "--format %s: expected text, json or header", format);
  if (rc) return rc;
  ht_spec *spec;
  ht_store *st;
  const char *name;
  if ((rc = cli_kernel_arg(&a, "best", a.pos[0], &spec, &name))) return rc;
  if ((rc = open_readonly(&a, &st))) {
    ht_spec_destroy(spec);
    return rc;
  }
  char problem[512];
  if (spec) ht_spec_problem_key(spec, problem, sizeof problem);
  ht_eval_filter f = {name, cli_opt(&a, "device"), spec ? problem : NULL, 1};
  best_ctx *b = calloc(1, sizeof *b);
  row_group *g = NULL;
  int n_groups = 0;
  if (!b) rc = (ht_error(HT_ERR_NOMEM, "out of memory"), cli_fail("best"));
  else {
    b->source_hash = spec ? ht_spec_identity(spec) : NULL;
    if (ht_store_each_eval(st, &f, collect_rows, b)) rc = cli_fail("best");
    else if (b->failed || !(g = group_rows(b, &n_groups)))
      rc = (ht_error(HT_ERR_NOMEM, "out of memory"), cli_fail("best"));
    else if (n_groups == 0) {
      fprintf(stderr, "hetune best: no successful evaluation of %s%s%s%s%s in %s\n", name, spec ? " for " : "",
              spec ? problem : "", f.device_id ? " on " : "", f.device_id ? f.device_id : "", cli_db_path(&a));
      rc = CLI_ERROR;
    } else rc = print_best_per_problem(st, &f, b, g, n_groups, fmt);
    free(g);
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

int cmd_show(int argc, char **argv) {
  static const char *const known[] = {"db", "device", "plot", "session", "plot-x", NULL};
  if (cli_wants_help(argc, argv)) {
    puts("usage: hetune show [SPEC|KERNEL-NAME] [--device D] [--db FILE]\n"
         "       hetune show SPEC|KERNEL-NAME --plot FILE.svg [--session ID] [--plot-x evals|time]\n\n"
         "Lists the tuning sessions in the database; with a spec file or a kernel name, also the kernel's\n"
         "ten fastest configs.\n"
         "--plot FILE.svg draws a tuning session's progress instead of the lists: the time of every\n"
         "evaluation it measured"
         " (log axis), the best so far, and its failed configs as marks on the x axis. The session\n"
         "is the kernel's latest (on --device, if given), or --session ID as listed. --plot-x time puts\n"
         "the seconds since the session started on the x axis instead of the evaluation's number.");
    return CLI_OK;
  }
  cli_args a;
  int rc = cli_parse(argc, argv, "show", known, NULL, &a);
  if (!rc && a.n_pos > 1) rc = cli_usage_error("show", "expected at most one SPEC file or kernel name");
  if (!rc && a.n_pos == 0 && (cli_opt(&a, "plot") || cli_opt(&a, "session") || cli_opt(&a, "plot-x")))
    rc = cli_usage_error("show", "--plot, --session and --plot-x need a SPEC file or kernel name");
  ht_spec *spec = NULL;
  const char *name = NULL;
  if (!rc && a.n_pos == 1) rc = cli_kernel_arg(&a, "show", a.pos[0], &spec, &name);
  ht_store *st;
  if (rc || (rc = open_readonly(&a, &st))) {
    ht_spec_destroy(spec);
    return rc;
  }
  if (cli_opt(&a, "plot")) { /* the plot alone: its errors are the command's only output */
    rc = cli_plot_progress(&a, st, name, cli_opt(&a, "plot"));
    ht_store_close(st);
    ht_spec_destroy(spec);
    return rc;
  }
  printf("%5s  %-20s %-12s %-28s %-12s %-11s %6s  %s\n", "id", "kernel", "device", "problem", "strategy", "status",
         "evals", "best");
  if (ht_store_each_session(st, print_session, NULL)) rc = cli_fail("show");
  if (!rc && a.n_pos == 1) {
    ht_eval_filter f = {name, cli_opt(&a, "device"), NULL, 1};
    best_ctx *b = calloc(1, sizeof *b);
    row_group *g = NULL;
    int n_groups = 0;
    if (!b) rc = (ht_error(HT_ERR_NOMEM, "out of memory"), cli_fail("show"));
    else if (ht_store_each_eval(st, &f, collect_rows, b)) rc = cli_fail("show");
    else if (b->failed || !(g = group_rows(b, &n_groups)))
      rc = (ht_error(HT_ERR_NOMEM, "out of memory"), cli_fail("show"));
    else {
      qsort(g, (size_t)n_groups, sizeof *g, cmp_group_median);
      printf("\nfastest configs of %s (a config measured more than once: the median, and how often):\n", name);
      for (int i = 0; i < n_groups && i < 10; i++) {
        printf("  %10.4g ms  %-12s %-24s %s", g[i].median * 1e3, g[i].near->device, g[i].near->problem,
               g[i].near->config);
        if (g[i].count > 1) printf("  (x%d)", g[i].count);
        printf("\n");
      }
      if (!n_groups) printf("  none\n");
    }
    free(g);
    if (b) best_free(b);
  }
  ht_store_close(st);
  ht_spec_destroy(spec);
  return rc;
}

/* ---- export ---- */

int cmd_export(int argc, char **argv) {
  static const char *const known[] = {"db", "format", "kernel", "device", "problem", "output", "ok", NULL};
  static const char *const flags[] = {"ok", NULL};
  if (cli_wants_help(argc, argv)) {
    puts("usage: hetune export --format csv|t4|kt-cache|starpu-perfmodel [--kernel NAME] [--device D]\n"
         "                     [--problem SIZES] [--ok] [--output FILE] [--db FILE]\n\n"
         "Writes the stored evaluations as CSV, as the T4 results JSON shared by Kernel Tuner, KTT and BAT,\n"
         "as a Kernel Tuner cache file (one kernel, device and problem; its simulation mode replays it), or\n"
         "as a StarPU history-based performance model (one kernel and device: the fastest config of each\n"
         "problem size; docs/interop.md says where StarPU looks for it).\n"
         "--problem takes the sizes as `hetune show` prints them (N=4096). --ok keeps only successful\n"
         "evaluations. Default output: standard output.");
    return CLI_OK;
  }
  cli_args a;
  int rc = cli_parse(argc, argv, "export", known, flags, &a);
  const char *format = cli_opt(&a, "format");
  static const char *const formats[] = {"csv", "t4", "kt-cache", "starpu-perfmodel", NULL};
  int which = 0;
  while (format && formats[which] && strcmp(format, formats[which])) which++;
  if (!rc && (!format || !formats[which]))
    rc = cli_usage_error("export", "--format must be csv, t4, kt-cache or starpu-perfmodel");
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
  ht_eval_filter f = {cli_opt(&a, "kernel"), cli_opt(&a, "device"), cli_opt(&a, "problem"), cli_has(&a, "ok")};
  ht_status (*const export[])(ht_store *, const ht_eval_filter *, FILE *) = {
    ht_store_export_csv, ht_store_export_t4, ht_store_export_kt_cache, ht_store_export_starpu_perfmodel};
  ht_status s = export[which](st, &f, out);
  if (s) rc = cli_fail(path ? path : "export"); /* a write error names the output file */
  if (out != stdout && fclose(out) != 0 && !rc) {
    fprintf(stderr, "hetune export: %s: %s\n", path, strerror(errno));
    rc = CLI_ERROR;
  }
  ht_store_close(st);
  return rc;
}
