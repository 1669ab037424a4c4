#!/bin/bash
# tests/cmd-nsenter.t - util-linux's unshare --ipc and nsenter --ipc work
# unchanged under `uipc run`, without root: the scenario tests/cmd/nsenter.sh
# (a namespace made by unshare --ipc, entered by nsenter --ipc --target PID
# and --ipc=/proc/PID/ns/ipc, ipcs and ipcmk inside, readlink and stat -L of
# the link) prints the same lines on the kernel (as root, in a private
# namespace) and under uipc as an ordinary user made here with useradd
# (removed at the end), for whom the kernel would refuse nsenter.
. "$(dirname "$0")/cmd/tap.sh"
require_build
plan 3

user=uipcnse$$
useradd -M -N -s /usr/sbin/nologin "$user" || { ok 1 "useradd"; exit 1; }
work=$(mktemp -d /tmp/uipc-nsenter.XXXXXX)
udir=$(mktemp -d /dev/shm/uipc-nsenter.XXXXXX)
cleanup() { rm -rf "$work" "$udir"; userdel "$user" 2>/dev/null; t_cleanup; }
trap cleanup EXIT
chmod 755 "$work"
cp -a "$LIB" "$LIB.0" "$UIPC" "$T_ROOT/tests/cmd/nsenter.sh" "$work/"
chmod 755 "$work"/*
chown "$user" "$udir"
mkdir "$work/k" "$work/u" && chown "$user" "$work/u"

timeout -k 5 60 unshare --ipc -- sh "$work/nsenter.sh" "$work/k" >"$work/kernel" 2>&1
echo "[exit $?]" >>"$work/kernel"
timeout -k 5 60 setpriv --reuid="$user" --regid=nogroup --clear-groups --inh-caps=-all \
	env UIPC_DIR="$udir" "$work/uipc" run -- sh "$work/nsenter.sh" "$work/u" >"$work/uipc.out" 2>&1
echo "[exit $?]" >>"$work/uipc.out"

if [ "$(tail -n 1 "$work/kernel")" = "[exit 0]" ] && grep -q "target: differs from ours" "$work/kernel" &&
   grep -q "nsenter: the target's" "$work/kernel" && grep -q "stat -L agrees" "$work/kernel"; then
	ok 0 "the scenario runs on the kernel"
else
	ok 1 "the scenario runs on the kernel"; diag <"$work/kernel"
fi
if cmp -s "$work/kernel" "$work/uipc.out"; then
	ok 0 "unshare --ipc and nsenter --ipc under uipc run, as a user: the kernel's lines"
else
	ok 1 "unshare --ipc and nsenter --ipc under uipc run, as a user: the kernel's lines"
	diff -u --label kernel --label uipc "$work/kernel" "$work/uipc.out" | diag
fi
left=$(ls -A "$udir" | grep -v '^uipc-[0-9]*-default$')
is "$left" "" "nothing but the default namespace left in UIPC_DIR"
done_testing
