#!/bin/bash
# As run for lab-records/2026-12-07j, measurement 1: perf stat counts (no recording) over 1 s of a 3 s fio on /dev/loop0.
# st.sh NAME DEPTH JOBS : fio 3 s; perf stat counts 1 s in the middle; per-CPU idle entries over the same second
N=$1; D=$2; J=$3
idle() { for c in 0 1; do s=0; for f in /sys/devices/system/cpu/cpu$c/cpuidle/state*/usage; do s=$((s+$(cat $f))); done; echo -n "$s "; done; }
fio --name=$N --filename=/dev/loop0 --direct=1 --ioengine=libaio --bs=4k --rw=randread --iodepth=$D --numjobs=$J --runtime=3 --time_based=1 --group_reporting=1 --output-format=json > $N.json &
sleep 1.2
i0=$(idle)
perf stat -x, -a -A -e syscalls:sys_enter_io_getevents,syscalls:sys_enter_io_submit,syscalls:sys_enter_io_pgetevents,sched:sched_switch,sched:sched_migrate_task,irq:softirq_entry -o $N.stat -- sleep 1 
i1=$(idle)
wait
echo "$N idle0 $i0 idle1 $i1"
python3 -c "import json;j=json.load(open('$N.json'));print('$N iops', round(sum(x['read']['iops'] for x in j['jobs'])), 'ctx', sum(x['ctx'] for x in j['jobs']))"
grep -v '^#' $N.stat | grep -v '^$'
