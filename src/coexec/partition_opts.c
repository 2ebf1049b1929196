/* The planner's options as text ("steps=15,eliminate=0.1,remainder=largest"), read with the
 * project's options parser; an unknown key is an error naming the nearest known one. */
#include <stdlib.h>
#include <string.h>

#include "core/json_text.h"
#include "hetune/options.h"
#include "coexec/partition_internal.h"

static const char *const known_keys[] = {"steps",  "eliminate",  "converge",  "granularity", "remainder",
                                         "energy", "idle_power", "recursive", "refine",      NULL};

static ht_status unknown_key(const ht_options *o) {
  char *unused = ht_options_unused(o);
  if (!unused) return HT_OK;
  unused[strcspn(unused, ",")] = '\0'; /* the first one */
  const char *near = ht_nearest_word(unused, known_keys);
  ht_status st =
      near ? ht_error(HT_ERR_INVALID, "partition option '%s': unknown key: did you mean '%s'?", unused, near)
           : ht_error(HT_ERR_INVALID,
                      "partition option '%s': unknown key (known: steps, eliminate, converge, granularity, "
                      "remainder, energy, idle_power, recursive, refine)",
                      unused);
  free(unused);
  return st;
}

/* remainder=largest, or a PU number */
static ht_status read_remainder(const ht_options *o, int *pu) {
  const char *text = ht_options_str(o, "remainder", NULL);
  if (!text) return HT_OK;
  if (!strcmp(text, "largest")) {
    *pu = -1;
    return HT_OK;
  }
  char *end = NULL;
  long v = strtol(text, &end, 10);
  if (end == text || *end || v < 0 || v >= HT_COEXEC_MAX_PUS)
    return ht_error(HT_ERR_INVALID, "partition option remainder=%s: expected 'largest' or a PU number 0 to %d", text,
                    HT_COEXEC_MAX_PUS - 1);
  *pu = (int)v;
  return HT_OK;
}

static void read_values(const ht_options *o, ht_partition_opts *t) {
  t->max_steps = (int)ht_options_int(o, "steps", t->max_steps);
  t->eliminate = ht_options_double(o, "eliminate", t->eliminate);
  t->converge = ht_options_double(o, "converge", t->converge);
  t->granularity = ht_options_int(o, "granularity", t->granularity);
  t->eliminate_energy = ht_options_double(o, "energy", t->eliminate_energy);
  t->idle_power_w = ht_options_double(o, "idle_power", t->idle_power_w);
  t->recursive = (int)ht_options_int(o, "recursive", t->recursive);
  t->refine = (int)ht_options_int(o, "refine", t->refine);
}

ht_status ht_partition_opts_parse(const char *text, ht_partition_opts *o) {
  if (!o) return ht_error(HT_ERR_INVALID, "ht_partition_opts_parse: no options to fill");
  ht_options *opts;
  ht_status st = ht_options_parse(text, &opts);
  if (st) return ht_error_prefix(st, "partition options: ");
  ht_partition_opts t = *o;
  read_values(opts, &t);
  st = read_remainder(opts, &t.remainder_pu);
  if (!st) st = unknown_key(opts);
  if (!st) st = ht_options_check(opts, "partition", "plan");
  ht_options_destroy(opts);
  /* the checks that need no PU count or power table; ht_partition_plan makes them all */
  static const double one_watt = 1;
  ht_partition_opts c = t;
  c.remainder_pu = -1;
  c.n_versions = NULL;
  c.power_w = &one_watt;
  if (!st) st = htp_check_opts(&c, 1);
  if (!st) *o = t;
  return st;
}
