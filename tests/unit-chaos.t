#!/bin/bash
# tests/unit-chaos.t - processes moving semaphore tokens with SEM_UNDO while
# random ones are SIGKILLed (tests/unit/chaos_sem.c), for a bounded time
# (UIPC_CHAOS_SECS, default 8), in a fresh namespace removed afterwards.
top=$(cd "$(dirname "$0")/.." && pwd)
prog=$top/build/tests/unit/chaos_sem
lib=$top/build/libuipc.so
if [ ! -x "$prog" ] || [ ! -f "$lib" ]; then
	echo "1..1"; echo "not ok 1 - $prog or $lib missing: run make test-progs"; exit 1
fi
dir=$(mktemp -d /dev/shm/uipc-chaos.XXXXXX)
trap 'rm -rf "$dir"' EXIT
. "$top/tests/lib/quiet-ns.sh"
run_quiet_ns env UIPC_DIR=$dir UIPC_NS=chaos LD_PRELOAD=$lib timeout 300 "$prog" "${UIPC_CHAOS_SECS:-8}" 6
