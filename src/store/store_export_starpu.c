/* Export: a StarPU history-based performance model (STARPU_HISTORY_BASED), the file StarPU 1.3
 * keeps in $STARPU_PERF_MODEL_DIR/codelets/45/SYMBOL.HOSTNAME and reads at starpu_init(), as
 * StarPU 1.3.10 writes it (format version 45): "#" lines are comments; the version; the number of
 * architecture combinations (1 here) and, for it, the number of devices (1), the device type
 * (CPU 0, CUDA 1, OpenCL 2), its id and its number of cores; the number of implementations (1);
 * per implementation the number of entries, the regression models' lines (empty: NaN, as StarPU
 * writes them for a history model), then one line per entry:
 *   footprint (8 hex digits)  size  flops  mean (us)  deviation (us)  sum (us)  sum2 (us^2)  n
 * Each entry is one problem size of the kernel: the samples of its best successful config there.
 * size is the product of the problem's sizes (N=1024,M=8 gives 8192), and the footprint is what
 * StarPU computes for a task whose perfmodel has a size_base returning that size:
 * starpu_hash_crc32c_be_n(&size, sizeof(size_t), 0). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_internal.h"

#define STARPU_MODEL_VERSION 45

typedef struct sp_entry {
  char *problem;
  uint64_t size;
  ht_result best;
} sp_entry;

typedef struct sp_ctx {
  char *kernel, *device_id;
  sp_entry *e;
  int n, cap;
  ht_status error;
} sp_ctx;

/* StarPU's CRC32C (polynomial 0x1EDC6F41, most significant bit first, no final xor) over the
 * bytes of v as this machine stores them, as starpu_hash_crc32c_be_n reads a size_t. */
static uint32_t starpu_footprint(uint64_t v) {
  unsigned char b[sizeof v];
  memcpy(b, &v, sizeof v);
  uint32_t crc = 0;
  for (size_t i = 0; i < sizeof v; i++) {
    crc ^= (uint32_t)b[i] << 24;
    for (int k = 0; k < 8; k++) crc = (crc << 1) ^ ((crc & 0x80000000u) ? 0x1EDC6F41u : 0);
  }
  return crc;
}

/* The product of the values of a canonical problem text "N=1024,M=8"; 0 when one is not a
 * positive integer or the product overflows. */
static uint64_t problem_size(const char *problem) {
  uint64_t size = 1;
  for (const char *p = strchr(problem, '='); p; p = strchr(p, '=')) {
    char *end;
    long long v = strtoll(p + 1, &end, 10);
    if (v <= 0 || (*end && *end != ',') || size > UINT64_MAX / (uint64_t)v) return 0;
    size *= (uint64_t)v;
    p = end;
  }
  return size;
}

/* The entry of a problem, made on first sight. */
static sp_entry *entry_of(sp_ctx *c, const char *problem) {
  for (int i = 0; i < c->n; i++)
    if (strcmp(c->e[i].problem, problem) == 0) return &c->e[i];
  if (c->n == c->cap) {
    int cap = c->cap ? 2 * c->cap : 16;
    sp_entry *e = realloc(c->e, (size_t)cap * sizeof *e);
    if (!e) return NULL;
    c->e = e, c->cap = cap;
  }
  sp_entry *e = &c->e[c->n];
  if (!(e->problem = ht_strdup(problem))) return NULL;
  e->size = problem_size(problem);
  ht_result_init(&e->best);
  c->n++;
  return e;
}

static int sp_row(const ht_eval_record *rec, void *p) {
  sp_ctx *c = p;
  if (hts_export_one(&c->kernel, rec->kernel_name, "kernel", "kernel", "StarPU perfmodel", &c->error) ||
      hts_export_one(&c->device_id, rec->device_id, "device", "device", "StarPU perfmodel", &c->error))
    return 1;
  const ht_result *r = &rec->result;
  if (r->status != HT_EVAL_OK || !isfinite(r->time_s)) return 0;
  sp_entry *e = entry_of(c, rec->problem);
  if (!e) {
    c->error = ht_error(HT_ERR_NOMEM, "out of memory");
    return 1;
  }
  if (!e->size) {
    c->error = ht_error(HT_ERR_INVALID, "StarPU perfmodel export: problem '%s': its sizes must be positive integers "
                        "whose product (the entry's size) fits 64 bits", rec->problem);
    return 1;
  }
  if (!isfinite(e->best.time_s) || r->time_s < e->best.time_s) e->best = *r; /* init: NAN */
  return 0;
}

/* StarPU's device type of a hetune device id ("c", "opencl:0:0", "cuda:0"). */
static int starpu_device_type(const char *device_id, const char **worker) {
  static const struct {
    const char *prefix, *worker;
    int type;
  } types[] = {{"c", "cpu", 0}, {"cuda", "cuda", 1}, {"opencl", "opencl", 2}};
  for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
    size_t n = strlen(types[i].prefix);
    if (strncmp(device_id, types[i].prefix, n) == 0 && (device_id[n] == '\0' || device_id[n] == ':')) {
      *worker = types[i].worker;
      return types[i].type;
    }
  }
  return -1;
}

static int by_size(const void *a, const void *b) {
  const sp_entry *x = a, *y = b;
  return (x->size > y->size) - (x->size < y->size);
}

/* One entry line: the samples in microseconds; StarPU's deviation is sqrt(sum2/n - mean^2). */
static void sp_entry_line(FILE *out, const sp_entry *e) {
  const ht_result *r = &e->best;
  double sum = 0, sum2 = 0;
  int n = 0;
  for (int i = 0; i < r->n_samples; i++)
    if (isfinite(r->samples[i])) sum += r->samples[i] * 1e6, sum2 += r->samples[i] * 1e6 * r->samples[i] * 1e6, n++;
  if (!n) sum = r->time_s * 1e6, sum2 = sum * sum, n = 1; /* no samples kept: the one time */
  double mean = sum / n, dev = sqrt(fmax(sum2 / n - mean * mean, 0));
  fprintf(out, "%08x\t%-15llu\t%-15e\t%-15e\t%-15e\t%-15e\t%-15e\t%d\n", starpu_footprint(e->size),
          (unsigned long long)e->size, 0.0, mean, dev, sum, sum2, n);
}

static void sp_write(sp_ctx *c, int type, const char *worker, FILE *out) {
  qsort(c->e, (size_t)c->n, sizeof *c->e, by_size);
  fprintf(out, "##################\n# Performance Model Version\n%d\n\n", STARPU_MODEL_VERSION);
  fprintf(out, "####################\n# COMBs\n# number of combinations\n1\n");
  fprintf(out, "####################\n# COMB_0\n# number of types devices\n1\n");
  fprintf(out, "####################\n# DEV_0\n# device type (CPU - 0, CUDA - 1, OPENCL - 2, MIC - 3, MPI_MS - 5)\n%d\n",
          type);
  fprintf(out, "####################\n# DEV_0\n# device id \n0\n");
  fprintf(out, "####################\n# DEV_0\n# number of cores \n1\n");
  fprintf(out, "##########\n# number of implementations\n1\n");
  fprintf(out, "#####\n# Model for %s0_impl0 (Comb0)\n# number of entries\n%d\n", worker, c->n);
  fprintf(out, "# sumlnx\tsumlnx2\t\tsumlny\t\tsumlnxlny\talpha\t\tbeta\t\tn\tminx\t\tmaxx\n");
  fprintf(out, "%-15e\t%-15e\t%-15e\t%-15e\t%-15s\t%-15s\t0\t%-15d\t%-15d\n", 0.0, 0.0, 0.0, 0.0, "nan", "nan", 0, 0);
  fprintf(out, "# a\t\tb\t\tc\n%-15s\t%-15s\t%-15s\n", "nan", "nan", "nan");
  fprintf(out, "# not multiple-regression-base\n0\n");
  fprintf(out, "# hash\t\tsize\t\tflops\t\tmean (us)\tdev (us)\tsum\t\tsum2\t\tn\n");
  for (int i = 0; i < c->n; i++) sp_entry_line(out, &c->e[i]);
  fputc('\n', out);
}

ht_status ht_store_export_starpu_perfmodel(ht_store *st, const ht_eval_filter *f, FILE *out) {
  if (!st || !out) return ht_error(HT_ERR_INVALID, "export_starpu_perfmodel: NULL argument");
  sp_ctx c = {0};
  ht_status s = ht_store_each_eval(st, f, sp_row, &c);
  if (!s && c.error) s = c.error;
  const char *worker = NULL;
  int type = c.device_id ? starpu_device_type(c.device_id, &worker) : 0;
  if (!s && c.n == 0)
    s = ht_error(HT_ERR_NOTFOUND, "%s: no successful evaluations to export as a StarPU perfmodel%s", st->path,
                 f && (f->kernel_name || f->device_id || f->problem) ? " (none match the filter)" : "");
  else if (!s && type < 0)
    s = ht_error(HT_ERR_UNSUPPORTED, "StarPU perfmodel export: device '%s' has no StarPU architecture (c, opencl "
                 "and cuda devices have)", c.device_id);
  if (!s) {
    sp_write(&c, type, worker, out);
    s = hts_export_done(st, out, HT_OK, "StarPU perfmodel");
  }
  for (int i = 0; i < c.n; i++) free(c.e[i].problem);
  free(c.e);
  free(c.kernel);
  free(c.device_id);
  return s;
}
