"""Every Python block of docs/python.md runs, in order and in one namespace, as a reader would run
them one after another from the repository's root: here from a temporary folder that sees the
repository's examples/ and data/, so the files the blocks write (hetune.db, saxpy.json) stay out of
the source tree."""
import contextlib
import io
import os
import re

import pytest


def python_blocks(text):
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.S | re.M)


def test_blocks_are_found(source_dir):
    assert len(python_blocks((source_dir / "docs/python.md").read_text())) >= 5


def test_every_block_of_the_python_page_runs(source_dir, tmp_path, monkeypatch):
    pytest.importorskip("pandas", reason="the page's blocks make DataFrames")
    pytest.importorskip("numpy", reason="the page's dispatch block uses numpy")
    for folder in ("examples", "data"):
        os.symlink(source_dir / folder, tmp_path / folder)
    monkeypatch.chdir(tmp_path)
    blocks = python_blocks((source_dir / "docs/python.md").read_text())
    namespace = {"__name__": "docs_python"}
    out = io.StringIO()
    for i, block in enumerate(blocks):
        with contextlib.redirect_stdout(out):
            try:
                exec(compile(block, f"docs/python.md block {i + 1}", "exec"), namespace)
            except Exception as e:  # name the block in the failure
                pytest.fail(f"docs/python.md block {i + 1} of {len(blocks)} failed: {e!r}\n{block}")
    printed = out.getvalue()
    assert "Best(config=" in printed
    assert (tmp_path / "saxpy.json").exists() and (tmp_path / "hetune.db").exists()
