/* hetune space count|sample|list SPEC: inspect a search space (hetune spec or T1 file). */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

static const char *help =
  "usage: hetune space count|sample|list SPEC [options]\n"
  "\n"
  "SPEC is a hetune kernel spec or a T1 file (BAT / Kernel Tuner input format).\n"
  "Device limits in constraints come from --device (default: the spec's language's first device,\n"
  "or none for T1 files).\n"
  "\n"
  "  --device D     device whose limits constraints read\n"
  "  --size K=V     override a problem size (hetune specs)\n"
  "  -n N / --n N   how many configs to sample or list (sample default 10, list default all)\n"
  "  --seed N       sampling seed (default 1)\n"
  "  --time S       count: stop after S seconds and print how many were found so far\n"
  "  --estimate     count: estimate from 20000 random draws instead of counting\n"
  "\n"
  "Counting a huge space can take long: it prints its progress every few seconds on stderr, and\n"
  "--time or Ctrl-C stop it with the count so far (exit status 130 after Ctrl-C). Tuning never waits\n"
  "for the count.\n";

static int is_t1(const char *path) {
  json_error_t err;
  /* Not a regular file of sane size: the spec loader says so. */
  json_t *root = ht_check_regular_file(path, HT_READ_FILE_MAX) ? NULL : json_load_file(path, 0, &err);
  int t1 = root && json_object_get(root, "ConfigurationSpace") != NULL;
  json_decref(root);
  return t1;
}

static int load_space(const cli_args *a, const char *path, ht_space **space) {
  if (is_t1(path)) return ht_space_load_t1(path, space) ? cli_fail("") : CLI_OK;
  ht_spec *spec;
  int rc = cli_load_spec(a, path, &spec);
  if (rc) return rc;
  ht_device_info info;
  const char *dev_id = cli_opt(a, "device") ? cli_opt(a, "device") : cli_default_device(spec);
  ht_device *dev;
  ht_status st = ht_device_open(dev_id, &dev);
  if (st) {
    ht_spec_destroy(spec);
    return cli_fail_device("", st);
  }
  info = *ht_device_info_get(dev);
  ht_device_close(dev);
  if (ht_spec_build_space(spec, &info, space)) rc = cli_fail("");
  ht_spec_destroy(spec);
  return rc;
}

static int print_config(const ht_config *c, void *ctx) {
  void **p = ctx;
  ht_space *space = p[0];
  long long *left = p[1];
  char buf[2048];
  ht_config_format(space, c, buf, sizeof buf);
  puts(buf);
  return --*left == 0;
}

/* Parses the command line; n is how many configs to print (-1 = all). */
static int parse_space_args(int argc, char **argv, cli_args *a, long long *n, long long *seed) {
  static const char *const known[] = {"device", "size", "n", "seed", "time", "estimate", NULL};
  static const char *const flags[] = {"estimate", NULL};
  int rc = cli_parse(argc, argv, "space", known, flags, a);
  const char *sub = a->n_pos ? a->pos[0] : "";
  if (!rc && strcmp(sub, "count") && strcmp(sub, "sample") && strcmp(sub, "list"))
    rc = cli_usage_error("space", "expected count, sample or list, then a SPEC file");
  else if (!rc && a->n_pos != 2)
    rc = cli_usage_error("space", "%s: expected one SPEC file (see hetune space --help)", sub);
  *n = strcmp(sub, "sample") == 0 ? 10 : -1;
  *seed = 1;
  /* sample keeps its configs in memory: at most a million; list streams them */
  if (!rc && cli_opt(a, "n"))
    rc = cli_integer_in("space", "-n", cli_opt(a, "n"), 1, strcmp(sub, "sample") == 0 ? 1000000 : LLONG_MAX, n);
  if (!rc && cli_opt(a, "seed")) rc = cli_integer("space", "--seed", cli_opt(a, "seed"), 0, seed);
  return rc;
}

static int print_sample(ht_space *space, long long n, long long seed) {
  ht_rng rng;
  ht_rng_seed(&rng, (uint64_t)seed);
  ht_config *cfgs = calloc((size_t)n, sizeof(ht_config));
  int got = 0, rc = CLI_OK;
  if (!cfgs || ht_space_sample(space, &rng, (int)n, cfgs, &got)) rc = cli_fail("space sample");
  long long all = -1;
  for (int i = 0; i < got; i++) {
    void *ctx[2] = {space, &all};
    print_config(&cfgs[i], ctx);
  }
  free(cfgs);
  return rc;
}

typedef struct count_progress {
  double t0, last, limit_s;
  int tty;
} count_progress;

static int show_count_progress(double done, uint64_t valid, void *ctx) {
  count_progress *c = ctx;
  double now = ht_now();
  if (cli_stop_signal || (c->limit_s > 0 && now - c->t0 >= c->limit_s)) return 1;
  if (now - c->last < (c->tty ? 1.0 : 10.0)) return 0;
  c->last = now;
  fprintf(stderr, "%scounting: %.3g%% walked, %llu valid so far, %.0f s%s", c->tty ? "\r\033[K" : "", 100 * done,
          (unsigned long long)valid, now - c->t0, c->tty ? "" : "\n");
  fflush(stderr);
  return 0;
}

static int count_space(const cli_args *a, ht_space *space) {
  unsigned long long cart = (unsigned long long)ht_space_cartesian_size(space);
  uint64_t count;
  int exact;
  if (cli_has(a, "estimate")) {
    if (ht_space_size(space, 1, &count, &exact)) return cli_fail("space count");
    printf("%s%llu valid of %llu configs%s\n", exact ? "" : "about ", (unsigned long long)count, cart,
           exact ? "" : " (estimated from 20000 random draws)");
    return CLI_OK;
  }
  count_progress c = {ht_now(), ht_now(), 0, isatty(2)};
  if (cli_opt(a, "time") && cli_number("space", "--time", cli_opt(a, "time"), 0, &c.limit_s)) return CLI_USAGE;
  cli_catch_stop_signals(); /* they stop the count with the configs found so far */
  ht_status st = ht_space_count_progress(space, show_count_progress, &c, &count);
  if (c.tty && c.last > c.t0) fputs("\r\033[K", stderr);
  if (st == HT_ERR_TIMEOUT) {
    printf("at least %llu valid of %llu configs (counting stopped after %.0f s)\n", (unsigned long long)count, cart,
           ht_now() - c.t0);
    return cli_stop_signal ? 128 + cli_stop_signal : CLI_OK;
  }
  if (st) return cli_fail("space count");
  printf("%llu valid of %llu configs\n", (unsigned long long)count, cart);
  return CLI_OK;
}

int cmd_space(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) return fputs(help, stdout), CLI_OK;
  cli_args a;
  long long n, seed;
  ht_space *space = NULL;
  int rc = parse_space_args(argc, argv, &a, &n, &seed);
  if (rc || (rc = load_space(&a, a.pos[1], &space))) return rc;
  if (strcmp(a.pos[0], "count") == 0) {
    rc = count_space(&a, space);
  } else if (strcmp(a.pos[0], "list") == 0) {
    void *ctx[2] = {space, &n};
    if (ht_space_enumerate(space, print_config, ctx)) rc = cli_fail("space list");
  } else {
    rc = print_sample(space, n, seed);
  }
  ht_space_destroy(space);
  return rc;
}
