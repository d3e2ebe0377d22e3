#!/usr/bin/env bash
# The simulated column of the README's buffered "Against the real kernel"
# table, for the rows whose figures depend on CPU costs (the page-cache
# calls, the writer's speed): each row's job on the built-in `loop` profile
# with this machine's memory, as the lab ran it on the tmpfs loop device.
#
#   bench/lab-sim-rows.sh
#
# The other rows' figures are counts (requests, sectors, flushes, when
# writeback starts) that tests/buffered.rs and tests/ext4.rs check.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
BIN=${CARGO_TARGET_DIR:-target}/release/elevator
MEM=${MEM:-$(awk '/MemTotal/ {print $2 "k"}' /proc/meminfo)}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

sim() { # JOBFILE [OPTIONS...] -> JSON on stdout
  local job=$1
  shift
  "$BIN" run "$job" --device loop --mem "$MEM" --scheduler none "$@" \
    --output-format json 2>/dev/null
}

# A job file with `invalidate=0` added to every section of $1.
no_invalidate() {
  sed 's/^\(\[[^]]*\]\)$/\1\ninvalidate=0/' "$1" >"$TMP/$(basename "$1" .fio)-inv0.fio"
  echo "$TMP/$(basename "$1" .fio)-inv0.fio"
}

echo "memory: $MEM"
for inv in 1 0; do
  job=tests/jobs/buffered-wrap-invalidate.fio
  [ "$inv" = 0 ] && job=$(no_invalidate "$job")
  sim "$job" | python3 -c '
import json, sys
d = json.load(sys.stdin)
dev = d["elevator"]["disk_stats"]["read_ios"]
reads = d["jobs"][0]["read"]["total_ios"]
print(f"buffered-wrap-invalidate invalidate={sys.argv[1]}: {dev} device reads of {reads:,}")' "$inv"
done
for inv in 1 0; do
  job=tests/jobs/buffered-wrap-write.fio
  [ "$inv" = 0 ] && job=$(no_invalidate "$job")
  sim "$job" --mount ext4 | python3 -c '
import json, sys
d = json.load(sys.stdin)
w = d["jobs"][0]["write"]
dev = d["elevator"]["disk_stats"]["write_sectors"] * 512 / 2**20
mib = w["io_kbytes"] / 1024
bw = w["bw"] / 1024
print(f"buffered-wrap-write on ext4, 1 s, invalidate={sys.argv[1]}: {dev:.0f} of {mib:.0f} MiB on the device ({dev / mib:.0%}), writer {bw:.0f} MiB/s")' "$inv"
done
for ratios in "4 2" "16 12"; do
  set -- $ratios
  for mount in raw ext4; do
    opts=()
    [ "$mount" = ext4 ] && opts=(--mount ext4)
    sim tests/jobs/buffered-long-write.fio --set "vm.dirty_ratio=$1" \
      --set "vm.dirty_background_ratio=$2" "${opts[@]}" | python3 -c '
import json, sys
d = json.load(sys.stdin)
pc = d["elevator"]["page_cache"]
w = d["jobs"][0]["write"]
end = d["jobs"][0]["job_runtime"] * 1_000_000
# Written by the end of the writer'"'"'s runtime: what it wrote less what was
# still dirty or under writeback at the last sample before that end.
last = [s for s in pc["samples"] if s["at_ns"] <= end][-1]
left = (last["Dirty_kb"] + last["Writeback_kb"]) / 1024
written = w["io_kbytes"] / 1024 - left
peak = pc["peak_dirty_kb"] / 1024
bw = w["bw"] / 1024
print(f"buffered-long-write {sys.argv[1]} {sys.argv[2]}: peak Dirty {peak:.0f} MiB, "
      f"written during the run about {written:.0f} MiB, writer {bw:.0f} MiB/s")' "$1/$2" "$mount"
  done
done
SIM_ONLY=1 MEM=$MEM bench/e7-lab.sh
