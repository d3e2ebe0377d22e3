#!/bin/bash
# 2026-12-06e: the standard session again with the build of 2026-12-06d (a
# second check on another hour), then per-thread CPU by queue depth under
# none (QD4, QD16, QD64, three rounds): does every thread's CPU per I/O fall
# from QD16 to QD64 on a fast host as on the slow one of 2026-12-06?
set -x
cd /work/main
E=target/release/elevator
P=lab-records/2026-12-06/threads/probe.py
O=/tmp/lab10
mkdir -p $O
uptime
DEV=$($E loop create --size 4G --backing tmpfs)
echo DEV=$DEV
$E calibrate $DEV -o $O/loop0.toml --save-probes $O/probes.json 2>&1
uptime
$E validate examples/lab/randread-qd64.fio --dev $DEV --profile $O/loop0.toml --repeat 3 --save-json $O/qd64 2>&1
uptime
$E validate examples/e2-sata-ssd.fio --dev $DEV --profile $O/loop0.toml --repeat 3 --max-runtime 5s --save-json $O/e2 2>&1
uptime
$E validate examples/lab/qd-sweep.fio --dev $DEV --profile $O/loop0.toml --repeat 3 --schedulers none --save-json $O/sweep 2>&1
uptime
for round in 1 2 3; do
  for qd in 4 16 64; do python3 $P $DEV $qd none; done
done > $O/threads-depth.txt 2>&1
uptime
$E loop remove $DEV
