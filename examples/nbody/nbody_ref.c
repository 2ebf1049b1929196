/* Reference n-body acceleration step (every nbody example). body holds n bodies as an array of
 * structures, 4 floats each: x, y, z, mass. With softening eps2 > 0, the acceleration of body i
 * is
 *   a_i = sum over j = 0 .. n-1 of  m_j * d_ij / (|d_ij|^2 + eps2)^(3/2),   d_ij = r_j - r_i
 * (the j == i term is zero). Written as three arrays ax, ay, az. The reference evaluates every
 * term and the sums in double, in ascending j, and rounds once to float; the kernels compute in
 * float (exact sqrtf and division, no reciprocal-square-root approximation) in an order that
 * depends on their parameters, so the spec compares with a tolerance. */
#include <math.h>

void nbody_ref(float *ax, float *ay, float *az, const float *body, int n, float eps2)
{
  for (int i = 0; i < n; i++) {
    const double xi = body[4 * i], yi = body[4 * i + 1], zi = body[4 * i + 2];
    double sx = 0.0, sy = 0.0, sz = 0.0;
    for (int j = 0; j < n; j++) {
      const double dx = body[4 * j] - xi, dy = body[4 * j + 1] - yi, dz = body[4 * j + 2] - zi;
      const double r2 = dx * dx + dy * dy + dz * dz + (double)eps2;
      const double s = body[4 * j + 3] / (r2 * sqrt(r2));
      sx += dx * s;
      sy += dy * s;
      sz += dz * s;
    }
    ax[i] = (float)sx;
    ay[i] = (float)sy;
    az[i] = (float)sz;
  }
}
