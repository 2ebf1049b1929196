/* hetune race COMP: runs a computation's variants against each other (docs/race.md) and prints
 * who won, when, and what stopping the others cost. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char *race_help =
  "usage: hetune race COMP [--size K=V ...] [--variants I,J,...] [--repeat R] [--db F]\n"
  "\n"
  "Runs the variants of a computation file (docs/dispatch.md) at once on data made as the spec\n"
  "says, keeps the first to finish and stops the others through their stop flag (docs/race.md).\n"
  "Prints, per race, the winner, its time from the start (t_win), the stop delay (from the win\n"
  "until the last variant was joined) and each variant's outcome: won, finished (it could not be\n"
  "stopped in time), stopped, or failed. The winner's time is stored as a measurement, a stopped\n"
  "variant's as a lower bound, in the database's call log.\n"
  "\n"
  "  --size K=V        a call size (repeatable; default: the specs' sizes)\n"
  "  --variants I,J    the variants to race, by index (default: all)\n"
  "  --repeat R        races to run (default 1)\n"
  "  --db FILE         database of tuned configs and the call log (default hetune.db or $HETUNE_DB)\n";

static const char *const known[] = {"size", "variants", "repeat", "db", NULL};

/* "0,2" into ids (checked against the computation's n variants). */
static int parse_variants(const char *text, int n, int *ids, int *count) {
  *count = 0;
  for (const char *p = text; *p;) {
    char *end;
    long v = strtol(p, &end, 10);
    if (end == p || (*end && *end != ',') || *count == HT_RACE_MAX)
      return cli_usage_error("race", "--variants %s: expected variant indices separated by commas (at most %d)", text,
                             HT_RACE_MAX);
    if (v < 0 || v >= n) return cli_usage_error("race", "--variants %s: no variant %ld (it has %d)", text, v, n);
    ids[(*count)++] = (int)v;
    p = *end ? end + 1 : end;
  }
  return *count ? CLI_OK : cli_usage_error("race", "--variants: expected at least one variant index");
}

static const char *ms(double s, char *buf, size_t len) {
  snprintf(buf, len, "%.3f ms", s * 1e3);
  return buf;
}

static void print_race(ht_computation *c, int k, const ht_race_result *r) {
  char a[32], b[32];
  printf("race %d: winner variant %d (%s), t_win %s, stop delay %s (%.1f%% of t_win)\n", k, r->winner,
         ht_computation_variant_label(c, r->winner), ms(r->t_win, a, sizeof a), ms(r->stop_delay, b, sizeof b),
         100 * r->stop_delay / r->t_win);
  for (int i = 0; i < r->n; i++) {
    const ht_race_participant *p = &r->p[i];
    printf("  variant %d %-9s", p->variant, ht_race_outcome_name(p->outcome));
    if (p->outcome == HT_RACE_FAILED) printf(" %s\n", p->message);
    else printf(" done at %s, kernel %s  %s\n", ms(p->end_s, a, sizeof a), ms(p->times.kernel_s, b, sizeof b),
                ht_computation_variant_label(c, p->variant));
  }
}

static int read_options(const cli_args *a, ht_computation *c, int64_t *sizes, int *ids, int *n, long long *repeat) {
  const ht_spec *s = ht_computation_spec(c);
  if (ht_spec_size_count(s) > 16) return cli_usage_error("race", "%s has more than 16 sizes", ht_spec_name(s));
  for (int i = 0; i < ht_spec_size_count(s); i++) sizes[i] = ht_spec_size_value(s, i);
  for (int i = 0; i < a->n_opt; i++)
    if (!strcmp(a->opt_name[i], "size") && ht_features_parse_problem(s, a->opt_value[i], sizes, "--size"))
      return cli_usage_error("race", "%s", ht_last_error());
  const char *v = cli_opt(a, "repeat");
  if (v && cli_integer_in("race", "--repeat", v, 1, 1000000, repeat)) return CLI_USAGE;
  *n = ht_computation_variant_count(c);
  for (int i = 0; i < *n; i++) ids[i] = i;
  v = cli_opt(a, "variants");
  return v ? parse_variants(v, ht_computation_variant_count(c), ids, n) : CLI_OK;
}

static int race_all(ht_computation *c, const int64_t *sizes, const int *ids, int n, long long repeat) {
  ht_host_arg *args;
  if (ht_computation_make_args(c, sizes, 1, &args)) return cli_fail("race");
  ht_race_result *r = malloc(sizeof *r);
  int rc = r ? CLI_OK : cli_fail("race");
  for (long long k = 1; !rc && k <= repeat; k++) {
    if (ht_race_run(c, sizes, args, ids, n, r)) rc = cli_fail("race");
    else print_race(c, (int)k, r);
  }
  if (!rc && ht_computation_flush(c)) rc = cli_fail("race");
  free(r);
  ht_computation_free_args(c, args);
  return rc;
}

int cmd_race(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) {
    fputs(race_help, stdout);
    return CLI_OK;
  }
  cli_args a;
  int rc = cli_parse(argc, argv, "race", known, NULL, &a);
  if (rc) return rc;
  if (a.n_pos != 1) return cli_usage_error("race", a.n_pos ? "expected one computation file" : "expected a computation file");
  ht_store *st = NULL;
  ht_computation *c = NULL;
  if (ht_store_open(cli_db_path(&a), &st)) return cli_fail("race");
  ht_status s = ht_computation_load(a.pos[0], st, &c);
  if (s) rc = cli_fail_device("race", s);
  int64_t sizes[16];
  int ids[HT_RACE_MAX], n = 0;
  long long repeat = 1;
  if (!rc) rc = read_options(&a, c, sizes, ids, &n, &repeat);
  if (!rc) rc = race_all(c, sizes, ids, n, repeat);
  ht_computation_destroy(c);
  ht_store_close(st);
  return rc;
}
