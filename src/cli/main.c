/* hetune: the command line. Parses arguments, calls the library, prints. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char *usage =
  "usage: hetune COMMAND [options]\n"
  "\n"
  "commands:\n"
  "  devices                 list every device and its limits\n"
  "  bandwidth               a device's read bandwidth by working set (the roofline floor's curve)\n"
  "  tune SPEC               tune a kernel spec on a device, storing every evaluation\n"
  "  best SPEC               print the best stored config of a spec\n"
  "  show [SPEC]             list tuning sessions (and a spec's best configs)\n"
  "  export --format F       export evaluations as csv or t4 (Kernel Tuner/KTT/BAT results JSON)\n"
  "  space count|sample|list SPEC   inspect a search space (hetune spec or T1 file)\n"
  "  replay RECORD           run a strategy on a recorded space, without a device\n"
  "  strategy-bench [RECORD...]     score every strategy on recorded spaces (Willemsen et al.)\n"
  "  ptx FILE.cu|FILE.ptx    static PTX features per kernel (instruction classes, dpc, registers)\n"
  "  model kinds|train|eval|show|predict   execution-time models: train, evaluate, inspect\n"
  "  predict SPEC            predicted time of a config (or the fastest configs) from a stored model\n"
  "  gemm M N K              generate, tune and compare a GEMM (vs OpenBLAS/cuBLAS and naive)\n"
  "\n"
  "Run 'hetune COMMAND --help' for a command's options.\n";

int cli_parse(int argc, char **argv, const char *const *flags, cli_args *a) {
  memset(a, 0, sizeof *a);
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    if (strncmp(s, "--", 2) != 0 || strlen(s) == 2) {
      if (a->n_pos == 16) return cli_usage_error(argv[0], "too many arguments");
      a->pos[a->n_pos++] = s;
      continue;
    }
    if (a->n_opt == 64) return cli_usage_error(argv[0], "too many options");
    const char *eq = strchr(s, '=');
    int is_flag = 0;
    for (int f = 0; flags && flags[f]; f++) is_flag |= strcmp(s + 2, flags[f]) == 0;
    if (eq) {
      a->opt_name[a->n_opt] = strndup(s + 2, (size_t)(eq - s - 2));
      a->opt_value[a->n_opt++] = eq + 1;
    } else if (is_flag) {
      a->opt_name[a->n_opt] = s + 2;
      a->opt_value[a->n_opt++] = NULL;
    } else {
      if (i + 1 >= argc) return cli_usage_error(argv[0], "option %s needs a value", s);
      a->opt_name[a->n_opt] = s + 2;
      a->opt_value[a->n_opt++] = argv[++i];
    }
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

int cli_check_known(const cli_args *a, const char *cmd, const char *const *known) {
  for (int i = 0; i < a->n_opt; i++) {
    int ok = 0;
    for (int k = 0; known[k]; k++) ok |= strcmp(a->opt_name[i], known[k]) == 0;
    if (!ok) return cli_usage_error(cmd, "unknown option --%s (see hetune %s --help)", a->opt_name[i], cmd);
  }
  return CLI_OK;
}

int cli_wants_help(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return 1;
  return 0;
}

int cli_fail(const char *what) {
  fprintf(stderr, "hetune: %s%s%s\n", what ? what : "", what && *what ? ": " : "", ht_last_error());
  return CLI_ERROR;
}

int cli_integer(const char *cmd, const char *name, const char *v, long long min, long long *out) {
  char *end;
  errno = 0;
  *out = strtoll(v, &end, 10);
  if (!*v || *end || errno || *out < min)
    return cli_usage_error(cmd, "%s %s: expected an integer of at least %lld", name, v, min);
  return CLI_OK;
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

const char *cli_default_device(const ht_spec *s) {
  switch (s->kernel.lang) {
  case HT_LANG_OPENCL: return "opencl";
  case HT_LANG_CUDA: return "cuda";
  default: return "c";
  }
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
                  {"bandwidth", cmd_bandwidth}};
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
