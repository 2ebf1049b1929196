/* Stopping C/OpenMP kernels by signal (include/hetune/stop.h): threads that never poll their flag
 * are stopped at once; a kernel that finishes before the stop, or threads that leave their region
 * while the stop is on its way, are never jumped into a region they left (many launches stopped
 * at random moments); threads past the block's slots see the flag only; the application's own
 * SIGUSR2 handler still runs; the same kernel runs to its end on a synchronous launch; the
 * example of docs/runtime.md runs from the page. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hetune/device.h"

/* Each of THREADS OpenMP threads spins `us` microseconds without reading its flag, then writes its
 * share of out: out[i] = i + 1. stopped[t] = 1 when thread t's region was ended by the signal. */
static const char *src =
    "#include <hetune/stop.h>\n"
    "#include <omp.h>\n"
    "#include <time.h>\n"
    "static double now(void) {\n"
    "  struct timespec t;\n"
    "  clock_gettime(CLOCK_MONOTONIC, &t);\n"
    "  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;\n"
    "}\n"
    "void spin(volatile int32_t *stop, float *out, int32_t *stopped, int32_t n, int64_t us) {\n"
    "  #pragma omp parallel num_threads(THREADS)\n"
    "  {\n"
    "    int t = omp_get_thread_num(), nt = omp_get_num_threads();\n"
    "    volatile int finished = 0;\n"
    "    HT_PAR_BEGIN(stop, t);\n"
    "    double end = now() + 1e-6 * (double)us;\n"
    "    while (now() < end) {}\n"
    "    for (int i = t * n / nt; i < (t + 1) * n / nt; i++) out[i] = (float)(i + 1);\n"
    "    finished = 1;\n"
    "    HT_PAR_END();\n"
    "    stopped[t] = !finished;\n"
    "  }\n"
    "}\n";

enum { N = 4096, MAX_THREADS = 64 };

typedef struct kernel {
  ht_device *dev;
  ht_program *prog;
  ht_buffer *out, *stopped;
  int threads;
} kernel;

static kernel make(int threads) {
  kernel k = {.threads = threads};
  assert_int_equal(ht_device_open("c", &k.dev), HT_OK);
  char value[16];
  snprintf(value, sizeof value, "%d", threads);
  const char *names[] = {"THREADS"}, *values[] = {value};
  ht_defines defs = {1, names, values};
  ht_source s = {.lang = HT_LANG_C, .text = src, .entry = "spin"};
  if (ht_device_compile(k.dev, &s, &defs, &k.prog, NULL)) fail_msg("%s", ht_last_error());
  assert_int_equal(ht_device_buffer_new(k.dev, N * sizeof(float), &k.out), HT_OK);
  assert_int_equal(ht_device_buffer_new(k.dev, MAX_THREADS * sizeof(int32_t), &k.stopped), HT_OK);
  return k;
}

static void drop(kernel *k) {
  ht_device_buffer_free(k->dev, k->out);
  ht_device_buffer_free(k->dev, k->stopped);
  ht_device_program_free(k->dev, k->prog);
  ht_device_close(k->dev);
}

static ht_event *start(kernel *k, int64_t us) {
  static float zeros[N];
  static int32_t minus[MAX_THREADS];
  for (int i = 0; i < MAX_THREADS; i++) minus[i] = -1;
  assert_int_equal(ht_device_buffer_write(k->dev, k->out, zeros, sizeof zeros, NULL), HT_OK);
  assert_int_equal(ht_device_buffer_write(k->dev, k->stopped, minus, sizeof minus, NULL), HT_OK);
  ht_arg args[] = {{.is_stop_flag = 1, .type = HT_DTYPE_I32},
                   {.is_buffer = 1, .buf = k->out, .type = HT_DTYPE_F32},
                   {.is_buffer = 1, .buf = k->stopped, .type = HT_DTYPE_I32},
                   {.type = HT_DTYPE_I32, .value = ht_int(N)},
                   {.type = HT_DTYPE_I64, .value = ht_int(us)}};
  ht_launch l = {.dims = 1, .global = {1}, .n_args = 5, .args = args};
  ht_event *ev = NULL;
  if (ht_device_launch_async(k->dev, k->prog, &l, &ev)) fail_msg("%s", ht_last_error());
  return ev;
}

/* How many threads the signal stopped; every thread that was not stopped wrote its share. */
static int count_stopped(kernel *k) {
  int32_t stopped[MAX_THREADS];
  static float out[N];
  assert_int_equal(ht_device_buffer_read(k->dev, k->stopped, stopped, sizeof stopped, NULL), HT_OK);
  assert_int_equal(ht_device_buffer_read(k->dev, k->out, out, sizeof out, NULL), HT_OK);
  int n = 0;
  for (int t = 0; t < k->threads; t++) {
    if (stopped[t] != 0 && stopped[t] != 1) fail_msg("thread %d did not reach its region's end", t);
    n += stopped[t];
    for (int i = t * N / k->threads; !stopped[t] && i < (t + 1) * N / k->threads; i++)
      if (out[i] != (float)(i + 1)) fail_msg("thread %d finished but out[%d] = %g", t, i, out[i]);
  }
  return n;
}

/* Threads spinning for 30 s are stopped within a second of the cancel (a bound far from both). */
static void test_stops_threads_that_never_poll(void **state) {
  (void)state;
  kernel k = make(4);
  ht_event *ev = start(&k, 30000000);
  usleep(100000);
  assert_int_equal(ht_device_poll(k.dev, ev), 0);
  double t0 = ht_now();
  assert_int_equal(ht_device_cancel(k.dev, ev), HT_OK);
  assert_int_equal(ht_device_wait(k.dev, ev, NULL), HT_OK);
  double delay = ht_now() - t0;
  fprintf(stderr, "4 threads stopped %.3f ms after the cancel\n", delay * 1e3);
  if (delay > 1.0) fail_msg("the stop took %.3f s", delay);
  assert_int_equal(count_stopped(&k), 4);
  drop(&k);
}

/* Stops at random moments around the end of a 1 ms kernel: some threads are stopped, some
 * finished, some leave while their signal is on its way. None is jumped into a finished region
 * (that would crash or hang), and every finished thread's results are whole. */
static void test_stops_racing_the_end(void **state) {
  (void)state;
  kernel k = make(3);
  srand(7);
  int stopped = 0, whole = 0;
  for (int i = 0; i < 300; i++) {
    ht_event *ev = start(&k, 1000);
    useconds_t wait = (useconds_t)(rand() % 1500);
    if (wait) usleep(wait);
    assert_int_equal(ht_device_cancel(k.dev, ev), HT_OK);
    assert_int_equal(ht_device_cancel(k.dev, ev), HT_OK); /* twice: harmless */
    assert_int_equal(ht_device_wait(k.dev, ev, NULL), HT_OK);
    int n = count_stopped(&k);
    stopped += n;
    whole += n == 0;
  }
  fprintf(stderr, "300 launches: %d threads stopped, %d launches finished whole\n", stopped, whole);
  assert_true(stopped > 0);
  drop(&k);
}

/* A kernel finished before its stop: nothing to stop, nothing sent. */
static void test_finished_kernel_not_signalled(void **state) {
  (void)state;
  kernel k = make(2);
  ht_event *ev = start(&k, 0);
  while (!ht_device_poll(k.dev, ev)) usleep(100);
  assert_int_equal(ht_device_cancel(k.dev, ev), HT_OK);
  assert_int_equal(ht_device_wait(k.dev, ev, NULL), HT_OK);
  assert_int_equal(count_stopped(&k), 0);
  drop(&k);
}

/* A synchronous launch cannot be stopped: the same kernel runs to its end. */
static void test_synchronous_launch_runs_whole(void **state) {
  (void)state;
  kernel k = make(2);
  ht_arg args[] = {{.is_stop_flag = 1, .type = HT_DTYPE_I32},
                   {.is_buffer = 1, .buf = k.out, .type = HT_DTYPE_F32},
                   {.is_buffer = 1, .buf = k.stopped, .type = HT_DTYPE_I32},
                   {.type = HT_DTYPE_I32, .value = ht_int(N)},
                   {.type = HT_DTYPE_I64, .value = ht_int(1000)}};
  ht_launch l = {.dims = 1, .global = {1}, .n_args = 5, .args = args};
  assert_int_equal(ht_device_launch(k.dev, k.prog, &l, NULL), HT_OK);
  assert_int_equal(count_stopped(&k), 0);
  drop(&k);
}

static volatile sig_atomic_t app_signals;
static void app_handler(int sig) {
  (void)sig;
  app_signals++;
}

/* The application's SIGUSR2 handler, installed before hetune's, still gets its signals. */
static void test_application_handler_kept(void **state) {
  (void)state;
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = app_handler;
  sigemptyset(&sa.sa_mask);
  assert_int_equal(sigaction(SIGUSR2, &sa, &old), 0);
  kernel k = make(2);
  ht_event *ev = start(&k, 30000000);
  usleep(50000);
  assert_int_equal(ht_device_cancel(k.dev, ev), HT_OK); /* installs hetune's handler */
  assert_int_equal(ht_device_wait(k.dev, ev, NULL), HT_OK);
  assert_int_equal(count_stopped(&k), 2);
  drop(&k);
  raise(SIGUSR2);
  kill(getpid(), SIGUSR2);
  assert_int_equal(app_signals, 2);
}

/* ---- the kernel of docs/runtime.md, "Stopping by signal" ---- */

static char *doc_kernel(void) {
  char *text = NULL;
  assert_int_equal(ht_read_file(HT_SOURCE_DIR "/docs/runtime.md", &text, NULL), HT_OK);
  const char *p = strstr(text, "\n```c\n#include <hetune/stop.h>");
  if (!p) fail_msg("docs/runtime.md has no ```c block including <hetune/stop.h>");
  p += strlen("\n```c\n");
  const char *end = strstr(p, "\n```");
  assert_non_null(end);
  char *block = ht_strfmt("%.*s\n", (int)(end - p), p);
  free(text);
  return block;
}

/* It computes the series for every element; with tens of seconds of terms it stops when cancelled. */
static void test_doc_kernel(void **state) {
  (void)state;
  ht_device *dev;
  ht_program *prog;
  ht_buffer *out;
  assert_int_equal(ht_device_open("c", &dev), HT_OK);
  char *text = doc_kernel();
  ht_source s = {.lang = HT_LANG_C, .text = text, .path = HT_SOURCE_DIR "/docs/runtime.md", .entry = "series_omp"};
  if (ht_device_compile(dev, &s, NULL, &prog, NULL)) fail_msg("%s", ht_last_error());
  free(text);
  float sums[7];
  assert_int_equal(ht_device_buffer_new(dev, sizeof sums, &out), HT_OK);
  ht_arg args[] = {{.is_stop_flag = 1, .type = HT_DTYPE_I32},
                   {.is_buffer = 1, .buf = out, .type = HT_DTYPE_F32},
                   {.type = HT_DTYPE_I32, .value = ht_int(7)},
                   {.type = HT_DTYPE_I64, .value = ht_int(100000)}};
  ht_launch l = {.dims = 1, .global = {1}, .n_args = 4, .args = args};
  assert_int_equal(ht_device_launch(dev, prog, &l, NULL), HT_OK);
  assert_int_equal(ht_device_buffer_read(dev, out, sums, sizeof sums, NULL), HT_OK);
  for (int i = 0; i < 7; i++)
    if (!(sums[i] > 3.14 && sums[i] < 3.143)) fail_msg("out[%d] = %g, expected pi", i, sums[i]);
  args[3].value = ht_int(20000000000); /* about a minute per element */
  ht_event *ev = NULL;
  assert_int_equal(ht_device_launch_async(dev, prog, &l, &ev), HT_OK);
  usleep(50000);
  double t0 = ht_now();
  assert_int_equal(ht_device_cancel(dev, ev), HT_OK);
  assert_int_equal(ht_device_wait(dev, ev, NULL), HT_OK);
  if (ht_now() - t0 > 5) fail_msg("the stop took %.1f s", ht_now() - t0);
  ht_device_buffer_free(dev, out);
  ht_device_program_free(dev, prog);
  ht_device_close(dev);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_application_handler_kept), /* first: before hetune installs its handler */
      cmocka_unit_test(test_stops_threads_that_never_poll),
      cmocka_unit_test(test_stops_racing_the_end),
      cmocka_unit_test(test_finished_kernel_not_signalled),
      cmocka_unit_test(test_synchronous_launch_runs_whole),
      cmocka_unit_test(test_doc_kernel),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
