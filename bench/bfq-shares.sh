#!/usr/bin/env bash
# BFQ's shares over time for tests/jobs/bfq-weights-randwrite.fio (four
# cgroups of weight 1000/800/600/400, one QD32 random writer each), run for
# RUNTIME seconds with per-second IOPS logs, printed as each group's share
# of the IOPS in every WINDOW seconds (w1000/w800/w600/w400, %). The README's
# "BFQ's learned state" table comes from it.
#
#   bench/bfq-shares.sh sim DEVICE SEEDS [--set KNOB=VALUE ...]
#   bench/bfq-shares.sh lab DEV ROUNDS [--set KNOB=VALUE ...]   (root, fio)
#
# e.g. bench/bfq-shares.sh sim nvme "1 2 3" --set nr_requests=256 --set iosched/low_latency=0
#      bench/bfq-shares.sh lab /dev/loop0 3 --set nr_requests=256 --set iosched/low_latency=0
# RUNTIME (default 30) and WINDOW (default 5) come from the environment.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
BIN=${CARGO_TARGET_DIR:-target}/release/elevator
RUNTIME=${RUNTIME:-30}
WINDOW=${WINDOW:-5}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

mode=${1:?sim or lab}
target=${2:?device profile (sim) or block device (lab)}
count=${3:?seeds (sim) or rounds (lab)}
shift 3

sed -e "s/^runtime=.*/runtime=$RUNTIME/" \
  -e 's/^time_based$/time_based\nwrite_iops_log=iops\nlog_avg_msec=1000/' \
  tests/jobs/bfq-weights-randwrite.fio >"$TMP/job.fio"

# Four per-second IOPS logs (one per group, in job order) -> one line of
# shares per window.
windows() {
  paste -d' ' <(cut -d, -f2 "$1") <(cut -d, -f2 "$2") <(cut -d, -f2 "$3") <(cut -d, -f2 "$4") |
    awk -v w="$WINDOW" '{a+=$1; b+=$2; c+=$3; d+=$4}
      NR % w == 0 {t=a+b+c+d; if (t>0) printf "%.0f/%.0f/%.0f/%.0f  ", 100*a/t, 100*b/t, 100*c/t, 100*d/t; a=b=c=d=0}
      END {print ""}'
}

case $mode in
sim)
  for seed in $count; do
    rm -f "$TMP"/iops_iops.*.log
    "$BIN" run "$TMP/job.fio" --scheduler bfq --device "$target" --seed "$seed" \
      --log-dir "$TMP" "$@" >/dev/null 2>&1
    printf 'seed %s: ' "$seed"
    windows "$TMP"/iops_iops.{1,2,3,4}.log
  done
  ;;
lab)
  "$BIN" lab "$TMP/job.fio" --dev "$target" --schedulers bfq --repeat "$count" \
    --save-json "$TMP/lab" --quiet "$@" >/dev/null
  for r in $(seq 1 "$count"); do
    printf 'round %s: ' "$r"
    windows "$TMP"/lab/round"$r"-bfq-iops_iops.{1,2,3,4}.log
  done
  ;;
*)
  echo "usage: $0 sim|lab ..." >&2
  exit 2
  ;;
esac
