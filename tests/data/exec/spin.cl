/* Spins until its stop flag is raised or a safety bound of rounds passes, then writes how many
 * rounds it ran (one work-item). */
__kernel void spin(__global float *out, __global volatile int *stop, int n) {
  long rounds = 0;
  while (!*stop && rounds < 4000000000L) rounds++;
  for (int i = 0; i < n; i++) out[i] = (float)rounds;
}
