/* Fills out until n elements are written or the stop flag is raised (cooperative cancellation). */
#include <stdint.h>

void spin(float *out, volatile int32_t *stop, int n) {
  for (int i = 0; i < n && !*stop; i++) out[i] = 1.0f;
}
