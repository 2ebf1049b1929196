#!/bin/sh
# Installs every Debian 12 package hetune's build, tests, examples and benchmarks need.
# Idempotent: packages already present are skipped by apt. Run as root (or with sudo).
# libstarpu-dev (StarPU 1.3, with OpenCL workers) is only for bench/bench_starpu.c, the side-by-side
# comparison; the build skips that benchmark where StarPU is missing. starpu-tools
# (starpu_perfmodel_display) reads the StarPU perfmodel export in test_interop. groff-base renders
# the man pages that test_man checks (minimal Debian images lack it).
set -eu

PACKAGES="build-essential cmake pkg-config git
  libcmocka-dev
  ocl-icd-opencl-dev opencl-headers ocl-icd-libopencl1 pocl-opencl-icd clinfo
  libsqlite3-dev sqlite3
  libjansson-dev
  libffi-dev
  libopenblas-dev liblapacke-dev
  libxgboost-dev libsvm-dev
  libhwloc-dev
  libclblast1
  libstarpu-dev starpu-tools
  clang libclang-rt-14-dev
  python3 python3-jsonschema python3-venv
  groff-base"

missing=""
for p in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done

if [ -n "$missing" ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  # shellcheck disable=SC2086
  $SUDO apt-get install -y -q --no-install-recommends $missing
fi
# Kernel Tuner 1.5 from PyPI, in a virtual environment of its own (HETUNE_VENV, default
# /opt/hetune/venv): the interop test replays hetune's Kernel Tuner cache export with it. Without
# PyPI the rest still works and that test is skipped.
VENV="${HETUNE_VENV:-/opt/hetune/venv}"
if ! "$VENV/bin/python3" -c "import kernel_tuner" > /dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  if $SUDO python3 -m venv "$VENV" && $SUDO "$VENV/bin/pip" install -q "kernel_tuner==1.5.0"; then
    echo "install-deps: Kernel Tuner 1.5.0 installed in $VENV"
  else
    echo "install-deps: could not install Kernel Tuner from PyPI; the Kernel Tuner interop test will be skipped" >&2
  fi
fi
# The Python binding's tests (ctest test_python) in the same environment: pytest, nbconvert and
# ipykernel to run the example notebook, setuptools to pip-install python/ without PyPI; pandas and
# numpy come with Kernel Tuner. Without PyPI that test is skipped.
PY_TEST_PACKAGES="pytest==9.2.0 nbconvert==7.17.2 ipykernel==7.4.0 setuptools==84.2.1 pandas numpy"
if [ -x "$VENV/bin/python3" ] && ! "$VENV/bin/python3" -c "import pytest, nbconvert, ipykernel, pandas, numpy, setuptools, sys; sys.exit(int(setuptools.__version__.split('.')[0]) < 77)" > /dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  # shellcheck disable=SC2086
  if $SUDO "$VENV/bin/pip" install -q $PY_TEST_PACKAGES; then
    echo "install-deps: the Python binding's test packages installed in $VENV"
  else
    echo "install-deps: could not install pytest/nbconvert from PyPI; the Python binding's test will be skipped" >&2
  fi
fi
echo "install-deps: all packages present"
