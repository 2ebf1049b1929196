"""Kernel specs: loaded from a JSON spec file (docs/spec.md) or built in code (docs/kernel-api.md)."""
import ctypes
import os

from . import _lib
from ._handle import Handle, create
from ._lib import check, dec, enc, lib

_ACCESS = {"read": 1, "write": 2, "readwrite": 3}
_INIT = {"random": 0, "zeros": 1, "ramp": 2}
_GEOMETRY = ["global", "grid", "problem", "grid_div", "local", "global_mul", "global_div", "local_mul",
             "local_div"]


def _language(name):
    out = ctypes.c_int()
    check(lib.ht_language_parse(enc(name), ctypes.byref(out)))
    return out.value


def _dtype(name):
    out = ctypes.c_int()
    check(lib.ht_dtype_parse(enc(getattr(name, "name", name)), ctypes.byref(out)))
    return out.value


def _choice(table, name, what):
    if name not in table:
        raise _lib.Error("unknown %s '%s' (expected one of %s)" % (what, name, ", ".join(table)))
    return table[name] if isinstance(table, dict) else table.index(name)


class Spec(Handle):
    """A kernel spec: what to tune, how to launch it and check it. Spec.load(path) reads a spec
    file; Kernel(...).finish() builds one in code."""
    _free = lib.ht_spec_destroy

    @classmethod
    def load(cls, path):
        return cls(create(lib.ht_spec_load, enc(os.fspath(path))))

    @property
    def name(self):
        return dec(lib.ht_spec_name(self.ptr))

    @property
    def path(self):
        """The spec file it was loaded from; None for a spec built in code."""
        return dec(lib.ht_spec_path(self.ptr))

    @property
    def identity(self):
        return dec(lib.ht_spec_identity(self.ptr))

    @property
    def language(self):
        return dec(lib.ht_language_name(lib.ht_spec_language(self.ptr)))

    @property
    def sizes(self):
        """The problem sizes, {name: value} in the spec's order."""
        return {dec(lib.ht_spec_size_name(self.ptr, i)): lib.ht_spec_size_value(self.ptr, i)
                for i in range(lib.ht_spec_size_count(self.ptr))}

    @property
    def problem(self):
        """The canonical problem text the store keys results by, "M=1024,N=512"."""
        buf = ctypes.create_string_buffer(512)
        lib.ht_spec_problem_key(self.ptr, buf, len(buf))
        return dec(buf.value)

    def set_sizes(self, sizes):
        """Sets problem sizes from {name: value}; an unknown name is an error."""
        for k, v in (sizes or {}).items():
            check(lib.ht_spec_set_size(self.ptr, enc("%s=%d" % (k, v))))

    @property
    def params(self):
        """The tunable parameters, {name: [values]} in the order configs list them."""
        out = {}
        for i in range(lib.ht_spec_param_count(self.ptr)):
            n = lib.ht_spec_param_value_count(self.ptr, i)
            out[dec(lib.ht_spec_param_name(self.ptr, i))] = [
                _lib.value_to_py(lib.ht_spec_param_value(self.ptr, i, v)) for v in range(n)]
        return out

    @property
    def args(self):
        """The kernel's arguments in order: dicts of name, type, buffer, stop_flag, access."""
        access = {v: k for k, v in _ACCESS.items()}
        return [{"name": dec(lib.ht_spec_arg_name(self.ptr, i)),
                 "type": dec(lib.ht_dtype_name(lib.ht_spec_arg_type(self.ptr, i))),
                 "buffer": bool(lib.ht_spec_arg_is_buffer(self.ptr, i)),
                 "stop_flag": bool(lib.ht_spec_arg_is_stop_flag(self.ptr, i)),
                 "access": access.get(lib.ht_spec_arg_access(self.ptr, i))}
                for i in range(lib.ht_spec_arg_count(self.ptr))]

    @property
    def constraints(self):
        return [dec(lib.ht_spec_constraint_text(self.ptr, i)) for i in range(lib.ht_spec_constraint_count(self.ptr))]

    def add_constraint(self, expr):
        """Restricts the spaces built from this spec from now on (the identity does not change)."""
        check(lib.ht_spec_add_constraint(self.ptr, enc(expr)))

    def config_dict(self, text):
        """A config text "A=1,B=x" as {name: typed value}."""
        from ._config import parse_config
        return parse_config(text, self.params)

    def tune(self, store, device="c", **kw):
        """Tunes this kernel on device, storing every evaluation in store (a Store or a path):
        see hetune.tune for the options. Returns a TuneResult."""
        from .tune import tune
        return tune(self, store, device=device, **kw)

    def __repr__(self):
        return "<hetune.Spec %s %s>" % (self.name, self.problem) if self._ptr else "<hetune.Spec closed>"


class Kernel(Handle):
    """A spec built in code: the setters of hetune/kernel.h, each returning the builder so calls
    chain. finish() checks everything together and returns a Spec."""
    _free = lib.ht_kernel_destroy

    def __init__(self, name, language=None, source=None, path=None, entry=None, flags=None, base_dir=None):
        super().__init__(create(lib.ht_kernel_create, enc(name)))
        if base_dir is not None:
            check(lib.ht_kernel_set_base_dir(self.ptr, enc(os.fspath(base_dir))))
        if source is not None or path is not None:
            self.source(source, path=path, language=language or "c")
        if entry is not None:
            self.entry(entry)
        if flags is not None:
            self.flags(flags)

    def _do(self, status):
        check(status)
        return self

    def source(self, text=None, path=None, language="c"):
        """The source text, or with text None the file at path (read by finish)."""
        p = None if path is None else os.fspath(path)
        return self._do(lib.ht_kernel_set_source(self.ptr, _language(language), enc(text), enc(p)))

    def entry(self, name):
        return self._do(lib.ht_kernel_set_entry(self.ptr, enc(name)))

    def flags(self, flags):
        return self._do(lib.ht_kernel_set_flags(self.ptr, enc(flags)))

    def define(self, name, value):
        return self._do(lib.ht_kernel_add_define(self.ptr, enc(name), enc(value)))

    def buffer(self, name, dtype, length, access="readwrite"):
        """A buffer argument of length elements (an expression of sizes)."""
        return self._do(lib.ht_kernel_add_buffer(self.ptr, enc(name), _dtype(dtype), enc(length),
                                                 _choice(_ACCESS, access, "access")))

    def scalar(self, name, dtype, value):
        """A scalar argument whose value is an expression of sizes and parameters."""
        return self._do(lib.ht_kernel_add_scalar(self.ptr, enc(name), _dtype(dtype), enc(value)))

    def stop_flag(self, name):
        return self._do(lib.ht_kernel_add_stop_flag(self.ptr, enc(name)))

    def geometry(self, form, *exprs):
        """One geometry key of the spec file ("global", "local", "grid", ...) with its expressions."""
        arr = (ctypes.c_char_p * max(1, len(exprs)))(*[enc(e) for e in exprs])
        return self._do(lib.ht_kernel_set_geometry(self.ptr, _choice(_GEOMETRY, form, "geometry form"),
                                                   len(exprs), arr))

    def param(self, name, values):
        """A tunable parameter with a list of values (int, float or str)."""
        keep = []
        arr = (_lib.Value * max(1, len(values)))(*[_lib.value_from_py(v, keep) for v in values])
        return self._do(lib.ht_kernel_add_param(self.ptr, enc(name), arr, len(values)))

    def param_range(self, name, lo, hi, step=1):
        return self._do(lib.ht_kernel_add_param_range(self.ptr, enc(name), lo, hi, step))

    def param_pow2(self, name, lo, hi):
        return self._do(lib.ht_kernel_add_param_pow2(self.ptr, enc(name), lo, hi))

    def constraint(self, expr):
        return self._do(lib.ht_kernel_add_constraint(self.ptr, enc(expr)))

    def work(self, flops=None, bytes=None):
        return self._do(lib.ht_kernel_set_work(self.ptr, enc(flops), enc(bytes)))

    def metric(self, name, expr):
        return self._do(lib.ht_kernel_add_metric(self.ptr, enc(name), enc(expr)))

    def size_defines(self, on):
        return self._do(lib.ht_kernel_set_size_defines(self.ptr, int(bool(on))))

    def size(self, name, value):
        """A problem size and its default value."""
        return self._do(lib.ht_kernel_add_size(self.ptr, enc(name), value))

    def init(self, arg, kind=None, random=None, fill=None, file=None):
        """A buffer's initial data: kind "random", "zeros" or "ramp"; random=(lo, hi); fill=v; file=path."""
        if random is not None:
            return self._do(lib.ht_kernel_set_init_random(self.ptr, enc(arg), random[0], random[1]))
        if fill is not None:
            return self._do(lib.ht_kernel_set_init_fill(self.ptr, enc(arg), fill))
        if file is not None:
            return self._do(lib.ht_kernel_set_init_file(self.ptr, enc(arg), enc(os.fspath(file))))
        return self._do(lib.ht_kernel_set_init(self.ptr, enc(arg), _choice(_INIT, kind, "init kind")))

    def reference(self, text=None, path=None, entry=None, language="c", flags=None):
        """The reference that checks every config's output; it takes the kernel's arguments."""
        ref = create(lib.ht_kernel_reference, self.ptr)
        p = None if path is None else os.fspath(path)
        check(lib.ht_kernel_set_source(ref, _language(language), enc(text), enc(p)))
        if entry is not None:
            check(lib.ht_kernel_set_entry(ref, enc(entry)))
        if flags is not None:
            check(lib.ht_kernel_set_flags(ref, enc(flags)))
        return self

    def tolerance(self, rtol=float("nan"), atol=float("nan")):
        return self._do(lib.ht_kernel_set_tolerance(self.ptr, rtol, atol))

    def seed(self, seed):
        return self._do(lib.ht_kernel_set_seed(self.ptr, seed))

    def finish(self):
        """Checks the kernel, its problem and harness together; the Spec does not depend on the builder."""
        return Spec(create(lib.ht_kernel_finish, self.ptr))

    def write_json(self, path):
        """Writes the kernel as a spec file (and its text sources beside it)."""
        check(lib.ht_kernel_write_json(self.ptr, enc(os.fspath(path))))
