#!/bin/bash
# tests/real-fio.t - a real program: fio with ioengine=libaio writing and
# verifying (verify=crc32c) random blocks, reaping through io_getevents and
# with userspace_reap=1 (fio reads the ring itself and stores head), on
# tmpfs, on the disk buffered and on the disk with O_DIRECT, under
# `uipc run`.  Each run must pass its verification as on the kernel, and
# must really be served by uipc: while it runs the kernel's fs/aio-nr
# stays 0 (sampled), and with UIPC_AIO_MAX_NR=0 fio's io_setup fails;
# and the tmpfs job passes under `uipc run --no-kernel-ipc` (a seccomp
# filter makes the kernel's io_* calls fail with ENOSYS).
top=$(cd "$(dirname "$0")/.." && pwd)
uipc=$top/build/uipc
echo "1..9"
n=0 failed=0
ok() { n=$((n+1)); echo "ok $n - $1"; }
nok() { n=$((n+1)); failed=$((failed+1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "# $l"; done; }
if [ ! -x "$uipc" ] || ! command -v fio >/dev/null; then
	for i in $(seq 1 9); do echo "not ok $i - fio or $uipc missing"; done
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
# under uipc, with fs/aio-nr sampled meanwhile: "rc maxaionr"
run_uipc() {
	local log=$1; shift
	env UIPC_DIR="$ns" timeout 120 "$uipc" run -- fio "$@" >"$log" 2>&1 &
	local pid=$! max=0 v
	while kill -0 "$pid" 2>/dev/null; do
		v=$(cat /proc/sys/fs/aio-nr)
		[ "$v" -gt "$max" ] && max=$v
		sleep 0.01
	done
	wait "$pid"
	echo "$? $max"
}

aionr0=$(cat /proc/sys/fs/aio-nr)
for where in "shm 0" "disk 0" "disk 1"; do
	set -- $where
	dir=$shm; [ "$1" = disk ] && dir=$disk
	for reap in 0 1; do
		[ "$1 $2 $reap" = "disk 0 1" ] && continue    # 5 runs: tmpfs x2, disk, O_DIRECT x2
		what="fio libaio $1 direct=$2 userspace_reap=$reap"
		log=$shm/log-$1-$2-$reap
		set -- $(run_uipc "$log" $(job "$dir" "$2" "$reap")) ; rc=$1 max=$2
		if [ "$rc" = 0 ] && [ "$(grep -c 'err= 0' "$log")" = 2 ] &&
		   grep -q "READ:.* io=4096KiB" "$log" && ! grep -qi "verify: bad\|mismatch" "$log" &&
		   [ "$max" -le "$aionr0" ]; then
			ok "$what under uipc: verified, kernel aio-nr untouched ($(grep -o 'IOPS=[^,]*' "$log" | head -1))"
		else
			nok "$what under uipc: rc $rc, aio-nr max $max (was $aionr0)" "$(tail -5 "$log")"
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
# uipc is who serves: with no room in uipc's fs.aio-max-nr, fio cannot start
if ! env UIPC_AIO_MAX_NR=0 UIPC_DIR="$ns" timeout 60 "$uipc" run -- fio $(job "$shm" 0 0) \
	>"$shm/log-max0" 2>&1 && grep -qi "io_setup\|io_queue_init\|Resource temporarily" "$shm/log-max0"; then
	ok "with UIPC_AIO_MAX_NR=0 fio's io_setup fails under uipc (EAGAIN)"
else
	nok "with UIPC_AIO_MAX_NR=0 fio's io_setup fails under uipc" "$(tail -3 "$shm/log-max0")"
fi
# with the kernel's io_* calls refused: uipc needs none of them
log=$shm/log-nokipc
env UIPC_DIR="$ns" timeout 120 "$uipc" run --no-kernel-ipc -- fio $(job "$shm" 0 1) >"$log" 2>&1
rc=$?
if [ "$rc" = 0 ] && [ "$(grep -c 'err= 0' "$log")" = 2 ] &&
   grep -q "READ:.* io=4096KiB" "$log" && ! grep -qi "verify: bad\|mismatch" "$log"; then
	ok "fio libaio shm direct=0 userspace_reap=1 under uipc run --no-kernel-ipc: verified"
else
	nok "fio libaio under uipc run --no-kernel-ipc: rc $rc" "$(tail -5 "$log")"
fi
[ $failed -eq 0 ]
