#!/bin/sh
# The doc-test harness fails where it must: tests/docs/selftest.md has nine bad blocks (a failing
# command, a skip without reason, an unknown marker, a C fragment that does not compile, a C
# program that exits non-zero, a `sub` whose text is not in its block, a `fails` command that
# succeeds, one that fails without printing the marker's text, a failing block in a list item)
# and five good ones (one passes only when its `sub` is applied, one only with build/ linked).
# usage: selftest.sh SOURCE_DIR BUILD_DIR PYTHON
set -u
out=$("$3" "$1/tests/docs/run_doc_blocks.py" "$1" "$2" tests/docs/selftest.md 2>&1)
rc=$?
echo "$out"
fails=$(echo "$out" | grep -c '^FAIL ')
[ "$rc" = 1 ] || { echo "expected exit status 1, got $rc"; exit 1; }
[ "$fails" = 9 ] || { echo "expected 9 failures, got $fails"; exit 1; }
for line in 5 10 15 19 25 50 61 66 72; do
  echo "$out" | grep -q "^FAIL tests/docs/selftest.md:$line:" || { echo "no failure at line $line"; exit 1; }
done
echo "$out" | grep -q '^5 sh, 2 c, 3 prompt blocks run' || { echo "wrong blocks run"; exit 1; }
# its scratch folder, kept because blocks failed
log=$(echo "$out" | sed -n 's/^what the blocks printed: //p')
[ -n "$log" ] && rm -rf "$(dirname "$log")"
echo "the harness found the 9 bad blocks"
