/* The hetune command: shared argument handling. */
#ifndef HT_CLI_H
#define HT_CLI_H

#include <signal.h>
#include <stdio.h>

#include "cli/plot.h"
#include "hetune/hetune.h"

/* Exit codes. */
enum { CLI_OK = 0, CLI_ERROR = 1, CLI_USAGE = 2 };

enum { CLI_MAX_POSITIONAL = 16, CLI_MAX_OPTIONS = 64 };

/* A parsed command line: options and positional arguments. */
typedef struct cli_args {
  const char *cmd; /* "tune", "model train": for messages */
  int n_pos;
  const char *pos[CLI_MAX_POSITIONAL];
  int n_opt;
  const char *opt_name[CLI_MAX_OPTIONS];
  const char *opt_value[CLI_MAX_OPTIONS]; /* NULL for flags */
  char names[CLI_MAX_OPTIONS][40];        /* storage of opt_name */
} cli_args;

/* The one option parser of every command, with getopt_long's conventions: "--name value",
 * "--name=value", flags without a value, "--" ends the options, "-" is a positional argument, and
 * the short forms -n, -o, -q, -v of --n, --output, --quiet, --verbose where the command has them
 * ("-n 5" or "-n5"). cmd names the command in messages ("model train"). known: every option the command
 * takes (NULL-terminated); flags: those of them that take no value. An unknown option, a flag
 * given a value or an option without its value is a usage error (printed; returns CLI_USAGE). */
int cli_parse(int argc, char **argv, const char *cmd, const char *const *known, const char *const *flags,
              cli_args *a);
const char *cli_opt(const cli_args *a, const char *name);    /* last value or NULL */
int cli_has(const cli_args *a, const char *name);
int cli_wants_help(int argc, char **argv);
int cli_fail(const char *what);                            /* prints "hetune: what: last error", returns 1 */
/* Once cli_catch_stop_signals has run, SIGINT (Ctrl-C), SIGTERM (kill, a batch system's time
 * limit) and SIGHUP (a closed terminal) set cli_stop_signal to their number: the command stops
 * after the work in hand and exits 128 + that number; a second signal leaves at once. */
extern volatile sig_atomic_t cli_stop_signal;
void cli_catch_stop_signals(void);
/* cli_fail for a device that could not be opened: CLI_USAGE when the device is unknown or cannot
 * run here (HT_ERR_NOTFOUND, HT_ERR_UNSUPPORTED), like an unknown strategy; CLI_ERROR otherwise. */
int cli_fail_device(const char *what, ht_status st);
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Option values parsed whole ("5x" is an error) and checked against a minimum: 0 or CLI_USAGE. */
int cli_integer(const char *cmd, const char *name, const char *v, long long min, long long *out);
int cli_integer_in(const char *cmd, const char *name, const char *v, long long min, long long max, long long *out);
int cli_number(const char *cmd, const char *name, const char *v, double min_exclusive, double *out);

/* Loads SPEC and applies --size options. */
int cli_load_spec(const cli_args *a, const char *path, ht_spec **out);
const char *cli_db_path(const cli_args *a);
/* A time in a 10-character column: "  12.34 us", "   1.234 ms", "-" when unknown. */
void cli_print_seconds(double s);
/* Applies every --size K=V of a to sizes (the spec's sizes, in its order). */
int cli_size_options(const cli_args *a, const ht_spec *s, int64_t *sizes, const char *cmd);
/* A command's SPEC-or-KERNEL-NAME argument: an existing file is loaded as a spec (with --size
 * applied) and *name is its kernel's name; anything else is a kernel name (*spec NULL). */
int cli_kernel_arg(const cli_args *a, const char *cmd, const char *arg, ht_spec **spec, const char **name);
const char *cli_default_device(const ht_spec *s); /* the first device of the spec's language */

int cmd_devices(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_best(int argc, char **argv);
int cmd_show(int argc, char **argv);
/* hetune show KERNEL --plot FILE: one session's evaluations and best so far (--session, --plot-x). */
int cli_plot_progress(const cli_args *a, ht_store *st, const char *kernel, const char *path);
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
int cmd_dispatch(int argc, char **argv);
int cmd_coexec(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_race(int argc, char **argv);
/* SPEC (first positional) and its measurements from --data FILE.csv... or --data-db DB (filtered
 * by --device): the dataset of hetune model train/eval. */
int cli_model_dataset(const cli_args *a, const char *cmd, ht_spec **spec, ht_feature_set **fs, ht_dataset **d);

#endif
