/* Output verification and input generation. */
#include <float.h>
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

/* Elements i0 .. i0+k-1 of p as doubles, the type's switch outside the loop: verifying is a few
 * passes over every output element of every config. Integer types only: float and double have
 * loops of their own (largest_f32, count_f32, ...). */
enum { BLOCK = 256 };
static void load_block(ht_dtype t, const void *p, size_t i0, size_t k, double *dst) {
#define LOAD_AS(T) \
  for (size_t j = 0; j < k; j++) dst[j] = (double)((const T *)p)[i0 + j]; \
  return
  switch (t) {
  case HT_DTYPE_I32: LOAD_AS(int32_t);
  case HT_DTYPE_U32: LOAD_AS(uint32_t);
  case HT_DTYPE_I64: LOAD_AS(int64_t);
  case HT_DTYPE_U64: LOAD_AS(uint64_t);
  case HT_DTYPE_I8: LOAD_AS(int8_t);
  case HT_DTYPE_U8: LOAD_AS(uint8_t);
  default:
    for (size_t j = 0; j < k; j++) dst[j] = NAN;
  }
#undef LOAD_AS
}

/* eq[j] = 1 where elements i0+j of a and b have the same bits. */
static void same_bits_block(size_t es, const void *a, const void *b, size_t i0, size_t k, unsigned char *eq) {
  switch (es) {
  case 4:
    for (size_t j = 0; j < k; j++) eq[j] = ((const uint32_t *)a)[i0 + j] == ((const uint32_t *)b)[i0 + j];
    return;
  case 8:
    for (size_t j = 0; j < k; j++) eq[j] = ((const uint64_t *)a)[i0 + j] == ((const uint64_t *)b)[i0 + j];
    return;
  default:
    for (size_t j = 0; j < k; j++) eq[j] = memcmp((const char *)a + (i0 + j) * es, (const char *)b + (i0 + j) * es, es) == 0;
  }
}

/* Float and double outputs, the usual case, are checked by loops of their own type that the compiler
 * can vectorize (this file is built with -O3): three times faster than through blocks of doubles,
 * which on an output of 16 M floats saves tens of milliseconds per config. */
#define LARGEST_AS(NAME, T)                                    \
  static double NAME(const T *p, size_t n) {                   \
    double max = 0;                                            \
    for (size_t i = 0; i < n; i++) {                           \
      double r = fabs((double)p[i]);                           \
      max = r <= DBL_MAX && r > max ? r : max;                 \
    }                                                          \
    return max;                                                \
  }
LARGEST_AS(largest_f32, float)
LARGEST_AS(largest_f64, double)
#undef LARGEST_AS

static double largest_finite(ht_dtype type, const void *p, size_t n) {
  if (type == HT_DTYPE_F32) return largest_f32(p, n);
  if (type == HT_DTYPE_F64) return largest_f64(p, n);
  double v[BLOCK], max = 0;
  for (size_t i0 = 0; i0 < n; i0 += BLOCK) {
    size_t k = n - i0 < BLOCK ? n - i0 : BLOCK;
    load_block(type, p, i0, k, v);
    for (size_t j = 0; j < k; j++) {
      double r = fabs(v[j]);
      if (isfinite(r) && r > max) max = r;
    }
  }
  return max;
}

static int differs(double o, double r, double rtol, double atol) {
  return (isfinite(o) == 0) | ((isfinite(r) != 0) & (fabs(o - r) > atol + rtol * fabs(r))) | ((isinf(r) != 0) & (o != r));
}

/* 64-bit integers compared exactly when no tolerance is asked: as doubles, two values beyond 2^53
 * that differ in their lowest bits would compare equal. */
static int exact_ints(ht_dtype type, double rtol, double atol) {
  return (type == HT_DTYPE_I64 || type == HT_DTYPE_U64) && rtol == 0 && atol == 0;
}

/* Counts, without branching on the data, the elements not within tolerance of ref and those the
 * kernel left as they were (see unchanged_noise): a correct output, the usual case, costs a pass. */
typedef struct tally {
  size_t bad, unchanged;
} tally;

/* count_block for float and double: differs() and the unchanged test, element by element. */
#define COUNT_AS(NAME, T, BITS)                                                                       \
  static tally NAME(const T *out, const T *ref, const T *init, size_t n, double rtol, double atol,     \
                    double noise) {                                                                   \
    size_t bad = 0, unchanged = 0;                                                                    \
    for (size_t i = 0; i < n; i++) {                                                                  \
      double o = out[i], r = ref[i], ar = fabs(r);                                                    \
      int o_bad = !(fabs(o) <= DBL_MAX); /* NaN or infinite */                                        \
      bad += (size_t)(o_bad | ((ar <= DBL_MAX) & (fabs(o - r) > atol + rtol * ar)) | ((ar == INFINITY) & (o != r))); \
    }                                                                                                 \
    for (size_t i = 0; init && i < n; i++) {                                                          \
      BITS bo, bi;                                                                                    \
      memcpy(&bo, &out[i], sizeof bo);                                                                \
      memcpy(&bi, &init[i], sizeof bi);                                                               \
      unchanged += (size_t)((bo == bi) & (fabs((double)ref[i] - (double)init[i]) > noise));           \
    }                                                                                                 \
    return (tally){bad, unchanged};                                                                   \
  }
COUNT_AS(count_f32, float, uint32_t)
COUNT_AS(count_f64, double, uint64_t)
#undef COUNT_AS

static tally count_block(ht_dtype type, const void *out, const void *ref, const void *init, size_t n, double rtol,
                         double atol, double noise) {
  if (type == HT_DTYPE_F32) return count_f32(out, ref, init, n, rtol, atol, noise);
  if (type == HT_DTYPE_F64) return count_f64(out, ref, init, n, rtol, atol, noise);
  double o[BLOCK], r[BLOCK], in[BLOCK];
  unsigned char eq[BLOCK];
  size_t es = ht_dtype_size(type);
  int exact = exact_ints(type, rtol, atol);
  tally t = {0, 0};
  for (size_t i0 = 0; i0 < n; i0 += BLOCK) {
    size_t k = n - i0 < BLOCK ? n - i0 : BLOCK;
    load_block(type, out, i0, k, o);
    load_block(type, ref, i0, k, r);
    if (exact) {
      same_bits_block(es, out, ref, i0, k, eq);
      for (size_t j = 0; j < k; j++) t.bad += (size_t)!eq[j];
    } else {
      for (size_t j = 0; j < k; j++) t.bad += (size_t)differs(o[j], r[j], rtol, atol);
    }
    if (!init) continue;
    load_block(type, init, i0, k, in);
    same_bits_block(es, out, init, i0, k, eq);
    for (size_t j = 0; j < k; j++) t.unchanged += (size_t)(eq[j] & (fabs(r[j] - in[j]) > noise));
  }
  return t;
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
static double unchanged_noise(ht_dtype type, double max_ref) {
  double eps = type == HT_DTYPE_F32 ? 0x1p-23 : type == HT_DTYPE_F64 ? 0x1p-52 : 0;
  return 64 * eps * max_ref;
}

/* The first element that differs and the largest difference: for the message of a failed check. */
static size_t first_differing(ht_dtype type, const void *out, const void *ref, size_t n, double rtol, double atol,
                              double *worst) {
  size_t first = n, es = ht_dtype_size(type);
  int exact = exact_ints(type, rtol, atol);
  *worst = 0;
  for (size_t i = 0; i < n; i++) {
    double o = load(type, out, i), r = load(type, ref, i), d = fabs(o - r);
    if (exact ? memcmp((const char *)out + i * es, (const char *)ref + i * es, es) == 0 : !differs(o, r, rtol, atol))
      continue;
    if (first == n) first = i;
    if (!(d <= *worst)) *worst = d;
  }
  return first;
}

static size_t first_unchanged(ht_dtype type, const void *out, const void *ref, const void *init, size_t n,
                              double noise) {
  size_t es = ht_dtype_size(type);
  for (size_t i = 0; i < n; i++)
    if (memcmp((const char *)out + i * es, (const char *)init + i * es, es) == 0 &&
        fabs(load(type, ref, i) - load(type, init, i)) > noise)
      return i;
  return n;
}

int ht_verify_buffer(const char *name, ht_dtype type, const void *out, const void *ref, const void *init, size_t n,
                     double rtol, double atol, char *message, size_t len) {
  double max_ref = largest_finite(type, ref, n), noise = unchanged_noise(type, max_ref), worst;
  default_tolerance(type, max_ref, &rtol, &atol);
  tally t = count_block(type, out, ref, init, n, rtol, atol, noise);
  if (t.bad) {
    size_t first = first_differing(type, out, ref, n, rtol, atol, &worst);
    double o = load(type, out, first), r = load(type, ref, first);
    snprintf(message, len, "%s[%zu] = %.9g, expected %.9g; %zu of %zu elements differ (largest |diff| %.3g, "
             "rtol %.3g, atol %.3g)", name, first, o, r, t.bad, n, worst, rtol, atol);
    return 1;
  }
  if (!t.unchanged) return 0;
  size_t first = first_unchanged(type, out, ref, init, n, noise);
  snprintf(message, len, "%s[%zu] = %.9g was not written: the reference changed it to %.9g; %zu of %zu elements "
           "left as they were", name, first, load(type, out, first), load(type, ref, first), t.unchanged, n);
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
