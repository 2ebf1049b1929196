#!/bin/sh
# Side by side on one device in one run: the naive OpenCL GEMM (best of its work-group shapes) and
# the tiled GEMM tuned by random search with a budget, at M=N=K=1024. Prints both and the ratio.
# Usage: bench/gemm_opencl_vs_naive.sh [BUILD_DIR] [BUDGET]
set -eu
cd "$(dirname "$0")/.."
BUILD="${1:-build}"
BUDGET="${2:-40}"
DB="$(mktemp -d)/gemm-bench.db"
"$BUILD/hetune" tune examples/gemm/gemm_naive_opencl.json --budget 4 --db "$DB" --quiet --max-runs 3
"$BUILD/hetune" tune examples/gemm/gemm_opencl.json --budget "$BUDGET" --db "$DB" --quiet
naive=$(sqlite3 "$DB" "select min(time_s) from evaluations e join kernels k on k.id=e.kernel_id where k.name='gemm_naive_opencl' and status='ok'")
tuned=$(sqlite3 "$DB" "select min(time_s) from evaluations e join kernels k on k.id=e.kernel_id where k.name='gemm_opencl' and status='ok'")
echo "naive best: $naive s  tuned best: $tuned s  speedup: $(echo "$naive / $tuned" | bc -l | cut -c1-6)x"
