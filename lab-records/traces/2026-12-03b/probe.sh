#!/bin/bash
# probe3.sh DEPTH OUT : fio randread (none) on a tmpfs loop at DEPTH, perf sched events for 0.5 s mid-run
set -e
Q=$1; O=$2
E=${ELEVATOR:-target/release/elevator}
DEV=$($E loop create --size 1G --backing tmpfs)
trap '$E loop remove $DEV' EXIT
echo none > /sys/block/$(basename $DEV)/queue/scheduler
fio --name=p --filename=$DEV --rw=randread --bs=4k --ioengine=libaio --direct=1 --iodepth=$Q --runtime=3 --time_based --output-format=json > $O.fio.json &
F=$!
sleep 1.2
perf record -e sched:sched_switch -e sched:sched_waking -e irq:softirq_entry -e irq:softirq_exit -a -o $O.perf sleep 0.5 2>/dev/null >/dev/null
wait $F
perf script -i $O.perf -F comm,pid,cpu,time,event,trace 2>/dev/null > $O.txt
python3 -c "import json;d=json.load(open('$O.fio.json'));j=d['jobs'][0];print('QD $Q iops',round(j['read']['iops']),'lat_us',round(j['read']['lat_ns']['mean']/1000,1),'usr',j['usr_cpu'],'sys',j['sys_cpu'],'ctx',j['ctx'])"
python3 "$(dirname "$0")"/summarize.py $O.txt
