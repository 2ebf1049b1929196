/* hetune show KERNEL --plot FILE.svg: the progress of one tuning session, every evaluation's time
 * and the best so far, with its failures marked on the axis. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

typedef struct progress_data {
  const char *kernel, *device;
  int64_t session;       /* wanted; 0: the latest of the kernel */
  ht_session_record rec; /* the session's (strings copied below) */
  char device_id[128], problem[256], strategy[64];
  int found;
  double *x, *t, *fail_x; /* every evaluation's x and time (NAN when it failed) */
  int n, n_fail, cap;
  int by_time;            /* x: seconds since the session started, else the evaluation's number */
  int oom;
} progress_data;

static int pick_session(const ht_session_record *s, void *ctx) {
  progress_data *d = ctx;
  if (strcmp(s->kernel_name, d->kernel) != 0 || (d->device && strcmp(s->device_id, d->device) != 0)) return 0;
  if (d->session ? s->session_id != d->session : d->found && s->session_id < d->rec.session_id) return 0;
  d->rec = *s;
  snprintf(d->device_id, sizeof d->device_id, "%s", s->device_id);
  snprintf(d->problem, sizeof d->problem, "%s", s->problem);
  snprintf(d->strategy, sizeof d->strategy, "%s", s->strategy);
  d->found = 1;
  return 0;
}

static int grow(progress_data *d) {
  int cap = d->cap ? 2 * d->cap : 256;
  double *x = realloc(d->x, (size_t)cap * sizeof *x), *t = x ? realloc(d->t, (size_t)cap * sizeof *t) : NULL,
         *fx = t ? realloc(d->fail_x, (size_t)cap * sizeof *fx) : NULL;
  if (x) d->x = x;
  if (t) d->t = t;
  if (fx) d->fail_x = fx;
  if (!fx) return d->oom = 1;
  d->cap = cap;
  return 0;
}

static int collect(const ht_eval_record *e, void *ctx) {
  progress_data *d = ctx;
  if (e->session_id != d->rec.session_id) return 0;
  if (d->n == d->cap && grow(d)) return 1;
  if (d->n == 0 && !(d->rec.started > 0)) d->rec.started = e->result.timestamp - e->result.wall_s; /* not recorded */
  double x = d->by_time ? e->result.timestamp - d->rec.started : d->n + 1;
  d->x[d->n] = x;
  d->t[d->n++] = e->result.status == HT_EVAL_OK ? e->result.time_s : NAN;
  if (e->result.status != HT_EVAL_OK) d->fail_x[d->n_fail++] = x;
  return 0;
}

/* The evaluations' times in unit, and the best so far after each. */
static void scale_and_best(progress_data *d, double *best, const char **unit) {
  double max = 0, b = INFINITY;
  for (int i = 0; i < d->n; i++) max = isfinite(d->t[i]) ? fmax(max, d->t[i]) : max;
  double k = plot_time_unit(max, unit);
  for (int i = 0; i < d->n; i++) {
    d->t[i] *= k;
    if (isfinite(d->t[i])) b = fmin(b, d->t[i]);
    best[i] = isfinite(b) ? b : NAN;
  }
}

static int draw(progress_data *d, const char *path) {
  double *best = malloc((size_t)d->n * sizeof *best);
  if (!best) return ht_error(HT_ERR_NOMEM, "out of memory"), cli_fail("show --plot");
  const char *unit;
  scale_and_best(d, best, &unit);
  char ylabel[64], fails[64], title[512];
  snprintf(ylabel, sizeof ylabel, "kernel time (%s)", unit);
  snprintf(fails, sizeof fails, "failed (%d)", d->n_fail);
  snprintf(title, sizeof title, "%s on %s, %s: session %lld (%s)", d->kernel, d->device_id, d->problem,
           (long long)d->rec.session_id, d->strategy);
  plot_series s[3] = {
    {"evaluation", PLOT_POINTS, d->n, d->x, d->t, NULL, NULL, 0, PLOT_AUTO, 0, 0},
    {"best so far", PLOT_STEP, d->n, d->x, best, NULL, NULL, 1, 0, PLOT_NONE, 2.2},
    {fails, PLOT_RUG, d->n_fail, d->fail_x, NULL, NULL, NULL, 6, 0, PLOT_NONE, 0},
  };
  plot_panel p = {NULL, {d->by_time ? "time since the session started (s)" : "evaluation", 0, 0, NAN},
                  {ylabel, 1, NAN, NAN}, d->n_fail ? 3 : 2, s, 0, NULL, NULL};
  plot_figure fig = {title, d->n_fail ? "Failed evaluations (compile, run, timeout, wrong result) are marked on the x axis." : NULL,
                     1, 1, &p, 0};
  int rc = CLI_OK;
  if (plot_write(path, &fig)) {
    fprintf(stderr, "hetune show: cannot write %s: %s\n", path, strerror(errno));
    rc = CLI_ERROR;
  }
  free(best);
  return rc;
}

int cli_plot_progress(const cli_args *a, ht_store *st, const char *kernel, const char *path) {
  progress_data d = {.kernel = kernel, .device = cli_opt(a, "device")};
  const char *v = cli_opt(a, "session"), *x = cli_opt(a, "plot-x");
  long long id = 0;
  if (v && cli_integer("show", "--session", v, 1, &id)) return CLI_USAGE;
  if (x && strcmp(x, "evals") && strcmp(x, "time"))
    return cli_usage_error("show", "--plot-x %s: expected evals or time", x);
  d.session = id;
  d.by_time = x && strcmp(x, "time") == 0;
  if (ht_store_each_session(st, pick_session, &d)) return cli_fail("show --plot");
  int rc = CLI_OK;
  if (!d.found && id) rc = cli_usage_error("show", "--session %lld: no session of %s with that id", id, kernel);
  else if (!d.found) fprintf(stderr, "hetune show: no tuning session of %s to plot\n", kernel), rc = CLI_ERROR;
  else if (ht_store_each_eval(st, &(ht_eval_filter){kernel, d.device_id, d.problem, 0}, collect, &d) || d.oom)
    rc = d.oom ? (ht_error(HT_ERR_NOMEM, "out of memory"), cli_fail("show --plot")) : cli_fail("show --plot");
  else if (!d.n) {
    fprintf(stderr, "hetune show: session %lld of %s measured nothing (its configs were stored before): no plot\n",
            (long long)d.rec.session_id, kernel);
    rc = CLI_ERROR;
  } else rc = draw(&d, path);
  if (!rc) printf("plot: %s (session %lld, %d evaluations)\n", path, (long long)d.rec.session_id, d.n);
  free(d.x);
  free(d.t);
  free(d.fail_x);
  return rc;
}
