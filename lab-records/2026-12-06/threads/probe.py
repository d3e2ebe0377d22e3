#!/usr/bin/env python3
# Per-thread CPU and switches during a fio run at a given depth on a loop device.
import os, sys, time, subprocess, json, re
dev, qd, sched = sys.argv[1], int(sys.argv[2]), sys.argv[3]
jobfile = sys.argv[4] if len(sys.argv) > 4 else None
name = os.path.basename(dev)
with open(f'/sys/block/{name}/queue/scheduler','w') as f:
    f.write(sched)  # closed here: a name the kernel refuses raises instead of being dropped
assert f'[{sched}]' in open(f'/sys/block/{name}/queue/scheduler').read(), sched
def snap():
    t = {}
    for pid in os.listdir('/proc'):
        if not pid.isdigit(): continue
        try:
            for tid in os.listdir(f'/proc/{pid}/task'):
                base=f'/proc/{pid}/task/{tid}'
                comm=open(base+'/comm').read().strip()
                ss=open(base+'/schedstat').read().split()
                st=open(base+'/status').read()
                vol=int(re.search(r'voluntary_ctxt_switches:\s+(\d+)',st).group(1))
                nvol=int(re.search(r'nonvoluntary_ctxt_switches:\s+(\d+)',st).group(1))
                t[(int(tid))]=(comm,int(ss[0]),int(ss[1]),int(ss[2]),vol,nvol)
        except Exception: pass
    stat=open('/proc/stat').read()
    intr=open('/proc/interrupts').read()
    return t,stat,intr
cmd=['fio','--name=q','--filename='+dev,'--rw=randread','--bs=4k','--direct=1','--ioengine=libaio',
     f'--iodepth={qd}','--runtime=6','--time_based','--output-format=json']
if jobfile: cmd=['fio',jobfile,'--output-format=json']
p=subprocess.Popen(cmd,stdout=subprocess.PIPE,text=True)
time.sleep(1.5)
a,sa,ia=snap(); t0=time.time()
time.sleep(3)
b,sb,ib=snap(); dt=time.time()-t0
out=json.loads(p.communicate()[0])
iops=sum(j['read']['iops']+j['write']['iops'] for j in out['jobs'])
ios=iops*dt
tot=sum(j['read']['total_ios']+j['write']['total_ios'] for j in out['jobs'])
print(f'qd{qd} {sched}: {iops:.0f} IOPS, ctx/io {sum(j["ctx"] for j in out["jobs"])/tot:.3f}, fio cpu {sum(j["usr_cpu"]+j["sys_cpu"] for j in out["jobs"]):.0f}%')
agg={}
for tid,(comm,run,wait,sl,vol,nvol) in b.items():
    if tid not in a: continue
    c0=a[tid]
    d=(run-c0[1],wait-c0[2],sl-c0[3],vol-c0[4],nvol-c0[5])
    if d[0]<dt*1e9*0.005: continue
    key=re.sub(r'\d+','N',comm) if comm.startswith('kworker') else comm
    
    s=agg.setdefault(key,[0,0,0,0,0,0])
    for i in range(5): s[i]+=d[i]
    s[5]+=1
for k,s in sorted(agg.items(), key=lambda x:-x[1][0]):
    print(f'  {k:30s} threads {s[5]:2d} cpu {s[0]/ios/1000:6.2f} us/io  waitrun {s[1]/ios/1000:5.2f} us/io  slices/io {s[2]/ios:.3f}  vol/io {s[3]/ios:.3f} nonvol/io {s[4]/ios:.3f}')
def cpu_busy(st):
    r={}
    for l in st.splitlines():
        if re.match(r'cpu\d',l):
            f=l.split(); v=list(map(int,f[1:]))
            r[f[0]]=(sum(v)-v[3]-v[4], v[5], v[6], v[7])
    return r
ca,cb=cpu_busy(sa),cpu_busy(sb)
for c in ca:
    print(f'  {c}: busy {(cb[c][0]-ca[c][0])/100/dt*100:.0f}%  irq {(cb[c][1]-ca[c][1])/dt:.0f} softirq {(cb[c][2]-ca[c][2])/dt:.0f} steal {(cb[c][3]-ca[c][3])} ticks')
def irqs(s):
    r={}
    for l in s.splitlines():
        f=l.split()
        if f and f[0].rstrip(':') in ('RES','CAL','LOC','TLB'):
            r[f[0]]=list(map(int,f[1:3]))
    return r
xa,xb=irqs(ia),irqs(ib)
for k in xa:
    print(f'  {k}: ' + ' '.join(f'{(xb[k][i]-xa[k][i])/ios:.3f}/io' for i in range(2)))
