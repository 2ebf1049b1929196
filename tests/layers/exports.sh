#!/bin/sh
# libhetune.so exports exactly the functions the public headers declare: every dynamic symbol it
# defines is in hetune.map (made from include/hetune/*.h), and every name there is defined.
# usage: exports.sh LIBHETUNE.SO HETUNE.MAP
set -eu
lib=$1 map=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^_' | sort > "$tmp/exported"
grep -o 'ht_[a-z0-9_]*' "$map" | sort -u > "$tmp/declared"
extra=$(comm -23 "$tmp/exported" "$tmp/declared")
missing=$(comm -13 "$tmp/exported" "$tmp/declared")
[ -z "$extra" ] || { echo "exported but in no public header:"; echo "$extra"; }
[ -z "$missing" ] || { echo "declared in a public header but not defined:"; echo "$missing"; }
[ -z "$extra$missing" ] || exit 1
echo "libhetune.so exports the $(wc -l < "$tmp/exported") functions of include/hetune/ and nothing else"
