#!/bin/sh
# Writes the hetune(1) manual page from the command's own --help texts, so the two never differ.
# usage: make_man.sh HETUNE_BINARY OUTPUT.1
set -eu
bin=$1 out=$2
version=$("$bin" --version | awk '{print $2}')
esc() { sed -e 's/\\/\\e/g' -e 's/^\./\\\&./' -e "s/^'/\\\\\\&'/"; }
{
  printf '.TH HETUNE 1 "" "hetune %s" "User Commands"\n' "$version"
  printf '.SH NAME\nhetune \\- tune, predict and run compute kernels on CPUs and GPUs\n'
  printf '.SH SYNOPSIS\n.B hetune\n.I COMMAND\n[options]\n'
  printf '.SH DESCRIPTION\n.nf\n'
  "$bin" --help | esc
  printf '.fi\n.SH COMMANDS\n'
  for c in devices bandwidth tune best show export space replay strategy-bench ptx predict gemm race \
           "model train" "model eval" "model show" "model predict"; do
    printf '.SS "%s"\n.nf\n' "$c"
    # shellcheck disable=SC2086
    "$bin" $c --help | esc
    printf '.fi\n'
  done
  printf '.SH FILES\n.TP\n.I hetune.db\nthe database (also $HETUNE_DB, --db)\n'
  printf '.TP\n.I ~/.cache/hetune\ncompiled kernels (also $HETUNE_CACHE_DIR)\n'
  printf '.SH SEE ALSO\nThe manual in /usr/local/share/doc/hetune and docs/ of the source tree.\n'
} > "$out"
