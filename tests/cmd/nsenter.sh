#!/bin/sh
# tests/cmd/nsenter.sh DIR - the scenario of tests/cmd-nsenter.t, run as it
# is on the kernel (root, in a private namespace) and under `uipc run` (an
# ordinary user): util-linux's unshare --ipc makes a namespace with objects
# in it, nsenter --ipc enters it by --target and by path, ipcs and ipcmk see
# and change what is there, readlink and stat name it.  Prints facts, never
# ids, keys or inode numbers.  DIR: a scratch directory of the caller's.
set -u
dir=$1
mkfifo "$dir/hold"
ipcmk -S 2 >/dev/null
unshare --ipc -- sh -c '
	ipcmk -S 1 >/dev/null
	ipcmk -Q >/dev/null
	echo $$ >"$1/pid.tmp" && mv "$1/pid.tmp" "$1/pid"
	read x <"$1/hold"
	echo "target, at the end: $(ipcs -s | grep -c ^0x) arrays, $(ipcs -q | grep -c ^0x) queues, $(ipcs -m | grep -c ^0x) segments"
' sh "$dir" &
while [ ! -s "$dir/pid" ]; do sleep 0.05; done
P=$(cat "$dir/pid")
echo "outside: $(ipcs -s | grep -c ^0x) arrays, $(ipcs -q | grep -c ^0x) queues"
echo "nsenter --ipc --target: $(nsenter --ipc --target "$P" -- ipcs -s | grep -c ^0x) arrays, $(nsenter --ipc --target "$P" -- ipcs -q | grep -c ^0x) queues"
echo "nsenter --ipc=/proc/PID/ns/ipc: $(nsenter --ipc="/proc/$P/ns/ipc" -- ipcs -s | grep -c ^0x) arrays"
nsenter --ipc --target "$P" -- ipcmk -M 4096 >/dev/null
echo "ipcmk -M through nsenter: exit $?"
nsenter --ipc --target "$P" -- sh -c 'unshare --ipc -- sh -c "echo \"unshare inside nsenter: \$(ipcs -s | grep -c ^0x) arrays\""'
theirs=$(readlink "/proc/$P/ns/ipc")
ours=$(readlink /proc/self/ns/ipc)
entered=$(nsenter --ipc --target "$P" -- readlink /proc/self/ns/ipc)
[ "$theirs" = "$ours" ] && echo "readlink of the target: same as ours" || echo "readlink of the target: differs from ours"
[ "$theirs" = "$entered" ] && echo "readlink inside nsenter: the target's" || echo "readlink inside nsenter: not the target's"
ino=$(stat -L -c %i "/proc/$P/ns/ipc")
[ "ipc:[$ino]" = "$theirs" ] && echo "stat -L agrees with readlink" || echo "stat -L does not agree with readlink"
echo go >"$dir/hold"
wait
echo "outside, at the end: $(ipcs -s | grep -c ^0x) arrays"
ipcrm -a
