__kernel void empty(__global float *out) {
  if (get_global_id(0) == 0) out[0] = 1.0f;
}
