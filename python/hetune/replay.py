"""Recorded spaces and strategies replayed on them without a device (hetune/replay.h)."""
import ctypes
import math
import os

from . import _lib
from ._frame import Records
from ._handle import Handle, create
from ._lib import RecordedStats, ReplayOptions, ReplayTrace, check, dec, enc, lib


class ReplayResult:
    """One strategy run on a recorded space: steps (a Records list of {t, value, best}: the
    simulated time each evaluation finished, its time, the best so far; None for a failure),
    best (the best config's {name: value}, None when none succeeded) and best_time_s."""

    def __init__(self, trace, space):
        steps = [trace.steps[i] for i in range(trace.n)]
        self.steps = Records({"t": s.t, "value": _finite(s.value), "best": _finite(s.best)} for s in steps)
        self.strategy_s, self.max_ask_s = trace.strategy_s, trace.max_ask_s
        self.best = _config_dict(space, trace.best_config) if trace.found else None
        self.best_time_s = self.steps[-1]["best"] if self.steps else None

    def to_dataframe(self):
        return self.steps.to_dataframe()

    def __repr__(self):
        return "<hetune.ReplayResult %d evaluations, best %s>" % (len(self.steps), self.best)


class Recorded(Handle):
    """A recorded space: every config of a space measured once. Recorded.load(path) reads a
    hetune CSV export, T4 results JSON or Kernel Tuner cache file (data/spaces/*.csv);
    Recorded.from_store(store, kernel, device, problem) takes a store's evaluations."""
    _free = lib.ht_recorded_destroy

    @classmethod
    def load(cls, path):
        return cls(create(lib.ht_recorded_load, enc(os.fspath(path))))

    @classmethod
    def from_store(cls, store, kernel, device, problem=None):
        kernel = getattr(kernel, "name", kernel)
        return cls(create(lib.ht_recorded_from_store, store.ptr, enc(kernel), enc(device), enc(problem)))

    @property
    def name(self):
        return dec(lib.ht_recorded_name(self.ptr))

    def __len__(self):
        return lib.ht_recorded_size(self.ptr)

    @property
    def stats(self):
        """configs (n), successes (n_ok), f_opt, f_median, f_worst, mean_cost_s, total_cost_s."""
        s = RecordedStats()
        lib.ht_recorded_stats_get(self.ptr, ctypes.byref(s))
        return {name: getattr(s, name) for name, _ in RecordedStats._fields_}

    def replay(self, strategy="random", budget=None, seed=1, budget_seconds=None, strategy_options=None,
               charge_strategy_time=True):
        """Runs strategy through the recorded space: budget configs at most, or budget_seconds of
        recorded time (evaluation costs plus, by default, the strategy's own time)."""
        o = ReplayOptions()
        lib.ht_replay_options_default(ctypes.byref(o))
        o.strategy, o.strategy_options, o.seed = enc(strategy), enc(strategy_options), seed
        o.budget_evals = int(budget or 0)
        o.budget_seconds = budget_seconds or 0
        o.charge_strategy_time = int(bool(charge_strategy_time))
        trace = ReplayTrace()
        check(lib.ht_replay(self.ptr, ctypes.byref(o), ctypes.byref(trace)), "replay %s" % strategy)
        try:
            return ReplayResult(trace, lib.ht_recorded_space(self.ptr))
        finally:
            lib.ht_replay_trace_free(ctypes.byref(trace))

    def __repr__(self):
        return "<hetune.Recorded %s, %d configs>" % (self.name, len(self)) if self._ptr else "<hetune.Recorded closed>"


def _finite(x):
    return x if math.isfinite(x) else None


def _config_dict(space, cfg):
    return {dec(lib.ht_space_param_name(space, p)): _lib.value_to_py(lib.ht_space_value(space, p, cfg.idx[p]))
            for p in range(lib.ht_space_param_count(space))}
