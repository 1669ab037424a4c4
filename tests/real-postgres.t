#!/bin/bash
# tests/real-postgres.t - a real program: PostgreSQL 15 (Debian's
# postgresql-15) with shared_memory_type = sysv and dynamic_shared_memory_type
# = sysv, run by tests/real/postgres.sh as the postgres user (PostgreSQL
# refuses root) on the kernel, in a fresh IPC namespace (unshare --ipc), and
# under `uipc run` on a fresh namespace of the postgres user's in a directory
# of this run.  Each side: initdb, start, pgbench -i, a bounded pgbench run
# with 4 clients, a parallel query, clean stop; start again, SIGKILL the
# postmaster and every backend but one (stopped) under pgbench load: start is
# refused while that one lives (PostgreSQL reads its old segment's nattch with
# IPC_STAT to decide whether it may start), kill it too, start again and
# verify the data: the row committed before the crash is there and pgbench's
# balances agree.  The uipc side runs twice: the second time (nokipc) with
# `uipc run --no-kernel-ipc --trap` (a seccomp filter makes the kernel's
# System V IPC calls fail with ENOSYS, which proves PostgreSQL's IPC is all
# uipc's, and trap mode's filter and SIGSYS handler are in every process).
# The tps of every side are printed.
top=$(cd "$(dirname "$0")/.." && pwd)
uipc=$top/build/uipc
bin=/usr/lib/postgresql/15/bin
scenario=$top/tests/real/postgres.sh
echo "1..20"
n=0 failed=0
ok() { echo "ok $((++n)) - $*"; }
nok() { failed=$((failed+1)); echo "not ok $((++n)) - $*"; }
if [ ! -x "$uipc" ] || [ ! -x "$bin/postgres" ] || [ ! -x "$bin/pgbench" ] || ! id postgres >/dev/null 2>&1; then
	echo "not ok 1 - $uipc or PostgreSQL 15 (postgresql-15, user postgres) missing"
	exit 1
fi

base=$(mktemp -d /dev/shm/uipc-pg.XXXXXX)
chmod 755 "$base"
# the postgres user runs uipc and the scenario: copies in a directory it can
# read, whatever the permissions of the tree this test runs from
mkdir "$base/bin" && cp "$uipc" "$top/build/libuipc.so" "$top/build/libuipc.so.0" "$scenario" "$base/bin/" &&
	chmod -R a+rX "$base/bin" || { echo "not ok 1 - cannot copy uipc to $base/bin"; rm -rf "$base"; exit 1; }
uipc=$base/bin/uipc scenario=$base/bin/postgres.sh
# Stop whatever server of ours is still running (a failed or timed-out
# scenario): the postmaster of each data directory and its children, by pid.
cleanup() {
	local f pm
	for f in "$base"/*/data/postmaster.pid; do
		[ -f "$f" ] || continue
		pm=$(head -1 "$f")
		[ -n "$pm" ] || continue
		kill -STOP "$pm" 2>/dev/null
		kill -KILL "$pm" $(ps -o pid= --ppid "$pm") 2>/dev/null
	done
	rm -rf "$base"
}
trap cleanup EXIT
trap "exit 130" INT TERM

# side NAME: run the scenario; its "R key value" lines go to $base/NAME.r
run_side() {
	local side=$1 d=$base/$1 port=$2
	mkdir -p "$d/ns" && chown -R postgres: "$d"
	if [ "$side" = kernel ]; then
		timeout 150 unshare --ipc -- runuser -u postgres -- \
			bash "$scenario" "$d" ipcs "$port" >"$base/$side.r"
	elif [ "$side" = uipc ]; then
		timeout 150 runuser -u postgres -- "$uipc" run --dir "$d/ns" \
			--ns "pg-$$-$RANDOM" -- bash "$scenario" "$d" "$uipc ipcs" "$port" >"$base/$side.r"
	else
		timeout 150 runuser -u postgres -- "$uipc" run --no-kernel-ipc --trap --dir "$d/ns" \
			--ns "pg-$$-$RANDOM" -- bash "$scenario" "$d" "$uipc ipcs" "$port" >"$base/$side.r"
	fi
	echo "R rc $?" >>"$base/$side.r"
}
# r SIDE KEY: a result value
r() { awk -v k="$2" '$1 == "R" && $2 == k { print $3; exit }' "$base/$1.r"; }
diag_log() { tail -25 "$base/$1/scenario.log" | sed 's/^/# /'; }

port0=$((20000 + $$ % 20000))
run_side kernel "$port0"
run_side uipc "$((port0 + 1))"
run_side nokipc "$((port0 + 2))"

for side in kernel uipc nokipc; do
	segs=$(r $side segments) kseg=$(r $side kernel_segments)
	# on the kernel the segment is the kernel's; under uipc the kernel has none
	if [ $side = kernel ]; then kseg_ok=$([ "${kseg:-0}" -ge 1 ] && echo y)
	else kseg_ok=$([ "$kseg" = 0 ] && echo y); fi
	if [ "$(r $side start)" = ok ] && [ "$(r $side shm_type)" = sysv/sysv ] &&
	   [ "${segs:-0}" -ge 1 ] && [ "$kseg_ok" = y ]; then
		ok "$side: initdb and start with sysv shared memory ($segs main segment seen by $side ipcs, $kseg in the kernel's namespace)"
	else
		nok "$side: initdb/start: initdb=$(r $side initdb) start=$(r $side start) type=$(r $side shm_type) segments=$segs kernel=$kseg"
		diag_log $side
	fi
	x=$(r $side pgbench_xacts) f=$(r $side pgbench_failed)
	if [ "$(r $side pgbench_init)" = ok ] && [ "$(r $side pgbench_rc)" = 0 ] &&
	   [ "${x:-0}" -gt 0 ] && [ "$f" = 0 ]; then
		ok "$side: pgbench -c 4 -j 2: $x transactions, 0 failed, $(r $side pgbench_tps) tps"
	else
		nok "$side: pgbench: init=$(r $side pgbench_init) rc=$(r $side pgbench_rc) xacts=$x failed=$f"
		diag_log $side
	fi
	w=$(r $side parallel_workers)
	if [ "${w:-0}" -ge 1 ] && [ "$(r $side parallel_count)" = 400000 ]; then
		ok "$side: parallel query with $w workers (dynamic shared memory sysv)"
	else
		nok "$side: parallel query: workers=$w count=$(r $side parallel_count)"
	fi
	if [ "$(r $side stop)" = ok ] && [ "$(r $side left_after_stop)" = 0 ]; then
		ok "$side: clean stop, no segment left"
	else
		nok "$side: clean stop: stop=$(r $side stop) segments left=$(r $side left_after_stop)"
	fi
	if [ "$(r $side refused)" = yes ] && [ "$(r $side crash_start)" = ok ] && [ "$(r $side old_segment_gone)" = yes ] &&
	   [ "$(r $side marker)" = before_the_crash ] && [ "$(r $side sums_equal)" = yes ] &&
	   [ "$(r $side history_grew)" = yes ] && [ "$(r $side accounts)" = 400000 ]; then
		ok "$side: SIGKILL of the postmaster and its $(($(r $side killed) - 1)) children under pgbench load, one of them at first only stopped: start refused while it lives (nattch > 0), allowed once it is killed too (old segment replaced); data verified"
	else
		nok "$side: crash: killed=$(r $side killed) refused while one lived=$(r $side refused) old segment gone=$(r $side old_segment_gone) start=$(r $side crash_start) marker=$(r $side marker) sums=$(r $side sums_equal) history=$(r $side history_grew) accounts=$(r $side accounts)"
		diag_log $side
	fi
	if [ "$(r $side final_stop)" = ok ] && [ "$(r $side left_at_end)" = 0 ] &&
	   [ "$(r $side done)" = ok ] && [ "$(r $side rc)" = 0 ]; then
		ok "$side: final clean stop, no segment left"
	else
		nok "$side: end: stop=$(r $side final_stop) left=$(r $side left_at_end) status=$(r $side rc)"
	fi
done
# the namespace directory of the uipc sides: no segment file may be left
# with memory; removed segments' files may stay as empty spares of the
# pool (ipc/shm.c), at most 16 (SHM_POOL_CAP)
for side in uipc nokipc; do
	left=$(find "$base/$side/ns" -maxdepth 1 -name '*.shm-*' ! -empty | wc -l)
	spares=$(find "$base/$side/ns" -maxdepth 1 -name '*.shm-*' -empty | wc -l)
	if [ "$left" = 0 ] && [ "$spares" -le 16 ]; then
		ok "$side: no uipc segment file left beside the namespace ($spares empty spares)"
	else
		nok "$side: $left uipc segment files left beside the namespace ($spares empty spares)"
	fi
done
echo "# pgbench tps: kernel $(r kernel pgbench_tps), uipc $(r uipc pgbench_tps), uipc with no kernel IPC $(r nokipc pgbench_tps)"
[ $failed -eq 0 ]
