#!/bin/sh
# A compiler that hangs, with a child, when it compiles MODE 7; otherwise the real one ($HT_TEST_CC).
# Its pids go to $HT_TEST_PIDS, for the test to check they are gone.
for a in "$@"; do
  if [ "$a" = "-DMODE=7" ]; then
    sleep 300 &
    echo $! >> "$HT_TEST_PIDS"
    echo $$ >> "$HT_TEST_PIDS"
    wait
    exit 0
  fi
done
exec ${HT_TEST_CC:-cc} "$@"
