/* Evaluation results and the T4 invalidity vocabulary. */
#include <math.h>
#include <string.h>

#include "hetune/result.h"

static const char *names[] = {"ok", "compile", "runtime", "timeout", "correctness", "constraints"};

const char *ht_eval_status_name(ht_eval_status s) { return (unsigned)s < 6 ? names[s] : "unknown"; }

const char *ht_eval_status_t4(ht_eval_status s) { return s == HT_EVAL_OK ? "correct" : ht_eval_status_name(s); }

ht_status ht_eval_status_parse(const char *s, ht_eval_status *out) {
  for (int i = 0; i < 6; i++)
    if (strcmp(s, names[i]) == 0) {
      *out = (ht_eval_status)i;
      return HT_OK;
    }
  if (strcmp(s, "correct") == 0) {
    *out = HT_EVAL_OK;
    return HT_OK;
  }
  return ht_error(HT_ERR_INVALID, "unknown evaluation status '%s'", s);
}

void ht_result_init(ht_result *r) {
  memset(r, 0, sizeof *r);
  r->time_s = r->mean_s = r->min_s = r->max_s = NAN;
}

void ht_result_summarise(ht_result *r) {
  int n = r->n_samples;
  r->time_s = ht_stat_median(r->samples, n);
  r->mean_s = ht_stat_mean(r->samples, n);
  r->stddev_s = ht_stat_stddev(r->samples, n);
  r->min_s = ht_stat_min(r->samples, n);
  r->max_s = ht_stat_max(r->samples, n);
  r->rsd = n > 1 && r->mean_s > 0 ? r->stddev_s / r->mean_s : 0;
}
