"""Execution-time models (hetune/model.h): trained on stored measurements, predicting the time of
configs and problem sizes never measured, with an 80% band."""
import collections
import ctypes
import json

from . import _lib
from ._config import format_config
from ._handle import Handle, create
from ._lib import MODEL_VISIT, Band, Buf, Dataset, ModelRecord, check, dec, enc, lib

Prediction = collections.namedtuple("Prediction", "time lo hi")
Prediction.__doc__ = ("A predicted time in seconds and its band [lo, hi] (None without one: too little "
                      "training data, or a prediction at the roofline floor).")

BAND_COVERAGE = 0.8


def _device_id(device):
    """The id the store keys a device by ("c:0") for a short one ("c")."""
    if device is None or ":" in device:
        return device
    p = create(lib.ht_device_open, enc(device))
    try:
        return dec(lib.ht_device_info_get(p).contents.id)
    finally:
        lib.ht_device_close(p)


class _Features(Handle):
    _free = lib.ht_features_destroy

    def __init__(self, spec):
        super().__init__(create(lib.ht_features_create, spec.ptr, None))
        self.spec = spec  # the feature set reads the spec: it must outlive it
        spec.depend(self)

    def names(self):
        return [dec(lib.ht_features_name(self.ptr, i)) for i in range(lib.ht_features_count(self.ptr))]

    def compute(self, config, sizes):
        """The feature vector of config ({name: value} or "A=1,B=2") at sizes ({name: value})."""
        spec = self.spec
        n_sizes, n_params = len(spec.sizes), len(spec.params)
        s = (ctypes.c_int64 * max(1, n_sizes))(*spec.sizes.values())
        problem = ",".join("%s=%d" % kv for kv in (sizes or {}).items())
        if problem:
            check(lib.ht_features_parse_problem(spec.ptr, enc(problem), s, b"sizes"))
        params = (_lib.Value * max(1, n_params))()
        check(lib.ht_features_parse_config(spec.ptr, enc(format_config(config)), params, b"config"))
        x = (ctypes.c_double * max(1, lib.ht_features_count(self.ptr)))()
        check(lib.ht_features_compute(self.ptr, s, params, x))
        work = 1.0
        for i in range(n_sizes):
            work *= s[i]
        return x, work


class Model(Handle):
    """A fitted model of one kernel's time. Model.train(store, spec, device) fits one on the
    store's measurements; predict(config, sizes) gives Prediction(time, lo, hi)."""
    _free = lib.ht_model_destroy

    def __init__(self, ptr, spec, info):
        super().__init__(ptr)
        self.spec = spec
        self._features = _Features(spec)
        self.info = info  # rows, work range, bands (ht_band as dicts), device
        names = [dec(lib.ht_model_feature_name(ptr, i)) for i in range(lib.ht_model_n_features(ptr))]
        if names != self._features.names():
            raise _lib.Error("the model was trained on other features (%d) than the spec %s gives (%d): "
                             "was the spec changed? train the model again"
                             % (len(names), spec.name, len(self._features.names())))

    @classmethod
    def train(cls, store, spec, device=None, kind="auto", options=None, seed=1):
        """Fits kind ("auto" picks by validation; hetune model kinds lists them) to the successful
        measurements of spec's kernel in store (only device's when given) and estimates its 80%
        bands: inside the training sizes by cross-validation, beyond them by predicting the largest
        sizes from the others."""
        device = _device_id(device)
        feats = _Features(spec)
        data = ctypes.POINTER(Dataset)()
        try:
            check(lib.ht_dataset_from_store(feats.ptr, store.ptr, enc(device), ctypes.byref(data)))
            d = data.contents
            m = create(lib.ht_model_fit, enc(kind), data, enc(options), seed)
            interp, extrap = Band(), Band()
            status = lib.ht_model_bands(enc(kind), data, enc(options), seed, BAND_COVERAGE, ctypes.byref(interp),
                                        ctypes.byref(extrap))
            work = [d.work[i] for i in range(d.n_rows)]
            info = {"device": device, "rows": d.n_rows, "problems": d.n_groups, "measurements": d.n_measured,
                    "work_min": min(work, default=0), "work_max": max(work, default=0), "band_coverage": BAND_COVERAGE,
                    "band_interp": _band(interp), "band_extrap": _band(extrap)}
            model = cls(m, spec, info)
            if status:
                model.close()
                check(status)
            return model
        finally:
            if data:
                lib.ht_dataset_destroy(data)
            feats.close()

    @classmethod
    def load(cls, store, spec, name=None):
        """The newest stored model named name, else the newest of spec's kernel (as hetune
        predict finds it); None when the store has none."""
        found, errors = [], []

        def visit(rec, _ctx):
            r = rec.contents
            try:
                prov = json.loads(dec(r.provenance_json) or "{}")
                prov["device"], prov["name"] = dec(r.device_id), dec(r.name)
                found.append((create(lib.ht_model_load, r.blob, r.blob_len), prov))
            except (_lib.Error, ValueError) as e:  # an exception must not cross the C frames
                errors.append("%s: model '%s': %s" % (store.path, dec(r.name), e))
            return 1

        check(lib.ht_store_each_model(store.ptr, enc(name), None if name else enc(spec.name), MODEL_VISIT(visit),
                                      None))
        if errors:
            raise _lib.Error(errors[0])
        return cls(found[0][0], spec, found[0][1]) if found else None

    @property
    def kind(self):
        return dec(lib.ht_model_kind(self.ptr))

    @property
    def options(self):
        return dec(lib.ht_model_options(self.ptr))

    def predict(self, config, sizes=None):
        """Prediction(time, lo, hi) in seconds for config ({name: value} or "A=1,B=2") at sizes
        ({name: value}; missing ones keep the spec's). The band is the one inside the training
        sizes or beyond them, as the problem falls; it never reaches below the roofline floor."""
        x, work = self._features.compute(config, sizes)
        t = lib.ht_model_predict(self.ptr, x)
        floor = lib.ht_model_roofline_floor(self.ptr, x)
        inside = self.info.get("work_min", 0) <= work <= self.info.get("work_max", 0)
        band = self.info.get("band_interp" if inside else "band_extrap")
        if not band or (floor > 0 and t <= floor):
            return Prediction(t, None, None)
        lo = max(band[0] * t, floor)
        return Prediction(t, lo, max(band[1] * t, lo))

    def save(self, store, name=None):
        """Stores the model (a new version under name, default KERNEL.KIND) with its provenance and
        bands, where hetune predict and Model.load find it. Returns the name."""
        name = name or "%s.%s" % (self.spec.name, self.kind)
        blob = Buf()
        check(lib.ht_model_save(self.ptr, ctypes.byref(blob)))
        try:
            prov = {k: v for k, v in self.info.items() if k not in ("device", "name")}
            prov.update({"sources": [store.path], "device_filter": self.info.get("device")})
            rec = ModelRecord(name=enc(name), kind=enc(self.kind), options=enc(self.options),
                              kernel_name=enc(self.spec.name), source_hash=enc(self.spec.identity),
                              device_id=enc(self.info.get("device")), spec_path=enc(self.spec.path),
                              n_rows=self.info.get("rows", 0), provenance_json=enc(json.dumps(prov)),
                              blob=blob.data, blob_len=blob.len)
            check(lib.ht_store_put_model(store.ptr, ctypes.byref(rec), ctypes.byref(ctypes.c_int64())))
        finally:
            lib.ht_buf_free(ctypes.byref(blob))
        return name

    def __repr__(self):
        return "<hetune.Model %s of %s>" % (self.kind, self.spec.name) if self._ptr else "<hetune.Model closed>"


def _band(b):
    """[lo, hi] ratios measured / predicted, or None when there was too little data for one."""
    return [b.lo, b.hi] if b.n else None
