#!/usr/bin/env python3
"""Copy BENCHMARKS.md's figures into the README's benchmark block.

bench/bench.sh runs this after writing BENCHMARKS.md, so the README's figures
are always the last run's, never typed in by hand. The block sits between
the markers `<!-- bench:begin -->` and `<!-- bench:end -->`.
"""
import re
import sys
from pathlib import Path

root = Path(__file__).resolve().parent.parent
bench = (root / "BENCHMARKS.md").read_text()
readme_path = root / "README.md"
readme = readme_path.read_text()


def section(title):
    """The body of `## title` in BENCHMARKS.md (up to the next `## `)."""
    m = re.search(r"^## " + re.escape(title) + r"\n(.*?)(?=^## |\Z)", bench, re.S | re.M)
    if not m:
        sys.exit(f"bench/readme.py: BENCHMARKS.md has no section '{title}'")
    return m.group(1).strip()


header = "\n".join(bench.splitlines()[2:5]).strip()
speed = section("Simulation speed").splitlines()
table = [l for l in speed if l.startswith("|")]
nvme = table[:2] + [l for l in table[2:] if "| nvme |" in l]
parts = [
    header,
    "Simulated requests per wall second on nvme (the other devices are in BENCHMARKS.md):",
    "\n".join(nvme),
    "#### Instructions per simulated request",
    section("Instructions per simulated request"),
    "#### Simulated IOPS ceilings on nvme",
    section("CPU-cost ceilings on nvme"),
]
block = "<!-- bench:begin -->\n" + "\n\n".join(parts) + "\n<!-- bench:end -->"
new, n = re.subn(r"<!-- bench:begin -->.*?<!-- bench:end -->", lambda _: block, readme, flags=re.S)
if n != 1:
    sys.exit("bench/readme.py: README.md needs one <!-- bench:begin --> ... <!-- bench:end --> block")
readme_path.write_text(new)
print("updated the README's benchmark block", file=sys.stderr)
