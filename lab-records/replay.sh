#!/bin/bash
# Replay a recorded lab session against the simulator, without root or a
# device: every record of the session on one profile (default: the one that
# session calibrated), or refit first from its saved probes with --refit.
#   lab-records/replay.sh lab-records/2026-12-01 [--refit | --profile P]
# Run from the repository's root; ELEVATOR picks the binary.
set -e
S=${1:?usage: replay.sh SESSION_DIR [--refit | --profile P]}
E=${ELEVATOR:-target/release/elevator}
P=$S/cal.toml
case "$2" in
  --refit) P=$(mktemp --suffix=.toml); $E calibrate --from-probes $S/probes.json -o $P --quiet | head -3 ;;
  --profile) P=${3:?--profile needs a file} ;;
  "") ;;
  *) echo "replay.sh: unknown option '$2'" >&2; exit 2 ;;
esac
one() {
  [ -d "$S/$2" ] || return 0
  echo "== $2 ($1)"
  $E validate "$1" --from-lab "$S/$2" --profile "$P" --quiet | grep -E "^  check |CPU per I/O|context switches|BLOCK softirq|kernel threads|wake-ups from idle" || true
}
one examples/e2-sata-ssd.fio lab-e2
one examples/lab/randread-qd64.fio lab-qd64
one examples/lab/qd-sweep.fio lab-sweep
for n in 1 2 4 12; do one $S/jobs/w$n.fio lab-w$n; done
