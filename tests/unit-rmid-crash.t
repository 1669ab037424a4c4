#!/bin/bash
# tests/unit-rmid-crash.t - SIGKILL between the two commits of a semaphore
# array's IPC_RMID (tests/unit/rmid_crash.c), in a fresh namespace removed
# afterwards.
top=$(cd "$(dirname "$0")/.." && pwd)
prog=$top/build/tests/unit/rmid_crash
lib=$top/build/libuipc.so
if [ ! -x "$prog" ] || [ ! -f "$lib" ]; then
	echo "1..1"
	echo "not ok 1 - $prog or $lib missing: run make test-progs"
	exit 1
fi
dir=$(mktemp -d /dev/shm/uipc-rmid.XXXXXX)
trap 'rm -rf "$dir"' EXIT
UIPC_DIR=$dir UIPC_NS=rmid LD_PRELOAD=$lib timeout 60 "$prog"
