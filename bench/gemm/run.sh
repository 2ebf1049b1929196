#!/bin/sh
# The GEMM benchmark (issue 5): `hetune gemm` on square sizes, the thesis's two rectangular shapes
# and the 20 GEMMs of ResNet50-v1.5, each tuned from scratch in a fresh database, with the vendor
# library (OpenBLAS on c, CLBlast on opencl, cuBLAS on cuda) and the naive kernel measured in the
# same run. Writes results_<cpu|opencl|cuda>.tsv next to this script; report.py turns it into a
# table (.md) and a plot (.svg).
#
#   bench/gemm/run.sh [HETUNE] [--quick]
#
# Environment: DEVICE (c, opencl[:P:D] or cuda[:N]; default c), BUDGET (the search's evaluations
# per shape, default 40; `hetune gemm --budget` gets 9 more for the warm start and the baselines,
# plus TUNE_VENDOR), STRATEGY (default auto), RESNET_SCALE (m divided by this, default 64), SQUARES
# (default "256 512 1024 2048 4096"), RECT_SCALE (the rectangular shapes' sides divided by this,
# default 4), SHAPES (which groups of shapes: default "square rect resnet"), TYPE (f32), NAIVE (0: do not
# measure the naive kernel), TUNE_VENDOR (N: also tune the vendor library's own kernel with N
# evaluations where it can be tuned, CLBlast), RESULTS (the results file; it is started afresh),
# RESNET_IDS (which of the 20 ResNet GEMMs, e.g. "1 2 3"; default all).
# BLAS_CORETYPE: the OpenBLAS kernels to measure, passed as OPENBLAS_CORETYPE (overriding the
# environment's, which may name older kernels than the CPU runs: Haswell's run at about half the
# AVX-512 speed on an AVX-512 CPU). Default:
# SkylakeX on a CPU with AVX-512, so the baseline is OpenBLAS at its best even where its
# DYNAMIC_ARCH does not know the CPU; "auto" leaves the choice to OpenBLAS. The header names the build.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
hetune=${1:-}
[ -n "$hetune" ] && [ "$hetune" != --quick ] || hetune=$(ls -t "$root"/build*/hetune 2>/dev/null | head -1)
[ -x "$hetune" ] || { echo "run.sh: no hetune binary (give its path)" >&2; exit 2; }
quick=0
for a in "$@"; do [ "$a" = --quick ] && quick=1; done
DEVICE=${DEVICE:-c}
case $DEVICE in
  c | c:*) target=cpu vendor=OpenBLAS ;;
  opencl*) target=opencl vendor=CLBlast ;;
  cuda*) target=cuda vendor=cuBLAS ;;
  *) echo "run.sh: DEVICE=$DEVICE: expected c, opencl[:P:D] or cuda[:N]" >&2; exit 2 ;;
esac
BUDGET=${BUDGET:-40}
STRATEGY=${STRATEGY:-auto}
RESNET_SCALE=${RESNET_SCALE:-64}
RECT_SCALE=${RECT_SCALE:-4}
SQUARES=${SQUARES:-256 512 1024 2048 4096}
TYPE=${TYPE:-f32}
SHAPES=${SHAPES:-square rect resnet} # not GROUPS: bash ignores assignments to GROUPS
naive_flag=
[ "${NAIVE:-1}" = 0 ] && naive_flag=--no-naive
vendor_flag=
[ "${TUNE_VENDOR:-0}" != 0 ] && vendor_flag="--tune-vendor $TUNE_VENDOR"
want() { case " $SHAPES " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
if [ $quick = 1 ]; then SQUARES="256 512"; BUDGET=8; fi

if [ "$target" = cpu ]; then
  coretype=${BLAS_CORETYPE:-}
  [ -z "$coretype" ] && grep -qw avx512f /proc/cpuinfo && coretype=SkylakeX
  if [ -z "$coretype" ] || [ "$coretype" = auto ]; then unset OPENBLAS_CORETYPE; else export OPENBLAS_CORETYPE=$coretype; fi
fi
out=${RESULTS:-$here/results_$target.tsv}
work=$(mktemp -d "${TMPDIR:-/tmp}/hetune-gemm-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
db=$work/bench.db
export HETUNE_CACHE_DIR=${HETUNE_CACHE_DIR:-$work/cache}

{
  printf '# hetune gemm benchmark, %s, %s\n' "$(date -u +%Y-%m-%dT%H:%MZ)" "$(uname -srm)"
  printf '# cpu: %s; %s cores; budget %s, strategy %s, type %s, resnet m / %s, rectangles / %s\n' \
    "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" "$(nproc)" "$BUDGET" "$STRATEGY" \
    "$TYPE" "$RESNET_SCALE" "$RECT_SCALE"
  printf '# device: %s (%s)\n' "$DEVICE" "$("$hetune" devices 2>/dev/null | grep -m1 "^${DEVICE%%:*}" | sed 's/  */ /')"
  printf '# vendor: %s%s\n' "$vendor" "${vendor_flag:+ (and tuned: $vendor_flag)}"
  printf 'group\tid\tuses\tm\tn\tk\ttuned_gflops\tvendor_gflops\tnaive_gflops\ttune_s\tbest\tvendor_tuned_gflops\n'
} > "$out"

run_budget=$((BUDGET + 9 + ${TUNE_VENDOR:-0})) # the whole run: seeds <= 5, vendor <= 2, naive <= 2

run() { # group id uses m n k
  all=$("$hetune" gemm "$4" "$5" "$6" --device "$DEVICE" --type "$TYPE" --budget "$run_budget" --strategy "$STRATEGY" --db "$db" \
           --out "$work/specs" --tsv --quiet $naive_flag $vendor_flag) || { echo "failed: $*" >&2; return 0; }
  line=$(echo "$all" | grep '^result') || { echo "failed: $* (no result line)" >&2; return 0; }
  build=$(echo "$all" | grep '^vendor_build' | cut -f2-) || true
  if [ -n "$build" ] && ! grep -q '^# vendor build:' "$out"; then
    printf '# vendor build: %s%s\n' "$build" "${OPENBLAS_CORETYPE:+ (OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE)}" >> "$out"
  fi
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$(echo "$line" | cut -f2-)" >> "$out"
  echo "$1 $2: $(echo "$line" | cut -f2-)" >&2
}

if want square; then
  for s in $SQUARES; do run square "$s" 1 "$s" "$s" "$s"; done
fi
r=$RECT_SCALE
if want rect; then
  run rect 1 1 $((8192 / r)) $((8192 / r)) $((2048 / r))
  run rect 2 1 $((2048 / r)) $((2048 / r)) $((8192 / r))
fi
want resnet || { echo "wrote $out" >&2; exit 0; }

# ResNet50-v1.5 (seed note 004, Table 4.2): id m n k uses; batch 128.
while read -r id m n k uses; do
  case " ${RESNET_IDS:-$id} " in *" $id "*) ;; *) continue ;; esac
  run resnet "$id" "$uses" $((m / RESNET_SCALE)) "$n" "$k"
done <<'RESNET'
1 1605632 64 147 1
2 401408 64 64 1
3 401408 64 576 3
4 401408 256 64 4
5 401408 64 256 2
6 401408 128 256 1
7 100352 128 1152 4
8 100352 512 128 4
9 100352 512 256 1
10 100352 128 512 3
11 100352 256 512 1
12 25088 256 2304 6
13 25088 1024 256 6
14 25088 1024 512 1
15 25088 256 1024 5
16 25088 512 1024 1
17 6272 512 4608 3
18 6272 2048 512 3
19 6272 2048 1024 1
20 6272 512 2048 2
RESNET
echo "wrote $out" >&2
