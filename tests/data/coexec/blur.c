/* A 3x3 box blur of an R x C image, rows outermost, edges clamped: a stencil whose rows can be
 * split with a halo of one row. */
#include <stdint.h>

static int clamp(int v, int hi) { return v < 0 ? 0 : v > hi ? hi : v; }

void blur(float *out, const float *in, int32_t rows, int32_t cols) {
  for (int r = 0; r < rows; r++)
    for (int c = 0; c < cols; c++) {
      float s = 0;
      for (int dr = -1; dr <= 1; dr++)
        for (int dc = -1; dc <= 1; dc++) s += in[(int64_t)clamp(r + dr, rows - 1) * cols + clamp(c + dc, cols - 1)];
      out[(int64_t)r * cols + c] = s / 9.0f;
    }
}

void blur_ref(float *out, const float *in, int32_t rows, int32_t cols) { blur(out, in, rows, cols); }
