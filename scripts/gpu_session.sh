#!/bin/sh
# Everything hetune checks and measures on a machine with an NVIDIA GPU, in stages that each fit in one
# 10-minute device call. The lent machine has gcc, CMake and CUDA but none of hetune's libraries and
# no network, so its libraries travel as Debian packages (scripts/gpu_deps.sh).
#
# Here, once:   scripts/gpu_deps.sh fetch                      (.gpu/debs, git-ignored, ~20 MB)
# There:        scripts/gpu_session.sh STAGE...   with carry [".gpu"]; logs and results go to $OUT
#
# Stages (each builds first when needed; the build is kept while the machine stays warm):
#   info       the machine: OS, glibc, compilers, GPU
#   test       ctest -L gpu, then test_device, test_examples and test_device_async (CUDA paths run
#              where a GPU is), and bench_cancel (the stop delay on every device)
#   bandwidth  hetune devices --power (NVML's reading, found by PCI bus), then hetune bandwidth
#              --device cuda (the roofline curve of the CUDA device)
#   dispatch   hetune dispatch bench on computations/offload_cuda.json: CPU against GPU per size
#   coexec     hetune race and coexec bench: the CPU against and beside the GPU (Black-Scholes)
#   gemm       hetune gemm 4096^3 --device cuda against cuBLAS (the goal: >= 90%)
#   bench      bench/gemm/run.sh on cuda: squares 1024-4096 and the thesis rectangles at full size
#   resnet     bench/gemm/run.sh on cuda: the 20 ResNet50-v1.5 GEMMs at full size (RESNET_SCALE=1)
#   dataset    data/datasets/record.sh for $KERNELS (default: cuda, i.e. gemm_cuda, vadd_cuda and
#              stencil_cuda; one kernel per call if the three do not fit in 10 minutes)
#   suite      every test, ctest -j$JOBS as on a user's machine of that many cores (about 5 minutes
#              on 16; two fail there for what the machine lacks: StarPU's tools in test_docs, the
#              unpacked libraries' path in test_consumer)
# A device call returns at most 8 files from $OUT: one or two stages per call.
# Environment: OUT (results folder, default ./gpu-out), BUILD (default build-gpu), JOBS, BUDGET
# (evaluations per GEMM shape, default 30).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
OUT=${OUT:-$root/gpu-out}
BUILD=${BUILD:-build-gpu}
JOBS=${JOBS:-$(nproc)}
mkdir -p "$OUT"
status=0

log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/session.log"; }

# Runs a command, its output into $OUT/NAME.log (and the tail on the console); keeps the worst status.
step() {
  name=$1
  shift
  log "$name: $*"
  "$@" >"$OUT/$name.log" 2>&1
  rc=$?
  tail -n 25 "$OUT/$name.log"
  log "$name: exit $rc"
  [ $rc -eq 0 ] || status=$rc
  return $rc
}

info() {
  { cat /etc/os-release 2>/dev/null | head -3; ldd --version 2>&1 | head -1; cc --version 2>&1 | head -1
    cmake --version 2>&1 | head -1; nvcc --version 2>&1 | tail -2; nvidia-smi -L 2>&1
    nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem,power.limit --format=csv 2>&1; nproc; } |
    tee "$OUT/info.log"
}

build() {
  [ -x "$BUILD/hetune" ] && [ -x "$BUILD/test_cuda_gpu" ] && return 0
  if [ -d .gpu/debs ]; then
    eval "$(scripts/gpu_deps.sh unpack .gpu/debs /tmp/htdeps)" || return 1
  fi
  step configure cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release || return 1
  step build cmake --build "$BUILD" -j "$JOBS"
}

# The unpacked libraries are found at run time through LD_LIBRARY_PATH.
env_for_run() {
  if [ -d /tmp/htdeps ] && [ -z "${PKG_CONFIG_SYSROOT_DIR:-}" ]; then
    eval "$(scripts/gpu_deps.sh unpack .gpu/debs /tmp/htdeps 2>/dev/null)"
  fi
}

stage_test() {
  step ctest_gpu ctest --test-dir "$BUILD" -L gpu --output-on-failure
  step test_device "$BUILD/test_device"
  step test_examples "$BUILD/test_examples"
  step test_device_async "$BUILD/test_device_async"
  step bench_cancel "$BUILD/bench_cancel" 10
}

stage_bandwidth() {
  step devices "$BUILD/hetune" devices --power
  step bandwidth "$BUILD/hetune" bandwidth --device cuda --output "$OUT/bandwidth_cuda.csv"
  step transfers "$BUILD/hetune" bandwidth --transfers --device cuda --db "$OUT/transfers.db" \
    --output "$OUT/transfers_cuda.csv"
}

# Dispatch on a real crossover: the CPU (one thread, every processor) against the GPU per size.
stage_dispatch() {
  step dispatch "$BUILD/hetune" dispatch bench examples/dispatch/computations/offload_cuda.json \
    --sizes N=1000:30000000 --points 15 --repeat 7 --db "$OUT/dispatch.db"
}

# Racing and co-execution on a real GPU: the CPU racing the GPU near their crossover and far from it, and one
# call split across both.
stage_coexec() {
  for n in 40000 3000000; do
    step "race_$n" "$BUILD/hetune" race examples/dispatch/computations/offload_cuda.json --size N=$n \
      --variants 1,2 --repeat 9 --db "$OUT/race.db"
  done
  for n in 4000000 30000000; do
    step "split_$n" "$BUILD/hetune" coexec bench examples/coexec/computations/options_split_cuda.json \
      --size N=$n --repeat 5 --db "$OUT/coexec.db"
  done
}

stage_gemm() {
  step gemm4096 "$BUILD/hetune" gemm 4096 4096 4096 --device cuda --budget 120 --db "$OUT/gemm.db" --out "$BUILD/gemm-specs"
}

gemm_bench() { # SHAPES RESULTS-NAME
  DEVICE=cuda SHAPES=$1 SQUARES="1024 2048 4096" RESNET_SCALE=1 RECT_SCALE=1 BUDGET=${BUDGET:-30} \
    RESULTS="$OUT/$2.tsv" step "$2" bench/gemm/run.sh "$root/$BUILD/hetune"
  python3 bench/gemm/report.py "$OUT/$2.tsv" >/dev/null 2>&1 || true
}
stage_bench() { gemm_bench "square rect" results_cuda_square; }
stage_resnet() { gemm_bench resnet results_cuda_resnet; }

# The databases stay on the machine (/tmp); the CSVs and the progress log come back.
stage_dataset() {
  # shellcheck disable=SC2086
  HETUNE="$root/$BUILD/hetune" DB_DIR=/tmp/htdatasets step dataset data/datasets/record.sh ${KERNELS:-cuda}
  for k in gemm_cuda vadd_cuda stencil_cuda; do
    if [ -f "data/datasets/$k.csv" ]; then cp "data/datasets/$k.csv" "$OUT/"; fi
  done
  cp /tmp/htdatasets/progress.log "$OUT/" 2>/dev/null
}

stage_suite() {
  step suite ctest --test-dir "$BUILD" --output-on-failure -j "$JOBS" --timeout 600
}

[ $# -gt 0 ] || set -- info test
for s in "$@"; do
  case $s in
    info) info ;;
    test | bandwidth | dispatch | coexec | gemm | bench | resnet | dataset | suite)
      build || { log "build failed: see $OUT/configure.log, $OUT/build.log"; exit 1; }
      env_for_run
      "stage_$s"
      ;;
    *) echo "gpu_session.sh: unknown stage '$s' (info test bandwidth dispatch coexec gemm bench resnet dataset suite)" >&2; exit 2 ;;
  esac
done
exit $status
