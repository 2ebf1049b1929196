"""examples/python/tuning.ipynb runs from start to end (executed with nbconvert), so it cannot rot."""
import pytest


def test_the_example_notebook_runs(source_dir):
    nbformat = pytest.importorskip("nbformat", reason="nbconvert is not installed (scripts/install-deps.sh)")
    nbconvert = pytest.importorskip("nbconvert.preprocessors", reason="nbconvert is not installed")
    pytest.importorskip("ipykernel", reason="ipykernel is not installed (scripts/install-deps.sh)")
    path = source_dir / "examples/python/tuning.ipynb"
    nb = nbformat.read(str(path), as_version=4)
    ep = nbconvert.ExecutePreprocessor(timeout=300, kernel_name="python3")
    ep.preprocess(nb, {"metadata": {"path": str(path.parent)}})  # raises CellExecutionError on a failure
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    text = "".join(o.get("text", "") + str(o.get("data", {}).get("text/plain", "")) for o in outputs)
    assert "predicted" in text and "80% band" in text and "Best(config=" in text
    assert any("image/png" in o.get("data", {}) for o in outputs) or "matplotlib is not installed" in text
