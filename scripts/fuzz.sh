#!/bin/sh
# Builds the fuzz harnesses (tests/fuzz/) with clang's libFuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer, and runs each for FUZZ_SECONDS (default 20) on its corpus.
#   scripts/fuzz.sh                  every harness, 20 s each
#   FUZZ_SECONDS=3600 scripts/fuzz.sh spec t1   two harnesses, an hour each
# The working corpus grows in build-fuzz/corpus/NAME (seeded from tests/fuzz/corpus/NAME); an
# input that crashes is saved in build-fuzz/crashes/NAME/ and the script exits 1. Copy it into
# tests/fuzz/corpus/NAME/ with the fix, so every build replays it (ctest fuzz_NAME_corpus).
# Prints one line per harness: executions, seconds, corpus size. Without clang: skips (exit 0).
set -eu
cd "$(dirname "$0")/.."
SECONDS_EACH="${FUZZ_SECONDS:-20}"
if ! command -v clang > /dev/null 2>&1; then
  echo "fuzz: clang not found, fuzzing skipped"
  exit 0
fi
NAMES="${*:-$(ls tests/fuzz/fuzz_*.c | sed 's|.*/fuzz_||; s|\.c$||')}"
CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHETUNE_FUZZ=ON -DHETUNE_TESTS=OFF \
  -DHETUNE_WERROR=ON > /dev/null
for n in $NAMES; do cmake --build build-fuzz -j"$(nproc)" --target "fuzz_$n" > /dev/null; done
export HETUNE_CACHE_DIR="$PWD/build-fuzz/cache"
status=0
for n in $NAMES; do
  corpus="build-fuzz/corpus/$n" crashes="build-fuzz/crashes/$n"
  mkdir -p "$corpus" "$crashes"
  cp -n tests/fuzz/corpus/"$n"/* "$corpus"/ 2> /dev/null || true
  log="build-fuzz/fuzz_$n.log"
  if ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 ./build-fuzz/"fuzz_$n" -max_total_time="$SECONDS_EACH" \
    -timeout=10 -rss_limit_mb=2048 -seed="${FUZZ_SEED:-0}" -artifact_prefix="$crashes/" "$corpus" > "$log" 2>&1; then
    result=ok
  else
    result="FOUND A CRASH (see $log and $crashes)"
    status=1
  fi
  execs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -1)
  echo "fuzz $n: ${execs:-?} executions in ${SECONDS_EACH} s, corpus $(ls "$corpus" | wc -l) inputs: $result"
done
exit $status
