#!/bin/bash
# 2026-12-06g: calibrate with the build that records each probe's
# kernel-thread CPU per I/O (kworkers, ksoftirqds), then the QD sweep, so
# the completion side is measured at every depth and for the 4-job probes.
set -x
cd /work/main
E=target/release/elevator
O=/tmp/lab12
mkdir -p $O
uptime
DEV=$($E loop create --size 4G --backing tmpfs)
echo DEV=$DEV
$E calibrate $DEV -o $O/loop0.toml --save-probes $O/probes.json 2>&1
uptime
$E validate examples/lab/qd-sweep.fio --dev $DEV --profile $O/loop0.toml --repeat 3 --schedulers none --save-json $O/sweep 2>&1
uptime
$E loop remove $DEV
