#!/bin/sh
# Writes hetune's manual pages from the command's own --help texts, so the two never differ:
# hetune(1), with every command's help as a section, and hetune-COMMAND(1), one per command
# (`man hetune-tune`). tests/docs/man_check.sh checks that every command has one and groff
# reads them without a warning.
# usage: make_man.sh HETUNE_BINARY OUTPUT_FOLDER
set -eu
bin=$1 out=$2
mkdir -p "$out"
version=$("$bin" --version | awk '{print $2}')
# every command of `hetune --help`: its indented lines that start with a lowercase word
commands=$("$bin" --help | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p')
esc() { sed -e 's/\\/\\e/g' -e 's/^\./\\\&./' -e "s/^'/\\\\\\&'/"; }
# the one-line summary of a command in `hetune --help`
summary() { "$bin" --help | sed -n "s/^  $1 .*[^ ]   *\([^ ].*\)/\1/p" | head -n 1 | esc; }
# help of a command and, for model, of its subcommands
help_of() {
  # shellcheck disable=SC2086
  "$bin" $1 --help | esc
  if [ "$1" = model ]; then
    for s in train eval show predict; do
      printf '.fi\n.SS "model %s"\n.nf\n' "$s"
      "$bin" model "$s" --help | esc
    done
  fi
}
files() {
  printf '.SH ENVIRONMENT\nHETUNE_DB, HETUNE_CACHE_DIR, HETUNE_LOG and the other variables are listed in\n'
  printf 'docs/library.md ("Environment").\n'
  printf '.SH FILES\n.TP\n.I hetune.db\nthe database (also $HETUNE_DB, --db)\n'
  printf '.TP\n.I ~/.cache/hetune\ncompiled kernels (also $HETUNE_CACHE_DIR)\n'
}
for c in $commands; do
  upper=$(printf '%s' "$c" | tr 'a-z' 'A-Z')
  {
    printf '.TH HETUNE-%s 1 "" "hetune %s" "User Commands"\n' "$upper" "$version"
    printf '.SH NAME\nhetune-%s \\- %s\n' "$c" "$(summary "$c")"
    printf '.SH DESCRIPTION\n.nf\n'
    help_of "$c"
    printf '.fi\n'
    files
    printf '.SH SEE ALSO\n.BR hetune (1)\n'
  } > "$out/hetune-$c.1"
done
{
  printf '.TH HETUNE 1 "" "hetune %s" "User Commands"\n' "$version"
  printf '.SH NAME\nhetune \\- tune, predict and run compute kernels on CPUs and GPUs\n'
  printf '.SH SYNOPSIS\n.B hetune\n.I COMMAND\n[options]\n'
  printf '.SH DESCRIPTION\n.nf\n'
  "$bin" --help | esc
  printf '.fi\n.SH COMMANDS\n'
  for c in $commands; do
    printf '.SS "%s"\n.nf\n' "$c"
    help_of "$c"
    printf '.fi\n'
  done
  files
  printf '.SH SEE ALSO\n'
  for c in $commands; do printf '.BR hetune-%s (1),\n' "$c"; done
  printf 'and the manual: docs/README.md of the source tree.\n'
} > "$out/hetune.1"
