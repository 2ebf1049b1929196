/* genetic: a constraint-aware genetic algorithm over the index vectors of configs.
 *
 * Algorithm
 *  - Generation 0 is `popsize` random valid configs.
 *  - Each later generation breeds `popsize` children from the population: two parents chosen by
 *    tournament selection (the best of `tournament` random members), crossover (uniform: each gene
 *    from either parent; single_point: a prefix of one parent and the rest of the other), then
 *    per-gene mutation with probability `mutation` to another value of that parameter.
 *  - Repair: a child that is invalid or was asked before becomes one of its valid, unasked Hamming
 *    neighbours (a random one); when it has none it is bred again (3 tries), and then a random
 *    unasked config is taken instead. So no config is ever asked twice, and ask() returns 0 only
 *    when every valid config has been asked.
 *  - Survivors: the `elite` best of the population and the told children together stay; the rest
 *    of the population is the best of the children (elite=popsize: (mu+lambda) selection, keep
 *    the popsize best overall). Failed evaluations (+inf) lose every tournament they enter.
 *  Children are bred one per ask (a generation is a queue of popsize asks). The next generation
 *  is bred once every child of this one was asked; a child not yet told by then (batched asks)
 *  simply takes no part, so ask never blocks on tells.
 *
 * Options (defaults)
 *  popsize=8           population size and children per generation (Kernel Tuner uses 20; a small
 *                      population wastes fewer evaluations on the random first generation).
 *  tournament=3        tournament size of the parent selection.
 *  elite=popsize       best configs kept from one generation to the next (0..popsize); the
 *                      default keeps the popsize best of parents and children.
 *  mutation=0.5/n      probability that a gene mutates, n = parameters with more than one value
 *                      (half a mutated gene per child on average; crossover and the repair of
 *                      repeated children add variation too).
 *  crossover=uniform   uniform or single_point.
 *
 * Defaults were chosen on the recorded spaces of data/spaces (strategy-bench) and on synthetic
 * landscapes, for budgets of tens to hundreds of evaluations.
 *
 * Reproducible from the seed and the sequence of tells. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tune/strategy_util.h"

typedef struct ga_ind {
  ht_config c;
  double f;
  int told;
} ga_ind;

typedef struct ga_state {
  ht_space *space;
  ht_rng rng;
  int popsize, tournament, elite, uniform;
  double mutation;
  ht_config_set asked;
  ga_ind *pop, *gen, *pool; /* population, this generation's children, scratch for survivors */
  int pop_n, gen_n;
  ht_config *nb; /* scratch: neighbours for repair */
  int *pick;
  int nb_cap;
} ga_state;

static int take(ga_state *s, const ht_config *c, ht_config *out) {
  if (ht_config_set_add(&s->asked, c) != 1) return 0;
  *out = *c;
  return 1;
}

static int by_objective(const void *a, const void *b) {
  const ga_ind *x = a, *y = b;
  if (x->f < y->f) return -1;
  if (x->f > y->f) return 1;
  return 0;
}

/* Stable order: qsort is not stable, so ties keep their index order through insertion sort (the
 * pool holds at most 2 * popsize). */
static void sort_pool(ga_ind *a, int n) {
  for (int i = 1; i < n; i++) {
    ga_ind t = a[i];
    int j = i;
    while (j > 0 && by_objective(&a[j - 1], &t) > 0) {
      a[j] = a[j - 1];
      j--;
    }
    a[j] = t;
  }
}

/* Survivor selection: the elite of parents and told children, then the best children, then the
 * best remaining parents. */
static void next_generation(ga_state *s) {
  int n = 0, kids = 0;
  for (int i = 0; i < s->gen_n; i++)
    if (s->gen[i].told) s->pool[n++] = s->gen[i];
  kids = n;
  sort_pool(s->pool, kids);
  for (int i = 0; i < s->pop_n; i++) s->pool[n++] = s->pop[i];
  sort_pool(s->pool + kids, n - kids); /* parents: already sorted except after batched gaps */
  /* merge the elite from both lists */
  int ik = 0, ip = kids, np = 0;
  while (np < s->elite && np < s->popsize && (ik < kids || ip < n)) {
    if (ip >= n || (ik < kids && by_objective(&s->pool[ik], &s->pool[ip]) <= 0)) s->pop[np++] = s->pool[ik++];
    else s->pop[np++] = s->pool[ip++];
  }
  while (np < s->popsize && ik < kids) s->pop[np++] = s->pool[ik++];
  while (np < s->popsize && ip < n) s->pop[np++] = s->pool[ip++];
  sort_pool(s->pop, np);
  s->pop_n = np;
  s->gen_n = 0;
}

static const ht_config *tournament(ga_state *s) {
  int best = (int)ht_rng_below(&s->rng, (uint64_t)s->pop_n);
  for (int k = 1; k < s->tournament; k++) {
    int j = (int)ht_rng_below(&s->rng, (uint64_t)s->pop_n);
    if (s->pop[j].f < s->pop[best].f) best = j;
  }
  return &s->pop[best].c;
}

static ht_config breed(ga_state *s) {
  const ht_config *a = tournament(s), *b = tournament(s);
  ht_config c = *a;
  int n = c.n;
  if (s->uniform) {
    for (int p = 0; p < n; p++)
      if (ht_rng_next(&s->rng) >> 63) c.idx[p] = b->idx[p];
  } else if (n > 1) {
    int cut = 1 + (int)ht_rng_below(&s->rng, (uint64_t)n - 1);
    for (int p = cut; p < n; p++) c.idx[p] = b->idx[p];
  }
  for (int p = 0; p < n; p++) {
    int vals = ht_space_value_count(s->space, p);
    if (vals > 1 && ht_rng_uniform(&s->rng) < s->mutation) {
      int v = (int)ht_rng_below(&s->rng, (uint64_t)vals - 1);
      c.idx[p] = v >= c.idx[p] ? v + 1 : v;
    }
  }
  return c;
}

/* A random valid, unasked Hamming neighbour of c (which may itself be invalid). */
static int repair(ga_state *s, ht_config *c) {
  int n = 0, m = 0;
  if (ht_space_neighbours(s->space, c, HT_NEIGH_HAMMING, s->nb, s->nb_cap, &n)) return 0;
  for (int i = 0; i < n; i++)
    if (!ht_config_set_has(&s->asked, &s->nb[i])) s->pick[m++] = i;
  if (m == 0) return 0;
  *c = s->nb[s->pick[ht_rng_below(&s->rng, (uint64_t)m)]];
  return 1;
}

static int child(ga_state *s, ht_config *out) {
  if (s->pop_n > 0)
    for (int tries = 0; tries < 3; tries++) {
      ht_config c = breed(s);
      if ((ht_space_is_valid(s->space, &c) && !ht_config_set_has(&s->asked, &c)) || repair(s, &c))
        return take(s, &c, out);
    }
  ht_config c;
  return ht_sample_unasked(s->space, &s->rng, &s->asked, &c, 1) == 1 && take(s, &c, out);
}

static int next_config(ga_state *s, ht_config *out) {
  if (s->gen_n == s->popsize) next_generation(s);
  if (!child(s, out)) return 0;
  ga_ind *g = &s->gen[s->gen_n++];
  g->c = *out;
  g->f = INFINITY;
  g->told = 0;
  return 1;
}

static ht_status ga_init(void **state, ht_space *space, const ht_options *opt, uint64_t seed) {
  int params = ht_space_param_count(space);
  int64_t popsize = ht_options_int(opt, "popsize", 8);
  int64_t tsize = ht_options_int(opt, "tournament", 3), elite = ht_options_int(opt, "elite", popsize);
  int varying = 0;
  for (int p = 0; p < params; p++) varying += ht_space_value_count(space, p) > 1;
  double mutation = ht_options_double(opt, "mutation", varying > 0 ? 0.5 / varying : 0.0);
  const char *cross = ht_options_str(opt, "crossover", "uniform");
  if (popsize < 2 || popsize > 100000) return ht_error(HT_ERR_INVALID, "genetic: popsize must be in 2..100000");
  if (tsize < 1 || tsize > popsize) return ht_error(HT_ERR_INVALID, "genetic: tournament must be in 1..popsize");
  if (elite < 0 || elite > popsize) return ht_error(HT_ERR_INVALID, "genetic: elite must be in 0..popsize");
  if (!(mutation >= 0 && mutation <= 1)) return ht_error(HT_ERR_INVALID, "genetic: mutation must be in 0..1");
  if (strcmp(cross, "uniform") != 0 && strcmp(cross, "single_point") != 0)
    return ht_error(HT_ERR_INVALID, "genetic: crossover must be uniform or single_point, not '%s'", cross);
  ga_state *s = calloc(1, sizeof *s);
  if (!s) return ht_error(HT_ERR_NOMEM, "out of memory");
  s->space = space;
  ht_rng_seed(&s->rng, seed);
  s->popsize = (int)popsize;
  s->tournament = (int)tsize;
  s->elite = (int)elite;
  s->mutation = mutation;
  s->uniform = strcmp(cross, "uniform") == 0;
  ht_config_set_init(&s->asked);
  s->nb_cap = 1;
  for (int p = 0; p < params; p++) s->nb_cap += ht_space_value_count(space, p);
  s->pop = malloc(sizeof(ga_ind) * (size_t)popsize);
  s->gen = malloc(sizeof(ga_ind) * (size_t)popsize);
  s->pool = malloc(sizeof(ga_ind) * 2 * (size_t)popsize);
  s->nb = malloc(sizeof(ht_config) * (size_t)s->nb_cap);
  s->pick = malloc(sizeof(int) * (size_t)s->nb_cap);
  if (!s->pop || !s->gen || !s->pool || !s->nb || !s->pick) {
    free(s->pop);
    free(s->gen);
    free(s->pool);
    free(s->nb);
    free(s->pick);
    free(s);
    return ht_error(HT_ERR_NOMEM, "out of memory");
  }
  *state = s;
  return HT_OK;
}

static int ga_ask(void *state, ht_config *out, int max) {
  ga_state *s = state;
  int n = 0;
  while (n < max && next_config(s, &out[n])) n++;
  return n;
}

static void ga_tell(void *state, const ht_config *cfg, const ht_result *r) {
  ga_state *s = state;
  for (int i = s->gen_n - 1; i >= 0; i--)
    if (!s->gen[i].told && ht_config_equal(&s->gen[i].c, cfg)) {
      s->gen[i].f = ht_objective(r);
      s->gen[i].told = 1;
      return;
    }
  /* A child of an earlier generation told late (batched asks): it takes no part. */
}

static void ga_destroy(void *state) {
  ga_state *s = state;
  ht_config_set_free(&s->asked);
  free(s->pop);
  free(s->gen);
  free(s->pool);
  free(s->nb);
  free(s->pick);
  free(s);
}

const ht_strategy_ops ht_strategy_genetic = {
  "genetic", "genetic algorithm: tournament selection, crossover, mutation, repair of invalid children, elitism",
  ga_init, ga_ask, ga_tell, ga_destroy, NULL};
