/* A race between two variants of one computation (docs/race.md): a 20 ms spin and a 2 s spin
 * that fills its output with garbage first. The first to finish wins; the other is stopped
 * through its stop flag, and only the winner's output reaches ours.
 *
 *   race_example [COMPUTATION.json]   (default: tests/data/race/spin_race.json) */
#include <stdio.h>
#include <stdlib.h>

#include <hetune/hetune.h>

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : HT_SOURCE_DIR "/tests/data/race/spin_race.json";
  ht_computation *c;
  if (ht_computation_load(path, NULL, &c)) return fprintf(stderr, "%s\n", ht_last_error()), 1;
  int64_t n = 1000;
  float *out = calloc((size_t)n, sizeof *out), *in = malloc(sizeof *in * (size_t)n);
  for (int64_t i = 0; i < n; i++) in[i] = (float)i;
  ht_host_arg args[4] = {{out, (size_t)n, 0, 0}, {in, (size_t)n, 0, 0}, {0}, {0}}; /* out, in, stop, n */

  ht_race_result r;
  if (ht_race_run(c, &n, args, NULL, 0, &r)) return fprintf(stderr, "%s\n", ht_last_error()), 1;
  printf("winner: variant %d (%s) after %.1f ms; the others stopped %.3f ms later\n", r.winner,
         ht_computation_variant_label(c, r.winner), r.t_win * 1e3, r.stop_delay * 1e3);
  for (int i = 0; i < r.n; i++)
    printf("  variant %d: %s\n", r.p[i].variant, ht_race_outcome_name(r.p[i].outcome));

  int wrong = 0;
  for (int64_t i = 0; i < n; i++) wrong += out[i] != 2 * in[i]; /* the winner's result, no garbage */
  printf("%s\n", wrong ? "wrong output" : "output checked");
  free(out);
  free(in);
  ht_computation_destroy(c);
  return wrong != 0;
}
