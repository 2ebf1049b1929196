/* Output verification and input generation. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "measure/evaluator.h"

static double load(ht_dtype t, const void *p, size_t i) {
  switch (t) {
  case HT_DTYPE_F32: return ((const float *)p)[i];
  case HT_DTYPE_F64: return ((const double *)p)[i];
  case HT_DTYPE_I32: return ((const int32_t *)p)[i];
  case HT_DTYPE_U32: return ((const uint32_t *)p)[i];
  case HT_DTYPE_I64: return (double)((const int64_t *)p)[i];
  case HT_DTYPE_U64: return (double)((const uint64_t *)p)[i];
  case HT_DTYPE_I8: return ((const int8_t *)p)[i];
  case HT_DTYPE_U8: return ((const uint8_t *)p)[i];
  default: return NAN;
  }
}

static void store(ht_dtype t, void *p, size_t i, double v) {
  switch (t) {
  case HT_DTYPE_F32: ((float *)p)[i] = (float)v; break;
  case HT_DTYPE_F64: ((double *)p)[i] = v; break;
  case HT_DTYPE_I32: ((int32_t *)p)[i] = (int32_t)v; break;
  case HT_DTYPE_U32: ((uint32_t *)p)[i] = (uint32_t)v; break;
  case HT_DTYPE_I64: ((int64_t *)p)[i] = (int64_t)v; break;
  case HT_DTYPE_U64: ((uint64_t *)p)[i] = (uint64_t)v; break;
  case HT_DTYPE_I8: ((int8_t *)p)[i] = (int8_t)v; break;
  case HT_DTYPE_U8: ((uint8_t *)p)[i] = (uint8_t)v; break;
  default: break;
  }
}

/* Tolerance defaults scale with the element type and the output's magnitude, so a sum of many
 * terms near zero is not failed on relative error alone. */
static void default_tolerance(ht_dtype t, double max_ref, double *rtol, double *atol) {
  double base = t == HT_DTYPE_F32 ? 1e-4 : t == HT_DTYPE_F64 ? 1e-10 : 0;
  if (*rtol < 0) *rtol = base;
  if (*atol < 0) *atol = base * max_ref;
}

/* Elements the kernel left as they were where the reference changed them. Such an element can
 * still be within tolerance of the reference (a small update, a value near zero), so a kernel
 * that skips it, an off-by-one for instance, would pass the comparison alone. Comparing with the
 * initial contents, rather than poisoning the outputs before the run (NaN, a pattern), keeps the
 * data every config and the reference see the same, and keeps kernels working that add into a
 * zero-initialised output declared "write" (histograms, atomic sums). An element counts when its
 * bits are exactly the initial ones and the reference moved it by more than rounding noise (64
 * units in the last place of the output's largest value): a correct kernel may well round a
 * true value near zero to exactly 0 where the reference got 1e-13 (Black-Scholes far out of
 * the money), but it does not keep the old value where the reference moved it visibly. */
static size_t count_unchanged(ht_dtype type, const void *out, const void *ref, const void *init, size_t n,
                              double max_ref, size_t *first) {
  size_t es = ht_dtype_size(type), count = 0;
  double eps = type == HT_DTYPE_F32 ? 0x1p-23 : type == HT_DTYPE_F64 ? 0x1p-52 : 0, noise = 64 * eps * max_ref;
  const char *o = out, *in = init;
  for (size_t i = 0; i < n; i++)
    if (memcmp(o + i * es, in + i * es, es) == 0 && fabs(load(type, ref, i) - load(type, init, i)) > noise)
      if (!count++) *first = i;
  return count;
}

int ht_verify_buffer(const char *name, ht_dtype type, const void *out, const void *ref, const void *init, size_t n,
                     double rtol, double atol, char *message, size_t len) {
  double max_ref = 0;
  for (size_t i = 0; i < n; i++) {
    double r = fabs(load(type, ref, i));
    if (isfinite(r) && r > max_ref) max_ref = r;
  }
  default_tolerance(type, max_ref, &rtol, &atol);
  size_t bad = 0, first = 0;
  double worst = 0;
  for (size_t i = 0; i < n; i++) {
    double o = load(type, out, i), r = load(type, ref, i), d = fabs(o - r);
    int fail = !isfinite(o) || (isfinite(r) && d > atol + rtol * fabs(r)) || (!isfinite(r) && !isnan(r) && o != r);
    if (fail) {
      if (!bad++) first = i;
      if (!(d <= worst)) worst = d;
    }
  }
  if (bad) {
    double o = load(type, out, first), r = load(type, ref, first);
    snprintf(message, len, "%s[%zu] = %.9g, expected %.9g; %zu of %zu elements differ (largest |diff| %.3g, "
             "rtol %.3g, atol %.3g)", name, first, o, r, bad, n, worst, rtol, atol);
    return 1;
  }
  size_t unchanged = init ? count_unchanged(type, out, ref, init, n, max_ref, &first) : 0;
  if (!unchanged) return 0;
  snprintf(message, len, "%s[%zu] = %.9g was not written: the reference changed it to %.9g; %zu of %zu elements "
           "left as they were", name, first, load(type, out, first), load(type, ref, first), unchanged, n);
  return 1;
}

int ht_check_finite(const char *name, ht_dtype type, const void *out, size_t n, char *message, size_t len) {
  if (!ht_dtype_is_float(type)) return 0;
  for (size_t i = 0; i < n; i++) {
    double o = load(type, out, i);
    if (!isfinite(o)) {
      snprintf(message, len, "%s[%zu] = %g (NaN or Inf)", name, i, o);
      return 1;
    }
  }
  return 0;
}

ht_status ht_fill_buffer(const ht_spec_arg *a, void *data, size_t n, uint64_t seed) {
  size_t bytes = n * ht_dtype_size(a->type);
  switch (a->init) {
  case HT_INIT_ZEROS: memset(data, 0, bytes); return HT_OK;
  case HT_INIT_RAMP:
    for (size_t i = 0; i < n; i++) store(a->type, data, i, (double)i);
    return HT_OK;
  case HT_INIT_FILL:
    for (size_t i = 0; i < n; i++) store(a->type, data, i, a->fill);
    return HT_OK;
  case HT_INIT_RANDOM: {
    ht_rng rng;
    ht_rng_seed(&rng, seed);
    int is_float = ht_dtype_is_float(a->type);
    for (size_t i = 0; i < n; i++) {
      double v = a->lo + (a->hi - a->lo) * ht_rng_uniform(&rng);
      store(a->type, data, i, is_float ? v : floor(v));
    }
    return HT_OK;
  }
  case HT_INIT_FILE: {
    char *content;
    size_t len;
    ht_status st = ht_read_file_max(a->file, bytes, &content, &len); /* no more than the buffer takes */
    if (st) return ht_error_prefix(st, "argument %s: ", a->name);
    if (len != bytes) {
      free(content);
      return ht_error(HT_ERR_INVALID, "argument %s: %s holds %zu bytes, expected %zu (%zu x %s)", a->name, a->file,
                      len, bytes, n, ht_dtype_name(a->type));
    }
    memcpy(data, content, bytes);
    free(content);
    return HT_OK;
  }
  }
  return ht_error(HT_ERR_INTERNAL, "argument %s: unknown init", a->name);
}
