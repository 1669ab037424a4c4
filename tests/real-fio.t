#!/bin/bash
# tests/real-fio.t - a real program: fio with ioengine=libaio writing and
# verifying (verify=crc32c) random blocks, reaping through io_getevents and
# with userspace_reap=1 (fio reads the ring itself and stores head), on
# tmpfs, on the disk buffered and on the disk with O_DIRECT, under
# `uipc run --aio-backend=B` (B: $UIPC_AIO_BACKEND, default uring;
# tests/real-fio-threads.t runs threads).  Each run must pass its
# verification as on the kernel, and must really be served by uipc: it
# runs with the kernel's AIO calls refused (tests/real/noaio.c, a seccomp
# filter: ENOSYS), under which fio fails on the kernel, and with
# UIPC_AIO_MAX_NR=0 fio's io_setup fails; and the tmpfs job passes under
# `uipc run --no-kernel-ipc` (the library's own filter).  (The kernel's fs/aio-nr, once
# sampled here, is system-wide: other programs of the host move it.)
top=$(cd "$(dirname "$0")/.." && pwd)
uipc=$top/build/uipc
noaio=$top/build/tests/real/noaio
backend=${UIPC_AIO_BACKEND:-uring}
echo "1..10"
n=0 failed=0
ok() { n=$((n+1)); echo "ok $n - $1"; }
nok() { n=$((n+1)); failed=$((failed+1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "# $l"; done; }
if [ ! -x "$uipc" ] || [ ! -x "$noaio" ] || ! command -v fio >/dev/null; then
	for i in $(seq 1 10); do echo "not ok $i - fio, $uipc or $noaio missing"; done
	exit 1
fi
shm=$(mktemp -d /dev/shm/uipc-fio.XXXXXX)
disk=$(mktemp -d /var/tmp/uipc-fio.XXXXXX)
ns=$(mktemp -d /dev/shm/uipc-fions.XXXXXX)
trap 'rm -rf "$shm" "$disk" "$ns"' EXIT
cd "$shm" || exit 1   # whatever fio leaves in its working directory goes too

# job DIR DIRECT REAP: fio's options for a write-then-verify job
job() {
	echo --name=v --ioengine=libaio --directory="$1" --direct="$2" \
		--userspace_reap="$3" --rw=randwrite --bs=4k --size=2m --iodepth=16 \
		--numjobs=2 --thread --verify=crc32c --do_verify=1 --verify_fatal=1 \
		--verify_state_save=0
}

# (verification: both jobs end with err= 0 and read back all 4 MiB they
# wrote; verify_fatal makes a bad block fail the run)
# under uipc, the kernel's AIO calls refused; fio's status
run_uipc() {
	local log=$1; shift
	env UIPC_DIR="$ns" timeout -k 10 120 "$noaio" "$uipc" run --aio-backend="$backend" -- \
		fio "$@" >"$log" 2>&1
}

for where in "shm 0" "disk 0" "disk 1"; do
	set -- $where
	dir=$shm; [ "$1" = disk ] && dir=$disk
	for reap in 0 1; do
		[ "$1 $2 $reap" = "disk 0 1" ] && continue    # 5 runs: tmpfs x2, disk, O_DIRECT x2
		what="fio libaio $1 direct=$2 userspace_reap=$reap, kernel AIO refused, $backend"
		log=$shm/log-$1-$2-$reap
		run_uipc "$log" $(job "$dir" "$2" "$reap"); rc=$?
		if [ "$rc" = 0 ] && [ "$(grep -c 'err= 0' "$log")" = 2 ] &&
		   grep -q "READ:.* io=4096KiB" "$log" && ! grep -qi "verify: bad\|mismatch" "$log"; then
			ok "$what under uipc: verified ($(grep -o 'IOPS=[^,]*' "$log" | head -1))"
		else
			nok "$what under uipc: rc $rc" "$(tail -5 "$log")"
		fi
		set -- $where
	done
done
# the same jobs on the kernel, as the reference
if fio $(job "$shm" 0 1) >"$shm/klog" 2>&1; then
	ok "the kernel passes the tmpfs job ($(grep -o 'IOPS=[^,]*' "$shm/klog" | head -1))"
else
	nok "the kernel passes the tmpfs job" "$(tail -5 "$shm/klog")"
fi
if fio $(job "$disk" 1 1) >"$shm/klog2" 2>&1; then
	ok "the kernel passes the O_DIRECT job ($(grep -o 'IOPS=[^,]*' "$shm/klog2" | head -1))"
else
	nok "the kernel passes the O_DIRECT job" "$(tail -5 "$shm/klog2")"
fi
# the filter bites: fio cannot run its AIO on the kernel under it
if ! timeout -k 10 60 "$noaio" fio $(job "$shm" 0 0) >"$shm/log-refused" 2>&1; then
	ok "on the kernel under noaio, fio fails ($(grep -m1 -io 'io_.*failed[^.]*\|Function not implemented' "$shm/log-refused"))"
else
	nok "on the kernel under noaio, fio fails" "$(tail -3 "$shm/log-refused")"
fi
# uipc is who serves: with no room in uipc's fs.aio-max-nr, fio cannot start
if ! env UIPC_AIO_MAX_NR=0 UIPC_DIR="$ns" timeout -k 10 60 "$uipc" run --aio-backend="$backend" -- \
	fio $(job "$shm" 0 0) \
	>"$shm/log-max0" 2>&1 && grep -qi "io_setup\|io_queue_init\|Resource temporarily" "$shm/log-max0"; then
	ok "with UIPC_AIO_MAX_NR=0 fio's io_setup fails under uipc (EAGAIN)"
else
	nok "with UIPC_AIO_MAX_NR=0 fio's io_setup fails under uipc" "$(tail -3 "$shm/log-max0")"
fi
# with the kernel's io_* calls refused by uipc's own filter: uipc needs none
log=$shm/log-nokipc
env UIPC_DIR="$ns" timeout -k 10 120 "$uipc" run --no-kernel-ipc --aio-backend="$backend" -- \
	fio $(job "$shm" 0 1) >"$log" 2>&1
rc=$?
if [ "$rc" = 0 ] && [ "$(grep -c 'err= 0' "$log")" = 2 ] &&
   grep -q "READ:.* io=4096KiB" "$log" && ! grep -qi "verify: bad\|mismatch" "$log"; then
	ok "fio libaio shm direct=0 userspace_reap=1 under uipc run --no-kernel-ipc, $backend: verified"
else
	nok "fio libaio under uipc run --no-kernel-ipc, $backend: rc $rc" "$(tail -5 "$log")"
fi
[ $failed -eq 0 ]
