#!/usr/bin/env bash
# Simulation speed and CPU-cost ceilings of cfq and tpps beside noop and
# deadline, measured the way bench/bench.sh measures the other schedulers.
# Prints a Markdown report (to stdout, or to $OUT).
#
#   bench/cfq_tpps.sh            # full run
#   QUICK=1 bench/cfq_tpps.sh    # smaller counts, for a smoke test
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
BIN=${CARGO_TARGET_DIR:-target}/release/elevator
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
N=${N:-4000000}
if [ "${QUICK:-0}" = 1 ]; then N=400000; fi

job() { # job TOTAL_REQUESTS -> two QD32 random readers (bench.sh's workload)
  cat > "$TMP/b.fio" <<JOB
[global]
ioengine=libaio
direct=1
rw=randread
bs=4k
iodepth=32
filename=/dev/bench
number_ios=$(( $1 / 2 ))
[a]
[b]
JOB
}

measure() { # measure SCHED DEVICE TOTAL -> "wall_s rss_kb requests"
  job "$3"
  /usr/bin/time -f "%e %M" -o "$TMP/time" "$BIN" run "$TMP/b.fio" --scheduler "$1" --device "$2" \
      --output-format=json --output "$TMP/out.json" --no-progress
  local reqs
  reqs=$(python3 -c "import json;d=json.load(open('$TMP/out.json'));u=d['disk_util'][0];print(u['read_ios']+u['write_ios'])")
  echo "$(cat "$TMP/time") $reqs"
}

out() { if [ -n "${OUT:-}" ]; then cat >> "$OUT"; else cat; fi; }
[ -n "${OUT:-}" ] && : > "$OUT"

{
  echo "## cfq and tpps: simulation speed"
  echo
  echo "Written by \`bench/cfq_tpps.sh\` on $(date -u +%Y-%m-%d) ($(nproc) CPUs). Two jobs of 4 KiB random"
  echo "reads at iodepth 32 (bench.sh's workload), wall time best of three."
  echo
  echo "| scheduler | device | simulated requests | wall time (s) | requests per wall second | peak RSS (MiB) |"
  echo "|---|---|---:|---:|---:|---:|"
} | out
for dev in nvme sata-ssd hdd; do
  n=$N
  [ "$dev" = hdd ] && n=$(( N / 8 ))
  for s in noop deadline cfq tpps; do
    read -r wall rss reqs < <(measure "$s" "$dev" "$n")
    for _ in 2 3; do
      read -r w2 r2 _ < <(measure "$s" "$dev" "$n")
      if python3 -c "import sys; sys.exit(0 if $w2 < $wall else 1)"; then wall=$w2; fi
      [ "$r2" -gt "$rss" ] && rss=$r2
    done
    rate=$(python3 -c "print(f'{$reqs/max($wall,0.001):,.0f}')")
    echo "| $s | $dev | $reqs | $wall | $rate | $(( rss / 1024 )) |" | out
    echo "$s/$dev: $rate req/s" >&2
  done
done
{
  echo
  echo "## cfq and tpps: CPU-cost ceilings on nvme"
  echo
  echo "Simulated IOPS of 4 KiB random reads at iodepth 128, one job per CPU (bench.sh's ceiling run)."
  echo
  echo "| CPUs | noop | deadline | cfq | tpps |"
  echo "|---:|---:|---:|---:|---:|"
} | out
for cpus in 1 2 4 8; do
  cat > "$TMP/c.fio" <<JOB
[global]
ioengine=libaio
direct=1
rw=randread
bs=4k
iodepth=128
runtime=1
time_based
filename=/dev/nvme0n1
group_reporting
[r]
numjobs=$cpus
JOB
  row="| $cpus"
  for s in noop deadline cfq tpps; do
    "$BIN" run "$TMP/c.fio" --scheduler "$s" --device nvme --cpus "$cpus" --output-format=json \
        --output "$TMP/c.json" --no-progress
    v=$(python3 -c "import json;d=json.load(open('$TMP/c.json'));print(f\"{round(sum(j['read']['iops'] for j in d['jobs'])):,}\")")
    row="$row | $v"
  done
  echo "$row |" | out
done
