#!/bin/sh
# The command is a user of the library: its files include the public headers (hetune/...) and its
# own (cli/...), never a layer's internal header, so it sees ht_spec and ht_device as users do.
# usage: cli_public.sh SOURCE_DIR
set -eu
bad=$(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$1"/src/cli/*.c "$1"/src/cli/*.h |
  grep -v '#[[:space:]]*include[[:space:]]*"\(hetune\|cli\)/' || true)
[ -z "$bad" ] || { echo "src/cli includes internal headers:"; echo "$bad"; exit 1; }
echo "src/cli includes only hetune/ and cli/ headers"
