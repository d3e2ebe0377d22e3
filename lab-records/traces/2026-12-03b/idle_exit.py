# Wake-to-run time of tasks woken onto an idle CPU, by how long that CPU had
# idled before the wake-up (perf script text of sched_switch and sched_waking).
import sys, re, collections
idle_since = {}; pend = {}; rows = []
for f in sys.argv[1:]:
  idle_since.clear(); pend.clear()
  for line in open(f):
    m = re.match(r'\s*(\S.*?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s+(.*)', line)
    if not m: continue
    comm, pid, cpu, t, ev, rest = m.groups(); cpu=int(cpu); t=float(t)*1e6
    if ev.endswith('sched_waking'):
        w = re.search(r'pid=(\d+)', rest).group(1)
        pend[w] = t
    elif ev.endswith('sched_switch'):
        s = re.search(r'prev_pid=(\d+) .*next_pid=(\d+)', rest)
        pp, npid = s.groups()
        if npid == '0': idle_since[cpu] = t
        elif pp == '0' and npid in pend and cpu in idle_since:
            tw = pend.pop(npid); i = tw - idle_since[cpu]
            if i >= 0: rows.append((i, t - tw))
b = collections.defaultdict(list)
for i, l in rows:
    k = min(int(i // 10) * 10, 200)
    b[k].append(l)
for k in sorted(b):
    v = sorted(b[k]); n = len(v)
    print('idle %3d-%3d us before the wake: n %5d  wake->run median %5.1f p25 %5.1f p75 %5.1f' % (k, k+10, n, v[n//2], v[n//4], v[3*n//4]))
