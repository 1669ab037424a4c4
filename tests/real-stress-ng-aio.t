#!/bin/bash
# tests/real-stress-ng-aio.t - a real program: stress-ng's Linux native AIO
# stressor (--aiol, which makes the io_* calls through syscall()), with
# --verify, two workers, for a bounded time, in a scratch directory on the
# disk: on the kernel, then under uipc, each must complete with no failure;
# bogo ops/s printed as diagnostics.  That uipc served it: it runs with the
# kernel's AIO calls refused (tests/real/noaio.c, seccomp: ENOSYS), and
# with the process's AIO limit at 0 (UIPC_AIO_MAX_NR=0) stress-ng's
# io_setup fails with EAGAIN, which the kernel's calls would not; and it
# passes with the library's own no-kernel-IPC filter (UIPC_NO_KERNEL_IPC=1,
# `uipc run --no-kernel-ipc`).
top=$(cd "$(dirname "$0")/.." && pwd)
lib=$top/build/libuipc.so
noaio=$top/build/tests/real/noaio
secs=${UIPC_STRESS_SECS:-5}
echo "1..4"
if [ ! -f "$lib" ] || [ ! -x "$noaio" ] || ! command -v stress-ng >/dev/null; then
	for i in 1 2 3 4; do echo "not ok $i - stress-ng, $lib or $noaio missing"; done
	exit 1
fi
dir=$(mktemp -d /dev/shm/uipc-stress-aio.XXXXXX)
work=$(mktemp -d /var/tmp/uipc-stress-aio.XXXXXX)
trap 'rm -rf "$dir" "$work"' EXIT
n=0 failed=0

# run LOG [ENV...]: stress-ng --aiol in $work, under the environment given
# (and $wrap)
wrap=
run() {
	local log=$1
	shift
	(cd "$work" && timeout -k 10 $((secs * 4 + 60)) env "$@" $wrap \
		stress-ng --aiol 2 --verify --metrics-brief -t "$secs" >"$log" 2>&1)
}
passed() {
	grep -q "successful run completed" "$1" && ! grep -qiE "^stress-ng: (fail|warn)" "$1"
}
ops() {
	awk '$4 == "aiol" && $5 ~ /^[0-9]+$/ { print $9 }' "$1" | head -1
}
check() {
	if [ "$1" = 0 ]; then
		echo "ok $((++n)) - $2"
	else
		failed=$((failed+1)); echo "not ok $((++n)) - $2"
		tail -6 "$3" | sed 's/^/# /'
	fi
}

run "$dir/kernel.log" PATH="$PATH"
passed "$dir/kernel.log"
check $? "aiol on the kernel: passed with --verify ($(ops "$dir/kernel.log") bogo ops/s)" "$dir/kernel.log"
wrap=$noaio
run "$dir/uipc.log" UIPC_DIR="$dir" UIPC_NS=aio LD_PRELOAD="$lib"
passed "$dir/uipc.log"
check $? "aiol under uipc, kernel AIO refused: passed with --verify ($(ops "$dir/uipc.log") bogo ops/s)" "$dir/uipc.log"
run "$dir/limit.log" UIPC_DIR="$dir" UIPC_NS=aio LD_PRELOAD="$lib" UIPC_AIO_MAX_NR=0
grep -q "io_setup failed.*errno=11" "$dir/limit.log"
check $? "under uipc with UIPC_AIO_MAX_NR=0 its io_setup fails with EAGAIN: uipc serves it" "$dir/limit.log"
wrap=
run "$dir/nokipc.log" UIPC_DIR="$dir" UIPC_NS=aio2 LD_PRELOAD="$lib" UIPC_NO_KERNEL_IPC=1
passed "$dir/nokipc.log" && ! grep -q seccomp "$dir/nokipc.log"
check $? "aiol under uipc with the kernel's io_* calls refused (ENOSYS, UIPC_NO_KERNEL_IPC): passed with --verify ($(ops "$dir/nokipc.log") bogo ops/s)" "$dir/nokipc.log"
[ $failed -eq 0 ]
