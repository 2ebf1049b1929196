#!/bin/sh
# Are the prediction bands honest? For every dataset (the ten seen kernels and the four unseen
# ones, every recording merged), `hetune model eval --band C --kinds KIND` estimates the bands
# on the training rows alone and counts the held-out rows inside them: the interpolation band
# (5-fold CV on the training rows) against the random 20% test split, the extrapolation band
# (the largest training size predicted from the others) against the hold-out of the two largest
# sizes. A calibrated band holds about C of the rows.
#
# usage: bench/prediction/bands.sh [KIND] [C]    (default auto 0.8); HETUNE picks the binary
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
hetune=${HETUNE:-$root/build/hetune}
kind=${1:-auto}
cov=${2:-0.8}
echo "| kernel | interpolation band | test rows inside % | extrapolation band | hold-out rows inside % |"
echo "|---|---|---|---|---|"
for spec in gemm/gemm_c gemm/gemm_opencl nbody/nbody_c convolution/convolution_opencl vadd/vadd_c vadd/vadd_opencl \
  stencil/stencil_c stencil/stencil_opencl transpose/transpose_opencl reduction/reduction_opencl \
  blackscholes/blackscholes_c blackscholes/blackscholes_opencl matvec/matvec_c histogram/histogram_opencl; do
  name=${spec#*/}
  set -- --data "$root/data/datasets/$name.csv"
  for p in "$root"/data/datasets/pass*/"$name.csv"; do if [ -f "$p" ]; then set -- "$@" --data "$p"; fi; done
  "$hetune" model eval "$root/examples/$spec.json" "$@" --kinds "$kind" --folds 0 --band "$cov" |
    awk -v k="$name" '
      function band() { match($0, /\[[^]]*\]/); return substr($0, RSTART, RLENGTH) }
      function held() { match($0, /holds [0-9.]+%/); return substr($0, RSTART + 6, RLENGTH - 7) }
      $3 == "band:" && $2 == "test" { it = band(); iin = held() }
      $3 == "band:" && $2 == "holdout" { et = band(); ein = held() }
      END { printf "| %s | %s | %s | %s | %s |\n", k, it, iin, et, ein }'
done | tee /tmp/bands.$$
awk -F'|' '{ a += $4; b += $6; n++ } END { printf "| **mean** | | %.0f | | %.0f |\n", a / n, b / n }' /tmp/bands.$$
rm -f /tmp/bands.$$
