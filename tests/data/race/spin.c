/* Spins US microseconds, or until its stop flag is raised, then doubles its input. With
 * GARBAGE=1 it first fills out with garbage: stopped halfway, it leaves the garbage there. */
#include <stdint.h>
#include <time.h>

void spin(float *out, const float *in, volatile int32_t *stop, int n) {
  if (GARBAGE)
    for (int i = 0; i < n; i++) out[i] = -12345.0f;
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    if (*stop) return;
    clock_gettime(CLOCK_MONOTONIC, &t);
    if ((t.tv_sec - t0.tv_sec) * 1e6 + (t.tv_nsec - t0.tv_nsec) * 1e-3 >= US) break;
  }
  for (int i = 0; i < n; i++) out[i] = 2 * in[i];
}
