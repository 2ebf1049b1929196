"""Tuning on the c device with tiny budgets and sizes, results read back as Python objects."""
import math

import pytest

import hetune

SAXPY = """#ifndef UNROLL
#define UNROLL 1
#endif
void saxpy(float *y, const float *x, float alpha, int n) {
  int i = 0;
  for (; i + UNROLL <= n; i += UNROLL)
    for (int u = 0; u < UNROLL; u++) y[i + u] += alpha * x[i + u];
  for (; i < n; i++) y[i] += alpha * x[i];
}
"""
SAXPY_REF = """void saxpy_ref(float *y, const float *x, float alpha, int n) {
  for (int i = 0; i < n; i++) y[i] += alpha * x[i];
}
"""


def saxpy_kernel(n=4096, text=SAXPY, base_dir=None):
    """The saxpy of docs/kernel-api.md, built in code; its texts are named, so write_json writes
    each to a file of its own."""
    k = hetune.Kernel("saxpy_py", language="c", source=text, path="saxpy.c", entry="saxpy", flags="-O2",
                      base_dir=base_dir)
    (k.size("N", n)
      .buffer("y", "float", "N", "readwrite").buffer("x", "float", "N", "read")
      .scalar("alpha", "float", "2.5").scalar("n", "int32", "N")
      .param_pow2("UNROLL", 1, 8).constraint("UNROLL <= N")
      .work("2.0*N", "12.0*N").metric("GB/s", "12.0*N/time_s/1e9")
      .init("x", random=(-1, 1)).reference(SAXPY_REF, path="saxpy_ref.c", entry="saxpy_ref").tolerance(1e-6, 1e-6))
    return k


def test_tune_a_spec_file(vadd, store):
    r = vadd.tune(store, device="c", strategy="random", budget=4, seed=1, sizes={"N": 20000})
    assert r.device.startswith("c:") and r.problem == "N=20000"
    assert len(r.evaluations) == 4 and r.measured == 4 and r.reused == 0
    assert all(e["status"] == "ok" and e["time_s"] > 0 for e in r.evaluations)
    assert set(r.evaluations[0]["config"]) == {"NTHREADS", "CHUNK", "UNROLL"}
    assert r.best.time_s == min(e["time_s"] for e in r.evaluations)
    assert r.best.config in [e["config"] for e in r.evaluations]
    assert isinstance(r.best.config["UNROLL"], int)
    assert vadd.sizes == {"N": 10000000}  # the run's sizes do not stay
    df = r.to_dataframe()
    assert list(df.columns[:3]) == ["NTHREADS", "CHUNK", "UNROLL"] and len(df) == 4
    assert df["time_s"].min() == r.best.time_s


def test_a_batch_compiled_ahead(vadd, store):
    r = vadd.tune(store, strategy="random", budget=6, seed=2, sizes={"N": 20000}, batch=3, compile_jobs=2)
    assert r.measured == 6 and all(e["status"] == "ok" for e in r.evaluations)
    assert all(e["compile_s"] >= 0 for e in r.evaluations)
    with pytest.raises(ValueError):
        vadd.tune(store, strategy="random", budget=2, batch=0)
    with pytest.raises(ValueError):
        vadd.tune(store, strategy="random", budget=2, compile_jobs=0)


def test_a_second_run_reuses_the_store_and_the_store_reads_back(vadd, store):
    first = vadd.tune(store, strategy="random", budget=3, sizes={"N": 20000})
    again = vadd.tune(store, strategy="random", budget=3, sizes={"N": 20000})
    assert again.reused == 3 and again.measured == 0 and all(e["reused"] for e in again.evaluations)
    assert again.best == first.best
    stored = store.evaluations(vadd, problem="N=20000")
    assert len(stored) == 3 and stored[0]["kernel"] == "vadd_c"
    assert {e["config_key"] for e in stored} == {hetune_config(e["config"]) for e in first.evaluations}
    assert store.best(vadd)["time_s"] == first.best.time_s
    assert store.evaluations("another_kernel") == []
    assert [s["strategy"] for s in store.sessions()] == ["random", "random"]
    assert len(store.evaluations().to_dataframe()) == 3


def hetune_config(d):
    return ",".join("%s=%s" % kv for kv in d.items())


def test_a_kernel_built_in_code_tunes_and_writes_its_spec(store, tmp_path):
    with saxpy_kernel(base_dir=tmp_path) as k, k.finish() as spec:
        assert spec.path is None and spec.params == {"UNROLL": [1, 2, 4, 8]}
        r = spec.tune(store, strategy="brute_force", budget="all")
        assert len(r.evaluations) == 4 and r.best is not None
        assert "GB/s" in r.evaluations[0]["metrics"]
        k.write_json(tmp_path / "saxpy.json")
    with hetune.Spec.load(tmp_path / "saxpy.json") as again:
        assert again.name == "saxpy_py" and again.params == {"UNROLL": [1, 2, 4, 8]}


def test_a_wrong_config_is_a_result_and_tuning_goes_on(store, tmp_path):
    wrong = SAXPY.replace("y[i + u] += alpha * x[i + u]", "y[i + u] += (UNROLL == 4 ? 3.0f : alpha) * x[i + u]")
    with saxpy_kernel(text=wrong, base_dir=tmp_path) as k, k.finish() as spec:
        r = spec.tune(store, strategy="brute_force", budget="all")
    by_unroll = {e["config"]["UNROLL"]: e for e in r.evaluations}
    assert by_unroll[4]["status"] == "correctness" and by_unroll[4]["time_s"] is None
    assert "expected" in by_unroll[4]["message"]
    assert by_unroll[2]["status"] == "ok" and r.best.config["UNROLL"] != 4


def test_builder_errors_name_the_kernel_and_field(tmp_path):
    with hetune.Kernel("bad", language="c", source=SAXPY, entry="saxpy", base_dir=tmp_path) as k:
        k.size("N", 16).buffer("y", "float", "N * M", "readwrite")
        with pytest.raises(hetune.Error, match='kernel "bad".*M'):
            k.finish()
        with pytest.raises(hetune.Error, match="access"):
            k.buffer("z", "float", "N", "sideways")
        with pytest.raises(hetune.Error):
            k.buffer("z", "complex128", "N")


def test_an_unknown_device_or_strategy_is_an_error(vadd, store):
    with pytest.raises(hetune.Error, match="nosuch"):
        vadd.tune(store, device="nosuch", budget=1)
    with pytest.raises(hetune.Error, match="fastest_first"):
        vadd.tune(store, strategy="fastest_first", budget=1, sizes={"N": 1000})
    assert "bayes" in hetune.strategies()


def test_an_exception_in_progress_stops_the_run_and_keeps_what_was_stored(vadd, store):
    seen = []

    def progress(e):
        seen.append(e)
        if len(seen) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        vadd.tune(store, strategy="random", budget=10, sizes={"N": 20000}, progress=progress)
    assert len(seen) == 2
    assert len(store.evaluations(vadd)) == 2
    assert store.sessions()[0]["status"] == "interrupted"
    assert not math.isnan(store.best(vadd)["time_s"])
