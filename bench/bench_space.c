/* Times space enumeration (a 1e8-config Cartesian product with ~1.4e5 valid points), sampling,
 * and expression evaluation. Prints results; numbers go to BENCHMARKS.md by hand. */
#include <stdio.h>
#include <stdlib.h>

#include "hetune/space.h"

static const char *constraints[] = {"p0 * p1 <= 12", "p2 + p3 <= 7", "p4 % 2 == 0 and p5 < 4",
                                    "p6 <= p7 and p6 + p7 <= 8", "p1 != p3 or p0 > 1"};

static ht_space *big_space(void) {
  ht_space *s;
  if (ht_space_create(&s)) return NULL;
  ht_value v[10];
  char name[16];
  for (int k = 0; k < 10; k++) v[k] = ht_int(k + 1);
  for (int p = 0; p < 8; p++) {
    snprintf(name, sizeof name, "p%d", p);
    ht_space_add_param(s, name, v, 10);
  }
  for (size_t i = 0; i < sizeof constraints / sizeof constraints[0]; i++) ht_space_add_constraint(s, constraints[i]);
  return s;
}

static int visit_count(const ht_config *c, void *ctx) {
  (void)c;
  ++*(uint64_t *)ctx;
  return 0;
}

static void bench_enumeration(void) {
  double best_count = 1e9, best_enum = 1e9, best_list = 1e9;
  uint64_t n = 0, m = 0;
  for (int rep = 0; rep < 5; rep++) {
    ht_space *s = big_space();
    double t0 = ht_now();
    ht_space_count(s, &n);
    double t1 = ht_now();
    m = 0;
    ht_space_enumerate(s, visit_count, &m);
    double t2 = ht_now();
    ht_config c;
    ht_space_get(s, 0, &c); /* materialises */
    double t3 = ht_now();
    if (t1 - t0 < best_count) best_count = t1 - t0;
    if (t2 - t1 < best_enum) best_enum = t2 - t1;
    if (t3 - t2 < best_list) best_list = t3 - t2;
    ht_space_destroy(s);
  }
  ht_space *s = big_space();
  printf("space: cartesian %llu, valid %llu (enumerated %llu)\n", (unsigned long long)ht_space_cartesian_size(s),
         (unsigned long long)n, (unsigned long long)m);
  printf("  count (first, uncached): %8.2f ms\n", best_count * 1e3);
  printf("  enumerate with callback: %8.2f ms\n", best_enum * 1e3);
  printf("  materialise valid list:  %8.2f ms\n", best_list * 1e3);
  ht_rng rng;
  ht_rng_seed(&rng, 1);
  ht_config out[1000];
  int got;
  double t0 = ht_now();
  ht_space_sample(s, &rng, 1000, out, &got); /* rejection, nothing counted yet */
  double t1 = ht_now();
  printf("  sample 1000 (rejection): %8.2f ms (got %d)\n", (t1 - t0) * 1e3, got);
  t0 = ht_now();
  for (int i = 0; i < 1000; i++) ht_space_is_valid(s, &out[i]);
  t1 = ht_now();
  printf("  is_valid:                %8.1f ns/config\n", (t1 - t0) * 1e9 / 1000);
  ht_space_destroy(s);
}

static void bench_expr(const char *text) {
  static const char *names[] = {"block_size_x", "tile_size_x", "block_size_y", "N"};
  ht_value vars[4] = {ht_int(64), ht_int(4), ht_int(8), ht_int(4096)};
  ht_expr *e;
  if (ht_expr_compile(text, names, 4, &e)) {
    printf("compile failed: %s\n", ht_last_error());
    return;
  }
  const int iters = 5000000;
  int64_t sink = 0;
  double best = 1e9;
  for (int rep = 0; rep < 3; rep++) {
    double t0 = ht_now();
    for (int i = 0; i < iters; i++) {
      vars[0].u.i = 16 << (i & 3);
      int ok = 0;
      ht_expr_eval_bool(e, vars, &ok);
      sink += ok;
    }
    double t = ht_now() - t0;
    if (t < best) best = t;
  }
  printf("  %-70s %6.1f ns/eval (%lld)\n", text, best * 1e9 / iters, (long long)(sink % 7));
  ht_expr_destroy(e);
}

int main(void) {
  bench_enumeration();
  printf("expression evaluation:\n");
  bench_expr("block_size_x * tile_size_x <= 2048");
  bench_expr("block_size_x*tile_size_x <= 2048 and 32 <= block_size_x");
  bench_expr("32 <= block_size_x * block_size_y <= 1024 and N % (block_size_x * tile_size_x) == 0");
  bench_expr("max(block_size_x, block_size_y) * ceil_div(N, tile_size_x) > 100 ? 1 : 0");
  return 0;
}
