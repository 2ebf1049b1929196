/* Black-Scholes European option prices (hetune example, language "opencl"); the definition is in
 * blackscholes_ref.c. Compute-bound: per option two exp, one log, one sqrt and ~60 flops for
 * 20 bytes moved.
 * Tunables (-D):
 *   WG      work-group size
 *   VW      vector width: each work-item prices VW options at once (float, float2 .. float8;
 *           vloadN/vstoreN, so no alignment is needed)
 *   OPT     vectors of options per work-item
 *   STRIDED 0: a work-item's OPT vectors are consecutive; 1: they are G vectors apart
 *           (G = the number of work-items) */
#define R 0.02f
#define V 0.30f

#if VW == 1
typedef float floatv;
typedef int intv;
#define LOADV(i, p) ((p)[i])
#define STOREV(x, i, p) ((p)[i] = (x))
#elif VW == 2
typedef float2 floatv;
typedef int2 intv;
#define LOADV(i, p) vload2((i), (p))
#define STOREV(x, i, p) vstore2((x), (i), (p))
#elif VW == 4
typedef float4 floatv;
typedef int4 intv;
#define LOADV(i, p) vload4((i), (p))
#define STOREV(x, i, p) vstore4((x), (i), (p))
#elif VW == 8
typedef float8 floatv;
typedef int8 intv;
#define LOADV(i, p) vload8((i), (p))
#define STOREV(x, i, p) vstore8((x), (i), (p))
#else
#error "VW must be 1, 2, 4 or 8"
#endif

/* The polynomial CND of the reference, for any float type T (scalar or vector). */
#define CND_BODY(T, d)                                                                      \
  const T kk = 1.0f / (1.0f + 0.2316419f * fabs(d));                                        \
  const T poly = kk * (0.31938153f + kk * (-0.356563782f + kk * (1.781477937f +             \
                 kk * (-1.821255978f + kk * 1.330274429f))));                              \
  const T c = 1.0f - 0.3989422804f * exp(-0.5f * (d) * (d)) * poly;

inline float cnd1(float d) { CND_BODY(float, d) return d < 0.0f ? 1.0f - c : c; }
inline floatv cndv(floatv d) { CND_BODY(floatv, d) return select(c, 1.0f - c, (intv)(d < 0.0f)); }

#define PRICE(T, CND, s, k, t, call, put)                                                   \
  {                                                                                         \
    const T sq = V * sqrt(t);                                                               \
    const T d1 = (log((s) / (k)) + (R + 0.5f * V * V) * (t)) / sq, d2 = d1 - sq;            \
    const T disc = (k) * exp(-R * (t));                                                     \
    const T n1 = CND(d1), n2 = CND(d2);                                                     \
    call = (s) * n1 - disc * n2;                                                            \
    put = disc * (1.0f - n2) - (s) * (1.0f - n1);                                           \
  }

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void blackscholes(__global float *restrict call, __global float *restrict put, __global const float *restrict s,
                  __global const float *restrict k, __global const float *restrict t, const int n)
{
  const int gid = (int)get_global_id(0);
  for (int o = 0; o < OPT; o++) {
#if STRIDED
    const long v = gid + (long)o * get_global_size(0);
#else
    const long v = (long)gid * OPT + o;
#endif
    const long first = v * VW;
    if (first + VW <= n) {
      floatv c, p;
      PRICE(floatv, cndv, LOADV(v, s), LOADV(v, k), LOADV(v, t), c, p)
      STOREV(c, v, call);
      STOREV(p, v, put);
    } else {
      for (long i = first; i < n; i++) { /* the last, partial vector */
        float c, p;
        PRICE(float, cnd1, s[i], k[i], t[i], c, p)
        call[i] = c;
        put[i] = p;
      }
    }
  }
}
