#!/bin/sh
# The manual pages the build made (scripts/make_man.sh): hetune(1) and one hetune-COMMAND(1) for
# every command `hetune --help` lists, each rendered by groff without a warning.
# usage: man_check.sh HETUNE_BINARY MAN_FOLDER; exit 77 (skipped) without groff.
set -u
bin=$1 dir=$2
command -v groff > /dev/null || { echo "groff not installed: skipped"; exit 77; }
fail=0
commands=$("$bin" --help | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p')
[ -n "$commands" ] || { echo "no commands in 'hetune --help'"; exit 1; }
for page in hetune $(for c in $commands; do printf 'hetune-%s ' "$c"; done); do
  f="$dir/$page.1"
  if [ ! -s "$f" ]; then
    echo "$f: missing"
    fail=1
    continue
  fi
  warnings=$(groff -man -Tascii -ww -z "$f" 2>&1)
  if [ -n "$warnings" ]; then
    echo "$f: groff: $warnings"
    fail=1
  fi
  text=$(groff -man -Tascii "$f" 2> /dev/null)
  # the page holds the first line of the command's --help, as groff renders it
  case "$page" in
    hetune) want=$("$bin" --help | head -n 1) ;;
    *) want=$("$bin" "${page#hetune-}" --help | head -n 1) ;;
  esac
  case "$text" in
    *"$want"*) ;;
    *) echo "$f: the rendered page lacks '$want'"; fail=1 ;;
  esac
done
[ "$fail" = 0 ] && echo "$(echo "$commands" | wc -w) command pages and hetune(1) render cleanly"
exit "$fail"
