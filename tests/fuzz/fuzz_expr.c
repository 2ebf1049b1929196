/* The expression language (constraints, sizes, geometry, metrics): compile, then evaluate with
 * integers, floats and strings bound to its names. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const names[] = {"A", "B", "N", "S", "device.max_threads", "time_s"};
  const ht_value vars[] = {ht_int(16), ht_int(-3), ht_int(INT64_MAX), ht_str("float4"), ht_int(0), ht_float(1e-3)};
  char *text = fuzz_text(data, size);
  ht_expr *e = NULL;
  if (ht_expr_compile(text, names, 6, &e) == HT_OK) {
    ht_value v;
    int64_t i;
    double d;
    int b;
    (void)ht_expr_eval(e, vars, &v);
    (void)ht_expr_eval_int(e, vars, &i);
    (void)ht_expr_eval_double(e, vars, &d);
    (void)ht_expr_eval_bool(e, vars, &b);
    (void)ht_expr_uses(e, 2);
    (void)ht_expr_max_slot(e);
  }
  ht_expr_destroy(e);
  free(text);
  return 0;
}
