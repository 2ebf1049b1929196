/* hetune bandwidth: a device's read bandwidth by working set, the curve behind the models' roofline
 * floor (hetune model train --bandwidth); with --transfers, its host<->device copy times by size,
 * which dispatch adds to a device's predicted kernel time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <libgen.h>
#include <unistd.h>

#include "cli/cli.h"

static const char *bandwidth_help =
  "usage: hetune bandwidth [--device D] [--min BYTES] [--max BYTES] [--sweeps N] [--output FILE.csv]\n"
  "       hetune bandwidth --transfers [--device D] [--min B] [--max B] [--output FILE.csv] [--db FILE]\n"
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
  "  --quiet        no progress output\n"
  "\n"
  "With --transfers it measures how long copies between host memory and the device take, host to\n"
  "device (h2d) and back (d2h), from --min (default 1) to --max bytes (default 268435456 = 256 MiB,\n"
  "at most the device's largest buffer). Sizes start 64 bytes apart (--min/8 if more); the step\n"
  "doubles while the bandwidth stays within 10% of the line through the segment's points and is\n"
  "divided by 4 where it does not, so points gather where the time changes its slope (latency\n"
  "giving way to bandwidth, a driver switching protocol). Each point is the median of timed copies\n"
  "(OpenCL and CUDA events). It prints the times at a few sizes, stores the table with the device\n"
  "in the database (dispatch reads it from there) and writes it as CSV (direction,bytes,seconds)\n"
  "with --output. A device that works in host memory (c) has nothing to copy: its table is empty.\n"
  "\n"
  "  --db FILE      database for the table (default $HETUNE_DB or hetune.db)\n";

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

/* "measured 2026-11-24T10:00Z" into when. */
static void utc_now(char *when, size_t len) {
  time_t now = time(NULL);
  strftime(when, len, "%Y-%m-%dT%H:%MZ", gmtime(&now));
}

/* ---- --transfers ---- */

static void transfer_progress(ht_transfer_dir dir, double bytes, double seconds, int points, void *ctx) {
  if (!*(const int *)ctx)
    fprintf(stderr, "  %s: %.0f bytes, %.2f us (%d points)\n", ht_transfer_dir_name(dir), bytes, seconds * 1e6, points);
}

static double gb_per_s(double bytes, double seconds) { return seconds > 0 ? bytes / seconds / 1e9 : 0; }

/* The table read at its first point, then at powers of 16 bytes, and at its largest point. */
static void print_transfers(const ht_device *dev, const ht_transfer_table *t, double seconds) {
  if (!t->n[HT_H2D] && !t->n[HT_D2H]) {
    printf("%s (%s) works in host memory: nothing to copy, the transfer table is empty\n", ht_device_info_get(dev)->id, ht_device_info_get(dev)->name);
    return;
  }
  printf("transfer times of %s (%s): %d h2d and %d d2h points, measured in %.1f s\n", ht_device_info_get(dev)->id, ht_device_info_get(dev)->name,
         t->n[HT_H2D], t->n[HT_D2H], seconds);
  printf("%14s  %12s  %12s  %9s  %9s\n", "bytes", "h2d us", "d2h us", "h2d GB/s", "d2h GB/s");
  double first = HUGE_VAL, last = 0;
  for (int d = 0; d < 2; d++)
    if (t->n[d]) first = fmin(first, t->bytes[d][0]), last = fmax(last, t->bytes[d][t->n[d] - 1]);
  for (double b = first;; b = fmin(exp2(4 * floor(log2(b) / 4 + 1)), last)) {
    double h = ht_transfer_time(t, HT_H2D, b), d = ht_transfer_time(t, HT_D2H, b);
    printf("%14.0f  %12.2f  %12.2f  %9.3f  %9.3f\n", b, h * 1e6, d * 1e6, gb_per_s(b, h), gb_per_s(b, d));
    if (b >= last) break;
  }
}

static int read_transfer_options(const cli_args *a, ht_transfer_options *o) {
  ht_transfer_options_default(o);
  if (cli_opt(a, "sweeps")) return cli_usage_error("bandwidth", "--sweeps does not apply to --transfers");
  int rc = cli_opt(a, "min") ? cli_number("bandwidth", "--min", cli_opt(a, "min"), 0, &o->min_bytes) : CLI_OK;
  if (!rc && cli_opt(a, "max")) rc = cli_number("bandwidth", "--max", cli_opt(a, "max"), 0, &o->max_bytes);
  if (!rc && o->max_bytes < o->min_bytes)
    rc = cli_usage_error("bandwidth", "--max %.0f is below --min %.0f", o->max_bytes, o->min_bytes);
  return rc;
}

static int measure_transfers(ht_device *dev, ht_store *st, const char *out, ht_transfer_options *o) {
  ht_transfer_table *t = malloc(sizeof *t);
  if (!t) return fprintf(stderr, "hetune: bandwidth: out of memory\n"), CLI_ERROR;
  double t0 = ht_now();
  int rc = ht_transfer_measure(dev, o, t) ? cli_fail("bandwidth") : CLI_OK;
  if (!rc) print_transfers(dev, t, ht_now() - t0);
  if (!rc && ht_store_put_transfers(st, ht_device_info_get(dev), t)) rc = cli_fail("bandwidth");
  if (!rc) printf("stored in %s\n", ht_store_path(st));
  char comment[256], when[32];
  utc_now(when, sizeof when);
  snprintf(comment, sizeof comment, "hetune bandwidth --transfers: copy times of %s (%s), measured %s", ht_device_info_get(dev)->id,
           ht_device_info_get(dev)->name, when);
  if (!rc && out && ht_transfer_save(out, t, comment)) rc = cli_fail("bandwidth");
  if (!rc && out) printf("wrote %d points to %s\n", t->n[HT_H2D] + t->n[HT_D2H], out);
  free(t);
  return rc;
}

static int cmd_transfers(const cli_args *a) {
  ht_transfer_options o;
  int rc = read_transfer_options(a, &o), quiet = cli_has(a, "quiet");
  if (rc) return rc;
  const char *device = cli_opt(a, "device") ? cli_opt(a, "device") : "c";
  const char *out = cli_opt(a, "output");
  if (out && !writable_dir_of(out))
    return fprintf(stderr, "hetune: bandwidth: cannot write %s: its folder is missing or read-only\n", out), CLI_ERROR;
  o.progress = transfer_progress;
  o.progress_ctx = &quiet;
  ht_store *st = NULL;
  if (ht_store_open(cli_db_path(a), &st)) return cli_fail("bandwidth"); /* before measuring: a bad db loses nothing */
  ht_device *dev = NULL;
  ht_status s = ht_device_open(device, &dev);
  rc = s ? cli_fail_device("bandwidth", s) : measure_transfers(dev, st, out, &o);
  ht_device_close(dev);
  ht_store_close(st);
  return rc;
}

int cmd_bandwidth(int argc, char **argv) {
  static const char *const flags[] = {"quiet", "transfers", NULL};
  static const char *const known[] = {"device", "min", "max", "sweeps", "output", "quiet", "transfers", "db", NULL};
  if (cli_wants_help(argc, argv)) {
    fputs(bandwidth_help, stdout);
    return CLI_OK;
  }
  cli_args a;
  double lo, hi;
  long long sweeps;
  int rc = cli_parse(argc, argv, "bandwidth", known, flags, &a);
  if (!rc && a.n_pos) rc = cli_usage_error("bandwidth", "takes no positional arguments");
  if (!rc && cli_has(&a, "transfers")) return cmd_transfers(&a);
  if (!rc && cli_opt(&a, "db")) rc = cli_usage_error("bandwidth", "--db goes with --transfers (the curve is written with --output)");
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
  utc_now(when, sizeof when);
  snprintf(comment, sizeof comment, "hetune bandwidth: read bandwidth of %s by working set, measured %s", device, when);
  if (ht_bandwidth_save(out, &c, comment)) return cli_fail("bandwidth");
  printf("wrote %d points to %s\n", c.n, out);
  return CLI_OK;
}
