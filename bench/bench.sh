#!/usr/bin/env bash
# Simulation speed and memory benchmark. Writes BENCHMARKS.md at the repo root.
#
#   bench/bench.sh            # full run (1e8-request memory point takes about a minute)
#   QUICK=1 bench/bench.sh    # smaller counts, for a smoke test
#   BASELINE=path/to/old/elevator bench/bench.sh   # also count an older build's instructions
#                                  (BASELINE_NAME=COMMIT names it in the table)
#
# Measures simulated requests per wall-clock second for each scheduler and
# device, fio's null-engine IOPS on this machine for comparison, and peak RSS
# for a small and a 100x larger run (memory must stay flat). Wall-clock figures
# move with the machine's load; the instruction counts (valgrind's callgrind,
# when valgrind is installed) do not, so a change's cost is judged on them.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
BIN=${CARGO_TARGET_DIR:-target}/release/elevator
OUT=BENCHMARKS.md
# Every scheduler the simulator runs, in the registry's order (none first).
mapfile -t SCHEDS < <("$BIN" schedulers | awk '/simulated\)$/ {print $1}')
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

N=${N:-4000000}
SMALL=${SMALL:-1000000}
LARGE=${LARGE:-100000000}
if [ "${QUICK:-0}" = 1 ]; then N=400000; SMALL=100000; LARGE=1000000; fi

if ! command -v fio >/dev/null 2>&1; then
  echo "installing fio (apt-get) for the null-engine reference..." >&2
  (apt-get update -qq && apt-get install -y -qq --no-install-recommends fio) >/dev/null 2>&1 || true
fi

# job NAME TOTAL and instructions BIN SCHED: bench/common.sh (history.sh uses them too).
source bench/common.sh

measure() { # measure SCHED DEVICE TOTAL -> "wall_s rss_kb requests"
  job b "$3"
  /usr/bin/time -f "%e %M" -o "$TMP/time" "$BIN" run "$TMP/b.fio" --scheduler "$1" --device "$2" \
      --output-format=json --output "$TMP/out.json" --no-progress
  local reqs
  reqs=$(python3 -c "import json;d=json.load(open('$TMP/out.json'));u=d['disk_util'][0];print(u['read_ios']+u['write_ios'])")
  echo "$(cat "$TMP/time") $reqs"
}

# fio's null engine, three ways: one job at the workload's iodepth 32 (one
# fio thread, like the simulator's one thread), the workload itself (two jobs:
# two fio threads on two CPUs), and fio's cheapest case (one job, iodepth 1).
fio_null=""
fio_null_two=""
fio_null_qd1=""
fio_iops() { # fio_iops JSON -> summed read IOPS of the (group-reported) job
  python3 -c "import json;print(round(json.load(open('$1'))['jobs'][0]['read']['iops']))" 2>/dev/null || echo ""
}
if command -v fio >/dev/null 2>&1; then
  common="--ioengine=null --rw=randread --bs=4k --size=64g --time_based --runtime=5 --output-format=json"
  # shellcheck disable=SC2086
  fio --name=null $common --iodepth=32 --output="$TMP/null32.json" >/dev/null 2>&1 || true
  fio_null=$(fio_iops "$TMP/null32.json")
  # shellcheck disable=SC2086
  fio --name=null $common --iodepth=32 --numjobs=2 --group_reporting --output="$TMP/null2.json" >/dev/null 2>&1 || true
  fio_null_two=$(fio_iops "$TMP/null2.json")
  # shellcheck disable=SC2086
  fio --name=null $common --iodepth=1 --output="$TMP/null1.json" >/dev/null 2>&1 || true
  fio_null_qd1=$(fio_iops "$TMP/null1.json")
fi

{
  echo "# Benchmarks"
  echo
  echo "Written by \`bench/bench.sh\` on $(date -u +%Y-%m-%d) ($(nproc) CPUs, $(uname -m), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'))."
  echo "Workload: two jobs of 4 KiB random reads at iodepth 32 (libaio), a fixed number of I/Os."
  echo "Load average when it started: $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine slows the wall-clock figures)."
  echo
  echo "## Simulation speed"
  echo
  echo "Wall time is the best of three runs."
  echo
  echo "| scheduler | device | simulated requests | wall time (s) | requests per wall second | peak RSS (MiB) |"
  echo "|---|---|---:|---:|---:|---:|"
} > "$OUT"
for dev in ram nvme sata-ssd hdd; do
  n=$N
  # The HDD model scans its 32-command NCQ per decision: fewer requests keep the run short.
  [ "$dev" = hdd ] && n=$(( N / 8 ))
  for s in "${SCHEDS[@]}"; do
    # Best of three runs: the machine may be busy with other work.
    read -r wall rss reqs < <(measure "$s" "$dev" "$n")
    for _ in 2 3; do
      read -r w2 r2 _ < <(measure "$s" "$dev" "$n")
      if python3 -c "import sys; sys.exit(0 if $w2 < $wall else 1)"; then wall=$w2; fi
      [ "$r2" -gt "$rss" ] && rss=$r2
    done
    rate=$(python3 -c "print(f'{$reqs/max($wall,0.001):,.0f}')")
    echo "| $s | $dev | $reqs | $wall | $rate | $(( rss / 1024 )) |" >> "$OUT"
    if [ "$s/$dev" = mq-deadline/nvme ]; then mq_nvme_rate=$(python3 -c "print($reqs/max($wall,0.001))"); fi
    echo "$s/$dev: $rate req/s" >&2
  done
done
{
  echo
  if [ -n "$fio_null" ]; then
    ratio() { python3 -c "print(f'{$mq_nvme_rate/$1:.2f}')"; }
    num() { python3 -c "print(f'{$1:,}')"; }
    echo "fio's \`ioengine=null\` on this machine, same run (4 KiB random reads, 5 s each), against mq-deadline on nvme above:"
    echo
    echo "| fio null-engine run | fio threads | IOPS | mq-deadline/nvme simulated requests/s ÷ fio IOPS |"
    echo "|---|---:|---:|---:|"
    echo "| one job, iodepth 32 (the workload's depth; the reference) | 1 | $(num "$fio_null") | $(ratio "$fio_null") |"
    [ -n "$fio_null_two" ] && echo "| two jobs, iodepth 32 (the workload itself) | 2 | $(num "$fio_null_two") | $(ratio "$fio_null_two") |"
    [ -n "$fio_null_qd1" ] && echo "| one job, iodepth 1 (fio's cheapest case) | 1 | $(num "$fio_null_qd1") | $(ratio "$fio_null_qd1") |"
    echo
    echo "The simulator runs on one thread, so the reference is one fio thread driving the"
    echo "workload's queue depth; fio gives each job its own thread, so the two-job figure"
    echo "uses both CPUs. These fio figures move by tens of percent with the load on the machine."
  else
    echo "fio is not installed, so the null-engine reference is missing from this run."
  fi
  echo
  echo "## Memory does not grow with run length"
  echo
  echo "| scheduler | device | simulated requests | peak RSS (MiB) |"
  echo "|---|---|---:|---:|"
} >> "$OUT"
for total in "$SMALL" "$LARGE"; do
  read -r wall rss reqs < <(measure mq-deadline nvme "$total")
  echo "| mq-deadline | nvme | $reqs | $(python3 -c "print(round($rss/1024,1))") |" >> "$OUT"
done

# Buffered I/O (the page cache model): simulated fio I/Os per wall second
# for hits, misses and writeback, and peak memory for random 4 KiB writes
# over a 1 TiB file as the number of writes grows.
BUF_N=${BUF_N:-1000000}
[ "${QUICK:-0}" = 1 ] && BUF_N=100000
buffered() { # buffered NAME DEVICE MEM RW SIZE EXTRA -> "wall_s rss_kb ios"
  printf '[b]\nioengine=psync\nrw=%s\nbs=4k\nsize=%s\nnumber_ios=%d\nfilename=/dev/bench\n%b' \
      "$4" "$5" "$BUF_N" "$6" > "$TMP/buf.fio"
  /usr/bin/time -f "%e %M" -o "$TMP/time" "$BIN" run "$TMP/buf.fio" --scheduler mq-deadline \
      --device "$2" --mem "$3" --output-format=json --output "$TMP/buf.json" --no-progress 2>/dev/null
  echo "$(cat "$TMP/time") $(python3 -c "import json;j=json.load(open('$TMP/buf.json'))['jobs'][0];print(j['read']['total_ios']+j['write']['total_ios'])")"
}
{
  echo
  echo "## Buffered I/O"
  echo
  echo "Simulated fio I/Os (4 KiB, psync, mq-deadline) per wall second; best of three."
  echo
  echo "| case | device | memory | I/Os | wall (s) | I/Os per wall second | peak RSS (MiB) |"
  echo "|---|---|---|---:|---:|---:|---:|"
} >> "$OUT"
buf_row() { # buf_row LABEL DEVICE MEM RW SIZE EXTRA
  local best="" rss=0 ios=0 w r n
  for _ in 1 2 3; do
    read -r w r n < <(buffered "$1" "$2" "$3" "$4" "$5" "$6")
    if [ -z "$best" ] || python3 -c "import sys; sys.exit(0 if $w < $best else 1)"; then best=$w; fi
    [ "$r" -gt "$rss" ] && rss=$r
    ios=$n
  done
  echo "| $1 | $2 | $3 | $ios | $best | $(python3 -c "print(f'{$ios/max($best,0.001):,.0f}')") | $(( rss / 1024 )) |" >> "$OUT"
}
buf_row "hits (pre_read 64 MiB, random reads)" ram 16g randread 64m 'pre_read=1\n'
buf_row "misses (random reads of 1 TiB)" nvme 16g randread 1t ''
buf_row "writeback (sequential writes, throttled)" nvme 2g write 1t ''
{
  echo
  echo "Peak memory for random 4 KiB buffered writes over a 1 TiB file on nvme (16 GiB):"
  echo "the page cache keeps one run per cached extent, so memory follows the pages"
  echo "cached, up to the simulated memory (16 GiB is about 4M pages, some 90 bytes each"
  echo "here), then stays flat: not the file size or the run length."
  echo
  echo "| writes | peak RSS (MiB) |"
  echo "|---:|---:|"
} >> "$OUT"
for n in 100000 1000000 ${LARGE_BUF:-4000000 8000000}; do
  [ "${QUICK:-0}" = 1 ] && [ "$n" -gt 1000000 ] && continue
  BUF_N=$n
  read -r _ r _ < <(buffered tw nvme 16g randwrite 1t '')
  echo "| $n | $(( r / 1024 )) |" >> "$OUT"
done
{
  echo
  echo "## CPU-cost ceilings on nvme"
  echo
  echo "Simulated IOPS (not wall-clock) of 4 KiB random reads at iodepth 128, one job per CPU,"
  echo "with the default CPU costs (about 2.4 us of CPU per I/O without a scheduler; mq-deadline"
  echo "0.83 us of hooks under the queue lock on 6.x, 0.7 us before 5.14; see src/sched/mod.rs)."
  echo
  echo "| CPUs | $(printf '%s | ' "${SCHEDS[@]}")mq-deadline vs none |"
  echo "|---:|$(printf -- '---:|%.0s' "${SCHEDS[@]}")---:|"
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
  for s in "${SCHEDS[@]}"; do
    "$BIN" run "$TMP/c.fio" --scheduler "$s" --device nvme --cpus "$cpus" --output-format=json \
        --output "$TMP/c.json" --no-progress
    got[$s]=$(python3 -c "import json;d=json.load(open('$TMP/c.json'));print(round(sum(j['read']['iops'] for j in d['jobs'])))")
    row="$row | $(python3 -c "print(f'{${got[$s]}:,}')")"
  done
  row="$row | $(python3 -c "print(f'{${got[mq-deadline]}/${got[none]}:.2f}')") |"
  echo "$row" >> "$OUT"
done
{
  echo
  echo "## Many jobs on few CPUs"
  echo
  echo "Wall-clock time for N jobs of 1024 random 4 KiB reads each (libaio, iodepth 2) on nvme"
  echo "with 2 simulated CPUs, so N/2 jobs share each CPU through the fair-scheduler model."
  echo "The time per simulated request should stay about flat as N grows."
  echo
  echo "| jobs | simulated requests | wall s | requests/s | peak RSS (MiB) |"
  echo "|---:|---:|---:|---:|---:|"
} >> "$OUT"
for n in 64 256 1024 ${MANY_JOBS_TOP:-4096}; do
  [ "${QUICK:-0}" = 1 ] && [ "$n" -gt 256 ] && continue
  printf '[global]\nrw=randread\nbs=4k\nsize=4m\nioengine=libaio\niodepth=2\ndirect=1\ngroup_reporting\n[m]\nnumjobs=%d\noffset_increment=4m\nfilename=/dev/nvme0n1\n' "$n" > "$TMP/many.fio"
  /usr/bin/time -f "%e %M" -o "$TMP/time" "$BIN" run "$TMP/many.fio" --scheduler none --device nvme \
      --cpus 2 --output-format=json --output "$TMP/many.json" --no-progress
  read -r wall rss < "$TMP/time"
  reqs=$(( n * 1024 ))
  echo "| $n | $reqs | $wall | $(python3 -c "print(f'{$reqs/max($wall,0.001):,.0f}')") | $(( rss / 1024 )) |" >> "$OUT"
done

CG_N=200000
[ "${QUICK:-0}" = 1 ] && CG_N=20000
if ! command -v valgrind >/dev/null 2>&1; then
  (apt-get install -y -qq --no-install-recommends valgrind) >/dev/null 2>&1 || true
fi
if command -v valgrind >/dev/null 2>&1; then
  {
    echo
    echo "## Instructions per simulated request"
    echo
    echo "Counted by valgrind's callgrind for $CG_N requests of the same workload on nvme: unlike"
    echo "wall time it does not move with the machine's load, so this is the figure to compare"
    echo "builds by.${BASELINE:+ The baseline is the build at ${BASELINE_NAME:-$BASELINE}.}"
    echo
    if [ -n "${BASELINE:-}" ]; then
      echo "| scheduler | instructions per request | baseline | change |"
      echo "|---|---:|---:|---:|"
    else
      echo "| scheduler | instructions per request |"
      echo "|---|---:|"
    fi
  } >> "$OUT"
  for s in "${SCHEDS[@]}"; do
    now=$(instructions "$BIN" "$s")
    if [ -n "${BASELINE:-}" ]; then
      # An older build may not have every scheduler yet.
      if base=$(instructions "$BASELINE" "$s" 2>/dev/null); then
        change=$(python3 -c "print(f'{($now/$base-1)*100:+.1f}%')")
      else
        base="-"; change="new"
      fi
      echo "| $s | $now | $base | $change |" >> "$OUT"
    else
      echo "| $s | $now |" >> "$OUT"
    fi
    echo "$s: $now instructions per request" >&2
  done
fi
echo >> "$OUT"
# Older builds' instruction counts (measured once with bench/history.sh).
cat bench/history.md >> "$OUT"
echo >> "$OUT"
# BFQ against busy queues and groups (issue 9's scaling figures).
SKIP_CEILINGS=1 QUICK="${QUICK:-0}" bench/bfq.sh >> "$OUT"
# What each re-run changed and why (written with the run, kept across runs).
echo >> "$OUT"
cat bench/reruns.md >> "$OUT"
echo "wrote $OUT" >&2
# The README's figures come from this run, never by hand.
python3 bench/readme.py
