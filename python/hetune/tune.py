"""Tuning a spec on a device (hetune/tune.h's ht_tune) and what it returns."""
import collections
import ctypes
import math

from ._config import parse_config
from ._frame import Evaluations
from ._lib import (PROGRESS_FN, RunnerOptions, TuneOptions, TuneSummary, check, dec, enc, lib,
                   result_to_dict)

Best = collections.namedtuple("Best", "config time_s")


class TuneResult:
    """What a tuning run found: best (a Best(config, time_s), None when no config succeeded),
    evaluations (an Evaluations list of plain dicts, one per config of this run, reused ones
    included), and the run's counts."""

    def __init__(self, summary, evaluations, params):
        s = summary
        self.session_id = s.session_id
        self.device = dec(s.device.id)
        self.device_name = dec(s.device.name)
        self.problem = dec(s.problem)
        self.measured, self.reused, self.failures = s.measured, s.reused, s.failures
        self.space_size = s.space_size
        self.space_size_exact = bool(s.space_size_exact)
        self.elapsed_s = s.elapsed_s
        self.interrupted = bool(s.interrupted)
        self.best = Best(parse_config(dec(s.best_config), params), s.best.time_s) if s.found else None
        self.evaluations = evaluations

    def to_dataframe(self):
        """The evaluations as a pandas DataFrame: a column per parameter, then the measurements."""
        return self.evaluations.to_dataframe()

    def __repr__(self):
        best = "%s in %.3g s" % (self.best.config, self.best.time_s) if self.best else "no config succeeded"
        return "<hetune.TuneResult %d evaluations on %s, best %s>" % (len(self.evaluations), self.device, best)


def strategies():
    """The names --strategy takes (besides "auto")."""
    return [dec(lib.ht_strategy_at(i)[0]) for i in range(lib.ht_strategy_count())]


def _runner_options(timeout, compile_timeout, in_process, compile_jobs=None):
    ro = RunnerOptions()
    lib.ht_runner_options_default(ctypes.byref(ro))
    if compile_jobs is not None:
        if int(compile_jobs) < 1:
            raise ValueError("compile_jobs %r: expected 1 or more" % (compile_jobs,))
        ro.compile_jobs = int(compile_jobs)
    if timeout is not None:
        ro.timeout_s = timeout
    if compile_timeout is not None:
        ro.compile_timeout_s = compile_timeout
    ro.isolate = 0 if in_process else 1
    return ro


def _tune_options(strategy, budget, budget_seconds, seed, strategy_options, no_reuse, confirm, batch=None):
    o = TuneOptions()
    lib.ht_tune_options_default(ctypes.byref(o))
    if batch is not None:  # None: the library's default, as many as the strategy allows
        if int(batch) < 1:
            raise ValueError("batch %r: expected 1 or more" % (batch,))
        o.batch = int(batch)
    o.strategy = enc(strategy)
    o.strategy_options = enc(strategy_options)
    o.seed = seed
    o.budget_evals = 0 if budget in (None, "all") else int(budget)
    o.budget_seconds = budget_seconds or 0
    o.no_reuse = int(bool(no_reuse))
    o.confirm = confirm
    return o


def tune(spec, store, device="c", strategy="auto", budget=100, seed=1, sizes=None, budget_seconds=None,
         strategy_options=None, no_reuse=False, confirm=0, timeout=None, compile_timeout=None,
         in_process=False, progress=None, batch=None, compile_jobs=None):
    """Tunes spec (a Spec, or a spec file's path) on device ("c", "opencl", "cuda:0", ...), storing
    every evaluation in store (a Store or a path). budget: configs at most (None or "all": no
    limit); sizes: {name: value} for this run (the spec's own sizes are restored after it);
    progress: called with each evaluation's dict as it finishes; batch: configs asked of the
    strategy at a time, whose C kernels are compiled first, compile_jobs at once (default: one
    per hardware thread), then measured one after another (default: two per compile job for
    brute_force, random and auto on small spaces, whose choices do not depend on it; else 1). Ctrl-C stops after the current
    config, keeps what was stored, and raises KeyboardInterrupt."""
    from .spec import Spec
    from .store import Store
    own = []
    if not isinstance(spec, Spec):
        spec = Spec.load(spec)
        own.append(spec)
    if not isinstance(store, Store):
        store = Store(store)
        own.append(store)
    try:
        return _tune(spec, store, device, sizes, progress,
                     _tune_options(strategy, budget, budget_seconds, seed, strategy_options, no_reuse, confirm,
                                   batch),
                     _runner_options(timeout, compile_timeout, in_process, compile_jobs))
    finally:
        for h in own:
            h.close()


def _tune(spec, store, device, sizes, progress, opts, ropts):
    params = spec.params
    evaluations, raised = Evaluations(), []
    stop = ctypes.c_int(0)

    def on_progress(p, _ctx):
        try:
            p = p.contents
            if p.last and p.last_config is not None:
                e = {"config": parse_config(dec(p.last_config), params), "reused": bool(p.last_reused),
                     "confirmation": p.confirm_total > 0}
                e.update(result_to_dict(p.last.contents))
                evaluations.append(e)
                if progress:
                    progress(e)
        except BaseException as exc:  # an exception must not cross the C frames: stop, raise after
            raised.append(exc)
            stop.value = 1

    callback = PROGRESS_FN(on_progress)
    opts.progress = callback
    opts.stop = ctypes.pointer(stop)
    summary = TuneSummary()
    old = spec.sizes
    spec.set_sizes(sizes)
    try:
        check(lib.ht_tune(spec.ptr, enc(device), store.ptr, ctypes.byref(opts), ctypes.byref(ropts),
                          ctypes.byref(summary)), "tune %s on %s" % (spec.name, device))
    finally:
        spec.set_sizes(old)
    if raised:
        raise raised[0]
    if summary.found and math.isnan(summary.best.time_s):
        summary.found = 0
    return TuneResult(summary, evaluations, params)
