"""Shared fixtures: the source tree (examples, data), a store in a temporary folder, and the
vadd example at a small size. HETUNE_LIB points at the library under test (scripts/python_tests.sh
sets it to the build tree's)."""
import os
import pathlib

import pytest

SOURCE_DIR = pathlib.Path(os.environ.get("HETUNE_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))


@pytest.fixture
def source_dir():
    return SOURCE_DIR


@pytest.fixture
def store(tmp_path):
    import hetune
    with hetune.Store(tmp_path / "t.db") as st:
        yield st


@pytest.fixture
def vadd():
    import hetune
    with hetune.Spec.load(SOURCE_DIR / "examples/vadd/vadd_c.json") as spec:
        yield spec
