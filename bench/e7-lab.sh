#!/usr/bin/env bash
# The E7 row of the README's "Against the real kernel" table: seed 003's
# build-server job (examples/seed/e7-build.fio) with the kernel defaults and
# with all of seed 003's tuning, on a real device with the lab and in
# simulation on a profile, with the same mount, sysctls and queue knobs.
#
#   bench/e7-lab.sh /dev/loop0                 # measured and simulated (root, fio)
#   SIM_ONLY=1 bench/e7-lab.sh                 # the simulated column alone
#
# The figure is the jobs' I/O wait per second of run: the time all jobs
# spent in read and write calls (mean latency x I/Os, summed over jobs and
# directions) divided by the run's length. Environment: RUNTIME (20s),
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

# I/O wait per second of run, from one fio JSON result.
wait_per_s() {
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
wait = sum(j[k]["lat_ns"]["mean"] * j[k]["total_ios"] for j in d["jobs"] for k in ("read", "write"))
run_s = max(j["job_runtime"] for j in d["jobs"]) / 1000
print(f"{wait / 1e9 / run_s:.3f}")' "$1"
}

simulate() { # NAME MOUNT [SETS...]
  local name=$1 mount=$2
  shift 2
  "$BIN" run "$JOB" --device "$PROFILE" --scheduler "$SCHED" --mount "$mount" \
    --mem "$MEM" --max-runtime "$RUNTIME" --set wbt_lat_usec=0 "$@" \
    --output-format json >"$TMP/sim-$name.json" 2>"$TMP/sim-$name.err"
  wait_per_s "$TMP/sim-$name.json"
}

measure() { # NAME MOUNT [SETS...]
  local name=$1 mount=$2
  shift 2
  "$BIN" lab "$JOB" --dev "$DEV" --schedulers "$SCHED" --mount "$mount" \
    --max-runtime "$RUNTIME" --set wbt_lat_usec=0 "$@" --quiet \
    --save-json "$TMP/lab-$name" >"$TMP/lab-$name.txt"
  wait_per_s "$TMP/lab-$name/round1-$SCHED.json"
}

sim="$(simulate defaults ext4) → $(simulate tuned "$TUNED_MOUNT" "${TUNED_SETS[@]}")"
if [ "${SIM_ONLY:-0}" = 1 ]; then
  echo "simulated ($PROFILE, --mem $MEM, $SCHED, $RUNTIME): $sim"
  exit 0
fi
DEV=${1:?usage: bench/e7-lab.sh DEV (a device the lab may overwrite)}
meas="$(measure defaults ext4) → $(measure tuned "$TUNED_MOUNT" "${TUNED_SETS[@]}")"
echo "| E7 (below) for $RUNTIME, I/O wait per second, defaults → seed 003's tuning | $meas | $sim |"
