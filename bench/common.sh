# Helpers shared by bench.sh and history.sh (sourced; they expect $TMP and,
# for instructions, $CG_N).

job() { # job NAME TOTAL_REQUESTS -> writes a job file with two QD32 random readers
  cat > "$TMP/$1.fio" <<JOB
[global]
ioengine=libaio
direct=1
rw=randread
bs=4k
iodepth=32
filename=/dev/bench
number_ios=$(( $2 / 2 ))
[a]
[b]
JOB
}

instructions() { # instructions BIN SCHED -> instructions per simulated request (callgrind)
  job cg "$CG_N"
  valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.out" "$1" run "$TMP/cg.fio" \
      --scheduler "$2" --device nvme --output-format=json --output "$TMP/cg.json" --no-progress \
      2> "$TMP/cg.err" >/dev/null || return 1
  local total
  total=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$TMP/cg.err")
  [ -n "$total" ] || return 1
  python3 -c "print(f'{$total/$CG_N:.0f}')"
}
