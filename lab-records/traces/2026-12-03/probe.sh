#!/bin/bash
# The probes recorded here, as they ran (root, fio and perf installed):
#   lab-records/traces/2026-12-03/probe.sh sched SCHED DEPTH OUT   perf sched record, 1 s mid-run
#   lab-records/traces/2026-12-03/probe.sh block SCHED DEPTH OUT   block, plug, sched and io_submit
#                                                            tracepoints, 0.3 s mid-run
# fio: 4 KiB random reads, libaio, direct, on a 1 GiB tmpfs-backed loop device.
set -e
MODE=${1:?usage: probe.sh sched|block SCHED DEPTH OUT}; S=$2; Q=$3; O=$4
E=${ELEVATOR:-target/release/elevator}
DEV=$($E loop create --size 1G --backing tmpfs)
trap '$E loop remove $DEV' EXIT
echo $S > /sys/block/$(basename $DEV)/queue/scheduler
fio --name=p --filename=$DEV --rw=randread --bs=4k --ioengine=libaio --direct=1 \
    --iodepth=$Q --runtime=4 --time_based --output-format=json > $O.fio.json &
F=$!
sleep 1.2
case $MODE in
  sched) perf sched record -o $O.perf sleep 1 ;;
  block) perf record -e block:block_rq_insert -e block:block_rq_issue -e block:block_rq_complete \
           -e block:block_plug -e block:block_unplug -e syscalls:sys_enter_io_submit \
           -e sched:sched_switch -e sched:sched_waking -a -o $O.perf sleep 0.3 ;;
esac > /dev/null 2>&1
wait $F
