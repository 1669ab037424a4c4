#!/bin/bash
# tests/cmd-ns-anon.t - `uipc ns ls` lists the user's anonymous namespaces:
# one made by util-linux's unshare --ipc under `uipc run`, with a semaphore
# array, a queue and a segment in it and a second member entered by nsenter,
# is listed as readlink of /proc/PID/ns/ipc names it, with its creator's pid,
# its two members, its objects and its memory; it is gone from the list once
# its processes are.  As an ordinary user made here with useradd (removed at
# the end).
. "$(dirname "$0")/cmd/tap.sh"
require_build
plan 7

user=uipcnsa$$
useradd -M -N -s /usr/sbin/nologin "$user" || { ok 1 "useradd"; exit 1; }
work=$(mktemp -d /tmp/uipc-nsanon.XXXXXX)
udir=$(mktemp -d /dev/shm/uipc-nsanon.XXXXXX)
# the user's count of namespaces (user.max_ipc_namespaces) in a directory
# of this test's: processes it kills leave the count file behind
export UIPC_NSCOUNT_DIR=$(mktemp -d /dev/shm/uipc-cnt.XXXXXX)
chmod 1777 "$UIPC_NSCOUNT_DIR"
pids=
cleanup() {
	for p in $pids; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$work" "$UIPC_NSCOUNT_DIR" "$udir"; userdel "$user" 2>/dev/null; t_cleanup
}
trap cleanup EXIT
chmod 755 "$work"
cp -a "$LIB" "$LIB.0" "$UIPC" "$work/"
chmod 755 "$work"/*
chown "$user" "$udir"
mkdir "$work/s" && chown "$user" "$work/s"
# one fifo per waiting process: a write releases exactly one of them
mkfifo "$work/s/hold" "$work/s/hold2" && chown "$user" "$work/s/hold" "$work/s/hold2"

as_user() { setpriv --reuid="$user" --regid=nogroup --clear-groups --inh-caps=-all env UIPC_DIR="$udir" "$@"; }

as_user "$work/uipc" run -- unshare --ipc -- sh -c '
	ipcmk -S 1 >/dev/null; ipcmk -Q >/dev/null; ipcmk -M 8192 >/dev/null
	echo $$ >"$1/pid.tmp" && mv "$1/pid.tmp" "$1/pid"
	read x <"$1/hold"' sh "$work/s" &
pids="$pids $!"
while [ ! -s "$work/s/pid" ]; do sleep 0.05; done
P=$(cat "$work/s/pid")
pids="$pids $P"
as_user "$work/uipc" run -- nsenter --ipc --target "$P" -- sh -c 'echo $$ >"$1/m.tmp" && mv "$1/m.tmp" "$1/member"; read x <"$1/hold2"' sh "$work/s" &
pids="$pids $!"
while [ ! -s "$work/s/member" ]; do sleep 0.05; done
pids="$pids $(cat "$work/s/member")"

id=$(as_user "$work/uipc" run -- readlink "/proc/$P/ns/ipc")
like "$id" '^ipc:\[[0-9]+\]$' "readlink names the namespace"
ls=$(as_user "$work/uipc" ns ls)
like "$ls" "ANONYMOUS +CREATOR +MEMBERS +SEMS +MSGS +SHMS +BYTES" "ns ls has a table of anonymous namespaces"
row=$(printf '%s\n' "$ls" | awk -v id="$id" '$1 == id')
like "$row" "^ipc:\[[0-9]+\] +$P +2 +1 +1 +1 +[0-9]+$" "its row: the creator's pid, two members, one object of each kind"
bytes=$(printf '%s\n' "$row" | awk '{ print $7 }')
ok "$([ "${bytes:-0}" -gt 0 ] && [ "${bytes:-0}" -le 262144 ]; echo $?)" "its memory: some, not much ($bytes bytes)"
printf '%s\n' "$ls" | diag
root_ls=$("$UIPC" ns ls)
is "$(printf '%s\n' "$root_ls" | awk -v id="$id" '$1 == id')" "" "another user's ns ls does not list it"

echo go >"$work/s/hold"; echo go >"$work/s/hold2"
wait
pids=
ls=$(as_user "$work/uipc" ns ls)
is "$(printf '%s\n' "$ls" | awk -v id="$id" '$1 == id')" "" "gone from the list with its processes"
left=$(ls -A "$udir" | grep -v '^uipc-[0-9]*-default$')
is "$left" "" "nothing but the default namespace left in UIPC_DIR"
done_testing
