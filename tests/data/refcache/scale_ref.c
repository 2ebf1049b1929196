/* The reference, which also notes each run in the file $HT_REF_LOG, so a test can count them. */
#include <stdio.h>
#include <stdlib.h>

void scale_ref(float *out, const float *in, int n) {
  const char *log = getenv("HT_REF_LOG");
  FILE *f = log ? fopen(log, "a") : NULL;
  if (f) {
    fputc('x', f);
    fclose(f);
  }
  for (int i = 0; i < n; i++) out[i] = 2.0f * in[i];
}
