#!/bin/bash
# tests/unit-chaos-mixed.t - processes doing mixed semaphore, message-queue
# and shared-memory work while random ones are SIGKILLed
# (tests/unit/chaos_mixed.c), until UIPC_CHAOS_KILLS kills (default 10000)
# or UIPC_CHAOS_MIXED_SECS seconds (default 90), in a fresh namespace
# removed afterwards.  Prints the number of kills.
top=$(cd "$(dirname "$0")/.." && pwd)
prog=$top/build/tests/unit/chaos_mixed
lib=$top/build/libuipc.so
if [ ! -x "$prog" ] || [ ! -f "$lib" ]; then
	echo "1..1"; echo "not ok 1 - $prog or $lib missing: run make test-progs"; exit 1
fi
dir=$(mktemp -d /dev/shm/uipc-chaos.XXXXXX)
trap 'rm -rf "$dir"' EXIT
. "$top/tests/lib/quiet-ns.sh"
run_quiet_ns env UIPC_DIR=$dir UIPC_NS=chaos LD_PRELOAD=$lib timeout 400 "$prog" \
	"${UIPC_CHAOS_MIXED_SECS:-90}" "${UIPC_CHAOS_KILLS:-10000}" 6 ${UIPC_CHAOS_SEED:-}
