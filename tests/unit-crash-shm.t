#!/bin/bash
# tests/unit-crash-shm.t - SIGKILL at every journaled store of a shared
# memory workload (tests/unit/crash_shm.c), in a fresh namespace removed
# afterwards.
top=$(cd "$(dirname "$0")/.." && pwd)
prog=$top/build/tests/unit/crash_shm
lib=$top/build/libuipc.so
if [ ! -x "$prog" ] || [ ! -f "$lib" ]; then
	echo "1..1"
	echo "not ok 1 - $prog or $lib missing: run make test-progs"
	exit 1
fi
dir=$(mktemp -d /dev/shm/uipc-crash-shm.XXXXXX)
trap 'rm -rf "$dir"' EXIT
UIPC_DIR=$dir UIPC_NS=crash LD_PRELOAD=$lib timeout 300 "$prog"
