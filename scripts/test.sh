#!/bin/sh
# The README's test command: build with warnings as errors, run every test, then the same tests
# under AddressSanitizer + UndefinedBehaviorSanitizer, then fuzz each parser briefly.
set -eu
cd "$(dirname "$0")/.."
JOBS="$(nproc)"
cmake -S . -B build-test -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHETUNE_WERROR=ON > /dev/null
cmake --build build-test -j"$JOBS"
(cd build-test && ctest --output-on-failure -j"$JOBS")
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DHETUNE_WERROR=ON -DHETUNE_SANITIZE=ON > /dev/null
cmake --build build-asan -j"$JOBS"
# PoCL and the OpenCL ICD loader keep allocations alive until exit by design: leak checking off.
(cd build-asan && ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j"$JOBS")
# XGBoost and libsvm left out: everything else builds and every test passes (those of gbt and svr
# are compiled out, the manual's blocks that need them are left out).
cmake -S . -B build-noml -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHETUNE_WERROR=ON -DHETUNE_WITH_XGBOOST=OFF \
  -DHETUNE_WITH_LIBSVM=OFF > /dev/null
cmake --build build-noml -j"$JOBS"
(cd build-noml && ctest --output-on-failure -j"$JOBS")
# The parsers under libFuzzer (clang) for a bounded time: FUZZ_SECONDS each, a fixed seed so a run
# is repeatable. Long campaigns: scripts/fuzz.sh with a larger FUZZ_SECONDS.
FUZZ_SECONDS="${FUZZ_SECONDS:-10}" FUZZ_SEED="${FUZZ_SEED:-1}" ./scripts/fuzz.sh
