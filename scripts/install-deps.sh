#!/bin/sh
# Installs every Debian 12 package hetune's build, tests, examples and benchmarks need.
# Idempotent: packages already present are skipped by apt. Run as root (or with sudo).
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
  clang libclang-rt-14-dev
  python3 python3-jsonschema"

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
echo "install-deps: all packages present"
