#!/bin/bash
# tests/real-sysbench-aio.t - a real program: sysbench fileio
# --file-io-mode=async (libaio: io_queue_init, io_submit, io_getevents),
# prepare, run (random reads and writes, an fsync every 10 requests) and
# cleanup, on the kernel, then under `uipc run` with each AIO backend and
# the kernel's AIO calls refused (tests/real/noaio.c, seccomp: ENOSYS).
# sysbench fails the run (FATAL) on any event whose result is not the
# request's full length, and cleanup must leave nothing.
#
# Its --validate (a checksum in every block) works only where every
# request completes inside io_submit: sysbench fills and checks one buffer
# per thread for all its requests in flight, so it fails on the kernel too
# with O_DIRECT.  So it is on where both complete inline (tmpfs, and the
# kernel's own buffered disk I/O), off for uipc on the disk, where
# buffered I/O is asynchronous.  That the filter bites is shown by
# sysbench failing under it on the kernel.
top=$(cd "$(dirname "$0")/.." && pwd)
uipc=$top/build/uipc
noaio=$top/build/tests/real/noaio
secs=${UIPC_SYSBENCH_SECS:-2}
echo "1..9"
if [ ! -x "$uipc" ] || [ ! -x "$noaio" ] || ! command -v sysbench >/dev/null; then
	for i in $(seq 1 9); do echo "not ok $i - sysbench, $uipc or $noaio missing"; done
	exit 1
fi
work=$(mktemp -d /var/tmp/uipc-sysbench.XXXXXX)
shm=$(mktemp -d /dev/shm/uipc-sysbench.XXXXXX)
ns=$(mktemp -d /dev/shm/uipc-sysbench-ns.XXXXXX)
trap 'rm -rf "$work" "$shm" "$ns"' EXIT
n=0 failed=0

# sysbench's fileio options; $1: "direct" or "", $2: validate on or off
opts() {
	echo --file-total-size=32M --file-num=4 --file-block-size=4096 --file-test-mode=rndrw \
		--file-io-mode=async --file-fsync-freq=10 --validate="$2" --time="$secs" \
		${1:+--file-extra-flags=$1}
}

# cycle LOG WHERE FLAGS VALIDATE CMD...: prepare, run and cleanup under CMD,
# in a fresh directory under WHERE
cycle() {
	local log=$1 where=$2 flags=$3 validate=$4 d
	shift 4
	d=$(mktemp -d "$where/run.XXXXXX")
	(cd "$d" && for step in prepare run cleanup; do
		echo "== $step"
		timeout -k 10 120 "$@" sysbench fileio $(opts "$flags" "$validate") "$step" || exit 1
	done) >"$log" 2>&1
	local rc=$?
	[ -z "$(ls -A "$d")" ] || { echo "== left: $(ls -A "$d")" >>"$log"; rc=1; }
	rm -rf "$d"
	return $rc
}
passed() {
	! grep -q "FATAL" "$1" && grep -Eq "reads/s: +[1-9]" "$1" &&
		grep -Eq "writes/s: +[1-9]" "$1" && grep -q "Removing test files" "$1"
}
validated() { grep -q "Using checksums validation" "$1"; }
check() {  # check STATUS WHAT LOG
	n=$((n+1))
	if [ "$1" = 0 ]; then echo "ok $n - $2"
	else failed=$((failed+1)); echo "not ok $n - $2"; tail -8 "$3" | sed 's/^/# /'; fi
}
rate() { grep -E "reads/s|writes/s" "$1" | awk '{ printf "%s %s ", $1, $2 }'; }

log=$shm/kernel.log
cycle "$log" "$work" "" on env
passed "$log" && validated "$log"
check $? "on the kernel, disk, buffered: prepare, run validated, cleanup ($(rate "$log"))" "$log"
log=$shm/kernel-direct.log
cycle "$log" "$work" direct off env
passed "$log"
check $? "on the kernel, disk, O_DIRECT ($(rate "$log"))" "$log"

cycle "$shm/refused.log" "$work" "" on "$noaio"
grep -q "io_queue_init() failed" "$shm/refused.log"
check $? "on the kernel under noaio: sysbench's io_queue_init fails (the filter bites)" "$shm/refused.log"

for b in uring threads; do
	log=$shm/uipc-$b-tmpfs.log
	cycle "$log" "$shm" "" on env UIPC_DIR="$ns" "$noaio" "$uipc" run --aio-backend=$b --
	passed "$log" && validated "$log"
	check $? "under uipc ($b), kernel AIO refused, tmpfs: validated ($(rate "$log"))" "$log"
	for flags in "" direct; do
		log=$shm/uipc-$b-disk-$flags.log
		cycle "$log" "$work" "$flags" off env UIPC_DIR="$ns" "$noaio" "$uipc" run --aio-backend=$b --
		passed "$log"
		check $? "under uipc ($b), kernel AIO refused, disk, ${flags:-buffered} ($(rate "$log"))" "$log"
	done
done
[ $failed = 0 ]
