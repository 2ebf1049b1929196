#!/bin/sh
# The Python binding's tests (ctest test_python): installs the package with pip into a folder of
# its own, checks that it imports and tunes an example into a DataFrame, then runs python/tests
# with pytest (the example notebook included), all against the build tree's libhetune.so.
# usage: python_tests.sh PYTHON SOURCE_DIR WORK_DIR LIBHETUNE [SANITIZED]
# Exit 77 (skipped) where the test cannot run: a sanitizer build (ctypes would need the
# sanitizer runtime preloaded into Python) or a Python without pip, pytest, pandas or numpy
# (scripts/install-deps.sh installs them in its virtual environment).
set -eu
PY="$1" SRC="$2" WORK="$3" LIB="$4" SANITIZED="${5:-OFF}"
case "$SANITIZED" in
  ON|on|1|TRUE|true)
    echo "skipped: libhetune is built with sanitizers; loading it into Python would need libasan preloaded"
    exit 77 ;;
esac
for m in pip pytest pandas numpy; do
  if ! "$PY" -c "import $m" > /dev/null 2>&1; then
    echo "skipped: $PY lacks the Python package '$m' (scripts/install-deps.sh installs it in \$HETUNE_VENV)"
    exit 77
  fi
done
# the package's build backend, without PyPI: the environment's setuptools (77 reads its license)
if ! "$PY" -c "import setuptools, sys; sys.exit(int(setuptools.__version__.split('.')[0]) < 77)" > /dev/null 2>&1; then
  echo "skipped: $PY lacks setuptools 77 or newer (scripts/install-deps.sh installs it in \$HETUNE_VENV)"
  exit 77
fi
rm -rf "$WORK"
mkdir -p "$WORK"
# pip builds in the folder it is given: a copy keeps build files out of the source tree
cp -r "$SRC/python" "$WORK/pkg"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore PYTHONDONTWRITEBYTECODE=1
"$PY" -m pip install -q --no-deps --no-build-isolation --target "$WORK/site" "$WORK/pkg"
export PYTHONPATH="$WORK/site" HETUNE_LIB="$LIB" HETUNE_SOURCE_DIR="$SRC"
cd "$WORK"
# what a user first types: import, tune an example, get a DataFrame
"$PY" -c "
import hetune
df = hetune.Spec.load('$SRC/examples/vadd/vadd_c.json').tune('smoke.db', device='c', budget=3, sizes={'N': 10000}).to_dataframe()
assert len(df) == 3 and (df.status == 'ok').all(), df
print('imported hetune from', hetune.__file__, 'and tuned vadd_c:', len(df), 'rows')
"
"$PY" -m pytest -q -p no:cacheprovider "$SRC/python/tests"
