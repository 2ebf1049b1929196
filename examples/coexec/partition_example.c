/* Planning how to split one data-parallel call across a CPU and a GPU (docs/coexec.md): the
 * planner gets each device's predicted time for a chunk of rows and returns the chunks that
 * finish together.
 *
 *   partition_example [ROWS] [OPTIONS]   e.g. partition_example 1000000 "granularity=64,refine=1"
 *                                        prints each device's rows and predicted time */
#include <stdio.h>
#include <stdlib.h>

#include "hetune/hetune.h"

/* What a model would predict: the CPU takes 40 ns a row; the GPU 5 ns a row plus the copy of its
 * rows, 30 us of latency and 256 bytes a row at 12 GB/s. */
static double predicted(void *ctx, int pu, int version, int64_t lb, int64_t ub) {
  (void)ctx, (void)version;
  double rows = (double)(ub - lb);
  return pu == 0 ? 40e-9 * rows : 5e-9 * rows + 30e-6 + rows * 256 / 12e9;
}

int main(int argc, char **argv) {
  int64_t rows = argc > 1 ? atoll(argv[1]) : 1000000;
  ht_partition_opts opts = {0}; /* the defaults: 15 steps, 10% elimination, 2% convergence */
  if (argc > 2 && ht_partition_opts_parse(argv[2], &opts))
    return fprintf(stderr, "partition_example: %s\n", ht_last_error()), 1;
  ht_partition plan;
  if (ht_partition_plan(2, 0, rows, predicted, NULL, &opts, &plan))
    return fprintf(stderr, "partition_example: %s\n", ht_last_error()), 1;
  const char *names[2] = {"cpu", "gpu"};
  for (int i = 0; i < plan.n_pus; i++)
    printf("%s: rows [%lld, %lld), predicted %.3f ms%s\n", names[i], (long long)plan.lb[i], (long long)plan.ub[i],
           plan.time_s[i] * 1e3, plan.eliminated_at[i] ? " (not used)" : "");
  printf("makespan %.3f ms after %d steps, planned in %.1f us\n", plan.makespan_s * 1e3, plan.steps, plan.plan_us);
  return plan.ub[plan.n_pus - 1] == rows ? 0 : 1;
}
