#!/bin/sh
# Records one search space exhaustively for replay: every valid config measured once by brute
# force with the default runner settings (warm-up, then 3..50 timed runs until rsd < 10%, at most
# ~1 s of kernel time), with a cold compile cache so compile times are real, then exports the
# evaluations (failed ones included) as CSV.
#
# usage: data/spaces/record.sh NAME SPEC DEVICE [more `hetune tune` options]
#   e.g. data/spaces/record.sh gemm_opencl data/spaces/specs/gemm_opencl.json opencl
# Output: data/spaces/NAME.csv (the database is kept in $RECORD_DIR, default /tmp/hetune-record).
# Set HETUNE=path/to/hetune to use another binary than build/hetune.
set -eu
[ $# -ge 3 ] || { echo "usage: $0 NAME SPEC DEVICE [tune options]" >&2; exit 2; }
name=$1 spec=$2 device=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
hetune=${HETUNE:-$here/../../build/hetune}
work=${RECORD_DIR:-/tmp/hetune-record}/$name
rm -rf "$work"
mkdir -p "$work"
export HETUNE_CACHE_DIR="$work/cache"
kernel=$(sed -n 's/^ *"name": *"\([^"]*\)".*/\1/p' "$spec" | head -1)
"$hetune" tune "$spec" --device "$device" --strategy brute_force --budget all --db "$work/space.db" --quiet "$@"
"$hetune" export --format csv --kernel "$kernel" --db "$work/space.db" --output "$here/$name.csv"
echo "record: $(($(wc -l <"$here/$name.csv") - 1)) evaluations written to $here/$name.csv"
