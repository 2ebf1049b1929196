/* The Gaussian process behind the `gp` model kind (gp.c) and the `bayes` strategy: hyperparameters
 * by maximum a posteriori marginal likelihood, and a posterior that grows one point at a time
 * together with the predictive vectors of a candidate pool (surrogate.h says what each call does).
 *
 * Hyperparameters: log marginal likelihood plus the priors of surrogate.h, maximised by iRprop-
 * (steps grow by 1.2 while the gradient keeps its sign, halve and pause when it flips, between
 * 1e-4 and 1) on the analytic gradient, each coordinate kept within the bounds below. Cholesky by
 * LAPACKE_dpotrf, with growing jitter where it fails.
 * Posterior: L, the lower Cholesky factor of K + sn2 I, gains one row per appended point
 * (dtrsv); V = L^-1 k(points, pool) gains one row per point too (one dgemv over the pool), so
 * the pool's predictive variances sf2 - |V_j|^2 stay current at O(n m) per point. */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <cblas.h>
#include <dlfcn.h>
#include <pthread.h>
#include <lapacke.h>
#include <stdlib.h>
#include <string.h>

#include "measure/evaluator.h"
#include "model/surrogate.h"

#define LS_LO (-3.9) /* log length-scale bounds: 0.02 .. 20 on inputs in [0, 1] */
#define LS_HI 3.0
#define SF_LO (-4.6) /* log signal variance: 0.01 .. 50 */
#define SF_HI 3.9
#define SN_LO (-13.8) /* log noise variance: 1e-6 .. 2 */
#define SN_HI 0.7

static const double PRIOR_MU[3] = {-0.693, 0.0, -4.605}, PRIOR_SD[3] = {1.5, 1.5, 2.0};

void ht_gp_theta_default(double *th, int nl) {
  for (int i = 0; i < nl; i++) th[i] = PRIOR_MU[0];
  th[nl] = PRIOR_MU[1];
  th[nl + 1] = PRIOR_MU[2];
}

/* ---- hyperparameters: MAP by iRprop- ---- */
typedef struct fitdata {
  int n, D, nl;
  const double *x, *y;
  double *K, *C, *Q, *alpha;
} fitdata;

/* K (lower) and Q, the derivative factor of the Matern kernel, for hyperparameters th. */
static void kernel_matrix(fitdata *f, const double *il2, double sf2, double sn2) {
  int n = f->n, D = f->D;
  for (int a = 0; a < n; a++) {
    const double *xa = f->x + (size_t)a * D;
    f->K[a + (size_t)a * n] = sf2 + sn2;
    for (int c = 0; c < a; c++) {
      const double *xc = f->x + (size_t)c * D;
      double r2 = 0;
      for (int k = 0; k < D; k++) r2 += (xa[k] - xc[k]) * (xa[k] - xc[k]) * il2[k];
      double r = sqrt(5.0 * r2), e = exp(-r);
      f->K[a + (size_t)c * n] = sf2 * (1.0 + r + r * r / 3.0) * e;
      f->Q[a + (size_t)c * n] = sf2 * (5.0 / 3.0) * (1.0 + r) * e;
    }
  }
}

/* Adds the gradient of the log marginal likelihood to g; C holds the Cholesky factor on entry. */
static void likelihood_gradient(fitdata *f, const double *il2, double sf2, double sn2, double *g) {
  int n = f->n, D = f->D, nl = f->nl;
  LAPACKE_dpotri_work(LAPACK_COL_MAJOR, 'L', n, f->C, n); /* C = K^-1 (lower) */
  double gl[HT_GP_MAX_DIM] = {0}, gsf = 0, gsn = 0;
  for (int a = 0; a < n; a++) {
    const double *xa = f->x + (size_t)a * D;
    double maa = f->alpha[a] * f->alpha[a] - f->C[a + (size_t)a * n];
    gsf += 0.5 * maa * sf2;
    gsn += 0.5 * maa * sn2;
    for (int c = 0; c < a; c++) {
      const double *xc = f->x + (size_t)c * D;
      double m = f->alpha[a] * f->alpha[c] - f->C[a + (size_t)c * n];
      gsf += m * f->K[a + (size_t)c * n];
      double q = m * f->Q[a + (size_t)c * n];
      for (int k = 0; k < D; k++) gl[k] += q * (xa[k] - xc[k]) * (xa[k] - xc[k]);
    }
  }
  for (int k = 0; k < D; k++) g[nl == 1 ? 0 : k] += gl[k] * il2[k];
  g[nl] += gsf;
  g[nl + 1] += gsn;
}

/* The log posterior of th (up to a constant) and, when g is not NULL, its gradient. */
static double map_objective(fitdata *f, const double *th, double *g) {
  int n = f->n, D = f->D, nl = f->nl;
  double il2[HT_GP_MAX_DIM], sf2 = exp(th[nl]), sn2 = exp(th[nl + 1]);
  for (int k = 0; k < D; k++) il2[k] = exp(-2.0 * th[nl == 1 ? 0 : k]);
  kernel_matrix(f, il2, sf2, sn2);
  double jitter = 0;
  for (int attempt = 0;; attempt++) {
    for (int c = 0; c < n; c++)
      for (int a = c; a < n; a++) f->C[a + (size_t)c * n] = f->K[a + (size_t)c * n] + (a == c ? jitter : 0);
    if (LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', n, f->C, n) == 0) break;
    if (attempt == 4) return -INFINITY;
    jitter = (sf2 + sn2) * pow(10.0, -8 + 2 * attempt);
  }
  double logdet = 0, fit = 0;
  for (int a = 0; a < n; a++) logdet += 2.0 * log(f->C[a + (size_t)a * n]);
  memcpy(f->alpha, f->y, sizeof(double) * (size_t)n);
  LAPACKE_dpotrs_work(LAPACK_COL_MAJOR, 'L', n, 1, f->C, n, f->alpha, n);
  for (int a = 0; a < n; a++) fit += f->y[a] * f->alpha[a];
  double val = -0.5 * fit - 0.5 * logdet - 0.5 * n * log(2 * M_PI);
  for (int i = 0; i < nl + 2; i++) {
    int kind = i < nl ? 0 : i - nl + 1;
    double u = (th[i] - PRIOR_MU[kind]) / PRIOR_SD[kind];
    val -= 0.5 * u * u;
    if (g) g[i] = -u / PRIOR_SD[kind];
  }
  if (!g || !isfinite(val)) return isfinite(val) ? val : -INFINITY;
  likelihood_gradient(f, il2, sf2, sn2, g);
  return val;
}

static double rprop(fitdata *f, double *th, int iters) {
  int nt = f->nl + 2;
  double step[HT_GP_MAX_TH], gprev[HT_GP_MAX_TH] = {0}, g[HT_GP_MAX_TH], best[HT_GP_MAX_TH], fbest = -INFINITY;
  for (int i = 0; i < nt; i++) step[i] = 0.3;
  for (int it = 0, last = 0; it < iters && it - last < 8; it++) {
    double v = map_objective(f, th, g);
    if (v > fbest + 1e-3) last = it;
    if (v > fbest) {
      fbest = v;
      memcpy(best, th, sizeof(double) * (size_t)nt);
    }
    if (!isfinite(v)) break;
    double maxstep = 0;
    for (int i = 0; i < nt; i++) {
      double lo = i < f->nl ? LS_LO : i == f->nl ? SF_LO : SN_LO, hi = i < f->nl ? LS_HI : i == f->nl ? SF_HI : SN_HI;
      if (!isfinite(g[i])) g[i] = 0;
      if (g[i] * gprev[i] > 0)
        step[i] = fmin(step[i] * 1.2, 1.0);
      else if (g[i] * gprev[i] < 0) {
        step[i] = fmax(step[i] * 0.5, 1e-4);
        g[i] = 0;
      }
      th[i] += g[i] > 0 ? step[i] : g[i] < 0 ? -step[i] : 0;
      th[i] = fmin(fmax(th[i], lo), hi);
      gprev[i] = g[i];
      maxstep = fmax(maxstep, step[i]);
    }
    if (maxstep < 2e-3) break;
  }
  if (fbest > -INFINITY) memcpy(th, best, sizeof(double) * (size_t)nt);
  return fbest;
}

double ht_gp_map_fit(const double *x, const double *y, int n, int D, int nl, double *th, int iters) {
  if (n < 1 || D < 0 || D > HT_GP_MAX_DIM || (nl != 1 && nl != D)) return -INFINITY;
  double *buf = malloc(sizeof(double) * ((size_t)3 * n * n + n));
  if (!buf) return -INFINITY;
  fitdata f = {n, D, nl, x, y, buf, buf + (size_t)n * n, buf + (size_t)2 * n * n, buf + (size_t)3 * n * n};
  double v = rprop(&f, th, iters);
  free(buf);
  return v;
}

/* ---- the posterior ---- */

void ht_gp_init(ht_gp *g, int D) {
  memset(g, 0, sizeof *g);
  g->D = D;
}

void ht_gp_free(ht_gp *g) {
  void *blocks[] = {g->z, g->L, g->y, g->w, g->kv, g->pz, g->V, g->ss, g->mu, g->sd, g->scr};
  for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++) free(blocks[i]);
  ht_gp_init(g, g->D);
}

void ht_gp_set_theta(ht_gp *g, const double *th, int nl) {
  for (int k = 0; k < g->D; k++) g->il[k] = exp(-th[nl == 1 ? 0 : k]);
  g->sf2 = exp(th[nl]);
  g->sn2 = exp(th[nl + 1]);
}

void ht_gp_scale(const ht_gp *g, const double *x, double *z) {
  for (int k = 0; k < g->D; k++) z[k] = x[k] * g->il[k];
}

int ht_gp_factor(ht_gp *g, const double *z, const int *rows, int n, int cap) {
  int D = g->D;
  void *old[] = {g->L, g->z, g->y, g->w, g->kv, g->V};
  for (size_t i = 0; i < sizeof old / sizeof old[0]; i++) free(old[i]);
  g->V = NULL;
  g->m = g->m_cap = 0;
  g->n = 0;
  g->cap = cap;
  g->L = malloc(sizeof(double) * (size_t)cap * cap);
  g->z = malloc(sizeof(double) * (size_t)cap * (D ? D : 1));
  g->y = malloc(sizeof(double) * (size_t)cap);
  g->w = malloc(sizeof(double) * (size_t)cap);
  g->kv = malloc(sizeof(double) * (size_t)cap);
  if (!g->L || !g->z || !g->y || !g->w || !g->kv || n > cap) return 0;
  for (int i = 0; i < n; i++) memcpy(g->z + (size_t)i * D, z + (size_t)rows[i] * D, sizeof(double) * (size_t)D);
  for (int attempt = 0;; attempt++) {
    for (int c = 0; c < n; c++) {
      g->L[c + (size_t)c * cap] = g->sf2 + g->sn2;
      for (int a = c + 1; a < n; a++)
        g->L[a + (size_t)c * cap] = ht_gp_matern(g->sf2, ht_gp_dist2(g->z + (size_t)a * D, g->z + (size_t)c * D, D));
    }
    if (n == 0 || LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'L', n, g->L, cap) == 0) break;
    if (attempt == 5) return 0;
    g->sn2 += (g->sf2 + g->sn2) * pow(10.0, -8 + 2 * attempt); /* jitter, kept for later appends */
  }
  g->n = n;
  return 1;
}

void ht_gp_set_targets(ht_gp *g, const double *y, int n) { memcpy(g->y, y, sizeof(double) * (size_t)n); }

void ht_gp_solve(ht_gp *g) {
  memcpy(g->w, g->y, sizeof(double) * (size_t)g->n);
  cblas_dtrsv(CblasColMajor, CblasLower, CblasNoTrans, CblasNonUnit, g->n, g->L, g->cap, g->w, 1);
}

void ht_gp_append(ht_gp *g, const double *z, double y) {
  int n = g->n, D = g->D, ld = g->cap;
  double *k = g->kv;
  for (int i = 0; i < n; i++) k[i] = ht_gp_matern(g->sf2, ht_gp_dist2(g->z + (size_t)i * D, z, D));
  if (n > 0) cblas_dtrsv(CblasColMajor, CblasLower, CblasNoTrans, CblasNonUnit, n, g->L, ld, k, 1);
  double d2 = g->sf2 + g->sn2 - (n > 0 ? cblas_ddot(n, k, 1, k, 1) : 0.0), floor = 1e-9 * (g->sf2 + g->sn2);
  double lnn = sqrt(d2 > floor ? d2 : floor);
  for (int i = 0; i < n; i++) g->L[n + (size_t)i * ld] = k[i];
  g->L[n + (size_t)n * ld] = lnn;
  if (g->m > 0) {
    if (n > 0)
      cblas_dgemv(CblasColMajor, CblasTrans, n, g->m, 1.0, g->V, ld, k, 1, 0.0, g->scr, 1);
    else
      memset(g->scr, 0, sizeof(double) * (size_t)g->m);
    for (int j = 0; j < g->m; j++) {
      double v = (ht_gp_matern(g->sf2, ht_gp_dist2(g->pz + (size_t)j * D, z, D)) - g->scr[j]) / lnn;
      g->V[n + (size_t)j * ld] = v;
      g->ss[j] += v * v;
    }
  }
  memcpy(g->z + (size_t)n * D, z, sizeof(double) * (size_t)D);
  g->y[n] = y;
  g->n++;
}

void ht_gp_append_believed(ht_gp *g, const double *z) {
  ht_gp_solve(g);
  ht_gp_append(g, z, 0.0);
  int n = g->n - 1;
  g->y[n] = n > 0 ? cblas_ddot(n, g->L + n, g->cap, g->w, 1) : 0.0;
}

void ht_gp_truncate(ht_gp *g, int n) {
  if (n >= g->n) return;
  g->n = n;
  for (int j = 0; j < g->m; j++) {
    const double *v = g->V + (size_t)j * g->cap;
    g->ss[j] = n > 0 ? cblas_ddot(n, v, 1, v, 1) : 0.0;
  }
}

void ht_gp_predict(ht_gp *g, const double *z, double *mean, double *var) {
  int n = g->n, D = g->D;
  double *k = g->kv;
  for (int r = 0; r < n; r++) k[r] = ht_gp_matern(g->sf2, ht_gp_dist2(g->z + (size_t)r * D, z, D));
  cblas_dtrsv(CblasColMajor, CblasLower, CblasNoTrans, CblasNonUnit, n, g->L, g->cap, k, 1);
  *mean = cblas_ddot(n, k, 1, g->w, 1);
  *var = g->sf2 + g->sn2 - cblas_ddot(n, k, 1, k, 1);
}

/* ---- the candidate pool ---- */

static int pool_reserve(ht_gp *g, int need) {
  if (need <= g->m_cap) return 1;
  int cap = g->m_cap;
  while (cap < need) cap = cap ? 2 * cap : 1024;
  void **arr[] = {(void **)&g->ss, (void **)&g->mu, (void **)&g->sd, (void **)&g->scr, (void **)&g->pz, (void **)&g->V};
  size_t per[] = {8, 8, 8, 8, 8 * (size_t)(g->D ? g->D : 1), 8 * (size_t)g->cap};
  for (size_t i = 0; i < sizeof arr / sizeof arr[0]; i++) {
    void *q = realloc(*arr[i], per[i] * (size_t)cap);
    if (!q) return 0;
    *arr[i] = q;
  }
  g->m_cap = cap;
  return 1;
}

int ht_gp_pool_add(ht_gp *g, const double *z, int k) {
  if (k <= 0) return 1;
  if (!pool_reserve(g, g->m + k)) return 0;
  int D = g->D, n = g->n;
  for (int j = 0; j < k; j++) {
    int col = g->m + j;
    double *pz = g->pz + (size_t)col * D, *v = g->V + (size_t)col * g->cap;
    memcpy(pz, z + (size_t)j * D, sizeof(double) * (size_t)D);
    for (int i = 0; i < n; i++) v[i] = ht_gp_matern(g->sf2, ht_gp_dist2(g->z + (size_t)i * D, pz, D));
  }
  if (n > 0)
    cblas_dtrsm(CblasColMajor, CblasLeft, CblasLower, CblasNoTrans, CblasNonUnit, n, k, 1.0, g->L, g->cap,
                g->V + (size_t)g->m * g->cap, g->cap);
  for (int j = 0; j < k; j++) {
    double *v = g->V + (size_t)(g->m + j) * g->cap;
    g->ss[g->m + j] = n > 0 ? cblas_ddot(n, v, 1, v, 1) : 0.0;
  }
  g->m += k;
  return 1;
}

void ht_gp_pool_remove(ht_gp *g, int j) {
  int last = --g->m;
  if (j == last) return;
  memcpy(g->pz + (size_t)j * g->D, g->pz + (size_t)last * g->D, sizeof(double) * (size_t)g->D);
  memcpy(g->V + (size_t)j * g->cap, g->V + (size_t)last * g->cap, sizeof(double) * (size_t)g->n);
  g->ss[j] = g->ss[last];
}

void ht_gp_pool_predict(ht_gp *g) {
  ht_gp_solve(g);
  cblas_dgemv(CblasColMajor, CblasTrans, g->n, g->m, 1.0, g->V, g->cap, g->w, 1, 0.0, g->mu, 1);
  for (int j = 0; j < g->m; j++) {
    double v = g->sf2 - g->ss[j];
    g->sd[j] = sqrt(v > 1e-10 * g->sf2 ? v : 1e-10 * g->sf2);
  }
}

/* Threads of this process now; 0 when they cannot be counted. */
static int threads_now(void) {
  ht_threads t = {0};
  int n = ht_threads_list(&t) ? 0 : t.n;
  ht_threads_free(&t);
  return n;
}

/* OpenBLAS's own thread count and pool state (its pthreads build); NULL in another library. */
static int *blas_cpus, *blas_pool_up;
static pthread_once_t blas_globals_once = PTHREAD_ONCE_INIT;
static void find_blas_globals(void) {
  blas_cpus = dlsym(RTLD_DEFAULT, "blas_cpu_number");
  blas_pool_up = dlsym(RTLD_DEFAULT, "blas_server_avail");
}

int ht_gp_end_idle_blas_pool(void) {
  void *sym = dlsym(RTLD_DEFAULT, "blas_thread_shutdown_");
  if (!sym) return 0;
  pthread_once(&blas_globals_once, find_blas_globals);
  if (blas_pool_up && *blas_pool_up == 0) return 0; /* no pool */
  /* Only this thread and the pool's: another thread could be inside a BLAS call (a program that
   * loads hetune late, as Python does), and ending the pool under it would leave it waiting. */
  int n = threads_now();
  if (n < 1 || n > openblas_get_num_threads()) return 0;
  int (*shutdown)(void);
  memcpy(&shutdown, &sym, sizeof shutdown);
  shutdown();
  return 1;
}

/* OpenBLAS starts a pool of idle threads, one per core but one, when a program linked with hetune
 * loads it, and beside other libraries (libgomp, LAPACKE's) each spins on its core for about 0.1 s
 * before it sleeps: every core busy at the start of every hetune command, application and worker
 * whose measurements begin then. The pool is ended at load; OpenBLAS starts it again at the first
 * call that runs on several threads. Another BLAS library has no such call and is left alone. */
__attribute__((constructor)) static void end_idle_blas_pool(void) { ht_gp_end_idle_blas_pool(); }

/* openblas_set_num_threads starts the pool again when it was ended (at load, above), and its
 * threads then spin on every other core for 0.1 s, beside the kernel measured next. With the pool
 * ended, the count OpenBLAS's calls read is set directly instead (returned negated): on one thread
 * they never use the pool. */
int ht_gp_blas_begin(void) {
  int threads = openblas_get_num_threads();
  if (threads == 1) return 1;
  pthread_once(&blas_globals_once, find_blas_globals);
  if (blas_cpus && blas_pool_up && *blas_pool_up == 0 && *blas_cpus == threads) {
    *blas_cpus = 1;
    return -threads;
  }
  openblas_set_num_threads(1);
  return threads;
}

void ht_gp_blas_end(int threads) {
  if (threads < 0) *blas_cpus = -threads;
  else if (threads != 1) openblas_set_num_threads(threads);
}
