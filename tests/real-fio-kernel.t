#!/bin/bash
# tests/real-fio-kernel.t - a real program on the default backend's O_DIRECT
# path (aio/kaio.c: a kernel AIO context of uipc's own): fio ioengine=libaio
# writing and verifying (verify=crc32c) random 4 KiB blocks with O_DIRECT
# on the disk, two threads of 16 in flight each, reaping through
# io_getevents and with userspace_reap=1 (fio reads uipc's ring itself),
# then a third job whose threads wait on nothing but their rings (depth 1,
# iodepth_batch_complete_min=0: fio polls with zero timeouts, so the
# watcher reaps); and with the kernel's AIO calls refused the same jobs go
# to the io_uring (tests/real-fio.t covers that at length).  That uipc
# served fio's own calls: with UIPC_AIO_MAX_NR=0 its io_setup fails.
top=$(cd "$(dirname "$0")/.." && pwd)
uipc=$top/build/uipc
echo "1..5"
n=0 failed=0
ok() { n=$((n+1)); echo "ok $n - $1"; }
nok() { n=$((n+1)); failed=$((failed+1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "# $l"; done; }
if [ ! -x "$uipc" ] || ! command -v fio >/dev/null; then
	for i in $(seq 1 5); do echo "not ok $i - fio or $uipc missing"; done
	exit 1
fi
disk=$(mktemp -d /var/tmp/uipc-fiok.XXXXXX)
ns=$(mktemp -d /dev/shm/uipc-fiokns.XXXXXX)
trap 'rm -rf "$disk" "$ns"' EXIT
cd "$disk" || exit 1

# job REAP [EXTRA...]: a write-then-verify job with O_DIRECT
job() {
	local reap=$1; shift
	echo --name=v --ioengine=libaio --directory="$disk" --direct=1 \
		--userspace_reap="$reap" --rw=randwrite --bs=4k --size=2m --iodepth=16 \
		--numjobs=2 --thread --verify=crc32c --do_verify=1 --verify_fatal=1 \
		--verify_state_save=0 "$@"
}
verified() {
	[ "$1" = 0 ] && [ "$(grep -c 'err= 0' "$2")" = 2 ] &&
		grep -q "READ:.* io=4096KiB" "$2" && ! grep -qi "verify: bad\|mismatch" "$2"
}
check() {
	local what=$1 log=$2 rc=$3
	if verified "$rc" "$log"; then
		ok "$what: verified ($(grep -o 'IOPS=[^,]*' "$log" | head -1))"
	else
		nok "$what: rc $rc" "$(tail -5 "$log")"
	fi
}
for reap in 0 1; do
	log=$disk/log-$reap
	env UIPC_DIR="$ns" timeout -k 10 120 "$uipc" run -- fio $(job $reap) >"$log" 2>&1
	check "fio libaio O_DIRECT userspace_reap=$reap, default backend" "$log" $?
done
log=$disk/log-poll
env UIPC_DIR="$ns" timeout -k 10 120 "$uipc" run -- fio $(job 1 --iodepth=1 --iodepth_batch_complete_min=0) \
	>"$log" 2>&1
check "fio libaio O_DIRECT depth 1 reaping with zero timeouts, default backend" "$log" $?
log=$disk/log-refused
env UIPC_DIR="$ns" timeout -k 10 120 "$top/build/tests/real/noaio" "$uipc" run -- fio $(job 0) >"$log" 2>&1
check "the same with the kernel's AIO calls refused (io_uring)" "$log" $?
log=$disk/log-max0
if ! env UIPC_DIR="$ns" UIPC_AIO_MAX_NR=0 timeout -k 10 60 "$uipc" run -- fio $(job 0) >"$log" 2>&1 &&
   grep -qi "io_setup\|Resource temporarily unavailable\|queue_init" "$log"; then
	ok "with UIPC_AIO_MAX_NR=0 fio's io_setup fails under uipc: uipc serves it"
else
	nok "with UIPC_AIO_MAX_NR=0 fio's io_setup fails under uipc" "$(tail -3 "$log")"
fi
[ $failed = 0 ]
