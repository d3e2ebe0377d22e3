# Run lengths on the CPU per task kind from a perf script of sched_switch:
# a run starts when a task is switched in and ends when it is switched out,
# asleep (it blocked: prev_state S/D/I) or preempted (prev_state R).
# Prints n, mean, standard deviation, coefficient of variation, percentiles.
import sys, re, collections, statistics
def kind(c):
    for k in ('fio', 'kworker', 'ksoftirqd', 'swapper'):
        if c.startswith(k): return k
    return 'other'
start = {}; runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    m = re.match(r'\s*(\S.*?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s+(.*)', line)
    if not m: continue
    _, _, cpu, t, _, rest = m.groups(); cpu = int(cpu); t = float(t)
    s = re.search(r'prev_comm=(.+?) prev_pid=(\d+) .*prev_state=(\S+) ==> next_comm=(.+?) next_pid=(\d+)', rest)
    pc, _, st, nc, _ = s.groups()
    if cpu in start:
        k, t0 = start[cpu]
        if k == kind(pc):
            how = 'preempted' if st.startswith('R') else 'asleep'
            runs[(k, 'all')].append((t - t0) * 1e6)
            runs[(k, how)].append((t - t0) * 1e6)
    start[cpu] = (kind(nc), t)
for k in ('fio', 'kworker', 'ksoftirqd'):
    for how in ('all', 'asleep', 'preempted'):
        v = sorted(runs[(k, how)]); n = len(v)
        if n < 10: continue
        mu = statistics.fmean(v); sd = statistics.pstdev(v)
        q = lambda p: v[min(n - 1, int(p * n))]
        print('%-9s %-9s runs %6d mean %6.2f us sd %6.2f cv %.2f  p10 %.2f p50 %.2f p90 %.2f p99 %.2f' % (k, how, n, mu, sd, sd / mu, q(.1), q(.5), q(.9), q(.99)))
