/* Strategy and model options ("key=value,..."), config texts ("A=1,B=x") of a small space, and the
 * partitioner's options, planned with when they parse. */
#include "fuzz.h"

static double linear_pu(void *ctx, int pu, int version, int64_t lb, int64_t ub) {
  (void)ctx, (void)version;
  return (1.0 + pu) * 1e-9 * (double)(ub - lb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = fuzz_text(data, size);
  ht_options *o = NULL;
  if (ht_options_parse(text, &o) == HT_OK) ht_options_destroy(o);
  ht_space *s = NULL;
  const ht_value a[] = {ht_int(1), ht_int(2), ht_int(4)}, b[] = {ht_str("x"), ht_str("y,z"), ht_float(0.5)};
  if (ht_space_create(&s) == HT_OK && ht_space_add_param(s, "A", a, 3) == HT_OK &&
      ht_space_add_param(s, "B", b, 3) == HT_OK) {
    ht_config c;
    if (ht_config_parse(s, text, &c) == HT_OK) {
      char buf[256];
      ht_config_format(s, &c, buf, sizeof buf);
    }
  }
  ht_space_destroy(s);
  ht_partition_opts po = {0};
  const double watts[3] = {50, 100, 200};
  ht_partition plan;
  if (ht_partition_opts_parse(text, &po) == HT_OK) {
    if (po.eliminate_energy > 0 || po.recursive || po.idle_power_w > 0) po.power_w = watts;
    ht_partition_plan(3, 0, 1000, linear_pu, NULL, &po, &plan);
  }
  free(text);
  return 0;
}
