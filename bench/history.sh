#!/usr/bin/env bash
# Instructions per simulated request (callgrind, none and mq-deadline, the
# bench workload on nvme) of older builds, as rows for bench/history.md:
#
#   bench/history.sh "5813cee CPU sharing"=/path/to/elevator ...
#
# Each argument is LABEL=BINARY (a release build of that commit, e.g. from
# `git worktree add`). bench.sh appends bench/history.md to BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
CG_N=${CG_N:-200000}
source bench/common.sh
for arg in "$@"; do
  label=${arg%%=*}
  bin=${arg#*=}
  none=$(instructions "$bin" none)
  dl=$(instructions "$bin" mq-deadline)
  echo "| $label | $none | $dl |"
done
