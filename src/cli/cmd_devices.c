/* hetune devices: every device of every backend with its limits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static void print_device(const ht_device_info *d) {
  printf("%-12s %s\n", d->id, d->name);
  printf("    vendor %s; driver %s; runtime %s\n", d->vendor, d->driver_version, d->runtime_version);
  printf("    compiler %s\n", d->compiler_version);
  printf("    compute units %d, max threads %d, warp %d, clock %d MHz\n", d->compute_units, d->max_threads,
         d->warp_size, d->clock_mhz);
  printf("    global memory %.1f GiB, max allocation %.1f GiB, local memory %llu KiB\n",
         d->global_mem_bytes / 1073741824.0, d->max_alloc_bytes / 1073741824.0,
         (unsigned long long)(d->local_mem_bytes / 1024));
  printf("    max work-group size %llu, max work-item sizes %llu x %llu x %llu\n",
         (unsigned long long)d->max_work_group_size, (unsigned long long)d->max_work_item_sizes[0],
         (unsigned long long)d->max_work_item_sizes[1], (unsigned long long)d->max_work_item_sizes[2]);
  printf("    fingerprint %s\n", d->fingerprint);
}

/* The device's power figures and where they come from, or why it has none; measured ones (RAPL)
 * go into store db when there is one, where energy-aware co-execution finds them. */
static int print_power(const ht_device_info *d, ht_store *db) {
  ht_device *dev;
  ht_device_power_info p;
  ht_status st = ht_device_open(d->id, &dev);
  if (!st) {
    st = ht_device_power(dev, NULL, &p);
    ht_device_close(dev);
  }
  if (st) {
    printf("    power: none: %s\n", ht_last_error());
    return CLI_OK;
  }
  printf("    power: active %.1f W, idle %.1f W (%s: %s)\n", p.active_w, p.idle_w, p.source, p.detail);
  if (db && strcmp(p.source, "rapl") == 0 && ht_store_put_power(db, d, &p)) return cli_fail("devices --power");
  return CLI_OK;
}

int cmd_devices(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    puts("usage: hetune devices [--power [--db FILE]]\n\nLists every device of every backend (c, opencl, cuda) with "
         "its limits;\nbackends that cannot run here say why.\n\n"
         "  --power   also each device's active and idle power and where they come from (a simulated\n"
         "            device's model, RAPL counters under $HETUNE_POWERCAP_DIR, NVML), or why it has\n"
         "            none; measuring a CPU runs a reference load on every core for about 0.4 s\n"
         "  --db FILE with --power: store the CPU's measured figures there, replacing earlier ones;\n"
         "            energy-aware co-execution with that database reads them instead of measuring");
    return CLI_OK;
  }
  cli_args a;
  static const char *const known[] = {"power", "db", NULL}, *const flags[] = {"power", NULL};
  int rc = cli_parse(argc, argv, "devices", known, flags, &a);
  if (rc) return rc;
  if (a.n_pos) return cli_usage_error("devices", "takes no arguments");
  if (cli_opt(&a, "db") && !cli_has(&a, "power")) return cli_usage_error("devices", "--db goes with --power");
  ht_store *db = NULL;
  if (cli_opt(&a, "db") && ht_store_open(cli_opt(&a, "db"), &db)) return cli_fail("devices");
  ht_device_info *infos = NULL;
  int n = 0;
  ht_buf notes = {0};
  if (ht_device_list(&infos, &n, &notes)) {
    ht_store_close(db);
    return cli_fail("devices");
  }
  for (int i = 0; i < n && !rc; i++) {
    print_device(&infos[i]);
    if (cli_has(&a, "power")) rc = print_power(&infos[i], db);
  }
  if (notes.data) printf("%s%s", notes.data, notes.data[notes.len - 1] == '\n' ? "" : "\n");
  free(infos);
  ht_buf_free(&notes);
  ht_store_close(db);
  return rc;
}
