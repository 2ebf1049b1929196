#!/bin/sh
# Cold-cache tuning of a C kernel, every config of its space, asked one at a time (--batch 1) and
# in batches whose kernels are compiled in parallel first (--batch B), rounds alternating, each run
# with an empty compile cache and database of its own. Prints per run: wall time, evaluations, the
# sum of their build times and the best kernel time (the measurements must not change).
# Usage: bench/compile_batch.sh SPEC [BUILD_DIR] [B] [ROUNDS]
set -eu
cd "$(dirname "$0")/.."
SPEC="$1"
BUILD="${2:-build}"
BATCH="${3:-8}"
ROUNDS="${4:-2}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
round=1
while [ "$round" -le "$ROUNDS" ]; do
  for b in 1 "$BATCH"; do
    rm -rf "$WORK/cache" "$WORK"/db*
    t0=$(date +%s.%N)
    HETUNE_CACHE_DIR="$WORK/cache" "$BUILD/hetune" tune "$SPEC" --strategy brute_force --db "$WORK/db" --batch "$b" \
      --quiet > /dev/null
    t1=$(date +%s.%N)
    summary=$(sqlite3 "$WORK/db" "select count(*) || ' evaluations, ' || sum(status = 'ok') || ' ok, builds ' ||
      round(sum(compile_s), 2) || ' s in all, best ' || round(min(time_s) * 1e3, 3) || ' ms' from evaluations")
    printf '%s --batch %s: %.2f s; %s\n' "$(basename "$SPEC")" "$b" "$(echo "$t1 - $t0" | bc -l)" "$summary"
  done
  round=$((round + 1))
done
