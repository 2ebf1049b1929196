#!/bin/sh
# Co-execution benchmark (BENCHMARKS.md, "Splitting a call across devices"): hetune coexec bench on
# 2 to 5 simulated devices (a blur with a halo, a GEMM whose B every chunk copies whole), then on
# this machine's real devices (the host's C kernel and the first OpenCL device).
# usage: bench/coexec/run.sh [BUILD_DIR]   (default build)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
db=$(mktemp -d)
trap 'rm -rf "$db"' EXIT
run() { echo "### $*"; "$build/hetune" coexec bench "$@" 2>&1 | grep -E "^  |^makespan|^ideal|^results|^schedule|^[0-9] "; echo; }
export HETUNE_SIM="$here/devices.json"
for n in 2 3 4 5; do
  run "$here/blur_${n}dev.json" --size R=20000 --size C=1000 --repeat 3 --db "$db/blur$n.db"
  run "$here/gemm_${n}dev.json" --size M=1000 --size N=512 --size K=512 --repeat 3 --db "$db/gemm$n.db"
done
for n in 4 5; do
  run "$here/blur_${n}dev.json" --size R=20000 --size C=1000 --repeat 3 --db "$db/blur$n.db" --options eliminate=0.1,refine=0
done
unset HETUNE_SIM
# The C variant runs its tuned best config ("best"): tune it at the size first.
"$build/hetune" tune "$root/examples/blackscholes/blackscholes_c.json" --size N=4000000 --budget 20 --db "$db/bs.db" -q
run "$root/examples/coexec/computations/blackscholes_c_pocl.json" --size N=4000000 --db "$db/bs.db"
HETUNE_SIM="$root/data/sim/pcie_gpu.json" run "$root/examples/coexec/computations/options_split.json" --size N=4000000 --db "$db/opt.db"
