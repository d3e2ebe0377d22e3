#!/usr/bin/env bash
# kyber's benchmarks beside none and mq-deadline, measured as bench/bench.sh
# measures the others. Writes bench/kyber.md (BENCHMARKS.md is bench.sh's).
#
#   bench/kyber.sh            # full run
#   QUICK=1 bench/kyber.sh    # smaller counts, for a smoke test
#
# 1. Simulated requests per wall-clock second (best of three), two jobs of
#    4 KiB random reads at iodepth 32, a fixed number of I/Os.
# 2. Peak RSS for a small and a 20x larger run of kyber (must stay flat).
# 3. Simulated IOPS ceilings on nvme with 1-8 CPUs (bench.sh's ceiling job:
#    4 KiB random reads at iodepth 128, one job per CPU).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
BIN=${CARGO_TARGET_DIR:-target}/release/elevator
OUT=bench/kyber.md
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

N=${N:-4000000}
SMALL=${SMALL:-1000000}
LARGE=${LARGE:-20000000}
if [ "${QUICK:-0}" = 1 ]; then N=400000; SMALL=100000; LARGE=1000000; fi
SCHEDS="none mq-deadline kyber"

job() { # job TOTAL_REQUESTS -> two QD32 random readers
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

{
  echo "# kyber benchmarks"
  echo
  echo "Written by \`bench/kyber.sh\` on $(date -u +%Y-%m-%d) ($(nproc) CPUs, $(uname -m))."
  echo
  echo "## Simulation speed"
  echo
  echo "Two jobs of 4 KiB random reads at iodepth 32 (libaio); wall time is the best of three runs."
  echo
  echo "| scheduler | device | simulated requests | wall time (s) | requests per wall second | peak RSS (MiB) |"
  echo "|---|---|---:|---:|---:|---:|"
} > "$OUT"
for dev in nvme sata-ssd; do
  for s in $SCHEDS; do
    read -r wall rss reqs < <(measure "$s" "$dev" "$N")
    for _ in 2 3; do
      read -r w2 r2 _ < <(measure "$s" "$dev" "$N")
      if python3 -c "import sys; sys.exit(0 if $w2 < $wall else 1)"; then wall=$w2; fi
      [ "$r2" -gt "$rss" ] && rss=$r2
    done
    rate=$(python3 -c "print(f'{$reqs/max($wall,0.001):,.0f}')")
    echo "| $s | $dev | $reqs | $wall | $rate | $(( rss / 1024 )) |" >> "$OUT"
    echo "$s/$dev: $rate req/s" >&2
  done
done
{
  echo
  echo "## Memory does not grow with run length"
  echo
  echo "| scheduler | device | simulated requests | peak RSS (MiB) |"
  echo "|---|---|---:|---:|"
} >> "$OUT"
for total in "$SMALL" "$LARGE"; do
  read -r _ rss reqs < <(measure kyber nvme "$total")
  echo "| kyber | nvme | $reqs | $(python3 -c "print(round($rss/1024,1))") |" >> "$OUT"
done
{
  echo
  echo "## CPU-cost ceilings on nvme"
  echo
  echo "Simulated IOPS (not wall-clock) of 4 KiB random reads at iodepth 128, one job per CPU,"
  echo "default CPU costs. kyber's hooks (0.35 us per request) run under its per-CPU kcq locks"
  echo "and per-queue khd locks; mq-deadline's (0.7 us) under one queue lock."
  echo
  echo "| CPUs | none | mq-deadline | kyber | mq-deadline vs none | kyber vs none |"
  echo "|---:|---:|---:|---:|---:|---:|"
} >> "$OUT"
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
  declare -A got=()
  for s in $SCHEDS; do
    "$BIN" run "$TMP/c.fio" --scheduler "$s" --device nvme --cpus "$cpus" --output-format=json \
        --output "$TMP/c.json" --no-progress
    got[$s]=$(python3 -c "import json;d=json.load(open('$TMP/c.json'));print(round(sum(j['read']['iops'] for j in d['jobs'])))")
    row="$row | $(python3 -c "print(f'{${got[$s]}:,}')")"
  done
  row="$row | $(python3 -c "print(f'{${got[mq-deadline]}/${got[none]}:.2f}')")"
  row="$row | $(python3 -c "print(f'{${got[kyber]}/${got[none]}:.2f}')") |"
  echo "$row" >> "$OUT"
done
echo >> "$OUT"
echo "wrote $OUT" >&2
