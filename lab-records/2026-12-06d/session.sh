#!/bin/bash
# 2026-12-06d: the standard session (calibrate, validate x3 on QD64, E2 and
# the QD sweep), then per-thread CPU around fio under none, mq-deadline and
# kyber (QD64 three rounds, E2 two rounds) for where the schedulers' extra
# CPU lands: fio's side or the completion side (loop worker, ksoftirqd).
set -x
cd /work/main
E=target/release/elevator
P=lab-records/2026-12-06/threads/probe.py
O=/tmp/lab9
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
sed "s#/dev/loop0#$DEV#" lab-records/2026-12-06/threads/e2.fio > $O/e2-threads.fio
for round in 1 2 3; do
  for s in none mq-deadline kyber; do python3 $P $DEV 64 $s; done
done > $O/threads-qd64.txt 2>&1
for round in 1 2; do
  for s in none mq-deadline kyber; do python3 $P $DEV 4 $s $O/e2-threads.fio; done
done > $O/threads-e2.txt 2>&1
uptime
$E loop remove $DEV
