"""Models trained on a store's measurements, predictions with bands, stored and loaded again."""
import pytest

import hetune


@pytest.fixture
def trained_store(vadd, store):
    # every config of a small slice of the space, at four sizes: enough rows for both bands
    vadd.add_constraint("NTHREADS == 1 && CHUNK == 0")
    for n in (20000, 40000, 80000, 160000):
        vadd.tune(store, strategy="brute_force", budget="all", sizes={"N": n})
    return store


def test_train_and_predict_with_bands(vadd, trained_store):
    m = hetune.Model.train(trained_store, vadd, device="c", kind="linear")
    assert m.kind == "linear" and m.info["rows"] == 16 and m.info["problems"] == 4
    assert m.info["device"].startswith("c:")
    p = m.predict({"NTHREADS": 1, "CHUNK": 0, "UNROLL": 4}, {"N": 60000})
    assert p.time > 0 and p.lo is not None and p.lo <= p.time <= p.hi or p.lo <= p.hi
    time, lo, hi = m.predict("NTHREADS=1,CHUNK=0,UNROLL=4", {"N": 60000})  # a tuple, a text config
    assert (time, lo, hi) == tuple(p)
    # beyond the training sizes the band comes from the size hold-out
    far = m.predict({"NTHREADS": 1, "CHUNK": 0, "UNROLL": 4}, {"N": 1280000})
    assert far.time > p.time and far.lo is not None
    assert (far.lo / far.time, far.hi / far.time) != pytest.approx((lo / time, hi / time))


def test_a_saved_model_loads_with_its_bands(vadd, trained_store):
    m = hetune.Model.train(trained_store, vadd, device="c:0", kind="auto")
    name = m.save(trained_store)
    assert name == "vadd_c.%s" % m.kind
    again = hetune.Model.load(trained_store, vadd)
    cfg = {"NTHREADS": 1, "CHUNK": 0, "UNROLL": 2}
    assert again.kind == m.kind and again.predict(cfg, {"N": 50000}) == pytest.approx(m.predict(cfg, {"N": 50000}))
    assert hetune.Model.load(trained_store, vadd, name="nosuch") is None


def test_model_errors(vadd, trained_store, store):
    with pytest.raises(hetune.Error, match="UNROLL"):
        hetune.Model.train(trained_store, vadd, kind="linear").predict({"NTHREADS": 1, "CHUNK": 0})
    with pytest.raises(hetune.Error, match="no_such_kind"):
        hetune.Model.train(trained_store, vadd, kind="no_such_kind")
