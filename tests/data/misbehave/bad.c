/* A kernel written to misbehave, one way per MODE: hetune must record each failure and go on.
 * 0 correct, 1 segfault, 2 endless loop, 3 wrong answer, 4 compile error, 5 NaN, 6 abort. */
#include <stdlib.h>

#if MODE == 4
#error "MODE 4 does not compile, on purpose"
#endif

void scale(float *out, const float *in, int n) {
#if MODE == 1
  volatile int *p = (int *)0;
  *p = 1;
#elif MODE == 2
  volatile int spin = 1;
  while (spin) {
  }
#elif MODE == 6
  abort();
#endif
  for (int i = 0; i < n; i++) out[i] = 2.0f * in[i];
#if MODE == 3
  out[n / 2] += 1.0f;
#elif MODE == 5
  out[n - 1] = 0.0f / 0.0f;
#endif
}
