/* MODE 1 writes one element past the end of out (the loop's bound is off by one). */
void overrun(float *out, const float *in, int n) {
#if MODE == 1
  for (int i = 0; i <= n; i++) out[i] = 2.0f * (i < n ? in[i] : 1.0f);
#else
  for (int i = 0; i < n; i++) out[i] = 2.0f * in[i];
#endif
}
