#!/bin/bash
# tests/unit-ns-life.t - an anonymous namespace (unshare(CLONE_NEWIPC)
# under uipc) lives while a process is in it and is gone, objects, files
# and memory, when the last member exits, and also when every member is
# SIGKILLed at once: the kernel frees it (a memfd, see docs/namespaces.md).
# As root and as an ordinary user made here with useradd (removed at the
# end).  The workload holds a segment of 256 MiB, written, with no
# attachment.  Memory: while it runs, the namespace's memfd holds those
# pages (its st_blocks); after the end no process refers to that file (no
# fd, no mapping in any /proc/PID), so the kernel has freed it.  (Shmem of
# /proc/meminfo shows the same, but other tests of the machine move it.)
# Last, a process that exits while a helper (core/nsfree.c) empties its
# big namespace leaves no count file of user.max_ipc_namespaces.
top=$(cd "$(dirname "$0")/.." && pwd)
lib=$top/build/libuipc.so
prog=$top/build/tests/unit/ns_life
free_prog=$top/build/tests/unit/ns_free
n=0 failed=0
ok() { n=$((n+1)); echo "ok $n - $1"; }
nok() { n=$((n+1)); failed=$((failed+1)); echo "not ok $n - $1"; shift; for l in "$@"; do echo "# $l"; done; }
echo "1..13"
if [ ! -f "$lib" ] || [ ! -x "$prog" ]; then
	echo "not ok 1 - $lib or $prog missing: run make test-progs"; exit 1
fi
user=uipclife$$
useradd -M -N -s /usr/sbin/nologin "$user" || { echo "not ok 1 - useradd failed"; exit 1; }
work=$(mktemp -d /tmp/uipc-life.XXXXXX)
# the user's count of namespaces (user.max_ipc_namespaces) in a directory
# of this test's: processes it kills leave the count file behind
export UIPC_NSCOUNT_DIR=$(mktemp -d /dev/shm/uipc-cnt.XXXXXX)
chmod 1777 "$UIPC_NSCOUNT_DIR"
chmod 755 "$work"
cp "$lib" "$prog" "$work/" && chmod 755 "$work/ns_life" && chmod 644 "$work/libuipc.so"
dir=
pg=
cleanup() {
	[ -n "$pg" ] && kill -9 -- "-$pg" 2>/dev/null
	[ -n "$dir" ] && rm -rf "$dir"
	rm -rf "$work" "$UIPC_NSCOUNT_DIR"
	userdel "$user" 2>/dev/null
}
trap cleanup EXIT

# as WHO (root or the user): CMD... (exec: $! of `as ... &` is CMD's pid)
as() {
	local who=$1; shift
	if [ "$who" = root ]; then exec "$@"; fi
	exec setpriv --reuid="$user" --regid=nogroup --clear-groups --inh-caps=-all "$@"
}

# the namespace memfd of process $1: "inode MiB", from its fd
memfd_of() {
	local f
	for f in /proc/"$1"/fd/*; do
		case $(readlink "$f") in
		*memfd:uipc-ns*) stat -L -c '%i %b %B' "$f" | awk '{ print $1, int($2 * $3 / 1048576) }'; return ;;
		esac
	done
}

# does any process still have inode $1 of a memfd open or mapped?
memfd_alive() {
	local f
	for f in /proc/[0-9]*/fd/*; do
		case $(readlink "$f" 2>/dev/null) in
		*memfd:uipc-ns*) [ "$(stat -L -c %i "$f" 2>/dev/null)" = "$1" ] && return 0 ;;
		esac
	done
	grep -s -l "memfd:uipc-ns" /proc/[0-9]*/maps | while read -r m; do
		awk -v ino="$1" '$5 == ino && /memfd:uipc-ns/ { found = 1 } END { exit !found }' "$m" && echo yes
	done | grep -q yes
}

for who in root user; do
	dir=$(mktemp -d /dev/shm/uipc-life.XXXXXX)
	[ "$who" = user ] && chown "$user" "$dir"
	out=$(as "$who" env UIPC_DIR="$dir" LD_PRELOAD="$work/libuipc.so" "$work/ns_life" exit 256 2>&1)
	read -r word ino <<<"$out"
	if [ "$word" = done ] && [ -n "$ino" ]; then ok "$who: members by fork and exec share the anonymous namespace"
	else nok "$who: the workload failed" "$out"; fi
	left=$(ls -A "$dir")
	if [ -z "$left" ]; then ok "$who: all exited: nothing left in UIPC_DIR"
	else nok "$who: all exited: left in UIPC_DIR" "$left"; fi
	# (its own memfd: other programs of the machine may have namespaces too)
	if [ -n "$ino" ] && ! memfd_alive "$ino"; then ok "$who: all exited: nothing holds the namespace's memory (inode $ino)"
	else nok "$who: all exited: inode ${ino:-none} still referenced"; fi

	# setsid: the workload's own process group, killed as a whole
	as "$who" env UIPC_DIR="$dir" LD_PRELOAD="$work/libuipc.so" setsid "$work/ns_life" kill 256 >"$work/out" 2>&1 &
	pid=$!
	for _ in $(seq 100); do grep -q ready "$work/out" && break; sleep 0.1; done
	pg=$(ps -o pgid= "$pid" | tr -d ' ')
	read -r ino mib <<<"$(memfd_of "$pid")"
	if grep -q ready "$work/out" && [ "$pg" = "$pid" ] && [ -n "$ino" ] && [ "$mib" -ge 256 ]; then
		ok "$who: the namespace holds the segment's memory with no attachment ($mib MiB)"
	else
		nok "$who: the workload did not get ready" "$(cat "$work/out")" "memfd inode ${ino:-none}, ${mib:-0} MiB, pgid $pg pid $pid"
	fi
	[ -n "$pg" ] && [ "$pg" = "$pid" ] && kill -9 -- "-$pg"
	wait "$pid" 2>/dev/null
	for _ in $(seq 50); do pgrep -g "$pg" >/dev/null || break; sleep 0.1; done
	pg=
	left=$(ls -A "$dir")
	if [ -z "$left" ]; then ok "$who: all SIGKILLed at once: nothing left in UIPC_DIR"
	else nok "$who: all SIGKILLed: left in UIPC_DIR" "$left"; fi
	if [ -n "$ino" ] && ! memfd_alive "$ino"; then ok "$who: all SIGKILLed at once: nothing holds the memory (inode $ino)"
	else nok "$who: all SIGKILLed: inode ${ino:-none} still referenced"; fi
	rm -rf "$dir"
	dir=
done
# The count of user.max_ipc_namespaces (docs/namespaces.md) goes with the
# process that exits while a helper (core/nsfree.c) still empties a big
# namespace's slots: the helper's copy of the count's descriptor must not
# keep the file.  Ten times, in a count directory of its own.
cnt=$(mktemp -d /dev/shm/uipc-cnt.XXXXXX)
bad=
for _ in $(seq 10); do
	UIPC_NSCOUNT_DIR=$cnt UIPC_DIR=$work LD_PRELOAD="$work/libuipc.so" "$free_prog" bigleave || bad="exit status $?"
	[ -z "$(ls -A "$cnt")" ] || { bad="left: $(ls -A "$cnt")"; break; }
done
if [ -z "$bad" ]; then ok "an exit while a helper empties a big namespace: no count file left (10 runs)"
else nok "an exit while a helper empties a big namespace" "$bad"; fi
rm -rf "$cnt"
echo "# $n tests, $failed failed"
[ "$failed" = 0 ]
