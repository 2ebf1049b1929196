"""The store: the SQLite database of every measurement (hetune/store.h), read as plain Python."""
import ctypes
import json
import os
import statistics

from ._frame import Evaluations
from ._handle import Handle, create
from ._lib import EVAL_VISIT, SESSION_VISIT, EvalFilter, check, dec, enc, lib, result_to_dict


class Store(Handle):
    """A hetune database, opened (created when missing) at path, by default $HETUNE_DB or
    hetune.db as the hetune command does; readonly=True never writes."""
    _free = lib.ht_store_close

    def __init__(self, path=None, readonly=False):
        path = path if path is not None else os.environ.get("HETUNE_DB") or "hetune.db"
        opener = lib.ht_store_open_readonly if readonly else lib.ht_store_open
        super().__init__(create(opener, enc(os.fspath(path))))

    @property
    def path(self):
        return dec(lib.ht_store_path(self.ptr))

    def evaluations(self, kernel=None, device=None, problem=None, only_ok=False):
        """Every stored evaluation (oldest first), filtered by kernel (a name or a Spec), device id
        ("c:0") and problem ("N=4096"), as an Evaluations list of plain dicts. A kernel's name
        covers every version of its source: source_hash tells them apart (a Spec's identity)."""
        name = getattr(kernel, "name", kernel)
        flt = EvalFilter(enc(name), enc(device), enc(problem), int(bool(only_ok)))
        rows, errors = [], []

        def visit(rec, _ctx):
            try:
                rows.append(_record_to_dict(rec.contents))
            except BaseException as e:  # an exception must not cross the C frames
                errors.append(e)
                return 1
            return 0

        check(lib.ht_store_each_eval(self.ptr, ctypes.byref(flt), EVAL_VISIT(visit), None))
        if errors:
            raise errors[0]
        return Evaluations(rows)

    def sessions(self):
        """Every tuning session: kernel, device, problem, strategy, status, evaluations, best time."""
        rows = []

        def visit(rec, _ctx):
            r = rec.contents
            rows.append({"session_id": r.session_id, "kernel": dec(r.kernel_name), "device": dec(r.device_id),
                         "problem": dec(r.problem), "strategy": dec(r.strategy), "status": dec(r.status),
                         "seed": r.seed, "n_evals": r.n_evals, "budget_evals": r.budget_evals,
                         "started": r.started, "ended": r.ended, "best_time_s": r.best_time_s})
            return 0

        check(lib.ht_store_each_session(self.ptr, SESSION_VISIT(visit), None))
        return rows

    def best(self, kernel, device=None, problem=None):
        """The stored evaluation with the lowest time among those selected (a config measured
        several times counts with the median of its times), or None."""
        ok = self.evaluations(kernel, device, problem, only_ok=True)
        by_config = {}
        for e in ok:
            by_config.setdefault((e["device"], e["problem"], e["config_key"]), []).append(e)
        best = None
        for evals in by_config.values():
            median = statistics.median(e["time_s"] for e in evals)
            if best is None or median < best["time_s"]:
                best = dict(evals[-1], time_s=median, measurements=len(evals))
        return best

    def __repr__(self):
        return "<hetune.Store %s>" % self.path if self._ptr else "<hetune.Store closed>"


def _record_to_dict(r):
    d = {"eval_id": r.eval_id, "session_id": r.session_id, "kernel": dec(r.kernel_name),
         "language": dec(r.language), "source_hash": dec(r.source_hash), "device": dec(r.device_id),
         "device_name": dec(r.device_name), "problem": dec(r.problem), "config_key": dec(r.config_key),
         "config": json.loads(dec(r.config_json) or "{}")}
    d.update(result_to_dict(r.result))
    return d
