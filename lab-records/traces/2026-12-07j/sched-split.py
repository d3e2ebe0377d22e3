#!/usr/bin/env python3
# CPU per I/O of fio, ksoftirqd and the kworkers by pool (unbound: the loop
# worker; highpri per-CPU: kblockd) under none, mq-deadline and kyber at
# QD64, twice (lab-records/traces/2026-12-07j, measurement 4). As run, with the
# device an argument.
import json, os, subprocess, sys
import sys
if len(sys.argv) != 2 or not sys.argv[1].startswith('/dev/loop'):
    sys.exit('usage: sched-split.py /dev/loopN  (a loop device; switches its scheduler, leaves none)')
DEV = sys.argv[1]
SYSQ = '/sys/block/' + DEV.split('/')[-1] + '/queue/scheduler'
def threads():
    r = {}
    for pid in os.listdir('/proc'):
        if not pid.isdigit(): continue
        try:
            comm = open(f'/proc/{pid}/comm').read().strip()
            if not (comm.startswith('kworker') or comm.startswith('ksoftirqd')): continue
            run, wait, slices = map(int, open(f'/proc/{pid}/schedstat').read().split())
            r[pid] = (comm, run, slices)
        except (OSError, ValueError): pass
    return r
def cls(c):
    if c.startswith('ksoftirqd'): return 'ksoftirqd'
    if c.startswith('kworker/u'): return 'kworker-unbound'
    if c.endswith('H') or 'H-' in c: return 'kworker-highpri'
    return 'kworker-percpu'
def one(sched, depth, jobs):
    open(SYSQ, 'w').write(sched)
    args = ['fio','--name=x','--filename='+DEV,'--direct=1','--ioengine=libaio','--bs=4k','--rw=randread',f'--iodepth={depth}',f'--numjobs={jobs}','--runtime=3','--time_based=1','--group_reporting=1','--output-format=json']
    k0=threads()
    out=subprocess.run(args,capture_output=True,text=True,check=True).stdout
    k1=threads()
    j=json.loads(out[out.index('{'):])['jobs'][0]
    ios=j['read']['total_ios']; secs=j['read']['runtime']/1000
    sums={}
    for pid,(c,run,sl) in k1.items():
        if pid in k0:
            k=cls(c); a=sums.setdefault(k,[0,0]); a[0]+=run-k0[pid][1]; a[1]+=sl-k0[pid][2]
    fio=(j['usr_cpu']+j['sys_cpu'])/100*jobs*secs*1e6/ios
    print('%-12s qd%d x%d %6.0fk fio %.2f | '%(sched,depth,jobs,ios/secs/1e3,fio) + ' '.join('%s %.2fus %.3f/io'%(k,v[0]/1e3/ios,v[1]/ios) for k,v in sorted(sums.items())), flush=True)
for r in range(2):
    for s in ['none','mq-deadline','kyber']:
        one(s,64,1)
open(SYSQ, 'w').write('none')
