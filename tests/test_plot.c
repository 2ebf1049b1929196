/* The command's plots: tick placement and labels, well-formed SVG whatever the data (NaN, values
 * off the axis, names with markup characters), and the --plot options of show, strategy-bench,
 * model eval and gemm writing the series they name. */
#define _GNU_SOURCE /* nftw */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <math.h>

#include "cli/plot.h"
#include "cli_test_util.h"

static char dir[64];

static const char *in_dir(const char *name) {
  static char buf[8][320];
  static int k;
  char *p = buf[k++ % 8];
  snprintf(p, 320, "%s/%s", dir, name);
  return p;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *s = malloc(1 << 22);
  size_t n = s ? fread(s, 1, (1 << 22) - 1, f) : 0;
  fclose(f);
  if (s) s[n] = 0;
  return s;
}

/* ---- a small XML well-formedness check: nesting, quoted attributes, entities ---- */

static int entity_ok(const char *s) {
  static const char *const names[] = {"lt;", "gt;", "amp;", "apos;", "quot;"};
  for (int i = 0; i < 5; i++)
    if (strncmp(s + 1, names[i], strlen(names[i])) == 0) return 1;
  return s[1] == '#';
}

/* One tag at s (after '<'): its name pushed or popped; the end of the tag, or NULL. */
static const char *tag(const char *s, char stack[][32], int *depth, char *why) {
  int closing = *s == '/';
  if (*s == '?') return (s = strstr(s, "?>")) ? s + 2 : NULL;
  s += closing;
  char name[32];
  int n = 0;
  while (isalnum((unsigned char)*s) || *s == ':' || *s == '-') name[n < 31 ? n++ : n] = *s, s++;
  name[n] = 0;
  if (!n) return sprintf(why, "a tag without a name"), NULL;
  while (*s && *s != '>' && !(s[0] == '/' && s[1] == '>')) { /* attributes: name='...' */
    while (isspace((unsigned char)*s)) s++;
    if (*s == '>' || (s[0] == '/' && s[1] == '>')) break;
    while (isalnum((unsigned char)*s) || *s == '-' || *s == ':') s++;
    if (*s != '=' || (s[1] != '\'' && s[1] != '"')) return sprintf(why, "<%s>: an attribute without a quoted value", name), NULL;
    char q = s[1];
    for (s += 2; *s && *s != q; s++)
      if (*s == '<' || (*s == '&' && !entity_ok(s))) return sprintf(why, "<%s>: '%c' in an attribute", name, *s), NULL;
    if (!*s) return NULL;
    s++;
  }
  if (!*s) return sprintf(why, "<%s> not closed", name), NULL;
  int empty = *s == '/';
  if (closing) {
    if (!*depth || strcmp(stack[*depth - 1], name)) return sprintf(why, "</%s> closes nothing open", name), NULL;
    (*depth)--;
  } else if (!empty) {
    if (*depth == 64) return sprintf(why, "nested too deep"), NULL;
    snprintf(stack[(*depth)++], 32, "%s", name);
  }
  return s + (empty ? 2 : 1);
}

/* 1 when the file is well-formed XML with an <svg> root; else 0 and why. */
static int xml_ok(const char *path, char *why) {
  char *doc = slurp(path), stack[64][32];
  int depth = 0, roots = 0, ok = doc != NULL;
  if (!doc) sprintf(why, "cannot read %s", path);
  for (const char *s = doc; ok && *s;) {
    if (*s == '&' && !entity_ok(s)) ok = 0, sprintf(why, "a bare '&'");
    else if (*s == '<') {
      if (!depth && s[1] != '?' && s[1] != '/') roots++;
      if (!depth && roots == 1 && s[1] != '?' && strncmp(s + 1, "svg", 3)) ok = 0, sprintf(why, "the root is not <svg>");
      s = ok ? tag(s + 1, stack, &depth, why) : s;
      ok = ok && s != NULL;
      continue;
    } else if (*s == '>') ok = 0, sprintf(why, "a bare '>'");
    s++;
  }
  if (ok && (depth || roots != 1)) ok = 0, sprintf(why, "%d elements left open, %d roots", depth, roots);
  free(doc);
  return ok;
}

/* The C check, and python3's parser where python3 is installed. */
static void assert_svg(const char *path) {
  char why[256] = "";
  if (!xml_ok(path, why)) fail_msg("%s is not well-formed: %s", path, why);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' %s 2>/dev/null", path);
  int rc = system(cmd);
  if (WIFEXITED(rc) && WEXITSTATUS(rc) != 127 && WEXITSTATUS(rc) != 0) fail_msg("python3's parser rejects %s", path);
}

static void assert_contains(const char *path, const char *needle) {
  char *s = slurp(path);
  assert_non_null(s);
  if (!strstr(s, needle)) fail_msg("%s lacks '%s'", path, needle);
  free(s);
}

/* ---- ticks ---- */

static void expect_ticks(double lo, double hi, int log, const double *want, int n) {
  double t[64];
  int got = plot_ticks(lo, hi, log, t, 64);
  if (got != n) fail_msg("ticks of [%g, %g]%s: %d, expected %d", lo, hi, log ? " (log)" : "", got, n);
  for (int i = 0; i < n; i++)
    if (fabs(t[i] - want[i]) > 1e-9 * fmax(1, fabs(want[i]))) fail_msg("tick %d of [%g, %g]: %g, not %g", i, lo, hi, t[i], want[i]);
}

static void test_linear_ticks(void **state) {
  (void)state;
  expect_ticks(0, 1, 0, (double[]){0, 0.2, 0.4, 0.6, 0.8, 1}, 6);
  /* strategy-bench's budget from 1.1 to 13.4 s: whole seconds, never 2.37 / 7.89 */
  expect_ticks(1.1, 13.4, 0, (double[]){2, 4, 6, 8, 10, 12}, 6);
  expect_ticks(-0.5, 1, 0, (double[]){-0.4, -0.2, 0, 0.2, 0.4, 0.6, 0.8, 1}, 8);
  expect_ticks(0, 450, 0, (double[]){0, 100, 200, 300, 400}, 5);
  double lo = -0.93, hi = 0.98;
  plot_nice_range(&lo, &hi, 0);
  assert_true(fabs(lo + 1) < 1e-12 && fabs(hi - 1) < 1e-12);
  lo = hi = 3; /* one value: still an axis */
  plot_nice_range(&lo, &hi, 0);
  assert_true(lo < 3 && hi > 3);
}

static void test_log_ticks(void **state) {
  (void)state;
  expect_ticks(0.01, 1000, 1, (double[]){0.01, 0.1, 1, 10, 100, 1000}, 6);
  expect_ticks(0.5, 50, 1, (double[]){0.5, 1, 2, 5, 10, 20, 50}, 7); /* two decades: 2 and 5 as well */
  expect_ticks(1e-6, 1e6, 1, (double[]){1e-6, 1e-4, 1e-2, 1, 1e2, 1e4, 1e6}, 7); /* many: every other decade */
  double m[16];
  assert_int_equal(plot_minor_ticks(1, 10, m, 16), 8);
  assert_true(fabs(m[0] - 2) < 1e-12 && fabs(m[7] - 9) < 1e-12);
  double lo = 0.03, hi = 150;
  plot_nice_range(&lo, &hi, 1);
  assert_true(fabs(lo - 0.02) < 1e-12 && fabs(hi - 200) < 1e-9);
}

static void expect_label(double v, const double *t, int n, int log, const char *want) {
  char buf[32];
  plot_tick_label(v, t, n, log, buf, sizeof buf);
  if (strcmp(buf, want)) fail_msg("label of %g: '%s', expected '%s'", v, buf, want);
}

static void test_tick_labels(void **state) {
  (void)state;
  const double a[] = {-0.5, 0, 0.5, 1}, b[] = {0, 0.2, 0.4}, c[] = {0, 100, 200}, d[] = {0, 2e6, 4e6};
  expect_label(-0.5, a, 4, 0, "-0.5");
  expect_label(0, a, 4, 0, "0");
  expect_label(1, a, 4, 0, "1.0");
  expect_label(0.4, b, 3, 0, "0.4");
  expect_label(200, c, 3, 0, "200");
  expect_label(4e6, d, 3, 0, "4e6");
  expect_label(1e-5, NULL, 0, 1, "1e-5");
  expect_label(0.002, NULL, 0, 1, "0.002");
  expect_label(1000, NULL, 0, 1, "1000");
  const char *unit;
  assert_true(plot_time_unit(0.02, &unit) == 1e3 && strcmp(unit, "ms") == 0);
  assert_true(plot_time_unit(3e-6, &unit) == 1e6 && strcmp(unit, "µs") == 0);
}

/* ---- figures ---- */

/* Every kind of series, with NaN, values far off the axis and non-positive values on log axes:
 * well-formed, clipped to the frame, no coordinate run away, names escaped. */
static void test_figure_well_formed(void **state) {
  (void)state;
  double x[5] = {1, 2, 3, 4, 5}, y[5] = {0.5, NAN, 1e9, -3, 0.8}, lo[5] = {0.4, 0.4, 0.4, 0.4, 0.4},
         hi[5] = {0.9, 0.9, 0.9, 0.9, 0.9}, bars[3] = {10, 400, NAN};
  plot_series s[] = {
    {"a <b> & 'c'", PLOT_LINE, 5, x, y, lo, hi, PLOT_AUTO, PLOT_AUTO, PLOT_AUTO, 0},
    {"best", PLOT_STEP, 5, x, y, NULL, NULL, PLOT_AUTO, PLOT_AUTO, PLOT_NONE, 0},
    {"points", PLOT_POINTS, 5, x, y, NULL, NULL, PLOT_AUTO, PLOT_AUTO, PLOT_AUTO, 0},
    {"failed", PLOT_RUG, 2, x, NULL, NULL, NULL, 1, 0, PLOT_NONE, 0},
    {NULL, PLOT_LINE, 5, x, x, NULL, NULL, PLOT_GREY, 0, PLOT_NONE, 1},
  };
  plot_series b[] = {{"tuned", PLOT_BARS, 3, NULL, bars, NULL, NULL, 0, PLOT_AUTO, PLOT_NONE, 0},
                     {"vendor", PLOT_BARS, 3, NULL, bars, NULL, NULL, 1, PLOT_AUTO, PLOT_NONE, 0}};
  const char *cats[] = {"1×2×3", "4×5×6", "7×8×9"}, *groups[] = {"square", "square", "resnet"};
  plot_panel p[] = {
    {"linear", {"x (s)", 0, NAN, NAN}, {"y", 0, 0, 1}, 5, s, 0, NULL, NULL},
    {"log", {"x (s)", 1, NAN, NAN}, {"y (ms)", 1, NAN, NAN}, 5, s, 0, NULL, NULL},
    {"bars", {"shape", 0, NAN, NAN}, {"GFLOP/s", 1, NAN, NAN}, 2, b, 3, cats, groups},
  };
  plot_figure f = {"title & <more>", "a note\nand a second line", 3, 2, p, 0};
  const char *path = in_dir("figure.svg");
  assert_int_equal(plot_write(path, &f), 0);
  assert_svg(path);
  assert_contains(path, "a &lt;b&gt; &amp; &apos;c&apos;");
  assert_contains(path, "clip-path='url(#c0)'");
  assert_contains(path, "clip-path='url(#c2)'");
  assert_contains(path, "resnet");
  char *doc = slurp(path);
  assert_non_null(doc);
  for (const char *s = doc; *s; s++) /* 1e9 on a 0..1 axis is clamped, never a 10-digit pixel */
    if (isdigit((unsigned char)*s) && strspn(s, "0123456789") > 6) fail_msg("a run-away coordinate: %.20s", s);
  assert_null(strstr(doc, "nan"));
  assert_null(strstr(doc, "inf"));
  free(doc);
  assert_int_equal(plot_write(in_dir("no/such/dir.svg"), &f), -1);
}

/* Every strategy of strategy-bench (nine, and the random-search line) gets a colour of its own. */
static void test_series_colours_distinct(void **state) {
  (void)state;
  enum { N = 10 };
  double x[2] = {1, 2}, y[2] = {1, 2};
  static const char *const names[N] = {"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9"};
  plot_series s[N];
  for (int i = 0; i < N; i++) s[i] = (plot_series){names[i], PLOT_LINE, 2, x, y, NULL, NULL, PLOT_AUTO, PLOT_AUTO, PLOT_NONE, 0};
  plot_panel p = {"ten", {"x", 0, NAN, NAN}, {"y", 0, NAN, NAN}, N, s, 0, NULL, NULL};
  plot_figure f = {"colours", NULL, 1, 1, &p, 0};
  const char *path = in_dir("colours.svg");
  assert_int_equal(plot_write(path, &f), 0);
  char *doc = slurp(path), seen[N][8];
  assert_non_null(doc);
  int n = 0;
  const char *line = "<path fill='none' stroke='"; /* a series' line, as plot_svg.c draws it */
  for (const char *c = doc; (c = strstr(c, line)) != NULL && n < N; c++) {
    memcpy(seen[n], c + strlen(line), 7), seen[n][7] = 0;
    for (int j = 0; j < n; j++)
      if (strcmp(seen[j], seen[n]) == 0) fail_msg("series %d and %d share the colour %s", j, n, seen[n]);
    n++;
  }
  assert_int_equal(n, N);
  free(doc);
}

/* ---- the commands' --plot options ---- */

static void tune_recorded(run_out *r) {
  run(r, "tune", in_dir("k.json"), "--db", in_dir("p.db"), "--quiet", "--strategy", "brute_force", "--in-process");
  if (r->rc) fail_msg("tune: exit %d\n%s%s", r->rc, r->out, r->err);
}

static void test_show_plot(void **state) {
  (void)state;
  run_out *r = malloc(sizeof *r);
  tune_recorded(r);
  const char *svg = in_dir("progress.svg"), *db = in_dir("p.db");
  run(r, "show", "kplot", "--db", db, "--plot", svg);
  if (r->rc || !strstr(r->out, "plot: ")) fail_msg("show --plot: exit %d\n%s%s", r->rc, r->out, r->err);
  assert_svg(svg);
  assert_contains(svg, "best so far");
  assert_contains(svg, ">evaluation<");
  assert_contains(svg, "failed (1)"); /* U=3 does not compile */
  run(r, "show", "kplot", "--db", db, "--plot", svg, "--plot-x", "time", "--session", "1");
  if (r->rc) fail_msg("show --plot-x time: exit %d\n%s%s", r->rc, r->out, r->err);
  assert_contains(svg, "time since the session started (s)");
  run(r, "show", "--db", db, "--plot", svg);
  expect_error(r, 2, "--plot");
  run(r, "show", "kplot", "--db", db, "--plot", svg, "--plot-x", "wall");
  expect_error(r, 2, "--plot-x wall");
  run(r, "show", "kplot", "--db", db, "--plot", svg, "--session", "99");
  expect_error(r, 2, "--session 99");
  run(r, "show", "kplot", "--db", db, "--plot", in_dir("missing/p.svg"));
  expect_error(r, 1, "missing/p.svg");
  free(r);
}

static void test_strategy_bench_plot(void **state) {
  (void)state;
  run_out *r = malloc(sizeof *r);
  tune_recorded(r);
  const char *csv = in_dir("kplot.csv"), *plots = in_dir("plots");
  run(r, "export", "--format", "csv", "--kernel", "kplot", "--db", in_dir("p.db"), "--output", csv);
  assert_int_equal(r->rc, 0);
  run(r, "strategy-bench", csv, "--seeds", "3", "--strategies", "random,brute_force", "--plot", plots, "--quiet");
  if (r->rc) fail_msg("strategy-bench: exit %d\n%s%s", r->rc, r->out, r->err);
  const char *files[] = {"plots/overall.svg", "plots/overall-panels.svg", "plots/kplot.svg", "plots/kplot-panels.svg"};
  for (int i = 0; i < 4; i++) {
    assert_svg(in_dir(files[i]));
    assert_contains(in_dir(files[i]), "random (");
    assert_contains(in_dir(files[i]), "brute_force (");
  }
  assert_contains(in_dir("plots/overall.svg"), "random search");
  assert_contains(in_dir("plots/kplot.svg"), "time (s)");
  free(r);
}

static void test_model_eval_plot(void **state) {
  (void)state;
  run_out *r = malloc(sizeof *r);
  const char *svg = in_dir("eval.svg");
  run(r, "model", "eval", HT_SOURCE_DIR "/examples/gemm/gemm_c.json", "--data", HT_SOURCE_DIR "/data/datasets/gemm_c.csv",
      "--kinds", "linear,knn", "--folds", "3", "--plot", svg);
  if (r->rc || !strstr(r->out, "80% band")) fail_msg("model eval --plot: exit %d\n%s%s", r->rc, r->out, r->err);
  assert_svg(svg);
  const char *want[] = {"linear: CV error", "knn: CV error", "y = x", "3-fold cross-validation", "hold-out: 2 largest sizes",
                        "80% band, interpolation", "80% band, extrapolation", "measured time (ms)"};
  for (int i = 0; i < 8; i++) assert_contains(svg, want[i]);
  run(r, "model", "eval", HT_SOURCE_DIR "/examples/gemm/gemm_c.json", "--data", HT_SOURCE_DIR "/data/datasets/gemm_c.csv",
      "--folds", "0", "--holdout", "0", "--plot", svg);
  expect_error(r, 2, "--plot");
  free(r);
}

static void test_gemm_plot(void **state) {
  (void)state;
  run_out *r = malloc(sizeof *r);
  const char *svg = in_dir("gemm.svg");
  run(r, "gemm", "64", "48", "32", "--budget", "6", "--db", in_dir("g.db"), "--out", in_dir("gemm"), "--quiet",
      "--plot", svg);
  if (r->rc) fail_msg("gemm --plot: exit %d\n%s%s", r->rc, r->out, r->err);
  assert_svg(svg);
  assert_contains(svg, "hetune (tuned)");
  assert_contains(svg, "64×48×32");
  assert_contains(svg, "GFLOP/s");
  assert_contains(svg, "naive");
  free(r);
}

static int setup(void **state) {
  (void)state;
  snprintf(dir, sizeof dir, "/tmp/ht_plot_XXXXXX");
  if (!mkdtemp(dir)) return -1;
  FILE *f = fopen(in_dir("ref.c"), "w");
  if (!f) return -1;
  fputs("void kref(float *o, const float *a, int n){for(int i=0;i<n;i++)o[i]=a[i]*2;}\n", f);
  fclose(f);
  /* U = 3 does not compile: a failed evaluation for the progress plot */
  if (!(f = fopen(in_dir("k.c"), "w"))) return -1;
  fputs("#if U == 3\n#error U 3\n#endif\nvoid k(float *o, const float *a, int n){for(int r=0;r<U;r++)"
        "for(int i=0;i<n;i++)o[i]=a[i]*2;}\n", f);
  fclose(f);
  if (!(f = fopen(in_dir("k.json"), "w"))) return -1;
  fputs("{\"name\": \"kplot\", \"language\": \"c\", \"source\": \"k.c\", \"entry\": \"k\", \"sizes\": {\"N\": 4096},\n"
        " \"arguments\": [{\"name\": \"o\", \"type\": \"float\", \"buffer\": \"N\", \"access\": \"write\"},\n"
        "   {\"name\": \"a\", \"type\": \"float\", \"buffer\": \"N\"}, {\"name\": \"n\", \"type\": \"int32\", \"value\": \"N\"}],\n"
        " \"parameters\": {\"U\": [1, 2, 3, 4, 8]},\n"
        " \"reference\": {\"language\": \"c\", \"source\": \"ref.c\", \"entry\": \"kref\"}}\n", f);
  fclose(f);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  rm_tree(dir);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_linear_ticks),         cmocka_unit_test(test_log_ticks),
    cmocka_unit_test(test_tick_labels),          cmocka_unit_test(test_figure_well_formed),
    cmocka_unit_test(test_series_colours_distinct),
    cmocka_unit_test(test_show_plot),            cmocka_unit_test(test_strategy_bench_plot),
    cmocka_unit_test(test_model_eval_plot),      cmocka_unit_test(test_gemm_plot),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
