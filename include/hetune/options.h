/* Options of strategies, model kinds and other parts: "key=value,key=value" text read with typed
 * getters and defaults, and checked afterwards for keys nothing read (typos) and values a getter
 * could not read whole. */
#ifndef HETUNE_OPTIONS_H
#define HETUNE_OPTIONS_H

#include <stdint.h>

#include "hetune/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ht_options ht_options;
ht_status ht_options_parse(const char *text, ht_options **out); /* NULL or "" -> empty */
void ht_options_destroy(ht_options *o);
int64_t ht_options_int(const ht_options *o, const char *key, int64_t def);
double ht_options_double(const ht_options *o, const char *key, double def);
const char *ht_options_str(const ht_options *o, const char *key, const char *def);
/* Keys never read by a getter (to report typos); malloc'ed comma list or NULL. */
char *ht_options_unused(const ht_options *o);
/* After the getters ran: an error naming the first value a typed getter could not read whole
 * (k=abc for an integer), else the keys no getter read; the message starts "KIND NAME" ("strategy
 * bayes option kappa=2x: expected a number"). */
ht_status ht_options_check(const ht_options *o, const char *kind, const char *name);
/* A copy of base with "key=value,..." defaults added for the keys base lacks (a composite strategy
 * giving one part other defaults); after the part read it, ht_options_absorb(base, copy) carries
 * which keys were read, or malformed, back to base for ht_options_check. */
ht_status ht_options_derive(const ht_options *base, const char *defaults, ht_options **out);
void ht_options_absorb(const ht_options *base, const ht_options *derived);

#ifdef __cplusplus
}
#endif
#endif
