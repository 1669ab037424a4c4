#!/bin/bash
# bench/stress-ng.sh - the stress-ng rows of `make bench`: bogo-ops/s of
# stress-ng's System V stressors (--sem-sysv, --shm-sysv, --msg; 2 workers
# each, no --verify) on the kernel and under uipc, in the same run, sides
# alternating, the median of the repetitions; ratio uipc/kernel (> 1: uipc
# is faster).  A repetition during which a VM's host took over 5% of the
# CPUs' time (/proc/stat's steal) is run again, both sides (bench/steal.sh).  A table on stdout, JSON in --json.
#   kernel: unshare --ipc -- stress-ng ...       (a fresh kernel IPC namespace)
#   uipc:   UIPC_DIR=<fresh dir> UIPC_NS=bench LD_PRELOAD=libuipc.so stress-ng ...
# Options: --lib PATH (default build/libuipc.so), --json PATH (default
# build/bench/stress-ng.json), --secs N per run (default 4), --reps N
# (default 3), --quick (2 s, 1 repetition), --logs DIR (default
# build/bench/logs).
top=$(cd "$(dirname "$0")/.." && pwd)
lib=$top/build/libuipc.so
json=$top/build/bench/stress-ng.json
logs=$top/build/bench/logs
secs=4 reps=3
stressors="sem-sysv shm-sysv msg"
while [ $# -gt 0 ]; do
	case $1 in
	--lib) lib=$2; shift ;;
	--json) json=$2; shift ;;
	--logs) logs=$2; shift ;;
	--secs) secs=$2; shift ;;
	--reps) reps=$2; shift ;;
	--quick) secs=2 reps=1 ;;
	*) echo "usage: $0 [--lib PATH] [--json PATH] [--logs DIR] [--secs N] [--reps N] [--quick]" >&2
	   exit 2 ;;
	esac
	shift
done
if ! command -v stress-ng >/dev/null; then
	echo "stress-ng rows: stress-ng is not installed (apt-get install stress-ng)" >&2
	exit 1
fi
mkdir -p "$logs" "$(dirname "$json")"

# one SIDE STRESSOR REP: prints the bogo ops/s (real time), or ERROR
one() {
	local side=$1 s=$2 log=$logs/stress-ng-$2-$1-$3.log dir rc v
	if [ "$side" = kernel ]; then
		timeout $((secs * 4 + 60)) unshare --ipc -- \
			stress-ng --$s 2 --metrics-brief -t "$secs" >"$log" 2>&1
		rc=$?
	else
		if [ ! -f "$lib" ]; then echo ERROR; return; fi
		dir=$(mktemp -d /dev/shm/uipc-bench-stress.XXXXXX)
		timeout $((secs * 4 + 60)) env UIPC_DIR="$dir" UIPC_NS=bench LD_PRELOAD="$lib" \
			stress-ng --$s 2 --metrics-brief -t "$secs" >"$log" 2>&1
		rc=$?
		rm -rf "$dir"
	fi
	v=$(awk -v s="$s" '$4 == s && $5 ~ /^[0-9]+$/ { print $9; exit }' "$log")
	if [ "$rc" = 0 ] && [ -n "$v" ]; then echo "$v"; else echo ERROR; fi
}
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END {
	if (NR == 0) print "ERROR"; else if (NR % 2) print v[(NR + 1) / 2];
	else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

. "$top/bench/steal.sh"

declare -A res
for s in $stressors; do
	k= u=
	STEAL_REDONE=0 STEAL_REDO_MAX=$reps
	for r in $(seq "$reps"); do
		pair_run one kernel uipc "$s" "$r"
		[ "$PAIR_A" = ERROR ] || k="$k $PAIR_A"
		[ "$PAIR_B" = ERROR ] || u="$u $PAIR_B"
	done
	res[$s.kernel]=$(echo "$k" | median)
	res[$s.uipc]=$(echo "$u" | median)
done

fmt() { [ "$1" = ERROR ] && echo "ERROR (see $logs)" || printf "%.0f" "$1"; }
ratio() { if [ "$1" = ERROR ] || [ "$2" = ERROR ]; then echo "-"; else awk -v k="$1" -v u="$2" 'BEGIN { printf "%.2fx", u / k }'; fi; }
echo
echo "stress-ng System V stressors, 2 workers, ${secs} s, median of $reps (bogo ops/s, real time; ratio > 1: uipc faster)"
printf "%-34s %14s %14s %8s  %s\n" "stressor" "kernel" "uipc" "ratio" "target"
# target(K, U): uipc at least as fast as the kernel (issue 18)
target() { if [ "$1" = ERROR ] || [ "$2" = ERROR ]; then echo "ratio>=1x ?"; else
	awk -v k="$1" -v u="$2" 'BEGIN { print (u >= k) ? "ratio>=1x ok" : "ratio>=1x MISSED" }'; fi; }
for s in $stressors; do
	printf "%-34s %14s %14s %8s  %s\n" "stress-ng --$s 2" "$(fmt "${res[$s.kernel]}")" \
		"$(fmt "${res[$s.uipc]}")" "$(ratio "${res[$s.kernel]}" "${res[$s.uipc]}")" \
		"$(target "${res[$s.kernel]}" "${res[$s.uipc]}")"
done
{
	echo "{\"secs\": $secs, \"reps\": $reps, \"unit\": \"bogo ops/s\", \"rows\": ["
	sep=
	for s in $stressors; do
		k=${res[$s.kernel]} u=${res[$s.uipc]}
		printf '%s  {"id": "stress-ng.%s", "kernel": %s, "uipc": %s, "ratio": %s}' "$sep" "$s" \
			"$([ "$k" = ERROR ] && echo null || echo "$k")" "$([ "$u" = ERROR ] && echo null || echo "$u")" \
			"$(r=$(ratio "$k" "$u"); [ "$r" = - ] && echo null || echo "${r%x}")"
		sep=$',\n'
	done
	printf '\n]}\n'
} >"$json"
echo "(JSON: $json)"
for s in $stressors; do
	[ "${res[$s.kernel]}" != ERROR ] && [ "${res[$s.uipc]}" != ERROR ] || exit 1
done
