#!/bin/sh
# hetune's libraries for a machine that has a compiler, CMake and CUDA but none of Debian's packages
# and no network (the lent GPU machine): fetch the Debian 12 packages here, unpack them there.
#
#   scripts/gpu_deps.sh fetch [DIR]          here (network): .deb files into DIR (default .gpu/debs,
#                                            git-ignored; carry ".gpu" to the GPU machine)
#   eval "$(scripts/gpu_deps.sh unpack [DIR] [ROOT])"
#                                            there: unpack into ROOT (default /tmp/htdeps); prints the
#                                            export lines (PKG_CONFIG_*, CMAKE_PREFIX_PATH,
#                                            LD_LIBRARY_PATH, ...) that make the build and the programs
#                                            find them
#
# The packages need glibc >= 2.34 and libstdc++ from GCC >= 11 (checked on 2026-11-22 with
# objdump -T); unpack warns when the machine's glibc is older. Messages go to stderr.

# Runtime and development packages of every library hetune links (CMakeLists.txt), the tests'
# cmocka, and pkgconf for machines without pkg-config. Alternatives (libblas.so.3 and friends) are
# not set up by dpkg -x: unpack links OpenBLAS's in their place.
GPU_DEPS_PACKAGES="libsqlite3-0 libsqlite3-dev libjansson4 libjansson-dev libffi8 libffi-dev
  liblapacke liblapacke-dev libtmglib3 liblapack3 libblas3 libopenblas0 libopenblas0-pthread libopenblas-dev
  libopenblas-pthread-dev libgfortran5 libquadmath0 libxgboost0 libxgboost-dev libdmlc0 libsvm3 libsvm-dev
  ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-c-headers opencl-clhpp-headers libcmocka0 libcmocka-dev
  pkgconf pkgconf-bin libpkgconf3"

gpu_deps_fetch() {
  dir=${1:-.gpu/debs}
  mkdir -p "$dir" || return 1
  # shellcheck disable=SC2086
  (cd "$dir" && apt-get download $GPU_DEPS_PACKAGES) || { echo "gpu_deps: apt-get download failed" >&2; return 1; }
  echo "gpu_deps: $(ls "$dir"/*.deb | wc -l) packages, $(du -sh "$dir" | cut -f1), in $dir" >&2
}

gpu_deps_unpack() {
  dir=${1:-.gpu/debs}
  root=${2:-/tmp/htdeps}
  ls "$dir"/*.deb >/dev/null 2>&1 || { echo "gpu_deps: no .deb files in $dir (run fetch here first)" >&2; return 1; }
  glibc=$(ldd --version 2>/dev/null | head -1 | grep -o '[0-9]*\.[0-9]*$')
  case $glibc in
    2.[0-9] | 2.[12][0-9] | 2.3[0-3]) echo "gpu_deps: glibc $glibc here; the packages need 2.34 or later" >&2 ;;
  esac
  mkdir -p "$root" || return 1
  for f in "$dir"/*.deb; do dpkg-deb -x "$f" "$root" 2>/dev/null || dpkg -x "$f" "$root" || return 1; done
  lib=$root/usr/lib/x86_64-linux-gnu
  for l in libblas.so libblas.so.3 liblapack.so liblapack.so.3 libopenblas.so libopenblas.so.0; do
    ln -sf "openblas-pthread/$l" "$lib/$l"
  done
  ln -sf ../openblas-pthread/pkgconfig/blas-openblas.pc "$lib/pkgconfig/blas.pc"
  ln -sf ../openblas-pthread/pkgconfig/lapack-openblas.pc "$lib/pkgconfig/lapack.pc"
  if ! command -v pkg-config >/dev/null 2>&1; then
    [ -e "$root/usr/bin/pkg-config" ] || ln -sf pkgconf "$root/usr/bin/pkg-config"
    echo "export PATH='$root/usr/bin:$PATH'"
  fi
  echo "export PKG_CONFIG_SYSROOT_DIR='$root'"
  echo "export PKG_CONFIG_LIBDIR='$lib/pkgconfig:$lib/openblas-pthread/pkgconfig:$root/usr/share/pkgconfig'"
  echo "export CMAKE_PREFIX_PATH='$root/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}'"
  echo "export LD_LIBRARY_PATH='$lib:$lib/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}'"
  echo "export LIBRARY_PATH='$lib:$lib/openblas-pthread${LIBRARY_PATH:+:$LIBRARY_PATH}'"
  echo "export C_INCLUDE_PATH='$root/usr/include${C_INCLUDE_PATH:+:$C_INCLUDE_PATH}'"
  echo "gpu_deps: unpacked into $root (glibc here: ${glibc:-unknown})" >&2
}

case ${1:-} in
  fetch) shift; gpu_deps_fetch "$@" ;;
  unpack) shift; gpu_deps_unpack "$@" ;;
  *) echo "usage: scripts/gpu_deps.sh fetch [DIR] | eval \"\$(scripts/gpu_deps.sh unpack [DIR] [ROOT])\"" >&2; exit 2 ;;
esac
