/* Recorded spaces, internal: the builder the file readers feed, and the table it becomes. */
#ifndef HETUNE_RECORDED_INTERNAL_H
#define HETUNE_RECORDED_INTERNAL_H

#include "hetune/replay.h"

typedef struct rec_outcome {
  ht_eval_status status;
  double time_s; /* seconds; ignored unless OK */
  double cost_s; /* what the evaluation took: compile + runs + verification + framework */
} rec_outcome;

typedef struct rec_builder {
  char source[512]; /* for messages: the file */
  char *names[HT_MAX_PARAMS];
  int n_params;
  char **texts;     /* n_rows x n_params value texts */
  rec_outcome *rows;
  size_t n_rows, cap;
  char *ident[3];   /* kernel, device, problem seen so far */
} rec_builder;

void rec_builder_init(rec_builder *b, const char *source);
void rec_builder_free(rec_builder *b);
/* One recorded evaluation: n parameters by name with their values as text. ident: kernel, device,
 * problem (each may be NULL); rows must agree. row numbers the row in messages. */
ht_status rec_builder_add(rec_builder *b, int n, const char *const *names, const char *const *texts,
                          const rec_outcome *o, const char *const ident[3], size_t row);
/* The same with the config as "A=1,B=2" text. */
ht_status rec_add_config_text(rec_builder *b, const char *text, const rec_outcome *o, const char *const ident[3],
                              size_t row);
ht_status rec_builder_finish(rec_builder *b, const char *name, ht_recorded **out);

typedef struct rec_entry {
  ht_config c;
  ht_eval_status status;
  double time_s, cost_s;
} rec_entry;

struct ht_recorded {
  char name[128];
  ht_space *space;
  char **texts; /* value strings the space points at */
  size_t n_texts;
  rec_entry *e;
  uint64_t n;
  int64_t *slot; /* open addressing: entry index or -1 */
  uint64_t mask;
  double *sorted; /* successful times, ascending */
  ht_recorded_stats stats;
};

#endif
