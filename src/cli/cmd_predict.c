/* hetune predict SPEC and hetune model predict NAME: a stored model's predicted time for one
 * config, or the configs it predicts fastest (--top N). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "cli/cli.h"

static const char *predict_help =
  "usage: hetune predict SPEC --config A=1,B=2 [--size K=V ...] [options]\n"
  "       hetune predict SPEC --top N [--size K=V ...] [options]\n"
  "       hetune model predict NAME --config A=1,B=2 [--size K=V ...] [options]\n"
  "\n"
  "Predicts the kernel's time for a problem size and config with a stored model (hetune model\n"
  "train), with the model's 80% band for sizes inside or beyond its training sizes. Without\n"
  "--model, the newest model trained on this kernel answers.\n"
  "\n"
  "  --config A=1,..   the config (every parameter)\n"
  "  --top N           instead: the N configs of the space predicted fastest (needs the device)\n"
  "  --device D        device whose limits build the space for --top (default: the model's, else the\n"
  "                    spec's language)\n"
  "  --size K=V        problem size (repeatable; default: the spec's sizes)\n"
  "  --model NAME      which stored model (default: newest for the kernel)\n"
  "  --spec SPEC       (model predict) the spec, when the stored path no longer exists\n"
  "  --db FILE         database (default hetune.db or $HETUNE_DB)\n";

typedef struct found_model {
  ht_model *model;
  char name[256], spec_path[1024], device[64];
  int found;
  ht_status st;
  ht_model_reach reach; /* from the provenance (model train): the training sizes' range and bands */
} found_model;

static int take_model(const ht_model_record *rec, void *ctx) {
  found_model *f = ctx;
  f->found = 1;
  snprintf(f->name, sizeof f->name, "%s", rec->name);
  snprintf(f->spec_path, sizeof f->spec_path, "%s", rec->spec_path ? rec->spec_path : "");
  snprintf(f->device, sizeof f->device, "%s", rec->device_id ? rec->device_id : "");
  f->st = ht_model_load(rec->blob, rec->blob_len, &f->model);
  /* a provenance that is not JSON: predictions without bands, as for models stored before bands */
  if (ht_model_reach_parse(rec->provenance_json, &f->reach)) ht_error_clear();
  if (f->st) ht_error_prefix(f->st, "%s: model '%s' (id %lld): ", "store", rec->name, (long long)rec->id);
  return 1;
}

static int find_model(const cli_args *a, const char *name, const char *kernel, found_model *f) {
  memset(f, 0, sizeof *f);
  ht_store *st;
  if (ht_store_open_readonly(cli_db_path(a), &st)) return cli_fail("predict");
  ht_status s = ht_store_each_model(st, name, name ? NULL : kernel, take_model, f);
  ht_store_close(st);
  if (s || f->st) return cli_fail("predict");
  if (!f->found) {
    if (name) fprintf(stderr, "hetune: predict: no model '%s' in %s\n", name, cli_db_path(a));
    else fprintf(stderr, "hetune: predict: no model of kernel '%s' in %s (train one: hetune model train)\n", kernel,
                 cli_db_path(a));
    return CLI_ERROR;
  }
  return CLI_OK;
}

/* The model's features must be the spec's, in the same order. */
static int check_layout(const ht_model *m, const ht_feature_set *fs, const char *name) {
  int same = ht_model_n_features(m) == ht_features_count(fs);
  for (int i = 0; same && i < ht_features_count(fs); i++)
    same = strcmp(ht_model_feature_name(m, i), ht_features_name(fs, i)) == 0;
  if (same) return CLI_OK;
  fprintf(stderr, "hetune: predict: model '%s' was trained on other features (%d) than the spec gives (%d): "
          "was the spec changed? train the model again\n", name, ht_model_n_features(m), ht_features_count(fs));
  return CLI_ERROR;
}

static void print_seconds(double s) {
  if (s < 1e-3) printf("%.3f us", s * 1e6);
  else if (s < 1) printf("%.4f ms", s * 1e3);
  else printf("%.4f s", s);
}

/* ", 80% band A-B" for a prediction t at problem work w; nothing without a band. No band reaches
 * below the roofline floor (floor, 0 without one): nothing runs faster than it. */
static void print_band(const found_model *f, double w, double t, double floor) {
  int inside;
  const ht_band *b = ht_model_reach_band(&f->reach, w, &inside);
  if (!b) return;
  double lo = fmax(b->lo * t, floor);
  printf(", %.0f%% band ", 100 * b->coverage);
  print_seconds(lo);
  printf(" - ");
  print_seconds(fmax(b->hi * t, lo));
  printf(inside ? " inside the training sizes" : " beyond the training sizes");
}

static double problem_work(const ht_spec *spec) {
  double w = 1;
  for (int i = 0; i < ht_spec_size_count(spec); i++) w *= (double)ht_spec_size_value(spec, i);
  return w;
}

static int predict_one(const cli_args *a, ht_spec *spec, ht_feature_set *fs, const found_model *f) {
  int64_t *sizes = calloc((size_t)ht_spec_size_count(spec) + 1, sizeof *sizes);
  ht_value *params = calloc((size_t)ht_spec_param_count(spec) + 1, sizeof *params);
  double *x = calloc((size_t)ht_features_count(fs) + 1, sizeof *x);
  int rc = sizes && params && x ? CLI_OK : cli_fail("predict");
  for (int i = 0; i < ht_spec_size_count(spec) && !rc; i++) sizes[i] = ht_spec_size_value(spec, i);
  if (!rc && ht_features_parse_config(spec, cli_opt(a, "config"), params, "--config")) rc = cli_usage_error("predict", "%s", ht_last_error());
  if (!rc && ht_features_compute(fs, sizes, params, x)) rc = cli_fail("predict");
  if (!rc) {
    char problem[512];
    ht_spec_problem_key(spec, problem, sizeof problem);
    double t = ht_model_predict(f->model, x);
    printf("%s %s %s: predicted ", ht_spec_name(spec), problem, cli_opt(a, "config"));
    print_seconds(t);
    printf(" (model '%s', %s", f->name, ht_model_kind(f->model));
    /* At the floor the model's error band does not apply: the time is at least this, no more known. */
    double floor = ht_model_roofline_floor(f->model, x);
    if (floor > 0 && t <= floor) printf(", at the roofline floor: the device cannot read the bytes faster");
    else print_band(f, problem_work(spec), t, floor);
    printf(")\n");
  }
  free(sizes);
  free(params);
  free(x);
  return rc;
}

/* ---- --top N: every valid config of the space, ranked by predicted time ---- */

typedef struct top_ctx {
  const ht_spec *spec;
  ht_space *space;
  ht_feature_set *fs;
  const ht_model *model;
  double *x;
  ht_value *params;
  int64_t *sizes;
  double *pred;
  ht_config *cfg;
  size_t n, cap;
  ht_status st;
} top_ctx;

static int top_visit(const ht_config *c, void *ctx) {
  top_ctx *t = ctx;
  if (t->n == t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 1024;
    double *p = realloc(t->pred, cap * sizeof *p);
    if (p) t->pred = p;
    ht_config *g = realloc(t->cfg, cap * sizeof *g);
    if (g) t->cfg = g;
    if (!p || !g) return (t->st = ht_error(HT_ERR_NOMEM, "out of memory")), 1;
    t->cap = cap;
  }
  for (int i = 0; i < ht_spec_param_count(t->spec); i++) t->params[i] = ht_spec_param_value(t->spec, i, c->idx[i]);
  if ((t->st = ht_features_compute(t->fs, t->sizes, t->params, t->x))) return 1;
  t->pred[t->n] = ht_model_predict(t->model, t->x);
  t->cfg[t->n++] = *c;
  return 0;
}

static void print_top(const top_ctx *t, long long n_top, const found_model *f) {
  char problem[512], cfg[1024];
  ht_spec_problem_key(t->spec, problem, sizeof problem);
  printf("%s %s: the %lld of %zu configs predicted fastest (model '%s'", ht_spec_name(t->spec), problem,
         n_top < (long long)t->n ? n_top : (long long)t->n, t->n, f->name);
  int inside;
  const ht_band *b = ht_model_reach_band(&f->reach, problem_work(t->spec), &inside);
  if (b) printf("; each within %.3f-%.3f x its prediction at %.0f%%", b->lo, b->hi, 100 * b->coverage);
  printf(")\n");
  char *used = calloc(t->n + 1, 1);
  for (long long k = 0; used && k < n_top && k < (long long)t->n; k++) {
    size_t best = t->n;
    for (size_t i = 0; i < t->n; i++)
      if (!used[i] && (best == t->n || t->pred[i] < t->pred[best])) best = i;
    used[best] = 1;
    ht_config_format(t->space, &t->cfg[best], cfg, sizeof cfg);
    printf("  %3lld  ", k + 1);
    print_seconds(t->pred[best]);
    printf("  %s\n", cfg);
  }
  free(used);
}

static int predict_top(const cli_args *a, ht_spec *spec, ht_feature_set *fs, const found_model *f, long long n_top) {
  const char *dev_id = cli_opt(a, "device") ? cli_opt(a, "device") : f->device[0] ? f->device : cli_default_device(spec);
  ht_device *dev;
  ht_status st = ht_device_open(dev_id, &dev);
  if (st) return cli_fail_device("predict --top", st);
  top_ctx t = {.spec = spec, .fs = fs, .model = f->model};
  t.x = calloc((size_t)ht_features_count(fs) + 1, sizeof *t.x);
  t.params = calloc((size_t)ht_spec_param_count(spec) + 1, sizeof *t.params);
  t.sizes = calloc((size_t)ht_spec_size_count(spec) + 1, sizeof *t.sizes);
  for (int i = 0; t.sizes && i < ht_spec_size_count(spec); i++) t.sizes[i] = ht_spec_size_value(spec, i);
  st = t.x && t.params && t.sizes ? ht_spec_build_space(spec, ht_device_info_get(dev), &t.space) : HT_ERR_NOMEM;
  if (!st) st = ht_space_enumerate(t.space, top_visit, &t);
  if (!st) st = t.st;
  int rc = st ? cli_fail("predict --top") : CLI_OK;
  if (!rc) print_top(&t, n_top, f);
  ht_space_destroy(t.space);
  ht_device_close(dev);
  free(t.x);
  free(t.params);
  free(t.sizes);
  free(t.pred);
  free(t.cfg);
  return rc;
}

/* name: the model (model predict) or NULL (predict SPEC: newest of the kernel or --model). */
static int predict_main(int argc, char **argv, int by_name) {
  static const char *const known[] = {"config", "top", "device", "size", "model", "spec", "db", NULL};
  if (cli_wants_help(argc, argv)) {
    fputs(predict_help, stdout);
    return CLI_OK;
  }
  cli_args a;
  long long top = 0;
  int rc = cli_parse(argc, argv, "predict", known, NULL, &a);
  if (!rc && cli_opt(&a, "top")) rc = cli_integer_in("predict", "--top", cli_opt(&a, "top"), 1, 1000000, &top);
  if (!rc && a.n_pos < 1) rc = cli_usage_error("predict", by_name ? "expected a model NAME" : "expected SPEC");
  if (!rc && !top && !cli_opt(&a, "config")) rc = cli_usage_error("predict", "expected --config A=1,B=2 or --top N");
  if (rc) return rc;
  found_model f = {0};
  ht_spec *spec = NULL;
  if (by_name) rc = find_model(&a, a.pos[0], NULL, &f);
  else if (!(rc = cli_load_spec(&a, a.pos[0], &spec))) rc = find_model(&a, cli_opt(&a, "model"), ht_spec_name(spec), &f);
  const char *spec_path = cli_opt(&a, "spec") ? cli_opt(&a, "spec") : f.spec_path;
  if (!rc && !spec) rc = cli_load_spec(&a, spec_path, &spec);
  ht_feature_set *fs = NULL;
  if (!rc && ht_features_create(spec, NULL, &fs)) rc = cli_fail("predict");
  if (!rc) rc = check_layout(f.model, fs, f.name);
  if (!rc) rc = top ? predict_top(&a, spec, fs, &f, top) : predict_one(&a, spec, fs, &f);
  ht_features_destroy(fs);
  ht_spec_destroy(spec);
  if (f.found) ht_model_destroy(f.model);
  return rc;
}

int cmd_predict(int argc, char **argv) { return predict_main(argc, argv, 0); }
int cmd_model_predict(int argc, char **argv) { return predict_main(argc, argv, 1); }
