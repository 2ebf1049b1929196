#!/bin/sh
# Prediction accuracy report (docs/prediction.md): runs `hetune model eval` on every dataset of
# data/datasets/ and aggregates the numbers per kernel class (compute- / memory-bound) and per
# device kind (C on the CPU / OpenCL on PoCL), in the layout of reference 003's Tables 9-10 and
# reference 000's Tables 5.3-5.8 and 5.12.
#
# usage: bench/prediction/report.sh [KINDS]    KINDS: comma list (default: every model kind and auto)
# Writes bench/prediction/results.tsv (one line per kernel x model x evaluation) and prints the
# markdown tables. The pseudo-model "floor" is the labels' own agreement (`model eval` prints it
# when every row was measured several times): half of each row's recordings predicting the rest. HETUNE picks the binary (default build/hetune); OPTIONS passes model options;
# REPORT_ONLY=1 prints the tables of the existing results.tsv without evaluating again.
# Every recording of a kernel is used (data/datasets/<kernel>.csv and the repeated measurements
# data/datasets/pass*/<kernel>.csv): repeats merge into the median of their times. PASSES=main
# uses the main recording only. RESULTS=path writes the results elsewhere.
# BANDWIDTH=path passes the device's bandwidth curve (hetune bandwidth; data/datasets/bandwidth_c.csv)
# to every evaluation: models keep the roofline floor (docs/prediction.md).
# SET=unseen evaluates the four kernels written after the models were final (matvec_c,
# histogram_opencl, blackscholes_c, blackscholes_opencl) into results_unseen.tsv instead.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
hetune=${HETUNE:-$root/build/hetune}
# every kind `hetune model kinds` lists, auto included
kinds=${1:-$("$hetune" model kinds | awk '{ printf "%s%s", sep, $1; sep = "," }')}

# name  spec  class  device-kind
datasets="gemm_c gemm/gemm_c.json compute cpu
gemm_opencl gemm/gemm_opencl.json compute device
nbody_c nbody/nbody_c.json compute cpu
convolution_opencl convolution/convolution_opencl.json compute device
vadd_c vadd/vadd_c.json memory cpu
vadd_opencl vadd/vadd_opencl.json memory device
stencil_c stencil/stencil_c.json memory cpu
stencil_opencl stencil/stencil_opencl.json memory device
transpose_opencl transpose/transpose_opencl.json memory device
reduction_opencl reduction/reduction_opencl.json memory device"
unseen="blackscholes_c blackscholes/blackscholes_c.json compute cpu
blackscholes_opencl blackscholes/blackscholes_opencl.json compute device
matvec_c matvec/matvec_c.json memory cpu
histogram_opencl histogram/histogram_opencl.json memory device"
case ${SET:-seen} in
  seen) out=${RESULTS:-$root/bench/prediction/results.tsv} ;;
  unseen) datasets=$unseen out=${RESULTS:-$root/bench/prediction/results_unseen.tsv} ;;
  *) echo "report.sh: SET=$SET: expected seen or unseen" >&2; exit 2 ;;
esac

[ "${REPORT_ONLY:-0}" = 1 ] || : >"$out"
[ "${REPORT_ONLY:-0}" = 1 ] || echo "$datasets" | while read -r name spec class dev; do
  csv=$root/data/datasets/$name.csv
  [ -f "$csv" ] || { echo "report: $csv missing, skipped" >&2; continue; }
  set -- --data "$csv"
  if [ "${PASSES:-all}" = all ]; then
    for p in "$root"/data/datasets/pass*/"$name.csv"; do if [ -f "$p" ]; then set -- "$@" --data "$p"; fi; done
  fi
  echo "report: $name ($(($# / 2)) recording(s))" >&2
  "$hetune" model eval "$root/examples/$spec" "$@" --tsv ${kinds:+--kinds "$kinds"} \
    ${OPTIONS:+--options "$OPTIONS"} ${BANDWIDTH:+--bandwidth "$BANDWIDTH"} | sed "s/\$/\t$class\t$dev/" >>"$out"
done

# Columns of results.tsv: kernel model eval rows mean max r2 spearman top1 pen_mean pen_max fit_s pred_ns class dev
awk -F'\t' '
function add(key, mean, max, rho, top1, pm, px) {
  n[key]++; sm[key] += mean; if (max > mx[key]) mx[key] = max
  srho[key] += rho; stop[key] += top1; spm[key] += pm; if (px > spx[key]) spx[key] = px
}
{
  add($2 SUBSEP $3 SUBSEP $14, $5, $6, $8, $9, $10, $11)
  add($2 SUBSEP $3 SUBSEP $15, $5, $6, $8, $9, $10, $11)
  models[$2] = 1; lat[$2] += $13; nl[$2]++
  if (!($1 in seen)) { seen[$1] = 1; kernels = kernels " " $1 }
}
function cell(key) { return key in n ? sprintf("%.1f | %.1f", sm[key] / n[key], mx[key]) : "- | -" }
END {
  printf "Kernels:%s\n\n", kernels
  printf "### Error per model, compute- vs memory-bound (reference 003, Tables 9-10)\n\n"
  printf "Mean over the kernels of each class of the mean error %%, and the largest error %%.\n\n"
  printf "| model | evaluation | compute mean | compute max | memory mean | memory max |\n|---|---|---|---|---|---|\n"
  for (m in models) for (e = 1; e <= 3; e++) {
    ev = e == 1 ? "cv" : e == 2 ? "test" : "holdout"
    printf "| %s | %s | %s | %s |\n", m, ev, cell(m SUBSEP ev SUBSEP "compute"), cell(m SUBSEP ev SUBSEP "memory")
  }
  printf "\n### CPU and device time, best-config penalty (reference 000, Tables 5.3-5.8 and 5.12)\n\n"
  printf "CPU: C kernels on the cores; device: OpenCL kernels on PoCL. Hold-out of the largest sizes.\n\n"
  printf "| model | CPU mean | CPU max | device mean | device max | Spearman (all) | penalty mean %% | penalty max %% | exact best |\n|---|---|---|---|---|---|---|---|---|\n"
  for (m in models) {
    c = m SUBSEP "holdout" SUBSEP "cpu"; d = m SUBSEP "holdout" SUBSEP "device"
    k1 = m SUBSEP "holdout" SUBSEP "compute"; k2 = m SUBSEP "holdout" SUBSEP "memory"
    nn = n[k1] + n[k2]
    if (!nn) continue
    printf "| %s | %s | %s | %.3f | %.1f | %.1f | %.2f |\n", m, cell(c), cell(d), (srho[k1] + srho[k2]) / nn,
      (spm[k1] + spm[k2]) / nn, (spx[k1] > spx[k2] ? spx[k1] : spx[k2]), (stop[k1] + stop[k2]) / nn
  }
  printf "\n### Prediction latency (median ns per call, mean over kernels)\n\n| model | ns |\n|---|---|\n"
  for (m in models) if (m != "floor") printf "| %s | %.0f |\n", m, lat[m] / nl[m]
}' "$out"

printf '\n### Per kernel: the best model on the size hold-out\n\n'
awk -F'\t' '
# Per kernel: the model kind with the lowest hold-out mean error (chosen with hindsight, so auto,
# itself a choice of kind, and the floor are not candidates), and its ranking numbers.
$2 == "floor" || $2 == "auto" { next }
$3 == "holdout" {
  if (!($1 in best) || $5 < bm[$1]) { best[$1] = $2; bm[$1] = $5; bx[$1] = $6; br[$1] = $8; bt[$1] = $9; bp[$1] = $10; bq[$1] = $11; cls[$1] = $14 }
  if (!($1 in order)) { order[$1] = ++nk; name[nk] = $1 }
}
$3 == "cv" { if (!($1 in cvb) || $5 < cvb[$1]) { cvb[$1] = $5; cvk[$1] = $2 } }
END {
  printf "| kernel | class | best CV model (mean %%) | best hold-out model | mean %% | max %% | Spearman | top-1 | penalty mean %% | penalty max %% |\n|---|---|---|---|---|---|---|---|---|---|\n"
  for (i = 1; i <= nk; i++) { k = name[i]
    printf "| %s | %s | %s (%.1f) | %s | %.1f | %.1f | %.2f | %.2f | %.1f | %.1f |\n", k, cls[k], cvk[k], cvb[k], best[k], bm[k], bx[k], br[k], bt[k], bp[k], bq[k] }
}
' "$out"
