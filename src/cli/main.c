/* hetune: the command line. Parses arguments, calls the library, prints. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "cli/cli.h"

static const char *usage =
  "usage: hetune COMMAND [options]\n"
  "\n"
  "commands:\n"
  "  devices                 list every device and its limits\n"
  "  bandwidth               a device's read bandwidth by working set (the roofline floor's curve);\n"
  "                          --transfers: its host<->device copy times by size\n"
  "  tune SPEC               tune a kernel spec on a device, storing every evaluation\n"
  "  best SPEC|NAME          print the best stored config of a spec or kernel (text, JSON, #defines)\n"
  "  show [SPEC|NAME]        list tuning sessions (and a kernel's fastest configs)\n"
  "  export --format F       export evaluations as csv or t4 (Kernel Tuner/KTT/BAT results JSON)\n"
  "  space count|sample|list SPEC   inspect a search space (hetune spec or T1 file)\n"
  "  replay RECORD           run a strategy on a recorded space, without a device\n"
  "  strategy-bench [RECORD...]     score every strategy on recorded spaces (Willemsen et al.)\n"
  "  ptx FILE.cu|FILE.ptx    static PTX features per kernel (instruction classes, dpc, registers)\n"
  "  model kinds|train|eval|show|predict   execution-time models: train, evaluate, inspect\n"
  "  predict SPEC            predicted time of a config (or the fastest configs) from a stored model\n"
  "  gemm M N K              generate, tune and compare a GEMM (vs OpenBLAS/cuBLAS and naive)\n"
  "  dispatch decide|run|bench|export-cache|explain COMP   choose and run a variant per call\n"
  "  explain COMP            why a computation chooses the variant it does for a call's sizes\n"
  "  coexec plan|run|bench COMP   split one call across devices so that all finish together\n"
  "  race COMP               run a computation's variants at once; the first to finish wins\n"
  "\n"
  "Run 'hetune COMMAND --help' for a command's options.\n";

/* Short options stand for these long ones, where the command has the long one. */
static const struct {
  char c;
  const char *name;
} short_options[] = {{'n', "n"}, {'o', "output"}, {'q', "quiet"}, {'v', "verbose"}};

static int in_list(const char *const *list, const char *name, size_t len) {
  for (int i = 0; list && list[i]; i++)
    if (strlen(list[i]) == len && strncmp(list[i], name, len) == 0) return 1;
  return 0;
}

/* "-n" -> "n" when the command knows the long form, else NULL. */
static const char *short_to_long(char c, const char *const *known) {
  for (size_t i = 0; i < sizeof short_options / sizeof short_options[0]; i++)
    if (short_options[i].c == c && in_list(known, short_options[i].name, strlen(short_options[i].name)))
      return short_options[i].name;
  return NULL;
}

static int add_option(cli_args *a, const char *name, size_t len, const char *value) {
  if (a->n_opt == CLI_MAX_OPTIONS) return cli_usage_error(a->cmd, "too many options");
  snprintf(a->names[a->n_opt], sizeof a->names[0], "%.*s", (int)len, name);
  a->opt_name[a->n_opt] = a->names[a->n_opt];
  a->opt_value[a->n_opt++] = value;
  return CLI_OK;
}

/* A value-taking option's value: attached ("--x=v", "-nV") or the next argument, which may start
 * with '-' (a negative number) but not with "--" (another option: the value was forgotten). */
static int take_value(int argc, char **argv, int *i, const char *cmd, const char *attached, const char *shown,
                      const char **value) {
  if (attached) {
    *value = attached;
    return CLI_OK;
  }
  if (*i + 1 >= argc || (strncmp(argv[*i + 1], "--", 2) == 0 && argv[*i + 1][2]))
    return cli_usage_error(cmd, "option %s needs a value", shown);
  *value = argv[++*i];
  return CLI_OK;
}

static int parse_long(int argc, char **argv, int *i, const char *const *known, const char *const *flags,
                      cli_args *a) {
  const char *name = argv[*i] + 2, *eq = strchr(name, '=');
  size_t len = eq ? (size_t)(eq - name) : strlen(name);
  if (!in_list(known, name, len) || len >= sizeof a->names[0])
    return cli_usage_error(a->cmd, "unknown option --%.*s (see hetune %s --help)", (int)len, name, a->cmd);
  if (in_list(flags, name, len)) {
    if (eq) return cli_usage_error(a->cmd, "option --%.*s takes no value", (int)len, name);
    return add_option(a, name, len, NULL);
  }
  const char *value;
  int rc = take_value(argc, argv, i, a->cmd, eq ? eq + 1 : NULL, argv[*i], &value);
  return rc ? rc : add_option(a, name, len, value);
}

static int parse_short(int argc, char **argv, int *i, const char *const *known, const char *const *flags,
                       cli_args *a) {
  const char *arg = argv[*i], *name = short_to_long(arg[1], known);
  if (!name) return cli_usage_error(a->cmd, "unknown option %.2s (see hetune %s --help)", arg, a->cmd);
  if (in_list(flags, name, strlen(name))) {
    if (arg[2]) return cli_usage_error(a->cmd, "option %.2s takes no value", arg);
    return add_option(a, name, strlen(name), NULL);
  }
  char shown[3] = {'-', arg[1], 0};
  const char *value;
  int rc = take_value(argc, argv, i, a->cmd, arg[2] ? arg + 2 : NULL, shown, &value);
  return rc ? rc : add_option(a, name, strlen(name), value);
}

int cli_parse(int argc, char **argv, const char *cmd, const char *const *known, const char *const *flags, cli_args *a) {
  memset(a, 0, sizeof *a);
  a->cmd = cmd;
  int only_positional = 0;
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    int rc = CLI_OK;
    if (!only_positional && strcmp(s, "--") == 0) only_positional = 1;
    else if (only_positional || s[0] != '-' || s[1] == '\0') {
      if (a->n_pos == CLI_MAX_POSITIONAL) return cli_usage_error(cmd, "too many arguments");
      a->pos[a->n_pos++] = s;
    } else if (s[1] == '-') rc = parse_long(argc, argv, &i, known, flags, a);
    else rc = parse_short(argc, argv, &i, known, flags, a);
    if (rc) return rc;
  }
  return CLI_OK;
}

const char *cli_opt(const cli_args *a, const char *name) {
  const char *v = NULL;
  for (int i = 0; i < a->n_opt; i++)
    if (strcmp(a->opt_name[i], name) == 0) v = a->opt_value[i];
  return v;
}

int cli_has(const cli_args *a, const char *name) {
  for (int i = 0; i < a->n_opt; i++)
    if (strcmp(a->opt_name[i], name) == 0) return 1;
  return 0;
}

int cli_wants_help(int argc, char **argv) {
  for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return 1;
  return 0;
}

int cli_fail(const char *what) {
  fprintf(stderr, "hetune: %s%s%s\n", what ? what : "", what && *what ? ": " : "", ht_last_error());
  return CLI_ERROR;
}

volatile sig_atomic_t cli_stop_signal;

static void on_stop_signal(int sig) {
  if (cli_stop_signal) _exit(128 + sig);
  cli_stop_signal = sig;
}

void cli_catch_stop_signals(void) {
  signal(SIGINT, on_stop_signal);
  signal(SIGTERM, on_stop_signal);
  signal(SIGHUP, on_stop_signal);
}

int cli_fail_device(const char *what, ht_status st) {
  int rc = cli_fail(what);
  return st == HT_ERR_NOTFOUND || st == HT_ERR_UNSUPPORTED ? CLI_USAGE : rc;
}

int cli_integer_in(const char *cmd, const char *name, const char *v, long long min, long long max, long long *out) {
  char *end;
  errno = 0;
  *out = strtoll(v, &end, 10);
  if (!*v || *end || errno || *out < min || *out > max) {
    if (max == LLONG_MAX) return cli_usage_error(cmd, "%s %s: expected an integer of at least %lld", name, v, min);
    return cli_usage_error(cmd, "%s %s: expected an integer from %lld to %lld", name, v, min, max);
  }
  return CLI_OK;
}

int cli_integer(const char *cmd, const char *name, const char *v, long long min, long long *out) {
  return cli_integer_in(cmd, name, v, min, LLONG_MAX, out);
}

int cli_number(const char *cmd, const char *name, const char *v, double min_exclusive, double *out) {
  char *end;
  *out = strtod(v, &end);
  if (!*v || *end || !isfinite(*out) || *out <= min_exclusive)
    return cli_usage_error(cmd, "%s %s: expected a number greater than %g", name, v, min_exclusive);
  return CLI_OK;
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "hetune %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return CLI_USAGE;
}

int cli_load_spec(const cli_args *a, const char *path, ht_spec **out) {
  if (ht_spec_load(path, out)) return cli_fail("");
  for (int i = 0; i < a->n_opt; i++)
    if (strcmp(a->opt_name[i], "size") == 0 && ht_spec_set_size(*out, a->opt_value[i])) {
      ht_spec_destroy(*out);
      *out = NULL;
      cli_fail("");
      return CLI_USAGE; /* a bad --size is a bad command line, whatever the spec holds */
    }
  return CLI_OK;
}

int cli_kernel_arg(const cli_args *a, const char *cmd, const char *arg, ht_spec **spec, const char **name) {
  *spec = NULL;
  *name = arg;
  struct stat sb;
  if (stat(arg, &sb) == 0 || strchr(arg, '/') || strstr(arg, ".json")) { /* a file, or meant as one */
    int rc = cli_load_spec(a, arg, spec);
    if (!rc) *name = ht_spec_name(*spec);
    return rc;
  }
  if (cli_has(a, "size"))
    return cli_usage_error(cmd, "--size needs a SPEC file (it names the sizes), not the kernel name %s", arg);
  return CLI_OK;
}

const char *cli_default_device(const ht_spec *s) {
  switch (ht_spec_language(s)) {
  case HT_LANG_OPENCL: return "opencl";
  case HT_LANG_CUDA: return "cuda";
  default: return "c";
  }
}

void cli_print_seconds(double s) {
  if (!isfinite(s)) printf("%10s", "-");
  else if (s < 1e-3) printf("%7.2f us", s * 1e6);
  else if (s < 1) printf("%7.3f ms", s * 1e3);
  else printf("%7.3f s ", s);
}

/* Every --size at once: each parse of a problem text starts from the spec's own sizes. */
int cli_size_options(const cli_args *a, const ht_spec *s, int64_t *sizes, const char *cmd) {
  ht_buf all = {0};
  for (int i = 0; i < a->n_opt; i++)
    if (!strcmp(a->opt_name[i], "size")) ht_buf_appendf(&all, "%s%s", all.len ? "," : "", a->opt_value[i]);
  int rc = CLI_OK;
  if (all.failed) rc = cli_fail(cmd);
  else if (all.len && ht_features_parse_problem(s, all.data, sizes, "--size")) rc = cli_usage_error(cmd, "%s", ht_last_error());
  ht_buf_free(&all);
  return rc;
}

const char *cli_db_path(const cli_args *a) {
  const char *db = cli_opt(a, "db");
  if (!db) db = getenv("HETUNE_DB");
  return db ? db : HT_STORE_DEFAULT_PATH;
}

int main(int argc, char **argv) {
  static const struct {
    const char *name;
    int (*fn)(int, char **);
  } commands[] = {{"devices", cmd_devices}, {"tune", cmd_tune},     {"best", cmd_best},
                  {"show", cmd_show},       {"export", cmd_export}, {"space", cmd_space},
                  {"replay", cmd_replay},   {"strategy-bench", cmd_strategy_bench},
                  {"ptx", cmd_ptx},         {"model", cmd_model},   {"predict", cmd_predict},
                  {"gemm", cmd_gemm},
                  {"bandwidth", cmd_bandwidth}, {"dispatch", cmd_dispatch},
                  {"coexec", cmd_coexec},
                  {"explain", cmd_explain}, {"race", cmd_race}};
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
    fputs(usage, argc < 2 ? stderr : stdout);
    return argc < 2 ? CLI_USAGE : CLI_OK;
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("hetune 0.1.0\n");
    return CLI_OK;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (strcmp(argv[1], commands[i].name) == 0) return commands[i].fn(argc - 1, argv + 1);
  fprintf(stderr, "hetune: unknown command '%s' (see hetune --help)\n", argv[1]);
  return CLI_USAGE;
}
