/* Host<->device transfer times by size: measured with adaptive stepping (dense where the time
 * changes its slope, sparse where it does not), interpolated piecewise affinely, and their CSV
 * form. Dispatch adds them to the predicted kernel time of a device that needs its data copied. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/backend.h"
#include "core/csv.h"
#include "hetune/measure.h"

/* ---- the table ---- */

const char *ht_transfer_dir_name(ht_transfer_dir dir) {
  return dir == HT_H2D ? "h2d" : dir == HT_D2H ? "d2h" : "?";
}

double ht_transfer_time(const ht_transfer_table *t, ht_transfer_dir dir, double bytes) {
  if (!t || (dir != HT_H2D && dir != HT_D2H) || t->n[dir] < 1) return 0;
  int n = t->n[dir];
  const double *x = t->bytes[dir], *y = t->seconds[dir];
  if (!(bytes > x[0]) || n == 1) return y[0]; /* NaN and sizes below the first point included */
  int i = 1;
  while (i < n - 1 && bytes > x[i]) i++;
  double line = y[i - 1] + (y[i] - y[i - 1]) * (bytes - x[i - 1]) / (x[i] - x[i - 1]);
  /* Beyond the last point the last segment goes on; a segment that falls (a faster protocol for
   * larger copies) must not make a larger copy faster than the largest one measured. */
  return bytes > x[n - 1] && line < y[n - 1] ? y[n - 1] : line;
}

/* ---- CSV ---- */

static ht_status parse_row(const char *path, int line, char *text, void *table) {
  ht_transfer_table *t = table;
  char *comma = strchr(text, ',');
  if (comma) *comma = '\0';
  int dir = strcmp(text, "h2d") == 0 ? HT_H2D : strcmp(text, "d2h") == 0 ? HT_D2H : -1;
  if (dir < 0 || !comma)
    return ht_error(HT_ERR_PARSE, "%s:%d: expected the direction h2d or d2h, got '%s'", path, line, text);
  char *p = comma + 1, *end;
  errno = 0;
  double bytes = strtod(p, &end);
  if (end == p || *end != ',' || errno || !(bytes > 0) || !isfinite(bytes))
    return ht_error(HT_ERR_PARSE, "%s:%d: expected a positive number of bytes after the direction", path, line);
  p = end + 1;
  double sec = strtod(p, &end);
  if (end == p || *end != '\0' || !(sec >= 0) || !isfinite(sec))
    return ht_error(HT_ERR_PARSE, "%s:%d: expected a time in seconds >= 0 after the bytes (and nothing after it)",
                    path, line);
  int n = t->n[dir];
  if (n >= HT_TRANSFER_MAX_POINTS)
    return ht_error(HT_ERR_PARSE, "%s:%d: more than %d %s points", path, line, HT_TRANSFER_MAX_POINTS,
                    ht_transfer_dir_name(dir));
  if (n > 0 && !(bytes > t->bytes[dir][n - 1]))
    return ht_error(HT_ERR_PARSE, "%s:%d: %s bytes %.0f do not increase (previous %s row %.0f)", path, line,
                    ht_transfer_dir_name(dir), bytes, ht_transfer_dir_name(dir), t->bytes[dir][n - 1]);
  t->bytes[dir][n] = bytes;
  t->seconds[dir][n] = sec;
  t->n[dir]++;
  return HT_OK;
}

ht_status ht_transfer_load(const char *path, ht_transfer_table *out) {
  memset(out, 0, sizeof *out);
  ht_status st = ht_lines_read(path, "transfer table", "direction,bytes,seconds", "direction,bytes,seconds", parse_row, out);
  if (st) memset(out, 0, sizeof *out);
  return st;
}

ht_status ht_transfer_save(const char *path, const ht_transfer_table *t, const char *comment) {
  ht_buf b = {0};
  if (comment) ht_buf_appendf(&b, "# %s\n", comment);
  ht_buf_append(&b, "direction,bytes,seconds\n");
  for (int d = 0; d < 2; d++)
    for (int i = 0; i < t->n[d]; i++)
      ht_buf_appendf(&b, "%s,%.0f,%.17g\n", ht_transfer_dir_name((ht_transfer_dir)d), t->bytes[d][i],
                     t->seconds[d][i]);
  ht_status st = b.failed ? ht_error(HT_ERR_NOMEM, "out of memory") : ht_write_file_atomic(path, b.data, b.len);
  ht_buf_free(&b);
  return st;
}

/* ---- options ---- */

void ht_transfer_options_default(ht_transfer_options *o) {
  memset(o, 0, sizeof *o);
  o->min_bytes = 1;
  o->max_bytes = 256.0 * 1024 * 1024;
  o->max_points = 200;
  o->tolerance = 0.10;
  o->min_runs = 5;
  o->max_runs = 50;
  o->rsd_target = 0.05;
  o->max_time_s = 0.5;
}

static ht_status check_options(const ht_transfer_options *o) {
  if (!(o->min_bytes >= 1) || o->min_bytes > 9007199254740992.0 || o->min_bytes != floor(o->min_bytes))
    return ht_error(HT_ERR_INVALID, "transfer options: min_bytes %g: expected a whole number >= 1", o->min_bytes);
  if (!(o->max_bytes >= o->min_bytes) || !isfinite(o->max_bytes))
    return ht_error(HT_ERR_INVALID, "transfer options: max_bytes %g: expected at least min_bytes %g", o->max_bytes,
                    o->min_bytes);
  if (o->max_points < 2 || o->max_points > HT_TRANSFER_MAX_POINTS)
    return ht_error(HT_ERR_INVALID, "transfer options: max_points %d: expected 2 to %d", o->max_points,
                    HT_TRANSFER_MAX_POINTS);
  if (!(o->tolerance > 0) || !isfinite(o->tolerance))
    return ht_error(HT_ERR_INVALID, "transfer options: tolerance %g: expected a number > 0", o->tolerance);
  if (o->min_runs < 1 || o->max_runs < o->min_runs || o->max_runs > HT_MAX_SAMPLES)
    return ht_error(HT_ERR_INVALID, "transfer options: min_runs %d, max_runs %d: expected 1 <= min_runs <= max_runs <= %d",
                    o->min_runs, o->max_runs, HT_MAX_SAMPLES);
  if (!(o->rsd_target > 0) || !(o->max_time_s > 0))
    return ht_error(HT_ERR_INVALID, "transfer options: rsd_target %g, max_time_s %g: expected numbers > 0",
                    o->rsd_target, o->max_time_s);
  return HT_OK;
}

/* ---- timing one size ---- */

typedef struct xfer {
  ht_device *dev;
  ht_buffer *buf;
  unsigned char *host;
  const ht_transfer_options *o;
} xfer;

static ht_status copy_once(xfer *x, ht_transfer_dir dir, size_t bytes, double *seconds) {
  *seconds = 0;
  ht_status st = dir == HT_H2D ? x->dev->ops->buffer_write(x->dev, x->buf, x->host, bytes, seconds)
                               : x->dev->ops->buffer_read(x->dev, x->buf, x->host, bytes, seconds);
  if (st) return ht_error_prefix(st, "%s copy of %zu bytes on %s: ", ht_transfer_dir_name(dir), bytes, x->dev->info.id);
  return HT_OK;
}

/* The timed series is long enough: the rsd rule after min_runs, or a cap. */
static int enough(const ht_transfer_options *o, const double *t, int n, double timed) {
  if (n >= o->max_runs) return 1;
  if (n < o->min_runs) return 0;
  if (timed >= o->max_time_s) return 1;
  double m = ht_stat_mean(t, n);
  return !(m > 0) || ht_stat_stddev(t, n) / m < o->rsd_target;
}

/* The median time of copies of `bytes` in dir, after one untimed copy (page faults, lazy
 * allocation on the device), and the samples' relative standard deviation. */
static ht_status time_copy(xfer *x, ht_transfer_dir dir, size_t bytes, double *median, double *rsd) {
  double t[HT_MAX_SAMPLES], timed = 0, warm;
  int n = 0;
  ht_status st = copy_once(x, dir, bytes, &warm);
  while (!st && !enough(x->o, t, n, timed)) {
    st = copy_once(x, dir, bytes, &t[n]);
    timed += t[n++];
  }
  if (st) return st;
  double mean = ht_stat_mean(t, n);
  *median = ht_stat_median(t, n);
  *rsd = mean > 0 ? ht_stat_stddev(t, n) / mean : 0;
  return HT_OK;
}

/* ---- adaptive stepping over one direction ---- */

typedef struct sweep {
  xfer *x;
  ht_transfer_dir dir;
  ht_transfer_table *out;
  double rsd[HT_TRANSFER_MAX_POINTS]; /* of each table point's samples */
  double seg_x[HT_TRANSFER_MAX_POINTS], seg_y[HT_TRANSFER_MAX_POINTS]; /* the current segment: bytes, bandwidth */
  int seg_n;
} sweep;

/* Opens a gap at i of the first n elements of a. */
static void open_gap(double *a, int i, int n) { memmove(a + i + 1, a + i, (size_t)(n - i) * sizeof *a); }

/* The time of `bytes` and its samples' rsd: the table's when measured already (a segment that
 * starts again passes sizes it has seen), else measured and inserted in order. */
static ht_status point(sweep *w, double bytes, double *seconds, double *rsd) {
  int d = w->dir, n = w->out->n[d], i = 0;
  double *x = w->out->bytes[d], *y = w->out->seconds[d];
  while (i < n && x[i] < bytes) i++;
  if (i < n && x[i] == bytes) {
    *seconds = y[i];
    *rsd = w->rsd[i];
    return HT_OK;
  }
  ht_status st = time_copy(w->x, w->dir, (size_t)bytes, seconds, rsd);
  if (st) return st;
  open_gap(x, i, n);
  open_gap(y, i, n);
  open_gap(w->rsd, i, n);
  x[i] = bytes;
  y[i] = *seconds;
  w->rsd[i] = *rsd;
  w->out->n[d]++;
  const ht_transfer_options *o = w->x->o;
  if (o->progress) o->progress(w->dir, bytes, *seconds, w->out->n[d], o->progress_ctx);
  return HT_OK;
}

/* The least-squares line through the segment's points, at bytes (centred sums: the sizes of a
 * segment may be close together and large). */
static double segment_line_at(const sweep *w, double bytes) {
  int n = w->seg_n;
  double mx = ht_stat_mean(w->seg_x, n), my = ht_stat_mean(w->seg_y, n), sxx = 0, sxy = 0;
  for (int i = 0; i < n; i++) {
    sxx += (w->seg_x[i] - mx) * (w->seg_x[i] - mx);
    sxy += (w->seg_x[i] - mx) * (w->seg_y[i] - my);
  }
  return my + (sxx > 0 ? sxy / sxx : 0) * (bytes - mx);
}

/* The F1 stepping: a point within tolerance of its segment's line joins it and doubles the
 * stride; one outside divides the stride by 4 and starts a new segment at the last accepted point,
 * whose next point always joins (two points make a line), so the sweep always moves on. Two
 * choices of hetune's keep noise from eating the points: a deviation within the point's own
 * spread (the rsd of its samples) is not a new segment, and the stride is at least 1/8 of the
 * size (also the first one, for a large min_bytes), so even a sweep that rejects every other
 * point crosses 1 B to 256 MiB in about 200. */
static ht_status step_through(sweep *w, double max_bytes) {
  const ht_transfer_options *o = w->x->o;
  double s = o->min_bytes, stride = fmax(64, floor(s / 8)), t, rsd;
  while (s <= max_bytes && w->out->n[w->dir] < o->max_points) {
    ht_status st = point(w, s, &t, &rsd);
    if (st) return st;
    double bw = s / (t > 1e-12 ? t : 1e-12); /* a copy timed at 0 (a coarse clock) is not infinitely fast */
    if (w->seg_n >= 2) {
      double line = segment_line_at(w, s), tol = rsd > o->tolerance ? rsd : o->tolerance;
      if (!(line > 0) || fabs(bw - line) > tol * line) {
        double last = w->seg_x[w->seg_n - 1];
        stride = fmax(1, fmax(floor(stride / 4), floor(last / 8)));
        w->seg_x[0] = w->seg_x[w->seg_n - 1];
        w->seg_y[0] = w->seg_y[w->seg_n - 1];
        w->seg_n = 1;
        s = w->seg_x[0] + stride;
        continue;
      }
      stride *= 2;
    }
    w->seg_x[w->seg_n] = s;
    w->seg_y[w->seg_n++] = bw;
    s += stride;
  }
  return HT_OK;
}

/* One direction: the stepping, then max_bytes itself so the table reaches it. A first copy that
 * takes no time, when the largest takes none either, means nothing is copied: an empty direction. */
static ht_status measure_direction(xfer *x, ht_transfer_dir dir, double max_bytes, ht_transfer_table *out) {
  sweep *w = calloc(1, sizeof *w);
  if (!w) return ht_error(HT_ERR_NOMEM, "out of memory");
  *w = (sweep){.x = x, .dir = dir, .out = out};
  double t0 = 0, t1 = 0, rsd;
  ht_status st = point(w, x->o->min_bytes, &t0, &rsd);
  if (!st && t0 <= 0) st = point(w, max_bytes, &t1, &rsd);
  if (!st && t0 <= 0 && t1 <= 0) {
    out->n[dir] = 0;
  } else if (!st) {
    st = step_through(w, max_bytes);
    if (!st && out->n[dir] < x->o->max_points) st = point(w, max_bytes, &t1, &rsd);
  }
  free(w);
  return st;
}

/* The largest copy: the option, within what the device can hold in one buffer. */
static double largest_copy(const ht_device *dev, const ht_transfer_options *o) {
  double max = floor(o->max_bytes);
  if (dev->info.max_alloc_bytes && (double)dev->info.max_alloc_bytes < max) max = (double)dev->info.max_alloc_bytes;
  if (dev->info.global_mem_bytes && (double)dev->info.global_mem_bytes < max) max = (double)dev->info.global_mem_bytes;
  return max < o->min_bytes ? o->min_bytes : max;
}

ht_status ht_transfer_measure(ht_device *dev, const ht_transfer_options *opt, ht_transfer_table *out) {
  memset(out, 0, sizeof *out);
  ht_transfer_options o;
  if (opt) o = *opt;
  else ht_transfer_options_default(&o);
  ht_status st = check_options(&o);
  if (st || strcmp(dev->info.backend, "c") == 0) return st; /* the c device works in host memory */
  double max = largest_copy(dev, &o);
  xfer x = {dev, NULL, malloc((size_t)max), &o};
  if (!x.host) return ht_error(HT_ERR_NOMEM, "transfer table of %s: no host memory for %.0f bytes", dev->info.id, max);
  memset(x.host, 0x5a, (size_t)max); /* touched: page faults are not part of any copy's time */
  st = dev->ops->buffer_new(dev, (size_t)max, &x.buf);
  if (st) st = ht_error_prefix(st, "transfer table of %s: ", dev->info.id);
  for (int d = 0; d < 2 && !st; d++) st = measure_direction(&x, (ht_transfer_dir)d, max, out);
  if (x.buf) dev->ops->buffer_free(dev, x.buf);
  free(x.host);
  if (st) memset(out, 0, sizeof *out);
  return st;
}
