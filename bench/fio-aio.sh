#!/bin/bash
# bench/fio-aio.sh - seed 001's fio job, scaled to this machine: native AIO
# (ioengine=libaio) random 1 KiB reads and writes at iodepth 1 on a tmpfs
# directory, threads, numjobs=8 (the seed's many-contexts case, where the
# context lookup mattered) and numjobs=1, on the kernel and under uipc
# (`uipc run`), alternating, REPS times; medians of the total IOPS (reads
# and writes) and the ratio uipc/kernel; a repetition the VM's host took
# over 5% of the CPUs from is run again (bench/steal.sh).  Not a timed test.
#   bench/fio-aio.sh [--uipc build/uipc] [--reps N] [--loops N] [--json FILE] [--quick]
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
uipc=$top/build/uipc reps=5 loops=400 json=
while [ $# -gt 0 ]; do
	case $1 in
	--uipc) uipc=$2; shift ;;
	--reps) reps=$2; shift ;;
	--loops) loops=$2; shift ;;
	--json) json=$2; shift ;;
	--quick) reps=1 loops=10 ;;
	*) echo "usage: $0 [--uipc PATH] [--reps N] [--loops N] [--json FILE] [--quick]" >&2; exit 2 ;;
	esac
	shift
done
command -v fio >/dev/null || { echo "fio is not installed" >&2; exit 1; }
dir=$(mktemp -d /dev/shm/uipc-fiobench.XXXXXX)
ns=$(mktemp -d /dev/shm/uipc-fiobench-ns.XXXXXX)
trap 'rm -rf "$dir" "$ns"' EXIT

# iops SIDE NUMJOBS: total IOPS of one run.  Every run makes the same
# number of I/Os (LOOPS x 8 jobs' worth): fio counts the runtime in whole
# milliseconds, and one job's 40 loops took 17 ms here, which gave both
# sides the same quantized figure; 320 took 109 ms on both sides, still
# one figure.  400 x 8 (819,200 I/Os) take about a second.
iops() {
	local cmd=(fio --output-format=json --name=seed001 --ioengine=libaio --directory="$dir"
		   --rw=randrw --size=256k --bs=1k --iodepth=1 --thread --numjobs="$2"
		   --loops=$((loops * 8 / $2)) --group_reporting)
	if [ "$1" = uipc ]; then cmd=(env UIPC_DIR="$ns" "$uipc" run -- "${cmd[@]}"); fi
	"${cmd[@]}" 2>/dev/null | python3 -c '
import json, sys
j = json.load(sys.stdin)["jobs"][0]
print(int(j["read"]["iops"] + j["write"]["iops"]))'
}

. "$top/bench/steal.sh"

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

rows=()
printf '%-34s %12s %12s %8s\n' "fio libaio (seed 001), tmpfs" "kernel IOPS" "uipc IOPS" "ratio"
for nj in 8 1; do
	k=() u=()
	STEAL_REDONE=0 STEAL_REDO_MAX=$reps
	for _ in $(seq 1 "$reps"); do
		pair_run iops kernel uipc "$nj"
		k+=("$PAIR_A") u+=("$PAIR_B")
	done
	km=$(printf '%s\n' "${k[@]}" | median)
	um=$(printf '%s\n' "${u[@]}" | median)
	ratio=$(awk -v a="$um" -v b="$km" 'BEGIN { printf "%.2f", b ? a / b : 0 }')
	name="randrw bs=1k iodepth=1 numjobs=$nj"
	printf '%-34s %12s %12s %8s\n' "$name" "$km" "$um" "$ratio"
	rows+=("{\"name\": \"$name\", \"kernel_iops\": $km, \"uipc_iops\": $um, \"ratio\": $ratio, \"reps\": $reps, \"loops\": $loops}")
done
if [ -n "$json" ]; then
	(IFS=,; echo "[${rows[*]}]") >"$json"
fi
