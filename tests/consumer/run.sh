#!/bin/sh
# Installs a built hetune into a fresh prefix and builds a program against it four ways: CMake's
# find_package (shared and static) and pkg-config (hetune and hetune-static), the link lines the
# README gives, and once more as C++ where a C++ compiler is; each program must run. Programs that read ht_spec's or ht_device's fields must not
# compile against the installed headers: those types are opaque there.
# usage: run.sh BUILD_DIR
set -eu
build=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > /dev/null
for page in hetune hetune-tune hetune-model; do
  [ -s "$work/prefix/share/man/man1/$page.1" ] || { echo "manual page $page.1 not installed"; exit 1; }
done
cmake -S "$here" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$work/prefix" > /dev/null
cmake --build "$work/cmake" > /dev/null
LD_LIBRARY_PATH="$work/prefix/lib" "$work/cmake/app"
"$work/cmake/app_static"
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
cc "$here/app.c" -o "$work/pc_shared" $(pkg-config --cflags --libs hetune)
LD_LIBRARY_PATH="$work/prefix/lib" "$work/pc_shared"
cc "$here/app.c" -o "$work/pc_static" $(pkg-config --cflags --libs hetune-static)
"$work/pc_static"
if ldd "$work/pc_static" | grep -q libhetune; then echo "pc_static links libhetune.so"; exit 1; fi
# the same program as C++: every public header declares its functions extern "C"
if command -v c++ > /dev/null 2>&1; then
  c++ -x c++ "$here/app.c" -o "$work/pc_cxx" $(pkg-config --cflags --libs hetune)
  LD_LIBRARY_PATH="$work/prefix/lib" "$work/pc_cxx"
fi
for f in opaque_spec opaque_device; do
  if cc -c "$here/$f.c" -o "$work/$f.o" $(pkg-config --cflags hetune) 2> "$work/$f.log"; then
    echo "$f.c compiled against the installed headers: its type is not opaque"; exit 1
  fi
  grep -q "incomplete" "$work/$f.log" || { echo "$f.c failed for another reason:"; cat "$work/$f.log"; exit 1; }
done
echo "find_package and pkg-config, shared and static (and C++): all build and run; ht_spec and ht_device are opaque"
