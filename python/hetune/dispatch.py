"""Per-call dispatch (hetune/dispatch.h): a computation's variants, the one that will finish first
decided at each call's sizes, run on the caller's numpy arrays."""
import ctypes
import math
import os

from . import _lib
from ._handle import Handle, create
from ._lib import Decision, HostArg, RunTimes, check, dec, enc, lib
from .spec import Spec

# ht_dtype (core.h) -> numpy's name for the same element type
_NUMPY_TYPES = ["float32", "float64", "int32", "uint32", "int64", "uint64", "int8", "uint8"]


def _nan_none(x):
    return None if x is None or math.isnan(x) else x


class Computation(Handle):
    """A computation file (docs/dispatch.md) with its store, which supplies tuned configs, models
    and measured times and receives the log of every run (keep the store open while it lives)."""
    _free = lib.ht_computation_destroy

    @classmethod
    def load(cls, path, store=None):
        c = cls(create(lib.ht_computation_load, enc(os.fspath(path)), store.ptr if store is not None else None))
        c._store = store  # the C computation uses the store until it is destroyed
        if store is not None:
            store.depend(c)
        c.spec = Spec(lib.ht_computation_spec(c.ptr), owner=c)
        return c

    def close(self):
        spec = getattr(self, "spec", None)
        if spec is not None:
            spec.close()
        super().close()

    @property
    def name(self):
        return dec(lib.ht_computation_name(self.ptr))

    @property
    def variants(self):
        """Each variant's label: "scale_c NTHREADS=1 on c"."""
        n = lib.ht_computation_variant_count(self.ptr)
        return [dec(lib.ht_computation_variant_label(self.ptr, i)) for i in range(n)]

    def _sizes(self, sizes):
        spec_sizes = self.spec.sizes
        unknown = set(sizes or {}) - set(spec_sizes)
        if unknown:
            raise _lib.Error("computation %s: unknown size %s (the sizes are %s)"
                             % (self.name, ", ".join(sorted(unknown)), ", ".join(spec_sizes)))
        spec_sizes.update(sizes or {})
        return (ctypes.c_int64 * max(1, len(spec_sizes)))(*spec_sizes.values())

    def decide(self, sizes):
        """The decision at sizes ({name: value}) without running: a dict (see run)."""
        d = Decision()
        check(lib.ht_computation_decide(self.ptr, self._sizes(sizes), ctypes.byref(d)), "decide %s" % self.name)
        return self._decision(d, None)

    def run(self, sizes, arrays):
        """Decides, runs the chosen variant on arrays and learns from its time. arrays: the
        buffer arguments' numpy arrays, a dict by argument name or a list in the arguments' order
        (C-contiguous, of the argument's element type, at least as long as the spec's length at
        these sizes); written arguments are written in place. Returns the decision as a dict:
        variant, label, config, source, predicted (total, kernel, transfer, band) and the
        measured times."""
        keep, args = self._host_args(arrays)
        d, t = Decision(), RunTimes()
        check(lib.ht_computation_run(self.ptr, self._sizes(sizes), args, ctypes.byref(d), ctypes.byref(t)),
              "run %s" % self.name)
        del keep
        return self._decision(d, t)

    def flush(self):
        """Writes the logged runs to the store now (they are also written in batches and at close)."""
        check(lib.ht_computation_flush(self.ptr))

    def _host_args(self, arrays):
        import numpy as np
        spec_args = self.spec.args
        buffers = [a for a in spec_args if a["buffer"]]
        if not isinstance(arrays, dict):
            arrays = list(arrays)
            if len(arrays) != len(buffers):
                raise _lib.Error("computation %s: %d arrays for %d buffer arguments (%s)"
                                 % (self.name, len(arrays), len(buffers), ", ".join(a["name"] for a in buffers)))
            arrays = {a["name"]: arr for a, arr in zip(buffers, arrays)}
        missing = [a["name"] for a in buffers if a["name"] not in arrays]
        extra = set(arrays) - {a["name"] for a in buffers}
        if missing or extra:
            raise _lib.Error("computation %s: %s" % (self.name, "no array for argument %s" % ", ".join(missing)
                             if missing else "no buffer argument %s" % ", ".join(sorted(extra))))
        args = (HostArg * (len(spec_args) + 1))()
        keep = []
        for i, a in enumerate(spec_args):
            if not a["buffer"]:
                continue
            arr = arrays[a["name"]]
            want = _NUMPY_TYPES[lib.ht_spec_arg_type(self.spec.ptr, i)]
            if not isinstance(arr, np.ndarray) or arr.dtype != np.dtype(want) or not arr.flags.c_contiguous \
                    or not arr.flags.writeable:
                raise _lib.Error("computation %s: argument %s needs a writable C-contiguous numpy array of %s, "
                                 "got %s" % (self.name, a["name"], want, _describe(arr)))
            keep.append(arr)
            args[i].data, args[i].count = arr.ctypes.data, arr.size
        return keep, args

    def _decision(self, d, t):
        out = {"variant": d.variant, "label": self.variants[d.variant], "config": dec(d.config),
               "source": dec(lib.ht_decision_source_name(d.source)),
               "predicted_s": _nan_none(d.pred_total_s), "predicted_kernel_s": _nan_none(d.pred_kernel_s),
               "predicted_transfer_s": _nan_none(d.pred_transfer_s),
               "band": None if math.isnan(d.band_lo) else (d.band_lo, d.band_hi), "close": bool(d.close),
               "runner_up": d.runner_up if d.runner_up >= 0 else None}
        if t is not None:
            out.update({"kernel_s": t.kernel_s, "h2d_s": t.h2d_s, "d2h_s": t.d2h_s, "wall_s": t.wall_s})
        return out

    def __repr__(self):
        return "<hetune.Computation %s, %d variants>" % (self.name, len(self.variants)) if self._ptr \
            else "<hetune.Computation closed>"


def _describe(arr):
    dtype = getattr(arr, "dtype", None)
    return "%s%s" % (type(arr).__name__, " of %s" % dtype if dtype is not None else "")
