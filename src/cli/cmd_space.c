/* hetune space count|sample|list SPEC: inspect a search space (hetune spec or T1 file). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  "  --seed N       sampling seed (default 1)\n";

static int is_t1(const char *path) {
  json_error_t err;
  json_t *root = json_load_file(path, 0, &err);
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
  memset(&info, 0, sizeof info);
  const char *dev_id = cli_opt(a, "device");
  if (dev_id) {
    ht_device *dev;
    if (ht_device_open(dev_id, &dev)) {
      ht_spec_destroy(spec);
      return cli_fail("");
    }
    info = dev->info;
    ht_device_close(dev);
  }
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

int cmd_space(int argc, char **argv) {
  static const char *const known[] = {"device", "size", "n", "seed", NULL};
  if (cli_wants_help(argc, argv)) return fputs(help, stdout), CLI_OK;
  cli_args a;
  int rc = cli_parse(argc - 1, argv + 1, NULL, &a);
  for (int i = 0; !rc && i < a.n_pos; i++) /* accept -n N */
    if (strcmp(a.pos[i], "-n") == 0 && i + 1 < a.n_pos) {
      a.opt_name[a.n_opt] = "n";
      a.opt_value[a.n_opt++] = a.pos[i + 1];
      memmove(&a.pos[i], &a.pos[i + 2], sizeof(char *) * (size_t)(a.n_pos - i - 2));
      a.n_pos -= 2;
    }
  if (!rc) rc = cli_check_known(&a, "space", known);
  if (!rc && (a.n_pos != 2 || (strcmp(a.pos[0], "count") && strcmp(a.pos[0], "sample") && strcmp(a.pos[0], "list"))))
    rc = cli_usage_error("space", "expected count, sample or list, then a SPEC file");
  ht_space *space = NULL;
  if (rc || (rc = load_space(&a, a.pos[1], &space))) return rc;
  const char *nv = cli_opt(&a, "n");
  long long n = nv ? atoll(nv) : strcmp(a.pos[0], "sample") == 0 ? 10 : -1;
  uint64_t count;
  if (strcmp(a.pos[0], "count") == 0) {
    if (ht_space_count(space, &count)) rc = cli_fail("space count");
    else printf("%llu valid of %llu configs\n", (unsigned long long)count,
                (unsigned long long)ht_space_cartesian_size(space));
  } else if (strcmp(a.pos[0], "list") == 0) {
    void *ctx[2] = {space, &n};
    if (ht_space_enumerate(space, print_config, ctx)) rc = cli_fail("space list");
  } else {
    ht_rng rng;
    ht_rng_seed(&rng, cli_opt(&a, "seed") ? strtoull(cli_opt(&a, "seed"), NULL, 10) : 1);
    ht_config *cfgs = calloc(n > 0 ? (size_t)n : 1, sizeof(ht_config));
    int got = 0;
    if (!cfgs || ht_space_sample(space, &rng, (int)n, cfgs, &got)) rc = cli_fail("space sample");
    long long all = -1;
    for (int i = 0; i < got; i++) {
      void *ctx[2] = {space, &all};
      print_config(&cfgs[i], ctx);
    }
    free(cfgs);
  }
  ht_space_destroy(space);
  return rc;
}
