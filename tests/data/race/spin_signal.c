/* spin.c without polling: each OpenMP thread spins US microseconds and then doubles its share of
 * the input, inside an HT_PAR_BEGIN region; a race stops it by signal (include/hetune/stop.h).
 * With GARBAGE=1 it first fills out with garbage. */
#include <hetune/stop.h>
#include <omp.h>
#include <stdint.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void spin_signal(float *out, const float *in, volatile int32_t *stop, int n) {
  if (GARBAGE)
    for (int i = 0; i < n; i++) out[i] = -12345.0f;
#pragma omp parallel
  {
    int t = omp_get_thread_num(), nt = omp_get_num_threads();
    HT_PAR_BEGIN(stop, t);
    double end = now() + 1e-6 * US;
    while (now() < end) {
    }
    for (int i = t * n / nt; i < (t + 1) * n / nt; i++) out[i] = 2 * in[i];
    HT_PAR_END();
  }
}
