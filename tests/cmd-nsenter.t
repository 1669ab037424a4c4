#!/bin/bash
# tests/cmd-nsenter.t - util-linux's unshare --ipc and nsenter --ipc work
# unchanged under `uipc run`, without root: the scenario tests/cmd/nsenter.sh
# (a namespace made by unshare --ipc, entered by nsenter --ipc --target PID
# and --ipc=/proc/PID/ns/ipc, ipcs and ipcmk inside, readlink and stat -L of
# the link) prints the same lines on the kernel (as root, in a private
# namespace) and under uipc as an ordinary user made here with useradd
# (removed at the end), for whom the kernel would refuse nsenter.  Then,
# uipc only: nsenter into a process of a named namespace that has made no
# call yet (found through its environment), and readlink of its link.
. "$(dirname "$0")/cmd/tap.sh"
require_build
plan 6

user=uipcnse$$
useradd -M -N -s /usr/sbin/nologin "$user" || { ok 1 "useradd"; exit 1; }
work=$(mktemp -d /tmp/uipc-nsenter.XXXXXX)
udir=$(mktemp -d /dev/shm/uipc-nsenter.XXXXXX)
# the user's count of namespaces (user.max_ipc_namespaces) in a directory
# of this test's: processes it kills leave the count file behind
export UIPC_NSCOUNT_DIR=$(mktemp -d /dev/shm/uipc-cnt.XXXXXX)
chmod 1777 "$UIPC_NSCOUNT_DIR"
cleanup() { rm -rf "$work" "$UIPC_NSCOUNT_DIR" "$udir"; userdel "$user" 2>/dev/null; t_cleanup; }
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

# uipc only: the target is in a named namespace and has made no call yet
# (no marker: its environment names the namespace); nsenter enters it
as_user() { setpriv --reuid="$user" --regid=nogroup --clear-groups --inh-caps=-all env UIPC_DIR="$udir" "$@"; }
mkdir "$work/n" && chown "$user" "$work/n" && mkfifo "$work/n/hold" && chown "$user" "$work/n/hold"
as_user "$work/uipc" ns create named1
# (builtins only: a fork would open the namespace, and map the marker)
as_user "$work/uipc" run --ns named1 -- sh -c 'echo $$ >"$1/pid"; read x <"$1/hold"' sh "$work/n" &
while [ ! -s "$work/n/pid" ]; do sleep 0.05; done
P=$(cat "$work/n/pid")
ok "$(grep -q ' 800000000000 ' "/proc/$P/maps"; [ $? = 1 ]; echo $?)" "the target has made no call (no marker in its maps)"
as_user "$work/uipc" run -- nsenter --ipc --target "$P" -- ipcmk -S 3 >/dev/null
is "$(as_user "$work/uipc" ipcs -s --ns named1 | grep -c '^0x')" 1 "nsenter into a named namespace's process (no call made yet): ipcmk lands there"
file_ino=$(stat -c %i "$(as_user "$work/uipc" ns path named1)")
is "$(as_user "$work/uipc" run -- readlink "/proc/$P/ns/ipc")" "ipc:[$file_ino]" "readlink of its link names the namespace's file"
echo go >"$work/n/hold"
wait
as_user "$work/uipc" ns rm named1

left=$(ls -A "$udir" | grep -v '^uipc-[0-9]*-default$')
is "$left" "" "nothing but the default namespace left in UIPC_DIR"
done_testing
