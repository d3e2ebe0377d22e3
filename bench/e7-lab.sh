#!/usr/bin/env bash
# The E7 row of the README's "Against the real kernel" table: seed 003's
# build-server job (examples/seed/e7-build.fio) with the kernel defaults and
# with all of seed 003's tuning, on a real device with the lab and in
# simulation on a profile, with the same mount, sysctls and queue knobs.
#
#   bench/e7-lab.sh /dev/loop0                 # measured and simulated (root, fio)
#   SIM_ONLY=1 bench/e7-lab.sh                 # the simulated column alone
#
# The figure is the jobs' mean time per read or write call, in us: the time
# all jobs spent in those calls (mean latency x I/Os, summed over jobs and
# directions) divided by the calls. The job is a fixed amount of work (the
# whole build's I/O wait is what tests/e7.rs prints); RUNTIME caps it here,
# and per call is what a capped run can compare. Environment: RUNTIME (20s),
# PROFILE (the built-in `loop`), MEM (the simulation's memory, default this
# machine's), SCHED (mq-deadline). WBT is off in both: the seed ran 3.13.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
BIN=${CARGO_TARGET_DIR:-target}/release/elevator
JOB=examples/seed/e7-build.fio
RUNTIME=${RUNTIME:-20s}
PROFILE=${PROFILE:-loop}
SCHED=${SCHED:-mq-deadline}
MEM=${MEM:-$(awk '/MemTotal/ {print $2 "k"}' /proc/meminfo)}
TUNED_MOUNT="ext4:data=writeback,noatime,nobarrier,delalloc,inode_readahead_blks=4096,journal_async_commit,commit=1800"
TUNED_SETS=(--set vm.dirty_background_ratio=60 --set vm.dirty_ratio=80
  --set vm.dirty_expire_centisecs=12000 --set vm.dirty_writeback_centisecs=6000
  --set nr_requests=1024 --set read_ahead_kb=512)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# The whole build needs ~9.7 GB of files; the 4 GiB loop device (and the
# `loop` profile) hold a quarter of its objects, which is more than a
# RUNTIME-capped run writes anyway.
grep -q '^nrfiles=512$' "$JOB" || { echo "e7-lab.sh: $JOB has no nrfiles=512 to scale" >&2; exit 1; }
sed 's/^nrfiles=512$/nrfiles=128/' "$JOB" >"$TMP/e7-build.fio"
JOB=$TMP/e7-build.fio

# Mean I/O wait per read or write call (us), from one fio JSON result.
wait_per_call() {
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
wait = sum(j[k]["lat_ns"]["mean"] * j[k]["total_ios"] for j in d["jobs"] for k in ("read", "write"))
calls = sum(j[k]["total_ios"] for j in d["jobs"] for k in ("read", "write"))
print(f"{wait / 1e3 / calls:.1f}")' "$1"
}

simulate() { # NAME MOUNT [SETS...]
  local name=$1 mount=$2
  shift 2
  "$BIN" run "$JOB" --device "$PROFILE" --scheduler "$SCHED" --mount "$mount" \
    --mem "$MEM" --max-runtime "$RUNTIME" --set wbt_lat_usec=0 "$@" \
    --output-format json >"$TMP/sim-$name.json" 2>"$TMP/sim-$name.err"
  wait_per_call "$TMP/sim-$name.json"
}

measure() { # NAME MOUNT [SETS...]
  local name=$1 mount=$2
  shift 2
  "$BIN" lab "$JOB" --dev "$DEV" --schedulers "$SCHED" --mount "$mount" \
    --max-runtime "$RUNTIME" --set wbt_lat_usec=0 "$@" --quiet \
    --save-json "$TMP/lab-$name" >"$TMP/lab-$name.txt"
  wait_per_call "$TMP/lab-$name/round1-$SCHED.json"
}

sim="$(simulate defaults ext4) → $(simulate tuned "$TUNED_MOUNT" "${TUNED_SETS[@]}")"
if [ "${SIM_ONLY:-0}" = 1 ]; then
  echo "simulated ($PROFILE, --mem $MEM, $SCHED, $RUNTIME): $sim"
  exit 0
fi
DEV=${1:?usage: bench/e7-lab.sh DEV (a device the lab may overwrite)}
meas="$(measure defaults ext4) → $(measure tuned "$TUNED_MOUNT" "${TUNED_SETS[@]}")"
echo "| E7 (below) for $RUNTIME, I/O wait per call (µs), defaults → seed 003's tuning | $meas | $sim |"
