/* HGuided's chunk rule (EngineCL): a device takes a share of what remains in proportion to its
 * power, divided by k so that chunks shrink as the run ends and the devices finish together. */
#include <math.h>

#include "hetune/coexec.h"

int64_t ht_hguided_chunk(int64_t remaining, double power, double power_sum, double k, int64_t min_chunk) {
  if (remaining <= 0) return 0;
  if (k <= 0) k = 2;
  if (min_chunk < 1) min_chunk = 1;
  double share = power > 0 && power_sum > 0 ? (double)remaining * power / (k * power_sum) : 0;
  int64_t n = (int64_t)ceil(share);
  if (n < min_chunk) n = min_chunk;
  return n < remaining ? n : remaining;
}
