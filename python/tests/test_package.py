"""The package itself: its version, how it finds the library, and its errors."""
import os
import re
import subprocess
import sys

import pytest

import hetune


def test_version_is_the_projects(source_dir):
    cmake = (source_dir / "CMakeLists.txt").read_text()
    assert hetune.__version__ == re.search(r"project\(hetune VERSION ([0-9.]+)", cmake).group(1)


def test_a_missing_library_is_an_import_error_naming_what_was_tried(tmp_path):
    env = dict(os.environ, HETUNE_LIB=str(tmp_path / "nowhere.so"))
    r = subprocess.run([sys.executable, "-c", "import hetune"], env=env, capture_output=True, text=True)
    assert r.returncode != 0
    assert "ImportError" in r.stderr and "nowhere.so ($HETUNE_LIB)" in r.stderr


def test_a_bad_spec_file_names_file_line_and_column(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{\n  "name": "x",\n  "language": "c",,\n}\n')
    with pytest.raises(hetune.Error) as e:
        hetune.Spec.load(bad)
    assert "bad.json:3:" in str(e.value)
    assert e.value.status == "parse"


def test_an_unknown_key_is_an_error(tmp_path, source_dir):
    text = (source_dir / "examples/vadd/vadd_c.json").read_text().replace('"entry"', '"entri"')
    (tmp_path / "vadd.c").write_text((source_dir / "examples/vadd/vadd.c").read_text())
    (tmp_path / "vadd_ref.c").write_text((source_dir / "examples/vadd/vadd_ref.c").read_text())
    (tmp_path / "v.json").write_text(text)
    with pytest.raises(hetune.Error, match="entri"):
        hetune.Spec.load(tmp_path / "v.json")


def test_a_foreign_database_is_refused_and_left_alone(tmp_path):
    f = tmp_path / "not.db"
    f.write_bytes(b"not a database at all" * 100)
    with pytest.raises(hetune.Error) as e:
        hetune.Store(f)
    assert e.value.status == "store" and str(f) in str(e.value)
    assert f.read_bytes() == b"not a database at all" * 100


def test_a_closed_handle_says_so(vadd, tmp_path):
    st = hetune.Store(tmp_path / "x.db")
    st.close()
    st.close()  # twice is harmless
    with pytest.raises(ValueError, match="Store is closed"):
        st.evaluations()


def test_spec_reads_as_plain_python(vadd):
    assert vadd.name == "vadd_c" and vadd.language == "c"
    assert vadd.sizes == {"N": 10000000}
    assert vadd.params["UNROLL"] == [1, 2, 4, 8] and len(vadd.params["NTHREADS"]) == 64
    assert [a["name"] for a in vadd.args] == ["c", "a", "b", "n"]
    assert vadd.args[0]["access"] == "write" and not vadd.args[3]["buffer"]
    assert re.fullmatch(r"[0-9a-f]{16}", vadd.identity)
    with pytest.raises(hetune.Error, match="M"):
        vadd.set_sizes({"M": 3})


def test_to_dataframe_without_pandas_says_what_to_install():
    code = ("import sys; sys.modules['pandas'] = None\n"
            "import hetune._frame as f\n"
            "try:\n    f.Records([{'a': 1}]).to_dataframe()\n"
            "except ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "needs pandas" in out and "pip install pandas" in out


def test_the_default_store_is_hetune_db_as_for_the_command(tmp_path, monkeypatch):
    monkeypatch.setenv("HETUNE_DB", str(tmp_path / "env.db"))
    with hetune.Store() as st:
        assert st.path == str(tmp_path / "env.db")
    assert (tmp_path / "env.db").exists()
    with pytest.raises(hetune.Error) as e:
        hetune.Store(tmp_path / "missing.db", readonly=True)
    assert e.value.status == "io" and not (tmp_path / "missing.db").exists()


def test_config_texts_with_escapes_read_back():
    from hetune._config import format_config, parse_config
    cfg = {"VEC": "float4,x", "EQ": "a=b", "T": 16, "F": 0.5}
    text = format_config(cfg)
    assert text == "VEC=float4\\,x,EQ=a\\=b,T=16,F=0.5"
    assert parse_config(text, {"VEC": ["float4,x"], "EQ": ["a=b"], "T": [16], "F": [0.5]}) == cfg
    assert parse_config(text) == cfg  # without the space, types are read from the text


def test_the_package_ships_the_projects_license(source_dir):
    ours = (source_dir / "python" / "LICENSE").read_text()
    assert ours == (source_dir / "LICENSE").read_text()
    from importlib import metadata
    dist = metadata.distribution("hetune")
    shipped = [f for f in dist.files if f.name == "LICENSE"]
    assert shipped, "the installed package has no LICENSE file"
    assert shipped[0].read_text() == ours
    assert dist.metadata["License-Expression"] == "MIT"
