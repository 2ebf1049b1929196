/* Strategy overhead: the time of one ask + tell as observations accumulate, for every strategy,
 * on a space of 8 parameters x 10 values with constraints (~1.4e5 valid configs, like
 * bench_space) and a smooth synthetic objective. Prints the median ask+tell time in windows
 * around 50, 100, 200 and 400 observations; BENCHMARKS.md compares it with a 0.5 s evaluation.
 * usage: bench_strategy_overhead [observations (default 420)] [strategy ...] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hetune/tune.h"

static const char *constraints[] = {"p0 * p1 <= 12", "p2 + p3 <= 7", "p4 % 2 == 0 and p5 < 4",
                                    "p6 <= p7 and p6 + p7 <= 8", "p1 != p3 or p0 > 1"};

static ht_space *space(void) {
  ht_space *s;
  if (ht_space_create(&s)) return NULL;
  char name[16];
  for (int p = 0; p < 8; p++) {
    snprintf(name, sizeof name, "p%d", p);
    ht_space_add_param_range(s, name, 1, 10, 1);
  }
  for (size_t i = 0; i < sizeof constraints / sizeof constraints[0]; i++) ht_space_add_constraint(s, constraints[i]);
  return s;
}

static double objective(const ht_config *c) {
  double v = 1e-3;
  for (int p = 0; p < c->n; p++) {
    double d = c->idx[p] - 3.0 - 0.4 * p;
    v *= 1.0 + 0.05 * d * d + 0.02 * sin(2.1 * c->idx[p] * (p + 1));
  }
  return v;
}

static void run(const ht_strategy_ops *ops, int n_obs) {
  static const int marks[] = {50, 100, 200, 400};
  ht_space *s = space();
  ht_options *o = NULL;
  ht_options_parse("", &o);
  void *st = NULL;
  double *t = calloc((size_t)n_obs, sizeof *t);
  if (!s || !t || ops->init(&st, s, o, 1)) {
    fprintf(stderr, "%s: init failed: %s\n", ops->name, ht_last_error());
    return;
  }
  int n = 0;
  for (; n < n_obs; n++) {
    ht_config c;
    double t0 = ht_now();
    if (ops->ask(st, &c, 1) != 1) break;
    ht_result r;
    ht_result_init(&r);
    r.status = HT_EVAL_OK;
    r.n_samples = 1;
    r.samples[0] = objective(&c);
    ht_result_summarise(&r);
    ops->tell(st, &c, &r);
    t[n] = ht_now() - t0;
  }
  printf("| %s |", ops->name);
  double total = 0;
  for (int i = 0; i < n; i++) total += t[i];
  for (int m = 0; m < 4; m++) {
    int lo = marks[m] - 10, hi = marks[m] + 10;
    if (hi > n) {
      printf(" - |");
      continue;
    }
    printf(" %.3f |", 1e3 * ht_stat_median(t + lo, hi - lo));
  }
  printf(" %.3f | %.4f%% |\n", 1e3 * total / (n ? n : 1), 100.0 * total / (n ? n : 1) / 0.5);
  fflush(stdout);
  ops->destroy(st);
  ht_options_destroy(o);
  ht_space_destroy(s);
  free(t);
}

int main(int argc, char **argv) {
  int n_obs = argc > 1 ? atoi(argv[1]) : 420;
  printf("ask+tell time in ms (median of 20 around each count), mean over the run, and that mean as a share "
         "of a 0.5 s evaluation\n");
  printf("| strategy | 50 | 100 | 200 | 400 | mean | share of 0.5 s |\n|---|---|---|---|---|---|---|\n");
  for (int i = 0; i < ht_strategy_count(); i++) {
    const ht_strategy_ops *ops = ht_strategy_at(i);
    int wanted = argc <= 2;
    for (int a = 2; a < argc; a++) wanted |= strcmp(argv[a], ops->name) == 0;
    if (wanted) run(ops, n_obs);
  }
  return 0;
}
