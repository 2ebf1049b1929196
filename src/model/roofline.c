/* A physical floor under every prediction: a kernel cannot read its bytes faster than the device
 * reads a working set of that size (the roofline's memory side, with the bandwidth measured per
 * working set by ht_bandwidth_measure, so the cache levels are in it). Models learn time from the
 * sizes they were trained on; when a larger problem leaves a cache level, no training row shows the
 * slowdown, and they predict the in-cache speed. The floor catches that case and nothing else: a
 * prediction already slower than the floor is left alone.
 *
 * floor(x) = bytes / (k * bandwidth(bytes)), k = max(1, the highest bytes / time / bandwidth(bytes)
 * of any training row). The spec's "bytes" may count more than a kernel really moves (a working
 * set reused across runs, an estimate); k makes sure the floor never lies above a measured
 * training time. k is never below 1: a floor scaled down to the best fraction of the curve the
 * training rows reached assumes every kernel stays memory-bound, and on the datasets it made
 * compute-bound kernels' hold-out errors 2-7 times worse (blackscholes_opencl 3.0% -> 22.3%) for
 * a gain on one memory-bound kernel (docs/prediction.md, "The roofline floor"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/roofline.h"

/* A larger working set is never read faster than a smaller one (each point is at most the one
 * before it, read from the right): a dip measured at one size, a sweep slowed by the machine's
 * load, does not raise the floor there. */
static void upper_envelope(ht_bandwidth_curve *c) {
  for (int i = c->n - 2; i >= 0; i--) c->bytes_per_s[i] = fmax(c->bytes_per_s[i], c->bytes_per_s[i + 1]);
}

void roofline_fit(roofline *r, const ht_dataset *train) {
  memset(r, 0, sizeof *r);
  r->bytes_index = -1;
  int b = ht_dataset_feature(train, "bytes");
  if (b < 0 || train->bandwidth.n < 1) return;
  r->bytes_index = b;
  r->curve = train->bandwidth;
  upper_envelope(&r->curve);
  r->k = 1;
  for (int i = 0; i < train->n_rows; i++) {
    double bytes = train->x[(size_t)i * train->n_features + b];
    if (bytes > 0 && train->y[i] > 0) r->k = fmax(r->k, bytes / train->y[i] / ht_bandwidth_at(&r->curve, bytes));
  }
}

double roofline_floor(const roofline *r, const double *x) {
  if (r->bytes_index < 0) return 0;
  double bytes = x[r->bytes_index];
  return bytes > 0 ? bytes / (r->k * ht_bandwidth_at(&r->curve, bytes)) : 0;
}

void roofline_save(const roofline *r, ht_buf *out) {
  mu_put_i64(out, r->bytes_index >= 0);
  if (r->bytes_index < 0) return;
  mu_put_i64(out, r->bytes_index);
  mu_put_f64(out, r->k);
  mu_put_i64(out, r->curve.n);
  mu_put_f64s(out, r->curve.bytes, r->curve.n);
  mu_put_f64s(out, r->curve.bytes_per_s, r->curve.n);
}

ht_status roofline_load(roofline *r, mu_reader *rd, int n_features) {
  memset(r, 0, sizeof *r);
  r->bytes_index = -1;
  int has_floor = (int)mu_get_count(rd, 0, 1);
  if (rd->failed) return ht_error(HT_ERR_PARSE, "saved model: truncated before its roofline floor");
  if (!has_floor) return HT_OK;
  int index = (int)mu_get_count(rd, 0, n_features - 1);
  double k = mu_get_f64(rd);
  int n = (int)mu_get_count(rd, 1, HT_BANDWIDTH_MAX_POINTS);
  double *bytes = rd->failed ? NULL : mu_get_f64s(rd, n);
  double *bps = bytes ? mu_get_f64s(rd, n) : NULL;
  ht_status st = !bps || !(k >= 1) ? ht_error(HT_ERR_PARSE, "saved model: truncated or bad roofline floor") : HT_OK;
  for (int i = 0; !st && i < n; i++)
    if (!(bps[i] > 0) || !(bytes[i] > 0) || (i > 0 && !(bytes[i] > bytes[i - 1])))
      st = ht_error(HT_ERR_PARSE, "saved model: bad point %d of the roofline floor's bandwidth curve", i);
  if (!st) {
    r->bytes_index = index;
    r->k = k;
    r->curve.n = n;
    memcpy(r->curve.bytes, bytes, (size_t)n * sizeof *bytes);
    memcpy(r->curve.bytes_per_s, bps, (size_t)n * sizeof *bps);
  }
  free(bytes);
  free(bps);
  return st;
}
