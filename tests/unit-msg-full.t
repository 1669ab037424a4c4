#!/bin/bash
# tests/unit-msg-full.t - msgmni message queues, each full at once, fit in
# the default arena (tests/unit/msg_full.c): one fresh namespace per
# message size, removed afterwards.
top=$(cd "$(dirname "$0")/.." && pwd)
prog=$top/build/tests/unit/msg_full
lib=$top/build/libuipc.so
sizes="8192 1000 128 32"
if [ ! -x "$prog" ] || [ ! -f "$lib" ]; then
	echo "1..1"
	echo "not ok 1 - $prog or $lib missing: run make test-progs"
	exit 1
fi
dir=
trap '[ -n "$dir" ] && rm -rf "$dir"' EXIT
set -- $sizes
echo "1..$#"
n=0 rc=0
for sz in $sizes; do
	n=$((n + 1))
	dir=$(mktemp -d /dev/shm/uipc-msgfull.XXXXXX)
	UIPC_DIR=$dir UIPC_NS=full LD_PRELOAD=$lib timeout 300 "$prog" $n $sz || rc=1
	rm -rf "$dir"
	dir=
done
exit $rc
