/* Spins ROUNDS rounds, or until its stop flag is raised, then doubles its input (one work-item). */
__kernel void spin(__global float *out, __global const float *in, __global volatile int *stop, int n) {
  for (long r = 0; r < ROUNDS; r++)
    if ((r & 1023) == 0 && *stop) return;
  for (int i = 0; i < n; i++) out[i] = 2 * in[i];
}
