#!/bin/bash
set -x
cd /work/main
E=target/release/elevator
uptime
DEV=$($E loop create --size 4G --backing tmpfs)
echo DEV=$DEV
$E calibrate $DEV -o /tmp/lab8/loop0.toml --save-probes /tmp/lab8/probes.json 2>&1
uptime
$E validate examples/lab/randread-qd64.fio --dev $DEV --profile /tmp/lab8/loop0.toml --repeat 3 --save-json /tmp/lab8/qd64 2>&1
uptime
$E validate examples/e2-sata-ssd.fio --dev $DEV --profile /tmp/lab8/loop0.toml --repeat 3 --max-runtime 5s --save-json /tmp/lab8/e2 2>&1
uptime
$E validate examples/lab/qd-sweep.fio --dev $DEV --profile /tmp/lab8/loop0.toml --repeat 3 --schedulers none --save-json /tmp/lab8/sweep 2>&1
uptime
$E loop remove $DEV
