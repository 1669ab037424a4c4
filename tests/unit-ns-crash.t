#!/bin/bash
# tests/unit-ns-crash.t - processes SIGKILLed at random while they create,
# join and leave namespaces (tests/unit/ns_crash.c: unshare, setns into a
# named namespace and into kept ones, descriptors of /proc/self/ns/ipc,
# objects with SEM_UNDO, segments of up to 4 MiB, fork children), under
# uipc, as an ordinary user made here with useradd (removed at the end).
# Afterwards: no process of that user is left (helpers included), so no
# descriptor or mapping holds any of its anonymous namespaces' memory (uipc
# ns ls lists none); uipc fsck is clean on the namespaces that survive (the
# named one and the default); and once their objects and themselves are
# removed, nothing is left in UIPC_DIR.  UIPC_CRASH_SEED replays a run.
. "$(dirname "$0")/cmd/tap.sh"
require_build
prog=$T_BUILD/tests/unit/ns_crash
[ -x "$prog" ] || { echo "1..1"; echo "not ok 1 - $prog missing: run make test-progs"; exit 1; }
plan 8

user=uipccr$$
useradd -M -N -s /usr/sbin/nologin "$user" || { ok 1 "useradd"; exit 1; }
work=$(mktemp -d /tmp/uipc-nscrash.XXXXXX)
udir=$(mktemp -d /dev/shm/uipc-nscrash.XXXXXX)
# the user's count of namespaces (user.max_ipc_namespaces) in a directory
# of this test's: processes it kills leave the count file behind
export UIPC_NSCOUNT_DIR=$(mktemp -d /dev/shm/uipc-cnt.XXXXXX)
chmod 1777 "$UIPC_NSCOUNT_DIR"
cleanup() { for p in $(pgrep -u "$user"); do kill -9 "$p" 2>/dev/null; done; rm -rf "$work" "$UIPC_NSCOUNT_DIR" "$udir"; userdel "$user" 2>/dev/null; t_cleanup; }
trap cleanup EXIT
chmod 755 "$work"
cp -a "$LIB" "$LIB.0" "$UIPC" "$prog" "$work/"
chmod 755 "$work"/*
chown "$user" "$udir"
as_user() { setpriv --reuid="$user" --regid=nogroup --clear-groups --inh-caps=-all env UIPC_DIR="$udir" "$@"; }

as_user "$work/uipc" ns create crash
named=$(as_user "$work/uipc" ns path crash)
seed=${UIPC_CRASH_SEED:-$RANDOM}
out=$(timeout -k 5 120 setpriv --reuid="$user" --regid=nogroup --clear-groups --inh-caps=-all \
	env UIPC_DIR="$udir" LD_PRELOAD="$work/libuipc.so" "$work/ns_crash" 3 "$named" "$seed" 2>&1)
rc=$?
printf '%s\n' "$out" | head -5 | diag
is "$rc" 0 "the run ends (seed $seed)"

# every process of the user gone, helpers too (they die with their caller)
for i in $(seq 100); do pgrep -u "$user" >/dev/null || break; sleep 0.1; done
is "$(pgrep -u "$user" | tr '\n' ' ')" "" "no process of the user is left"
uid=$(id -u "$user")
held=$(for f in /proc/[0-9]*/fd/*; do
	case $(readlink "$f" 2>/dev/null) in
	*memfd:uipc-ns*) [ "$(stat -L -c %u "$f" 2>/dev/null)" = "$uid" ] && echo "$f" ;;
	esac
done)
is "$held" "" "no descriptor anywhere holds one of its anonymous namespaces"
ls=$(as_user "$work/uipc" ns ls)
is "$(printf '%s\n' "$ls" | grep -c '^ipc:')" 0 "uipc ns ls lists no anonymous namespace of the user"

fsck_crash=$(as_user "$work/uipc" fsck --ns crash 2>&1)
is "$?" 0 "uipc fsck of the named namespace is clean"
printf '%s\n' "$fsck_crash" | head -5 | diag
fsck_default=$(as_user "$work/uipc" fsck 2>&1)
rc=$?
[ -e "$udir/uipc-$uid-default" ] || rc=0   # never made: nothing to check
is "$rc" 0 "uipc fsck of the default namespace is clean"
printf '%s\n' "$fsck_default" | head -5 | diag

as_user "$work/uipc" ipcrm -a --ns crash >/dev/null 2>&1
as_user "$work/uipc" ns rm crash
ok $? "the named namespace removed"
[ -e "$udir/uipc-$uid-default" ] && as_user "$work/uipc" ns rm default
is "$(ls -A "$udir")" "" "nothing left in UIPC_DIR"
done_testing
