#!/bin/sh
# Records the training datasets of execution-time prediction: for each kernel, one fixed random
# sample of configs (strategy random, seed 7: the same configs at every size, because the sizes
# below keep the size-dependent constraints' valid set unchanged) measured at a log-spaced grid
# of problem sizes, then exported as data/datasets/<kernel>.csv (`hetune export --format csv`).
#
# usage: data/datasets/record.sh [KERNEL...]   record these kernels (default: all, in the order below;
#                                              `unseen` records the four unseen kernels, `cuda`
#                                              the three CUDA kernels, on a machine with a GPU)
#        data/datasets/record.sh retry KERNEL...  delete the suspect rows of these kernels
#                                              (check.py: > 1.4x slower than a neighbouring size
#                                              predicts) from their databases, measure them again
#        data/datasets/record.sh noise         label noise: re-measure 20 configs at 2 sizes of
#                                              3 kernels in separate databases, compare (noise.py)
#        data/datasets/record.sh strides       gemm_opencl at 4 KiB and other row strides
#                                              (strides.py)
#        PASS=N data/datasets/record.sh [KERNEL...]  measure the same rows again (N = 2..16) into
#                                              db/passN/ and data/datasets/passN/; model eval and
#                                              bench/prediction/report.sh merge the repeats of a
#                                              row into their median
# Re-runnable: each kernel has its own database db/<kernel>.db; configs already stored for a size
# are reused, not measured again, so an interrupted run resumes. FRESH=1 deletes a kernel's
# database (and compile cache) first. HETUNE=path picks the binary (default build/hetune),
# DB_DIR the database folder (default data/datasets/db, git-ignored). Progress: $DB_DIR/progress.log.
# Timing: at least 5, at most 30 timed runs after a warm-up, stopping once rsd < 5% (the runner
# also stops after ~1 s of kernel time); every config runs in a worker process.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
ex=$here/../../examples
hetune=${HETUNE:-$here/../../build/hetune}
db_dir=${DB_DIR:-$here/db}
seed=7
# PASS=N (N >= 2): a repeated measurement of the same rows, in fresh databases ($db_dir/passN/),
# exported to $here/passN/; the compile cache is shared with the main recording.
cache_dir=$db_dir/cache
out_dir=$here
if [ -n "${PASS:-}" ]; then
  case $PASS in [2-9] | 1[0-6]) ;; *) echo "record.sh: PASS=$PASS: expected 2..16" >&2; exit 2 ;; esac
  db_dir=$db_dir/pass$PASS
  out_dir=$here/pass$PASS
fi
mkdir -p "$db_dir" "$out_dir"
log=$db_dir/progress.log
say() { echo "$(date -u +%H:%M:%S) $*" | tee -a "$log"; }

# measure NAME SPEC DEVICE CONFIGS DB SIZE... ; SIZE is "K=V,K=V" (one problem size)
measure() {
  name=$1 spec=$2 device=$3 nconf=$4 db=$5
  shift 5
  export HETUNE_CACHE_DIR="$cache_dir/${name#noise_}"
  for size in "$@"; do
    set --
    for kv in $(echo "$size" | tr ',' ' '); do set -- "$@" --size "$kv"; done
    t0=$(date +%s)
    if "$hetune" tune "$spec" --device "$device" --strategy random --seed $seed --budget "$nconf" \
      --db "$db" --min-runs 5 --rsd 0.05 --max-runs 30 --quiet "$@" >>"$db_dir/$name.tune.log" 2>&1; then
      say "$name $size: done in $(($(date +%s) - t0)) s"
    else
      say "$name $size: hetune tune FAILED (see $db_dir/$name.tune.log)"
    fi
  done
}

# record NAME SPEC DEVICE CONFIGS SIZE... : main recording of one kernel, then export
record() {
  name=$1 spec=$2 device=$3 nconf=$4
  shift 4
  [ "${FRESH:-0}" = 1 ] && rm -rf "$db_dir/$name.db" "$cache_dir/$name" "$db_dir/$name.tune.log"
  say "$name: start ($nconf configs x $# sizes)${PASS:+, pass $PASS}"
  measure "$name" "$spec" "$device" "$nconf" "$db_dir/$name.db" "$@"
  "$hetune" export --format csv --kernel "$name" --db "$db_dir/$name.db" --output "$out_dir/$name.csv"
  say "$name: $(($(wc -l <"$out_dir/$name.csv") - 1)) rows written to $out_dir/$name.csv"
}

# Problem-size grids, smallest to largest work; the last 2-3 are the extrapolation hold-out.
gemm_c() { record gemm_c "$ex/gemm/gemm_c.json" c 40 \
  M=128,N=128,K=128 M=192,N=192,K=192 M=256,N=256,K=256 M=384,N=384,K=384 M=512,N=512,K=512 \
  M=640,N=640,K=640 M=768,N=768,K=768 M=1024,N=1024,K=1024 M=1280,N=1280,K=1280; }
stencil_c() { record stencil_c "$ex/stencil/stencil_c.json" c 40 \
  W=256,H=256 W=512,H=256 W=512,H=512 W=1024,H=512 W=1024,H=1024 W=2048,H=1024 \
  W=2048,H=2048 W=4096,H=2048 W=4096,H=4096 W=8192,H=4096; }
# the whole space (32 configs); CHUNK*NTHREADS <= N removes configs below N = 2^21
vadd_c() { record vadd_c "$ex/vadd/vadd_c.json" c 64 \
  N=131072 N=262144 N=524288 N=1048576 N=2097152 N=4194304 N=8388608 N=16777216 N=33554432 N=67108864; }
nbody_c() { record nbody_c "$ex/nbody/nbody_c.json" c 40 \
  N=256 N=384 N=512 N=768 N=1024 N=1536 N=2048 N=3072 N=4096; }
# the whole space (35 configs)
vadd_opencl() { record vadd_opencl "$ex/vadd/vadd_opencl.json" opencl 64 \
  N=131072 N=262144 N=524288 N=1048576 N=2097152 N=4194304 N=8388608 N=16777216 N=33554432 N=67108864; }
# N/G = 4096 at every size, so WG*VW*UNROLL <= ceil_div(N, G) keeps the same valid configs
reduction_opencl() { record reduction_opencl "$ex/reduction/reduction_opencl.json" opencl 30 \
  N=262144,G=64 N=524288,G=128 N=1048576,G=256 N=2097152,G=512 N=4194304,G=1024 \
  N=8388608,G=2048 N=16777216,G=4096 N=33554432,G=8192 N=67108864,G=16384; }
transpose_opencl() { record transpose_opencl "$ex/transpose/transpose_opencl.json" opencl 30 \
  W=256,H=256 W=512,H=256 W=512,H=512 W=1024,H=512 W=1024,H=1024 W=2048,H=1024 \
  W=2048,H=2048 W=4096,H=2048 W=4096,H=4096; }
stencil_opencl() { record stencil_opencl "$ex/stencil/stencil_opencl.json" opencl 30 \
  W=256,H=256 W=512,H=512 W=1024,H=512 W=1024,H=1024 W=2048,H=1024 \
  W=2048,H=2048 W=4096,H=2048 W=4096,H=4096 W=8192,H=4096; }
convolution_opencl() { record convolution_opencl "$ex/convolution/convolution_opencl.json" opencl 30 \
  W=256,H=256 W=512,H=256 W=512,H=512 W=1024,H=512 W=1024,H=1024 W=2048,H=1024 \
  W=2048,H=2048 W=4096,H=2048 W=4096,H=4096; }
# M % 128 = N % 256 = K % 32 = 0 at every shape, so the divisibility constraints keep all configs
gemm_opencl() { record gemm_opencl "$ex/gemm/gemm_opencl.json" opencl 30 \
  M=128,N=256,K=128 M=256,N=256,K=128 M=256,N=256,K=256 M=256,N=512,K=256 M=512,N=512,K=256 \
  M=512,N=512,K=512 M=768,N=768,K=512 M=768,N=768,K=768 M=1024,N=1024,K=1024; }

# Unseen kernels: written after the features and models were final, to measure prediction on
# kernels they were not developed on (docs/prediction.md, "Kernels the models have not seen").
matvec_c() { record matvec_c "$ex/matvec/matvec_c.json" c 40 \
  M=256,N=256 M=512,N=256 M=512,N=512 M=1024,N=512 M=1024,N=1024 M=2048,N=1024 \
  M=2048,N=2048 M=4096,N=2048 M=4096,N=4096; }
# the whole space (40 configs)
blackscholes_c() { record blackscholes_c "$ex/blackscholes/blackscholes_c.json" c 40 \
  N=16384 N=32768 N=65536 N=131072 N=262144 N=524288 N=1048576 N=2097152 N=4194304; }
blackscholes_opencl() { record blackscholes_opencl "$ex/blackscholes/blackscholes_opencl.json" opencl 30 \
  N=16384 N=32768 N=65536 N=131072 N=262144 N=524288 N=1048576 N=2097152 N=4194304; }
histogram_opencl() { record histogram_opencl "$ex/histogram/histogram_opencl.json" opencl 30 \
  N=32768,B=256 N=65536,B=256 N=131072,B=256 N=262144,B=256 N=524288,B=256 N=1048576,B=256 \
  N=2097152,B=256 N=4194304,B=256 N=8388608,B=256; }

# CUDA kernels, for a session with a GPU (scripts/gpu_session.sh dataset): the PTX features of
# reference 003 apply to these. Every side a multiple of 128 keeps gemm_cuda's divisibility
# constraints satisfied by the same configs at every size.
gemm_cuda() { record gemm_cuda "$ex/gemm/gemm_cuda.json" cuda 40 \
  M=256,N=256,K=256 M=384,N=384,K=384 M=512,N=512,K=512 M=768,N=768,K=768 M=1024,N=1024,K=1024 \
  M=1536,N=1536,K=1536 M=2048,N=2048,K=2048 M=3072,N=3072,K=3072 M=4096,N=4096,K=4096; }
# the whole space (24 configs)
vadd_cuda() { record vadd_cuda "$ex/vadd/vadd_cuda.json" cuda 64 \
  N=262144 N=524288 N=1048576 N=2097152 N=4194304 N=8388608 N=16777216 N=33554432 N=67108864 N=134217728; }
stencil_cuda() { record stencil_cuda "$ex/stencil/stencil_cuda.json" cuda 40 \
  W=512,H=512 W=1024,H=512 W=1024,H=1024 W=2048,H=1024 W=2048,H=2048 W=4096,H=2048 \
  W=4096,H=4096 W=8192,H=4096 W=8192,H=8192; }

# Label noise: the first 20 configs of the same seed, at a middle and a large size, measured
# again in separate databases after the main recording.
noise() {
  nd=$db_dir/noise
  rm -rf "$nd"
  mkdir -p "$nd"
  say "noise: start"
  measure noise_gemm_c "$ex/gemm/gemm_c.json" c 20 "$nd/gemm_c.db" M=512,N=512,K=512 M=1024,N=1024,K=1024
  measure noise_vadd_opencl "$ex/vadd/vadd_opencl.json" opencl 20 "$nd/vadd_opencl.db" N=2097152 N=33554432
  measure noise_transpose_opencl "$ex/transpose/transpose_opencl.json" opencl 20 "$nd/transpose_opencl.db" \
    W=1024,H=1024 W=4096,H=2048
  for k in gemm_c vadd_opencl transpose_opencl; do
    "$hetune" export --format csv --kernel "$k" --db "$nd/$k.db" --output "$nd/$k.csv"
  done
  python3 "$here/noise.py" "$here" "$nd" | tee "$nd/noise.txt"
  say "noise: done"
}

# Row strides: gemm_opencl's 30 configs at 768^3 and at 1024-1280 sides where N (the row stride
# of B and C) or K (of A) is, or is not, 1024 floats (4 KiB: every row maps to the same L1 sets).
# It separates the hold-out's cache-aliasing cliff from its growth in size (strides.py).
strides() {
  sd=$db_dir/strides
  rm -rf "$sd"
  mkdir -p "$sd" "$here/strides"
  measure gemm_opencl "$ex/gemm/gemm_opencl.json" opencl 30 "$sd/gemm_opencl.db" M=768,N=768,K=768 \
    M=1024,N=1024,K=1024 M=1024,N=1024,K=1056 M=1024,N=1280,K=1024 M=1152,N=1280,K=1056
  "$hetune" export --format csv --kernel gemm_opencl --db "$sd/gemm_opencl.db" --output "$here/strides/gemm_opencl.csv"
  python3 "$here/strides.py" "$here/strides/gemm_opencl.csv"
}

# Scheduler artefacts: a 2-thread run whose second thread lost its core to another process waits
# whole scheduler ticks, so its time is a multiple of ~4 ms whatever the size. Such rows are
# inconsistent with the same config at the neighbouring sizes (check.py's suspect rule); they are
# deleted and measured again (once per call; the new measurement is kept whatever it says).
retry() {
  for k in "$@"; do
    ids=$(python3 "$here/check.py" --ids "$here/$k.csv")
    say "$k: retry: $(echo "$ids" | tr ',' '\n' | grep -c .) suspect rows deleted, measuring them again"
    [ -z "$ids" ] || sqlite3 "$db_dir/$k.db" "DELETE FROM evaluations WHERE id IN ($ids)"
    FRESH=0 $k
  done
}

all="gemm_c stencil_c vadd_c nbody_c vadd_opencl reduction_opencl transpose_opencl stencil_opencl convolution_opencl gemm_opencl"
unseen="matvec_c blackscholes_c blackscholes_opencl histogram_opencl"
cuda="gemm_cuda vadd_cuda stencil_cuda"
if [ "${1:-}" = retry ]; then
  shift
  set -- $(for k in "${@:-}"; do case " $all $unseen $cuda " in *" $k "*) echo "$k" ;; *) echo "record.sh: unknown kernel '$k'" >&2; exit 2 ;; esac; done)
  retry "$@"
  exit 0
fi
[ $# -gt 0 ] || set -- $all
set -- $(for k in "$@"; do case $k in unseen) echo $unseen ;; cuda) echo $cuda ;; *) echo "$k" ;; esac; done)
for k in "$@"; do
  case " $all $unseen $cuda noise strides " in
    *" $k "*) $k ;;
    *) echo "record.sh: unknown kernel '$k' (known: $all, unseen: $unseen, cuda: $cuda, noise, strides)" >&2; exit 2 ;;
  esac
done
