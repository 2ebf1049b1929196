"""The ctypes side of the binding: finding libhetune, the C structs the binding passes, the
prototypes of the calls it makes, and the conversion of a failed call into hetune.Error.

Struct layouts follow include/hetune/*.h field for field; tests/test_layout.py compiles a C
program against those headers and compares every size and offset with these."""
import ctypes
import ctypes.util
import os
import subprocess

from ctypes import (CFUNCTYPE, POINTER, Structure, Union, c_char, c_char_p, c_double, c_int, c_int32,
                    c_int64, c_size_t, c_uint64, c_void_p)

SONAME_MAJOR = 0  # libhetune.so.0: the SOVERSION this binding's structs match


class Error(Exception):
    """A failed hetune call: message is ht_last_error()'s text, status the ht_status name ("parse",
    "io", "store", ...)."""

    def __init__(self, message, status="invalid"):
        super().__init__(message)
        self.message = message
        self.status = status


# ---- finding the library ----

def _pkg_config_libdir():
    try:
        out = subprocess.run(["pkg-config", "--variable=libdir", "hetune"], capture_output=True, text=True,
                             timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else None


def _candidates():
    """(description, path) pairs in the order tried: $HETUNE_LIB alone when set."""
    env = os.environ.get("HETUNE_LIB")
    if env:
        return [("$HETUNE_LIB", env)]
    found = []
    name = ctypes.util.find_library("hetune")
    if name:
        found.append(("ctypes.util.find_library('hetune')", name))
    libdir = _pkg_config_libdir()
    if libdir:
        for f in ("libhetune.so.%d" % SONAME_MAJOR, "libhetune.so"):
            found.append(("pkg-config's libdir", os.path.join(libdir, f)))
    found.append(("the loader's search path", "libhetune.so.%d" % SONAME_MAJOR))
    return found


def load_library():
    tried = []
    for how, path in _candidates():
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            tried.append("%s (%s): %s" % (path, how, e))
    if not os.environ.get("HETUNE_LIB"):
        tried.append("$HETUNE_LIB: not set")
    raise ImportError("hetune: cannot load libhetune; tried:\n  " + "\n  ".join(tried) +
                      "\nInstall hetune (cmake --install build) or set HETUNE_LIB to the path of libhetune.so")


lib = load_library()

# ---- structs (include/hetune/*.h) ----

MAX_PARAMS = 48
MAX_SAMPLES = 256
MAX_METRICS = 8


class Value(Structure):
    class _U(Union):
        _fields_ = [("i", c_int64), ("f", c_double), ("s", c_char_p)]
    _fields_ = [("kind", c_int), ("u", _U)]


class Config(Structure):
    _fields_ = [("n", c_int), ("idx", c_int32 * MAX_PARAMS)]


class Metric(Structure):
    _fields_ = [("name", c_char * 32), ("value", c_double)]


class Result(Structure):
    _fields_ = [("status", c_int), ("time_s", c_double), ("mean_s", c_double), ("stddev_s", c_double),
                ("min_s", c_double), ("max_s", c_double), ("rsd", c_double), ("n_samples", c_int),
                ("samples", c_double * MAX_SAMPLES), ("compile_s", c_double), ("compile_cached", c_int),
                ("verify_s", c_double), ("h2d_s", c_double), ("d2h_s", c_double), ("framework_s", c_double),
                ("wall_s", c_double), ("timestamp", c_double), ("n_metrics", c_int),
                ("metrics", Metric * MAX_METRICS), ("message", c_char * 2048)]


class DeviceInfo(Structure):
    _fields_ = [("backend", c_char * 16), ("id", c_char * 32), ("name", c_char * 128), ("vendor", c_char * 64),
                ("driver_version", c_char * 64), ("runtime_version", c_char * 64),
                ("compiler_version", c_char * 128), ("compute_units", c_int), ("max_threads", c_int),
                ("warp_size", c_int), ("clock_mhz", c_int), ("global_mem_bytes", c_uint64),
                ("local_mem_bytes", c_uint64), ("max_alloc_bytes", c_uint64), ("max_work_group_size", c_uint64),
                ("max_work_item_sizes", c_uint64 * 3), ("fingerprint", c_char * 17)]


class RunnerOptions(Structure):
    _fields_ = [("warmup", c_int), ("warmup_s", c_double), ("min_runs", c_int), ("max_runs", c_int),
                ("rsd_target", c_double), ("max_time_s", c_double), ("timeout_s", c_double),
                ("compile_timeout_s", c_double), ("setup_timeout_s", c_double), ("isolate", c_int),
                ("compile_jobs", c_int)]


class TuneProgress(Structure):
    _fields_ = [("done", c_int64), ("budget_evals", c_int64), ("measured", c_int64), ("reused", c_int64),
                ("failures", c_int64), ("space_size", c_uint64), ("space_size_exact", c_int),
                ("elapsed_s", c_double), ("budget_seconds", c_double), ("best_time_s", c_double),
                ("best_config", c_char_p), ("last_config", c_char_p), ("last", POINTER(Result)),
                ("last_reused", c_int), ("last_seed", c_int), ("confirm_done", c_int64),
                ("confirm_total", c_int64)]


PROGRESS_FN = CFUNCTYPE(None, POINTER(TuneProgress), c_void_p)


class TuneOptions(Structure):
    _fields_ = [("strategy", c_char_p), ("strategy_options", c_char_p), ("seed", c_uint64),
                ("budget_evals", c_int64), ("budget_seconds", c_double), ("no_reuse", c_int), ("confirm", c_int),
                ("confirm_runs", c_int), ("progress", PROGRESS_FN), ("progress_ctx", c_void_p),
                ("stop", POINTER(c_int)), ("store_device", POINTER(DeviceInfo)), ("batch", c_int),
                ("seed_configs", POINTER(c_char_p)), ("n_seed_configs", c_int)]


class TuneSummary(Structure):
    _fields_ = [("session_id", c_int64), ("measured", c_int64), ("reused", c_int64), ("failures", c_int64),
                ("space_size", c_uint64), ("space_size_exact", c_int), ("found", c_int),
                ("best_config", c_char * 1024), ("best", Result), ("elapsed_s", c_double), ("interrupted", c_int),
                ("confirmed", c_int64), ("best_measurements", c_int), ("device", DeviceInfo),
                ("problem", c_char * 512), ("seeds", c_int64), ("seed_failures", c_int64),
                ("seed_best_time_s", c_double)]


class EvalFilter(Structure):
    _fields_ = [("kernel_name", c_char_p), ("device_id", c_char_p), ("problem", c_char_p), ("only_ok", c_int)]


class EvalRecord(Structure):
    _fields_ = [("eval_id", c_int64), ("session_id", c_int64), ("kernel_name", c_char_p), ("language", c_char_p),
                ("source_hash", c_char_p), ("device_id", c_char_p), ("device_name", c_char_p),
                ("device_fingerprint", c_char_p), ("problem", c_char_p), ("config_key", c_char_p),
                ("config_json", c_char_p), ("result", Result)]


class SessionRecord(Structure):
    _fields_ = [("session_id", c_int64), ("kernel_name", c_char_p), ("device_id", c_char_p), ("problem", c_char_p),
                ("strategy", c_char_p), ("status", c_char_p), ("seed", c_uint64), ("n_evals", c_int64),
                ("budget_evals", c_int64), ("budget_seconds", c_double), ("started", c_double),
                ("ended", c_double), ("best_time_s", c_double)]


class ModelRecord(Structure):
    _fields_ = [("id", c_int64), ("name", c_char_p), ("kind", c_char_p), ("options", c_char_p),
                ("kernel_name", c_char_p), ("source_hash", c_char_p), ("device_id", c_char_p),
                ("spec_path", c_char_p), ("n_rows", c_int64), ("provenance_json", c_char_p), ("blob", c_void_p),
                ("blob_len", c_size_t), ("created", c_double)]


EVAL_VISIT = CFUNCTYPE(c_int, POINTER(EvalRecord), c_void_p)
SESSION_VISIT = CFUNCTYPE(c_int, POINTER(SessionRecord), c_void_p)
MODEL_VISIT = CFUNCTYPE(c_int, POINTER(ModelRecord), c_void_p)


class Buf(Structure):
    _fields_ = [("data", c_void_p), ("len", c_size_t), ("cap", c_size_t), ("failed", c_int)]


BANDWIDTH_MAX_POINTS = 64


class BandwidthCurve(Structure):
    _fields_ = [("n", c_int), ("bytes", c_double * BANDWIDTH_MAX_POINTS),
                ("bytes_per_s", c_double * BANDWIDTH_MAX_POINTS), ("threads", c_int * BANDWIDTH_MAX_POINTS)]


class Dataset(Structure):
    _fields_ = [("n_rows", c_int), ("n_features", c_int), ("names", POINTER(c_char_p)), ("x", POINTER(c_double)),
                ("y", POINTER(c_double)), ("group", POINTER(c_int)), ("n_groups", c_int),
                ("work", POINTER(c_double)), ("group_label", POINTER(c_char_p)), ("n_measured", c_int),
                ("n_repeat_pairs", c_int), ("repeat_diff_median", c_double), ("repeat_diff_p90", c_double),
                ("repeats", POINTER(c_double)), ("n_repeats", POINTER(c_int)), ("n_sources", c_int),
                ("source_ratio", POINTER(c_double)), ("bandwidth", BandwidthCurve)]


class Band(Structure):
    _fields_ = [("coverage", c_double), ("lo", c_double), ("hi", c_double), ("n", c_int)]


class ReplayOptions(Structure):
    _fields_ = [("strategy", c_char_p), ("strategy_options", c_char_p), ("seed", c_uint64),
                ("budget_evals", c_int64), ("budget_seconds", c_double), ("charge_strategy_time", c_int)]


class ReplayStep(Structure):
    _fields_ = [("t", c_double), ("value", c_double), ("best", c_double)]


class ReplayTrace(Structure):
    _fields_ = [("steps", POINTER(ReplayStep)), ("n", c_int), ("strategy_s", c_double), ("max_ask_s", c_double),
                ("best_config", Config), ("found", c_int)]


class RecordedStats(Structure):
    _fields_ = [("n", c_uint64), ("n_ok", c_uint64), ("f_opt", c_double), ("f_median", c_double),
                ("f_worst", c_double), ("mean_cost_s", c_double), ("total_cost_s", c_double)]


class Decision(Structure):
    _fields_ = [("variant", c_int), ("config", c_char_p), ("pred_kernel_s", c_double),
                ("pred_transfer_s", c_double), ("pred_total_s", c_double), ("band_lo", c_double),
                ("band_hi", c_double), ("close", c_int), ("runner_up", c_int), ("runner_up_total_s", c_double),
                ("source", c_int), ("decide_ns", c_double)]


class HostArg(Structure):
    _fields_ = [("data", c_void_p), ("count", c_size_t), ("lo", c_size_t), ("hi", c_size_t)]


class RunTimes(Structure):
    _fields_ = [("kernel_s", c_double), ("h2d_s", c_double), ("d2h_s", c_double), ("wall_s", c_double)]


# ---- prototypes: name -> (restype, argtypes); status-returning calls use c_int ----

_S = c_int  # ht_status
_P = c_void_p  # an opaque handle
_PP = POINTER(c_void_p)
_PROTOS = {
    "ht_last_error": (c_char_p, []),
    "ht_status_name": (c_char_p, [c_int]),
    "ht_error_clear": (None, []),
    "ht_value_format": (c_int, [Value, c_char_p, c_size_t]),
    "ht_dtype_parse": (_S, [c_char_p, POINTER(c_int)]),
    "ht_dtype_name": (c_char_p, [c_int]),
    "ht_dtype_size": (c_size_t, [c_int]),
    "ht_language_parse": (_S, [c_char_p, POINTER(c_int)]),
    "ht_language_name": (c_char_p, [c_int]),
    "ht_eval_status_name": (c_char_p, [c_int]),
    "ht_device_open": (_S, [c_char_p, _PP]),
    "ht_device_close": (None, [_P]),
    "ht_device_info_get": (POINTER(DeviceInfo), [_P]),
    # spec.h
    "ht_spec_load": (_S, [c_char_p, _PP]),
    "ht_spec_destroy": (None, [_P]),
    "ht_spec_set_size": (_S, [_P, c_char_p]),
    "ht_spec_problem_key": (c_int, [_P, c_char_p, c_size_t]),
    "ht_spec_name": (c_char_p, [_P]),
    "ht_spec_path": (c_char_p, [_P]),
    "ht_spec_identity": (c_char_p, [_P]),
    "ht_spec_language": (c_int, [_P]),
    "ht_spec_size_count": (c_int, [_P]),
    "ht_spec_size_name": (c_char_p, [_P, c_int]),
    "ht_spec_size_value": (c_int64, [_P, c_int]),
    "ht_spec_arg_count": (c_int, [_P]),
    "ht_spec_arg_name": (c_char_p, [_P, c_int]),
    "ht_spec_arg_type": (c_int, [_P, c_int]),
    "ht_spec_arg_is_buffer": (c_int, [_P, c_int]),
    "ht_spec_arg_is_stop_flag": (c_int, [_P, c_int]),
    "ht_spec_arg_access": (c_int, [_P, c_int]),
    "ht_spec_param_count": (c_int, [_P]),
    "ht_spec_param_name": (c_char_p, [_P, c_int]),
    "ht_spec_param_value_count": (c_int, [_P, c_int]),
    "ht_spec_param_value": (Value, [_P, c_int, c_int]),
    "ht_spec_constraint_count": (c_int, [_P]),
    "ht_spec_constraint_text": (c_char_p, [_P, c_int]),
    "ht_spec_add_constraint": (_S, [_P, c_char_p]),
    # kernel.h
    "ht_kernel_create": (_S, [c_char_p, _PP]),
    "ht_kernel_destroy": (None, [_P]),
    "ht_kernel_set_base_dir": (_S, [_P, c_char_p]),
    "ht_kernel_set_source": (_S, [_P, c_int, c_char_p, c_char_p]),
    "ht_kernel_set_entry": (_S, [_P, c_char_p]),
    "ht_kernel_set_flags": (_S, [_P, c_char_p]),
    "ht_kernel_add_define": (_S, [_P, c_char_p, c_char_p]),
    "ht_kernel_add_buffer": (_S, [_P, c_char_p, c_int, c_char_p, c_int]),
    "ht_kernel_add_scalar": (_S, [_P, c_char_p, c_int, c_char_p]),
    "ht_kernel_add_stop_flag": (_S, [_P, c_char_p]),
    "ht_kernel_set_geometry": (_S, [_P, c_int, c_int, POINTER(c_char_p)]),
    "ht_kernel_add_param": (_S, [_P, c_char_p, POINTER(Value), c_int]),
    "ht_kernel_add_param_range": (_S, [_P, c_char_p, c_int64, c_int64, c_int64]),
    "ht_kernel_add_param_pow2": (_S, [_P, c_char_p, c_int64, c_int64]),
    "ht_kernel_add_constraint": (_S, [_P, c_char_p]),
    "ht_kernel_set_work": (_S, [_P, c_char_p, c_char_p]),
    "ht_kernel_add_metric": (_S, [_P, c_char_p, c_char_p]),
    "ht_kernel_set_size_defines": (_S, [_P, c_int]),
    "ht_kernel_add_size": (_S, [_P, c_char_p, c_int64]),
    "ht_kernel_set_init": (_S, [_P, c_char_p, c_int]),
    "ht_kernel_set_init_random": (_S, [_P, c_char_p, c_double, c_double]),
    "ht_kernel_set_init_fill": (_S, [_P, c_char_p, c_double]),
    "ht_kernel_set_init_file": (_S, [_P, c_char_p, c_char_p]),
    "ht_kernel_reference": (_S, [_P, _PP]),
    "ht_kernel_set_tolerance": (_S, [_P, c_double, c_double]),
    "ht_kernel_set_seed": (_S, [_P, c_uint64]),
    "ht_kernel_finish": (_S, [_P, _PP]),
    "ht_kernel_write_json": (_S, [_P, c_char_p]),
    # store.h
    "ht_store_open": (_S, [c_char_p, _PP]),
    "ht_store_open_readonly": (_S, [c_char_p, _PP]),
    "ht_store_close": (None, [_P]),
    "ht_store_path": (c_char_p, [_P]),
    "ht_store_each_eval": (_S, [_P, POINTER(EvalFilter), EVAL_VISIT, c_void_p]),
    "ht_store_each_session": (_S, [_P, SESSION_VISIT, c_void_p]),
    "ht_store_each_model": (_S, [_P, c_char_p, c_char_p, MODEL_VISIT, c_void_p]),
    "ht_store_put_model": (_S, [_P, POINTER(ModelRecord), POINTER(c_int64)]),
    # measure.h, tune.h
    "ht_runner_options_default": (None, [POINTER(RunnerOptions)]),
    "ht_tune_options_default": (None, [POINTER(TuneOptions)]),
    "ht_tune": (_S, [_P, c_char_p, _P, POINTER(TuneOptions), POINTER(RunnerOptions), POINTER(TuneSummary)]),
    "ht_strategy_count": (c_int, []),
    "ht_strategy_at": (POINTER(c_char_p), [c_int]),  # the ops' first field is its name
    # model.h
    "ht_features_create": (_S, [_P, POINTER(DeviceInfo), _PP]),
    "ht_features_destroy": (None, [_P]),
    "ht_features_count": (c_int, [_P]),
    "ht_features_name": (c_char_p, [_P, c_int]),
    "ht_features_compute": (_S, [_P, POINTER(c_int64), POINTER(Value), POINTER(c_double)]),
    "ht_features_parse_problem": (_S, [_P, c_char_p, POINTER(c_int64), c_char_p]),
    "ht_features_parse_config": (_S, [_P, c_char_p, POINTER(Value), c_char_p]),
    "ht_dataset_from_store": (_S, [_P, _P, c_char_p, POINTER(POINTER(Dataset))]),
    "ht_dataset_destroy": (None, [POINTER(Dataset)]),
    "ht_model_fit": (_S, [c_char_p, POINTER(Dataset), c_char_p, c_uint64, _PP]),
    "ht_model_predict": (c_double, [_P, POINTER(c_double)]),
    "ht_model_roofline_floor": (c_double, [_P, POINTER(c_double)]),
    "ht_model_kind": (c_char_p, [_P]),
    "ht_model_options": (c_char_p, [_P]),
    "ht_model_n_features": (c_int, [_P]),
    "ht_model_feature_name": (c_char_p, [_P, c_int]),
    "ht_model_save": (_S, [_P, POINTER(Buf)]),
    "ht_model_load": (_S, [c_void_p, c_size_t, _PP]),
    "ht_model_destroy": (None, [_P]),
    "ht_model_bands": (_S, [c_char_p, POINTER(Dataset), c_char_p, c_uint64, c_double, POINTER(Band), POINTER(Band)]),
    "ht_buf_free": (None, [POINTER(Buf)]),
    # replay.h, space.h
    "ht_recorded_load": (_S, [c_char_p, _PP]),
    "ht_recorded_from_store": (_S, [_P, c_char_p, c_char_p, c_char_p, _PP]),
    "ht_recorded_destroy": (None, [_P]),
    "ht_recorded_name": (c_char_p, [_P]),
    "ht_recorded_space": (_P, [_P]),
    "ht_recorded_size": (c_uint64, [_P]),
    "ht_recorded_stats_get": (None, [_P, POINTER(RecordedStats)]),
    "ht_replay_options_default": (None, [POINTER(ReplayOptions)]),
    "ht_replay": (_S, [_P, POINTER(ReplayOptions), POINTER(ReplayTrace)]),
    "ht_replay_trace_free": (None, [POINTER(ReplayTrace)]),
    "ht_space_param_count": (c_int, [_P]),
    "ht_space_param_name": (c_char_p, [_P, c_int]),
    "ht_space_value": (Value, [_P, c_int, c_int]),
    # dispatch.h
    "ht_computation_load": (_S, [c_char_p, _P, _PP]),
    "ht_computation_destroy": (None, [_P]),
    "ht_computation_name": (c_char_p, [_P]),
    "ht_computation_variant_count": (c_int, [_P]),
    "ht_computation_variant_label": (c_char_p, [_P, c_int]),
    "ht_computation_spec": (_P, [_P]),
    "ht_computation_decide": (_S, [_P, POINTER(c_int64), POINTER(Decision)]),
    "ht_computation_run": (_S, [_P, POINTER(c_int64), POINTER(HostArg), POINTER(Decision), POINTER(RunTimes)]),
    "ht_computation_flush": (_S, [_P]),
    "ht_decision_source_name": (c_char_p, [c_int]),
}

for _name, (_res, _args) in _PROTOS.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args


# ---- helpers ----

def enc(s):
    """Python text to the C string a call takes (None stays NULL)."""
    return None if s is None else os.fsencode(s) if isinstance(s, os.PathLike) else str(s).encode()


def dec(b):
    return None if b is None else b.decode("utf-8", "replace")


def last_error():
    return dec(lib.ht_last_error()) or ""


def check(status, context=None):
    """Raises Error with ht_last_error() for a failed call; returns None on HT_OK."""
    if status:
        msg = last_error() or "failed"
        raise Error("%s: %s" % (context, msg) if context else msg, dec(lib.ht_status_name(status)))


def value_to_py(v):
    """An ht_value as int, float or str."""
    if v.kind == 0:
        return int(v.u.i)
    if v.kind == 1:
        return float(v.u.f)
    return dec(v.u.s)


def value_from_py(x, keep):
    """A Python int, float or str as an ht_value; keep collects the bytes a string points into."""
    v = Value()
    if isinstance(x, bool) or isinstance(x, int):
        v.kind, v.u.i = 0, int(x)
    elif isinstance(x, float):
        v.kind, v.u.f = 1, x
    elif isinstance(x, str):
        b = x.encode()
        keep.append(b)
        v.kind, v.u.s = 2, b
    else:
        raise TypeError("a parameter value is an int, float or str, not %s" % type(x).__name__)
    return v


def result_to_dict(r):
    """The fields of an ht_result a Python user reads, as a plain dict."""
    ok = r.status == 0
    return {
        "status": dec(lib.ht_eval_status_name(r.status)),
        "time_s": r.time_s if ok else None,
        "mean_s": r.mean_s if ok else None,
        "stddev_s": r.stddev_s if ok else None,
        "rsd": r.rsd if ok else None,
        "samples": list(r.samples[:r.n_samples]),
        "compile_s": r.compile_s,
        "compile_cached": bool(r.compile_cached),
        "wall_s": r.wall_s,
        "timestamp": r.timestamp,
        "metrics": {dec(m.name): m.value for m in r.metrics[:r.n_metrics]},
        "message": dec(r.message),
    }
