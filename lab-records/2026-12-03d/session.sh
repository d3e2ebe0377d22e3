#!/bin/bash
# The lab session recorded here, as it ran (root, fio installed, nothing else
# running): calibrate, then validate E2, the QD64 reads, the depth sweep and
# 1/2/4/12 QD4 random writers against the fresh profile. Usage:
#   lab-records/2026-12-03d/session.sh OUTDIR   (from the repository's root)
set -e
D=${1:?usage: session.sh OUTDIR}
E=${ELEVATOR:-target/release/elevator}
J=lab-records/2026-12-03d/jobs
mkdir -p "$D"
DEV=$($E loop create --size 4G --backing tmpfs)
trap '$E loop remove $DEV' EXIT
$E calibrate $DEV -o $D/cal.toml --repeat 2 --save-probes $D/probes.json --quiet > $D/cal.txt 2>&1
S=none,mq-deadline,kyber,bfq
$E validate examples/e2-sata-ssd.fio --dev $DEV --profile $D/cal.toml --repeat 3 --max-runtime 5s --schedulers $S --save-json $D/lab-e2 --quiet > $D/e2.txt 2>&1
$E validate examples/lab/randread-qd64.fio --dev $DEV --profile $D/cal.toml --repeat 3 --schedulers $S --save-json $D/lab-qd64 --quiet > $D/qd64.txt 2>&1
$E validate examples/lab/qd-sweep.fio --dev $DEV --profile $D/cal.toml --repeat 3 --schedulers none --save-json $D/lab-sweep --quiet > $D/sweep.txt 2>&1
for n in 1 2 4 12; do
  $E validate $J/w$n.fio --dev $DEV --profile $D/cal.toml --repeat 3 --schedulers none,mq-deadline,bfq --save-json $D/lab-w$n --quiet > $D/w$n.txt 2>&1
done
