/* A reference that fails, one way per REF: 0 correct, 1 segfault, 2 killed as by the
 * out-of-memory killer (SIGKILL), 3 endless loop. */
#include <signal.h>

void scale_ref(float *out, const float *in, int n) {
#if REF == 1
  volatile int *p = (int *)0;
  *p = 1;
#elif REF == 2
  raise(SIGKILL);
#elif REF == 3
  volatile int spin = 1;
  while (spin) {
  }
#endif
  for (int i = 0; i < n; i++) out[i] = 2.0f * in[i];
}
