/* The C prototype check. A C kernel is called through libffi with the argument list the spec
 * gives, so a missing, extra or mistyped argument makes the call read garbage: a crash, or worse
 * a wrong kernel that "verifies" because its reference is called the same wrong way. At load time
 * the list becomes a declaration, compiled after the kernel's source by the compiler, flags and
 * defines a real build uses (the first value of each parameter), so the compiler itself finds a
 * conflict; its message is turned into an error naming the argument.
 *
 * Declared types are exact, but a read-only buffer may be declared `const` or not, typedefs,
 * `long long` for `long` and a return value change nothing in the call: the kernel's own type,
 * which GCC and Clang print for the pointer compiled before the declaration, is compared with
 * the list by what the call passes, and a conflict only in those is accepted. A compiler that
 * prints no type gets the conflict reported as it is.
 *
 * No compiler, one that does not finish or no writable cache folder: the check is skipped (with
 * no compiler, every config's compile fails anyway and is recorded as such). A source that does
 * not compile at the first values, for a reason other than the declaration, passes: its configs'
 * compiles report that. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device/backend.h"
#include "spec/kernel_internal.h"

/* The compiler's own predefined types, so int64 is whatever int64_t is on this machine. */
static const char *c_type(ht_dtype t) {
  switch (t) {
  case HT_DTYPE_F32: return "float";
  case HT_DTYPE_F64: return "double";
  case HT_DTYPE_I32: return "__INT32_TYPE__";
  case HT_DTYPE_U32: return "__UINT32_TYPE__";
  case HT_DTYPE_I64: return "__INT64_TYPE__";
  case HT_DTYPE_U64: return "__UINT64_TYPE__";
  case HT_DTYPE_I8: return "__INT8_TYPE__";
  case HT_DTYPE_U8: return "__UINT8_TYPE__";
  default: return "void";
  }
}

/* The file name the appended lines carry (#line): the compiler's messages about them start with it. */
static const char appended[] = "hetune-spec-arguments";

/* What is compiled after the kernel's source: a pointer to the kernel initialised with the type
 * the spec's arguments give it (when the types differ, GCC and Clang both print the kernel's
 * own type there), then the declaration whose conflict with the definition is the verdict.
 * No parameter names: a name may be a macro. */
static void appendix(const ht_spec *s, const char *entry, ht_buf *b) {
  ht_buf params = {0};
  for (int i = 0; i < s->n_args; i++) {
    const ht_spec_arg *a = &s->args[i];
    const char *q = a->is_stop_flag ? "volatile " : a->is_buffer && !(a->access & HT_ACCESS_WRITE) ? "const " : "";
    ht_buf_appendf(&params, "%s%s%s%s", i ? ", " : "", q, c_type(a->type),
                   a->is_buffer || a->is_stop_flag ? " *" : "");
  }
  const char *p = params.data ? params.data : "void";
  ht_buf_appendf(b, "static void (*const hetune_kernel_type)(%s) __attribute__((unused)) = %s;\n", p, entry);
  ht_buf_appendf(b, "void %s(%s);\n", entry, p);
  if (params.failed) b->failed = 1;
  ht_buf_free(&params);
}

/* The declaration in the spec's words, for messages: "void f(float *c, const float *a, int32 n)". */
static void spec_declaration(const ht_spec *s, const char *entry, char *out, size_t len) {
  int n = snprintf(out, len, "void %s(", entry);
  for (int i = 0; i < s->n_args && n > 0 && (size_t)n < len; i++) {
    const ht_spec_arg *a = &s->args[i];
    const char *q = a->is_stop_flag ? "volatile " : a->is_buffer && !(a->access & HT_ACCESS_WRITE) ? "const " : "";
    n += snprintf(out + n, len - (size_t)n, "%s%s%s %s%s", i ? ", " : "", q, ht_dtype_name(a->type),
                  a->is_buffer || a->is_stop_flag ? "*" : "", a->name);
  }
  if (n > 0 && (size_t)n < len) snprintf(out + n, len - (size_t)n, ")");
}

static void line_directive(ht_buf *b, const char *file) {
  ht_buf_append(b, "#line 1 \"");
  for (const char *p = file; *p; p++) ht_buf_appendf(b, "%s%c", *p == '"' || *p == '\\' ? "\\" : "", *p);
  ht_buf_append(b, "\"\n");
}

/* ---- reading the compiler's messages ---- */

typedef struct conflict {
  int found;
  char message[512]; /* the compiler's words */
  char where[512];   /* the kernel's definition, "file:line:col", when the compiler says */
  char type[512];    /* its type, "void (*)(float *, int)", when the compiler says */
} conflict;

/* The first quoted word after p, in ASCII ('x') or typographic (‘x’) quotes, into out; returns
 * the text after it, NULL when there is none. */
static const char *read_quoted(const char *p, char *out, size_t len) {
  const char *open = strpbrk(p, "'\xe2");
  while (open && *open == '\xe2' && strncmp(open, "\xe2\x80\x98", 3) != 0) open = strpbrk(open + 1, "'\xe2");
  if (!open) return NULL;
  int ascii = *open == '\'';
  const char *start = open + (ascii ? 1 : 3), *end = ascii ? strchr(start, '\'') : strstr(start, "\xe2\x80\x99");
  if (!end) return NULL;
  snprintf(out, len, "%.*s", (int)(end - start), start);
  return end + (ascii ? 1 : 3);
}

/* The last quoted word of a line: the kernel's type in the pointer's diagnostic, spelled out
 * when the compiler adds one ({aka 'T'} or (aka 'T')). */
static void last_quoted(const char *line, char *out, size_t len) {
  char word[512];
  for (const char *p = read_quoted(line, word, sizeof word); p; p = read_quoted(p, word, sizeof word))
    snprintf(out, len, "%s", word);
}

static void read_line(const conflict *k, const char *line, const char *entry, conflict *out) {
  char name[256];
  const char *at = strstr(line, "conflicting types for ");
  if (strncmp(line, appended, sizeof appended - 1) == 0) {
    line += sizeof appended - 1;
    if (at && read_quoted(at, name, sizeof name) && strcmp(name, entry) == 0) {
      out->found = 1;
      snprintf(out->message, sizeof out->message, "%.500s", strstr(line, "error: ") ? strstr(line, "error: ") + 7 : line);
    } else if (strstr(line, "incompatible")) {
      last_quoted(line, out->type, sizeof out->type);
    }
    return;
  }
  const char *note = strstr(line, ": note: previous ");
  if (k->found && !k->where[0] && note && (size_t)(note - line) < sizeof out->where)
    snprintf(out->where, sizeof out->where, "%.*s", (int)(note - line), line);
}

static void read_conflict(const char *log, const char *entry, conflict *k) {
  memset(k, 0, sizeof *k);
  char line[2048];
  for (const char *p = log; *p;) {
    size_t n = strcspn(p, "\n");
    snprintf(line, sizeof line, "%.*s", (int)n, p);
    p += n + (p[n] == '\n');
    read_line(k, line, entry, k);
  }
}

/* ---- comparing types as the call sees them ---- */

/* The words of a C type as the compiler prints it. */
typedef struct ctype {
  int ptr, is_unsigned, is_signed, longs, is_short, is_char, is_int, other;
  const char *real; /* "f32", "f64", "void" */
} ctype;

static void classify(char *word, ctype *t) {
  static const char *const ignored[] = {"const", "volatile", "restrict", "__restrict", "__restrict__", ""};
  for (; *word == '*'; word++) t->ptr++;
  size_t n = strlen(word);
  for (; n && word[n - 1] == '*'; n--) t->ptr++;
  word[n] = '\0';
  for (size_t i = 0; i < sizeof ignored / sizeof *ignored; i++)
    if (strcmp(word, ignored[i]) == 0) return;
  if (!strcmp(word, "unsigned")) t->is_unsigned = 1;
  else if (!strcmp(word, "signed")) t->is_signed = 1;
  else if (!strcmp(word, "long")) t->longs++;
  else if (!strcmp(word, "short")) t->is_short = 1;
  else if (!strcmp(word, "char")) t->is_char = 1;
  else if (!strcmp(word, "int")) t->is_int = 1;
  else if (!strcmp(word, "float")) t->real = "f32";
  else if (!strcmp(word, "double")) t->real = "f64";
  else if (!strcmp(word, "void")) t->real = "void";
  else t->other = 1; /* a struct, _Bool, __int128, a name the compiler did not spell out */
}

/* A C type reduced to what matters to the call: "*f32" for `const float * restrict`, "i64" for
 * `long long int`, "c8" for plain char (signed or not by platform), "?" for anything else. */
static void canonical(const char *type, char *out, size_t len) {
  ctype t = {0};
  char buf[256];
  snprintf(buf, sizeof buf, "%s", type);
  t.other = strpbrk(buf, "([") != NULL; /* function pointers, arrays */
  for (char *save = NULL, *w = strtok_r(buf, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) classify(w, &t);
  int integer = t.is_unsigned || t.is_signed || t.longs || t.is_short || t.is_char || t.is_int;
  char scalar[16];
  if (t.other || (t.real && integer) || (!t.real && !integer)) snprintf(scalar, sizeof scalar, "?");
  else if (t.real) snprintf(scalar, sizeof scalar, "%s", t.real);
  else if (t.is_char && !t.is_unsigned && !t.is_signed) snprintf(scalar, sizeof scalar, "c8");
  else snprintf(scalar, sizeof scalar, "%c%d", t.is_unsigned ? 'u' : 'i', t.is_char ? 8 : t.is_short ? 16 : t.longs ? 64 : 32);
  snprintf(out, len, "%.*s%s", t.ptr < 4 ? t.ptr : 4, "****", scalar);
}

static const char *expected(ht_dtype t) {
  switch (t) {
  case HT_DTYPE_F32: return "f32";
  case HT_DTYPE_F64: return "f64";
  case HT_DTYPE_I32: return "i32";
  case HT_DTYPE_U32: return "u32";
  case HT_DTYPE_I64: return "i64";
  case HT_DTYPE_U64: return "u64";
  case HT_DTYPE_I8: return "i8";
  case HT_DTYPE_U8: return "u8";
  default: return "?";
  }
}

static int param_matches(const ht_spec_arg *a, const char *kernel_param) {
  char got[64];
  canonical(kernel_param, got, sizeof got);
  const char *want = expected(a->type), *g = got;
  if (a->is_buffer || a->is_stop_flag) {
    if (*g++ != '*') return 0;
    if (strcmp(g, "void") == 0) return 1; /* void *: any buffer */
  }
  if (strchr(g, '*') || strchr(g, '?')) return 0;
  return strcmp(g, want) == 0 || (strcmp(g, "c8") == 0 && (a->type == HT_DTYPE_I8 || a->type == HT_DTYPE_U8));
}

/* "void(float *, int)" or "void (*)(float *, int)" -> the parameters' texts; -1 when it is not such a type. */
static int split_params(const char *type, char params[][128], int max) {
  const char *close = strrchr(type, ')'), *open = NULL;
  int depth = 0;
  for (const char *p = close; p && p >= type && !open; p--) {
    if (*p == ')') depth++;
    if (*p == '(' && --depth == 0) open = p;
  }
  if (!open) return -1;
  int n = 0;
  depth = 0;
  const char *start = open + 1;
  for (const char *p = open + 1; p <= close && n < max; p++) {
    if (*p == '(') depth++;
    if (*p == ')' && p != close) depth--;
    if ((*p == ',' && depth == 0) || p == close) {
      const char *e = p;
      while (start < e && *start == ' ') start++;
      while (e > start && e[-1] == ' ') e--;
      snprintf(params[n++], 128, "%.*s", (int)(e - start), start);
      start = p + 1;
    }
  }
  if (n == 1 && (strcmp(params[0], "void") == 0 || !params[0][0])) n = 0;
  return n;
}

/* Whether spec arguments from `a` on match the kernel's parameters from `p` on, to the end of both. */
static int rest_matches(const ht_spec *s, int a, char params[][128], int n, int p) {
  if (s->n_args - a != n - p) return 0;
  for (; a < s->n_args; a++, p++)
    if (!param_matches(&s->args[a], params[p])) return 0;
  return 1;
}

/* The error for a conflict, naming the argument where the kernel's type is known; HT_OK when the
 * conflict is one this check tolerates (const on a pointer's target, the return type). */
static ht_status explain(const ht_kernel *kb, const ht_spec *s, const ht_spec_kernel *k, const conflict *cf) {
  char who[700], params[65][128];
  snprintf(who, sizeof who, "%s%s (%s)", k == &s->reference ? "reference " : "", k->entry,
           cf->where[0] ? cf->where : k->source_path);
  int n = cf->type[0] ? split_params(cf->type, params, 65) : -1;
  if (n < 0) {
    char decl[1024];
    spec_declaration(s, k->entry, decl, sizeof decl);
    return kb_fail(kb, SPEC_AT_TOP, 0, "arguments", NULL, HT_ERR_INVALID,
                   "arguments: %s does not take them as the spec lists them, %s (%s)", who, decl, cf->message);
  }
  int i = 0;
  while (i < n && i < s->n_args && param_matches(&s->args[i], params[i])) i++;
  if (i == n && i == s->n_args) return HT_OK;
  /* at the argument the message names, or at the list when it names none */
  const spec_area area = i < s->n_args ? SPEC_AT_ARG : SPEC_AT_TOP;
  const char *key = i < s->n_args ? NULL : "arguments";
  if (i < n && (i == s->n_args || rest_matches(s, i, params, n, i + 1)))
    return kb_fail(kb, area, i, key, NULL, HT_ERR_INVALID,
                   "arguments: %s takes %d parameters, the spec lists %d: parameter %d ('%s') has no argument%s%s%s",
                   who, n, s->n_args, i + 1, params[i], i < s->n_args ? " (before \"" : "",
                   i < s->n_args ? s->args[i].name : "", i < s->n_args ? "\")" : "");
  if (i < s->n_args && (i == n || rest_matches(s, i + 1, params, n, i)))
    return kb_fail(kb, area, i, key, NULL, HT_ERR_INVALID,
                   "arguments[%d] \"%s\": %s has no parameter for it (it takes %d, the spec lists %d)", i,
                   s->args[i].name, who, n, s->n_args);
  return kb_fail(kb, area, i, key, NULL, HT_ERR_INVALID,
                 "arguments[%d] \"%s\": the spec's %s %s does not match parameter %d of %s, '%s'", i, s->args[i].name,
                 ht_dtype_name(s->args[i].type),
                 s->args[i].is_stop_flag ? "stop flag (volatile int32_t *)" : s->args[i].is_buffer ? "buffer" : "scalar",
                 i + 1, who, params[i]);
}

/* ---- the check, cached ---- */

static ht_status marker_path(const char *text, const ht_defines *defs, const ht_spec_kernel *k, char **path) {
  uint64_t h = ht_hash_str("hetune-c-signature-v1", 0);
  h = ht_hash_str(text, h);
  h = ht_defines_hash(defs, h);
  h = ht_hash_str(k->flags, h);
  h = ht_hash_str(k->source_path, h);
  h = ht_c_toolchain_hash(h);
  char hex[17], *dir = NULL;
  ht_hash_hex(h, hex);
  ht_status st = ht_cache_subdir("c", &dir);
  if (st) return st;
  *path = ht_strfmt("%s/signature-%s.ok", dir, hex);
  free(dir);
  return *path ? HT_OK : ht_error(HT_ERR_NOMEM, "out of memory");
}

/* No compiler, one that does not finish, no cache folder to work in: no verdict, and not the
 * spec's fault. */
static ht_status skipped(ht_status st) {
  if (st == HT_ERR_NOMEM) return st;
  ht_error_clear();
  return HT_OK;
}

/* Compiles the kernel's source followed by the declaration and judges the compiler's output. */
static ht_status run_check(const ht_kernel *kb, const ht_spec *s, const ht_spec_kernel *k, const char *text, const ht_defines *defs,
                           int *passed) {
  ht_source src = {HT_LANG_C, text, k->source_path, k->entry, k->flags};
  char *log = NULL;
  int code = -1;
  ht_status st = ht_c_check_compile(&src, defs, &log, &code);
  *passed = 0;
  conflict cf;
  if (!st) read_conflict(log ? log : "", k->entry, &cf);
  free(log);
  if (st) return skipped(st);
  if (!cf.found) {
    *passed = 1;
    return HT_OK;
  }
  st = explain(kb, s, k, &cf);
  *passed = st == HT_OK;
  return st;
}

static ht_status check_kernel(const ht_kernel *kb, const ht_spec *s, const ht_spec_kernel *k, const ht_value *vars, int with_params) {
  ht_spec_defines defs;
  ht_spec_defines_fill(s, k, vars, with_params, &defs);
  ht_defines d = {defs.n, defs.names, defs.values};
  ht_buf text = {0};
  line_directive(&text, k->source_path);
  ht_buf_append(&text, k->source_text);
  ht_buf_append(&text, "\n");
  line_directive(&text, appended);
  appendix(s, k->entry, &text);
  char *marker = NULL;
  ht_status st = text.failed ? ht_error(HT_ERR_NOMEM, "out of memory") : HT_OK;
  if (!st) st = skipped(marker_path(text.data, &d, k, &marker));
  int passed = 0;
  if (!st && marker && access(marker, F_OK) != 0) {
    st = run_check(kb, s, k, text.data, &d, &passed);
    if (passed) ht_write_file_atomic(marker, "ok\n", 3); /* a cache: failing to write it costs a recheck */
  }
  free(marker);
  ht_buf_free(&text);
  return st;
}

ht_status kb_check_signatures(const ht_kernel *kb, ht_spec *s) {
  if (s->kernel.lang != HT_LANG_C && !(s->has_reference && s->reference.lang == HT_LANG_C)) return HT_OK;
  ht_value *vars = calloc((size_t)s->n_names, sizeof(ht_value));
  if (!vars) return ht_error(HT_ERR_NOMEM, "out of memory");
  ht_spec_bind(s, NULL, NULL, NULL, vars); /* the first value of every parameter */
  ht_status st = HT_OK;
  if (s->kernel.lang == HT_LANG_C) st = check_kernel(kb, s, &s->kernel, vars, 1);
  if (!st && s->has_reference && s->reference.lang == HT_LANG_C) st = check_kernel(kb, s, &s->reference, vars, 0);
  free(vars);
  return st;
}
