#!/usr/bin/env python3
# Where the CPU goes on a tmpfs-backed loop device, per fio shape: fio's own
# CPU (fio's usr+sys), ksoftirqd's (/proc/PID/schedstat: run time and the
# times it was switched in), the kworkers' (the same, for the kworkers that
# existed before the run: the loop's work runs on the unbound pool's
# kworkers, whichever is free; with how long each waited to run once
# runnable, schedstat's run_delay), BLOCK softirq runs (/proc/softirqs) and the
# machine's busy share (/proc/stat, ticks), and the CPUs' entries into idle
# (/sys/devices/system/cpu/cpuN/cpuidle/stateM/usage). Reads only (randread);
# one JSON line per run. Used for lab-records/README.md, 2026-12-07h.
#   cpu-split.py /dev/loopN [ROUNDS]
import json, os, subprocess, sys
if len(sys.argv) not in (2, 3) or not os.path.exists(sys.argv[1]) or \
        (len(sys.argv) == 3 and not sys.argv[2].isdigit()):
    sys.exit('usage: cpu-split.py /dev/loopN [ROUNDS]  (a loop device to read, rounds default 2)')
DEV = sys.argv[1]
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 2
SHAPES = [('qd1', 1, 1), ('qd4', 4, 1), ('qd16', 16, 1), ('qd64', 64, 1), ('qd16x4', 16, 4)]

def block_softirqs():
    for line in open('/proc/softirqs'):
        if line.strip().startswith('BLOCK:'):
            return sum(int(x) for x in line.split()[1:])

def idle_entries():
    n = 0
    base = '/sys/devices/system/cpu'
    for cpu in os.listdir(base):
        d = os.path.join(base, cpu, 'cpuidle')
        if cpu.startswith('cpu') and cpu[3:].isdigit() and os.path.isdir(d):
            for st in os.listdir(d):
                n += int(open(os.path.join(d, st, 'usage')).read())
    return n

def machine():
    f = open('/proc/stat').readline().split()
    v = [int(x) for x in f[1:9]]  # user nice system idle iowait irq softirq steal
    return v

def kthreads():
    r = {}
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            comm = open(f'/proc/{pid}/comm').read().strip()
            if not (comm.startswith('kworker') or comm.startswith('ksoftirqd')):
                continue
            run, wait, slices = map(int, open(f'/proc/{pid}/schedstat').read().split())
            r[pid] = (comm.startswith('ksoftirqd'), run, slices, wait)
        except (OSError, ValueError):
            pass
    return r

def one(name, depth, jobs):
    args = ['fio', '--name=' + name, '--filename=' + DEV, '--direct=1', '--ioengine=libaio',
            '--bs=4k', '--rw=randread', f'--iodepth={depth}', f'--numjobs={jobs}',
            '--runtime=3', '--time_based=1', '--group_reporting=1', '--output-format=json']
    s0, m0, k0, i0 = block_softirqs(), machine(), kthreads(), idle_entries()
    try:
        out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    except FileNotFoundError:
        sys.exit('cpu-split.py: fio not found (apt-get install fio)')
    except subprocess.CalledProcessError as e:
        sys.exit(f'cpu-split.py: fio failed on {DEV}: {e.stderr.strip()}')
    s1, m1, k1, i1 = block_softirqs(), machine(), kthreads(), idle_entries()
    j = json.loads(out[out.index('{'):])['jobs'][0]
    ios = j['read']['total_ios']
    secs = j['read']['runtime'] / 1000.0
    sums = {True: [0, 0, 0], False: [0, 0, 0]}
    for pid, (is_ksoftirqd, run, slices, wait) in k1.items():
        if pid in k0 and k0[pid][0] == is_ksoftirqd:
            sums[is_ksoftirqd][0] += run - k0[pid][1]
            sums[is_ksoftirqd][1] += slices - k0[pid][2]
            sums[is_ksoftirqd][2] += wait - k0[pid][3]
    d = [b - a for a, b in zip(m0, m1)]
    busy = 1.0 - (d[3] + d[4]) / sum(d)
    per_io = lambda ns: ns / 1000.0 / ios
    return {
        'shape': name, 'iops': ios / secs, 'lat_us': j['read']['lat_ns']['mean'] / 1000.0,
        'fio_us_per_io': (j['usr_cpu'] + j['sys_cpu']) / 100.0 * jobs * secs * 1e6 / ios,
        'fio_ctx_per_io': j['ctx'] / ios,
        'ksoftirqd_us_per_io': per_io(sums[True][0]), 'ksoftirqd_runs_per_io': sums[True][1] / ios,
        'kworker_us_per_io': per_io(sums[False][0]), 'kworker_slices_per_io': sums[False][1] / ios,
        'ksoftirqd_wait_us_per_run': sums[True][2] / 1000.0 / max(1, sums[True][1]),
        'kworker_wait_us_per_slice': sums[False][2] / 1000.0 / max(1, sums[False][1]),
        'block_softirqs_per_io': (s1 - s0) / ios,
        'idle_entries_per_io': (i1 - i0) / ios,
        'softirq_share_us_per_io': d[6] / sum(d) * os.cpu_count() * secs * 1e6 / ios,
        'machine_busy_cpus': busy * os.cpu_count(), 'machine_us_per_io': busy * os.cpu_count() * secs * 1e6 / ios,
    }

rows = []
for r in range(ROUNDS):
    for name, depth, jobs in SHAPES:
        row = one(name, depth, jobs)
        row['round'] = r + 1
        rows.append(row)
        print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}), flush=True)
