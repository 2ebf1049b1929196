/* Reference for the blackscholes examples: European call and put prices of n options with spot
 * price s, strike k and years to expiry t, at riskless rate R = 0.02 and volatility V = 0.30:
 *   d1 = (ln(s/k) + (R + V^2/2) t) / (V sqrt(t)),  d2 = d1 - V sqrt(t)
 *   call = s N(d1) - k e^(-R t) N(d2),  put = k e^(-R t) N(-d2) - s N(-d1)
 * N is the standard normal CDF through the Abramowitz-Stegun polynomial (26.2.17), as every
 * kernel computes it; the reference does it in double. */
#include <math.h>

static double cnd(double d)
{
  const double a1 = 0.31938153, a2 = -0.356563782, a3 = 1.781477937, a4 = -1.821255978, a5 = 1.330274429;
  double k = 1.0 / (1.0 + 0.2316419 * fabs(d));
  double poly = k * (a1 + k * (a2 + k * (a3 + k * (a4 + k * a5))));
  double c = 1.0 - 0.3989422804014327 * exp(-0.5 * d * d) * poly;
  return d < 0 ? 1.0 - c : c;
}

void blackscholes_ref(float *call, float *put, const float *s, const float *k, const float *t, int n)
{
  const double r = 0.02, v = 0.30;
  for (int i = 0; i < n; i++) {
    double sq = v * sqrt(t[i]);
    double d1 = (log(s[i] / k[i]) + (r + 0.5 * v * v) * t[i]) / sq, d2 = d1 - sq;
    double disc = k[i] * exp(-r * t[i]);
    call[i] = (float)(s[i] * cnd(d1) - disc * cnd(d2));
    put[i] = (float)(disc * (1.0 - cnd(d2)) - s[i] * (1.0 - cnd(d1)));
  }
}
