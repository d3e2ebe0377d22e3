#!/usr/bin/env python3
# 2026-12-07b: where E2's CPU time goes on the real kernel. Runs E2's job
# (examples/e2-sata-ssd.fio, 5 s, none) on a tmpfs loop device and, over a
# 2 s window in its middle, reads /proc/PID/sched and /proc/PID/schedstat
# of every fio process, loop kworker and ksoftirqd before and after, and
# samples each one's state and CPU (/proc/PID/stat fields 3 and 39) about
# every 1.6 ms. Root; run on a quiet machine.
#   sudo lab-records/2026-12-07b/e2-sched.py   (from the repository's root)
import os, time, subprocess, json, re, tempfile
from collections import Counter

E = os.environ.get('ELEVATOR', 'target/release/elevator')

def entities():
    out = []
    for p in os.listdir('/proc'):
        if not p.isdigit():
            continue
        try:
            c = open(f'/proc/{p}/comm').read().strip()
        except OSError:
            continue
        if c == 'fio' or (c.startswith('kworker') and 'loop' in c) or c.startswith('ksoftirqd'):
            out.append((p, c))
    return out

def sched(p):
    d = {}
    try:
        for line in open(f'/proc/{p}/sched'):
            if ':' in line:
                k, v = line.split(':', 1)
                d[k.strip()] = v.strip()
        s = open(f'/proc/{p}/schedstat').read().split()
        d['run_ns'], d['wait_ns'] = int(s[0]), int(s[1])
    except OSError:
        pass
    return d

dev = subprocess.check_output([E, 'loop', 'create', '--size', '4G', '--backing', 'tmpfs'], text=True).strip()
try:
    open(f'/sys/block/{os.path.basename(dev)}/queue/scheduler', 'w').write('none')
    job = open('examples/e2-sata-ssd.fio').read()
    job = job.replace('/dev/sda1', dev).replace('runtime=7200', 'runtime=5\ntime_based=1')
    jf = tempfile.NamedTemporaryFile('w', suffix='.fio', delete=False)
    jf.write(job)
    jf.close()
    res = jf.name + '.json'
    fio = subprocess.Popen(['fio', jf.name, '--output-format=json', f'--output={res}'])
    time.sleep(2.0)
    ents = entities()
    before = {p: sched(p) for p, _ in ents}
    t0 = time.time()
    samples = []
    while time.time() - t0 < 2.0:
        row = []
        for p, _ in ents:
            try:
                st = open(f'/proc/{p}/stat').read().rsplit(')', 1)[1].split()
                row.append((st[0], int(st[36])))
            except OSError:
                row.append(('-', -1))
        samples.append(row)
        time.sleep(0.001)
    window = time.time() - t0
    after = {p: sched(p) for p, _ in ents}
    fio.wait()
    d = json.load(open(res))
    total = sum(j['read']['iops'] + j['write']['iops'] for j in d['jobs'])
    print(f'E2 on {dev} under none: {total:.0f} IOPS in all; window {window:.2f} s, {len(samples)} samples')
    keys = ['se.nr_migrations', 'nr_voluntary_switches', 'nr_involuntary_switches']
    print('pid comm | CPU run ms | run-queue wait ms | migrations vol invol | samples per CPU | states')
    for i, (p, c) in enumerate(sorted(ents, key=lambda e: (e[1], int(e[0])))):
        a, b = after[p], before[p]
        dd = [int(float(a.get(k, 0))) - int(float(b.get(k, 0))) for k in keys]
        run = (a.get('run_ns', 0) - b.get('run_ns', 0)) / 1e6
        wait = (a.get('wait_ns', 0) - b.get('wait_ns', 0)) / 1e6
        j = [q for q, _ in ents].index(p)
        cpus = dict(sorted(Counter(r[j][1] for r in samples).items()))
        states = dict(sorted(Counter(r[j][0] for r in samples).items()))
        if run == 0 and wait == 0:
            continue
        print(f'{p} {c} | {run:.0f} | {wait:.0f} | {dd[0]} {dd[1]} {dd[2]} | {cpus} | {states}')
finally:
    subprocess.run([E, 'loop', 'remove', dev])
