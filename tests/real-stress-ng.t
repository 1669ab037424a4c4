#!/bin/bash
# tests/real-stress-ng.t - a real program: stress-ng's System V stressors
# (--sem-sysv, --shm-sysv, --msg) with --verify, two workers each, for a
# bounded time, on the kernel (a fresh IPC namespace) and under uipc (a
# fresh namespace).  Under uipc each must complete with no failure, as on
# the kernel; the bogo-ops/s of both are printed as diagnostics.
top=$(cd "$(dirname "$0")/.." && pwd)
lib=$top/build/libuipc.so
secs=${UIPC_STRESS_SECS:-5}
stressors="sem-sysv shm-sysv msg"
echo "1..7"
n=0 failed=0
if [ ! -f "$lib" ] || ! command -v stress-ng >/dev/null; then
	for s in $stressors; do
		echo "not ok $((++n)) - $s: stress-ng or $lib missing"
		echo "not ok $((++n)) - $s"
	done
	echo "not ok 7 - no run"
	exit 1
fi
dir=$(mktemp -d /dev/shm/uipc-stress.XXXXXX)
trap 'rm -rf "$dir"' EXIT

# run SIDE STRESSOR: prints "rc bogo_ops_per_s", the log in $dir/SIDE-STRESSOR.log
run() {
	local side=$1 s=$2 log=$dir/$1-$2.log rc
	if [ "$side" = kernel ]; then
		timeout $((secs * 4 + 60)) unshare --ipc -- stress-ng --$s 2 --verify \
			--metrics-brief -t "$secs" >"$log" 2>&1
	else
		timeout $((secs * 4 + 60)) env UIPC_DIR="$dir" UIPC_NS=stress LD_PRELOAD="$lib" \
			stress-ng --$s 2 --verify --metrics-brief -t "$secs" >"$log" 2>&1
	fi
	rc=$?
	echo "$rc $(awk -v s="$s" '$4 == s && $5 ~ /^[0-9]+$/ { print $9 }' "$log" | head -1)"
}

for s in $stressors; do
	set -- $(run kernel "$s"); krc=$1 kops=${2:-?}
	set -- $(run uipc "$s"); urc=$1 uops=${2:-?}
	if [ "$krc" = 0 ]; then
		echo "ok $((++n)) - $s on the kernel: passed ($kops bogo ops/s)"
	else
		failed=$((failed+1)); echo "not ok $((++n)) - $s on the kernel: status $krc"
		tail -5 "$dir/kernel-$s.log" | sed 's/^/# /'
	fi
	if [ "$urc" = 0 ] && grep -q "successful run completed" "$dir/uipc-$s.log" &&
	   ! grep -qiE "fail(ed|ure)|verif.*(error|mismatch)" "$dir/uipc-$s.log"; then
		echo "ok $((++n)) - $s under uipc: passed with --verify ($uops bogo ops/s)"
	else
		failed=$((failed+1)); echo "not ok $((++n)) - $s under uipc: status $urc"
		tail -8 "$dir/uipc-$s.log" | sed 's/^/# /'
	fi
done
# nothing may be left: no segment files beside the namespace
# (removed segments' files may stay as empty spares of the pool,
# ipc/shm.c, at most 16: SHM_POOL_CAP)
left=$(find "$dir" -maxdepth 1 -name '*.shm-*' ! -empty | wc -l)
spares=$(find "$dir" -maxdepth 1 -name '*.shm-*' -empty | wc -l)
[ "$spares" -le 16 ] || left="$left (and $spares spares)"
if [ "$left" = 0 ]; then
	echo "ok $((++n)) - no shared memory segment file left behind"
else
	failed=$((failed+1)); echo "not ok $((++n)) - $left segment files left behind"
fi
[ $failed -eq 0 ]
