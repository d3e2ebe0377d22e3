# Summarize a perf script text (sched_switch, sched_waking, softirq_entry/exit):
# per-CPU time by task kind, where the loop worker ran against fio, wake-to-run
# times by (woken, same/other CPU than the waker, that CPU idle/busy), softirq runs.
import sys, re, collections
cur = {}; last = {}; fio_cpu = None
busy = collections.Counter(); pend = {}
kw_with = collections.Counter()
wakes = collections.defaultdict(list)
def cls(c):
    if c == 'idle': return 'idle'
    if c.startswith('fio'): return 'fio'
    if c.startswith('kworker'): return 'kworker'
    if c.startswith('ksoftirqd'): return 'ksoftirqd'
    return 'other'
fio_last = None; t_first = None; sirq_start = {}; sirq = collections.Counter(); sirqn = collections.Counter()
for line in open(sys.argv[1]):
    m = re.match(r'\s*(\S.*?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s+(.*)', line)
    if not m: continue
    comm, pid, cpu, t, ev, rest = m.groups(); cpu=int(cpu); t=float(t)
    if t_first is None: t_first = t
    if ev.endswith('sched_waking'):
        w = re.search(r'comm=(\S+) pid=(\d+)', rest)
        pend[w.group(2)] = (t, cpu, {c: cur.get(c) for c in (0,1)})
    elif ev.endswith('softirq_entry'):
        v = re.search(r'action=(\S+)', rest).group(1); sirq_start[cpu] = (t, v, cur.get(cpu))
    elif ev.endswith('softirq_exit') and cpu in sirq_start:
        t0_, v, who = sirq_start.pop(cpu); sirq[(cpu, v, cls(who or 'idle'))] += t - t0_; sirqn[(cpu, v, cls(who or 'idle'))] += 1
    elif ev.endswith('sched_switch'):
        s = re.search(r'prev_comm=(.+?) prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=(.+?) next_pid=(\d+)', rest)
        pc, pp, pst, nc, npid = s.groups()
        if cpu in last and cur.get(cpu):
            k = cls(cur[cpu]); busy[(cpu,k)] += t-last[cpu]
            if k == 'kworker':
                kw_with['fio-here' if fio_cpu == cpu else 'fio-elsewhere'] += t-last[cpu]
                kw_with['last-here' if fio_last == cpu else 'last-elsewhere'] += t-last[cpu]
        last[cpu] = t
        if cls(pc)=='fio' and pst != 'R': fio_cpu = None if fio_cpu == cpu else fio_cpu
        cur[cpu] = 'idle' if npid=='0' else nc
        if cls(nc)=='fio': fio_cpu = cpu; fio_last = cpu
        if npid in pend:
            tw, wcpu, snap = pend.pop(npid)
            st = 'idle' if snap.get(cpu)=='idle' else 'busy'
            wakes[(cls(nc), 'same' if cpu==wcpu else 'other', st)].append((t-tw)*1e6)
T = max(last.values()) - t_first
for c in (0,1):
    print('cpu', c, ' '.join('%s %.0f%%' % (k, 100*busy[(c,k)]/T) for k in ('fio','kworker','ksoftirqd','other','idle')))
kt = (kw_with['fio-here']+kw_with['fio-elsewhere']) or 1
print('kworker time with fio on its CPU (running or preempted): %.0f%%, on the CPU fio last ran on: %.0f%%' % (100*kw_with['fio-here']/kt, 100*kw_with['last-here']/kt))
for k in sorted(wakes):
    v = sorted(wakes[k]); n=len(v)
    if n >= 20: print('  wake', k, n, 'median %.0f p90 %.0f us' % (v[n//2], v[int(n*.9)]))

for k in sorted(sirqn):
    if sirqn[k] >= 20: print('  softirq cpu %d %s in %s: %d runs, %.0f%% of the time' % (k[0], k[1], k[2], sirqn[k], 100*sirq[k]/T))
