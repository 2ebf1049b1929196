"""A dispatched computation run on numpy arrays: decided per call, computed in place."""
import json

import numpy as np
import pytest

import hetune
from test_tune import saxpy_kernel


@pytest.fixture
def computation(tmp_path, store):
    with saxpy_kernel(n=1024, base_dir=tmp_path) as k:
        k.write_json(tmp_path / "saxpy.json")
    (tmp_path / "saxpy_dispatch.json").write_text(json.dumps({
        "name": "saxpy", "selector": "history", "bucket": "exact",
        "variants": [{"spec": "saxpy.json", "device": "c", "config": "UNROLL=1"},
                     {"spec": "saxpy.json", "device": "c", "config": "UNROLL=4"}]}))
    with hetune.Computation.load(tmp_path / "saxpy_dispatch.json", store) as c:
        yield c


def test_run_on_numpy_arrays(computation, store):
    assert computation.name == "saxpy" and len(computation.variants) == 2
    assert "UNROLL=4" in computation.variants[1]
    n = 5000
    x = np.linspace(-1, 1, n, dtype=np.float32)
    y = np.ones(n, dtype=np.float32)
    decisions = []
    for _ in range(4):
        y0 = y.copy()
        decisions.append(computation.run({"N": n}, {"y": y, "x": x}))
        np.testing.assert_allclose(y, y0 + np.float32(2.5) * x, rtol=1e-6, atol=1e-6)
    assert {d["variant"] for d in decisions} == {0, 1}  # both tried before one is known faster
    assert all(d["kernel_s"] > 0 and d["config"] in ("UNROLL=1", "UNROLL=4") for d in decisions)
    d = computation.decide({"N": n})
    assert d["source"] in ("measured", "cached", "explore") and d["label"] == computation.variants[d["variant"]]
    computation.run({"N": 64}, [np.zeros(64, np.float32), np.ones(64, np.float32)])  # a list, in order
    computation.close()
    assert store.evaluations() == []  # dispatch logs calls, it does not store evaluations


def test_wrong_arrays_are_errors(computation):
    n = 100
    with pytest.raises(hetune.Error, match="argument y needs .* float32, got ndarray of float64"):
        computation.run({"N": n}, {"y": np.zeros(n), "x": np.zeros(n, np.float32)})
    with pytest.raises(hetune.Error, match="no array for argument x"):
        computation.run({"N": n}, {"y": np.zeros(n, np.float32)})
    with pytest.raises(hetune.Error, match="unknown size M"):
        computation.decide({"M": 3})
    with pytest.raises(hetune.Error):  # too short for N
        computation.run({"N": n}, {"y": np.zeros(10, np.float32), "x": np.zeros(10, np.float32)})
