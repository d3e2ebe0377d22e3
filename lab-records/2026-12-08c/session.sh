#!/bin/bash
# 2026-12-08c: the standard session (calibrate, validate x3 on QD64, E2 and
# the QD sweep) at de8c894 (08b's build with the buffered-hit fix): does 08b
# repeat?
set -x
cd /work/main
E=target/release/elevator
O=/tmp/lab29
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
$E loop remove $DEV
