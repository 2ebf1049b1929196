/* Values and element types. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hetune/core.h"

double ht_value_as_double(ht_value v) {
  switch (v.kind) {
  case HT_VAL_INT: return (double)v.u.i;
  case HT_VAL_FLOAT: return v.u.f;
  default: return NAN;
  }
}

int ht_value_equal(ht_value a, ht_value b) {
  if (a.kind == HT_VAL_STR || b.kind == HT_VAL_STR)
    return a.kind == b.kind && strcmp(a.u.s, b.u.s) == 0;
  if (a.kind == HT_VAL_INT && b.kind == HT_VAL_INT) return a.u.i == b.u.i;
  return ht_value_as_double(a) == ht_value_as_double(b);
}

int ht_value_format(ht_value v, char *buf, size_t len) {
  switch (v.kind) {
  case HT_VAL_INT: return snprintf(buf, len, "%lld", (long long)v.u.i);
  case HT_VAL_FLOAT: {
    /* Shortest form that reads back exactly. */
    for (int prec = 6; prec <= 17; prec++) {
      int n = snprintf(buf, len, "%.*g", prec, v.u.f);
      if (n < 0 || (size_t)n >= len || strtod(buf, NULL) == v.u.f) return n;
    }
    return snprintf(buf, len, "%.17g", v.u.f);
  }
  default: return snprintf(buf, len, "%s", v.u.s ? v.u.s : "");
  }
}

static const struct {
  const char *name;
  size_t size;
  int is_float;
} dtypes[HT_DTYPE_COUNT] = {
  [HT_DTYPE_F32] = {"float", 4, 1}, [HT_DTYPE_F64] = {"double", 8, 1}, [HT_DTYPE_I32] = {"int32", 4, 0},
  [HT_DTYPE_U32] = {"uint32", 4, 0}, [HT_DTYPE_I64] = {"int64", 8, 0}, [HT_DTYPE_U64] = {"uint64", 8, 0},
  [HT_DTYPE_I8] = {"int8", 1, 0},    [HT_DTYPE_U8] = {"uint8", 1, 0},
};

size_t ht_dtype_size(ht_dtype t) { return (unsigned)t < HT_DTYPE_COUNT ? dtypes[t].size : 0; }
const char *ht_dtype_name(ht_dtype t) { return (unsigned)t < HT_DTYPE_COUNT ? dtypes[t].name : "?"; }
int ht_dtype_is_float(ht_dtype t) { return (unsigned)t < HT_DTYPE_COUNT && dtypes[t].is_float; }

ht_status ht_dtype_parse(const char *name, ht_dtype *out) {
  static const struct {
    const char *alias;
    ht_dtype t;
  } aliases[] = {
    {"float", HT_DTYPE_F32},  {"f32", HT_DTYPE_F32},    {"float32", HT_DTYPE_F32}, {"double", HT_DTYPE_F64},
    {"f64", HT_DTYPE_F64},    {"float64", HT_DTYPE_F64}, {"int", HT_DTYPE_I32},     {"int32", HT_DTYPE_I32},
    {"i32", HT_DTYPE_I32},    {"uint", HT_DTYPE_U32},   {"uint32", HT_DTYPE_U32},  {"u32", HT_DTYPE_U32},
    {"unsigned", HT_DTYPE_U32}, {"long", HT_DTYPE_I64}, {"int64", HT_DTYPE_I64},   {"i64", HT_DTYPE_I64},
    {"ulong", HT_DTYPE_U64},  {"uint64", HT_DTYPE_U64}, {"u64", HT_DTYPE_U64},     {"size_t", HT_DTYPE_U64},
    {"int8", HT_DTYPE_I8},    {"char", HT_DTYPE_I8},    {"i8", HT_DTYPE_I8},       {"uint8", HT_DTYPE_U8},
    {"uchar", HT_DTYPE_U8},   {"u8", HT_DTYPE_U8},
  };
  for (size_t i = 0; name && i < sizeof aliases / sizeof aliases[0]; i++)
    if (strcasecmp(name, aliases[i].alias) == 0) {
      *out = aliases[i].t;
      return HT_OK;
    }
  return ht_error(HT_ERR_INVALID,
                  "unknown element type '%s' (expected float, double, int32, uint32, int64, uint64, int8 or uint8)",
                  name ? name : "(null)");
}
