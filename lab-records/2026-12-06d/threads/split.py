#!/usr/bin/env python3
"""Where a scheduler's extra CPU lands, from probe.py's per-thread output.

For each probe file: pairs every scheduler's run with the none run before
it in the same round, and prints the extra CPU per I/O on fio's side (the
submitting task: the insert and dispatch hooks) and on the completion side
(the loop worker's kworkers and ksoftirqd: the completion hooks), and the
completion side's share of the sum. Rows marked "refused" (the kernel kept
another scheduler) are skipped.

usage: split.py FILE...
"""
import re
import sys
from statistics import median

HEAD = re.compile(r"^qd\d+ (\S+?)( \(refused[^)]*\))?: ")
ROW = re.compile(r"^  (\S+)\s+threads\s+\d+ cpu\s+([\d.]+) us/io")


def runs(path):
    """[(scheduler, fio_us, side_us)] in file order."""
    out = []
    for line in open(path):
        m = HEAD.match(line)
        if m:
            out.append([m.group(1), 0.0, 0.0, bool(m.group(2))])
            continue
        m = ROW.match(line)
        if m and out:
            name, cpu = m.group(1), float(m.group(2))
            if name == "fio":
                out[-1][1] += cpu
            elif name.startswith("kworker/u") or name.startswith("ksoftirqd"):
                out[-1][2] += cpu
    return out


def main():
    shares = {}
    for path in sys.argv[1:]:
        print(path)
        none = None
        for sched, fio, side, refused in runs(path):
            if sched == "none":
                none = (fio, side)
                continue
            if refused or none is None:
                continue
            dfio, dside = fio - none[0], side - none[1]
            tot = dfio + dside
            share = dside / tot if tot > 0.1 else float("nan")
            shares.setdefault(sched, []).append(share)
            print(f"  {sched:12s} fio {dfio:+.2f} us/io  completion side {dside:+.2f} us/io  share {share:.2f}")
    for sched, v in sorted(shares.items()):
        v = [s for s in v if s == s]
        print(f"{sched}: completion-side share median {median(v):.2f} of {len(v)} ({min(v):.2f}-{max(v):.2f})")


main()
