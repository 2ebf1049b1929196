/* The device frame on the real backends: asynchronous launches with poll and wait, the global work
 * offset, buffer views, copies at an offset and cooperative cancellation, on c, on OpenCL (PoCL
 * here; skipped without a device) and on CUDA (skipped without a GPU). The stop-flag kernels of
 * docs/runtime.md are compiled and run from the page itself. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "device/backend.h" /* the backends' tables */
#include "device/cuda_nvrtc.h"
#include "hetune/device.h"

/* PoCL and its LLVM keep compiler state alive until exit; LeakSanitizer (ASan builds) would
 * report it as ours. This hook is only read by LSan; other builds never call it. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libpocl\nleak:libLLVM\nleak:libclang\n"; }

/* Kernels with one signature per entry on every backend:
 *   vadd(a, b, c, n)                     c = a + b
 *   gated_vadd(go, a, b, c, n, bound)    waits for its stop flag (the gate), then c = a + b
 *   spin(stop, stopped, bound)           spins until its stop flag; stopped[i] = 1 when the flag,
 *                                        not the safety bound, ended it
 *   flag_value(stop, out)                out[0] = the flag as the kernel sees it
 * bound is the safety limit that keeps a broken cancel from hanging the test: seconds in C,
 * iterations elsewhere (OpenCL and CUDA kernels have no clock to read). */
static const char *c_src =
    "#include <stdint.h>\n"
    "#include <time.h>\n"
    "static double now(void) {\n"
    "  struct timespec t;\n"
    "  clock_gettime(CLOCK_MONOTONIC, &t);\n"
    "  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;\n"
    "}\n"
    "void vadd(const float *a, const float *b, float *c, int32_t n) {\n"
    "  for (int32_t i = 0; i < n; i++) c[i] = a[i] + b[i];\n"
    "}\n"
    "void gated_vadd(volatile int32_t *go, const float *a, const float *b, float *c, int32_t n, int64_t bound) {\n"
    "  double end = now() + (double)bound;\n"
    "  while (!*go && now() < end) {}\n"
    "  vadd(a, b, c, n);\n"
    "}\n"
    "void spin(volatile int32_t *stop, int32_t *stopped, int64_t bound) {\n"
    "  double end = now() + (double)bound;\n"
    "  int32_t by_flag = 0;\n"
    "  while (!(by_flag = *stop != 0) && now() < end) {}\n"
    "  stopped[0] = by_flag;\n"
    "}\n"
    "void flag_value(volatile int32_t *stop, int32_t *out) { out[0] = *stop; }\n";

static const char *cl_src =
    "__kernel void vadd(__global const float *a, __global const float *b, __global float *c, int n) {\n"
    "  size_t i = get_global_id(0);\n"
    "  if (i < (size_t)n) c[i] = a[i] + b[i];\n"
    "}\n"
    "__kernel void gated_vadd(__global volatile int *go, __global const float *a, __global const float *b,\n"
    "                         __global float *c, int n, long bound) {\n"
    "  for (long k = 0; k < bound && !*go; k++) {}\n"
    "  size_t i = get_global_id(0);\n"
    "  if (i < (size_t)n) c[i] = a[i] + b[i];\n"
    "}\n"
    "__kernel void spin(__global volatile int *stop, __global int *stopped, long bound) {\n"
    "  long k = 0;\n"
    "  while (k < bound && !*stop) k++;\n"
    "  stopped[get_global_id(0)] = k < bound;\n"
    "}\n"
    "__kernel void flag_value(__global volatile int *stop, __global int *out) { out[0] = *stop; }\n";

static const char *cuda_src =
    "extern \"C\" __global__ void vadd(const float *a, const float *b, float *c, int n) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) c[i] = a[i] + b[i];\n"
    "}\n"
    "extern \"C\" __global__ void gated_vadd(volatile int *go, const float *a, const float *b, float *c, int n,\n"
    "                                       long long bound) {\n"
    "  for (long long k = 0; k < bound && !*go; k++) {}\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) c[i] = a[i] + b[i];\n"
    "}\n"
    "extern \"C\" __global__ void spin(volatile int *stop, int *stopped, long long bound) {\n"
    "  long long k = 0;\n"
    "  while (k < bound && !*stop) k++;\n"
    "  stopped[blockIdx.x * blockDim.x + threadIdx.x] = k < bound;\n"
    "}\n"
    "extern \"C\" __global__ void flag_value(volatile int *stop, int *out) { out[0] = *stop; }\n";

typedef struct backend_case {
  const char *id;
  ht_language lang;
  const char **src;
  const char *path;
  int64_t bound; /* see above: ~20 s in each unit on this machine's kind of device */
} backend_case;

static const backend_case c_case = {"c", HT_LANG_C, &c_src, HT_SOURCE_DIR "/tests/async.c", 20};
/* PoCL spins at 2-4 ns per iteration. */
static const backend_case cl_case = {"opencl", HT_LANG_OPENCL, &cl_src, HT_SOURCE_DIR "/tests/async.cl", 5000000000};
/* A read of host-mapped memory crosses the bus: about a microsecond. */
static const backend_case cuda_case = {"cuda", HT_LANG_CUDA, &cuda_src, HT_SOURCE_DIR "/tests/async.cu", 20000000};

enum { N = 1024, LOCAL = 64 };

/* ---- helpers ---- */

/* The c device must open; the others are skipped where this machine has none. */
static ht_device *open_case(const backend_case *k) {
  ht_device *dev = NULL;
  ht_status s = ht_device_open(k->id, &dev);
  if (s && k->lang != HT_LANG_C) {
    fprintf(stderr, "SKIP %s: %s\n", k->id, ht_last_error());
    return NULL;
  }
  if (s) fprintf(stderr, "open %s: %s\n", k->id, ht_last_error());
  assert_int_equal(s, HT_OK);
  return dev;
}

static ht_program *compile_text(ht_device *dev, ht_language lang, const char *text, const char *path,
                                const char *entry) {
  ht_source src = {.lang = lang, .text = text, .path = path, .entry = entry};
  ht_compile_info info = {0};
  ht_program *p = NULL;
  ht_status s = ht_device_compile(dev, &src, NULL, &p, &info);
  if (s) fprintf(stderr, "compile %s: %s\n%s\n", entry, ht_last_error(), info.log ? info.log : "");
  free(info.log);
  assert_int_equal(s, HT_OK);
  return p;
}

static ht_program *compile(ht_device *dev, const backend_case *k, const char *entry) {
  return compile_text(dev, k->lang, *k->src, k->path, entry);
}

static ht_buffer *new_buffer(ht_device *dev, const void *data, size_t bytes) {
  ht_buffer *b = NULL;
  assert_int_equal(ht_device_buffer_new(dev, bytes, &b), HT_OK);
  if (data) assert_int_equal(ht_device_buffer_write(dev, b, data, bytes, NULL), HT_OK);
  return b;
}

static ht_arg buf_arg(ht_buffer *b) { return (ht_arg){.is_buffer = 1, .buf = b, .type = HT_DTYPE_F32}; }
static ht_arg int_arg(ht_dtype t, int64_t v) { return (ht_arg){.type = t, .value = ht_int(v)}; }
static ht_arg stop_arg(void) { return (ht_arg){.is_stop_flag = 1, .type = HT_DTYPE_I32}; }

static ht_launch launch_1d(size_t global, size_t local, const ht_arg *args, int n) {
  return (ht_launch){.dims = 1, .global = {global}, .local = {local}, .n_args = n, .args = args};
}

/* Host arrays a[i] = i, b[i] = 2 - i*i/N, so a + b is distinct per index. */
typedef struct vectors {
  float a[N], b[N], c[N];
} vectors;

static void fill(vectors *v) {
  for (int i = 0; i < N; i++) {
    v->a[i] = (float)i;
    v->b[i] = 2.0f - (float)i * (float)i / N;
    v->c[i] = -1.0f;
  }
}

/* c[i] is a[i] + b[i] inside [from, to) and still the sentinel -1 outside. */
static void check_range(const vectors *v, const float *c, int from, int to) {
  for (int i = 0; i < N; i++) {
    float want = i >= from && i < to ? v->a[i] + v->b[i] : -1.0f;
    if (fabsf(c[i] - want) > 1e-4f) fprintf(stderr, "c[%d] = %g, want %g\n", i, c[i], want);
    assert_true(fabsf(c[i] - want) <= 1e-4f);
  }
}

/* a, b and c of a vadd on dev, from fresh host vectors v (c all -1). */
typedef struct vadd_bufs {
  ht_buffer *a, *b, *c;
} vadd_bufs;

static vadd_bufs vadd_new(ht_device *dev, vectors *v) {
  fill(v);
  return (vadd_bufs){new_buffer(dev, v->a, sizeof v->a), new_buffer(dev, v->b, sizeof v->b),
                     new_buffer(dev, v->c, sizeof v->c)};
}

static void vadd_free(ht_device *dev, vadd_bufs *x) {
  ht_device_buffer_free(dev, x->a);
  ht_device_buffer_free(dev, x->b);
  if (x->c) ht_device_buffer_free(dev, x->c);
}

/* The device's c: a + b inside [from, to), -1 outside. */
static void check_device(ht_device *dev, ht_buffer *c, const vectors *v, int from, int to) {
  float out[N];
  assert_int_equal(ht_device_buffer_read(dev, c, out, sizeof out, NULL), HT_OK);
  check_range(v, out, from, to);
}

/* Polls until the launch has finished, at most limit seconds; 1 when it did. */
static int poll_until_done(ht_device *dev, ht_event *ev, double limit) {
  for (double t0 = ht_now(); ht_now() - t0 < limit; usleep(1000))
    if (ht_device_poll(dev, ev) == 1) return 1;
  return 0;
}

/* ---- asynchronous launches ---- */

static void test_async_vadd(void **state) {
  const backend_case *k = *state;
  ht_device *dev = open_case(k);
  if (!dev) skip();
  assert_true(ht_device_caps(dev) & HT_CAP_ASYNC);
  static vectors v;
  vadd_bufs x = vadd_new(dev, &v);
  ht_program *p = compile(dev, k, "vadd");
  ht_arg args[] = {buf_arg(x.a), buf_arg(x.b), buf_arg(x.c), int_arg(HT_DTYPE_I32, N)};
  ht_launch l = launch_1d(N, LOCAL, args, 4);
  ht_event *ev = NULL;
  assert_int_equal(ht_device_launch_async(dev, p, &l, &ev), HT_OK);
  double kernel_s = -1;
  assert_int_equal(ht_device_wait(dev, ev, &kernel_s), HT_OK);
  assert_true(kernel_s >= 0);
  check_device(dev, x.c, &v, 0, N);
  ht_device_program_free(dev, p);
  vadd_free(dev, &x);
  ht_device_close(dev);
}

/* A launch held at its gate is running for certain: poll says 0 until the gate opens (through
 * the stop flag), then 1; the wait gives the sum. */
static void test_async_poll(void **state) {
  const backend_case *k = *state;
  ht_device *dev = open_case(k);
  if (!dev) skip();
  static vectors v;
  vadd_bufs x = vadd_new(dev, &v);
  ht_program *p = compile(dev, k, "gated_vadd");
  ht_arg args[] = {stop_arg(),   buf_arg(x.a), buf_arg(x.b), buf_arg(x.c), int_arg(HT_DTYPE_I32, N),
                   int_arg(HT_DTYPE_I64, k->bound)};
  ht_launch l = launch_1d(N, LOCAL, args, 6);
  ht_event *ev = NULL;
  assert_int_equal(ht_device_launch_async(dev, p, &l, &ev), HT_OK);
  for (int i = 0; i < 5; i++, usleep(10000)) assert_int_equal(ht_device_poll(dev, ev), 0);
  assert_int_equal(ht_device_cancel(dev, ev), HT_OK); /* opens the gate */
  assert_true(poll_until_done(dev, ev, 60));
  assert_int_equal(ht_device_wait(dev, ev, NULL), HT_OK);
  check_device(dev, x.c, &v, 0, N);
  ht_device_program_free(dev, p);
  vadd_free(dev, &x);
  ht_device_close(dev);
}

/* The c backend's launch threads: a launch while others run (held at their gates) gets a thread
 * of its own; one launch after another runs on the same thread (so a kernel's OpenMP team stays);
 * a forked child, which has none of the parent's threads, launches too. */
static const char *thread_src =
    "#define _GNU_SOURCE\n"
    "#include <stdint.h>\n"
    "#include <sys/syscall.h>\n"
    "#include <unistd.h>\n"
    "void self(int64_t *out) { out[0] = (int64_t)syscall(SYS_gettid); }\n";

static int64_t launch_self(ht_device *dev, ht_program *p, ht_buffer *out) {
  ht_arg args[] = {{.is_buffer = 1, .buf = out, .type = HT_DTYPE_I64}};
  ht_launch l = launch_1d(1, 1, args, 1);
  ht_event *ev = NULL;
  int64_t id = 0;
  if (ht_device_launch_async(dev, p, &l, &ev) || ht_device_wait(dev, ev, NULL) ||
      ht_device_buffer_read(dev, out, &id, sizeof id, NULL))
    return 0;
  return id;
}

static void test_c_launch_threads(void **state) {
  (void)state;
  ht_device *dev = open_case(&c_case);
  static vectors v1, v2, v3;
  vadd_bufs x1 = vadd_new(dev, &v1), x2 = vadd_new(dev, &v2), x3 = vadd_new(dev, &v3);
  ht_program *gated = compile(dev, &c_case, "gated_vadd"), *vadd = compile(dev, &c_case, "vadd");
  ht_arg a1[] = {stop_arg(), buf_arg(x1.a), buf_arg(x1.b), buf_arg(x1.c), int_arg(HT_DTYPE_I32, N),
                 int_arg(HT_DTYPE_I64, c_case.bound)};
  ht_arg a2[] = {stop_arg(), buf_arg(x2.a), buf_arg(x2.b), buf_arg(x2.c), int_arg(HT_DTYPE_I32, N),
                 int_arg(HT_DTYPE_I64, c_case.bound)};
  ht_arg a3[] = {buf_arg(x3.a), buf_arg(x3.b), buf_arg(x3.c), int_arg(HT_DTYPE_I32, N)};
  ht_launch l1 = launch_1d(N, LOCAL, a1, 6), l2 = launch_1d(N, LOCAL, a2, 6), l3 = launch_1d(N, LOCAL, a3, 4);
  ht_event *e1 = NULL, *e2 = NULL, *e3 = NULL;
  assert_int_equal(ht_device_launch_async(dev, gated, &l1, &e1), HT_OK);
  assert_int_equal(ht_device_launch_async(dev, gated, &l2, &e2), HT_OK);
  assert_int_equal(ht_device_launch_async(dev, vadd, &l3, &e3), HT_OK);
  assert_int_equal(ht_device_wait(dev, e3, NULL), HT_OK); /* while both others wait at their gates */
  check_device(dev, x3.c, &v3, 0, N);
  assert_int_equal(ht_device_poll(dev, e1), 0);
  assert_int_equal(ht_device_poll(dev, e2), 0);
  assert_int_equal(ht_device_cancel(dev, e2), HT_OK);
  assert_int_equal(ht_device_cancel(dev, e1), HT_OK);
  assert_int_equal(ht_device_wait(dev, e1, NULL), HT_OK);
  assert_int_equal(ht_device_wait(dev, e2, NULL), HT_OK);
  check_device(dev, x1.c, &v1, 0, N);
  check_device(dev, x2.c, &v2, 0, N);

  ht_program *self = compile_text(dev, HT_LANG_C, thread_src, HT_SOURCE_DIR "/tests/async_self.c", "self");
  ht_buffer *out = new_buffer(dev, NULL, sizeof(int64_t));
  int64_t first = launch_self(dev, self, out); /* the id of the thread that ran it: a new thread
                                                  gets a new one */
  assert_true(first >= 1);
  for (int i = 1; i <= 20; i++) assert_true(launch_self(dev, self, out) == first);

  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    alarm(30); /* a launch handed to a thread the child does not have would wait forever */
    _exit(launch_self(dev, self, out) != 0 ? 0 : 1);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);

  ht_device_buffer_free(dev, out);
  ht_device_program_free(dev, self);
  ht_device_program_free(dev, gated);
  ht_device_program_free(dev, vadd);
  vadd_free(dev, &x1);
  vadd_free(dev, &x2);
  vadd_free(dev, &x3);
  ht_device_close(dev);
}

/* ---- cancellation ---- */

/* The spinning kernel is stopped by cancel, not by its safety bound; a synchronous launch of a
 * kernel with a stop flag sees it 0; a stop flag that is not an i32 scalar is refused. */
static void test_cancel(void **state) {
  const backend_case *k = *state;
  ht_device *dev = open_case(k);
  if (!dev) skip();
  assert_true(ht_device_caps(dev) & HT_CAP_CANCEL);
  int32_t init[2] = {-1, -1}, stopped[2];
  ht_buffer *out = new_buffer(dev, init, sizeof init);
  ht_program *p = compile(dev, k, "spin");
  ht_arg args[] = {stop_arg(), buf_arg(out), int_arg(HT_DTYPE_I64, k->bound)};
  /* two work-groups of one: on OpenCL and CUDA both spin, on c the function runs once */
  ht_launch l = launch_1d(k->lang == HT_LANG_C ? 1 : 2, 1, args, 3);
  ht_event *ev = NULL;
  assert_int_equal(ht_device_launch_async(dev, p, &l, &ev), HT_OK);
  usleep(50000);
  assert_int_equal(ht_device_poll(dev, ev), 0);
  double t0 = ht_now();
  assert_int_equal(ht_device_cancel(dev, ev), HT_OK);
  assert_int_equal(ht_device_wait(dev, ev, NULL), HT_OK);
  fprintf(stderr, "%s: stopped %.3f ms after cancel\n", k->id, (ht_now() - t0) * 1e3);
  assert_int_equal(ht_device_buffer_read(dev, out, stopped, sizeof stopped, NULL), HT_OK);
  assert_int_equal(stopped[0], 1);
  if (k->lang != HT_LANG_C) assert_int_equal(stopped[1], 1);
  ht_device_program_free(dev, p);

  p = compile(dev, k, "flag_value");
  ht_arg fargs[] = {stop_arg(), buf_arg(out)};
  ht_launch fl = launch_1d(1, 1, fargs, 2);
  assert_int_equal(ht_device_launch(dev, p, &fl, NULL), HT_OK);
  assert_int_equal(ht_device_buffer_read(dev, out, stopped, sizeof stopped, NULL), HT_OK);
  assert_int_equal(stopped[0], 0);
  fargs[0].type = HT_DTYPE_F32;
  assert_int_equal(ht_device_launch(dev, p, &fl, NULL), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "stop flag"));
  fargs[0] = (ht_arg){.is_stop_flag = 1, .is_buffer = 1, .buf = out, .type = HT_DTYPE_I32};
  assert_int_equal(ht_device_launch_async(dev, p, &fl, &ev), HT_ERR_INVALID);
  ht_device_program_free(dev, p);
  ht_device_buffer_free(dev, out);
  ht_device_close(dev);
}

/* The c backend with its asynchronous operations taken away: launch_async runs the kernel to its
 * end, poll says finished, and cancel says the device cannot. */
static void test_cancel_unsupported(void **state) {
  (void)state;
  ht_device *real = open_case(&c_case);
  ht_backend_ops sync_ops = *real->ops;
  sync_ops.caps = 0;
  sync_ops.launch_async = NULL;
  sync_ops.wait = NULL;
  sync_ops.poll = NULL;
  sync_ops.cancel = NULL;
  ht_device dev = *real;
  dev.ops = &sync_ops;
  assert_int_equal(ht_device_caps(&dev), 0);
  static vectors v;
  vadd_bufs x = vadd_new(&dev, &v);
  ht_program *p = compile(&dev, &c_case, "vadd");
  ht_arg args[] = {buf_arg(x.a), buf_arg(x.b), buf_arg(x.c), int_arg(HT_DTYPE_I32, N)};
  ht_launch l = launch_1d(N, LOCAL, args, 4);
  ht_event *ev = NULL;
  assert_int_equal(ht_device_launch_async(&dev, p, &l, &ev), HT_OK);
  assert_int_equal(ht_device_poll(&dev, ev), 1);
  assert_int_equal(ht_device_cancel(&dev, ev), HT_ERR_UNSUPPORTED);
  assert_non_null(strstr(ht_last_error(), "cannot stop"));
  double kernel_s = -1;
  assert_int_equal(ht_device_wait(&dev, ev, &kernel_s), HT_OK);
  assert_true(kernel_s >= 0);
  check_device(&dev, x.c, &v, 0, N);
  dev.ops->program_free(&dev, p);
  vadd_free(&dev, &x);
  ht_device_close(real);
}

/* ---- global work offset ---- */

/* With HT_CAP_OFFSET a launch of the upper half computes only that half, synchronously and
 * asynchronously; without it an offset is refused, not ignored. */
static void test_offset(void **state) {
  const backend_case *k = *state;
  ht_device *dev = open_case(k);
  if (!dev) skip();
  static vectors v;
  vadd_bufs x = vadd_new(dev, &v);
  ht_program *p = compile(dev, k, "vadd");
  ht_arg args[] = {buf_arg(x.a), buf_arg(x.b), buf_arg(x.c), int_arg(HT_DTYPE_I32, N)};
  ht_launch l = launch_1d(N / 2, LOCAL, args, 4);
  l.offset[0] = N / 2;
  ht_event *ev = NULL;
  if (!(ht_device_caps(dev) & HT_CAP_OFFSET)) {
    assert_int_equal(ht_device_launch(dev, p, &l, NULL), HT_ERR_UNSUPPORTED);
    assert_non_null(strstr(ht_last_error(), "offset"));
    assert_int_equal(ht_device_launch_async(dev, p, &l, &ev), HT_ERR_UNSUPPORTED);
    assert_null(ev);
  } else {
    assert_int_equal(ht_device_launch_async(dev, p, &l, &ev), HT_OK);
    assert_int_equal(ht_device_wait(dev, ev, NULL), HT_OK);
    check_device(dev, x.c, &v, N / 2, N);
    l.offset[0] = N / 4; /* the synchronous launch honours it too: [N/4, 3N/4) */
    assert_int_equal(ht_device_buffer_write(dev, x.c, v.c, sizeof v.c, NULL), HT_OK);
    assert_int_equal(ht_device_launch(dev, p, &l, NULL), HT_OK);
    check_device(dev, x.c, &v, N / 4, 3 * N / 4);
  }
  ht_device_program_free(dev, p);
  vadd_free(dev, &x);
  ht_device_close(dev);
}

/* ---- buffer views and copies at an offset ---- */

static ht_buffer *view_of(ht_device *dev, ht_buffer *b, size_t offset, size_t bytes) {
  ht_buffer *v = NULL;
  ht_status s = ht_device_buffer_view(dev, b, offset, bytes, &v);
  if (s) fprintf(stderr, "view: %s\n", ht_last_error());
  assert_int_equal(s, HT_OK);
  return v;
}

/* vadd on views of the upper halves writes the upper half of the parent; a view of a view writes
 * where it should; bad ranges are refused; an unaligned OpenCL view is HT_ERR_UNSUPPORTED. */
static void test_views(void **state) {
  const backend_case *k = *state;
  ht_device *dev = open_case(k);
  if (!dev) skip();
  assert_true(ht_device_caps(dev) & HT_CAP_VIEWS);
  static vectors v;
  vadd_bufs x = vadd_new(dev, &v);
  ht_buffer *a = x.a, *c = x.c;
  const size_t half = N / 2 * sizeof(float);
  ht_buffer *va = view_of(dev, a, half, half), *vb = view_of(dev, x.b, half, half), *vc = view_of(dev, c, half, half);
  ht_program *p = compile(dev, k, "vadd");
  ht_arg args[] = {buf_arg(va), buf_arg(vb), buf_arg(vc), int_arg(HT_DTYPE_I32, N / 2)};
  ht_launch l = launch_1d(N / 2, LOCAL, args, 4);
  assert_int_equal(ht_device_launch(dev, p, &l, NULL), HT_OK);
  check_device(dev, c, &v, N / 2, N);

  /* a view of the view's second half: the parent's last quarter */
  ht_buffer *vva = view_of(dev, va, half / 2, half / 2), *vvb = view_of(dev, vb, half / 2, half / 2);
  ht_buffer *vvc = view_of(dev, vc, half / 2, half / 2);
  float back[N / 4];
  assert_int_equal(ht_device_buffer_read(dev, vva, back, sizeof back, NULL), HT_OK);
  assert_true(back[0] == v.a[3 * N / 4] && back[N / 4 - 1] == v.a[N - 1]);
  assert_int_equal(ht_device_buffer_write(dev, c, v.c, sizeof v.c, NULL), HT_OK);
  ht_arg args2[] = {buf_arg(vva), buf_arg(vvb), buf_arg(vvc), int_arg(HT_DTYPE_I32, N / 4)};
  l = launch_1d(N / 4, LOCAL, args2, 4);
  assert_int_equal(ht_device_launch(dev, p, &l, NULL), HT_OK);
  check_device(dev, c, &v, 3 * N / 4, N);

  ht_buffer *bad = NULL;
  assert_int_equal(ht_device_buffer_view(dev, a, half, half + 4, &bad), HT_ERR_INVALID);
  assert_int_equal(ht_device_buffer_view(dev, a, SIZE_MAX, 8, &bad), HT_ERR_INVALID);
  assert_int_equal(ht_device_buffer_view(dev, va, 0, half + 4, &bad), HT_ERR_INVALID);
  assert_int_equal(ht_device_buffer_view(dev, a, 0, 0, &bad), HT_ERR_INVALID);
  assert_null(bad);
  /* 4 bytes in: a C pointer is fine; OpenCL sub-buffers need the base address alignment */
  ht_status s = ht_device_buffer_view(dev, a, sizeof(float), sizeof(float), &bad);
  if (k->lang == HT_LANG_OPENCL) {
    assert_int_equal(s, HT_ERR_UNSUPPORTED);
    assert_non_null(strstr(ht_last_error(), "copy the range"));
  } else {
    assert_int_equal(s, HT_OK);
    float one = 0;
    assert_int_equal(ht_device_buffer_read(dev, bad, &one, sizeof one, NULL), HT_OK);
    assert_true(one == v.a[1]);
    ht_device_buffer_free(dev, bad);
  }
  ht_device_program_free(dev, p);
  /* views before their parents, as documented: */
  for (ht_buffer **y = (ht_buffer *[]){vva, vvb, vvc, va, vb, vc, NULL}; *y; y++) ht_device_buffer_free(dev, *y);
  /* and the misuse: a parent freed first stays until its view goes (ASan builds check) */
  ht_buffer *last = view_of(dev, c, half, half);
  vadd_free(dev, &x);
  float out[N / 2];
  assert_int_equal(ht_device_buffer_read(dev, last, out, half, NULL), HT_OK);
  assert_true(out[0] == -1.0f);
  ht_device_buffer_free(dev, last);
  ht_device_close(dev);
}

static void test_copies_at(void **state) {
  const backend_case *k = *state;
  ht_device *dev = open_case(k);
  if (!dev) skip();
  static vectors v;
  fill(&v);
  ht_buffer *b = new_buffer(dev, v.c, sizeof v.c);
  const size_t at = 100 * sizeof(float), len = 50 * sizeof(float);
  double t = -1;
  assert_int_equal(ht_device_buffer_write_at(dev, b, at, v.a + 100, len, &t), HT_OK);
  assert_true(t >= 0);
  float part[50], out[N];
  assert_int_equal(ht_device_buffer_read_at(dev, b, at, part, len, &t), HT_OK);
  assert_memory_equal(part, v.a + 100, len);
  assert_int_equal(ht_device_buffer_read(dev, b, out, sizeof out, NULL), HT_OK);
  for (int i = 0; i < N; i++) assert_true(out[i] == (i >= 100 && i < 150 ? v.a[i] : -1.0f));
  /* at the very end, and an empty copy at the end */
  assert_int_equal(ht_device_buffer_read_at(dev, b, sizeof out - len, part, len, NULL), HT_OK);
  assert_int_equal(ht_device_buffer_write_at(dev, b, sizeof out, v.a, 0, NULL), HT_OK);
  assert_int_equal(ht_device_buffer_write_at(dev, b, sizeof out - len + 4, v.a, len, NULL), HT_ERR_INVALID);
  assert_non_null(strstr(ht_last_error(), "at offset"));
  assert_int_equal(ht_device_buffer_read_at(dev, b, SIZE_MAX - 2, part, len, NULL), HT_ERR_INVALID);
  ht_device_buffer_free(dev, b);
  ht_device_close(dev);
}

/* The public calls on a backend without the optional copies and views (the c backend with them
 * taken away): a copy at offset 0 falls back to the whole-buffer copy, one elsewhere and a view are
 * HT_ERR_UNSUPPORTED naming the device; no device is HT_ERR_INVALID; a compile needs no info. */
static void test_calls_without_optional_ops(void **state) {
  (void)state;
  ht_device *real = open_case(&c_case);
  ht_backend_ops bare = *real->ops;
  bare.caps &= ~(unsigned)HT_CAP_VIEWS;
  bare.buffer_write_at = NULL;
  bare.buffer_read_at = NULL;
  bare.buffer_view = NULL;
  ht_device dev = *real;
  dev.ops = &bare;
  float in[4] = {1, 2, 3, 4}, out[4] = {0};
  ht_buffer *b = new_buffer(&dev, NULL, sizeof in), *view = NULL;
  double t = -1;
  assert_int_equal(ht_device_buffer_write_at(&dev, b, 0, in, sizeof in, &t), HT_OK);
  assert_true(t >= 0);
  assert_int_equal(ht_device_buffer_read_at(&dev, b, 0, out, sizeof out, NULL), HT_OK);
  assert_memory_equal(in, out, sizeof in);
  assert_int_equal(ht_device_buffer_write_at(&dev, b, 4, in, 4, NULL), HT_ERR_UNSUPPORTED);
  assert_non_null(strstr(ht_last_error(), "device c:0 cannot copy at an offset"));
  assert_int_equal(ht_device_buffer_read_at(&dev, b, 4, out, 4, NULL), HT_ERR_UNSUPPORTED);
  assert_int_equal(ht_device_buffer_view(&dev, b, 0, 4, &view), HT_ERR_UNSUPPORTED);
  assert_non_null(strstr(ht_last_error(), "device c:0 cannot make buffer views"));
  assert_null(view);
  ht_device_buffer_free(&dev, b);
  assert_null(ht_device_info_get(NULL));
  assert_string_equal(ht_device_info_get(real)->id, "c:0");
  assert_int_equal(ht_device_buffer_write(NULL, b, in, sizeof in, NULL), HT_ERR_INVALID);
  assert_int_equal(ht_device_launch(NULL, NULL, NULL, NULL), HT_ERR_INVALID);
  ht_source bad = {.lang = HT_LANG_C, .text = "void f(void) { nope }\n", .path = "bad.c", .entry = "f"};
  ht_program *p = NULL;
  assert_int_equal(ht_device_compile(real, &bad, NULL, &p, NULL), HT_ERR_COMPILE);
  assert_non_null(strstr(ht_last_error(), "bad.c"));
  ht_device_close(real);
}

/* ---- the stop-flag kernels of docs/runtime.md ---- */

/* The first fenced block of docs/runtime.md with this info string that defines series(). */
static char *doc_block(const char *info) {
  FILE *f = fopen(HT_SOURCE_DIR "/docs/runtime.md", "r");
  assert_non_null(f);
  static char text[1 << 16];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  char fence[32];
  snprintf(fence, sizeof fence, "\n```%s\n", info);
  for (const char *p = strstr(text, fence); p; p = strstr(p + 1, fence)) {
    const char *body = p + strlen(fence), *end = strstr(body, "\n```");
    assert_non_null(end);
    char *block = ht_strfmt("%.*s\n", (int)(end - body), body);
    if (strstr(block, " series(")) return block;
    free(block);
  }
  fail_msg("docs/runtime.md has no ```%s block defining series()", info);
  return NULL;
}

/* The page's kernel runs to the series' value, and a long run stops when cancelled. */
static void run_doc_kernel(ht_device *dev, const backend_case *k, const char *info) {
  char *text = doc_block(info);
  ht_program *p = compile_text(dev, k->lang, text, HT_SOURCE_DIR "/docs/runtime.md", "series");
  free(text);
  float sum = 0;
  ht_buffer *out = new_buffer(dev, &sum, sizeof sum);
  ht_arg args[] = {stop_arg(), buf_arg(out), int_arg(HT_DTYPE_I64, 100000)};
  ht_launch l = launch_1d(1, 1, args, 3);
  assert_int_equal(ht_device_launch(dev, p, &l, NULL), HT_OK);
  assert_int_equal(ht_device_buffer_read(dev, out, &sum, sizeof sum, NULL), HT_OK);
  assert_true(fabs(sum - M_PI) < 2e-3);
  args[2] = int_arg(HT_DTYPE_I64, 10000000000); /* tens of seconds to the end */
  ht_event *ev = NULL;
  assert_int_equal(ht_device_launch_async(dev, p, &l, &ev), HT_OK);
  usleep(20000);
  double t0 = ht_now();
  assert_int_equal(ht_device_cancel(dev, ev), HT_OK);
  assert_int_equal(ht_device_wait(dev, ev, NULL), HT_OK);
  assert_true(ht_now() - t0 < 5); /* the end was seconds away: the flag stopped it */
  ht_device_program_free(dev, p);
  ht_device_buffer_free(dev, out);
}

static void test_doc_kernels(void **state) {
  (void)state;
  ht_device *dev = open_case(&c_case);
  run_doc_kernel(dev, &c_case, "c");
  ht_device_close(dev);
  if ((dev = open_case(&cl_case))) {
    run_doc_kernel(dev, &cl_case, "opencl");
    ht_device_close(dev);
  }
  /* the CUDA one compiles here (NVRTC needs no GPU) and runs where there is one */
  char *text = doc_block("cuda"), *ptx = NULL, *log = NULL;
  ht_source src = {.lang = HT_LANG_CUDA, .text = text, .path = "runtime.md", .entry = "series"};
  ht_status s = ht_cuda_compile_ptx(&src, NULL, NULL, &ptx, &log);
  if (s != HT_ERR_UNSUPPORTED) {
    if (s) fprintf(stderr, "%s\n%s\n", ht_last_error(), log ? log : "");
    assert_int_equal(s, HT_OK);
    assert_non_null(strstr(ptx, ".entry series"));
  }
  free(text);
  free(ptx);
  free(log);
  if ((dev = open_case(&cuda_case))) {
    run_doc_kernel(dev, &cuda_case, "cuda");
    ht_device_close(dev);
  }
}

#define FOR_CASE(fn, c) cmocka_unit_test_prestate(fn, (void *)&c)
#define FOR_ALL(fn) FOR_CASE(fn, c_case), FOR_CASE(fn, cl_case), FOR_CASE(fn, cuda_case)

int main(void) {
  const struct CMUnitTest tests[] = {
      FOR_ALL(test_async_vadd), FOR_ALL(test_async_poll), FOR_ALL(test_cancel),
      cmocka_unit_test(test_cancel_unsupported), FOR_ALL(test_offset), FOR_ALL(test_views),
      FOR_ALL(test_copies_at), cmocka_unit_test(test_calls_without_optional_ops),
      cmocka_unit_test(test_doc_kernels), cmocka_unit_test(test_c_launch_threads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
