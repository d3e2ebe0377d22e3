#!/usr/bin/env python3
"""Each recorded session's measured IOPS ratios to none, from its lab records.

For every SESSION/lab-qd64 and SESSION/lab-e2 under lab-records/: the median
over the rounds of each scheduler's IOPS (all jobs) over the same round's
none, and each scheduler's extra CPU per I/O against mq-deadline's, taken as
(1/ratio - 1) / (1/ratio_mq - 1): what the model's hook costs are compared
on (src/sched/mod.rs). Reads fio's JSON of every run; needs nothing else.

usage: lab-records/ratios.py [SESSION_DIR...]   (default: every session)
"""
import glob
import json
import os
import sys
from statistics import median


def total_iops(path):
    jobs = json.load(open(path))["jobs"]
    return sum(j["read"]["iops"] + j["write"]["iops"] for j in jobs)


def ratios(record):
    """{scheduler: median over rounds of its IOPS / that round's none}"""
    lab = json.load(open(os.path.join(record, "lab.json")))
    rounds = {}
    for run in lab["runs"]:
        iops = total_iops(os.path.join(record, run["fio_json"]))
        rounds.setdefault(run["round"], {})[run["scheduler"]] = iops
    per = {}
    for by in rounds.values():
        if "none" not in by:
            continue
        for sched, iops in by.items():
            if sched != "none":
                per.setdefault(sched, []).append(iops / by["none"])
    return {s: median(v) for s, v in per.items()}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    sessions = sys.argv[1:] or sorted(
        d for d in glob.glob(os.path.join(here, "20*")) if os.path.isdir(d)
    )
    for job in ("lab-qd64", "lab-e2"):
        print(job)
        for s in sessions:
            rec = os.path.join(s, job)
            if not os.path.exists(os.path.join(rec, "lab.json")):
                continue
            m = ratios(rec)
            cells = []
            for sched in ("mq-deadline", "kyber", "bfq"):
                cells.append(f"{sched} {m[sched]:.3f}" if sched in m else f"{sched}   -  ")
            extra = {s: 1 / r - 1 for s, r in m.items()}
            mq = extra.get("mq-deadline")
            rel = [
                f"{s}/mq {extra[s] / mq:5.2f}" if s in extra and mq else f"{s}/mq   -  "
                for s in ("kyber", "bfq")
            ]
            print(f"  {os.path.basename(s):12s} " + "  ".join(cells) + "   extra CPU " + "  ".join(rel))


main()
