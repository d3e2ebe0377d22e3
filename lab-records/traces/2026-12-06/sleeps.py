#!/usr/bin/env python3
# sleeps.py PERF_SCRIPT_TEXT WORKER_PID: how often and how long fio and one
# loop kworker sleep (sched_switch out with state S / I until switched back
# in), from `perf script -F comm,pid,cpu,time,event,trace` text as
# ../2026-12-03b/probe.sh writes it. Sleeps over 5 ms (fio's main process,
# idle kworkers) are left out.
import re, statistics, sys
ev = re.compile(r'^\s*(\S.*?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s+(.*)$')
sw = re.compile(r'prev_comm=(.*?) prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)')
worker = sys.argv[2]
since = {}
spans = {'fio': [], 'kworker ' + worker: []}
for line in open(sys.argv[1]):
    m = ev.match(line)
    if not m or m.group(5) != 'sched:sched_switch':
        continue
    t = float(m.group(4)) * 1e6
    pc, pp, ps, nc, npid = sw.search(m.group(6)).groups()
    if (pc == 'fio' and ps.startswith('S')) or (pp == worker and ps.startswith('I')):
        since[pp] = t
    if npid in since:
        key = 'fio' if nc == 'fio' else 'kworker ' + worker
        spans[key].append(t - since.pop(npid))
for name, v in spans.items():
    v = sorted(x for x in v if x < 5000)
    if v:
        print(f'{name}: {len(v)} sleeps, median {statistics.median(v):.0f} us, '
              f'p10 {v[len(v)//10]:.0f}, p90 {v[len(v)*9//10]:.0f}, {sum(v)/1000:.1f} ms in all')
