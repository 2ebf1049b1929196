/* A kernel that takes a known time (SPIN_US microseconds of busy waiting) and then copies its
 * input: the framework's own cost is what remains of the tuning time. P changes nothing. */
#include <time.h>

void spin(float *out, const float *in, int n) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do clock_gettime(CLOCK_MONOTONIC, &t);
  while ((t.tv_sec - t0.tv_sec) * 1e6 + (t.tv_nsec - t0.tv_nsec) * 1e-3 < SPIN_US + 0 * P);
  for (int i = 0; i < n; i++) out[i] = in[i];
}
