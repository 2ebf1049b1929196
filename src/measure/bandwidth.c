/* A device's read bandwidth as a function of the working set, measured with a generated probe
 * kernel through the ordinary runner (compile cache, verification, timing, worker process), and
 * the curve's CSV form. Prediction uses the curve as a roofline floor: no kernel moves its bytes
 * faster than the device reads them at that working set (docs/prediction.md). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/csv.h"
#include "hetune/kernel.h"
#include "hetune/measure.h"

/* ---- the curve ---- */

double ht_bandwidth_at(const ht_bandwidth_curve *c, double bytes) {
  if (c->n < 1) return NAN;
  if (bytes <= c->bytes[0]) return c->bytes_per_s[0];
  for (int i = 1; i < c->n; i++) {
    if (bytes <= c->bytes[i]) {
      double f = log(bytes / c->bytes[i - 1]) / log(c->bytes[i] / c->bytes[i - 1]);
      return exp(log(c->bytes_per_s[i - 1]) + f * log(c->bytes_per_s[i] / c->bytes_per_s[i - 1]));
    }
  }
  return c->bytes_per_s[c->n - 1];
}

static ht_status parse_row(const char *path, int line, char *text, void *curve) {
  ht_bandwidth_curve *c = curve;
  char *end;
  errno = 0;
  double bytes = strtod(text, &end);
  if (end == text || *end != ',' || errno || !(bytes > 0) || !isfinite(bytes))
    return ht_error(HT_ERR_PARSE, "%s:%d: expected a positive number of bytes, got '%s'", path, line, text);
  char *rest = end + 1;
  double gbps = strtod(rest, &end);
  if (end == rest || (*end != ',' && *end != '\0') || !(gbps > 0) || !isfinite(gbps))
    return ht_error(HT_ERR_PARSE, "%s:%d: expected a positive bandwidth in GB/s after the bytes", path, line);
  long threads = *end == ',' ? strtol(end + 1, NULL, 10) : 0;
  if (c->n >= HT_BANDWIDTH_MAX_POINTS)
    return ht_error(HT_ERR_PARSE, "%s:%d: more than %d points", path, line, HT_BANDWIDTH_MAX_POINTS);
  if (c->n > 0 && !(bytes > c->bytes[c->n - 1]))
    return ht_error(HT_ERR_PARSE, "%s:%d: bytes %.0f do not increase (previous row %.0f)", path, line, bytes,
                    c->bytes[c->n - 1]);
  c->bytes[c->n] = bytes;
  c->bytes_per_s[c->n] = gbps * 1e9;
  c->threads[c->n++] = threads > 0 && threads < 1 << 20 ? (int)threads : 0;
  return HT_OK;
}

ht_status ht_bandwidth_load(const char *path, ht_bandwidth_curve *out) {
  memset(out, 0, sizeof *out);
  ht_status st = ht_lines_read(path, "bandwidth curve", "bytes,gb_per_s", "bytes,gb_per_s[,threads]", parse_row, out);
  if (!st && out->n == 0) st = ht_error(HT_ERR_PARSE, "%s: no points (rows 'bytes,gb_per_s')", path);
  return st;
}

ht_status ht_bandwidth_save(const char *path, const ht_bandwidth_curve *c, const char *comment) {
  ht_buf b = {0};
  if (comment) ht_buf_appendf(&b, "# %s\n", comment);
  ht_buf_append(&b, "bytes,gb_per_s,threads\n");
  for (int i = 0; i < c->n; i++)
    ht_buf_appendf(&b, "%.0f,%.3f,%d\n", c->bytes[i], c->bytes_per_s[i] / 1e9, c->threads[i]);
  ht_status st = b.failed ? ht_error(HT_ERR_NOMEM, "out of memory") : ht_write_file_atomic(path, b.data, b.len);
  ht_buf_free(&b);
  return st;
}

/* ---- the probe ---- */

/* Each thread sums its contiguous share with a vectorisable integer reduction: exact in any
 * order (mod 2^32), so the reference comparison needs no tolerance, and reading is all it does. */
static const char probe_kernel_c[] =
  "/* hetune bandwidth probe (generated): out[0] = sum of a (mod 2^32), NTHREADS OpenMP threads. */\n"
  "#include <stdint.h>\n"
  "#include <omp.h>\n"
  "#ifndef NTHREADS\n#define NTHREADS 1\n#endif\n"
  "void bw_read(uint32_t *restrict out, const uint32_t *restrict a, int64_t n)\n"
  "{\n"
  "  uint32_t total = 0;\n"
  "#pragma omp parallel num_threads(NTHREADS) reduction(+ : total)\n"
  "  {\n"
  "    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();\n"
  "    const int64_t per = (n + nt - 1) / nt;\n"
  "    const int64_t lo = t * per < n ? t * per : n, hi = lo + per < n ? lo + per : n;\n"
  "    uint32_t s = 0;\n"
  "#pragma omp simd reduction(+ : s)\n"
  "    for (int64_t i = lo; i < hi; i++) s += a[i];\n"
  "    total += s;\n"
  "  }\n"
  "  out[0] = total;\n"
  "}\n";

static const char probe_reference[] =
  "#include <stdint.h>\n"
  "void bw_read_ref(uint32_t *out, const uint32_t *a, int64_t n)\n"
  "{\n"
  "  uint32_t s = 0;\n"
  "  for (int64_t i = 0; i < n; i++) s += a[i];\n"
  "  out[0] = s;\n"
  "}\n";


/* OpenCL: every work-item sums its share in VW-wide vectors (4 or 16 uints), either grid-strided (CHUNKED 0: neighbouring
 * work-items read neighbouring vectors, what a GPU coalesces) or one contiguous block each
 * (CHUNKED 1: what a CPU device's caches and prefetchers want; PoCL reads 5-10x faster so), then
 * adds it to out[0] atomically. The runner uploads out = 0 before the verified launch, so that
 * launch's sum is exact; the timed launches only accumulate. */
static const char probe_kernel_cl[] =
  "/* hetune bandwidth probe (generated): out[0] += sum of a (mod 2^32), VW-wide vector loads. */\n"
  "#if VW == 16\n"
  "typedef uint16 vec;\n"
  "#define LOAD vload16\n"
  "#define HSUM(v) (v.s0 + v.s1 + v.s2 + v.s3 + v.s4 + v.s5 + v.s6 + v.s7 + v.s8 + v.s9 + v.sa + v.sb + v.sc + v.sd + v.se + v.sf)\n"
  "#else\n"
  "typedef uint4 vec;\n"
  "#define LOAD vload4\n"
  "#define HSUM(v) (v.s0 + v.s1 + v.s2 + v.s3)\n"
  "#endif\n"
  "__kernel void bw_read(__global uint *out, __global const uint *a, long n)\n"
  "{\n"
  "  const long gid = get_global_id(0), gs = get_global_size(0), nv = n / VW;\n"
  "  vec acc = (vec)(0);\n"
  "#if CHUNKED\n"
  "  const long per = (nv + gs - 1) / gs, lo = min(gid * per, nv), hi = min(lo + per, nv);\n"
  "  for (long i = lo; i < hi; i++) acc += LOAD(i, a);\n"
  "#else\n"
  "  for (long i = gid; i < nv; i += gs) acc += LOAD(i, a);\n"
  "#endif\n"
  "  uint s = HSUM(acc);\n"
  "  for (long i = VW * nv + gid; i < n; i += gs) s += a[i];\n"
  "  atomic_add(out, s);\n"
  "}\n";


/* CUDA: a grid-strided uint4 loop through the read-only cache, a warp-shuffle sum, one atomic add
 * per warp (one per thread would queue on the single address). Built and compile-checked with
 * nvcc here; it runs where a GPU is. */
static const char probe_kernel_cu[] =
  "/* hetune bandwidth probe (generated): out[0] += sum of a (mod 2^32), grid-strided uint4 loads. */\n"
  "extern \"C\" __global__ void bw_read(unsigned int *out, const unsigned int *a, long long n)\n"
  "{\n"
  "  const long long gid = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
  "  const long long gs = (long long)gridDim.x * blockDim.x, n4 = n / 4;\n"
  "  const uint4 *a4 = reinterpret_cast<const uint4 *>(a);\n"
  "  unsigned int s = 0;\n"
  "  for (long long i = gid; i < n4; i += gs) {\n"
  "    const uint4 v = __ldg(a4 + i);\n"
  "    s += v.x + v.y + v.z + v.w;\n"
  "  }\n"
  "  for (long long i = 4 * n4 + gid; i < n; i += gs) s += a[i];\n"
  "  for (int o = 16; o > 0; o /= 2) s += __shfl_down_sync(0xffffffffu, s, o);\n"
  "  if ((threadIdx.x & 31) == 0) atomicAdd(out, s);\n"
  "}\n";


/* A parameter of integer values. */
static ht_status int_param(ht_kernel *k, const char *name, const int *v, int n) {
  ht_value values[8];
  for (int i = 0; i < n; i++) values[i] = ht_int(v[i]);
  return ht_kernel_add_param(k, name, values, n);
}

/* C: powers of two up to the device's threads, and its thread count itself. */
static ht_status space_c(ht_kernel *k) {
  ht_status st = ht_kernel_add_param_range(k, "NTHREADS", 1, 4096, 1);
  if (!st) st = ht_kernel_add_constraint(k, "NTHREADS <= device.max_threads");
  if (!st) st = ht_kernel_add_constraint(k, "is_pow2(NTHREADS) || NTHREADS == device.max_threads");
  return st;
}

/* OpenCL: work-group sizes, groups per compute unit and access pattern: what fills the device best. */
static ht_status space_cl(ht_kernel *k) {
  ht_status st = ht_kernel_set_geometry(k, HT_GEOM_GLOBAL, 1, (const char *[]){"WG * GPC * device.compute_units"});
  if (!st) st = ht_kernel_set_geometry(k, HT_GEOM_LOCAL, 1, (const char *[]){"WG"});
  if (!st) st = int_param(k, "WG", (const int[]){64, 256, 1024}, 3);
  if (!st) st = int_param(k, "GPC", (const int[]){1, 8}, 2);
  if (!st) st = int_param(k, "CHUNKED", (const int[]){0, 1}, 2);
  if (!st) st = int_param(k, "VW", (const int[]){4, 16}, 2);
  if (!st) st = ht_kernel_add_constraint(k, "WG <= device.max_work_group_size");
  return st;
}

/* CUDA: block sizes (whole warps) and blocks per multiprocessor. */
static ht_status space_cu(ht_kernel *k) {
  ht_status st = ht_kernel_set_geometry(k, HT_GEOM_GRID, 1, (const char *[]){"BPS * device.compute_units"});
  if (!st) st = ht_kernel_set_geometry(k, HT_GEOM_LOCAL, 1, (const char *[]){"BLOCK"});
  if (!st) st = int_param(k, "BLOCK", (const int[]){128, 256, 512, 1024}, 4);
  if (!st) st = int_param(k, "BPS", (const int[]){1, 4, 16}, 3);
  if (!st) st = ht_kernel_add_constraint(k, "BLOCK <= device.max_work_group_size");
  return st;
}

/* How many threads (C, CUDA) or work-items (OpenCL) a probe config runs. */
static int64_t param(const ht_space *s, const ht_value *v, const char *name) { return v[ht_space_param_index(s, name)].u.i; }
static int c_parallelism(const ht_space *s, const ht_value *v, const ht_device_info *d) {
  (void)d;
  return (int)param(s, v, "NTHREADS");
}
static int cl_parallelism(const ht_space *s, const ht_value *v, const ht_device_info *d) {
  return (int)(param(s, v, "WG") * param(s, v, "GPC") * d->compute_units);
}
static int cu_parallelism(const ht_space *s, const ht_value *v, const ht_device_info *d) {
  return (int)(param(s, v, "BLOCK") * param(s, v, "BPS") * d->compute_units);
}

typedef struct probe {
  const char *backend, *kernel_file, *kernel, *flags;
  ht_language lang;
  ht_status (*space)(ht_kernel *k); /* launch geometry, parameters, constraints */
  int (*parallelism)(const ht_space *s, const ht_value *values, const ht_device_info *dev);
} probe;

static const probe probes[] = {
  {"c", "bw_read.c", probe_kernel_c, "-O3 -march=native -fopenmp", HT_LANG_C, space_c, c_parallelism},
  {"opencl", "bw_read.cl", probe_kernel_cl, NULL, HT_LANG_OPENCL, space_cl, cl_parallelism},
  {"cuda", "bw_read.cu", probe_kernel_cu, NULL, HT_LANG_CUDA, space_cu, cu_parallelism},
};

/* The probe of the device id's backend ("c", "c:0", "opencl:0:0", ...), NULL when there is none. */
static const probe *probe_for(const char *device_id) {
  size_t len = strcspn(device_id, ":");
  for (size_t i = 0; i < sizeof probes / sizeof *probes; i++)
    if (strlen(probes[i].backend) == len && strncmp(device_id, probes[i].backend, len) == 0) return &probes[i];
  return NULL;
}

/* The probes share everything but their language, flags and space. Sources are named in dir. */
static ht_status build_probe(const probe *pr, const char *dir, ht_kernel *k) {
  ht_kernel *ref;
  ht_status st = ht_kernel_set_base_dir(k, dir);
  if (!st) st = ht_kernel_set_source(k, pr->lang, pr->kernel, pr->kernel_file);
  if (!st) st = ht_kernel_set_entry(k, "bw_read");
  if (!st && pr->flags) st = ht_kernel_set_flags(k, pr->flags);
  if (!st) st = ht_kernel_set_size_defines(k, 0);
  if (!st) st = ht_kernel_add_size(k, "N", 1048576);
  if (!st) st = ht_kernel_add_buffer(k, "out", HT_DTYPE_U32, "1", HT_ACCESS_WRITE);
  if (!st) st = ht_kernel_set_init(k, "out", HT_INIT_ZEROS);
  if (!st) st = ht_kernel_add_buffer(k, "a", HT_DTYPE_U32, "N", HT_ACCESS_READ);
  if (!st) st = ht_kernel_set_init(k, "a", HT_INIT_RANDOM);
  if (!st) st = ht_kernel_add_scalar(k, "n", HT_DTYPE_I64, "N");
  if (!st) st = pr->space(k);
  if (!st) st = ht_kernel_reference(k, &ref);
  if (!st) st = ht_kernel_set_source(ref, HT_LANG_C, probe_reference, "bw_read_ref.c");
  if (!st) st = ht_kernel_set_entry(ref, "bw_read_ref");
  if (!st) st = ht_kernel_set_tolerance(k, 0, 0);
  if (!st) st = ht_kernel_set_work(k, NULL, "4.0*N");
  return st;
}

/* The probe's spec, built in code. Its files (sources, bandwidth_<backend>.json) are written to
 * <cache>/probes too, before any device is opened, for users to read and run by hand. */
static ht_status make_probe(const probe *pr, ht_spec **spec) {
  char *dir = ht_strfmt("%s/probes", ht_cache_dir()), *name = ht_strfmt("hetune_bandwidth_%s", pr->backend);
  char *path = dir ? ht_strfmt("%s/bandwidth_%s.json", dir, pr->backend) : NULL;
  ht_kernel *k = NULL;
  ht_status st = path && name ? ht_kernel_create(name, &k) : ht_error(HT_ERR_NOMEM, "out of memory");
  if (!st) st = build_probe(pr, dir, k);
  if (!st) st = ht_kernel_write_json(k, path);
  if (!st) st = ht_kernel_finish(k, spec);
  ht_kernel_destroy(k);
  free(path);
  free(name);
  free(dir);
  return st;
}

typedef struct point_ctx {
  const probe *probe;
  ht_runner *runner;
  ht_space *space;
  double best_s;
  int best_threads;
  ht_status st;
} point_ctx;

static int measure_config(const ht_config *cfg, void *arg) {
  point_ctx *p = arg;
  ht_result res;
  p->st = ht_runner_evaluate(p->runner, cfg, &res);
  if (p->st) return 1;
  if (res.status != HT_EVAL_OK) {
    char text[256];
    ht_config_format(p->space, cfg, text, sizeof text);
    p->st = ht_error(HT_ERR_RUNTIME, "bandwidth probe %s failed (%s): %s", text, ht_eval_status_name(res.status),
                     res.message);
    return 1;
  }
  if (!(res.time_s >= p->best_s)) {
    ht_value v[4];
    ht_config_values(p->space, cfg, v);
    p->best_s = res.time_s;
    p->best_threads = p->probe->parallelism(p->space, v, ht_runner_device(p->runner));
  }
  return 0;
}

/* One working set: every valid thread count, the fastest median kept. */
static ht_status measure_point(const probe *pr, ht_spec *spec, const char *device_id, const ht_runner_options *opt,
                               int64_t n, double *seconds, int *threads) {
  char size[64];
  snprintf(size, sizeof size, "N=%lld", (long long)n);
  ht_status st = ht_spec_set_size(spec, size);
  ht_runner *runner = NULL;
  if (!st) st = ht_runner_create(spec, device_id, opt, &runner);
  ht_space *space = NULL;
  if (!st) st = ht_spec_build_space(spec, ht_runner_device(runner), &space);
  point_ctx p = {pr, runner, space, INFINITY, 0, HT_OK};
  if (!st) st = ht_space_enumerate(space, measure_config, &p);
  if (!st) st = p.st;
  if (!st && !isfinite(p.best_s)) st = ht_error(HT_ERR_INVALID, "bandwidth probe: no valid thread count");
  *seconds = p.best_s;
  *threads = p.best_threads;
  ht_space_destroy(space);
  ht_runner_destroy(runner);
  return st;
}

/* One sweep over the working sets; a point keeps the best of this and earlier sweeps. */
static ht_status sweep(const probe *pr, ht_spec *spec, const char *device_id, const ht_runner_options *o, int round,
                       ht_bandwidth_progress_fn progress, void *ctx, ht_bandwidth_curve *out) {
  for (int i = 0; i < out->n; i++) {
    double s;
    int threads;
    ht_status st = measure_point(pr, spec, device_id, o, (int64_t)(out->bytes[i] / 4), &s, &threads);
    if (st) return st;
    double bps = out->bytes[i] / s;
    if (bps > out->bytes_per_s[i]) out->bytes_per_s[i] = bps, out->threads[i] = threads;
    if (progress) progress(round, out->bytes[i], bps, threads, ctx);
  }
  return HT_OK;
}

ht_status ht_bandwidth_measure(const char *device_id, double min_bytes, double max_bytes, int sweeps,
                               const ht_runner_options *opt, ht_bandwidth_progress_fn progress, void *ctx,
                               ht_bandwidth_curve *out) {
  memset(out, 0, sizeof *out);
  const probe *pr = device_id ? probe_for(device_id) : NULL;
  if (!pr)
    return ht_error(HT_ERR_UNSUPPORTED, "bandwidth of device '%s': probes exist for c, opencl and cuda devices",
                    device_id ? device_id : "(null)");
  if (!(min_bytes >= 4096 && max_bytes >= min_bytes && max_bytes <= 64e9) || sweeps < 1 || sweeps > 100)
    return ht_error(HT_ERR_INVALID,
                    "bandwidth: working sets %.0f..%.0f bytes, %d sweeps (expected 4096 <= min <= max <= 64e9, "
                    "1..100 sweeps)",
                    min_bytes, max_bytes, sweeps);
  for (double bytes = min_bytes; bytes <= max_bytes * 1.0001 && out->n < HT_BANDWIDTH_MAX_POINTS; bytes *= 2)
    out->bytes[out->n++] = 4.0 * (double)(int64_t)(bytes / 4);
  ht_runner_options o;
  if (opt) o = *opt;
  else {
    ht_runner_options_default(&o);
    o.min_runs = 5;
    o.rsd_target = 0.02;
  }
  ht_spec *spec = NULL;
  ht_status st = make_probe(pr, &spec);
  for (int round = 1; !st && round <= sweeps; round++) st = sweep(pr, spec, device_id, &o, round, progress, ctx, out);
  ht_spec_destroy(spec);
  if (st) out->n = 0;
  return st;
}
