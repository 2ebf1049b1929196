/* What hetune trusts before it runs code: cache folders nobody else can write, compiler flags from
 * an allow list when specs come from others. */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hetune/core.h"

ht_status ht_check_private_dir(const char *dir) {
  struct stat st;
  if (stat(dir, &st) != 0) return ht_error(HT_ERR_IO, "%s: %s", dir, strerror(errno));
  if (!S_ISDIR(st.st_mode)) return ht_error(HT_ERR_IO, "%s: not a folder", dir);
  if (st.st_uid != geteuid())
    return ht_error(HT_ERR_IO,
                    "cache folder %s belongs to uid %d, not to you (uid %d): code compiled there could come from "
                    "someone else. Set HETUNE_CACHE_DIR to a folder of your own",
                    dir, (int)st.st_uid, (int)geteuid());
  if (st.st_mode & (S_IWGRP | S_IWOTH))
    return ht_error(HT_ERR_IO,
                    "cache folder %s is writable by %s (mode %03o): another user could replace the code compiled "
                    "there. Make it private (chmod 700 %s) or set HETUNE_CACHE_DIR to a folder of your own",
                    dir, (st.st_mode & S_IWOTH) ? "everyone" : "its group", (unsigned)(st.st_mode & 0777), dir);
  return HT_OK;
}

ht_status ht_check_cache_ancestor(const char *dir) {
  struct stat st;
  if (stat(dir, &st) != 0) return ht_error(HT_ERR_IO, "%s: %s", dir, strerror(errno));
  /* Everyone may write /tmp, but its sticky bit lets only owners rename or remove what is in it. */
  if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX))
    return ht_error(HT_ERR_IO,
                    "%s, a folder above the cache, is writable by everyone (mode %03o, no sticky bit): anyone could "
                    "put a cache folder of their own in place of yours. Set HETUNE_CACHE_DIR to a folder elsewhere",
                    dir, (unsigned)(st.st_mode & 0777));
  return HT_OK;
}

/* ---- compiler flags ---- */

/* Flags that change how code is generated, never what the compiler runs or reads besides headers:
 * no -wrapper, -B, -specs, -fplugin, -Xclang, -mllvm, -Wa/-Wp, -L, @file; of -Wl and -l only what
 * hetune's own specs use (-l:../x.so would link any file). */
static const char default_allowed[] =
    "-O -O[0-3sgz] -Ofast -g -g[0-3] -D* -U* -I* -std=* --std=* -march=* -mtune=* -mcpu=* -mavx* -msse* "
    "-mfma -mf16c -mbmi -mbmi2 -mpopcnt -mno-* -mprefer-vector-width=* -ffast-math -ffp-contract=* "
    "-funroll-loops -funroll-all-loops -ftree-vectorize -fvect-cost-model=* -fomit-frame-pointer "
    "-fstrict-aliasing -fopenmp -fopenmp-simd -fPIC -fno-* -lm -lopenblas -Wl,--no-as-needed -cl-* "
    "-use_fast_math --use_fast_math "
    "-lineinfo --fmad=* -ftz=* -prec-div=* -prec-sqrt=* -maxrregcount=* --maxrregcount=* "
    "--extra-device-vectorization";

/* Splits on every blank character (isspace): a word the compiler sees as two must never pass the
 * check as one. */
static const char blanks[] = " \t\n\r\v\f";

/* The allow list, NULL when every flag is allowed. */
static const char *allowed_flags(void) {
  const char *env = getenv("HETUNE_ALLOWED_FLAGS");
  return env && env[strspn(env, blanks)] ? env : NULL;
}

static int word_allowed(const char *word, const char *allowed) {
  char pat[256];
  for (const char *p = allowed; *p;) {
    p += strspn(p, blanks);
    size_t n = strcspn(p, blanks);
    if (n && n < sizeof pat) {
      memcpy(pat, p, n);
      pat[n] = '\0';
      if (strcmp(pat, "default") == 0 ? word_allowed(word, default_allowed) : fnmatch(pat, word, 0) == 0) return 1;
    }
    p += n;
  }
  return 0;
}

ht_status ht_flags_check(const char *flags, const char *where) {
  const char *allowed = allowed_flags();
  if (!allowed || !flags) return HT_OK;
  char word[512];
  for (const char *p = flags; *p;) {
    p += strspn(p, blanks);
    size_t n = strcspn(p, blanks);
    if (!n) break;
    snprintf(word, sizeof word, "%.*s", (int)n, p);
    if (n >= sizeof word || !word_allowed(word, allowed))
      return ht_error(HT_ERR_INVALID,
                      "%s: compiler flag '%s' is not allowed (HETUNE_ALLOWED_FLAGS=%s): a spec's flags run with your "
                      "rights, so only flags on the allow list are passed to the compiler",
                      where ? where : "flags", word, allowed);
    p += n;
  }
  return HT_OK;
}
