#!/bin/bash
# bench/fio-aio-contexts.sh - seed 001's curve: the cost of one native AIO
# request against the number of contexts in the process.  fio
# ioengine=libaio rw=randrw bs=1k iodepth=1 thread on tmpfs, numjobs = N
# threads with a context each (N = 1, 2, 4, ... 512), size 128m/N per job
# (the seed's size=256k at 512, about its size=100m at 1), every job
# running SECS seconds (time_based: the seed's loops, scaled to a time),
# on the kernel and under `uipc run`, alternating, REPS times, medians.
#
# Per-I/O time is CPU time: the fio job threads' own (fio's per-thread
# rusage, usr + sys) over the I/Os they made, so that 1 thread on one CPU
# and 512 threads on two compare; with iodepth 1 on tmpfs both sides
# complete every request inside io_submit, on the job's thread.  (No
# aggregate IOPS: 512 threads do not start at the same moment.)  Target:
# per-I/O time at 512 at most 10% above the time at 1, on each side.
# Writes build/bench/fio-aio-contexts.json
# and, with gnuplot, docs/plots/aio-contexts.svg.  Not a timed test.
#   bench/fio-aio-contexts.sh [--uipc build/uipc] [--reps N] [--secs S] [--jobs "1 8 512"]
#                             [--json FILE] [--svg FILE] [--quick]
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
uipc=$top/build/uipc reps=3 secs=3 jobs="1 2 4 8 16 32 64 128 256 512"
json=$top/build/bench/fio-aio-contexts.json svg=$top/docs/plots/aio-contexts.svg
while [ $# -gt 0 ]; do
	case $1 in
	--uipc) uipc=$2; shift ;;
	--reps) reps=$2; shift ;;
	--secs) secs=$2; shift ;;
	--jobs) jobs=$2; shift ;;
	--json) json=$2; shift ;;
	--svg) svg=$2; shift ;;
	--quick) reps=1 secs=1 jobs="1 8 64 512" ;;
	*) echo "usage: $0 [--uipc PATH] [--reps N] [--secs S] [--jobs LIST] [--json FILE] [--svg FILE] [--quick]" >&2
	   exit 2 ;;
	esac
	shift
done
command -v fio >/dev/null || { echo "fio is not installed" >&2; exit 1; }
dir=$(mktemp -d /dev/shm/uipc-fioctx.XXXXXX)
ns=$(mktemp -d /dev/shm/uipc-fioctx-ns.XXXXXX)
trap 'rm -rf "$dir" "$ns"' EXIT

# run SIDE NUMJOBS: the CPU ns per I/O of one run
run() {
	local size=$((128 * 1024 / $2))k
	local cmd=(fio --output-format=json --name=seed001 --ioengine=libaio --directory="$dir"
		   --rw=randrw --size="$size" --bs=1k --iodepth=1 --thread --numjobs="$2"
		   --runtime="$secs" --time_based)
	if [ "$1" = uipc ]; then cmd=(env UIPC_DIR="$ns" "$uipc" run -- "${cmd[@]}"); fi
	"${cmd[@]}" 2>/dev/null | python3 -c '
import json, sys
jobs = json.load(sys.stdin)["jobs"]
ios = cpu_ns = 0
for j in jobs:
    ios += j["read"]["total_ios"] + j["write"]["total_ios"]
    cpu_ns += (j["usr_cpu"] + j["sys_cpu"]) / 100.0 * j["job_runtime"] * 1e6
print("%.0f" % (cpu_ns / ios))'
}

. "$top/bench/steal.sh"

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

mkdir -p "$(dirname "$json")"
dat=$(mktemp)
trap 'rm -rf "$dir" "$ns" "$dat"' EXIT
printf '%-8s %14s %14s %8s\n' "contexts" "kernel ns/IO" "uipc ns/IO" "ratio"
rows=()
for nj in $jobs; do
	kt=() ut=()
	STEAL_REDONE=0 STEAL_REDO_MAX=$reps
	for i in $(seq 1 "$reps"); do
		if [ $((i % 2)) = 1 ]; then         # sides alternate which goes first
			pair_run run kernel uipc "$nj"; kt+=("$PAIR_A") ut+=("$PAIR_B")
		else
			pair_run run uipc kernel "$nj"; ut+=("$PAIR_A") kt+=("$PAIR_B")
		fi
	done
	k=$(printf '%s\n' "${kt[@]}" | median) u=$(printf '%s\n' "${ut[@]}" | median)
	ratio=$(awk -v a="$u" -v b="$k" 'BEGIN { printf "%.2f", b ? a / b : 0 }')
	printf '%-8s %14s %14s %8s\n' "$nj" "$k" "$u" "$ratio"
	echo "$nj $k $u" >>"$dat"
	rows+=("{\"contexts\": $nj, \"kernel_ns_per_io\": $k, \"uipc_ns_per_io\": $u, \"reps\": $reps, \"secs\": $secs}")
done
(IFS=,; echo "[${rows[*]}]") >"$json"
# the target: the time at the most contexts against the time at one, per side
awk 'NR == 1 { k1 = $2; u1 = $3 } { kn = $2; un = $3; n = $1 }
     END { printf "per-I/O time at %d contexts / at 1: kernel %.2f, uipc %.2f (target: at most 1.10)\n",
	   n, kn / k1, un / u1 }' "$dat"
if command -v gnuplot >/dev/null; then
	mkdir -p "$(dirname "$svg")"
	gnuplot <<EOF
set terminal svg size 720,440 dynamic font "sans,12"
set output "$svg"
set title "Seed 001: fio libaio randrw 1k iodepth 1, tmpfs, one context per thread"
set xlabel "AIO contexts (fio numjobs, threads of one process)"
set ylabel "CPU time per I/O (ns, job threads)"
set logscale x 2
set yrange [0:*]
set key bottom right
set grid
plot "$dat" using 1:2 with linespoints lw 2 title "kernel", \
     "$dat" using 1:3 with linespoints lw 2 title "uipc"
EOF
	echo "plot: $svg"
else
	echo "gnuplot is not installed (apt-get install gnuplot-nox): no plot" >&2
fi
