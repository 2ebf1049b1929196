/* A program outside hetune's tree, built against an installed hetune: it lists the devices,
 * counts a space, builds a spec and reads it, and copies through a device buffer, all through the
 * public API (ht_spec and ht_device are opaque there: opaque_*.c must not compile). */
#include <hetune/hetune.h>
#include <stdio.h>
#include <string.h>

#define CHECK(cond) \
  if (!(cond)) return fprintf(stderr, "app.c:%d: %s %s\n", __LINE__, #cond, ht_last_error()), 1

static const char *const kernel_text =
    "void scale(float *y, const float *x, int n) { for (int i = 0; i < n; i++) y[i] = 2 * x[i]; }\n";

/* A kernel built in code, read back through the spec's calls. */
static int read_spec(void) {
  ht_kernel *k = NULL;
  ht_spec *s = NULL;
  const ht_value wg[] = {ht_int(1), ht_int(4)};
  ht_status st = ht_kernel_create("scale", &k);
  if (!st) st = ht_kernel_set_source(k, HT_LANG_C, kernel_text, NULL);
  if (!st) st = ht_kernel_set_entry(k, "scale");
  if (!st) st = ht_kernel_add_size(k, "N", 1000);
  if (!st) st = ht_kernel_add_buffer(k, "y", HT_DTYPE_F32, "N", HT_ACCESS_WRITE);
  if (!st) st = ht_kernel_add_buffer(k, "x", HT_DTYPE_F32, "N", HT_ACCESS_READ);
  if (!st) st = ht_kernel_add_scalar(k, "n", HT_DTYPE_I32, "N");
  if (!st) st = ht_kernel_add_param(k, "UNROLL", wg, 2);
  if (!st) st = ht_kernel_finish(k, &s);
  ht_kernel_destroy(k);
  CHECK(st == HT_OK);
  CHECK(strcmp(ht_spec_name(s), "scale") == 0 && ht_spec_path(s) == NULL);
  CHECK(strlen(ht_spec_identity(s)) == 16 && ht_spec_language(s) == HT_LANG_C);
  CHECK(ht_spec_set_size(s, "N=64") == HT_OK);
  CHECK(ht_spec_size_count(s) == 1 && strcmp(ht_spec_size_name(s, 0), "N") == 0 && ht_spec_size_value(s, 0) == 64);
  CHECK(ht_spec_arg_count(s) == 3 && strcmp(ht_spec_arg_name(s, 2), "n") == 0 && !ht_spec_arg_is_buffer(s, 2));
  CHECK(ht_spec_arg_type(s, 0) == HT_DTYPE_F32 && ht_spec_arg_access(s, 0) == HT_ACCESS_WRITE);
  CHECK(ht_spec_param_count(s) == 1 && strcmp(ht_spec_param_name(s, 0), "UNROLL") == 0);
  CHECK(ht_spec_param_value_count(s, 0) == 2 && ht_spec_param_value(s, 0, 1).u.i == 4);
  CHECK(ht_spec_add_constraint(s, "UNROLL > 1") == HT_OK && ht_spec_constraint_count(s) == 1);
  ht_space *space = NULL;
  uint64_t n = 0;
  CHECK(ht_spec_build_space(s, NULL, &space) == HT_OK && ht_space_count(space, &n) == HT_OK && n == 1);
  ht_space_destroy(space);
  ht_spec_destroy(s);
  return 0;
}

/* Host data to a buffer of the c device, part of it back from an offset. */
static int copy_through_device(void) {
  ht_device *dev = NULL;
  CHECK(ht_device_open("c", &dev) == HT_OK);
  CHECK(strcmp(ht_device_info_get(dev)->backend, "c") == 0);
  float in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[2] = {0};
  ht_buffer *b = NULL;
  CHECK(ht_device_buffer_new(dev, sizeof in, &b) == HT_OK);
  CHECK(ht_device_buffer_write(dev, b, in, sizeof in, NULL) == HT_OK);
  CHECK(ht_device_buffer_read_at(dev, b, 5 * sizeof(float), out, sizeof out, NULL) == HT_OK);
  CHECK(out[0] == 6 && out[1] == 7);
  ht_device_buffer_free(dev, b);
  ht_device_close(dev);
  return 0;
}

int main(void) {
  ht_device_info *infos = NULL;
  int n = 0;
  if (ht_device_list(&infos, &n, NULL)) return fprintf(stderr, "%s\n", ht_last_error()), 1;
  ht_space *s;
  const ht_value v[] = {ht_int(1), ht_int(2), ht_int(4), ht_int(8)};
  uint64_t count = 0;
  if (ht_space_create(&s) || ht_space_add_param(s, "A", v, 4) || ht_space_add_param(s, "B", v, 4) ||
      ht_space_add_constraint(s, "A * B <= 8") || ht_space_count(s, &count))
    return fprintf(stderr, "%s\n", ht_last_error()), 1;
  printf("%d devices, first %s; %llu valid configs\n", n, n ? infos[0].id : "none", (unsigned long long)count);
  ht_space_destroy(s);
  if (read_spec() || copy_through_device()) return 1;
  return count == 10 && n >= 1 ? 0 : 1;
}
