/* The selectors, one per file, registered here in one line each. Threshold trees and the
 * CPU-vs-GPU race plug in as further selectors. */
#include <string.h>

#include "dispatch/dispatch_internal.h"

extern const htd_selector_ops htd_selector_history, htd_selector_model, htd_selector_rule;

static const htd_selector_ops *const selectors[] = {
    &htd_selector_history,
    &htd_selector_model,
    &htd_selector_rule,
};
enum { N_SELECTORS = sizeof selectors / sizeof selectors[0] };

const htd_selector_ops *htd_selector_find(const char *name) {
  for (int i = 0; name && i < N_SELECTORS; i++)
    if (!strcmp(selectors[i]->name, name)) return selectors[i];
  return NULL;
}

const char *htd_selector_names(void) { return "history, model, rule"; }
