/* CUDA on a real GPU (ctest label gpu): vector add on cuda:0. Skips when no driver or GPU. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>

#include "hetune/device.h"

static const char *vadd_src =
    "extern \"C\" __global__ void vadd(const float *a, const float *b, float *c, int n, float alpha) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) c[i] = alpha * a[i] + b[i] + OFFSET;\n"
    "}\n";

static ht_status compile(ht_device *dev, const char *entry, ht_program **p, ht_compile_info *info) {
  const char *names[] = {"OFFSET"};
  const char *values[] = {"0.5f"};
  ht_defines defs = {1, names, values};
  ht_source src = {.lang = HT_LANG_CUDA, .text = vadd_src, .path = "vadd.cu", .entry = entry};
  memset(info, 0, sizeof *info);
  return ht_device_compile(dev, &src, &defs, p, info);
}

/* An application or another library (NVIDIA's OpenCL driver) that initialised CUDA before
 * hetune's first probe: a child forked after that cannot use CUDA, so the probe must not rely on
 * one. Runs first, before hetune itself opens the device. */
static void test_probe_after_foreign_init(void **state) {
  (void)state;
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  int (*cu_init)(unsigned) = lib ? (int (*)(unsigned))dlsym(lib, "cuInit") : NULL;
  if (!cu_init || cu_init(0) != 0) {
    fprintf(stderr, "SKIP test_probe_after_foreign_init: no usable CUDA driver\n");
    skip();
  }
  ht_device_info *infos = NULL;
  int n = 0;
  assert_int_equal(ht_device_list(&infos, &n, NULL), HT_OK);
  int cuda = 0;
  for (int i = 0; i < n; i++) cuda += strncmp(infos[i].id, "cuda:", 5) == 0;
  free(infos);
  if (!cuda) fail_msg("cuInit works here, yet the device list has no CUDA device");
}

static void test_cuda_vadd(void **state) {
  (void)state;
  ht_device *dev = NULL;
  if (ht_device_open("cuda:0", &dev) != HT_OK) {
    fprintf(stderr, "SKIP test_cuda_vadd: no usable CUDA device: %s\n", ht_last_error());
    skip();
  }
  assert_int_equal(ht_device_info_get(dev)->warp_size, 32);
  ht_program *p = NULL;
  ht_compile_info info;
  ht_status s = compile(dev, "vadd", &p, &info);
  if (s) fprintf(stderr, "%s\n%s\n", ht_last_error(), info.log ? info.log : "");
  assert_int_equal(s, HT_OK);
  free(info.log);
  enum { N = 100000 };
  float *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b), *c = malloc(N * sizeof *c);
  assert_non_null(a);
  assert_non_null(b);
  assert_non_null(c);
  for (int i = 0; i < N; i++) a[i] = (float)i, b[i] = 1.0f, c[i] = 0;
  ht_buffer *ba, *bb, *bc;
  double t = -1;
  assert_int_equal(ht_device_buffer_new(dev, N * sizeof(float), &ba), HT_OK);
  assert_int_equal(ht_device_buffer_new(dev, N * sizeof(float), &bb), HT_OK);
  assert_int_equal(ht_device_buffer_new(dev, N * sizeof(float), &bc), HT_OK);
  assert_int_equal(ht_device_buffer_write(dev, ba, a, N * sizeof(float), &t), HT_OK);
  assert_int_equal(ht_device_buffer_write(dev, bb, b, N * sizeof(float), &t), HT_OK);
  assert_true(t >= 0);
  ht_arg args[5] = {{.is_buffer = 1, .buf = ba, .type = HT_DTYPE_F32},
                    {.is_buffer = 1, .buf = bb, .type = HT_DTYPE_F32},
                    {.is_buffer = 1, .buf = bc, .type = HT_DTYPE_F32},
                    {.type = HT_DTYPE_I32, .value = ht_int(N)},
                    {.type = HT_DTYPE_F32, .value = ht_float(2.0)}};
  ht_launch l = {.dims = 1, .global = {(N + 255) / 256 * 256}, .local = {256}, .n_args = 5, .args = args};
  s = ht_device_launch(dev, p, &l, &t);
  if (s) fprintf(stderr, "%s\n", ht_last_error());
  assert_int_equal(s, HT_OK);
  assert_true(t > 0);
  assert_int_equal(ht_device_buffer_read(dev, bc, c, N * sizeof(float), &t), HT_OK);
  for (int i = 0; i < N; i++) assert_float_equal(c[i], 2.0f * a[i] + 1.5f, 1e-2 * (1 + a[i]));
  /* A block larger than any GPU allows is a runtime error, not a crash. */
  l.local[0] = 4096;
  l.global[0] = 4096;
  assert_int_equal(ht_device_launch(dev, p, &l, &t), HT_ERR_RUNTIME);
  /* Second compile comes from the PTX cache. */
  ht_program *p2 = NULL;
  assert_int_equal(compile(dev, "vadd", &p2, &info), HT_OK);
  assert_int_equal(info.cached, 1);
  free(info.log);
  ht_device_program_free(dev, p2);
  assert_int_equal(compile(dev, "nope", &p2, &info), HT_ERR_COMPILE);
  free(info.log);
  ht_device_buffer_free(dev, ba);
  ht_device_buffer_free(dev, bb);
  ht_device_buffer_free(dev, bc);
  ht_device_program_free(dev, p);
  ht_device_close(dev);
  free(a);
  free(b);
  free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_probe_after_foreign_init), cmocka_unit_test(test_cuda_vadd)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
