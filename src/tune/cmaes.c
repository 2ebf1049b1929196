/* cmaes: (mu/mu_w, lambda)-CMA-ES over index-encoded parameters, with restarts.
 *
 * Encoding: each parameter's values are sorted numerically (strings, or lists holding a string, keep
 * list order); a config is the vector of its values' ranks, scaled to [0,1] per parameter
 * (parameters with one value are left out). Index encoding rather than raw values: a tuner study on
 * Futhark programs found it cut repeated candidates from 95% to 53%.
 *
 * The search distribution N(m, sigma^2 C) follows Hansen's tutorial (arXiv:1604.00772): log weights
 * over the mu = lambda/2 best, cumulation paths p_sigma and p_c, rank-one plus rank-mu covariance
 * update, cumulative step-size adaptation, and an eigendecomposition of C (LAPACKE_dsyev) every
 * max(1, 1/(10 n (c1 + cmu))) generations. A sample is mirrored into the range (reflection at the
 * outer edge of the extreme values' cells: clamping piled large steps onto the extreme values, which
 * are rarely good, and scored worse on synthetic spaces) and rounded to the nearest rank. When
 * that config is invalid, already asked or already in the generation, it is repaired to the
 * nearest valid, unasked config (Euclidean distance to the continuous sample in the scaled space):
 * first among configs differing in one parameter, then in two adjacent ranks, then among 32 uniform
 * unasked draws. The update uses the point that was evaluated (the repaired one): rounding and
 * repair make the evaluated config differ from the sample, and learning from the sample would
 * credit a point that was never measured; following Hansen's advice for injected solutions, each
 * step y = (x - m)/sigma is shortened to Mahalanobis length at most sqrt(n) + 2n/(n+2).
 * Failed evaluations rank last (after every success, in asking order among themselves).
 *
 * Restarts: when the distribution has collapsed to less than a third of a grid step in every
 * parameter, when half or more of two generations' rounded samples in a row were repeats, when the best of
 * the run has not improved for 10 + 30n/lambda generations, when three generations in a row all
 * failed, or when C is ill-conditioned (1e14). IPOP (restart=ipop, default) doubles lambda at each
 * restart (up to 8x popsize); restart=plain keeps it. Every (re)start resets sigma0, C = I and the
 * paths. With start=uniform (default), the first generation of a (re)start is lambda uniform unasked
 * configs and the mean moves to the weighted recombination of their mu best, nothing else being
 * learnt from them (at small budgets this beat starting around one random point: that point's
 * neighbourhood is, early on, worse than uniform draws); start=point centres the distribution on one
 * uniform random unasked config.
 *
 * Options (defaults): popsize (4 + floor(3 ln n), n = parameters with more than one value),
 * sigma0 (0.3: about a third of each parameter's range), restart (ipop | plain),
 * start (uniform | point).
 * With a budget of 50-200 evaluations that is 5-20 generations of ~10.
 * Batches: the generation's members are handed out in order; when all are out but some are not
 * told yet, extra members are sampled from the same distribution (the generation grows); the
 * update happens when every member has been told. Deterministic given the seed and the tells. */
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tune/strategy_util.h"

#define N_MAX HT_MAX_PARAMS

typedef struct member {
  ht_config c;
  double u[N_MAX]; /* scaled ranks of the evaluated config */
  double f;
  int state; /* 0 reserved, 1 asked, 2 told */
} member;

typedef struct cma {
  ht_space *space;
  ht_rng rng;
  ht_config_set asked;
  int P, N, act[N_MAX], nv[N_MAX];
  int *ord[N_MAX], *rank[N_MAX];
  /* options */
  int lambda0, ipop, start_uniform;
  double sigma0;
  /* strategy parameters for the current lambda */
  int lambda, mu;
  double w[1024], mueff, cc, cs, c1, cmu, damps, chiN;
  /* state */
  double m[N_MAX], sigma, C[N_MAX * N_MAX], B[N_MAX * N_MAX], D[N_MAX], isC[N_MAX * N_MAX], pc[N_MAX], ps[N_MAX];
  int gen, eigen_gen, started, uniform_gen;
  double run_best;
  int since_best, repeat_gens, failed_gens, restarts;
  /* the generation */
  member *mem;
  int n_mem, cap_mem, n_out, n_told, n_repeat;
} cma;

static double gauss(ht_rng *r) {
  double u1 = ht_rng_uniform(r), u2 = ht_rng_uniform(r);
  return sqrt(-2.0 * log(1.0 - u1)) * cos(2.0 * M_PI * u2);
}

static int build_encoding(cma *s) {
  s->P = ht_space_param_count(s->space);
  for (int p = 0; p < s->P; p++) {
    int n = ht_space_value_count(s->space, p);
    if (n < 2) continue;
    int k = s->N++;
    s->act[k] = p;
    s->nv[k] = n;
    s->ord[k] = malloc(sizeof(int) * (size_t)n);
    s->rank[k] = malloc(sizeof(int) * (size_t)n);
    if (!s->ord[k] || !s->rank[k]) return 0;
    int numeric = 1;
    for (int v = 0; v < n; v++) numeric &= ht_space_value(s->space, p, v).kind != HT_VAL_STR;
    for (int v = 0; v < n; v++) { /* insertion sort by value */
      double x = numeric ? ht_value_as_double(ht_space_value(s->space, p, v)) : v;
      int r = v;
      while (r > 0 &&
             (numeric ? ht_value_as_double(ht_space_value(s->space, p, s->ord[k][r - 1])) : s->ord[k][r - 1]) > x) {
        s->ord[k][r] = s->ord[k][r - 1];
        r--;
      }
      s->ord[k][r] = v;
    }
    for (int r = 0; r < n; r++) s->rank[k][s->ord[k][r]] = r;
  }
  return 1;
}

static void to_u(const cma *s, const ht_config *c, double *u) {
  for (int k = 0; k < s->N; k++) u[k] = (double)s->rank[k][c->idx[s->act[k]]] / (s->nv[k] - 1);
}

/* Strategy parameters for population size lambda (Hansen's defaults). */
static void set_lambda(cma *s, int lambda) {
  int N = s->N;
  if (lambda > 1024) lambda = 1024;
  if (lambda < 2) lambda = 2;
  s->lambda = lambda;
  s->mu = lambda / 2;
  double sum = 0, sq = 0;
  for (int i = 0; i < s->mu; i++) {
    s->w[i] = log(s->mu + 0.5) - log(i + 1.0);
    sum += s->w[i];
  }
  for (int i = 0; i < s->mu; i++) {
    s->w[i] /= sum;
    sq += s->w[i] * s->w[i];
  }
  s->mueff = 1.0 / sq;
  s->cc = (4.0 + s->mueff / N) / (N + 4.0 + 2.0 * s->mueff / N);
  s->cs = (s->mueff + 2.0) / (N + s->mueff + 5.0);
  s->c1 = 2.0 / ((N + 1.3) * (N + 1.3) + s->mueff);
  double cmu = 2.0 * (s->mueff - 2.0 + 1.0 / s->mueff) / ((N + 2.0) * (N + 2.0) + s->mueff);
  s->cmu = cmu < 1.0 - s->c1 ? cmu : 1.0 - s->c1;
  double t = sqrt((s->mueff - 1.0) / (N + 1.0)) - 1.0;
  s->damps = 1.0 + 2.0 * (t > 0 ? t : 0) + s->cs;
  s->chiN = sqrt((double)N) * (1.0 - 1.0 / (4.0 * N) + 1.0 / (21.0 * N * N));
}

static int in_generation(const cma *s, const ht_config *c) {
  for (int i = 0; i < s->n_mem; i++)
    if (ht_config_equal(&s->mem[i].c, c)) return 1;
  return 0;
}

static int usable(cma *s, const ht_config *c) {
  return !ht_config_set_has(&s->asked, c) && !in_generation(s, c) && ht_space_is_valid(s->space, c);
}

static double dist_u(const cma *s, const ht_config *c, const double *x) {
  double u[N_MAX], d = 0;
  to_u(s, c, u);
  for (int k = 0; k < s->N; k++) d += (u[k] - x[k]) * (u[k] - x[k]);
  return d;
}

/* (Re)starts the search distribution around a uniform random unasked config. */
static int restart(cma *s) {
  ht_config c;
  if (ht_sample_unasked(s->space, &s->rng, &s->asked, &c, 1) != 1) return 0;
  if (s->started) {
    s->restarts++;
    if (s->ipop && s->lambda < 8 * s->lambda0) set_lambda(s, 2 * s->lambda);
  }
  s->started = 1;
  int N = s->N;
  to_u(s, &c, s->m);
  s->sigma = s->sigma0;
  memset(s->C, 0, sizeof s->C);
  memset(s->B, 0, sizeof s->B);
  memset(s->isC, 0, sizeof s->isC);
  for (int k = 0; k < N; k++) {
    s->C[k * N + k] = s->B[k * N + k] = s->isC[k * N + k] = 1.0;
    s->D[k] = 1.0;
    s->pc[k] = s->ps[k] = 0;
  }
  s->gen = s->eigen_gen = 0;
  s->run_best = INFINITY;
  s->since_best = s->repeat_gens = s->failed_gens = 0;
  s->uniform_gen = s->start_uniform;
  return 1;
}

/* Samples one member: round, clamp, repair. 0 when no unasked valid config is left. */
static int sample_member(cma *s) {
  int N = s->N;
  if (s->n_mem == s->cap_mem) {
    int cap = s->cap_mem ? 2 * s->cap_mem : 32;
    member *m = realloc(s->mem, sizeof(member) * (size_t)cap);
    if (!m) return 0;
    s->mem = m;
    s->cap_mem = cap;
  }
  double z[N_MAX], x[N_MAX];
  for (int k = 0; k < N; k++) z[k] = gauss(&s->rng) * s->D[k];
  for (int k = 0; k < N; k++) {
    double y = 0;
    for (int j = 0; j < N; j++) y += s->B[k * N + j] * z[j];
    x[k] = s->m[k] + s->sigma * y;
    if (!isfinite(x[k])) x[k] = s->m[k];
  }
  ht_config c = {.n = s->P};
  for (int k = 0; k < N; k++) { /* mirror into the grid's cells [-0.5, nv - 0.5), then round */
    double g = x[k] * (s->nv[k] - 1) + 0.5, per = 2.0 * s->nv[k];
    g = fmod(g, per);
    if (g < 0) g += per;
    if (g >= s->nv[k]) g = per - g;
    double r = floor(g);
    int ri = r < 0 ? 0 : r > s->nv[k] - 1 ? s->nv[k] - 1 : (int)r;
    c.idx[s->act[k]] = s->ord[k][ri];
  }
  int found = usable(s, &c);
  if (!found) {
    if (ht_config_set_has(&s->asked, &c) || in_generation(s, &c)) s->n_repeat++;
    ht_config best = c, t;
    double bd = INFINITY;
    for (int k = 0; k < N; k++) /* one parameter changed */
      for (int r = 0; r < s->nv[k]; r++) {
        t = c;
        t.idx[s->act[k]] = s->ord[k][r];
        if (t.idx[s->act[k]] == c.idx[s->act[k]]) continue;
        double d = dist_u(s, &t, x);
        if (d < bd && usable(s, &t)) {
          bd = d;
          best = t;
        }
      }
    for (int k = 0; bd == INFINITY && k < N; k++) /* two parameters by one rank */
      for (int l = k + 1; l < N; l++)
        for (int q = 0; q < 4; q++) {
          int rk = s->rank[k][c.idx[s->act[k]]] + (q & 1 ? 1 : -1),
              rl = s->rank[l][c.idx[s->act[l]]] + (q & 2 ? 1 : -1);
          if (rk < 0 || rk >= s->nv[k] || rl < 0 || rl >= s->nv[l]) continue;
          t = c;
          t.idx[s->act[k]] = s->ord[k][rk];
          t.idx[s->act[l]] = s->ord[l][rl];
          double d = dist_u(s, &t, x);
          if (d < bd && usable(s, &t)) {
            bd = d;
            best = t;
          }
        }
    if (bd == INFINITY) { /* uniform draws, nearest one */
      ht_config draw[32];
      int n = ht_sample_unasked(s->space, &s->rng, &s->asked, draw, 32);
      for (int i = 0; i < n; i++) {
        double d = dist_u(s, &draw[i], x);
        if (d < bd && !in_generation(s, &draw[i])) {
          bd = d;
          best = draw[i];
        }
      }
    }
    if (bd == INFINITY) return 0;
    c = best;
  }
  member *mb = &s->mem[s->n_mem++];
  mb->c = c;
  to_u(s, &c, mb->u);
  mb->f = INFINITY;
  mb->state = 0;
  return 1;
}

/* A uniform first generation (start=uniform): n unasked configs. */
static int add_uniform(cma *s, int n) {
  if (n > s->cap_mem) {
    member *m = realloc(s->mem, sizeof(member) * (size_t)n);
    if (!m) return 0;
    s->mem = m;
    s->cap_mem = n;
  }
  ht_config *c = malloc(sizeof(ht_config) * (size_t)n);
  int got = c ? ht_sample_unasked(s->space, &s->rng, &s->asked, c, n) : 0;
  for (int i = 0; i < got; i++) {
    s->mem[i].c = c[i];
    to_u(s, &c[i], s->mem[i].u);
    s->mem[i].f = INFINITY;
    s->mem[i].state = 0;
  }
  free(c);
  return got;
}

static void eigen(cma *s) {
  int N = s->N;
  double A[N_MAX * N_MAX], ev[N_MAX];
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) A[i * N + j] = 0.5 * (s->C[i * N + j] + s->C[j * N + i]);
  if (LAPACKE_dsyev(LAPACK_ROW_MAJOR, 'V', 'U', N, A, N, ev) != 0) return;
  for (int k = 0; k < N; k++) {
    if (!isfinite(ev[k])) return;
    s->D[k] = sqrt(ev[k] > 1e-20 ? ev[k] : 1e-20);
  }
  memcpy(s->B, A, sizeof(double) * (size_t)N * N); /* columns are eigenvectors */
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      double v = 0;
      for (int k = 0; k < N; k++) v += s->B[i * N + k] * s->B[j * N + k] / s->D[k];
      s->isC[i * N + j] = v;
    }
  s->eigen_gen = s->gen;
}

static int need_restart(const cma *s) {
  int N = s->N;
  double spread = 0, dmax = 0, dmin = INFINITY;
  for (int k = 0; k < N; k++) spread = fmax(spread, s->sigma * sqrt(s->C[k * N + k]) * (s->nv[k] - 1));
  for (int k = 0; k < N; k++) {
    dmax = fmax(dmax, s->D[k]);
    dmin = fmin(dmin, s->D[k]);
  }
  return spread < 0.33 || s->repeat_gens >= 2 || s->failed_gens >= 3 ||
         s->since_best > 10 + (30 * N + s->lambda - 1) / s->lambda || dmax > 1e7 * dmin || !isfinite(s->sigma);
}

/* The CMA-ES update from the told generation. */
static void update(cma *s) {
  int N = s->N, n = s->n_mem, idx[4096];
  if (n > 4096) n = 4096;
  if (n == 0) return;
  for (int i = 0; i < n; i++) { /* stable insertion sort by f (failures, +inf, last) */
    int j = i;
    while (j > 0 && s->mem[idx[j - 1]].f > s->mem[i].f) {
      idx[j] = idx[j - 1];
      j--;
    }
    idx[j] = i;
  }
  s->repeat_gens = 2 * s->n_repeat >= n ? s->repeat_gens + 1 : 0;
  double fbest = s->mem[idx[0]].f;
  if (!isfinite(fbest)) {
    s->failed_gens++;
    s->since_best++;
    return;
  }
  s->failed_gens = 0;
  if (fbest < s->run_best) {
    s->run_best = fbest;
    s->since_best = 0;
  } else
    s->since_best++;
  int mu = s->mu < n ? s->mu : n;
  if (s->uniform_gen) { /* the mean moves to the recombination of the best; nothing else is learnt */
    double wsum = 0;
    for (int i = 0; i < mu; i++) wsum += s->w[i];
    for (int k = 0; k < N; k++) {
      s->m[k] = 0;
      for (int i = 0; i < mu; i++) s->m[k] += s->w[i] / wsum * s->mem[idx[i]].u[k];
    }
    s->uniform_gen = 0;
    s->since_best = 0;
    return;
  }
  double yw[N_MAX] = {0}, (*Y)[N_MAX] = malloc(sizeof(double[N_MAX]) * (size_t)mu), wsum = 0;
  double clip = sqrt((double)N) + 2.0 * N / (N + 2.0);
  if (!Y) return;
  for (int i = 0; i < mu; i++) wsum += s->w[i];
  for (int i = 0; i < mu; i++) {
    const member *mb = &s->mem[idx[i]];
    double norm = 0;
    for (int k = 0; k < N; k++) Y[i][k] = (mb->u[k] - s->m[k]) / s->sigma;
    for (int k = 0; k < N; k++) {
      double v = 0;
      for (int j = 0; j < N; j++) v += s->isC[k * N + j] * Y[i][j];
      norm += v * v;
    }
    norm = sqrt(norm);
    if (norm > clip)
      for (int k = 0; k < N; k++) Y[i][k] *= clip / norm;
    for (int k = 0; k < N; k++) yw[k] += s->w[i] / wsum * Y[i][k];
  }
  for (int k = 0; k < N; k++) s->m[k] += s->sigma * yw[k];
  double psn = 0, csn = sqrt(s->cs * (2.0 - s->cs) * s->mueff);
  for (int k = 0; k < N; k++) {
    double v = 0;
    for (int j = 0; j < N; j++) v += s->isC[k * N + j] * yw[j];
    s->ps[k] = (1.0 - s->cs) * s->ps[k] + csn * v;
    psn += s->ps[k] * s->ps[k];
  }
  psn = sqrt(psn);
  s->gen++;
  int hsig = psn / sqrt(1.0 - pow(1.0 - s->cs, 2.0 * s->gen)) / s->chiN < 1.4 + 2.0 / (N + 1.0);
  double ccn = sqrt(s->cc * (2.0 - s->cc) * s->mueff);
  for (int k = 0; k < N; k++) s->pc[k] = (1.0 - s->cc) * s->pc[k] + (hsig ? ccn * yw[k] : 0.0);
  double keep = 1.0 - s->c1 - s->cmu + (hsig ? 0.0 : s->c1 * s->cc * (2.0 - s->cc));
  for (int a = 0; a < N; a++)
    for (int b = 0; b < N; b++) {
      double rmu = 0;
      for (int i = 0; i < mu; i++) rmu += s->w[i] / wsum * Y[i][a] * Y[i][b];
      s->C[a * N + b] = keep * s->C[a * N + b] + s->c1 * s->pc[a] * s->pc[b] + s->cmu * rmu;
    }
  free(Y);
  s->sigma *= exp((s->cs / s->damps) * (psn / s->chiN - 1.0));
  if (s->sigma > 1.0) s->sigma = 1.0;
  double every = 1.0 / ((s->c1 + s->cmu) * N * 10.0);
  if (s->gen - s->eigen_gen >= (every > 1.0 ? every : 1.0)) eigen(s);
}

static int emit(cma *s, member *mb, ht_config *out, int *got) {
  if (ht_config_set_add(&s->asked, &mb->c) < 0) return 0;
  mb->state = 1;
  out[(*got)++] = mb->c;
  return 1;
}

static int cma_ask(void *state, ht_config *out, int max) {
  cma *s = state;
  int got = 0;
  if (s->N == 0) { /* at most one config */
    int n = ht_sample_unasked(s->space, &s->rng, &s->asked, out, max);
    for (int i = 0; i < n; i++) ht_config_set_add(&s->asked, &out[i]);
    return n;
  }
  while (got < max) {
    if (s->n_mem > 0 && s->n_out == s->n_mem && s->n_told == s->n_mem) { /* a finished generation */
      update(s);
      s->n_mem = s->n_out = s->n_told = 0;
      if (need_restart(s) && !restart(s)) return got;
    }
    if (!s->started && !restart(s)) return got;
    if (s->n_mem == 0) { /* a new generation */
      s->n_repeat = 0;
      if (s->uniform_gen) s->n_mem = add_uniform(s, s->lambda);
      while (s->n_mem < s->lambda && sample_member(s)) {
      }
      if (s->n_mem == 0) return got;
    } else if (s->n_out == s->n_mem && !sample_member(s)) /* all out, some untold: one more */
      return got;
    if (!emit(s, &s->mem[s->n_out], out, &got)) return got;
    s->n_out++;
  }
  return got;
}

static void cma_tell(void *state, const ht_config *cfg, const ht_result *r) {
  cma *s = state;
  ht_config_set_add(&s->asked, cfg);
  for (int i = 0; i < s->n_out; i++)
    if (s->mem[i].state == 1 && ht_config_equal(&s->mem[i].c, cfg)) {
      s->mem[i].f = ht_objective(r);
      s->mem[i].state = 2;
      s->n_told++;
      break;
    }
}

static void cma_destroy(void *state) {
  cma *s = state;
  if (!s) return;
  for (int k = 0; k < N_MAX; k++) {
    free(s->ord[k]);
    free(s->rank[k]);
  }
  ht_config_set_free(&s->asked);
  free(s->mem);
  free(s);
}

static ht_status cma_init(void **state, ht_space *space, const ht_options *opt, uint64_t seed) {
  cma *s = calloc(1, sizeof *s);
  if (!s) return ht_error(HT_ERR_NOMEM, "out of memory");
  s->space = space;
  ht_rng_seed(&s->rng, seed);
  ht_config_set_init(&s->asked);
  if (!build_encoding(s)) {
    cma_destroy(s);
    return ht_error(HT_ERR_NOMEM, "out of memory");
  }
  int def = 4 + (int)floor(3.0 * log(s->N > 0 ? s->N : 1));
  s->lambda0 = (int)ht_options_int(opt, "popsize", def);
  s->sigma0 = ht_options_double(opt, "sigma0", 0.3);
  const char *rs = ht_options_str(opt, "restart", "ipop"), *st = ht_options_str(opt, "start", "uniform");
  s->start_uniform = strcmp(st, "uniform") == 0;
  s->ipop = strcmp(rs, "ipop") == 0;
  if ((!s->ipop && strcmp(rs, "plain") != 0) || (!s->start_uniform && strcmp(st, "point") != 0) || s->lambda0 < 2 ||
      s->lambda0 > 1024 || !(s->sigma0 > 0) || !(s->sigma0 <= 10)) {
    cma_destroy(s);
    return ht_error(HT_ERR_INVALID, "cmaes: options: popsize 2..1024, sigma0 in (0, 10], restart=ipop|plain");
  }
  if (s->N > 0) set_lambda(s, s->lambda0);
  *state = s;
  return HT_OK;
}

const ht_strategy_ops ht_strategy_cmaes = {
    "cmaes",    "CMA-ES on index-encoded parameters, repaired samples, IPOP restarts", cma_init, cma_ask, cma_tell,
    cma_destroy, NULL};
