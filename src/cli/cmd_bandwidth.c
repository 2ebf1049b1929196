/* hetune bandwidth: a device's read bandwidth by working set, the curve behind the models' roofline
 * floor (hetune model train --bandwidth). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <libgen.h>
#include <unistd.h>

#include "cli/cli.h"

static const char *bandwidth_help =
  "usage: hetune bandwidth [--device D] [--min BYTES] [--max BYTES] [--sweeps N] [--output FILE.csv]\n"
  "\n"
  "Measures how fast the device reads a working set of each size, doubling from --min to --max: a\n"
  "generated probe (a vectorised sum over a uint32 array, in every config of a small space: thread\n"
  "counts in C; work-group sizes, grid, access pattern and vector width in OpenCL) runs through the\n"
  "runner, verified against a reference; a measurement is the fastest config's median, and each\n"
  "point keeps the best of --sweeps sweeps. The curve shows the cache levels (L2,\n"
  "L3, memory). 'hetune model train|eval --bandwidth FILE' turns it into a roofline floor under\n"
  "the model's predictions (docs/prediction.md). C, OpenCL and CUDA devices.\n"
  "\n"
  "  --device D     device (default c)\n"
  "  --min BYTES    smallest working set (default 65536)\n"
  "  --max BYTES    largest working set (default 536870912 = 512 MiB)\n"
  "  --sweeps N     measure every working set N times, in new processes, and keep the best\n"
  "                 (default 3: a shared machine's load only ever slows a sweep down)\n"
  "  --output F     write the curve as CSV (bytes,gb_per_s,threads)\n"
  "  --quiet        no progress output\n";

typedef struct progress_ctx {
  int quiet, sweeps;
} progress_ctx;

static void progress(int sweep, double bytes, double bytes_per_s, int threads, void *ctx) {
  const progress_ctx *p = ctx;
  if (!p->quiet) fprintf(stderr, "  sweep %d/%d: %.0f bytes, %.1f GB/s (%d threads)\n", sweep, p->sweeps, bytes,
                         bytes_per_s / 1e9, threads);
}

static void print_curve(const char *device, const ht_bandwidth_curve *c) {
  printf("read bandwidth of %s by working set (the best of each point's sweeps)\n%14s  %10s  %7s\n", device, "bytes",
         "GB/s", "threads");
  for (int i = 0; i < c->n; i++) printf("%14.0f  %10.1f  %7d\n", c->bytes[i], c->bytes_per_s[i] / 1e9, c->threads[i]);
}

static int read_range(const cli_args *a, double *lo, double *hi, long long *sweeps) {
  *lo = 65536;
  *hi = 536870912;
  *sweeps = 3;
  int rc = cli_opt(a, "min") ? cli_number("bandwidth", "--min", cli_opt(a, "min"), 0, lo) : CLI_OK;
  if (!rc && cli_opt(a, "max")) rc = cli_number("bandwidth", "--max", cli_opt(a, "max"), 0, hi);
  if (!rc && cli_opt(a, "sweeps")) rc = cli_integer_in("bandwidth", "--sweeps", cli_opt(a, "sweeps"), 1, 1000, sweeps);
  return rc;
}

/* Checked before measuring, so a typo in --output does not throw the measurement away. */
static int writable_dir_of(const char *path) {
  char *copy = ht_strdup(path);
  int ok = copy && access(dirname(copy), W_OK) == 0;
  free(copy);
  return ok;
}

int cmd_bandwidth(int argc, char **argv) {
  static const char *const flags[] = {"quiet", NULL};
  static const char *const known[] = {"device", "min", "max", "sweeps", "output", "quiet", NULL};
  if (cli_wants_help(argc, argv)) {
    fputs(bandwidth_help, stdout);
    return CLI_OK;
  }
  cli_args a;
  double lo, hi;
  long long sweeps;
  int rc = cli_parse(argc, argv, "bandwidth", known, flags, &a);
  if (!rc && a.n_pos) rc = cli_usage_error("bandwidth", "takes no positional arguments");
  if (!rc) rc = read_range(&a, &lo, &hi, &sweeps);
  if (rc) return rc;
  const char *device = cli_opt(&a, "device") ? cli_opt(&a, "device") : "c";
  const char *out = cli_opt(&a, "output");
  if (out && !writable_dir_of(out))
    return fprintf(stderr, "hetune: bandwidth: cannot write %s: its folder is missing or read-only\n", out), CLI_ERROR;
  progress_ctx p = {cli_has(&a, "quiet"), (int)sweeps};
  ht_bandwidth_curve c;
  ht_status st = ht_bandwidth_measure(device, lo, hi, (int)sweeps, NULL, progress, &p, &c);
  if (st) return cli_fail_device("bandwidth", st);
  print_curve(device, &c);
  if (!out) return CLI_OK;
  char comment[256], when[32];
  time_t now = time(NULL);
  strftime(when, sizeof when, "%Y-%m-%dT%H:%MZ", gmtime(&now));
  snprintf(comment, sizeof comment, "hetune bandwidth: read bandwidth of %s by working set, measured %s", device, when);
  if (ht_bandwidth_save(out, &c, comment)) return cli_fail("bandwidth");
  printf("wrote %d points to %s\n", c.n, out);
  return CLI_OK;
}
