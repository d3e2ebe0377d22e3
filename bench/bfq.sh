#!/usr/bin/env bash
# BFQ's cost in the simulator, next to mq-deadline: prints Markdown tables.
#
#   bench/bfq.sh            # full run
#   QUICK=1 bench/bfq.sh    # fewer requests, for a smoke test
#
# 1. Simulated requests per wall second with 1, 100 and 1000 busy queues
#    (one job per queue, 4 KiB random reads at depth 1 on nvme), and with
#    1000 jobs spread over 1, 10 and 100 cgroups. Consecutive jobs alternate
#    between I/O priority levels 4 and 5: BFQ stably merges a sync queue
#    created within 180 ms of the previous one of its group when both have
#    the same priority (bfq_do_or_sched_stable_merge), so jobs started
#    together with one priority would share a single queue. The runs use
#    64 simulated CPUs so that 1000 tasks do not queue for a few CPUs (the
#    task model's cost then grows with the number of tasks per CPU, whatever
#    the scheduler).
# 2. Simulated IOPS (not wall-clock) ceilings on nvme with 1 to 8 CPUs: 4 KiB
#    random reads at depth 128, one job per CPU, default CPU costs.
#
# Wall times are the best of three runs (the machine may be busy).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
BIN=${CARGO_TARGET_DIR:-target}/release/elevator
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

TOTAL=${TOTAL:-200000}
[ "${QUICK:-0}" = 1 ] && TOTAL=20000

jobfile() { # jobfile JOBS GROUPS TOTAL -> $TMP/q.fio
  local jobs=$1 groups=$2 total=$3 per
  per=$(( total / jobs ))
  {
    printf '[global]\nioengine=libaio\ndirect=1\nrw=randread\nbs=4k\niodepth=1\nfilename=/dev/nvme0n1\nnumber_ios=%d\n' "$per"
    for i in $(seq 0 $(( jobs - 1 ))); do
      printf '[j%d]\nprio=%d\n' "$i" $(( 4 + i % 2 ))
      if [ "$groups" -gt 1 ]; then printf 'cgroup=g%d\n' $(( i % groups )); fi
    done
  } > "$TMP/q.fio"
}

wall() { # wall SCHED -> "seconds requests", best of three
  local best="" reqs=0 t
  for _ in 1 2 3; do
    /usr/bin/time -f "%e" -o "$TMP/time" "$BIN" run "$TMP/q.fio" --scheduler "$1" --device nvme \
        --cpus 64 --output-format=json --output "$TMP/o.json" --no-progress
    t=$(cat "$TMP/time")
    reqs=$(python3 -c "import json;u=json.load(open('$TMP/o.json'))['disk_util'][0];print(u['read_ios'])")
    if [ -z "$best" ] || python3 -c "import sys;sys.exit(0 if $t < $best else 1)"; then best=$t; fi
  done
  echo "$best $reqs"
}

row() { # row LABEL JOBS GROUPS
  jobfile "$2" "$3" "$TOTAL"
  read -r tm rm < <(wall mq-deadline)
  read -r tb rb < <(wall bfq)
  python3 - "$1" "$tm" "$rm" "$tb" "$rb" <<'PY'
import sys
label, tm, rm, tb, rb = sys.argv[1], *map(float, sys.argv[2:])
m, b = rm / max(tm, 1e-3), rb / max(tb, 1e-3)
print(f"| {label} | {int(rm)} | {m:,.0f} | {b:,.0f} | {b / m:.2f} |")
PY
}

echo "## BFQ: simulation speed against busy queues and groups"
echo
echo "Requests per wall second, best of three; $TOTAL requests of 4 KiB random reads at depth 1"
echo "on nvme, 64 simulated CPUs."
echo
echo "| busy queues (jobs) | simulated requests | mq-deadline | bfq | bfq ÷ mq-deadline |"
echo "|---|---:|---:|---:|---:|"
for n in 1 100 1000; do row "$n" "$n" 1; done
echo
echo "| 1000 jobs in cgroups | simulated requests | mq-deadline | bfq | bfq ÷ mq-deadline |"
echo "|---|---:|---:|---:|---:|"
for g in 1 10 100; do row "$g group(s)" 1000 "$g"; done
echo
# bench/bench.sh has every scheduler's ceilings; it asks for the first part only.
[ "${SKIP_CEILINGS:-0}" = 1 ] && exit 0
echo
echo "## BFQ: CPU-cost ceilings on nvme"
echo
echo "Simulated IOPS of 4 KiB random reads at depth 128, one job per CPU, default CPU costs"
echo "(BFQ's hooks 1.9 us per request under one lock, mq-deadline's 0.7 us)."
echo
scheds="none mq-deadline bfq"
"$BIN" schedulers 2>/dev/null | grep -q '^kyber .*; simulated)' && scheds="none mq-deadline kyber bfq"
printf '| CPUs |'; for s in $scheds; do printf ' %s |' "$s"; done; printf ' bfq vs none |\n'
printf '|---:|'; for _ in $scheds; do printf -- '---:|'; done; printf -- '---:|\n'
for cpus in 1 2 4 8; do
  printf '[global]\nioengine=libaio\ndirect=1\nrw=randread\nbs=4k\niodepth=128\nruntime=1\ntime_based\nfilename=/dev/nvme0n1\ngroup_reporting\n[r]\nnumjobs=%d\n' "$cpus" > "$TMP/c.fio"
  line="| $cpus |"
  declare -A got=()
  for s in $scheds; do
    "$BIN" run "$TMP/c.fio" --scheduler "$s" --device nvme --cpus "$cpus" --output-format=json \
        --output "$TMP/c.json" --no-progress
    got[$s]=$(python3 -c "import json;d=json.load(open('$TMP/c.json'));print(round(sum(j['read']['iops'] for j in d['jobs'])))")
    line="$line $(python3 -c "print(f'{${got[$s]}:,}')") |"
  done
  line="$line $(python3 -c "print(f'{${got[bfq]}/${got[none]}:.2f}')") |"
  echo "$line"
done
