#!/bin/sh
# A/B test: does binding PoCL's worker threads to cores (POCL_AFFINITY=1) make OpenCL times on
# this CPU steadier? The noisiest OpenCL kernels of data/datasets are measured at two sizes, the
# same 20 configs (strategy random, seed 7), in REPS fresh processes per arm with the arms
# interleaved (A B A B ...) so drifts of the shared machine hit both alike. Each process writes its
# own database and CSV; data/datasets/noise.py then compares the recordings within each arm.
#
# usage: bench/pocl_affinity/ab.sh [OUT_DIR]   (default /tmp/pocl_ab; REPS=5, HETUNE=build/hetune)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../..
ex=$root/examples
hetune=${HETUNE:-$root/build/hetune}
out=${1:-/tmp/pocl_ab}
reps=${REPS:-5}
mkdir -p "$out"
export HETUNE_CACHE_DIR="$out/cache"

# one_run ARM REP: every kernel and size once, into $out/ARM$REP/
one_run() {
  arm=$1 rep=$2 dir=$out/$1$2
  mkdir -p "$dir"
  if [ "$arm" = B ]; then aff=1; else aff=0; fi
  for k in transpose_opencl:transpose:W=1024,H=1024:W=2048,H=2048 \
           stencil_opencl:stencil:W=1024,H=1024:W=2048,H=2048 \
           vadd_opencl:vadd:N=1048576:N=8388608; do
    name=${k%%:*} rest=${k#*:}
    ex_dir=${rest%%:*} sizes=${rest#*:}
    for size in $(echo "$sizes" | tr ':' ' '); do
      set --
      for kv in $(echo "$size" | tr ',' ' '); do set -- "$@" --size "$kv"; done
      POCL_AFFINITY=$aff "$hetune" tune "$ex/$ex_dir/$name.json" --device opencl --strategy random \
        --seed 7 --budget 20 --db "$dir/$name.db" --min-runs 5 --rsd 0.05 --max-runs 30 --quiet "$@"
    done
    "$hetune" export --format csv --kernel "$name" --db "$dir/$name.db" --output "$dir/$name.csv"
  done
  echo "$(date -u +%H:%M:%S) arm $arm rep $rep done"
}

for rep in $(seq 1 "$reps"); do
  one_run A "$rep"
  one_run B "$rep"
done
for arm in A B; do
  echo "== arm $arm (POCL_AFFINITY=$([ $arm = B ] && echo 1 || echo 0)) =="
  set --
  for rep in $(seq 2 "$reps"); do set -- "$@" "$out/$arm$rep"; done
  python3 "$root/data/datasets/noise.py" "$out/${arm}1" "$@"
done
