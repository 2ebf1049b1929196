/* Strategy and model options ("key=value,...") and config texts ("A=1,B=x") of a small space. */
#include "fuzz.h"

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
  free(text);
  return 0;
}
