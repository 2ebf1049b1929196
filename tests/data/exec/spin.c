/* Spins until its stop flag is raised, at most about 20 s (so a broken cancellation cannot hang
 * a test), then writes how many rounds it ran. */
#include <stdint.h>
#include <time.h>

void spin(float *out, volatile int32_t *stop, int n) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  long rounds = 0;
  for (;;) {
    if (*stop) break;
    clock_gettime(CLOCK_MONOTONIC, &t);
    if (t.tv_sec - t0.tv_sec > 20) break;
    rounds++;
  }
  for (int i = 0; i < n; i++) out[i] = (float)rounds;
}
