/* hetune model kinds|train|eval|show|predict and hetune predict: execution-time models trained on
 * stored measurements, kept in the database with their provenance. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const char *model_help =
  "usage: hetune model kinds|train|eval|show|predict ...\n"
  "\n"
  "  kinds                     list the model kinds and their default target\n"
  "  train SPEC --data F ...   fit a model to a kernel's measurements and store it (--db)\n"
  "  eval SPEC --data F ...    cross-validation, size hold-out, ranking and latency of model kinds\n"
  "  show [NAME]               list stored models, or one model's provenance and features\n"
  "  predict NAME --size K=V --config A=1,B=2   predicted time of one config\n"
  "\n"
  "Run 'hetune model COMMAND --help' for options; docs/prediction.md explains features and metrics.\n";

/* ---- shared: a dataset from --data / --data-db ---- */

static int open_dataset(const cli_args *a, const char *cmd, ht_feature_set *fs, ht_dataset **d) {
  const char *paths[64];
  int n = 0;
  for (int i = 0; i < a->n_opt && n < 64; i++)
    if (strcmp(a->opt_name[i], "data") == 0) paths[n++] = a->opt_value[i];
  const char *db = cli_opt(a, "data-db");
  if (!n && !db) return cli_usage_error(cmd, "expected --data FILE.csv (repeatable) or --data-db DB");
  if (n) return ht_dataset_from_csv(fs, paths, n, cli_opt(a, "device"), d) ? cli_fail(cmd) : CLI_OK;
  ht_store *st;
  if (ht_store_open_readonly(db, &st)) return cli_fail(cmd);
  int rc = ht_dataset_from_store(fs, st, cli_opt(a, "device"), d) ? cli_fail(cmd) : CLI_OK;
  ht_store_close(st);
  return rc;
}

int cli_model_dataset(const cli_args *a, const char *cmd, ht_spec **spec, ht_feature_set **fs, ht_dataset **d) {
  *spec = NULL;
  *fs = NULL;
  *d = NULL;
  if (a->n_pos < 1) return cli_usage_error(cmd, "expected SPEC");
  int rc = cli_load_spec(a, a->pos[0], spec);
  if (rc) return rc;
  if (ht_features_create(*spec, NULL, fs)) rc = cli_fail(cmd);
  if (!rc) rc = open_dataset(a, cmd, *fs, d);
  if (!rc && cli_opt(a, "bandwidth") && ht_bandwidth_load(cli_opt(a, "bandwidth"), &(*d)->bandwidth)) rc = cli_fail(cmd);
  if (rc) {
    ht_dataset_destroy(*d);
    *d = NULL;
    ht_features_destroy(*fs);
    ht_spec_destroy(*spec);
    *fs = NULL;
    *spec = NULL;
  }
  return rc;
}

/* ---- kinds ---- */

static int model_kinds(void) {
  for (int i = 0; i < ht_model_kind_count(); i++) {
    const ht_model_ops *k = ht_model_kind_at(i);
    printf("  %-8s  target=%-4s  %s\n", k->name, k->default_target, k->summary);
  }
  printf("  %-8s  %-11s  the kind with the lowest error on an inner validation of the training data\n", "auto", "");
  static const char *const optional[] = {"gbt", "svr"}; /* kinds a build may leave out */
  for (int i = 0; i < 2; i++)
    if (ht_model_kind_check(optional[i]) == HT_ERR_UNSUPPORTED) printf("  %-8s  %-11s  %s\n", optional[i], "", ht_last_error());
  return CLI_OK;
}

/* ---- train ---- */

static const char *train_help =
  "usage: hetune model train SPEC (--data FILE.csv ... | --data-db DB) [options]\n"
  "\n"
  "Fits a model to every successful measurement of the spec's kernel and stores it in the database\n"
  "with its provenance (data files, rows, problem sizes, training error) and its 80% prediction\n"
  "bands (5-fold cross-validation inside the training sizes; the largest sizes predicted from the\n"
  "others beyond them). Training again under the same name keeps the older versions; the newest\n"
  "answers.\n"
  "\n"
  "  --kind K          model kind, or auto to pick by validation (default gbt, or auto in a\n"
  "                    build without XGBoost; 'hetune model kinds')\n"
  "  --options K=V,..  model options (wrapper: target=log|rate|time, route=none|decade)\n"
  "  --name NAME       stored name (default SPEC-name.KIND)\n"
  "  --device D        only rows measured on device D\n"
  "  --bandwidth F     the device's bandwidth curve (CSV of 'hetune bandwidth'): the model keeps a\n"
  "                    roofline floor, no prediction faster than the row's bytes read at that speed\n"
  "  --seed N          seed (default 1)\n"
  "  --db FILE         database to store the model in (default hetune.db or $HETUNE_DB)\n";

enum { BAND_COVERAGE_PCT = 80 };

/* [lo, hi] of a band, or null without one. */
static json_t *band_json(const ht_band *b) {
  if (!b->n) return json_null();
  json_t *r = json_array();
  json_array_append_new(r, json_real(b->lo));
  json_array_append_new(r, json_real(b->hi));
  return r;
}

static char *provenance(const cli_args *a, const ht_dataset *d, const ht_accuracy *fit, const ht_band *interp,
                        const ht_band *extrap) {
  json_t *p = json_object(), *src = json_array();
  for (int i = 0; i < a->n_opt; i++)
    if (strcmp(a->opt_name[i], "data") == 0 || strcmp(a->opt_name[i], "data-db") == 0)
      json_array_append_new(src, json_string(a->opt_value[i]));
  double lo = INFINITY, hi = 0;
  for (int i = 0; i < d->n_rows; i++) lo = fmin(lo, d->work[i]), hi = fmax(hi, d->work[i]);
  json_object_set_new(p, "sources", src);
  json_object_set_new(p, "rows", json_integer(d->n_rows));
  json_object_set_new(p, "measurements", json_integer(d->n_measured));
  json_object_set_new(p, "problems", json_integer(d->n_groups));
  json_object_set_new(p, "work_min", json_real(lo));
  json_object_set_new(p, "work_max", json_real(hi));
  json_object_set_new(p, "train_mape_mean", json_real(fit->mape_mean));
  json_object_set_new(p, "train_mape_max", json_real(fit->mape_max));
  json_object_set_new(p, "device_filter", cli_opt(a, "device") ? json_string(cli_opt(a, "device")) : json_null());
  json_object_set_new(p, "bandwidth", cli_opt(a, "bandwidth") ? json_string(cli_opt(a, "bandwidth")) : json_null());
  /* prediction bands (ht_model_bands), as ratios measured / predicted */
  json_object_set_new(p, "band_coverage", json_real(interp->coverage));
  json_object_set_new(p, "band_interp", band_json(interp));
  json_object_set_new(p, "band_extrap", band_json(extrap));
  char *text = json_dumps(p, JSON_COMPACT);
  json_decref(p);
  return text;
}

/* One line on the model's roofline floor, when it has one. */
static void print_roofline(const ht_model *m) {
  double k;
  int points;
  if (ht_model_roofline(m, &k, &points))
    printf("  roofline floor: bytes / (%.3g x bandwidth at that working set), %d-point bandwidth curve\n", k, points);
}

static int store_model(const cli_args *a, const ht_spec *spec, const ht_model *m, const ht_dataset *d,
                       const char *name, const ht_band *interp, const ht_band *extrap) {
  ht_buf blob = {0};
  ht_accuracy fit;
  double *pred = malloc((size_t)d->n_rows * sizeof *pred);
  for (int i = 0; pred && i < d->n_rows; i++) pred[i] = ht_model_predict(m, d->x + (size_t)i * d->n_features);
  if (!pred || ht_accuracy_compute(d, pred, &fit) || ht_model_save(m, &blob)) {
    free(pred);
    ht_buf_free(&blob);
    return cli_fail("model train");
  }
  char *prov = provenance(a, d, &fit, interp, extrap);
  ht_model_record rec = {.name = name, .kind = ht_model_kind(m), .options = ht_model_options(m),
                         .kernel_name = ht_spec_name(spec), .source_hash = ht_spec_identity(spec), .device_id = cli_opt(a, "device"),
                         .spec_path = ht_spec_path(spec), .n_rows = d->n_rows, .provenance_json = prov,
                         .blob = blob.data, .blob_len = blob.len};
  ht_store *st;
  int64_t id;
  int rc = ht_store_open(cli_db_path(a), &st) ? cli_fail("model train") : CLI_OK;
  if (!rc) {
    rc = ht_store_put_model(st, &rec, &id) ? cli_fail("model train") : CLI_OK;
    ht_store_close(st);
  }
  if (!rc)
    printf("stored model '%s' (%s, %d rows of %d problems, %zu bytes) in %s; training error mean %.2f%%, max %.1f%%\n",
           name, rec.kind, d->n_rows, d->n_groups, blob.len, cli_db_path(a), fit.mape_mean, fit.mape_max);
  if (!rc && interp->n)
    printf("  %d%% band inside the training sizes: %.3f-%.3f x predicted (5-fold cross-validation)\n",
           BAND_COVERAGE_PCT, interp->lo, interp->hi);
  if (!rc && extrap->n)
    printf("  %d%% band beyond them: %.3f-%.3f x predicted (the largest sizes predicted from the others)\n",
           BAND_COVERAGE_PCT, extrap->lo, extrap->hi);
  if (!rc) print_roofline(m);
  free(prov);
  free(pred);
  ht_buf_free(&blob);
  return rc;
}

static int model_train(int argc, char **argv) {
  static const char *const known[] = {"data",    "data-db", "device", "bandwidth", "kind",
                                      "options", "name",    "seed",   "db",        "size", NULL};
  if (cli_wants_help(argc, argv)) {
    fputs(train_help, stdout);
    return CLI_OK;
  }
  cli_args a;
  long long seed = 1;
  int rc = cli_parse(argc, argv, "model train", known, NULL, &a);
  if (!rc && cli_opt(&a, "seed")) rc = cli_integer("model train", "--seed", cli_opt(&a, "seed"), 0, &seed);
  if (rc) return rc;
  const char *kind = cli_opt(&a, "kind") ? cli_opt(&a, "kind") : ht_model_kind_find("gbt") ? "gbt" : "auto";
  if (ht_model_kind_check(kind)) return cli_usage_error("model train", "%s", ht_last_error());
  ht_spec *spec;
  ht_feature_set *fs;
  ht_dataset *d;
  if ((rc = cli_model_dataset(&a, "model train", &spec, &fs, &d))) return rc;
  ht_model *m;
  char *name = cli_opt(&a, "name") ? ht_strdup(cli_opt(&a, "name")) : ht_strfmt("%s.%s", ht_spec_name(spec), kind);
  ht_band interp, extrap;
  if (ht_model_fit(kind, d, cli_opt(&a, "options"), (uint64_t)seed, &m)) rc = cli_fail("model train");
  else {
    if (ht_model_bands(kind, d, cli_opt(&a, "options"), (uint64_t)seed, BAND_COVERAGE_PCT / 100.0, &interp, &extrap))
      rc = cli_fail("model train");
    else rc = store_model(&a, spec, m, d, name, &interp, &extrap);
    ht_model_destroy(m);
  }
  free(name);
  ht_dataset_destroy(d);
  ht_features_destroy(fs);
  ht_spec_destroy(spec);
  return rc;
}

/* ---- show ---- */

typedef struct show_ctx {
  int detail, n;
} show_ctx;

static void show_features(const ht_model_record *rec) {
  ht_model *m;
  if (ht_model_load(rec->blob, rec->blob_len, &m)) {
    printf("  (model bytes do not load: %s)\n", ht_last_error());
    return;
  }
  printf("  features (%d):", ht_model_n_features(m));
  for (int i = 0; i < ht_model_n_features(m); i++) printf(" %s", ht_model_feature_name(m, i));
  printf("\n");
  print_roofline(m);
  ht_model_destroy(m);
}

static int show_visit(const ht_model_record *rec, void *ctx) {
  show_ctx *c = ctx;
  if (c->n++ == 0 && !c->detail) printf("%-5s %-28s %-8s %-20s %-14s %6s  %s\n", "id", "name", "kind", "kernel", "device", "rows", "options");
  if (!c->detail) {
    printf("%-5lld %-28s %-8s %-20s %-14s %6lld  %s\n", (long long)rec->id, rec->name, rec->kind, rec->kernel_name,
           rec->device_id ? rec->device_id : "any", (long long)rec->n_rows, rec->options ? rec->options : "");
    return 0;
  }
  printf("model '%s' (id %lld): %s%s%s\n  kernel %s (source %s, spec %s), device %s, %lld rows\n  provenance %s\n",
         rec->name, (long long)rec->id, rec->kind, rec->options && *rec->options ? " " : "", rec->options ? rec->options : "",
         rec->kernel_name, rec->source_hash ? rec->source_hash : "?", rec->spec_path ? rec->spec_path : "?",
         rec->device_id ? rec->device_id : "any", (long long)rec->n_rows, rec->provenance_json);
  show_features(rec);
  return 1; /* the newest version only */
}

static int model_show(int argc, char **argv) {
  static const char *const known[] = {"db", NULL};
  if (cli_wants_help(argc, argv)) {
    printf("usage: hetune model show [NAME] [--db FILE]\n\nLists stored models, or the newest version of NAME "
           "with its provenance and features.\n");
    return CLI_OK;
  }
  cli_args a;
  int rc = cli_parse(argc, argv, "model show", known, NULL, &a);
  if (rc) return rc;
  ht_store *st;
  if (ht_store_open_readonly(cli_db_path(&a), &st)) return cli_fail("model show");
  show_ctx c = {a.n_pos > 0, 0};
  rc = ht_store_each_model(st, a.n_pos ? a.pos[0] : NULL, NULL, show_visit, &c) ? cli_fail("model show") : CLI_OK;
  ht_store_close(st);
  if (!rc && !c.n) {
    if (a.n_pos) return fprintf(stderr, "hetune: model show: no model '%s' in %s\n", a.pos[0], cli_db_path(&a)), CLI_ERROR;
    printf("no models in %s\n", cli_db_path(&a));
  }
  return rc;
}

int cmd_model(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    fputs(model_help, argc < 2 ? stderr : stdout);
    return argc < 2 ? CLI_USAGE : CLI_OK;
  }
  const char *sub = argv[1];
  if (strcmp(sub, "kinds") == 0) return model_kinds();
  if (strcmp(sub, "train") == 0) return model_train(argc - 1, argv + 1);
  if (strcmp(sub, "eval") == 0) return cmd_model_eval(argc - 1, argv + 1);
  if (strcmp(sub, "show") == 0) return model_show(argc - 1, argv + 1);
  if (strcmp(sub, "predict") == 0) return cmd_model_predict(argc - 1, argv + 1);
  return cli_usage_error("model", "unknown command '%s' (kinds, train, eval, show, predict)", sub);
}
