#!/bin/bash
# runs.sh DEPTH OUT: fio 4 KiB randread (none) on a tmpfs loop at DEPTH;
# perf records sched_switch only (the lightest event that bounds a run) for
# 0.5 s mid-run; runs.py gives each task kind's run lengths on the CPU.
set -e
Q=$1; O=$2
E=${ELEVATOR:-target/release/elevator}
DEV=$($E loop create --size 1G --backing tmpfs)
trap '$E loop remove $DEV' EXIT
echo none > /sys/block/$(basename $DEV)/queue/scheduler
fio --name=p --filename=$DEV --rw=randread --bs=4k --ioengine=libaio --direct=1 --iodepth=$Q --runtime=3 --time_based --output-format=json > $O.fio.json &
F=$!
sleep 1.2
perf record -e sched:sched_switch -a -o $O.perf sleep 0.5 2>/dev/null >/dev/null
wait $F
perf script --ns -i $O.perf -F comm,pid,cpu,time,event,trace 2>/dev/null > $O.txt
rm -f $O.perf
python3 -c "import json;d=json.load(open('$O.fio.json'));j=d['jobs'][0];r=j['read'];print('QD $Q iops',round(r['iops']),'lat_us',round(r['lat_ns']['mean']/1000,1),'clat p50/p99 us',r['clat_ns']['percentile']['50.000000']/1000,r['clat_ns']['percentile']['99.000000']/1000)"
python3 "$(dirname "$0")"/runs.py $O.txt
