/* hetune ptx FILE.cu|FILE.ptx: static PTX features of each kernel (reference 003). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "hetune/ptx.h"

static const char *help =
  "usage: hetune ptx FILE.cu|FILE.ptx [options]\n"
  "\n"
  "Prints, per kernel, the PTX instruction classes of Equation (1) of [003] (docs/bibliography.md; static and\n"
  "executed per thread), the data-dependency degree dpc, the arithmetic intensity alpha, and the\n"
  "registers and shared memory ptxas reports (.cu files only: compiled with nvcc, cached).\n"
  "\n"
  "  --kernel NAME          only this kernel (mangled name, or the name inside it)\n"
  "  --define NAME=VALUE    preprocessor define for nvcc (repeatable)\n"
  "  --arch sm_XX           target architecture (default sm_80)\n"
  "  --param NAME=VALUE     value of a scalar kernel parameter for executed counts; NAME is the\n"
  "                         parameter's index (0-based) or the end of its .param name (repeatable)\n"
  "  --default-trip N       trip count of loops that are not recognised (default 1)\n"
  "  --eval-branches        branches decidable for thread 0 keep only the side taken (default:\n"
  "                         both sides of every non-loop branch count once)\n"
  "  --json                 one JSON object per kernel\n";

static int ends_with(const char *s, const char *suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && strcmp(s + a - b, suf) == 0;
}

/* --param NAME=VALUE into values[]: NAME is an index or the suffix of a .param name. */
static int apply_params(const cli_args *a, const ht_ptx_module *m, int k, double *values, int n) {
  for (int i = 0; i < n; i++) values[i] = NAN;
  for (int i = 0; i < a->n_opt; i++) {
    if (strcmp(a->opt_name[i], "param") != 0) continue;
    const char *v = a->opt_value[i], *eq = v ? strchr(v, '=') : NULL;
    if (!eq) return cli_usage_error("ptx", "--param %s: expected NAME=VALUE", v ? v : "");
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)(eq - v), v);
    char *end;
    double x = strtod(eq + 1, &end);
    if (!eq[1] || *end) return cli_usage_error("ptx", "--param %s: expected a number after '='", v);
    long idx = strtol(name, &end, 10);
    int found = -1;
    if (*name && !*end) {
      found = idx >= 0 && idx < n ? (int)idx : -1;
    } else {
      char suffix[300];
      snprintf(suffix, sizeof suffix, "_%s", name);
      for (int p = 0; p < n; p++) {
        const char *pn = ht_ptx_kernel_param_name(m, k, p);
        if (strcmp(pn, name) == 0 || ends_with(pn, suffix)) found = p;
      }
    }
    if (found < 0) continue; /* a parameter of another kernel */
    values[found] = x;
  }
  return CLI_OK;
}

static void print_counts(const char *label, const ht_ptx_counts *c) {
  printf("  %-9s total %-10.6g compute %-10.6g gread %-8.6g gwrite %-8.6g shread %-8.6g shwrite %-8.6g sync %-6.6g dpu %-6.6g sfu %.6g\n",
         label, c->total, c->compute, c->global_read, c->global_write, c->shared_read, c->shared_write, c->sync, c->dpu, c->sfu);
}

static void json_counts(const char *label, const ht_ptx_counts *c) {
  printf("\"%s\": {\"total\": %.17g, \"compute\": %.17g, \"global_read\": %.17g, \"global_write\": %.17g, "
         "\"shared_read\": %.17g, \"shared_write\": %.17g, \"sync\": %.17g, \"dpu\": %.17g, \"sfu\": %.17g}",
         label, c->total, c->compute, c->global_read, c->global_write, c->shared_read, c->shared_write, c->sync, c->dpu, c->sfu);
}

static void print_kernel(const char *name, const ht_ptx_features *f, int json) {
  if (json) {
    printf("{\"kernel\": \"%s\", ", name);
    json_counts("static", &f->static_counts);
    printf(", ");
    json_counts("executed", &f->executed);
    printf(", \"dpc\": %.6f, \"alpha\": %.6g, \"registers\": %d, \"shared_words\": %d, \"loops\": %d, "
           "\"unresolved_loops\": %d, \"decided_branches\": %d}\n",
           f->dpc, isfinite(f->alpha) ? f->alpha : -1, f->registers, f->shared_words, f->exec.loops, f->exec.unresolved_loops,
           f->exec.decided_branches);
    return;
  }
  printf("%s\n", name);
  print_counts("static", &f->static_counts);
  print_counts("executed", &f->executed);
  printf("  dpc %.4f  alpha %.4g  registers %d  shared %d words  loops %d (unresolved %d)\n", f->dpc, f->alpha,
         f->registers, f->shared_words, f->exec.loops, f->exec.unresolved_loops);
}

static int load(const cli_args *a, const char *path, char **ptx, ht_ptx_resources *res, int *n_res) {
  char *text;
  size_t len;
  if (ht_read_file(path, &text, &len)) return cli_fail("");
  *n_res = 0;
  if (!ends_with(path, ".cu")) {
    *ptx = text;
    return CLI_OK;
  }
  const char *defs[65];
  int nd = 0;
  for (int i = 0; i < a->n_opt && nd < 64; i++)
    if (strcmp(a->opt_name[i], "define") == 0 && a->opt_value[i]) defs[nd++] = a->opt_value[i];
  defs[nd] = NULL;
  const char *arch = cli_opt(a, "arch") ? cli_opt(a, "arch") : "sm_80";
  ht_status st = ht_ptx_compile(text, path, defs, arch, ptx, res, HT_PTX_MAX_RESOURCES, n_res);
  free(text);
  return st ? cli_fail("") : CLI_OK;
}

int cmd_ptx(int argc, char **argv) {
  static const char *const known[] = {"kernel", "define", "arch", "param", "json", "default-trip", "eval-branches", NULL};
  static const char *const flags[] = {"json", "eval-branches", NULL};
  if (cli_wants_help(argc, argv)) return fputs(help, stdout), CLI_OK;
  cli_args a;
  int rc = cli_parse(argc, argv, "ptx", known, flags, &a);
  if (rc) return rc;
  if (a.n_pos != 1) return cli_usage_error("ptx", "expected one FILE.cu or FILE.ptx (see hetune ptx --help)");
  ht_ptx_exec_options opts = {.default_trip = 1.0, .eval_branches = cli_has(&a, "eval-branches")};
  if (cli_opt(&a, "default-trip") && cli_number("ptx", "--default-trip", cli_opt(&a, "default-trip"), 0, &opts.default_trip))
    return CLI_USAGE;
  char *ptx = NULL;
  ht_ptx_resources res[HT_PTX_MAX_RESOURCES];
  int n_res = 0;
  if ((rc = load(&a, a.pos[0], &ptx, res, &n_res))) return rc;
  ht_ptx_module *m;
  if (ht_ptx_parse(ptx, a.pos[0], &m)) {
    free(ptx);
    return cli_fail("");
  }
  free(ptx);
  int first = 0, last = ht_ptx_kernel_count(m);
  if (cli_opt(&a, "kernel")) {
    if ((first = ht_ptx_kernel_find(m, cli_opt(&a, "kernel"))) < 0) {
      ht_ptx_free(m);
      return cli_fail("");
    }
    last = first + 1;
  }
  for (int k = first; k < last && !rc; k++) {
    int np = ht_ptx_kernel_param_count(m, k);
    double *vals = calloc((size_t)np + 1, sizeof *vals);
    ht_ptx_features f;
    if (!vals) rc = CLI_ERROR;
    else if (!(rc = apply_params(&a, m, k, vals, np))) {
      if (ht_ptx_features_get(m, k, vals, np, &opts, &f)) {
        rc = cli_fail("");
      } else {
        ht_ptx_features_set_resources(&f, res, n_res, ht_ptx_kernel_name(m, k));
        print_kernel(ht_ptx_kernel_name(m, k), &f, cli_has(&a, "json"));
      }
    }
    free(vals);
  }
  ht_ptx_free(m);
  return rc;
}
