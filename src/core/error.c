/* Thread-local error messages (the libgit2 model). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "hetune/core.h"

static _Thread_local char last_error[2048];

const char *ht_last_error(void) { return last_error; }

void ht_error_clear(void) { last_error[0] = '\0'; }

/* Formatted aside first: an argument may be the last error itself (ht_last_error()). */
ht_status ht_error(ht_status code, const char *fmt, ...) {
  char text[sizeof last_error];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  memcpy(last_error, text, sizeof text);
  return code;
}

ht_status ht_error_prefix(ht_status code, const char *fmt, ...) {
  char prefix[1024], old[sizeof last_error];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  memcpy(old, last_error, sizeof old);
  size_t n = strlen(prefix);
  if (n >= sizeof last_error) n = sizeof last_error - 1;
  memcpy(last_error, prefix, n);
  size_t m = strlen(old);
  if (m > sizeof last_error - 1 - n) m = sizeof last_error - 1 - n;
  memcpy(last_error + n, old, m);
  last_error[n + m] = '\0';
  return code;
}

const char *ht_status_name(ht_status s) {
  static const char *names[] = {"ok",       "invalid", "parse",   "io",      "out of memory",
                                "not found", "unsupported", "device", "compile", "runtime",
                                "store",    "timeout", "internal"};
  if ((unsigned)s < sizeof names / sizeof names[0]) return names[s];
  return "unknown";
}
