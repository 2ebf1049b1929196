/* The hetune command: shared argument handling. */
#ifndef HT_CLI_H
#define HT_CLI_H

#include <stdio.h>

#include "hetune/hetune.h"

/* Exit codes. */
enum { CLI_OK = 0, CLI_ERROR = 1, CLI_USAGE = 2 };

/* A parsed command line: options (--name value / --name=value) and positional arguments. */
typedef struct cli_args {
  int n_pos;
  const char *pos[16];
  int n_opt;
  const char *opt_name[64];
  const char *opt_value[64]; /* NULL for flags */
} cli_args;

/* argv[0] is the command's name. flags: names of options that take no value, NULL-terminated. Unknown options are the caller's
 * to reject with cli_check_known. */
int cli_parse(int argc, char **argv, const char *const *flags, cli_args *a);
const char *cli_opt(const cli_args *a, const char *name);    /* last value or NULL */
int cli_has(const cli_args *a, const char *name);
int cli_check_known(const cli_args *a, const char *cmd, const char *const *known);
int cli_wants_help(int argc, char **argv);
int cli_fail(const char *what);                            /* prints "hetune: what: last error", returns 1 */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Option values parsed whole ("5x" is an error) and checked against a minimum: 0 or CLI_USAGE. */
int cli_integer(const char *cmd, const char *name, const char *v, long long min, long long *out);
int cli_number(const char *cmd, const char *name, const char *v, double min_exclusive, double *out);

/* Loads SPEC and applies --size options. */
int cli_load_spec(const cli_args *a, const char *path, ht_spec **out);
const char *cli_db_path(const cli_args *a);
const char *cli_default_device(const ht_spec *s); /* the first device of the spec's language */

int cmd_devices(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_best(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_space(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_strategy_bench(int argc, char **argv);
int cmd_ptx(int argc, char **argv);
int cmd_model(int argc, char **argv);
int cmd_model_eval(int argc, char **argv);
int cmd_model_predict(int argc, char **argv);
int cmd_predict(int argc, char **argv);
int cmd_gemm(int argc, char **argv);
int cmd_bandwidth(int argc, char **argv);
/* SPEC (first positional) and its measurements from --data FILE.csv... or --data-db DB (filtered
 * by --device): the dataset of hetune model train/eval. */
int cli_model_dataset(const cli_args *a, const char *cmd, ht_spec **spec, ht_feature_set **fs, ht_dataset **d);

/* A line plot with optional +- bands, written as SVG. */
typedef struct plot_spec {
  const char *title, *xlabel, *ylabel;
  int n_series, n;
  const char *const *names;
  const double *x;              /* [n] */
  const double *const *y;       /* [n_series][n] */
  const double *const *band;    /* [n_series][n] half-widths, or NULL */
  double x0, x1, y0, y1;
  int y_ticks;                  /* grid lines between y0 and y1 */
} plot_spec;
int plot_svg(const char *path, const plot_spec *p); /* 0 or -1 (errno) */

#endif
