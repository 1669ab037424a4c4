#!/bin/bash
# tests/real-stress-ng.t - a real program: stress-ng's System V stressors
# (--sem-sysv, --shm-sysv, --msg) with --verify, two workers each, for a
# bounded time, on the kernel (a fresh IPC namespace) and under uipc (a
# fresh namespace).  Under uipc each must complete with no failure, as on
# the kernel; the bogo-ops/s of both are printed as diagnostics.  Then the
# three together with --metrics, as issue 16 asks: the same kinds of
# figures on both sides, and under uipc the /proc/sysvipc files stress-ng
# reads are uipc's (strace: memfds made by libuipc, no real file opened).
# And each stressor again under uipc with the kernel's System V IPC calls
# refused by a seccomp filter (UIPC_NO_KERNEL_IPC=1, ENOSYS): stress-ng's
# IPC is all uipc's; and the three together in trap mode (UIPC_TRAP=1).
top=$(cd "$(dirname "$0")/.." && pwd)
lib=$top/build/libuipc.so
secs=${UIPC_STRESS_SECS:-5}
stressors="sem-sysv shm-sysv msg"
echo "1..14"
n=0 failed=0
if [ ! -f "$lib" ] || ! command -v stress-ng >/dev/null; then
	for s in $stressors; do
		echo "not ok $((++n)) - $s: stress-ng or $lib missing"
		echo "not ok $((++n)) - $s"
	done
	for i in 7 8 9 10 11 12 13 14; do echo "not ok $i - no run"; done
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
	elif [ "$side" = nokipc ]; then
		timeout $((secs * 4 + 60)) env UIPC_DIR="$dir" UIPC_NS=nokipc LD_PRELOAD="$lib" \
			UIPC_NO_KERNEL_IPC=1 stress-ng --$s 2 --verify --metrics-brief -t "$secs" >"$log" 2>&1
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

# the three stressors at once with --metrics: the kinds of figures
# (stressor rows and miscellaneous metric names, numbers left out)
kinds() {
	sed -n 's/^stress-ng: metrc: \[[0-9]*\] //p' "$1" |
		sed -E 's/[0-9]+(\.[0-9]+)?//g; s/ +/ /g' | sort
}
klog=$dir/kernel-metrics.log ulog=$dir/uipc-metrics.log trace=$dir/uipc-metrics.strace
kernel_metrics_run() {
	timeout $((secs * 4 + 60)) unshare --ipc -- stress-ng --sem-sysv 2 --shm-sysv 2 --msg 2 \
		--metrics -t "$secs" >"$klog" 2>&1
}
kernel_metrics_run
krc=$?
# the reference run itself may end with stress-ng's status 7 (its metrics
# untrustworthy: seen once in a whole make test, on the kernel side, with
# nothing of uipc's loaded): that run says nothing of uipc, so it is made
# again, once
if [ "$krc" = 7 ]; then
	cp "$klog" "$klog.first"
	echo "# the kernel's --metrics run ended with status 7 (metrics untrustworthy): run again"
	kernel_metrics_run
	krc=$?
fi
if command -v strace >/dev/null; then
	timeout $((secs * 4 + 60)) env UIPC_DIR="$dir" UIPC_NS=metrics LD_PRELOAD="$lib" \
		strace -f -qq -o "$trace" -e trace=openat,open,memfd_create \
		stress-ng --sem-sysv 2 --shm-sysv 2 --msg 2 --metrics -t "$secs" >"$ulog" 2>&1
else
	echo "strace missing" >"$ulog"
fi
urc=$?
if [ "$krc" = 0 ] && [ "$urc" = 0 ] && grep -q "successful run completed" "$ulog"; then
	echo "ok $((++n)) - --sem-sysv 2 --shm-sysv 2 --msg 2 --metrics passes on both sides"
else
	failed=$((failed+1)); echo "not ok $((++n)) - --metrics run: kernel $krc, uipc $urc"
	tail -5 "$ulog" | sed 's/^/# /'
fi
if [ -n "$(kinds "$klog")" ] && [ "$(kinds "$klog")" = "$(kinds "$ulog")" ]; then
	echo "ok $((++n)) - the same kinds of figures ($(kinds "$klog" | wc -l) metric lines)"
else
	failed=$((failed+1)); echo "not ok $((++n)) - the kinds of figures differ"
	diff <(kinds "$klog") <(kinds "$ulog") | sed 's/^/# /'
fi
real=$(grep -c '"/proc/sysvipc/' "$trace" 2>/dev/null)
ours=$(grep -c 'memfd_create("uipc-proc"' "$trace" 2>/dev/null)
if [ "${real:-1}" = 0 ] && [ "${ours:-0}" -gt 0 ]; then
	echo "ok $((++n)) - stress-ng read /proc/sysvipc from uipc ($ours files made, no real one opened)"
else
	failed=$((failed+1))
	echo "not ok $((++n)) - /proc/sysvipc under uipc: ${real:-?} real opens, ${ours:-?} of uipc's"
fi
for s in $stressors; do
	set -- $(run nokipc "$s"); urc=$1 uops=${2:-?}
	if [ "$urc" = 0 ] && grep -q "successful run completed" "$dir/nokipc-$s.log" &&
	   ! grep -qiE "fail(ed|ure)|verif.*(error|mismatch)|seccomp" "$dir/nokipc-$s.log"; then
		echo "ok $((++n)) - $s under uipc with the kernel's IPC refused (ENOSYS): passed with --verify ($uops bogo ops/s)"
	else
		failed=$((failed+1)); echo "not ok $((++n)) - $s under uipc with the kernel's IPC refused: status $urc"
		tail -8 "$dir/nokipc-$s.log" | sed 's/^/# /'
	fi
done
tlog=$dir/trap.log
timeout $((secs * 4 + 60)) env UIPC_DIR="$dir" UIPC_NS=trap LD_PRELOAD="$lib" UIPC_TRAP=1 \
	stress-ng --sem-sysv 2 --shm-sysv 2 --msg 2 --verify --metrics-brief -t "$secs" >"$tlog" 2>&1
trc=$?
if [ "$trc" = 0 ] && grep -q "successful run completed" "$tlog" &&
   ! grep -qiE "fail(ed|ure)|verif.*(error|mismatch)|seccomp" "$tlog"; then
	echo "ok $((++n)) - --sem-sysv 2 --shm-sysv 2 --msg 2 in trap mode (UIPC_TRAP=1): passed with --verify"
else
	failed=$((failed+1)); echo "not ok $((++n)) - in trap mode: status $trc"
	tail -8 "$tlog" | sed 's/^/# /'
fi
[ $failed -eq 0 ]
