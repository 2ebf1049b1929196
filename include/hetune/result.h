/* The result of one evaluation: one config measured on one device for one problem size. */
#ifndef HETUNE_RESULT_H
#define HETUNE_RESULT_H

#include "hetune/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The T4 invalidity vocabulary (plus OK = "correct"). */
typedef enum ht_eval_status {
  HT_EVAL_OK = 0,
  HT_EVAL_COMPILE = 1,
  HT_EVAL_RUNTIME = 2,
  HT_EVAL_TIMEOUT = 3,
  HT_EVAL_CORRECTNESS = 4,
  HT_EVAL_CONSTRAINTS = 5
} ht_eval_status;
const char *ht_eval_status_name(ht_eval_status s); /* "ok", "compile", "runtime", ... */
ht_status ht_eval_status_parse(const char *s, ht_eval_status *out);
const char *ht_eval_status_t4(ht_eval_status s); /* "correct", "compile", ... as T4 writes them */

#define HT_MAX_SAMPLES 256
#define HT_MAX_METRICS 8

typedef struct ht_metric {
  char name[32];
  double value;
} ht_metric;

/* Plain data (no pointers) so it crosses the worker pipe and is copied with =. */
typedef struct ht_result {
  ht_eval_status status;
  double time_s;         /* median of samples (the objective); NAN unless OK */
  double mean_s, stddev_s, min_s, max_s;
  double rsd;            /* stddev / mean of the samples */
  int n_samples;
  double samples[HT_MAX_SAMPLES];
  double compile_s;      /* 0 when cached */
  int compile_cached;
  double verify_s;       /* reference comparison, 0 when skipped */
  double h2d_s, d2h_s;   /* host<->device transfer times */
  double framework_s;    /* evaluation wall time minus compile, verification and kernel time */
  double wall_s;         /* whole evaluation as seen by the tuner */
  double timestamp;      /* wall clock at the end (seconds since the epoch) */
  int n_metrics;
  ht_metric metrics[HT_MAX_METRICS];
  char message[2048];    /* failure detail: its first line says what and where (the compiler's first error,
                          * the first mismatching element, the signal); more lines may follow (the
                          * compiler's whole output) */
} ht_result;

void ht_result_init(ht_result *r);
/* Fills time_s, mean, stddev, min, max, rsd from samples. */
void ht_result_summarise(ht_result *r);

#ifdef __cplusplus
}
#endif
#endif
